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
//! the manifest change, re-reads it and starts over (the retry that
//! [`crate::Db::open_read_only`] uses too); a file that keeps vanishing is
//! reported as an [`Error::Io`] of kind `NotFound` whose message names the
//! file and says it vanished. A live file missing while the manifest stays
//! unchanged is [`Error::Corruption`] naming the manifest, as at open.
//! That process may also be copying a record into a WAL while it is read:
//! damage found in a WAL then is read again before it counts
//! ([`read_wal`]).
//!
//! **Unstable.** This module is for tools (kvctl, the benchmarks) and
//! tests: its items, and the engine internals it re-exports (`sstable`,
//! `log`, `version`, `key`, `memtable`, `sketch`, `write_batch`,
//! `filename`, `escape`, `util`), may change in any release. An
//! application needs only the crate root, [`crate::filter`] and
//! [`crate::fs`].
//!
//! One submodule per concern, everything re-exported here:
//!
//! - `logs`: the records of one log file: [`read_manifest`] (the
//!   manifest's one reader, [`crate::version::manifest::read_manifest`]),
//!   [`read_wal`], [`read_live_wals`], [`current_manifest`].
//! - `snapshot`: [`DbSnapshot`]: the manifest, every live table (opened)
//!   in the order a lookup visits them, and every live WAL replayed into a
//!   memtable.
//! - `table`: one SSTable: [`TableInfo`], [`FilterInfo`],
//!   [`properties_block`], [`table_entries`]; and summaries over many:
//!   [`level_summaries`], [`filter_settings`].
//! - `explain`: [`explain()`], a traced point lookup.
//! - `verify`: [`verify_db`], [`verify_file`]: every checksum and
//!   invariant.
//! - `salvage`: [`Salvage`]: every entry that can still be read from a
//!   damaged database, and a [`SalvageReport`] of what could not be.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::version::edit::DEFAULT_KEYSPACE_NAME;
use crate::version::manifest::{self, retry_while_manifest_changes};
use crate::{Error, Result};

mod explain;
mod explain_prefix;
mod logs;
mod salvage;
mod snapshot;
mod table;
#[cfg(test)]
mod testutil;
mod verify;

pub use crate::version::manifest::{read_manifest, ManifestContents, ManifestRecord};
pub use explain::{
    explain, Explain, ExplainOutcome, ExplainSource, ExplainStep, FoundEntry, Verdict,
};
pub use explain_prefix::{
    explain_prefix, PrefixExplain, PrefixOutcome, PrefixProbe, PrefixRangeTombstone, PrefixStep,
};
pub use logs::{current_manifest, read_live_wals, read_wal, WalContents, WalOp, WalRecord};
pub use salvage::{
    FileSet, KeyRange, Salvage, SalvageReport, SalvagedEntry, SkippedBlock, TableSalvage,
    UnreadTable, WalDamage, WalSalvage,
};
pub use snapshot::{DbSnapshot, KeyspaceTree, LiveWal, WalMem};
pub use table::{
    filter_settings, level_summaries, open_table, properties_block, table_entries, FilterInfo,
    FilterSetting, FilterStats, PropertyValue, TableEntries, TableEntry, TableInfo,
    DEGRADED_FACTOR,
};
pub use verify::{has_table_magic, verify_db, verify_file, Problem, VerifyReport};

// ------------------------------------------------------------- internals
//
// The engine's own modules, re-exported for kvctl, the benchmarks and the
// tests. Their items are not part of siftdb's stable API.

/// Re-exports each named engine module as `inspect::<name>`, documented
/// as unstable.
macro_rules! unstable_modules {
    ($($name:ident: $what:literal,)*) => {$(
        #[doc = concat!(
            "**Unstable:** the engine's internal `", stringify!($name),
            "` module, re-exported for tools and tests, with no semver promise. ", $what
        )]
        pub mod $name {
            pub use crate::$name::*;
        }
    )*};
}

unstable_modules! {
    escape: "The TSV escaping kvctl's `import` and `export` use (DESIGN.md 12.11).",
    filename: "Names of the files in a database directory (DESIGN.md 1).",
    key: "Internal keys: user key, sequence number and value type (DESIGN.md 12.1).",
    key_range: "Key ranges: `KeyRange`, overlap with a table's keys, inverted bounds.",
    log: "The log format the WAL and the manifest share (DESIGN.md 12.2).",
    memtable: "The memtable: a skiplist of internal keys in an arena (DESIGN.md 2).",
    range_tombstone: "Range tombstones and their fragmented index (DESIGN.md 3.7).",
    sketch: "HyperLogLog, Count-Min and top-K sketches (DESIGN.md 3.4, 6.8).",
    sstable: "SSTables: blocks, footer, properties, tables and their builder (DESIGN.md 12.4–12.7).",
    util: "Varint coding, CRC-32, aligned buffers and file helpers.",
    version: "Versions, version edits and the manifest (DESIGN.md 12.8).",
    write_batch: "The write batch encoding of a WAL record's payload (DESIGN.md 12.3).",
}

// ------------------------------------------------------------- keyspaces

/// Which keyspace an inspection or a salvage reads: the default unless
/// told, or one by name or by id (a salvage without a usable manifest
/// knows no names, only the ids the tables' `siftdb.keyspace` property
/// carries).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum KeyspaceSelector {
    /// The default keyspace (id 0, named `default`).
    #[default]
    Default,
    /// The keyspace with this name.
    Name(String),
    /// The keyspace with this id.
    Id(u32),
}

