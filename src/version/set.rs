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
use crate::version::edit::{FileMetaData, VersionEdit};
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
        let mut mapped = Vec::new();
        for (level, files) in state.files.iter().enumerate() {
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
            let table = Table::decode(map, meta.number).map_err(|e| (path, e))?;
            largest_seq = largest_seq.max(table.properties().largest_seq);
            opened.insert(meta.number, Arc::new(table));
            all.new_files.push((level, meta.clone()));
        }
        all.new_range_tombstones = state.range_tombstones.as_new_tombstones();
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
        }
    }

    /// Folds one edit into the state.
    ///
    /// # Errors
    /// What is wrong (`"version edit deletes file 7 absent from level 0"`)
    /// if the edit deletes a file that is not live or names a level beyond
    /// [`NUM_LEVELS`]; the caller knows the file and offset to report in an
    /// [`Error::Corruption`].
    pub fn apply(&mut self, e: &VersionEdit) -> std::result::Result<(), String> {
        if let Some(n) = e.log_number {
            self.log_number = n;
        }
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
        let level_out_of_range = |level: u32| format!("version edit level {level} out of range");
        for &(level, number) in &e.deleted_files {
            let files = self
                .files
                .get_mut(level as usize)
                .ok_or_else(|| level_out_of_range(level))?;
            if files.remove(&number).is_none() {
                return Err(format!(
                    "version edit deletes file {number} absent from level {level}"
                ));
            }
        }
        for (level, meta) in &e.new_files {
            self.files
                .get_mut(*level as usize)
                .ok_or_else(|| level_out_of_range(*level))?
                .insert(meta.number, meta.clone());
        }
        for p in &e.key_predictions {
            KeyPrediction::keep(&mut self.key_predictions, *p);
        }
        let files = &self.files;
        self.range_tombstones = self
            .range_tombstones
            .apply(e, |n| files.iter().any(|l| l.contains_key(&n)))
            .map_err(|d| format!("version edit {d}"))?;
        Ok(())
    }
}
