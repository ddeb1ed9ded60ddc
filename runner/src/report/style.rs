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

/// The legend of the series drawn with `.label(..).legend(swatch(..))`: upper left, on a
/// translucent white box so lines behind it stay visible.
pub fn legend<'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
) -> anyhow::Result<()> {
    chart
        .configure_series_labels()
        .label_font(label_font())
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()?;
    Ok(())
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
