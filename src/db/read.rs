//! Reads over one super-version: point lookups with their counters, and
//! range iterators.

use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::filter::{hash_key, KeyHash, PrefixExtractor};
use crate::iter::{DbIterator, Source};
use crate::key::{SequenceNumber, ValueType};
use crate::key_range::overlaps;
use crate::range_tombstone::FragmentedRangeTombstones;
use crate::sstable::block_cache::BlockCache;
use crate::sstable::TableGet;
use crate::stats::{Counters, GetCounts};
use crate::version::set::TableFile;
use crate::{Result, Slice};

use super::SuperVersion;

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
    for f in &sv.version.levels[0] {
        if let Some((found, vt, v)) = probe(f, key, seq, hash, cache, c)? {
            return Ok(visible(found, vt, v));
        }
    }
    for files in &sv.version.levels[1..] {
        // Disjoint, sorted files: the only candidate is the first whose
        // largest key is >= key.
        let i = files.partition_point(|f| f.largest_user_key() < key);
        match files.get(i) {
            Some(f) => {
                if let Some((found, vt, v)) = probe(f, key, seq, hash, cache, c)? {
                    return Ok(visible(found, vt, v));
                }
            }
            // Past the level's last key: skipped by key range.
            None if !files.is_empty() => c.range_skips += 1,
            None => {}
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
fn probe(
    f: &TableFile,
    key: &[u8],
    seq: SequenceNumber,
    hash: KeyHash,
    cache: Option<&BlockCache>,
    c: &mut GetCounts,
) -> Result<Option<(SequenceNumber, ValueType, Slice)>> {
    let has_filter = f.table.has_filter();
    match f.table.get_cached(key, seq, hash, cache)? {
        TableGet::OutOfRange => {
            c.range_skips += 1;
            Ok(None)
        }
        TableGet::FilterNegative => {
            c.filter_probes += 1;
            c.filter_negatives += 1;
            Ok(None)
        }
        TableGet::Searched { block, entry } => {
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
    }
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
