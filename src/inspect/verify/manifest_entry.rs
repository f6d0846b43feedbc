//! A table's manifest entry against the table: its keyspace, size,
//! smallest and largest internal keys, entries and tombstones.

use std::path::Path;

use super::report::{show_internal, Checker};
use super::table::Contents;
use crate::sstable::Table;
use crate::version::edit::FileMetaData;

/// Where the manifest lists a table, and what it records of it.
pub(super) struct ManifestEntry<'a> {
    pub(super) keyspace: u32,
    pub(super) level: usize,
    pub(super) meta: &'a FileMetaData,
}

/// Checks a table's manifest entry against the table (its keyspace
/// against its `siftdb.keyspace` property too); true to stop.
pub(super) fn check_manifest_entry(
    c: &mut Checker<'_>,
    manifest: &Path,
    entry: &ManifestEntry<'_>,
    table: &Table,
    t: &Contents,
) -> bool {
    let (meta, level) = (entry.meta, entry.level);
    let what = match entry.keyspace {
        0 => format!("manifest entry of {:06}.sst (level {level})", meta.number),
        k => format!(
            "manifest entry of {:06}.sst (level {level} of keyspace {k})",
            meta.number
        ),
    };
    let mut diffs = Vec::new();
    let property = table.properties().keyspace;
    if property != entry.keyspace {
        diffs.push(format!(
            "it in keyspace {} but its property siftdb.keyspace says {property}",
            entry.keyspace
        ));
    }
    if meta.file_size != table.file_size() {
        diffs.push(format!(
            "size {} but the file has {}",
            meta.file_size,
            table.file_size()
        ));
    }
    if meta.smallest.encoded() != t.first_key.as_slice() {
        diffs.push(format!(
            "smallest key {} but the table starts with {}",
            show_internal(meta.smallest.encoded()),
            show_internal(&t.first_key)
        ));
    }
    if meta.largest.encoded() != t.last_key.as_slice() {
        diffs.push(format!(
            "largest key {} but the table ends with {}",
            show_internal(meta.largest.encoded()),
            show_internal(&t.last_key)
        ));
    }
    if meta.num_entries != t.entries {
        diffs.push(format!(
            "{} entries but the table holds {}",
            meta.num_entries, t.entries
        ));
    }
    if meta.num_tombstones != t.tombstones {
        diffs.push(format!(
            "{} tombstones but the table holds {}",
            meta.num_tombstones, t.tombstones
        ));
    }
    for d in diffs {
        if c.problem(manifest, &what, None, format!("records {d}")) {
            return true;
        }
    }
    false
}
