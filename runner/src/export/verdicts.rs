//! results.md's sections on what the run can tell apart: the calibration (per metric, the
//! spread of one repetition, the A/A interval and the minimum detectable effect), every
//! service against the baseline with its interval — "≈" where this machine can't tell them
//! apart — and, under adaptive repetitions, how many each cell took and why it stopped.
//! Each is written only when the run has it.

use std::fmt::Write as _;

use crate::results::calibration::{Calibration, CalibrationMetric};
use crate::results::difference::{INSTRUCTIONS_NOISE_PCT, NOISE_PCT, Verdict};
use crate::results::metric::Metric;
use crate::results::power::{ALPHA, POWER};
use crate::results::schema::ResultsFile;
use crate::results::verdict::{BaselineVerdict, MetricVerdict, ratio_ci};

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "–".into(), |v| format!("{v:.1} %"))
}

/// The calibration table: one row per cell and metric.
pub fn calibration(o: &mut String, res: &ResultsFile) {
    let Some(cal) = &res.calibration else {
        return;
    };
    let _ = writeln!(o, "## What this machine can tell apart (calibration)\n");
    let _ = writeln!(
        o,
        "`{}` ran as two identical arms A and B, interleaved A B A B with this run's windows and repetitions. Per metric: the spread of one repetition (CV of A / B), B against A paired on rounds (it should include 1×), and the **minimum detectable effect** — the smallest true difference a comparison at these settings detects with {:.0} % confidence and {:.0} % power: within this run (paired on rounds, as the verdicts below) and between two runs (`matrix compare`, independent samples). A difference smaller than the MDE may be real but cannot be shown here.\n",
        cal.service,
        (1.0 - ALPHA) * 100.0,
        POWER * 100.0
    );
    let _ = writeln!(
        o,
        "| cell | metric | n | CV A / B | B / A (95 % CI) | MDE in a run | MDE between runs | rounds for 10 % |"
    );
    let _ = writeln!(o, "|---|---|---:|---|---|---:|---:|---:|");
    for c in &cal.cells {
        let cell = format!("{}/{}/{}", c.scenario, c.level, c.profile);
        for m in &c.metrics {
            let _ = writeln!(o, "| {cell} | {} |", calibration_row(m).join(" | "));
        }
        for f in &c.failures {
            let _ = writeln!(o, "| {cell} | ✗ {f} | | | | | | |");
        }
    }
    let _ = writeln!(o);
    let misled: Vec<String> = misled(cal);
    if !misled.is_empty() {
        let _ = writeln!(
            o,
            "⚠ The A/A comparison itself gave a verdict on {}: at the 95 % level about one comparison in twenty does by chance; more means this machine was unsteady during the run.\n",
            misled.join(", ")
        );
    }
}

fn calibration_row(m: &CalibrationMetric) -> Vec<String> {
    vec![
        m.metric.label().to_string(),
        m.n.to_string(),
        format!("{} / {}", pct(m.cv_a_pct), pct(m.cv_b_pct)),
        m.aa.as_ref().map_or_else(|| "–".into(), ratio_ci)
            + if matches!(m.verdict, Verdict::Better | Verdict::Worse) {
                " ⚠"
            } else {
                ""
            },
        pct(m.mde_pct),
        pct(m.mde_between_runs_pct),
        m.reps_for_10_pct
            .map_or_else(|| "–".into(), |n| n.to_string()),
    ]
}

/// Metrics (with their cell) where A and B were called different.
pub fn misled(cal: &Calibration) -> Vec<String> {
    cal.cells
        .iter()
        .flat_map(|c| {
            c.metrics
                .iter()
                .filter(|m| matches!(m.verdict, Verdict::Better | Verdict::Worse))
                .map(move |m| format!("{} at {}/{}", m.metric.label(), c.scenario, c.level))
        })
        .collect()
}

