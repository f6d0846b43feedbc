//! Reads over one super-version: point lookups with their counters, and
//! range iterators.

use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::filter::{hash_key, KeyHash, PrefixExtractor};
use crate::iter::{DbIterator, Source};
use crate::key::{user_key_prefix, SequenceNumber, ValueType};
use crate::key_range::overlaps;
use crate::range_tombstone::FragmentedRangeTombstones;
use crate::sstable::block_cache::BlockCache;
use crate::sstable::{Screen, TableGet};
use crate::stats::{Counters, GetCounts};
use crate::version::set::TableFile;
use crate::{Result, Slice};

use super::keyspace::KeyspaceState;
use super::{DbInner, SuperVersion};
use crate::sync_point::{self, SyncPoint};

impl DbInner {
    /// One point lookup in `sv` at `seq`, counted in the stats and, when
    /// on, in the read sketch (with the hash the filters then reuse).
    pub(super) fn point_get(
        &self,
        sv: &SuperVersion,
        key: &[u8],
        seq: SequenceNumber,
    ) -> Result<Option<Slice>> {
        let hash = self.hot.as_ref().map(|_| crate::filter::hash_key(key));
        let mut counts = GetCounts::default();
        let r = get_from(sv, key, seq, hash, self.block_cache.as_deref(), &mut counts);
        self.counters.add_get(&counts);
        if let (Some(sketch), Some(h), Ok(v)) = (&self.hot, hash, &r) {
            sketch.record(key, h, v.is_some());
        }
        r
    }

    /// The super-version and sequence number a new read uses, taken in
    /// that order (DESIGN.md 10).
    ///
    /// The order is what makes the pair consistent. A compaction computes
    /// its cut-off (the oldest sequence a reader may still read at) from
    /// the visible sequence before it installs its output, and it may drop
    /// every version a read at an older sequence would need. A read that
    /// loaded its sequence first and then took a super-version installed
    /// by such a compaction found the key missing or older (a `None` for a
    /// key never deleted, a deleted key back): found by an adversarial run
    /// and pinned by `tests/concurrency_reads.rs`. Taken the other way
    /// round, a super-version that holds a compaction's output was
    /// installed after that compaction read the visible sequence, so the
    /// read's sequence, loaded later, is at or above its cut-off; and a
    /// super-version from before the compaction still holds its inputs
    /// (kept open, and on disk, by the `Arc`). Every write up to the
    /// sequence is in the super-version, except writes that went to a
    /// memtable rotated in after it was taken; those all come after every
    /// write it holds, so the read sees the database as it was at that
    /// rotation, a moment during the call.
    pub(super) fn view(&self) -> (Arc<SuperVersion>, SequenceNumber) {
        self.view_of(&self.default)
    }

    /// As [`DbInner::view`], for keyspace `ks`.
    pub(super) fn view_of(&self, ks: &KeyspaceState) -> (Arc<SuperVersion>, SequenceNumber) {
        let sv = ks.current.read().clone();
        sync_point::reach(
            &self.options.sync_points,
            SyncPoint::ReadBetweenVersionAndSequence,
        );
        let seq = SequenceNumber(self.visible_seq.load(Ordering::Acquire));
        (sv, seq)
    }

    /// An iterator over `(lo, hi)` in `sv` at `seq`, consulting the tables'
    /// prefix filters when both bounds share one extracted prefix.
    pub(super) fn scan_range(
        &self,
        ks: &KeyspaceState,
        sv: Arc<SuperVersion>,
        seq: SequenceNumber,
        lo: std::ops::Bound<Vec<u8>>,
        hi: std::ops::Bound<Vec<u8>>,
    ) -> DbIterator {
        let options = ks.options();
        let ex = options.prefix_extractor.as_deref();
        let prefix = ex.and_then(|ex| range_scan_prefix(ex, &lo, &hi));
        iterate(sv, seq, lo, hi, &self.counters, prefix)
    }

    /// An iterator over the keys starting with `p` in `sv` at `seq`,
    /// consulting the tables' prefix filters when `p` is in the
    /// extractor's domain.
    pub(super) fn scan_prefix(
        &self,
        ks: &KeyspaceState,
        sv: Arc<SuperVersion>,
        seq: SequenceNumber,
        p: &[u8],
    ) -> DbIterator {
        let (lo, hi) = prefix_bounds(p);
        let options = ks.options();
        let ex = options.prefix_extractor.as_deref();
        let prefix = ex.and_then(|ex| prefix_scan_prefix(ex, p));
        iterate(sv, seq, lo, hi, &self.counters, prefix)
    }
}

