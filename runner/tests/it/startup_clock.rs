//! The start-up clock on real processes: the responder's exec → first 200 lies inside the
//! wall time around its whole launch and after the launch stamp; a warm-up start answers
//! and leaves no process behind; a binary that cannot be exec'd, or exits at once, gives a
//! clear error (from the library, and recorded on a `matrix run` cell for an exec that
//! fails), never a panic or a hang.

use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::support::live;

use live::{Scratch, matrix_at, only_run_dir, read, tiny_matrix, write_config};
use runner::limits::cpus::{allowed_cpus, on_cpus};
use runner::limits::{self, Confinement, Request, Role};
use runner::process::mono_ns;
use runner::results::schema::{CellResult, CellStatus, Stage};
use runner::service::{spawn, startup, warm};

/// The tests count this process's children of their own binaries: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const LOCAL: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn responder() -> PathBuf {
    live::bin("pingmatrix-responder")
}

/// Server on the first allowed CPU (cgroup where usable, affinity always), probe on the last.
fn server_confinement() -> (Confinement, Vec<u32>) {
    let cpus = allowed_cpus();
    let conf = limits::confine(
        Role::Server,
        &Request {
            cpus: vec![cpus[0]],
            cpu_quota: None,
            memory_max_bytes: None,
        },
    )
    .expect("affinity is always possible");
    (conf, vec![*cpus.last().unwrap()])
}

/// This process's live children (pid, comm) started from one of `binaries` — a killed and
/// reaped one is not among them. Only these: the other tests of this binary start `matrix`
/// children of their own at any moment.
fn children(binaries: &[&Path]) -> Vec<(u32, String)> {
    let me = std::process::id();
    let ours = |pid: &std::path::Path| {
        let cmd = std::fs::read(pid.join("cmdline")).unwrap_or_default();
        cmd.split(|b| *b == 0).any(|arg| {
            binaries
                .iter()
                .any(|b| arg == b.as_os_str().as_encoded_bytes())
        })
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let (head, rest) = stat.rsplit_once(')')?;
            let ppid: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
            let comm = head.split_once('(')?.1.to_string();
            (ppid == me && ours(&e.path())).then_some((pid, comm))
        })
        .collect()
}

#[test]
fn responder_first_200_lies_inside_the_wall_time_around_its_launch() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (conf, probe) = server_confinement();
    let addr = spawn::free_addr(LOCAL).unwrap();
    let wall_start_ns = mono_ns();
    let mut proc = spawn::spawn(&responder(), addr, 1, &[], &conf, &probe).expect("launch");
    let ready = on_cpus(&probe, || {
        startup::wait_ready(&mut proc, addr, Duration::from_secs(5))
    })
    .expect("the responder answers");
    let wall_end_ns = mono_ns();
    let exec_ns = proc.exec_at_ns.expect("the child's own clock");
    // Launch stamp, then the child's exec clock, both inside the wall time.
    assert!(
        wall_start_ns <= proc.spawned_at_ns,
        "launch stamp before the wall start"
    );
    assert!(
        proc.spawned_at_ns <= exec_ns,
        "exec clock before the launch stamp"
    );
    assert!(exec_ns <= wall_end_ns);
    assert_eq!(ready.launch_us, Some((exec_ns - proc.spawned_at_ns) / 1000));
    // exec → first 200 is within exec → end of the wait, so below the whole wall time less
    // the launch.
    let wall_us = (wall_end_ns - wall_start_ns) / 1000;
    assert!(ready.connect_us <= ready.first_200_us, "{ready:?}");
    assert!(
        ready.first_200_us <= (wall_end_ns - exec_ns) / 1000,
        "{ready:?}"
    );
    assert!(
        ready.first_200_us + ready.launch_us.unwrap() <= wall_us,
        "{ready:?} in {wall_us} µs"
    );
    let pid = proc.pid;
    drop(proc);
    assert!(
        !children(&[&responder()]).iter().any(|(p, _)| *p == pid),
        "the responder outlived its Proc"
    );
}

#[test]
fn warm_up_start_answers_and_leaves_no_process() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (conf, probe) = server_confinement();
    let before = children(&[&responder()]);
    let t0 = Instant::now();
    let us = warm::warm_up(
        &responder(),
        LOCAL,
        1,
        &[],
        "/ping",
        &conf,
        &probe,
        Duration::from_secs(5),
    )
    .map_err(|f| f.reason)
    .expect("the responder answers");
    assert!(
        us > 0 && u128::from(us) <= t0.elapsed().as_micros(),
        "{us} µs"
    );
    assert_eq!(
        children(&[&responder()]),
        before,
        "the warm-up start outlived the call"
    );
}

