//! `kvctl distinct`: estimated distinct user keys per table, per level and
//! for the whole database, and the keys levels (and level-0 files) share,
//! all from the tables' key sketches (HyperLogLogs), without reading a
//! data block.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use siftdb::inspect::sketch::hyperloglog::HyperLogLog;

use crate::data::open_read_only;
use crate::error::{write_failed, CliError};
use crate::format::{group, Align, Table};
use crate::inspect::logs::{key_prediction_json, key_prediction_text};

/// Level-0 files beyond which the pairwise overlaps are not listed.
const MAX_LEVEL0_PAIRS_FILES: usize = 16;

#[derive(Debug, Args)]
#[command(
    after_help = "Estimates come from each table's HyperLogLog (DESIGN.md 6.8, 12.10): the \
relative standard error is 1.04/sqrt(2^p), 1.6% at the default precision 12; small tables \
are nearly exact. The overlap of A and B is |A| + |B| - |A u B|, so its error is that of \
the larger sets.\n\nExample:\n  kvctl distinct ./db --json"
)]
pub struct DistinctArgs {
    /// Database directory
    pub db: PathBuf,
    /// Print JSON: {"tables": [...], "levels": [...], "level_overlaps": [...],
    /// "level0_overlaps": [...], "total": {"estimate", "relative_std_error", ...}}
    /// (schema in DESIGN.md 12.9)
    #[arg(long)]
    pub json: bool,
}

struct TableSketch {
    file: String,
    level: usize,
    distinct_keys: u64,
    sketch: Option<HyperLogLog>,
}

fn union<'a>(sketches: impl IntoIterator<Item = &'a HyperLogLog>) -> Option<HyperLogLog> {
    let mut out: Option<HyperLogLog> = None;
    for s in sketches {
        match &mut out {
            None => out = Some(s.clone()),
            Some(u) => u.merge(s),
        }
    }
    out
}

/// `|A| + |B| − |A ∪ B|`, at least 0.
fn overlap(a: &HyperLogLog, b: &HyperLogLog) -> f64 {
    let mut u = a.clone();
    u.merge(b);
    (a.estimate() + b.estimate() - u.estimate()).max(0.0)
}

