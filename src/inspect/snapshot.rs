//! [`DbSnapshot`]: a consistent, read-only view of a whole database.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::logs::{current_manifest, read_pinned_wals};
use super::{
    missing_live_file, missing_or, read_manifest, with_retries, KeyspaceSelector, LoadError,
    ManifestContents, TableInfo,
};
use crate::db::pin_wals;
use crate::fs::StdFs;
use crate::key::SequenceNumber;
use crate::key::ValueType;
use crate::log::TornTail;
use crate::memtable::MemTable;
use crate::stats::{Counters, KeyspaceStats, MemoryUsage};
use crate::version::set::{ReplayedState, TableFile, Version};
use crate::{Error, LevelStats, Result, Stats};

/// A live WAL of a [`DbSnapshot`]; its writes are in the trees'
/// [`WalMem`]s.
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
    /// Puts and deletes in them, in every keyspace.
    pub ops: u64,
    /// Range deletions in them, in every keyspace (not in `ops`).
    pub range_deletions: u64,
    /// Where an incomplete final record starts, if any.
    pub torn_tail: Option<TornTail>,
}

/// One keyspace's writes in one live WAL, replayed into a memtable.
#[derive(Debug)]
pub struct WalMem {
    /// The WAL's file number.
    pub wal: u64,
    /// Range deletions among them (the memtable holds them apart from
    /// its entries).
    pub range_deletions: u64,
    /// The updates, as a memtable of this WAL would hold them.
    pub mem: MemTable,
}

/// One keyspace's tree in a [`DbSnapshot`]: its tables and the writes the
/// live WALs hold for it.
#[derive(Debug)]
pub struct KeyspaceTree {
    /// Its id: 0 for the default keyspace.
    pub id: u32,
    /// Its name (`default` for id 0).
    pub name: String,
    /// Its log number in the manifest: its writes in older WALs are in
    /// its tables.
    pub log_number: u64,
    /// Its live tables, per level, in the order a lookup visits them:
    /// level 0 newest first, deeper levels by smallest key (the engine's
    /// own [`Version`] ordering).
    pub version: Version,
    /// Its writes in each live WAL numbered at least its log number, one
    /// memtable per WAL (empty ones included), oldest first.
    pub mems: Vec<WalMem>,
}

impl KeyspaceTree {
    /// Every live table of the keyspace, level 0 first, in lookup order.
    pub fn files(&self) -> impl Iterator<Item = (usize, &Arc<TableFile>)> {
        self.version.files()
    }

    /// One [`TableInfo`] per live table of the keyspace, in lookup order.
    pub fn tables(&self) -> Vec<TableInfo> {
        self.files()
            .map(|(level, f)| TableInfo::new(Some(level), &f.table))
            .collect()
    }

    /// What [`crate::Keyspace::stats`] reports of its tree (memtables
    /// as replayed, counters 0).
    fn stats(&self) -> KeyspaceStats {
        KeyspaceStats {
            id: self.id,
            name: self.name.clone(),
            levels: LevelStats::of_version(&self.version),
            memtable_bytes: self
                .mems
                .iter()
                .map(|m| m.mem.approximate_size() as u64)
                .sum(),
            log_number: self.log_number,
            range_tombstones: self.version.range_tombstones.len() as u64
                + self.mems.iter().map(|m| m.range_deletions).sum::<u64>(),
            ..KeyspaceStats::default()
        }
    }
}

/// A consistent, read-only view of a database: the manifest `CURRENT`
/// names, every live SSTable of every keyspace opened (memory-mapped, so
/// a later deletion does not disturb it) and every live WAL replayed into
/// memory, each op into its keyspace's tree.
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
    /// One tree per live keyspace: the default first, then by id.
    pub keyspaces: Vec<KeyspaceTree>,
    /// Live WALs (numbered at least the smallest log number of any
    /// keyspace), oldest first.
    pub wals: Vec<LiveWal>,
    /// The sequence number reads see: the largest of the manifest's, the
    /// tables' and the WALs' (as [`crate::Db::open_read_only`] computes it).
    pub last_sequence: SequenceNumber,
}

