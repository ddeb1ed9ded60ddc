//! A child process in its own process group whose stdout/stderr are drained by threads
//! (stdout lines to a channel, stderr to a bounded tail). Dropping it kills the whole
//! group and reaps it: no orphan survives any error path.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::limits::Confinement;

pub mod guard;
mod launch;
pub mod tree;

pub use tree::Tree;

const TAIL_LINES: usize = 40;

pub struct Proc {
    pub pid: u32,
    /// Just before the launch (clone or `spawn()`).
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
    /// A service's cgroups ([`Proc::launch`]): its whole process tree is killed with it.
    /// None for the generator and helper commands (their process group only).
    tree_cgroups: Option<Vec<std::path::PathBuf>>,
    /// A service's launch id ([`guard::next_service`]), in the environment of every process
    /// of its tree: which orphans re-parented to the runner are its own.
    service: Option<u64>,
    /// Members of the tree found running outside its process group when it was killed.
    escaped: Vec<String>,
}

/// The child's stdout/stderr pipes and the threads draining them, set up before the child
/// exists: nothing is left for the runner to do on the service's clock once it has exec'd.
struct Output {
    stdout: OwnedFd,
    stderr: OwnedFd,
    lines: Receiver<String>,
    tail: Arc<Mutex<VecDeque<String>>>,
    readers: Vec<JoinHandle<()>>,
}

