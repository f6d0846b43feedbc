//! Read-only inspection of a database's files, for tools: everything
//! `kvctl info`, `sst`, `verify`, `manifest`, `wal`, `explain` and `filters`
//! print is decoded and checked here, so that kvctl only formats it.
//!
//! Nothing here writes a file, takes the `LOCK` or changes anything on
//! disk: it reads the immutable files (SSTables, the manifest, WALs)
//! directly, as [`crate::Db::open_read_only`] does, so it works while
//! another process has the database open.
//!
//! That process may delete a file between the moment the manifest names it
//! and the moment it is opened: a flush deletes WALs, a compaction its
//! input tables, a reopen the old manifest. [`DbSnapshot::open`] then sees
//! the manifest change, re-reads it and starts over; a file that keeps
//! vanishing is reported as an [`Error::Io`] of kind `NotFound` whose
//! message names the file and says it vanished. A live file missing while
//! the manifest stays unchanged is [`Error::Corruption`] naming the
//! manifest, as at open.
//!
//! - [`DbSnapshot`]: the manifest, every live table (opened) in the order
//!   a lookup visits them, and every live WAL replayed into a memtable.
//! - [`read_manifest`], [`read_wal`]: the records of one log file.
//! - [`TableInfo`], [`FilterInfo`], [`properties_block`],
//!   [`table_entries`]: one SSTable.
//! - [`explain`]: a traced point lookup.
//! - [`verify_db`], [`verify_file`]: every checksum and invariant.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs::{self, File};
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::filename::{self, FileType};
use crate::filter::{bloom_stats, hash_key, policy_for_name, theoretical_fpr, BloomStats, KeyHash};
use crate::key::{
    compare_internal_keys, user_key_of, ParsedInternalKey, SequenceNumber, ValueType,
};
use crate::log::{LogReader, TornTail};
use crate::memtable::MemTable;
use crate::sstable::format::{BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN, TABLE_MAGIC};
use crate::sstable::{Table, TableGet, TableProperties};
use crate::util::coding::Decoder;
use crate::version::edit::{FileMetaData, VersionEdit};
use crate::version::manifest::{read_current, FORMAT_VERSION};
use crate::version::set::{ReplayedState, TableFile, Version};
use crate::write_batch::{check_lengths, decode_batch};
use crate::LevelStats;
use crate::{Error, Result};

/// How often [`DbSnapshot::open`] (and [`verify_db`]) start over when a
/// file vanishes while the manifest changes under them.
const OPEN_ATTEMPTS: usize = 5;

/// [`FilterInfo::degraded`] flags a filter whose implied false-positive
/// rate exceeds its design rate by more than this factor.
pub const DEGRADED_FACTOR: f64 = 2.0;

// ---------------------------------------------------------------- errors

/// True for an I/O error saying a file does not exist.
fn is_not_found(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == ErrorKind::NotFound)
}

/// The error for a file that vanished while being read.
fn vanished(path: &Path, source: std::io::Error) -> Error {
    Error::io(
        format!(
            "{} vanished while being read (a flush or compaction in another process removed \
             it); run the command again",
            path.display()
        ),
        source,
    )
}

/// The error for a file the manifest lists as live that does not exist.
fn missing_live_file(manifest: &Path, path: &Path) -> Error {
    Error::corruption(
        manifest,
        0,
        format!(
            "{} is live according to the manifest but missing",
            path.file_name().unwrap_or_default().to_string_lossy()
        ),
    )
}

/// The name of `path`'s last component, for messages.
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

// ---------------------------------------------------------------- manifest

/// One record of a manifest: where it is and the edit it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestRecord {
    /// Offset of the record's header in the file.
    pub offset: u64,
    /// Payload bytes (the encoded edit).
    pub payload_len: u64,
    /// The decoded edit.
    pub edit: VersionEdit,
}

/// A manifest file, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestContents {
    /// The file read.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Every complete record in file order; the first is the snapshot.
    pub records: Vec<ManifestRecord>,
    /// Set if the file ends in an incomplete record (ignored, as at open).
    pub torn_tail: Option<TornTail>,
}

impl ManifestContents {
    /// The format version carried by the first edit.
    pub fn format_version(&self) -> u32 {
        self.records
            .first()
            .and_then(|r| r.edit.format_version)
            .unwrap_or(0)
    }

    /// The state the edits replay to: live files per level and counters.
    ///
    /// # Errors
    /// [`Error::Corruption`] naming the manifest if an edit deletes a file
    /// that is not live or names a level beyond the tree.
    pub fn replay(&self) -> Result<ReplayedState> {
        ReplayedState::from_edits(self.records.iter().map(|r| &r.edit)).map_err(|e| match e {
            Error::Corruption { detail, .. } => Error::corruption(&self.path, 0, detail),
            e => e,
        })
    }
}

/// Reads and decodes every edit of the manifest at `path`, with the checks
/// of [`crate::version::manifest::replay`]: a newer format version is
/// [`Error::UnsupportedVersion`], a first edit without a version, a damaged
/// record before the end or an undecodable edit is [`Error::Corruption`]
/// at that record's offset. A torn final record is reported, not an error.
///
/// # Errors
/// As above; [`Error::Io`] if the file cannot be read.
pub fn read_manifest(path: &Path) -> Result<ManifestContents> {
    let mut reader = LogReader::open(path)?;
    let size = fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| Error::io(format!("stat {}", path.display()), e))?;
    let mut records = Vec::new();
    while let Some(rec) = reader.next_record()? {
        if let Some(v) = VersionEdit::peek_format_version(&rec.payload) {
            if v == 0 {
                return Err(Error::corruption(
                    path,
                    rec.offset,
                    "format version 0 is invalid",
                ));
            }
            if v > FORMAT_VERSION {
                return Err(Error::UnsupportedVersion {
                    file: path.to_path_buf(),
                    found: v,
                    supported: FORMAT_VERSION,
                });
            }
        }
        let edit = VersionEdit::decode(&rec.payload, path, rec.offset)?;
        if records.is_empty() && edit.format_version.is_none() {
            return Err(Error::corruption(
                path,
                rec.offset,
                "first manifest record carries no format version",
            ));
        }
        records.push(ManifestRecord {
            offset: rec.offset,
            payload_len: rec.payload.len() as u64,
            edit,
        });
    }
    if records.is_empty() {
        return Err(Error::corruption(
            path,
            0,
            format!(
                "manifest holds no complete record ({})",
                reader
                    .torn_tail()
                    .map_or("empty file", |t| t.reason.as_str())
            ),
        ));
    }
    Ok(ManifestContents {
        path: path.to_path_buf(),
        size,
        records,
        torn_tail: reader.torn_tail().cloned(),
    })
}

/// The manifest `CURRENT` names in `dir`, and its path.
///
/// # Errors
/// [`Error::NotADatabase`] if `dir` has no `CURRENT`; as
/// [`read_current`] otherwise.
pub fn current_manifest(dir: &Path) -> Result<(u64, PathBuf)> {
    let number = read_current(dir)
        .map_err(|e| match e {
            Error::Io { .. } if !dir.is_dir() => Error::NotADatabase {
                path: dir.to_path_buf(),
                detail: "is not a directory".into(),
            },
            e => e,
        })?
        .ok_or_else(|| Error::NotADatabase {
            path: dir.to_path_buf(),
            detail: "holds no database (no CURRENT file)".into(),
        })?;
    Ok((number, filename::manifest_path(dir, number)))
}

/// What identifies the manifest's state: the number `CURRENT` names and
/// that manifest's length. Edits only ever append, and a file is deleted
/// only after the edit that drops it, so an unchanged fingerprint means no
/// live file was removed in between.
fn fingerprint(dir: &Path) -> Option<(u64, u64)> {
    let number = read_current(dir).ok()??;
    let len = fs::metadata(filename::manifest_path(dir, number))
        .ok()?
        .len();
    Some((number, len))
}

// ---------------------------------------------------------------- WAL

/// One update of a WAL record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalOp {
    /// The update's sequence number.
    pub seq: SequenceNumber,
    /// Put or delete.
    pub value_type: ValueType,
    /// The user key.
    pub key: Vec<u8>,
    /// The value (empty for a delete).
    pub value: Vec<u8>,
}

/// One WAL record: a write batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalRecord {
    /// Offset of the record's header in the file.
    pub offset: u64,
    /// Payload bytes: the encoded batch.
    pub batch_len: u64,
    /// Sequence number of the batch's first update.
    pub first_seq: SequenceNumber,
    /// The updates, in order.
    pub ops: Vec<WalOp>,
}

/// A WAL file, decoded up to its end, its torn tail, or the first damage.
#[derive(Debug)]
pub struct WalContents {
    /// The file read.
    pub path: PathBuf,
    /// Its file number, if the name is `NNNNNN.log`.
    pub number: Option<u64>,
    /// Its size in bytes.
    pub size: u64,
    /// The complete records before any torn tail or damage.
    pub records: Vec<WalRecord>,
    /// Set if the log ends in an incomplete record: those bytes were never
    /// acknowledged, and recovery drops them.
    pub torn_tail: Option<TornTail>,
    /// Damage before the end ([`Error::Corruption`] naming the record's
    /// offset): reading stopped there, and opening the database would
    /// fail.
    pub corruption: Option<Error>,
}

impl WalContents {
    /// Updates in all records.
    pub fn ops(&self) -> u64 {
        self.records.iter().map(|r| r.ops.len() as u64).sum()
    }

    /// The largest sequence number of any update, 0 if none.
    pub fn largest_seq(&self) -> u64 {
        self.records
            .iter()
            .filter(|r| !r.ops.is_empty())
            .map(|r| r.first_seq.0 + r.ops.len() as u64 - 1)
            .max()
            .unwrap_or(0)
    }
}

