//! What a salvage read and what it could not: the [`SalvageReport`], the
//! per-file records in it, and the [`SalvagedEntry`] the salvage yields.

use std::ops::Range;
use std::path::PathBuf;

#[cfg(doc)]
use super::Salvage;
use crate::key::SequenceNumber;
use crate::log::TornTail;
use crate::sstable::BlockHandle;

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
    /// Which part failed: `"file"` (missing, unreadable, or another table
    /// than the manifest records under its name), `"footer"` or `"index
    /// block"`.
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
