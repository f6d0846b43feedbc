//! `readamp.csv` and the text report.

use std::io::{self, Write};
use std::path::Path;

use super::{Error, Layout, Point, Result, Summary, Sweep};
use crate::text::{header, ratio, render, sig};

/// The CSV header, in column order. The first fifteen columns are the
/// stable interface; later ones may be added to. For `layout` = `leveled`,
/// `files` is the number of non-empty levels `D` (also in `levels`), and
/// `level_keys` / `level_files` list keys and SSTables per level, level 1
/// first, separated by spaces.
pub const CSV_COLUMNS: [&str; 32] = [
    "files",
    "bits_per_key",
    "hashes",
    "absent_fraction",
    "lookups",
    "reads_absent",
    "reads_present",
    "reads_mixed",
    "theory_absent",
    "theory_present",
    "theory_mixed",
    "fpr_measured",
    "fpr_theory",
    "bits_set_fraction",
    "files_skipped_per_lookup",
    "layout",
    "sweep",
    "keys",
    "absent_lookups",
    "present_lookups",
    "bits_set_theory",
    "skipped_theory",
    "filter_probes_per_lookup",
    "probes_theory",
    "filter_bits_per_key",
    "within_tolerance",
    "levels",
    "level_keys",
    "level_files",
    "compactions",
    "range_skips_per_lookup",
    "range_skips_theory",
];

fn opt(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

fn spaced<T: ToString>(v: &[T]) -> String {
    v.iter().map(T::to_string).collect::<Vec<_>>().join(" ")
}

fn csv_row(p: &Point) -> String {
    let cells = [
        p.files.to_string(),
        p.bits_per_key.to_string(),
        p.hashes.to_string(),
        p.absent_fraction.to_string(),
        p.lookups().to_string(),
        p.reads_absent.to_string(),
        p.reads_present.to_string(),
        p.reads_mixed.to_string(),
        p.theory_absent.to_string(),
        p.theory_present.to_string(),
        p.theory_mixed.to_string(),
        opt(p.fpr_measured),
        opt(p.fpr_theory),
        opt(p.bits_set_fraction),
        p.files_skipped_per_lookup.to_string(),
        p.layout.as_str().to_string(),
        p.sweep.as_str().to_string(),
        p.keys.to_string(),
        p.absent_lookups.to_string(),
        p.present_lookups.to_string(),
        opt(p.bits_set_theory),
        p.skipped_theory.to_string(),
        p.filter_probes_per_lookup.to_string(),
        p.probes_theory.to_string(),
        p.filter_bits_per_key.to_string(),
        p.within_tolerance().to_string(),
        p.levels.to_string(),
        spaced(&p.level_keys),
        spaced(&p.level_files),
        p.compactions.to_string(),
        p.range_skips_per_lookup.to_string(),
        p.range_skips_theory.to_string(),
    ];
    cells.join(",")
}

/// Writes `points` as CSV to `path` (header [`CSV_COLUMNS`]; empty cells
/// for quantities that do not apply, such as the false-positive rate
/// without filters).
///
/// # Errors
/// [`Error::Io`] if the file cannot be written.
pub fn write_csv(points: &[Point], path: &Path) -> Result<()> {
    let mut s = CSV_COLUMNS.join(",");
    s.push('\n');
    for p in points {
        s.push_str(&csv_row(p));
        s.push('\n');
    }
    std::fs::write(path, s).map_err(|e| Error::io(format!("write {}", path.display()), e))
}

/// `measured theory ratio` cells for one quantity.
fn triple(m: Option<f64>, t: Option<f64>) -> [String; 3] {
    match (m, t) {
        (Some(m), Some(t)) => [sig(m), sig(t), ratio(m, t)],
        _ => ["-".into(), "-".into(), "-".into()],
    }
}

fn key_cells(p: &Point) -> Vec<String> {
    vec![
        p.layout.as_str().to_string(),
        p.files.to_string(),
        p.bits_per_key.to_string(),
        p.hashes.to_string(),
    ]
}

/// One row per point, `row(p)`, with an empty row between sweeps.
fn sweep_rows(points: &[Point], row: impl Fn(&Point) -> Vec<String>) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut last_sweep = None;
    for p in points {
        if last_sweep.is_some() && last_sweep != Some(p.sweep) {
            rows.push(vec![String::new()]);
        }
        last_sweep = Some(p.sweep);
        rows.push(row(p));
    }
    rows
}

