//! Verdicts within a run: every service against the baseline service at the same scenario,
//! level and profile — the ratio with its 95 % interval, paired on rounds when the run
//! interleaved the repetitions (it always does; cells of different lengths fall back to
//! Welch), the verdict, and the MDE this machine allows for that comparison, from the run's
//! calibration. "No change" here reads "indistinguishable here (MDE x %)".

use loadgen::LoadModel;

use super::calibration::Calibration;
use super::difference::{self, Difference, NOISE_PCT, Verdict};
use super::metric::{self, Metric, by_rep};
use super::power::Design;
pub use super::schema::{BaselineVerdict, MetricVerdict};
use super::schema::{CellResult, CellStatus};

impl BaselineVerdict {
    pub fn metric(&self, m: Metric) -> Option<&MetricVerdict> {
        self.metrics.iter().find(|x| x.metric == m)
    }
}

/// "+0.32 % [+0.31, +0.34]": a counted change as a percentage to two decimals (a ratio to two
/// decimals, 1.00×, hides every change under 0.5 %, and counts resolve far less).
pub fn pct_ci(d: &Difference) -> String {
    match (d.ci95_low_pct, d.ci95_high_pct) {
        (Some(lo), Some(hi)) => format!("{:+.2} % [{lo:+.2}, {hi:+.2}]", d.change_pct),
        _ => format!("{:+.2} % (no CI)", d.change_pct),
    }
}

impl MetricVerdict {
    /// A counted metric whose change is under the verdict's threshold yet real: its interval
    /// excludes 0 and it exceeds the run's A/A MDE. Then its threshold, for the words.
    fn real_under_threshold(&self) -> Option<f64> {
        let d = self.difference.as_ref()?;
        let (lo, hi) = (d.ci95_low_pct?, d.ci95_high_pct?);
        let counted = self.metric.unit() == super::units::Unit::Count;
        (counted
            && self.verdict == Verdict::NoChange
            && (lo > 0.0 || hi < 0.0)
            && self.mde_pct.is_some_and(|m| d.change_pct.abs() > m))
        .then(|| difference::noise_pct_for(self.metric, NOISE_PCT))
    }

    /// "1.12× [1.05, 1.19] faster" or "indistinguishable here (MDE 9 %)"; a counted metric
    /// as a percentage: "+7.59 % [+7.58, +7.60] costlier".
    pub fn describe(&self) -> String {
        let mde = self.mde_pct.map_or_else(
            || "MDE unknown: no calibration".into(),
            |m| format!("MDE {m:.0} %"),
        );
        let Some(d) = &self.difference else {
            return "–".into();
        };
        if self.metric.unit() == super::units::Unit::Count {
            let mde = self.mde_pct.map_or_else(
                || "MDE unknown: no calibration".into(),
                |m| format!("MDE {m:.3} %"),
            );
            return match (self.verdict, self.real_under_threshold()) {
                (Verdict::Better | Verdict::Worse, _) => {
                    format!("{} {}", pct_ci(d), self.verdict.word(self.metric))
                }
                (_, Some(t)) => format!("{} real, under the {t} % threshold ({mde})", pct_ci(d)),
                (Verdict::NoChange, None) => {
                    format!("{} indistinguishable here ({mde})", pct_ci(d))
                }
                _ => format!("{:+.2} % (no interval)", d.change_pct),
            };
        }
        let ci = match (d.ci95_low_pct, d.ci95_high_pct) {
            (Some(lo), Some(hi)) => format!(" [{:.2}, {:.2}]", 1.0 + lo / 100.0, 1.0 + hi / 100.0),
            _ => String::new(),
        };
        match self.verdict {
            Verdict::Better | Verdict::Worse => {
                format!("{:.2}×{ci} {}", d.ratio, self.verdict.word(self.metric))
            }
            Verdict::NoChange => format!("{:.2}×{ci} indistinguishable here ({mde})", d.ratio),
            _ => format!("{:.2}× (no interval)", d.ratio),
        }
    }
}

/// "0.98× [0.93–1.04]"; bounds beyond 100× read "≥100" (an interval that wide says only
/// that nothing is known).
pub fn ratio_ci(d: &Difference) -> String {
    let bound = |pct: f64| {
        let r = 1.0 + pct / 100.0;
        if r >= 100.0 {
            "≥100".to_string()
        } else {
            format!("{r:.2}")
        }
    };
    match (d.ci95_low_pct, d.ci95_high_pct) {
        (Some(lo), Some(hi)) => format!("{:.2}× [{}–{}]", d.ratio, bound(lo), bound(hi)),
        _ => format!("{:.2}× (no CI)", d.ratio),
    }
}