impl DbSnapshot {
    /// Reads the database in `dir`: `CURRENT`, the manifest, every live
    /// table of every keyspace and every live WAL, retrying while another
    /// process changes the file set under it (see the module docs).
    ///
    /// # Errors
    /// [`Error::NotADatabase`](crate::Error::NotADatabase) without
    /// `CURRENT`; [`Error::Corruption`](crate::Error::Corruption) for
    /// damaged files (a torn WAL or manifest tail is not damage), a live
    /// file missing, or a WAL op of a keyspace the manifest does not hold
    /// (once a reread finds the manifest unchanged);
    /// [`Error::Io`](crate::Error::Io) (kind `NotFound`) for a file that
    /// kept vanishing;
    /// [`Error::UnsupportedVersion`](crate::Error::UnsupportedVersion) for
    /// a newer format.
    pub fn open(dir: &Path) -> Result<DbSnapshot> {
        current_manifest(dir)?;
        let missing = |p: &Path| match current_manifest(dir) {
            Ok((_, m)) => Err(missing_live_file(&m, p)),
            Err(e) => Err(e),
        };
        with_retries(dir, || DbSnapshot::load(dir, &mut || {}), missing)
    }

    /// One attempt of [`DbSnapshot::open`]; `after_manifest` runs once the
    /// manifest is read (tests make a writer change the database there).
    fn load(
        dir: &Path,
        after_manifest: &mut dyn FnMut(),
    ) -> std::result::Result<DbSnapshot, LoadError> {
        // As `Db::open_read_only` does: WALs are opened before the manifest
        // is read, and every table is mapped before any is decoded, so that
        // a writer's flush or compaction can only get in during the short
        // mapping (an open or mapped file outlives its name).
        let pinned = pin_wals(&StdFs, dir)?;
        let (manifest_number, manifest_path) = current_manifest(dir)?;
        let manifest = read_manifest(&manifest_path).map_err(|e| missing_or(&manifest_path, e))?;
        let state = manifest.replay_all()?;
        after_manifest();
        let mut last_seq = state.last_sequence;
        let mut keyspaces = Vec::with_capacity(1 + state.keyspaces.len());
        for t in state.trees() {
            let (version, tables_seq) = Version::load_tree(dir, t.files, t.range_tombstones)
                .map_err(|(path, e)| missing_or(&path, e))?;
            last_seq = last_seq.max(tables_seq.0);
            keyspaces.push(KeyspaceTree {
                id: t.id,
                name: t.name.to_string(),
                log_number: t.log_number,
                version,
                mems: Vec::new(),
            });
        }
        let mut wals = Vec::new();
        for contents in read_pinned_wals(pinned, dir, &state)? {
            if let Some(e) = contents.corruption {
                return Err(e.into());
            }
            let number = contents.number.unwrap_or_default();
            // One memtable per keyspace whose log number this WAL reaches;
            // its ops of older keyspaces' WALs are in their tables.
            let mut mems: Vec<Option<WalMem>> = keyspaces
                .iter()
                .map(|k| {
                    (number >= k.log_number).then(|| WalMem {
                        wal: number,
                        range_deletions: 0,
                        mem: MemTable::new(number),
                    })
                })
                .collect();
            for r in &contents.records {
                for op in &r.ops {
                    let Some(i) = keyspaces.iter().position(|k| k.id == op.keyspace) else {
                        // A dropped keyspace's write (ids are never
                        // reused): skipped, as the open skips it.
                        if op.keyspace < state.next_keyspace_id {
                            continue;
                        }
                        // An add edit is durable before its keyspace takes
                        // a write: damage, or a keyspace created after the
                        // manifest was read (read it again).
                        return Err(LoadError::Stale(Error::corruption(
                            &contents.path,
                            r.offset,
                            format!(
                                "a write to keyspace {}, which the manifest does not hold",
                                op.keyspace
                            ),
                        )));
                    };
                    last_seq = last_seq.max(op.seq.0);
                    if let Some(m) = &mut mems[i] {
                        if op.value_type == ValueType::RangeDeletion {
                            m.range_deletions += 1;
                        }
                        m.mem.insert(&op.key, op.seq, op.value_type, &op.value);
                    }
                }
            }
            for (tree, mem) in keyspaces.iter_mut().zip(mems) {
                tree.mems.extend(mem);
            }
            let range_deletions = contents.range_deletions();
            let ops = contents.ops() - range_deletions;
            wals.push(LiveWal {
                number,
                path: contents.path,
                size: contents.size,
                records: contents.records.len() as u64,
                ops,
                range_deletions,
                torn_tail: contents.torn_tail,
            });
        }
        Ok(DbSnapshot {
            dir: dir.to_path_buf(),
            manifest_number,
            manifest,
            state,
            keyspaces,
            wals,
            last_sequence: SequenceNumber(last_seq),
        })
    }

    /// The default keyspace's tree.
    pub fn default_tree(&self) -> &KeyspaceTree {
        &self.keyspaces[0]
    }

