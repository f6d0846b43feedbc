//! [`verify_db`] and [`verify_file`]: every checksum and invariant of a
//! database or of one file, reported as [`Problem`]s.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::logs::{current_manifest, read_wals};
use super::{
    file_name, missing_live_file, number_of, open_table, read_manifest, read_wal, unless_missing,
    with_retries, LoadError, WalContents,
};
use crate::escape::escape_bytes;
use crate::filename::{self, FileType};
use crate::filter::{hash_key, policy_for_name};
use crate::fs::StdFs;
use crate::key::{compare_internal_keys, user_key_of, ParsedInternalKey, ValueType};
use crate::sstable::format::{Footer, BLOCK_TRAILER_LEN, FOOTER_LEN, TABLE_MAGIC};
use crate::sstable::Table;
use crate::version::edit::FileMetaData;
use crate::{Error, Result};

mod report;

use report::{show_internal, Checker};
pub use report::{Problem, VerifyReport};

/// Checks the database in `dir`: `CURRENT`, that the manifest replays, that
/// every live table exists and passes [`verify_file`]'s checks and matches
/// its manifest entry (size, smallest and largest internal keys, entries,
/// tombstones), that levels ≥ 1 do not overlap, and that every live WAL
/// reads to its end (a torn tail is a note; damage found while a process
/// has the database open for writing is read again before it counts, as
/// [`read_wal`] says). Stops at the first problem
/// unless `all`. `progress(done, total)` is called with table bytes
/// checked.
///
/// # Errors
/// [`Error::NotADatabase`] without `CURRENT`; [`Error::Io`] if a file
/// cannot be read, or (kind `NotFound`) vanished under a concurrent
/// compaction; [`Error::UnsupportedVersion`] for a newer format. Damage is
/// reported in the [`VerifyReport`], not as an error.
pub fn verify_db(
    dir: &Path,
    all: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<VerifyReport> {
    match current_manifest(dir) {
        // A damaged or missing `CURRENT` (beside database files) is damage
        // like any other: a report, so that `--json` callers get one.
        Err(Error::Corruption {
            file,
            offset,
            detail,
        }) => {
            let what = if file.file_name().is_some_and(|n| n == "CURRENT") {
                "CURRENT"
            } else {
                "manifest"
            };
            return Ok(VerifyReport {
                problems: vec![Problem {
                    file,
                    what: what.into(),
                    offset: Some(offset),
                    detail,
                }],
                ..Default::default()
            });
        }
        Err(e) => return Err(e),
        Ok(_) => {}
    }
    // A file the manifest lists is gone while the manifest is unchanged:
    // damage (if the manifest changed, another process compacted).
    let missing = |path: &Path| {
        let (_, manifest) = current_manifest(dir)?;
        let mut no_progress = |_: u64, _: u64| {};
        let mut c = Checker::new(all, &mut no_progress, 0);
        // The manifest itself missing is `CURRENT` naming a file that is
        // not there: damage to `CURRENT`.
        let what = if path == manifest {
            "CURRENT"
        } else {
            "manifest"
        };
        c.corruption(missing_live_file(&manifest, path), what)?;
        Ok(c.report)
    };
    with_retries(dir, || verify_db_once(dir, all, progress), missing)
}

fn verify_db_once(
    dir: &Path,
    all: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> std::result::Result<VerifyReport, LoadError> {
    let mut c = Checker::new(all, progress, 0);
    let (_, manifest_path) = match current_manifest(dir) {
        Ok(m) => m,
        Err(e @ Error::Corruption { .. }) => {
            c.corruption(e, "CURRENT")?;
            return Ok(c.report);
        }
        Err(e) => return Err(e.into()),
    };
    let manifest = match unless_missing(&manifest_path, read_manifest(&manifest_path))? {
        Ok(m) => m,
        Err(e) => {
            c.corruption(e, "manifest record")?;
            return Ok(c.report);
        }
    };
    c.report.manifest_edits = manifest.records.len() as u64;
    // The stored options (DESIGN.md 12.13): damage there fails the opens
    // that read them, so it is damage to report.
    match crate::Db::stored_options(dir) {
        Ok(_) => {}
        Err(e @ Error::Corruption { .. }) => {
            c.corruption(e, "OPTIONS file")?;
        }
        Err(e) => {
            let path = crate::filename::options_path(dir);
            c.problem(&path, "OPTIONS file", None, e.to_string());
        }
    }
    if let Some(t) = &manifest.torn_tail {
        c.report.notes.push(format!(
            "{}: torn final record at offset {} ({}); ignored, as at open",
            file_name(&manifest_path),
            t.offset,
            t.reason
        ));
    }
    let state = match manifest.replay_all() {
        Ok(s) => s,
        Err(e) => {
            c.corruption(e, "manifest")?;
            return Ok(c.report);
        }
    };

    // Open every live file first, so that a concurrent flush or compaction
    // can only interfere during this short window: a table stays readable
    // through its map, and WALs are read whole, even if the files are
    // deleted afterwards.
    let mut tables = Vec::new();
    for tree in state.trees() {
        for (level, files) in tree.files.iter().enumerate() {
            for meta in files.values() {
                let path = filename::table_path(dir, meta.number);
                let opened = unless_missing(&path, Table::open(&path, meta.number))?;
                c.total_bytes += opened.as_ref().map_or(0, |t| t.file_size());
                tables.push((tree.id, level, meta, path, opened));
            }
        }
    }
    let on_disk = filename::list_dir(&StdFs, dir)?;
    let wals = read_wals(dir, &state)?;
    (c.progress)(0, c.total_bytes);

    let live_numbers: BTreeSet<u64> = tables.iter().map(|(_, _, m, _, _)| m.number).collect();
    for (keyspace, level, meta, path, opened) in tables {
        let table = match opened {
            Ok(t) => t,
            Err(e) => {
                let what = locate_in_table(&path, &e);
                c.report.tables += 1;
                if c.corruption(e, what)? {
                    return Ok(c.report);
                }
                continue;
            }
        };
        let contents = check_table(&mut c, &table)?;
        if c.stop() {
            return Ok(c.report);
        }
        if let Some(contents) = contents {
            let entry = ManifestEntry {
                keyspace,
                level,
                meta,
            };
            if check_manifest_entry(&mut c, &manifest_path, &entry, &table, &contents) {
                return Ok(c.report);
            }
        }
    }

    // Levels >= 1 hold disjoint key ranges, in each keyspace.
    let levels = state
        .trees()
        .flat_map(|t| t.files.iter().enumerate().skip(1).map(move |l| (t, l)));
    for (tree, (level, files)) in levels {
        let mut sorted: Vec<&FileMetaData> = files.values().collect();
        sorted.sort_by(|a, b| a.smallest.cmp(&b.smallest));
        for pair in sorted.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if a.largest.user_key() >= b.smallest.user_key() {
                let detail = format!(
                    "{:06}.sst [{} .. {}] overlaps {:06}.sst [{} .. {}]",
                    a.number,
                    escape_bytes(a.smallest.user_key()),
                    escape_bytes(a.largest.user_key()),
                    b.number,
                    escape_bytes(b.smallest.user_key()),
                    escape_bytes(b.largest.user_key()),
                );
                let what = match tree.id {
                    0 => format!("level {level}"),
                    id => format!("level {level} of keyspace {id} (\"{}\")", tree.name),
                };
                if c.problem(&manifest_path, what, None, detail) {
                    return Ok(c.report);
                }
            }
        }
    }

    // WALs.
    // Every id below the next one was created, and is live or dropped
    // (ids are never reused): the open applies or skips its writes.
    let next_keyspace_id = state.next_keyspace_id;
    for wal in wals {
        if check_wal(&mut c, wal, Some(next_keyspace_id))? {
            return Ok(c.report);
        }
    }

    // Files the manifest does not reference (not damage).
    let mut orphans: Vec<(FileType, PathBuf)> = on_disk
        .into_iter()
        .filter(|(t, _)| match *t {
            FileType::Table(n) => !live_numbers.contains(&n),
            FileType::Wal(n) => n < state.min_log_number(),
            FileType::Temp(_) => true,
            FileType::Manifest(n) => n != number_of(&manifest_path).unwrap_or(n),
            _ => false,
        })
        .collect();
    orphans.sort_by(|a, b| a.1.cmp(&b.1));
    for (t, path) in orphans {
        let why = match t {
            FileType::Table(_) => "SSTable not in the manifest (being written, or left by a crash; the next open deletes it)",
            FileType::Wal(_) => "WAL older than the log number (already flushed; deleted soon)",
            FileType::Manifest(_) => "manifest not named by CURRENT (the next open deletes it)",
            _ => "temporary file (the next open deletes it)",
        };
        c.report.notes.push(format!("{}: {why}", file_name(&path)));
    }
    Ok(c.report)
}

/// Names the table part holding `e`'s offset, from the file's footer.
fn locate_in_table(path: &Path, e: &Error) -> String {
    let Error::Corruption { offset, .. } = e else {
        return "table".into();
    };
    let footer = (|| -> std::io::Result<Option<Footer>> {
        let mut f = crate::util::file::open_regular(path)?;
        let len = f.metadata()?.len();
        if len < FOOTER_LEN as u64 {
            return Ok(None);
        }
        f.seek(SeekFrom::Start(len - FOOTER_LEN as u64))?;
        let mut buf = [0u8; FOOTER_LEN];
        f.read_exact(&mut buf)?;
        if *offset >= len - FOOTER_LEN as u64 {
            return Ok(None);
        }
        Ok(Footer::decode(&buf, path).ok())
    })();
    match footer {
        Ok(Some(f)) if *offset == f.index.offset => "index block".into(),
        Ok(Some(f)) if !f.filter.is_null() && *offset == f.filter.offset => "filter block".into(),
        Ok(Some(f)) if *offset >= f.properties.offset && *offset < f.index.offset => {
            "properties block".into()
        }
        Ok(Some(f)) if *offset >= f.index.offset => "index block".into(),
        Ok(None) => "footer".into(),
        _ => "table".into(),
    }
}

/// What the data blocks of a table actually hold.
#[derive(Debug, Default)]
struct Contents {
    entries: u64,
    distinct: u64,
    tombstones: u64,
    raw_key_bytes: u64,
    raw_value_bytes: u64,
    smallest_seq: u64,
    largest_seq: u64,
    first_key: Vec<u8>,
    last_key: Vec<u8>,
}

/// Checks one opened table: data-block checksums, block layout, key order
/// within and across blocks, index keys, property counts and the filter.
/// Returns what the blocks hold when every block was read (so that
/// counts are meaningful), `None` otherwise. Stops early if `c` says so.
fn check_table(c: &mut Checker<'_>, table: &Table) -> Result<Option<Contents>> {
    let path = table.path();
    c.report.tables += 1;
    c.report.table_bytes += table.file_size();
    let footer = *table.footer();
    let mut t = Contents::default();
    let p = table.properties();
    // The filter, probed with every distinct user key as the scan finds it.
    let filter = match (table.filter_bytes(), policy_for_name(&p.filter_policy)) {
        (Some(bytes), Some(policy)) => Some((bytes, policy)),
        (Some(_), None) => {
            c.report.notes.push(format!(
                "{}: filter policy \"{}\" is unknown to this build; filter not checked",
                file_name(path),
                escape_bytes(p.filter_policy.as_bytes())
            ));
            None
        }
        (None, _) => None,
    };
    let mut misses = 0u64;
    let mut first_miss: Option<Vec<u8>> = None;
    // The prefix filter, probed with every distinct prefix, when its
    // extractor is one this build can rebuild from its name.
    let prefix_check = match (&p.prefix_filter, &filter, table.prefix_filter_bytes()) {
        (Some(pf), Some(_), Some(bytes)) => {
            match crate::filter::prefix::builtin_extractor(&pf.extractor) {
                Some(ex) => Some((ex, bytes)),
                None => {
                    c.report.notes.push(format!(
                    "{}: prefix extractor \"{}\" is not a built-in one; prefix filter not checked",
                    file_name(path),
                    escape_bytes(pf.extractor.as_bytes())
                ));
                    None
                }
            }
        }
        _ => None,
    };
    let (mut prefix_misses, mut first_prefix_miss) = (0u64, None::<Vec<u8>>);
    let mut last_prefix: Option<Vec<u8>> = None;
    let mut complete = true;
    let mut expected_offset = 0u64;
    let mut prev_key: Option<Vec<u8>> = None;
    let mut done_bytes = 0u64;
    for (i, ie) in table.index().iter().enumerate() {
        let what = format!("data block {i}");
        let h = ie.handle;
        if h.offset != expected_offset {
            let detail = format!(
                "starts at {} but the previous block ends at {expected_offset} (index entry {i} points at {h})",
                h.offset
            );
            if c.problem(path, &what, Some(h.offset), detail) {
                return Ok(None);
            }
        }
        expected_offset = h.end_with_trailer().unwrap_or(u64::MAX);
        let contents = table.data_block(h);
        let block = match contents {
            Ok(ref contents) => crate::sstable::Block::new(contents, path, h.offset),
            Err(e) => Err(e),
        };
        let block = match block {
            Ok(b) => b,
            Err(e) => {
                complete = false;
                if c.corruption(e, &what)? {
                    return Ok(None);
                }
                continue;
            }
        };
        c.report.data_blocks += 1;
        let mut last_in_block: Option<Vec<u8>> = None;
        let mut block_ok = true;
        for entry in block.iter() {
            let (key, value) = match entry {
                Ok(kv) => kv,
                Err(e) => {
                    (complete, block_ok) = (false, false);
                    if c.corruption(e, &what)? {
                        return Ok(None);
                    }
                    break;
                }
            };
            let Some(ik) = ParsedInternalKey::parse(&key) else {
                (complete, block_ok) = (false, false);
                let d = format!("malformed internal key {}", escape_bytes(&key));
                if c.problem(path, &what, Some(h.offset), d) {
                    return Ok(None);
                }
                break;
            };
            if let Some(prev) = &prev_key {
                if compare_internal_keys(prev, &key) != Ordering::Less {
                    let d = format!(
                        "key {} is not after the previous key {}{}",
                        show_internal(&key),
                        show_internal(prev),
                        if last_in_block.is_none() {
                            " (the last of the previous block)"
                        } else {
                            ""
                        }
                    );
                    if c.problem(path, &what, Some(h.offset), d) {
                        return Ok(None);
                    }
                }
            }
            let new_user_key = prev_key
                .as_deref()
                .is_none_or(|prev| user_key_of(prev) != ik.user_key);
            if new_user_key {
                t.distinct += 1;
                if let Some((bytes, policy)) = &filter {
                    c.report.filter_probes += 1;
                    if !policy.may_match(bytes, hash_key(ik.user_key)) {
                        misses += 1;
                        first_miss.get_or_insert_with(|| ik.user_key.to_vec());
                    }
                    if let Some((ex, prefix_bytes)) = &prefix_check {
                        if let Some(q) = crate::filter::PrefixExtractor::prefix(ex, ik.user_key) {
                            if last_prefix.as_deref() != Some(q) {
                                if !policy.may_match(prefix_bytes, hash_key(q)) {
                                    prefix_misses += 1;
                                    first_prefix_miss.get_or_insert_with(|| q.to_vec());
                                }
                                last_prefix = Some(q.to_vec());
                            }
                        }
                    }
                }
            }
            if t.entries == 0 {
                t.first_key = key.clone();
                t.smallest_seq = ik.seq.0;
            }
            t.entries += 1;
            if ik.value_type == ValueType::Deletion {
                t.tombstones += 1;
            }
            t.raw_key_bytes += key.len() as u64;
            t.raw_value_bytes += value.len() as u64;
            t.smallest_seq = t.smallest_seq.min(ik.seq.0);
            t.largest_seq = t.largest_seq.max(ik.seq.0);
            c.report.entries += 1;
            last_in_block = Some(key.clone());
            prev_key = Some(key);
        }
        if let Some(k) = last_in_block.as_ref().filter(|k| **k != ie.last_key) {
            let d = format!(
                "index entry {i} says the block ends with {}, it ends with {}",
                show_internal(&ie.last_key),
                show_internal(k)
            );
            if c.problem(path, "index block", Some(footer.index.offset), d) {
                return Ok(None);
            }
        }
        if last_in_block.is_none()
            && block_ok
            && c.problem(path, &what, Some(h.offset), "block holds no entries")
        {
            return Ok(None);
        }
        let step = h.size + BLOCK_TRAILER_LEN as u64;
        done_bytes += step;
        c.advance(step);
    }
    if let Some(k) = prev_key {
        t.last_key = k;
    }
    // The metadata blocks follow the data blocks: the filter (if any),
    // then the key sketch (if any), then the properties.
    let meta_start = if !footer.filter.is_null() {
        footer.filter.offset
    } else if let Some(h) = p.key_sketch {
        h.offset.min(footer.properties.offset)
    } else {
        footer.properties.offset
    };
    // A filter that asks for a placement (the blocked Bloom filter) may be
    // preceded by up to 63 zero bytes of padding (DESIGN.md 12.4).
    let padding = meta_start.saturating_sub(expected_offset);
    let padded = padding > 0
        && padding < 64
        && !footer.filter.is_null()
        && table
            .map_bytes(expected_offset, padding)
            .is_some_and(|b| b.iter().all(|&x| x == 0));
    if complete && expected_offset != meta_start && !padded {
        let d = format!(
            "data blocks end at {expected_offset} but the next block starts at {meta_start}"
        );
        if c.problem(path, "index block", Some(footer.index.offset), d) {
            return Ok(None);
        }
    }
    c.advance(table.file_size().saturating_sub(done_bytes));

    // The key sketch decodes (its checksum included).
    // A corruption error already names its offset: only its detail goes in
    // the problem, whose own offset is printed once.
    if let Err(e) = table.key_sketch() {
        let at = p.key_sketch.map(|h| h.offset);
        let stop = match e {
            Error::Corruption { offset, detail, .. } => {
                c.problem(path, "key sketch block", Some(offset), detail)
            }
            e => c.problem(path, "key sketch block", at, e.to_string()),
        };
        if stop {
            return Ok(None);
        }
    }

    // Filter: no false negatives, and its shape matches the properties.
    if let Some((bytes, _)) = &filter {
        let at = Some(footer.filter.offset);
        let kind = crate::filter::FilterKind::from_policy_name(&p.filter_policy);
        if let Some(s) = kind.and_then(|k| super::FilterStats::decode(k, bytes)) {
            if s.bits != p.filter_bits || s.num_hashes != p.filter_num_hashes {
                let d = format!(
                    "filter has {} bits, k = {}; the properties say {} bits, k = {}",
                    s.bits, s.num_hashes, p.filter_bits, p.filter_num_hashes
                );
                if c.problem(path, "filter block", at, d) {
                    return Ok(None);
                }
            }
        }
        if let Some(key) = &first_miss {
            let d = format!(
                "filter answers \"absent\" for {misses} of the {} keys the table holds (false \
                 negatives), first \"{}\"",
                t.distinct,
                escape_bytes(key)
            );
            if c.problem(path, "filter block", at, d) {
                return Ok(None);
            }
        }
        if let Some(q) = &first_prefix_miss {
            let at = p.prefix_filter.as_ref().map(|pf| pf.handle.offset);
            let d = format!(
                "prefix filter answers \"absent\" for {prefix_misses} prefixes the table holds \
                 (false negatives), first \"{}\"",
                escape_bytes(q)
            );
            if c.problem(path, "prefix filter block", at, d) {
                return Ok(None);
            }
        }
    }
    if !complete {
        return Ok(None);
    }

    // Properties against contents.
    let at = Some(footer.properties.offset);
    let pairs: [(&str, u64, u64); 7] = [
        ("num_entries", p.num_entries, t.entries),
        ("num_distinct_keys", p.num_distinct_keys, t.distinct),
        ("num_tombstones", p.num_tombstones, t.tombstones),
        ("smallest_seq", p.smallest_seq.0, t.smallest_seq),
        ("largest_seq", p.largest_seq.0, t.largest_seq),
        ("raw_key_bytes", p.raw_key_bytes, t.raw_key_bytes),
        ("raw_value_bytes", p.raw_value_bytes, t.raw_value_bytes),
    ];
    for (name, says, holds) in pairs {
        if says != holds {
            let d = format!("siftdb.{name} is {says} but the data blocks hold {holds}");
            if c.problem(path, "properties block", at, d) {
                return Ok(None);
            }
        }
    }
    let keys = [
        (
            "smallest_user_key",
            &p.smallest_user_key,
            user_key_of(&t.first_key),
        ),
        (
            "largest_user_key",
            &p.largest_user_key,
            user_key_of(&t.last_key),
        ),
    ];
    for (name, says, holds) in keys {
        if says.as_slice() != holds {
            let d = format!(
                "siftdb.{name} is \"{}\" but the data blocks hold \"{}\"",
                escape_bytes(says),
                escape_bytes(holds)
            );
            if c.problem(path, "properties block", at, d) {
                return Ok(None);
            }
        }
    }
    Ok(Some(t))
}

/// Where the manifest lists a table, and what it records of it.
struct ManifestEntry<'a> {
    keyspace: u32,
    level: usize,
    meta: &'a FileMetaData,
}

