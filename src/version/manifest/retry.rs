//! Running a read again while another process changes the manifest. A
//! reader that takes no lock (`Db::open_read_only`, `crate::inspect`) may
//! find a file the manifest names already deleted by a writer's flush or
//! compaction; [`retry_while_manifest_changes`] reads again when the
//! manifest's [`identity`] changed meanwhile.

use std::path::Path;

use super::read_current;
use crate::filename::manifest_path;

/// How long [`retry_while_manifest_changes`] goes on running its read
/// while the manifest keeps changing under it (it always makes at least
/// [`MIN_READ_ATTEMPTS`]). A writer flushing a small memtable every few
/// milliseconds changes the manifest during many reads of a large tree;
/// some attempt soon falls between two edits.
const READ_RETRY_BUDGET: std::time::Duration = std::time::Duration::from_secs(5);

/// Attempts [`retry_while_manifest_changes`] makes before its time budget
/// applies.
const MIN_READ_ATTEMPTS: usize = 5;

/// What identifies the manifest state of `dir` on disk: the number
/// `CURRENT` names and that manifest's length in bytes; `None` if either
/// cannot be read. Edits only ever append, a writer changes one of the two
/// with every flush or compaction, and it deletes a file only after the
/// edit that drops it: an unchanged identity means no live file was
/// removed in between.
pub(crate) fn identity(dir: &Path) -> Option<(u64, u64)> {
    let number = read_current(dir).ok()??;
    let len = std::fs::metadata(manifest_path(dir, number)).ok()?.len();
    Some((number, len))
}

/// Runs `read`, which reads files the manifest in `dir` names, again while
/// it fails with an error `retry` accepts and the manifest changed during
/// the attempt (another process flushed, compacted or reopened the
/// database, and may have deleted a file the old manifest named): at
/// least [`MIN_READ_ATTEMPTS`] times, then until [`READ_RETRY_BUDGET`] has
/// passed. An [`identity`] that becomes readable or unreadable counts as
/// changed; one unreadable throughout does not.
///
/// # Errors
/// `read`'s last error, with `true` if the manifest changed during that
/// attempt (the attempts ran out) and `false` if it did not (or `retry`
/// refused the error): then the error stands on its own.
pub(crate) fn retry_while_manifest_changes<T, E>(
    dir: &Path,
    mut read: impl FnMut() -> std::result::Result<T, E>,
    retry: impl Fn(&E) -> bool,
) -> std::result::Result<T, (E, bool)> {
    let start = std::time::Instant::now();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let before = identity(dir);
        let e = match read() {
            Ok(v) => return Ok(v),
            Err(e) if !retry(&e) => return Err((e, false)),
            Err(e) => e,
        };
        // Unreadable before and after (a damaged or missing `CURRENT` or
        // manifest) is no change: the error stands at once.
        let changed = identity(dir) != before;
        if !changed || (attempt >= MIN_READ_ATTEMPTS && start.elapsed() >= READ_RETRY_BUDGET) {
            return Err((e, changed));
        }
    }
}
