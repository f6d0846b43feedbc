//! [`Salvage`]: every entry that can still be read from a damaged
//! database, merged as the engine merges them, with a [`SalvageReport`] of
//! exactly what could not be read. `kvctl export --salvage` runs it;
//! DESIGN.md 11.1 states the rules.
//!
//! [`crate::Db::open`] refuses a database with any damaged block, manifest
//! record or `CURRENT` ([`Error::Corruption`]): it never answers with wrong
//! data. A salvage reads around the damage instead:
//!
//! - **Which files.** The live set of the manifest `CURRENT` names (or, if
//!   `CURRENT` is missing, damaged or names a manifest that does not
//!   exist, of the only manifest in the directory), when that manifest
//!   reads and replays: its tables, and the WALs numbered at least its log
//!   number. A table or WAL it names that is missing is lost, like an
//!   unreadable one, and its range flagged. Without a usable manifest,
//!   every `*.sst` and every `*.log` in the directory, and
//!   [`FileSet::Directory`] says why. Tables a compaction had already
//!   replaced can then bring back older values and deleted keys.
//! - **One keyspace.** A salvage reads the keyspace a
//!   [`KeyspaceSelector`] picks (the default unless told): with the
//!   manifest, that keyspace's live tables and its ops in the WALs from
//!   its log number on; without it, the tables whose `siftdb.keyspace`
//!   property names it (absent: the default) and its ops in every WAL,
//!   selected by id (names are only in the manifest).
//! - **Merge.** All entries read are merged by internal key: for each user
//!   key the version with the largest sequence number wins, and a winning
//!   tombstone hides the key. WAL entries carry the sequence numbers of
//!   their batch headers, so they win over older table entries.
//! - **Damage.** A data block that fails its checksum (or does not decode)
//!   is skipped: its entries are lost ([`SkippedBlock`]), unless a range
//!   deletion newer than every entry of its table covers every key it may
//!   hold: then it is a note, since no reader could see any of them. A
//!   table whose
//!   footer or index cannot be read is walked to find its data blocks
//!   ([`TableBlocks::open_by_scan`]); if the walk stops short of the
//!   table's largest key, the rest is lost (one [`SkippedBlock`] from the
//!   stop to the end of the data). A table that cannot be opened at all
//!   is skipped whole ([`UnreadTable`]). A damaged filter or properties block loses
//!   nothing (entries are read through the index alone) and is a note. A
//!   WAL is read up to its torn tail (dropped, as at open) or up to the
//!   first damaged record (everything from there on is lost,
//!   [`WalDamage`]).
//! - **Limit.** When the block that held a key's newest version is lost, an
//!   older version from another table may surface instead, and a key whose
//!   newest version was a tombstone may come back. Each lost block's user
//!   key range is known from the index (the previous block's last key to
//!   its own last key). A yielded key is flagged
//!   [`SalvagedEntry::possibly_stale`], and counted, when it lies in a lost
//!   range, its version is older than the largest sequence number the lost
//!   data may hold (the table's, from its properties block), and the
//!   table's Bloom filter, if intact, does not rule the key out.
//!
//! Nothing is written to the directory and no lock is taken, so the
//! database should not be open in a writing process meanwhile (a table a
//! compaction deletes mid-salvage is reported as unreadable).

use std::cmp::Ordering;
use std::collections::{BTreeSet, BinaryHeap};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{file_name, read_manifest, read_wal, KeyspaceSelector};
use crate::filename::{self, FileType};
use crate::filter::{hash_key, policy_for_name, FilterPolicy};
use crate::fs::StdFs;
use crate::key::{
    compare_internal_keys, user_key_of, InternalKey, ParsedInternalKey, SequenceNumber, ValueType,
};
use crate::log::TornTail;
use crate::range_tombstone::{FragmentedRangeTombstones, RangeTombstone};
use crate::sstable::compression::{Compression, NO_ZSTD};
use crate::sstable::format::{BLOCK_TRAILER_LEN, FOOTER_LEN};
use crate::sstable::table::checked_data_entries;
use crate::sstable::{BlockHandle, TableBlocks};
use crate::version::edit::FileMetaData;
use crate::version::manifest::{dangling_current, read_current};
use crate::{Error, Result};

// ---------------------------------------------------------------- report

/// One live key recovered by a salvage, with its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SalvagedEntry {
    /// The user key.
    pub key: Vec<u8>,
    /// Its value: the newest version that could be read.
    pub value: Vec<u8>,
    /// That version's sequence number.
    pub seq: SequenceNumber,
    /// True if the key lies in the key range of lost data (a skipped data
    /// block, an unread table, records after WAL damage) that may have held
    /// a newer version than `seq`: the value may be older than the one the
    /// database held.
    pub possibly_stale: bool,
}

/// Which tables and WALs a salvage read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileSet {
    /// The live set of a manifest: its tables and the WALs numbered at
    /// least its log number.
    Manifest {
        /// The manifest read.
        path: PathBuf,
        /// `None` when `CURRENT` named it; otherwise why `CURRENT` could not
        /// be used (the manifest was then the only one in the directory).
        current_problem: Option<String>,
        /// Edits replayed.
        edits: u64,
        /// WALs numbered at least this, the salvaged keyspace's log
        /// number, were read.
        log_number: u64,
        /// A torn final manifest record, ignored as at open.
        torn_tail: Option<TornTail>,
    },
    /// Every `*.sst` and `*.log` in the directory, because no manifest
    /// could be used.
    Directory {
        /// Why (e.g. "MANIFEST-000005 cannot be read: ...").
        reason: String,
    },
}

impl FileSet {
    /// True for [`FileSet::Directory`].
    pub fn is_directory(&self) -> bool {
        matches!(self, FileSet::Directory { .. })
    }
}