/// The file number of `path` if its name is `NNNNNN.log` / `NNNNNN.sst`.
fn number_of(path: &Path) -> Option<u64> {
    match path
        .file_name()?
        .to_str()
        .and_then(filename::parse_file_name)?
    {
        FileType::Wal(n) | FileType::Table(n) | FileType::Manifest(n) | FileType::Temp(n) => {
            Some(n)
        }
        _ => None,
    }
}

/// Reads every record of the WAL at `path` and decodes its batch. Damage
/// (a bad record, or a payload that is not a batch) ends reading and is
/// returned in [`WalContents::corruption`], with the records before it.
///
/// # Errors
/// [`Error::Io`] if the file cannot be read.
pub fn read_wal(path: &Path) -> Result<WalContents> {
    let mut reader = LogReader::open(path)?;
    let size = fs::metadata(path)
        .map(|m| m.len())
        .map_err(|e| Error::io(format!("stat {}", path.display()), e))?;
    let mut records = Vec::new();
    let mut corruption = None;
    loop {
        let rec = match reader.next_record() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                corruption = Some(e);
                break;
            }
        };
        match decode_batch(&rec.payload) {
            Ok(b) => records.push(WalRecord {
                offset: rec.offset,
                batch_len: rec.payload.len() as u64,
                first_seq: b.first_seq,
                ops: b
                    .ops
                    .iter()
                    .enumerate()
                    .map(|(i, op)| WalOp {
                        seq: SequenceNumber(b.first_seq.0 + i as u64),
                        value_type: op.value_type,
                        key: op.key.to_vec(),
                        value: op.value.to_vec(),
                    })
                    .collect(),
            }),
            Err(d) => {
                corruption = Some(Error::corruption(
                    path,
                    rec.offset,
                    format!("write batch: {d}"),
                ));
                break;
            }
        }
    }
    Ok(WalContents {
        path: path.to_path_buf(),
        number: number_of(path),
        size,
        records,
        torn_tail: reader.torn_tail().cloned(),
        corruption,
    })
}

/// The WAL files in `dir` numbered at least `log_number` (the live ones),
/// in number order.
fn live_wal_numbers(dir: &Path, log_number: u64) -> Result<Vec<u64>> {
    let mut wals: Vec<u64> = list_dir(dir)?
        .into_iter()
        .filter_map(|(t, _)| match t {
            FileType::Wal(n) if n >= log_number => Some(n),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    Ok(wals)
}

/// The siftdb files in `dir`, classified.
fn list_dir(dir: &Path) -> Result<Vec<(FileType, PathBuf)>> {
    let mut out = Vec::new();
    let entries = fs::read_dir(dir).map_err(|e| Error::io(format!("list {}", dir.display()), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(format!("list {}", dir.display()), e))?;
        if let Some(t) = entry
            .file_name()
            .to_str()
            .and_then(filename::parse_file_name)
        {
            out.push((t, entry.path()));
        }
    }
    Ok(out)
}

/// The live WALs of a database as the manifest and directory show them.
///
/// # Errors
/// As [`current_manifest`], [`read_manifest`] and [`read_wal`].
pub fn read_live_wals(dir: &Path) -> Result<Vec<WalContents>> {
    let (_, manifest) = current_manifest(dir)?;
    let load = || -> std::result::Result<Vec<WalContents>, LoadError> {
        let (_, manifest) = current_manifest(dir)?;
        let m = read_manifest(&manifest).map_err(|e| missing_or(&manifest, e))?;
        let state = m.replay()?;
        let mut wals = Vec::new();
        for n in live_wal_numbers(dir, state.log_number)? {
            let path = filename::wal_path(dir, n);
            wals.push(read_wal(&path).map_err(|e| missing_or(&path, e))?);
        }
        Ok(wals)
    };
    with_retries(dir, load, |p| missing_live_file(&manifest, p))
}

// ---------------------------------------------------------------- snapshot

/// A live WAL, replayed into the memtable it stands for.
#[derive(Debug)]
pub struct LiveWal {
    /// WAL file number.
    pub number: u64,
    /// Its path.
    pub path: PathBuf,
    /// Size in bytes.
    pub size: u64,
    /// Complete records.
    pub records: u64,
    /// Updates in them.
    pub ops: u64,
    /// Where an incomplete final record starts, if any.
    pub torn_tail: Option<TornTail>,
    /// The updates, as the memtable of this WAL held them.
    pub mem: MemTable,
}

/// A consistent, read-only view of a database: the manifest `CURRENT`
/// names, every live SSTable opened (memory-mapped, so a later deletion
/// does not disturb it) and every live WAL replayed into memory.
#[derive(Debug)]
pub struct DbSnapshot {
    /// The database directory.
    pub dir: PathBuf,
    /// The manifest's file number.
    pub manifest_number: u64,
    /// The manifest, decoded.
    pub manifest: ManifestContents,
    /// What the manifest replays to (live files' metadata, counters).
    pub state: ReplayedState,
    /// The live tables, per level, in the order a lookup visits them:
    /// level 0 newest first, deeper levels by smallest key (the engine's
    /// own [`Version`] ordering).
    pub version: Version,
    /// Live WALs (numbered at least the manifest's log number), oldest
    /// first.
    pub wals: Vec<LiveWal>,
    /// The sequence number reads see: the largest of the manifest's, the
    /// tables' and the WALs' (as [`crate::Db::open_read_only`] computes it).
    pub last_sequence: SequenceNumber,
}

/// Why loading a snapshot stopped.
enum LoadError {
    /// A file named by the manifest or the listing does not exist.
    Missing(PathBuf, std::io::Error),
    Other(Error),
}

impl From<Error> for LoadError {
    fn from(e: Error) -> Self {
        LoadError::Other(e)
    }
}

/// Runs `f`, which reads files the manifest names, again while a file it
/// needs vanishes and the manifest changes meanwhile (another process
/// flushed, compacted or reopened). `missing(path)` is the error for a
/// file that is missing although the manifest did not change.
fn with_retries<T>(
    dir: &Path,
    mut f: impl FnMut() -> std::result::Result<T, LoadError>,
    missing: impl Fn(&Path) -> Error,
) -> Result<T> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let before = fingerprint(dir);
        match f() {
            Ok(v) => return Ok(v),
            Err(LoadError::Other(e)) => return Err(e),
            Err(LoadError::Missing(path, source)) => {
                if before.is_some() && fingerprint(dir) == before {
                    return Err(missing(&path));
                }
                if attempt >= OPEN_ATTEMPTS {
                    return Err(vanished(&path, source));
                }
            }
        }
    }
}

/// Maps a `NotFound` I/O error on `path` to [`LoadError::Missing`].
fn missing_or(path: &Path, e: Error) -> LoadError {
    match e {
        Error::Io { source, .. } if source.kind() == ErrorKind::NotFound => {
            LoadError::Missing(path.to_path_buf(), source)
        }
        e => LoadError::Other(e),
    }
}

impl DbSnapshot {
    /// Reads the database in `dir`: `CURRENT`, the manifest, every live
    /// table and every live WAL, retrying while another process changes
    /// the file set under it (see the module docs).
    ///
    /// # Errors
    /// [`Error::NotADatabase`] without `CURRENT`; [`Error::Corruption`] for
    /// damaged files (a torn WAL or manifest tail is not damage) or a live
    /// file missing; [`Error::Io`] (kind `NotFound`) for a file that kept
    /// vanishing; [`Error::UnsupportedVersion`] for a newer format.
    pub fn open(dir: &Path) -> Result<DbSnapshot> {
        current_manifest(dir)?;
        let manifest = |p: &Path| match current_manifest(dir) {
            Ok((_, m)) => missing_live_file(&m, p),
            Err(e) => e,
        };
        with_retries(dir, || DbSnapshot::load(dir), manifest)
    }

    fn load(dir: &Path) -> std::result::Result<DbSnapshot, LoadError> {
        let (manifest_number, manifest_path) = current_manifest(dir)?;
        let manifest = read_manifest(&manifest_path).map_err(|e| missing_or(&manifest_path, e))?;
        let state = manifest.replay()?;
        let mut all = VersionEdit::default();
        let mut opened = BTreeMap::new();
        let mut last_seq = state.last_sequence;
        for (level, files) in state.files.iter().enumerate() {
            for meta in files.values() {
                let path = filename::table_path(dir, meta.number);
                let table = Table::open(&path, meta.number).map_err(|e| missing_or(&path, e))?;
                last_seq = last_seq.max(table.properties().largest_seq.0);
                opened.insert(meta.number, Arc::new(table));
                all.new_files.push((level as u32, meta.clone()));
            }
        }
        let version = Version::empty().apply(&all, &mut opened)?;
        // The WAL of the oldest unflushed memtable must exist (as at open).
        if state.log_number > 0 {
            let p = filename::wal_path(dir, state.log_number);
            if let Err(e) = fs::metadata(&p) {
                if e.kind() == ErrorKind::NotFound {
                    return Err(LoadError::Missing(p, e));
                }
            }
        }
        let mut wals = Vec::new();
        for n in live_wal_numbers(dir, state.log_number)? {
            let path = filename::wal_path(dir, n);
            let contents = read_wal(&path).map_err(|e| missing_or(&path, e))?;
            if let Some(e) = contents.corruption {
                return Err(e.into());
            }
            let mem = MemTable::new(n);
            for op in contents.records.iter().flat_map(|r| &r.ops) {
                mem.insert(&op.key, op.seq, op.value_type, &op.value);
                last_seq = last_seq.max(op.seq.0);
            }
            wals.push(LiveWal {
                number: n,
                path,
                size: contents.size,
                records: contents.records.len() as u64,
                ops: mem.len() as u64,
                torn_tail: contents.torn_tail,
                mem,
            });
        }
        Ok(DbSnapshot {
            dir: dir.to_path_buf(),
            manifest_number,
            manifest,
            state,
            version,
            wals,
            last_sequence: SequenceNumber(last_seq),
        })
    }