/// Metrics shown against the baseline: peak RSS is a point per cell and rarely moves.
const SHOWN: [Metric; 8] = [
    Metric::RequestsPerS,
    Metric::CpuUsPerRequest,
    Metric::SyscallsPerRequest,
    Metric::InstructionsPerRequest,
    Metric::LatencyP50Us,
    Metric::LatencyP99Us,
    Metric::StartupUs,
    Metric::IdleRssBytes,
];

/// The instructions' own threshold, said only in runs that judged instructions.
fn instructions_threshold(res: &ResultsFile) -> String {
    let judged = res
        .verdicts
        .iter()
        .any(|v| v.metric(Metric::InstructionsPerRequest).is_some());
    if judged {
        format!(
            "; {INSTRUCTIONS_NOISE_PCT} % for instructions/request, whose counts repeat to about 0.1 %"
        )
    } else {
        String::new()
    }
}

/// The calibration cell a table's MDEs are borrowed from ("r20000", or "ping · c64 ·
/// pinned" from another scenario or profile) where the calibration has no cell of this
/// scenario/level/profile and `Calibration::cell_for` stands in with another: a reader must
/// not take another level's noise for this one's. `None` where it was calibrated here.
fn borrowed_from(res: &ResultsFile, key: (&str, &str, &str)) -> Option<String> {
    let cal = res.calibration.as_ref()?;
    let (scenario, level, profile) = key;
    let open = res.cells.iter().any(|c| {
        (c.scenario.as_str(), c.level.as_str(), c.profile.as_str()) == key
            && c.offered_rate_per_s.is_some()
    });
    let c = cal.cell_for(scenario, level, profile, open)?;
    if (c.scenario.as_str(), c.level.as_str(), c.profile.as_str()) == key {
        None
    } else if c.scenario == scenario && c.profile == profile {
        Some(c.level.clone())
    } else {
        Some(format!("{} · {} · {}", c.scenario, c.level, c.profile))
    }
}