/// A range of user keys, both ends inclusive. An end that is `None` is
/// unknown, so the range reaches that far: `{None, None}` is every key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyRange {
    /// Smallest user key, if known.
    pub first: Option<Vec<u8>>,
    /// Largest user key, if known.
    pub last: Option<Vec<u8>>,
}

impl KeyRange {
    /// Every key (both ends unknown).
    pub fn everything() -> KeyRange {
        KeyRange::default()
    }

    /// True if `key` lies in the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.first.as_deref().is_none_or(|f| f <= key)
            && self.last.as_deref().is_none_or(|l| key <= l)
    }
}

/// A data block a salvage skipped: its entries are lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedBlock {
    /// Its position in the table's index (0 = first data block).
    pub block: u64,
    /// Where it is; `size` excludes the 4-byte trailer.
    pub handle: BlockHandle,
    /// The user keys it may have held: from the previous block's last key
    /// (the table's smallest key for block 0, when known) to its own last
    /// key, as the index gives them.
    pub keys: KeyRange,
    /// What is wrong with it (the checksum or decoding error).
    pub detail: String,
}

impl SkippedBlock {
    /// The bytes of the file it occupies, trailer included.
    pub fn bytes(&self) -> Range<u64> {
        let h = self.handle;
        h.offset..h.end_with_trailer().unwrap_or(u64::MAX)
    }
}

/// Why a table was skipped whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadTable {
    /// Which part failed: `"file"` (missing or unreadable), `"footer"` or
    /// `"index block"`.
    pub what: String,
    /// Byte offset of the damage in the table, when known.
    pub offset: Option<u64>,
    /// The error.
    pub detail: String,
}

/// What a salvage read from one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSalvage {
    /// The table file.
    pub path: PathBuf,
    /// Its file number.
    pub number: u64,
    /// Its level, when the manifest was used.
    pub level: Option<usize>,
    /// Its size in bytes; `None` if it could not be opened.
    pub size: Option<u64>,
    /// Its user key range, from the manifest (or the properties block),
    /// when known: for a table skipped whole, the keys lost.
    pub keys: KeyRange,
    /// Data blocks its index lists (0 when skipped whole).
    pub data_blocks: u64,
    /// Data blocks read.
    pub blocks_read: u64,
    /// Entries read (every version and tombstone).
    pub entries: u64,
    /// Data blocks skipped, in file order.
    pub skipped_blocks: Vec<SkippedBlock>,
    /// Set if the table was skipped whole.
    pub unreadable: Option<UnreadTable>,
    /// Damage that lost nothing (a filter or properties block).
    pub notes: Vec<String>,
}

/// Damage inside a WAL: the records from `offset` on were not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalDamage {
    /// Offset of the damaged record, in bytes (0 if the file could not be
    /// read at all).
    pub offset: u64,
    /// The error.
    pub detail: String,
}

/// What a salvage read from one WAL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalSalvage {
    /// The WAL file.
    pub path: PathBuf,
    /// Its file number.
    pub number: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Complete records (write batches) read.
    pub records: u64,
    /// Updates in them of the keyspace salvaged.
    pub entries: u64,
    /// An incomplete final record, dropped as at open: it was never
    /// acknowledged (unless damaged after the fact).
    pub torn_tail: Option<TornTail>,
    /// Damage before the end: everything from it on is lost.
    pub damage: Option<WalDamage>,
}

impl WalSalvage {
    /// Bytes not read: from the damage or the torn tail to the end.
    pub fn unread_bytes(&self) -> u64 {
        let from = match (&self.damage, &self.torn_tail) {
            (Some(d), _) => d.offset,
            (None, Some(t)) => t.offset,
            (None, None) => return 0,
        };
        self.size.saturating_sub(from)
    }
}

/// What a [`Salvage`] read and what it could not. Complete once the
/// salvage's iterator has returned `None` ([`SalvageReport::finished`]);
/// [`Salvage::finish`] drains it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SalvageReport {
    /// The database directory.
    pub dir: PathBuf,
    /// The id of the keyspace salvaged (0: the default).
    pub keyspace: u32,
    /// Its name, when the manifest was used (without it, names are
    /// unknown).
    pub keyspace_name: Option<String>,
    /// Every keyspace the database holds, by id: the manifest's live
    /// keyspaces, or (without it) every id the tables' `siftdb.keyspace`
    /// properties and the WALs' ops name. The others are not salvaged:
    /// one salvage reads one keyspace.
    pub keyspaces: Vec<u32>,
    /// Which files were read, and why.
    pub file_set: FileSet,
    /// Every table considered, in level and then file-number order
    /// (file-number order for [`FileSet::Directory`]).
    pub tables: Vec<TableSalvage>,
    /// Every WAL read, oldest first.
    pub wals: Vec<WalSalvage>,
    /// Observations that lose nothing (tables outside the manifest, which
    /// were ignored).
    pub notes: Vec<String>,
    /// Internal entries read from tables and WALs (every version and
    /// tombstone).
    pub entries_read: u64,
    /// Live keys yielded.
    pub keys: u64,
    /// User keys whose newest readable version is a tombstone (not
    /// yielded).
    pub deleted: u64,
    /// Yielded keys flagged [`SalvagedEntry::possibly_stale`].
    pub possibly_stale: u64,
    /// True once every entry has been merged: the counts are final.
    pub finished: bool,
}

impl SalvageReport {
    /// True if every entry of the live set was read: the manifest was
    /// used, and no data block, table or WAL record was lost (a torn WAL
    /// tail and filter or properties damage lose nothing).
    pub fn is_complete(&self) -> bool {
        !self.file_set.is_directory()
            && self.lost_blocks() == 0
            && self.unread_tables() == 0
            && self.damaged_wals() == 0
    }

    /// Data blocks skipped, over all tables.
    pub fn lost_blocks(&self) -> u64 {
        self.tables
            .iter()
            .map(|t| t.skipped_blocks.len() as u64)
            .sum()
    }