impl KeyspaceSelector {
    /// Whether keyspace `id`, named `name` if known, is the one selected.
    pub fn matches(&self, id: u32, name: Option<&str>) -> bool {
        match self {
            KeyspaceSelector::Default => id == 0,
            KeyspaceSelector::Id(i) => *i == id,
            KeyspaceSelector::Name(n) => match name {
                Some(name) => name == n,
                None => id == 0 && n == DEFAULT_KEYSPACE_NAME,
            },
        }
    }

    /// The error for a database that holds no keyspace so selected.
    pub(crate) fn missing(&self) -> Error {
        Error::NoSuchKeyspace(self.to_string())
    }
}

impl std::fmt::Display for KeyspaceSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyspaceSelector::Default => f.write_str(DEFAULT_KEYSPACE_NAME),
            KeyspaceSelector::Name(n) => f.write_str(n),
            KeyspaceSelector::Id(i) => write!(f, "id {i}"),
        }
    }
}

// ---------------------------------------------------------------- errors

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

/// The error for a file the manifest at `manifest` lists as live that does
/// not exist (while the manifest did not change); for the manifest itself,
/// the error [`manifest::replay`] gives when `CURRENT` names a missing one
/// (naming `CURRENT`).
fn missing_live_file(manifest: &Path, path: &Path) -> Error {
    if path == manifest {
        return manifest::dangling_current(manifest);
    }
    manifest::missing_live_file(manifest, 0, path, "")
}

/// Why reading the files a manifest names stopped.
enum LoadError {
    /// A file named by the manifest or the listing does not exist.
    Missing(PathBuf, std::io::Error),
    /// An error a newer manifest may explain (a WAL op of a keyspace the
    /// manifest read does not hold: created since): retried while the
    /// manifest changes, this error once it stays the same.
    Stale(Error),
    /// Any other error.
    Other(Error),
}

impl From<Error> for LoadError {
    fn from(e: Error) -> Self {
        LoadError::Other(e)
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

/// Sets a missing file apart: [`LoadError::Missing`] if `r` is a
/// `NotFound` I/O error on `path`, `r` itself otherwise.
fn unless_missing<T>(path: &Path, r: Result<T>) -> std::result::Result<Result<T>, LoadError> {
    match r.map_err(|e| missing_or(path, e)) {
        Ok(v) => Ok(Ok(v)),
        Err(LoadError::Other(e)) => Ok(Err(e)),
        Err(missing) => Err(missing),
    }
}

/// Runs `load`, which reads files the manifest in `dir` names, again while
/// a file it needs vanishes and the manifest changes meanwhile (another
/// process flushed, compacted or reopened). A file that kept vanishing is
/// [`vanished`]; `missing(path)` answers for a file that is missing
/// although the manifest did not change.
fn with_retries<T>(
    dir: &Path,
    load: impl FnMut() -> std::result::Result<T, LoadError>,
    missing: impl FnOnce(&Path) -> Result<T>,
) -> Result<T> {
    let retry = |e: &LoadError| matches!(e, LoadError::Missing(..) | LoadError::Stale(_));
    match retry_while_manifest_changes(dir, load, retry) {
        Ok(v) => Ok(v),
        Err((LoadError::Other(e) | LoadError::Stale(e), _)) => Err(e),
        Err((LoadError::Missing(path, source), true)) => Err(vanished(&path, source)),
        Err((LoadError::Missing(path, _), false)) => missing(&path),
    }
}

// ---------------------------------------------------------------- files

/// The name of `path`'s last component, for messages.
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The file number of `path` if its name is one siftdb gives a number
/// (`NNNNNN.log`, `NNNNNN.sst`, `MANIFEST-NNNNNN`, `NNNNNN.tmp`).
fn number_of(path: &Path) -> Option<u64> {
    path.file_name()?
        .to_str()
        .and_then(filename::parse_file_name)?
        .number()
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::testutil::{build, key};
    use super::*;
    use crate::sstable::Table;
    use crate::version::manifest::identity;

    #[test]
    fn a_file_removed_by_a_compaction_is_retried_not_corrupt() {
        let tmp = tempfile::tempdir().unwrap();
        let db = build(tmp.path());
        let stale = read_manifest(&current_manifest(tmp.path()).unwrap().1).unwrap();
        let before = identity(tmp.path());
        db.compact().unwrap();
        assert_ne!(identity(tmp.path()), before);
        // The stale file list names tables the compaction deleted.
        let gone = stale.replay_all().unwrap().files[0]
            .keys()
            .map(|&n| filename::table_path(tmp.path(), n))
            .find(|p| !p.exists())
            .unwrap();
        let e = Table::open(&gone, 0).unwrap_err();
        assert!(matches!(missing_or(&gone, e), LoadError::Missing(..)));
        // A fresh snapshot reads the new state, while the writer is open.
        let snap = DbSnapshot::open(tmp.path()).unwrap();
        assert_eq!(snap.default_tree().version.levels[0].len(), 0);
        assert_eq!(
            explain(&snap, &KeyspaceSelector::Default, &key(4))
                .unwrap()
                .verdict
                .as_get(),
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
        assert!(matches!(&v, Error::Io { source, .. } if source.kind() == ErrorKind::NotFound));
        assert!(v.to_string().contains(&file_name(&live)), "{v}");
    }
}
