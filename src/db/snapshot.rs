//! [`Snapshot`]: reads of the default keyspace fixed at one sequence
//! number.

use std::sync::Arc;

use super::DbInner;
use crate::iter::DbIterator;
use crate::key::SequenceNumber;
use crate::key_range::KeyRange;
use crate::write_batch::check_lengths;
use crate::{Result, Slice};

/// A read-only view of a [`Db`](crate::Db) fixed at the moment
/// [`Db::snapshot`](crate::Db::snapshot) was called: `get`, `range` and
/// `prefix` behave as on the `Db`, but see no write made after that
/// moment, however many flushes and compactions follow. Dropping it releases the old versions it kept alive. It may
/// outlive the `Db` handle: reads then still work, and `close` (or drop)
/// still lets the database's `LOCK` go, so it can be opened again.
///
/// # Example
/// ```
/// let dir = tempfile::tempdir()?;
/// let db = siftdb::Db::open(dir.path())?;
/// db.put("k", "before")?;
/// let snapshot = db.snapshot();
/// db.put("k", "after")?;
/// db.flush()?;
/// assert_eq!(snapshot.get("k")?.as_deref(), Some(&b"before"[..]));
/// assert_eq!(db.get("k")?.as_deref(), Some(&b"after"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Snapshot {
    pub(super) inner: Arc<DbInner>,
    pub(super) seq: SequenceNumber,
}

impl Snapshot {
    /// The sequence number this snapshot reads at.
    pub fn sequence(&self) -> SequenceNumber {
        self.seq
    }

    read_conveniences!("as of the snapshot");

    /// The value `key` had when the snapshot was taken.
    ///
    /// # Errors
    /// As [`Db::get`](crate::Db::get).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Slice>> {
        let key = key.as_ref();
        check_lengths(key.len(), 0)?;
        let sv = self.inner.default.current.read().clone();
        self.inner.point_get(&sv, key, self.seq)
    }

    /// As [`Db::range`](crate::Db::range), as of the snapshot.
    pub fn range(&self, range: impl KeyRange) -> DbIterator {
        let sv = self.inner.default.current.read().clone();
        let (lo, hi) = range.into_bounds();
        self.inner
            .scan_range(&self.inner.default, sv, self.seq, lo, hi)
    }

    /// As [`Db::iter`](crate::Db::iter), as of the snapshot: every live
    /// pair, in key order.
    pub fn iter(&self) -> DbIterator {
        let sv = self.inner.default.current.read().clone();
        let all = std::ops::Bound::Unbounded;
        self.inner
            .scan_range(&self.inner.default, sv, self.seq, all.clone(), all)
    }

    /// As [`Db::prefix`](crate::Db::prefix), as of the snapshot.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        let sv = self.inner.default.current.read().clone();
        self.inner
            .scan_prefix(&self.inner.default, sv, self.seq, prefix.as_ref())
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut snaps = self.inner.snapshots.lock();
        if let Some(n) = snaps.get_mut(&self.seq.0) {
            *n -= 1;
            if *n == 0 {
                snaps.remove(&self.seq.0);
            }
        }
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("seq", &self.seq).finish()
    }
}
