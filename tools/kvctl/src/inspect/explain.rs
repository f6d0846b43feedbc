//! `kvctl explain`: the path of one point lookup.

use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};
use siftdb::inspect::{explain, Explain, ExplainOutcome, ExplainSource, Verdict};

use super::{emit, emit_json, entries_text, handle_json, snapshot, table_name, Show};
use crate::error::CliError;
use crate::format::{count, escaped_arg, group, Align, Bytes, Table};

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  kvctl explain ./db 'libc6'\n\n\
Walks the lookup in the engine's order: each memtable (one per live WAL, \
newest first), level-0 SSTables newest first, then the one candidate file per \
deeper level. For each SSTable it shows whether the key-range check or the \
filter skipped it, or which index entry and data block were read. Exits 0 \
whether or not the key is found.\n\n\
With --prefix P instead of a key: the sources a prefix scan of P reads, and \
every table its key range or its prefix filter leaves out (each table's \
prefix filter is applied with the extractor the table records), then the range \
deletions over the prefix, e.g.\n  \
kvctl explain ./db --prefix 'user:42'")]
pub struct ExplainArgs {
    /// Database directory
    pub db: PathBuf,
    /// Key (escapes such as \x00 and \t are decoded)
    #[arg(value_parser = escaped_arg, required_unless_present = "prefix")]
    pub key: Option<Bytes>,
    /// Trace a prefix scan of this prefix instead of a lookup
    #[arg(long, value_name = "P", value_parser = escaped_arg, conflicts_with = "key")]
    pub prefix: Option<Bytes>,
    /// Print keys and values as hex
    #[arg(long)]
    pub hex: bool,
    /// Print JSON (schema in DESIGN.md, "kvctl JSON output")
    #[arg(long)]
    pub json: bool,
}

/// Counts over an explain's steps, as `Stats` would count them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub range_skips: u64,
    pub filter_negatives: u64,
    pub filter_false_positives: u64,
    pub data_block_reads: u64,
}

pub fn tally(e: &Explain) -> Tally {
    let mut t = Tally::default();
    for s in &e.steps {
        match &s.outcome {
            ExplainOutcome::OutOfRange | ExplainOutcome::PastLevel => t.range_skips += 1,
            ExplainOutcome::FilterNegative => t.filter_negatives += 1,
            ExplainOutcome::Found { block, .. } => t.data_block_reads += u64::from(block.is_some()),
            ExplainOutcome::Searched { filtered, block } => {
                t.data_block_reads += u64::from(block.is_some());
                t.filter_false_positives += u64::from(*filtered);
            }
            ExplainOutcome::NotInMemtable => {}
        }
    }
    t
}

pub(super) fn source_json(s: &ExplainSource, show: Show) -> Value {
    match s {
        ExplainSource::Memtable {
            wal,
            entries,
            range_deletions,
        } => json!({
            "source": "memtable",
            "wal": wal,
            "entries": entries,
            "range_deletions": range_deletions,
        }),
        ExplainSource::Table {
            level,
            number,
            position,
            level_files,
            smallest,
            largest,
            filter,
        } => json!({
            "source": "sstable",
            "level": level,
            "number": number,
            "position": position,
            "level_files": level_files,
            "smallest_key": show.bytes(smallest),
            "largest_key": show.bytes(largest),
            "filter_kind": filter.map(|k| k.label()),
        }),
        ExplainSource::Level {
            level,
            files,
            largest,
        } => json!({
            "source": "level",
            "level": level,
            "level_files": files,
            "largest_key": show.bytes(largest),
        }),
    }
}

