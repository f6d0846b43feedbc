//! `kvctl explain DB --prefix P`: which sources a prefix scan reads, and
//! why it leaves the others out.

use serde_json::{json, Value};
use siftdb::inspect::{
    ExplainSource, PrefixExplain, PrefixOutcome, PrefixProbe, PrefixRangeTombstone,
};

use super::explain::{source_json, steps_table};
use super::logs::NO_END;
use super::Show;
use crate::format::{count, group, Align, Table};

fn filter_name(s: &ExplainSource) -> String {
    match s {
        ExplainSource::Table {
            filter: Some(k), ..
        } => format!("{} prefix filter", k.label()),
        _ => "prefix filter".to_string(),
    }
}

fn outcome_text(s: &ExplainSource, o: &PrefixOutcome) -> String {
    let filter = filter_name(s);
    match o {
        PrefixOutcome::Memtable { entries } => match entries {
            0 => "no version with the prefix".into(),
            n => format!("{} with the prefix", count(*n, "version")),
        },
        PrefixOutcome::OutOfRange => "skipped by key range".into(),
        PrefixOutcome::PrefixNegative { .. } => format!("skipped by {filter} (says absent)"),
        PrefixOutcome::Read {
            why,
            blocks,
            entries,
        } => {
            let why = match why {
                PrefixProbe::NoPrefixFilter => "no prefix filter".to_string(),
                PrefixProbe::UnknownExtractor(e) => format!("prefix filter by {e}, not built in"),
                PrefixProbe::OutsideDomain(e) => {
                    format!("prefix filter by {e}: the prefix is outside its domain")
                }
                PrefixProbe::Maybe(_) if *entries == 0 => {
                    format!("{filter}: maybe (a false positive)")
                }
                PrefixProbe::Maybe(_) => format!("{filter}: maybe"),
            };
            format!(
                "{why}; {}, {} with the prefix",
                count(*blocks, "data block"),
                count(*entries, "version")
            )
        }
    }
}

/// The range deletions over the prefix, one a line, or nothing if none:
/// range and sequence, where it is kept, and how much of the prefix it
/// covers.
fn range_tombstones_text(ts: &[PrefixRangeTombstone], show: Show) -> String {
    if ts.is_empty() {
        return String::new();
    }
    let mut t = Table::new(&[("", Align::Left), ("", Align::Left), ("", Align::Left)]);
    for r in ts {
        let end = r
            .tombstone
            .end
            .as_deref()
            .map_or(NO_END.to_string(), |e| show.bytes(e));
        t.row(vec![
            format!(
                "[{} .. {end}) @{}",
                show.bytes(&r.tombstone.start),
                r.tombstone.seq
            ),
            match r.wal {
                Some(n) => format!("memtable of {n:06}.log"),
                None => "manifest".to_string(),
            },
            if r.covers_prefix {
                "every key"
            } else {
                "some keys"
            }
            .to_string()
                + " with the prefix",
        ]);
    }
    // The header row is empty: drop it.
    let rows = t.render("  ");
    let rows = rows.split_once('\n').map_or("", |(_, r)| r);
    format!(
        "range deletions over the prefix, newest first (each hides the older versions of the \
         keys it covers):\n{rows}"
    )
}

/// The human report.
pub fn prefix_text(e: &PrefixExplain, show: Show) -> String {
    let mut out = format!(
        "prefix scan of {} at sequence {}\n",
        show.bytes(&e.prefix),
        group(e.sequence.0)
    );
    out.push_str(&steps_table(
        e.steps
            .iter()
            .map(|s| (&s.source, outcome_text(&s.source, &s.outcome))),
    ));
    out.push_str(&range_tombstones_text(&e.range_tombstones, show));
    out.push_str(&format!(
        "cost: {}, {} skipped by key range, {} skipped by prefix filter, {}\n",
        count(e.blocks_read(), "data-block read"),
        count(e.range_skips(), "SSTable"),
        count(e.prefix_negatives(), "SSTable"),
        count(e.false_positives(), "prefix filter false positive")
    ));
    out
}

/// The JSON document `explain --prefix --json` prints.
pub fn prefix_json(e: &PrefixExplain, show: Show) -> Value {
    let steps: Vec<Value> = e
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut v = source_json(&s.source, show);
            v["step"] = json!(i + 1);
            match &s.outcome {
                PrefixOutcome::Memtable { entries } => {
                    v["outcome"] = json!("memtable");
                    v["prefix_entries"] = json!(entries);
                }
                PrefixOutcome::OutOfRange => v["outcome"] = json!("out_of_range"),
                PrefixOutcome::PrefixNegative { extractor, .. } => {
                    v["outcome"] = json!("prefix_negative");
                    v["extractor"] = json!(extractor);
                }
                PrefixOutcome::Read {
                    why,
                    blocks,
                    entries,
                } => {
                    v["outcome"] = json!("read");
                    let (reason, extractor) = match why {
                        PrefixProbe::NoPrefixFilter => ("no_prefix_filter", None),
                        PrefixProbe::UnknownExtractor(x) => ("unknown_extractor", Some(x)),
                        PrefixProbe::OutsideDomain(x) => ("outside_domain", Some(x)),
                        PrefixProbe::Maybe(x) => ("maybe", Some(x)),
                    };
                    v["reason"] = json!(reason);
                    v["extractor"] = json!(extractor);
                    v["blocks"] = json!(blocks);
                    v["prefix_entries"] = json!(entries);
                }
            }
            v
        })
        .collect();
    json!({
        "prefix": show.bytes(&e.prefix),
        "sequence": e.sequence.0,
        "data_block_reads": e.blocks_read(),
        "range_skips": e.range_skips(),
        "prefix_negatives": e.prefix_negatives(),
        "prefix_false_positives": e.false_positives(),
        "steps": steps,
        "range_tombstones": e.range_tombstones.iter().map(|r| json!({
            "start": show.bytes(&r.tombstone.start),
            "end": r.tombstone.end.as_deref().map(|x| show.bytes(x)),
            "seq": r.tombstone.seq.0,
            "source": if r.wal.is_some() { "memtable" } else { "manifest" },
            "wal": r.wal,
            "covers_prefix": r.covers_prefix,
        })).collect::<Vec<_>>(),
    })
}
