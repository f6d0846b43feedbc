//! The SVG plot of the sweep: false-positive rate against stored bits per
//! key for every kind, with each kind's theory and the information bound.

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use siftdb::filter::FilterKind;

use super::{kinds, Error, Measurement, Result};
use crate::chart::{
    bits_vs_log_chart, bounds, dashed, legend_box, titled, DrawResult, BLUE, GREEN, RED, SIZE,
};
use crate::text::thousands;

/// The file [`super::run_and_report`] writes into
/// [`super::Config::out_dir`].
pub const PLOT_FILE: &str = "filters-fpr-vs-bits-per-key.svg";

/// Each kind's colour.
fn colour(kind: FilterKind) -> RGBColor {
    match kind {
        FilterKind::Bloom => RED,
        FilterKind::BlockedBloom => BLUE,
        _ => GREEN,
    }
}

/// Draws the plot of `rows` to `path` and returns the path.
///
/// # Errors
/// [`Error::Plot`] if drawing or writing fails.
pub(crate) fn write_plot(rows: &[Measurement], path: &Path) -> Result<PathBuf> {
    draw(rows, path).map_err(|e| Error::Plot {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    Ok(path.to_path_buf())
}

fn draw(rows: &[Measurement], path: &Path) -> DrawResult {
    let keys = rows.first().map_or(0, |m| m.keys);
    let absent = rows.first().map_or(0, |m| m.absent_probes);
    let hi_bits = rows
        .iter()
        .map(|m| m.stored_bits_per_key.max(m.bits_per_key))
        .fold(2.0f64, f64::max)
        .ceil()
        + 1.0;
    let lo_bits = 1.0;
    let mut kinds_seen: Vec<FilterKind> = Vec::new();
    for m in rows {
        if !kinds_seen.contains(&m.kind) {
            kinds_seen.push(m.kind);
        }
    }
    let curves: Vec<(FilterKind, Vec<(f64, f64)>)> = kinds_seen
        .iter()
        .map(|&k| (k, kinds::curve(k, keys, lo_bits, hi_bits)))
        .collect();
    // The y range covers the measured points and the theory over the
    // measured bits per key.
    let top = rows
        .iter()
        .map(|m| m.stored_bits_per_key)
        .fold(0.0f64, f64::max);
    let (lo, _) = bounds(
        rows.iter()
            .flat_map(|m| [m.measured_fpr, m.theory_fpr])
            .chain(
                curves
                    .iter()
                    .flat_map(|(_, c)| c.iter().filter(|(b, _)| *b <= top).map(|(_, p)| *p)),
            ),
    );
    let lo = if lo.is_finite() { lo * 0.3 } else { 1e-6 };

    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    let line1 = format!(
        "siftdb filters over {} random 16-byte keys; dots: measured over {} absent keys, at the \
         bits per key each filter stores (every byte).",
        thousands(keys),
        thousands(absent as usize)
    );
    let line2 = "Dashed: each kind's theory at its policy's k or r (Ribbon: r = floor(setting / \
                 1.05)). Black: the bound, 2^−b for b bits per key.";
    let area = titled(
        &root,
        "Filter false-positive rate vs bits per key stored",
        &[&line1, line2],
    )?;
    let mut chart = bits_vs_log_chart(
        &area,
        hi_bits,
        (lo, 1.0),
        (
            "filter bits per key stored",
            "false-positive rate (fraction, log scale)",
        ),
        hi_bits as usize + 1,
    )?;

    let bound: Vec<(f64, f64)> = (0..=400)
        .map(|i| {
            let b = hi_bits * f64::from(i) / 400.0;
            (b, 0.5f64.powf(b))
        })
        .filter(|&(_, p)| p >= lo)
        .collect();
    chart
        .draw_series(LineSeries::new(bound, BLACK.stroke_width(2)))?
        .label("information bound: log2(1/p) bits per key for rate p")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], BLACK.stroke_width(2)));

    for (kind, curve) in curves {
        let c = colour(kind);
        let curve: Vec<(f64, f64)> = curve.into_iter().filter(|&(_, p)| p >= lo).collect();
        dashed(&mut chart, &format!("{} theory", kind.label()), c, curve)?;
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter(|m| m.kind == kind && m.measured_fpr > 0.0)
            .map(|m| (m.stored_bits_per_key, m.measured_fpr))
            .collect();
        // Blocked Bloom hollow and larger, so that it shows where it
        // overlaps the classic filter (4 and 6 bits per key).
        let style = move || match kind {
            FilterKind::BlockedBloom => (7, c.stroke_width(2)),
            _ => (5, c.filled()),
        };
        chart
            .draw_series(points.into_iter().map(|xy| {
                let (r, s) = style();
                Circle::new(xy, r, s)
            }))?
            .label(format!("{} measured", kind.label()))
            .legend(move |(x, y)| {
                let (r, s) = style();
                Circle::new((x + 12, y), r, s)
            });
    }
    legend_box(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filters::report::tests::sample;

    #[test]
    fn plot_has_the_bound_every_kind_and_its_points() {
        let tmp = tempfile::tempdir().unwrap();
        let mut rows = Vec::new();
        for kind in FilterKind::ALL {
            for (b, p) in [(4.0, 0.15), (10.0, 0.008)] {
                let mut m = sample(kind, b, p, p);
                m.stored_bits_per_key = b;
                rows.push(m);
            }
        }
        // A rate of 0 (too few absent keys) is left out, not drawn at 0.
        rows[1].measured_fpr = 0.0;
        let path = write_plot(&rows, &tmp.path().join(PLOT_FILE)).unwrap();
        let svg = std::fs::read_to_string(path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100]);
        for needle in [
            "Filter false-positive rate vs bits per key stored",
            "information bound: log2(1/p) bits per key for rate p",
            "bloom theory",
            "bloom measured",
            "blocked-bloom theory",
            "ribbon measured",
        ] {
            assert!(svg.contains(needle), "missing {needle:?}");
        }
        // Each theory is dashed: many short thin strokes of its colour.
        for c in ["#C82828", "#1E5AC8", "#149646"] {
            let dashes = svg
                .matches(&format!("stroke=\"{c}\" stroke-width=\"1\""))
                .count();
            assert!(dashes > 20, "{c}: {dashes} dashes");
        }
        // 5 measured points (one rate is 0) plus 3 legend dots.
        assert_eq!(svg.matches("<circle").count(), 5 + 3);
    }
}
