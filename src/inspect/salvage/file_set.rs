//! Which files a salvage reads: the live set of a usable manifest
//! ([`LiveSet`]), or, when none is usable, the whole directory
//! ([`FileSet::Directory`], with the reason).

use std::collections::BTreeSet;
use std::path::Path;

use super::FileSet;
use crate::filename::{self, FileType};
use crate::inspect::{file_name, read_manifest, KeyspaceSelector};
use crate::range_tombstone::RangeTombstone;
use crate::version::edit::FileMetaData;
use crate::version::manifest::{dangling_current, read_current};
use crate::{Error, Result};

/// The live set of a usable manifest, for the salvaged keyspace.
#[derive(Debug)]
pub(super) struct LiveSet {
    /// The salvaged keyspace's id and name.
    pub(super) keyspace: u32,
    pub(super) name: String,
    /// Every live keyspace's id.
    pub(super) keyspaces: Vec<u32>,
    /// Every live table of every keyspace (the others are not orphans).
    pub(super) all_tables: BTreeSet<u64>,
    /// `(level, metadata)` of each live table of the salvaged keyspace,
    /// level by level.
    pub(super) tables: Vec<(usize, FileMetaData)>,
    /// The salvaged keyspace's log number.
    pub(super) log_number: u64,
    /// The flushed range deletions the manifest lists.
    pub(super) range_tombstones: Vec<RangeTombstone>,
}

/// The WALs in `listing` numbered at least `log_number`, in order.
pub(super) fn wal_numbers(listing: &[FileType], log_number: u64) -> Vec<u64> {
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
/// selects in a manifest, if one is usable ([module docs](super)), else the whole
/// directory.
///
/// # Errors
/// [`Error::UnsupportedVersion`] for a manifest newer than this build;
/// [`Error::NoSuchKeyspace`] if the usable manifest holds no keyspace so
/// selected.
pub(super) fn choose_files(
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
