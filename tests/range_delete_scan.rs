//! Scans over range deletions (DESIGN.md 3.7, 4): an iterator that lands
//! on a version a range tombstone hides skips the rest of the tombstone's
//! keys in every source older than it, rather than stepping through them.
//! A randomized test checks exact results against a model (both ends,
//! interleaved; snapshots older and newer than the tombstones; tombstones
//! in the memtable and flushed; overlapping ones; bounds inside them), and
//! a counting test checks that the hidden blocks are not read.

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;

use proptest::prelude::*;
use siftdb::inspect::key_range::overlaps;
use siftdb::{CompactionStyle, Db, DbIterator, Options};

/// Keys of the randomized test: `k0000` to `k0299`.
const KEYS: u16 = 300;

/// Key `i` of the randomized test.
fn key(i: u16) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// A value long enough that a few hundred of them fill several 1 KiB
/// blocks, so table sources have blocks to skip.
fn value(i: u16, tag: u8) -> Vec<u8> {
    format!("{tag:03}-{i:04}-{}", "v".repeat(24)).into_bytes()
}

/// One write of the randomized test.
#[derive(Debug, Clone)]
enum Op {
    /// Puts keys `from..from + len` (clamped), all with `tag`.
    Fill { from: u16, len: u16, tag: u8 },
    /// Puts one key with a tag.
    Put(u16, u8),
    /// Deletes one key (a point tombstone).
    Delete(u16),
    /// Deletes `[start, end)`; `None`: unbounded on that side.
    DeleteRange(Option<u16>, Option<u16>),
    /// Flushes the memtable (its range deletions move to the version).
    Flush,
    /// Takes a snapshot, to be scanned at the end.
    Snapshot,
}

/// Writes, mostly fills, puts and range deletions (overlapping, some
/// unbounded).
fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..KEYS, 1..KEYS, any::<u8>()).prop_map(|(from, len, tag)| Op::Fill { from, len, tag }),
        3 => (0..KEYS, any::<u8>()).prop_map(|(k, t)| Op::Put(k, t)),
        1 => (0..KEYS).prop_map(Op::Delete),
        4 => (
            prop::option::weighted(0.85, 0..KEYS),
            prop::option::weighted(0.85, 1..=KEYS)
        )
            .prop_map(|(a, b)| match (a, b) {
                (Some(a), Some(b)) if b <= a => Op::DeleteRange(Some(b.saturating_sub(1)), Some(a + 1)),
                (a, b) => Op::DeleteRange(a, b),
            }),
        2 => Just(Op::Flush),
        2 => Just(Op::Snapshot),
    ]
}

/// A scan bound over the keys (and one key past them, `k0300`).
fn bound() -> impl Strategy<Value = Bound<u16>> {
    prop_oneof![
        1 => Just(Bound::Unbounded),
        3 => (0..=KEYS).prop_map(Bound::Included),
        3 => (0..=KEYS).prop_map(Bound::Excluded),
    ]
}

/// A bound over key numbers as a bound over keys.
fn bound_key(b: Bound<u16>) -> Bound<Vec<u8>> {
    b.map(key)
}

/// True if `k` lies within `(lo, hi)`: the one-key file range of the
/// engine's own [`overlaps`].
fn in_bounds(k: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    overlaps(k, k, lo, hi)
}

/// The live pairs, as a scan should see them.
type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// One scan to check: which view (a snapshot, or past the last one the
/// latest), its bounds, and its first steps (true: `next_back`).
type Check = (prop::sample::Index, Bound<u16>, Bound<u16>, Vec<bool>);

