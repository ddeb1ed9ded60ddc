//! Open loop: latency vs offered rate per service, where the knee is. p99 as a thick line
//! with points, p50 as a thin line in the same colour; log latency axis.

use plotters::prelude::*;

use super::palette::colour;
use super::style::{self, swatch};
use crate::results::units::{micros_brief, rate_brief};

/// (offered req/s, p50 µs, p99 µs) per level.
pub struct LatencyLine {
    pub service: String,
    pub points: Vec<(f64, f64, f64)>,
}

pub fn render(title: &str, series: &[LatencyLine]) -> anyhow::Result<String> {
    let all = || series.iter().flat_map(|s| s.points.iter());
    anyhow::ensure!(all().next().is_some(), "no points to plot for {title}");
    let xmax = all().map(|p| p.0).fold(0.0, f64::max) * 1.08;
    let ymin = all()
        .map(|p| p.1.min(p.2))
        .fold(f64::INFINITY, f64::min)
        .max(1.0)
        / 1.5;
    let ymax = all().map(|p| p.2.max(p.1)).fold(1.0, f64::max) * 1.5;
    style::render_svg(|root| {
        let mut chart = style::frame(root, title)
            .build_cartesian_2d(0f64..xmax.max(1.0), (ymin..ymax).log_scale())?;
        style::mesh(&mut chart)
            .x_desc("offered rate (requests per second)")
            .y_desc("latency from intended send (thick p99, thin p50)")
            .x_label_formatter(&|x| rate_brief(*x))
            .y_label_formatter(&|y| micros_brief(*y))
            .draw()?;
        for s in series {
            let c = colour(&s.service);
            let mut pts = s.points.clone();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|p| (p.0, p.2)),
                    c.stroke_width(3),
                ))?
                .label(s.service.clone())
                .legend(swatch(c));
            chart.draw_series(pts.iter().map(|p| Circle::new((p.0, p.2), 4, c.filled())))?;
            chart.draw_series(LineSeries::new(
                pts.iter().map(|p| (p.0, p.1)),
                c.stroke_width(1),
            ))?;
        }
        style::legend(&mut chart)
    })
}
