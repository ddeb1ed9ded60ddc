//! One repetition of one cell, start to finish: confine → spawn → first 200 → start-up line →
//! verify → idle RSS → load (warm-up + measured window) watched by the service's observers
//! (`observe`) and the generator's /proc counts → the syscall window (`count::exact`) → stop
//! → port check — the service's part is `service::session`, the same on every path. The
//! repetition is returned as a value (`RepOutcome`): its starts, what they told, what it
//! measured, or the stage, reason and stderr tail of its failure; the schedule records it on
//! the cell and the matrix goes on.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use crate::config::Matrix;
use crate::count;
use crate::interrupt;
use crate::limits::{self, Confinement, Request, Role};
use crate::load;
use crate::observe;
use crate::results::outcome::{RepBody, RepOutcome};
use crate::results::schema::{
    AppliedLimits, CellSpec, ProcessCounts, RepResult, Stage, StageError,
};
use crate::service::session::{Launch, Session};
use crate::service::spawn;

/// What a repetition needs from the run.
pub struct Ctx<'a> {
    pub matrix: &'a Matrix,
    pub run_id: &'a str,
    /// Scratch directory for generator spec files.
    pub tmp_dir: &'a Path,
    /// Where cachegrind's out files of `--count-instructions` are kept, compressed (in the
    /// run's directory), for `cg_annotate`/`cg_diff` by hand.
    pub cachegrind_dir: &'a Path,
    /// The machine's timer floor measured as the run started, if it could be.
    pub machine_floor: Option<&'a loadgen::floor::Floor>,
    /// The hosts of a multi-host run (cells with `hosts` run through them).
    pub fleet: Option<&'a crate::host::Fleet>,
    /// `--count-instructions`: Valgrind instruction counts after c1 repetitions.
    pub count_instructions: bool,
    /// Why repetitions are not followed by the exact syscall count (`Plan::syscalls_off`).
    pub syscalls_off: Option<&'static str>,
}

/// The outcome ended by `r`; a failure while the run was interrupted is the interrupt's.
fn ended(out: RepOutcome, r: Result<RepBody, StageError>) -> RepOutcome {
    out.with(r.map_err(|mut e| {
        if interrupt::requested() {
            e.stage = Stage::Interrupted;
        }
        e
    }))
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

/// Something that runs beside the load (a profiler): told the server's pid just before the
/// generator starts, and told again once the generator has exited, before the service stops.
pub trait Window {
    fn load_starting(&mut self, server_pid: u32, cell: &CellSpec);
    fn load_done(&mut self);
}

/// Runs repetition `rep` (0 = drift re-run) of `cell`: a measured one, or for a churn cell
/// a churn one.
pub fn run_rep(ctx: &Ctx, cell: &CellSpec, rep: u32) -> RepOutcome {
    if cell.churn.is_some() {
        return run_churn_rep(ctx, cell, rep);
    }
    run_rep_with(ctx, cell, rep, None)
}

/// A measured repetition with `window` around the load (`matrix run --flamegraph`).
pub fn run_rep_with(
    ctx: &Ctx,
    cell: &CellSpec,
    rep: u32,
    window: Option<&mut dyn Window>,
) -> RepOutcome {
    let mut out = RepOutcome::default();
    let r = if cell.hosts.is_some() {
        match ctx.fleet {
            Some(f) => {
                crate::host::rep::run_rep(f, ctx.matrix, cell, rep, ctx.syscalls_off, &mut out)
            }
            None => Err(StageError::at(
                Stage::Spawn,
                "no hosts connected for a multi-host cell",
            )),
        }
    } else {
        steps(ctx, cell, rep, window, &mut out)
    };
    // A window that measured nothing fails the cell, whichever way it was produced.
    let r = r.and_then(|r| match crate::results::measured::problem(&r) {
        None => Ok(RepBody::Measured(Box::new(r))),
        Some(why) => Err(StageError::at(Stage::Load, why)),
    });
    ended(out, r)
}

/// The repetition as a list of steps; the first that fails ends it.
fn steps(
    ctx: &Ctx,
    cell: &CellSpec,
    rep: u32,
    window: Option<&mut dyn Window>,
    out: &mut RepOutcome,
) -> Result<RepResult, StageError> {
    let binary = service_binary(ctx, cell)?;
    let mut confs = confine(cell)?;
    let session = start_service(ctx, out, cell, binary, &confs, rep)?;
    measure(ctx, out, cell, session, &mut confs, window)
}

/// Where the server and the generator run.
struct Confinements {
    server: Confinement,
    loadgen: Confinement,
}

fn service_binary<'m>(ctx: &Ctx<'m>, cell: &CellSpec) -> Result<&'m Path, StageError> {
    ctx.matrix
        .services
        .iter()
        .find(|s| s.name == cell.service)
        .ok_or_else(|| {
            StageError::at(
                Stage::Spawn,
                format!("service {} not in the matrix", cell.service),
            )
        })
        .and_then(|s| match &s.unavailable {
            Some(why) => Err(StageError::at(Stage::Spawn, why.clone())),
            None => Ok(s.binary.as_path()),
        })
}