/// Checks a table's manifest entry against the table (its keyspace
/// against its `siftdb.keyspace` property too); true to stop.
fn check_manifest_entry(
    c: &mut Checker<'_>,
    manifest: &Path,
    entry: &ManifestEntry<'_>,
    table: &Table,
    t: &Contents,
) -> bool {
    let (meta, level) = (entry.meta, entry.level);
    let what = match entry.keyspace {
        0 => format!("manifest entry of {:06}.sst (level {level})", meta.number),
        k => format!(
            "manifest entry of {:06}.sst (level {level} of keyspace {k})",
            meta.number
        ),
    };
    let mut diffs = Vec::new();
    let property = table.properties().keyspace;
    if property != entry.keyspace {
        diffs.push(format!(
            "it in keyspace {} but its property siftdb.keyspace says {property}",
            entry.keyspace
        ));
    }
    if meta.file_size != table.file_size() {
        diffs.push(format!(
            "size {} but the file has {}",
            meta.file_size,
            table.file_size()
        ));
    }
    if meta.smallest.encoded() != t.first_key.as_slice() {
        diffs.push(format!(
            "smallest key {} but the table starts with {}",
            show_internal(meta.smallest.encoded()),
            show_internal(&t.first_key)
        ));
    }
    if meta.largest.encoded() != t.last_key.as_slice() {
        diffs.push(format!(
            "largest key {} but the table ends with {}",
            show_internal(meta.largest.encoded()),
            show_internal(&t.last_key)
        ));
    }
    if meta.num_entries != t.entries {
        diffs.push(format!(
            "{} entries but the table holds {}",
            meta.num_entries, t.entries
        ));
    }
    if meta.num_tombstones != t.tombstones {
        diffs.push(format!(
            "{} tombstones but the table holds {}",
            meta.num_tombstones, t.tombstones
        ));
    }
    for d in diffs {
        if c.problem(manifest, &what, None, format!("records {d}")) {
            return true;
        }
    }
    false
}

