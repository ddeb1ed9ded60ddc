//! A child process in its own process group whose stdout/stderr are drained by threads
//! (stdout lines to a channel, stderr to a bounded tail). Dropping it kills the whole
//! group and reaps it: no orphan survives any error path.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::limits::Confinement;

const TAIL_LINES: usize = 40;

pub struct Proc {
    child: Child,
    pub pid: u32,
    /// Just before `spawn()`.
    pub spawned_at: Instant,
    /// The same moment on CLOCK_MONOTONIC in ns ([`mono_ns`]).
    pub spawned_at_ns: u64,
    /// The child's own clock (CLOCK_MONOTONIC, ns) taken just before `execve`, after its
    /// confinement was applied: where start-up time begins. None if it could not be read.
    pub exec_at_ns: Option<u64>,
    pub stdout_lines: Receiver<String>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    readers: Vec<JoinHandle<()>>,
    status: Option<ExitStatus>,
}

impl Proc {
    pub fn spawn(mut cmd: Command, confinement: &Confinement) -> std::io::Result<Proc> {
        confinement.install(&mut cmd);
        let stamp = ExecStamp::install(&mut cmd)?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let spawned_at = Instant::now();
        let spawned_at_ns = mono_ns();
        let spawned = cmd.spawn();
        let exec_at_ns = stamp.read();
        let mut child = spawned?;
        let pid = child.id();
        let (tx, rx) = channel();
        let out = child.stdout.take().expect("piped stdout");
        let err = child.stderr.take().expect("piped stderr");
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let t2 = tail.clone();
        let readers = vec![
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        // Nobody listens any more: keep draining so the child never blocks.
                        continue;
                    }
                }
            }),
            std::thread::spawn(move || {
                let mut r = BufReader::new(err);
                let mut buf = Vec::new();
                loop {
                    buf.clear();
                    match r.read_until(b'\n', &mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            let mut t = t2.lock().unwrap_or_else(|p| p.into_inner());
                            if t.len() == TAIL_LINES {
                                t.pop_front();
                            }
                            t.push_back(String::from_utf8_lossy(&buf).trim_end().to_string());
                        }
                    }
                }
            }),
        ];
        Ok(Proc {
            child,
            pid,
            spawned_at,
            spawned_at_ns,
            exec_at_ns,
            stdout_lines: rx,
            stderr_tail: tail,
            readers,
            status: None,
        })
    }

    /// Exit status if the process has exited (reaps it). Before reaping, the rest of the
    /// process group is SIGKILLed while the zombie leader still reserves the group id, so a
    /// group signal can never reach a recycled pid.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() && self.leader_exited() {
            self.signal_group(libc::SIGKILL);
            self.status = self.child.wait().ok();
        }
        self.status
    }

    /// Has the leader exited? (waitid with WNOWAIT: looks without reaping.)
    fn leader_exited(&self) -> bool {
        // SAFETY: siginfo_t is plain data; waitid only inspects our own child.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let r = libc::waitid(
                libc::P_PID,
                self.pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            r == 0 && info.si_pid() != 0
        }
    }

    /// Last lines of stderr (None if it wrote nothing). After exit, first gives the reader
    /// thread up to 500 ms to drain what the process wrote just before dying.
    pub fn stderr_tail(&self) -> Option<String> {
        if self.status.is_some()
            && let Some(h) = self.readers.get(1)
        {
            let deadline = Instant::now() + Duration::from_millis(500);
            while !h.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        let t = self.stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
        (!t.is_empty()).then(|| t.iter().cloned().collect::<Vec<_>>().join("\n"))
    }

    /// Sends `sig` to the whole process group — only while the leader is unreaped (its pid,
    /// and so the group id, cannot have been recycled).
    pub fn signal_group(&self, sig: i32) {
        if self.status.is_some() {
            return;
        }
        // SAFETY: kill(2) on our own child's process group (pgid == pid, set at spawn).
        unsafe {
            libc::kill(-(self.pid as i32), sig);
        }
    }

    /// Waits up to `timeout` for exit; None on timeout.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.try_wait() {
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// SIGKILL the group and reap.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.signal_group(libc::SIGKILL);
            self.status = self.child.wait().ok();
        }
        self.status
    }

    /// Reads all remaining stdout after exit (for the generator's report).
    pub fn collect_stdout(&mut self) -> String {
        for h in self.readers.drain(..) {
            let _ = h.join();
        }
        self.stdout_lines.try_iter().collect::<Vec<_>>().join("\n")
    }
}

