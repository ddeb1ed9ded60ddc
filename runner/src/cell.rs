//! One repetition of one cell, start to finish: confine → spawn → first 200 → start-up line →
//! verify → idle RSS → load (warm-up + measured window) watched by the repetition's set of
//! observers (`observe`: what they are, and which phase each watches) → stop → port check —
//! the service's part is `service::session`, the same on every path. The
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
use crate::observe::{self, Observer, Observers, Window};
use crate::results::outcome::{RepBody, RepOutcome};
use crate::results::schema::{AppliedLimits, CellSpec, RepResult, Stage, StageError};
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

/// Runs repetition `rep` (0 = drift re-run) of `cell`: a measured one, or for a churn cell
/// a churn one.
pub fn run_rep(ctx: &Ctx, cell: &CellSpec, rep: u32) -> RepOutcome {
    if cell.churn.is_some() {
        return run_churn_rep(ctx, cell, rep);
    }
    run_rep_with(ctx, cell, rep, None)
}

/// A measured repetition with `beside` among its observers (a profiler, `matrix run
/// --flamegraph`).
pub fn run_rep_with(
    ctx: &Ctx,
    cell: &CellSpec,
    rep: u32,
    beside: Option<&mut dyn Observer>,
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
        steps(ctx, cell, rep, beside, &mut out)
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
    beside: Option<&mut dyn Observer>,
    out: &mut RepOutcome,
) -> Result<RepResult, StageError> {
    let binary = service_binary(ctx, cell)?;
    let mut confs = confine(cell)?;
    let session = start_service(ctx, out, cell, binary, &confs, rep)?;
    measure(ctx, out, cell, session, &mut confs, beside)
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

/// The load watched by the observers, the stop; what they measured.
fn measure(
    ctx: &Ctx,
    out: &mut RepOutcome,
    cell: &CellSpec,
    mut session: Session,
    confs: &mut Confinements,
    beside: Option<&mut dyn Observer>,
) -> Result<RepResult, StageError> {
    let rep = session.start.rep;
    let spec = cell.load_spec(session.start.port);
    let spec_file = ctx.tmp_dir.join(format!("{}-rep{rep}.spec.json", cell.key));
    let tree = session.proc.tree();
    let mut set = observers(
        ctx,
        cell,
        rep,
        &tree,
        (&confs.server, &confs.loadgen),
        &spec,
        &spec_file,
        beside,
    );
    let load = set.watch(|started| {
        load::run_observed(
            &ctx.matrix.loadgen,
            &spec,
            &spec_file,
            &confs.loadgen,
            started,
        )
    });
    let died = session.proc.try_wait();
    if let (Ok(run), None) = (&load, died) {
        set.load_complete(&tree.members(), &run.report);
    }
    let stopped = session.stop();
    let died = died.or(stopped.died);
    out.starts.push(stopped.start);
    confs.server.release();

    let tail = stopped.stderr_tail;
    let run = load.map_err(|e| StageError::at(Stage::Load, e).with_tail(tail.clone()))?;
    if let Some(st) = died {
        return Err(StageError::at(
            Stage::Load,
            format!("service exited during the load with {st}"),
        )
        .with_tail(tail));
    }
    set.service_stopped(&out.told);
    let seen = set
        .finish(Some(&Window::of(&run.report)))
        .unwrap_or_default();
    Ok(seen.rep(rep, run, vec![]))
}

/// The repetition's observers: the service's own, the generator's /proc counts, `beside`
/// (a profiler), the syscall window after the load (unless the plan turned it off), the
/// open loop's floor check and, with `--count-instructions`, Valgrind's count after the stop.
#[allow(clippy::too_many_arguments)]
fn observers<'a, 'b: 'a>(
    ctx: &'a Ctx,
    cell: &'a CellSpec,
    rep: u32,
    tree: &crate::process::Tree,
    (server, loadgen): (&Confinement, &'a Confinement),
    spec: &loadgen::LoadSpec,
    spec_file: &'a Path,
    beside: Option<&'a mut (dyn Observer + 'b)>,
) -> Observers<'a> {
    // The profiler first, so it is stopped last: its stop (perf script, the flame graph)
    // takes seconds that no other member's window should hold.
    let mut set = Observers::new(Some(tree));
    if let Some(b) = beside {
        set = set.with(b);
    }
    set = set.with_service(server).with(observe::Generator::default());
    let here = count::exact::Here::new(&ctx.matrix.loadgen, spec_file, loadgen);
    set = set.with(observe::Syscalls::new(here, spec, ctx.syscalls_off));
    if let (Some(f), loadgen::LoadModel::Open { rate_per_s, .. }) = (ctx.machine_floor, &cell.load)
    {
        set = set.with(observe::FloorChecker::new(f, *rate_per_s));
    }
    if ctx.count_instructions && cell.counts_instructions() {
        if cell.external {
            set = set.with(observe::Instructions::not_for_command());
        } else if let Ok(binary) = service_binary(ctx, cell) {
            set = set.with(instructions(ctx, cell, rep, binary));
        }
    }
    set
}

/// Valgrind's count of the cell's service (`--count-instructions`, closed-loop keep-alive
/// cells at one connection).
fn instructions<'a>(
    ctx: &'a Ctx,
    cell: &'a CellSpec,
    rep: u32,
    binary: &'a Path,
) -> observe::Instructions<'a> {
    observe::Instructions::new(count::valgrind::Target {
        binary,
        service_args: &cell.service_args,
        path: &cell.path,
        headers: cell.header_pairs(),
        protocol: cell.protocol,
        io_driver: None,
        cpus: &cell.limits.server_cpus,
        scratch_dir: ctx.tmp_dir,
        keep: Some(count::valgrind::Keep {
            dir: ctx.cachegrind_dir,
            stem: format!("{}-rep{rep}", cell.key),
        }),
    })
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
