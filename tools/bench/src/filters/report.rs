//! `filters.csv` and the text report.

use std::io::{self, Write};
use std::path::Path;

use super::{Error, Measurement, Result, Summary};
use crate::readamp::{ABS_TOLERANCE, REL_TOLERANCE, SMALL_THEORY};
use crate::text::{header, ratio, render, sig, thousands};

/// The file [`super::run_and_report`] writes into [`super::Config::out_dir`].
pub const CSV_FILE: &str = "filters.csv";

/// The CSV header, in column order. The first nine columns are the stable
/// interface; later ones may be added to. Times are medians in ns;
/// `probe_ns_uncached` is one probe at a time (an `lfence` after each),
/// `load_ns_dependent` one dependent random load over as many bytes, timed
/// in the same rounds, and `uncached_vs_load` the median of their
/// per-round ratios. `hashes` (`k`) is empty for Ribbon, `result_bits`
/// (`r`) for the Bloom kinds; `bound_bits_per_key` is `log2(1/measured_fpr)`.
pub const CSV_COLUMNS: [&str; 24] = [
    "kind",
    "bits_per_key",
    "measured_fpr",
    "theory_fpr",
    "stored_bits_per_key",
    "probe_ns_cached",
    "probe_ns_uncached",
    "build_ns_per_key",
    "load_ns_dependent",
    "probe_ns_uncached_back_to_back",
    "uncached_vs_load",
    "keygen_ns",
    "hashes",
    "result_bits",
    "keys",
    "cached_keys",
    "absent_probes",
    "false_positives",
    "filter_bytes",
    "bound_bits_per_key",
    "uncached_bytes",
    "copies",
    "rounds",
    "within_tolerance",
];

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

fn csv_row(m: &Measurement) -> String {
    let cells = [
        m.kind.label().to_string(),
        m.bits_per_key.to_string(),
        m.measured_fpr.to_string(),
        m.theory_fpr.to_string(),
        m.stored_bits_per_key.to_string(),
        format!("{:.2}", m.probe_ns_cached),
        format!("{:.2}", m.probe_ns_uncached),
        format!("{:.2}", m.build_ns_per_key),
        format!("{:.2}", m.load_ns_dependent),
        format!("{:.2}", m.probe_ns_uncached_back_to_back),
        format!("{:.4}", m.uncached_vs_load),
        format!("{:.2}", m.keygen_ns),
        opt(m.hashes),
        opt(m.result_bits),
        m.keys.to_string(),
        m.cached_keys.to_string(),
        m.absent_probes.to_string(),
        m.false_positives.to_string(),
        m.filter_bytes.to_string(),
        opt(m.bound_bits_per_key()),
        m.uncached_bytes.to_string(),
        m.copies.to_string(),
        m.rounds.to_string(),
        m.within_tolerance().to_string(),
    ];
    cells.join(",")
}

/// The CSV text of `rows`: the header [`CSV_COLUMNS`], then one line per
/// measurement.
pub(crate) fn csv(rows: &[Measurement]) -> String {
    let mut s = CSV_COLUMNS.join(",");
    s.push('\n');
    for m in rows {
        s.push_str(&csv_row(m));
        s.push('\n');
    }
    s
}

/// Writes `rows` as CSV to `path` (see [`CSV_COLUMNS`]).
///
/// # Errors
/// [`Error::Io`] if the file cannot be written.
pub fn write_csv(rows: &[Measurement], path: &Path) -> Result<()> {
    std::fs::write(path, csv(rows)).map_err(|e| Error::io(format!("write {}", path.display()), e))
}

/// A rate as a percentage in 4 significant digits.
fn pct(p: f64) -> String {
    format!("{}%", sig(p * 100.0))
}

