//! The SVG plots, drawn with `plotters`' SVG backend. Text is written as
//! SVG `<text>` elements and laid out with plotters' built-in size
//! estimate, so no font library is needed to draw them.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::model::{self, bloom_fpr};
use super::report::is_grid;
use super::{Error, Layout, Point, Result, Sweep, HEADLINE_BITS_PER_KEY, HEADLINE_FILES};
use crate::chart::{
    bits_vs_log_chart, bounds, dashed, legend_box, log_tick, titled, DrawResult, AXIS_DESC, BLUE,
    GREEN, GREY, LEGEND, ORANGE, RED, SIZE, TICKS,
};
use crate::text::thousands;

/// The files [`write_plots`] writes into its directory, in order: reads per
/// lookup vs runs, false-positive rate vs bits per key, and vs `k`, and
/// reads per lookup vs levels of a leveled tree.
pub const PLOT_FILES: [&str; 4] = [
    "reads-vs-files.svg",
    "fpr-vs-bits-per-key.svg",
    "fpr-vs-hashes.svg",
    "reads-vs-levels.svg",
];

/// Draws one plot into a file, or returns `None` if its points are absent.
type DrawFn = fn(&[Point], &Path) -> Option<DrawResult>;

/// Draws the four plots of `points` (SVG, [`PLOT_FILES`]) into the
/// existing directory `dir`, skipping a plot whose points are missing, and
/// returns the paths written.
///
/// # Errors
/// [`Error::Plot`] if drawing or writing a plot fails.
pub fn write_plots(points: &[Point], dir: &Path) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let plots: [(&str, DrawFn); 4] = [
        (PLOT_FILES[0], reads_vs_files),
        (PLOT_FILES[1], fpr_vs_bits),
        (PLOT_FILES[2], fpr_vs_hashes),
        (PLOT_FILES[3], reads_vs_levels),
    ];
    for (name, draw) in plots {
        let path = dir.join(name);
        match draw(points, &path) {
            None => {}
            Some(Ok(())) => written.push(path),
            Some(Err(e)) => {
                return Err(Error::Plot {
                    path,
                    detail: e.to_string(),
                })
            }
        }
    }
    Ok(written)
}

/// Data-block reads per lookup of `p` as measured, for absent or present
/// keys.
fn measured_reads(p: &Point, absent: bool) -> f64 {
    if absent {
        p.reads_absent
    } else {
        p.reads_present
    }
}

/// Draws a model as a solid line of colour `c` and the measured points as
/// dots of the same colour, with one legend entry (a line through a dot).
fn model_and_points<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    label: &str,
    c: RGBColor,
    model: Vec<(f64, f64)>,
    points: Vec<(f64, f64)>,
) -> DrawResult
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .draw_series(LineSeries::new(model, c.stroke_width(2)))?
        .label(label)
        .legend(move |(x, y)| {
            EmptyElement::at((x, y))
                + PathElement::new(vec![(0, 0), (24, 0)], c.stroke_width(2))
                + Circle::new((12, 0), 5, c.filled())
        });
    chart.draw_series(points.into_iter().map(|xy| Circle::new(xy, 5, c.filled())))?;
    Ok(())
}

/// Writes the two-line headline comparison of `none` (no filters) and
/// `with` (`bits` bits per key) at `at` (`"L = 8"`), its first line's
/// baseline 48 pixels above the pixel `(x0, y0)`.
fn headline_note(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    (x0, y0): (i32, i32),
    at: &str,
    none: &Point,
    with: &Point,
    bits: u32,
) -> DrawResult {
    let style = ("sans-serif", LEGEND).into_font().color(&BLACK);
    let lines = [
        format!(
            "At {at}, {:.0}% of lookups absent: {:.2} reads per lookup without filters,",
            none.absent_fraction * 100.0,
            none.reads_mixed
        ),
        format!(
            "{:.2} with {bits} bits/key ({:.0}% fewer; model {:.2} and {:.2}).",
            with.reads_mixed,
            (1.0 - with.reads_mixed / none.reads_mixed) * 100.0,
            none.theory_mixed,
            with.theory_mixed
        ),
    ];
    for (i, line) in lines.iter().enumerate() {
        root.draw(&Text::new(
            line.clone(),
            (x0, y0 - 48 + 20 * i as i32),
            style.clone(),
        ))?;
    }
    Ok(())
}

