//! `kvctl filters`: the kind and health of every SSTable's filter.

use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};
use siftdb::inspect::{TableInfo, DEGRADED_FACTOR};
use siftdb::FilterMemory;

use super::sst::filter_json;
use super::{emit, emit_json, percent, snapshot, table_name};
use crate::error::CliError;
use crate::format::{count, group, Align, Table};

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  kvctl filters ./db\n\n\
Each kind's health by its own formula. bloom: implied FPR = (bits set / m)^k, the \
rate the filter's actual bits give an absent key; design FPR = (1 - e^(-k/(m/n)))^k \
for its m bits, k probes and n keys. blocked-bloom: implied = the mean over its \
512-bit blocks of (bits set / 512)^k; design = the blocked theory of DESIGN.md \
12.6.2. ribbon: both 2^-r, fixed by its width r. A WARNING row marks a filter whose \
implied rate is more than twice its design (built over more keys than the table \
holds, or damaged bits).\n\n\
Below the tables, one row per level: runs (each level-0 table, one per deeper level), keys, \
filter bytes, bits per key in force, the bits per key the same total filter bits would give the \
level spread optimally (Monkey; for level 0, the mean over its runs), and the expected false \
positives per absent-key lookup the level adds (level 0: the sum of its tables' design rates; \
a deeper level: their mean weighted by keys). Then the whole tree's expected false positives \
against the same filter bits as uniform bits per key and spread optimally (DESIGN.md 3.2).")]
pub struct FiltersArgs {
    /// Database directory
    pub db: PathBuf,
    /// Print JSON (schema in DESIGN.md, "kvctl JSON output")
    #[arg(long)]
    pub json: bool,
}

/// The per-level summary as JSON: `levels` and the tree's figures.
pub fn memory_json(m: &FilterMemory) -> Value {
    let levels: Vec<Value> = m
        .levels
        .iter()
        .map(|l| {
            json!({
                "level": l.level,
                "runs": l.runs,
                "keys": l.keys,
                "filter_bytes": l.filter_bytes,
                "filter_bits": l.filter_bits,
                "bits_per_key": l.bits_per_key,
                "optimal_bits_per_key": l.optimal_bits_per_key,
                "false_positives": l.false_positives,
            })
        })
        .collect();
    json!({
        "levels": levels,
        "keys": m.keys,
        "filter_bytes": m.filter_bytes,
        "filter_bits": m.filter_bits,
        "expected_false_positives": m.expected_false_positives,
        "uniform_false_positives": m.uniform_false_positives,
        "optimal_false_positives": m.optimal_false_positives,
    })
}

/// The per-level summary as text: what the filters cost and buy, against
/// the same memory spread uniformly and optimally (Monkey).
pub fn memory_text(m: &FilterMemory) -> String {
    let mut t = Table::new(&[
        ("level", Align::Left),
        ("runs", Align::Right),
        ("keys", Align::Right),
        ("filter bytes", Align::Right),
        ("bits/key", Align::Right),
        ("optimal bits/key", Align::Right),
        ("expected FP per absent lookup", Align::Right),
    ]);
    for l in &m.levels {
        t.row(vec![
            format!("L{}", l.level),
            group(l.runs as u64),
            group(l.keys),
            group(l.filter_bytes),
            format!("{:.2}", l.bits_per_key),
            format!("{:.2}", l.optimal_bits_per_key),
            format!("{:.5}", l.false_positives),
        ]);
    }
    let mut out = t.render("");
    let bits = if m.keys == 0 {
        0.0
    } else {
        m.filter_bits as f64 / m.keys as f64
    };
    out.push_str(&format!(
        "expected false positives per absent-key lookup: {:.5} ({} bytes of filters, {bits:.2} \
         filter bits per key); the same bits as uniform bits per key: {:.5}; spread optimally \
         (Monkey): {:.5}\n",
        m.expected_false_positives,
        group(m.filter_bytes),
        m.uniform_false_positives,
        m.optimal_false_positives
    ));
    out
}

/// The JSON document `filters --json` prints.
pub fn filters_json(tables: &[TableInfo]) -> Value {
    let rows: Vec<Value> = tables
        .iter()
        .map(|t| {
            let mut v = filter_json(&t.filter);
            v["level"] = json!(t.level);
            v["number"] = json!(t.number);
            v["name"] = json!(table_name(t.number));
            v
        })
        .collect();
    json!({
        "filters": rows,
        "warnings": tables.iter().filter(|t| t.filter.degraded()).count(),
    })
}

/// The human table and a summary line.
pub fn filters_text(tables: &[TableInfo]) -> String {
    let mut t = Table::new(&[
        ("level", Align::Left),
        ("file", Align::Left),
        ("kind", Align::Left),
        ("keys", Align::Right),
        ("bits", Align::Right),
        ("k/r", Align::Right),
        ("bits/key", Align::Right),
        ("bits set", Align::Right),
        ("implied FPR", Align::Right),
        ("design FPR", Align::Right),
        ("health", Align::Left),
    ]);
    let mut warnings = 0u64;
    for i in tables {
        let f = &i.filter;
        let level = i.level.map_or(String::new(), |l| format!("L{l}"));
        let Some(s) = f.stats else {
            let why = if f.policy.is_empty() {
                "no filter"
            } else if f.known_policy {
                "malformed filter (treated as \"may match\")"
            } else {
                "unknown policy (ignored)"
            };
            t.row(vec![
                level,
                table_name(i.number),
                f.kind().map_or("-", |k| k.label()).into(),
                group(f.keys),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                why.into(),
            ]);
            continue;
        };
        let health = if f.degraded() {
            warnings += 1;
            format!("WARNING: implied rate > {DEGRADED_FACTOR}x design")
        } else {
            "ok".into()
        };
        t.row(vec![
            level,
            table_name(i.number),
            s.kind.label().into(),
            group(f.keys),
            group(s.bits),
            if s.result_bits > 0 {
                format!("r={}", s.result_bits)
            } else {
                s.num_hashes.to_string()
            },
            format!("{:.2}", f.bits_per_key()),
            f.fraction_set().map_or("-".into(), percent),
            percent(f.implied_fpr().unwrap_or(1.0)),
            percent(f.design_fpr().unwrap_or(1.0)),
            health,
        ]);
    }
    let mut out = t.render("");
    out.push_str(&format!(
        "{}, {} above {DEGRADED_FACTOR}x their design rate\n",
        count(tables.len() as u64, "SSTable"),
        group(warnings)
    ));
    out
}

pub fn run(args: &FiltersArgs) -> Result<(), CliError> {
    let snap = snapshot(&args.db)?;
    let tree = crate::keyspace::tree(&snap)?;
    let tables = tree.tables();
    let memory = FilterMemory::of(&tree.version, None);
    if args.json {
        let mut v = filters_json(&tables);
        v["memory"] = memory_json(&memory);
        emit_json(&v)
    } else {
        emit(&format!(
            "{}\n{}",
            filters_text(&tables),
            memory_text(&memory)
        ))
    }
}
