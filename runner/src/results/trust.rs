//! Whether the machine was quiet enough for a run's times: one verdict, the line the terminal
//! summary, results.md and the run's page each open with. Times (req/s, CPU, latency) depend
//! on it; counts per request (syscalls, instructions) do not, and the line says so.

use super::schema::{CellStatus, ResultsFile, RunRecord};

/// The reference cell's req/s moving more than this over the run (its drift re-runs against
/// its first repetition) calls the machine busy: beyond the 5 % noise threshold the verdicts
/// use, twice over.
pub const DRIFT_PCT: f64 = 10.0;
/// The machine's timer waking an open-loop sender this late at p99, at the run's start, calls
/// it busy: the generator's own send-lag limit (loadgen's saturation verdict) is 200 µs.
pub const TIMER_P99_US: f64 = 200.0;

/// "Machine: busy — …" or "Machine: quiet enough — …": the verdict and what it rests on.
pub fn line(res: &ResultsFile, run: Option<&RunRecord>) -> String {
    let mut busy = Vec::new();
    let mut fine = Vec::new();
    // Whether the machine itself was looked at (drift re-runs, the timer floor), not only
    // the cells' own suspect rules.
    let mut checked = false;
    match res.drift.as_ref().and_then(|d| {
        d.max_requests_per_s_drift_pct
            .or(d.requests_per_s_drift_pct)
            .map(|p| (d, p))
    }) {
        Some((d, p)) => {
            checked = true;
            let s = format!(
                "the drift reference cell's req/s moved up to {:.0} % over the run ({})",
                p.abs(),
                d.key
            );
            if p.abs() > DRIFT_PCT {
                busy.push(s)
            } else {
                fine.push(s)
            }
        }
        None => fine.push("no drift re-runs (req/s over the run not checked)".into()),
    }
    let timer = run
        .and_then(|r| r.floors.as_ref())
        .and_then(|f| f.machine.as_ref())
        .and_then(|m| m.report.as_ref())
        .and_then(|f| {
            f.timer
                .iter()
                .filter_map(|t| Some((t.rate_per_s, t.lateness.as_ref()?.p99_us)))
                .max_by(|a, b| a.1.total_cmp(&b.1))
        });
    if let Some((rate, p99)) = timer {
        checked = true;
        let s = format!("timer wake-ups late by {p99:.0} µs at p99 ({rate:.0}/s)");
        if p99 > TIMER_P99_US {
            busy.push(s)
        } else {
            fine.push(s)
        }
    }
    let measured: Vec<_> = (res.cells.iter())
        .filter(|c| c.status == Some(CellStatus::Ok) && c.churn.is_none())
        .collect();
    let suspect = measured.iter().filter(|c| c.suspect).count();
    if !measured.is_empty() {
        let s = format!("{suspect} of {} cells suspect", measured.len());
        if 2 * suspect > measured.len() {
            busy.push(s)
        } else {
            fine.push(s)
        }
    }
    if busy.is_empty() && !checked {
        format!(
            "Machine: not judged — {} and no timer floor.",
            fine.join("; ")
        )
    } else if busy.is_empty() {
        format!("Machine: quiet enough for its times — {}.", fine.join("; "))
    } else {
        format!(
            "Machine: busy — its times may mislead: {}. Counts per request (syscalls, instructions) do not depend on it.",
            busy.join("; ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::schema::{CellSummary, Drift};

    fn results(suspect: &[bool], drift_pct: Option<f64>) -> ResultsFile {
        let cells = suspect
            .iter()
            .map(|&s| CellSummary {
                status: Some(CellStatus::Ok),
                suspect: s,
                ..CellSummary::default()
            })
            .collect();
        let mut r: ResultsFile = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "run_id": "r", "status": "completed", "cells": [],
            "drift": null, "failed_cells": 0, "suspect_cells": 0
        }))
        .unwrap();
        r.cells = cells;
        r.drift = drift_pct.map(|p| Drift {
            key: "ref".into(),
            first_requests_per_s: None,
            rerun_requests_per_s: None,
            requests_per_s_drift_pct: Some(p),
            first_cpu_us_per_request: None,
            rerun_cpu_us_per_request: None,
            cpu_us_per_request_drift_pct: None,
            note: String::new(),
            series: vec![],
            max_requests_per_s_drift_pct: None,
            max_cpu_us_per_request_drift_pct: None,
        });
        r
    }

    #[test]
    fn drift_or_most_cells_suspect_call_the_machine_busy() {
        let quiet = line(&results(&[false, false, true], Some(-4.0)), None);
        assert!(quiet.starts_with("Machine: quiet enough"), "{quiet}");
        assert!(
            quiet.contains("up to 4 %") && quiet.contains("1 of 3 cells suspect"),
            "{quiet}"
        );
        let drifted = line(&results(&[false, false, false], Some(-25.0)), None);
        assert!(
            drifted.starts_with("Machine: busy") && drifted.contains("up to 25 %"),
            "{drifted}"
        );
        assert!(drifted.contains("Counts per request"), "{drifted}");
        let suspect = line(&results(&[true, true, false], Some(2.0)), None);
        assert!(
            suspect.starts_with("Machine: busy") && suspect.contains("2 of 3 cells suspect"),
            "{suspect}"
        );
        let unchecked = line(&results(&[false], None), None);
        assert!(
            unchecked.starts_with("Machine: not judged") && unchecked.contains("not checked"),
            "{unchecked}"
        );
    }
}