/// Records a WAL's damage and torn tail, and a write to a keyspace the
/// manifest never created (an id at or above its `next_keyspace_id`,
/// when known: an open refuses such a write as corruption); true to stop.
fn check_wal(c: &mut Checker<'_>, wal: WalContents, next_keyspace_id: Option<u32>) -> Result<bool> {
    c.report.wals += 1;
    c.report.wal_records += wal.records.len() as u64;
    for r in &wal.records {
        let unknown = r
            .ops
            .iter()
            .find(|o| next_keyspace_id.is_some_and(|n| o.keyspace >= n));
        if let Some(op) = unknown {
            let detail = format!(
                "a write to keyspace {}, which the manifest does not hold",
                op.keyspace
            );
            if c.problem(&wal.path, "WAL record", Some(r.offset), detail) {
                return Ok(true);
            }
        }
    }
    if let Some(t) = &wal.torn_tail {
        c.report.notes.push(format!(
            "{}: torn tail at offset {} ({}); recovery drops it ({}, or damage to the last \
             record, which looks the same)",
            file_name(&wal.path),
            t.offset,
            t.reason,
            crate::log::TORN_WRITE
        ));
    }
    match wal.corruption {
        Some(e) => c.corruption(e, "WAL record"),
        None => Ok(false),
    }
}

