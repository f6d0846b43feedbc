//! `kvctl sst list` (the live SSTables of a database) and `kvctl sst dump`
//! (one table file, with or without its database).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};
use siftdb::filter::FilterKind;
use siftdb::inspect::key::ParsedInternalKey;
use siftdb::inspect::sstable::Table;
use siftdb::inspect::{
    open_table, properties_block, table_entries, FilterInfo, PropertyValue, TableInfo,
};

use super::{emit, emit_json, file_name, handle_json, percent, snapshot, table_name, Show};
use crate::error::CliError;
use crate::format::{escaped_arg, group, human_bytes, Align, Bytes, Table as TextTable};

/// Key bounds longer than this are cut in `sst list`'s table.
const KEY_PREVIEW: usize = 24;

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  kvctl sst list ./db")]
pub struct SstArgs {
    #[command(subcommand)]
    pub command: SstCommand,
}

#[derive(Debug, Subcommand)]
pub enum SstCommand {
    /// One row per live SSTable: level, size, counts, key and sequence ranges, filter bits/key
    List(ListArgs),
    /// Decode one .sst file (no database needed): properties, index, entries, filter
    Dump(DumpArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  kvctl sst list ./db --json")]
pub struct ListArgs {
    /// Database directory
    pub db: PathBuf,
    /// Print keys as hex
    #[arg(long)]
    pub hex: bool,
    /// Print JSON (schema in DESIGN.md, "kvctl JSON output")
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  kvctl sst dump ./db/000012.sst --entries --from 'libc' --limit 20\n\n\
Without a section flag, prints the properties and the filter. Human output cuts \
values to 48 characters; --json prints them whole."
)]
pub struct DumpArgs {
    /// The .sst file
    pub file: PathBuf,
    /// The properties block, as stored
    #[arg(long)]
    pub props: bool,
    /// The index: one data block per row, with its handle and last key
    #[arg(long)]
    pub index: bool,
    /// Every entry (all versions and tombstones) with sequence and type
    #[arg(long)]
    pub entries: bool,
    /// With --entries: start at the first key >= K
    #[arg(long, value_name = "K", value_parser = escaped_arg, requires = "entries")]
    pub from: Option<Bytes>,
    /// With --entries: print at most N entries
    #[arg(long, value_name = "N", requires = "entries")]
    pub limit: Option<usize>,
    /// The filter: m, k, bits set, implied and design false-positive rates
    #[arg(long)]
    pub filter: bool,
    /// Print keys and values as hex
    #[arg(long)]
    pub hex: bool,
    /// Print JSON (schema in DESIGN.md, "kvctl JSON output")
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &SstArgs) -> Result<(), CliError> {
    match &args.command {
        SstCommand::List(a) => list(a),
        SstCommand::Dump(a) => dump(a),
    }
}

// ---------------------------------------------------------------- list

fn list_row_json(t: &TableInfo, show: Show) -> Value {
    let p = &t.properties;
    json!({
        "level": t.level,
        "number": t.number,
        "name": table_name(t.number),
        "size": t.file_size,
        "entries": p.num_entries,
        "distinct_keys": p.num_distinct_keys,
        "tombstones": p.num_tombstones,
        "smallest_key": show.bytes(&p.smallest_user_key),
        "largest_key": show.bytes(&p.largest_user_key),
        "smallest_seq": p.smallest_seq.0,
        "largest_seq": p.largest_seq.0,
        "data_blocks": t.data_blocks,
        "filter_bits_per_key": t.filter.bits_per_key(),
    })
}

/// The `sst list` table.
pub fn list_table(tables: &[TableInfo], show: Show) -> TextTable {
    let mut t = TextTable::new(&[
        ("level", Align::Left),
        ("file", Align::Left),
        ("size", Align::Right),
        ("entries", Align::Right),
        ("keys", Align::Right),
        ("tombstones", Align::Right),
        ("key range", Align::Left),
        ("seq range", Align::Left),
        ("bits/key", Align::Right),
    ]);
    for i in tables {
        let p = &i.properties;
        t.row(vec![
            i.level.map_or(String::new(), |l| format!("L{l}")),
            table_name(i.number),
            human_bytes(i.file_size),
            group(p.num_entries),
            group(p.num_distinct_keys),
            group(p.num_tombstones),
            format!(
                "{} .. {}",
                show.short(&p.smallest_user_key, KEY_PREVIEW),
                show.short(&p.largest_user_key, KEY_PREVIEW)
            ),
            format!("{} .. {}", p.smallest_seq, p.largest_seq),
            format!("{:.2}", i.filter.bits_per_key()),
        ]);
    }
    t
}

fn list(args: &ListArgs) -> Result<(), CliError> {
    let show = Show { hex: args.hex };
    let snap = snapshot(&args.db)?;
    let tables = crate::keyspace::tree(&snap)?.tables();
    if args.json {
        let rows: Vec<Value> = tables.iter().map(|t| list_row_json(t, show)).collect();
        return emit_json(&json!({ "tables": rows }));
    }
    let mut out = list_table(&tables, show).render("");
    if tables.is_empty() {
        out.push_str("(no SSTables yet: writes since the last flush are in the WAL)\n");
    }
    emit(&out)
}

// ---------------------------------------------------------------- dump

/// `"key"@seq type` parts of an encoded internal key.
fn internal_parts(key: &[u8], show: Show) -> (String, u64, &'static str) {
    match ParsedInternalKey::parse(key) {
        Some(p) => (show.bytes(p.user_key), p.seq.0, p.value_type.name()),
        None => (show.bytes(key), 0, "?"),
    }
}

/// JSON of a filter's health.
pub fn filter_json(f: &FilterInfo) -> Value {
    json!({
        "policy": f.policy,
        "kind": f.kind().map(|k| k.label()),
        "known_policy": f.known_policy,
        "block_bytes": f.block_bytes,
        "keys": f.keys,
        "configured_bits_per_key": f.configured_bits_per_key,
        "bits": f.stats.map(|s| s.bits),
        "num_hashes": f.stats.map(|s| s.num_hashes),
        "result_bits": f.stats.map(|s| s.result_bits),
        "bits_set": f.stats.and_then(|s| s.bits_set),
        "fraction_set": f.fraction_set(),
        "bits_per_key": f.bits_per_key(),
        "implied_fpr": f.implied_fpr(),
        "design_fpr": f.design_fpr(),
        "warning": f.degraded(),
    })
}

fn filter_lines(f: &FilterInfo) -> String {
    if f.policy.is_empty() {
        return "no filter: every lookup within the key range reads a data block\n".into();
    }
    let mut t = TextTable::new(&[("", Align::Left), ("", Align::Left)]);
    t.row(vec!["policy".into(), f.policy.clone()]);
    let Some(s) = f.stats else {
        t.row(vec![
            "state".into(),
            if f.known_policy {
                "malformed: lookups treat it as \"may match\"".into()
            } else {
                "unknown policy: lookups ignore it".into()
            },
        ]);
        return strip_header(t.render(""));
    };
    t.row(vec!["kind".into(), s.kind.label().into()]);
    t.row(vec!["keys".into(), group(f.keys)]);
    let (bits_name, params, implied, design) = match s.kind {
        FilterKind::Bloom => (
            "m",
            format!("k = {}", s.num_hashes),
            "(bits set / m)^k",
            "(1 - e^(-k/(m/n)))^k",
        ),
        FilterKind::BlockedBloom => (
            "512 x blocks",
            format!("k = {}, {} blocks", s.num_hashes, group(s.bits / 512)),
            "mean over blocks of (bits set / 512)^k",
            "blocked-Bloom theory for m/n and k (DESIGN.md 12.6.2)",
        ),
        FilterKind::Ribbon => (
            "r x slots",
            format!(
                "r = {}, {} slots",
                s.result_bits,
                group(s.bits / u64::from(s.result_bits.max(1)))
            ),
            "2^-r",
            "2^-r",
        ),
        _ => ("bits", String::new(), "", ""),
    };
    t.row(vec![
        bits_name.into(),
        format!(
            "{} bits ({} bytes in the block)",
            group(s.bits),
            group(f.block_bytes)
        ),
    ]);
    t.row(vec!["parameters".into(), params]);
    t.row(vec![
        "bits/key".into(),
        format!(
            "{:.2} (configured {}{})",
            f.bits_per_key(),
            f.configured_bits_per_key,
            if s.kind == FilterKind::Ribbon {
                ": r"
            } else {
                ""
            }
        ),
    ]);
    if let Some(set) = s.bits_set {
        t.row(vec![
            "bits set".into(),
            format!(
                "{} ({})",
                group(set),
                percent(f.fraction_set().unwrap_or(0.0))
            ),
        ]);
    }
    t.row(vec![
        "implied FPR".into(),
        format!("{}  = {implied}", percent(f.implied_fpr().unwrap_or(1.0))),
    ]);
    t.row(vec![
        "design FPR".into(),
        format!("{}  = {design}", percent(f.design_fpr().unwrap_or(1.0))),
    ]);
    if f.degraded() {
        t.row(vec![
            "WARNING".into(),
            "implied rate is more than twice the design rate".into(),
        ]);
    }
    strip_header(t.render(""))
}

/// Drops the (empty) header line of a two-column key/value table.
fn strip_header(s: String) -> String {
    match s.split_once('\n') {
        Some(("", rest)) => rest.to_string(),
        _ => s,
    }
}

/// Which sections `sst dump` prints.
struct Sections {
    props: bool,
    index: bool,
    entries: bool,
    filter: bool,
}

fn sections(a: &DumpArgs) -> Sections {
    if a.props || a.index || a.entries || a.filter {
        Sections {
            props: a.props,
            index: a.index,
            entries: a.entries,
            filter: a.filter,
        }
    } else {
        Sections {
            props: true,
            index: false,
            entries: false,
            filter: true,
        }
    }
}

fn prop_value(v: &PropertyValue, show: Show) -> Value {
    match v {
        PropertyValue::Number(n) => json!(n),
        PropertyValue::Bytes(b) => json!(show.bytes(b)),
    }
}

/// The JSON document `sst dump --json` prints.
pub fn dump_json(t: &Table, a: &DumpArgs) -> Result<Value, CliError> {
    let show = Show { hex: a.hex };
    let s = sections(a);
    let f = t.footer();
    let mut doc = Map::new();
    doc.insert("file".into(), json!(t.path().display().to_string()));
    doc.insert("number".into(), json!(t.file_number()));
    doc.insert("size".into(), json!(t.file_size()));
    doc.insert(
        "footer".into(),
        json!({
            "index": handle_json(f.index),
            "filter": if f.filter.is_null() { Value::Null } else { handle_json(f.filter) },
            "properties": handle_json(f.properties),
            "format_version": f.format_version,
        }),
    );
    doc.insert(
        "compression".into(),
        match &t.properties().compression {
            Some(c) => json!({
                "codec": c.codec,
                "compressed_blocks": c.compressed_blocks,
                "raw_bytes": c.raw_bytes,
                "stored_bytes": c.stored_bytes,
            }),
            None => Value::Null,
        },
    );
    doc.insert(
        "key_sketch".into(),
        match (t.properties().key_sketch, t.key_sketch()) {
            (Some(h), Ok(Some(sk))) => json!({
                "handle": handle_json(h),
                "precision": sk.precision(),
                "sparse": sk.is_sparse(),
                "estimate": sk.estimate(),
            }),
            (Some(h), Err(e)) => json!({
                "handle": handle_json(h),
                "error": e.to_string(),
            }),
            _ => Value::Null,
        },
    );
    if s.props {
        let mut m = Map::new();
        for (name, v) in properties_block(t)? {
            m.insert(name, prop_value(&v, show));
        }
        doc.insert("properties".into(), Value::Object(m));
    }
    if s.index {
        let rows: Vec<Value> = t
            .index()
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let (k, seq, ty) = internal_parts(&e.last_key, show);
                json!({
                    "block": i,
                    "offset": e.handle.offset,
                    "size": e.handle.size,
                    "last_key": k,
                    "last_seq": seq,
                    "last_type": ty,
                })
            })
            .collect();
        doc.insert("index".into(), Value::Array(rows));
    }
    if s.entries {
        let mut rows = Vec::new();
        for e in table_entries(t, a.from.as_deref()).take(a.limit.unwrap_or(usize::MAX)) {
            let e = e?;
            rows.push(json!({
                "block": e.block,
                "key": show.bytes(&e.user_key),
                "seq": e.seq.0,
                "type": e.value_type.name(),
                "value": show.bytes(&e.value),
            }));
        }
        doc.insert("entries".into(), Value::Array(rows));
    }
    if s.filter {
        doc.insert("filter".into(), filter_json(&FilterInfo::of(t)));
    }
    Ok(Value::Object(doc))
}

