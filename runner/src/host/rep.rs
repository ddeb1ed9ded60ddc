//! One repetition of a multi-host cell: the service started, verified and sampled by the
//! agent on the server host; the load split between the generator hosts (connections, or
//! the rate and its connection bound) and started on all of them at once; each host's full
//! report kept, their histograms merged into the cell's report; the server's CPU taken over
//! the window all generators were loading it, on the server's clock.
//!
//! Latency is measured only on generator hosts; clocks are only used to line up the
//! server's CPU samples with the window, through offsets estimated over the SSH channel.

use std::time::Duration;

use loadgen::{LoadSpec, Report};

use super::session::Session;
use super::{Fleet, HostError};
use crate::agent::protocol::{Failed, Reply, Request, Serve};
use crate::config::Matrix;
use crate::count::{self, exact, exact::Site};
use crate::load::LoadRun;
use crate::observe::{Observers, Syscalls, Window};
use crate::results::outcome::RepOutcome;
use crate::results::schema::{CellSpec, GeneratorRun, ProcessCounts, RepResult, Stage, StageError};

/// A host step's failure as the stage's, the host marked lost where it was.
fn at(stage: Stage, e: HostError) -> StageError {
    let mut s = StageError::at(stage, e.reason);
    s.host_lost = e.lost;
    s
}

/// Folds a failed start on the host into the outcome; the error names the host.
fn from_failed(out: &mut RepOutcome, host: &str, f: Failed) -> StageError {
    out.told.push(f.outcome);
    out.starts.extend(f.start);
    StageError::at(f.error.stage, format!("host {host}: {}", f.error.reason))
        .with_tail(f.error.stderr_tail)
}

/// Repetition `rep` of the multi-host `cell`, its starts and what they told put in `out`;
/// `syscalls_off` says why no exact-count window follows the timed load, if none does.
pub fn run_rep(
    fleet: &Fleet,
    m: &Matrix,
    cell: &CellSpec,
    rep: u32,
    syscalls_off: Option<&str>,
    out: &mut RepOutcome,
) -> Result<RepResult, StageError> {
    let place = cell
        .hosts
        .clone()
        .ok_or_else(|| StageError::at(Stage::Spawn, "not a multi-host cell"))?;
    let spawn_err = |e: HostError| at(Stage::Spawn, e);
    let server = fleet
        .get(&place.server_host)
        .map_err(|e| spawn_err(e.into()))?;
    let mut srv = server.session().map_err(spawn_err)?;
    let binary = server.bins.get(&cell.service).cloned().ok_or_else(|| {
        spawn_err(HostError::failed(format!(
            "host {}: {} was not shipped",
            server.name, cell.service
        )))
    })?;
    let serve = Serve {
        binary,
        listen_ip: server.address.to_string(),
        args: cell.service_args.clone(),
        limits: cell.limits.clone(),
        rep,
        path: cell.path.clone(),
        startup_timeout_ms: m.startup_timeout_ms,
        stop_grace_ms: m.stop_grace_ms,
    };
    let ready_within = Duration::from_millis(m.startup_timeout_ms + m.stop_grace_ms + 15_000);
    let ready = match srv.ask(&Request::Serve(Box::new(serve)), ready_within) {
        Ok(Reply::Ready(r)) => r,
        Ok(Reply::Failed(f)) => return Err(from_failed(out, &server.name, *f)),
        Ok(other) => {
            return Err(spawn_err(HostError::failed(format!(
                "host {}: unexpected {other:?}",
                server.name
            ))));
        }
        Err(e) => return Err(at(Stage::Startup, e)),
    };
    out.told.push(ready.outcome.clone());
    let start = ready.start.clone();
    let mut total = cell.load_spec(ready.port);
    total.url = format!(
        "{}://{}{}",
        cell.protocol.scheme(),
        std::net::SocketAddr::new(server.address, ready.port),
        cell.path
    );
    // As on one machine, the set watches the load: here only the exact-count window after
    // the timed one, the service still up (the service's own observers are the agent's).
    let site = Remote {
        srv: &mut srv,
        fleet,
        server_offset_us: server.clock_offset_us,
        host: &place.loadgen_hosts[0],
        cpus: &cell.limits.loadgen_cpus,
        generator: None,
    };
    let mut set = Observers::new(None).with(Syscalls::new(site, &total, syscalls_off));
    let outcome = set.watch(|_| generate(fleet, cell, &total, &place.loadgen_hosts));
    let merged = outcome.as_ref().ok().map(|g| {
        let parts: Vec<(&str, &Report)> = g
            .runs
            .iter()
            .map(|g| (g.host.as_str(), &g.report))
            .collect();
        Report::merge(&total, &parts)
    });
    if let Some(Ok(report)) = &merged {
        set.load_complete(&[], report);
    }
    // The stop goes out whatever the generators did, so the service's record is complete.
    let window = match &outcome {
        Ok(g) => window_on_server(fleet, server.clock_offset_us, &g.runs),
        Err(_) => Window::default(),
    };
    let here = set.finish(Some(&window)).unwrap_or_default();
    let stop = Request::Stop {
        window_start_unix_us: window.start_unix_us,
        window_s: window.secs,
        responses: window.responses,
    };
    let stopped = match srv.ask(&stop, Duration::from_millis(m.stop_grace_ms + 15_000)) {
        Ok(Reply::Stopped(s)) => s,
        Ok(Reply::Failed(f)) => return Err(from_failed(out, &server.name, *f)),
        Ok(other) => {
            return Err(StageError::at(
                Stage::Stop,
                format!("host {}: unexpected {other:?}", server.name),
            ));
        }
        Err(e) => {
            out.starts.push(start);
            return Err(at(Stage::Stop, e));
        }
    };
    drop(srv);
    out.starts.push(stopped.start.clone());
    let Generated { runs, counts } =
        outcome.map_err(|e| at(Stage::Load, e).with_tail(stopped.stderr_tail.clone()))?;
    if let Some(st) = &stopped.died {
        return Err(StageError::at(
            Stage::Load,
            format!(
                "host {}: service exited during the load with {st}",
                server.name
            ),
        )
        .with_tail(stopped.stderr_tail.clone()));
    }
    let report = merged
        .unwrap_or_else(|| Err("no report".into()))
        .map_err(|e| StageError::at(Stage::Load, e))?;
    let exit_code = runs.iter().filter_map(|g| g.loadgen_exit_code).max();
    let mut seen = stopped.seen;
    seen.syscalls = here.syscalls;
    seen.loadgen = counts.map(|c| count::sum_proc(&c));
    Ok(seen.rep(rep, LoadRun { report, exit_code }, runs))
}