/// Checks one file by its kind: an `NNNNNN.sst` table (also any file ending
/// in the table magic), an `NNNNNN.log` WAL, or a `MANIFEST-NNNNNN`.
///
/// # Errors
/// [`Error::InvalidArgument`] if the kind cannot be told; [`Error::Io`] if
/// the file cannot be read.
pub fn verify_file(
    path: &Path,
    all: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<VerifyReport> {
    let size = fs::metadata(path)
        .map_err(|e| Error::io(format!("stat {}", path.display()), e))?
        .len();
    let mut c = Checker::new(all, progress, size);
    let kind = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(filename::parse_file_name);
    match kind {
        Some(FileType::Wal(_)) => {
            let wal = read_wal(path)?;
            check_wal(&mut c, wal, None)?;
        }
        Some(FileType::Manifest(_)) => match read_manifest(path) {
            Ok(m) => {
                c.report.manifest_edits = m.records.len() as u64;
                if let Err(e) = m.replay_all() {
                    c.corruption(e, "manifest")?;
                }
                if let Some(t) = m.torn_tail {
                    c.report.notes.push(format!(
                        "{}: torn final record at offset {} ({})",
                        file_name(path),
                        t.offset,
                        t.reason
                    ));
                }
            }
            Err(e) => {
                c.corruption(e, "manifest record")?;
            }
        },
        Some(FileType::Table(_)) => verify_table_path(&mut c, path)?,
        _ if has_table_magic(path) => verify_table_path(&mut c, path)?,
        _ => {
            return Err(Error::InvalidArgument(format!(
                "{}: not a database directory, SSTable, WAL or manifest (name it NNNNNN.sst, NNNNNN.log or MANIFEST-NNNNNN)",
                path.display()
            )))
        }
    }
    Ok(c.report)
}

fn verify_table_path(c: &mut Checker<'_>, path: &Path) -> Result<()> {
    (c.progress)(0, c.total_bytes);
    match open_table(path) {
        Ok(table) => {
            check_table(c, &table)?;
        }
        Err(e) => {
            let what = locate_in_table(path, &e);
            c.report.tables += 1;
            c.corruption(e, what)?;
        }
    }
    Ok(())
}

/// True if the file at `path` ends in the SSTable magic number
/// (DESIGN.md 12.7); false if it does not, or cannot be read.
pub fn has_table_magic(path: &Path) -> bool {
    (|| -> std::io::Result<bool> {
        let mut f = crate::util::file::open_regular(path)?;
        let len = f.metadata()?.len();
        if len < 8 {
            return Ok(false);
        }
        f.seek(SeekFrom::Start(len - 8))?;
        let mut b = [0u8; 8];
        f.read_exact(&mut b)?;
        Ok(u64::from_le_bytes(b) == TABLE_MAGIC)
    })()
    .unwrap_or(false)
}

#[cfg(test)]
mod tests;
