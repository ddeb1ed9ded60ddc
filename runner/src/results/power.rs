//! Statistical power of the t tests the suite uses: how large a true difference must be for
//! a given number of repetitions to detect it (the minimum detectable effect, MDE), and how
//! many repetitions a given effect needs.
//!
//! Exact power from the noncentral t distribution (what R's `power.t.test` and G*Power
//! compute), two-sided α = 0.05, one tail counted (the other adds < 1e-6 at useful powers).
//! Effects are in standard deviations (Cohen's d); multiply by a coefficient of variation to
//! get a relative MDE.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
use statrs::function::gamma::ln_gamma;

/// Two-sided significance level of every verdict.
pub const ALPHA: f64 = 0.05;
/// Power the MDE is quoted at.
pub const POWER: f64 = 0.80;

/// How the two samples relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Design {
    /// Two independent samples of n each (df = 2n − 2, noncentrality d·√(n/2)).
    TwoSample,
    /// n pairs; d is the mean difference over the standard deviation of the differences
    /// (df = n − 1, noncentrality d·√n).
    Paired,
}

impl Design {
    fn df(self, n: f64) -> f64 {
        match self {
            Design::TwoSample => 2.0 * n - 2.0,
            Design::Paired => n - 1.0,
        }
    }

    fn noncentrality(self, d: f64, n: f64) -> f64 {
        match self {
            Design::TwoSample => d * (n / 2.0).sqrt(),
            Design::Paired => d * n.sqrt(),
        }
    }
}

/// Quantile of Student's t with `df` degrees of freedom (df may be fractional).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(p))
        .unwrap_or(f64::NAN)
}

/// P(T > t) for T noncentral t with `df` degrees of freedom and noncentrality `ncp`.
///
/// T = (Z + ncp) / S with S = √(χ²_df / df), so P(T > t) = E[Φ(ncp − t·S)]: one integral over
/// the density of S, by Simpson's rule over ±12 of its spreads around 1 (its mass beyond is
/// below 1e-30).
pub fn noncentral_t_sf(t: f64, df: f64, ncp: f64) -> f64 {
    let normal = Normal::standard();
    let half = df / 2.0;
    // ln of the density of S = √(χ²/df): 2·(df/2)^(df/2) / Γ(df/2) · s^(df−1) · e^(−df·s²/2).
    let ln_c = std::f64::consts::LN_2 + half * half.ln() - ln_gamma(half);
    let density = |s: f64| {
        if s <= 0.0 {
            return if df < 1.0 + 1e-12 && s == 0.0 {
                ln_c.exp()
            } else {
                0.0
            };
        }
        (ln_c + (df - 1.0) * s.ln() - half * s * s).exp()
    };
    let spread = 12.0 / df.sqrt();
    let (lo, hi) = ((1.0 - spread).max(0.0), 1.0 + spread.max(1.0));
    const STEPS: usize = 4000;
    let h = (hi - lo) / STEPS as f64;
    let f = |s: f64| density(s) * normal.cdf(ncp - t * s);
    let mut sum = f(lo) + f(hi);
    for i in 1..STEPS {
        let w = if i % 2 == 1 { 4.0 } else { 2.0 };
        sum += w * f(lo + i as f64 * h);
    }
    (sum * h / 3.0).clamp(0.0, 1.0)
}

/// Power of the two-sided test at level [`ALPHA`] to detect a true effect of `d` standard
/// deviations with `n` repetitions per side (`n` pairs when paired).
pub fn power(design: Design, d: f64, n: f64) -> f64 {
    let df = design.df(n);
    if df < 1.0 {
        return f64::NAN;
    }
    let crit = t_quantile(1.0 - ALPHA / 2.0, df);
    noncentral_t_sf(crit, df, design.noncentrality(d.abs(), n))
}

/// Smallest effect (in standard deviations) detected with [`POWER`] at level [`ALPHA`] with
/// `n` repetitions per side; None below 2 repetitions (no variance to test against).
/// Memoised: it depends on (design, n) only, and a comparison asks it for every metric of
/// every cell (the site asks for hundreds of comparisons; each bisection integrates 60 times).
pub fn mde_d(design: Design, n: u32) -> Option<f64> {
    type Memo = std::collections::HashMap<(Design, u32), Option<f64>>;
    static MEMO: std::sync::Mutex<Option<Memo>> = std::sync::Mutex::new(None);
    if let Some(d) = MEMO
        .lock()
        .ok()
        .and_then(|m| m.as_ref().and_then(|m| m.get(&(design, n)).copied()))
    {
        return d;
    }
    let d = mde_d_uncached(design, n);
    if let Ok(mut m) = MEMO.lock() {
        m.get_or_insert_with(Default::default)
            .insert((design, n), d);
    }
    d
}

