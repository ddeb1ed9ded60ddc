//! `matrix agent`: the runner's hands on a host (started over SSH, or directly for
//! "local"). It reads requests from stdin and answers on stdout, one JSON line each
//! (`crate::host::protocol`), and does there what `cell` does on a single machine: confine
//! and start the service, wait for its first 200, verify it, sample its CPU and memory,
//! stop it; or run loadgen confined to the generator's CPUs.
//!
//! Nothing outlives the session: when stdin closes — the runner ended the session, or the
//! runner or its ssh died and sshd closed the channel — the agent interrupts itself (every
//! wait loop stops and its children are killed and reaped, cgroups removed), and exits
//! within 3 s even if something hangs. Its children also carry a parent-death SIGKILL.

use std::io::{BufRead, Write};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use crate::host::protocol::{Failed, Ready, Reply, Request, Serve, Stopped};
use crate::limits::{self, Confinement, Request as LimitsRequest, Role};
use crate::process::Proc;
use crate::results::schema::{CgroupCounters, Stage, StartRecord};
use crate::sample::{self, Sampler, now_unix_us};
use crate::service::{spawn, startup, startup_line, stop, verify, warm};

/// Seconds between stdin closing and a forced exit.
const EXIT_GRACE_S: u64 = 3;

pub fn main() -> anyhow::Result<std::process::ExitCode> {
    crate::interrupt::install();
    crate::process::become_subreaper();
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
                )),
            },
            Request::Serve(s) => serve(&s, &requests),
            Request::Load {
                loadgen,
                spec,
                cpus,
            } => load(&loadgen, &spec, &cpus),
            Request::Stop { .. } => failed(Stage::Stop, "no service running"),
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
    Reply::Failed(Box::new(Failed::at(stage, reason)))
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
    let timeout = Duration::from_millis(s.startup_timeout_ms);
    let binary = Path::new(&s.binary);
    // As on the runner's host: a warm start after an unmeasured one, launched vfork-style.
    let warmup_first_200_us =
        match warm::warm_up(binary, ip, l.workers, &s.args, &conf, &probe, timeout) {
            Ok(us) => us,
            Err(f) => {
                let mut e = Failed::at(f.stage(), f.reason);
                e.stderr_tail = f.stderr_tail;
                e.limits = conf.record.clone();
                return Reply::Failed(Box::new(e));
            }
        };
    let addr = match spawn::free_addr(ip) {
        Ok(a) => a,
        Err(e) => return failed(Stage::Spawn, format!("no free port on {ip}: {e}")),
    };
    let port = addr.port();
    let mut proc = match spawn::spawn(binary, addr, l.workers, &s.args, &conf, &probe) {
        Ok(p) => p,
        Err(e) => return failed(Stage::Spawn, format!("cannot start {}: {e}", s.binary)),
    };
    let mut start = StartRecord {
        rep: s.rep,
        pid: proc.pid,
        port,
        connect_us: None,
        first_200_us: None,
        launch_us: None,
        warmup_first_200_us: Some(warmup_first_200_us),
        idle_rss_bytes: None,
        stop: None,
    };
    let grace = Duration::from_millis(s.stop_grace_ms);
    let fail = |proc: &mut Proc, start: &mut StartRecord, f: Failed| {
        start.stop = Some(stop_service(proc, addr, grace));
        let mut f = f;
        f.stderr_tail = proc.stderr_tail();
        f.start = Some(start.clone());
        f.limits = conf.record.clone();
        Reply::Failed(Box::new(f))
    };
    let ready = if probe.is_empty() {
        startup::wait_ready(&mut proc, addr, timeout)
    } else {
        crate::limits::cpus::on_cpus(&probe, || startup::wait_ready(&mut proc, addr, timeout))
    };
    match ready {
        Ok(r) => {
            start.connect_us = Some(r.connect_us);
            start.first_200_us = Some(r.first_200_us);
            start.launch_us = r.launch_us;
        }
        Err(e) => return fail(&mut proc, &mut start, Failed::at(Stage::Startup, e)),
    }
    let line = startup_line::read(&proc, Duration::from_millis(500));
    let checks = verify::verify(addr, &s.path, Duration::from_secs(2));
    let mut problems: Vec<String> = checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| format!("{}: {}", c.path, c.problems.join("; ")))
        .collect();
    if let Err(e) = &line {
        problems.push(format!("(start-up line): {e}"));
    }
    if !problems.is_empty() {
        let mut f = Failed::at(Stage::Verify, problems.join(" | "));
        f.verification = checks;
        f.startup_line = line.ok();
        return fail(&mut proc, &mut start, f);
    }
    start.idle_rss_bytes = sample::status(proc.pid).map(|s| s.0);
    reply(&Reply::Ready(Box::new(Ready {
        port,
        start: start.clone(),
        limits: conf.record.clone(),
        startup_line: line.ok(),
        verification: checks,
    })));
    let before = conf.counters();
    let sampler = Sampler::start(proc.pid);
    let window = wait_for_stop(requests);
    let samples = sampler.finish();
    let after = conf.counters();
    let died = proc.try_wait().map(|st| st.to_string());
    start.stop = Some(stop_service(&mut proc, addr, grace));
    let stderr_tail = proc.stderr_tail();
    drop(proc);
    conf.release();
    let Some((ws, window_s, responses)) = window else {
        return failed(Stage::Interrupted, "session closed before the stop");
    };
    Reply::Stopped(Box::new(Stopped {
        start,
        usage: sample::usage_in_window(&samples, ws, window_s, responses),
        cgroup: delta(&before, &after),
        died,
        stderr_tail,
    }))
}

