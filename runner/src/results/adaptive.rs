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
    ci_half_pct_stepped(values, 0.0)
}

/// As `ci_half_pct`, for values known only to a `step` (a count of whole responses over a
/// window moves req/s by 1 / window): the spread is taken as at least a uniform rounding
/// error's (step / √12), so repetitions that happen to land on the same count — a server
/// whose pace is fixed by its own CPU, say — do not pass for an exact result.
pub fn ci_half_pct_stepped(values: &[f64], step: f64) -> Option<f64> {
    let n = values.len();
    let m = stats::mean(values)?;
    let s = stats::stdev(values)?;
    let s = s.hypot(step / 12f64.sqrt());
    let half = stats::t_975(n - 1) * s / (n as f64).sqrt();
    (m != 0.0).then(|| half / m.abs() * 100.0)
}

/// The smallest move of `metric` between repetitions, where it is a count over a window:
/// req/s is whole responses over the measured window. None where the metric is not counted
/// that way (its interval is then the plain one).
fn step(c: &CellResult, metric: Metric) -> Option<f64> {
    match metric {
        Metric::RequestsPerS => c
            .reps
            .iter()
            .filter(|r| r.rep > 0 && r.report.window_s > 0.0)
            .map(|r| 1.0 / r.report.window_s)
            .reduce(f64::max),
        _ => None,
    }
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
    let hw = ci_half_pct_stepped(&values, step(c, metric).unwrap_or(0.0));
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

    #[test]
    fn repetitions_on_the_same_count_are_not_an_exact_result() {
        // Two 1 s windows with 998 responses each: the plain interval has no width at all,
        // the stepped one the width a count of ±½ response leaves (12.706 · 0.2887 / √2).
        assert_eq!(ci_half_pct(&[998.0, 998.0]), Some(0.0));
        let hw = ci_half_pct_stepped(&[998.0, 998.0], 1.0).unwrap();
        assert!((hw - 12.706 * (1.0 / 12f64.sqrt()) / 2f64.sqrt() / 998.0 * 100.0).abs() < 1e-9);
        assert!(hw > 0.25, "{hw}");
        // A spread well above the step is barely touched by it.
        let plain = ci_half_pct(&[900.0, 1000.0, 1100.0]).unwrap();
        let stepped = ci_half_pct_stepped(&[900.0, 1000.0, 1100.0], 1.0).unwrap();
        assert!(
            stepped >= plain && stepped - plain < 1e-3,
            "{plain} {stepped}"
        );
        assert_eq!(ci_half_pct_stepped(&[5.0], 1.0), None);
    }
}
