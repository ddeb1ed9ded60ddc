//! Servers the suite did not write, in the shapes they come in: serving from a forked worker
//! behind `sh -c`, daemonizing (double fork), answering only on the scenario's path. The
//! service is measured and stopped as its whole process tree, and nothing it started
//! outlives the run — not even when the runner is SIGKILLed.

use crate::support::live::*;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// An HTTP/1.1 keep-alive responder: argv host, port, mode. `fork`: a forked child serves
/// while the parent waits; `daemon`: double fork and setsid, the first process exits at
/// once; `daemon-late`: the same, but the first process stays 3 s; `json-only`: /json answers
/// 200, everything else 404; `latin1`: prints a line that is not UTF-8, then one per request.
const SERVER: &str = r#"
import os, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.path == "/ping" and mode != "json-only":
            body, ctype, status = b"pong", "text/plain", 200
        elif self.path == "/json":
            body, ctype, status = b'{"message":"Hello, World!"}', "application/json", 200
        else:
            body, ctype, status = b"no", "text/plain", 404
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass

def serve():
    ThreadingHTTPServer((host, port), H).serve_forever()

if mode == "latin1":
    # A log line that is not UTF-8, then one per request. A closed stdout kills it with
    # SIGPIPE, as it would a C server; a client's reset socket does not (the generator
    # resets its connections as the load ends, and a C server sends with MSG_NOSIGNAL).
    import signal
    sys.stdout.buffer.write(b"caf\xe9 ready\n")
    sys.stdout.flush()
    def log(self, *a):
        try:
            sys.stdout.buffer.write(b"served\n")
            sys.stdout.flush()
        except BrokenPipeError:
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGPIPE)
    H.log_request = log
    mode = "plain"

if mode == "fork":
    if os.fork() == 0:
        serve()
    os.wait()
elif mode == "daemon-late":
    # A launcher that stays until its daemon is up. The daemon notes in `overlap` any daemon of
    # an earlier start of this server that is still alive when it starts, then serves.
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            here = os.path.dirname(os.path.abspath(__file__))
            pids = os.path.join(here, "pids")
            for line in open(pids).read().split() if os.path.exists(pids) else []:
                try:
                    state = open(f"/proc/{line}/stat").read().rsplit(")", 1)[1].split()[0]
                except OSError:
                    continue
                if state != "Z":  # a zombie is killed, only not yet waited for
                    open(os.path.join(here, "overlap"), "a").write(line + "\n")
            open(pids, "a").write(f"{os.getpid()}\n")
            serve()
        os._exit(0)
    import time
    time.sleep(3)
    os._exit(0)
elif mode == "daemon":
    # The daemon serves only once its launcher has exited (and 200 ms more), so the runner
    # sees the exit before any answer: on a busy machine the launcher's exit was once seen
    # after the daemon's first 200, and the cell failed "during the load" instead.
    launcher = os.getpid()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            import time
            for _ in range(500):
                try:
                    stat = open(f"/proc/{launcher}/stat").read()
                except OSError:
                    break
                if stat.rsplit(")", 1)[1].split()[0] == "Z":
                    break
                time.sleep(0.01)
            time.sleep(0.2)
            serve()
        os._exit(0)
    os._exit(0)
else:
    serve()
"#;

/// `[[services]]` entries running the fixture: (name, command).
fn matrix(dir: &Path, services: &[(&str, Vec<String>)], defaults: &str) -> std::path::PathBuf {
    let script = dir.join("server.py");
    std::fs::write(&script, SERVER).unwrap();
    let mut entries = String::new();
    for (name, argv) in services {
        let argv: Vec<String> = argv
            .iter()
            .map(|a| format!("{:?}", a.replace("SCRIPT", script.to_str().unwrap())))
            .collect();
        entries += &format!(
            "\n[[services]]\nname = \"{name}\"\ncommand = [{}]\n",
            argv.join(", ")
        );
    }
    // Python starts slower than 1.5 s under contention (crate::byo::PYTHON_STARTUP).
    let defaults = format!("{defaults}\n{}", crate::byo::PYTHON_STARTUP);
    write_config(dir, &tiny_matrix(&[], 1, &defaults, &entries))
}