    /// Tables skipped whole.
    pub fn unread_tables(&self) -> u64 {
        self.tables
            .iter()
            .filter(|t| t.unreadable.is_some())
            .count() as u64
    }

    /// WALs with damage before their end.
    pub fn damaged_wals(&self) -> u64 {
        self.wals.iter().filter(|w| w.damage.is_some()).count() as u64
    }
}

// ---------------------------------------------------------------- salvage

/// One entry: encoded internal key and value.
type Entry = (Vec<u8>, Vec<u8>);

/// Lost data: its user key range and the largest sequence number it may
/// have held (`None`: unknown).
#[derive(Debug)]
struct Lost {
    keys: KeyRange,
    max_seq: Option<u64>,
    /// For a data block after the first: the previous block's last user
    /// key and sequence number. Versions sort newest first, so the lost
    /// block's versions of that key are all older than that one.
    older_than: Option<(Vec<u8>, u64)>,
    /// The table's filter, when intact: a key it rules out was not in the
    /// table, so not in the lost block.
    filter: Option<Arc<TableFilter>>,
}

/// A table's verified filter block and the policy that reads it.
#[derive(Debug)]
struct TableFilter {
    policy: Arc<dyn FilterPolicy>,
    bytes: Vec<u8>,
}

impl Lost {
    /// Lost data of unknown sequence numbers in `keys`.
    fn unknown(keys: KeyRange) -> Lost {
        Lost {
            keys,
            max_seq: None,
            older_than: None,
            filter: None,
        }
    }

    /// True if this may have held a version of `key` newer than `seq`.
    fn may_be_newer(&self, key: &[u8], seq: u64) -> bool {
        if !self.keys.contains(key) {
            return false;
        }
        let mut max = self.max_seq.unwrap_or(u64::MAX);
        if let Some((k, s)) = &self.older_than {
            if k.as_slice() == key {
                max = max.min(s.saturating_sub(1));
            }
        }
        max > seq
            && self
                .filter
                .as_ref()
                .is_none_or(|f| f.policy.may_match(&f.bytes, hash_key(key)))
    }
}

/// A sorted stream of entries.
#[derive(Debug)]
enum Source {
    /// Every WAL entry, sorted in internal-key order.
    Wal(std::vec::IntoIter<Entry>),
    /// One table, read block by block.
    Table(Box<TableCursor>),
}

/// Reads one table's data blocks in order, skipping damaged ones.
#[derive(Debug)]
struct TableCursor {
    table: TableBlocks,
    /// Index of the table's entry in [`SalvageReport::tables`].
    report: usize,
    next_block: usize,
    buffered: std::vec::IntoIter<Entry>,
    /// Last key of the last block read, to check the order across blocks.
    last_key: Option<Vec<u8>>,
    /// The table's largest sequence number, if the properties say.
    largest_seq: Option<u64>,
    /// The policy of the table's filter, if the filter block and the
    /// properties naming it are intact and the policy is known.
    filter_policy: Option<Arc<dyn FilterPolicy>>,
    /// The filter, copied out at the first skipped block.
    filter: Option<Arc<TableFilter>>,
}

/// The head entry of source `source`, ordered so that [`BinaryHeap`] (a
/// max-heap) pops the smallest internal key first.
#[derive(Debug)]
struct Head {
    key: Vec<u8>,
    value: Vec<u8>,
    source: usize,
}

impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_internal_keys(&other.key, &self.key).then(other.source.cmp(&self.source))
    }
}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Head {}

/// A read-only salvage of a damaged database: an iterator over every live
/// key that can still be read, in key order, with the newest readable
/// value of each; [`Salvage::report`] says what could not be read.
///
/// Tables are memory-mapped and read one data block at a time as the merge
/// reaches them, so memory use is one block per table plus the WALs'
/// entries. Damage found while iterating goes into the report, never into
/// the iterator: it yields no errors.
#[derive(Debug)]
pub struct Salvage {
    report: SalvageReport,
    /// Keyspace ids the WAL ops name (for [`SalvageReport::keyspaces`]
    /// without a manifest).
    wal_keyspaces: BTreeSet<u32>,
    sources: Vec<Source>,
    heap: BinaryHeap<Head>,
    /// Lost ranges not yet reached, smallest first key last.
    pending: Vec<Lost>,
    /// Lost ranges the merge is inside of (or may still reach).
    active: Vec<Lost>,
    /// The range deletions read (the manifest's and the WALs').
    range_tombstones: Vec<RangeTombstone>,
    /// `range_tombstones`, fragmented once every source is read.
    range_index: FragmentedRangeTombstones,
}