/// Point lookup in one super-version at sequence `seq`, reading data
/// blocks through `cache` if the database has one. `hash` is the key's
/// [`hash_key`] if the caller already has it (the read sketch does);
/// otherwise it is computed only once the memtables miss.
pub(super) fn get_from(
    sv: &SuperVersion,
    key: &[u8],
    seq: SequenceNumber,
    hash: Option<KeyHash>,
    cache: Option<&BlockCache>,
    c: &mut GetCounts,
) -> Result<Option<Slice>> {
    // A value found is deleted if a range deletion over the key that this
    // read sees is newer (DESIGN.md 3.7). Range tombstones live in the
    // memtables and the version, never behind a table's filter; they are
    // consulted only once a value is found, so a miss costs nothing more.
    let visible = |found: SequenceNumber, vt: ValueType, value: Slice| {
        (vt == ValueType::Value && max_range_tombstone(sv, key, seq) <= found).then_some(value)
    };
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        if let Some((found, vt, value)) = mem.get(key, seq) {
            c.memtable_hit = true;
            return Ok(visible(found, vt, value));
        }
    }
    let hash = hash.unwrap_or_else(|| hash_key(key));
    let prefix = user_key_prefix(key);
    for f in &sv.version.levels[0] {
        if let Some((found, vt, v)) = probe(f, key, prefix, seq, hash, cache, c)? {
            return Ok(visible(found, vt, v));
        }
    }
    for files in sv.version.levels[1..].iter().filter(|l| !l.is_empty()) {
        // Disjoint, sorted files: the only candidate is the first whose
        // largest key is >= key.
        let i = files.partition_point(|f| f.largest_user_key() < key);
        match files.get(i) {
            Some(f) => {
                if let Some((found, vt, v)) = probe(f, key, prefix, seq, hash, cache, c)? {
                    return Ok(visible(found, vt, v));
                }
            }
            // Past the level's last key: skipped by key range.
            None => c.range_skips += 1,
        }
    }
    Ok(None)
}

/// The largest sequence number `<= seq` of a range tombstone over `key`
/// in `sv` (its memtables and its version), or 0 if there is none.
pub(super) fn max_range_tombstone(
    sv: &SuperVersion,
    key: &[u8],
    seq: SequenceNumber,
) -> SequenceNumber {
    let mems = std::iter::once(&sv.mem)
        .chain(sv.imms.iter())
        .map(|m| m.max_range_tombstone(key, seq));
    let flushed = sv.version.range_tombstones.index().max_covering(key, seq);
    mems.fold(flushed, SequenceNumber::max)
}

/// Looks `key` up in one table: `Some(version)` (the newest version of
/// the key with sequence `<= seq`: sequence, type, value) ends the search;
/// `None` means the table holds none, and the search goes on.
#[inline]
fn probe(
    f: &TableFile,
    key: &[u8],
    prefix: u128,
    seq: SequenceNumber,
    hash: KeyHash,
    cache: Option<&BlockCache>,
    c: &mut GetCounts,
) -> Result<Option<(SequenceNumber, ValueType, Slice)>> {
    match f.table.screen(key, prefix, hash) {
        Screen::OutOfRange => {
            c.range_skips += 1;
            Ok(None)
        }
        Screen::FilterNegative => {
            c.filter_probes += 1;
            c.filter_negatives += 1;
            Ok(None)
        }
        Screen::Maybe => search(f, key, prefix, seq, cache, c),
    }
}

/// The rest of [`probe`] for a table its screen did not rule out: the
/// index search and the block read.
#[inline(never)]
fn search(
    f: &TableFile,
    key: &[u8],
    prefix: u128,
    seq: SequenceNumber,
    cache: Option<&BlockCache>,
    c: &mut GetCounts,
) -> Result<Option<(SequenceNumber, ValueType, Slice)>> {
    let has_filter = f.table.has_filter();
    // `Table::search` answers only `Searched` (the screen is behind it).
    let TableGet::Searched { block, entry } = f.table.search(key, prefix, seq, cache)? else {
        return Ok(None);
    };
    if has_filter {
        c.filter_probes += 1;
    }
    if block.is_some() {
        c.data_block_reads += 1;
    }
    if entry.is_none() && has_filter {
        c.filter_false_positives += 1;
    }
    Ok(entry)
}