/// (1) Reads per lookup vs number of runs, absent and present keys, no
/// filters and 10 bits/key; measured points over the model's lines.
fn reads_vs_files(points: &[Point], path: &Path) -> Option<DrawResult> {
    let grid: Vec<&Point> = points.iter().filter(|p| is_grid(p)).collect();
    let none: Vec<&Point> = grid
        .iter()
        .copied()
        .filter(|p| p.bits_per_key == 0)
        .collect();
    let with: Vec<&Point> = grid
        .iter()
        .copied()
        .filter(|p| p.bits_per_key == HEADLINE_BITS_PER_KEY)
        .collect();
    if none.is_empty() && with.is_empty() {
        return None;
    }
    let debian: Vec<&Point> = points
        .iter()
        .filter(|p| p.layout == Layout::Debian && p.bits_per_key == HEADLINE_BITS_PER_KEY)
        .collect();
    Some((|| -> DrawResult {
        let keys = grid.first().map_or(0, |p| p.keys);
        let k = with
            .first()
            .map_or(model::best_hashes(HEADLINE_BITS_PER_KEY), |p| p.hashes);
        let p = bloom_fpr(f64::from(HEADLINE_BITS_PER_KEY), k);
        let max_l = grid
            .iter()
            .chain(&debian)
            .map(|p| p.files)
            .max()
            .unwrap_or(1) as f64;
        let (lo, hi) = bounds(
            grid.iter()
                .filter(|p| p.bits_per_key == 0 || p.bits_per_key == HEADLINE_BITS_PER_KEY)
                .chain(&debian)
                .flat_map(|p| [p.reads_absent, p.reads_present, p.theory_absent]),
        );
        let root = SVGBackend::new(path, SIZE).into_drawing_area();
        let line1 = format!(
            "siftdb: {} random 16-byte keys split evenly over L overlapping level-0 runs, searched \
             newest first.",
            thousands(keys)
        );
        let line2 = format!(
            "Dots: measured with the engine's counters. Lines: model, p = false-positive rate = \
             {:.2}% at {} bits/key, k = {k}.",
            p * 100.0,
            HEADLINE_BITS_PER_KEY
        );
        let area = titled(
            &root,
            "Data-block reads per point lookup vs number of overlapping runs",
            &[&line1, &line2],
        )?;
        let mut chart = ChartBuilder::on(&area)
            .margin(20)
            .x_label_area_size(55)
            .y_label_area_size(80)
            .build_cartesian_2d(
                (0.8f64..max_l * 1.25).log_scale().base(2.0),
                ((lo * 0.5).min(0.005)..hi * 6.0).log_scale(),
            )?;
        chart
            .configure_mesh()
            .x_desc("overlapping runs L (level-0 SSTables; log scale)")
            .y_desc("data-block reads per lookup (log scale)")
            .axis_desc_style(("sans-serif", AXIS_DESC))
            .label_style(("sans-serif", TICKS))
            .x_labels(8)
            .x_label_formatter(&|v| format!("{}", v.round()))
            .y_labels(5)
            .y_label_formatter(&log_tick)
            .light_line_style(WHITE)
            .draw()?;

        let curve = |f: &dyn Fn(f64) -> f64| -> Vec<(f64, f64)> {
            (0..=200)
                .map(|i| {
                    let l = (max_l.log2() * f64::from(i) / 200.0).exp2();
                    (l, f(l))
                })
                .collect()
        };
        type Series<'s> = (
            String,
            RGBColor,
            Box<dyn Fn(f64) -> f64>,
            &'s [&'s Point],
            bool,
        );
        let bits = HEADLINE_BITS_PER_KEY;
        let series: [Series<'_>; 4] = [
            (
                "absent keys, no filters — model: L".into(),
                RED,
                Box::new(|l| l),
                &none,
                true,
            ),
            (
                "present keys, no filters — model: (L+1)/2".into(),
                ORANGE,
                Box::new(|l| (l + 1.0) / 2.0),
                &none,
                false,
            ),
            (
                format!("absent keys, {bits} bits/key — model: L·p"),
                BLUE,
                Box::new(move |l| l * p),
                &with,
                true,
            ),
            (
                format!("present keys, {bits} bits/key — model: 1 + (L−1)/2·p"),
                GREEN,
                Box::new(move |l| 1.0 + (l - 1.0) / 2.0 * p),
                &with,
                false,
            ),
        ];
        for (label, color, f, pts, absent) in &series {
            let dots = pts
                .iter()
                .map(|p| (p.files as f64, measured_reads(p, *absent)))
                .collect();
            model_and_points(&mut chart, label, *color, curve(f.as_ref()), dots)?;
        }
        if !debian.is_empty() {
            for (absent, color) in [(true, BLUE), (false, GREEN)] {
                let data: Vec<(f64, f64)> = debian
                    .iter()
                    .map(|p| (p.files as f64, measured_reads(p, absent)))
                    .collect();
                let series = chart.draw_series(
                    data.iter()
                        .map(|&xy| TriangleMarker::new(xy, 8, color.stroke_width(2))),
                )?;
                if absent {
                    series
                        .label(format!(
                            "Debian package names (present, green) / English words (absent, \
                             blue), {bits} bits/key"
                        ))
                        .legend(|(x, y)| {
                            EmptyElement::at((x, y))
                                + TriangleMarker::new((6, 0), 7, BLUE.stroke_width(2))
                                + TriangleMarker::new((18, 0), 7, GREEN.stroke_width(2))
                        });
                }
            }
        }
        let at = |bits: u32| {
            grid.iter()
                .find(|p| p.files == HEADLINE_FILES && p.bits_per_key == bits)
        };
        if let (Some(a), Some(b)) = (at(0), at(HEADLINE_BITS_PER_KEY)) {
            let xy = chart.backend_coord(&(2.0, (lo * 0.5).min(0.005)));
            headline_note(&root, xy, &format!("L = {HEADLINE_FILES}"), a, b, bits)?;
        }
        legend_box(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present()?;
        Ok(())
    })())
}

