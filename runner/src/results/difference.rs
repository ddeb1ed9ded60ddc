//! The statistics of a difference: Welch's t interval for (new − old) of the means, reported
//! relative to the old mean; the paired interval of the ratio when the two samples were taken
//! side by side (repetition i of one next to repetition i of the other); and the verdict rule.
//!
//! Why Welch and not a bootstrap: with the 3–5 repetitions a matrix affords, a bootstrap
//! resamples from at most 5 values and its interval is far too narrow. Welch's t does not
//! assume equal variances and widens honestly through its small degrees of freedom.
//! The relative CI divides the absolute interval by the old mean, treated as fixed; with
//! the few-percent spread of a usable cell this understates the width by a few percent of
//! itself, far below the noise threshold.

use super::metric::{Metric, MetricValues};
pub use crate::results::schema::{Difference, Verdict};
use crate::results::stats::{self, t_975};

/// The widest interval stated, percent either way: beyond it (a ratio of 10^10, which two
/// repetitions of a count that is nearly 0 on one side can give through t(1) = 12.7) an
/// interval says nothing, and a number that size is refused by results.json's own check
/// (`untrusted::MAX_NUMBER`), which would lose the whole run. Such a difference has no
/// interval: its verdict is "no CI".
pub const WIDEST_PCT: f64 = 1e12;

/// Whether a percentage can be stated: finite and within [`WIDEST_PCT`].
fn within(x: f64) -> bool {
    x.is_finite() && x.abs() <= WIDEST_PCT
}

/// `(low, high)` when both can be stated.
fn stated(low: f64, high: f64) -> Option<(f64, f64)> {
    (within(low) && within(high)).then_some((low, high))
}

pub fn difference(old: &MetricValues, new: &MetricValues) -> Option<Difference> {
    if old.mean == 0.0 || !old.mean.is_finite() || !new.mean.is_finite() {
        return None;
    }
    let diff = new.mean - old.mean;
    let to_pct = |x: f64| x / old.mean * 100.0;
    if !within(to_pct(diff)) {
        return None;
    }
    let ci = welch(old, new).and_then(|(half, df)| {
        let (lo, hi) = stated(to_pct(diff - half), to_pct(diff + half))?;
        Some((lo, hi, df))
    });
    Some(Difference {
        ratio: new.mean / old.mean,
        change_pct: to_pct(diff),
        ci95_low_pct: ci.map(|c| c.0),
        ci95_high_pct: ci.map(|c| c.1),
        df: ci.map(|c| c.2),
        paired: false,
    })
}

/// Paired difference of `new` against `old`, matched on repetition number: the mean of the
/// per-pair log ratios with its Student-t interval (n − 1 df), turned back into a ratio.
/// Pairing removes what both sides shared in a round (the machine's drift); logs make the
/// interval of a ratio symmetric. None with no pair, or a value ≤ 0 in a pair.
pub fn paired(old: &[(u32, f64)], new: &[(u32, f64)]) -> Option<Difference> {
    let logs: Vec<f64> = old
        .iter()
        .filter_map(|(rep, a)| {
            let b = new.iter().find(|(r, _)| r == rep)?.1;
            Some((b / a).ln())
        })
        .collect();
    if logs.is_empty() || logs.iter().any(|l| !l.is_finite()) {
        return None;
    }
    let m = stats::mean(&logs)?;
    let pct = |x: f64| (x.exp() - 1.0) * 100.0;
    if !within(pct(m)) {
        return None;
    }
    let ci = stats::stdev(&logs).and_then(|s| {
        let half = t_975(logs.len() - 1) * s / (logs.len() as f64).sqrt();
        stated(pct(m - half), pct(m + half))
    });
    Some(Difference {
        ratio: m.exp(),
        change_pct: pct(m),
        ci95_low_pct: ci.map(|c| c.0),
        ci95_high_pct: ci.map(|c| c.1),
        df: ci.map(|_| (logs.len() - 1) as f64),
        paired: true,
    })
}

