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
//!
//! The parts: `report`, what a salvage read and lost ([`SalvageReport`]
//! and the types in it); `file_set`, which files it reads (a usable
//! manifest's live set, or the whole directory); `directory`, the tables
//! of the salvaged keyspace without a manifest; `wals` and `tables`,
//! reading the sources (a damaged table's blocks found by walking it);
//! `merge`, merging them and flagging keys the lost data may hide.

use std::collections::{BTreeSet, BinaryHeap};
use std::path::Path;

use super::KeyspaceSelector;
use crate::filename::{self, FileType};
use crate::fs::StdFs;
use crate::range_tombstone::{FragmentedRangeTombstones, RangeTombstone};
#[cfg(doc)]
use crate::sstable::TableBlocks;
use crate::version::edit::FileMetaData;
use crate::{Error, Result};

mod directory;
mod file_set;
mod merge;
mod report;
mod tables;
mod wals;

use file_set::{choose_files, wal_numbers};
use merge::{Head, Lost, Source};
pub use report::{
    FileSet, KeyRange, SalvageReport, SalvagedEntry, SkippedBlock, TableSalvage, UnreadTable,
    WalDamage, WalSalvage,
};

/// One entry: encoded internal key and value.
type Entry = (Vec<u8>, Vec<u8>);

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
}