    /// Every live table, level 0 first, in lookup order.
    pub fn files(&self) -> impl Iterator<Item = (usize, &Arc<TableFile>)> {
        self.version.files()
    }

    /// One [`TableInfo`] per live table, in lookup order.
    pub fn tables(&self) -> Vec<TableInfo> {
        self.files()
            .map(|(level, f)| TableInfo::new(Some(level), &f.table))
            .collect()
    }
}

// ---------------------------------------------------------------- tables

/// Opens a lone table file; its number is taken from an `NNNNNN.sst` name
/// (0 otherwise).
///
/// # Errors
/// As [`Table::open`].
pub fn open_table(path: &Path) -> Result<Table> {
    Table::open(path, number_of(path).unwrap_or(0))
}

/// What a table's filter block and properties say about its filter.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterInfo {
    /// The policy name in the properties; empty if the table has no filter.
    pub policy: String,
    /// True if this build knows the policy (lookups consult the filter).
    pub known_policy: bool,
    /// Bytes of the filter block (0 without one): its memory cost.
    pub block_bytes: u64,
    /// Keys in the filter: the table's distinct user keys.
    pub keys: u64,
    /// Bits per key the writer was configured with.
    pub configured_bits_per_key: u32,
    /// The decoded Bloom filter (`m`, `k`, bits set), if it is one.
    pub bloom: Option<BloomStats>,
}

impl FilterInfo {
    /// The filter of `table`.
    pub fn of(table: &Table) -> FilterInfo {
        let p = table.properties();
        let bytes = table.filter_bytes();
        let known = table.has_filter();
        FilterInfo {
            policy: p.filter_policy.clone(),
            known_policy: known,
            block_bytes: bytes.map_or(0, |b| b.len() as u64),
            keys: p.num_distinct_keys,
            configured_bits_per_key: p.filter_bits_per_key,
            bloom: if known {
                bytes.and_then(bloom_stats)
            } else {
                None
            },
        }
    }

    /// Bits of the filter per key, `m / n` (0 without a Bloom filter).
    pub fn bits_per_key(&self) -> f64 {
        match &self.bloom {
            Some(b) if self.keys > 0 => b.bits as f64 / self.keys as f64,
            _ => 0.0,
        }
    }

    /// Fraction of the `m` bits set.
    pub fn fraction_set(&self) -> Option<f64> {
        self.bloom
            .as_ref()
            .filter(|b| b.bits > 0)
            .map(|b| b.bits_set as f64 / b.bits as f64)
    }

    /// The false-positive rate the bits actually set imply, `(set / m)^k`:
    /// an absent key passes only if all `k` probed bits are set.
    pub fn implied_fpr(&self) -> Option<f64> {
        let k = self.bloom.as_ref()?.num_hashes;
        Some(self.fraction_set()?.powi(k as i32))
    }

    /// The false-positive rate the filter was designed for:
    /// [`theoretical_fpr`]`(m / n, k)`.
    pub fn design_fpr(&self) -> Option<f64> {
        let b = self.bloom.as_ref()?;
        Some(theoretical_fpr(self.bits_per_key(), b.num_hashes))
    }

    /// True if the implied rate is more than [`DEGRADED_FACTOR`] times the
    /// design rate (more bits set than `n` keys should set: the filter was
    /// built over more keys than the table holds, or its bits are damaged).
    pub fn degraded(&self) -> bool {
        match (self.implied_fpr(), self.design_fpr()) {
            (Some(i), Some(d)) => i > DEGRADED_FACTOR * d,
            _ => false,
        }
    }
}

/// One table's summary, for listings.
#[derive(Debug, Clone)]
pub struct TableInfo {
    /// Level in the tree (`None` for a lone file).
    pub level: Option<usize>,
    /// File number.
    pub number: u64,
    /// Path.
    pub path: PathBuf,
    /// Size on disk in bytes.
    pub file_size: u64,
    /// The properties block.
    pub properties: TableProperties,
    /// Data blocks (index entries).
    pub data_blocks: u64,
    /// Bytes of data blocks, trailers excluded.
    pub data_bytes: u64,
    /// The filter.
    pub filter: FilterInfo,
}

impl TableInfo {
    /// Summarises `table`.
    pub fn new(level: Option<usize>, table: &Table) -> TableInfo {
        TableInfo {
            level,
            number: table.file_number(),
            path: table.path().to_path_buf(),
            file_size: table.file_size(),
            properties: table.properties().clone(),
            data_blocks: table.index().len() as u64,
            data_bytes: table.index().iter().map(|e| e.handle.size).sum(),
            filter: FilterInfo::of(table),
        }
    }
}

/// A value in the properties block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PropertyValue {
    /// A varint.
    Number(u64),
    /// Raw bytes (user keys, the policy name, unknown properties).
    Bytes(Vec<u8>),
}

/// The properties whose values are varints (DESIGN.md 12.5); the others
/// (the policy name, the smallest and largest user keys) and any unknown
/// name are shown as bytes.
const NUMBER_PROPERTIES: [&str; 12] = [
    "siftdb.filter.bits",
    "siftdb.filter.bits_per_key",
    "siftdb.filter.num_hashes",
    "siftdb.format_version",
    "siftdb.largest_seq",
    "siftdb.num_data_blocks",
    "siftdb.num_distinct_keys",
    "siftdb.num_entries",
    "siftdb.num_tombstones",
    "siftdb.raw_key_bytes",
    "siftdb.raw_value_bytes",
    "siftdb.smallest_seq",
];

/// Every entry of the properties block as stored, in order: names and
/// values, unknown names included (shown as bytes).
///
/// # Errors
/// [`Error::Corruption`] if the block does not decode.
pub fn properties_block(table: &Table) -> Result<Vec<(String, PropertyValue)>> {
    let handle = table.footer().properties;
    let block = table.read_block(handle)?;
    let mut out = Vec::new();
    for entry in block.iter() {
        let (name, value) = entry?;
        let name = String::from_utf8_lossy(&name).into_owned();
        let mut d = Decoder::new(value);
        let v = match d.varint() {
            Ok(n) if d.is_empty() && NUMBER_PROPERTIES.contains(&name.as_str()) => {
                PropertyValue::Number(n)
            }
            _ => PropertyValue::Bytes(value.to_vec()),
        };
        out.push((name, v));
    }
    Ok(out)
}

/// One internal entry of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableEntry {
    /// Index of the data block holding it.
    pub block: usize,
    /// The user key.
    pub user_key: Vec<u8>,
    /// Sequence number.
    pub seq: SequenceNumber,
    /// Put or delete.
    pub value_type: ValueType,
    /// The value (empty for a tombstone).
    pub value: Vec<u8>,
}

/// Iterator over a table's entries, from [`table_entries`].
#[derive(Debug)]
pub struct TableEntries<'t> {
    table: &'t Table,
    from: Option<Vec<u8>>,
    next_block: usize,
    current: Option<(usize, crate::sstable::BlockIter<'t>)>,
    done: bool,
}

/// Every internal entry of `table` (all versions and tombstones) in key
/// order, starting at the first whose user key is `>= from`. Blocks are
/// read (and checksummed) only as the iteration reaches them.
pub fn table_entries<'t>(table: &'t Table, from: Option<&[u8]>) -> TableEntries<'t> {
    let next_block = match from {
        Some(k) => table
            .index()
            .partition_point(|e| user_key_of(&e.last_key) < k),
        None => 0,
    };
    TableEntries {
        table,
        from: from.map(<[u8]>::to_vec),
        next_block,
        current: None,
        done: false,
    }
}

impl Iterator for TableEntries<'_> {
    type Item = Result<TableEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            if let Some((block, iter)) = &mut self.current {
                match iter.next() {
                    Some(Ok((key, value))) => {
                        let Some(p) = ParsedInternalKey::parse(&key) else {
                            self.done = true;
                            let at = self.table.index()[*block].handle.offset;
                            return Some(Err(Error::corruption(
                                self.table.path(),
                                at,
                                "data block holds a malformed internal key",
                            )));
                        };
                        if self.from.as_deref().is_some_and(|f| p.user_key < f) {
                            continue;
                        }
                        return Some(Ok(TableEntry {
                            block: *block,
                            user_key: p.user_key.to_vec(),
                            seq: p.seq,
                            value_type: p.value_type,
                            value: value.to_vec(),
                        }));
                    }
                    Some(Err(e)) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                    None => self.current = None,
                }
            }
            let Some(entry) = self.table.index().get(self.next_block) else {
                self.done = true;
                break;
            };
            match self.table.read_block(entry.handle) {
                Ok(b) => self.current = Some((self.next_block, b.iter())),
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
            self.next_block += 1;
        }
        None
    }
}

// ---------------------------------------------------------------- levels

/// One summary per level of the tree (empty levels included), then the
/// total (whose `level` is the number of levels).
pub fn level_summaries(tables: &[TableInfo], levels: usize) -> (Vec<LevelStats>, LevelStats) {
    let mut out: Vec<LevelStats> = (0..levels)
        .map(|level| LevelStats {
            level,
            ..Default::default()
        })
        .collect();
    let mut total = LevelStats {
        level: levels,
        ..Default::default()
    };
    for t in tables {
        let add =
            |l: &mut LevelStats| l.add_table(t.file_size, &t.properties, t.filter.block_bytes);
        if let Some(l) = t.level.and_then(|l| out.get_mut(l)) {
            add(l);
        }
        add(&mut total);
    }
    (out, total)
}

/// A filter configuration found in the tables' properties. Options are not
/// stored in format version 1; this is what the files reveal about the
/// ones they were written with.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FilterSetting {
    /// Policy name, empty for tables without a filter.
    pub policy: String,
    /// Configured bits per key.
    pub bits_per_key: u32,
    /// Probes per key, `k`.
    pub num_hashes: u32,
    /// Tables written with it.
    pub files: u64,
}

