//! [`verify_db`] and [`verify_file`]: every checksum and invariant of a
//! database or of one file, reported as [`Problem`]s.
//!
//! [`verify_db`], the walk over a database (`CURRENT`, the manifest, the
//! stored options, each live table, levels that must not overlap, the
//! WALs, files the manifest does not reference), is here. Beside it:
//! `report`, the [`Problem`]s, the [`VerifyReport`] and the `Checker` that
//! collects them; `table`, one table's checks; `manifest_entry`, a table's
//! manifest entry against the table; `wal`, a WAL's checks; `file`,
//! [`verify_file`], one file checked by its kind; `tests`, the tests of
//! them all.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::logs::{current_manifest, read_wals};
use super::{
    file_name, missing_live_file, number_of, read_manifest, unless_missing, with_retries, LoadError,
};
use crate::escape::escape_bytes;
use crate::filename::{self, FileType};
use crate::fs::StdFs;
use crate::sstable::Table;
use crate::version::edit::FileMetaData;
use crate::{Error, Result};

mod file;
mod manifest_entry;
mod report;
mod table;
mod wal;

pub use file::{has_table_magic, verify_file};
use manifest_entry::{check_manifest_entry, ManifestEntry};
use report::Checker;
pub use report::{Problem, VerifyReport};
use table::{check_table, locate_in_table};
use wal::check_wal;