impl Output {
    fn new() -> std::io::Result<Output> {
        let (out_r, out_w) = pipe()?;
        let (err_r, err_w) = pipe()?;
        let (tx, rx) = channel();
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let t2 = tail.clone();
        let readers = vec![
            std::thread::spawn(move || {
                // Bytes, not `lines()`: a line that is not UTF-8 must neither end the reader
                // nor close the pipe (the service would die of SIGPIPE on its next write).
                let mut r = BufReader::new(std::fs::File::from(out_r));
                let mut buf = Vec::new();
                loop {
                    buf.clear();
                    match r.read_until(b'\n', &mut buf) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(_) => break,
                    }
                    // Nobody listening any more is no reason to stop: keep draining so the
                    // child never blocks.
                    let _ = tx.send(decode_line(&buf));
                }
            }),
            std::thread::spawn(move || {
                let mut r = BufReader::new(std::fs::File::from(err_r));
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
        Ok(Output {
            stdout: out_w,
            stderr: err_w,
            lines: rx,
            tail,
            readers,
        })
    }

    /// The `Proc` around a started child. Drops the write ends: the readers see end-of-file
    /// once the child (and anything it passed them to) is gone.
    fn into_proc(self, pid: u32, at: (Instant, u64), exec_at_ns: Option<u64>) -> Proc {
        Proc {
            pid,
            spawned_at: at.0,
            spawned_at_ns: at.1,
            exec_at_ns,
            stdout_lines: self.lines,
            stderr_tail: self.tail,
            readers: self.readers,
            status: None,
            tree_cgroups: None,
            service: None,
            escaped: Vec::new(),
        }
    }
}

/// One line read from a child's output: decoded lossily (bytes that are not UTF-8 become
/// U+FFFD), without its line ending.
fn decode_line(raw: &[u8]) -> String {
    let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    String::from_utf8_lossy(raw).into_owned()
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fds; both are owned right after.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fresh fds from pipe2, owned once each.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// How services are launched in this run, once the first launch has decided it.
static LAUNCH: OnceLock<String> = OnceLock::new();

/// How this run launched its services ([`Proc::launch`]), for run.json: vfork-style, or
/// fork and why. None before the first launch.
pub fn launch_method() -> Option<String> {
    LAUNCH.get().cloned()
}

const VFORK: &str = "clone(CLONE_VM|CLONE_VFORK), as posix_spawn: the child's execve has no copy of the runner's memory to tear down";

impl Proc {
    /// Starts `cmd` under `confinement` (fork, then the confinement and the exec clock
    /// between fork and exec). For the generator and helper commands; services start
    /// through [`Proc::launch`].
    pub fn spawn(mut cmd: Command, confinement: &Confinement) -> std::io::Result<Proc> {
        let output = Output::new()?;
        confinement.install(&mut cmd);
        let stamp = ExecStamp::install(&mut cmd)?;
        cmd.stdin(Stdio::null())
            .stdout(output.stdout.try_clone()?)
            .stderr(output.stderr.try_clone()?);
        let spawned_at = Instant::now();
        let spawned_at_ns = mono_ns();
        let spawned = cmd.spawn();
        let exec_at_ns = stamp.read();
        // The command holds copies of the write ends: gone with it.
        drop(cmd);
        let child = spawned?;
        // Reaped by pid from here on (`Child` neither waits nor kills when dropped).
        let pid = child.id();
        drop(child);
        Ok(output.into_proc(pid, (spawned_at, spawned_at_ns), exec_at_ns))
    }

    /// Starts a service: `program args…` under `confinement`, launched vfork-style
    /// ([`launch`]) with its clock read just before `execve`. While it launches, the
    /// calling thread is pinned to `launcher_cpus` (when given) — so the exec does not wake
    /// it on the service's CPU — and the child, unless the confinement pins it, gets the
    /// mask the thread had before. Falls back to [`Proc::spawn`] (fork) where the clone is
    /// refused, and says so in [`launch_method`].
    pub fn launch(
        program: &Path,
        args: &[OsString],
        confinement: &Confinement,
        launcher_cpus: &[u32],
    ) -> std::io::Result<Proc> {
        let service = guard::next_service();
        let as_service = |mut p: Proc| {
            p.tree_cgroups = Some(confinement.cgroup_dirs().to_vec());
            p.service = Some(service);
            p
        };
        if LAUNCH.get().is_some_and(|m| m != VFORK) {
            return Proc::spawn(service_command(program, args, service), confinement)
                .map(as_service);
        }
        let before = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
            .map_err(std::io::Error::from)?;
        let setup = confinement.child_setup().or_affinity(before);
        let started = crate::limits::cpus::on_cpus(launcher_cpus, || {
            // Created here, the drain threads inherit the launcher's CPUs: when the service
            // writes its start-up line they wake there, not on its CPU.
            let output = Output::new()?;
            let stdin = std::fs::File::open("/dev/null")?.into();
            let spawned_at = Instant::now();
            let spawned_at_ns = mono_ns();
            let l = launch::launch(
                program,
                args,
                &guard::service_env(service),
                (&stdin, &output.stdout, &output.stderr),
                &setup,
            );
            Ok::<_, std::io::Error>((l, output, (spawned_at, spawned_at_ns)))
        })?;
        match started {
            (Ok(l), output, at) => {
                let _ = LAUNCH.set(VFORK.into());
                Ok(as_service(output.into_proc(l.pid, at, Some(l.exec_at_ns))))
            }
            (Err(f), _, _) if f.refused() => {
                let _ = LAUNCH.set(format!(
                    "fork: clone(CLONE_VM|CLONE_VFORK) refused ({}); start-up includes the child's execve tearing down its copy of the runner's memory",
                    std::io::Error::from(f)
                ));
                Proc::spawn(service_command(program, args, service), confinement).map(as_service)
            }
            (Err(f), _, _) => Err(f.into()),
        }
    }

    /// Exit status if the process has exited (reaps it). Before reaping, the rest of the
    /// process group (and of a service's tree) is SIGKILLed while the zombie leader still
    /// reserves the group id, so a group signal can never reach a recycled pid.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() && self.leader_exited() {
            self.signal_group(libc::SIGKILL);
            self.kill_members();
            self.status = self.reap();
        }
        self.status
    }

    /// A service's whole process tree ([`Tree`]); for any other child, its own process.
    pub fn tree(&self) -> Tree {
        Tree::new(self.pid, self.tree_cgroups.clone().unwrap_or_default())
    }

    /// SIGKILLs every member of a service's tree but the leader (whose pid stays reserved
    /// until it is reaped), noting those that were running outside its process group.
    fn kill_members(&mut self) {
        if self.tree_cgroups.is_none() || self.status.is_some() {
            return;
        }
        for p in self.tree().members() {
            if p == self.pid {
                continue;
            }
            let stat = ProcStat::read(p);
            // SAFETY: kill(2) of a process of the service's tree, found just now.
            unsafe { libc::kill(p as i32, libc::SIGKILL) };
            if let Some(s) = stat
                && s.state != 'Z'
                && s.pgid != self.pid
            {
                self.escaped.push(format!("pid {} ({})", s.pid, s.name));
            }
        }
    }

    /// After a service's leader is gone: SIGKILLs what is left of its tree — members of its
    /// cgroups and descendants re-parented to the runner (a daemon's double fork) — and
    /// reaps them. Returns "pid N (name)" for each that was still running outside the
    /// service's process group (it had left the group: setsid, a daemon).
    ///
    /// Only the service's own orphans are reaped ([`orphans`]): never another child of this
    /// process, which may be another service, the generator, a helper — or, where the
    /// runner's code runs inside a test binary, another test's child, whose own wait would
    /// then fail with ECHILD.
    pub fn reap_rest(&mut self) -> Vec<String> {
        let (Some(cgroups), Some(service)) = (self.tree_cgroups.clone(), self.service) else {
            return Vec::new();
        };
        let whose = Whose::Service {
            id: service,
            leader: self.pid,
            cgroups: &cgroups,
        };
        let mut escaped = std::mem::take(&mut self.escaped);
        for _ in 0..8 {
            let mut left: Vec<u32> = cgroups.iter().flat_map(|d| tree::cgroup_procs(d)).collect();
            left.extend(tree::descendants(&left));
            for p in &left {
                // SAFETY: kill(2) of a process in the service's cgroup.
                unsafe { libc::kill(*p as i32, libc::SIGKILL) };
            }
            let reaped = reap_orphans_of(&whose);
            for r in &reaped {
                if !escaped.contains(r) {
                    escaped.push(r.clone());
                }
            }
            if left.is_empty() && reaped.is_empty() && orphans(&whose).is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        escaped
    }

    /// Waits for the leader and reaps it.
    fn reap(&self) -> Option<ExitStatus> {
        let mut st = 0;
        loop {
            // SAFETY: waitpid on our own, not yet reaped child.
            let r = unsafe { libc::waitpid(self.pid as libc::pid_t, &mut st, 0) };
            if r == self.pid as libc::pid_t {
                return Some(ExitStatus::from_raw(st));
            }
            if r < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return None;
            }
        }
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

    /// SIGKILL the group (a service: its whole tree) and reap.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.signal_group(libc::SIGKILL);
            self.kill_members();
            self.status = self.reap();
            // Kept for the stop's record ([`Proc::reap_rest`] again finds nothing left).
            self.escaped = self.reap_rest();
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

/// A service's `program args…` as a `Command`, its environment marked as launch `service`
/// ([`guard::service_env`]).
fn service_command(program: &Path, args: &[OsString], service: u64) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args).envs(guard::service_env(service));
    cmd
}

/// CLOCK_MONOTONIC in ns: the clock `Proc::exec_at_ns` is on.
pub fn mono_ns() -> u64 {
    // SAFETY: clock_gettime writes one timespec.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A close-on-exec pipe a forked child writes its clock to as the very last step before
/// `execve`, so start-up time excludes fork, cgroup attach and everything else the runner
/// does to launch it. (Not the execve itself: a forked child's exec first tears down its
/// copy of the runner's memory, which is why services launch vfork-style instead.)
struct ExecStamp {
    read: std::fs::File,
    write: std::os::fd::OwnedFd,
}

impl ExecStamp {
    fn install(cmd: &mut Command) -> std::io::Result<ExecStamp> {
        use std::os::fd::AsRawFd;
        let (read, write) = pipe()?;
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

/// Is this process a subreaper ([`become_subreaper`])? Only then can orphans be
/// re-parented to it.
fn is_subreaper() -> bool {
    let mut on: libc::c_int = 0;
    // SAFETY: PR_GET_CHILD_SUBREAPER writes one int.
    let r = unsafe { libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &mut on as *mut libc::c_int) };
    r == 0 && on != 0
}

/// Whose orphans to reap.
enum Whose<'a> {
    /// Any service's this runner launched (carrying its marker).
    AnyService,
    /// Launch `id`'s, whose first process is `leader` (reaped by pid, never here).
    Service {
        id: u64,
        leader: u32,
        cgroups: &'a [std::path::PathBuf],
    },
}

/// Kills and reaps the orphans of every service this runner launched — its processes
/// re-parented here after escaping their process group — until none is left. Call it when
/// no `Proc` is alive. Returns "pid N (name)" for each that was still running.
pub fn reap_orphans() -> Vec<String> {
    reap_orphans_of(&Whose::AnyService)
}

/// Kills and reaps the orphans of `whose` ([`orphans`]); for one service, reports only
/// those still running outside its process group (members of the group were SIGKILLed
/// with it and are only waiting to be reaped).
fn reap_orphans_of(whose: &Whose) -> Vec<String> {
    let group = match whose {
        Whose::AnyService => 0,
        Whose::Service { leader, .. } => *leader,
    };
    let mut killed = Vec::new();
    // Killing one may orphan its own children in turn: a few rounds.
    for _ in 0..8 {
        let found = orphans(whose);
        if found.is_empty() {
            break;
        }
        for p in found {
            // SAFETY: kill/waitpid on our own child, an orphan of a service of ours.
            unsafe {
                libc::kill(p.pid as i32, libc::SIGKILL);
                libc::waitpid(p.pid as i32, std::ptr::null_mut(), 0);
            }
            if p.state != 'Z' && p.pgid != group {
                killed.push(format!("pid {} ({})", p.pid, p.name));
            }
        }
    }
    killed
}

/// The children of this process that are orphans of `whose`: re-parented here (only a
/// subreaper has any), and a service's by its marker in their environment, or — for one
/// service, as a zombie's environment cannot be read — by its process group or cgroups.
/// Never a service's leader (its `Proc` reaps it), the guardian, or any other child: those
/// belong to whoever spawned them, who will wait for them.
fn orphans(whose: &Whose) -> Vec<ProcStat> {
    if !is_subreaper() {
        return Vec::new();
    }
    let direct = tree::children(std::process::id());
    if direct.is_empty() {
        return Vec::new();
    }
    let guard = guard::pid();
    let in_groups: Vec<u32> = match whose {
        Whose::Service { cgroups, .. } => {
            cgroups.iter().flat_map(|d| tree::cgroup_procs(d)).collect()
        }
        Whose::AnyService => Vec::new(),
    };
    direct
        .into_iter()
        .filter(|p| Some(*p) != guard)
        .filter_map(ProcStat::read)
        .filter(|p| match whose {
            Whose::AnyService => guard::carries_marker(p.pid, None),
            Whose::Service { id, leader, .. } => {
                p.pid != *leader
                    && (p.pgid == *leader
                        || in_groups.contains(&p.pid)
                        || guard::carries_marker(p.pid, Some(*id)))
            }
        })
        .collect()
}

/// One line of `/proc/<pid>/stat`, the fields the runner reads: which process it is, and the
/// counters the kernel keeps for the whole process (exited threads included). The one
/// reader of that file: the sampler and the counts read it here too.
#[derive(Debug, Clone)]
pub(crate) struct ProcStat {
    pub pid: u32,
    pub name: String,
    pub state: char,
    pub ppid: u32,
    pub pgid: u32,
    pub minor_faults: u64,
    pub major_faults: u64,
    /// User and system CPU time, in clock ticks ([`clk_tck`]).
    pub utime: u64,
    pub stime: u64,
    /// Clock ticks since boot at the start: with the pid, which process this is.
    pub start: u64,
}

impl ProcStat {
    /// `pid`'s line now; None once the process is gone.
    pub fn read(pid: u32) -> Option<ProcStat> {
        parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    pub fn user_us(&self) -> f64 {
        self.utime as f64 * 1e6 / clk_tck()
    }

    pub fn system_us(&self) -> f64 {
        self.stime as f64 * 1e6 / clk_tck()
    }
}

/// Clock ticks per second, the unit of /proc's CPU times.
pub(crate) fn clk_tck() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// Parses "pid (comm) state ppid pgrp …" (comm may hold spaces and parentheses); fields
/// are numbered as proc(5) numbers them.
fn parse_stat(stat: &str) -> Option<ProcStat> {
    let (head, rest) = stat.rsplit_once(')')?;
    let (pid, name) = head.split_once(" (")?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Field 3 (state) is the first after comm.
    let at = |field: usize| f.get(field - 3)?.parse::<u64>().ok();
    Some(ProcStat {
        pid: pid.trim().parse().ok()?,
        name: name.to_string(),
        state: f.first()?.chars().next()?,
        ppid: at(4)? as u32,
        pgid: at(5)? as u32,
        minor_faults: at(10)?,
        major_faults: at(12)?,
        utime: at(14)?,
        stime: at(15)?,
        start: at(22)?,
    })
}

/// Every process in /proc.
pub(crate) fn processes() -> Vec<ProcStat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| ProcStat::read(e.file_name().to_str()?.parse().ok()?))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{self, Request, Role};

    #[test]
    fn parses_stat_with_spaces_and_parentheses_in_comm() {
        let line = "42 (a (b) c) S 1 40 42 0 -1 4194560 1234 0 7 0 250 40 0 0 20 0 3 0 99 0 0";
        let s = parse_stat(line).unwrap();
        assert_eq!((s.pid, s.name.as_str(), s.state), (42, "a (b) c", 'S'));
        assert_eq!((s.ppid, s.pgid), (1, 40));
        assert_eq!(
            (s.minor_faults, s.major_faults, s.utime, s.stime, s.start),
            (1234, 7, 250, 40, 99)
        );
        assert!(parse_stat("garbage").is_none());
        assert!(
            parse_stat("42 (short) S 1 40").is_none(),
            "a cut line is no line"
        );
        let me = ProcStat::read(std::process::id()).unwrap();
        assert_eq!(me.pid, std::process::id());
    }

    fn launch(program: &str, args: &[&str], conf: &Confinement, cpus: &[u32]) -> Proc {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        Proc::launch(Path::new(program), &args, conf, cpus).expect("launch")
    }

    fn stdout_of(mut p: Proc) -> String {
        p.wait_timeout(Duration::from_secs(10)).expect("exits");
        p.collect_stdout()
    }

    /// A field of /proc/self/status as the child saw it.
    fn field<'a>(status: &'a str, name: &str) -> &'a str {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .unwrap_or_else(|| panic!("no {name} in {status}"))
            .trim()
    }

    #[test]
    fn launch_drains_output_and_reports_exit_and_exec_clock() {
        let before = mono_ns();
        let mut p = launch(
            "sh",
            &["-c", "echo out; echo err >&2; exit 3"],
            &Confinement::default(),
            &[],
        );
        let st = p.wait_timeout(Duration::from_secs(10)).expect("exits");
        assert_eq!(st.code(), Some(3));
        let exec = p.exec_at_ns.expect("the child's clock");
        assert!(before <= p.spawned_at_ns && p.spawned_at_ns <= exec && exec <= mono_ns());
        assert_eq!(p.stderr_tail().as_deref(), Some("err"));
        assert_eq!(p.collect_stdout(), "out");
        assert!(launch_method().is_some());
    }

    #[test]
    fn a_line_that_is_not_utf8_neither_ends_the_reader_nor_kills_the_child() {
        // More than a pipe's buffer after the bad line: had the reader stopped there, the
        // child would die of SIGPIPE.
        let mut p = launch(
            "sh",
            &["-c", "printf 'bad \\377 line\\r\\n'; seq 1 100000; exit 0"],
            &Confinement::default(),
            &[],
        );
        let st = p.wait_timeout(Duration::from_secs(20)).expect("exits");
        assert_eq!(st.code(), Some(0), "{st}");
        let out = p.collect_stdout();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "bad \u{fffd} line");
        assert_eq!(lines.len(), 100_001);
        assert_eq!(lines.last(), Some(&"100000"));
    }

    #[test]
    fn launch_of_a_missing_binary_fails_with_not_found() {
        let args = [OsString::from("x")];
        let e = Proc::launch(
            Path::new("/nonexistent/pingmatrix-test"),
            &args,
            &Confinement::default(),
            &[],
        )
        .err()
        .expect("no such binary");
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
        let e = Proc::launch(
            Path::new("pingmatrix-no-such-program"),
            &args,
            &Confinement::default(),
            &[],
        )
        .err()
        .expect("not on PATH");
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
    }

    #[test]
    fn launched_child_has_default_signals_its_own_group_and_stdin_closed() {
        // The test harness ignores SIGPIPE, like every Rust program: the child must not.
        let status = stdout_of(launch(
            "cat",
            &["/proc/self/status"],
            &Confinement::default(),
            &[],
        ));
        assert_eq!(u64::from_str_radix(field(&status, "SigBlk"), 16), Ok(0));
        let ignored = u64::from_str_radix(field(&status, "SigIgn"), 16).unwrap();
        assert_eq!(ignored & (1 << (libc::SIGPIPE - 1)), 0, "SIGPIPE ignored");
        assert_eq!(u64::from_str_radix(field(&status, "SigCgt"), 16), Ok(0));
        // "pid (comm) state ppid pgrp …": its own group.
        let stat = stdout_of(launch(
            "sh",
            &["-c", "cat /proc/$$/stat"],
            &Confinement::default(),
            &[],
        ));
        let f: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        let pid = stat.split_whitespace().next().unwrap();
        assert_eq!(f[2], pid, "{stat}");
        assert_eq!(
            stdout_of(launch("sh", &["-c", "wc -c"], &Confinement::default(), &[])),
            "0"
        );
    }

    #[test]
    fn launcher_cpus_pin_only_the_launch_and_the_child_keeps_its_own_mask() {
        let all = crate::limits::cpus::allowed_cpus();
        let (first, last) = (all[0], *all.last().unwrap());
        let list = |s: &str| field(s, "Cpus_allowed_list").to_string();
        // Nothing in the confinement: the child gets the mask the thread had, not the
        // launcher's CPUs.
        let s = stdout_of(launch(
            "cat",
            &["/proc/self/status"],
            &Confinement::default(),
            &[last],
        ));
        assert_eq!(list(&s), crate::limits::cpus::format_cpus(&all));
        assert_eq!(crate::limits::cpus::allowed_cpus(), all);
        // Pinned by its confinement (cgroup where usable, affinity always).
        let conf = limits::confine(
            Role::Server,
            &Request {
                cpus: vec![first],
                cpu_quota: None,
                memory_max_bytes: None,
            },
        )
        .expect("affinity is always possible");
        let s = stdout_of(launch("cat", &["/proc/self/status"], &conf, &[last]));
        assert_eq!(list(&s), first.to_string());
    }
}
