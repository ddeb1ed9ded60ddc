//! Descriptive statistics over repetitions: mean, median, sample standard deviation,
//! coefficient of variation and the 95 % confidence interval of the mean.
//!
//! CI method: Student's t interval, mean ± t(0.975, n−1) · s/√n. With the 3–5 repetitions a
//! matrix affords, the normal 1.96 would understate the interval by up to 2×.

pub fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    Some(xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Median (mean of the two middle values for even n).
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Sample standard deviation (n − 1 denominator); None for n < 2.
pub fn stdev(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (xs.len() - 1) as f64).sqrt())
}

/// Coefficient of variation, stdev / mean (a fraction); None for n < 2 or a zero mean.
pub fn cv(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    if m == 0.0 {
        return None;
    }
    Some(stdev(xs)? / m.abs())
}

/// Two-sided 97.5 % quantile of Student's t with `df` degrees of freedom.
pub fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        31..=40 => 2.021,
        41..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// 95 % CI of the mean (Student t); None for n < 2.
pub fn ci95(xs: &[f64]) -> Option<(f64, f64)> {
    let m = mean(xs)?;
    let s = stdev(xs)?;
    let half = t_975(xs.len() - 1) * s / (xs.len() as f64).sqrt();
    Some((m - half, m + half))
}

/// Relative change in percent, (new − old) / old × 100.
pub fn pct_change(old: f64, new: f64) -> Option<f64> {
    (old != 0.0).then(|| (new - old) / old * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, eps: f64) -> bool {
        (a - b).abs() < eps
    }

    #[test]
    fn mean_median_of_known_sets() {
        assert_eq!(mean(&[1.0, 2.0, 3.0, 4.0]), Some(2.5));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(mean(&[]), None);
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn sample_stdev_uses_n_minus_one() {
        // Classic set: population sd = 2, sample sd = sqrt(32/7).
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert!(close(stdev(&xs).unwrap(), (32.0f64 / 7.0).sqrt(), 1e-12));
        assert!(close(cv(&xs).unwrap(), (32.0f64 / 7.0).sqrt() / 5.0, 1e-12));
        assert_eq!(stdev(&[1.0]), None);
    }

    #[test]
    fn ci95_uses_student_t() {
        // n=3, mean 20, s=10 → half-width 4.303·10/√3 = 24.843...
        let (lo, hi) = ci95(&[10.0, 20.0, 30.0]).unwrap();
        assert!(close(lo, 20.0 - 24.8434, 1e-3), "{lo}");
        assert!(close(hi, 20.0 + 24.8434, 1e-3), "{hi}");
        assert_eq!(ci95(&[5.0]), None);
        // Identical values → zero-width interval.
        assert_eq!(ci95(&[7.0, 7.0, 7.0]), Some((7.0, 7.0)));
    }

    #[test]
    fn t_table_edges() {
        assert_eq!(t_975(1), 12.706);
        assert_eq!(t_975(30), 2.042);
        assert_eq!(t_975(1000), 1.96);
    }

    #[test]
    fn pct_change_known() {
        assert_eq!(pct_change(100.0, 95.0), Some(-5.0));
        assert_eq!(pct_change(0.0, 1.0), None);
    }
}