/// The server's and the generator's confinement, from the cell's profile.
fn confine(cell: &CellSpec) -> Result<Confinements, StageError> {
    let l = &cell.limits;
    let server = limits::confine(
        Role::Server,
        &request(&l.server_cpus, l.cpu_quota, l.memory_max_bytes),
    )
    .map_err(|e| StageError::at(Stage::Limits, format!("server: {e}")))?;
    let loadgen = limits::confine(Role::Loadgen, &request(&l.loadgen_cpus, None, None))
        .map_err(|e| StageError::at(Stage::Limits, format!("loadgen: {e}")))?;
    Ok(Confinements { server, loadgen })
}

/// Starts and checks the service on 127.0.0.1 for repetition `rep`, launched and probed
/// from the generator's CPUs; what the start told goes into `out`.
fn start_service(
    ctx: &Ctx,
    out: &mut RepOutcome,
    cell: &CellSpec,
    binary: &Path,
    confs: &Confinements,
    rep: u32,
) -> Result<Session, StageError> {
    let launch = Launch {
        binary,
        ip: IpAddr::from([127, 0, 0, 1]),
        workers: cell.limits.workers,
        args: if cell.external {
            spawn::Argv::External(&cell.service_args)
        } else {
            spawn::Argv::Contract(&cell.service_args)
        },
        probe_cpus: &cell.limits.loadgen_cpus,
        startup_timeout: Duration::from_millis(ctx.matrix.startup_timeout_ms),
        stop_grace: Duration::from_millis(ctx.matrix.stop_grace_ms),
        path: &cell.path,
    };
    let limits = merged_limits(&confs.server, &confs.loadgen);
    match Session::start(&launch, &confs.server, rep) {
        Ok((session, mut outcome)) => {
            outcome.limits = limits;
            out.told.push(outcome);
            Ok(session)
        }
        Err(failed) => {
            let mut failed = *failed;
            failed.outcome.limits = limits;
            out.told.push(failed.outcome);
            out.starts.extend(failed.start);
            Err(failed.error)
        }
    }
}

/// The load watched by the observers, the syscall window, the stop; what they measured.
fn measure(
    ctx: &Ctx,
    out: &mut RepOutcome,
    cell: &CellSpec,
    mut session: Session,
    confs: &mut Confinements,
    window: Option<&mut dyn Window>,
) -> Result<RepResult, StageError> {
    let rep = session.start.rep;
    let spec = cell.load_spec(session.start.port);
    let spec_file = ctx.tmp_dir.join(format!("{}-rep{rep}.spec.json", cell.key));
    let loaded = watched_load(ctx, cell, &session, confs, window, &spec, &spec_file);
    let died = session.proc.try_wait();
    // Syscalls in their own window after the timed one: perf's tracepoint slows every
    // syscall, so it must not run while req/s, latency and CPU are measured. Counted over
    // exact request counts sized from the req/s just measured.
    let sys = match (&loaded.load, died, ctx.syscalls_off) {
        (Ok(_), None, Some(why)) => count::SyscallWindow::unmeasured(why),
        (Ok(run), None, None) => count::exact::window(
            &ctx.matrix.loadgen,
            &spec,
            &spec_file,
            &confs.loadgen,
            &session.proc.tree().members(),
            run.report.requests_per_s,
        ),
        _ => count::SyscallWindow::unmeasured("the measured load did not complete"),
    };
    let stopped = session.stop();
    let died = died.or(stopped.died);
    out.starts.push(stopped.start);
    confs.server.release();

    let tail = stopped.stderr_tail;
    let run = loaded
        .load
        .map_err(|e| StageError::at(Stage::Load, e).with_tail(tail.clone()))?;
    if let Some(st) = died {
        return Err(StageError::at(
            Stage::Load,
            format!("service exited during the load with {st}"),
        )
        .with_tail(tail));
    }
    let seen = loaded.seen.unwrap_or_default();
    // A generator that never started counts nothing.
    let loadgen = loaded.loadgen.unwrap_or_else(|| ProcessCounts {
        responses: seen.counts.responses,
        ..Default::default()
    });
    Ok(RepResult {
        rep,
        floor_check: floor_check(ctx, cell, &run.report),
        generators: vec![],
        counts: Some(count::with_window(seen.counts, loadgen, &sys)),
        instructions: instructions(ctx, out, cell, rep),
        started_unix_ms: run.report.started_unix_ms,
        session: None,
        server: seen.usage,
        cgroup: seen.cgroup,
        loadgen_exit_code: run.exit_code,
        report: run.report,
    })
}