impl MetricVerdict {
    /// For tables: "**1.20× [1.12–1.28]** faster" / "≈ 1.03× [0.96–1.10]"; counted metrics
    /// as percentages: "**+7.59 % [+7.58, +7.60]** costlier" / "+0.32 % [+0.31, +0.34] real,
    /// under the 0.5 % threshold" / "≈ +0.01 % [−0.02, +0.03]"; "unpaired" after an interval
    /// whose repetitions did not run side by side (Welch's).
    pub fn brief(&self) -> String {
        let Some(d) = &self.difference else {
            return "–".into();
        };
        let text = if self.metric.unit() == super::units::Unit::Count {
            match (self.verdict, self.real_under_threshold()) {
                (Verdict::Better | Verdict::Worse, _) => {
                    format!("**{}** {}", pct_ci(d), self.verdict.word(self.metric))
                }
                (_, Some(t)) => format!("{} real, under the {t} % threshold", pct_ci(d)),
                (Verdict::NoChange, None) => format!("≈ {}", pct_ci(d)),
                _ => pct_ci(d),
            }
        } else {
            match self.verdict {
                Verdict::Better | Verdict::Worse => {
                    format!("**{}** {}", ratio_ci(d), self.verdict.word(self.metric))
                }
                Verdict::NoChange => format!("≈ {}", ratio_ci(d)),
                _ => ratio_ci(d),
            }
        };
        if d.paired || d.ci95_low_pct.is_none() {
            text
        } else {
            format!("{text} *unpaired*")
        }
    }
}

/// Whether any verdict's interval is not paired on rounds (its repetitions did not run side
/// by side): what results.md then says instead of "repetition i of both ran side by side".
pub fn any_unpaired(verdicts: &[BaselineVerdict]) -> bool {
    verdicts
        .iter()
        .flat_map(|v| &v.metrics)
        .filter_map(|m| m.difference.as_ref())
        .any(|d| !d.paired && d.ci95_low_pct.is_some())
}

/// The sentence on pairing for results.md: true only of what the run did.
pub fn pairing_note(verdicts: &[BaselineVerdict]) -> &'static str {
    if any_unpaired(verdicts) {
        "paired on rounds (repetition i of both ran side by side) except where marked *unpaired*: \
         those repetitions did not run side by side (a cell restarted by `--resume`, or unequal \
         repetition counts), so that interval is Welch's, of two independent samples"
    } else {
        "paired on rounds: repetition i of both ran side by side"
    }
}

fn measured(c: &CellResult) -> bool {
    matches!(c.status, CellStatus::Ok | CellStatus::Partial) && !c.reps.is_empty()
}

