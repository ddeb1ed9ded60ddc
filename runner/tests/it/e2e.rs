//! End-to-end: the real `matrix`, `loadgen` and `ping-tokio-hyper` binaries on a tiny matrix
//! with ~200 ms windows, plus fake services (one exits at once, one never listens), a bad
//! matrix file, and Ctrl-C mid-run followed by `--resume`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::live;

use live::{Scratch, bin, only_run_dir, out_text, read, script, tiny_matrix};
use runner::limits::cpus::allowed_cpus;
use runner::results::schema::{CellResult, CellStatus, ResultsFile, RunRecord, RunStatus, Stage};

/// Kills the child on drop (a failing assert must not leave `matrix` running).
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn cpus() -> (u32, u32) {
    let a = allowed_cpus();
    (a[0], *a.last().unwrap())
}

fn matrix_toml(services: &[(&str, PathBuf)], reps: u32, extra_profile: &str) -> String {
    let services: Vec<(&str, PathBuf, &str)> =
        services.iter().map(|(n, p)| (*n, p.clone(), "")).collect();
    tiny_matrix(&services, reps, "", extra_profile)
}

fn run_matrix(args: &[&str], env_marker: Option<&str>) -> Command {
    let mut c = Command::new(bin("matrix"));
    c.args(args).stdin(Stdio::null());
    marked(c, env_marker)
}

/// `c` with `PINGMATRIX_E2E_MARKER` in its environment, so its processes can be found.
fn marked(mut c: Command, env_marker: Option<&str>) -> Command {
    if let Some(m) = env_marker {
        c.env("PINGMATRIX_E2E_MARKER", m);
    }
    c
}

/// `matrix run --quiet --config M --out OUT <extra…>`.
fn run_quiet(m: &Path, out: &Path, extra: &[&str], env_marker: Option<&str>) -> Command {
    let args: Vec<&str> = ["run", "--quiet"].iter().chain(extra).copied().collect();
    marked(live::matrix_at(m, out, &args), env_marker)
}

/// Processes (other than us) whose environment carries `marker`.
fn marked_processes(marker: &str) -> Vec<String> {
    let needle = format!("PINGMATRIX_E2E_MARKER={marker}");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if let Ok(env) = std::fs::read(e.path().join("environ"))
            && env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes())
        {
            let cmd = std::fs::read_to_string(e.path().join("cmdline")).unwrap_or_default();
            out.push(format!("{name}: {}", cmd.replace('\0', " ")));
        }
    }
    out
}

#[test]
fn bad_matrix_file_is_rejected_with_file_line_and_field() {
    let d = Scratch::new("bad");
    let text = matrix_toml(&[("svc", bin("ping-tokio-hyper"))], 1, "")
        .replace("cooldown_ms = 0", "cooldown_ms = 0\ncooldwn_ms = 5");
    let m = d.0.join("m.toml");
    std::fs::write(&m, text).unwrap();
    let o = run_matrix(&["plan", "--config", m.to_str().unwrap()], None)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("m.toml:6:"), "{err}");
    assert!(err.contains("cooldwn_ms"), "{err}");

    // Missing binary and an impossible cpuset: both reported, each with its line.
    let text = matrix_toml(&[("svc", d.0.join("no-such-service"))], 1, "")
        .replace("server_cpus = \"", "server_cpus = \"4000,");
    std::fs::write(&m, text).unwrap();
    let o = live::matrix_at(&m, &d.0, &["run"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("services[0].binary"), "{err}");
    assert!(err.contains("profiles[0].server_cpus"), "{err}");
    // Nothing ran, so no run directory was created.
    assert_eq!(std::fs::read_dir(&d.0).unwrap().count(), 1, "{err}");
}

