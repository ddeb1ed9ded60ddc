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
    let aa = difference::paired(&va, &vb);
    let logs: Vec<f64> = va
        .iter()
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

/// The calibration of a run from its arm cells (`cell.arm` = "a" / "b"); None when the run
/// had none.
pub fn from_cells<'a>(cells: impl IntoIterator<Item = &'a CellResult>) -> Option<Calibration> {
    let arms: Vec<&CellResult> = cells.into_iter().filter(|c| c.cell.arm.is_some()).collect();
    let service = arms.first()?.cell.service.clone();
    let mut out = Vec::new();
    for a in arms.iter().filter(|c| c.cell.arm.as_deref() == Some("a")) {
        let same = |c: &&&CellResult| {
            c.cell.arm.as_deref() == Some("b")
                && (&c.cell.scenario, &c.cell.level, &c.cell.profile)
                    == (&a.cell.scenario, &a.cell.level, &a.cell.profile)
        };
        let Some(b) = arms.iter().find(same) else {
            continue;
        };
        let failures = [a, *b]
            .iter()
            .filter(|c| c.status != CellStatus::Ok)
            .map(|c| {
                format!(
                    "arm {}: {}",
                    c.cell.arm.as_deref().unwrap_or("?"),
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
