//! [`KeyspaceState`]: what one LSM tree owns, apart from what the whole
//! database shares.
//!
//! A database is heading for several named keyspaces (column families)
//! sharing one WAL, one manifest, one sequence number and one background
//! thread, each with its own memtables, tables and compaction state
//! (DESIGN.md 10). Today it has exactly one, the default, held in
//! `DbInner::default`; what moves here is what each keyspace will own.

use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::SuperVersion;
use crate::version::set::NUM_LEVELS;

/// The state of one keyspace: the super-version readers take and the
/// leveled picker's position. Shared state (the WAL, the manifest, the
/// file numbers, snapshots, the background thread and the lock that lets
/// one compaction run at a time) stays in `DbInner`.
pub(super) struct KeyspaceState {
    /// The memtables and version a new read sees; replaced whole by every
    /// rotation, flush and compaction.
    pub(super) current: RwLock<Arc<SuperVersion>>,
    /// The leveled picker's round-robin key per level (its compaction
    /// pointer): where the next compaction from that level starts.
    /// Taken only while holding `DbInner::compaction`.
    pub(super) compaction_pointers: Mutex<Vec<Vec<u8>>>,
}

impl KeyspaceState {
    /// A keyspace whose readers start at `sv`, with no compaction
    /// pointer yet.
    pub(super) fn new(sv: SuperVersion) -> KeyspaceState {
        KeyspaceState {
            current: RwLock::new(Arc::new(sv)),
            compaction_pointers: Mutex::new(vec![Vec::new(); NUM_LEVELS]),
        }
    }
}
