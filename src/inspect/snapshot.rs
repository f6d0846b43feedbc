//! [`DbSnapshot`]: a consistent, read-only view of a whole database.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::logs::{current_manifest, read_pinned_wals};
use super::{
    missing_live_file, missing_or, read_manifest, with_retries, LoadError, ManifestContents,
    TableInfo,
};
use crate::db::pin_wals;
use crate::fs::StdFs;
use crate::key::SequenceNumber;
use crate::log::TornTail;
use crate::memtable::MemTable;
use crate::stats::{Counters, MemoryUsage};
use crate::version::set::{ReplayedState, TableFile, Version};
use crate::write_batch::refuse_keyspace_ops;
use crate::{LevelStats, Result, Stats};

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
    /// Puts and deletes in them.
    pub ops: u64,
    /// Range deletions in them (not in `ops`).
    pub range_deletions: u64,
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

impl DbSnapshot {
    /// Reads the database in `dir`: `CURRENT`, the manifest, every live
    /// table and every live WAL, retrying while another process changes
    /// the file set under it (see the module docs).
    ///
    /// # Errors
    /// [`Error::NotADatabase`](crate::Error::NotADatabase) without
    /// `CURRENT`; [`Error::Corruption`](crate::Error::Corruption) for
    /// damaged files (a torn WAL or manifest tail is not damage) or a live
    /// file missing; [`Error::Io`](crate::Error::Io) (kind `NotFound`) for
    /// a file that kept vanishing;
    /// [`Error::UnsupportedVersion`](crate::Error::UnsupportedVersion) for
    /// a newer format; [`Error::InvalidArgument`](crate::Error::InvalidArgument)
    /// for a database with keyspaces other than the default, which this
    /// build does not serve (DESIGN.md 12.3, 12.8).
    pub fn open(dir: &Path) -> Result<DbSnapshot> {
        current_manifest(dir)?;
        let missing = |p: &Path| match current_manifest(dir) {
            Ok((_, m)) => Err(missing_live_file(&m, p)),
            Err(e) => Err(e),
        };
        with_retries(dir, || DbSnapshot::load(dir), missing)
    }

    fn load(dir: &Path) -> std::result::Result<DbSnapshot, LoadError> {
        // As `Db::open_read_only` does: WALs are opened before the manifest
        // is read, and every table is mapped before any is decoded, so that
        // a writer's flush or compaction can only get in during the short
        // mapping (an open or mapped file outlives its name).
        let pinned = pin_wals(&StdFs, dir)?;
        let (manifest_number, manifest_path) = current_manifest(dir)?;
        let manifest = read_manifest(&manifest_path).map_err(|e| missing_or(&manifest_path, e))?;
        let state = manifest.replay()?;
        let (version, tables_seq) =
            Version::load(dir, &state).map_err(|(path, e)| missing_or(&path, e))?;
        let mut last_seq = state.last_sequence.max(tables_seq.0);
        let mut wals = Vec::new();
        for contents in read_pinned_wals(pinned, dir, state.log_number)? {
            if let Some(e) = contents.corruption {
                return Err(e.into());
            }
            let number = contents.number.unwrap_or_default();
            let range_deletions = contents.range_deletions();
            let mem = MemTable::new(number);
            for r in &contents.records {
                // As at open (db::recovery): never into the default's
                // memtable, never skipped.
                refuse_keyspace_ops(&contents.path, r.offset, r.ops.iter().map(|o| o.keyspace))?;
            }
            for op in contents.records.iter().flat_map(|r| &r.ops) {
                mem.insert(&op.key, op.seq, op.value_type, &op.value);
                last_seq = last_seq.max(op.seq.0);
            }
            wals.push(LiveWal {
                number,
                path: contents.path,
                size: contents.size,
                records: contents.records.len() as u64,
                ops: mem.len() as u64,
                range_deletions,
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

    /// What [`crate::Db::stats`] reports for this state: per-level shape
    /// (sizes as the manifest records them) and the lifetime totals of
    /// manifest tags 7 and 8, so that [`Stats::write_amplification`]
    /// applies, the filter memory (with no budget: options are not
    /// stored) and the memory its open tables hold (no memtables: the WAL
    /// is not replayed) and the key predictions the manifest keeps. The
    /// event counters are 0: nothing was read through a `Db`.
    pub fn stats(&self) -> Stats {
        let totals = (
            self.state.user_bytes_flushed,
            self.state.table_bytes_written,
        );
        let filters = crate::version::filter_memory::FilterMemory::of(&self.version, None);
        let memory = MemoryUsage::of_version(&self.version);
        Counters::default().snapshot(
            LevelStats::of_version(&self.version),
            filters,
            totals,
            memory,
            self.state.key_predictions.iter().copied().collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::build;
    use super::super::{filter_settings, level_summaries, FilterSetting};
    use super::*;
    use crate::filter::BLOOM_POLICY_NAME;

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
        // The same shape and totals as the engine's own stats.
        let (stats, engine) = (snap.stats(), db.stats());
        assert_eq!(stats.levels, engine.levels);
        assert_eq!(stats.write_amplification(), engine.write_amplification());
        assert!(stats.write_amplification() > 0.0);
    }
}