/// Every measured matrix cell of another service against the baseline's cell in the same
/// scenario/level/profile. Churn cells and calibration arms are not judged.
pub fn against_baseline(
    cells: &[&CellResult],
    baseline: &str,
    calibration: Option<&Calibration>,
) -> Vec<BaselineVerdict> {
    let judged = |c: &&&CellResult| c.cell.arm.is_none() && c.cell.churn.is_none() && measured(c);
    let mut out = Vec::new();
    for c in cells
        .iter()
        .filter(judged)
        .filter(|c| c.cell.service != baseline)
    {
        let Some(base) = cells.iter().filter(judged).find(|b| {
            b.cell.service == baseline
                && (&b.cell.scenario, &b.cell.level, &b.cell.profile)
                    == (&c.cell.scenario, &c.cell.level, &c.cell.profile)
        }) else {
            continue;
        };
        let open = matches!(c.cell.load, LoadModel::Open { .. });
        let cal = calibration
            .and_then(|k| k.cell_for(&c.cell.scenario, &c.cell.level, &c.cell.profile, open));
        let side_by_side = metric::side_by_side(base, c);
        let metrics = metric::measured_in(c)
            .map(|m| {
                let (old, new) = (by_rep(base, m), by_rep(c, m));
                let d = if side_by_side {
                    difference::between(&old, &new)
                } else {
                    difference::unpaired(&old, &new)
                };
                let verdict = d
                    .as_ref()
                    .map_or(Verdict::Missing, |d| difference::verdict(m, d, NOISE_PCT));
                let design = match &d {
                    Some(d) if d.paired => Design::Paired,
                    _ => Design::TwoSample,
                };
                let n = old.len().min(new.len()) as u32;
                MetricVerdict {
                    metric: m,
                    mde_pct: cal.and_then(|k| k.metric(m)?.mde_at(design, n)),
                    difference: d,
                    verdict,
                }
            })
            .collect();
        out.push(BaselineVerdict {
            key: c.cell.key.clone(),
            service: c.cell.service.clone(),
            baseline: baseline.to_string(),
            scenario: c.cell.scenario.clone(),
            level: c.cell.level.clone(),
            profile: c.cell.profile.clone(),
            metrics,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(v: Verdict, ratio: f64, ci: Option<(f64, f64)>, mde: Option<f64>) -> MetricVerdict {
        MetricVerdict {
            metric: Metric::RequestsPerS,
            difference: Some(Difference {
                ratio,
                change_pct: (ratio - 1.0) * 100.0,
                ci95_low_pct: ci.map(|c| c.0),
                ci95_high_pct: ci.map(|c| c.1),
                df: Some(4.0),
                paired: true,
            }),
            verdict: v,
            mde_pct: mde,
        }
    }

    /// results.md said "repetition i of both ran side by side" of every verdict, also of
    /// repetitions a `--resume` ran apart.
    #[test]
    fn an_unpaired_interval_is_marked_and_the_note_does_not_claim_pairing() {
        let mut v = verdict(Verdict::NoChange, 1.03, Some((-4.0, 10.0)), Some(9.4));
        let one = |v: &MetricVerdict| BaselineVerdict {
            key: "b".into(),
            service: "b".into(),
            baseline: "a".into(),
            scenario: "p".into(),
            level: "c4".into(),
            profile: "x".into(),
            metrics: vec![v.clone()],
        };
        assert!(!v.brief().contains("unpaired"));
        assert!(pairing_note(&[one(&v)]).ends_with("repetition i of both ran side by side"));
        v.difference.as_mut().unwrap().paired = false;
        assert_eq!(v.brief(), "≈ 1.03× [0.96–1.10] *unpaired*");
        assert!(pairing_note(&[one(&v)]).contains("except where marked *unpaired*"));
    }

    #[test]
    fn an_interval_that_includes_one_reads_indistinguishable() {
        let v = verdict(Verdict::NoChange, 1.03, Some((-4.0, 10.0)), Some(9.4));
        assert_eq!(
            v.describe(),
            "1.03× [0.96, 1.10] indistinguishable here (MDE 9 %)"
        );
        let v = verdict(Verdict::Better, 1.2, Some((12.0, 28.0)), Some(9.4));
        assert_eq!(v.describe(), "1.20× [1.12, 1.28] faster");
        let v = verdict(Verdict::NoChange, 1.0, Some((-1.0, 1.0)), None);
        assert_eq!(
            v.describe(),
            "1.00× [0.99, 1.01] indistinguishable here (MDE unknown: no calibration)"
        );
    }

    #[test]
    fn counted_changes_read_as_percentages_and_a_real_one_under_the_threshold_says_so() {
        let counted = |v, ratio, ci, mde| MetricVerdict {
            metric: Metric::InstructionsPerRequest,
            ..verdict(v, ratio, ci, mde)
        };
        // +0.32 %, its interval clear of 0, 13× its A/A MDE: real, though no verdict's word.
        let v = counted(Verdict::NoChange, 1.0032, Some((0.31, 0.34)), Some(0.025));
        assert_eq!(
            v.brief(),
            "+0.32 % [+0.31, +0.34] real, under the 0.5 % threshold"
        );
        assert_eq!(
            v.describe(),
            "+0.32 % [+0.31, +0.34] real, under the 0.5 % threshold (MDE 0.025 %)"
        );
        let v = counted(Verdict::Worse, 1.0759, Some((7.58, 7.60)), Some(0.025));
        assert_eq!(v.brief(), "**+7.59 % [+7.58, +7.60]** costlier");
        // Inside its MDE, or an interval reaching 0: indistinguishable, as a percentage.
        let v = counted(Verdict::NoChange, 1.0001, Some((0.005, 0.015)), Some(0.025));
        assert_eq!(v.brief(), "≈ +0.01 % [+0.01, +0.01]");
        let v = counted(Verdict::NoChange, 1.003, Some((-0.1, 0.7)), Some(0.025));
        assert_eq!(v.brief(), "≈ +0.30 % [-0.10, +0.70]");
    }
}