/// `1,234.5` ns as `1235`, `23.46` as `23.5`: whole ns from 100 up.
fn ns(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Writes the table of `rows`, one line per kind and setting with an
/// empty line between settings: the false-positive rate measured, in
/// theory, their ratio and the check; the bits per key stored and their
/// ratio to the bound `log2(1/p)` of the measured rate; the probe times
/// (cached; uncached one at a time, the dependent load of the same rounds
/// and their ratio; uncached back to back); and the build time per key.
///
/// # Errors
/// Errors of `out`.
pub fn write_table(rows: &[Measurement], out: &mut dyn Write) -> io::Result<()> {
    let mut lines = header(
        &[
            (3, "FPR".into()),
            (7, "bits/key".into()),
            (9, "probe ns".into()),
            (14, "build".into()),
        ],
        &[
            "kind",
            "setting",
            "k/r",
            "measured",
            "theory",
            "ratio",
            "ok",
            "stored",
            "×bound",
            "cached",
            "uncached",
            "load",
            "×load",
            "back-to-back",
            "ns/key",
        ],
    );
    let mut last = None;
    for m in rows {
        if last.is_some() && last != Some(m.bits_per_key) {
            lines.push(vec![String::new()]);
        }
        last = Some(m.bits_per_key);
        lines.push(vec![
            m.kind.label().to_string(),
            m.bits_per_key.to_string(),
            m.param(),
            pct(m.measured_fpr),
            pct(m.theory_fpr),
            ratio(m.measured_fpr, m.theory_fpr),
            if m.within_tolerance() { "yes" } else { "NO" }.into(),
            format!("{:.3}", m.stored_bits_per_key),
            m.bound_bits_per_key()
                .map_or("-".into(), |b| format!("{:.3}", m.stored_bits_per_key / b)),
            ns(m.probe_ns_cached),
            ns(m.probe_ns_uncached),
            ns(m.load_ns_dependent),
            format!("{:.2}", m.uncached_vs_load),
            ns(m.probe_ns_uncached_back_to_back),
            ns(m.build_ns_per_key),
        ]);
    }
    render(out, &lines, &[3, 7, 9, 14])
}

/// The lines above the table: what was measured, on how much.
fn preamble(rows: &[Measurement], out: &mut dyn Write) -> io::Result<()> {
    let Some(m) = rows.first() else {
        return writeln!(out, "No measurements.");
    };
    let keygen: Vec<f64> = rows.iter().map(|m| m.keygen_ns).collect();
    let (lo, hi) = keygen.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &v| {
        (lo.min(v), hi.max(v))
    });
    writeln!(
        out,
        "Filters over {} random {}-byte keys (Ribbon: r = floor(setting / 1.05)); FPR: the \
         false-positive rate over {} absent keys.",
        thousands(m.keys),
        super::measure::KEY_LEN,
        thousands(m.absent_probes as usize)
    )?;
    writeln!(
        out,
        "Probe ns, medians of {} interleaved rounds, each probe of a fresh random hash (making \
         it: {}-{} ns, included):",
        m.rounds,
        ns(lo),
        ns(hi)
    )?;
    let mib = rows.iter().map(|m| m.uncached_bytes).min().unwrap_or(0) >> 20;
    writeln!(
        out,
        "  cached: a {}-key filter; uncached: a random one of the copies of the {}-key filter \
         (at least {mib} MiB of them per kind), one probe at a time (lfence),",
        thousands(m.cached_keys),
        thousands(m.keys),
    )?;
    writeln!(
        out,
        "  against load: one dependent random load over as many bytes, timed in the same \
         rounds (×load: median of the per-round ratios); back-to-back: without the lfence."
    )?;
    writeln!(
        out,
        "Bits/key stored: every byte of the filter; ×bound: stored / log2(1/measured rate)."
    )?;
    writeln!(out)
}

