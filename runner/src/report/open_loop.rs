//! Open loop: p99 latency per offered rate, a point per service with a whisker over its
//! repetitions' p99s (min–max), on a log latency axis. Rates are categories and no line
//! joins them (nothing was measured between two rates); p50 is in the tables.

use plotters::coord::combinators::BindKeyPoints;
use plotters::prelude::*;

use super::palette::colour;
use super::style;
use super::throughput::{dodge, levels};
use crate::results::units::{micros_brief, rate_brief};

/// One offered rate: the rate, the p99 of the merged repetitions and the lowest and highest
/// p99 of a single repetition (equal to it when there is one repetition).
#[derive(Debug, Clone)]
pub struct P99 {
    pub rate: f64,
    pub p99: f64,
    pub lo: f64,
    pub hi: f64,
}

pub struct LatencyLine {
    pub service: String,
    pub points: Vec<P99>,
}

pub fn render(title: &str, series: &[LatencyLine]) -> anyhow::Result<String> {
    let all = || series.iter().flat_map(|s| s.points.iter());
    anyhow::ensure!(all().next().is_some(), "no points to plot for {title}");
    let cats = levels(all().map(|p| p.rate));
    let pos = |x: f64| cats.iter().position(|c| *c == x).unwrap_or(0) as f64;
    let n = cats.len();
    let ymin = all()
        .map(|p| p.lo.min(p.p99))
        .fold(f64::INFINITY, f64::min)
        .max(1.0)
        / 1.5;
    let ymax = all().map(|p| p.hi.max(p.p99)).fold(1.0, f64::max) * 1.5;
    let yticks = style::thin(style::log_ticks(ymin, ymax), 12);
    style::render_svg(|root| {
        let (plot, side) = style::with_legend(root, title)?;
        let mut chart = style::frame_untitled(&plot).build_cartesian_2d(
            style::Categories(n),
            (ymin..ymax).log_scale().with_key_points(yticks.clone()),
        )?;
        style::mesh(&mut chart)
            .disable_x_mesh()
            .x_desc("offered rate, requests per second (measured rates only)")
            .y_desc("p99 from intended send (whisker: min–max over repetitions)")
            .x_label_formatter(&|x| {
                cats.get(x.round() as usize)
                    .map(|c| rate_brief(*c))
                    .unwrap_or_default()
            })
            .y_label_formatter(&|y| micros_brief(*y))
            .draw()?;
        let k = series.len();
        for (i, s) in series.iter().enumerate() {
            let c = colour(&s.service);
            let pts: Vec<_> = s
                .points
                .iter()
                .map(|p| (pos(p.rate) + dodge(i, k), p.p99, p.lo, p.hi))
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