#[test]
fn tiny_matrix_runs_real_service_and_records_failures_of_fake_ones() {
    let d = Scratch::new("run");
    let exits = script(
        &d.0,
        "exits-at-once",
        "echo 'fatal: refusing to start' >&2; exit 3",
    );
    let never = script(&d.0, "never-listens", "exec sleep 30");
    let (sc, lc) = cpus();
    let limited = format!(
        "\n[[profiles]]\nname = \"small\"\nserver_cpus = \"{sc}\"\nloadgen_cpus = \"{lc}\"\ncpu_quota = 0.5\nmemory_max_mib = 256\n"
    );
    let text = matrix_toml(
        &[
            ("hyper", bin("ping-tokio-hyper")),
            ("exits", exits),
            ("never", never),
        ],
        2,
        &limited,
    )
    // The one end-to-end run that counts syscalls exactly, and one with a drift point (the kit
    // leaves both off).
    .replace("count_syscalls = false", "count_syscalls = true")
    .replace("drift_points = 0", "drift_points = 1");
    let m = live::write_config(&d.0, &text);
    let out = d.0.join("results");
    let o = live::matrix_at(&m, &out, &["run", "--only", "scenario=ping,open"])
        .output()
        .unwrap();
    // Fake services fail → non-zero exit, but the matrix went on.
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let run_dir = only_run_dir(&out);
    let run: RunRecord = read(&run_dir.join("run.json"));
    assert_eq!(run.status, RunStatus::Completed);
    assert!(run.config_toml.contains("[[services]]"));
    assert!(
        !run.environment.hardware.cpu_model.is_empty() || run.environment.hardware.logical_cpus > 0
    );
    // The runner's start-up floor, measured before the matrix, and the services' starts timed
    // from their own exec.
    let floor = &run.floors.as_ref().expect("floors").startup;
    let f = floor
        .first_200_us
        .as_ref()
        .expect("start-up floor measured");
    assert_eq!(f.n, runner::floor::STARTUP_SAMPLES);
    assert!(f.median > 0.0 && f.median < 1_000_000.0, "{f:?}");
    assert!(floor.launch_us.is_some());
    // How the services were launched is on record (vfork-style here; fork says why).
    assert!(
        floor
            .launch
            .as_deref()
            .is_some_and(|l| l.starts_with("clone(") || l.starts_with("fork:")),
        "{:?}",
        floor.launch
    );
    // The machine's timer floor at the run's open-loop rate (300/s), on the generator's CPU.
    let machine = run
        .floors
        .as_ref()
        .unwrap()
        .machine
        .as_ref()
        .expect("machine floor");
    let report = machine
        .report
        .as_ref()
        .unwrap_or_else(|| panic!("{:?}", machine.unavailable));
    assert_eq!(report.timer[0].rate_per_s, 300.0);
    assert!(report.timer[0].lateness.is_some());
    // The run's page is written at the end and its path printed; it names the failed cells
    // (their failure in the embedded data, and the page's list of what is missing).
    let page = run_dir.join("index.html");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("run page: {}", page.display())),
        "{}",
        out_text(&o)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("refusing to start") && html.contains("did not complete"));
    let md = std::fs::read_to_string(run_dir.join("results.md")).unwrap();
    assert!(md.contains("Start-up floor of this runner"), "{md}");
    assert!(md.contains("Machine floor (`loadgen --floor`"), "{md}");
    // How idle CPUs wait is recorded where the kernel exposes it, and said beside the floor.
    let idle = &run.environment.hardware.cpu_idle;
    let exposed = std::path::Path::new("/sys/devices/system/cpu/cpuidle/current_driver").exists();
    assert_eq!(idle.is_some(), exposed, "{idle:?}");
    assert_eq!(
        md.contains("Idle CPUs wait with cpuidle driver"),
        exposed,
        "{md}"
    );
    assert_eq!(
        run.environment.os.rcu_expedited.is_some(),
        std::path::Path::new("/sys/kernel/rcu_expedited").exists()
    );
    let results: ResultsFile = read(&run_dir.join("results.json"));
    // 2 scenarios × 2 profiles × 3 services.
    assert_eq!(results.cells.len(), 12);

    let cell = |k: &str| -> CellResult { read(&run_dir.join("cells").join(format!("{k}.json"))) };
    let ok = cell("hyper__ping__c4__pinned");
    assert_eq!(ok.status, CellStatus::Ok, "{:?}", ok.failure);
    assert_eq!(ok.reps.len(), 2);
    assert!(ok.reps.iter().all(|r| r.report.requests_per_s > 0.0));
    assert!(
        ok.starts.iter().all(|s| s.launch_us.is_some()),
        "{:?}",
        ok.starts
    );
    // Every measured start followed a warm-up start, whose own figure is kept.
    assert!(
        ok.starts.iter().all(|s| s.warmup_first_200_us.is_some()),
        "{:?}",
        ok.starts
    );
    assert!(floor.warm_up.is_some());
    assert!(
        ok.verification.iter().all(|v| v.passed),
        "{:?}",
        ok.verification
    );
    assert!(
        ok.startup_line
            .as_ref()
            .is_some_and(|b| !b.runtime.is_empty())
    );
    assert_eq!(ok.starts.len(), 2);
    assert!(
        ok.starts
            .iter()
            .all(|s| s.first_200_us.is_some() && s.stop.as_ref().unwrap().port_free_after)
    );
    assert!(ok.summary.server_cpu_us_per_request.is_some());
    assert!(ok.summary.requests_per_s.as_ref().unwrap().n == 2);
    // Syscalls per request counted exactly for the server and the generator, with the
    // server's by name — or, where perf cannot count here, unmeasured with perf's reason.
    for r in &ok.reps {
        let c = r.counts.as_ref().expect("counts");
        for (who, p) in [("server", &c.server), ("loadgen", &c.loadgen)] {
            match p.syscalls_per_request() {
                // Above zero, not above one: a generator on io_uring submits and reaps many
                // requests per io_uring_enter (0.35 per request seen over a split profile).
                Some(n) => assert!(n > 0.0 && n < 50.0, "{who}: {n} syscalls/request"),
                None => assert!(p.syscalls_unmeasured.is_some(), "{who}: {p:?}"),
            }
        }
        if c.server.syscalls.is_some() {
            assert!(c.server.syscall_window_responses > 0, "{:?}", c.server);
            assert!(
                c.server.syscalls_by_name_unmeasured.is_some()
                    || !c.server.syscalls_by_name.is_empty(),
                "{:?}",
                c.server
            );
        }
    }

    let open = cell("hyper__open__r300__pinned");
    assert_eq!(open.status, CellStatus::Ok, "{:?}", open.failure);
    assert!(open.summary.offered_rate_per_s == Some(300.0));

    // The limited profile ran with its cgroup limits in force, or is marked unsupported
    // with a reason — never run without them.
    let small = cell("hyper__ping__c4__small");
    match small.status {
        CellStatus::Ok => {
            let l = small.limits.as_ref().unwrap();
            assert!(l.mechanism.starts_with("cgroup"), "{l:?}");
            assert!(l.readback.keys().any(|k| k.starts_with("cpu.")), "{l:?}");
            assert!(l.readback.keys().any(|k| k.starts_with("memory.")), "{l:?}");
        }
        CellStatus::Unsupported => {
            assert!(!small.failure.as_ref().unwrap().reason.is_empty());
        }
        s => panic!("limited cell ended {s:?}: {:?}", small.failure),
    }

    let exits = cell("exits__ping__c4__pinned");
    assert_eq!(exits.status, CellStatus::Failed);
    let f = exits.failure.unwrap();
    assert_eq!(f.stage, Stage::Startup);
    assert!(f.reason.contains("exited"), "{}", f.reason);
    assert!(
        f.stderr_tail
            .unwrap_or_default()
            .contains("refusing to start")
    );

    // It never answers its warm-up start, so no measured start follows.
    let never = cell("never__ping__c4__pinned");
    assert_eq!(never.status, CellStatus::Failed);
    let reason = never.failure.unwrap().reason;
    assert!(
        reason.starts_with("warm-up start: ") && reason.contains("not ready within"),
        "{reason}"
    );
    assert!(never.starts.is_empty(), "{:?}", never.starts);

    let md = std::fs::read_to_string(run_dir.join("results.md")).unwrap();
    assert!(md.contains("| hyper |"), "{md}");
    assert!(md.contains("✗ failed"), "{md}");
    assert!(results.drift.is_some());
}

