//! `kvctl info`: what the manifest, the WALs and the tables' properties say
//! about a database.

use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};
use siftdb::inspect::filename::manifest_name;
use siftdb::inspect::version::set::NUM_LEVELS;
use siftdb::inspect::{filter_settings, level_summaries, DbSnapshot, KeyspaceTree};
use siftdb::LevelStats;

use super::{emit, emit_json, file_name, snapshot, torn_json};
use crate::error::CliError;
use crate::format::{count, group, human_bytes, Align, Table};
use crate::stats::levels_table;

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  kvctl info ./db\n\n\
The `options` lines show the settings stored in the database's OPTIONS file (which \
later opens keep), or with --keyspace NAME those keyspace NAME stores in the \
manifest, then what the SSTables' properties reveal about the ones they were written \
with.")]
pub struct InfoArgs {
    /// Database directory
    pub db: PathBuf,
    /// Print JSON (schema in DESIGN.md, "kvctl JSON output")
    #[arg(long)]
    pub json: bool,
}

fn level_json(l: &LevelStats) -> Value {
    json!({
        "files": l.files,
        "bytes": l.bytes,
        "entries": l.entries,
        "distinct_keys": l.distinct_keys,
        "tombstones": l.tombstones,
        "filter_bytes": l.filter_bytes,
        "filter_bits": l.filter_bits,
        "filter_bits_per_key": l.bits_per_key(),
    })
}

/// The JSON document `info --json` prints: the database's files, and
/// the levels and range tombstones of keyspace `tree`.
pub fn info_json(s: &DbSnapshot, tree: &KeyspaceTree) -> Value {
    let tables = tree.tables();
    let (levels, total) = level_summaries(&tables, NUM_LEVELS);
    let blocks: u64 = tables.iter().map(|t| t.data_blocks).sum();
    let block_bytes: u64 = tables.iter().map(|t| t.data_bytes).sum();
    let stored = crate::keyspace::stored_settings(s, tree)
        .ok()
        .flatten()
        .map(|v| {
            v.into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect::<serde_json::Map<String, Value>>()
        });
    json!({
        "path": s.dir.display().to_string(),
        "format_version": s.manifest.format_version(),
        "manifest": {
            "name": manifest_name(s.manifest_number),
            "number": s.manifest_number,
            "size": s.manifest.size,
            "edits": s.manifest.records.len(),
            "torn_tail": torn_json(&s.manifest.torn_tail),
        },
        "last_sequence": s.last_sequence.0,
        "manifest_last_sequence": s.state.last_sequence,
        "log_number": s.state.log_number,
        "user_bytes_flushed": s.state.user_bytes_flushed,
        "table_bytes_written": s.state.table_bytes_written,
        "write_amplification": s.stats().write_amplification(),
        "next_file_number": s.state.next_file_number,
        "wals": s.wals.iter().map(|w| json!({
            "name": file_name(&w.path),
            "number": w.number,
            "size": w.size,
            "records": w.records,
            "ops": w.ops,
            "range_deletions": w.range_deletions,
            "torn_tail": torn_json(&w.torn_tail),
        })).collect::<Vec<_>>(),
        "range_tombstones": tree.version.range_tombstones.len(),
        "options": {
            "persisted": stored.is_some(),
            "stored": stored,
            "filters": filter_settings(&tables).iter().map(|f| json!({
                "policy": f.policy,
                "bits_per_key": f.bits_per_key,
                "num_hashes": f.num_hashes,
                "files": f.files,
            })).collect::<Vec<_>>(),
            "data_blocks": blocks,
            "average_data_block_bytes": block_bytes.checked_div(blocks).unwrap_or(0),
        },
        "levels": levels.iter().map(|l| {
            let mut v = level_json(l);
            v["level"] = json!(l.level);
            v
        }).collect::<Vec<_>>(),
        "total": level_json(&total),
        "keyspace": tree.name,
        "keyspaces": crate::keyspace::keyspaces_json(&s.stats().keyspaces),
    })
}