/// The human dump.
pub fn dump_text(t: &Table, a: &DumpArgs) -> Result<String, CliError> {
    let show = Show { hex: a.hex };
    let s = sections(a);
    let f = t.footer();
    let mut out = format!(
        "{}: {} bytes, {}, format version {}\n",
        file_name(t.path()),
        group(t.file_size()),
        crate::format::count(t.index().len() as u64, "data block"),
        f.format_version
    );
    let filter = if f.filter.is_null() {
        "none".to_string()
    } else {
        f.filter.to_string()
    };
    out.push_str(&format!(
        "footer: index {}, filter {filter}, properties {}\n",
        f.index, f.properties
    ));
    if let Some(c) = &t.properties().compression {
        out.push_str(&format!(
            "compression: {}, {} of {} data blocks compressed, {} bytes stored for {} ({:.2}x)\n",
            c.codec,
            group(c.compressed_blocks),
            group(t.index().len() as u64),
            group(c.stored_bytes),
            group(c.raw_bytes),
            c.raw_bytes as f64 / c.stored_bytes.max(1) as f64
        ));
    }
    match (t.properties().key_sketch, t.key_sketch()) {
        (Some(h), Ok(Some(sk))) => out.push_str(&format!(
            "key sketch {h}: HyperLogLog, precision {}, {}, estimates {} distinct keys ({} exact)\n",
            sk.precision(),
            if sk.is_sparse() { "sparse" } else { "dense" },
            group(sk.estimate().round() as u64),
            group(t.properties().num_distinct_keys)
        )),
        (Some(h), Err(e)) => out.push_str(&format!("key sketch {h}: unreadable: {e}\n")),
        _ => {}
    }
    if s.props {
        out.push_str("\nproperties\n");
        let mut tt = TextTable::new(&[("name", Align::Left), ("value", Align::Left)]);
        for (name, v) in properties_block(t)? {
            let v = match v {
                PropertyValue::Number(n) => n.to_string(),
                PropertyValue::Bytes(b) => show.bytes(&b),
            };
            tt.row(vec![name, v]);
        }
        out.push_str(&tt.render("  "));
    }
    if s.index {
        out.push_str("\nindex\n");
        let mut tt = TextTable::new(&[
            ("block", Align::Right),
            ("offset", Align::Right),
            ("size", Align::Right),
            ("last key", Align::Left),
            ("seq", Align::Right),
            ("type", Align::Left),
        ]);
        for (i, e) in t.index().iter().enumerate() {
            let (k, seq, ty) = internal_parts(&e.last_key, show);
            tt.row(vec![
                i.to_string(),
                e.handle.offset.to_string(),
                e.handle.size.to_string(),
                k,
                seq.to_string(),
                ty.to_string(),
            ]);
        }
        out.push_str(&tt.render("  "));
    }
    if s.entries {
        out.push_str("\nentries\n");
        let mut tt = TextTable::new(&[
            ("block", Align::Right),
            ("key", Align::Left),
            ("seq", Align::Right),
            ("type", Align::Left),
            ("value", Align::Left),
        ]);
        for e in table_entries(t, a.from.as_deref()).take(a.limit.unwrap_or(usize::MAX)) {
            let e = e?;
            tt.row(vec![
                e.block.to_string(),
                show.bytes(&e.user_key),
                e.seq.to_string(),
                e.value_type.name().to_string(),
                show.value(&e.value),
            ]);
        }
        out.push_str(&tt.render("  "));
    }
    if s.filter {
        out.push_str("\nfilter\n");
        for line in filter_lines(&FilterInfo::of(t)).lines() {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }
    Ok(out)
}

fn dump(a: &DumpArgs) -> Result<(), CliError> {
    if !a.file.is_file() {
        let what = if a.file.exists() {
            "not a file"
        } else {
            "does not exist"
        };
        return Err(CliError::usage(format!(
            "{}: {what} (sst dump takes one .sst file; see `kvctl sst list DB`)",
            a.file.display()
        )));
    }
    super::kind::expect_kind(&a.file, super::kind::FileKind::Table, "sst dump", false)?;
    let t = open_table(&a.file)?;
    if a.json {
        emit_json(&dump_json(&t, a)?)
    } else {
        emit(&dump_text(&t, a)?)
    }
}
