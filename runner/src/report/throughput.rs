//! Closed loop: requests per second per connection level, a point per service with error
//! bars = 95 % Student-t CI of the mean over repetitions. One chart per (scenario, profile).
//! The levels are categories, not a continuous axis, and no line joins them: a line from
//! c1 to c64 would draw values nobody measured in between.

use super::palette::colour;
use super::style;
use crate::results::units::rate_brief;

/// One measured point: load-axis position, mean, CI (equal to the mean when n < 2).
#[derive(Debug, Clone)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub lo: f64,
    pub hi: f64,
}

pub struct ThroughputLine {
    pub service: String,
    pub points: Vec<Point>,
}

/// The measured levels in order: the categories of the x axis.
pub fn levels(xs: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = xs.collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// Offset of service `i` of `k` around its level's category ("dodge"), so error bars at
/// the same level do not hide each other; within ±0.3 of the category.
pub fn dodge(i: usize, k: usize) -> f64 {
    if k <= 1 {
        return 0.0;
    }
    (i as f64 / (k - 1) as f64 - 0.5) * 0.6
}

pub fn render(title: &str, series: &[ThroughputLine]) -> anyhow::Result<String> {
    let all = || series.iter().flat_map(|s| s.points.iter());
    anyhow::ensure!(all().next().is_some(), "no points to plot for {title}");
    let cats = levels(all().map(|p| p.x));
    let pos = |x: f64| cats.iter().position(|c| *c == x).unwrap_or(0) as f64;
    let n = cats.len();
    let ymax = all().map(|p| p.hi.max(p.y)).fold(0.0, f64::max).max(1.0) * 1.12;
    style::render_svg(|root| {
        let (plot, side) = style::with_legend(root, title)?;
        let mut chart =
            style::frame_untitled(&plot).build_cartesian_2d(style::Categories(n), 0f64..ymax)?;
        style::mesh(&mut chart)
            .disable_x_mesh()
            .x_desc("connections (measured levels only; services side by side)")
            .y_desc("requests per second (mean, bars = 95 % CI)")
            .x_label_formatter(&|x| {
                cats.get(x.round() as usize)
                    .map(|c| format!("{c:.0}"))
                    .unwrap_or_default()
            })
            .y_label_formatter(&|y| rate_brief(*y))
            .draw()?;
        let k = series.len();
        for (i, s) in series.iter().enumerate() {
            let c = colour(&s.service);
            let pts: Vec<_> = s
                .points
                .iter()
                .map(|p| (pos(p.x) + dodge(i, k), p.y, p.lo, p.hi))
                .collect();
            style::dots_with_bars(&mut chart, &pts, c)?;
        }
        let entries: Vec<_> = series
            .iter()
            .map(|s| (s.service.clone(), colour(&s.service)))
            .collect();
        style::legend_column(&side, &entries)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_categories_and_dodges_stay_inside_them() {
        assert_eq!(levels([64.0, 1.0, 64.0].into_iter()), vec![1.0, 64.0]);
        for k in 1..12 {
            for i in 0..k {
                assert!(dodge(i, k).abs() <= 0.3 + 1e-9);
            }
        }
    }

    #[test]
    fn no_line_joins_two_levels() {
        let line = |s: &str| ThroughputLine {
            service: s.into(),
            points: [1.0, 16.0, 64.0]
                .iter()
                .map(|x| Point {
                    x: *x,
                    y: 1000.0 * x,
                    lo: 900.0 * x,
                    hi: 1100.0 * x,
                })
                .collect(),
        };
        let svg = render("t", &[line("ping-a"), line("ping-b")]).unwrap();
        // Whiskers are two-point paths; a line across levels would have more points or
        // join two circles' centres.
        for pl in svg.split("<polyline").skip(1) {
            let pts = pl
                .split("points=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            assert!(pts.split_whitespace().count() <= 2, "{pts}");
        }
    }
}