/// The JSON document `explain --json` prints.
pub fn explain_json(e: &Explain, show: Show) -> Value {
    let steps: Vec<Value> = e
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut v = source_json(&s.source, show);
            v["step"] = json!(i + 1);
            let (outcome, block, found) = match &s.outcome {
                ExplainOutcome::NotInMemtable => ("not_in_memtable", None, None),
                ExplainOutcome::OutOfRange => ("out_of_range", None, None),
                ExplainOutcome::FilterNegative => ("filter_negative", None, None),
                ExplainOutcome::PastLevel => ("past_level", None, None),
                ExplainOutcome::Found { block, entry } => ("found", *block, Some(entry)),
                ExplainOutcome::Searched { filtered, block } => {
                    v["filter_false_positive"] = json!(filtered);
                    ("searched", *block, None)
                }
            };
            v["outcome"] = json!(outcome);
            if let Some((i, h)) = block {
                v["index_entry"] = json!(i);
                v["block"] = handle_json(h);
            }
            if let Some(f) = found {
                v["seq"] = json!(f.seq.0);
                v["type"] = json!(f.value_type.name());
            }
            v
        })
        .collect();
    let (verdict, value) = match &e.verdict {
        Verdict::Value(v) => ("value", json!(show.bytes(v))),
        Verdict::Tombstone => ("tombstone", Value::Null),
        Verdict::Absent => ("absent", Value::Null),
        Verdict::RangeDeleted { .. } => ("range_deleted", Value::Null),
    };
    let t = tally(e);
    json!({
        "key": show.bytes(&e.key),
        "sequence": e.sequence.0,
        "steps": steps,
        "verdict": verdict,
        "value": value,
        "answered_by": match e.verdict {
            Verdict::Absent => Value::Null,
            Verdict::RangeDeleted { .. }
                if !e
                    .steps
                    .iter()
                    .any(|s| matches!(s.outcome, ExplainOutcome::Found { .. })) =>
            {
                Value::Null
            }
            _ => json!(e.steps.len()),
        },
        "range_deletion_seq": match e.verdict {
            Verdict::RangeDeleted { seq } => json!(seq.0),
            _ => Value::Null,
        },
        "range_skips": t.range_skips,
        "filter_negatives": t.filter_negatives,
        "filter_false_positives": t.filter_false_positives,
        "data_block_reads": t.data_block_reads,
    })
}

pub(super) fn source_text(s: &ExplainSource) -> String {
    match s {
        ExplainSource::Memtable {
            wal,
            entries,
            range_deletions,
        } => {
            let mut s = format!("memtable ({wal:06}.log, {}", entries_text(*entries));
            if *range_deletions > 0 {
                s.push_str(&format!(", {}", count(*range_deletions, "range deletion")));
            }
            s.push(')');
            s
        }
        ExplainSource::Table {
            level,
            number,
            position,
            level_files,
            ..
        } => format!(
            "L{level} {} ({} of {level_files})",
            table_name(*number),
            position + 1
        ),
        ExplainSource::Level { level, files, .. } => {
            format!("L{level} ({})", count(*files as u64, "file"))
        }
    }
}

fn outcome_text(s: &ExplainSource, o: &ExplainOutcome, show: Show) -> String {
    let block = |b: &Option<(usize, siftdb::inspect::sstable::BlockHandle)>| match b {
        Some((i, h)) => format!("index entry {i} -> data block {h}"),
        None => "key after the last index entry: no block read".to_string(),
    };
    // The filter that answered, by kind: "bloom filter", "ribbon filter".
    let filter = match s {
        ExplainSource::Table {
            filter: Some(k), ..
        } => format!("{} filter", k.label()),
        _ => "filter".to_string(),
    };
    match o {
        ExplainOutcome::NotInMemtable => "no version".into(),
        ExplainOutcome::OutOfRange => match s {
            ExplainSource::Table {
                smallest, largest, ..
            } => format!(
                "skipped by key range [{} .. {}]",
                show.bytes(smallest),
                show.bytes(largest)
            ),
            _ => "skipped by key range".into(),
        },
        ExplainOutcome::FilterNegative => format!("skipped by {filter} (says absent)"),
        ExplainOutcome::PastLevel => match s {
            ExplainSource::Level { largest, .. } => format!(
                "no candidate: key after the level's largest key {}",
                show.bytes(largest)
            ),
            _ => "no candidate".into(),
        },
        ExplainOutcome::Found { block: b, entry } => {
            let what = format!("found {} @{}", entry.value_type.name(), entry.seq);
            match s {
                ExplainSource::Memtable { .. } => what,
                _ => format!("{filter}: maybe; {}: {what}", block(b)),
            }
        }
        ExplainOutcome::Searched {
            filtered: true,
            block: b,
        } => format!(
            "{filter}: maybe; {}: no version (filter false positive)",
            block(b)
        ),
        ExplainOutcome::Searched {
            filtered: false,
            block: b,
        } => {
            format!("no filter; {}: no version", block(b))
        }
    }
}