/// The distinct filter configurations of `tables`, most common first.
pub fn filter_settings(tables: &[TableInfo]) -> Vec<FilterSetting> {
    let mut m: BTreeMap<(String, u32, u32), u64> = BTreeMap::new();
    for t in tables {
        let p = &t.properties;
        *m.entry((
            p.filter_policy.clone(),
            p.filter_bits_per_key,
            p.filter_num_hashes,
        ))
        .or_default() += 1;
    }
    let mut v: Vec<FilterSetting> = m
        .into_iter()
        .map(
            |((policy, bits_per_key, num_hashes), files)| FilterSetting {
                policy,
                bits_per_key,
                num_hashes,
                files,
            },
        )
        .collect();
    v.sort_by(|a, b| b.files.cmp(&a.files).then_with(|| a.cmp(b)));
    v
}

// ---------------------------------------------------------------- explain

/// A version found by a lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundEntry {
    /// Its sequence number.
    pub seq: SequenceNumber,
    /// Put or delete.
    pub value_type: ValueType,
    /// The value (empty for a tombstone).
    pub value: Vec<u8>,
}

/// What a lookup step consulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExplainSource {
    /// The memtable replayed from one WAL.
    Memtable {
        /// The WAL's file number.
        wal: u64,
        /// Entries in it.
        entries: u64,
    },
    /// One SSTable.
    Table {
        /// Its level.
        level: usize,
        /// Its file number.
        number: u64,
        /// Its position among the level's files (lookup order).
        position: usize,
        /// Files in the level.
        level_files: usize,
        /// Smallest user key in the table.
        smallest: Vec<u8>,
        /// Largest user key in the table.
        largest: Vec<u8>,
    },
    /// A level ≥ 1 with no candidate: the key sorts after every file's
    /// largest key (the engine counts this as a key-range skip).
    Level {
        /// The level.
        level: usize,
        /// Files in it.
        files: usize,
        /// The largest user key of its last file.
        largest: Vec<u8>,
    },
}

/// What one step found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExplainOutcome {
    /// The memtable holds no visible version of the key.
    NotInMemtable,
    /// The key is outside the table's `[smallest, largest]`: nothing read.
    OutOfRange,
    /// The filter proved the key absent: nothing read.
    FilterNegative,
    /// No file of the level may hold the key.
    PastLevel,
    /// The answer was found here (memtable or table).
    Found {
        /// For a table: the index entry and data block read.
        block: Option<(usize, BlockHandle)>,
        /// The version found.
        entry: FoundEntry,
    },
    /// The table's filter (if any) said "maybe" and its index was searched,
    /// but it holds no visible version: a filter false positive when
    /// `filtered`.
    Searched {
        /// True if the filter was consulted (and said "maybe").
        filtered: bool,
        /// The index entry and data block read, or `None` if the key sorts
        /// after the table's last entry (no block read).
        block: Option<(usize, BlockHandle)>,
    },
}

/// One step of a traced lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExplainStep {
    /// What was consulted.
    pub source: ExplainSource,
    /// What it said.
    pub outcome: ExplainOutcome,
}

/// The answer of a point lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A value, as [`crate::Db::get`] returns it.
    Value(Vec<u8>),
    /// The newest version is a tombstone: `get` returns `None`.
    Tombstone,
    /// No source holds the key: `get` returns `None`.
    Absent,
}

impl Verdict {
    /// What [`crate::Db::get`] returns for the same key.
    pub fn as_get(&self) -> Option<&[u8]> {
        match self {
            Verdict::Value(v) => Some(v),
            _ => None,
        }
    }
}

/// A traced point lookup, from [`explain`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explain {
    /// The key looked up.
    pub key: Vec<u8>,
    /// The sequence number read at.
    pub sequence: SequenceNumber,
    /// Each source consulted, in order; the last one answered unless the
    /// verdict is [`Verdict::Absent`].
    pub steps: Vec<ExplainStep>,
    /// The answer.
    pub verdict: Verdict,
}

/// Traces the point lookup of `key` in `snap`, visiting sources in the
/// engine's order (DESIGN.md section 3): the memtables (one per live WAL,
/// newest first), the level-0 tables newest first, then in each deeper
/// level the one file whose largest key is `>=` the key (binary search),
/// each table through [`Table::get`] (key range, filter, index, one data
/// block). The first version found answers.
///
/// # Errors
/// [`Error::InvalidArgument`] for a key over 65,535 bytes;
/// [`Error::Corruption`] if a data block read fails.
pub fn explain(snap: &DbSnapshot, key: &[u8]) -> Result<Explain> {
    check_lengths(key.len(), 0)?;
    let seq = snap.last_sequence;
    let mut steps = Vec::new();
    let finish = |steps: Vec<ExplainStep>| {
        let verdict = match steps.last().map(|s| &s.outcome) {
            Some(ExplainOutcome::Found { entry, .. }) => match entry.value_type {
                ValueType::Value => Verdict::Value(entry.value.clone()),
                ValueType::Deletion => Verdict::Tombstone,
            },
            _ => Verdict::Absent,
        };
        Explain {
            key: key.to_vec(),
            sequence: seq,
            steps,
            verdict,
        }
    };
    for wal in snap.wals.iter().rev() {
        let source = ExplainSource::Memtable {
            wal: wal.number,
            entries: wal.mem.len() as u64,
        };
        match wal.mem.get(key, seq) {
            Some((s, value_type, value)) => {
                steps.push(ExplainStep {
                    source,
                    outcome: ExplainOutcome::Found {
                        block: None,
                        entry: FoundEntry {
                            seq: s,
                            value_type,
                            value,
                        },
                    },
                });
                return Ok(finish(steps));
            }
            None => steps.push(ExplainStep {
                source,
                outcome: ExplainOutcome::NotInMemtable,
            }),
        }
    }
    let hash = hash_key(key);
    for (level, files) in snap.version.levels.iter().enumerate() {
        let candidates: Vec<usize> = if level == 0 {
            (0..files.len()).collect()
        } else {
            let i = files.partition_point(|f| f.largest_user_key() < key);
            if i == files.len() {
                if let Some(last) = files.last() {
                    steps.push(ExplainStep {
                        source: ExplainSource::Level {
                            level,
                            files: files.len(),
                            largest: last.largest_user_key().to_vec(),
                        },
                        outcome: ExplainOutcome::PastLevel,
                    });
                }
                continue;
            }
            vec![i]
        };
        for i in candidates {
            let step = probe(&files[i], level, i, files.len(), key, seq, hash)?;
            let found = matches!(step.outcome, ExplainOutcome::Found { .. });
            steps.push(step);
            if found {
                return Ok(finish(steps));
            }
        }
    }
    Ok(finish(steps))
}

/// One table's step of [`explain`].
fn probe(
    f: &TableFile,
    level: usize,
    position: usize,
    level_files: usize,
    key: &[u8],
    seq: SequenceNumber,
    hash: KeyHash,
) -> Result<ExplainStep> {
    let table = &f.table;
    let p = table.properties();
    let source = ExplainSource::Table {
        level,
        number: f.meta.number,
        position,
        level_files,
        smallest: p.smallest_user_key.clone(),
        largest: p.largest_user_key.clone(),
    };
    let with_index = |h: BlockHandle| {
        let i = table
            .index()
            .iter()
            .position(|e| e.handle == h)
            .unwrap_or(0);
        (i, h)
    };
    let outcome = match table.get(key, seq, hash)? {
        TableGet::OutOfRange => ExplainOutcome::OutOfRange,
        TableGet::FilterNegative => ExplainOutcome::FilterNegative,
        TableGet::Searched { block, entry } => match entry {
            Some((s, value_type, value)) => ExplainOutcome::Found {
                block: block.map(with_index),
                entry: FoundEntry {
                    seq: s,
                    value_type,
                    value,
                },
            },
            None => ExplainOutcome::Searched {
                filtered: table.has_filter(),
                block: block.map(with_index),
            },
        },
    };
    Ok(ExplainStep { source, outcome })
}

// ---------------------------------------------------------------- verify

/// One problem [`verify_db`] or [`verify_file`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The damaged file (for manifest-level problems, the manifest).
    pub file: PathBuf,
    /// Which part: `"data block 3"`, `"index block"`, `"filter block"`,
    /// `"properties block"`, `"footer"`, `"manifest record"`, ...
    pub what: String,
    /// Byte offset of the bad block, record or field, when known.
    pub offset: Option<u64>,
    /// What is wrong.
    pub detail: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.what)?;
        if let Some(o) = self.offset {
            write!(f, " at offset {o}")?;
        }
        write!(f, ": {}", self.detail)
    }
}

/// What a verification checked and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Problems, in the order found. Empty means the files are sound.
    pub problems: Vec<Problem>,
    /// Observations that are not damage (a torn tail, an unknown filter
    /// policy, files the manifest does not reference).
    pub notes: Vec<String>,
    /// Manifest edits replayed.
    pub manifest_edits: u64,
    /// Tables checked.
    pub tables: u64,
    /// Bytes of tables checked.
    pub table_bytes: u64,
    /// Data blocks read.
    pub data_blocks: u64,
    /// Entries decoded.
    pub entries: u64,
    /// Keys probed in filters.
    pub filter_probes: u64,
    /// WALs read.
    pub wals: u64,
    /// WAL records decoded.
    pub wal_records: u64,
}

impl VerifyReport {
    /// True when nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Collects problems; stops the checks after the first unless `all`.
struct Checker<'p> {
    report: VerifyReport,
    all: bool,
    progress: &'p mut dyn FnMut(u64, u64),
    done_bytes: u64,
    total_bytes: u64,
}

