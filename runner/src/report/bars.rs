//! Per-service bar charts, horizontal (a service's name on its own row): start-up time
//! (median, whisker = min–max over every start) and memory (wide light bar = peak RSS under
//! load, narrow solid bar = idle RSS).

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

/// Room left of the plot for the service names (horizontal bars: one name per row, so no
/// two labels share a line, however long the names).
const NAMES_W: u32 = 200;

/// A service's row label: without the "ping-" every service name starts with.
fn short(service: &str) -> String {
    service.strip_prefix("ping-").unwrap_or(service).to_string()
}

/// Row `i` of `n`, counted from the top (a segmented axis counts from the bottom).
fn row(i: usize, n: usize) -> u32 {
    (n - 1 - i) as u32
}

pub fn startup(title: &str, rows: &[Startup]) -> anyhow::Result<String> {
    anyhow::ensure!(!rows.is_empty(), "no start-up samples for {title}");
    let n = rows.len();
    let xmax = rows.iter().map(|r| r.max_us).fold(0.0, f64::max).max(1.0) / 1000.0 * 1.15;
    // The number of starts in the axis text when every service had the same, else per row.
    let same_n = rows.iter().all(|r| r.n == rows[0].n);
    let names: Vec<String> = rows
        .iter()
        .rev()
        .map(|r| {
            if same_n {
                short(&r.service)
            } else {
                format!("{} (n={})", short(&r.service), r.n)
            }
        })
        .collect();
    let desc = if same_n {
        format!(
            "exec → first HTTP 200, ms (bar: median of the {} starts of each service; whisker: min–max)",
            rows[0].n
        )
    } else {
        "exec → first HTTP 200, ms (bar: median of the service's n starts; whisker: min–max)"
            .to_string()
    };
    style::render_svg(|root| {
        let mut chart = style::frame(root, title)
            .y_label_area_size(NAMES_W)
            .build_cartesian_2d(0f64..xmax, segments(n as u32))?;
        style::mesh(&mut chart)
            .disable_y_mesh()
            .x_desc(desc.as_str())
            .y_label_formatter(&|v| label(names.iter().cloned(), v))
            .draw()?;
        for (i, r) in rows.iter().enumerate() {
            let j = row(i, n);
            let c = colour(&r.service);
            let mut bar = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(j)),
                    (r.median_us / 1000.0, SegmentValue::Exact(j + 1)),
                ],
                c.mix(0.85).filled(),
            );
            bar.set_margin(10, 10, 0, 0);
            chart.draw_series([bar])?;
            let (lo, hi) = (r.min_us / 1000.0, r.max_us / 1000.0);
            let y = SegmentValue::CenterOf(j);
            chart.draw_series([PathElement::new(
                vec![(lo, y.clone()), (hi, y.clone())],
                BLACK.stroke_width(2),
            )])?;
            chart.draw_series([lo, hi].map(|x| {
                EmptyElement::at((x, y.clone()))
                    + PathElement::new(vec![(0, -8), (0, 8)], BLACK.stroke_width(2))
            }))?;
        }
        Ok(())
    })
}

pub fn memory(title: &str, rows: &[Memory]) -> anyhow::Result<String> {
    anyhow::ensure!(!rows.is_empty(), "no memory samples for {title}");
    let n = rows.len();
    let xmax = rows
        .iter()
        .flat_map(|r| [r.idle_bytes, r.peak_bytes])
        .flatten()
        .fold(0.0, f64::max)
        .max(MIB)
        / MIB
        * 1.15;
    let names: Vec<String> = rows.iter().rev().map(|r| short(&r.service)).collect();
    style::render_svg(|root| {
        let mut chart = style::frame(root, title)
            .y_label_area_size(NAMES_W)
            .build_cartesian_2d(0f64..xmax, segments(n as u32))?;
        style::mesh(&mut chart)
            .disable_y_mesh()
            .x_desc("RSS, MiB (wide light bar = peak under load, narrow bar = median idle)")
            .y_label_formatter(&|v| label(names.iter().cloned(), v))
            .draw()?;
        for (i, r) in rows.iter().enumerate() {
            let j = row(i, n);
            let c = colour(&r.service);
            let seg = |x: f64| {
                [
                    (0.0, SegmentValue::Exact(j)),
                    (x / MIB, SegmentValue::Exact(j + 1)),
                ]
            };
            if let Some(p) = r.peak_bytes {
                let mut bar = Rectangle::new(seg(p), c.mix(0.35).filled());
                bar.set_margin(6, 6, 0, 0);
                chart.draw_series([bar])?;
            }
            if let Some(idle) = r.idle_bytes {
                let mut bar = Rectangle::new(seg(idle), c.filled());
                bar.set_margin(16, 16, 0, 0);
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