/// Paired when both sides have the same repetitions (a run that interleaved them), Welch
/// otherwise.
pub fn between(old: &[(u32, f64)], new: &[(u32, f64)]) -> Option<Difference> {
    let reps = |v: &[(u32, f64)]| {
        let mut r: Vec<u32> = v.iter().map(|x| x.0).collect();
        r.sort_unstable();
        r
    };
    if old.len() >= 2 && reps(old) == reps(new) {
        return paired(old, new);
    }
    unpaired(old, new)
}

/// Welch's difference of two samples taken as independent: repetitions that did not run side
/// by side (`metric::side_by_side`), or of different counts.
pub fn unpaired(old: &[(u32, f64)], new: &[(u32, f64)]) -> Option<Difference> {
    let values = |v: &[(u32, f64)]| MetricValues::from_values(v.iter().map(|x| x.1).collect());
    difference(&values(old)?, &values(new)?)
}

/// Half-width of the 95 % interval of new.mean − old.mean and the degrees of freedom.
fn welch(old: &MetricValues, new: &MetricValues) -> Option<(f64, f64)> {
    let (s1, s2) = (old.stdev?, new.stdev?);
    if old.n < 2 || new.n < 2 {
        return None;
    }
    let (n1, n2) = (f64::from(old.n), f64::from(new.n));
    let (v1, v2) = (s1 * s1 / n1, s2 * s2 / n2);
    let se2 = v1 + v2;
    let df = if se2 == 0.0 {
        // Both sides constant: the interval collapses to the point; df is moot.
        n1 + n2 - 2.0
    } else {
        se2 * se2 / (v1 * v1 / (n1 - 1.0) + v2 * v2 / (n2 - 1.0))
    };
    // Flooring df rounds t up: the interval errs wide, never narrow.
    let t = t_975((df.floor() as usize).max(1));
    Some((t * se2.sqrt(), df))
}

impl Verdict {
    pub fn word(self, m: Metric) -> &'static str {
        let (better, worse) = m.words();
        match self {
            Verdict::Better => better,
            Verdict::Worse => worse,
            Verdict::NoChange => "no change",
            Verdict::Undetermined => "no CI",
            Verdict::NotComparable => "not comparable",
            Verdict::Missing => "–",
        }
    }
}

/// The default noise threshold (percent): a significant change smaller than this is "no
/// change" — below it, a real difference of two builds or runtimes rarely matters, and on a
/// shared machine it is where the drift of one round to the next lives.
pub const NOISE_PCT: f64 = 2.0;

/// The noise threshold of instructions/request: at most this, whatever the caller's. User-space
/// instruction counts of one binary repeat to about 0.1 % (A/A MDE 0.2 % in the counted
/// reference run), so a 1 % change is real; the timing threshold, set where a shared
/// machine's round-to-round drift lives, would hide it.
pub const INSTRUCTIONS_NOISE_PCT: f64 = 0.5;

/// The threshold `verdict` applies to `m` when the caller's is `noise_pct`.
pub fn noise_pct_for(m: Metric, noise_pct: f64) -> f64 {
    match m {
        Metric::InstructionsPerRequest => noise_pct.min(INSTRUCTIONS_NOISE_PCT),
        _ => noise_pct,
    }
}

