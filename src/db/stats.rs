//! [`Db::stats`] and [`Keyspace::stats`]: the counters since open, and
//! the shape and memory of each keyspace's tree.

use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::keyspace::KeyspaceState;
use super::{Db, DbInner, Keyspace, SuperVersion};
use crate::sketch::hyperloglog::HyperLogLog;
use crate::stats::{KeyspaceStats, LevelStats, MemoryUsage, Stats};
use crate::version::filter_memory::FilterMemory;
use crate::Result;

impl Db {
    /// Counters since open and the shape of the current version. `levels`,
    /// `filter_memory`, `range_tombstones` and `key_predictions` describe
    /// the default keyspace (as before keyspaces existed); `memory` sums
    /// every keyspace's tables and memtables; `keyspaces` has one entry
    /// per live keyspace, the default first.
    pub fn stats(&self) -> Stats {
        self.inner.stats(&self.inner.default, true)
    }
}

impl Keyspace {
    /// This keyspace's [`Stats`]: the shape, filter memory, range
    /// tombstones, key predictions and memory (its tables and memtables,
    /// plus the block cache all keyspaces share) of its own tree, its own
    /// `flushes` and `compactions`, and `keyspaces` holding its one entry.
    /// The other event counters (lookups, bytes written, ...) and the
    /// lifetime totals are the database's.
    pub fn stats(&self) -> Stats {
        self.inner.stats(&self.state, false)
    }
}

/// What `ks`, whose super-version is `sv` and whose log number the
/// manifest holds is `log_number`, has now.
fn keyspace_stats(ks: &KeyspaceState, sv: &SuperVersion, log_number: u64) -> KeyspaceStats {
    let mems = || std::iter::once(&sv.mem).chain(&sv.imms);
    let in_mems: usize = mems().map(|m| m.range_tombstone_count()).sum();
    KeyspaceStats {
        id: ks.id,
        name: ks.name.clone(),
        levels: LevelStats::of_version(&sv.version),
        memtable_bytes: mems().map(|m| m.approximate_size() as u64).sum(),
        immutable_memtables: sv.imms.len(),
        log_number,
        range_tombstones: (in_mems + sv.version.range_tombstones.len()) as u64,
        flushes: ks.flushes.load(Ordering::Relaxed),
        compactions: ks.compactions.load(Ordering::Relaxed),
    }
}

impl DbInner {
    /// The stats of keyspace `focus`'s tree, with the database's counters;
    /// `whole` (for the default only) lists and sums every keyspace, else
    /// only `focus` is listed and counted.
    fn stats(&self, focus: &Arc<KeyspaceState>, whole: bool) -> Stats {
        let listed = if whole {
            self.all_keyspaces()
        } else {
            vec![Arc::clone(focus)]
        };
        let views: Vec<Arc<SuperVersion>> =
            listed.iter().map(|k| k.current.read().clone()).collect();
        let vs = self.versions.lock();
        let totals = (vs.user_bytes_flushed, vs.table_bytes_written);
        let predictions = match focus.id {
            0 => Some(&vs.key_predictions),
            id => vs.keyspaces.get(&id).map(|k| &k.key_predictions),
        }
        .map(|p| p.iter().copied().collect())
        .unwrap_or_default();
        let log_numbers: Vec<u64> = listed
            .iter()
            .map(|k| vs.log_number_of(k.id).unwrap_or_default())
            .collect();
        drop(vs);
        let mut memory = MemoryUsage::default();
        if let Some(c) = self.block_cache.as_deref() {
            memory.block_cache_capacity = c.capacity() as u64;
            memory.block_cache = c.used() as u64;
        }
        let mut keyspaces = Vec::with_capacity(listed.len());
        for ((ks, sv), log_number) in listed.iter().zip(&views).zip(log_numbers) {
            let k = keyspace_stats(ks, sv, log_number);
            memory.add_tree(&MemoryUsage::of_version(&sv.version), k.memtable_bytes);
            keyspaces.push(k);
        }
        // Against the budget the reported keyspace runs with.
        let budget = listed[0].options().filter_budget;
        let filters = FilterMemory::of(&views[0].version, budget.as_ref());
        let mut stats = self.counters.snapshot(
            keyspaces[0].levels.clone(),
            filters,
            totals,
            memory,
            predictions,
        );
        stats.range_tombstones = keyspaces[0].range_tombstones;
        if !whole {
            stats.flushes = keyspaces[0].flushes;
            stats.compactions = keyspaces[0].compactions;
        }
        stats.keyspaces = keyspaces;
        stats
    }
}

impl DbInner {
    /// [`Db::approximate_len`] of keyspace `ks`.
    pub(super) fn approximate_len_of(&self, ks: &KeyspaceState) -> Result<u64> {
        let sv = ks.current.read().clone();
        let precision = self
            .options
            .key_sketch_precision
            .unwrap_or(HyperLogLog::DEFAULT_PRECISION);
        let mut sketch = HyperLogLog::new(precision)?;
        let mut unsketched = 0u64;
        for (_, f) in sv.version.files() {
            // A damaged sketch counts as none: it shapes this estimate,
            // never an answer (`kvctl verify` reports it).
            match f.table.key_sketch().ok().flatten() {
                Some(s) => sketch.merge(&s),
                None => unsketched += f.table.properties().num_distinct_keys,
            }
        }
        for mem in std::iter::once(&sv.mem).chain(&sv.imms) {
            let mut last: Option<Vec<u8>> = None;
            for entry in mem.iter(Bound::Unbounded, Bound::Unbounded) {
                let (ik, _) = entry?;
                let user_key = crate::key::user_key_of(&ik);
                if last.as_deref() != Some(user_key) {
                    sketch.insert(user_key);
                    last = Some(user_key.to_vec());
                }
            }
        }
        Ok(sketch.estimate().round() as u64 + unsketched)
    }
}
