//! `matrix agent`: the runner's hands on a host (started over SSH, or directly for
//! "local"). It reads requests from stdin and answers on stdout, one JSON line each
//! (`protocol`), and does there what `cell` does on a single machine: confine
//! and start the service, wait for its first 200, verify it, watch it with the same
//! observers (`observe`), stop it; or run loadgen confined to the generator's CPUs.
//!
//! Nothing outlives the session: when stdin closes — the runner ended the session, or the
//! runner or its ssh died and sshd closed the channel — the agent interrupts itself (every
//! wait loop stops and its children are killed and reaped, cgroups removed), and exits
//! within 3 s even if something hangs. Its children also carry a parent-death SIGKILL.

pub mod protocol;

use std::io::{BufRead, Write};
use std::net::IpAddr;
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use protocol::{Ready, Reply, Request, Serve, Stopped};

use crate::count::exact;
use crate::limits::{self, Confinement, Request as LimitsRequest, Role};
use crate::observe::{self, Window};
use crate::results::schema::{Stage, StageError};
use crate::sample::now_unix_us;
use crate::service::session::{Launch, Session};

/// Seconds between stdin closing and a forced exit.
const EXIT_GRACE_S: u64 = 3;

pub fn main() -> anyhow::Result<std::process::ExitCode> {
    crate::interrupt::install();
    crate::process::become_subreaper();
    crate::process::guard::start();
    let requests = watch_stdin();
    reply(&Reply::Hello {
        pid: std::process::id(),
        unix_us: now_unix_us(),
    });
    while let Ok(line) = requests.recv() {
        let req: Request = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => {
                reply(&failed(Stage::Spawn, format!("unreadable request ({e})")));
                continue;
            }
        };
        let r = match req {
            Request::Clock => Reply::Clock {
                unix_us: now_unix_us(),
            },
            Request::Env { binaries, loadgen } => Reply::Env {
                environment: Box::new(crate::env::collect(
                    Path::new(&loadgen),
                    Path::new(&loadgen),
                    binaries,
                    &Default::default(),
                )),
            },
            Request::Serve(s) => serve(&s, &requests),
            Request::Load {
                loadgen,
                spec,
                cpus,
            } => load(&loadgen, &spec, &cpus),
            Request::ExactLoad {
                loadgen,
                spec,
                cpus,
            } => exact_load(&loadgen, &spec, &cpus),
            Request::Stop { .. } | Request::CountStart | Request::CountEnd { .. } => {
                failed(Stage::Stop, "no service running")
            }
        };
        reply(&r);
    }
    crate::process::reap_orphans();
    Ok(std::process::ExitCode::SUCCESS)
}

fn reply(r: &Reply) {
    let mut out = std::io::stdout().lock();
    let line = serde_json::to_string(r).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    // A closed stdout means the runner is gone: stdin's EOF ends the agent.
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

fn failed(stage: Stage, reason: impl Into<String>) -> Reply {
    Reply::failed(StageError::at(stage, reason))
}

/// Stdin's lines on a channel. On EOF: interrupt (as SIGTERM would), and exit after
/// `EXIT_GRACE_S` whatever is still running.
fn watch_stdin() -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
        drop(tx);
        // SAFETY: raising a signal whose handler only sets a flag.
        unsafe {
            libc::raise(libc::SIGTERM);
        }
        std::thread::sleep(Duration::from_secs(EXIT_GRACE_S));
        std::process::exit(3);
    });
    rx
}