fn argv(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// `matrix run --quiet --only scenario=<scenario>` of the fixture run directly in each mode
/// (a service named after its mode), its processes carrying `marker`: the output and the
/// output directory.
fn run_modes(d: &Path, marker: &str, modes: &[&str], scenario: &str) -> (Output, PathBuf) {
    let services: Vec<(&str, Vec<String>)> = modes
        .iter()
        .map(|&mode| (mode, argv(&["python3", "SCRIPT", "{host}", "{port}", mode])))
        .collect();
    let m = matrix(d, &services, "");
    let out_dir = d.join("out");
    let only = format!("scenario={scenario}");
    let o = matrix_at(&m, &out_dir, &["run", "--quiet", "--only", &only])
        .env("PINGMATRIX_E2E_MARKER", marker)
        .output()
        .unwrap();
    (o, out_dir)
}

/// Processes whose environment holds `PINGMATRIX_E2E_MARKER=marker`.
fn marked(marker: &str) -> Vec<String> {
    let needle = format!("PINGMATRIX_E2E_MARKER={marker}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            e.file_name().to_str()?.parse::<u32>().ok()?;
            let env = std::fs::read(e.path().join("environ")).ok()?;
            env.split(|b| *b == 0)
                .any(|kv| kv == needle.as_bytes())
                .then(|| {
                    let cmd = std::fs::read_to_string(e.path().join("cmdline")).unwrap_or_default();
                    cmd.replace('\0', " ")
                })
        })
        .collect()
}