/// Writes the preamble, the table, the check and the output files.
pub(crate) fn write_report(s: &Summary, out: &mut dyn Write) -> io::Result<()> {
    preamble(&s.rows, out)?;
    write_table(&s.rows, out)?;
    writeln!(out)?;
    let tolerance = format!(
        "within {:.0}%, or {} where theory < {}",
        REL_TOLERANCE * 100.0,
        ABS_TOLERANCE,
        SMALL_THEORY
    );
    if s.misses.is_empty() {
        writeln!(
            out,
            "All {} false-positive rates agree with their kind's theory ({tolerance}).",
            s.rows.len()
        )?;
    } else {
        writeln!(
            out,
            "{} of {} false-positive rates disagree with their kind's theory ({tolerance}):",
            s.misses.len(),
            s.rows.len()
        )?;
        for m in &s.misses {
            writeln!(
                out,
                "  {} at {} bits/key ({}): measured {} ({} of {}) vs theory {}",
                m.kind.label(),
                m.bits_per_key,
                m.param(),
                pct(m.measured_fpr),
                m.false_positives,
                m.absent_probes,
                pct(m.theory_fpr)
            )?;
        }
    }
    writeln!(out, "CSV: {}", s.csv.display())?;
    if let Some(p) = &s.plot {
        writeln!(out, "Plot: {}", p.display())?;
    }
    writeln!(out, "Elapsed: {:.1} s", s.elapsed.as_secs_f64())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use siftdb::filter::FilterKind;

    /// A measurement with round numbers, for the shape of the outputs.
    pub(crate) fn sample(kind: FilterKind, bits: f64, measured: f64, theory: f64) -> Measurement {
        Measurement {
            kind,
            bits_per_key: bits,
            hashes: (kind != FilterKind::Ribbon).then_some(7),
            result_bits: (kind == FilterKind::Ribbon).then_some(9),
            keys: 1_000_000,
            cached_keys: 100_000,
            absent_probes: 2_000_000,
            false_positives: (measured * 2e6) as u64,
            measured_fpr: measured,
            theory_fpr: theory,
            filter_bytes: 1_250_001,
            stored_bits_per_key: 10.000_008,
            probe_ns_cached: 19.61,
            probe_ns_uncached: 262.4,
            probe_ns_uncached_back_to_back: 129.0,
            load_ns_dependent: 203.0,
            uncached_vs_load: 1.2926,
            keygen_ns: 4.2,
            build_ns_per_key: 17.8,
            uncached_bytes: 268_435_456,
            copies: 215,
            rounds: 31,
        }
    }

    #[test]
    fn csv_has_the_columns_and_one_row_per_measurement() {
        let rows = [
            sample(FilterKind::Bloom, 10.0, 0.0083, 0.008194),
            sample(FilterKind::Ribbon, 10.0, 0.0020, 1.0 / 512.0),
        ];
        let text = csv(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with(
            "kind,bits_per_key,measured_fpr,theory_fpr,stored_bits_per_key,probe_ns_cached,\
             probe_ns_uncached,build_ns_per_key,load_ns_dependent,"
        ));
        let cells: Vec<&str> = lines[1].split(',').collect();
        assert_eq!(cells.len(), CSV_COLUMNS.len());
        assert_eq!(
            cells[..12],
            [
                "bloom",
                "10",
                "0.0083",
                "0.008194",
                "10.000008",
                "19.61",
                "262.40",
                "17.80",
                "203.00",
                "129.00",
                "1.2926",
                "4.20"
            ]
        );
        let at = |name: &str| CSV_COLUMNS.iter().position(|c| *c == name).unwrap();
        assert_eq!(cells[at("hashes")], "7");
        assert_eq!(cells[at("result_bits")], "");
        assert_eq!(cells[at("false_positives")], "16600");
        assert_eq!(cells[at("within_tolerance")], "true");
        let ribbon: Vec<&str> = lines[2].split(',').collect();
        assert_eq!((ribbon[0], ribbon[at("hashes")]), ("ribbon", ""));
        assert_eq!(ribbon[at("result_bits")], "9");
        // log2(1 / 0.002) = 8.9658.
        let bound: f64 = ribbon[at("bound_bits_per_key")].parse().unwrap();
        assert!((bound - 8.965_784).abs() < 1e-6, "{bound}");
    }

    #[test]
    fn table_shows_each_check_and_separates_settings() {
        let rows = [
            sample(FilterKind::Bloom, 4.0, 0.1467, 0.1469),
            sample(FilterKind::BlockedBloom, 4.0, 0.17, 0.1478),
            sample(FilterKind::Bloom, 10.0, 0.0083, 0.008194),
        ];
        let mut buf = Vec::new();
        write_table(&rows, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2 + 2 + 1 + 1, "{text}");
        assert!(lines[0].contains("FPR") && lines[0].contains("probe ns"));
        assert!(lines[1].starts_with("kind "), "{text}");
        let cells = |l: &str| -> Vec<String> {
            l.split_whitespace()
                .filter(|c| *c != "|")
                .map(String::from)
                .collect()
        };
        assert_eq!(
            cells(lines[2]),
            [
                "bloom", "4", "k=7", "14.67%", "14.69%", "0.999", "yes", "10.000", "3.611", "19.6",
                "262", "203", "1.29", "129", "17.8"
            ]
        );
        // 17% against 14.78%: 15% too many, outside 10%.
        assert_eq!(cells(lines[3])[6], "NO");
        assert_eq!(lines[4], "");
        assert_eq!(
            cells(lines[5])[..7],
            ["bloom", "10", "k=7", "0.8300%", "0.8194%", "1.013", "yes"]
        );
        // Every column lines up: each line is as wide as the header.
        let w = lines[1].chars().count();
        assert!(
            lines[2].chars().count() == w && lines[5].chars().count() == w,
            "{text}"
        );
    }

    #[test]
    fn report_lists_the_misses() {
        let rows = vec![
            sample(FilterKind::Bloom, 4.0, 0.1467, 0.1469),
            sample(FilterKind::BlockedBloom, 4.0, 0.17, 0.1478),
        ];
        let s = Summary {
            misses: vec![rows[1].clone()],
            rows,
            csv: "out/filters.csv".into(),
            plot: Some("out/filters-fpr.svg".into()),
            elapsed: std::time::Duration::from_millis(1500),
        };
        let mut buf = Vec::new();
        write_report(&s, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        for needle in [
            "Filters over 1,000,000 random 16-byte keys",
            "over 2,000,000 absent keys",
            "1 of 2 false-positive rates disagree with their kind's theory (within 10%, or 0.002 \
             where theory < 0.02):",
            "  blocked-bloom at 4 bits/key (k=7): measured 17.00% (340000 of 2000000) vs theory 14.78%",
            "CSV: out/filters.csv\nPlot: out/filters-fpr.svg\nElapsed: 1.5 s\n",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
        let s = Summary {
            misses: Vec::new(),
            ..s
        };
        let mut buf = Vec::new();
        write_report(&s, &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(text.contains("All 2 false-positive rates agree"), "{text}");
    }
}