/// Runs `steps` (true: `next_back`) on `it` and then drains it from the
/// front, checking every item against `model` within the bounds.
fn check_scan(
    mut it: DbIterator,
    model: &Model,
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
    steps: &[bool],
    what: &str,
) {
    let mut expected: VecDeque<(Vec<u8>, Vec<u8>)> = model
        .iter()
        .filter(|(k, _)| in_bounds(k, lo, hi))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let show = |kv: &Option<(Vec<u8>, Vec<u8>)>| {
        kv.as_ref().map(|(k, v)| {
            (
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
    };
    for (i, &back) in steps
        .iter()
        .chain(std::iter::repeat_n(&false, expected.len() + 1))
        .enumerate()
    {
        let got = if back { it.next_back() } else { it.next() };
        let got = got.map(common::owned);
        let want = if back {
            expected.pop_back()
        } else {
            expected.pop_front()
        };
        assert_eq!(
            show(&got),
            show(&want),
            "{what}: step {i} ({}) of {lo:?}..{hi:?}",
            if back { "next_back" } else { "next" }
        );
        if want.is_none() {
            // Ended: both ends stay ended.
            assert!(
                it.next().is_none() && it.next_back().is_none(),
                "{what}: ended"
            );
            return;
        }
    }
}

/// Applies `ops` to a database and a model (snapshots keep a copy of the
/// model), then runs every check against the view it names.
fn run(ops: &[Op], leveled: bool, checks: &[Check]) {
    let dir = tempfile::tempdir().unwrap();
    let mut o: Options = common::small_options();
    o.write_buffer_size = 16 << 10;
    o.compaction_style = if leveled {
        CompactionStyle::Leveled
    } else {
        CompactionStyle::None
    };
    let db: Db = common::open(dir.path(), &o);
    let mut model = Model::new();
    let mut snapshots = Vec::new();
    for op in ops {
        match *op {
            Op::Fill { from, len, tag } => {
                for i in from..from.saturating_add(len).min(KEYS) {
                    db.put(key(i), value(i, tag)).unwrap();
                    model.insert(key(i), value(i, tag));
                }
            }
            Op::Put(k, tag) => {
                db.put(key(k), value(k, tag)).unwrap();
                model.insert(key(k), value(k, tag));
            }
            Op::Delete(k) => {
                db.delete(key(k)).unwrap();
                model.remove(&key(k));
            }
            Op::DeleteRange(a, b) => {
                let lo = a.map_or(Bound::Unbounded, |a| Bound::Included(key(a)));
                let hi = b.map_or(Bound::Unbounded, |b| Bound::Excluded(key(b)));
                db.delete_range((lo.clone(), hi.clone())).unwrap();
                model.retain(|k, _| !in_bounds(k, &lo, &hi));
            }
            Op::Flush => db.flush().unwrap(),
            Op::Snapshot => snapshots.push((db.snapshot(), model.clone())),
        }
    }
    for (view, lo, hi, steps) in checks {
        let (lo, hi) = (bound_key(*lo), bound_key(*hi));
        let v = view.index(snapshots.len() + 1);
        let bounds = (lo.clone(), hi.clone());
        match snapshots.get(v) {
            Some((snap, m)) => {
                let what = format!("snapshot {v}");
                check_scan(snap.range(bounds), m, &lo, &hi, steps, &what)
            }
            None => check_scan(db.range(bounds), &model, &lo, &hi, steps, "latest"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        common::env_u64("SIFTDB_RANGE_SCAN_CASES", 96) as u32
    ))]

    /// Exact results, both ends and interleaved, against a model.
    #[test]
    fn scans_over_range_deletions_match_a_model(
        ops in prop::collection::vec(op(), 1..40),
        leveled in prop::bool::weighted(0.2),
        checks in prop::collection::vec(
            (any::<prop::sample::Index>(), bound(), bound(), prop::collection::vec(any::<bool>(), 0..24)),
            1..10,
        ),
    ) {
        run(&ops, leveled, &checks);
    }
}

/// A scan that lands in a wide range deletion reads the blocks around it,
/// not the hidden ones (`Stats::scan_block_reads`), whether the deletion is
/// in the memtable or flushed, forward and backward; a key written again
/// after the deletion, and a snapshot from before it, still read right.
#[test]
fn a_scan_seeks_past_a_range_deletion_instead_of_reading_what_it_hides() {
    const N: u32 = 20_000;
    const DELETED: u32 = 18_000;
    let k = |i: u32| format!("k{i:06}");
    for flushed in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut o = common::small_options();
        o.compaction_style = CompactionStyle::None;
        let db = common::open(dir.path(), &o);
        for i in 0..N {
            db.put(k(i), format!("value {i} {}", "x".repeat(20)))
                .unwrap();
        }
        db.flush().unwrap();
        let before = db.snapshot();
        db.delete_range(k(0)..k(DELETED)).unwrap();
        if flushed {
            db.flush().unwrap();
        }
        let tables = db
            .stats()
            .levels
            .iter()
            .map(|l| l.files as u64)
            .sum::<u64>();
        let reads = || db.stats().scan_block_reads;

        let r0 = reads();
        assert_eq!(
            common::keys(db.iter().take(3)),
            [k(DELETED), k(DELETED + 1), k(DELETED + 2)]
        );
        let forward = reads() - r0;

        let r0 = reads();
        let mut back = common::keys(db.range(..k(DELETED + 3)).rev());
        back.reverse();
        assert_eq!(back, [k(DELETED), k(DELETED + 1), k(DELETED + 2)]);
        let backward = reads() - r0;

        // Stepping through the hidden keys read 775 blocks forward (34
        // tables, the deletion in the memtable); a seek reads about one
        // block per table (the one the merge peeks before it knows).
        let most = tables + 4;
        eprintln!("flushed {flushed}: {tables} tables; blocks read forward {forward}, backward {backward}");
        for (dir, n) in [("forward", forward), ("backward", backward)] {
            assert!(
                n <= most,
                "flushed {flushed}: a {dir} scan read {n} blocks of {tables} tables, more than {most}"
            );
        }

        // The snapshot from before the deletion still sees every key.
        assert_eq!(common::keys(before.iter().take(2)), [k(0), k(1)]);
        // A key written again after the deletion shows, in both directions.
        db.put(k(7), "again").unwrap();
        assert_eq!(common::keys(db.iter().take(2)), [k(7), k(DELETED)]);
        let mut back = common::keys(db.range(..k(DELETED + 1)).rev());
        back.reverse();
        assert_eq!(back, [k(7), k(DELETED)]);
    }
}