/// The timed load and what watched it.
struct Loaded {
    load: Result<load::LoadRun, String>,
    /// The service's observers over the generator's window (None when the load failed).
    seen: Option<observe::Observation>,
    /// The generator's /proc counts over its window (None when the load failed).
    loadgen: Option<ProcessCounts>,
}

/// The timed load, with the service's observers and `window` (a profiler) around it and the
/// generator counted from /proc as soon as it runs.
fn watched_load(
    ctx: &Ctx,
    cell: &CellSpec,
    session: &Session,
    confs: &Confinements,
    mut window: Option<&mut dyn Window>,
    spec: &loadgen::LoadSpec,
    spec_file: &Path,
) -> Loaded {
    let pid = session.proc.pid;
    let ((load, loadgen), seen) = observe::watch(
        &session.proc.tree(),
        &confs.server,
        || {
            if let Some(w) = window.as_deref_mut() {
                w.load_starting(pid, cell);
            }
            observe::counted_load(&ctx.matrix.loadgen, spec, spec_file, &confs.loadgen)
        },
        |(load, _)| {
            load.as_ref()
                .ok()
                .map(|run| observe::Window::of(&run.report))
        },
    );
    if let Some(w) = window {
        w.load_done();
    }
    Loaded {
        load,
        seen,
        loadgen,
    }
}

/// An open-loop repetition's send lag against the machine's timer floor, where both are
/// known.
fn floor_check(
    ctx: &Ctx,
    cell: &CellSpec,
    r: &loadgen::Report,
) -> Option<crate::results::schema::FloorCheck> {
    match (ctx.machine_floor, &cell.load, &r.schedule_lag_us) {
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
    }
}

/// With `--count-instructions`, a closed-loop keep-alive cell at one connection: the
/// service's instructions per request under Valgrind (its own starts, after the load).
fn instructions(
    ctx: &Ctx,
    out: &RepOutcome,
    cell: &CellSpec,
    rep: u32,
) -> Option<crate::results::schema::InstructionCount> {
    if !ctx.count_instructions || !cell.counts_instructions() {
        return None;
    }
    if cell.external {
        return Some(count::valgrind::not_for_command());
    }
    let binary = service_binary(ctx, cell).ok()?;
    let headers = cell.header_pairs();
    Some(count::valgrind::measure(&count::valgrind::Target {
        binary,
        service_args: &cell.service_args,
        path: &cell.path,
        headers: &headers,
        protocol: cell.protocol,
        io_driver: out
            .told
            .iter()
            .find_map(|t| t.startup_line.as_ref())
            .map(|l| l.io_driver.as_str()),
        cpus: &cell.limits.server_cpus,
        scratch_dir: ctx.tmp_dir,
        keep: Some(count::valgrind::Keep {
            dir: ctx.cachegrind_dir,
            stem: format!("{}-rep{rep}", cell.key),
        }),
    }))
}

/// One repetition of a connection-churn cell: the same start and checks as a measured one,
/// then the runner's own open/close cycles (from the generator's CPUs) instead of loadgen,
/// then the stop. A repetition that ended partway keeps its finished cycles (`partial` says
/// why) beside its failure.
fn run_churn_rep(ctx: &Ctx, cell: &CellSpec, rep: u32) -> RepOutcome {
    let mut out = RepOutcome::default();
    let r = (|| {
        let spec = cell
            .churn
            .ok_or_else(|| StageError::at(Stage::Load, "not a churn cell"))?;
        let binary = service_binary(ctx, cell)?;
        let mut confs = confine(cell)?;
        let mut session = start_service(ctx, &mut out, cell, binary, &confs, rep)?;
        let timeout = Duration::from_millis(ctx.matrix.request_timeout_ms);
        let addr = session.addr;
        let run = limits::cpus::on_cpus(&cell.limits.loadgen_cpus, || {
            crate::churn::run(&mut session.proc, addr, &cell.path, &spec, timeout, rep)
        });
        let stopped = session.stop();
        out.starts.push(stopped.start);
        confs.server.release();
        Ok((run, stopped.stderr_tail))
    })();
    match r {
        Ok((run, tail)) => match run.partial.clone() {
            None => ended(out, Ok(RepBody::Churn(run))),
            Some(why) => {
                out.body = Some(RepBody::Churn(run));
                ended(out, Err(StageError::at(Stage::Load, why).with_tail(tail)))
            }
        },
        Err(e) => ended(out, Err(e)),
    }
}