impl Checker<'_> {
    /// Records a problem; true if checking must stop.
    fn problem(
        &mut self,
        file: &Path,
        what: impl Into<String>,
        offset: Option<u64>,
        detail: impl Into<String>,
    ) -> bool {
        self.report.problems.push(Problem {
            file: file.to_path_buf(),
            what: what.into(),
            offset,
            detail: detail.into(),
        });
        self.stop()
    }

    /// Records a [`Error::Corruption`] as a problem in `what`; returns any
    /// other error.
    fn corruption(&mut self, e: Error, what: impl Into<String>) -> Result<bool> {
        match e {
            Error::Corruption {
                file,
                offset,
                detail,
            } => Ok(self.problem(&file, what, Some(offset), detail)),
            e => Err(e),
        }
    }

    fn stop(&self) -> bool {
        !self.all && !self.report.problems.is_empty()
    }

    fn advance(&mut self, bytes: u64) {
        self.done_bytes += bytes;
        (self.progress)(self.done_bytes, self.total_bytes);
    }
}

/// Checks the database in `dir`: `CURRENT`, that the manifest replays, that
/// every live table exists and passes [`verify_file`]'s checks and matches
/// its manifest entry (size, smallest and largest internal keys, entries,
/// tombstones), that levels ≥ 1 do not overlap, and that every live WAL
/// reads to its end (a torn tail is a note). Stops at the first problem
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
    current_manifest(dir)?;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let before = fingerprint(dir);
        match verify_db_once(dir, all, progress) {
            Err(LoadError::Missing(path, source)) => {
                // A file the manifest listed is gone: a corruption only if the
                // manifest is unchanged; otherwise another process compacted.
                if before.is_some() && fingerprint(dir) == before {
                    let (_, manifest) = current_manifest(dir)?;
                    let mut c = Checker {
                        report: VerifyReport::default(),
                        all,
                        progress,
                        done_bytes: 0,
                        total_bytes: 0,
                    };
                    let e = missing_live_file(&manifest, &path);
                    c.corruption(e, "manifest")?;
                    return Ok(c.report);
                }
                if attempt >= OPEN_ATTEMPTS {
                    return Err(vanished(&path, source));
                }
            }
            Err(LoadError::Other(e)) => return Err(e),
            Ok(r) => return Ok(r),
        }
    }
}