/// (2) False-positive rate vs bits per key, measured (one point per
/// number of runs) and theory with the best `k`.
fn fpr_vs_bits(points: &[Point], path: &Path) -> Option<DrawResult> {
    let grid: Vec<&Point> = points
        .iter()
        .filter(|p| is_grid(p) && p.fpr_measured.is_some())
        .collect();
    if grid.is_empty() {
        return None;
    }
    let debian: Vec<&Point> = points
        .iter()
        .filter(|p| p.layout == Layout::Debian && p.fpr_measured.is_some())
        .collect();
    Some((|| -> DrawResult {
        let max_b = grid
            .iter()
            .map(|p| p.bits_per_key)
            .max()
            .unwrap_or(16)
            .max(2);
        let theory: Vec<(f64, f64)> = (1..=max_b)
            .map(|b| (f64::from(b), bloom_fpr(f64::from(b), model::best_hashes(b))))
            .collect();
        let (lo, _) = bounds(
            grid.iter()
                .filter_map(|p| p.fpr_measured)
                .chain(theory.iter().map(|t| t.1)),
        );
        let root = SVGBackend::new(path, SIZE).into_drawing_area();
        let area = titled(
            &root,
            "Bloom filter false-positive rate vs bits per key",
            &[
                "siftdb SSTable filters with k = round(bits/key · ln 2) hash probes. Circles: measured \
                 over lookups of keys a file does not hold,",
                "one per run count L = 1 … 32 (they overlap). Lines: theory (1 − e^(−k·n/m))^k for m/n \
                 bits per key.",
            ],
        )?;
        let mut chart = bits_vs_log_chart(
            &area,
            f64::from(max_b) + 1.0,
            (lo * 0.5, 1.0),
            (
                "filter bits per key (m/n)",
                "false-positive rate (fraction, log scale)",
            ),
            max_b as usize + 2,
        )?;
        chart
            .draw_series(LineSeries::new(theory.clone(), BLUE.stroke_width(2)))?
            .label("theory with siftdb's integer k: (1 − e^(−k·n/m))^k")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], BLUE.stroke_width(2)));
        chart.draw_series(theory.iter().map(|&xy| Circle::new(xy, 3, BLUE.filled())))?;
        dashed(
            &mut chart,
            "theory with the ideal real k = (m/n)·ln 2: 0.6185^(m/n)",
            GREY,
            (10..=10 * max_b)
                .map(|i| {
                    let b = f64::from(i) / 10.0;
                    (b, 0.5f64.powf(b * std::f64::consts::LN_2))
                })
                .collect(),
        )?;
        chart
            .draw_series(grid.iter().map(|p| {
                Circle::new(
                    (f64::from(p.bits_per_key), p.fpr_measured.unwrap_or(1.0)),
                    6,
                    RED.stroke_width(2),
                )
            }))?
            .label("measured, random 16-byte keys")
            .legend(|(x, y)| Circle::new((x + 12, y), 6, RED.stroke_width(2)));
        if !debian.is_empty() {
            chart
                .draw_series(debian.iter().map(|p| {
                    TriangleMarker::new(
                        (f64::from(p.bits_per_key), p.fpr_measured.unwrap_or(1.0)),
                        8,
                        GREEN.stroke_width(2),
                    )
                }))?
                .label("measured, Debian package names / English words (L = 1, 4, 8, 16)")
                .legend(|(x, y)| TriangleMarker::new((x + 12, y), 8, GREEN.stroke_width(2)));
        }
        legend_box(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present()?;
        Ok(())
    })())
}

