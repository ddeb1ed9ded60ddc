//! Every value printed with its unit, in one place. Three registers, because a table cell, an
//! axis label and a comparison line each need a different precision — but each register is
//! defined once and every output uses these functions:
//! - `*_cell`: results.md tables and the README headline (short, stable widths);
//! - `*_brief`: chart axis labels and the README headline (few significant digits);
//! - [`value`]: `matrix compare` and metric values of a known [`Unit`] (enough digits to see a
//!   few-percent change).

use serde::Serialize;

/// How a metric's values are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    PerSecond,
    Micros,
    Bytes,
    /// A count per request (syscalls, context switches, instructions).
    Count,
}

const MIB: f64 = 1_048_576.0;

/// A metric value in its unit, compact: "12.3k", "812 µs", "1.25 ms", "7.40 MiB".
pub fn value(unit: Unit, x: f64) -> String {
    match unit {
        Unit::PerSecond if x >= 10_000.0 => format!("{:.1}k", x / 1000.0),
        Unit::PerSecond if x >= 1000.0 => format!("{:.2}k", x / 1000.0),
        Unit::PerSecond => format!("{x:.1}"),
        Unit::Micros if x >= 10_000.0 => format!("{:.1} ms", x / 1000.0),
        Unit::Micros if x >= 1000.0 => format!("{:.2} ms", x / 1000.0),
        Unit::Micros if x >= 100.0 => format!("{x:.0} µs"),
        Unit::Micros if x >= 10.0 => format!("{x:.1} µs"),
        Unit::Micros => format!("{x:.2} µs"),
        Unit::Bytes => format!("{:.2} MiB", x / MIB),
        Unit::Count => count(x),
    }
}

/// A count per request: "9,972", "21.5", "2.031", "0.0320".
pub fn count(x: f64) -> String {
    if x >= 1000.0 {
        let n = x.round() as u64;
        let (th, rest) = (n / 1000, n % 1000);
        if th >= 1000 {
            format!("{},{:03},{rest:03}", th / 1000, th % 1000)
        } else {
            format!("{th},{rest:03}")
        }
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else if x >= 0.1 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

/// "120k ±4%": a req/s mean in a table cell with the half-width of its 95 % interval, as a
/// share of the mean (results.md and the terminal summary).
pub fn rate_with_ci(r: &super::schema::Stat) -> String {
    match (r.ci95_low, r.ci95_high) {
        (Some(lo), Some(hi)) => format!(
            "{} ±{:.0}%",
            rate_cell(r.mean),
            (hi - lo) / 2.0 / r.mean.max(1e-9) * 100.0
        ),
        _ => rate_cell(r.mean),
    }
}

/// Requests per second in a table cell: "142k", "5.0k", "830".
pub fn rate_cell(x: f64) -> String {
    if x >= 10_000.0 {
        format!("{:.0}k", x / 1000.0)
    } else if x >= 1000.0 {
        format!("{:.1}k", x / 1000.0)
    } else {
        format!("{x:.0}")
    }
}

/// Microseconds in a table cell: "812 µs", "1.25 ms".
pub fn micros_cell(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

/// Bytes as MiB with one decimal: "10.9 MiB".
pub fn mib_cell(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / MIB)
}

/// Requests per second, brief (axis labels): "1.2M", "40k", "500".
pub fn rate_brief(x: f64) -> String {
    if x >= 1_000_000.0 {
        format!("{:.1}M", x / 1e6)
    } else if x >= 1000.0 {
        format!("{:.0}k", x / 1000.0)
    } else {
        format!("{x:.0}")
    }
}

/// Microseconds, brief (axis labels, README headline): "250 µs", "2.5 ms".
pub fn micros_brief(us: f64) -> String {
    if us >= 1000.0 {
        format!("{} ms", few_digits(us / 1000.0))
    } else {
        format!("{} µs", few_digits(us))
    }
}

/// Few significant digits for axis labels: 1, 2.5, 10, 250.
fn few_digits(x: f64) -> String {
    if x >= 10.0 || x.fract().abs() < 1e-9 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// Seconds as minutes:seconds, "8:28" (plan estimates, progress ETA).
pub fn min_sec(seconds: f64) -> String {
    let s = seconds.round() as u64;
    format!("{}:{:02}", s / 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_register_at_its_boundaries() {
        assert_eq!(value(Unit::PerSecond, 142_300.0), "142.3k");
        assert_eq!(value(Unit::PerSecond, 5_000.0), "5.00k");
        assert_eq!(value(Unit::Micros, 68.3), "68.3 µs");
        assert_eq!(value(Unit::Micros, 9_100.0), "9.10 ms");
        assert_eq!(value(Unit::Bytes, 3.5 * MIB), "3.50 MiB");
        assert_eq!(rate_cell(142_300.0), "142k");
        assert_eq!(rate_cell(5_000.0), "5.0k");
        assert_eq!(micros_cell(687.0), "687 µs");
        assert_eq!(micros_cell(1_250.0), "1.25 ms");
        assert_eq!(mib_cell(10.9 * MIB), "10.9 MiB");
        assert_eq!(rate_brief(1_200_000.0), "1.2M");
        assert_eq!(micros_brief(2_500.0), "2.5 ms");
        assert_eq!(micros_brief(250.0), "250 µs");
        assert_eq!(min_sec(508.0), "8:28");
    }
}
