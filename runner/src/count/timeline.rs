//! A counter read now and then, as (unix µs, cumulative value) points, and its value at any
//! instant between two reads by linear interpolation: how a count over the generator's
//! measured window is cut from reads that do not fall on its edges.

pub use crate::sample::value_at;

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