/// "No change" unless the CI excludes zero AND |change| exceeds the noise threshold
/// ([`noise_pct_for`] the metric).
pub fn verdict(m: Metric, d: &Difference, noise_pct: f64) -> Verdict {
    let (Some(lo), Some(hi)) = (d.ci95_low_pct, d.ci95_high_pct) else {
        return Verdict::Undetermined;
    };
    let excludes_zero = lo > 0.0 || hi < 0.0;
    if !excludes_zero || d.change_pct.abs() <= noise_pct_for(m, noise_pct) {
        return Verdict::NoChange;
    }
    let went_up = d.change_pct > 0.0;
    if went_up == m.higher_is_better() {
        Verdict::Better
    } else {
        Verdict::Worse
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[f64]) -> MetricValues {
        MetricValues::from_values(v.to_vec()).unwrap()
    }

    /// Two repetitions whose ratio moved 150x between them (a count nearly 0 on one side):
    /// t(1) = 12.7 made the upper bound 2.5e21 %, which results.json's check refused, losing
    /// a whole quick run. Such an interval is not stated; the change still is, where it can be.
    #[test]
    fn an_interval_too_wide_to_state_is_no_interval() {
        let d = paired(&[(1, 1.0), (2, 1.0)], &[(1, 0.1), (2, 15.0)]).unwrap();
        assert_eq!((d.ci95_low_pct, d.ci95_high_pct, d.df), (None, None, None));
        assert!(d.change_pct.is_finite());
        assert_eq!(
            verdict(Metric::CtxSwitchesPerRequest, &d, 2.0),
            Verdict::Undetermined
        );
        let d = paired(&[(1, 1.0), (2, 1.0)], &[(1, 0.9), (2, 1.1)]).unwrap();
        assert!(d.ci95_high_pct.is_some());
        let x = difference(&s(&[1e-300, 1e-300, 1e-300]), &s(&[1.0, 2.0, 3.0]));
        assert!(x.is_none(), "{x:?}");
    }

    #[test]
    fn welch_matches_a_hand_computed_interval() {
        // old: mean 100, s = 2 (n=3); new: mean 90, s = 1 (n=3).
        // v1 = 4/3, v2 = 1/3, se = sqrt(5/3) = 1.29099; df = (5/3)^2 / ((16/9)/2 + (1/9)/2)
        // = 2.7778 / 0.9444 = 2.941 → floor 2 → t = 4.303; half = 5.5551.
        let d = difference(&s(&[98.0, 100.0, 102.0]), &s(&[89.0, 90.0, 91.0])).unwrap();
        assert!((d.change_pct + 10.0).abs() < 1e-9);
        assert!((d.ratio - 0.9).abs() < 1e-12);
        assert!((d.df.unwrap() - 2.941).abs() < 1e-3, "{:?}", d.df);
        assert!((d.ci95_low_pct.unwrap() - (-10.0 - 5.5551)).abs() < 1e-3);
        assert!((d.ci95_high_pct.unwrap() - (-10.0 + 5.5551)).abs() < 1e-3);
    }

    #[test]
    fn ten_percent_throughput_drop_with_low_noise_is_slower() {
        let d = difference(
            &s(&[100_000.0, 100_500.0, 99_500.0, 100_200.0, 99_800.0]),
            &s(&[90_000.0, 90_400.0, 89_600.0, 90_100.0, 89_900.0]),
        )
        .unwrap();
        assert_eq!(verdict(Metric::RequestsPerS, &d, 2.0), Verdict::Worse);
        assert_eq!(Verdict::Worse.word(Metric::RequestsPerS), "slower");
    }

    #[test]
    fn lower_latency_is_better() {
        let d = difference(&s(&[100.0, 101.0, 99.0]), &s(&[80.0, 81.0, 79.0])).unwrap();
        assert_eq!(verdict(Metric::LatencyP99Us, &d, 2.0), Verdict::Better);
        assert_eq!(verdict(Metric::RequestsPerS, &d, 2.0), Verdict::Worse);
    }

    #[test]
    fn significant_but_below_threshold_is_no_change() {
        // −1 % with almost no noise: the CI excludes zero, the threshold does not.
        let d = difference(&s(&[100.0, 100.01, 99.99]), &s(&[99.0, 99.01, 98.99])).unwrap();
        assert!(d.ci95_high_pct.unwrap() < 0.0);
        assert_eq!(verdict(Metric::RequestsPerS, &d, 2.0), Verdict::NoChange);
        assert_eq!(verdict(Metric::RequestsPerS, &d, 0.5), Verdict::Worse);
    }

    #[test]
    fn instruction_counts_resolve_one_percent_under_the_timing_threshold() {
        // +1 % instructions/request with the 0.01 % spread of Valgrind counts: costlier even
        // at the 2 % timing threshold; +0.3 % stays below the instructions' own.
        let d = difference(&s(&[2391.0, 2391.1, 2390.9]), &s(&[2415.0, 2415.1, 2414.9])).unwrap();
        assert_eq!(
            verdict(Metric::InstructionsPerRequest, &d, 2.0),
            Verdict::Worse
        );
        assert_eq!(verdict(Metric::CpuUsPerRequest, &d, 2.0), Verdict::NoChange);
        let d = difference(&s(&[2391.0, 2391.1, 2390.9]), &s(&[2398.0, 2398.1, 2397.9])).unwrap();
        assert_eq!(
            verdict(Metric::InstructionsPerRequest, &d, 2.0),
            Verdict::NoChange
        );
        assert_eq!(noise_pct_for(Metric::InstructionsPerRequest, 0.1), 0.1);
    }

    #[test]
    fn large_but_noisy_change_is_no_change() {
        let d = difference(&s(&[100.0, 140.0, 60.0]), &s(&[80.0, 120.0, 40.0])).unwrap();
        assert!(d.ci95_low_pct.unwrap() < 0.0 && d.ci95_high_pct.unwrap() > 0.0);
        assert_eq!(verdict(Metric::RequestsPerS, &d, 2.0), Verdict::NoChange);
    }

    #[test]
    fn single_values_give_no_interval() {
        let d = difference(&s(&[100.0]), &s(&[50.0])).unwrap();
        assert_eq!(d.ci95_low_pct, None);
        assert_eq!(
            verdict(Metric::RequestsPerS, &d, 2.0),
            Verdict::Undetermined
        );
    }

    #[test]
    fn pairing_removes_a_shared_drift() {
        // Both sides drift by the same 20 % over the rounds; new is 5 % above old in each.
        let old: Vec<(u32, f64)> = (1..=5)
            .map(|r| (r, 100.0 * (1.0 + 0.05 * r as f64)))
            .collect();
        let new: Vec<(u32, f64)> = old.iter().map(|&(r, v)| (r, v * 1.05)).collect();
        let d = paired(&old, &new).unwrap();
        assert!(d.paired);
        assert!((d.ratio - 1.05).abs() < 1e-12);
        assert!((d.ci95_low_pct.unwrap() - 5.0).abs() < 1e-9);
        assert_eq!(verdict(Metric::RequestsPerS, &d, 2.0), Verdict::Better);
        // Unpaired, the same values are lost in the drift.
        let values = |v: &[(u32, f64)]| MetricValues::from_values(v.iter().map(|x| x.1).collect());
        let w = difference(&values(&old).unwrap(), &values(&new).unwrap()).unwrap();
        assert_eq!(verdict(Metric::RequestsPerS, &w, 2.0), Verdict::NoChange);
    }

    #[test]
    fn paired_interval_by_hand() {
        // log ratios ln(1.1), ln(1.0), ln(1.2): mean m, sd s, half = 4.303 · s / √3.
        let old = [(1, 10.0), (2, 10.0), (3, 10.0)];
        let new = [(1, 11.0), (2, 10.0), (3, 12.0)];
        let logs = [1.1f64.ln(), 0.0, 1.2f64.ln()];
        let m = logs.iter().sum::<f64>() / 3.0;
        let s = stats::stdev(&logs).unwrap();
        let half = 4.303 * s / 3f64.sqrt();
        let d = paired(&old, &new).unwrap();
        assert!((d.ratio - m.exp()).abs() < 1e-12);
        assert!((d.ci95_low_pct.unwrap() - ((m - half).exp() - 1.0) * 100.0).abs() < 1e-9);
        assert!((d.ci95_high_pct.unwrap() - ((m + half).exp() - 1.0) * 100.0).abs() < 1e-9);
        assert_eq!(d.df, Some(2.0));
    }

    #[test]
    fn between_pairs_only_matching_repetitions() {
        let a = [(1, 10.0), (2, 11.0), (3, 9.0)];
        assert!(
            between(&a, &[(1, 10.0), (2, 11.0), (3, 9.5)])
                .unwrap()
                .paired
        );
        assert!(!between(&a, &[(1, 10.0), (2, 11.0)]).unwrap().paired);
        assert!(paired(&[(1, 0.0)], &[(1, 1.0)]).is_none());
        assert!(paired(&[(1, 1.0)], &[(2, 1.0)]).is_none());
    }

    #[test]
    fn zero_old_mean_has_no_relative_difference() {
        assert!(difference(&s(&[0.0, 0.0]), &s(&[1.0, 2.0])).is_none());
    }
}