/// The user-key bounds of the keys starting with `p`.
pub(super) fn prefix_bounds(p: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let hi = match crate::key::prefix_successor(p) {
        Some(s) => Bound::Excluded(s),
        None => Bound::Unbounded,
    };
    (Bound::Included(p.to_vec()), hi)
}

/// The prefix filter a scan can consult: the extractor's name and the hash
/// of the one prefix every key of the scan has.
pub(super) struct ScanPrefix<'a> {
    pub extractor: &'a str,
    pub hash: KeyHash,
}

/// The prefix every key starting with `p` has under `ex`, if `p` is in its
/// domain: `ex.prefix(p)` is a prefix of `p`, so every key starting with
/// `p` starts with it, and so has it as its prefix (the extractor's
/// prefixes are closed under extension: [`crate::filter::prefix`]).
pub(super) fn prefix_scan_prefix<'a>(
    ex: &'a dyn PrefixExtractor,
    p: &[u8],
) -> Option<ScanPrefix<'a>> {
    Some(ScanPrefix {
        extractor: ex.name(),
        hash: hash_key(ex.prefix(p)?),
    })
}

/// The prefix every key within `(lo, hi)` has under `ex`, if both bounds
/// are keys with the same prefix `q`: the keys that start with `q` are one
/// interval in key order, so every key between two of them starts with `q`
/// too.
pub(super) fn range_scan_prefix<'a>(
    ex: &'a dyn PrefixExtractor,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
) -> Option<ScanPrefix<'a>> {
    fn key(b: &Bound<Vec<u8>>) -> Option<&[u8]> {
        match b {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        }
    }
    let q = ex.prefix(key(lo)?)?;
    (ex.prefix(key(hi)?)? == q).then(|| ScanPrefix {
        extractor: ex.name(),
        hash: hash_key(q),
    })
}

/// An iterator over `(lo, hi)` at `seq` in `sv`: every memtable, and every
/// table whose key range overlaps the bounds, unless `prefix` is given and
/// the table's prefix filter proves it holds no key with that prefix.
/// Tables' block reads and prefix probes are counted in `counters`.
pub(super) fn iterate(
    sv: Arc<SuperVersion>,
    seq: SequenceNumber,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    counters: &Counters,
    prefix: Option<ScanPrefix<'_>>,
) -> DbIterator {
    let mut sources: Vec<Source> = Vec::new();
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        let (l, h) = (
            lo.as_ref().map(Vec::as_slice),
            hi.as_ref().map(Vec::as_slice),
        );
        // Read after `seq` was fixed (see `Source::newest`).
        let newest = mem.largest_point_seq();
        sources.push(Source {
            iter: Box::new(mem.iter(l, h)),
            newest,
        });
    }
    for (_, f) in sv.version.files() {
        if !overlaps(f.smallest_user_key(), f.largest_user_key(), &lo, &hi) {
            continue;
        }
        if let Some(p) = &prefix {
            if let Some(may) = f.table.prefix_may_match(p.extractor, p.hash) {
                counters.prefix_probes.fetch_add(1, Ordering::Relaxed);
                if !may {
                    counters.prefix_negatives.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            }
        }
        let it = f.table.iter(lo.clone(), hi.clone());
        sources.push(Source {
            iter: Box::new(it.count_block_reads(Arc::clone(&counters.scan_block_reads))),
            newest: f.table.properties().largest_seq,
        });
    }
    let tombstones = range_tombstones_for_scan(&sv);
    DbIterator::new(sources, seq, Box::new(sv)).with_range_tombstones(tombstones)
}

/// The range-tombstone indexes a scan of `sv` applies: each memtable's
/// and the version's, shared rather than rebuilt (the iterator applies
/// only the tombstones its sequence number sees); empty in the usual case.
fn range_tombstones_for_scan(sv: &SuperVersion) -> Vec<Arc<FragmentedRangeTombstones>> {
    std::iter::once(&sv.mem)
        .chain(sv.imms.iter())
        .filter_map(|m| m.range_tombstone_index())
        .chain(
            (!sv.version.range_tombstones.is_empty())
                .then(|| Arc::clone(sv.version.range_tombstones.index())),
        )
        .collect()
}