    /// The tree of the keyspace `keyspace` selects.
    ///
    /// # Errors
    /// [`Error::NoSuchKeyspace`](crate::Error::NoSuchKeyspace) if no live
    /// keyspace is so selected.
    pub fn tree(&self, keyspace: &KeyspaceSelector) -> Result<&KeyspaceTree> {
        self.keyspaces
            .iter()
            .find(|k| keyspace.matches(k.id, Some(&k.name)))
            .ok_or_else(|| keyspace.missing())
    }

    /// Every live table of every keyspace (the default's first), each
    /// keyspace's in lookup order.
    pub fn files(&self) -> impl Iterator<Item = (usize, &Arc<TableFile>)> {
        self.keyspaces.iter().flat_map(|k| k.files())
    }

    /// One [`TableInfo`] per live table of every keyspace, in the order of
    /// [`DbSnapshot::files`] (a table's keyspace is in its properties).
    pub fn tables(&self) -> Vec<TableInfo> {
        self.files()
            .map(|(level, f)| TableInfo::new(Some(level), &f.table))
            .collect()
    }

    /// What [`crate::Db::stats`] reports for this state: the default
    /// keyspace's per-level shape (sizes as the manifest records them), the
    /// lifetime totals of manifest tags 7 and 8, so that
    /// [`Stats::write_amplification`] applies, the default's filter memory
    /// (with no budget: the tool does not apply the options) and key
    /// predictions, the memory every keyspace's open tables hold (no
    /// memtables, as a database has none until written to), and one
    /// [`KeyspaceStats`] per keyspace (memtables as the WALs replay). The
    /// event counters are 0: nothing was read through a `Db`.
    pub fn stats(&self) -> Stats {
        let totals = (
            self.state.user_bytes_flushed,
            self.state.table_bytes_written,
        );
        let default = &self.default_tree().version;
        let filters = crate::version::filter_memory::FilterMemory::of(default, None);
        let mut memory = MemoryUsage::default();
        for k in &self.keyspaces {
            memory.add_tree(&MemoryUsage::of_version(&k.version), 0);
        }
        let mut stats = Counters::default().snapshot(
            LevelStats::of_version(default),
            filters,
            totals,
            memory,
            self.state.key_predictions.iter().copied().collect(),
        );
        stats.keyspaces = self.keyspaces.iter().map(KeyspaceTree::stats).collect();
        stats.range_tombstones = stats.keyspaces[0].range_tombstones;
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::build;
    use super::super::{filter_settings, level_summaries, FilterSetting};
    use super::*;
    use crate::filter::BLOOM_POLICY_NAME;

    /// A keyspace created, and written to, after the manifest was read:
    /// its op in a pinned WAL names a keyspace the manifest read lacks.
    /// That is no damage: the manifest changed, so the snapshot reads it
    /// again and sees the keyspace.
    #[test]
    fn a_keyspace_created_after_the_manifest_was_read_is_read_again() {
        let tmp = tempfile::tempdir().unwrap();
        let db = build(tmp.path());
        let dir = tmp.path();
        let mut attempts = 0;
        let snap = with_retries(
            dir,
            || {
                attempts += 1;
                DbSnapshot::load(dir, &mut || {
                    if attempts == 1 {
                        db.keyspace("late").unwrap().put("k", "v").unwrap();
                    }
                })
            },
            |p| panic!("{} missing", p.display()),
        )
        .unwrap();
        assert_eq!(attempts, 2);
        let late = snap.tree(&KeyspaceSelector::Name("late".into())).unwrap();
        assert_eq!(late.mems.iter().map(|m| m.mem.len()).sum::<usize>(), 1);
        // The first attempt alone found an op of a keyspace it did not know.
        let e = DbSnapshot::load(dir, &mut || {
            db.keyspace("later").unwrap().put("k", "v").unwrap()
        });
        match e {
            Err(LoadError::Stale(e)) => {
                assert!(
                    e.to_string().contains("which the manifest does not hold"),
                    "{e}"
                )
            }
            Err(_) => panic!("expected a stale read, got another error"),
            Ok(_) => panic!("expected a stale read, got a snapshot"),
        }
    }

    #[test]
    fn snapshot_sees_tables_and_wal() {
        let tmp = tempfile::tempdir().unwrap();
        let db = build(tmp.path());
        let snap = DbSnapshot::open(tmp.path()).unwrap();
        assert_eq!(snap.default_tree().version.levels[0].len(), 3);
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
