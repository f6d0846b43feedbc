//! Plot helpers shared by the harnesses' SVG plots (`plotters`' SVG
//! backend): sizes, colours, a title block, log-axis ticks, dashed lines
//! and the legend box.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// What drawing a plot returns.
pub(crate) type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// Plot size in pixels.
pub(crate) const SIZE: (u32, u32) = (960, 680);
/// Font sizes: title, subtitle lines, axis descriptions, tick labels,
/// legend.
pub(crate) const TITLE: u32 = 24;
pub(crate) const SUBTITLE: u32 = 15;
pub(crate) const AXIS_DESC: u32 = 17;
pub(crate) const TICKS: u32 = 14;
pub(crate) const LEGEND: u32 = 14;

/// Series colours.
pub(crate) const RED: RGBColor = RGBColor(200, 40, 40);
pub(crate) const ORANGE: RGBColor = RGBColor(230, 140, 20);
pub(crate) const BLUE: RGBColor = RGBColor(30, 90, 200);
pub(crate) const GREEN: RGBColor = RGBColor(20, 150, 70);
pub(crate) const GREY: RGBColor = RGBColor(90, 90, 90);

/// Splits off a title and subtitle lines; returns the plotting area.
pub(crate) fn titled<'a>(
    root: &DrawingArea<SVGBackend<'a>, Shift>,
    title: &str,
    subtitle: &[&str],
) -> std::result::Result<DrawingArea<SVGBackend<'a>, Shift>, Box<dyn std::error::Error>> {
    root.fill(&WHITE)?;
    let (top, rest) = root.split_vertically(44 + 20 * subtitle.len() as u32);
    top.draw(&Text::new(
        title.to_string(),
        (20, 10),
        ("sans-serif", TITLE).into_font().style(FontStyle::Bold),
    ))?;
    for (i, line) in subtitle.iter().enumerate() {
        top.draw(&Text::new(
            line.to_string(),
            (20, 42 + 20 * i as i32),
            ("sans-serif", SUBTITLE).into_font().color(&GREY),
        ))?;
    }
    Ok(rest)
}

/// The chart [`bits_vs_log_chart`] returns.
pub(crate) type BitsVsLog<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, LogCoord<f64>>>;

/// A chart on `area` over bits per key `0..x_max` (linear, whole-number
/// ticks, `x_labels` of them) against a rate or cost over `y` (log scale),
/// with the harnesses' margins, fonts and mesh drawn.
pub(crate) fn bits_vs_log_chart<'a, 'b: 'a>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    x_max: f64,
    y: (f64, f64),
    (x_desc, y_desc): (&str, &str),
    x_labels: usize,
) -> std::result::Result<BitsVsLog<'a, 'b>, Box<dyn std::error::Error>> {
    let mut chart = ChartBuilder::on(area)
        .margin(20)
        .x_label_area_size(55)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..x_max, (y.0..y.1).log_scale())?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style(("sans-serif", AXIS_DESC))
        .label_style(("sans-serif", TICKS))
        .x_labels(x_labels)
        .x_label_formatter(&|v| format!("{}", v.round()))
        .y_label_formatter(&log_tick)
        .light_line_style(WHITE)
        .draw()?;
    Ok(chart)
}

/// Formats a tick of a logarithmic axis without float noise (`0.001`,
/// `0.002`, `0.005`, ..., `10`), labelling only mantissas 1, 2 and 5 so
/// that the ticks plotters places at 1..9 of each decade stay readable.
pub(crate) fn log_tick(v: &f64) -> String {
    if *v <= 0.0 || !v.is_finite() {
        return String::new();
    }
    let exp = v.log10().floor();
    let mantissa = (v / 10f64.powf(exp) * 1000.0).round() / 1000.0;
    if ![1.0, 2.0, 5.0, 10.0].contains(&mantissa) {
        return String::new();
    }
    let s = format!("{:.6}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// The smallest and largest positive finite values, `(∞, 0)` if none.
pub(crate) fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        })
}

/// Draws a thin dashed line of colour `c` with its legend entry.
pub(crate) fn dashed<'a, 'b: 'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    label: &str,
    c: RGBColor,
    line: Vec<(f64, f64)>,
) -> DrawResult
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .draw_series(DashedLineSeries::new(line, 6, 4, c.stroke_width(1)))?
        .label(label)
        .legend(move |(x, y)| {
            DashedPathElement::new(vec![(x, y), (x + 24, y)], 6, 4, c.stroke_width(1))
        });
    Ok(())
}

/// Draws the legend box of `chart` at `position`.
pub(crate) fn legend_box<'a, 'b: 'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> DrawResult
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .configure_series_labels()
        .position(position)
        .label_font(("sans-serif", LEGEND))
        .background_style(WHITE.mix(0.9))
        .border_style(GREY)
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_label_1_2_5_only() {
        assert_eq!(log_tick(&0.001), "0.001");
        assert_eq!(log_tick(&0.002), "0.002");
        assert_eq!(log_tick(&0.005), "0.005");
        assert_eq!(log_tick(&0.003), "");
        assert_eq!(log_tick(&10.0), "10");
        assert_eq!(log_tick(&0.0), "");
        assert_eq!(bounds([0.0, 0.5, f64::NAN, 2.0].into_iter()), (0.5, 2.0));
    }
}