/// Waits up to 10 s for every marked process to be gone; what is left.
fn left_after(marker: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = marked(marker);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills whatever a failed test left (by marker), so a failure does not leak processes.
struct Sweep(String);

impl Drop for Sweep {
    fn drop(&mut self) {
        let needle = format!("PINGMATRIX_E2E_MARKER={}", self.0);
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            if std::fs::read(e.path().join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
            {
                // SAFETY: SIGKILL to a process this test started (it carries its marker).
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

fn cell(run: &Path, key: &str) -> serde_json::Value {
    read(&run.join("cells").join(format!("{key}.json")))
}

/// Behind `sh -c` and serving from a forked worker, a server used to read CPU/request
/// 0.0 µs and syscalls/request 0 (the runner read the one pid it started), flagged only with
/// a false "left the service's process group".
#[test]
fn a_server_behind_sh_c_serving_from_a_forked_worker_is_measured_as_a_whole() {
    let d = Scratch::new("tree-fork");
    let marker = format!("{}-{}", std::process::id(), line!());
    let _sweep = Sweep(marker.clone());
    let m = matrix(
        &d.0,
        &[(
            "forked",
            argv(&["sh", "-c", "python3 SCRIPT {host} {port} fork; :"]),
        )],
        "count_syscalls = true",
    );
    let out_dir = d.0.join("out");
    let o = matrix_at(&m, &out_dir, &["run", "--quiet", "--only", "scenario=ping"])
        .env("PINGMATRIX_E2E_MARKER", &marker)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    let c = cell(&only_run_dir(&out_dir), "forked__ping__c4__pinned");
    let rep = &c["reps"][0];
    let cpu = rep["server"]["cpu_us_per_request"].as_f64().unwrap_or(0.0);
    // Python serving HTTP costs tens of µs a request; sh and the waiting parent nothing.
    assert!(cpu > 5.0, "CPU/request {cpu} µs: {rep}");
    let server = &rep["counts"]["server"];
    match server["syscalls"].as_f64() {
        Some(n) => {
            let per = n / server["syscall_window_responses"]
                .as_f64()
                .unwrap()
                .max(1.0);
            assert!(per > 0.5, "syscalls/request {per}: {server}");
        }
        None => assert!(server["syscalls_unmeasured"].as_str().is_some(), "{server}"),
    }
    let reasons = c["suspect_reasons"].to_string();
    assert!(
        !reasons.contains("left the service's process group"),
        "{reasons}"
    );
    assert!(left_after(&marker).is_empty());
}

/// A daemonizing server (double fork) was never reaped: its warm-up start kept listening
/// after the run, or a later cell was blamed for it. Readiness used to poll /ping only, so
/// a server without /ping never started.
#[test]
fn a_daemonizing_server_leaves_nothing_and_readiness_polls_the_scenarios_path() {
    let d = Scratch::new("tree-daemon");
    let marker = format!("{}-{}", std::process::id(), line!());
    let _sweep = Sweep(marker.clone());
    let (o, out_dir) = run_modes(&d.0, &marker, &["daemon", "json-only"], "open");
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let left = marked(&marker);
    assert!(left.is_empty(), "outlived the run: {left:?}");
    let run = only_run_dir(&out_dir);
    let daemon = cell(&run, "daemon__open__r300__pinned");
    assert_eq!(daemon["status"], "failed", "{daemon}");
    assert!(
        daemon["failure"]
            .to_string()
            .contains("exited during start-up"),
        "{daemon}"
    );
    let json_only = cell(&run, "json-only__open__r300__pinned");
    assert_eq!(json_only["status"], "ok", "{json_only}");
}

/// A daemon whose launcher exits once it is up was reaped only at the end of the run: the
/// warm-up start's daemon was still alive, on its own port, when the measured start began,
/// and its pids were blamed on the measured repetition ("left the service's process group").
#[test]
fn the_warm_up_starts_daemon_is_gone_before_the_measured_start() {
    let d = Scratch::new("tree-daemon-late");
    let marker = format!("{}-{}", std::process::id(), line!());
    let _sweep = Sweep(marker.clone());
    let (o, _) = run_modes(&d.0, &marker, &["daemon-late"], "ping");
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    let started = std::fs::read_to_string(d.0.join("pids")).unwrap_or_default();
    assert!(
        started.lines().count() >= 2,
        "a warm-up start and a measured one: {started:?}"
    );
    let overlap = std::fs::read_to_string(d.0.join("overlap")).unwrap_or_default();
    assert!(
        overlap.is_empty(),
        "daemons of an earlier start alive at a later one: {overlap:?} of {started:?}"
    );
    assert!(left_after(&marker).is_empty(), "outlived the run");
}

/// Issue 36, item 15: one line on a service's stdout that was not UTF-8 ended the runner's
/// reader and closed the pipe; the service's next line killed it with SIGPIPE ("exited
/// during start-up with signal 13").
#[test]
fn a_line_that_is_not_utf8_on_stdout_does_not_kill_the_service() {
    let d = Scratch::new("tree-latin1");
    let marker = format!("{}-{}", std::process::id(), line!());
    let _sweep = Sweep(marker.clone());
    let (o, out_dir) = run_modes(&d.0, &marker, &["latin1"], "ping");
    let c = cell(&only_run_dir(&out_dir), "latin1__ping__c4__pinned");
    assert_eq!(c["status"], "ok", "{c}\n{}", out_text(&o));
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
}

/// SIGKILL of the runner used to leave a `command` server's children running: only its
/// first process had the parent-death signal.
#[test]
fn sigkill_of_the_runner_leaves_no_process_of_a_forking_server() {
    let d = Scratch::new("tree-sigkill");
    let marker = format!("{}-{}", std::process::id(), line!());
    let _sweep = Sweep(marker.clone());
    let m = matrix(
        &d.0,
        &[(
            "forked",
            argv(&["sh", "-c", "python3 SCRIPT {host} {port} fork; :"]),
        )],
        "",
    );
    // Long windows: the runner is killed while the server runs.
    let text = std::fs::read_to_string(&m)
        .unwrap()
        .replace("duration_ms = 250", "duration_ms = 20000");
    std::fs::write(&m, text).unwrap();
    let mut child = matrix_at(
        &m,
        &d.0.join("out"),
        &["run", "--quiet", "--only", "scenario=ping"],
    )
    .env("PINGMATRIX_E2E_MARKER", &marker)
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    // Both python processes (parent and forked worker) of the measured start are up.
    let deadline = Instant::now() + Duration::from_secs(30);
    while marked(&marker)
        .iter()
        .filter(|p| p.contains("server.py") && !p.starts_with("sh "))
        .count()
        < 2
    {
        assert!(Instant::now() < deadline, "the server never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Past the warm-up start, into the measured one.
    std::thread::sleep(Duration::from_millis(1500));
    child.kill().unwrap(); // SIGKILL
    let _ = child.wait();
    let left = left_after(&marker);
    assert!(left.is_empty(), "outlived the runner: {left:?}");
}
