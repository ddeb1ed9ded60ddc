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
use crate::results::schema::{CellResult, CellSpec, GeneratorRun, RepResult, Stage, StageError};

/// A host step's failure as the stage's, the host marked lost where it was.
fn at(stage: Stage, e: HostError) -> StageError {
    let mut s = StageError::at(stage, e.reason);
    s.host_lost = e.lost;
    s
}

/// Folds a failed start on the host into the cell; the error names the host.
fn from_failed(res: &mut CellResult, host: &str, f: Failed) -> StageError {
    res.record_start(&f.outcome);
    res.starts.extend(f.start);
    StageError::at(f.error.stage, format!("host {host}: {}", f.error.reason))
        .with_tail(f.error.stderr_tail)
}

pub fn run_rep(
    fleet: &Fleet,
    m: &Matrix,
    res: &mut CellResult,
    rep: u32,
) -> Result<RepResult, StageError> {
    let cell = res.cell.clone();
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
        Ok(Reply::Failed(f)) => return Err(from_failed(res, &server.name, *f)),
        Ok(other) => {
            return Err(spawn_err(HostError::failed(format!(
                "host {}: unexpected {other:?}",
                server.name
            ))));
        }
        Err(e) => return Err(at(Stage::Startup, e)),
    };
    res.record_start(&ready.outcome);
    let start = ready.start.clone();
    let mut total = cell.load_spec(ready.port);
    total.url = format!(
        "http://{}{}",
        std::net::SocketAddr::new(server.address, ready.port),
        cell.path
    );
    let outcome = generate(fleet, &cell, &total, &place.loadgen_hosts);
    // The stop goes out whatever the generators did, so the service's record is complete.
    let (window_start_unix_us, window_s, responses) = match &outcome {
        Ok(runs) => window_on_server(fleet, server.clock_offset_us, runs),
        Err(_) => (0, 0.0, 0),
    };
    let stop = Request::Stop {
        window_start_unix_us,
        window_s,
        responses,
    };
    let stopped = match srv.ask(&stop, Duration::from_millis(m.stop_grace_ms + 15_000)) {
        Ok(Reply::Stopped(s)) => s,
        Ok(Reply::Failed(f)) => return Err(from_failed(res, &server.name, *f)),
        Ok(other) => {
            return Err(StageError::at(
                Stage::Stop,
                format!("host {}: unexpected {other:?}", server.name),
            ));
        }
        Err(e) => {
            res.starts.push(start);
            return Err(at(Stage::Stop, e));
        }
    };
    drop(srv);
    res.starts.push(stopped.start.clone());
    let runs = outcome.map_err(|e| at(Stage::Load, e).with_tail(stopped.stderr_tail.clone()))?;
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
    let parts: Vec<(&str, &loadgen::Report)> =
        runs.iter().map(|g| (g.host.as_str(), &g.report)).collect();
    let report = Report::merge(&total, &parts).map_err(|e| StageError::at(Stage::Load, e))?;
    Ok(RepResult {
        rep,
        started_unix_ms: report.started_unix_ms,
        server: stopped.usage,
        cgroup: stopped.cgroup,
        loadgen_exit_code: runs.iter().filter_map(|g| g.loadgen_exit_code).max(),
        floor_check: None,
        report,
        generators: runs,
        counts: None,
        instructions: None,
    })
}

/// The window every generator was loading the server, on the server's clock, and the
/// responses completed in it (each host's rate times the common window).
fn window_on_server(fleet: &Fleet, server_offset: i64, runs: &[GeneratorRun]) -> (u64, f64, u64) {
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
    (start.max(0) as u64, window_s, responses.round() as u64)
}

/// Starts every generator's share at once (sessions first, then the requests back to
/// back), then collects the reports. The error names the host.
/// Beyond the load's own budget: the agent starts loadgen on its host and relays the report
/// back over SSH.
const RELAY_SLACK: Duration = Duration::from_secs(15);

fn generate(
    fleet: &Fleet,
    cell: &CellSpec,
    total: &LoadSpec,
    hosts: &[String],
) -> Result<Vec<GeneratorRun>, HostError> {
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
    let mut errors: Vec<HostError> = Vec::new();
    for (h, s, _) in &mut sessions {
        match s.recv(budget) {
            Ok(Reply::Loaded { report, exit_code }) => runs.push(GeneratorRun {
                host: h.clone(),
                report: *report,
                loadgen_exit_code: exit_code,
            }),
            Ok(Reply::Failed(f)) => errors.push(format!("host {h}: {}", f.error).into()),
            Ok(other) => errors.push(format!("host {h}: unexpected {other:?}").into()),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(runs)
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
