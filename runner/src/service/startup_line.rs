//! Waiting for the service's start-up line (ping-common's `StartupLine`: runtime, driver,
//! workers, declared deviations) on its stdout.

use std::time::{Duration, Instant};

use ping_common::startup::StartupLine;

use crate::process::Proc;

/// Waits up to `timeout` for the first non-empty stdout line and parses it.
pub fn read(proc: &Proc, timeout: Duration) -> Result<StartupLine, String> {
    let deadline = Instant::now() + timeout;
    loop {
        match proc.stdout_lines.try_recv() {
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => return StartupLine::parse(&line),
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                return Err("stdout closed without a start-up line".into());
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => {}
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "no start-up line on stdout within {} ms",
                timeout.as_millis()
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}
