//! Closed loop: requests per second vs connections, one line per service, error bars =
//! 95 % Student-t CI of the mean over repetitions. One chart per (scenario, profile).

use plotters::prelude::*;

use super::palette::colour;
use super::style::{self, error_bars, swatch};
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

pub fn render(title: &str, series: &[ThroughputLine]) -> anyhow::Result<String> {
    let all = || series.iter().flat_map(|s| s.points.iter());
    anyhow::ensure!(all().next().is_some(), "no points to plot for {title}");
    // The axis is log2(connections), labelled 2^k: every power-of-two level lands on a
    // labelled tick (plotters' log axis only labels powers of ten).
    let lx = |x: f64| x.max(1.0).log2();
    let xmin = all().map(|p| lx(p.x)).fold(f64::INFINITY, f64::min).floor();
    let xmax = all().map(|p| lx(p.x)).fold(0.0, f64::max).ceil();
    // A single level still gets a readable axis: one power of two either side.
    let (xmin, xmax) = if xmax - xmin < 1.0 {
        (xmin - 1.0, xmax + 1.0)
    } else {
        (xmin, xmax)
    };
    let k = series.len() as f64;
    let ymax = all().map(|p| p.hi.max(p.y)).fold(0.0, f64::max).max(1.0) * 1.12;
    style::render_svg(|root| {
        let mut chart =
            style::frame(root, title).build_cartesian_2d(xmin - 0.3..xmax + 0.3, 0f64..ymax)?;
        style::mesh(&mut chart)
            .x_labels((xmax - xmin) as usize + 1)
            .x_desc("connections (log scale)")
            .y_desc("requests per second (mean, bars = 95 % CI; services offset slightly)")
            .x_label_formatter(&|x| format!("{:.0}", x.exp2()))
            .y_label_formatter(&|y| rate_brief(*y))
            .draw()?;
        for (i, s) in series.iter().enumerate() {
            let c = colour(&s.service);
            // Services side by side around each level ("dodge"), so error bars at the
            // same level do not hide each other.
            let dodge = (i as f64 - (k - 1.0) / 2.0) * 0.015 * (xmax - xmin + 0.6);
            let mut pts: Vec<Point> = s
                .points
                .iter()
                .map(|p| Point {
                    x: lx(p.x) + dodge,
                    ..p.clone()
                })
                .collect();
            pts.sort_by(|a, b| a.x.total_cmp(&b.x));
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|p| (p.x, p.y)),
                    c.stroke_width(2),
                ))?
                .label(s.service.clone())
                .legend(swatch(c));
            chart.draw_series(pts.iter().map(|p| Circle::new((p.x, p.y), 4, c.filled())))?;
            let bars: Vec<(f64, f64, f64)> = pts.iter().map(|p| (p.x, p.lo, p.hi)).collect();
            error_bars(&mut chart, &bars, c)?;
        }
        style::legend(&mut chart)
    })
}