impl Salvage {
    /// Prepares a salvage of the keyspace `keyspace` selects (the default
    /// unless told) of the database in `dir`: chooses the file set (with a
    /// usable manifest, that keyspace's tables and its writes in the WALs
    /// from its log number on; without one, the tables whose
    /// `siftdb.keyspace` property names it, absent meaning the default,
    /// and its writes in every WAL), opens every table (footer and index;
    /// checks the filter and properties blocks), reads every WAL, and
    /// reads the first data block of each table. Damage to any of these is
    /// recorded in the report.
    ///
    /// # Errors
    /// [`Error::NotADatabase`] if `dir` does not exist, is not a directory
    /// or holds no siftdb file (`CURRENT`, manifest, table or WAL);
    /// [`Error::Io`] if it cannot be listed;
    /// [`Error::UnsupportedVersion`] if the manifest was written by a newer
    /// siftdb; [`Error::Locked`] if a process has the database open for
    /// writing ([`crate::Db::held_by_a_writer`]);
    /// [`Error::NoSuchKeyspace`] if the manifest holds no keyspace so
    /// selected; [`Error::InvalidArgument`] for a keyspace selected by a
    /// name other than `default` without a usable manifest (names are only
    /// there: select it by id). Damage is never an error.
    pub fn open(dir: &Path, keyspace: &KeyspaceSelector) -> Result<Salvage> {
        let not_db = |detail: &str| Error::NotADatabase {
            path: dir.to_path_buf(),
            detail: detail.into(),
        };
        if !crate::db::is_directory(dir)? {
            return Err(not_db("does not exist"));
        }
        // A writer may delete files (a compaction's inputs, a flushed WAL)
        // while they are opened here, and their data would be reported as
        // lost: salvage only a database no process is changing.
        if crate::Db::held_by_a_writer(dir) == Some(true) {
            return Err(Error::Locked(dir.to_path_buf()));
        }
        let listing: Vec<FileType> = filename::list_dir(&StdFs, dir)?
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        if !listing.iter().any(|t| {
            matches!(
                t,
                FileType::Current | FileType::Manifest(_) | FileType::Table(_) | FileType::Wal(_)
            )
        }) {
            return Err(not_db(
                "holds no siftdb file (no CURRENT, manifest, table or WAL) to salvage",
            ));
        }
        let (file_set, live) = choose_files(dir, &listing, keyspace)?;
        let selected = match (&live, keyspace) {
            (Some(live), _) => live.keyspace,
            (None, KeyspaceSelector::Id(id)) => *id,
            (None, k) if k.matches(0, None) => 0,
            (None, k) => {
                let FileSet::Directory { reason } = &file_set else {
                    unreachable!("no live set without a directory file set")
                };
                return Err(Error::InvalidArgument(format!(
                    "cannot salvage keyspace \"{k}\" of {} by name: keyspace names are in the \
                     manifest, which cannot be used ({reason}); select it by id",
                    dir.display()
                )));
            }
        };
        let mut salvage = Salvage {
            report: SalvageReport {
                dir: dir.to_path_buf(),
                keyspace: selected,
                keyspace_name: live.as_ref().map(|l| l.name.clone()),
                keyspaces: live
                    .as_ref()
                    .map(|l| l.keyspaces.clone())
                    .unwrap_or_default(),
                file_set,
                tables: Vec::new(),
                wals: Vec::new(),
                notes: Vec::new(),
                entries_read: 0,
                keys: 0,
                deleted: 0,
                possibly_stale: 0,
                finished: false,
            },
            wal_keyspaces: BTreeSet::new(),
            sources: Vec::new(),
            heap: BinaryHeap::new(),
            pending: Vec::new(),
            active: Vec::new(),
            range_tombstones: live
                .as_ref()
                .map(|l| l.range_tombstones.clone())
                .unwrap_or_default(),
            range_index: FragmentedRangeTombstones::default(),
        };
        let (tables, wals) = match &live {
            Some(live) => {
                let mut orphans: Vec<u64> = listing
                    .iter()
                    .filter_map(|t| match *t {
                        FileType::Table(n) if !live.all_tables.contains(&n) => Some(n),
                        _ => None,
                    })
                    .collect();
                orphans.sort_unstable();
                for n in orphans {
                    salvage.report.notes.push(format!(
                        "{n:06}.sst is not in the manifest: ignored (left by an interrupted \
                         flush or compaction; its entries are also in live files, or superseded)"
                    ));
                }
                let tables: Vec<(Option<usize>, u64, Option<&FileMetaData>)> = live
                    .tables
                    .iter()
                    .map(|(l, m)| (Some(*l), m.number, Some(m)))
                    .collect();
                let mut wals = wal_numbers(&listing, live.log_number);
                // A live table or WAL that is missing is read as lost (the
                // reads below fail and record it): its range is flagged.
                // Reading every file instead would bring back older values
                // without saying so. If the manifest lost edits, the files
                // it does not name may hold what is missing: say so.
                if live.log_number > 0 && wals.first() != Some(&live.log_number) {
                    wals.insert(0, live.log_number);
                }
                let missing = live
                    .tables
                    .iter()
                    .any(|(_, m)| !listing.contains(&FileType::Table(m.number)))
                    || (live.log_number > 0 && !listing.contains(&FileType::Wal(live.log_number)));
                if missing && !salvage.report.notes.is_empty() {
                    salvage.report.notes.push(
                        "a file the manifest names is missing: if the manifest lost edits, \
                         the tables it does not name (above) may hold that data"
                            .into(),
                    );
                }
                (tables, wals)
            }
            None => (Vec::new(), wal_numbers(&listing, 0)),
        };
        salvage.read_wals(dir, &wals)?;
        salvage.range_index = FragmentedRangeTombstones::new(&salvage.range_tombstones);
        for (level, number, meta) in tables {
            salvage.open_table(dir, level, number, meta)?;
        }
        if live.is_none() {
            salvage.open_tables_by_property(dir, &listing)?;
        }
        // Lost ranges known up front wait until the merge reaches them.
        salvage
            .pending
            .sort_by(|a, b| b.keys.first.cmp(&a.keys.first));
        let start: Vec<usize> = (0..salvage.sources.len()).collect();
        for s in start {
            salvage.refill(s);
        }
        Ok(salvage)
    }