/// Stopping a service used to SIGKILL and reap every child of the calling process that no
/// `Proc` owned, taking them all for the service's orphans. Inside this test binary those
/// are the other tests' `matrix` children: their own wait then failed with ECHILD ("No
/// child processes"). A child the service did not start is left to whoever started it.
#[test]
fn stopping_a_service_leaves_the_callers_other_children_alone() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut other = std::process::Command::new("sleep")
        .arg("30")
        .stdin(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (conf, probe) = server_confinement();
    let addr = spawn::free_addr(LOCAL).unwrap();
    let mut proc = spawn::spawn(&responder(), addr, 1, &[], &conf, &probe).expect("launch");
    on_cpus(&probe, || {
        startup::wait_ready(&mut proc, addr, Duration::from_secs(5))
    })
    .expect("the responder answers");
    let escaped = proc.reap_rest();
    drop(proc);
    let waited = other.try_wait();
    let _ = other.kill();
    let end = other.wait();
    assert!(
        matches!(waited, Ok(None)),
        "another child of this process after the stop: {waited:?} (escaped {escaped:?})"
    );
    assert!(end.is_ok(), "{end:?}");
}

/// A file that exists but cannot be exec'd (no execute permission).
fn not_executable(dir: &Path) -> PathBuf {
    let p = dir.join("not-executable");
    std::fs::write(&p, "#!/bin/sh\nexit 0\n").unwrap();
    p
}

#[test]
fn a_failing_exec_or_an_early_exit_is_a_clear_error() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let d = Scratch::new("startup-clock-exec");
    let (conf, probe) = server_confinement();
    let exits = d.0.join("exits");
    let noexec = not_executable(&d.0);
    let before = children(&[&noexec, &exits]);
    let t0 = Instant::now();
    let e = spawn::spawn(
        &noexec,
        spawn::free_addr(LOCAL).unwrap(),
        1,
        &[],
        &conf,
        &probe,
    )
    .err()
    .expect("exec refused");
    assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}");
    let f = warm::warm_up(
        &noexec,
        LOCAL,
        1,
        &[],
        "/ping",
        &conf,
        &probe,
        Duration::from_secs(5),
    )
    .expect_err("exec refused");
    assert_eq!(f.stage, Stage::Spawn, "never started");
    assert!(
        f.reason.starts_with("warm-up start: cannot start ")
            && f.reason.contains("not-executable")
            && f.reason.contains("ermission denied"),
        "{}",
        f.reason
    );
    // Started, but exits before answering: the exit status and its stderr.
    std::fs::write(&exits, "#!/bin/sh\necho gone >&2\nexit 4\n").unwrap();
    std::fs::set_permissions(&exits, std::fs::Permissions::from_mode(0o755)).unwrap();
    let f = warm::warm_up(
        &exits,
        LOCAL,
        1,
        &[],
        "/ping",
        &conf,
        &probe,
        Duration::from_secs(5),
    )
    .expect_err("exits at once");
    assert_eq!(f.stage, Stage::Startup, "started, no answer");
    assert!(f.reason.contains("exited during start-up"), "{}", f.reason);
    assert_eq!(f.stderr_tail.as_deref(), Some("gone"));
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "no waiting out the timeout"
    );
    assert_eq!(children(&[&noexec, &exits]), before);
}

#[test]
fn a_service_that_cannot_be_execd_fails_its_cell_with_the_reason() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let d = Scratch::new("startup-clock-cell");
    // Executable, so the matrix file's check passes, but its interpreter is missing: the
    // execve itself fails (ENOENT).
    let noexec = d.0.join("bad-interpreter");
    std::fs::write(&noexec, "#!/nonexistent/pingmatrix-interpreter\n").unwrap();
    std::fs::set_permissions(&noexec, std::fs::Permissions::from_mode(0o755)).unwrap();
    let m = write_config(&d.0, &tiny_matrix(&[("noexec", noexec, "")], 1, "", ""));
    let out = d.0.join("results");
    let o = matrix_at(&m, &out, &["run", "--quiet", "--only", "scenario=ping"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", live::out_text(&o));
    let cell: CellResult = read(
        &only_run_dir(&out)
            .join("cells")
            .join("noexec__ping__c4__pinned.json"),
    );
    assert_eq!(cell.status, CellStatus::Failed);
    let f = cell.failure.expect("a failure record");
    assert_eq!(f.stage, Stage::Spawn);
    assert!(
        f.reason.starts_with("warm-up start: cannot start ")
            && f.reason.contains("bad-interpreter")
            && f.reason.contains("No such file"),
        "{}",
        f.reason
    );
}