#[test]
fn ctrl_c_stops_cleanly_and_resume_finishes_the_run() {
    let d = Scratch::new("sigint");
    let text = matrix_toml(
        &[
            ("a", bin("ping-tokio-hyper")),
            ("b", bin("ping-tokio-hyper")),
        ],
        3,
        "",
    );
    let m = d.0.join("m.toml");
    std::fs::write(&m, text).unwrap();
    let out = d.0.join("results");
    let marker = format!("{}-{}", std::process::id(), line!());
    let mut child = Guard(
        run_quiet(&m, &out, &[], Some(&marker))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Wait for the first cell file, then interrupt mid-run.
    let deadline = Instant::now() + Duration::from_secs(60);
    let cells_dir = loop {
        if let Ok(mut rd) = std::fs::read_dir(&out)
            && let Some(Ok(e)) = rd.next()
        {
            let c = e.path().join("cells");
            if std::fs::read_dir(&c).is_ok_and(|mut r| r.next().is_some()) {
                break c;
            }
        }
        assert!(Instant::now() < deadline, "no cell file appeared");
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.0.id() as i32, libc::SIGINT);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "matrix did not exit after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    std::thread::sleep(Duration::from_millis(200));
    let left = marked_processes(&marker);
    assert!(left.is_empty(), "children survived SIGINT: {left:?}");
    let run_dir = cells_dir.parent().unwrap().to_path_buf();
    let run: RunRecord = read(&run_dir.join("run.json"));
    assert_eq!(run.status, RunStatus::Interrupted);
    assert!(std::fs::read_dir(&cells_dir).unwrap().count() >= 1);
    assert!(run_dir.join("results.json").exists());

    // Resume completes the remaining cells.
    let o = run_matrix(
        &["run", "--resume", run_dir.to_str().unwrap(), "--quiet"],
        Some(&marker),
    )
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    let results: ResultsFile = read(&run_dir.join("results.json"));
    assert_eq!(results.status, RunStatus::Completed);
    assert_eq!(results.cells.len(), 4);
    assert!(
        results
            .cells
            .iter()
            .all(|c| c.status == Some(CellStatus::Ok) && c.n == 3),
        "{:?}",
        results
            .cells
            .iter()
            .map(|c| (&c.key, c.status, c.n))
            .collect::<Vec<_>>()
    );
    assert!(marked_processes(&marker).is_empty());
}

/// Two runs started in the same second from the same commit used to share one run id: the
/// second reused the first's directory, skipped its "done" cells and overwrote run.json.
#[test]
fn two_runs_in_the_same_second_get_their_own_directories() {
    let d = Scratch::new("same-second");
    let a = script(&d.0, "a", "exit 3");
    let b = script(&d.0, "b", "exit 4");
    let m = d.0.join("m.toml");
    std::fs::write(&m, matrix_toml(&[("a", a), ("b", b)], 1, "")).unwrap();
    let out = d.0.join("results");
    let start = |only: &str| {
        Guard(
            run_quiet(&m, &out, &["--only", only, "--only", "scenario=ping"], None)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    // Start both just after a second boundary, so they share the timestamp in the run id.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    std::thread::sleep(Duration::from_nanos(
        1_000_000_000 - u64::from(now.subsec_nanos()) + 20_000_000,
    ));
    let (mut ra, mut rb) = (start("service=a"), start("service=b"));
    let deadline = Instant::now() + Duration::from_secs(60);
    for g in [&mut ra, &mut rb] {
        while g.0.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "matrix run did not finish");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    let mut services = Vec::new();
    for dir in &dirs {
        let run: RunRecord = read(&dir.join("run.json"));
        let res: ResultsFile = read(&dir.join("results.json"));
        assert_eq!(dir.file_name().unwrap().to_str(), Some(run.run_id.as_str()));
        assert_eq!(res.cells.len(), 1, "{}", dir.display());
        // Each run keeps its own command line and its own (failed) cell.
        let svc = res.cells[0].service.clone();
        assert!(
            run.only.contains(&format!("service={svc}")),
            "{:?}",
            run.only
        );
        assert_eq!(res.cells[0].status, Some(CellStatus::Failed));
        services.push(svc);
    }
    services.sort();
    assert_eq!(services, ["a", "b"]);
}

/// A loadgen that hangs (here: on `--version`) used to hold the runner: SIGINT and SIGTERM
/// were ignored while it waited, and SIGKILL left the child behind.
#[test]
fn a_hanging_loadgen_cannot_hold_the_runner() {
    let d = Scratch::new("hang");
    let hang = script(&d.0, "loadgen-hangs", "exec sleep 60");
    let m = d.0.join("m.toml");
    let text = matrix_toml(&[("a", bin("ping-tokio-hyper"))], 1, "").replace(
        &format!("loadgen = \"{}\"", bin("loadgen").display()),
        &format!("loadgen = \"{}\"", hang.display()),
    );
    std::fs::write(&m, text).unwrap();
    let out = d.0.join("results");
    for (sig, code) in [
        (libc::SIGTERM, Some(130)),
        (libc::SIGHUP, Some(130)),
        (libc::SIGKILL, None),
    ] {
        let marker = format!("{}-{}-{sig}", std::process::id(), line!());
        let mut child = Guard(
            run_quiet(&m, &out, &[], Some(&marker))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        // Wait until the hanging loadgen runs, then signal the runner.
        let deadline = Instant::now() + Duration::from_secs(20);
        while !marked_processes(&marker)
            .iter()
            .any(|p| p.contains("sleep 60"))
        {
            assert!(Instant::now() < deadline, "the fake loadgen never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(child.0.id() as i32, sig);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(s) = child.0.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "matrix ignored signal {sig}");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), code, "signal {sig}");
        std::thread::sleep(Duration::from_millis(300));
        let left = marked_processes(&marker);
        assert!(left.is_empty(), "signal {sig}: children survived: {left:?}");
    }
    // SIGTERM and SIGHUP end the run as interrupted, with its results written.
    let finished = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("results.json").is_file())
        .count();
    assert_eq!(finished, 2);
}

/// A service whose child calls setsid leaves the process group the runner kills; that child
/// used to outlive the run (the cell was only marked suspect).
#[test]
fn a_child_that_escapes_the_process_group_does_not_outlive_the_run() {
    let d = Scratch::new("setsid");
    let escapes = script(
        &d.0,
        "escapes",
        &format!(
            "setsid sleep 60 </dev/null >/dev/null 2>&1 &\nexec {} \"$@\"",
            bin("ping-tokio-hyper").display()
        ),
    );
    let m = d.0.join("m.toml");
    std::fs::write(&m, matrix_toml(&[("escapes", escapes)], 1, "")).unwrap();
    let out = d.0.join("results");
    let marker = format!("{}-{}", std::process::id(), line!());
    let o = run_quiet(&m, &out, &["--only", "scenario=ping"], Some(&marker))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    let left = marked_processes(&marker);
    assert!(left.is_empty(), "outlived the run: {left:?}");
    let res: ResultsFile = read(&only_run_dir(&out).join("results.json"));
    let reasons = res.cells[0].suspect_reasons.join("; ");
    assert!(
        reasons.contains("(sleep) left the service's process group"),
        "{reasons}"
    );
}

/// `--resume` used to ignore `--config` (and `--quick`, `--only`) silently.
#[test]
fn resume_refuses_a_second_matrix_selection() {
    for extra in [
        &["--config", "other.toml"][..],
        &["--quick"],
        &["--only", "a"],
    ] {
        let mut args = vec!["run", "--resume", "results/x"];
        args.extend(extra);
        let o = run_matrix(&args, None).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("cannot be used with"),
            "{}",
            out_text(&o)
        );
    }
}

/// `--resume` used to resolve the binaries anew without checking them against the sha256
/// run.json recorded: after a rebuild, one service name was measured with two programs.
#[test]
fn resume_refuses_a_binary_that_changed_since_the_run_started() {
    let d = Scratch::new("resume-rebuilt");
    let svc = script(&d.0, "svc", "exit 3");
    let m = d.0.join("m.toml");
    std::fs::write(&m, matrix_toml(&[("svc", svc.clone())], 1, "")).unwrap();
    let out = d.0.join("results");
    let o = run_quiet(&m, &out, &["--only", "scenario=ping"], None)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let run_dir = only_run_dir(&out);
    // "Rebuilt": same path, other bytes.
    script(&d.0, "svc", "exit 4");
    let o = run_matrix(
        &["run", "--quiet", "--resume", run_dir.to_str().unwrap()],
        None,
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        err.contains("cannot resume") && err.contains("svc: ") && err.contains("run.json records"),
        "{err}"
    );
    // The recorded program back: the resume goes ahead.
    script(&d.0, "svc", "exit 3");
    let o = run_matrix(
        &["run", "--quiet", "--resume", run_dir.to_str().unwrap()],
        None,
    )
    .output()
    .unwrap();
    assert_ne!(o.status.code(), Some(2), "{}", out_text(&o));
}

/// Provenance used to come from the matrix file's directory (a config kept elsewhere
/// recorded another repository's commit, or none) and binaries were recorded by path only.
#[test]
fn run_json_records_each_binarys_hash_and_build_commit_from_the_runners_checkout() {
    let d = Scratch::new("provenance");
    let foreign = script(&d.0, "foreign", "exit 3");
    let m = d.0.join("m.toml");
    std::fs::write(
        &m,
        matrix_toml(
            &[("hyper", bin("ping-tokio-hyper")), ("foreign", foreign)],
            1,
            "",
        ),
    )
    .unwrap();
    let out = d.0.join("results");
    let o = run_quiet(&m, &out, &["--only", "scenario=ping"], None)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let run: RunRecord = read(&only_run_dir(&out).join("run.json"));
    let env = &run.environment;
    let head = Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if let Some(head) = head {
        assert_eq!(env.source.git_commit.as_deref(), Some(head.as_str()));
    }
    let hyper = &env.binary_builds["hyper"];
    let bytes = std::fs::read(bin("ping-tokio-hyper")).unwrap();
    use sha2::Digest;
    assert_eq!(
        hyper.sha256.as_deref(),
        Some(format!("{:x}", sha2::Sha256::digest(&bytes)).as_str())
    );
    assert!(hyper.build_commit.is_some(), "{hyper:?}");
    assert!(env.binary_builds["matrix"].build_commit.is_some());
    assert!(env.binary_builds["loadgen"].build_commit.is_some());
    let foreign = &env.binary_builds["foreign"];
    assert_eq!(foreign.build_commit, None);
    assert!(
        env.provenance_warnings
            .iter()
            .any(|w| w.starts_with("foreign: no build stamp")),
        "{:?}",
        env.provenance_warnings
    );
}

/// `matrix plan` on the default matrix also estimates the complete sweep beside it.
#[test]
fn plan_shows_the_default_and_the_complete_sweep() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let o = run_matrix(&["plan"], None)
        .current_dir(&repo)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("estimated wall time"), "{text}");
    assert!(
        text.contains("complete sweep matrix-full.toml: ")
            && text.contains("cells, estimated wall time"),
        "{text}"
    );
}
