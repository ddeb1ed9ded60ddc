//! Counting a process's syscalls with `perf stat -e raw_syscalls:sys_enter -p <pid> -I 100`:
//! every thread, and threads started later by inheritance. perf prints one cumulative-able
//! line per interval on stderr (unbuffered); a reader thread stamps each line with the unix
//! time it arrived, so the count can be cut to the generator's window like the /proc reads.
//!
//! Refused (no perf, `perf_event_paranoid`, no tracefs) → [`Unmeasured`] with perf's own
//! words, and the run goes on.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::sample::now_unix_us;

/// The syscall tracepoint: one event per syscall entry, whatever the syscall.
pub const EVENT: &str = "raw_syscalls:sys_enter";
/// perf's print interval.
const INTERVAL_MS: u64 = 100;
/// How long perf may take to print its first interval (attach + first read).
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a count is missing, in words for results.md.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmeasured(pub String);

/// A running `perf stat`; [`Syscalls::finish`] stops it and returns its timeline.
pub struct Syscalls {
    child: Child,
    reader: Option<JoinHandle<Reading>>,
}

/// What perf printed: (arrival unix µs, cumulative count) points, and the rest of its words.
#[derive(Debug, Default)]
struct Reading {
    points: Vec<(u64, f64)>,
    other: Vec<String>,
}

/// The count of one `-x,` interval line for [`EVENT`]: `time,count,unit,event,...`.
fn parse_line(line: &str) -> Option<f64> {
    let f: Vec<&str> = line.trim().split(',').collect();
    if f.len() < 4 || f[3] != EVENT {
        return None;
    }
    // "<not counted>": the counter never ran in the interval (every thread asleep), so no
    // syscall was entered.
    if f[1] == "<not counted>" {
        return Some(0.0);
    }
    f[1].parse::<f64>().ok()
}

fn read_lines(stderr: impl std::io::Read) -> Reading {
    let mut r = Reading::default();
    let mut total = 0.0;
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        match parse_line(&line) {
            Some(n) => {
                total += n;
                r.points.push((now_unix_us(), total));
            }
            None if !line.trim().is_empty() && r.other.len() < 5 => r.other.push(line),
            None => {}
        }
    }
    r
}

impl Syscalls {
    /// `perf` from PATH; see [`Syscalls::start_with`].
    pub fn start(pid: u32) -> Result<Syscalls, Unmeasured> {
        Syscalls::start_with("perf", pid)
    }

    /// Attaches `program stat` to `pid` and waits until it has printed its first interval (it
    /// is counting), or says why it cannot count.
    pub fn start_with(program: impl Into<PathBuf>, pid: u32) -> Result<Syscalls, Unmeasured> {
        let program = program.into();
        let mut child = Command::new(&program)
            .args([
                "stat",
                "-x",
                ",",
                "-I",
                &INTERVAL_MS.to_string(),
                "-e",
                EVENT,
            ])
            .args(["-p", &pid.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Unmeasured(format!("cannot run {}: {e}", program.display())))?;
        let stderr = child.stderr.take().expect("piped");
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            // The first point is sent as soon as it arrives; the rest is read to the end.
            let mut lines = BufReader::new(stderr);
            let mut first = String::new();
            let mut head = Reading::default();
            while lines.read_line(&mut first).is_ok_and(|n| n > 0) {
                if let Some(n) = parse_line(&first) {
                    head.points.push((now_unix_us(), n));
                    break;
                }
                if head.other.len() < 5 && !first.trim().is_empty() {
                    head.other.push(first.trim().to_owned());
                }
                first.clear();
            }
            let _ = tx.send(!head.points.is_empty());
            let mut rest = read_lines(lines.into_inner());
            let base = head.points.last().map_or(0.0, |p| p.1);
            for p in &mut rest.points {
                p.1 += base;
            }
            head.points.append(&mut rest.points);
            head.other.append(&mut rest.other);
            head
        });
        let started = Instant::now();
        let counting = rx.recv_timeout(READY_TIMEOUT).unwrap_or(false);
        let mut s = Syscalls {
            child,
            reader: Some(reader),
        };
        if counting {
            return Ok(s);
        }
        let waited = started.elapsed();
        s.stop();
        let r = s
            .reader
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let words = if r.other.is_empty() {
            format!("no count within {} ms", waited.as_millis())
        } else {
            r.other.join(" / ")
        };
        Err(Unmeasured(format!("perf stat -e {EVENT}: {words}")))
    }

    fn stop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            // SIGINT: perf prints its last interval and exits.
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.child.try_wait().ok().flatten().is_none() {
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops perf; the (unix µs, cumulative syscalls) timeline it printed.
    pub fn finish(mut self) -> Vec<(u64, f64)> {
        self.stop();
        self.reader
            .take()
            .and_then(|h| h.join().ok())
            .map(|r| r.points)
            .unwrap_or_default()
    }
}

impl Drop for Syscalls {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_interval_lines_of_the_event_only() {
        assert_eq!(
            parse_line("     0.100234,2030,,raw_syscalls:sys_enter,100210,100.00,,"),
            Some(2030.0)
        );
        assert_eq!(
            parse_line("0.1,<not counted>,,raw_syscalls:sys_enter,0,100.00,,"),
            Some(0.0),
            "asleep the whole interval"
        );
        assert_eq!(
            parse_line("0.1,<not supported>,,raw_syscalls:sys_enter,0,0,,"),
            None
        );
        assert_eq!(parse_line("0.1,5,,context-switches,1,100,,"), None);
        assert_eq!(parse_line("Error:"), None);
    }

    #[test]
    fn a_refusing_perf_is_unmeasured_with_its_words() {
        let dir = std::env::temp_dir().join(format!("count-perf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("perf");
        std::fs::write(
            &fake,
            "#!/bin/sh\necho 'Error: Access to performance monitoring and observability operations is limited.' >&2\necho 'Consider adjusting /proc/sys/kernel/perf_event_paranoid' >&2\nexit 255\n",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let err = Syscalls::start_with(&fake, std::process::id())
            .err()
            .unwrap();
        assert!(err.0.contains("perf_event_paranoid"), "{err:?}");
        let err = Syscalls::start_with(dir.join("absent"), 1).err().unwrap();
        assert!(err.0.contains("cannot run"), "{err:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
