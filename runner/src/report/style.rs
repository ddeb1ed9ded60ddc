//! Shared look of every chart: size, fonts, the frame (title, margins, axis areas), axis
//! text, legend, error bars, unit formatting. Charts are SVG strings (plotters' SVG backend
//! writes `<text>` elements; no system fonts needed).

use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;

pub const SIZE: (u32, u32) = (960, 600);
pub const TITLE_PX: u32 = 22;
pub const LABEL_PX: u32 = 15;

pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A white canvas writing into `out`.
pub fn canvas(out: &mut String) -> anyhow::Result<Area<'_>> {
    let root = SVGBackend::with_string(out, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    Ok(root)
}

/// Renders one chart into an SVG string: `draw` paints on a white canvas, which is then
/// finished. The chart modules only say what to draw, not how an SVG is produced.
pub fn render_svg(draw: impl FnOnce(&Area<'_>) -> anyhow::Result<()>) -> anyhow::Result<String> {
    let mut svg = String::new();
    {
        let root = canvas(&mut svg)?;
        draw(&root)?;
        root.present()?;
    }
    Ok(svg)
}

/// The frame every chart shares: title, margins, room for the axis labels. The caller adds
/// any extra margin and builds the coordinates.
pub fn frame<'a, 'b>(root: &'a Area<'b>, title: &str) -> ChartBuilder<'a, 'static, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, title_font())
        .margin(20)
        .x_label_area_size(55)
        .y_label_area_size(85);
    b
}

/// Axis text in the shared fonts; the caller adds descriptions and formatters, then draws.
pub fn mesh<'a, 'b, X, Y>(
    chart: &'b mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
) -> MeshStyle<'a, 'b, X, Y, SVGBackend<'a>>
where
    X: Ranged + ValueFormatter<X::ValueType>,
    Y: Ranged + ValueFormatter<Y::ValueType>,
{
    let mut m = chart.configure_mesh();
    m.axis_desc_style(label_font()).label_style(label_font());
    m
}

/// Width of the legend column right of the plot.
pub const LEGEND_W: u32 = 200;

/// A chart with a legend: the title across the top, then the plot area and, right of it, a
/// column for the legend, so the legend never covers a data point.
pub fn with_legend<'a>(root: &Area<'a>, title: &str) -> anyhow::Result<(Area<'a>, Area<'a>)> {
    let body = root.titled(title, title_font())?;
    let w = body.dim_in_pixel().0;
    Ok(body.split_horizontally(w.saturating_sub(LEGEND_W)))
}

/// The frame of a plot whose title `with_legend` already drew.
pub fn frame_untitled<'a, 'b>(area: &'a Area<'b>) -> ChartBuilder<'a, 'static, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(area);
    b.margin(20).x_label_area_size(55).y_label_area_size(85);
    b
}

/// The legend in its own column: a swatch and the name per series, one line each.
pub fn legend_column(area: &Area<'_>, entries: &[(String, RGBColor)]) -> anyhow::Result<()> {
    for (i, (name, c)) in entries.iter().enumerate() {
        let y = 30 + i as i32 * (LABEL_PX as i32 + 8);
        area.draw(&Rectangle::new([(4, y + 4), (24, y + 10)], c.filled()))?;
        area.draw(&Text::new(name.clone(), (30, y), label_font()))?;
    }
    Ok(())
}

