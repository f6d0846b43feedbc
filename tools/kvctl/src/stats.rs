//! `kvctl stats`: the shape of the database, level by level.

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use siftdb::{LevelStats, Stats};

use crate::data::open_read_only;
use crate::error::{write_failed, CliError};
use crate::format::{group, human_bytes, Align, Table};

#[derive(Debug, Args)]
#[command(
    long_about = "Show SSTables per level: files, bytes, entries (every version and \
tombstone), table keys, tombstones and filter bits per key; then write amplification, filter \
memory and what the database holds in memory.

\"table keys\" sums each table's distinct keys: a key held by several tables (overlapping \
level-0 tables, or several levels) counts once in each, so the total can exceed what \
`kvctl scan --count` finds. `kvctl distinct` estimates the distinct keys of the whole tree.",
    after_help = "Example:\n  kvctl stats ./db --json"
)]
pub struct StatsArgs {
    /// Database directory
    pub db: PathBuf,
    /// Print JSON: {"levels": [...], "total": {...}, "write_amplification": f64,
    /// "user_bytes_flushed": u64, "table_bytes_written": u64, "filter_memory": {...},
    /// "memory": {...}, "keyspace": str, "keyspaces": [...]}, every level
    /// included; the levels are --keyspace's (DESIGN.md 12.9)
    #[arg(long)]
    pub json: bool,
}

fn level_json(l: &LevelStats) -> serde_json::Value {
    json!({
        "files": l.files,
        "bytes": l.bytes,
        "entries": l.entries,
        "distinct_keys": l.distinct_keys,
        "tombstones": l.tombstones,
        "filter_bits": l.filter_bits,
        "filter_bits_per_key": l.bits_per_key(),
    })
}

/// The JSON document `stats --json` prints.
pub fn stats_json(stats: &Stats) -> serde_json::Value {
    let levels = &stats.levels;
    let levels_json: Vec<serde_json::Value> = levels
        .iter()
        .map(|l| {
            let mut v = level_json(l);
            v["level"] = json!(l.level);
            v
        })
        .collect();
    json!({
        "levels": levels_json,
        "total": level_json(&LevelStats::sum(levels)),
        "write_amplification": stats.write_amplification(),
        "user_bytes_flushed": stats.total_user_bytes_flushed,
        "table_bytes_written": stats.total_table_bytes_written,
        "range_tombstones": stats.range_tombstones,
        "filter_memory": crate::inspect::filters::memory_json(&stats.filter_memory),
        "memory": {
            "pinned_filters": stats.memory.pinned_filters,
            "pinned_indexes": stats.memory.pinned_indexes,
            "memtables": stats.memory.memtables,
            "block_cache": stats.memory.block_cache,
            "block_cache_capacity": stats.memory.block_cache_capacity,
            "total": stats.memory.total(),
        },
    })
}

/// One line on the memory the database holds, by part.
fn memory_line(stats: &Stats) -> String {
    let m = &stats.memory;
    let data = if m.block_cache_capacity == 0 {
        "table data is read through the page cache".to_string()
    } else {
        format!(
            "block cache {} of {}",
            human_bytes(m.block_cache),
            human_bytes(m.block_cache_capacity)
        )
    };
    format!(
        "memory {} held: pinned filters {}, pinned indexes {}, memtables {} ({data})\n",
        human_bytes(m.total()),
        human_bytes(m.pinned_filters),
        human_bytes(m.pinned_indexes),
        human_bytes(m.memtables)
    )
}

/// One line on what the filters cost and buy (per level: `kvctl filters`).
fn filter_memory_line(stats: &Stats) -> String {
    let m = &stats.filter_memory;
    if m.keys == 0 {
        return String::new();
    }
    format!(
        "filters {} for {} ({:.2} filter bits per key): {:.5} expected false positives \
         per absent-key lookup; {:.5} with the same bits as uniform bits per key, {:.5} spread \
         optimally (per level: kvctl filters)\n",
        human_bytes(m.filter_bytes),
        crate::format::count(m.keys, "key"),
        m.filter_bits as f64 / m.keys as f64,
        m.expected_false_positives,
        m.uniform_false_positives,
        m.optimal_false_positives
    )
}

