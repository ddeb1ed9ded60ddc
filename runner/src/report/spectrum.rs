//! Latency percentile spectrum, HdrHistogram style: x = percentile on a "nines" axis
//! (log of 1/(1−q): 90 %, 99 %, 99.9 % … equally spaced), y = latency on a log axis, one line
//! per service from its repetitions' merged histograms at one load level, inside a band from
//! the lowest to the highest single repetition at each percentile: two lines whose bands
//! overlap are not a difference the run showed.

use hdrhistogram::Histogram;
use plotters::coord::combinators::BindKeyPoints;
use plotters::prelude::*;

use super::palette::colour;
use super::style;
use crate::results::units::micros_brief;

pub struct Spectrum {
    pub service: String,
    /// The repetitions merged.
    pub hist: Histogram<u64>,
    /// Each repetition's own histogram (the band).
    pub reps: Vec<Histogram<u64>>,
}

/// A service's line (x, latency) and band (x, lowest, highest).
type Curve = (String, Vec<(f64, f64)>, Vec<(f64, f64, f64)>);

/// The band at quantile `q`: the lowest and highest value a single repetition had there.
fn band_at(reps: &[Histogram<u64>], q: f64) -> Option<(f64, f64)> {
    let vs = reps
        .iter()
        .map(|h| (h.value_at_quantile(q) as f64).max(1.0));
    let lo = vs.clone().fold(f64::INFINITY, f64::min);
    let hi = vs.fold(0.0, f64::max);
    (reps.len() >= 2).then_some((lo, hi))
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
    let xs: Vec<f64> = (0..=STEPS)
        .map(|i| xmax * i as f64 / STEPS as f64)
        .collect();
    let curves: Vec<Curve> = series
        .iter()
        .map(|s| {
            let pts = xs
                .iter()
                .map(|&x| (x, (s.hist.value_at_quantile(quantile(x)) as f64).max(1.0)))
                .collect();
            let band = xs
                .iter()
                .filter_map(|&x| band_at(&s.reps, quantile(x)).map(|(lo, hi)| (x, lo, hi)))
                .collect();
            (s.service.clone(), pts, band)
        })
        .collect();
    let ys = || {
        curves.iter().flat_map(|c| {
            c.1.iter()
                .map(|p| p.1)
                .chain(c.2.iter().flat_map(|b| [b.1, b.2]))
        })
    };
    let ymin = ys().fold(f64::INFINITY, f64::min).max(1.0) / 1.5;
    let ymax = ys().fold(1.0, f64::max) * 1.5;
    let yticks = style::thin(style::log_ticks(ymin, ymax), 12);
    style::render_svg(|root| {
        let (plot, side) = style::with_legend(root, title)?;
        let mut chart = style::frame_untitled(&plot)
            .margin_right(45) // room for the last "99.99…%" label
            .build_cartesian_2d(
                0f64..xmax,
                (ymin..ymax).log_scale().with_key_points(yticks.clone()),
            )?;
        style::mesh(&mut chart)
            .x_labels(xmax as usize + 1)
            .x_desc("percentile")
            .y_desc("latency (log scale; band: min–max over repetitions)")
            .x_label_formatter(&|x| pct_label(*x))
            .y_label_formatter(&|y| micros_brief(*y))
            .draw()?;
        // Bands first, lines over them.
        for (service, _, band) in &curves {
            if band.is_empty() {
                continue;
            }
            let outline: Vec<(f64, f64)> = band
                .iter()
                .map(|b| (b.0, b.2))
                .chain(band.iter().rev().map(|b| (b.0, b.1)))
                .collect();
            chart.draw_series([Polygon::new(outline, colour(service).mix(0.15).filled())])?;
        }
        for (service, pts, _) in &curves {
            chart.draw_series(LineSeries::new(
                pts.clone(),
                colour(service).stroke_width(2),
            ))?;
        }
        let entries: Vec<_> = curves.iter().map(|c| (c.0.clone(), colour(&c.0))).collect();
        style::legend_column(&side, &entries)
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