    /// Without a manifest: opens every table of `listing` whose
    /// `siftdb.keyspace` property names the salvaged keyspace (absent: the
    /// default), and notes every keyspace met in
    /// [`SalvageReport::keyspaces`]. A table whose properties cannot be
    /// read (nor found: a damaged footer or index) belongs to no keyspace
    /// it can be told of: it is read if the
    /// directory shows no keyspace but the salvaged one, and otherwise
    /// skipped whole, with every key flagged as possibly stale (its data
    /// may be this keyspace's).
    ///
    /// # Errors
    /// As [`Salvage::open_table`].
    fn open_tables_by_property(&mut self, dir: &Path, listing: &[FileType]) -> Result<()> {
        let mut numbers: Vec<u64> = listing
            .iter()
            .filter_map(|t| match *t {
                FileType::Table(n) => Some(n),
                _ => None,
            })
            .collect();
        numbers.sort_unstable();
        let owners: Vec<(u64, Option<u32>)> = numbers
            .into_iter()
            .map(|n| (n, table_keyspace(&filename::table_path(dir, n))))
            .collect();
        let mut seen = std::mem::take(&mut self.wal_keyspaces);
        seen.extend(owners.iter().filter_map(|&(_, k)| k));
        let only_this = seen.iter().all(|&k| k == self.report.keyspace);
        self.report.keyspaces = seen.into_iter().collect();
        for (number, owner) in owners {
            match owner {
                Some(k) if k == self.report.keyspace => self.open_table(dir, None, number, None)?,
                Some(_) => {}
                None if only_this => self.open_table(dir, None, number, None)?,
                None => self.unowned_table(dir, number),
            }
        }
        Ok(())
    }

    /// Reports table `number`, whose keyspace cannot be told, as skipped
    /// whole: every key may be stale.
    fn unowned_table(&mut self, dir: &Path, number: u64) {
        let path = filename::table_path(dir, number);
        let size = std::fs::metadata(&path).ok().map(|m| m.len());
        self.pending.push(Lost::unknown(KeyRange::everything()));
        self.report.tables.push(TableSalvage {
            path,
            number,
            level: None,
            size,
            keys: KeyRange::everything(),
            data_blocks: 0,
            blocks_read: 0,
            entries: 0,
            skipped_blocks: Vec::new(),
            unreadable: Some(UnreadTable {
                what: "properties block".into(),
                offset: None,
                detail: "the table's keyspace (property siftdb.keyspace) cannot be read \
                         (footer, index or properties block damaged), and the directory \
                         holds several keyspaces: not read"
                    .into(),
            }),
            notes: Vec::new(),
        });
    }

    /// What was read and lost so far; final once the iterator has returned
    /// `None` ([`SalvageReport::finished`]).
    pub fn report(&self) -> &SalvageReport {
        &self.report
    }

    /// Merges whatever the iterator has not yet yielded (discarding it) and
    /// returns the final report.
    pub fn finish(mut self) -> SalvageReport {
        while self.next().is_some() {}
        self.report
    }

    /// Reads the salvaged keyspace's writes in the WALs numbered `numbers`
    /// into one sorted source, noting every keyspace their ops name.
    /// Damage is recorded, never an error.
    fn read_wals(&mut self, dir: &Path, numbers: &[u64]) -> Result<()> {
        let mut entries: Vec<Entry> = Vec::new();
        for &number in numbers {
            let path = filename::wal_path(dir, number);
            let mut w = WalSalvage {
                path: path.clone(),
                number,
                size: 0,
                records: 0,
                entries: 0,
                torn_tail: None,
                damage: None,
            };
            match read_wal(&path) {
                Ok(contents) => {
                    w.size = contents.size;
                    w.records = contents.records.len() as u64;
                    w.torn_tail = contents.torn_tail;
                    w.damage = contents.corruption.map(|e| damage_of(e, contents.size));
                    let ops = contents.records.into_iter().flat_map(|r| r.ops);
                    for op in ops {
                        self.wal_keyspaces.insert(op.keyspace);
                        if op.keyspace != self.report.keyspace {
                            continue;
                        }
                        w.entries += 1;
                        if op.value_type == ValueType::RangeDeletion {
                            self.range_tombstones.push(RangeTombstone {
                                end: (!op.value.is_empty()).then(|| op.value.to_vec()),
                                start: op.key.clone(),
                                seq: op.seq,
                            });
                            continue;
                        }
                        let key = InternalKey::new(&op.key, op.seq, op.value_type);
                        entries.push((key.into_encoded(), op.value));
                    }
                }
                Err(e) => {
                    w.damage = Some(WalDamage {
                        offset: 0,
                        detail: e.to_string(),
                    })
                }
            }
            if w.damage.is_some() {
                // Records after the damage are newer than everything else
                // in this WAL, and may touch any key.
                self.active.push(Lost::unknown(KeyRange::everything()));
            }
            self.report.wals.push(w);
        }
        if !entries.is_empty() {
            entries.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
            self.sources.push(Source::Wal(entries.into_iter()));
        }
        Ok(())
    }

