//! Per-service bar charts: start-up time (median, whisker = min–max over every start) and
//! memory (wide light bar = peak RSS under load, narrow solid bar = idle RSS).

use plotters::coord::ranged1d::SegmentedCoord;
use plotters::coord::types::RangedCoordu32;
use plotters::prelude::*;

use super::palette::colour;
use super::style;

pub struct Startup {
    pub service: String,
    pub median_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    pub n: usize,
}

pub struct Memory {
    pub service: String,
    pub idle_bytes: Option<f64>,
    pub peak_bytes: Option<f64>,
}

const MIB: f64 = 1_048_576.0;

pub fn startup(title: &str, rows: &[Startup]) -> anyhow::Result<String> {
    anyhow::ensure!(!rows.is_empty(), "no start-up samples for {title}");
    let n = rows.len() as u32;
    let ymax = rows.iter().map(|r| r.max_us).fold(0.0, f64::max).max(1.0) / 1000.0 * 1.15;
    style::render_svg(|root| {
        let mut chart = style::frame(root, title).build_cartesian_2d(segments(n), 0f64..ymax)?;
        style::mesh(&mut chart)
            .disable_x_mesh()
            .x_desc("service (label: number of starts)")
            .y_desc("exec → first HTTP 200 (ms; bar median, whisker min–max)")
            .x_label_formatter(&|v| {
                label(rows.iter().map(|r| format!("{} (n={})", r.service, r.n)), v)
            })
            .draw()?;
        for (i, r) in rows.iter().enumerate() {
            let i = i as u32;
            let c = colour(&r.service);
            let mut bar = Rectangle::new(
                [
                    (SegmentValue::Exact(i), 0.0),
                    (SegmentValue::Exact(i + 1), r.median_us / 1000.0),
                ],
                c.mix(0.85).filled(),
            );
            bar.set_margin(0, 0, 20, 20);
            chart.draw_series([bar])?;
            let (lo, hi) = (r.min_us / 1000.0, r.max_us / 1000.0);
            let x = SegmentValue::CenterOf(i);
            chart.draw_series([PathElement::new(
                vec![(x.clone(), lo), (x.clone(), hi)],
                BLACK.stroke_width(2),
            )])?;
            chart.draw_series([lo, hi].map(|y| {
                EmptyElement::at((x.clone(), y))
                    + PathElement::new(vec![(-8, 0), (8, 0)], BLACK.stroke_width(2))
            }))?;
        }
        Ok(())
    })
}

pub fn memory(title: &str, rows: &[Memory]) -> anyhow::Result<String> {
    anyhow::ensure!(!rows.is_empty(), "no memory samples for {title}");
    let n = rows.len() as u32;
    let ymax = rows
        .iter()
        .flat_map(|r| [r.idle_bytes, r.peak_bytes])
        .flatten()
        .fold(0.0, f64::max)
        .max(MIB)
        / MIB
        * 1.15;
    style::render_svg(|root| {
        let mut chart = style::frame(root, title).build_cartesian_2d(segments(n), 0f64..ymax)?;
        style::mesh(&mut chart)
            .disable_x_mesh()
            .x_desc("service")
            .y_desc("RSS (MiB; wide light bar = peak under load, narrow bar = idle)")
            .x_label_formatter(&|v| label(rows.iter().map(|r| r.service.clone()), v))
            .draw()?;
        for (i, r) in rows.iter().enumerate() {
            let i = i as u32;
            let c = colour(&r.service);
            let seg = |y: f64| {
                [
                    (SegmentValue::Exact(i), 0.0),
                    (SegmentValue::Exact(i + 1), y / MIB),
                ]
            };
            if let Some(p) = r.peak_bytes {
                let mut bar = Rectangle::new(seg(p), c.mix(0.35).filled());
                bar.set_margin(0, 0, 15, 15);
                chart.draw_series([bar])?;
            }
            if let Some(idle) = r.idle_bytes {
                let mut bar = Rectangle::new(seg(idle), c.filled());
                bar.set_margin(0, 0, 45, 45);
                chart.draw_series([bar])?;
            }
        }
        Ok(())
    })
}

/// One segment per service (a u32 range's segments include its end, hence `n − 1`).
fn segments(n: u32) -> SegmentedCoord<RangedCoordu32> {
    (0u32..n.saturating_sub(1).max(1)).into_segmented()
}

/// Axis label of a segment centre; other positions stay blank.
fn label(names: impl Iterator<Item = String>, v: &SegmentValue<u32>) -> String {
    match v {
        SegmentValue::CenterOf(i) => names.into_iter().nth(*i as usize).unwrap_or_default(),
        _ => String::new(),
    }
}
