//! One repetition of one cell, start to finish: confine → spawn → first 200 → start-up line →
//! verify → idle RSS → load (warm-up + measured window) with CPU/RSS sampling → stop →
//! port check. Every failure is recorded on the cell with its stage, reason and the
//! service's stderr tail; the matrix goes on.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use loadgen::{LoadModel, LoadSpec};

use crate::config::Matrix;
use crate::interrupt;
use crate::limits::{self, Confinement, Request};
use crate::load;
use crate::process::Proc;
use crate::results::schema::{
    AppliedLimits, CellResult, CellSpec, CellStatus, CgroupCounters, EndpointCheck, Failure,
    RepResult, SCHEMA_VERSION, StartRecord,
};
use crate::results::summary::summarize_cell;
use crate::sample::{self, Sampler};
use crate::service::{spawn, startup, startup_line, stop, verify};

/// What a repetition needs from the run.
pub struct Ctx<'a> {
    pub matrix: &'a Matrix,
    pub run_id: &'a str,
    /// Scratch directory for generator spec files.
    pub tmp_dir: &'a Path,
}

pub fn new_result(run_id: &str, cell: &CellSpec) -> CellResult {
    let mut r = CellResult {
        schema_version: SCHEMA_VERSION,
        run_id: run_id.into(),
        cell: cell.clone(),
        status: CellStatus::Partial,
        failure: None,
        startup_line: None,
        limits: None,
        verification: vec![],
        starts: vec![],
        reps: vec![],
        summary: Default::default(),
    };
    r.summary = summarize_cell(&r);
    r
}

/// Marks the cell as ended badly (interrupts win over other causes).
fn fail(res: &mut CellResult, stage: &str, reason: String, stderr_tail: Option<String>) {
    let (status, stage) = if interrupt::requested() {
        (CellStatus::Interrupted, "interrupted")
    } else if stage == "limits" {
        (CellStatus::Unsupported, stage)
    } else {
        (CellStatus::Failed, stage)
    };
    res.status = status;
    res.failure = Some(Failure {
        stage: stage.into(),
        reason,
        stderr_tail,
    });
}

fn request(cpus: &[u32], quota: Option<f64>, mem: Option<u64>) -> Request {
    Request {
        cpus: cpus.to_vec(),
        cpu_quota: quota,
        memory_max_bytes: mem,
    }
}

fn merged_limits(server: &Confinement, loadgen: &Confinement) -> Option<AppliedLimits> {
    let mut rec = server.record.clone()?;
    if let Some(l) = &loadgen.record {
        rec.loadgen_cgroups = l.loadgen_cgroups.clone();
        rec.notes
            .extend(l.notes.iter().map(|n| format!("loadgen: {n}")));
    }
    Some(rec)
}

pub fn load_spec(cell: &CellSpec, port: u16) -> LoadSpec {
    let conns = match cell.load {
        LoadModel::Closed { connections, .. } | LoadModel::Open { connections, .. } => connections,
    };
    LoadSpec {
        url: format!("http://127.0.0.1:{port}{}", cell.path),
        model: cell.load.clone(),
        threads: cell.loadgen_threads.min(conns).max(1),
        keepalive: cell.keepalive,
        duration_ms: Some(cell.duration_ms),
        requests: None,
        warmup_ms: cell.warmup_ms,
        timeout_ms: cell.request_timeout_ms,
        expect_status: 200,
        expect_body_bytes: cell.expect_body_bytes,
        headers: vec![],
    }
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
        // Peak since the group was created = peak of this start.
        memory_peak_bytes: a.memory_peak_bytes,
        oom_kills: d(b.oom_kills, a.oom_kills),
    })
}

/// Stops the service, records it on `start`, pushes `start` onto the cell.
fn finish_start(ctx: &Ctx, res: &mut CellResult, proc: &mut Proc, mut start: StartRecord) {
    start.stop = Some(stop::stop(
        proc,
        start.port,
        Duration::from_millis(ctx.matrix.stop_grace_ms),
    ));
    res.starts.push(start);
}