/// Writes the tables of `points`: data-block reads per lookup (absent,
/// present, mixed), and the filters (false-positive rate, bits set, probes
/// and files skipped per lookup); each quantity as measured, theory and
/// their ratio. `ok` is `yes` when every check of the row is within
/// tolerance. `L/D` is the number of runs `L`, or of non-empty levels `D`
/// for the leveled layout, whose shape a third table lists.
///
/// # Errors
/// Errors of `out`.
pub fn write_table(points: &[Point], out: &mut dyn Write) -> io::Result<()> {
    let f = points.first().map_or(0.4, |p| p.absent_fraction);
    let mut rows = header(
        &[
            (5, "absent keys".into()),
            (8, "present keys".into()),
            (11, format!("mixed, {:.0}% absent", f * 100.0)),
        ],
        &[
            "layout", "L/D", "bits/key", "k", "lookups", "measured", "theory", "ratio", "measured",
            "theory", "ratio", "measured", "theory", "ratio", "ok",
        ],
    );
    rows.extend(sweep_rows(points, |p| {
        let mut r = key_cells(p);
        r.push(p.lookups().to_string());
        r.extend(triple(Some(p.reads_absent), Some(p.theory_absent)));
        r.extend(triple(Some(p.reads_present), Some(p.theory_present)));
        r.extend(triple(Some(p.reads_mixed), Some(p.theory_mixed)));
        r.push(if p.within_tolerance() { "yes" } else { "NO" }.into());
        r
    }));
    writeln!(
        out,
        "Data-block reads per lookup (measured | theory | measured/theory)"
    )?;
    render(out, &rows, &[5, 8, 11, 14])?;
    writeln!(out)?;

    let mut rows = header(
        &[
            (4, "false-positive rate".into()),
            (7, "filter bits set".into()),
            (9, "filter probes/lookup".into()),
            (11, "files skipped/lookup".into()),
        ],
        &[
            "layout", "L/D", "bits/key", "k", "measured", "theory", "ratio", "measured", "theory",
            "measured", "theory", "measured", "theory",
        ],
    );
    rows.extend(sweep_rows(points, |p| {
        let mut r = key_cells(p);
        r.extend(triple(p.fpr_measured, p.fpr_theory));
        let [m, t, _] = triple(p.bits_set_fraction, p.bits_set_theory);
        r.extend([m, t]);
        r.extend([sig(p.filter_probes_per_lookup), sig(p.probes_theory)]);
        r.extend([sig(p.files_skipped_per_lookup), sig(p.skipped_theory)]);
        r
    }));
    writeln!(
        out,
        "Filters (per lookup figures at {:.0}% absent lookups)",
        f * 100.0
    )?;
    render(out, &rows, &[4, 7, 9, 11])?;

    let leveled: Vec<&Point> = points
        .iter()
        .filter(|p| p.layout == Layout::Leveled)
        .collect();
    if leveled.is_empty() {
        return Ok(());
    }
    let mut rows = header(
        &[(6, "range skips/lookup".into())],
        &[
            "layout",
            "D",
            "bits/key",
            "compactions",
            "files per level",
            "keys per level",
            "measured",
            "theory",
        ],
    );
    for p in leveled {
        rows.push(vec![
            p.layout.as_str().to_string(),
            p.files.to_string(),
            p.bits_per_key.to_string(),
            p.compactions.to_string(),
            spaced(&p.level_files),
            spaced(&p.level_keys),
            sig(p.range_skips_per_lookup),
            sig(p.range_skips_theory),
        ]);
    }
    writeln!(out)?;
    writeln!(
        out,
        "Leveled trees after compaction: level 0 empty, D non-empty levels (level 1 first), \
         one candidate file per level"
    )?;
    render(out, &rows, &[6])
}

/// Writes the headline, the tables, any misses and the output files.
pub(crate) fn write_report(s: &Summary, out: &mut dyn Write) -> io::Result<()> {
    if let Some(h) = &s.headline {
        let (a, b) = (&h.without, &h.with);
        writeln!(
            out,
            "Headline: {} files, {:.0}% absent lookups, {} bits/key (k = {}): {:.2} data-block reads \
             per lookup without filters, {:.2} with ({:.0}% fewer); theory {:.2} and {:.2} ({:.0}% fewer).",
            b.files,
            b.absent_fraction * 100.0,
            b.bits_per_key,
            b.hashes,
            a.reads_mixed,
            b.reads_mixed,
            h.reduction * 100.0,
            a.theory_mixed,
            b.theory_mixed,
            (1.0 - b.theory_mixed / a.theory_mixed) * 100.0
        )?;
        writeln!(
            out,
            "          false-positive rate {:.3}% (theory {:.3}%), {:.1}% of filter bits set (theory {:.1}%).",
            b.fpr_measured.unwrap_or(f64::NAN) * 100.0,
            b.fpr_theory.unwrap_or(f64::NAN) * 100.0,
            b.bits_set_fraction.unwrap_or(f64::NAN) * 100.0,
            b.bits_set_theory.unwrap_or(f64::NAN) * 100.0
        )?;
        writeln!(out)?;
    }
    write_table(&s.points, out)?;
    writeln!(out)?;
    let checks: usize = s.points.iter().map(|p| p.checks().len()).sum();
    if s.misses.is_empty() {
        writeln!(
            out,
            "All {checks} checks of {} points agree with theory (within 10%, or 0.002 where theory < 0.02).",
            s.points.len()
        )?;
    } else {
        writeln!(
            out,
            "{} of {checks} checks disagree with theory (tolerance 10%, or 0.002 where theory < 0.02):",
            s.misses.len()
        )?;
        for (name, c) in &s.misses {
            writeln!(
                out,
                "  {name}: {} measured {} vs theory {}",
                c.quantity,
                sig(c.measured),
                sig(c.theory)
            )?;
        }
    }
    writeln!(out, "CSV: {}", s.csv.display())?;
    for p in &s.plots {
        writeln!(out, "Plot: {}", p.display())?;
    }
    writeln!(out, "Elapsed: {:.1} s", s.elapsed.as_secs_f64())?;
    Ok(())
}

/// True for points drawn from the synthetic files × bits sweep.
pub(crate) fn is_grid(p: &Point) -> bool {
    p.layout == Layout::Synthetic && p.sweep == Sweep::FilesBits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_starts_with_the_required_columns() {
        let required = "files,bits_per_key,hashes,absent_fraction,lookups,reads_absent,\
            reads_present,reads_mixed,theory_absent,theory_present,theory_mixed,fpr_measured,\
            fpr_theory,bits_set_fraction,files_skipped_per_lookup";
        assert!(CSV_COLUMNS.join(",").starts_with(required));
    }
}
