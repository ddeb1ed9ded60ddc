//! A counter read now and then, as (unix µs, cumulative value) points, and its value at any
//! instant between two reads by linear interpolation: how a count over the generator's
//! measured window is cut from reads that do not fall on its edges.

/// The value at `t_unix_us`, interpolated between its neighbours; `None` outside the reads
/// (a window edge before the first read or after the last is not guessed).
pub fn value_at(points: &[(u64, f64)], t_unix_us: u64) -> Option<f64> {
    let after = points.iter().position(|p| p.0 >= t_unix_us)?;
    if after == 0 {
        return (points[0].0 == t_unix_us).then_some(points[0].1);
    }
    let (a, b) = (points[after - 1], points[after]);
    let span = (b.0 - a.0) as f64;
    let frac = if span > 0.0 {
        (t_unix_us - a.0) as f64 / span
    } else {
        1.0
    };
    Some(a.1 + (b.1 - a.1) * frac)
}

/// Growth of the counter over [start, end]; `None` if either edge is outside the reads or
/// the counter went backwards (a thread's counts left with it).
pub fn delta(points: &[(u64, f64)], start_unix_us: u64, end_unix_us: u64) -> Option<f64> {
    let (a, b) = (
        value_at(points, start_unix_us)?,
        value_at(points, end_unix_us)?,
    );
    (b >= a).then_some(b - a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_between_reads_and_refuses_outside() {
        let p = [(100, 0.0), (200, 10.0), (300, 30.0)];
        assert_eq!(value_at(&p, 150), Some(5.0));
        assert_eq!(value_at(&p, 100), Some(0.0));
        assert_eq!(value_at(&p, 50), None);
        assert_eq!(value_at(&p, 301), None);
        assert_eq!(delta(&p, 150, 250), Some(15.0));
        assert_eq!(delta(&[(0, 5.0), (10, 1.0)], 0, 10), None, "went backwards");
    }
}
