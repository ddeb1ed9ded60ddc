//! One repetition of one cell, start to finish: confine → spawn → first 200 → start-up line →
//! verify → idle RSS → load (warm-up + measured window) with CPU/RSS sampling → stop →
//! port check. Every failure is recorded on the cell with its stage, reason and the
//! service's stderr tail; the matrix goes on.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use crate::config::Matrix;
use crate::interrupt;
use crate::limits::{self, Confinement, Request, Role};
use crate::load;
use crate::process::Proc;
use crate::results::churn::ChurnRep;
use crate::results::schema::{
    AppliedLimits, CellResult, CellSpec, CellStatus, CgroupCounters, EndpointCheck, Failure,
    RepResult, Stage, StartRecord,
};
use crate::sample::{self, Sampler};
use crate::service::{spawn, startup, startup_line, stop, verify, warm};

/// What a repetition needs from the run.
pub struct Ctx<'a> {
    pub matrix: &'a Matrix,
    pub run_id: &'a str,
    /// Scratch directory for generator spec files.
    pub tmp_dir: &'a Path,
    /// The machine's timer floor measured as the run started, if it could be.
    pub machine_floor: Option<&'a loadgen::floor::Floor>,
    /// The hosts of a multi-host run (cells with `hosts` run through them).
    pub fleet: Option<&'a crate::host::Fleet>,
}

/// A step that ended the repetition: where, why, and the service's stderr tail if it ran.
struct Stop {
    stage: Stage,
    reason: String,
    stderr_tail: Option<String>,
}

impl Stop {
    fn at(stage: Stage, reason: impl Into<String>) -> Stop {
        Stop {
            stage,
            reason: reason.into(),
            stderr_tail: None,
        }
    }

    fn with_tail(mut self, tail: Option<String>) -> Stop {
        self.stderr_tail = tail;
        self
    }
}

