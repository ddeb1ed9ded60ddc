//! Drift: the reference cell re-run once at each drift point, and the record that sets
//! those re-runs against repetition 1 of the cell.

use super::RepRunner;
use crate::plan::Plan;
use crate::progress::Progress;
use crate::results::schema::{Drift, DriftPoint};
use crate::results::stats::pct_change;
use crate::results::store::Store;
use crate::sample::now_unix_us;

/// One re-run of the reference cell after `after_groups` matrix groups.
pub(super) fn point(
    plan: &Plan,
    after_groups: usize,
    runner: &mut dyn RepRunner,
    progress: &mut Progress,
) -> Option<DriftPoint> {
    let spec = plan.reference.as_ref()?;
    progress.begin(spec, 0);
    let o = runner.rep(spec, 0);
    let rerun = o.measured();
    let failure = o.failure.as_ref().map(ToString::to_string);
    progress.end(spec, 0, rerun, failure.as_deref());
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
pub(super) fn record(store: &Store, plan: &Plan, series: Vec<DriftPoint>) -> Option<Drift> {
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
