//! `matrix run` (and `matrix calibrate`): plan → environment record → calibration groups →
//! groups of cells with interleaved repetitions, the drift reference re-run at points
//! through them → aggregate exports. Cell files are written after every repetition, so an
//! interruption or crash loses at most the repetition in flight.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use sha2::{Digest, Sha256};

use crate::binaries::{display_path, exe_dir};
use crate::cell::{self, Ctx};
use crate::cli::RunArgs;
use crate::config::{self, Matrix};
use crate::export;
use crate::flamegraph::Profiler;
use crate::floor;
use crate::host::Fleet;
use crate::interrupt;
use crate::plan::{self, Calibrate, Options, Plan};
use crate::progress::Progress;
use crate::results::group::runtimes_by_service;
use crate::results::schema::{
    CellResult, CellSpec, CellStatus, Drift, DriftPoint, Floors, RunRecord, RunStatus,
    SCHEMA_VERSION,
};
use crate::results::stats::pct_change;
use crate::results::store::{Store, finished};
use crate::results::summary::summarize_cell;
use crate::results::{adaptive, calibration, verdict};
use crate::sample::now_unix_us;

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

/// UTC timestamp for run ids: 2026-11-30T13-05-00Z.
pub fn utc_stamp(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let secs = unix_s % 86_400;
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}-{:02}-{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn binaries(m: &Matrix) -> BTreeMap<String, String> {
    let mut b: BTreeMap<String, String> = m
        .services
        .iter()
        .map(|s| (s.name.clone(), display_path(&s.binary)))
        .collect();
    b.insert("loadgen".into(), display_path(&m.loadgen));
    if let Ok(me) = std::env::current_exe() {
        b.insert("matrix".into(), display_path(&me));
    }
    b
}

fn start_run(args: &RunArgs, m: &Matrix, plan: &Plan) -> anyhow::Result<(Store, RunRecord)> {
    let env = crate::env::collect(&args.select.config, &m.loadgen, binaries(m));
    let now_ms = now_unix_us() / 1000;
    let short = env
        .source
        .git_commit
        .as_deref()
        .map_or("nogit".to_string(), |c| c[..c.len().min(7)].to_string());
    let (store, run_id) =
        Store::create_new(&args.out, &format!("{}-{short}", utc_stamp(now_ms / 1000)))?;
    let run = RunRecord {
        schema_version: SCHEMA_VERSION,
        run_id,
        started_unix_ms: now_ms,
        finished_unix_ms: None,
        status: RunStatus::Running,
        command_line: std::env::args().collect(),
        quick: args.select.quick,
        target_ci_pct: args.select.target_ci,
        calibration_only: plan.groups.is_empty(),
        only: args.select.only.clone(),
        config_path: args.select.config.display().to_string(),
        config_toml: m.text.clone(),
        config_sha256: format!("{:x}", Sha256::digest(m.text.as_bytes())),
        plan: plan.all_cells().cloned().collect(),
        estimated_duration_s: plan.estimate_s(),
        environment: env,
        floors: Some(Floors {
            startup: floor::startup(exe_dir().as_deref(), plan.cells().next().map(|c| &c.limits)),
            machine: Some(floor::machine(
                &m.loadgen,
                &plan.cells().collect::<Vec<_>>(),
            )),
        }),
        flamegraph: None,
        hosts: vec![],
    };
    store.write_run(&run)?;
    // The matrix file once more as a plain file, for `diff` and re-runs.
    store.write_file("matrix.toml", m.text.as_bytes())?;
    Ok((store, run))
}

/// Re-validates the matrix recorded in an interrupted run, reopens its directory and
/// expands the same plan again.
fn resume_run(dir: &Path) -> anyhow::Result<(Store, RunRecord, Matrix, Plan)> {
    let store = Store::open(dir)?;
    let run = store.read_run()?;
    let path = PathBuf::from(&run.config_path);
    let m = config::validate::parse(&path, &run.config_toml, exe_dir().as_deref())?;
    let opts = Options {
        quick: run.quick,
        only: run.only.clone(),
        target_ci_pct: run.target_ci_pct,
        calibration: if run.calibration_only {
            Calibrate::Only
        } else {
            Calibrate::AsConfigured
        },
    };
    let plan = plan::expand(&m, &opts)?;
    Ok((store, run, m, plan))
}

pub fn run(args: &RunArgs, calibrate: Calibrate) -> anyhow::Result<RunEnd> {
    interrupt::install();
    crate::process::become_subreaper();
    let (store, mut run, m, plan) = match &args.resume {
        Some(dir) => resume_run(dir)?,
        None => {
            let m = config::load(&args.select.config, exe_dir().as_deref())?;
            let opts = Options {
                calibration: calibrate,
                ..args.select.plan_options()
            };
            let plan = plan::expand(&m, &opts)?;
            let (store, run) = start_run(args, &m, &plan)?;
            (store, run, m, plan)
        }
    };
    run.status = RunStatus::Running;
    run.finished_unix_ms = None;
    let (fleet, hosts) = Fleet::connect(&m, &plan.cells().collect::<Vec<_>>(), &mut |n| {
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
    let ctx = Ctx {
        matrix: &m,
        run_id: &run.run_id,
        tmp_dir: &tmp,
        machine_floor: run
            .floors
            .as_ref()
            .and_then(|f| f.machine.as_ref())
            .and_then(|m| m.report.as_ref()),
        fleet: (!fleet.endpoints.is_empty()).then_some(&fleet),
    };
    let mut progress = Progress::new(plan.max_rep_count(), plan.estimate_s(), args.quiet);
    progress.note(&format!("run {} → {}", run.run_id, store.dir.display()));
    for w in &run.environment.provenance_warnings {
        progress.note(&format!("warning: {w}"));
    }
    if let Some(why) = profiler.as_ref().and_then(Profiler::unavailable) {
        progress.note(&format!("flame graphs: perf not available: {why}"));
    }
    let mut series = Vec::new();
    let drift_after = plan.drift_after();
    let mut completed = true;
    for group in &plan.calibration {
        completed = run_group(&ctx, &store, group, &mut progress, None)?;
        if !completed {
            break;
        }
    }
    for (i, group) in plan.groups.iter().enumerate() {
        if !completed || !run_group(&ctx, &store, group, &mut progress, profiler.as_ref())? {
            completed = false;
            break;
        }
        if drift_after.contains(&(i + 1)) {
            series.extend(drift_point(&ctx, &plan, i + 1, &mut progress));
        }
    }
    // Whatever was in flight when interrupted is already written with its status.
    let interrupted = !completed || interrupt::requested();
    let drift = drift(&store, &plan, series);
    progress.finish();
    let _ = std::fs::remove_dir_all(&tmp);

    let status = if interrupted || interrupt::requested() {
        RunStatus::Interrupted
    } else {
        RunStatus::Completed
    };
    let end = export_all(&store, &mut run, &plan, status, drift)?;
    Ok(if status == RunStatus::Interrupted {
        RunEnd::Interrupted
    } else {
        end
    })
}

/// One group's cells with their repetitions interleaved (rep 1 of each, then rep 2 …), so
/// drift of the machine hits every service alike. Cells finished by an earlier run are
/// skipped. Every cell file is rewritten after each repetition. False when interrupted.
fn run_group(
    ctx: &Ctx,
    store: &Store,
    group: &[CellSpec],
    progress: &mut Progress,
    profiler: Option<&Profiler>,
) -> anyhow::Result<bool> {
    let mut states: Vec<CellResult> = Vec::new();
    for c in group {
        match store.read_cell(&c.key).filter(finished) {
            Some(done) => {
                progress.skip(u64::from(c.max_repetitions()));
                // Its measured repetitions are kept; a missing profiled one still runs.
                if profiler.is_some() && done.status == CellStatus::Ok && done.flamegraph.is_none()
                {
                    states.push(done);
                }
            }
            None => states.push(CellResult::new(ctx.run_id, c)),
        }
    }
    // Adaptive cells may stop early: a round runs every cell still repeating.
    let reps = group
        .iter()
        .map(CellSpec::max_repetitions)
        .max()
        .unwrap_or(0);
    for rep in 1..=reps {
        for st in states.iter_mut() {
            if interrupt::requested() {
                return Ok(false);
            }
            if st.status != CellStatus::Partial || rep > st.cell.max_repetitions() {
                continue;
            }
            run_rep(ctx, st, rep, progress);
            store.write_cell(st)?;
            if !interrupt::sleep_ms(st.cell.cooldown_ms) {
                return Ok(false);
            }
        }
    }
    if let Some(p) = profiler {
        return profiled_reps(ctx, store, &mut states, progress, p);
    }
    Ok(true)
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
    let p = Profiler::probe(args.flamegraph_hz);
    run.flamegraph = Some(p.record());
    store.write_run(run)?;
    Ok(Some(p))
}

/// The extra, profiled repetition of every cell of the group that completed.
fn profiled_reps(
    ctx: &Ctx,
    store: &Store,
    states: &mut [CellResult],
    progress: &Progress,
    profiler: &Profiler,
) -> anyhow::Result<bool> {
    for st in states.iter_mut() {
        if interrupt::requested() {
            return Ok(false);
        }
        if st.status != CellStatus::Ok || st.flamegraph.is_some() {
            continue;
        }
        profiler.profiled_rep(ctx, st, &store.dir);
        if let Some(fg) = &st.flamegraph {
            progress.note(&format!(
                "{} profiled: {}",
                st.cell.key,
                crate::export::flamegraphs::outcome(fg)
            ));
        }
        store.write_cell(st)?;
        if !interrupt::sleep_ms(st.cell.cooldown_ms) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// One repetition of one cell, recorded on it with its progress line.
fn run_rep(ctx: &Ctx, st: &mut CellResult, rep: u32, progress: &mut Progress) {
    if st.cell.churn.is_some() {
        return super::churn::record_rep(ctx, st, rep, progress);
    }
    progress.begin(&st.cell, rep);
    let r = cell::run_rep(ctx, st, rep);
    let failure = st.failure.as_ref().map(ToString::to_string);
    progress.end(&st.cell, rep, r.as_ref(), failure.as_deref());
    if let Some(r) = r {
        st.reps.push(r);
        if let Some(stopped) = adaptive::enough(st) {
            st.status = CellStatus::Ok;
            progress.skip(u64::from(st.cell.max_repetitions().saturating_sub(rep)));
            st.stopped = stopped;
        }
    } else {
        progress.skip(u64::from(st.cell.max_repetitions().saturating_sub(rep)));
    }
    st.summary = summarize_cell(st);
}

/// One re-run of the reference cell after `after_groups` matrix groups.
fn drift_point(
    ctx: &Ctx,
    plan: &Plan,
    after_groups: usize,
    progress: &mut Progress,
) -> Option<DriftPoint> {
    let spec = plan.reference.as_ref()?;
    let mut scratch = CellResult::new(ctx.run_id, spec);
    progress.begin(spec, 0);
    let rerun = cell::run_rep(ctx, &mut scratch, 0);
    let failure = scratch.failure.as_ref().map(ToString::to_string);
    progress.end(spec, 0, rerun.as_ref(), failure.as_deref());
    Some(DriftPoint {
        after_groups,
        unix_ms: now_unix_us() / 1000,
        requests_per_s: rerun.as_ref().map(|r| r.report.requests_per_s),
        cpu_us_per_request: rerun.as_ref().and_then(|r| r.server.cpu_us_per_request),
        failure,
    })
}

/// The drift record: repetition 1 of the reference cell against every re-run, the last one
/// in the classic first-vs-rerun fields.
fn drift(store: &Store, plan: &Plan, series: Vec<DriftPoint>) -> Option<Drift> {
    let spec = plan.reference.as_ref()?;
    let last = series.last()?.clone();
    let first = store.read_cell(&spec.key)?;
    let first_rep = first.reps.iter().find(|r| r.rep == 1)?;
    let f_rps = first_rep.report.requests_per_s;
    let f_cpu = first_rep.server.cpu_us_per_request;
    let change = |base: Option<f64>, x: Option<f64>| pct_change(base?, x?);
    let max_change = |f: fn(&DriftPoint) -> Option<f64>, base: Option<f64>| {
        series
            .iter()
            .filter_map(|p| change(base, f(p)))
            .max_by(|a, b| a.abs().total_cmp(&b.abs()))
    };
    Some(Drift {
        key: spec.key.clone(),
        first_requests_per_s: Some(f_rps),
        rerun_requests_per_s: last.requests_per_s,
        requests_per_s_drift_pct: change(Some(f_rps), last.requests_per_s),
        first_cpu_us_per_request: f_cpu,
        rerun_cpu_us_per_request: last.cpu_us_per_request,
        cpu_us_per_request_drift_pct: change(f_cpu, last.cpu_us_per_request),
        note: match &last.failure {
            Some(f) => format!("last re-run failed: {f}"),
            None => format!(
                "{} single-repetition re-run(s) through the run vs repetition 1 of the cell",
                series.len()
            ),
        },
        max_requests_per_s_drift_pct: max_change(|p| p.requests_per_s, Some(f_rps)),
        max_cpu_us_per_request_drift_pct: max_change(|p| p.cpu_us_per_request, f_cpu),
        series,
    })
}

/// Reads every cell file of the plan back and writes results.json, results.md, run.json.
pub fn export_all(
    store: &Store,
    run: &mut RunRecord,
    plan: &Plan,
    status: RunStatus,
    drift: Option<Drift>,
) -> anyhow::Result<RunEnd> {
    let arms: Vec<CellResult> = plan
        .calibration
        .iter()
        .flatten()
        .filter_map(|c| store.read_cell(&c.key))
        .collect();
    let cells: Vec<CellResult> = plan
        .cells()
        .filter_map(|c| store.read_cell(&c.key))
        .collect();
    let runtimes = runtimes_by_service(&cells);
    let summaries = cells.iter().map(summarize_cell).collect();
    let mut results = export::json::results_file(&run.run_id, status, summaries, drift);
    results.calibration = calibration::from_cells(&arms);
    results.verdicts = verdict::against_baseline(
        &cells.iter().collect::<Vec<_>>(),
        &plan.baseline,
        results.calibration.as_ref(),
    );
    results.baseline = Some(plan.baseline.clone()).filter(|_| !results.verdicts.is_empty());
    store.write_file("results.json", &export::json::to_bytes(&results))?;
    run.status = status;
    run.finished_unix_ms = Some(now_unix_us() / 1000);
    store.write_run(run)?;
    let mut page = export::markdown::render(run, &results, &runtimes);
    page.extend_from_slice(
        export::flamegraphs::section(run.flamegraph.as_ref(), cells.iter()).as_bytes(),
    );
    page.extend_from_slice(export::hosts::section(&run.hosts, cells.iter()).as_bytes());
    store.write_file("results.md", &page)?;
    let failed = cells.iter().chain(&arms).any(|c| {
        matches!(
            c.status,
            CellStatus::Failed | CellStatus::Interrupted | CellStatus::Partial
        )
    });
    Ok(if failed {
        RunEnd::SomeFailed
    } else {
        RunEnd::AllOk
    })
}

#[cfg(test)]
mod tests {
    use super::utc_stamp;

    #[test]
    fn utc_stamp_known_dates() {
        assert_eq!(utc_stamp(0), "1970-01-01T00-00-00Z");
        // 2026-11-30T13:05:00Z
        assert_eq!(utc_stamp(1_796_043_900), "2026-11-30T13-05-00Z");
        assert_eq!(utc_stamp(951_782_400), "2000-02-29T00-00-00Z");
    }
}
