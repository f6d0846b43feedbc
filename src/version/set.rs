//! [`Version`]: the set of SSTables that make up the tree at one moment,
//! level by level, and how a [`VersionEdit`] turns one version into the
//! next.
//!
//! Versions are immutable and shared by `Arc`: a reader pins the version it
//! started with, so the files it reads stay open (and, once compaction
//! deletes files, on disk) until it is done.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::filename;
use crate::fs::FileSystem;
use crate::key::SequenceNumber;
use crate::sstable::{MappedTable, Table};
use crate::stats::KeyPrediction;
use crate::version::edit::{FileMetaData, VersionEdit, DEFAULT_KEYSPACE_NAME};
use crate::version::range_tombstones::RangeTombstoneSet;
use crate::{Error, Result};

/// Number of levels in the tree (level 0 plus six sorted levels).
pub const NUM_LEVELS: usize = 7;

/// One SSTable of a version: its manifest metadata and the open table.
///
/// Every version that lists the file shares one `Arc<TableFile>`, and so
/// does every reader of those versions. Once a compaction's manifest edit
/// removes the file, it is marked obsolete, and the file is deleted when the
/// last `Arc` goes: when no version, iterator or lookup uses it any more
/// (leveldb `doc/impl.md`, "Garbage collection of files").
#[derive(Debug)]
pub struct TableFile {
    /// Number, size and key range, as recorded in the manifest.
    pub meta: FileMetaData,
    /// The open, memory-mapped table.
    pub table: Arc<Table>,
    /// Set by `mark_obsolete`: the file system to delete the file through.
    obsolete: OnceLock<Arc<dyn FileSystem>>,
}

impl Drop for TableFile {
    fn drop(&mut self) {
        if let Some(fs) = self.obsolete.get() {
            // A failure leaves an orphan that the next open removes.
            let _ = fs.remove_file(self.table.path());
        }
    }
}

impl TableFile {
    /// Wraps an open table and its metadata.
    pub fn new(meta: FileMetaData, table: Arc<Table>) -> Self {
        TableFile {
            meta,
            table,
            obsolete: OnceLock::new(),
        }
    }

    /// Marks the file for deletion through `fs` once nothing uses it. Call
    /// only after the manifest edit that removes it is durable.
    pub fn mark_obsolete(&self, fs: Arc<dyn FileSystem>) {
        let _ = self.obsolete.set(fs);
    }

    /// Smallest user key in the file.
    pub fn smallest_user_key(&self) -> &[u8] {
        self.meta.smallest.user_key()
    }

    /// Largest user key in the file.
    pub fn largest_user_key(&self) -> &[u8] {
        self.meta.largest.user_key()
    }
}

/// The files of the tree, per level.
///
/// Level 0 holds files whose key ranges may overlap, ordered newest first
/// (by largest sequence number, then file number), so that a point read
/// can stop at the first hit. Levels 1 and up hold files with disjoint key
/// ranges ordered by smallest key.
#[derive(Debug, Clone, Default)]
pub struct Version {
    /// `levels[i]` is level `i`; always `NUM_LEVELS` long.
    pub levels: Vec<Vec<Arc<TableFile>>>,
    /// The range deletions flushed so far that may still hide a version
    /// in one of these tables (DESIGN.md 3.7).
    pub range_tombstones: RangeTombstoneSet,
}

impl Version {
    /// A version with no files.
    pub fn empty() -> Self {
        Version {
            levels: vec![Vec::new(); NUM_LEVELS],
            range_tombstones: RangeTombstoneSet::default(),
        }
    }

    /// Every file, level 0 first.
    pub fn files(&self) -> impl Iterator<Item = (usize, &Arc<TableFile>)> {
        self.levels
            .iter()
            .enumerate()
            .flat_map(|(l, files)| files.iter().map(move |f| (l, f)))
    }

