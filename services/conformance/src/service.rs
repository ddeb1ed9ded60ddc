//! A running service process: started on a free port, killed on drop.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use ping_common::startup::StartupLine;

/// How long a service may take to print its start-up line (generous: CI is slow and shared).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

pub struct Service {
    child: KillOnDrop,
    pub startup: StartupLine,
    /// The raw start-up line, for field-name checks.
    pub startup_raw: String,
    /// Anything printed on stdout after the start-up line (the contract says: nothing).
    extra_stdout: Arc<Mutex<String>>,
}

impl Service {
    /// Starts `bin --listen 127.0.0.1:0 <extra>` and waits for its start-up line.
    pub fn start(bin: &str, extra: &[&str]) -> Service {
        Self::start_with(bin, extra, |_| {})
    }

    /// Like `start`, with a hook to adjust the command (e.g. CPU affinity).
    pub fn start_with(bin: &str, extra: &[&str], adjust: impl FnOnce(&mut Command)) -> Service {
        Self::start_at(bin, "127.0.0.1:0", extra, adjust)
    }

    /// Starts `bin --listen <listen> <extra>` (a fixed port, e.g. to restart on the same one).
    pub fn start_at(
        bin: &str,
        listen: &str,
        extra: &[&str],
        adjust: impl FnOnce(&mut Command),
    ) -> Service {
        raise_fd_limit();
        let mut cmd = Command::new(crate::binary::path(bin));
        cmd.args(["--listen", listen])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        adjust(&mut cmd);
        // Killed on drop from here on, also when waiting for the start-up line panics.
        let mut child = KillOnDrop(
            cmd.spawn()
                .unwrap_or_else(|e| panic!("cannot start {bin}: {e}")),
        );
        let stdout = child.0.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        let extra_stdout = Arc::new(Mutex::new(String::new()));
        let extra = Arc::clone(&extra_stdout);
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            let _ = tx.send(first);
            let mut rest = String::new();
            while reader.read_line(&mut rest).unwrap_or(0) > 0 {
                if let Ok(mut e) = extra.lock() {
                    e.push_str(&rest);
                }
                rest.clear();
            }
        });
        let line = match rx.recv_timeout(STARTUP_TIMEOUT) {
            Ok(line) if !line.is_empty() => line,
            Ok(_) => panic!("{bin} exited or closed stdout without a start-up line"),
            Err(_) => panic!("{bin} printed no start-up line within {STARTUP_TIMEOUT:?}"),
        };
        let startup = serde_json::from_str(line.trim_end())
            .unwrap_or_else(|e| panic!("{bin}: bad start-up line {line:?}: {e}"));
        Service {
            child,
            startup,
            startup_raw: line,
            extra_stdout,
        }
    }

    /// Stdout printed after the start-up line so far.
    pub fn extra_stdout(&self) -> String {
        self.extra_stdout
            .lock()
            .map(|e| e.clone())
            .unwrap_or_default()
    }

    pub fn addr(&self) -> SocketAddr {
        self.startup.listen
    }

    pub fn pid(&self) -> u32 {
        self.child.0.id()
    }

    /// Sends a signal; panics if it cannot be delivered.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill has no memory-safety preconditions; the pid is our own live child.
        let rc = unsafe { libc::kill(self.child.0.id() as libc::pid_t, sig) };
        assert_eq!(rc, 0, "kill({}, {sig}) failed", self.child.0.id());
    }

    /// Waits up to `timeout` for the process to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.0.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Panics unless the process is still running.
    pub fn assert_alive(&mut self) {
        assert!(
            matches!(self.child.0.try_wait(), Ok(None)),
            "{} exited unexpectedly",
            self.startup.service
        );
    }
}

/// The service process, killed and reaped when dropped (tests never leave it running).
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The 1,000-connection check needs more than the common 1,024 soft fd limit across the test
/// process and its children: raise the soft limit to the hard limit.
fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit only read/write the struct we pass.
    unsafe {
        let mut lim: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max.min(65_536);
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}
