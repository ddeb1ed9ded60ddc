//! Stopping a service: SIGTERM to its process group, SIGKILL after the grace period (to its
//! whole process tree), reap, then check the port is really free for the next cell.

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use super::spawn::port_is_free;
use crate::process::Proc;
use crate::results::schema::StopRecord;

pub fn stop(proc: &mut Proc, port: u16, grace: Duration) -> StopRecord {
    let t0 = Instant::now();
    let (signal, status) = if let Some(st) = proc.try_wait() {
        ("already-exited", Some(st))
    } else {
        proc.signal_group(libc::SIGTERM);
        match proc.wait_timeout(grace) {
            Some(st) => ("SIGTERM", Some(st)),
            None => ("SIGKILL", proc.kill()),
        }
    };
    // (Stragglers in the group were SIGKILLed by `try_wait`/`kill` before the reap.)
    let stop_ms = t0.elapsed().as_millis() as u64;
    // What is left of the service's tree (its cgroups, descendants re-parented to the
    // runner); those still running outside its process group are named.
    let escaped_killed = proc.reap_rest();
    let mut free = port_is_free(port);
    let until = Instant::now() + Duration::from_secs(2);
    while !free && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
        free = port_is_free(port);
    }
    StopRecord {
        signal_sent: signal.into(),
        stop_ms,
        exit_code: status.and_then(|s| s.code()),
        exit_signal: status.and_then(|s| s.signal()),
        port_free_after: free,
        escaped_killed,
    }
}
