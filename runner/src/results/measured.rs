//! Whether a finished repetition measured anything: a window in which no response
//! completed, or a generator that exited 1 (it never established a connection), is not a
//! measurement of the service. Such a repetition fails its cell with the reason instead of
//! entering summaries, verdicts and `compare` as 0 req/s with 0 µs latency.
//!
//! One rule for every way a repetition is produced (one machine, several generator hosts,
//! the profiled repetition), so callers check the repetition here rather than each path
//! deciding for itself.

use loadgen::Report;

use super::schema::RepResult;

/// Responses that completed inside the report's window (ok, non-2xx and mismatched bodies or
/// statuses all count: the service answered).
pub fn completed_responses(r: &Report) -> u64 {
    r.counts.ok + r.counts.non_2xx + r.counts.errors.status_mismatch + r.counts.errors.body_mismatch
}

/// Why `report` (from a generator that exited with `exit_code`) is no measurement, if it
/// is not one.
pub fn report_problem(host: Option<&str>, r: &Report, exit_code: Option<i32>) -> Option<String> {
    let who = host.map_or_else(String::new, |h| format!("host {h}: "));
    let c = &r.connections;
    if exit_code.is_some_and(|code| code != 0) || c.established == 0 {
        return Some(format!(
            "{who}loadgen exited with {}: no connection was established \
             ({} requested, {} failed)",
            exit_code.map_or_else(|| "no code".to_string(), |code| code.to_string()),
            c.requested,
            c.failed
        ));
    }
    if completed_responses(r) == 0 {
        return Some(format!(
            "{who}no request completed in the window ({} ms; {} sent, {} in flight at its end)",
            (r.window_s * 1000.0).round(),
            r.counts.sent,
            r.counts.in_flight_at_end
        ));
    }
    None
}

/// Why the repetition is no measurement (every generator's report is checked, then the
/// merged one), or None when it is one.
pub fn problem(rep: &RepResult) -> Option<String> {
    let per_host: Vec<String> = rep
        .generators
        .iter()
        .filter_map(|g| report_problem(Some(&g.host), &g.report, g.loadgen_exit_code))
        .collect();
    if !per_host.is_empty() {
        return Some(per_host.join("; "));
    }
    let exit = if rep.generators.is_empty() {
        rep.loadgen_exit_code
    } else {
        // Each generator's code was checked above; the merge has no exit code of its own.
        Some(0)
    };
    report_problem(None, &rep.report, exit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 4-connection window in which `established` connected and `ok` responses completed.
    fn report(established: u64, ok: u64) -> Report {
        use crate::results::suspect::tests::{report, spec};
        use loadgen::LoadModel;
        let mut r = report(
            &spec(LoadModel::Closed {
                connections: 4,
                pipeline: 1,
            }),
            ok as f64,
            100.0,
        );
        r.ok_per_s = r.requests_per_s;
        r.counts.ok = ok;
        r.counts.sent = ok;
        r.connections.requested = 4;
        r.connections.established = established;
        r.connections.failed = 4 - established;
        r
    }

    #[test]
    fn a_window_without_a_completed_response_is_no_measurement() {
        let p = report_problem(None, &report(4, 0), Some(0)).unwrap();
        assert!(p.contains("no request completed in the window"), "{p}");
        assert_eq!(report_problem(None, &report(4, 1), Some(0)), None);
    }

    #[test]
    fn a_generator_that_exited_1_or_never_connected_is_no_measurement() {
        let p = report_problem(Some("gen"), &report(0, 0), Some(1)).unwrap();
        assert!(p.starts_with("host gen: loadgen exited with 1"), "{p}");
        assert!(report_problem(None, &report(4, 9), Some(1)).is_some());
        assert!(report_problem(None, &report(0, 9), Some(0)).is_some());
    }
}