/// (3) False-positive rate vs `k` at fixed bits per key, with the fraction
/// of bits set on a second axis.
fn fpr_vs_hashes(points: &[Point], path: &Path) -> Option<DrawResult> {
    let sweep: Vec<&Point> = points
        .iter()
        .filter(|p| p.sweep == Sweep::Hashes && p.fpr_measured.is_some())
        .collect();
    if sweep.is_empty() {
        return None;
    }
    Some((|| -> DrawResult {
        let bits = sweep[0].bits_per_key;
        let files = sweep[0].files;
        let b = f64::from(bits);
        let max_k = sweep.iter().map(|p| p.hashes).max().unwrap_or(12).max(2);
        let x_max = f64::from(max_k) + 0.5;
        let fpr_curve: Vec<(f64, f64)> = (0..=200)
            .map(|i| {
                let k = 0.8 + (x_max - 0.8) * f64::from(i) / 200.0;
                (k, (1.0 - (-k / b).exp()).powf(k))
            })
            .collect();
        let fill_curve: Vec<(f64, f64)> = fpr_curve
            .iter()
            .map(|&(k, _)| (k, 1.0 - (-k / b).exp()))
            .collect();
        let (lo, hi) = bounds(
            sweep
                .iter()
                .filter_map(|p| p.fpr_measured)
                .chain(fpr_curve.iter().map(|c| c.1)),
        );
        let best = b * std::f64::consts::LN_2;
        let root = SVGBackend::new(path, SIZE).into_drawing_area();
        let area = titled(
            &root,
            &format!("Bloom filter false-positive rate vs hash probes k, at {bits} bits per key"),
            &[
                &format!(
                    "siftdb, {files} runs of random keys, filters of {bits} bits per key. Left axis \
                     (blue): false-positive rate;"
                ),
                "right axis (orange): fraction of filter bits set. Points: measured; lines: theory. \
                 Best near k = (m/n)·ln 2, half the bits set.",
            ],
        )?;
        let mut chart = ChartBuilder::on(&area)
            .margin(20)
            .x_label_area_size(55)
            .y_label_area_size(80)
            .right_y_label_area_size(80)
            .build_cartesian_2d(0.5f64..x_max, (lo * 0.6..hi * 1.8).log_scale())?
            .set_secondary_coord(0.5f64..x_max, 0f64..1f64);
        chart
            .configure_mesh()
            .x_desc("hash probes per key, k")
            .y_desc("false-positive rate (fraction, log scale)")
            .axis_desc_style(("sans-serif", AXIS_DESC))
            .label_style(("sans-serif", TICKS))
            .x_labels(max_k as usize + 1)
            .x_label_formatter(&|v| format!("{}", v.round()))
            .y_label_formatter(&log_tick)
            .light_line_style(WHITE)
            .draw()?;
        chart
            .configure_secondary_axes()
            .y_desc("fraction of filter bits set")
            .axis_desc_style(("sans-serif", AXIS_DESC))
            .label_style(("sans-serif", TICKS))
            .y_label_formatter(&|v| format!("{:.1}", v))
            .draw()?;
        chart
            .draw_series(LineSeries::new(fpr_curve, BLUE.stroke_width(2)))?
            .label("theory: false-positive rate (1 − e^(−k·n/m))^k")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], BLUE.stroke_width(2)));
        chart
            .draw_series(sweep.iter().map(|p| {
                Circle::new(
                    (f64::from(p.hashes), p.fpr_measured.unwrap_or(1.0)),
                    6,
                    BLUE.filled(),
                )
            }))?
            .label("measured: false-positive rate")
            .legend(|(x, y)| Circle::new((x + 12, y), 6, BLUE.filled()));
        chart
            .draw_secondary_series(LineSeries::new(fill_curve, ORANGE.stroke_width(2)))?
            .label("theory: bits set 1 − e^(−k·n/m)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], ORANGE.stroke_width(2)));
        chart
            .draw_secondary_series(sweep.iter().map(|p| {
                Rectangle::new(
                    [
                        (
                            f64::from(p.hashes) - 0.08,
                            p.bits_set_fraction.unwrap_or(0.0) - 0.012,
                        ),
                        (
                            f64::from(p.hashes) + 0.08,
                            p.bits_set_fraction.unwrap_or(0.0) + 0.012,
                        ),
                    ],
                    ORANGE.filled(),
                )
            }))?
            .label("measured: bits set")
            .legend(|(x, y)| Rectangle::new([(x + 7, y - 5), (x + 17, y + 5)], ORANGE.filled()));
        chart
            .draw_series(LineSeries::new(
                vec![(best, lo * 0.6), (best, hi * 1.8)],
                GREY.stroke_width(1),
            ))?
            .label(format!("best real k = (m/n)·ln 2 = {best:.2}"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], GREY.stroke_width(1)));
        legend_box(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present()?;
        Ok(())
    })())
}