/// The service's whole life on this host; replies `Ready` on the way (from inside) and
/// returns the final `Stopped` or `Failed`.
fn serve(s: &Serve, requests: &Receiver<String>) -> Reply {
    let l = &s.limits;
    let ip: IpAddr = match s.listen_ip.parse() {
        Ok(ip) => ip,
        Err(e) => return failed(Stage::Spawn, format!("bad listen address: {e}")),
    };
    let req = LimitsRequest {
        cpus: l.server_cpus.clone(),
        cpu_quota: l.cpu_quota,
        memory_max_bytes: l.memory_max_bytes,
    };
    let mut conf = match limits::confine(Role::Server, &req) {
        Ok(c) => c,
        Err(e) => return failed(Stage::Limits, format!("server: {e}")),
    };
    // Probe from CPUs the service does not run on, when there are any; launch from them too.
    let probe: Vec<u32> = crate::limits::cpus::allowed_cpus()
        .into_iter()
        .filter(|c| !l.server_cpus.contains(c))
        .collect();
    let launch = Launch {
        binary: Path::new(&s.binary),
        ip,
        workers: l.workers,
        args: (&s.args).into(),
        probe_cpus: &probe,
        startup_timeout: Duration::from_millis(s.startup_timeout_ms),
        stop_grace: Duration::from_millis(s.stop_grace_ms),
        path: &s.path,
    };
    // As on the runner's host: a warm start after an unmeasured one, launched vfork-style.
    let (session, outcome) = match Session::start(&launch, &conf, s.rep) {
        Ok(started) => started,
        Err(f) => return Reply::Failed(f),
    };
    reply(&Reply::Ready(Box::new(Ready {
        port: session.addr.port(),
        start: session.start.clone(),
        outcome,
    })));
    let tree = session.proc.tree();
    let (_, seen) = observe::watch(&tree, &conf, || wait_for_stop(requests, &tree), |w| *w);
    let stopped = session.stop();
    conf.release();
    let Some(seen) = seen else {
        return failed(Stage::Interrupted, "session closed before the stop");
    };
    Reply::Stopped(Box::new(Stopped {
        start: stopped.start,
        seen,
        died: stopped.died.map(|st| st.to_string()),
        stderr_tail: stopped.stderr_tail,
    }))
}

/// Waits for `Stop` (the window on this host's clock), counting the service's syscalls
/// between `CountStart` and `CountEnd` on the way; None when the session closed.
fn wait_for_stop(requests: &Receiver<String>, tree: &crate::process::Tree) -> Option<Window> {
    // The server's half of the multi-host cell's syscall window (`host::rep`'s site).
    let mut half = exact::ServerHalf::new(
        std::env::temp_dir().join(format!("pm-agent-{}.perf.data", std::process::id())),
    );
    loop {
        if crate::interrupt::requested() {
            return None;
        }
        match requests.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => match serde_json::from_str(&line) {
                Ok(Request::Stop {
                    window_start_unix_us,
                    window_s,
                    responses,
                }) => {
                    return Some(Window {
                        start_unix_us: window_start_unix_us,
                        secs: window_s,
                        responses,
                    });
                }
                Ok(Request::CountStart) => reply(&Reply::Counting {
                    unmeasured: half.start(&tree.members()).err(),
                }),
                Ok(Request::CountEnd {
                    load_starts_unix_us,
                }) => reply(&match half.end(&load_starts_unix_us) {
                    Ok(c) => Reply::Counted(Box::new(c)),
                    Err(why) => failed(Stage::Load, why),
                }),
                _ => reply(&failed(
                    Stage::Load,
                    "only `count_start`, `count_end` and `stop` are accepted while serving",
                )),
            },
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// The generator's confinement to `cpus` on this host.
fn loadgen_confined(cpus: &[u32]) -> Result<Confinement, Reply> {
    let req = LimitsRequest {
        cpus: cpus.to_vec(),
        cpu_quota: None,
        memory_max_bytes: None,
    };
    limits::confine(Role::Loadgen, &req).map_err(|e| failed(Stage::Limits, format!("loadgen: {e}")))
}

fn spec_file() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("pm-agent-{}.spec.json", std::process::id()))
}

/// loadgen confined to `cpus` on this host, counted from /proc as on the runner's host.
fn load(loadgen: &str, spec: &loadgen::LoadSpec, cpus: &[u32]) -> Reply {
    let conf = match loadgen_confined(cpus) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let (run, counts) = observe::counted_load(Path::new(loadgen), spec, &spec_file(), &conf);
    match run {
        Ok(run) => Reply::Loaded {
            report: Box::new(run.report),
            exit_code: run.exit_code,
            counts: counts.map(Box::new),
        },
        Err(e) => failed(Stage::Load, e),
    }
}

/// One exact load of the syscall window from this host.
fn exact_load(loadgen: &str, spec: &loadgen::LoadSpec, cpus: &[u32]) -> Reply {
    match loadgen_confined(cpus) {
        Ok(conf) => Reply::ExactLoaded(Box::new(exact::one_load(
            Path::new(loadgen),
            spec,
            &spec_file(),
            &conf,
        ))),
        Err(r) => r,
    }
}