/// The window every generator was loading the server, on the server's clock, and the
/// responses completed in it (each host's rate times the common window).
fn window_on_server(fleet: &Fleet, server_offset: i64, runs: &[GeneratorRun]) -> Window {
    let on_server = |g: &GeneratorRun| {
        let off = fleet.get(&g.host).map_or(0, |e| e.clock_offset_us);
        let start = g.report.started_unix_ms as i64 * 1000 - off + server_offset;
        (start, start + (g.report.window_s * 1e6) as i64)
    };
    let spans: Vec<(i64, i64)> = runs.iter().map(on_server).collect();
    let start = spans.iter().map(|s| s.0).max().unwrap_or(0);
    let end = spans.iter().map(|s| s.1).min().unwrap_or(0);
    let window_s = ((end - start).max(0)) as f64 / 1e6;
    let responses: f64 = runs
        .iter()
        .map(|g| g.report.requests_per_s * window_s)
        .sum();
    Window {
        start_unix_us: start.max(0) as u64,
        secs: window_s,
        responses: responses.round() as u64,
    }
}

/// Starts every generator's share at once (sessions first, then the requests back to
/// back), then collects the reports. The error names the host.
/// Beyond the load's own budget: the agent starts loadgen on its host and relays the report
/// back over SSH.
const RELAY_SLACK: Duration = Duration::from_secs(15);

/// The generators' reports, and their /proc counts where every host counted.
struct Generated {
    runs: Vec<GeneratorRun>,
    counts: Option<Vec<ProcessCounts>>,
}