fn mde_d_uncached(design: Design, n: u32) -> Option<f64> {
    let n = f64::from(n);
    if design.df(n) < 1.0 {
        return None;
    }
    // Power rises monotonically with d: bisect on [0, 100].
    let (mut lo, mut hi) = (0.0_f64, 100.0_f64);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if power(design, mid, n) < POWER {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(hi)
}

/// Repetitions per side (fractional, as R reports it) for power [`POWER`] against an effect
/// of `d` standard deviations; None when it would take more than 100,000.
pub fn n_for(design: Design, d: f64) -> Option<f64> {
    if d <= 0.0 || power(design, d, 100_000.0) < POWER {
        return None;
    }
    let (mut lo, mut hi) = (2.0_f64, 100_000.0_f64);
    for _ in 0..80 {
        let mid = (lo + hi) / 2.0;
        if power(design, d, mid) < POWER {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(hi)
}

/// Whole repetitions needed to detect a relative difference `effect_pct` when one repetition
/// varies by `sd_pct` (both in percent); None when beyond 100,000.
pub fn reps_for(design: Design, effect_pct: f64, sd_pct: f64) -> Option<u32> {
    if sd_pct <= 0.0 {
        return Some(2);
    }
    n_for(design, effect_pct / sd_pct).map(|n| (n.ceil() as u32).max(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, eps: f64) -> bool {
        (a - b).abs() < eps
    }

    // Published values: R's `power.t.test` (stats package, exact noncentral t) and the
    // `pwr` package's `pwr.t.test`, two-sided, sig.level 0.05.

    #[test]
    fn power_matches_r_power_t_test() {
        // power.t.test(n = 20, delta = 1) → power = 0.8689528
        let p = power(Design::TwoSample, 1.0, 20.0);
        assert!(close(p, 0.868_952_8, 1e-5), "{p}");
    }

    #[test]
    fn sample_sizes_match_published_tables() {
        // power.t.test(power = .90, delta = 1) needs a 0.90 target; with POWER fixed at 0.8
        // we check the 0.8 rows of pwr.t.test: d = 0.2 → 393.4057, 0.5 → 63.76561,
        // 0.8 → 25.52457 (Cohen's table: 393, 64, 26 after rounding up).
        for (d, want) in [(0.2, 393.4057), (0.5, 63.76561), (0.8, 25.52457)] {
            let n = n_for(Design::TwoSample, d).unwrap();
            assert!(close(n, want, 2e-3), "d = {d}: n = {n}, want {want}");
        }
    }

    #[test]
    fn paired_design_is_a_one_sample_test_on_differences() {
        // power.t.test(n = 10, delta = 1, type = "paired") → power = 0.8030969
        let p = power(Design::Paired, 1.0, 10.0);
        assert!(close(p, 0.803_096_9, 1e-5), "{p}");
    }

    #[test]
    fn mde_inverts_power() {
        for design in [Design::TwoSample, Design::Paired] {
            for n in [3, 5, 10, 30] {
                let d = mde_d(design, n).unwrap();
                assert!(
                    close(power(design, d, f64::from(n)), POWER, 1e-6),
                    "{design:?} n={n}"
                );
            }
        }
        // Large-n limit: (z₀.₉₇₅ + z₀.₈) · √(2/n) = 2.8016 · √(2/n).
        let d = mde_d(Design::TwoSample, 10_000).unwrap();
        assert!(close(d, 2.8016 * (2.0f64 / 10_000.0).sqrt(), 1e-4), "{d}");
        assert_eq!(mde_d(Design::TwoSample, 1), None);
        assert_eq!(mde_d(Design::Paired, 1), None);
    }

    #[test]
    fn more_repetitions_detect_smaller_effects() {
        let mdes: Vec<f64> = (2..12).map(|n| mde_d(Design::Paired, n).unwrap()).collect();
        assert!(mdes.windows(2).all(|w| w[1] < w[0]), "{mdes:?}");
    }

    #[test]
    fn repetitions_for_a_relative_effect() {
        // 10 % effect, 5 % spread per repetition: d = 2 → pwr.t.test(d = 2) n = 5.09 → 6.
        assert_eq!(reps_for(Design::TwoSample, 10.0, 5.0), Some(6));
        assert_eq!(reps_for(Design::TwoSample, 10.0, 0.0), Some(2));
        assert_eq!(reps_for(Design::TwoSample, 0.001, 50.0), None);
    }

    #[test]
    fn t_quantiles_match_the_table() {
        assert!(close(t_quantile(0.975, 4.0), 2.776, 1e-3));
        assert!(close(t_quantile(0.975, 1e6), 1.960, 1e-3));
        assert!(close(t_quantile(0.8, 10.0), 0.8791, 1e-4));
    }
}