/// Checks the database in `dir`: `CURRENT`, that the manifest replays, that
/// every live table exists and passes [`verify_file`]'s checks and matches
/// its manifest entry (size, smallest and largest internal keys, entries,
/// tombstones), that levels ≥ 1 do not overlap, and that every live WAL
/// reads to its end (a torn tail is a note; damage found while a process
/// has the database open for writing is read again before it counts, as
/// [`read_wal`](super::read_wal) says). Stops at the first problem
/// unless `all`. `progress(done, total)` is called with table bytes
/// checked.
///
/// # Errors
/// [`Error::NotADatabase`] without `CURRENT`; [`Error::Io`] if a file
/// cannot be read, or (kind `NotFound`) vanished under a concurrent
/// compaction; [`Error::UnsupportedVersion`] for a newer format. Damage is
/// reported in the [`VerifyReport`], not as an error.
pub fn verify_db(
    dir: &Path,
    all: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<VerifyReport> {
    match current_manifest(dir) {
        // A damaged or missing `CURRENT` (beside database files) is damage
        // like any other: a report, so that `--json` callers get one.
        Err(Error::Corruption {
            file,
            offset,
            detail,
        }) => {
            let what = if file.file_name().is_some_and(|n| n == "CURRENT") {
                "CURRENT"
            } else {
                "manifest"
            };
            return Ok(VerifyReport {
                problems: vec![Problem {
                    file,
                    what: what.into(),
                    offset: Some(offset),
                    detail,
                }],
                ..Default::default()
            });
        }
        Err(e) => return Err(e),
        Ok(_) => {}
    }
    // A file the manifest lists is gone while the manifest is unchanged:
    // damage (if the manifest changed, another process compacted).
    let missing = |path: &Path| {
        let (_, manifest) = current_manifest(dir)?;
        let mut no_progress = |_: u64, _: u64| {};
        let mut c = Checker::new(all, &mut no_progress, 0);
        // The manifest itself missing is `CURRENT` naming a file that is
        // not there: damage to `CURRENT`.
        let what = if path == manifest {
            "CURRENT"
        } else {
            "manifest"
        };
        c.corruption(missing_live_file(&manifest, path), what)?;
        Ok(c.report)
    };
    with_retries(dir, || verify_db_once(dir, all, progress), missing)
}

fn verify_db_once(
    dir: &Path,
    all: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> std::result::Result<VerifyReport, LoadError> {
    let mut c = Checker::new(all, progress, 0);
    let (_, manifest_path) = match current_manifest(dir) {
        Ok(m) => m,
        Err(e @ Error::Corruption { .. }) => {
            c.corruption(e, "CURRENT")?;
            return Ok(c.report);
        }
        Err(e) => return Err(e.into()),
    };
    let manifest = match unless_missing(&manifest_path, read_manifest(&manifest_path))? {
        Ok(m) => m,
        Err(e) => {
            c.corruption(e, "manifest record")?;
            return Ok(c.report);
        }
    };
    c.report.manifest_edits = manifest.records.len() as u64;
    // The stored options (DESIGN.md 12.13): damage there fails the opens
    // that read them, so it is damage to report.
    match crate::Db::stored_options(dir) {
        Ok(_) => {}
        Err(e @ Error::Corruption { .. }) => {
            c.corruption(e, "OPTIONS file")?;
        }
        Err(e) => {
            let path = crate::filename::options_path(dir);
            c.problem(&path, "OPTIONS file", None, e.to_string());
        }
    }
    if let Some(t) = &manifest.torn_tail {
        c.report.notes.push(format!(
            "{}: torn final record at offset {} ({}); ignored, as at open",
            file_name(&manifest_path),
            t.offset,
            t.reason
        ));
    }
    let state = match manifest.replay_all() {
        Ok(s) => s,
        Err(e) => {
            c.corruption(e, "manifest")?;
            return Ok(c.report);
        }
    };

    // Open every live file first, so that a concurrent flush or compaction
    // can only interfere during this short window: a table stays readable
    // through its map, and WALs are read whole, even if the files are
    // deleted afterwards.
    let mut tables = Vec::new();
    for tree in state.trees() {
        for (level, files) in tree.files.iter().enumerate() {
            for meta in files.values() {
                let path = filename::table_path(dir, meta.number);
                let opened = unless_missing(&path, Table::open(&path, meta.number))?;
                c.total_bytes += opened.as_ref().map_or(0, |t| t.file_size());
                tables.push((tree.id, level, meta, path, opened));
            }
        }
    }
    let on_disk = filename::list_dir(&StdFs, dir)?;
    let wals = read_wals(dir, &state)?;
    (c.progress)(0, c.total_bytes);

    let live_numbers: BTreeSet<u64> = tables.iter().map(|(_, _, m, _, _)| m.number).collect();
    for (keyspace, level, meta, path, opened) in tables {
        let table = match opened {
            Ok(t) => t,
            Err(e) => {
                let what = locate_in_table(&path, &e);
                c.report.tables += 1;
                if c.corruption(e, what)? {
                    return Ok(c.report);
                }
                continue;
            }
        };
        let contents = check_table(&mut c, &table)?;
        if c.stop() {
            return Ok(c.report);
        }
        if let Some(contents) = contents {
            let entry = ManifestEntry {
                keyspace,
                level,
                meta,
            };
            if check_manifest_entry(&mut c, &manifest_path, &entry, &table, &contents) {
                return Ok(c.report);
            }
        }
    }

    // Levels >= 1 hold disjoint key ranges, in each keyspace.
    let levels = state
        .trees()
        .flat_map(|t| t.files.iter().enumerate().skip(1).map(move |l| (t, l)));
    for (tree, (level, files)) in levels {
        let mut sorted: Vec<&FileMetaData> = files.values().collect();
        sorted.sort_by(|a, b| a.smallest.cmp(&b.smallest));
        for pair in sorted.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if a.largest.user_key() >= b.smallest.user_key() {
                let detail = format!(
                    "{:06}.sst [{} .. {}] overlaps {:06}.sst [{} .. {}]",
                    a.number,
                    escape_bytes(a.smallest.user_key()),
                    escape_bytes(a.largest.user_key()),
                    b.number,
                    escape_bytes(b.smallest.user_key()),
                    escape_bytes(b.largest.user_key()),
                );
                let what = match tree.id {
                    0 => format!("level {level}"),
                    id => format!("level {level} of keyspace {id} (\"{}\")", tree.name),
                };
                if c.problem(&manifest_path, what, None, detail) {
                    return Ok(c.report);
                }
            }
        }
    }

    // WALs.
    // Every id below the next one was created, and is live or dropped
    // (ids are never reused): the open applies or skips its writes.
    let next_keyspace_id = state.next_keyspace_id;
    for wal in wals {
        if check_wal(&mut c, wal, Some(next_keyspace_id))? {
            return Ok(c.report);
        }
    }

    // Files the manifest does not reference (not damage).
    let mut orphans: Vec<(FileType, PathBuf)> = on_disk
        .into_iter()
        .filter(|(t, _)| match *t {
            FileType::Table(n) => !live_numbers.contains(&n),
            FileType::Wal(n) => n < state.min_log_number(),
            FileType::Temp(_) => true,
            FileType::Manifest(n) => n != number_of(&manifest_path).unwrap_or(n),
            _ => false,
        })
        .collect();
    orphans.sort_by(|a, b| a.1.cmp(&b.1));
    for (t, path) in orphans {
        let why = match t {
            FileType::Table(_) => "SSTable not in the manifest (being written, or left by a crash; the next open deletes it)",
            FileType::Wal(_) => "WAL older than the log number (already flushed; deleted soon)",
            FileType::Manifest(_) => "manifest not named by CURRENT (the next open deletes it)",
            _ => "temporary file (the next open deletes it)",
        };
        c.report.notes.push(format!("{}: {why}", file_name(&path)));
    }
    Ok(c.report)
}

#[cfg(test)]
mod tests;