/// Tick values for a log axis over [lo, hi] (lo > 0): 1, 2 and 5 times the powers of ten
/// where that gives 4 to 12; else powers of ten alone over a wide range, or finer steps over
/// a narrow one, so at least 4 labelled values can be read off the axis.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let candidates = |mantissas: &[f64]| -> Vec<f64> {
        let (e0, e1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        let mut out: Vec<f64> = (e0..=e1)
            .flat_map(|e| mantissas.iter().map(move |m| m * 10f64.powi(e)))
            .filter(|v| *v >= lo * 0.999_999 && *v <= hi * 1.000_001)
            .collect();
        out.sort_by(f64::total_cmp);
        out
    };
    let t = candidates(&[1.0, 2.0, 5.0]);
    if (4..=12).contains(&t.len()) {
        return t;
    }
    if t.len() > 12 {
        return candidates(&[1.0]);
    }
    let t = candidates(&[1.0, 1.5, 2.0, 3.0, 5.0, 7.0]);
    if t.len() >= 4 {
        return t;
    }
    candidates(&[1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
}

/// A categorical x axis over positions 0..n (a category each, ±0.5 around it): ticks only at
/// the categories, and values between them (a series' dodge) drawn where they fall.
pub struct Categories(pub usize);

impl Ranged for Categories {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let r = self.range();
        let f = (v - r.start) / (r.end - r.start);
        limit.0 + (f * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, _: H) -> Vec<f64> {
        (0..self.0).map(|i| i as f64).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        -0.5..self.0.max(1) as f64 - 0.5
    }
}

/// Where `log_ticks` gives more than `max`, every k-th of them (powers of ten kept first).
pub fn thin(ticks: Vec<f64>, max: usize) -> Vec<f64> {
    if ticks.len() <= max {
        return ticks;
    }
    let k = ticks.len().div_ceil(max);
    ticks.into_iter().step_by(k).collect()
}

pub fn title_font() -> TextStyle<'static> {
    ("sans-serif", TITLE_PX).into_font().into()
}

pub fn label_font() -> TextStyle<'static> {
    ("sans-serif", LABEL_PX).into_font().into()
}

/// The legend swatch: a short thick line in the series colour.
pub fn swatch(c: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(3))
}

/// One series of a chart whose levels are categories: a dot at each (x, y) and its (low,
/// high) bar, x already dodged to the series' place at its level.
pub fn dots_with_bars<'a, XR, YR>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<XR, YR>>,
    points: &[(f64, f64, f64, f64)],
    c: RGBColor,
) -> anyhow::Result<()>
where
    XR: Ranged<ValueType = f64>,
    YR: Ranged<ValueType = f64>,
{
    chart.draw_series(
        points
            .iter()
            .map(|&(x, y, _, _)| Circle::new((x, y), 4, c.filled())),
    )?;
    let bars: Vec<(f64, f64, f64)> = points.iter().map(|&(x, _, lo, hi)| (x, lo, hi)).collect();
    error_bars(chart, &bars, c)
}

/// Vertical error bars (x, low, high) with 10-pixel caps.
pub fn error_bars<'a, XR, YR>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<XR, YR>>,
    bars: &[(XR::ValueType, f64, f64)],
    c: RGBColor,
) -> anyhow::Result<()>
where
    XR: Ranged,
    XR::ValueType: Clone + 'static,
    YR: Ranged<ValueType = f64>,
{
    chart.draw_series(bars.iter().map(|(x, lo, hi)| {
        PathElement::new(vec![(x.clone(), *lo), (x.clone(), *hi)], c.stroke_width(2))
    }))?;
    chart.draw_series(
        bars.iter()
            .flat_map(|(x, lo, hi)| [(x.clone(), *lo), (x.clone(), *hi)])
            .map(|p| {
                EmptyElement::at(p) + PathElement::new(vec![(-5, 0), (5, 0)], c.stroke_width(2))
            }),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_axes_get_at_least_four_ticks() {
        // The narrowest range a chart draws is its data widened ×1.5 either way (× 2.25).
        for (lo, hi) in [
            (200.0, 450.0),
            (66.0, 1500.0),
            (1.0, 1e6),
            (310.0, 700.0),
            (0.7, 3.0),
        ] {
            let t = log_ticks(lo, hi);
            assert!(t.len() >= 4, "{lo}..{hi}: {t:?}");
            assert!(
                t.iter().all(|v| *v >= lo * 0.999 && *v <= hi * 1.001),
                "{t:?}"
            );
        }
        assert_eq!(
            log_ticks(1.0, 1e6).len(),
            7,
            "wide ranges keep powers of ten only"
        );
    }
}