/// The levels table: non-empty levels, then a total row. With
/// `filter_memory` (kvctl info) the filter bytes get a column of their own
/// and the last column is headed `bits/key`; without (stats, compact,
/// demo) it is `filter bits/key`.
pub fn levels_table(levels: &[LevelStats], filter_memory: bool) -> Table {
    let mut columns = vec![
        ("level", Align::Left),
        ("files", Align::Right),
        ("size", Align::Right),
        ("entries", Align::Right),
        ("table keys", Align::Right),
        ("tombstones", Align::Right),
    ];
    if filter_memory {
        columns.extend([("filter memory", Align::Right), ("bits/key", Align::Right)]);
    } else {
        columns.push(("filter bits/key", Align::Right));
    }
    let mut t = Table::new(&columns);
    let cells = |name: String, l: &LevelStats| {
        let mut row = vec![
            name,
            group(l.files as u64),
            human_bytes(l.bytes),
            group(l.entries),
            group(l.distinct_keys),
            group(l.tombstones),
        ];
        if filter_memory {
            row.push(human_bytes(l.filter_bytes));
        }
        row.push(format!("{:.2}", l.bits_per_key()));
        row
    };
    for l in levels.iter().filter(|l| l.files > 0) {
        t.row(cells(format!("L{}", l.level), l));
    }
    t.row(cells("total".into(), &LevelStats::sum(levels)));
    t
}

/// `write amplification 1.95 (... since creation)`, one line.
pub fn write_amplification_line(stats: &Stats) -> String {
    format!("write amplification {}\n", write_amplification(stats))
}

/// `1.95 (... since creation)`, or a note that nothing was flushed yet (the
/// ratio would be 0 / 0).
pub fn write_amplification(stats: &Stats) -> String {
    if stats.total_user_bytes_flushed == 0 {
        return "none yet (nothing flushed since creation: every write is in the WAL)".into();
    }
    format!(
        "{:.2} ({} of SSTables written for {} of keys and values flushed, since creation)",
        stats.write_amplification(),
        human_bytes(stats.total_table_bytes_written),
        human_bytes(stats.total_user_bytes_flushed),
    )
}

pub fn run(args: &StatsArgs) -> Result<(), CliError> {
    let db = open_read_only(&args.db)?;
    let ks = crate::keyspace::existing(&db)?;
    // The default's stats are the database's (memory summed over every
    // keyspace); another keyspace's are its own tree's.
    let whole = db.stats();
    let ks_id = ks.id();
    let stats = match ks_id {
        0 => whole.clone(),
        _ => ks.stats(),
    };
    drop(ks);
    db.close()?;
    let mut out = io::stdout().lock();
    let text = if args.json {
        let mut v = stats_json(&stats);
        v["keyspace"] = json!(crate::keyspace::selected());
        v["keyspaces"] = crate::keyspace::keyspaces_json(&whole.keyspaces);
        format!("{v:#}\n")
    } else {
        let empty = stats.levels.iter().all(|l| l.files == 0);
        let mut s = String::new();
        if whole.keyspaces.len() > 1 {
            s.push_str(&format!("keyspace {}\n", crate::keyspace::selected()));
        }
        s.push_str(&levels_table(&stats.levels, false).render(""));
        if empty {
            s.push_str("(no SSTables yet: writes since the last flush are in the WAL)\n");
        }
        if ks_id == 0 {
            s.push_str(&write_amplification_line(&stats));
        } else {
            // Flushes and compactions are counted for the database, not
            // per keyspace.
            s.push_str(&format!(
                "write amplification of the whole database {}\n",
                write_amplification(&stats)
            ));
        }
        s.push_str(&filter_memory_line(&stats));
        s.push_str(&memory_line(&stats));
        if stats.range_tombstones > 0 {
            s.push_str(&format!(
                "{} live: each costs a found key one lookup until compaction removes what it \
                 hides (kvctl compact)\n",
                crate::format::count(stats.range_tombstones, "range tombstone")
            ));
        }
        if whole.keyspaces.len() > 1 {
            s.push_str("keyspaces\n");
            s.push_str(&crate::keyspace::keyspaces_table(&whole.keyspaces));
        }
        s
    };
    out.write_all(text.as_bytes()).map_err(write_failed)
}