fn verify_db_once(
    dir: &Path,
    all: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> std::result::Result<VerifyReport, LoadError> {
    let mut c = Checker {
        report: VerifyReport::default(),
        all,
        progress,
        done_bytes: 0,
        total_bytes: 0,
    };
    let (_, manifest_path) = match current_manifest(dir) {
        Ok(m) => m,
        Err(e @ Error::Corruption { .. }) => {
            c.corruption(e, "CURRENT")?;
            return Ok(c.report);
        }
        Err(e) => return Err(e.into()),
    };
    let manifest = match read_manifest(&manifest_path) {
        Ok(m) => m,
        Err(e) => {
            let e = match missing_or(&manifest_path, e) {
                LoadError::Other(e) => e,
                missing => return Err(missing),
            };
            c.corruption(e, "manifest record")?;
            return Ok(c.report);
        }
    };
    c.report.manifest_edits = manifest.records.len() as u64;
    if let Some(t) = &manifest.torn_tail {
        c.report.notes.push(format!(
            "{}: torn final record at offset {} ({}); ignored, as at open",
            file_name(&manifest_path),
            t.offset,
            t.reason
        ));
    }
    let state = match manifest.replay() {
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
    for (level, files) in state.files.iter().enumerate() {
        for meta in files.values() {
            let path = filename::table_path(dir, meta.number);
            let opened = match Table::open(&path, meta.number) {
                Err(e) if is_not_found(&e) => return Err(missing_or(&path, e)),
                r => r,
            };
            c.total_bytes += opened.as_ref().map_or(0, |t| t.file_size());
            tables.push((level, meta, path, opened));
        }
    }
    let on_disk = list_dir(dir)?;
    if state.log_number > 0 {
        let p = filename::wal_path(dir, state.log_number);
        if let Err(e) = fs::metadata(&p) {
            if e.kind() == ErrorKind::NotFound {
                return Err(LoadError::Missing(p, e));
            }
        }
    }
    let mut wals = Vec::new();
    for n in live_wal_numbers(dir, state.log_number)? {
        let path = filename::wal_path(dir, n);
        wals.push(read_wal(&path).map_err(|e| missing_or(&path, e))?);
    }
    (c.progress)(0, c.total_bytes);

    let live_numbers: BTreeSet<u64> = tables.iter().map(|(_, m, _, _)| m.number).collect();
    for (level, meta, path, opened) in tables {
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
            if check_manifest_entry(&mut c, &manifest_path, level, meta, &table, &contents) {
                return Ok(c.report);
            }
        }
    }

    // Levels >= 1 hold disjoint key ranges.
    for (level, files) in state.files.iter().enumerate().skip(1) {
        let mut sorted: Vec<&FileMetaData> = files.values().collect();
        sorted.sort_by(|a, b| a.smallest.cmp(&b.smallest));
        for pair in sorted.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if a.largest.user_key() >= b.smallest.user_key() {
                let detail = format!(
                    "{:06}.sst [{} .. {}] overlaps {:06}.sst [{} .. {}]",
                    a.number,
                    crate::escape::escape_bytes(a.smallest.user_key()),
                    crate::escape::escape_bytes(a.largest.user_key()),
                    b.number,
                    crate::escape::escape_bytes(b.smallest.user_key()),
                    crate::escape::escape_bytes(b.largest.user_key()),
                );
                if c.problem(&manifest_path, format!("level {level}"), None, detail) {
                    return Ok(c.report);
                }
            }
        }
    }

    // WALs.
    for wal in wals {
        if check_wal(&mut c, wal)? {
            return Ok(c.report);
        }
    }

    // Files the manifest does not reference (not damage).
    let mut orphans: Vec<(FileType, PathBuf)> = on_disk
        .into_iter()
        .filter(|(t, _)| match *t {
            FileType::Table(n) => !live_numbers.contains(&n),
            FileType::Wal(n) => n < state.log_number,
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
        let mut f = File::open(path)?;
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
                crate::escape::escape_bytes(p.filter_policy.as_bytes())
            ));
            None
        }
        (None, _) => None,
    };
    let mut misses = 0u64;
    let mut first_miss: Option<Vec<u8>> = None;
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
        let block = match table.read_block(h) {
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
                let d = format!(
                    "malformed internal key {}",
                    crate::escape::escape_bytes(&key)
                );
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
    // The metadata blocks follow the data blocks.
    let meta_start = if footer.filter.is_null() {
        footer.properties.offset
    } else {
        footer.filter.offset
    };
    if complete && expected_offset != meta_start {
        let d = format!(
            "data blocks end at {expected_offset} but the next block starts at {meta_start}"
        );
        if c.problem(path, "index block", Some(footer.index.offset), d) {
            return Ok(None);
        }
    }
    c.advance(table.file_size().saturating_sub(done_bytes));

    // Filter: no false negatives, and its shape matches the properties.
    if let Some((bytes, _)) = &filter {
        let at = Some(footer.filter.offset);
        if let Some(s) = bloom_stats(bytes) {
            if s.bits != p.filter_bits || s.num_hashes != p.filter_num_hashes {
                let d = format!(
                    "filter has m = {}, k = {}; the properties say m = {}, k = {}",
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
                crate::escape::escape_bytes(key)
            );
            if c.problem(path, "filter block", at, d) {
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
                crate::escape::escape_bytes(says),
                crate::escape::escape_bytes(holds)
            );
            if c.problem(path, "properties block", at, d) {
                return Ok(None);
            }
        }
    }
    Ok(Some(t))
}

/// Checks a table's manifest entry against the table; true to stop.
fn check_manifest_entry(
    c: &mut Checker<'_>,
    manifest: &Path,
    level: usize,
    meta: &FileMetaData,
    table: &Table,
    t: &Contents,
) -> bool {
    let what = format!("manifest entry of {:06}.sst (level {level})", meta.number);
    let mut diffs = Vec::new();
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

/// Records a WAL's damage and torn tail; true to stop.
fn check_wal(c: &mut Checker<'_>, wal: WalContents) -> Result<bool> {
    c.report.wals += 1;
    c.report.wal_records += wal.records.len() as u64;
    if let Some(t) = &wal.torn_tail {
        c.report.notes.push(format!(
            "{}: torn tail at offset {} ({}); recovery drops it (a write cut off by a crash, or damage to the last record, which looks the same)",
            file_name(&wal.path),
            t.offset,
            t.reason
        ));
    }
    match wal.corruption {
        Some(e) => c.corruption(e, "WAL record"),
        None => Ok(false),
    }
}

/// `"key"@seq type` for an encoded internal key.
fn show_internal(key: &[u8]) -> String {
    match ParsedInternalKey::parse(key) {
        Some(p) => format!(
            "\"{}\"@{} {}",
            crate::escape::escape_bytes(p.user_key),
            p.seq,
            p.value_type.name()
        ),
        None => format!("\"{}\" (malformed)", crate::escape::escape_bytes(key)),
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
    let mut c = Checker {
        report: VerifyReport::default(),
        all,
        progress,
        done_bytes: 0,
        total_bytes: size,
    };
    let kind = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(filename::parse_file_name);
    match kind {
        Some(FileType::Wal(_)) => {
            let wal = read_wal(path)?;
            check_wal(&mut c, wal)?;
        }
        Some(FileType::Manifest(_)) => match read_manifest(path) {
            Ok(m) => {
                c.report.manifest_edits = m.records.len() as u64;
                if let Err(e) = m.replay() {
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

/// True if the file ends in the SSTable magic number.
fn has_table_magic(path: &Path) -> bool {
    (|| -> std::io::Result<bool> {
        let mut f = File::open(path)?;
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
mod tests {
    use super::*;
    use crate::filter::{FilterPolicy, BLOOM_POLICY_NAME};
    use crate::sstable::{TableBuilder, TableOptions};
    use crate::{CompactionStyle, Db, InternalKey, Options};

    fn options() -> Options {
        Options {
            write_buffer_size: 1 << 20,
            block_size: 256,
            compaction_style: CompactionStyle::None,
            ..Options::default()
        }
    }

    fn key(i: u32) -> Vec<u8> {
        format!("key{i:05}").into_bytes()
    }

    /// Three flushed tables: keys 0..300 (file A), 100..200 rewritten (B),
    /// 0..300 step 3 deleted (C, newest); then a few unflushed writes.
    fn build(dir: &Path) -> Db {
        let db = Db::open_with(dir, options()).unwrap();
        for i in 0..300 {
            db.put(key(i), format!("v1-{i}")).unwrap();
        }
        db.flush().unwrap();
        for i in 100..200 {
            db.put(key(i), format!("v2-{i}")).unwrap();
        }
        db.flush().unwrap();
        for i in (0..300).step_by(3) {
            db.delete(key(i)).unwrap();
        }
        db.flush().unwrap();
        db.put(key(1), "mem").unwrap();
        db.delete(key(2)).unwrap();
        db
    }

    #[test]
    fn snapshot_sees_tables_and_wal() {
        let tmp = tempfile::tempdir().unwrap();
        let db = build(tmp.path());
        let snap = DbSnapshot::open(tmp.path()).unwrap();
        assert_eq!(snap.version.levels[0].len(), 3);
        assert_eq!(snap.wals.len(), 1);
        assert_eq!(snap.wals[0].records, 2);
        assert_eq!(snap.wals[0].ops, 2);
        assert_eq!(snap.last_sequence, db.last_sequence());
        let tables = snap.tables();
        let (levels, total) = level_summaries(&tables, 7);
        assert_eq!(levels[0].files, 3);
        assert_eq!(total.entries, 300 + 100 + 100);
        assert_eq!(total.tombstones, 100);
        // Newest first: the deletes, then the rewrite, then the load.
        let counts: Vec<u64> = tables.iter().map(|t| t.properties.num_entries).collect();
        assert_eq!(counts, [100, 100, 300]);
        assert_eq!(
            filter_settings(&tables),
            [FilterSetting {
                policy: BLOOM_POLICY_NAME.into(),
                bits_per_key: 10,
                num_hashes: 7,
                files: 3
            }]
        );
        for t in &tables {
            assert!(!t.filter.degraded(), "{t:?}");
            let f = t.filter.fraction_set().unwrap();
            assert!(f > 0.3 && f < 0.7, "{f}");
        }
    }

    #[test]
    fn explain_agrees_with_get() {
        let tmp = tempfile::tempdir().unwrap();
        let db = build(tmp.path());
        let snap = DbSnapshot::open(tmp.path()).unwrap();
        for i in 0..400 {
            let k = key(i);
            let e = explain(&snap, &k).unwrap();
            assert_eq!(
                e.verdict.as_get(),
                db.get(&k).unwrap().as_deref(),
                "key {i}"
            );
        }
        // key 1: in the memtable.
        let e = explain(&snap, &key(1)).unwrap();
        assert_eq!(e.steps.len(), 1);
        assert_eq!(e.verdict, Verdict::Value(b"mem".to_vec()));
        // key 2: a tombstone in the memtable.
        assert_eq!(explain(&snap, &key(2)).unwrap().verdict, Verdict::Tombstone);
        // key 3: deleted in the newest table (second step).
        let e = explain(&snap, &key(3)).unwrap();
        assert_eq!(e.verdict, Verdict::Tombstone);
        assert_eq!(e.steps.len(), 2);
        // key 4: memtable miss, C filter/range skip, B out of range, found in A.
        let e = explain(&snap, &key(4)).unwrap();
        assert_eq!(e.verdict, Verdict::Value(b"v1-4".to_vec()));
        assert_eq!(e.steps.len(), 4);
        assert_eq!(e.steps[2].outcome, ExplainOutcome::OutOfRange);
        assert!(matches!(
            e.steps[3].outcome,
            ExplainOutcome::Found {
                block: Some((0, _)),
                ..
            }
        ));
        // key 150 (not a multiple of 3... 150 is): use 151, in B.
        let e = explain(&snap, &key(151)).unwrap();
        assert_eq!(e.verdict, Verdict::Value(b"v2-151".to_vec()));
        // An absent key past every range.
        let e = explain(&snap, b"zzz").unwrap();
        assert_eq!(e.verdict, Verdict::Absent);
        assert!(e.steps[1..]
            .iter()
            .all(|s| s.outcome == ExplainOutcome::OutOfRange));
    }

    #[test]
    fn explain_walks_deeper_levels_by_binary_search() {
        let tmp = tempfile::tempdir().unwrap();
        let mut o = options();
        o.compaction_style = CompactionStyle::Leveled;
        o.target_file_size = 2048;
        let db = Db::open_with(tmp.path(), o).unwrap();
        for i in 0..500 {
            db.put(key(i), format!("value-{i}")).unwrap();
        }
        db.compact().unwrap();
        db.put(key(7), "newer").unwrap();
        db.flush().unwrap();
        let snap = DbSnapshot::open(tmp.path()).unwrap();
        let deep = snap
            .version
            .levels
            .iter()
            .skip(1)
            .find(|l| l.len() > 1)
            .unwrap();
        assert!(deep.len() > 1);
        for i in (0..520).step_by(7) {
            let k = key(i);
            let e = explain(&snap, &k).unwrap();
            assert_eq!(
                e.verdict.as_get(),
                db.get(&k).unwrap().as_deref(),
                "key {i}"
            );
            // At most one table per deeper level.
            let deep_steps = e
                .steps
                .iter()
                .filter(|s| matches!(s.source, ExplainSource::Table { level, .. } if level > 0))
                .count();
            assert!(deep_steps <= 1, "{e:?}");
        }
        let e = explain(&snap, b"zzz").unwrap();
        assert!(matches!(
            e.steps.last().unwrap().outcome,
            ExplainOutcome::PastLevel
        ));
    }

    #[test]
    fn verify_clean_then_damaged_data_block() {
        let tmp = tempfile::tempdir().unwrap();
        drop(build(tmp.path()));
        let r = verify_db(tmp.path(), true, &mut |_, _| {}).unwrap();
        assert!(r.is_clean(), "{:?}", r.problems);
        assert_eq!(r.tables, 3);
        assert_eq!(r.entries, 500);
        assert_eq!(r.wals, 1);
        assert!(r.data_blocks > 3);

        // Flip a byte in the second data block of the largest table.
        let snap = DbSnapshot::open(tmp.path()).unwrap();
        let f = &snap.version.levels[0][2];
        let h = f.table.index()[1].handle;
        let path = f.table.path().to_path_buf();
        drop(snap);
        let mut bytes = fs::read(&path).unwrap();
        bytes[(h.offset + 5) as usize] ^= 0x40;
        fs::write(&path, &bytes).unwrap();
        let r = verify_db(tmp.path(), false, &mut |_, _| {}).unwrap();
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        let p = &r.problems[0];
        assert_eq!(p.file, path);
        assert_eq!(p.what, "data block 1");
        assert_eq!(p.offset, Some(h.offset));
        assert!(p.detail.contains("checksum mismatch"), "{p}");
        // --all goes on (and finds nothing else: counts are skipped).
        let r = verify_db(tmp.path(), true, &mut |_, _| {}).unwrap();
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        let r = verify_file(&path, false, &mut |_, _| {}).unwrap();
        assert_eq!(r.problems[0].what, "data block 1");
    }

    #[test]
    fn verify_names_metadata_blocks() {
        let tmp = tempfile::tempdir().unwrap();
        drop(build(tmp.path()));
        let snap = DbSnapshot::open(tmp.path()).unwrap();
        let t = &snap.version.levels[0][0].table;
        let path = t.path().to_path_buf();
        let footer = *t.footer();
        drop(snap);
        let clean = fs::read(&path).unwrap();
        let len = clean.len() as u64;
        for (at, what) in [
            (footer.index.offset, "index block"),
            (footer.filter.offset, "filter block"),
            (footer.properties.offset, "properties block"),
            (len - 20, "footer"),
        ] {
            let mut b = clean.clone();
            b[at as usize + 1] ^= 1;
            fs::write(&path, &b).unwrap();
            let r = verify_file(&path, false, &mut |_, _| {}).unwrap();
            assert_eq!(r.problems.len(), 1, "{what}");
            assert_eq!(r.problems[0].what, what, "{:?}", r.problems[0]);
        }
        fs::write(&path, &clean).unwrap();
        assert!(verify_file(&path, false, &mut |_, _| {})
            .unwrap()
            .is_clean());
    }

    /// A policy under the Bloom name that leaves out every other key.
    #[derive(Debug)]
    struct Forgetful;
    impl FilterPolicy for Forgetful {
        fn name(&self) -> &'static str {
            BLOOM_POLICY_NAME
        }
        fn create_filter(&self, hashes: &[KeyHash]) -> Vec<u8> {
            let half: Vec<KeyHash> = hashes.iter().step_by(2).copied().collect();
            crate::filter::BloomFilterPolicy::new(10).create_filter(&half)
        }
        fn may_match(&self, filter: &[u8], hash: KeyHash) -> bool {
            crate::filter::BloomFilterPolicy::new(10).may_match(filter, hash)
        }
        fn shape(&self, filter: &[u8]) -> crate::filter::FilterShape {
            crate::filter::BloomFilterPolicy::new(10).shape(filter)
        }
    }

    /// A policy under the Bloom name that sets every bit.
    #[derive(Debug)]
    struct Saturated;
    impl FilterPolicy for Saturated {
        fn name(&self) -> &'static str {
            BLOOM_POLICY_NAME
        }
        fn create_filter(&self, hashes: &[KeyHash]) -> Vec<u8> {
            let mut f = crate::filter::BloomFilterPolicy::new(10).create_filter(hashes);
            let n = f.len() - 1;
            f[..n].fill(0xff);
            f
        }
        fn may_match(&self, _: &[u8], _: KeyHash) -> bool {
            true
        }
        fn shape(&self, filter: &[u8]) -> crate::filter::FilterShape {
            crate::filter::BloomFilterPolicy::new(10).shape(filter)
        }
    }

    fn write_table(path: &Path, policy: Arc<dyn FilterPolicy>, n: u32) -> Table {
        let opts = TableOptions {
            block_size: 256,
            restart_interval: 4,
            filter_policy: Some(policy),
        };
        let mut b = TableBuilder::new(path, opts).unwrap();
        for i in 0..n {
            let vt = if i % 10 == 0 {
                ValueType::Deletion
            } else {
                ValueType::Value
            };
            let v: &[u8] = if vt == ValueType::Value {
                b"value"
            } else {
                b""
            };
            b.add(
                InternalKey::new(&key(i), SequenceNumber(u64::from(i) + 1), vt).encoded(),
                v,
            )
            .unwrap();
        }
        b.finish().unwrap();
        open_table(path).unwrap()
    }

    #[test]
    fn verify_finds_filter_false_negatives() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("000009.sst");
        let t = write_table(&path, Arc::new(Forgetful), 200);
        assert_eq!(t.file_number(), 9);
        let r = verify_file(&path, true, &mut |_, _| {}).unwrap();
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        let p = &r.problems[0];
        assert_eq!(p.what, "filter block");
        assert_eq!(p.offset, Some(t.footer().filter.offset));
        assert!(p.detail.contains("false negatives"), "{p}");
        assert!(p.detail.contains("first \"key00001\""), "{p}");
    }

    #[test]
    fn verify_compares_properties_with_contents() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("000005.sst");
        let t = write_table(
            &path,
            Arc::new(crate::filter::BloomFilterPolicy::new(10)),
            100,
        );
        assert!(verify_file(&path, true, &mut |_, _| {}).unwrap().is_clean());
        // Rewrite the properties block (same length, valid CRC) with one
        // tombstone too many and a wrong smallest sequence number.
        let h = t.footer().properties;
        let mut props = t.properties().clone();
        assert_eq!(props.num_tombstones, 10);
        props.num_tombstones = 11;
        props.smallest_seq = SequenceNumber(2);
        props.smallest_user_key = key(1);
        drop(t);
        let enc = props.encode();
        assert_eq!(enc.len() as u64, h.size);
        let mut bytes = fs::read(&path).unwrap();
        let (start, end) = (h.offset as usize, (h.offset + h.size) as usize);
        bytes[start..end].copy_from_slice(&enc);
        let trailer = crate::sstable::format::block_trailer(&enc);
        bytes[end..end + BLOCK_TRAILER_LEN].copy_from_slice(&trailer);
        fs::write(&path, &bytes).unwrap();
        let r = verify_file(&path, true, &mut |_, _| {}).unwrap();
        let details: Vec<&str> = r.problems.iter().map(|p| p.detail.as_str()).collect();
        assert_eq!(
            details,
            [
                "siftdb.num_tombstones is 11 but the data blocks hold 10",
                "siftdb.smallest_seq is 2 but the data blocks hold 1",
                "siftdb.smallest_user_key is \"key00001\" but the data blocks hold \"key00000\"",
            ]
        );
        assert!(r
            .problems
            .iter()
            .all(|p| p.what == "properties block" && p.offset == Some(h.offset)));
    }

    /// `payload` framed as one log record (DESIGN.md 12.2).
    fn log_record(payload: &[u8]) -> Vec<u8> {
        let len = (payload.len() as u32).to_le_bytes();
        let mut out = len.to_vec();
        out.extend_from_slice(&crate::util::crc::crc32(&len).to_le_bytes());
        out.extend_from_slice(&crate::util::crc::crc32(payload).to_le_bytes());
        out.extend_from_slice(payload);
        out
    }

    #[test]
    fn verify_compares_manifest_entries_with_tables() {
        let tmp = tempfile::tempdir().unwrap();
        drop(build(tmp.path()));
        let (_, manifest) = current_manifest(tmp.path()).unwrap();
        let state = read_manifest(&manifest).unwrap().replay().unwrap();
        // A new manifest whose entry for one table is off by one entry and
        // one byte.
        let mut snapshot = VersionEdit {
            format_version: Some(FORMAT_VERSION),
            log_number: Some(state.log_number),
            next_file_number: Some(state.next_file_number + 1),
            last_sequence: Some(SequenceNumber(state.last_sequence)),
            ..VersionEdit::default()
        };
        for (level, files) in state.files.iter().enumerate() {
            for meta in files.values() {
                snapshot.new_files.push((level as u32, meta.clone()));
            }
        }
        let (_, wrong) = &mut snapshot.new_files[1];
        wrong.num_entries += 1;
        wrong.file_size += 1;
        let number = wrong.number;
        let n = state.next_file_number;
        fs::write(
            filename::manifest_path(tmp.path(), n),
            log_record(&snapshot.encode()),
        )
        .unwrap();
        fs::write(
            filename::current_path(tmp.path()),
            format!("{}\n", filename::manifest_name(n)),
        )
        .unwrap();
        let r = verify_db(tmp.path(), true, &mut |_, _| {}).unwrap();
        let what = format!("manifest entry of {number:06}.sst (level 0)");
        assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
        assert!(
            r.problems.iter().all(|p| p.what == what),
            "{:?}",
            r.problems
        );
        assert!(
            r.problems[0].detail.starts_with("records size "),
            "{:?}",
            r.problems
        );
        assert!(r.problems[1].detail.contains("entries but the table holds"));
        // The manifest the old CURRENT named is now an orphan: a note.
        assert!(
            r.notes
                .iter()
                .any(|n| n.contains("manifest not named by CURRENT")),
            "{:?}",
            r.notes
        );
    }

    /// Writes a table by hand from `blocks` of `(user key, seq)` puts, in
    /// the given order (the builder would refuse a bad order), with
    /// properties that match the contents, so only the order is wrong.
    /// `rename` replaces one block's index key: `(block, user key)`.
    fn raw_table(path: &Path, blocks: &[&[(&str, u64)]], rename: Option<(usize, &str)>) {
        use crate::sstable::format::{block_trailer, FORMAT_VERSION as TABLE_FORMAT};
        use crate::sstable::BlockBuilder;
        let mut file = Vec::new();
        let mut index = BlockBuilder::new(1);
        let mut props = TableProperties {
            format_version: TABLE_FORMAT,
            num_data_blocks: blocks.len() as u64,
            smallest_seq: SequenceNumber(u64::MAX),
            ..TableProperties::default()
        };
        let write = |file: &mut Vec<u8>, contents: &[u8]| {
            let h = BlockHandle::new(file.len() as u64, contents.len() as u64);
            file.extend_from_slice(contents);
            file.extend_from_slice(&block_trailer(contents));
            h
        };
        let mut prev: Option<&str> = None;
        for (i, entries) in blocks.iter().enumerate() {
            let mut b = BlockBuilder::new(16);
            let mut last = Vec::new();
            for (j, &(k, seq)) in entries.iter().enumerate() {
                last = InternalKey::new(k.as_bytes(), SequenceNumber(seq), ValueType::Value)
                    .into_encoded();
                b.add(&last, b"v");
                if i == 0 && j == 0 {
                    props.smallest_user_key = k.as_bytes().to_vec();
                }
                props.largest_user_key = k.as_bytes().to_vec();
                props.num_entries += 1;
                props.num_distinct_keys += u64::from(prev != Some(k));
                props.raw_key_bytes += last.len() as u64;
                props.raw_value_bytes += 1;
                props.smallest_seq = props.smallest_seq.min(SequenceNumber(seq));
                props.largest_seq = props.largest_seq.max(SequenceNumber(seq));
                prev = Some(k);
            }
            let h = write(&mut file, b.finish());
            if let Some((_, k)) = rename.filter(|r| r.0 == i) {
                let seq = ParsedInternalKey::parse(&last).unwrap().seq;
                last = InternalKey::new(k.as_bytes(), seq, ValueType::Value).into_encoded();
            }
            let mut v = Vec::new();
            h.encode_to(&mut v);
            index.add(&last, &v);
        }
        let properties = write(&mut file, &props.encode());
        let index = write(&mut file, index.finish());
        let footer = Footer {
            index,
            filter: BlockHandle::default(),
            properties,
            format_version: TABLE_FORMAT,
        };
        file.extend_from_slice(&footer.encode());
        fs::write(path, file).unwrap();
    }

    #[test]
    fn verify_checks_key_order_within_and_across_blocks() {
        let tmp = tempfile::tempdir().unwrap();
        let good = tmp.path().join("000001.sst");
        raw_table(&good, &[&[("a", 1), ("b", 2)], &[("c", 3)]], None);
        assert!(verify_file(&good, true, &mut |_, _| {}).unwrap().is_clean());

        let within = tmp.path().join("000002.sst");
        raw_table(&within, &[&[("b", 2), ("a", 1)], &[("c", 3)]], None);
        let r = verify_file(&within, true, &mut |_, _| {}).unwrap();
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        assert_eq!(r.problems[0].what, "data block 0");
        assert_eq!(r.problems[0].offset, Some(0));
        assert_eq!(
            r.problems[0].detail,
            "key \"a\"@1 put is not after the previous key \"b\"@2 put"
        );

        let across = tmp.path().join("000003.sst");
        raw_table(
            &across,
            &[&[("a", 1), ("c", 3)], &[("b", 2), ("d", 4)]],
            None,
        );
        let r = verify_file(&across, true, &mut |_, _| {}).unwrap();
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        assert_eq!(r.problems[0].what, "data block 1");
        assert_eq!(
            r.problems[0].detail,
            "key \"b\"@2 put is not after the previous key \"c\"@3 put \
             (the last of the previous block)"
        );
    }

    #[test]
    fn verify_checks_index_keys_against_blocks() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("000004.sst");
        // Index entry 0 names "bb", which still sorts before block 1.
        raw_table(
            &path,
            &[&[("a", 1), ("b", 2)], &[("c", 3)]],
            Some((0, "bb")),
        );
        let t = open_table(&path).unwrap();
        let r = verify_file(&path, true, &mut |_, _| {}).unwrap();
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        assert_eq!(r.problems[0].what, "index block");
        assert_eq!(r.problems[0].offset, Some(t.footer().index.offset));
        assert_eq!(
            r.problems[0].detail,
            "index entry 0 says the block ends with \"bb\"@2 put, it ends with \"b\"@2 put"
        );
    }

    #[test]
    fn verify_finds_overlapping_files_in_a_sorted_level() {
        let tmp = tempfile::tempdir().unwrap();
        drop(build(tmp.path()));
        let (_, manifest) = current_manifest(tmp.path()).unwrap();
        let state = read_manifest(&manifest).unwrap().replay().unwrap();
        // Claim that the (overlapping) level-0 tables are in level 1.
        let mut snapshot = VersionEdit {
            format_version: Some(FORMAT_VERSION),
            log_number: Some(state.log_number),
            next_file_number: Some(state.next_file_number + 1),
            last_sequence: Some(SequenceNumber(state.last_sequence)),
            ..VersionEdit::default()
        };
        for meta in state.files[0].values() {
            snapshot.new_files.push((1, meta.clone()));
        }
        let n = state.next_file_number;
        fs::write(
            filename::manifest_path(tmp.path(), n),
            log_record(&snapshot.encode()),
        )
        .unwrap();
        fs::write(
            filename::current_path(tmp.path()),
            format!("{}\n", filename::manifest_name(n)),
        )
        .unwrap();
        let r = verify_db(tmp.path(), true, &mut |_, _| {}).unwrap();
        assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
        let p = &r.problems[0];
        assert_eq!(p.what, "level 1");
        assert_eq!(p.file, filename::manifest_path(tmp.path(), n));
        assert!(p.detail.contains(" overlaps "), "{p}");
        let r = verify_db(tmp.path(), false, &mut |_, _| {}).unwrap();
        assert_eq!(r.problems.len(), 1);
    }

    #[test]
    fn filter_health_flags_a_saturated_filter() {
        let tmp = tempfile::tempdir().unwrap();
        let good = write_table(
            &tmp.path().join("000001.sst"),
            Arc::new(crate::filter::BloomFilterPolicy::new(10)),
            1000,
        );
        let g = FilterInfo::of(&good);
        assert_eq!(g.keys, 1000);
        assert_eq!(g.bloom.unwrap().bits, 10_000);
        assert_eq!(g.bloom.unwrap().num_hashes, 7);
        assert_eq!(g.block_bytes, 10_000 / 8 + 1);
        assert!((g.bits_per_key() - 10.0).abs() < 1e-9);
        let design = g.design_fpr().unwrap();
        assert!((design - theoretical_fpr(10.0, 7)).abs() < 1e-12);
        assert!(!g.degraded(), "{g:?}");
        let bad = write_table(&tmp.path().join("000002.sst"), Arc::new(Saturated), 1000);
        let b = FilterInfo::of(&bad);
        assert_eq!(b.fraction_set(), Some(1.0));
        assert_eq!(b.implied_fpr(), Some(1.0));
        assert!(b.degraded());
        // No false negatives, so verify passes it.
        assert!(verify_file(bad.path(), true, &mut |_, _| {})
            .unwrap()
            .is_clean());
    }

    #[test]
    fn entries_from_and_properties() {
        let tmp = tempfile::tempdir().unwrap();
        let t = write_table(
            &tmp.path().join("000003.sst"),
            Arc::new(crate::filter::BloomFilterPolicy::new(10)),
            100,
        );
        let all: Vec<TableEntry> = table_entries(&t, None).map(|e| e.unwrap()).collect();
        assert_eq!(all.len(), 100);
        assert_eq!(all[0].value_type, ValueType::Deletion);
        assert_eq!(all[1].seq, SequenceNumber(2));
        assert!(all.windows(2).all(|w| w[0].block <= w[1].block));
        let from: Vec<TableEntry> = table_entries(&t, Some(b"key00042x"))
            .map(|e| e.unwrap())
            .collect();
        assert_eq!(from.len(), 57);
        assert_eq!(from[0].user_key, key(43));
        assert_eq!(table_entries(&t, Some(b"zz")).count(), 0);
        let props = properties_block(&t).unwrap();
        let get = |n: &str| props.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        assert_eq!(get("siftdb.num_entries"), Some(PropertyValue::Number(100)));
        assert_eq!(
            get("siftdb.num_tombstones"),
            Some(PropertyValue::Number(10))
        );
        assert_eq!(
            get("siftdb.smallest_user_key"),
            Some(PropertyValue::Bytes(key(0)))
        );
        assert_eq!(
            get("siftdb.filter.policy"),
            Some(PropertyValue::Bytes(BLOOM_POLICY_NAME.as_bytes().to_vec()))
        );
        assert_eq!(props.len(), 15);
        assert!(props.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn wal_with_torn_tail_and_damage() {
        let tmp = tempfile::tempdir().unwrap();
        let db = build(tmp.path());
        db.put(key(9), "x".repeat(100)).unwrap();
        drop(db);
        // Reopening flushed the WAL; write a fresh one to look at.
        let db = Db::open_with(tmp.path(), options()).unwrap();
        db.put("a", "1").unwrap();
        db.delete("b").unwrap();
        db.put("c", "3").unwrap();
        let wals = read_live_wals(tmp.path()).unwrap();
        drop(db);
        assert_eq!(wals.len(), 1);
        let w = &wals[0];
        assert_eq!(w.records.len(), 3);
        assert_eq!(w.ops(), 3);
        assert_eq!(w.records[1].ops[0].value_type, ValueType::Deletion);
        assert_eq!(w.records[1].ops[0].key, b"b");
        assert_eq!(
            w.records[2].offset,
            w.records[1].offset + 12 + w.records[1].batch_len
        );
        assert!(w.torn_tail.is_none() && w.corruption.is_none());
        let path = w.path.clone();
        let last = w.records[2].offset;

        // Cut the last record in half: a torn tail.
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
        let w = read_wal(&path).unwrap();
        assert_eq!(w.records.len(), 2);
        assert_eq!(w.torn_tail.as_ref().unwrap().offset, last);
        assert!(w.corruption.is_none());
        // Damage the first record's payload: corruption, nothing after it.
        let mut b = bytes.clone();
        b[14] ^= 0xff;
        fs::write(&path, &b).unwrap();
        let w = read_wal(&path).unwrap();
        assert_eq!(w.records.len(), 0);
        assert!(matches!(
            w.corruption,
            Some(Error::Corruption { offset: 0, .. })
        ));
        let r = verify_file(&path, false, &mut |_, _| {}).unwrap();
        assert_eq!(r.problems[0].what, "WAL record");
        assert_eq!(r.problems[0].offset, Some(0));
    }

    #[test]
    fn manifest_records_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        drop(build(tmp.path()));
        let (number, path) = current_manifest(tmp.path()).unwrap();
        let m = read_manifest(&path).unwrap();
        assert_eq!(path, filename::manifest_path(tmp.path(), number));
        assert_eq!(m.format_version(), 1);
        assert_eq!(m.records[0].offset, 0);
        // Three flushes: a snapshot plus one edit each.
        assert_eq!(m.records.len(), 4);
        assert!(m.records[1..].iter().all(|r| r.edit.new_files.len() == 1));
        assert_eq!(m.replay().unwrap().files[0].len(), 3);
        let total: u64 = m.records.iter().map(|r| 12 + r.payload_len).sum();
        assert_eq!(total, m.size);
    }

    #[test]
    fn a_file_removed_by_a_compaction_is_retried_not_corrupt() {
        let tmp = tempfile::tempdir().unwrap();
        let db = build(tmp.path());
        let stale = read_manifest(&current_manifest(tmp.path()).unwrap().1).unwrap();
        let before = fingerprint(tmp.path());
        db.compact().unwrap();
        assert_ne!(fingerprint(tmp.path()), before);
        // The stale file list names tables the compaction deleted.
        let gone = stale.replay().unwrap().files[0]
            .keys()
            .map(|&n| filename::table_path(tmp.path(), n))
            .find(|p| !p.exists())
            .unwrap();
        let e = Table::open(&gone, 0).unwrap_err();
        assert!(matches!(missing_or(&gone, e), LoadError::Missing(..)));
        // A fresh snapshot reads the new state, while the writer is open.
        let snap = DbSnapshot::open(tmp.path()).unwrap();
        assert_eq!(snap.version.levels[0].len(), 0);
        assert_eq!(
            explain(&snap, &key(4)).unwrap().verdict.as_get(),
            db.get(key(4)).unwrap().as_deref()
        );
        // Missing without a manifest change is corruption.
        let live = snap.files().next().unwrap().1.table.path().to_path_buf();
        drop(snap);
        drop(db);
        let fresh = fs::read(&live).unwrap();
        fs::remove_file(&live).unwrap();
        let e = DbSnapshot::open(tmp.path()).unwrap_err();
        assert!(e.is_corruption(), "{e}");
        assert!(
            e.to_string()
                .contains("live according to the manifest but missing"),
            "{e}"
        );
        let r = verify_db(tmp.path(), false, &mut |_, _| {}).unwrap();
        assert!(r.problems[0].detail.contains("missing"), "{:?}", r.problems);
        fs::write(&live, fresh).unwrap();
        // The vanished error names the file.
        let v = vanished(&live, std::io::Error::from(ErrorKind::NotFound));
        assert!(is_not_found(&v));
        assert!(v.to_string().contains(&file_name(&live)), "{v}");
    }
}