    /// The version that results from applying `edit`, whose new files are
    /// already open in `opened` (keyed by file number).
    ///
    /// # Errors
    /// [`Error::Corruption`] if the edit deletes a file the version lacks,
    /// adds a file twice, names a level beyond [`NUM_LEVELS`], lacks an
    /// opened table for a new file, or breaks a rule of
    /// [`RangeTombstoneSet::apply`].
    pub fn apply(
        &self,
        edit: &VersionEdit,
        opened: &mut BTreeMap<u64, Arc<Table>>,
    ) -> Result<Version> {
        let mut levels = self.levels.clone();
        // The files deleted, so that one the same edit adds again (moved
        // to another level) stays the same `TableFile`: it is deleted from
        // disk only when no version lists it at any level (a checkpoint
        // links it by name from a version it pinned before the move).
        let mut removed: Vec<Arc<TableFile>> = Vec::new();
        for &(level, number) in &edit.deleted_files {
            let files = levels
                .get_mut(level as usize)
                .ok_or_else(|| bad_edit(format!("level {level} out of range")))?;
            let before = files.len();
            files.retain(|f| {
                let keep = f.meta.number != number;
                if !keep {
                    removed.push(Arc::clone(f));
                }
                keep
            });
            if files.len() == before {
                return Err(bad_edit(format!(
                    "deletes file {number} absent from level {level}"
                )));
            }
        }
        for (level, meta) in &edit.new_files {
            if self.files().any(|(_, f)| f.meta.number == meta.number)
                && !edit.deleted_files.iter().any(|&(_, n)| n == meta.number)
            {
                return Err(bad_edit(format!("adds file {} twice", meta.number)));
            }
            let table = opened
                .remove(&meta.number)
                .ok_or_else(|| bad_edit(format!("file {} was not opened", meta.number)))?;
            let moved = removed
                .iter()
                .find(|f| f.meta == *meta && Arc::ptr_eq(&f.table, &table))
                .cloned();
            levels
                .get_mut(*level as usize)
                .ok_or_else(|| bad_edit(format!("level {level} out of range")))?
                .push(moved.unwrap_or_else(|| Arc::new(TableFile::new(meta.clone(), table))));
        }
        let live: std::collections::HashSet<u64> =
            levels.iter().flatten().map(|f| f.meta.number).collect();
        let range_tombstones = self
            .range_tombstones
            .apply(edit, |n| live.contains(&n))
            .map_err(bad_edit)?;
        let mut v = Version {
            levels,
            range_tombstones,
        };
        v.sort();
        Ok(v)
    }

    /// The version of the live files `state` lists, read from `dir`, and
    /// the largest sequence number its tables hold. Every table is mapped
    /// first (microseconds each, no descriptor kept: [`MappedTable`]), then
    /// decoded, so that a writer in another process deleting one can only
    /// get in while they are mapped, and an open needs no descriptor per
    /// table.
    ///
    /// # Errors
    /// `(path, e)`: [`MappedTable::open`]'s or [`Table::decode`]'s error for
    /// the table at `path` (an [`Error::Io`] of kind `NotFound` if it is
    /// gone); an [`Error::Corruption`] if the files do not form a version.
    pub fn load(
        dir: &Path,
        state: &ReplayedState,
    ) -> std::result::Result<(Version, SequenceNumber), (PathBuf, Error)> {
        Version::load_tree(dir, &state.files, &state.range_tombstones)
    }

    /// As [`Version::load`], for the tree of one keyspace: its live
    /// `files[level][number]` and its range tombstones.
    ///
    /// # Errors
    /// As [`Version::load`].
    pub fn load_tree(
        dir: &Path,
        files: &[BTreeMap<u64, FileMetaData>],
        range_tombstones: &RangeTombstoneSet,
    ) -> std::result::Result<(Version, SequenceNumber), (PathBuf, Error)> {
        let mut mapped = Vec::new();
        for (level, files) in files.iter().enumerate() {
            for meta in files.values() {
                let path = filename::table_path(dir, meta.number);
                match MappedTable::open(&path) {
                    Ok(map) => mapped.push((level as u32, meta, map)),
                    Err(e) => return Err((path, e)),
                }
            }
        }
        let mut all = VersionEdit::default();
        let mut opened = BTreeMap::new();
        let mut largest_seq = SequenceNumber(0);
        for (level, meta, map) in mapped {
            let path = map.path().to_path_buf();
            let table = Table::decode(map, meta.number).map_err(|e| (path.clone(), e))?;
            if let Some(why) = manifest_mismatch(meta, table.file_size(), table.properties()) {
                return Err((path.clone(), Error::corruption(&path, 0, why)));
            }
            largest_seq = largest_seq.max(table.properties().largest_seq);
            opened.insert(meta.number, Arc::new(table));
            all.new_files.push((level, meta.clone()));
        }
        all.new_range_tombstones = range_tombstones.as_new_tombstones();
        let version = Version::empty()
            .apply(&all, &mut opened)
            .map_err(|e| (dir.to_path_buf(), e))?;
        Ok((version, largest_seq))
    }

