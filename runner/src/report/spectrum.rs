//! Latency percentile spectrum, HdrHistogram style: x = percentile on a "nines" axis
//! (log of 1/(1−q): 90 %, 99 %, 99.9 % … equally spaced), y = latency on a log axis, one line
//! per service from its repetitions' merged histograms at one load level.

use hdrhistogram::Histogram;
use plotters::prelude::*;

use super::palette::colour;
use super::style::{self, swatch};
use crate::results::units::micros_brief;

pub struct Spectrum {
    pub service: String,
    pub hist: Histogram<u64>,
}

/// Points per curve; enough for a smooth line, few enough to keep the SVG small.
const STEPS: usize = 200;

/// "Nines" x → quantile: x = 2 is the 99th percentile.
fn quantile(x: f64) -> f64 {
    1.0 - 10f64.powf(-x)
}

fn pct_label(x: f64) -> String {
    let q = quantile(x) * 100.0;
    if x < 0.5 {
        format!("{q:.0}%")
    } else {
        // As many decimals as the nines need: 90%, 99%, 99.9%, 99.99%.
        let decimals = (x.round() as usize).saturating_sub(2);
        format!("{q:.decimals$}%")
    }
}

/// The spectrum ends where the data ends: beyond 1/count the percentiles are the maximum.
fn x_end(series: &[Spectrum]) -> f64 {
    let min_count = series
        .iter()
        .map(|s| s.hist.len())
        .min()
        .unwrap_or(1)
        .max(10);
    (min_count as f64).log10().floor().clamp(1.0, 5.0)
}

pub fn render(title: &str, series: &[Spectrum]) -> anyhow::Result<String> {
    anyhow::ensure!(!series.is_empty(), "no histograms to plot for {title}");
    let xmax = x_end(series);
    let curves: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|s| {
            let pts = (0..=STEPS)
                .map(|i| {
                    let x = xmax * i as f64 / STEPS as f64;
                    (x, (s.hist.value_at_quantile(quantile(x)) as f64).max(1.0))
                })
                .collect();
            (s.service.clone(), pts)
        })
        .collect();
    let ys = || curves.iter().flat_map(|c| c.1.iter().map(|p| p.1));
    let ymin = ys().fold(f64::INFINITY, f64::min).max(1.0) / 1.5;
    let ymax = ys().fold(1.0, f64::max) * 1.5;
    style::render_svg(|root| {
        let mut chart = style::frame(root, title)
            .margin_right(45) // room for the last "99.99…%" label
            .build_cartesian_2d(0f64..xmax, (ymin..ymax).log_scale())?;
        style::mesh(&mut chart)
            .x_labels(xmax as usize + 1)
            .x_desc("percentile")
            .y_desc("latency (log scale)")
            .x_label_formatter(&|x| pct_label(*x))
            .y_label_formatter(&|y| micros_brief(*y))
            .draw()?;
        for (service, pts) in curves {
            let c = colour(&service);
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))?
                .label(service)
                .legend(swatch(c));
        }
        style::legend(&mut chart)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nines_axis_labels() {
        assert_eq!(pct_label(0.0), "0%");
        assert_eq!(pct_label(1.0), "90%");
        assert_eq!(pct_label(2.0), "99%");
        assert_eq!(pct_label(3.0), "99.9%");
        assert_eq!(pct_label(4.0), "99.99%");
    }
}