/// CLOCK_MONOTONIC in ns: the clock `Proc::exec_at_ns` is on.
pub fn mono_ns() -> u64 {
    // SAFETY: clock_gettime writes one timespec.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A close-on-exec pipe the child writes its clock to as the very last step before
/// `execve`, so start-up time excludes fork, cgroup attach and everything else the runner
/// does to launch it — and grows with nothing in the runner.
struct ExecStamp {
    read: std::fs::File,
    write: std::os::fd::OwnedFd,
}

impl ExecStamp {
    fn install(cmd: &mut Command) -> std::io::Result<ExecStamp> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two fds; both are owned right after.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fresh fds from pipe2, owned once each.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let fd = write.as_raw_fd();
        // SAFETY: clock_gettime and write are async-signal-safe; nothing allocates. Registered
        // after the confinement's pre_exec, so it runs last.
        unsafe {
            cmd.pre_exec(move || {
                let mut ts: libc::timespec = std::mem::zeroed();
                libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
                let ns = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
                libc::write(fd, ns.to_ne_bytes().as_ptr().cast(), 8);
                Ok(())
            });
        }
        Ok(ExecStamp {
            read: std::fs::File::from(read),
            write,
        })
    }

    /// The child's stamp, once `spawn` returned. The parent's write end closes first, so a
    /// spawn that failed before the stamp reads end-of-file instead of blocking.
    fn read(self) -> Option<u64> {
        use std::io::Read;
        let ExecStamp { mut read, write } = self;
        drop(write);
        let mut b = [0u8; 8];
        read.read_exact(&mut b).ok()?;
        Some(u64::from_ne_bytes(b))
    }
}

/// Makes this process the reaper of its orphaned descendants: a service's child that calls
/// setsid leaves the service's process group, but when the service dies it is re-parented
/// here rather than to init, so [`reap_orphans`] can find it.
pub fn become_subreaper() {
    // SAFETY: PR_SET_CHILD_SUBREAPER takes a plain integer.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Kills and reaps every child of this process that no `Proc` owns — orphans re-parented
/// here after escaping their process group — until none is left. Call it when no `Proc` is
/// alive. Returns "pid N (name)" for each.
pub fn reap_orphans() -> Vec<String> {
    let me = std::process::id();
    let mut killed = Vec::new();
    // Killing one may orphan its own children in turn: a few rounds.
    for _ in 0..8 {
        let orphans = children_of(me);
        if orphans.is_empty() {
            break;
        }
        for (pid, name) in orphans {
            // SAFETY: kill/waitpid on our own child.
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
                libc::waitpid(pid as i32, std::ptr::null_mut(), 0);
            }
            killed.push(format!("pid {pid} ({name})"));
        }
    }
    killed
}

/// (pid, command name) of the processes whose parent is `parent`, from /proc.
fn children_of(parent: u32) -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // "pid (comm) state ppid …": comm may hold spaces and parentheses.
            let (head, rest) = stat.rsplit_once(')')?;
            let name = head.split_once('(')?.1.to_string();
            let ppid: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == parent).then_some((pid, name))
        })
        .collect()
}

/// Runs `cmd` to completion, but for at most `timeout` and never past an interrupt: in its
/// own process group, killed with the runner. Its exit status and trimmed stdout. For the
/// short helper commands whose answers go into run.json (`loadgen --version`, `git`, …): a
/// helper that hangs must not hold the run.
pub fn output_within(cmd: Command, timeout: Duration) -> Result<(ExitStatus, String), String> {
    let what = format!("{:?}", cmd.get_program());
    let mut p = Proc::spawn(cmd, &Confinement::default()).map_err(|e| format!("{what}: {e}"))?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(s) = p.try_wait() {
            break s;
        }
        if crate::interrupt::requested() {
            p.kill();
            return Err(format!("{what}: interrupted"));
        }
        if Instant::now() >= deadline {
            p.kill();
            return Err(format!(
                "{what}: no answer within {} ms, killed",
                timeout.as_millis()
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    Ok((status, p.collect_stdout().trim().to_string()))
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}
