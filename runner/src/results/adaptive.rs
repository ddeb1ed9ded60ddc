//! Adaptive repetitions: when a cell has had enough. A cell repeats until the 95 % CI
//! half-width of its primary metric — req/s in closed loop, server CPU per request in open
//! loop, where the rate is fixed — is at most the target, or until its repetition cap.

use loadgen::LoadModel;

use super::metric::{Metric, by_rep};
pub use super::schema::{Adaptive, StopReason, Stopping};
use super::schema::{CellResult, CellSpec};
use super::stats;

impl Stopping {
    /// "target met: ±2.1 % ≤ 3 % after 6 repetitions" / "cap: ±4.2 % > 3 % after 10".
    pub fn describe(&self) -> String {
        let hw = self
            .ci_half_pct
            .map_or_else(|| "no CI".to_string(), |h| format!("±{h:.1} %"));
        match self.reason {
            StopReason::TargetMet => format!(
                "target met: {} {hw} ≤ {} % after {} repetitions",
                self.metric.label(),
                self.target_ci_pct,
                self.repetitions
            ),
            StopReason::Cap => format!(
                "cap reached: {} {hw} > {} % after {} repetitions",
                self.metric.label(),
                self.target_ci_pct,
                self.repetitions
            ),
        }
    }
}

/// The metric whose interval decides: throughput when the generator sets the pace, CPU per
/// request when the rate is fixed.
pub fn primary(spec: &CellSpec) -> Metric {
    match spec.load {
        LoadModel::Closed { .. } => Metric::RequestsPerS,
        LoadModel::Open { .. } => Metric::CpuUsPerRequest,
    }
}

/// 95 % CI half-width in percent of the mean; None for fewer than 2 values or a zero mean.
pub fn ci_half_pct(values: &[f64]) -> Option<f64> {
    let (lo, hi) = stats::ci95(values)?;
    let m = stats::mean(values)?;
    (m != 0.0).then(|| (hi - lo) / 2.0 / m.abs() * 100.0)
}

/// After a repetition: has the cell had enough? None = repeat again. Without adaptive
/// settings a cell stops at its fixed repetitions (and records nothing).
pub fn enough(c: &CellResult) -> Option<Option<Stopping>> {
    let done = c.reps.iter().filter(|r| r.rep > 0).count() as u32;
    if done < c.cell.repetitions {
        return None;
    }
    let Some(a) = c.cell.adaptive else {
        return Some(None);
    };
    let metric = primary(&c.cell);
    let values: Vec<f64> = by_rep(c, metric).into_iter().map(|(_, v)| v).collect();
    let hw = ci_half_pct(&values);
    let reason = match hw {
        Some(h) if h <= a.target_ci_pct => StopReason::TargetMet,
        _ if done >= a.max_repetitions => StopReason::Cap,
        _ => return None,
    };
    Some(Some(Stopping {
        reason,
        repetitions: done,
        metric,
        ci_half_pct: hw,
        target_ci_pct: a.target_ci_pct,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_width_in_percent() {
        // n=3, mean 100, s=10: half = 4.303·10/√3 = 24.84 %.
        assert!((ci_half_pct(&[90.0, 100.0, 110.0]).unwrap() - 24.843).abs() < 1e-3);
        assert_eq!(ci_half_pct(&[5.0]), None);
        assert_eq!(ci_half_pct(&[0.0, 0.0]), None);
    }
}
