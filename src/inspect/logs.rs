//! The records of the two log files: which manifest `CURRENT` names, and
//! the write batches of WALs. Manifests are read by
//! [`crate::version::manifest::read_manifest`], re-exported by the parent
//! module; both kinds of log are framed and checked by
//! [`crate::log::LogReader`].

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::{missing_live_file, missing_or, number_of, read_manifest, with_retries, LoadError};
use crate::db::{live_wals, no_database, pin_wals, reread_while_a_writer_appends, PinnedWal};
use crate::filename;
use crate::fs::StdFs;
use crate::key::{SequenceNumber, ValueType};
use crate::log::{LogReader, LogRecord, TornTail};
use crate::version::manifest::read_current;
use crate::version::set::ReplayedState;
use crate::write_batch::decode_batch;
use crate::{Error, Result};

/// The manifest `CURRENT` names in `dir`: its file number and path.
///
/// # Errors
/// [`Error::NotADatabase`] if `dir` does not exist, is not a directory or
/// has no `CURRENT`, but [`Error::Corruption`] if it holds SSTables or WAL
/// data without `CURRENT`; as [`read_current`] otherwise
/// ([`Error::Corruption`] for a malformed `CURRENT`).
pub fn current_manifest(dir: &Path) -> Result<(u64, PathBuf)> {
    let number = read_current(dir)
        .map_err(|e| match e {
            Error::Io { .. } if !dir.is_dir() => no_database(dir),
            e => e,
        })?
        .ok_or_else(|| no_database(dir))?;
    Ok((number, filename::manifest_path(dir, number)))
}

/// One update of a WAL record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalOp {
    /// The update's sequence number.
    pub seq: SequenceNumber,
    /// The keyspace it writes to: 0 for the default (DESIGN.md 12.3).
    pub keyspace: u32,
    /// Put or delete.
    pub value_type: ValueType,
    /// The user key.
    pub key: Vec<u8>,
    /// The value (empty for a delete); for a range deletion, the range's
    /// exclusive end, empty if it has none.
    pub value: Vec<u8>,
}

/// One WAL record: a write batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalRecord {
    /// Offset of the record's header in the file, in bytes.
    pub offset: u64,
    /// Payload bytes: the encoded batch.
    pub batch_len: u64,
    /// Sequence number of the batch's first update.
    pub first_seq: SequenceNumber,
    /// The updates, in order.
    pub ops: Vec<WalOp>,
}

impl WalRecord {
    /// Decodes the batch in `record` of the WAL at `path`.
    ///
    /// # Errors
    /// [`Error::Corruption`] at the record's offset if the payload is not a
    /// write batch.
    fn decode(path: &Path, record: &LogRecord) -> Result<WalRecord> {
        let b = decode_batch(&record.payload)
            .map_err(|d| Error::corruption(path, record.offset, format!("write batch: {d}")))?;
        let ops = b.ops.iter().enumerate().map(|(i, op)| WalOp {
            seq: SequenceNumber(b.first_seq.0 + i as u64),
            keyspace: op.keyspace,
            value_type: op.value_type,
            key: op.key.to_vec(),
            value: op.value.to_vec(),
        });
        Ok(WalRecord {
            offset: record.offset,
            batch_len: record.payload.len() as u64,
            first_seq: b.first_seq,
            ops: ops.collect(),
        })
    }
}

/// A WAL file, decoded up to its end, its torn tail, or the first damage.
#[derive(Debug)]
pub struct WalContents {
    /// The file read.
    pub path: PathBuf,
    /// Its file number, if the name is `NNNNNN.log`.
    pub number: Option<u64>,
    /// Its size in bytes, as read.
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
    /// Updates in all records, range deletions included.
    pub fn ops(&self) -> u64 {
        self.records.iter().map(|r| r.ops.len() as u64).sum()
    }