    fn sort(&mut self) {
        self.levels[0].sort_by(|a, b| {
            let (pa, pb) = (a.table.properties(), b.table.properties());
            pb.largest_seq
                .cmp(&pa.largest_seq)
                .then(b.meta.number.cmp(&a.meta.number))
        });
        for files in &mut self.levels[1..] {
            files.sort_by(|a, b| a.meta.smallest.cmp(&b.meta.smallest));
        }
    }
}

/// Why a table file whose size is `file_size` and whose properties are
/// `p` is not the table its manifest record `meta` describes, if it is
/// not: its size, entry count or key range differ. A valid table copied or
/// restored over another's name would otherwise be read as that table,
/// its keys in place of the manifest's (`kvctl verify` compares the same
/// record with the whole table, its keys read).
pub(crate) fn manifest_mismatch(
    meta: &FileMetaData,
    file_size: u64,
    p: &crate::sstable::TableProperties,
) -> Option<String> {
    let recorded = (
        meta.file_size,
        meta.num_entries,
        meta.smallest.user_key(),
        meta.largest.user_key(),
    );
    let found = (
        file_size,
        p.num_entries,
        p.smallest_user_key.as_slice(),
        p.largest_user_key.as_slice(),
    );
    if recorded == found {
        // The common case (every table, every open): nothing formatted.
        return None;
    }
    let show = |(bytes, entries, first, last): (u64, u64, &[u8], &[u8])| {
        format!(
            "{bytes} bytes, {entries} entries and keys {}..{}",
            crate::escape::escape_bytes(first),
            crate::escape::escape_bytes(last)
        )
    };
    Some(format!(
        "the manifest records {} for table {:06}, but the file has {}: not the table the \
         manifest names (a file copied or restored over it?)",
        show(recorded),
        meta.number,
        show(found)
    ))
}

fn bad_edit(detail: String) -> Error {
    Error::corruption("MANIFEST", 0, format!("version edit {detail}"))
}

/// The result of replaying a manifest: the live files per level plus the
/// counters, before any table is opened.
#[derive(Debug, Clone)]
pub struct ReplayedState {
    /// Live files, `files[level][number]`.
    pub files: Vec<BTreeMap<u64, FileMetaData>>,
    /// WALs numbered at least this are live.
    pub log_number: u64,
    /// Next unused file number.
    pub next_file_number: u64,
    /// Largest sequence number recorded.
    pub last_sequence: u64,
    /// Key and value bytes flushed since the database was created.
    pub user_bytes_flushed: u64,
    /// SSTable bytes written since the database was created.
    pub table_bytes_written: u64,
    /// The last [`crate::KEY_PREDICTIONS_KEPT`] key predictions (tag 9),
    /// oldest first.
    pub key_predictions: VecDeque<KeyPrediction>,
    /// The live range tombstones.
    pub range_tombstones: RangeTombstoneSet,
    /// The id the next keyspace created gets (tag 16; 1 before any).
    pub next_keyspace_id: u32,
    /// The live keyspaces other than the default, by id. The fields above
    /// (files, log number, key predictions, range tombstones) are the
    /// default keyspace's.
    pub keyspaces: BTreeMap<u32, KeyspaceReplayed>,
}

