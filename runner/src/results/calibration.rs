//! Calibration: what this machine can tell apart. One service runs as two identical arms,
//! A B A B; per metric this module gives each arm's spread, the A/A interval (paired on
//! rounds) and the minimum detectable effect (MDE, 95 % confidence, 80 % power) at the run's
//! repetitions — within a run (paired) and between two runs (independent samples).

use loadgen::LoadModel;

use super::difference::{self, NOISE_PCT, Verdict};
use super::metric::{self, Metric, by_rep};
use super::power::{self, Design};
pub use super::schema::{Calibration, CalibrationCell, CalibrationMetric};
use super::schema::{CellResult, CellStatus};
use super::stats;

/// A relative effect worth detecting, for `reps_for_10_pct`.
pub const EFFECT_PCT: f64 = 10.0;

impl CalibrationMetric {
    /// The spread of one repetition of one arm, both arms pooled, percent.
    pub fn pooled_cv_pct(&self) -> Option<f64> {
        let (a, b) = (self.cv_a_pct?, self.cv_b_pct?);
        Some(((a * a + b * b) / 2.0).sqrt())
    }

    /// MDE (percent) of a comparison with `n` values per side: paired uses the spread of the
    /// paired log ratio, independent samples the pooled spread of one repetition.
    pub fn mde_at(&self, design: Design, n: u32) -> Option<f64> {
        let sd = match design {
            Design::Paired => self.paired_sd_pct?,
            Design::TwoSample => self.pooled_cv_pct()?,
        };
        Some(power::mde_d(design, n)? * sd)
    }
}

impl Calibration {
    /// The calibration cell that best stands for a cell: the same scenario/level/profile,
    /// else the first of the same loop (closed or open).
    pub fn cell_for(
        &self,
        scenario: &str,
        level: &str,
        profile: &str,
        open: bool,
    ) -> Option<&CalibrationCell> {
        self.cells
            .iter()
            .find(|c| c.scenario == scenario && c.level == level && c.profile == profile)
            .or_else(|| self.cells.iter().find(|c| c.open_loop == open))
    }
}

impl CalibrationCell {
    pub fn metric(&self, m: Metric) -> Option<&CalibrationMetric> {
        self.metrics.iter().find(|x| x.metric == m)
    }
}

fn pct(x: Option<f64>) -> Option<f64> {
    x.map(|v| v * 100.0)
}

/// One metric of one calibration cell.
fn metric_of(a: &CellResult, b: &CellResult, m: Metric) -> CalibrationMetric {
    let (va, vb) = (by_rep(a, m), by_rep(b, m));
    let vals = |v: &[(u32, f64)]| v.iter().map(|x| x.1).collect::<Vec<_>>();
    // Arms that did not run side by side (one restarted by --resume) have no paired spread.
    let side_by_side = crate::results::metric::side_by_side(a, b);
    let aa = if side_by_side {
        difference::paired(&va, &vb)
    } else {
        difference::unpaired(&va, &vb)
    };
    let logs: Vec<f64> = va
        .iter()
        .filter(|_| side_by_side)
        .filter_map(|(r, x)| {
            let y = vb.iter().find(|(rb, _)| rb == r)?.1;
            Some((y / x).ln()).filter(|l| l.is_finite())
        })
        .collect();
    let n = logs.len() as u32;
    let mut c = CalibrationMetric {
        metric: m,
        n,
        cv_a_pct: pct(stats::cv(&vals(&va))),
        cv_b_pct: pct(stats::cv(&vals(&vb))),
        verdict: aa.as_ref().map_or(Verdict::Undetermined, |d| {
            difference::verdict(m, d, NOISE_PCT)
        }),
        aa,
        paired_sd_pct: pct(stats::stdev(&logs)),
        mde_pct: None,
        mde_between_runs_pct: None,
        reps_for_10_pct: None,
    };
    c.mde_pct = c.mde_at(Design::Paired, n);
    c.mde_between_runs_pct = c.mde_at(Design::TwoSample, n);
    c.reps_for_10_pct = c
        .paired_sd_pct
        .and_then(|sd| power::reps_for(Design::Paired, EFFECT_PCT, sd));
    c
}