/// The human report: the database's files, and the levels and range
/// tombstones of keyspace `tree` (with the keyspaces listed when there
/// is more than the default).
pub fn info_text(s: &DbSnapshot, tree: &KeyspaceTree) -> String {
    let tables = tree.tables();
    let (levels, _) = level_summaries(&tables, NUM_LEVELS);
    let mut head = Table::new(&[("", Align::Left), ("", Align::Left)]);
    let mut kv = |k: &str, v: String| head.row(vec![k.to_string(), v]);
    kv("database", s.dir.display().to_string());
    kv("format version", s.manifest.format_version().to_string());
    let mut m = format!(
        "{} ({}, {})",
        manifest_name(s.manifest_number),
        count(s.manifest.records.len() as u64, "edit"),
        human_bytes(s.manifest.size)
    );
    if let Some(t) = &s.manifest.torn_tail {
        m.push_str(&format!(
            "; torn final record at offset {} ignored",
            t.offset
        ));
    }
    kv("manifest", m);
    kv("last sequence", group(s.last_sequence.0));
    kv("log number", s.state.log_number.to_string());
    kv("next file number", s.state.next_file_number.to_string());
    kv("write amp", crate::stats::write_amplification(&s.stats()));
    if s.wals.is_empty() {
        kv("WAL", "none".into());
    }
    for w in &s.wals {
        let mut v = format!(
            "{}  {}, {}, {}",
            file_name(&w.path),
            human_bytes(w.size),
            count(w.records, "record"),
            super::logs::updates_text(w.ops, w.range_deletions)
        );
        if let Some(t) = &w.torn_tail {
            v.push_str(&format!("; torn tail at offset {}", t.offset));
        }
        kv("WAL", v);
    }
    kv(
        "range tombstones",
        format!(
            "{} live in the manifest",
            group(tree.version.range_tombstones.len() as u64)
        ),
    );
    match crate::keyspace::stored_settings(s, tree) {
        Ok(Some(settings)) => {
            let source = if tree.id == 0 {
                "stored in OPTIONS:".to_string()
            } else {
                format!("keyspace {}: stored in the manifest:", tree.name)
            };
            kv("options", source);
            for (name, value) in settings {
                kv("", format!("{name} {value}"));
            }
            kv("", "the SSTables' properties show:".into());
        }
        Ok(None) => kv(
            "options",
            "not stored (no OPTIONS file: a database from before siftdb stored them); \
             the SSTables' properties show:"
                .into(),
        ),
        Err(e) => kv(
            "options",
            format!("OPTIONS unreadable ({e}); the SSTables' properties show:"),
        ),
    }
    for f in filter_settings(&tables) {
        let v = if f.policy.is_empty() {
            format!("no filter ({})", count(f.files, "SSTable"))
        } else if f.policy == siftdb::filter::RIBBON_POLICY_NAME {
            // Ribbon records its width r where the others record bits/key.
            format!(
                "filter {}, r = {} ({})",
                f.policy,
                f.bits_per_key,
                count(f.files, "SSTable")
            )
        } else {
            format!(
                "filter {}, {} bits/key, k = {} ({})",
                f.policy,
                f.bits_per_key,
                f.num_hashes,
                count(f.files, "SSTable")
            )
        };
        kv("", v);
    }
    let blocks: u64 = tables.iter().map(|t| t.data_blocks).sum();
    let bytes: u64 = tables.iter().map(|t| t.data_bytes).sum();
    if let Some(average) = bytes.checked_div(blocks) {
        kv(
            "",
            format!(
                "data blocks average {} ({})",
                human_bytes(average),
                count(blocks, "block")
            ),
        );
    }
    let mut out = head.render("");
    // The header row of the key/value table is empty: drop it.
    out = out
        .split_once('\n')
        .map_or(out.clone(), |(_, r)| r.to_string());
    out.push('\n');

    let several = s.keyspaces.len() > 1;
    if several {
        out.push_str(&format!("keyspace {}\n", tree.name));
    }
    let t = levels_table(&levels, true);
    out.push_str(&t.render(""));
    if several {
        out.push_str("keyspaces\n");
        out.push_str(&crate::keyspace::keyspaces_table(&s.stats().keyspaces));
    }
    out
}

pub fn run(args: &InfoArgs) -> Result<(), CliError> {
    let s = snapshot(&args.db)?;
    let tree = crate::keyspace::tree(&s)?;
    if args.json {
        emit_json(&info_json(&s, tree))
    } else {
        emit(&info_text(&s, tree))
    }
}