    /// Opens table `number` (at `level`, with manifest entry `meta`, when
    /// the manifest is used) and adds it as a source, or records why not.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if its properties say it holds blocks of
    /// a codec this build lacks (zstd without the `zstd` feature): they are
    /// not lost, this build cannot read them, so the salvage is refused
    /// rather than reporting them lost.
    fn open_table(
        &mut self,
        dir: &Path,
        level: Option<usize>,
        number: u64,
        meta: Option<&FileMetaData>,
    ) -> Result<()> {
        let path = filename::table_path(dir, number);
        let mut t = TableSalvage {
            path: path.clone(),
            number,
            level,
            size: None,
            keys: meta.map_or_else(KeyRange::everything, |m| KeyRange {
                first: Some(m.smallest.user_key().to_vec()),
                last: Some(m.largest.user_key().to_vec()),
            }),
            data_blocks: 0,
            blocks_read: 0,
            entries: 0,
            skipped_blocks: Vec::new(),
            unreadable: None,
            notes: Vec::new(),
        };
        // A damaged footer or index does not lose the data blocks: they are
        // found by walking the file (`TableBlocks::open_by_scan`).
        let (table, walked) = match TableBlocks::open(&path) {
            Ok(table) => (table, None),
            Err(e) => {
                t.size = std::fs::metadata(&path).ok().map(|m| m.len());
                let unread = unread_table(e, t.size);
                let walk = (unread.what != "file")
                    .then(|| TableBlocks::open_by_scan(&path).ok())
                    .flatten()
                    .filter(|table| !table.index().is_empty());
                match walk {
                    Some(table) => (table, Some(unread)),
                    None => {
                        t.unreadable = Some(unread);
                        self.pending.push(Lost::unknown(t.keys.clone()));
                        self.report.tables.push(t);
                        return Ok(());
                    }
                }
            }
        };
        t.size = Some(table.file_size());
        t.data_blocks = table.index().len() as u64;
        let mut largest_seq = None;
        let mut policy_name = None;
        match table.properties() {
            Ok(p) => {
                if p.keyspace != self.report.keyspace {
                    // Only the manifest lists a table in a keyspace its
                    // property does not name: the manifest is followed.
                    t.notes.push(format!(
                        "its property siftdb.keyspace says keyspace {}, but the manifest \
                         lists it in keyspace {} (kvctl verify reports it): read as the \
                         manifest says",
                        p.keyspace, self.report.keyspace
                    ));
                }
                if let Some(c) = &p.compression {
                    let codec = c.codec.parse::<Compression>();
                    if let Ok(codec) = codec {
                        if !codec.is_available() && c.compressed_blocks > 0 {
                            return Err(Error::InvalidArgument(format!(
                                "{}: {} data blocks stored with {codec}: {NO_ZSTD}",
                                path.display(),
                                c.compressed_blocks,
                            )));
                        }
                    }
                }
                largest_seq = Some(p.largest_seq.0);
                policy_name = Some(p.filter_policy.clone());
                if meta.is_none() {
                    t.keys = KeyRange {
                        first: Some(p.smallest_user_key),
                        last: Some(p.largest_user_key),
                    };
                }
            }
            Err(e) => t.notes.push(format!(
                "properties block damaged ({e}): not needed to read entries; nothing lost"
            )),
        }
        // The table's largest key as the manifest or the properties give it
        // (not the index, which a walk made up).
        let known_last = t.keys.last.clone();
        let filter_policy = match table.filter() {
            Ok(Some(_)) => policy_name.as_deref().and_then(policy_for_name),
            Ok(None) => None,
            Err(e) => {
                t.notes.push(format!(
                    "filter block damaged ({e}): not needed to read entries; nothing lost"
                ));
                None
            }
        };
        if meta.is_none() && largest_seq.is_none() {
            // Without the manifest or the properties, the first block's
            // lower bound is unknown.
            t.keys = KeyRange {
                first: None,
                last: table
                    .index()
                    .last()
                    .map(|e| user_key_of(&e.last_key).to_vec()),
            };
        }
        if let Some(unread) = walked {
            self.walked_table(&mut t, &table, &unread, known_last, largest_seq);
        }
        self.sources.push(Source::Table(Box::new(TableCursor {
            table,
            report: self.report.tables.len(),
            next_block: 0,
            buffered: Vec::new().into_iter(),
            last_key: None,
            largest_seq,
            filter_policy,
            filter: None,
        })));
        self.report.tables.push(t);
        Ok(())
    }

    /// Reports table `t`, whose `unread` footer or index made the salvage
    /// find its data blocks by walking the file. The walk ends after the
    /// last data block or at damage; unless the last key it found is the
    /// table's largest user key (`known_last`, from the manifest or the
    /// properties), the rest of the data, from that key on, is lost.
    fn walked_table(
        &mut self,
        t: &mut TableSalvage,
        table: &TableBlocks,
        unread: &UnreadTable,
        known_last: Option<Vec<u8>>,
        largest_seq: Option<u64>,
    ) {
        let found = table.index();
        let Some(last) = found.last() else { return };
        let last_key = ParsedInternalKey::parse(&last.last_key)
            .map(|p| (p.user_key.to_vec(), p.seq.0))
            .unwrap_or_default();
        let complete = known_last.as_deref() == Some(last_key.0.as_slice());
        let at = unread
            .offset
            .map_or_else(String::new, |o| format!(" at offset {o}"));
        t.notes.push(format!(
            "{} damaged{at} ({}): {} data blocks found by walking the file{}",
            unread.what,
            unread.detail,
            found.len(),
            if complete {
                ", up to the table's largest key: nothing lost"
            } else {
                ""
            }
        ));
        if complete {
            return;
        }
        let stop = last.handle.offset + last.handle.size + BLOCK_TRAILER_LEN as u64;
        let keys = KeyRange {
            first: Some(last_key.0.clone()),
            last: known_last.clone(),
        };
        t.skipped_blocks.push(SkippedBlock {
            block: found.len() as u64,
            handle: BlockHandle {
                offset: stop,
                size: table.data_end().saturating_sub(stop),
            },
            keys: keys.clone(),
            detail: if known_last.is_some() {
                "no data block found from here by walking the file, short of the table's \
                 largest key: the rest of its data is lost"
            } else {
                "no data block found from here by walking the file, and the table's largest \
                 key is unknown: the rest of its data may be lost"
            }
            .into(),
        });
        self.pending.push(Lost {
            keys,
            max_seq: largest_seq,
            older_than: Some(last_key),
            filter: None,
        });
    }

    /// Pushes the next entry of source `s` onto the heap, if any.
    fn refill(&mut self, s: usize) {
        let next = match &mut self.sources[s] {
            Source::Wal(entries) => entries.next(),
            Source::Table(cursor) => {
                cursor.next_entry(&mut self.report, &mut self.active, &self.range_index)
            }
        };
        if let Some((key, value)) = next {
            self.heap.push(Head {
                key,
                value,
                source: s,
            });
        }
    }

    /// Pops the smallest entry and refills its source.
    fn pop(&mut self) -> Option<Head> {
        let head = self.heap.pop()?;
        self.report.entries_read += 1;
        self.refill(head.source);
        Some(head)
    }