fn generate(
    fleet: &Fleet,
    cell: &CellSpec,
    total: &LoadSpec,
    hosts: &[String],
) -> Result<Generated, HostError> {
    let shares = total.split(hosts.len() as u32);
    let mut sessions: Vec<(String, Session, String)> = Vec::new();
    for h in hosts {
        let ep = fleet.get(h)?;
        let session = ep.session()?;
        let loadgen = ep
            .bins
            .get("loadgen")
            .cloned()
            .ok_or_else(|| format!("host {h}: loadgen was not shipped"))?;
        sessions.push((h.clone(), session, loadgen));
    }
    for ((h, s, loadgen), share) in sessions.iter_mut().zip(shares) {
        let req = Request::Load {
            loadgen: loadgen.clone(),
            spec: Box::new(share),
            cpus: cell.limits.loadgen_cpus.clone(),
        };
        s.send(&req)
            .map_err(|e| e.context(&format!("host {h}: ")))?;
    }
    let budget = total.wall_budget() + RELAY_SLACK;
    let mut runs = Vec::new();
    let mut counts = Some(Vec::new());
    let mut errors: Vec<HostError> = Vec::new();
    for (h, s, _) in &mut sessions {
        match s.recv(budget) {
            Ok(Reply::Loaded {
                report,
                exit_code,
                counts: c,
            }) => {
                runs.push(GeneratorRun {
                    host: h.clone(),
                    report: *report,
                    loadgen_exit_code: exit_code,
                });
                counts = counts.zip(c).map(|(mut v, c)| {
                    v.push(*c);
                    v
                });
            }
            Ok(Reply::Failed(f)) => errors.push(format!("host {h}: {}", f.error).into()),
            Ok(other) => errors.push(format!("host {h}: unexpected {other:?}").into()),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(Generated { runs, counts })
    } else {
        // Lost if any host was: the load did not fail on its own account.
        Err(HostError {
            lost: errors.iter().any(|e| e.lost),
            reason: errors
                .iter()
                .map(|e| e.reason.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        })
    }
}

/// The exact-count window's site (`count::exact::Site`) across hosts: perf on the server
/// host (its agent), the two loads at the cell's whole shape from one generator host, their
/// times moved onto the server's clock.
struct Remote<'a> {
    srv: &'a mut Session,
    fleet: &'a Fleet,
    server_offset_us: i64,
    host: &'a str,
    cpus: &'a [u32],
    /// The generator host's session and its loadgen, opened at the first load.
    generator: Option<Result<(Session, String), HostError>>,
}

/// How long the server host's agent is given to attach or detach perf.
const COUNT_ASK: Duration = Duration::from_secs(15);

impl Site for Remote<'_> {
    fn count_start(&mut self, _: &[u32]) -> Result<(), String> {
        match self.srv.ask(&Request::CountStart, COUNT_ASK) {
            Ok(Reply::Counting { unmeasured: None }) => Ok(()),
            Ok(Reply::Counting {
                unmeasured: Some(why),
            }) => Err(why),
            Ok(other) => Err(format!("server host: unexpected {other:?}")),
            Err(e) => Err(e.reason),
        }
    }

    fn load(&mut self, spec: &LoadSpec) -> exact::Load {
        let (fleet, host) = (self.fleet, self.host);
        let generator = self.generator.get_or_insert_with(|| {
            let ep = fleet.get(host)?;
            let loadgen = ep
                .bins
                .get("loadgen")
                .cloned()
                .ok_or_else(|| format!("host {host}: loadgen was not shipped"))?;
            Ok((ep.session()?, loadgen))
        });
        let (g, loadgen) = match generator {
            Ok((g, l)) => (g, l.clone()),
            Err(e) => return failed_load(e.reason.clone()),
        };
        let req = Request::ExactLoad {
            loadgen,
            spec: Box::new(spec.clone()),
            cpus: self.cpus.to_vec(),
        };
        let gen_offset = fleet.get(host).map_or(0, |e| e.clock_offset_us);
        let on_server = |t: u64| (t as i64 - gen_offset + self.server_offset_us).max(0) as u64;
        match g.ask(&req, spec.wall_budget() + RELAY_SLACK) {
            Ok(Reply::ExactLoaded(l)) => exact::Load {
                before_us: on_server(l.before_us),
                after_us: on_server(l.after_us),
                ..*l
            },
            Ok(Reply::Failed(f)) => failed_load(format!("host {host}: {}", f.error)),
            Ok(other) => failed_load(format!("host {host}: unexpected {other:?}")),
            Err(e) => failed_load(e.reason),
        }
    }

    fn count_end(&mut self, load_starts_unix_us: &[u64]) -> Result<exact::ServerCounted, String> {
        let req = Request::CountEnd {
            load_starts_unix_us: load_starts_unix_us.to_vec(),
        };
        match self.srv.ask(&req, COUNT_ASK) {
            Ok(Reply::Counted(c)) => Ok(*c),
            Ok(other) => Err(format!("server host: unexpected {other:?}")),
            Err(e) => Err(e.reason),
        }
    }
}

/// A load that did not run, for `why`.
fn failed_load(why: String) -> exact::Load {
    exact::Load {
        before_us: 0,
        after_us: 0,
        responses: Err(why.clone()),
        loadgen: Err(why),
        loadgen_kernel: Default::default(),
        loadgen_kernel_refused: Default::default(),
    }
}