/// One table per scenario/level/profile: every service's ratio to the baseline.
pub fn against_baseline(o: &mut String, res: &ResultsFile) {
    let (Some(base), false) = (&res.baseline, res.verdicts.is_empty()) else {
        return;
    };
    let _ = writeln!(o, "## Against the baseline: `{base}`\n");
    let _ = writeln!(
        o,
        "Each service as a ratio to `{base}` in the same cell (service / baseline), with the 95 % interval of the ratio — {}. **Bold** = a difference this run can show (interval excludes 1× and the change exceeds {NOISE_PCT} %{}); ≈ = **indistinguishable here**: the interval includes 1× (or the change is under {NOISE_PCT} %), so the two are not ranked. The MDE in each header is the smallest difference these settings detect (95 % confidence, 80 % power), from the calibration{}.\n",
        crate::results::verdict::pairing_note(&res.verdicts),
        instructions_threshold(res),
        if res.calibration.is_some() {
            ""
        } else {
            " — this run had none, so it is unknown"
        }
    );
    let mut keys: Vec<(&str, &str, &str)> = Vec::new();
    for v in &res.verdicts {
        let k = (v.scenario.as_str(), v.level.as_str(), v.profile.as_str());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (scenario, level, profile) in keys {
        let rows: Vec<&BaselineVerdict> = res
            .verdicts
            .iter()
            .filter(|v| {
                (v.scenario.as_str(), v.level.as_str(), v.profile.as_str())
                    == (scenario, level, profile)
            })
            .collect();
        let shown: Vec<Metric> = SHOWN
            .iter()
            .copied()
            .filter(|&m| rows.iter().any(|r| r.metric(m).is_some()))
            .collect();
        let from = borrowed_from(res, (scenario, level, profile));
        let header: Vec<String> = shown
            .iter()
            .map(|&m| {
                let mde = rows
                    .iter()
                    .filter_map(|r| r.metric(m)?.mde_pct)
                    .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
                match mde {
                    Some(x) => format!(
                        "{} (MDE {x:.0} %{})",
                        m.label(),
                        if from.is_some() { ", borrowed" } else { "" }
                    ),
                    None => m.label().to_string(),
                }
            })
            .collect();
        let _ = writeln!(o, "### {scenario} · {level} · profile {profile}\n");
        if let Some(from) = &from {
            let _ = writeln!(
                o,
                "This cell had no calibration of its own: the MDEs in the header are borrowed from {from}'s.\n"
            );
        }
        let _ = writeln!(o, "| service | {} |", header.join(" | "));
        let _ = writeln!(o, "|---|{}", "---|".repeat(shown.len()));
        for r in rows {
            let cols: Vec<String> = shown
                .iter()
                .map(|&m| r.metric(m).map_or_else(|| "–".into(), MetricVerdict::brief))
                .collect();
            let _ = writeln!(o, "| {} | {} |", r.service, cols.join(" | "));
        }
        let _ = writeln!(o);
    }
}

/// Under adaptive repetitions: how many each cell took, and the cells that hit the cap.
pub fn repetitions(o: &mut String, res: &ResultsFile) {
    let stopped: Vec<_> = res
        .cells
        .iter()
        .filter_map(|c| Some((c, c.stopped.as_ref()?)))
        .collect();
    let Some((_, first)) = stopped.first() else {
        return;
    };
    let capped: Vec<_> = stopped
        .iter()
        .filter(|(_, s)| s.reason == crate::results::adaptive::StopReason::Cap)
        .collect();
    let reps: Vec<f64> = stopped
        .iter()
        .map(|(_, s)| f64::from(s.repetitions))
        .collect();
    let _ = writeln!(o, "## Repetitions (adaptive)\n");
    let _ = writeln!(
        o,
        "Each cell repeated until the 95 % CI half-width of its primary metric (closed loop: req/s; open loop: CPU/request) was at most {} %, or its cap. Repetitions per cell: median {}, {}–{}; {} of {} cells reached the target.\n",
        first.target_ci_pct,
        crate::results::stats::median(&reps).unwrap_or(0.0),
        reps.iter().copied().fold(f64::INFINITY, f64::min),
        reps.iter().copied().fold(0.0, f64::max),
        stopped.len() - capped.len(),
        stopped.len()
    );
    for (c, s) in &capped {
        let _ = writeln!(o, "- `{}`: {}", c.key, s.describe());
    }
    if !capped.is_empty() {
        let _ = writeln!(o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::schema::{Calibration, CalibrationCell, CellSummary};

    fn cal_cell(scenario: &str, level: &str, open_loop: bool) -> CalibrationCell {
        CalibrationCell {
            scenario: scenario.into(),
            level: level.into(),
            profile: "pinned".into(),
            open_loop,
            pairs: 5,
            metrics: vec![],
            failures: vec![],
        }
    }

    #[test]
    fn a_borrowed_mde_names_the_cell_it_comes_from() {
        let mut r: ResultsFile = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "run_id": "r", "status": "completed", "cells": [],
            "drift": null, "failed_cells": 0, "suspect_cells": 0
        }))
        .unwrap();
        r.cells = ["r5000", "r20000"]
            .map(|l| CellSummary {
                scenario: "ping-open".into(),
                level: l.into(),
                profile: "pinned".into(),
                offered_rate_per_s: Some(5000.0),
                ..CellSummary::default()
            })
            .into();
        assert_eq!(
            borrowed_from(&r, ("ping-open", "r5000", "pinned")),
            None,
            "no calibration"
        );
        r.calibration = Some(Calibration {
            service: "s".into(),
            cells: vec![
                cal_cell("ping", "c64", false),
                cal_cell("ping-open", "r20000", true),
            ],
        });
        assert_eq!(borrowed_from(&r, ("ping-open", "r20000", "pinned")), None);
        assert_eq!(
            borrowed_from(&r, ("ping-open", "r5000", "pinned")).as_deref(),
            Some("r20000")
        );
        assert_eq!(
            borrowed_from(&r, ("json", "c64", "pinned")).as_deref(),
            Some("ping · c64 · pinned")
        );
    }
}
