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

/// `h.value_at_quantile(q)` for each of `qs`, from one walk of the recorded buckets: the
/// crate's own reading walks every bucket for each quantile, and a plot reads 201 per
/// histogram (seconds per report in a debug build). The same value: the first bucket whose
/// running count reaches ⌈q·total⌉ (at least 1), read as its highest equivalent value; a
/// quantile of 0 is read by the crate (its lowest equivalent value).
fn values_at_quantiles(h: &Histogram<u64>, qs: &[f64]) -> Vec<u64> {
    let mut cumulative = Vec::new();
    let mut total = 0u64;
    for v in h.iter_recorded() {
        total += v.count_at_value();
        cumulative.push((total, v.value_iterated_to()));
    }
    qs.iter()
        .map(|&q| {
            if q == 0.0 {
                return h.value_at_quantile(q);
            }
            let q = q.min(1.0);
            let at = ((q * h.len() as f64).ceil() as u64).max(1);
            let i = cumulative.partition_point(|&(c, _)| c < at);
            cumulative.get(i).map_or(0, |&(_, v)| v)
        })
        .collect()
}

/// A latency on the log axis (at least 1 µs).
fn log_y(v: u64) -> f64 {
    (v as f64).max(1.0)
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
    let qs: Vec<f64> = xs.iter().map(|&x| quantile(x)).collect();
    let curves: Vec<Curve> = series
        .iter()
        .map(|s| {
            let line = values_at_quantiles(&s.hist, &qs);
            let pts = xs.iter().zip(line).map(|(&x, v)| (x, log_y(v))).collect();
            // The band, where there are two repetitions or more: the lowest and highest value
            // a single repetition had at each quantile.
            let band = if s.reps.len() >= 2 {
                let reps: Vec<Vec<u64>> =
                    s.reps.iter().map(|h| values_at_quantiles(h, &qs)).collect();
                xs.iter()
                    .enumerate()
                    .map(|(i, &x)| {
                        let vs = reps.iter().map(|r| log_y(r[i]));
                        let lo = vs.clone().fold(f64::INFINITY, f64::min);
                        (x, lo, vs.fold(0.0, f64::max))
                    })
                    .collect()
            } else {
                Vec::new()
            };
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

    /// The one walk reads what the crate reads at every quantile a plot asks for, and at
    /// the edges (0, 1, past 1, an empty histogram).
    #[test]
    fn one_walk_reads_what_the_crate_reads() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for (i, v) in [3u64, 17, 17, 250, 999, 1_001, 40_000, 40_001, 2_000_000, 7]
            .iter()
            .enumerate()
        {
            h.record_n(*v, i as u64 + 1).unwrap();
        }
        let mut qs: Vec<f64> = (0..=STEPS)
            .map(|i| quantile(5.0 * i as f64 / STEPS as f64))
            .collect();
        qs.extend([0.0, 0.5, 1.0, 1.5, 1e-9]);
        let expect: Vec<u64> = qs.iter().map(|&q| h.value_at_quantile(q)).collect();
        assert_eq!(values_at_quantiles(&h, &qs), expect);
        let empty = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        let expect: Vec<u64> = qs.iter().map(|&q| empty.value_at_quantile(q)).collect();
        assert_eq!(values_at_quantiles(&empty, &qs), expect);
    }

    #[test]
    fn nines_axis_labels() {
        assert_eq!(pct_label(0.0), "0%");
        assert_eq!(pct_label(1.0), "90%");
        assert_eq!(pct_label(2.0), "99%");
        assert_eq!(pct_label(3.0), "99.9%");
        assert_eq!(pct_label(4.0), "99.99%");
    }
}