/// The replayed state of one keyspace other than the default.
#[derive(Debug, Clone)]
pub struct KeyspaceReplayed {
    /// Its name (tag 13).
    pub name: String,
    /// Its stored options text (tag 13, replaced by tag 15).
    pub options_text: String,
    /// Its live files, `files[level][number]`.
    pub files: Vec<BTreeMap<u64, FileMetaData>>,
    /// Its WALs numbered at least this are live (tag 2; 0 until one).
    pub log_number: u64,
    /// Its last [`crate::KEY_PREDICTIONS_KEPT`] key predictions.
    pub key_predictions: VecDeque<KeyPrediction>,
    /// Its live range tombstones.
    pub range_tombstones: RangeTombstoneSet,
}

impl Default for ReplayedState {
    fn default() -> Self {
        Self::new()
    }
}

impl ReplayedState {
    /// The state before the first edit: no files, every counter 0.
    pub fn new() -> Self {
        ReplayedState {
            files: vec![BTreeMap::new(); NUM_LEVELS],
            log_number: 0,
            next_file_number: 0,
            last_sequence: 0,
            user_bytes_flushed: 0,
            table_bytes_written: 0,
            key_predictions: VecDeque::new(),
            range_tombstones: RangeTombstoneSet::default(),
            next_keyspace_id: 1,
            keyspaces: BTreeMap::new(),
        }
    }

    /// Folds one edit into the state: the global fields, the default
    /// keyspace's, then each keyspace section in id order (its add, its
    /// options, its files and tombstones as the default's, then its drop).
    ///
    /// # Errors
    /// What is wrong (`"version edit deletes file 7 absent from level 0"`)
    /// if the edit deletes a file that is not live or names a level beyond
    /// [`NUM_LEVELS`], breaks a rule of [`RangeTombstoneSet::apply`] (a
    /// tombstone list naming a table of another keyspace among them),
    /// decreases `next_keyspace_id`, adds a keyspace that is live, whose
    /// id is not below `next_keyspace_id` after the edit or whose name a
    /// live keyspace has, names a keyspace that is not live, or leaves a
    /// table it adds live in two keyspaces; the caller knows the file and
    /// offset to report in an [`Error::Corruption`].
    pub fn apply(&mut self, e: &VersionEdit) -> std::result::Result<(), String> {
        if let Some(n) = e.next_file_number {
            self.next_file_number = n;
        }
        if let Some(n) = e.last_sequence {
            self.last_sequence = self.last_sequence.max(n.0);
        }
        if let Some(n) = e.user_bytes_flushed {
            self.user_bytes_flushed = n;
        }
        if let Some(n) = e.table_bytes_written {
            self.table_bytes_written = n;
        }
        if let Some(n) = e.next_keyspace_id {
            if n < self.next_keyspace_id {
                return Err(format!(
                    "version edit decreases next_keyspace_id from {} to {n}",
                    self.next_keyspace_id
                ));
            }
            self.next_keyspace_id = n;
        }
        apply_tree(
            &mut self.files,
            &mut self.log_number,
            &mut self.key_predictions,
            &mut self.range_tombstones,
            e,
        )?;
        for (&id, ks) in &e.keyspaces {
            if let Some(add) = &ks.add {
                if self.keyspaces.contains_key(&id) {
                    return Err(format!("version edit adds keyspace {id}, which is live"));
                }
                if id >= self.next_keyspace_id {
                    return Err(format!(
                        "version edit adds keyspace {id}, not below next_keyspace_id {}",
                        self.next_keyspace_id
                    ));
                }
                if let Some((other, _)) = self.keyspaces.iter().find(|(_, k)| k.name == add.name) {
                    return Err(format!(
                        "version edit adds keyspace {id} named \"{}\", the name of live keyspace \
                         {other}",
                        add.name
                    ));
                }
                self.keyspaces.insert(
                    id,
                    KeyspaceReplayed {
                        name: add.name.clone(),
                        options_text: add.options.clone(),
                        files: vec![BTreeMap::new(); NUM_LEVELS],
                        log_number: 0,
                        key_predictions: VecDeque::new(),
                        range_tombstones: RangeTombstoneSet::default(),
                    },
                );
            }
            let Some(state) = self.keyspaces.get_mut(&id) else {
                return Err(format!(
                    "version edit names keyspace {id}, which is not live"
                ));
            };
            if let Some(options) = &ks.options {
                state.options_text.clone_from(options);
            }
            apply_tree(
                &mut state.files,
                &mut state.log_number,
                &mut state.key_predictions,
                &mut state.range_tombstones,
                &ks.tree_edit(),
            )
            .map_err(|d| format!("keyspace {id}: {d}"))?;
            if ks.drop {
                self.keyspaces.remove(&id);
            }
        }
        // A table is one keyspace's: one the edit adds must not be live in
        // another (a move between keyspaces deletes it from the first).
        let added = e.new_files.iter().map(|(_, f)| f.number).chain(
            e.keyspaces
                .values()
                .flat_map(|k| k.new_files.iter().map(|(_, f)| f.number)),
        );
        for n in added {
            let holders: Vec<u32> = std::iter::once((0, &self.files))
                .chain(self.keyspaces.iter().map(|(&id, k)| (id, &k.files)))
                .filter(|(_, files)| files.iter().any(|l| l.contains_key(&n)))
                .map(|(id, _)| id)
                .collect();
            if holders.len() > 1 {
                return Err(format!(
                    "version edit leaves table {n} live in keyspaces {} and {}",
                    holders[0], holders[1]
                ));
            }
        }
        Ok(())
    }
}

