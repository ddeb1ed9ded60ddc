//! `matrix run` (and `matrix calibrate`), wiring: the start of the run (`start`: a new one,
//! or the one to resume) → the hosts → the schedule (`schedule`, over the repetition runner
//! `rep`) → the end of the run (`finish`). Cell files are written after every repetition,
//! so an interruption or crash loses at most the repetition in flight.

use std::process::ExitCode;

use crate::cell::Ctx;
use crate::cli::RunArgs;
use crate::flamegraph::Profiler;
use crate::host::Fleet;
use crate::interrupt;
use crate::plan::Calibrate;
use crate::progress::Progress;
use crate::rep::authored::Authored;
use crate::rep::{Local, Replay};
use crate::results::schema::{RunRecord, RunStatus};
use crate::results::store::Store;
use crate::schedule::{self, RepRunner};

/// How the run ended, for the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    AllOk,
    SomeFailed,
    Interrupted,
}

impl RunEnd {
    /// 0 all cells ok, 1 some cell failed, 130 interrupted (README's exit status table).
    pub fn exit_code(self) -> ExitCode {
        match self {
            RunEnd::AllOk => ExitCode::SUCCESS,
            RunEnd::SomeFailed => ExitCode::from(1),
            RunEnd::Interrupted => ExitCode::from(130),
        }
    }
}

/// `matrix run`: the whole run, then its exit status.
pub fn cmd(args: &RunArgs) -> anyhow::Result<ExitCode> {
    run(args, Calibrate::AsConfigured).map(RunEnd::exit_code)
}

/// `matrix calibrate`: a run of the calibration alone.
pub fn calibrate(args: &RunArgs) -> anyhow::Result<ExitCode> {
    run(args, Calibrate::Only).map(RunEnd::exit_code)
}

pub fn run(args: &RunArgs, calibrate: Calibrate) -> anyhow::Result<RunEnd> {
    interrupt::install();
    crate::process::become_subreaper();
    crate::process::guard::start();
    let (store, mut run, m, plan) = match &args.resume {
        Some(dir) => crate::start::resume(dir)?,
        None => crate::start::new(args, calibrate)?,
    };
    run.status = RunStatus::Running;
    run.finished_unix_ms = None;
    // A replay starts nothing, on no host.
    let remote: Vec<_> = match args.fake_reps {
        Some(_) => vec![],
        None => plan.cells().collect(),
    };
    let (fleet, hosts) = Fleet::connect(&m, &remote, &mut |n| {
        if !args.quiet {
            eprintln!("{n}");
        }
    });
    if !hosts.is_empty() {
        run.hosts = hosts;
    }
    store.write_run(&run)?;
    let profiler = start_flamegraphs(args, &store, &mut run)?;
    let tmp = store.tmp_dir()?;
    // Owned copies: the repetitions borrow them while `run` is written at the end.
    let run_id = run.run_id.clone();
    let machine_floor = run
        .floors
        .as_ref()
        .and_then(|f| f.machine.as_ref())
        .and_then(|m| m.report.clone());
    let ctx = Ctx {
        matrix: &m,
        run_id: &run_id,
        tmp_dir: &tmp,
        cachegrind_dir: &store.dir.join("cachegrind"),
        machine_floor: machine_floor.as_ref(),
        fleet: (!fleet.endpoints.is_empty()).then_some(&fleet),
        count_instructions: args.select.count_instructions,
        syscalls_off: plan.syscalls_off,
    };
    let mut progress = Progress::new(plan.max_rep_count(), plan.estimate_s(), args.quiet);
    progress.note(&format!("run {} → {}", run.run_id, store.dir.display()));
    for w in &run.environment.provenance_warnings {
        progress.note(&format!("warning: {w}"));
    }
    if let Some(why) = profiler.as_ref().and_then(Profiler::unavailable) {
        progress.note(&format!("flame graphs: perf not available: {why}"));
    }
    let mut runner: Box<dyn RepRunner> = match &args.fake_reps {
        Some(file) if file.is_file() => Box::new(Authored::open(file)?),
        Some(dir) => Box::new(Replay::open(dir)?),
        None => Box::new(Local {
            ctx: &ctx,
            run_dir: &store.dir,
            profiler: profiler.as_ref(),
        }),
    };
    let out = schedule::run(
        &plan,
        &store,
        &run_id,
        profiler.is_some(),
        runner.as_mut(),
        &mut progress,
    )?;
    progress.finish();
    let _ = std::fs::remove_dir_all(&tmp);

    let status = if !out.completed || interrupt::requested() {
        RunStatus::Interrupted
    } else {
        RunStatus::Completed
    };
    let end = crate::finish::write_all(&store, &mut run, &plan, status, out.drift)?;
    print!(
        "{}",
        crate::export::summary::text(&end.results, Some(&run), &store.dir.join("results.md"))
    );
    let some_failed = end.some_failed;
    Ok(if status == RunStatus::Interrupted {
        RunEnd::Interrupted
    } else if some_failed {
        RunEnd::SomeFailed
    } else {
        RunEnd::AllOk
    })
}

/// `--flamegraph`: probes perf once and records the outcome in run.json (also on resume).
fn start_flamegraphs(
    args: &RunArgs,
    store: &Store,
    run: &mut RunRecord,
) -> anyhow::Result<Option<Profiler>> {
    if !args.flamegraph && run.flamegraph.is_none() {
        return Ok(None);
    }
    let p = Profiler::probe(args.flamegraph_hz, !args.flamegraph_no_inline);
    run.flamegraph = Some(p.record());
    store.write_run(run)?;
    Ok(Some(p))
}
