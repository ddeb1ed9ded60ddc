//! The minimum detectable effect beside each verdict, and the drift warning: how small a
//! difference between these two runs could have been shown (95 % confidence, 80 % power),
//! from the runs' calibration when they have one, else from the two sides' own spread; and
//! whether either run's machine drifted by more than that.

use super::model::{CellComparison, MdeSource, MetricComparison};
use crate::results::calibration::Calibration;
use crate::results::metric::Metric;
use crate::results::power::{Design, mde_d};
use crate::results::schema::CellSummary;
use crate::results::set::ResultSet;

/// MDE of one metric comparison: two independent samples of min(n_old, n_new). The larger
/// of the two runs' calibrations when either has one (the noisier machine decides), else
/// the pooled spread of the two sides.
pub fn of(
    m: &MetricComparison,
    cell: &CellSummary,
    calibrations: [Option<&Calibration>; 2],
) -> (Option<f64>, Option<MdeSource>) {
    let (Some(a), Some(b)) = (&m.old, &m.new) else {
        return (None, None);
    };
    let n = a.n.min(b.n);
    let open = cell.offered_rate_per_s.is_some();
    let from_cal = calibrations
        .iter()
        .flatten()
        .filter_map(|k| {
            k.cell_for(&cell.scenario, &cell.level, &cell.profile, open)?
                .metric(m.metric)?
                .mde_at(Design::TwoSample, n)
        })
        .reduce(f64::max);
    if from_cal.is_some() {
        return (from_cal, Some(MdeSource::Calibration));
    }
    let cv = |v: &crate::results::metric::MetricValues| {
        (v.mean != 0.0).then(|| v.stdev.map(|s| s / v.mean.abs() * 100.0))?
    };
    let spread = match (cv(a), cv(b)) {
        (Some(x), Some(y)) => {
            mde_d(Design::TwoSample, n).map(|d| d * ((x * x + y * y) / 2.0).sqrt())
        }
        _ => None,
    };
    (spread, spread.map(|_| MdeSource::Spread))
}

/// A run whose drift reference moved by more than the smallest MDE of req/s or CPU/request
/// among the compared cells: a difference that small may be the machine. req/s at a fixed
/// offered rate is the generator's, not a measurement, and is left out.
pub fn drift_warnings(cells: &[CellComparison], old: &ResultSet, new: &ResultSet) -> Vec<String> {
    let smallest = |metric: Metric| {
        cells
            .iter()
            .filter(|c| !(c.open_loop && metric == Metric::RequestsPerS))
            .flat_map(|c| &c.metrics)
            .filter(|m| m.metric == metric)
            .filter_map(|m| m.mde_pct)
            .reduce(f64::min)
    };
    let mut out = Vec::new();
    for (side, set) in [("old", old), ("new", new)] {
        let Some(d) = &set.results.drift else {
            continue;
        };
        let drifts = [
            (
                Metric::RequestsPerS,
                d.max_requests_per_s_drift_pct
                    .or(d.requests_per_s_drift_pct),
            ),
            (
                Metric::CpuUsPerRequest,
                d.max_cpu_us_per_request_drift_pct
                    .or(d.cpu_us_per_request_drift_pct),
            ),
        ];
        for (metric, drift) in drifts {
            if let (Some(drift), Some(mde)) = (drift, smallest(metric))
                && drift.abs() > mde
            {
                out.push(format!(
                    "the {side} run's drift reference moved {drift:+.1} % in {} during the run, more than the smallest MDE of that metric here ({mde:.1} %): between-run differences of that size may be the machine",
                    metric.label()
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::calibration::{CalibrationCell, CalibrationMetric};
    use crate::results::difference::Verdict;
    use crate::results::metric::MetricValues;

    fn values(v: &[f64]) -> Option<MetricValues> {
        MetricValues::from_values(v.to_vec())
    }

    fn comparison(old: &[f64], new: &[f64]) -> MetricComparison {
        MetricComparison {
            metric: Metric::RequestsPerS,
            unit: Metric::RequestsPerS.unit(),
            old: values(old),
            new: values(new),
            difference: None,
            verdict: Verdict::NoChange,
            mde_pct: None,
            mde_source: None,
        }
    }

    fn cell() -> CellSummary {
        CellSummary {
            scenario: "ping".into(),
            level: "c64".into(),
            profile: "pinned".into(),
            ..Default::default()
        }
    }

    fn calibration(cv_pct: f64) -> Calibration {
        Calibration {
            service: "s".into(),
            cells: vec![CalibrationCell {
                scenario: "ping".into(),
                level: "c16".into(),
                profile: "pinned".into(),
                open_loop: false,
                pairs: 5,
                metrics: vec![CalibrationMetric {
                    metric: Metric::RequestsPerS,
                    n: 5,
                    cv_a_pct: Some(cv_pct),
                    cv_b_pct: Some(cv_pct),
                    aa: None,
                    verdict: Verdict::NoChange,
                    paired_sd_pct: Some(cv_pct),
                    mde_pct: None,
                    mde_between_runs_pct: None,
                    reps_for_10_pct: None,
                }],
                failures: vec![],
            }],
        }
    }

    #[test]
    fn the_noisier_calibration_decides() {
        let m = comparison(&[100.0, 101.0, 99.0], &[100.0, 102.0, 98.0]);
        let (quiet, noisy) = (calibration(2.0), calibration(8.0));
        let (mde, src) = of(&m, &cell(), [Some(&quiet), Some(&noisy)]);
        // Two samples of 3: d = mde_d(TwoSample, 3) ≈ 3.07 standard deviations, × 8 %.
        let want = mde_d(Design::TwoSample, 3).unwrap() * 8.0;
        assert!((mde.unwrap() - want).abs() < 1e-9);
        assert_eq!(src, Some(MdeSource::Calibration));
    }

    #[test]
    fn without_calibration_the_sides_own_spread() {
        let m = comparison(&[90.0, 100.0, 110.0], &[90.0, 100.0, 110.0]);
        let (mde, src) = of(&m, &cell(), [None, None]);
        let want = mde_d(Design::TwoSample, 3).unwrap() * 10.0;
        assert!((mde.unwrap() - want).abs() < 1e-9);
        assert_eq!(src, Some(MdeSource::Spread));
        let (none, _) = of(&comparison(&[1.0], &[1.0]), &cell(), [None, None]);
        assert_eq!(none, None);
    }
}