/// The numbered step, source, result table of a traced lookup or scan.
pub(super) fn steps_table<'a>(steps: impl Iterator<Item = (&'a ExplainSource, String)>) -> String {
    let mut t = Table::new(&[
        ("step", Align::Right),
        ("source", Align::Left),
        ("result", Align::Left),
    ]);
    for (i, (source, result)) in steps.enumerate() {
        t.row(vec![(i + 1).to_string(), source_text(source), result]);
    }
    t.render("  ")
}

/// The human report.
pub fn explain_text(e: &Explain, show: Show) -> String {
    let mut out = format!(
        "lookup of \"{}\" at sequence {}\n",
        show.bytes(&e.key),
        group(e.sequence.0)
    );
    out.push_str(&steps_table(
        e.steps
            .iter()
            .map(|s| (&s.source, outcome_text(&s.source, &s.outcome, show))),
    ));
    let from = match e.steps.last().map(|s| &s.source) {
        Some(ExplainSource::Memtable { wal, .. }) => format!("memtable of {wal:06}.log"),
        Some(ExplainSource::Table { level, number, .. }) => {
            format!("L{level} {}", table_name(*number))
        }
        _ => String::new(),
    };
    let step = e.steps.len();
    let found = match e.steps.last().map(|s| &s.outcome) {
        Some(ExplainOutcome::Found { entry, .. }) => Some(entry),
        _ => None,
    };
    const NOT_FOUND: &str = "not found: no memtable or SSTable holds a version of the key";
    let answer = match &e.verdict {
        // An empty value would print as nothing after "value".
        Verdict::Value(v) if v.is_empty() => format!("an empty value (step {step}, {from})"),
        Verdict::Value(v) => format!("value {} (step {step}, {from})", show.value(v)),
        Verdict::Tombstone => {
            format!("deleted (tombstone at step {step}, {from}): get returns nothing")
        }
        Verdict::Absent => format!("{NOT_FOUND}; get returns nothing"),
        Verdict::RangeDeleted { seq } => match found {
            Some(f) => format!(
                "deleted by the range deletion at sequence {seq}, newer than the version found \
                 ({} @{}, step {step}): get returns nothing",
                f.value_type.name(),
                f.seq
            ),
            None => format!(
                "{NOT_FOUND}, and the range deletion at sequence {seq} covers it; get returns \
                 nothing"
            ),
        },
    };
    out.push_str(&format!("answer: {answer}\n"));
    let c = tally(e);
    out.push_str(&format!(
        "cost: {}, {} skipped by key range, {} skipped by filter, {}\n",
        count(c.data_block_reads, "data-block read"),
        count(c.range_skips, "source"),
        count(c.filter_negatives, "SSTable"),
        count(c.filter_false_positives, "filter false positive")
    ));
    out
}

pub fn run(args: &ExplainArgs) -> Result<(), CliError> {
    let show = Show { hex: args.hex };
    let snap = snapshot(&args.db)?;
    if let Some(p) = &args.prefix {
        let e = siftdb::inspect::explain_prefix(&snap, &crate::keyspace::selector(), p)?;
        return if args.json {
            emit_json(&super::explain_prefix::prefix_json(&e, show))
        } else {
            emit(&super::explain_prefix::prefix_text(&e, show))
        };
    }
    let Some(key) = &args.key else {
        return Err(CliError::usage("give a KEY, or --prefix P"));
    };
    let e = explain(&snap, &crate::keyspace::selector(), key)?;
    if args.json {
        emit_json(&explain_json(&e, show))
    } else {
        emit(&explain_text(&e, show))
    }
}