/// The calibration of a run from its cells: each arm B (`cell.arm` = "b") is paired with its
/// arm A at the same position — the "a" cell, or, where arm B shared a measured cell's rounds
/// (`plan::share_rounds`), that cell of the same service. None when the run had no arm B.
pub fn from_cells<'a>(cells: impl IntoIterator<Item = &'a CellResult>) -> Option<Calibration> {
    let all: Vec<&CellResult> = cells.into_iter().collect();
    let arm = |c: &CellResult, a: &str| c.cell.arm.as_deref() == Some(a);
    let bs: Vec<&CellResult> = all.iter().copied().filter(|c| arm(c, "b")).collect();
    let service = bs.first()?.cell.service.clone();
    let mut out = Vec::new();
    for b in bs {
        let at = |c: &&CellResult| {
            (
                &c.cell.service,
                &c.cell.scenario,
                &c.cell.level,
                &c.cell.profile,
            ) == (
                &b.cell.service,
                &b.cell.scenario,
                &b.cell.level,
                &b.cell.profile,
            )
        };
        let Some(a) = (all.iter().copied().find(|c| at(c) && arm(c, "a")))
            .or_else(|| all.iter().copied().find(|c| at(c) && c.cell.arm.is_none()))
        else {
            continue;
        };
        let failures = [a, b]
            .iter()
            .filter(|c| c.status != CellStatus::Ok)
            .map(|c| {
                format!(
                    "arm {}: {}",
                    c.cell.arm.as_deref().unwrap_or("a"),
                    c.failure.as_ref().map_or_else(
                        || format!("{:?}", c.status).to_lowercase(),
                        ToString::to_string
                    )
                )
            })
            .collect();
        let metrics: Vec<CalibrationMetric> =
            metric::measured_in(a).map(|m| metric_of(a, b, m)).collect();
        out.push(CalibrationCell {
            scenario: a.cell.scenario.clone(),
            level: a.cell.level.clone(),
            profile: a.cell.profile.clone(),
            open_loop: matches!(a.cell.load, LoadModel::Open { .. }),
            pairs: metrics.iter().map(|m| m.n).max().unwrap_or(0),
            metrics,
            failures,
        });
    }
    Some(Calibration {
        service,
        cells: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::schema::Calibration;

    /// The real fixture cell as `service`'s (arm `arm`), one round per req/s value.
    fn cell(service: &str, arm: Option<&str>, rps: &[f64]) -> CellResult {
        let mut c = crate::results::fixture::cell_with_rps(service, rps);
        c.cell.arm = arm.map(String::from);
        c
    }

    fn rps_pairs(k: &Calibration) -> u32 {
        let m = k.cells[0].metrics.iter();
        m.clone()
            .find(|m| m.metric == Metric::RequestsPerS)
            .map_or(0, |m| m.n)
    }

    #[test]
    fn arm_b_pairs_with_arm_a_or_else_with_the_services_own_cell() {
        let rounds = [100.0, 102.0, 98.0, 101.0];
        let b = cell("s", Some("b"), &rounds);
        // Both arms run apart.
        let a = cell("s", Some("a"), &rounds);
        let k = from_cells([&a, &b]).unwrap();
        assert_eq!((k.cells.len(), rps_pairs(&k)), (1, 4));
        // Arm B ran in the group: the service's own cell is arm A; another service's is not.
        let own = cell("s", None, &[100.0, 101.0, 99.0, 100.0]);
        let other = cell("t", None, &[50.0, 51.0, 49.0, 50.0]);
        let k = from_cells([&other, &own, &b]).unwrap();
        assert_eq!((k.cells.len(), rps_pairs(&k)), (1, 4));
        assert_eq!(k.service, "s");
        // No arm A at all: the position is left out, not paired with another service.
        let k = from_cells([&other, &b]).unwrap();
        assert!(k.cells.is_empty());
        assert!(
            from_cells([&own, &other]).is_none(),
            "no arm B, no calibration"
        );
    }
}
