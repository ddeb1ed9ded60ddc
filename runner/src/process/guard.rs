//! The guardian: what kills a service's process tree when the runner itself is killed
//! (SIGKILL, a crash), where no code of the runner runs any more. The parent-death signal
//! reaches only the service's first process; its workers, a `sh -c` child, a daemon's
//! double-forked grandchild would live on.
//!
//! `matrix run` (and the agent) start it once: `matrix guard <runner pid>`, in its own
//! process group, its stdin the read end of a pipe only the runner holds. When that pipe
//! closes — the runner is gone, however it ended — it SIGKILLs every process that carries
//! the runner's marker in its environment (every service is launched with it, and its
//! descendants inherit it) and every process in a cgroup the runner created, until none
//! is left, removes those cgroups and exits.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// The environment variable marking a service's processes: this runner ([`marker`]).
pub const RUNNER_ENV: &str = "PINGMATRIX_RUNNER";

/// The environment variable naming which of the runner's service launches a process
/// belongs to ([`next_service`]): the runner reaps only the orphans of the service it stops.
pub const SERVICE_ENV: &str = "PINGMATRIX_SERVICE";

/// The marker's value for this runner: its pid and the moment it first asked, so a later
/// process that is given the same pid (the guardian outlives the runner) is not taken for it.
pub fn marker() -> &'static str {
    static MARKER: OnceLock<String> = OnceLock::new();
    MARKER.get_or_init(|| format!("{}-{}", std::process::id(), super::mono_ns()))
}

/// A new service launch's id in this runner.
pub fn next_service() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The environment entries marking the processes of service launch `id`.
pub fn service_env(id: u64) -> [(&'static str, String); 2] {
    [
        (RUNNER_ENV, marker().to_string()),
        (SERVICE_ENV, id.to_string()),
    ]
}

/// Does `pid` carry this runner's marker (and, given `service`, that launch's id) in its
/// environment? False where the environment cannot be read (a zombie, another user's).
pub fn carries_marker(pid: u32, service: Option<u64>) -> bool {
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let runner = format!("{RUNNER_ENV}={}", marker());
    let id = service.map(|s| format!("{SERVICE_ENV}={s}"));
    let mut vars = env.split(|b| *b == 0);
    let (mut has_runner, mut has_id) = (false, id.is_none());
    for kv in &mut vars {
        has_runner |= kv == runner.as_bytes();
        has_id |= id.as_ref().is_some_and(|i| kv == i.as_bytes());
    }
    has_runner && has_id
}

/// The guardian's pid and the write end of its stdin (held until the runner exits).
static GUARD: OnceLock<(u32, OwnedFd)> = OnceLock::new();

/// The guardian's pid, once started (it is the runner's child, but no orphan to reap).
pub fn pid() -> Option<u32> {
    GUARD.get().map(|g| g.0)
}

/// Starts the guardian (once per process; a failure is only reported on stderr: the
/// subreaper and the parent-death signal still hold everything while the runner lives).
pub fn start() {
    if GUARD.get().is_some() {
        return;
    }
    let started = (|| -> std::io::Result<(u32, OwnedFd)> {
        let exe = std::env::current_exe()?;
        let (read, write) = std::io::pipe()?;
        let child = Command::new(exe)
            .args([
                "guard",
                &std::process::id().to_string(),
                "--marker",
                marker(),
            ])
            .stdin(Stdio::from(OwnedFd::from(read)))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .env_remove(RUNNER_ENV)
            .env_remove(SERVICE_ENV)
            // Its own group: a Ctrl-C at the terminal is the runner's to handle.
            .process_group(0)
            .spawn()?;
        Ok((child.id(), OwnedFd::from(write)))
    })();
    match started {
        Ok(g) => {
            let _ = GUARD.set(g);
        }
        Err(e) => eprintln!("matrix: no guardian for the services' processes ({e})"),
    }
}

use std::os::unix::process::CommandExt;

/// `matrix guard <runner> --marker <marker>`: waits for its stdin to close, then kills what
/// the runner left: the processes carrying its marker, and those in its cgroups.
pub fn main(runner: u32, marker: &str) -> ExitCode {
    let mut sink = [0u8; 64];
    let mut stdin = std::io::stdin();
    while !matches!(stdin.read(&mut sink), Ok(0) | Err(_)) {}
    let marker = format!("{RUNNER_ENV}={marker}");
    let groups = runner_cgroups(runner);
    for _ in 0..100 {
        let mut left = marked(&marker);
        for g in &groups {
            left.extend(super::tree::cgroup_procs(g));
        }
        left.retain(|p| *p != std::process::id());
        if left.is_empty() {
            break;
        }
        for p in left {
            // SAFETY: SIGKILL to a process of the runner's services.
            unsafe { libc::kill(p as i32, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for g in groups {
        let _ = std::fs::remove_dir(g);
    }
    ExitCode::SUCCESS
}

/// Processes whose environment holds `marker` ("NAME=value").
fn marked(marker: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let env = std::fs::read(e.path().join("environ")).ok()?;
            env.split(|b| *b == 0)
                .any(|kv| kv == marker.as_bytes())
                .then_some(pid)
        })
        .collect()
}

/// The cgroups the runner created (`pingmatrix-<runner>-…`) beside the guardian's own,
/// in every hierarchy.
fn runner_cgroups(runner: u32) -> Vec<PathBuf> {
    let prefix = format!("pingmatrix-{runner}-");
    let root = Path::new(crate::limits::cgroup::CGROUP_ROOT);
    let mut out = Vec::new();
    for (ctrls, path) in crate::limits::self_cgroups() {
        let mounts = if ctrls.is_empty() {
            vec![root.to_path_buf(), root.join("unified")]
        } else {
            vec![root.join(ctrls.join(",")), root.join(&ctrls[0])]
        };
        for m in mounts {
            let dir = m.join(path.trim_start_matches('/'));
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            out.extend(
                rd.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                    .map(|e| e.path()),
            );
        }
    }
    out.sort();
    out.dedup();
    out
}
