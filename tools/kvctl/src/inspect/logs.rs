//! `kvctl manifest dump` and `kvctl wal dump`: the records of the two log
//! files, decoded.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use serde_json::{json, Value};
use siftdb::inspect::key::{ParsedInternalKey, ValueType};
use siftdb::inspect::version::edit::{FileMetaData, VersionEdit};
use siftdb::inspect::{
    current_manifest, read_live_wals, read_manifest, read_wal, WalContents, WalOp,
};
use siftdb::KeyPrediction;

use super::{emit, emit_json, file_name, table_name, torn_json, Show};
use crate::error::{CliError, EXIT_CORRUPTION, SALVAGE_ADVICE};
use crate::format::{count, group, human_bytes, Align, Table, TORN_WRITE};

// ---------------------------------------------------------------- manifest

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  kvctl manifest dump ./db")]
pub struct ManifestArgs {
    #[command(subcommand)]
    pub command: ManifestCommand,
}

#[derive(Debug, Subcommand)]
pub enum ManifestCommand {
    /// Each version edit in order, with its tags and fields
    Dump(ManifestDumpArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  kvctl manifest dump ./db --json\n\n\
Fields are shown in the order siftdb writes them: tags 1-4, 7 and 8, then \
deleted files (tag 5), new files (tag 6), key predictions (tag 9), range \
tombstones (tag 10) and the tables they wait on (tag 11).")]
pub struct ManifestDumpArgs {
    /// Database directory (dumps the manifest CURRENT names) or a MANIFEST-NNNNNN file
    pub path: PathBuf,
    /// Print keys as hex
    #[arg(long)]
    pub hex: bool,
    /// Print JSON (schema in DESIGN.md, "kvctl JSON output")
    #[arg(long)]
    pub json: bool,
}

pub fn manifest(args: &ManifestArgs) -> Result<(), CliError> {
    match &args.command {
        ManifestCommand::Dump(a) => manifest_dump(a),
    }
}

fn internal_key_json(key: &[u8], show: Show) -> Value {
    match ParsedInternalKey::parse(key) {
        Some(p) => {
            json!({ "key": show.bytes(p.user_key), "seq": p.seq.0, "type": p.value_type.name() })
        }
        None => json!({ "key": show.bytes(key), "seq": null, "type": null }),
    }
}

fn internal_key_text(key: &[u8], show: Show) -> String {
    match ParsedInternalKey::parse(key) {
        Some(p) => format!(
            "{}@{} {}",
            show.bytes(p.user_key),
            p.seq,
            p.value_type.name()
        ),
        None => format!("{} (malformed)", show.bytes(key)),
    }
}

/// One edit's fields as `(tag, name, json, text)`.
fn edit_fields(e: &VersionEdit, show: Show) -> Vec<(u64, &'static str, Value, String)> {
    let mut v = Vec::new();
    if let Some(x) = e.format_version {
        v.push((1, "format_version", json!(x), x.to_string()));
    }
    if let Some(x) = e.log_number {
        v.push((2, "log_number", json!(x), x.to_string()));
    }
    if let Some(x) = e.next_file_number {
        v.push((3, "next_file_number", json!(x), x.to_string()));
    }
    if let Some(x) = e.last_sequence {
        v.push((4, "last_sequence", json!(x.0), x.to_string()));
    }
    if let Some(x) = e.user_bytes_flushed {
        v.push((7, "user_bytes_flushed", json!(x), x.to_string()));
    }
    if let Some(x) = e.table_bytes_written {
        v.push((8, "table_bytes_written", json!(x), x.to_string()));
    }
    if let Some(x) = e.next_keyspace_id {
        v.push((16, "next_keyspace_id", json!(x), x.to_string()));
    }
    for &(level, number) in &e.deleted_files {
        v.push((
            5,
            "deleted_file",
            json!({ "level": level, "number": number }),
            format!("L{level} {}", table_name(number)),
        ));
    }
    for (level, f) in &e.new_files {
        v.push((
            6,
            "new_file",
            new_file_json(*level, f, show),
            new_file_text(*level, f, show),
        ));
    }
    for p in &e.key_predictions {
        v.push((
            9,
            "key_prediction",
            key_prediction_json(p),
            key_prediction_text(p),
        ));
    }
    for (t, files) in &e.new_range_tombstones {
        let end_text = t
            .end
            .as_deref()
            .map_or(NO_END.to_string(), |e| show.bytes(e));
        let tables: Vec<String> = files.iter().map(|&n| table_name(n)).collect();
        v.push((
            10,
            "new_range_tombstone",
            json!({
                "seq": t.seq.0,
                "start": show.bytes(&t.start),
                "end": t.end.as_deref().map(|e| show.bytes(e)),
                "tables": files,
            }),
            format!(
                "[{} .. {}) @{}  waits on {}",
                show.bytes(&t.start),
                end_text,
                t.seq,
                if tables.is_empty() {
                    "no table".to_string()
                } else {
                    tables.join(", ")
                }
            ),
        ));
    }
    for &(seq, number) in &e.range_tombstone_files {
        v.push((
            11,
            "range_tombstone_file",
            json!({ "seq": seq.0, "number": number }),
            format!("@{seq} waits on {}", table_name(number)),
        ));
    }
    // Then each keyspace's section (DESIGN.md 12.8): its fields follow
    // the tag 12 that names it.
    for (&id, ks) in &e.keyspaces {
        v.push((12, "keyspace", json!(id), format!("ks={id}")));
        if let Some(add) = &ks.add {
            v.push((
                13,
                "add_keyspace",
                json!({ "name": add.name, "options": add.options }),
                format!("\"{}\"  {} bytes of options", add.name, add.options.len()),
            ));
        }
        if let Some(o) = &ks.options {
            v.push((
                15,
                "keyspace_options",
                json!(o),
                format!("{} bytes of options", o.len()),
            ));
        }
        v.extend(edit_fields(&ks.tree_edit(), show));
        if ks.drop {
            v.push((14, "drop_keyspace", Value::Null, String::new()));
        }
    }
    v
}

/// One compaction's prediction as `kvctl distinct --json` and `manifest
/// dump --json` show it (DESIGN.md 12.9).
pub fn key_prediction_json(p: &KeyPrediction) -> Value {
    json!({
        "output_level": p.output_level,
        "input_tables": p.input_tables as u64,
        "input_entries": p.input_entries,
        "summed_distinct_keys": p.summed_distinct_keys,
        "predicted_distinct_keys": p.predicted_distinct_keys,
        "relative_std_error": p.relative_std_error,
        "distinct_input_keys": p.distinct_input_keys,
        "distinct_output_keys": p.distinct_output_keys,
        "relative_error": p.relative_error(),
        "finished_at_unix_secs": p.finished_at_unix_secs,
    })
}

/// One line: output level, inputs, the prediction with its standard error,
/// the distinct keys found with the relative error, the keys written, and
/// the finish time in UTC (ISO 8601; the JSON keeps Unix seconds).
pub fn key_prediction_text(p: &KeyPrediction) -> String {
    format!(
        "L{} <- {}  {}  predicted {} (±{:.1}%)  found {} ({:+.2}%)  wrote {}  at {}",
        p.output_level,
        crate::format::count(p.input_tables as u64, "table"),
        match p.input_entries {
            1 => "1 entry".to_string(),
            n => format!("{} entries", group(n)),
        },
        group(p.predicted_distinct_keys.round() as u64),
        100.0 * p.relative_std_error,
        group(p.distinct_input_keys),
        100.0 * p.relative_error(),
        group(p.distinct_output_keys),
        crate::format::utc_iso8601(p.finished_at_unix_secs)
    )
}

fn new_file_json(level: u32, f: &FileMetaData, show: Show) -> Value {
    json!({
        "level": level,
        "number": f.number,
        "file_size": f.file_size,
        "smallest": internal_key_json(f.smallest.encoded(), show),
        "largest": internal_key_json(f.largest.encoded(), show),
        "entries": f.num_entries,
        "tombstones": f.num_tombstones,
    })
}

fn new_file_text(level: u32, f: &FileMetaData, show: Show) -> String {
    format!(
        "L{level} {}  {} bytes  {} entries  {} tombstones  {} .. {}",
        table_name(f.number),
        f.file_size,
        f.num_entries,
        f.num_tombstones,
        internal_key_text(f.smallest.encoded(), show),
        internal_key_text(f.largest.encoded(), show)
    )
}

fn manifest_path(path: &Path) -> Result<PathBuf, CliError> {
    if path.is_dir() {
        Ok(current_manifest(path)?.1)
    } else if path.is_file() {
        super::kind::expect_kind(path, super::kind::FileKind::Manifest, "manifest dump", true)?;
        Ok(path.to_path_buf())
    } else {
        Err(CliError::usage(format!(
            "{}: no such database or manifest file",
            path.display()
        )))
    }
}

fn manifest_dump(a: &ManifestDumpArgs) -> Result<(), CliError> {
    let show = Show { hex: a.hex };
    let path = manifest_path(&a.path)?;
    let m = read_manifest(&path)?;
    if a.json {
        let records: Vec<Value> = m
            .records
            .iter()
            .map(|r| {
                let fields: Vec<Value> = edit_fields(&r.edit, show)
                    .into_iter()
                    .map(|(tag, name, v, _)| {
                        let mut f = json!({ "tag": tag, "name": name });
                        match v {
                            Value::Object(o) => {
                                for (k, x) in o {
                                    f[k] = x;
                                }
                            }
                            x => f["value"] = x,
                        }
                        f
                    })
                    .collect();
                json!({ "offset": r.offset, "size": r.payload_len, "fields": fields })
            })
            .collect();
        return emit_json(&json!({
            "file": path.display().to_string(),
            "size": m.size,
            "records": records,
            "torn_tail": torn_json(&m.torn_tail),
        }));
    }
    let mut out = format!(
        "{}: {}, {}\n",
        file_name(&path),
        count(m.records.len() as u64, "edit"),
        human_bytes(m.size)
    );
    for (i, r) in m.records.iter().enumerate() {
        out.push_str(&format!(
            "\nedit {i} at offset {} ({} bytes){}\n",
            r.offset,
            r.payload_len,
            if i == 0 { ", snapshot" } else { "" }
        ));
        let mut t = Table::new(&[
            ("tag", Align::Right),
            ("field", Align::Left),
            ("value", Align::Left),
        ]);
        for (tag, name, _, text) in edit_fields(&r.edit, show) {
            t.row(vec![tag.to_string(), name.to_string(), text]);
        }
        out.push_str(&t.render("  "));
    }
    if let Some(t) = &m.torn_tail {
        out.push_str(&format!(
            "\ntorn final record at offset {}: {} (ignored, as at open)\n",
            t.offset, t.reason
        ));
    }
    emit(&out)
}

// ---------------------------------------------------------------- wal

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  kvctl wal dump ./db")]
pub struct WalArgs {
    #[command(subcommand)]
    pub command: WalCommand,
}

#[derive(Debug, Subcommand)]
pub enum WalCommand {
    /// Each record of the live WALs: offset, sequence, batch size, operations
    Dump(WalDumpArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  kvctl wal dump ./db/000012.log --json\n\n\
A torn tail (an incomplete last record, left by a crash or a failed write) is reported, not an \
error. Damage before the end exits 3 after the records before it. Human output cuts values to 48 \
characters; --json prints them whole.")]
pub struct WalDumpArgs {
    /// Database directory (dumps every live WAL) or one NNNNNN.log file
    pub path: PathBuf,
    /// Print keys and values as hex
    #[arg(long)]
    pub hex: bool,
    /// Print JSON (schema in DESIGN.md, "kvctl JSON output")
    #[arg(long)]
    pub json: bool,
}

pub fn wal(args: &WalArgs) -> Result<(), CliError> {
    match &args.command {
        WalCommand::Dump(a) => wal_dump(a),
    }
}

/// A WAL op's value: a range deletion's end (`null`: it has none) or a
/// put's value.
fn op_value_json(o: &WalOp, show: Show) -> Value {
    // A deletion has no value, as `get --json` says `null` for an absent
    // key; nor does a range deletion without an end.
    if o.value_type == ValueType::Deletion
        || (o.value_type == ValueType::RangeDeletion && o.value.is_empty())
    {
        Value::Null
    } else {
        json!(show.bytes(&o.value))
    }
}

/// A WAL op's value in the text table: a range deletion's end (`(no
/// end)` if it has none), cut as values are.
fn op_value_text(o: &WalOp, show: Show) -> String {
    if o.value_type != ValueType::RangeDeletion {
        show.value(&o.value)
    } else if o.value.is_empty() {
        NO_END.to_string()
    } else {
        show.bytes(&o.value)
    }
}

/// How a range with no upper bound shows its end, in `manifest dump`,
/// `wal dump` and `explain --prefix`.
pub const NO_END: &str = "(no end)";

/// `N updates`, then `, N range deletions` if there are any: a WAL's
/// puts and deletes, then its range deletions, as `info` counts them.
pub fn updates_text(updates: u64, range_deletions: u64) -> String {
    let mut s = count(updates, "update");
    if range_deletions > 0 {
        s.push_str(&format!(", {}", count(range_deletions, "range deletion")));
    }
    s
}

/// The names of a database's keyspaces other than the default, by id,
/// as its current manifest lists them (live and, for ops of a keyspace
/// dropped since, none). Empty if the manifest cannot be read: `wal dump`
/// reports damage of its own, and shows ids then.
fn keyspace_names(dir: &Path) -> BTreeMap<u32, String> {
    let state = current_manifest(dir)
        .and_then(|(_, path)| read_manifest(&path))
        .and_then(|m| m.replay_all());
    state
        .map(|s| {
            s.keyspaces
                .into_iter()
                .map(|(id, k)| (id, k.name))
                .collect()
        })
        .unwrap_or_default()
}

fn wal_json(w: &WalContents, show: Show, names: &BTreeMap<u32, String>) -> Value {
    json!({
        "file": w.path.display().to_string(),
        "number": w.number,
        "size": w.size,
        "records": w.records.iter().map(|r| json!({
            "offset": r.offset,
            "batch_bytes": r.batch_len,
            "first_seq": r.first_seq.0,
            "ops": r.ops.iter().map(|o| {
                let mut op = json!({
                    "seq": o.seq.0,
                    "type": o.value_type.name(),
                    "key": show.bytes(&o.key),
                    "value": op_value_json(o, show),
                });
                // Only outside the default keyspace (DESIGN.md 12.3).
                if o.keyspace != 0 {
                    op["keyspace"] = json!(o.keyspace);
                    if let Some(name) = names.get(&o.keyspace) {
                        op["keyspace_name"] = json!(name);
                    }
                }
                op
            }).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "torn_tail": torn_json(&w.torn_tail),
        "corruption": w.corruption.as_ref().map(|e| e.to_string()),
    })
}

fn wal_text(w: &WalContents, show: Show, names: &BTreeMap<u32, String>) -> String {
    let mut out = format!(
        "{}: {}, {}, {}\n",
        file_name(&w.path),
        human_bytes(w.size),
        count(w.records.len() as u64, "record"),
        updates_text(w.ops() - w.range_deletions(), w.range_deletions())
    );
    if !w.records.is_empty() {
        let mut t = Table::new(&[
            ("offset", Align::Right),
            ("bytes", Align::Right),
            ("seq", Align::Right),
            ("op", Align::Left),
            ("key", Align::Left),
            ("value", Align::Left),
        ]);
        for r in &w.records {
            if r.ops.is_empty() {
                t.row(vec![
                    r.offset.to_string(),
                    r.batch_len.to_string(),
                    r.first_seq.to_string(),
                ]);
            }
            for (i, o) in r.ops.iter().enumerate() {
                let (offset, bytes) = if i == 0 {
                    (r.offset.to_string(), r.batch_len.to_string())
                } else {
                    (String::new(), String::new())
                };
                t.row(vec![
                    offset,
                    bytes,
                    o.seq.to_string(),
                    match (o.keyspace, names.get(&o.keyspace)) {
                        (0, _) => o.value_type.name().to_string(),
                        (id, Some(name)) => format!("{} ks={id} ({name})", o.value_type.name()),
                        (id, None) => format!("{} ks={id}", o.value_type.name()),
                    },
                    show.bytes(&o.key),
                    op_value_text(o, show),
                ]);
            }
        }
        out.push_str(&t.render("  "));
    }
    if let Some(t) = &w.torn_tail {
        out.push_str(&format!(
            "torn tail at offset {}: {} (recovery drops it: {TORN_WRITE}, or, if it was synced, \
             damage to the last record)\n",
            t.offset, t.reason
        ));
    }
    out
}

fn wal_dump(a: &WalDumpArgs) -> Result<(), CliError> {
    let show = Show { hex: a.hex };
    let wals = if a.path.is_dir() {
        read_live_wals(&a.path)?
    } else if a.path.is_file() {
        super::kind::expect_kind(&a.path, super::kind::FileKind::Wal, "wal dump", true)?;
        vec![read_wal(&a.path)?]
    } else {
        return Err(CliError::usage(format!(
            "{}: no such database or WAL file",
            a.path.display()
        )));
    };
    let other_keyspaces = wals
        .iter()
        .flat_map(|w| &w.records)
        .any(|r| r.ops.iter().any(|o| o.keyspace != 0));
    // A second read of the manifest, only when an op needs a name.
    let names = if a.path.is_dir() && other_keyspaces {
        keyspace_names(&a.path)
    } else {
        BTreeMap::new()
    };
    if a.json {
        let wals: Vec<Value> = wals.iter().map(|w| wal_json(w, show, &names)).collect();
        emit_json(&json!({ "wals": wals }))?;
    } else {
        let text: Vec<String> = wals.iter().map(|w| wal_text(w, show, &names)).collect();
        let mut out = text.join("\n");
        if wals.is_empty() {
            out.push_str("no live WAL\n");
        }
        emit(&out)?;
    }
    // There is no repair: the way out is a salvage.
    let hint = if a.path.is_dir() {
        format!(
            "the records before the damage are listed; the database does not open with this \
             damage, but {SALVAGE_ADVICE}"
        )
    } else {
        // A lone file may be a copy, or not a WAL at all.
        format!(
            "the records before the damage are listed (a file that is not a siftdb WAL reads as \
             damaged); a database whose live WAL has this damage does not open, but \
             {SALVAGE_ADVICE}"
        )
    };
    match wals.iter().find_map(|w| w.corruption.as_ref()) {
        Some(e) => Err(CliError::new(EXIT_CORRUPTION, e.to_string()).with_hint(hint)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use siftdb::inspect::key::{InternalKey, SequenceNumber, ValueType};
    use siftdb::inspect::version::edit::{KeyspaceAdd, KeyspaceEdit};

    /// Every field of `VersionEdit` is listed here without `..`, so adding
    /// a field fails to compile until `edit_fields` shows it.
    #[test]
    fn every_edit_field_is_shown() {
        let k = |s: &str| InternalKey::new(s.as_bytes(), SequenceNumber(1), ValueType::Value);
        let e = VersionEdit {
            format_version: Some(1),
            log_number: Some(2),
            next_file_number: Some(3),
            last_sequence: Some(SequenceNumber(4)),
            deleted_files: vec![(1, 5)],
            new_files: vec![(
                0,
                FileMetaData {
                    number: 6,
                    file_size: 100,
                    smallest: k("a"),
                    largest: k("b"),
                    num_entries: 2,
                    num_tombstones: 0,
                },
            )],
            user_bytes_flushed: Some(7),
            table_bytes_written: Some(8),
            key_predictions: vec![KeyPrediction {
                output_level: 2,
                input_tables: 3,
                input_entries: 5000,
                summed_distinct_keys: 4500,
                predicted_distinct_keys: 4020.4,
                relative_std_error: 0.01625,
                distinct_input_keys: 4000,
                distinct_output_keys: 3990,
                finished_at_unix_secs: 1_800_000_000,
            }],
            new_range_tombstones: vec![(
                siftdb::inspect::range_tombstone::RangeTombstone {
                    start: b"a".to_vec(),
                    end: None,
                    seq: SequenceNumber(9),
                },
                vec![6],
            )],
            range_tombstone_files: vec![(SequenceNumber(9), 10)],
            next_keyspace_id: Some(4),
            keyspaces: std::collections::BTreeMap::from([
                (
                    2,
                    KeyspaceEdit {
                        add: Some(KeyspaceAdd {
                            name: "logs".into(),
                            options: "block_size 16384\n".into(),
                        }),
                        options: Some("block_size 4096\n".into()),
                        log_number: Some(11),
                        deleted_files: vec![(0, 12)],
                        ..KeyspaceEdit::default()
                    },
                ),
                (
                    3,
                    KeyspaceEdit {
                        drop: true,
                        ..KeyspaceEdit::default()
                    },
                ),
            ]),
        };
        let show = Show { hex: false };
        let tags: Vec<u64> = edit_fields(&e, show).iter().map(|f| f.0).collect();
        assert_eq!(
            tags,
            [1, 2, 3, 4, 7, 8, 16, 5, 6, 9, 10, 11, 12, 13, 15, 2, 5, 12, 14]
        );
        let text: Vec<String> = edit_fields(&e, show).into_iter().map(|f| f.3).collect();
        assert_eq!(
            text[12..],
            [
                "ks=2",
                "\"logs\"  17 bytes of options",
                "16 bytes of options",
                "11",
                "L0 000012.sst",
                "ks=3",
                ""
            ]
        );
        let json: Vec<Value> = edit_fields(&e, show).into_iter().map(|f| f.2).collect();
        assert_eq!(
            json[13],
            json!({ "name": "logs", "options": "block_size 16384\n" })
        );
        let e = VersionEdit {
            next_keyspace_id: None,
            keyspaces: Default::default(),
            ..e
        };
        let tags: Vec<u64> = edit_fields(&e, show).iter().map(|f| f.0).collect();
        assert_eq!(tags, [1, 2, 3, 4, 7, 8, 5, 6, 9, 10, 11]);
        let text: Vec<String> = edit_fields(&e, show).into_iter().map(|f| f.3).collect();
        assert_eq!(text[6], "L1 000005.sst");
        assert_eq!(
            text[7],
            "L0 000006.sst  100 bytes  2 entries  0 tombstones  a@1 put .. b@1 put"
        );
        assert_eq!(
            text[8],
            "L2 <- 3 tables  5,000 entries  predicted 4,020 (±1.6%)  found 4,000 (+0.51%)  wrote 3,990  \
             at 2027-01-15T08:00:00Z"
        );
        assert_eq!(text[9], "[a .. (no end)) @9  waits on 000006.sst");
        assert_eq!(text[10], "@9 waits on 000010.sst");
    }
}