    /// True if user key `key`, whose newest readable version has sequence
    /// `seq`, lies in a lost range that may have held a newer version.
    /// Called in ascending key order, after every version of `key` has
    /// been merged (so that every block that may hold `key` has been read
    /// or skipped).
    fn possibly_stale(&mut self, key: &[u8], seq: u64) -> bool {
        while let Some(l) = self
            .pending
            .pop_if(|l| l.keys.first.as_deref().is_none_or(|f| f <= key))
        {
            self.active.push(l);
        }
        self.active
            .retain(|l| l.keys.last.as_deref().is_none_or(|last| last >= key));
        self.active.iter().any(|l| l.may_be_newer(key, seq))
    }
}

impl Iterator for Salvage {
    type Item = SalvagedEntry;

    fn next(&mut self) -> Option<SalvagedEntry> {
        loop {
            let Some(newest) = self.pop() else {
                self.report.finished = true;
                return None;
            };
            // Older versions of the same user key lose.
            while self
                .heap
                .peek()
                .is_some_and(|h| user_key_of(&h.key) == user_key_of(&newest.key))
            {
                self.pop();
            }
            let Some(p) = ParsedInternalKey::parse(&newest.key) else {
                continue; // Not reached: sources check every key.
            };
            if p.value_type == ValueType::Deletion
                || self
                    .range_index
                    .max_covering(p.user_key, SequenceNumber::MAX)
                    > p.seq
            {
                self.report.deleted += 1;
                continue;
            }
            let (seq, key) = (p.seq, p.user_key.to_vec());
            let stale = self.possibly_stale(&key, seq.0);
            self.report.keys += 1;
            self.report.possibly_stale += u64::from(stale);
            return Some(SalvagedEntry {
                key,
                value: newest.value,
                seq,
                possibly_stale: stale,
            });
        }
    }
}

impl TableCursor {
    /// The table's next entry, reading (and checking) the next data block
    /// when the current one is used up; damaged blocks are recorded in
    /// `report` and their key ranges added to `lost`, except those whose
    /// every key the range deletions in `hidden_by` hide (a note).
    fn next_entry(
        &mut self,
        report: &mut SalvageReport,
        lost: &mut Vec<Lost>,
        hidden_by: &FragmentedRangeTombstones,
    ) -> Option<Entry> {
        loop {
            if let Some(e) = self.buffered.next() {
                return Some(e);
            }
            let i = self.next_block;
            let entry = self.table.index().get(i)?.clone();
            self.next_block += 1;
            let read = self.read_block(i);
            let t = &mut report.tables[self.report];
            match read {
                Ok(entries) => {
                    t.blocks_read += 1;
                    t.entries += entries.len() as u64;
                    self.last_key = entries.last().map(|e| e.0.clone()).or(self.last_key.take());
                    self.buffered = entries.into_iter();
                }
                Err(e) => {
                    let prev = i
                        .checked_sub(1)
                        .and_then(|p| ParsedInternalKey::parse(&self.table.index()[p].last_key))
                        .map(|p| (p.user_key.to_vec(), p.seq.0));
                    let first = match &prev {
                        Some((k, _)) => Some(k.clone()),
                        None => t.keys.first.clone(),
                    };
                    let keys = KeyRange {
                        first,
                        last: Some(user_key_of(&entry.last_key).to_vec()),
                    };
                    let detail = match e {
                        Error::Corruption { detail, .. } => detail,
                        e => e.to_string(),
                    };
                    if let Some(seq) = self.largest_seq {
                        if hides_all(hidden_by, &keys, seq) {
                            t.notes.push(format!(
                                "data block {i} damaged ({detail}): every key it may hold is \
                                 hidden by a newer range deletion, so nothing visible was lost"
                            ));
                            continue;
                        }
                    }
                    t.skipped_blocks.push(SkippedBlock {
                        block: i as u64,
                        handle: entry.handle,
                        keys: keys.clone(),
                        detail,
                    });
                    lost.push(Lost {
                        keys,
                        max_seq: self.largest_seq,
                        older_than: prev,
                        filter: self.filter(),
                    });
                }
            }
        }
    }

    /// The table's filter, if usable (copied once, on first use).
    fn filter(&mut self) -> Option<Arc<TableFilter>> {
        if self.filter.is_none() {
            let policy = self.filter_policy.clone()?;
            let bytes = self.table.filter().ok().flatten()?.to_vec();
            self.filter = Some(Arc::new(TableFilter { policy, bytes }));
        }
        self.filter.clone()
    }

    /// Every entry of data block `i`, checked: well-formed internal keys in
    /// strictly increasing order, continuing from the previous block.
    fn read_block(&self, i: usize) -> Result<Vec<Entry>> {
        let handle = self.table.index()[i].handle;
        let contents = self.table.read_block(handle)?;
        let block = crate::sstable::Block::new(&contents, self.table.path(), handle.offset)?;
        checked_data_entries(
            &block,
            self.last_key.as_deref(),
            self.table.path(),
            handle.offset,
        )
    }
}

// ---------------------------------------------------------------- files

/// The live set of a usable manifest, for the salvaged keyspace.
#[derive(Debug)]
struct LiveSet {
    /// The salvaged keyspace's id and name.
    keyspace: u32,
    name: String,
    /// Every live keyspace's id.
    keyspaces: Vec<u32>,
    /// Every live table of every keyspace (the others are not orphans).
    all_tables: BTreeSet<u64>,
    /// `(level, metadata)` of each live table of the salvaged keyspace,
    /// level by level.
    tables: Vec<(usize, FileMetaData)>,
    /// The salvaged keyspace's log number.
    log_number: u64,
    /// The flushed range deletions the manifest lists.
    range_tombstones: Vec<RangeTombstone>,
}