/// Marks the cell as ended badly (interrupts win over other causes).
fn fail(res: &mut CellResult, stop: Stop) {
    let (status, stage) = if interrupt::requested() {
        (CellStatus::Interrupted, Stage::Interrupted)
    } else if stop.stage == Stage::Limits {
        (CellStatus::Unsupported, stop.stage)
    } else {
        (CellStatus::Failed, stop.stage)
    };
    res.status = status;
    res.failure = Some(Failure {
        stage,
        host_lost: crate::host::lost_host(&stop.reason),
        reason: stop.reason,
        stderr_tail: stop.stderr_tail,
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

/// Something that runs beside the load (a profiler): told the server's pid just before the
/// generator starts, and told again once the generator has exited, before the service stops.
pub trait Window {
    fn load_starting(&mut self, server_pid: u32, cell: &CellSpec);
    fn load_done(&mut self);
}

/// Runs repetition `rep` (0 = drift re-run) of the cell in `res`. On success returns the
/// repetition; on failure records it on `res` and returns None.
pub fn run_rep(ctx: &Ctx, res: &mut CellResult, rep: u32) -> Option<RepResult> {
    run_rep_with(ctx, res, rep, None)
}

/// [`run_rep`] with `window` around the load (`matrix run --flamegraph`).
pub fn run_rep_with(
    ctx: &Ctx,
    res: &mut CellResult,
    rep: u32,
    window: Option<&mut dyn Window>,
) -> Option<RepResult> {
    let r = if res.cell.hosts.is_some() {
        multi_host(ctx, res, rep)
    } else {
        steps(ctx, res, rep, window)
            .map_err(|stop| fail(res, stop))
            .ok()
    }?;
    // A window that measured nothing fails the cell, whichever way it was produced.
    match crate::results::measured::problem(&r) {
        None => Some(r),
        Some(why) => {
            fail(res, Stop::at(Stage::Load, why));
            None
        }
    }
}

/// A multi-host cell's repetition, run by `host::rep` through the hosts' agents.
fn multi_host(ctx: &Ctx, res: &mut CellResult, rep: u32) -> Option<RepResult> {
    let r = match ctx.fleet {
        Some(f) => crate::host::rep::run_rep(f, ctx.matrix, res, rep),
        None => Err((
            Stage::Spawn,
            "no hosts connected for a multi-host cell".into(),
            None,
        )),
    };
    r.map_err(|(stage, reason, tail)| fail(res, Stop::at(stage, reason).with_tail(tail)))
        .ok()
}

/// The repetition as a list of steps; the first that fails ends it.
fn steps(
    ctx: &Ctx,
    res: &mut CellResult,
    rep: u32,
    window: Option<&mut dyn Window>,
) -> Result<RepResult, Stop> {
    let cell = res.cell.clone();
    let binary = service_binary(ctx, &cell)?;
    let mut confs = confine(&cell)?;
    if res.limits.is_none() {
        res.limits = merged_limits(&confs.server, &confs.loadgen);
    }
    let (mut proc, mut start) = spawn_service(ctx, &cell, binary, &confs.server, rep)?;
    let addr = SocketAddr::from(([127, 0, 0, 1], start.port));
    let ready = wait_ready(ctx, &cell, &mut proc, addr, &mut start)
        .and_then(|()| check_service(res, &proc, addr, &cell.path));
    if let Err(stop) = ready {
        finish_start(ctx, res, &mut proc, start);
        return Err(stop.with_tail(proc.stderr_tail()));
    }
    start.idle_rss_bytes = sample::status(proc.pid).map(|s| s.0);
    measure(ctx, res, &cell, (proc, start), &mut confs, window)
}

/// Where the server and the generator run.
struct Confinements {
    server: Confinement,
    loadgen: Confinement,
}

fn service_binary<'m>(ctx: &Ctx<'m>, cell: &CellSpec) -> Result<&'m Path, Stop> {
    ctx.matrix
        .services
        .iter()
        .find(|s| s.name == cell.service)
        .map(|s| s.binary.as_path())
        .ok_or_else(|| {
            Stop::at(
                Stage::Spawn,
                format!("service {} not in the matrix", cell.service),
            )
        })
}

/// The server's and the generator's confinement, from the cell's profile.
fn confine(cell: &CellSpec) -> Result<Confinements, Stop> {
    let l = &cell.limits;
    let server = limits::confine(
        Role::Server,
        &request(&l.server_cpus, l.cpu_quota, l.memory_max_bytes),
    )
    .map_err(|e| Stop::at(Stage::Limits, format!("server: {e}")))?;
    let loadgen = limits::confine(Role::Loadgen, &request(&l.loadgen_cpus, None, None))
        .map_err(|e| Stop::at(Stage::Limits, format!("loadgen: {e}")))?;
    Ok(Confinements { server, loadgen })
}

/// Starts the service for repetition `rep`, right after its warm-up start
/// ([`warm::warm_up`]: same command and confinement, unmeasured, so the measured start is a
/// warm one whatever ran before it).
fn spawn_service(
    ctx: &Ctx,
    cell: &CellSpec,
    binary: &Path,
    conf: &Confinement,
    rep: u32,
) -> Result<(Proc, StartRecord), Stop> {
    let ip = IpAddr::from([127, 0, 0, 1]);
    let warmup_first_200_us = warm::warm_up(
        binary,
        ip,
        cell.limits.workers,
        &cell.service_args,
        conf,
        &cell.limits.loadgen_cpus,
        Duration::from_millis(ctx.matrix.startup_timeout_ms),
    )
    .map_err(|f| Stop::at(f.stage(), f.reason).with_tail(f.stderr_tail))?;
    let addr =
        spawn::free_addr(ip).map_err(|e| Stop::at(Stage::Spawn, format!("no free port: {e}")))?;
    // Launched from the generator's CPUs, where the readiness probe runs next.
    let proc = spawn::spawn(
        binary,
        addr,
        cell.limits.workers,
        &cell.service_args,
        conf,
        &cell.limits.loadgen_cpus,
    )
    .map_err(|e| {
        Stop::at(
            Stage::Spawn,
            format!("cannot start {}: {e}", binary.display()),
        )
    })?;
    let start = StartRecord {
        rep,
        pid: proc.pid,
        port: addr.port(),
        connect_us: None,
        first_200_us: None,
        launch_us: None,
        warmup_first_200_us: Some(warmup_first_200_us),
        idle_rss_bytes: None,
        stop: None,
    };
    Ok((proc, start))
}

/// Start-up time: until the first 200.
fn wait_ready(
    ctx: &Ctx,
    cell: &CellSpec,
    proc: &mut Proc,
    addr: SocketAddr,
    start: &mut StartRecord,
) -> Result<(), Stop> {
    let timeout = Duration::from_millis(ctx.matrix.startup_timeout_ms);
    // Probe from the generator's CPUs: the runner must not take the server's CPU while the
    // service starts.
    let r = limits::cpus::on_cpus(&cell.limits.loadgen_cpus, || {
        startup::wait_ready(proc, addr, timeout)
    })
    .map_err(|e| Stop::at(Stage::Startup, e))?;
    start.connect_us = Some(r.connect_us);
    start.first_200_us = Some(r.first_200_us);
    start.launch_us = r.launch_us;
    Ok(())
}

/// The start-up line and every endpoint, checked against the contract.
fn check_service(
    res: &mut CellResult,
    proc: &Proc,
    addr: SocketAddr,
    path: &str,
) -> Result<(), Stop> {
    let line = startup_line::read(proc, Duration::from_millis(500));
    let mut checks: Vec<EndpointCheck> = verify::verify(addr, path, Duration::from_secs(2));
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
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Stop::at(Stage::Verify, failed.join(" | ")))
    }
}