/// Waits for `Stop` (the window on this host's clock); None when the session closed.
fn wait_for_stop(requests: &Receiver<String>) -> Option<(u64, f64, u64)> {
    loop {
        if crate::interrupt::requested() {
            return None;
        }
        match requests.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => {
                if let Ok(Request::Stop {
                    window_start_unix_us,
                    window_s,
                    responses,
                }) = serde_json::from_str(&line)
                {
                    return Some((window_start_unix_us, window_s, responses));
                }
                reply(&failed(
                    Stage::Load,
                    "only `stop` is accepted while serving",
                ));
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// `stop::stop`, with the port check made on the address the service listened on.
fn stop_service(
    proc: &mut Proc,
    addr: SocketAddr,
    grace: Duration,
) -> crate::results::schema::StopRecord {
    let mut rec = stop::stop(proc, addr.port(), grace);
    rec.port_free_after = rec.port_free_after && TcpListener::bind(addr).is_ok();
    rec
}

fn delta(
    before: &Option<CgroupCounters>,
    after: &Option<CgroupCounters>,
) -> Option<CgroupCounters> {
    let (b, a) = (before.as_ref()?, after.as_ref()?);
    let d = |x: Option<u64>, y: Option<u64>| Some(y?.saturating_sub(x.unwrap_or(0)));
    Some(CgroupCounters {
        nr_periods: d(b.nr_periods, a.nr_periods),
        nr_throttled: d(b.nr_throttled, a.nr_throttled),
        throttled_us: d(b.throttled_us, a.throttled_us),
        memory_peak_bytes: a.memory_peak_bytes,
        oom_kills: d(b.oom_kills, a.oom_kills),
    })
}

/// loadgen confined to `cpus` on this host.
fn load(loadgen: &str, spec: &loadgen::LoadSpec, cpus: &[u32]) -> Reply {
    let req = LimitsRequest {
        cpus: cpus.to_vec(),
        cpu_quota: None,
        memory_max_bytes: None,
    };
    let conf: Confinement = match limits::confine(Role::Loadgen, &req) {
        Ok(c) => c,
        Err(e) => return failed(Stage::Limits, format!("loadgen: {e}")),
    };
    let file = std::env::temp_dir().join(format!("pm-agent-{}.spec.json", std::process::id()));
    match crate::load::run(Path::new(loadgen), spec, &file, &conf) {
        Ok(run) => Reply::Loaded {
            report: Box::new(run.report),
            exit_code: run.exit_code,
        },
        Err(e) => failed(Stage::Load, e),
    }
}