/// The WALs in `listing` numbered at least `log_number`, in order.
/// True if range deletions in `index` newer than `seq` cover every user
/// key of `keys` (`first` `None`: from the smallest key): a block whose
/// table's entries are all at or below `seq` then holds nothing a reader
/// could see, nor anything that hides an older visible version (every
/// older version is older than the deletions too).
fn hides_all(index: &FragmentedRangeTombstones, keys: &KeyRange, seq: u64) -> bool {
    let Some(last) = keys.last.as_deref() else {
        return false;
    };
    let mut key = keys.first.clone().unwrap_or_default();
    // Each step moves past one fragment or gap, so this ends.
    loop {
        let (covering, _, end) = index.covering_span(&key, SequenceNumber(u64::MAX));
        if covering.0 <= seq {
            return false;
        }
        match end {
            None => return true,
            Some(end) if end > last => return true,
            Some(end) => key = end.to_vec(),
        }
    }
}

fn wal_numbers(listing: &[FileType], log_number: u64) -> Vec<u64> {
    let mut v: Vec<u64> = listing
        .iter()
        .filter_map(|t| match *t {
            FileType::Wal(n) if n >= log_number => Some(n),
            _ => None,
        })
        .collect();
    v.sort_unstable();
    v
}

/// Chooses the files to read: the live set of the keyspace `keyspace`
/// selects in a manifest, if one is usable (module docs), else the whole
/// directory.
///
/// # Errors
/// [`Error::UnsupportedVersion`] for a manifest newer than this build;
/// [`Error::NoSuchKeyspace`] if the usable manifest holds no keyspace so
/// selected.
fn choose_files(
    dir: &Path,
    listing: &[FileType],
    keyspace: &KeyspaceSelector,
) -> Result<(FileSet, Option<LiveSet>)> {
    let directory = |reason: String| Ok((FileSet::Directory { reason }, None));
    let manifests: Vec<u64> = listing
        .iter()
        .filter_map(|t| match *t {
            FileType::Manifest(n) => Some(n),
            _ => None,
        })
        .collect();
    let current = match read_current(dir) {
        Ok(Some(n)) if manifests.contains(&n) => Ok(n),
        Ok(Some(n)) => Err(format!(
            "CURRENT cannot be used: {}",
            dangling_current(&filename::manifest_path(dir, n))
        )),
        Ok(None) => Err("CURRENT does not exist".to_string()),
        Err(e) => Err(format!("CURRENT cannot be used: {e}")),
    };
    let (number, current_problem) = match (current, manifests.as_slice()) {
        (Ok(n), _) => (n, None),
        (Err(why), [only]) => (*only, Some(why)),
        (Err(why), []) => return directory(format!("{why}, and there is no manifest")),
        (Err(why), several) => {
            return directory(format!(
                "{why}, and there are {} manifests to choose from",
                several.len()
            ))
        }
    };
    let path = filename::manifest_path(dir, number);
    let name = file_name(&path);
    let manifest = match read_manifest(&path) {
        Ok(m) => m,
        Err(e @ Error::UnsupportedVersion { .. }) => return Err(e),
        Err(e) => return directory(format!("{name} cannot be read: {e}")),
    };
    let state = match manifest.replay_all() {
        Ok(s) => s,
        Err(e) => return directory(format!("{name} does not replay: {e}")),
    };
    let tree = state
        .trees()
        .find(|t| keyspace.matches(t.id, Some(t.name)))
        .ok_or_else(|| keyspace.missing())?;
    let tables: Vec<(usize, FileMetaData)> = tree
        .files
        .iter()
        .enumerate()
        .flat_map(|(level, files)| files.values().map(move |m| (level, m.clone())))
        .collect();
    let file_set = FileSet::Manifest {
        path,
        current_problem,
        edits: manifest.records.len() as u64,
        log_number: tree.log_number,
        torn_tail: manifest.torn_tail.clone(),
    };
    Ok((
        file_set,
        Some(LiveSet {
            keyspace: tree.id,
            name: tree.name.to_string(),
            keyspaces: state.trees().map(|t| t.id).collect(),
            all_tables: state
                .trees()
                .flat_map(|t| t.files.iter().flat_map(|l| l.keys().copied()))
                .collect(),
            tables,
            log_number: tree.log_number,
            range_tombstones: tree
                .range_tombstones
                .iter()
                .map(|t| t.tombstone.clone())
                .collect(),
        }),
    ))
}

/// The keyspace the table at `path` belongs to, by its `siftdb.keyspace`
/// property (absent: the default), or `None` if its footer, index or
/// properties block cannot be read.
fn table_keyspace(path: &Path) -> Option<u32> {
    let table = TableBlocks::open(path).ok()?;
    table.properties().ok().map(|p| p.keyspace)
}

/// The damage a WAL read stopped at (`size` bytes long).
fn damage_of(e: Error, size: u64) -> WalDamage {
    match e {
        Error::Corruption { offset, detail, .. } => WalDamage {
            offset: offset.min(size),
            detail,
        },
        e => WalDamage {
            offset: 0,
            detail: e.to_string(),
        },
    }
}

/// Why [`TableBlocks::open`] failed, as an [`UnreadTable`]; `size` is the
/// file's size if known.
fn unread_table(e: Error, size: Option<u64>) -> UnreadTable {
    match e {
        Error::Corruption { offset, detail, .. } => {
            let in_footer =
                size.is_none_or(|s| s < FOOTER_LEN as u64 || offset >= s - FOOTER_LEN as u64);
            UnreadTable {
                what: if in_footer { "footer" } else { "index block" }.into(),
                offset: Some(offset),
                detail,
            }
        }
        e @ Error::UnsupportedVersion { .. } => UnreadTable {
            what: "footer".into(),
            offset: size.and_then(|s| s.checked_sub(FOOTER_LEN as u64)),
            detail: e.to_string(),
        },
        e => UnreadTable {
            what: "file".into(),
            offset: None,
            detail: e.to_string(),
        },
    }
}