/// One keyspace's tree as a [`ReplayedState`] holds it
/// ([`ReplayedState::trees`]).
#[derive(Debug, Clone, Copy)]
pub struct ReplayedTree<'a> {
    /// Its id: 0 for the default keyspace.
    pub id: u32,
    /// Its name ([`DEFAULT_KEYSPACE_NAME`] for id 0).
    pub name: &'a str,
    /// Its live files, `files[level][number]`.
    pub files: &'a [BTreeMap<u64, FileMetaData>],
    /// Its log number: its writes in older WALs are in its tables.
    pub log_number: u64,
    /// Its live range tombstones.
    pub range_tombstones: &'a RangeTombstoneSet,
    /// Its last key predictions, oldest first.
    pub key_predictions: &'a VecDeque<KeyPrediction>,
}

impl ReplayedState {
    /// Every live keyspace's tree, the default first, then by id.
    pub fn trees(&self) -> impl Iterator<Item = ReplayedTree<'_>> {
        let default = ReplayedTree {
            id: 0,
            name: DEFAULT_KEYSPACE_NAME,
            files: &self.files,
            log_number: self.log_number,
            range_tombstones: &self.range_tombstones,
            key_predictions: &self.key_predictions,
        };
        std::iter::once(default).chain(self.keyspaces.iter().map(|(&id, k)| ReplayedTree {
            id,
            name: &k.name,
            files: &k.files,
            log_number: k.log_number,
            range_tombstones: &k.range_tombstones,
            key_predictions: &k.key_predictions,
        }))
    }

    /// The smallest log number of any live keyspace: every WAL numbered
    /// at least this is live (it may hold writes of some keyspace that
    /// its tables do not).
    pub fn min_log_number(&self) -> u64 {
        self.trees().map(|t| t.log_number).min().unwrap_or(0)
    }
}

