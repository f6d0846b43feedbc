//! Replaying the manifest at open, and checking that the files it lists as
//! live are there: a missing one means the manifest lost a durable edit.

use std::path::{Path, PathBuf};

use super::MAX_FILE_NUMBER;
use crate::filename;
use crate::log::TornTail;
use crate::version::manifest;
use crate::version::set::ReplayedState;
use crate::{Error, Result};

/// Replays manifest `number` in `dir` and checks that the files it lists
/// as live are present.
///
/// Replay drops a final record that looks torn, which is right for an edit
/// cut off by a crash inside `Manifest::log_edit`: nothing depended on it,
/// so every file the state before it names still exists. A manifest that
/// lost a durable edit (truncated, or its last record damaged) looks the
/// same to replay, but the files that edit obsoleted are gone: after a
/// flush, the WAL that held the flushed writes; after a compaction, its
/// inputs. Opening anyway would silently lose those writes, so a missing
/// live table, or a missing WAL at the manifest's log number (the WAL of
/// the oldest unflushed memtable, created before any edit names it and
/// deleted only after a later edit moves the log number past it), is
/// `Corruption` naming the manifest. Found by tests/corruption_campaign.rs;
/// pinned by tests/regress_manifest_tail.rs.
pub(in crate::db) fn replay_manifest(dir: &Path, number: u64) -> Result<Replayed> {
    let replay = manifest::replay(dir, number)?;
    let state = replay.replay_all()?;
    if state.next_file_number > MAX_FILE_NUMBER {
        return Err(Error::corruption(
            &replay.path,
            0,
            format!(
                "next file number {} is above the largest allowed, {MAX_FILE_NUMBER}",
                state.next_file_number
            ),
        ));
    }
    // The WAL the log number names is checked by `recover`, among the WALs
    // it opens.
    let trees = std::iter::once(&state.files).chain(state.keyspaces.values().map(|k| &k.files));
    for &n in trees.flatten().flat_map(|level| level.keys()) {
        let path = filename::table_path(dir, n);
        match std::fs::metadata(&path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(missing_live_file(
                    &replay.path,
                    replay.torn_tail.as_ref(),
                    &path,
                ));
            }
            Err(e) => return Err(Error::io(format!("stat {}", path.display()), e)),
        }
    }
    Ok(Replayed {
        manifest: Some(replay.path),
        state,
        torn_tail: replay.torn_tail,
    })
}

/// The `Corruption` for a file the manifest at `manifest` lists as live
/// but that is missing, saying so if the manifest ends in a torn record
/// (it may then have lost the durable edit that obsoleted the file).
pub(super) fn missing_live_file(
    manifest: &Path,
    torn_tail: Option<&TornTail>,
    path: &Path,
) -> Error {
    let (at, why) = match torn_tail {
        Some(t) => (
            t.offset,
            format!(
                "; the manifest ends in a torn record at offset {} ({}), so it may have lost edits",
                t.offset, t.reason
            ),
        ),
        None => (0, String::new()),
    };
    manifest::missing_live_file(manifest, at, path, &why)
}

/// A manifest replayed by [`replay_manifest`], as [`recover`](super::recover)
/// takes it.
pub(in crate::db) struct Replayed {
    /// The manifest's path; `None` for a database being created.
    pub manifest: Option<PathBuf>,
    /// The live files and counters.
    pub state: ReplayedState,
    /// The incomplete final record replay dropped, if any.
    pub torn_tail: Option<TornTail>,
}

impl Replayed {
    /// The state of a database being created: no files, numbering from 1.
    pub fn fresh() -> Replayed {
        Replayed {
            manifest: None,
            state: ReplayedState {
                next_file_number: 1,
                ..ReplayedState::new()
            },
            torn_tail: None,
        }
    }
}
