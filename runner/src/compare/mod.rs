//! Comparing two result sets: pairs their cells and says, per metric, whether the change is
//! real (95 % Welch interval of the difference excludes zero and exceeds a noise threshold)
//! or noise — refusing when the runs are not comparable. `cmd::compare` is the subcommand.

pub mod comparable;
pub mod export;
pub mod matching;
pub mod mde;
pub mod method;
pub mod model;

use self::model::{CellComparison, Comparison, MetricComparison, Side};
use crate::results::difference::{self, Verdict};
use crate::results::metric::{self, Metric};
use crate::results::schema::{CellStatus, CellSummary};
use crate::results::set::ResultSet;

pub const METHOD: &str = "Welch's t on the per-repetition values (per-start for startup and idle RSS): \
95 % CI of the difference of means, relative to the old mean";

/// Said when instruction counts are compared between runs that differ in their machine.
pub const INSTRUCTIONS_ACROSS_MACHINES: &str = "instructions/request is compared across these runs' differences: user-space instruction counts of the same binaries are comparable between machines of one architecture (times and kernel counts are not); check both runs used the same build stamp";

#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub noise_pct: f64,
    pub force: bool,
}

/// The refusal carries every reason, so the user sees all of them at once.
#[derive(Debug, thiserror::Error)]
#[error(
    "refusing to compare: the runs are not comparable:\n  - {}\n(pass --force to compare anyway; the output will say so)",
    .0.join("\n  - ")
)]
pub struct NotComparable(pub Vec<String>);

pub fn compare(
    old: &ResultSet,
    new: &ResultSet,
    opt: Options,
) -> Result<Comparison, NotComparable> {
    let run_diffs = comparable::run_differences(old, new);
    if !run_diffs.is_empty() && !opt.force {
        return Err(NotComparable(run_diffs));
    }
    let (old_specs, new_specs) = (comparable::specs(old), comparable::specs(new));
    let m = matching::match_cells(&old.results.cells, &new.results.cells);
    let mut any_cell_diff = false;
    let cells: Vec<CellComparison> = m
        .pairs
        .iter()
        .map(|(o, n)| {
            let mut not_comparable =
                comparable::cell_differences(old_specs.get(&o.key), new_specs.get(&n.key));
            not_comparable.extend(comparable::io_differences(
                (o, old.cells.get(&o.key)),
                (n, new.cells.get(&n.key)),
            ));
            any_cell_diff |= !not_comparable.is_empty();
            let withhold = !not_comparable.is_empty() && !opt.force;
            CellComparison {
                id: matching::CellId::of(n),
                key: n.key.clone(),
                suspect_old: o.suspect,
                suspect_new: n.suspect,
                suspect_reasons: suspect_reasons(o, n),
                failures: failures(o, n),
                new_incomplete: incomplete(n),
                open_loop: n.offered_rate_per_s.is_some(),
                not_comparable,
                functions: crate::results::attribution::diff(o, n),
                metrics: metrics_of((old, o), (new, n))
                    .into_iter()
                    .map(|mt| {
                        let mut mc =
                            compare_metric(mt, (old, o), (new, n), withhold, opt.noise_pct);
                        let cals = [&old.results.calibration, &new.results.calibration];
                        (mc.mde_pct, mc.mde_source) = mde::of(&mc, n, cals.map(Option::as_ref));
                        mc
                    })
                    .collect(),
            }
        })
        .collect();
    let mut warnings = comparable::run_warnings(old, new);
    warnings.extend(mde::drift_warnings(&cells, old, new));
    if model::instructions_compared(&cells) && !run_diffs.is_empty() {
        warnings.push(INSTRUCTIONS_ACROSS_MACHINES.to_owned());
    }
    Ok(Comparison {
        old: side(old),
        new: side(new),
        method: METHOD.into(),
        noise_pct: opt.noise_pct,
        forced: opt.force && (!run_diffs.is_empty() || any_cell_diff),
        incomparable: run_diffs,
        only_old: m.only_old,
        only_new: m.only_new,
        cells,
        warnings,
    })
}

/// What a matched cell is compared on: every load metric, a churn cell's memory, and the
/// counted metrics where either side counted them (so older runs read as before).
fn metrics_of(
    (old, o): (&ResultSet, &CellSummary),
    (new, n): (&ResultSet, &CellSummary),
) -> Vec<Metric> {
    let churn = o.churn.is_some() || n.churn.is_some();
    // From the cell file where there is one, else from results.json's summary.
    let counted = |set: &ResultSet, s: &CellSummary, mt: Metric| match set.cells.get(&s.key) {
        Some(c) => !metric::by_rep(c, mt).is_empty(),
        None => metric::from_summary(s, mt).is_some(),
    };
    metric::ALL
        .into_iter()
        .chain(metric::CHURN.into_iter().filter(|_| churn))
        .chain(metric::counted().filter(|&mt| counted(old, o, mt) || counted(new, n, mt)))
        .collect()
}

/// One metric of one matched cell: both sides' values, the difference and the verdict.
fn compare_metric(
    mt: Metric,
    (old, o): (&ResultSet, &CellSummary),
    (new, n): (&ResultSet, &CellSummary),
    withhold: bool,
    noise_pct: f64,
) -> MetricComparison {
    let so = metric::values(o, old.cells.get(&o.key), mt);
    let sn = metric::values(n, new.cells.get(&n.key), mt);
    let difference = match (&so, &sn) {
        (Some(a), Some(b)) => difference::difference(a, b),
        _ => None,
    };
    let verdict = match &difference {
        None => Verdict::Missing,
        Some(_) if withhold => Verdict::NotComparable,
        Some(d) => difference::verdict(mt, d, noise_pct),
    };
    MetricComparison {
        metric: mt,
        unit: mt.unit(),
        old: so,
        new: sn,
        difference,
        verdict,
        mde_pct: None,
        mde_source: None,
    }
}

/// Both sides' suspect reasons, each prefixed with its side.
fn suspect_reasons(o: &CellSummary, n: &CellSummary) -> Vec<String> {
    let mut r: Vec<String> = o
        .suspect_reasons
        .iter()
        .map(|r| format!("old: {r}"))
        .collect();
    r.extend(n.suspect_reasons.iter().map(|r| format!("new: {r}")));
    r
}

fn incomplete(c: &CellSummary) -> bool {
    !matches!(c.status, None | Some(CellStatus::Ok)) || c.failure.is_some()
}

/// Sides that did not complete: "old: failed (startup: …)".
fn failures(o: &CellSummary, n: &CellSummary) -> Vec<String> {
    [("old", o), ("new", n)]
        .iter()
        .filter(|(_, c)| incomplete(c))
        .map(|(side, c)| {
            format!(
                "{side}: {:?}{}",
                c.status.unwrap_or(CellStatus::Failed),
                c.failure
                    .as_ref()
                    .map_or_else(String::new, |f| format!(" ({f})"))
            )
            .to_lowercase()
        })
        .collect()
}

fn side(s: &ResultSet) -> Side {
    let env = s.run.as_ref().map(|r| &r.environment);
    Side {
        label: s.label.clone(),
        run_id: s.results.run_id.clone(),
        cpu_model: env.map(|e| e.hardware.cpu_model.clone()),
        logical_cpus: env.map(|e| e.hardware.logical_cpus),
        loadgen_version: env.and_then(|e| e.loadgen_version.clone()),
        git_commit: env.and_then(|e| e.source.git_commit.clone()),
    }
}