/// Folds the tree fields of `e` (tags 2, 5, 6, 9, 10, 11) into one
/// keyspace's state.
fn apply_tree(
    files: &mut [BTreeMap<u64, FileMetaData>],
    log_number: &mut u64,
    key_predictions: &mut VecDeque<KeyPrediction>,
    range_tombstones: &mut RangeTombstoneSet,
    e: &VersionEdit,
) -> std::result::Result<(), String> {
    if let Some(n) = e.log_number {
        *log_number = n;
    }
    let level_out_of_range = |level: u32| format!("version edit level {level} out of range");
    for &(level, number) in &e.deleted_files {
        let level_files = files
            .get_mut(level as usize)
            .ok_or_else(|| level_out_of_range(level))?;
        if level_files.remove(&number).is_none() {
            return Err(format!(
                "version edit deletes file {number} absent from level {level}"
            ));
        }
    }
    for (level, meta) in &e.new_files {
        files
            .get_mut(*level as usize)
            .ok_or_else(|| level_out_of_range(*level))?
            .insert(meta.number, meta.clone());
    }
    for p in &e.key_predictions {
        KeyPrediction::keep(key_predictions, *p);
    }
    let files = &*files;
    // In place: a replay folds thousands of edits, and a copy per edit
    // made it quadratic in the live tombstones (a trial measured 4.7 s to
    // open with 20,000 of them over 1,000 flushes).
    range_tombstones
        .apply_in_place(e, |n| files.iter().any(|l| l.contains_key(&n)))
        .map_err(|d| format!("version edit {d}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{InternalKey, ValueType};
    use crate::range_tombstone::RangeTombstone;
    use crate::version::edit::{KeyspaceAdd, KeyspaceEdit};

    fn table(number: u64) -> FileMetaData {
        let k = |s: &str| InternalKey::new(s.as_bytes(), SequenceNumber(1), ValueType::Value);
        FileMetaData {
            number,
            file_size: 100,
            smallest: k("a"),
            largest: k("z"),
            num_entries: 1,
            num_tombstones: 0,
        }
    }

    fn section(id: u32, ks: KeyspaceEdit) -> VersionEdit {
        VersionEdit {
            keyspaces: BTreeMap::from([(id, ks)]),
            ..VersionEdit::default()
        }
    }

    fn add(id: u32, name: &str) -> VersionEdit {
        VersionEdit {
            next_keyspace_id: Some(id + 1),
            ..section(
                id,
                KeyspaceEdit {
                    add: Some(KeyspaceAdd {
                        name: name.into(),
                        options: "block_size 16384\n".into(),
                    }),
                    ..KeyspaceEdit::default()
                },
            )
        }
    }

    fn files(id: u32, new: &[u64], deleted: &[u64]) -> VersionEdit {
        section(
            id,
            KeyspaceEdit {
                new_files: new.iter().map(|&n| (0, table(n))).collect(),
                deleted_files: deleted.iter().map(|&n| (0, n)).collect(),
                ..KeyspaceEdit::default()
            },
        )
    }

    fn drop_ks(id: u32) -> VersionEdit {
        section(
            id,
            KeyspaceEdit {
                drop: true,
                ..KeyspaceEdit::default()
            },
        )
    }

    /// A state with keyspace 1 "logs" holding table 7, the default table 4.
    fn with_logs() -> ReplayedState {
        let mut s = ReplayedState::new();
        s.apply(&VersionEdit {
            new_files: vec![(0, table(4))],
            ..add(1, "logs")
        })
        .unwrap();
        s.apply(&files(1, &[7], &[])).unwrap();
        s
    }

    #[test]
    fn keyspaces_replay_add_options_files_and_drop() {
        let mut s = with_logs();
        assert_eq!(s.next_keyspace_id, 2);
        let logs = &s.keyspaces[&1];
        assert_eq!(logs.name, "logs");
        assert_eq!(logs.options_text, "block_size 16384\n");
        assert_eq!(logs.files[0].keys().copied().collect::<Vec<_>>(), [7]);
        assert_eq!(s.files[0].keys().copied().collect::<Vec<_>>(), [4]);
        // Tag 15 replaces the options; tag 2 in the section is its own.
        s.apply(&VersionEdit {
            log_number: Some(3),
            ..section(
                1,
                KeyspaceEdit {
                    options: Some("block_size 4096\n".into()),
                    log_number: Some(9),
                    ..KeyspaceEdit::default()
                },
            )
        })
        .unwrap();
        assert_eq!(s.keyspaces[&1].options_text, "block_size 4096\n");
        assert_eq!((s.log_number, s.keyspaces[&1].log_number), (3, 9));
        s.apply(&drop_ks(1)).unwrap();
        assert!(s.keyspaces.is_empty());
        assert_eq!(s.next_keyspace_id, 2);
        // A name is free again once its keyspace is dropped (new id).
        s.apply(&add(2, "logs")).unwrap();
        assert_eq!(s.keyspaces[&2].name, "logs");
    }

    #[test]
    fn adding_a_live_keyspace_is_refused() {
        let mut s = with_logs();
        let e = s.apply(&add(1, "other")).unwrap_err();
        assert_eq!(e, "version edit adds keyspace 1, which is live");
    }

    #[test]
    fn adding_a_keyspace_at_or_above_next_keyspace_id_is_refused() {
        let mut s = ReplayedState::new();
        let mut e = add(1, "logs");
        e.next_keyspace_id = None; // still 1 after the edit
        assert_eq!(
            s.apply(&e).unwrap_err(),
            "version edit adds keyspace 1, not below next_keyspace_id 1"
        );
        e.next_keyspace_id = Some(2);
        s.apply(&e).unwrap();
        // An id above the one the edit itself sets.
        let mut s = ReplayedState::new();
        let mut e = add(3, "logs");
        e.next_keyspace_id = Some(3);
        assert_eq!(
            s.apply(&e).unwrap_err(),
            "version edit adds keyspace 3, not below next_keyspace_id 3"
        );
    }

    #[test]
    fn adding_a_keyspace_under_a_live_name_is_refused() {
        let mut s = with_logs();
        assert_eq!(
            s.apply(&add(2, "logs")).unwrap_err(),
            "version edit adds keyspace 2 named \"logs\", the name of live keyspace 1"
        );
    }

    #[test]
    fn fields_for_a_keyspace_not_live_are_refused() {
        let mut s = with_logs();
        for e in [
            files(2, &[8], &[]),
            drop_ks(2),
            section(2, KeyspaceEdit::default()),
        ] {
            assert_eq!(
                s.apply(&e).unwrap_err(),
                "version edit names keyspace 2, which is not live"
            );
        }
        // Nor after a drop.
        s.apply(&drop_ks(1)).unwrap();
        assert_eq!(
            s.apply(&files(1, &[8], &[])).unwrap_err(),
            "version edit names keyspace 1, which is not live"
        );
    }

    #[test]
    fn a_table_live_in_two_keyspaces_is_refused() {
        let mut s = with_logs();
        // Table 4 is the default's.
        assert_eq!(
            s.apply(&files(1, &[4], &[])).unwrap_err(),
            "version edit leaves table 4 live in keyspaces 0 and 1"
        );
        let mut s = with_logs();
        s.apply(&add(2, "metrics")).unwrap();
        assert_eq!(
            s.apply(&files(2, &[7], &[])).unwrap_err(),
            "version edit leaves table 7 live in keyspaces 1 and 2"
        );
        // Moved: deleted from keyspace 1 in the same edit, it is one's.
        let mut s = with_logs();
        s.apply(&add(2, "metrics")).unwrap();
        let mut e = files(1, &[], &[7]);
        e.keyspaces.extend(files(2, &[7], &[]).keyspaces);
        s.apply(&e).unwrap();
        assert!(s.keyspaces[&1].files[0].is_empty());
    }

    #[test]
    fn a_tombstone_list_naming_another_keyspaces_table_is_refused() {
        let tombstone = |files: Vec<u64>| {
            section(
                1,
                KeyspaceEdit {
                    new_range_tombstones: vec![(
                        RangeTombstone {
                            start: b"a".to_vec(),
                            end: None,
                            seq: SequenceNumber(5),
                        },
                        files,
                    )],
                    ..KeyspaceEdit::default()
                },
            )
        };
        let mut s = with_logs();
        // Table 4 is the default's, not keyspace 1's.
        let e = s.apply(&tombstone(vec![4])).unwrap_err();
        assert!(e.starts_with("keyspace 1: version edit "), "{e}");
        assert!(e.contains("not live"), "{e}");
        // Its own table 7 is fine, and the tombstone is the keyspace's.
        s.apply(&tombstone(vec![7])).unwrap();
        assert_eq!(s.keyspaces[&1].range_tombstones.len(), 1);
        assert_eq!(s.range_tombstones.len(), 0);
    }

    #[test]
    fn a_decreasing_next_keyspace_id_is_refused() {
        let mut s = with_logs();
        let e = VersionEdit {
            next_keyspace_id: Some(1),
            ..VersionEdit::default()
        };
        assert_eq!(
            s.apply(&e).unwrap_err(),
            "version edit decreases next_keyspace_id from 2 to 1"
        );
        // The same value again is no decrease.
        s.apply(&VersionEdit {
            next_keyspace_id: Some(2),
            ..VersionEdit::default()
        })
        .unwrap();
    }
}