    /// Range deletions in all records (counted in [`WalContents::ops`]
    /// too).
    pub fn range_deletions(&self) -> u64 {
        self.records
            .iter()
            .flat_map(|r| &r.ops)
            .filter(|o| o.value_type == ValueType::RangeDeletion)
            .count() as u64
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

/// Reads every record of the WAL at `path` with [`LogReader`] and decodes
/// its batch. Damage (a bad record, or a payload that is not a batch) ends
/// reading and is returned in [`WalContents::corruption`], with the
/// records before it. If a process has the database in the WAL's
/// directory open for writing, damage is read again before it counts: that
/// process may be copying a record in at that moment
/// ([`crate::Db::held_by_a_writer`]; DESIGN.md 10).
///
/// # Errors
/// [`Error::Io`] if the file cannot be read.
pub fn read_wal(path: &Path) -> Result<WalContents> {
    let file = crate::util::file::open_regular(path)
        .map_err(|e| Error::io(format!("read log {}", path.display()), e))?;
    let read = || read_wal_from(LogReader::from_start(&file, path)?);
    reread_while_a_writer_appends(crate::log::parent_dir(path), read, damaged)
}

/// Whether reading a WAL found damage.
fn damaged(read: &Result<WalContents>) -> bool {
    matches!(read, Ok(w) if w.corruption.is_some())
}

/// As [`read_wal`], from a reader.
fn read_wal_from(mut reader: LogReader) -> Result<WalContents> {
    let path = &reader.path().to_path_buf();
    let mut records = Vec::new();
    let corruption = reader
        .by_ref()
        .try_for_each(|record| {
            records.push(WalRecord::decode(path, &record?)?);
            Ok(())
        })
        .err();
    Ok(WalContents {
        path: path.to_path_buf(),
        number: number_of(path),
        size: reader.file_len(),
        records,
        torn_tail: reader.torn_tail().cloned(),
        corruption,
    })
}

/// The live WALs of `dir` for `state` (numbered at least its smallest
/// log number), read, oldest first; see [`read_pinned_wals`].
pub(super) fn read_wals(
    dir: &Path,
    state: &ReplayedState,
) -> std::result::Result<Vec<WalContents>, LoadError> {
    read_pinned_wals(pin_wals(&StdFs, dir)?, dir, state)
}

/// Reads the WALs of `pinned` (opened by [`pin_wals`], before the manifest
/// was read) that are live for `state`: numbered at least the smallest
/// log number of any keyspace, oldest first. The WAL each keyspace's log
/// number names (of its oldest unflushed memtable) must be among them, as
/// at open (`db::recovery`): if a writer's flush deleted it before it was
/// pinned, the later WALs alone would show newer writes with older ones
/// missing. It is then [`LoadError::Missing`], and the caller reads
/// again. Damage in a WAL is read again, as [`read_wal`] says.
pub(super) fn read_pinned_wals(
    pinned: Vec<PinnedWal>,
    dir: &Path,
    state: &ReplayedState,
) -> std::result::Result<Vec<WalContents>, LoadError> {
    let live = live_wals(pinned, state.min_log_number())?;
    for log_number in state.trees().map(|t| t.log_number) {
        if log_number > 0 && !live.iter().any(|w| w.number == log_number) {
            let p = filename::wal_path(dir, log_number);
            return Err(LoadError::Missing(
                p,
                std::io::Error::from(ErrorKind::NotFound),
            ));
        }
    }
    live.iter()
        .map(|w| {
            let read = || read_wal_from(w.reader()?);
            Ok(reread_while_a_writer_appends(dir, read, damaged)?)
        })
        .collect()
}

/// The live WALs of a database as the manifest and directory show them.
///
/// # Errors
/// As [`current_manifest`], [`read_manifest`] and [`read_wal`].
pub fn read_live_wals(dir: &Path) -> Result<Vec<WalContents>> {
    let (_, manifest) = current_manifest(dir)?;
    let load = || {
        let pinned = pin_wals(&StdFs, dir)?;
        let (_, manifest) = current_manifest(dir)?;
        let m = read_manifest(&manifest).map_err(|e| missing_or(&manifest, e))?;
        read_pinned_wals(pinned, dir, &m.replay_all()?)
    };
    with_retries(dir, load, |p| Err(missing_live_file(&manifest, p)))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{build, key, options};
    use super::*;
    use crate::Db;

    #[test]
    fn wal_with_torn_tail_and_damage() {
        let tmp = tempfile::tempdir().unwrap();
        let db = build(tmp.path());
        db.put(key(9), "x".repeat(100)).unwrap();
        drop(db);
        // Flush what the reopen replayed; write a fresh WAL to look at.
        let db = Db::open_with(tmp.path(), options()).unwrap();
        db.flush().unwrap();
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
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
        let w = read_wal(&path).unwrap();
        assert_eq!(w.records.len(), 2);
        assert_eq!(w.torn_tail.as_ref().unwrap().offset, last);
        assert!(w.corruption.is_none());
        // Damage the first record's payload: corruption, nothing after it.
        let mut b = bytes.clone();
        b[14] ^= 0xff;
        std::fs::write(&path, &b).unwrap();
        let w = read_wal(&path).unwrap();
        assert_eq!(w.records.len(), 0);
        assert!(matches!(
            w.corruption,
            Some(Error::Corruption { offset: 0, .. })
        ));
        let r = super::super::verify_file(&path, false, &mut |_, _| {}).unwrap();
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
        assert_eq!(m.format_version(), crate::version::manifest::FORMAT_VERSION);
        assert_eq!(m.records[0].offset, 0);
        // Three flushes: a snapshot plus one edit each.
        assert_eq!(m.records.len(), 4);
        assert!(m.records[1..].iter().all(|r| r.edit.new_files.len() == 1));
        assert_eq!(m.replay_all().unwrap().files[0].len(), 3);
        let total: u64 = m.records.iter().map(|r| 12 + r.payload_len).sum();
        assert_eq!(total, m.size);
    }
}
