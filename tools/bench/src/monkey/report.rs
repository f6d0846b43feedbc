//! The text table and the CSV of a Monkey run.

use std::io::{self, Write};
use std::path::Path;

use super::{Error, Policy, Result, Summary};
use crate::text::{render, thousands};

/// The CSV [`write_csv`] writes into the output directory.
pub const CSV_FILE: &str = "monkey.csv";

/// The columns of [`CSV_FILE`], one row per point and level (`level` empty
/// on the row of the whole tree).
pub const CSV_COLUMNS: &str = "policy,budget_bits_per_key,level,runs,keys,bits_per_key,\
predicted_absent_reads,absent_reads,present_reads,filter_bytes,tables_rebuilt";

/// Writes the points, per tree and per level, to `dir/monkey.csv`.
///
/// # Errors
/// [`Error::Io`] if the file cannot be written.
pub fn write_csv(s: &Summary, dir: &Path) -> Result<()> {
    let path = dir.join(CSV_FILE);
    let mut out = String::from(CSV_COLUMNS);
    out.push('\n');
    for p in &s.points {
        out.push_str(&format!(
            "{},{},,,{},{:.4},{:.6},{:.6},{:.6},{},{}\n",
            p.policy.label(),
            p.budget_bits,
            p.levels.iter().map(|l| l.keys).sum::<u64>(),
            p.bits_per_key,
            p.predicted_absent_reads,
            p.absent_reads,
            p.present_reads,
            p.filter_bytes,
            p.tables_rebuilt
        ));
        for l in &p.levels {
            out.push_str(&format!(
                "{},{},{},{},{},{:.4},{:.6},,,,\n",
                p.policy.label(),
                p.budget_bits,
                l.level,
                l.runs,
                l.keys,
                l.bits_per_key,
                l.false_positives
            ));
        }
    }
    std::fs::write(&path, out).map_err(|source| Error::Io {
        what: format!("write {}", path.display()),
        source,
    })
}

/// Writes the human report: the points, the reference budget's levels,
/// the targets and the drift.
///
/// # Errors
/// What writing to `out` returns.
pub fn write_table(s: &Summary, reference: f64, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "Monkey against uniform on one leveled tree of {} keys (loaded in {:.1} s), {} absent lookups per point\n",
        thousands(s.keys),
        s.load_secs,
        thousands(s.points.first().map_or(0, |p| p.absent_lookups)),
    )?;
    let mut rows = vec![vec![
        "budget".into(),
        "policy".into(),
        "bits/key".into(),
        "filter MiB".into(),
        "absent reads".into(),
        "predicted".into(),
        "error".into(),
        "present reads".into(),
        "rebuilt".into(),
    ]];
    for p in &s.points {
        rows.push(vec![
            format!("{}", p.budget_bits),
            p.policy.label().into(),
            format!("{:.3}", p.bits_per_key),
            format!("{:.2}", p.filter_bytes as f64 / f64::from(1 << 20)),
            format!("{:.5}", p.absent_reads),
            format!("{:.5}", p.predicted_absent_reads),
            format!("{:+.1}%", 100.0 * p.prediction_error()),
            format!("{:.4}", p.present_reads),
            p.tables_rebuilt.to_string(),
        ]);
    }
    render(out, &rows, &[1])?;
    for policy in [Policy::Uniform, Policy::Monkey] {
        let Some(p) = s
            .points
            .iter()
            .find(|p| p.policy == policy && p.budget_bits == reference)
        else {
            continue;
        };
        writeln!(
            out,
            "\n{} at {reference} bits per key, per level:",
            policy.label()
        )?;
        let mut rows = vec![vec![
            "level".into(),
            "runs".into(),
            "keys".into(),
            "bits/key".into(),
            "false positives".into(),
        ]];
        for l in &p.levels {
            rows.push(vec![
                format!("L{}", l.level),
                l.runs.to_string(),
                thousands(l.keys as usize),
                format!("{:.2}", l.bits_per_key),
                format!("{:.5}", l.false_positives),
            ]);
        }
        render(out, &rows, &[1])?;
    }
    if let Some(t) = s.targets(reference) {
        writeln!(out, "\nTargets at {reference} bits per key:")?;
        let yes = |ok: bool| if ok { "met" } else { "MISSED" };
        writeln!(
            out,
            "  absent reads: monkey {:.5} against uniform {:.5} at the same memory (uniform's curve interpolated at Monkey's bits per key): {:.1}% fewer (target 50%): {}",
            t.monkey_reads,
            t.uniform_reads_same_memory,
            100.0 * t.read_reduction,
            yes(t.read_reduction >= 0.5)
        )?;
        writeln!(
            out,
            "  memory for uniform's reads: monkey {:.2} bits/key (interpolated) against {:.2}: {:.1}% less (target 30%): {}",
            t.monkey_bits_same_reads,
            t.uniform_bits,
            100.0 * t.memory_saving,
            yes(t.memory_saving >= 0.3)
        )?;
        writeln!(
            out,
            "  present reads: monkey {:+.2}% against uniform (target at most +2%): {}",
            100.0 * t.present_penalty,
            yes(t.present_penalty <= 0.02)
        )?;
        writeln!(
            out,
            "  filter memory over the budget, worst point: {:+.2}% (target at most +1%): {}",
            100.0 * t.worst_over_budget,
            yes(t.worst_over_budget <= 0.01)
        )?;
        writeln!(
            out,
            "  measured against predicted absent reads, worst point: {:.1}% (target 10%): {}",
            100.0 * t.worst_prediction_error,
            yes(t.worst_prediction_error <= 0.10)
        )?;
    }
    let d = &s.drift;
    if let Some(last) = d.samples.last() {
        let worst = d
            .samples
            .iter()
            .map(|s| s.expected / s.optimal - 1.0)
            .fold(f64::MIN, f64::max);
        writeln!(
            out,
            "\nDrift over {} random overwrites (monkey at {reference}): expected false positives at most {:+.1}% above the optimum for the live shape ({:+.1}% at the end); a rebuild of {} tables brings it to {:+.1}%",
            thousands(last.writes),
            100.0 * worst,
            100.0 * (last.expected / last.optimal - 1.0),
            d.rebuilt,
            100.0 * (d.after_rebuild - 1.0)
        )?;
        let worst_memory = d
            .samples
            .iter()
            .map(|s| s.memory_over_budget)
            .fold(f64::MIN, f64::max);
        writeln!(
            out,
            "  filter memory at most {:.3} of the budget while compaction lagged, {:.3} once it caught up ({:+.1}% above the optimum then); {} tables rebuilt in the background (which rebuilds only when no compaction is due, so not while compaction lags) wrote {:.1} MiB, {:.1}% of the {:.1} MiB compactions wrote ({:.2}x the {:.1} MiB of overwrites)",
            worst_memory,
            d.settled_memory,
            100.0 * (d.settled_drift - 1.0),
            d.filter_rebuilds,
            d.filter_rebuild_bytes as f64 / f64::from(1 << 20),
            100.0 * d.filter_rebuild_bytes as f64 / d.compaction_bytes.max(1) as f64,
            d.compaction_bytes as f64 / f64::from(1 << 20),
            d.compaction_bytes as f64 / d.user_bytes.max(1) as f64,
            d.user_bytes as f64 / f64::from(1 << 20),
        )?;
    }
    writeln!(out, "\n{:.0} s in all", s.secs)
}