pub fn run(args: &DistinctArgs) -> Result<(), CliError> {
    let db = open_read_only(&args.db)?;
    let ks = crate::keyspace::existing(&db)?;
    let total_estimate = ks.approximate_len()?;
    // The manifest keeps the last compactions' predictions (tag 9).
    let stats = ks.stats();
    let history = stats.key_predictions;
    let mut tables = Vec::new();
    let mut notes = Vec::new();
    for f in ks.live_files() {
        let file = f
            .path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        // A damaged sketch costs its estimates, not the command (the engine
        // counts such a table by its exact keys too).
        // Read from the table the read-only handle holds open: a writer's
        // compaction may have deleted the file since the open.
        let sketch = f.key_sketch().unwrap_or_else(|e| {
            notes.push(format!(
                "{file}: key sketch unreadable, counted by its exact keys ({e}; kvctl verify reports it)"
            ));
            None
        });
        tables.push(TableSketch {
            file,
            level: f.level,
            distinct_keys: f.properties.num_distinct_keys,
            sketch,
        });
    }
    drop(ks);
    db.close()?;
    if stats.range_tombstones > 0 {
        // The sketches count keys as the tables hold them: a range deletion
        // hides keys without removing them until a compaction does.
        notes.push(format!(
            "{} live: the estimates still count the keys they hide, until a compaction \
             drops them (kvctl compact)",
            crate::format::count(stats.range_tombstones, "range deletion")
        ));
    }
    let unsketched = tables.iter().filter(|t| t.sketch.is_none()).count();
    let all = union(tables.iter().filter_map(|t| t.sketch.as_ref()));
    let rse = all.as_ref().map_or(
        1.04 / 64.0, // the default precision's, when nothing is sketched
        HyperLogLog::relative_std_error,
    );

    // Per level: the union of its sketched tables.
    let max_level = tables.iter().map(|t| t.level).max();
    let mut levels = Vec::new();
    for level in 0..=max_level.unwrap_or(0) {
        let of: Vec<&TableSketch> = tables.iter().filter(|t| t.level == level).collect();
        if of.is_empty() {
            continue;
        }
        let sketch = union(of.iter().filter_map(|t| t.sketch.as_ref()));
        let complete = of.iter().all(|t| t.sketch.is_some());
        levels.push((
            level,
            of.len(),
            of.iter().map(|t| t.distinct_keys).sum::<u64>(),
            sketch,
            complete,
        ));
    }
    let mut level_overlaps = Vec::new();
    for (i, a) in levels.iter().enumerate() {
        for b in &levels[i + 1..] {
            if let (Some(sa), Some(sb), true, true) = (&a.3, &b.3, a.4, b.4) {
                level_overlaps.push((a.0, b.0, overlap(sa, sb)));
            }
        }
    }
    let l0: Vec<&TableSketch> = tables.iter().filter(|t| t.level == 0).collect();
    let mut l0_overlaps = Vec::new();
    if l0.len() <= MAX_LEVEL0_PAIRS_FILES {
        for (i, a) in l0.iter().enumerate() {
            for b in &l0[i + 1..] {
                if let (Some(sa), Some(sb)) = (&a.sketch, &b.sketch) {
                    l0_overlaps.push((a.file.clone(), b.file.clone(), overlap(sa, sb)));
                }
            }
        }
    }

    let text = if args.json {
        let doc = json!({
            "tables": tables.iter().map(|t| json!({
                "file": t.file,
                "level": t.level,
                "distinct_keys": t.distinct_keys,
                "estimate": t.sketch.as_ref().map(HyperLogLog::estimate),
                "precision": t.sketch.as_ref().map(HyperLogLog::precision),
            })).collect::<Vec<_>>(),
            "levels": levels.iter().map(|(level, n, summed, sketch, complete)| json!({
                "level": level,
                "tables": n,
                "distinct_keys_summed": summed,
                "estimate": sketch.as_ref().filter(|_| *complete).map(HyperLogLog::estimate),
            })).collect::<Vec<_>>(),
            "level_overlaps": level_overlaps.iter().map(|(a, b, e)| json!({
                "a": a, "b": b, "estimate": e,
            })).collect::<Vec<_>>(),
            "level0_overlaps": l0_overlaps.iter().map(|(a, b, e)| json!({
                "a": a, "b": b, "estimate": e,
            })).collect::<Vec<_>>(),
            "total": {
                "estimate": total_estimate,
                "relative_std_error": rse,
                "unsketched_tables": unsketched,
            },
            "compactions": history.iter().map(key_prediction_json).collect::<Vec<_>>(),
            "notes": notes,
        });
        format!("{doc:#}\n")
    } else {
        let mut s = String::new();
        let mut t = Table::new(&[
            ("table", Align::Left),
            ("level", Align::Right),
            ("distinct keys", Align::Right),
            ("estimate", Align::Right),
            ("error", Align::Right),
        ]);
        for ts in &tables {
            let (est, err) = match &ts.sketch {
                Some(sk) => {
                    let e = sk.estimate();
                    let err = if ts.distinct_keys == 0 {
                        0.0
                    } else {
                        100.0 * (e / ts.distinct_keys as f64 - 1.0)
                    };
                    (group(e.round() as u64), format!("{err:+.2}%"))
                }
                None => ("no sketch".to_string(), String::new()),
            };
            t.row(vec![
                ts.file.clone(),
                format!("L{}", ts.level),
                group(ts.distinct_keys),
                est,
                err,
            ]);
        }
        s.push_str(&t.render(""));
        let mut lt = Table::new(&[
            ("level", Align::Left),
            ("tables", Align::Right),
            ("keys summed", Align::Right),
            ("distinct (estimate)", Align::Right),
        ]);
        for (level, n, summed, sketch, complete) in &levels {
            lt.row(vec![
                format!("L{level}"),
                group(*n as u64),
                group(*summed),
                match sketch.as_ref().filter(|_| *complete) {
                    Some(sk) => group(sk.estimate().round() as u64),
                    None => "-".to_string(),
                },
            ]);
        }
        if !levels.is_empty() {
            s.push('\n');
            s.push_str(&lt.render(""));
        }
        for (a, b, e) in &level_overlaps {
            s.push_str(&format!(
                "L{a} and L{b} share about {}\n",
                crate::format::count(e.round() as u64, "key")
            ));
        }
        for (a, b, e) in &l0_overlaps {
            s.push_str(&format!(
                "{a} and {b} (L0) share about {}\n",
                crate::format::count(e.round() as u64, "key")
            ));
        }
        if l0.len() > MAX_LEVEL0_PAIRS_FILES {
            s.push_str(&format!(
                "({} level-0 files: pairwise overlaps not listed beyond {MAX_LEVEL0_PAIRS_FILES})\n",
                l0.len()
            ));
        }
        s.push_str(&format!(
            "total: about {} distinct keys (memtables included; relative standard error {:.2}%)\n",
            group(total_estimate),
            100.0 * rse
        ));
        if !history.is_empty() {
            let within = |bound: fn(&siftdb::KeyPrediction) -> f64| {
                let n = history
                    .iter()
                    .filter(|p| p.relative_error().abs() <= bound(p));
                n.count()
            };
            s.push_str(&format!(
                "\nlast {}, predicted distinct keys against found ({} within 1 \
                 standard error, {} within 2%):\n",
                crate::format::count(history.len() as u64, "compaction"),
                within(|p| p.relative_std_error),
                within(|_| 0.02),
            ));
            for p in &history {
                s.push_str("  ");
                s.push_str(&key_prediction_text(p));
                s.push('\n');
            }
        }
        for n in &notes {
            s.push_str(n);
            s.push('\n');
        }
        if unsketched > 0 {
            s.push_str(&format!(
                "{unsketched} table(s) written without a key sketch count their exact keys, as if \
                 no key of theirs were elsewhere; a compaction rewrites them with sketches\n"
            ));
        }
        s
    };
    io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(write_failed)
}
