//! Sync points: named places in the engine where a test can stop a thread,
//! so that a race window that is nanoseconds wide in production can be held
//! open for as long as the test needs (RocksDB's `TEST_SYNC_POINT` serves
//! the same purpose). A test installs a callback through
//! [`Options::sync_points`](crate::Options::sync_points); the engine calls it
//! with the [`SyncPoint`] it has reached, on the thread that reached it,
//! and carries on when the callback returns. The callback may block, sleep
//! or yield; it must not call back into the same database from a point
//! that holds a lock (the points below say which hold one).
//!
//! With no callback installed (the default) a point costs one branch on an
//! `Option` that is `None`.

use std::fmt;
use std::sync::Arc;

/// A place in the engine a test can pause at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SyncPoint {
    /// In `Db::get`, `iter`, `range` and `prefix`, between the two steps
    /// that fix what the read sees: taking the current super-version and
    /// loading the visible sequence number. No lock is held.
    ReadBetweenVersionAndSequence,
    /// At the start of every compaction (background or manual), before its
    /// inputs are read. The compaction lock is held: a callback that blocks
    /// here stops every other compaction, but not flushes.
    CompactionStart,
    /// In every compaction, once its outputs are written and synced and
    /// before it takes the versions lock to log and install its edit. The
    /// compaction lock is held; flushes go on while a callback blocks
    /// here (a range deletion flushed then is one the merge did not know).
    CompactionBeforeInstall,
    /// In the background flush of a frozen memtable, before its table is
    /// written. No lock is held; the background thread does nothing else
    /// while a callback blocks here.
    FlushStart,
    /// In the background flush of a frozen memtable, once its table is
    /// written and synced and before it takes the versions lock to log and
    /// install its edit. No lock is held; the background thread does
    /// nothing else while a callback blocks here.
    FlushBeforeInstall,
    /// In `Db::open_read_only`, after the manifest has been replayed and
    /// before any table or WAL is opened or the directory listed. No lock
    /// is held.
    ReadOnlyOpenAfterManifest,
    /// In every write, right after its batch joined the group-commit queue
    /// and before it waits to lead or to be committed. The queue's lock is
    /// held: the callback may count, but must not block.
    WriteQueued,
    /// In a writer that has just become the group-commit leader, before it
    /// takes the group of queued batches it will commit. No lock is held;
    /// writers that arrive while a callback blocks here queue behind it
    /// and join its group.
    WriteLeaderBeforeGroup,
    /// In `Db::checkpoint`, after the point the checkpoint copies is fixed
    /// (its sequence number noted, its version and WALs pinned) and every
    /// lock let go, before any SSTable is linked: writes, flushes and
    /// compactions go on while a callback blocks here.
    CheckpointAfterPoint,
    /// In `Db::checkpoint`, once the temporary directory holds the whole
    /// checkpoint, synced, and before it is renamed to the target. No lock
    /// is held.
    CheckpointBeforeRename,
}

/// The callback [`crate::Options::sync_points`] holds. Cloning shares it.
#[derive(Clone)]
pub struct SyncPoints(Arc<dyn Fn(SyncPoint) + Send + Sync>);

impl SyncPoints {
    /// Wraps `callback`, which the engine calls at every [`SyncPoint`] it
    /// reaches, on the thread that reaches it.
    ///
    /// ```
    /// use siftdb::sync_point::{SyncPoint, SyncPoints};
    /// let mut o = siftdb::Options::default();
    /// o.sync_points = Some(SyncPoints::new(|p| {
    ///     if p == SyncPoint::ReadBetweenVersionAndSequence {
    ///         std::thread::yield_now(); // let a compaction run in between
    ///     }
    /// }));
    /// ```
    pub fn new(callback: impl Fn(SyncPoint) + Send + Sync + 'static) -> Self {
        SyncPoints(Arc::new(callback))
    }

    /// Calls the callback with `point`.
    pub fn reach(&self, point: SyncPoint) {
        (self.0)(point)
    }
}

impl fmt::Debug for SyncPoints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SyncPoints(..)")
    }
}

/// Calls `points`' callback with `point`, if one is installed.
pub(crate) fn reach(points: &Option<SyncPoints>, point: SyncPoint) {
    if let Some(p) = points {
        p.reach(point);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn the_callback_sees_every_point_reached_in_order() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        let points = Some(SyncPoints::new(move |p| s.lock().unwrap().push(p)));
        reach(&points, SyncPoint::CompactionStart);
        reach(&points, SyncPoint::ReadBetweenVersionAndSequence);
        reach(&None, SyncPoint::CompactionStart);
        assert_eq!(
            *seen.lock().unwrap(),
            [
                SyncPoint::CompactionStart,
                SyncPoint::ReadBetweenVersionAndSequence
            ]
        );
    }
}