/// The load with CPU/RSS sampling, then the stop; the service's usage over the window.
fn measure(
    ctx: &Ctx,
    res: &mut CellResult,
    cell: &CellSpec,
    (mut proc, start): (Proc, StartRecord),
    confs: &mut Confinements,
    mut window: Option<&mut dyn Window>,
) -> Result<RepResult, Stop> {
    let rep = start.rep;
    let spec = cell.load_spec(start.port);
    let spec_file = ctx.tmp_dir.join(format!("{}-rep{rep}.spec.json", cell.key));
    let before = confs.server.counters();
    let sampler = Sampler::start(proc.pid);
    if let Some(w) = window.as_deref_mut() {
        w.load_starting(proc.pid, cell);
    }
    let run = load::run(&ctx.matrix.loadgen, &spec, &spec_file, &confs.loadgen);
    let samples = sampler.finish();
    let after = confs.server.counters();
    if let Some(w) = window {
        w.load_done();
    }
    let died = proc.try_wait();
    finish_start(ctx, res, &mut proc, start);
    let tail = proc.stderr_tail();
    drop(proc);
    confs.server.release();

    let run = run.map_err(|e| Stop::at(Stage::Load, e).with_tail(tail.clone()))?;
    if let Some(st) = died {
        return Err(Stop::at(
            Stage::Load,
            format!("service exited during the load with {st}"),
        )
        .with_tail(tail));
    }
    let r = &run.report;
    let responses = (r.requests_per_s * r.window_s).round() as u64;
    let server = sample::usage_in_window(&samples, r.started_unix_ms * 1000, r.window_s, responses);
    let floor_check = match (ctx.machine_floor, &cell.load, &r.schedule_lag_us) {
        (Some(f), loadgen::LoadModel::Open { rate_per_s, .. }, Some(lag)) => {
            let lag = crate::floor::Lag {
                send_p99_us: lag.p99,
                wake_p99_us: r.wake_lag_us.as_ref().map(|w| w.p99),
                own_p99_us: r.own_lag_us.as_ref().map(|w| w.p99),
                latency_p99_us: r.latency_us.p99,
            };
            crate::floor::check(f, *rate_per_s, lag)
        }
        _ => None,
    };
    Ok(RepResult {
        rep,
        floor_check,
        generators: vec![],
        started_unix_ms: r.started_unix_ms,
        server,
        cgroup: delta(&before, &after),
        loadgen_exit_code: run.exit_code,
        report: run.report,
    })
}

/// One repetition of a connection-churn cell: the same start and checks as `run_rep`, then
/// the runner's own open/close cycles (from the generator's CPUs) instead of loadgen, then
/// the stop. On failure records it on `res` and returns None.
pub fn run_churn_rep(ctx: &Ctx, res: &mut CellResult, rep: u32) -> Option<ChurnRep> {
    let r = (|| {
        let cell = res.cell.clone();
        let spec = cell
            .churn
            .ok_or_else(|| Stop::at(Stage::Load, "not a churn cell"))?;
        let binary = service_binary(ctx, &cell)?;
        let mut confs = confine(&cell)?;
        if res.limits.is_none() {
            res.limits = merged_limits(&confs.server, &confs.loadgen);
        }
        let (mut proc, mut start) = spawn_service(ctx, &cell, binary, &confs.server, rep)?;
        let addr = SocketAddr::from(([127, 0, 0, 1], start.port));
        let ready = wait_ready(ctx, &cell, &mut proc, addr, &mut start)
            .and_then(|()| check_service(res, &proc, addr, &cell.path));
        if let Err(stop) = ready {
            finish_start(ctx, res, &mut proc, start);
            return Err(stop.with_tail(proc.stderr_tail()));
        }
        start.idle_rss_bytes = sample::status(proc.pid).map(|s| s.0);
        let timeout = Duration::from_millis(ctx.matrix.request_timeout_ms);
        let run = limits::cpus::on_cpus(&cell.limits.loadgen_cpus, || {
            crate::churn::run(&mut proc, addr, &cell.path, &spec, timeout, rep)
        });
        finish_start(ctx, res, &mut proc, start);
        let tail = proc.stderr_tail();
        drop(proc);
        confs.server.release();
        run.map_err(|e| Stop::at(Stage::Load, e).with_tail(tail))
    })();
    match r {
        Ok(r) => Some(r),
        Err(stop) => {
            fail(res, stop);
            None
        }
    }
}
