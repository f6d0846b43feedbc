//! The database directory's `LOCK`: the exclusive lock a writable open
//! takes, and whether some process holds it (has the database open for
//! writing).

use std::fs::{File, OpenOptions};
use std::path::Path;

use crate::error::IoContext;
use crate::filename;
use crate::util::file::{check_regular, open_regular};
use crate::{Error, Result};

/// How long [`acquire_lock`] keeps retrying a held `LOCK` before it
/// reports [`Error::Locked`].
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(200);

/// Takes the exclusive lock (`flock`) on `dir/LOCK`.
///
/// A lock that is held is retried for [`LOCK_RETRY`] before giving up. The
/// retry covers a race of `flock` with `fork`: a process that spawns a
/// child right before this database was closed may have the child hold a
/// duplicate of the old handle's descriptor until it calls `exec` (which
/// closes it), so the lock can look held for a moment after `close`.
pub(in crate::db) fn acquire_lock(dir: &Path) -> Result<File> {
    let path = filename::lock_path(dir);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .and_then(|f| check_regular(&f.metadata()?).map(|()| f))
        .context(|| format!("open {}", path.display()))?;
    match retry_lock(|| file.try_lock()) {
        Ok(true) => Ok(file),
        Ok(false) => Err(Error::Locked(dir.to_path_buf())),
        Err(e) => Err(Error::io(format!("lock {}", path.display()), e)),
    }
}

/// Calls `try_lock` until it takes the lock or [`LOCK_RETRY`] has passed:
/// `Ok(true)` once taken, `Ok(false)` if still held at the deadline.
fn retry_lock(
    mut try_lock: impl FnMut() -> Result<(), std::fs::TryLockError>,
) -> std::io::Result<bool> {
    let deadline = std::time::Instant::now() + LOCK_RETRY;
    loop {
        match try_lock() {
            Ok(()) => return Ok(true),
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(std::fs::TryLockError::WouldBlock) => return Ok(false),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

/// Whether a process holds `dir/LOCK`, that is, has the database open for
/// writing: the lock is tried in shared mode and let go at once, a held
/// one retried for [`LOCK_RETRY`] as [`acquire_lock`] retries it (the
/// same race with `fork`: a child spawned right before a handle closed
/// holds its descriptor until `exec`). `None` if that cannot be told (no
/// `LOCK` file, or it cannot be opened).
pub(crate) fn held_by_a_writer(dir: &Path) -> Option<bool> {
    let lock = open_regular(&filename::lock_path(dir)).ok()?;
    let taken = retry_lock(|| lock.try_lock_shared()).ok()?;
    Some(!taken)
}