/// (4) Reads per lookup vs non-empty levels of a leveled tree, absent and
/// present keys, without filters and with the largest bits per key run;
/// measured points over each point's own theory, and the equal-runs model
/// of plot (1) for comparison.
fn reads_vs_levels(points: &[Point], path: &Path) -> Option<DrawResult> {
    let leveled: Vec<&Point> = points
        .iter()
        .filter(|p| p.layout == Layout::Leveled)
        .collect();
    let bits = leveled.iter().map(|p| p.bits_per_key).max()?;
    let none: Vec<&Point> = leveled
        .iter()
        .copied()
        .filter(|p| p.bits_per_key == 0)
        .collect();
    let with: Vec<&Point> = leveled
        .iter()
        .copied()
        .filter(|p| bits > 0 && p.bits_per_key == bits)
        .collect();
    Some((|| -> DrawResult {
        let deepest = leveled.iter().max_by_key(|p| p.files).copied();
        let max_d = deepest.map_or(1, |p| p.files) as f64;
        let (lo, hi) = bounds(leveled.iter().flat_map(|p| {
            [
                p.reads_absent,
                p.reads_present,
                p.theory_absent,
                p.theory_present,
            ]
        }));
        let (y_lo, y_hi) = ((lo * 0.5).min(0.005), hi * 40.0);
        let k = with.first().map_or(0, |p| p.hashes);
        let p_model = bloom_fpr(f64::from(bits), k);
        let root = SVGBackend::new(path, SIZE).into_drawing_area();
        let shape = deepest.map_or(String::new(), |p| {
            let keys: Vec<String> = p
                .level_keys
                .iter()
                .map(|&n| thousands(n as usize))
                .collect();
            format!(
                " At D = {}: {} keys in levels 1–{}.",
                p.files,
                keys.join(" / "),
                p.files
            )
        });
        let line1 = format!(
            "siftdb: {} random 16-byte keys after leveled compaction; level 0 empty, D non-empty \
             levels, one SSTable each.",
            thousands(leveled.first().map_or(0, |p| p.keys))
        );
        let line2 = format!(
            "Each level holds {} times the keys of the one above, so most keys are deep.{shape}",
            deepest
                .and_then(|p| {
                    let (a, b) = (*p.level_keys.first()?, *p.level_keys.get(1)?);
                    (a > 0).then(|| format!("{:.0}", b as f64 / a as f64))
                })
                .unwrap_or_else(|| "M".into())
        );
        let line3 = format!(
            "Dots: measured with the engine's counters. Solid lines: model from each file's n, m, k \
             and key range (p = {:.2}% at {bits} bits/key, k = {k}).",
            p_model * 100.0
        );
        let area = titled(
            &root,
            "Data-block reads per point lookup vs levels of a leveled tree",
            &[&line1, &line2, &line3],
        )?;
        let mut chart = ChartBuilder::on(&area)
            .margin(20)
            .x_label_area_size(55)
            .y_label_area_size(80)
            .build_cartesian_2d(0.6f64..max_d + 0.4, (y_lo..y_hi).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("non-empty levels D (one candidate SSTable per level)")
            .y_desc("data-block reads per lookup (log scale)")
            .axis_desc_style(("sans-serif", AXIS_DESC))
            .label_style(("sans-serif", TICKS))
            .x_labels(max_d as usize + 2)
            .x_label_formatter(&|v| {
                if (v - v.round()).abs() < 1e-9 && *v >= 1.0 {
                    format!("{}", v.round())
                } else {
                    String::new()
                }
            })
            .y_labels(5)
            .y_label_formatter(&log_tick)
            .light_line_style(WHITE)
            .draw()?;

        type Series<'s> = (String, RGBColor, &'s [&'s Point], bool);
        let series: [Series<'_>; 4] = [
            (
                "absent keys, no filters — model: D (less range skips)".into(),
                RED,
                &none,
                true,
            ),
            (
                "present keys, no filters — model: Σ w_j·j".into(),
                ORANGE,
                &none,
                false,
            ),
            (
                format!("absent keys, {bits} bits/key — model: Σ p_j ≈ D·p"),
                BLUE,
                &with,
                true,
            ),
            (
                format!("present keys, {bits} bits/key — model: Σ w_j·(1 + Σ_(i<j) p_i)"),
                GREEN,
                &with,
                false,
            ),
        ];
        for (label, color, pts, absent) in &series {
            if pts.is_empty() {
                continue;
            }
            let theory = |p: &Point| {
                if *absent {
                    p.theory_absent
                } else {
                    p.theory_present
                }
            };
            let model = pts.iter().map(|p| (p.files as f64, theory(p))).collect();
            let dots = pts
                .iter()
                .map(|p| (p.files as f64, measured_reads(p, *absent)))
                .collect();
            model_and_points(&mut chart, label, *color, model, dots)?;
        }
        // The equal-runs model of plot (1) at L = D, for comparison.
        let equal_runs = |f: &dyn Fn(f64) -> f64| -> Vec<(f64, f64)> {
            (0..=100)
                .map(|i| {
                    let l = 1.0 + (max_d - 1.0) * f64::from(i) / 100.0;
                    (l, f(l))
                })
                .collect()
        };
        dashed(
            &mut chart,
            "present keys, no filters, D equal overlapping runs: (D+1)/2",
            ORANGE,
            equal_runs(&|l| (l + 1.0) / 2.0),
        )?;
        if bits > 0 {
            dashed(
                &mut chart,
                &format!("present keys, {bits} bits/key, D equal runs: 1 + (D−1)/2·p"),
                GREEN,
                equal_runs(&|l| 1.0 + (l - 1.0) / 2.0 * p_model),
            )?;
        }
        let deepest_d = deepest.map_or(0, |p| p.files);
        let at = |pts: &[&'_ Point]| -> Option<Point> {
            pts.iter()
                .find(|p| p.files == deepest_d)
                .map(|p| (*p).clone())
        };
        if let (Some(a), Some(b)) = (at(&none), at(&with)) {
            let xy = chart.backend_coord(&(1.6, y_lo));
            headline_note(&root, xy, &format!("D = {}", a.files), &a, &b, bits)?;
        }
        legend_box(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present()?;
        Ok(())
    })())
}
