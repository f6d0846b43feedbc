//! The SVG plot of a Monkey run: absent-key reads per lookup against the
//! filter memory in force, measured (dots) and predicted (dashed), for
//! uniform and Monkey.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::{Error, Policy, Result, Summary};
use crate::chart::{
    bits_vs_log_chart, bounds, dashed, legend_box, titled, DrawResult, BLUE, RED, SIZE,
};
use crate::text::thousands;

/// The file [`write_plot`] writes into the output directory.
pub const PLOT_FILE: &str = "monkey-reads-vs-memory.svg";

/// Draws the plot of `s` into `dir` and returns its path.
///
/// # Errors
/// [`Error::Plot`] if drawing or writing fails.
pub fn write_plot(s: &Summary, dir: &Path) -> Result<PathBuf> {
    let path = dir.join(PLOT_FILE);
    draw(s, &path).map_err(|e| Error::Plot {
        path: path.clone(),
        detail: e.to_string(),
    })?;
    Ok(path)
}

fn draw(s: &Summary, path: &Path) -> DrawResult {
    let (lo, hi) = bounds(
        s.points
            .iter()
            .flat_map(|p| [p.absent_reads, p.predicted_absent_reads]),
    );
    let (lo, hi) = if lo.is_finite() {
        (lo * 0.5, hi * 2.0)
    } else {
        (1e-4, 1.0)
    };
    let top = s
        .points
        .iter()
        .map(|p| p.bits_per_key)
        .fold(1.0, f64::max)
        .ceil()
        + 1.0;
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    let levels = s.points.first().map_or(0, |p| p.levels.len());
    let line1 = format!(
        "One leveled tree of {} keys ({levels} levels holding tables), every point on the same tables, filters rebuilt in place.",
        thousands(s.keys)
    );
    let line2 = "Dots: measured data-block reads per absent-key lookup. Dashed: predicted, the sum of the runs' design rates.";
    let area = titled(
        &root,
        "Monkey against uniform bits per key: absent-key reads vs filter memory",
        &[&line1, line2],
    )?;
    let mut chart = bits_vs_log_chart(
        &area,
        top,
        (lo, hi),
        (
            "filter bits per key in force (whole tree)",
            "data-block reads per absent-key lookup (log scale)",
        ),
        top as usize + 1,
    )?;
    for (policy, c) in [(Policy::Uniform, RED), (Policy::Monkey, BLUE)] {
        let pts = s.of(policy);
        let predicted: Vec<(f64, f64)> = pts
            .iter()
            .map(|p| (p.bits_per_key, p.predicted_absent_reads))
            .collect();
        dashed(
            &mut chart,
            &format!("{} predicted", policy.label()),
            c,
            predicted,
        )?;
        chart
            .draw_series(
                pts.iter()
                    .filter(|p| p.absent_reads > 0.0)
                    .map(|p| Circle::new((p.bits_per_key, p.absent_reads), 5, c.filled())),
            )?
            .label(format!("{} measured", policy.label()))
            .legend(move |(x, y)| Circle::new((x + 12, y), 5, c.filled()));
    }
    legend_box(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present()?;
    Ok(())
}