/// Runs repetition `rep` (0 = drift re-run) of the cell in `res`. On success returns the
/// repetition; on failure records it on `res` and returns None.
pub fn run_rep(ctx: &Ctx, res: &mut CellResult, rep: u32) -> Option<RepResult> {
    let cell = res.cell.clone();
    let Some(svc) = ctx.matrix.services.iter().find(|s| s.name == cell.service) else {
        fail(
            res,
            "spawn",
            format!("service {} not in the matrix", cell.service),
            None,
        );
        return None;
    };
    let l = &cell.limits;
    let mut server_conf = match limits::confine(
        "server",
        &request(&l.server_cpus, l.cpu_quota, l.memory_max_bytes),
    ) {
        Ok(c) => c,
        Err(e) => {
            fail(res, "limits", format!("server: {e}"), None);
            return None;
        }
    };
    let loadgen_conf = match limits::confine("loadgen", &request(&l.loadgen_cpus, None, None)) {
        Ok(c) => c,
        Err(e) => {
            fail(res, "limits", format!("loadgen: {e}"), None);
            return None;
        }
    };
    if res.limits.is_none() {
        res.limits = merged_limits(&server_conf, &loadgen_conf);
    }

    let port = match spawn::free_port() {
        Ok(p) => p,
        Err(e) => {
            fail(res, "spawn", format!("no free port: {e}"), None);
            return None;
        }
    };
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut proc = match spawn::spawn(
        &svc.binary,
        port,
        l.workers,
        &cell.service_args,
        &server_conf,
    ) {
        Ok(p) => p,
        Err(e) => {
            fail(
                res,
                "spawn",
                format!("cannot start {}: {e}", svc.binary.display()),
                None,
            );
            return None;
        }
    };
    let mut start = StartRecord {
        rep,
        pid: proc.pid,
        port,
        connect_us: None,
        first_200_us: None,
        idle_rss_bytes: None,
        stop: None,
    };

    // 1. start-up
    match startup::wait_ready(
        &mut proc,
        addr,
        Duration::from_millis(ctx.matrix.startup_timeout_ms),
    ) {
        Ok(r) => {
            start.connect_us = Some(r.connect_us);
            start.first_200_us = Some(r.first_200_us);
        }
        Err(e) => {
            finish_start(ctx, res, &mut proc, start);
            let tail = proc.stderr_tail();
            fail(res, "startup", e, tail);
            return None;
        }
    }
    // 2. start-up line + verification
    let line = startup_line::read(&proc, Duration::from_millis(500));
    let mut checks: Vec<EndpointCheck> = verify::verify(addr, &cell.path, Duration::from_secs(2));
    match line {
        Ok(b) => {
            if res.startup_line.is_none() {
                res.startup_line = Some(b);
            }
        }
        Err(e) => checks.push(EndpointCheck {
            path: "(start-up line)".into(),
            passed: false,
            status: None,
            problems: vec![e],
            headers: Default::default(),
            body_bytes: None,
            latency_us: None,
        }),
    }
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| format!("{}: {}", c.path, c.problems.join("; ")))
        .collect();
    if res.verification.is_empty() || !failed.is_empty() {
        res.verification = checks;
    }
    if !failed.is_empty() {
        finish_start(ctx, res, &mut proc, start);
        let tail = proc.stderr_tail();
        fail(res, "verify", failed.join(" | "), tail);
        return None;
    }
    start.idle_rss_bytes = sample::status(proc.pid).map(|s| s.0);

    // 3. load with sampling
    let spec = load_spec(&cell, port);
    let spec_file = ctx.tmp_dir.join(format!("{}-rep{rep}.spec.json", cell.key));
    let before = server_conf.counters();
    let sampler = Sampler::start(proc.pid);
    let outcome = load::run(&ctx.matrix.loadgen, &spec, &spec_file, &loadgen_conf);
    let samples = sampler.finish();
    let after = server_conf.counters();
    let died = proc.try_wait();
    finish_start(ctx, res, &mut proc, start);
    let tail = proc.stderr_tail();
    drop(proc);
    server_conf.release();

    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            fail(res, "load", e, tail);
            return None;
        }
    };
    if let Some(st) = died {
        fail(
            res,
            "load",
            format!("service exited during the load with {st}"),
            tail,
        );
        return None;
    }
    let r = &outcome.report;
    let responses = (r.requests_per_s * r.window_s).round() as u64;
    let server = sample::usage_in_window(&samples, r.started_unix_ms * 1000, r.window_s, responses);
    Some(RepResult {
        rep,
        started_unix_ms: r.started_unix_ms,
        server,
        cgroup: delta(&before, &after),
        loadgen_exit_code: outcome.exit_code,
        report: outcome.report,
    })
}
