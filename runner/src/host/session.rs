//! One conversation with a host's agent: the child (`ssh … agent`, or `matrix agent` on this
//! machine) with a pipe to its stdin, its stdout lines as replies and a tail of its stderr.
//! Dropping the session closes the agent's stdin — the agent then kills everything it
//! started and exits — and after a grace period kills the child.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::HostError;
use crate::agent::protocol::{Reply, Request};

pub struct Session {
    /// The host's name, for messages.
    pub host: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Session {
    /// Starts `cmd` (already tied to the runner) and waits for the agent's hello.
    pub fn start(host: &str, mut cmd: Command, timeout: Duration) -> Result<Session, HostError> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| HostError::failed(format!("host {host}: cannot start the agent: {e}")))?;
        let out = child.stdout.take().expect("piped");
        let err = child.stderr.take().expect("piped");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let t2 = tail.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                let mut t = t2.lock().unwrap_or_else(|p| p.into_inner());
                if t.len() == 20 {
                    t.pop_front();
                }
                t.push_back(line);
            }
        });
        let mut s = Session {
            host: host.to_string(),
            stdin: child.stdin.take(),
            child,
            lines: rx,
            stderr: tail,
        };
        match s.recv(timeout)? {
            Reply::Hello { .. } => Ok(s),
            other => Err(HostError::failed(format!(
                "host {host}: agent said {other:?} instead of hello"
            ))),
        }
    }

    pub fn send(&mut self, req: &Request) -> Result<(), HostError> {
        let line = serde_json::to_string(req).map_err(|e| HostError::failed(e.to_string()))?;
        let host = &self.host;
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| HostError::failed(format!("host {host}: session already closed")))?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(|e| {
                HostError::lost(format!(
                    "host {host}: agent gone ({e}): {}",
                    self.stderr_tail()
                ))
            })
    }

    /// The next reply within `timeout` (never past an interrupt).
    pub fn recv(&mut self, timeout: Duration) -> Result<Reply, HostError> {
        let deadline = Instant::now() + timeout;
        loop {
            if crate::interrupt::requested() {
                return Err(HostError::failed("interrupted".into()));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(HostError::lost(format!(
                    "host {}: no answer from the agent within {} s",
                    self.host,
                    timeout.as_secs()
                )));
            }
            match self.lines.recv_timeout(left.min(Duration::from_millis(50))) {
                Ok(line) => {
                    return serde_json::from_str(&line).map_err(|e| {
                        HostError::failed(format!(
                            "host {}: unreadable agent reply ({e}): {line}",
                            self.host
                        ))
                    });
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    // Give stderr's reader a moment to take ssh's last words.
                    std::thread::sleep(Duration::from_millis(100));
                    let st = self.exit_status(Duration::from_secs(2));
                    return Err(HostError::lost(format!(
                        "host {}: connection ended ({st}): {}",
                        self.host,
                        self.stderr_tail()
                    )));
                }
            }
        }
    }

    /// A request and its reply.
    pub fn ask(&mut self, req: &Request, timeout: Duration) -> Result<Reply, HostError> {
        self.send(req)?;
        self.recv(timeout)
    }

    /// The child's exit status within `wait`, else it is killed ("still running; killed").
    fn exit_status(&mut self, wait: Duration) -> String {
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st.to_string();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        "still running; killed".into()
    }

    pub fn stderr_tail(&self) -> String {
        let t = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        super::ssh::one_line(&t.iter().cloned().collect::<Vec<_>>().join("\n"))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // EOF on the agent's stdin: it stops what it started and exits.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
