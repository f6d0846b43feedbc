//! Tests of the table reader (`super`): round trips, point lookups through
//! the maps and the block cache, values sharing their blocks, restart
//! summaries, filters, and damaged tables refused.

use std::ops::Bound;

use super::iter::{above_lo, below_hi};
use super::*;
use crate::filter::{hash_key, BloomFilterPolicy};
use crate::iter::Entry;
use crate::key::InternalKey;
use crate::sstable::table_builder::{TableBuilder, TableOptions};
use proptest::prelude::*;

pub(super) fn ik(k: &[u8], s: u64, vt: ValueType) -> Vec<u8> {
    InternalKey::new(k, SequenceNumber(s), vt).into_encoded()
}

pub(super) fn opts(block_size: usize, restart_interval: usize, filter: bool) -> TableOptions {
    TableOptions {
        block_size,
        restart_interval,
        filter_policy: if filter {
            Some(Arc::new(BloomFilterPolicy::new(10)))
        } else {
            None
        },
        prefix_extractor: None,
        key_sketch_precision: None,
        compression: crate::sstable::Compression::None,
        keyspace: 0,
    }
}

/// Builds a table at `dir/name` from `(internal key, value)` pairs.
pub(super) fn build(
    dir: &Path,
    name: &str,
    o: TableOptions,
    entries: &[(Vec<u8>, Vec<u8>)],
) -> PathBuf {
    let path = dir.join(name);
    let mut b = TableBuilder::new(&path, o).unwrap();
    for (k, v) in entries {
        b.add(k, v).unwrap();
    }
    b.finish().unwrap();
    path
}

pub(super) fn owned(r: Result<Entry>) -> (Vec<u8>, Vec<u8>) {
    let (k, v) = r.unwrap();
    (k, v.into_vec())
}

fn get(t: &Table, k: &[u8], seq: u64) -> TableGet {
    t.get(k, SequenceNumber(seq), hash_key(k)).unwrap()
}

pub(super) fn found(t: &Table, k: &[u8], seq: u64) -> Option<(u64, ValueType, Vec<u8>)> {
    match get(t, k, seq) {
        TableGet::Searched { entry, .. } => entry.map(|(s, vt, v)| (s.0, vt, v.into_vec())),
        _ => None,
    }
}

/// The filter lives in memory the table owns, not in the map, and
/// keeps the cache-line placement its builder gave it in the file (a
/// blocked Bloom filter's blocks start on a line).
#[test]
fn the_filter_is_copied_out_of_the_map_at_its_file_alignment() {
    let dir = tempfile::tempdir().unwrap();
    let entries: Vec<_> = (0..500u32)
        .map(|i| {
            (
                ik(format!("k{i:05}").as_bytes(), 1, ValueType::Value),
                vec![7; 20],
            )
        })
        .collect();
    let mut o = opts(512, 16, false);
    o.filter_policy = Some(Arc::new(crate::filter::BlockedBloomPolicy::new(10.0)));
    let t = Table::open(&build(dir.path(), "f.sst", o, &entries), 1).unwrap();
    let filter = t.filter_bytes().unwrap();
    let h = t.footer().filter;
    assert_eq!(filter, t.map_bytes(h.offset, h.size).unwrap());
    let map = t.map_bytes(0, t.file_size()).unwrap().as_ptr_range();
    assert!(!map.contains(&filter.as_ptr()), "the filter is a copy");
    assert_eq!(filter.as_ptr() as usize % 64, (h.offset % 64) as usize);
    assert_eq!(filter.as_ptr() as usize % 64, 56, "blocks on cache lines");
    let m = t.memory();
    assert!((h.size..h.size + 64).contains(&m.filters), "{m:?}");
    assert!(m.index > 0);
    // Probes read the copy.
    assert_eq!(found(&t, b"k00042", 9).unwrap().2, vec![7; 20]);
    assert_eq!(get(&t, b"k00042x", 9), TableGet::FilterNegative);
}

/// Keys `k00000` .. `k01999` at sequence 1, each with 30 bytes of its
/// number: many 512-byte blocks.
fn two_thousand_keys() -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..2000u32)
        .map(|i| {
            (
                ik(format!("k{i:05}").as_bytes(), 1, ValueType::Value),
                vec![i as u8; 30],
            )
        })
        .collect()
}

/// Lookups through a block cache answer as mapped ones do; the first
/// read of a block fills the cache, the next one of it does not grow it.
#[test]
fn cached_lookups_answer_as_mapped_ones_and_fill_the_cache_once() {
    let dir = tempfile::tempdir().unwrap();
    let entries = two_thousand_keys();
    let t = Table::open(&build(dir.path(), "b.sst", opts(512, 8, true), &entries), 1).unwrap();
    let cache = BlockCache::new(1 << 20);
    let get_c = |k: &[u8]| {
        t.get_cached(k, SequenceNumber(9), hash_key(k), Some(&cache))
            .unwrap()
    };
    for i in (0..2000u32).step_by(3) {
        let k = format!("k{i:05}");
        assert_eq!(get_c(k.as_bytes()), get(&t, k.as_bytes(), 9), "{k}");
        let absent = format!("{k}x");
        assert_eq!(get_c(absent.as_bytes()), get(&t, absent.as_bytes(), 9));
    }
    let cached = cache.len();
    assert!(cached > 10 && cached <= t.index().len(), "{cached}");
    for i in (0..2000u32).step_by(3) {
        get_c(format!("k{i:05}").as_bytes());
    }
    assert_eq!(cache.len(), cached, "every block was already cached");
}

/// Values of at least `Slice::SHARE_MIN` bytes come back as views of
/// the map (mapped lookups and scans) or of the cached block (cached
/// lookups), pointing at the bytes in place; shorter ones are copies.
/// A view keeps reading right after its table is dropped and its file
/// deleted.
#[test]
fn long_values_share_the_map_or_the_cached_block() {
    let dir = tempfile::tempdir().unwrap();
    let (short, long) = (Slice::SHARE_MIN - 1, Slice::SHARE_MIN);
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..40u32)
        .map(|i| {
            let len = if i % 2 == 0 { long + i as usize } else { short };
            (
                ik(format!("k{i:03}").as_bytes(), 1, ValueType::Value),
                vec![i as u8; len],
            )
        })
        .collect();
    let path = build(dir.path(), "s.sst", opts(4096, 4, true), &entries);
    let t = Arc::new(Table::open(&path, 1).unwrap());
    let cache = BlockCache::new(1 << 20);
    let value = |k: &[u8], cache: Option<&BlockCache>| {
        let TableGet::Searched { entry, .. } = t
            .get_cached(k, SequenceNumber(9), hash_key(k), cache)
            .unwrap()
        else {
            panic!("not searched");
        };
        entry.unwrap().2
    };
    let in_map = |v: &Slice| {
        let base = t.mmap.as_ptr() as usize;
        (base..base + t.mmap.len()).contains(&(v.as_ptr() as usize))
    };
    for i in 0..40u32 {
        let k = format!("k{i:03}");
        let (mapped, cached) = (value(k.as_bytes(), None), value(k.as_bytes(), Some(&cache)));
        assert_eq!(mapped, entries[i as usize].1);
        assert_eq!(cached, entries[i as usize].1);
        let shared = i % 2 == 0;
        assert_eq!((mapped.is_view(), in_map(&mapped)), (shared, shared), "{k}");
        assert_eq!((cached.is_view(), in_map(&cached)), (shared, false), "{k}");
    }
    let scanned: Vec<Slice> = t
        .iter(Bound::Unbounded, Bound::Unbounded)
        .map(|r| r.unwrap().1)
        .collect();
    let views: Vec<bool> = scanned.iter().map(|v| v.is_view() && in_map(v)).collect();
    assert_eq!(views, (0..40).map(|i| i % 2 == 0).collect::<Vec<_>>());
    let kept = value(b"k010", None);
    drop(t);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        kept,
        vec![10u8; long + 10],
        "the view outlives its table and file"
    );
    assert_eq!(scanned[38], vec![38u8; long + 38]);
}

/// From an LZ4-compressed table, long values share the decompressed
/// block (never the map, which holds the compressed bytes): lookups
/// through the map and the cache, and scans both ways, all answer with
/// views of a buffer of their own.
#[test]
fn long_values_of_compressed_blocks_share_the_decompressed_block() {
    let dir = tempfile::tempdir().unwrap();
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..20u32)
        .map(|i| {
            let value = format!("value {i:03} ").repeat(300).into_bytes();
            (
                ik(format!("k{i:03}").as_bytes(), 1, ValueType::Value),
                value,
            )
        })
        .collect();
    let o = TableOptions {
        compression: crate::sstable::Compression::Lz4,
        ..opts(16 << 10, 4, true)
    };
    let path = build(dir.path(), "z.sst", o, &entries);
    let t = Arc::new(Table::open(&path, 1).unwrap());
    assert!(
        t.file_size() < 20 * 3600 / 4,
        "compressed: {}",
        t.file_size()
    );
    let cache = BlockCache::new(1 << 20);
    let in_map = |v: &Slice| {
        let base = t.mmap.as_ptr() as usize;
        (base..base + t.mmap.len()).contains(&(v.as_ptr() as usize))
    };
    for (i, (k, want)) in entries.iter().enumerate() {
        let uk = user_key_of(k);
        for c in [None, Some(&cache)] {
            let TableGet::Searched { entry, .. } = t
                .get_cached(uk, SequenceNumber(9), hash_key(uk), c)
                .unwrap()
            else {
                panic!("k{i:03} not searched");
            };
            let v = entry.unwrap().2;
            assert_eq!(v, *want);
            assert!(v.is_view() && !in_map(&v), "k{i:03}");
        }
    }
    for rev in [false, true] {
        let it = t.iter(Bound::Unbounded, Bound::Unbounded);
        let got: Vec<(Vec<u8>, Slice)> = if rev {
            it.rev().map(|r| r.unwrap()).collect()
        } else {
            it.map(|r| r.unwrap()).collect()
        };
        assert_eq!(got.len(), 20);
        for (k, v) in &got {
            let want = &entries.iter().find(|e| &e.0 == k).unwrap().1;
            assert_eq!(v, want);
            assert!(v.is_view() && !in_map(v));
        }
    }
}

/// A block that fails its checksum on a cached read is reported, every
/// time, and never cached; its neighbours still are.
#[test]
fn a_corrupted_block_is_not_cached() {
    let dir = tempfile::tempdir().unwrap();
    let entries = two_thousand_keys();
    let path = build(dir.path(), "x.sst", opts(512, 8, true), &entries);
    let t = Table::open(&path, 1).unwrap();
    let victim = t.index()[5].clone();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[victim.handle.offset as usize + 10] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let cache = BlockCache::new(1 << 20);
    let key = user_key_of(&victim.last_key).to_vec();
    for _ in 0..2 {
        let e = t
            .get_cached(&key, SequenceNumber(9), hash_key(&key), Some(&cache))
            .unwrap_err();
        assert!(matches!(e, Error::Corruption { .. }), "{e}");
        assert!(e.to_string().contains("checksum mismatch"), "{e}");
        assert!(cache.is_empty());
    }
    let good = user_key_of(&t.index()[6].last_key).to_vec();
    let got = t.get_cached(&good, SequenceNumber(9), hash_key(&good), Some(&cache));
    assert!(matches!(
        got.unwrap(),
        TableGet::Searched { entry: Some(_), .. }
    ));
    assert_eq!(cache.len(), 1);
}

/// While a table is cold every block read first asks for its whole
/// block (`MADV_WILLNEED`), and scans read ahead: the answers are the
/// same.
#[test]
fn cold_reads_and_scan_readahead_return_the_same_entries() {
    let dir = tempfile::tempdir().unwrap();
    let entries: Vec<_> = (0..3000u32)
        .map(|i| {
            (
                ik(format!("k{i:05}").as_bytes(), 1, ValueType::Value),
                vec![i as u8; 30],
            )
        })
        .collect();
    let t = Arc::new(
        Table::open(&build(dir.path(), "c.sst", opts(256, 4, true), &entries), 1).unwrap(),
    );
    assert!(t.index().len() > 100, "many blocks, so scans read ahead");
    t.cold.record(crate::sstable::residency::COLD_READ);
    assert!(t.cold.take(), "cold now");
    for i in (0..3000u32).step_by(7) {
        let want = (1, ValueType::Value, vec![i as u8; 30]);
        assert_eq!(found(&t, format!("k{i:05}").as_bytes(), 9), Some(want));
    }
    let all: Vec<_> = t
        .iter(Bound::Unbounded, Bound::Unbounded)
        .map(owned)
        .collect();
    assert_eq!(all, entries);
}

/// The index search narrows by 16-byte key prefixes first: keys that
/// share their first 16 bytes (and keys that are prefixes of others)
/// spread over many blocks must still lead to the right block, and so
/// must versions of one key that straddle a block boundary.
#[test]
fn lookups_find_keys_whose_prefixes_tie_across_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let mut users: Vec<Vec<u8>> = Vec::new();
    for i in 0..300u32 {
        users.push(format!("tenant-0000000001/{i:05}").into_bytes()); // 16-byte tie
        users.push(format!("t{i:03}").into_bytes()); // short keys
    }
    users.push(b"tenant-000000000".to_vec()); // a prefix of the long ones
    users.push(b"tenant-0000000001".to_vec());
    users.sort();
    users.dedup();
    let mut entries = Vec::new();
    for (n, u) in users.iter().enumerate() {
        // Three versions of every key, newest first.
        for s in [3u64, 2, 1] {
            let seq = n as u64 * 10 + s;
            entries.push((
                ik(u, seq, ValueType::Value),
                format!("{n}@{s}").into_bytes(),
            ));
        }
    }
    let path = build(dir.path(), "t.sst", opts(256, 2, false), &entries);
    let t = Table::open(&path, 1).unwrap();
    assert!(t.index().len() > 50, "{} blocks", t.index().len());
    for (n, u) in users.iter().enumerate() {
        let base = n as u64 * 10;
        assert_eq!(
            found(&t, u, base + 9),
            Some((base + 3, ValueType::Value, format!("{n}@3").into_bytes()))
        );
        assert_eq!(
            found(&t, u, base + 2),
            Some((base + 2, ValueType::Value, format!("{n}@2").into_bytes()))
        );
        let mut absent = u.clone();
        absent.push(0);
        if !users.contains(&absent) {
            assert_eq!(found(&t, &absent, u64::MAX >> 8), None, "{absent:?}");
        }
    }
    // Range bounds whose prefixes tie with many blocks' keys pick the
    // same blocks: every scan yields exactly the entries in range.
    let t = Arc::new(t);
    for (a, b) in [(10, 200), (0, 3), (290, users.len() - 1), (150, 151)] {
        for (lo, hi) in [
            (
                Bound::Included(users[a].clone()),
                Bound::Excluded(users[b].clone()),
            ),
            (
                Bound::Excluded(users[a].clone()),
                Bound::Included(users[b].clone()),
            ),
        ] {
            let expected: Vec<_> = entries
                .iter()
                .filter(|(k, _)| above_lo(&lo, user_key_of(k)) && below_hi(&hi, user_key_of(k)))
                .cloned()
                .collect();
            let got: Vec<_> = t.iter(lo.clone(), hi.clone()).map(owned).collect();
            assert_eq!(got, expected, "{a}..{b}");
        }
    }
}

pub(super) fn two_thousand() -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..2000u64)
        .map(|i| {
            (
                ik(format!("k{i:05}").as_bytes(), i + 1, ValueType::Value),
                format!("value-{i}-{}", "x".repeat((i % 40) as usize)).into_bytes(),
            )
        })
        .collect()
}

#[test]
fn round_trip_two_thousand_keys() {
    let dir = tempfile::tempdir().unwrap();
    let entries = two_thousand();
    let path = build(dir.path(), "000001.sst", opts(1024, 16, true), &entries);
    let t = Table::open(&path, 1).unwrap();
    assert_eq!(t.file_number(), 1);
    assert_eq!(t.path(), path);
    let p = t.properties();
    assert_eq!(p.num_entries, 2000);
    assert_eq!(p.smallest_user_key, b"k00000");
    assert_eq!(p.largest_user_key, b"k01999");
    assert!(t.index().len() > 20, "{}", t.index().len());

    // Every key, at its own seq and at MAX; one below its seq is absent.
    for (i, (k, v)) in entries.iter().enumerate() {
        let uk = user_key_of(k);
        let s = i as u64 + 1;
        assert_eq!(found(&t, uk, s), Some((s, ValueType::Value, v.clone())));
        assert_eq!(
            found(&t, uk, u64::MAX >> 8),
            Some((s, ValueType::Value, v.clone()))
        );
        assert_eq!(found(&t, uk, s - 1), None);
    }
    // The last key of every block is found and the reported block is
    // that block.
    for e in t.index() {
        let pk = ParsedInternalKey::parse(&e.last_key).unwrap();
        match get(&t, pk.user_key, pk.seq.0) {
            TableGet::Searched { block, entry } => {
                assert_eq!(block, Some(e.handle));
                assert_eq!(entry.unwrap().0, pk.seq);
            }
            other => panic!("{other:?}"),
        }
    }
    // Last key of the table; below its seq, the seek key passes the
    // last block.
    assert_eq!(found(&t, b"k01999", 2000).unwrap().0, 2000);
    assert_eq!(
        get(&t, b"k01999", 1999),
        TableGet::Searched {
            block: None,
            entry: None
        }
    );
    // Outside the key range.
    assert_eq!(get(&t, b"a", 10), TableGet::OutOfRange);
    assert_eq!(get(&t, b"k02000", 10), TableGet::OutOfRange);

    // Full iteration matches.
    let t = Arc::new(t);
    let all: Vec<_> = t
        .iter(Bound::Unbounded, Bound::Unbounded)
        .map(owned)
        .collect();
    assert_eq!(all, entries);
    let rev: Vec<_> = t
        .iter(Bound::Unbounded, Bound::Unbounded)
        .rev()
        .map(owned)
        .collect();
    assert_eq!(rev, entries.iter().rev().cloned().collect::<Vec<_>>());
}

/// The range check compares 16-byte key prefixes and reads the keys only
/// on a tie: keys that share the bounds' first 16 bytes (longer keys, and
/// shorter ones that the prefix pads with zeros) are still placed by the
/// whole key.
#[test]
fn key_range_check_decides_prefix_ties_by_the_whole_key() {
    let dir = tempfile::tempdir().unwrap();
    let stem = b"sixteen-byte-key";
    let key = |tail: &[u8]| [&stem[..], tail].concat();
    let path = build(
        dir.path(),
        "000002.sst",
        opts(4096, 16, true),
        &[
            (ik(&key(b"M"), 7, ValueType::Value), b"m".to_vec()),
            (ik(&key(b"T"), 7, ValueType::Value), b"t".to_vec()),
        ],
    );
    let t = Table::open(&path, 2).unwrap();
    for outside in [
        key(b"A"),
        stem.to_vec(),
        b"sixteen-byte-ke".to_vec(),
        key(b"Z"),
        key(b"T\0"),
    ] {
        assert_eq!(get(&t, &outside, 9), TableGet::OutOfRange, "{outside:?}");
        let h = hash_key(&outside);
        assert_eq!(
            t.screen(&outside, user_key_prefix(&outside), h),
            Screen::OutOfRange
        );
    }
    assert_eq!(
        found(&t, &key(b"M"), 9),
        Some((7, ValueType::Value, b"m".to_vec()))
    );
    assert_eq!(
        found(&t, &key(b"T"), 9),
        Some((7, ValueType::Value, b"t".to_vec()))
    );
    for inside in [key(b"M\0"), key(b"P"), key(b"S\xff\xff")] {
        assert_ne!(get(&t, &inside, 9), TableGet::OutOfRange, "{inside:?}");
    }

    // Short keys: "ab" and "ab\0" have the same (zero-padded) prefix.
    let path = build(
        dir.path(),
        "000003.sst",
        opts(4096, 16, true),
        &[
            (ik(b"ab\0", 7, ValueType::Value), b"1".to_vec()),
            (ik(b"ab\0\0\x01", 7, ValueType::Value), b"2".to_vec()),
        ],
    );
    let t = Table::open(&path, 3).unwrap();
    for outside in [&b"ab"[..], b"ab\0\0\x01\0", b"ab\0\0\x02"] {
        assert_eq!(get(&t, outside, 9), TableGet::OutOfRange, "{outside:?}");
    }
    assert_eq!(
        found(&t, b"ab\0", 9),
        Some((7, ValueType::Value, b"1".to_vec()))
    );
    assert_ne!(get(&t, b"ab\0\0", 9), TableGet::OutOfRange);
}

#[test]
fn single_key_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(
        dir.path(),
        "000002.sst",
        opts(4096, 16, true),
        &[(ik(b"only", 7, ValueType::Value), b"one".to_vec())],
    );
    let t = Table::open(&path, 2).unwrap();
    assert_eq!(t.index().len(), 1);
    assert_eq!(
        found(&t, b"only", 7),
        Some((7, ValueType::Value, b"one".to_vec()))
    );
    assert_eq!(
        found(&t, b"only", 100),
        Some((7, ValueType::Value, b"one".to_vec()))
    );
    assert_eq!(
        get(&t, b"only", 6),
        TableGet::Searched {
            block: None,
            entry: None
        }
    );
    assert_eq!(get(&t, b"onl", 9), TableGet::OutOfRange);
    assert_eq!(get(&t, b"only\0", 9), TableGet::OutOfRange);
    let t = Arc::new(t);
    assert_eq!(t.iter(Bound::Unbounded, Bound::Unbounded).count(), 1);
    assert_eq!(
        t.iter(Bound::Excluded(b"only".to_vec()), Bound::Unbounded)
            .count(),
        0
    );
}

#[test]
fn versions_and_tombstones() {
    let dir = tempfile::tempdir().unwrap();
    // "b": put@10, delete@8, put@5, delete@3; "c": delete@4.
    let entries = vec![
        (ik(b"a", 1, ValueType::Value), b"a1".to_vec()),
        (ik(b"b", 10, ValueType::Value), b"b10".to_vec()),
        (ik(b"b", 8, ValueType::Deletion), vec![]),
        (ik(b"b", 5, ValueType::Value), b"b5".to_vec()),
        (ik(b"b", 3, ValueType::Deletion), vec![]),
        (ik(b"c", 4, ValueType::Deletion), vec![]),
    ];
    // Tiny blocks so the versions of "b" span blocks.
    let path = build(dir.path(), "000003.sst", opts(1, 1, true), &entries);
    let t = Table::open(&path, 3).unwrap();
    assert_eq!(t.index().len(), 6);
    assert_eq!(t.properties().num_tombstones, 3);
    assert_eq!(t.properties().num_distinct_keys, 3);
    let v = ValueType::Value;
    let d = ValueType::Deletion;
    assert_eq!(found(&t, b"b", 100), Some((10, v, b"b10".to_vec())));
    assert_eq!(found(&t, b"b", 10), Some((10, v, b"b10".to_vec())));
    assert_eq!(found(&t, b"b", 9), Some((8, d, vec![])));
    assert_eq!(found(&t, b"b", 8), Some((8, d, vec![])));
    assert_eq!(found(&t, b"b", 7), Some((5, v, b"b5".to_vec())));
    assert_eq!(found(&t, b"b", 4), Some((3, d, vec![])));
    assert_eq!(found(&t, b"b", 2), None);
    assert_eq!(found(&t, b"c", 9), Some((4, d, vec![])));
    assert_eq!(found(&t, b"c", 3), None);
    // Tombstoned user keys are in the filter.
    let f = t.filter_bytes().unwrap();
    let policy = BloomFilterPolicy::new(10);
    assert!(policy.may_match(f, hash_key(b"c")));
    // "bb" sits between keys: not found (filter or search).
    assert!(matches!(
        get(&t, b"bb", 9),
        TableGet::FilterNegative | TableGet::Searched { entry: None, .. }
    ));
}

#[test]
fn filter_skips_most_absent_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(
        dir.path(),
        "000004.sst",
        opts(1024, 16, true),
        &two_thousand(),
    );
    let t = Table::open(&path, 4).unwrap();
    let mut negatives = 0;
    for i in 0..1999 {
        // In range (between k00000 and k01999) but absent.
        let k = format!("k{i:05}x");
        match get(&t, k.as_bytes(), 10_000) {
            TableGet::FilterNegative => negatives += 1,
            TableGet::Searched { entry, block } => {
                assert!(entry.is_none());
                assert!(block.is_some());
            }
            TableGet::OutOfRange => panic!("{k} is in range"),
        }
    }
    // Expected false-positive rate ~0.8%: at least 97% skip.
    assert!(negatives >= 1940, "{negatives}");
    assert!(t.has_filter());

    // Without a filter, nothing is skipped.
    let path = build(
        dir.path(),
        "000005.sst",
        opts(1024, 16, false),
        &two_thousand(),
    );
    let t = Table::open(&path, 5).unwrap();
    assert!(!t.has_filter());
    assert!(matches!(
        get(&t, b"k00001x", 9),
        TableGet::Searched { entry: None, .. }
    ));
}

#[test]
fn unknown_filter_policy_is_ignored() {
    #[derive(Debug)]
    struct RejectAll;
    impl FilterPolicy for RejectAll {
        fn name(&self) -> &'static str {
            "test.reject_all"
        }
        fn create_filter(&self, _: &[KeyHash]) -> Vec<u8> {
            vec![0; 4]
        }
        fn may_match(&self, _: &[u8], _: KeyHash) -> bool {
            false
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(1024, 16, false);
    o.filter_policy = Some(Arc::new(RejectAll));
    let path = build(dir.path(), "000006.sst", o, &two_thousand());
    let t = Table::open(&path, 6).unwrap();
    assert_eq!(t.properties().filter_policy, "test.reject_all");
    assert!(!t.has_filter());
    assert_eq!(t.filter_bytes(), Some(&[0u8; 4][..]));
    // The unknown policy's filter is not consulted.
    assert_eq!(found(&t, b"k00010", 100).unwrap().0, 11);
}

#[test]
fn flipped_data_byte_is_corruption_on_get() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(
        dir.path(),
        "000007.sst",
        opts(1024, 16, true),
        &two_thousand(),
    );
    let t = Table::open(&path, 7).unwrap();
    let h = t.index()[3].handle;
    let target = t.index()[3].last_key.clone();
    drop(t);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[(h.offset + h.size / 2) as usize] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    // Open succeeds: data blocks are checked when read.
    let t = Arc::new(Table::open(&path, 7).unwrap());
    let pk = ParsedInternalKey::parse(&target).unwrap();
    let e = t
        .get(pk.user_key, pk.seq, hash_key(pk.user_key))
        .unwrap_err();
    assert!(
        matches!(&e, Error::Corruption { offset, .. } if *offset == h.offset),
        "{e}"
    );
    // Other blocks still read.
    assert_eq!(found(&t, b"k00000", 1).unwrap().0, 1);
    // Iteration reports the error once, then stops.
    let mut it = t.iter(Bound::Unbounded, Bound::Unbounded);
    let results: Vec<_> = it.by_ref().collect();
    assert!(results
        .last()
        .unwrap()
        .as_ref()
        .unwrap_err()
        .is_corruption());
    assert!(results[..results.len() - 1].iter().all(|r| r.is_ok()));
    assert!(it.next().is_none());
    assert!(it.next_back().is_none());
}

/// A data block is checksummed the first time the table reads it, and
/// a block that failed is never trusted: every later read of it fails
/// again, by `get` and by an iterator, while sound blocks still read.
#[test]
fn a_damaged_data_block_fails_every_read_not_just_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let entries = two_thousand();
    let path = build(dir.path(), "000008.sst", opts(1024, 16, false), &entries);
    let t = Table::open(&path, 9).unwrap();
    let victim = t.index()[3].clone();
    let sound_key = user_key_of(&t.index()[0].last_key).to_vec();
    let damaged_key = user_key_of(&victim.last_key).to_vec();
    drop(t);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[victim.handle.offset as usize + 2] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let t = Arc::new(Table::open(&path, 9).unwrap());
    for _ in 0..3 {
        let e = t.get(&damaged_key, SequenceNumber::MAX, hash_key(&damaged_key));
        assert!(e.unwrap_err().is_corruption());
        assert!(found(&t, &sound_key, u64::MAX >> 8).is_some());
    }
    let scan: Result<Vec<_>> = t.iter(Bound::Unbounded, Bound::Unbounded).collect();
    assert!(scan.unwrap_err().is_corruption());
}

/// Once a block's restart summary is recorded, lookups scan from the
/// interval it picks and answer exactly as the whole-block search did:
/// present keys, keys between them, older sequence numbers, and from
/// several threads at once (the slots are filled by racing readers).
#[test]
fn lookups_through_restart_summaries_answer_as_the_search_does() {
    let dir = tempfile::tempdir().unwrap();
    let entries = two_thousand();
    // 512-byte blocks, restart interval 4: 2 to 4 restart points each.
    let path = build(dir.path(), "000013.sst", opts(512, 4, false), &entries);
    let t = Arc::new(Table::open(&path, 13).unwrap());
    let probes: Vec<(Vec<u8>, u64)> = (0..2000u64)
        .flat_map(|i| {
            let k = format!("k{i:05}").into_bytes();
            let mut between = k.clone();
            between.push(b'!');
            [(k.clone(), u64::MAX >> 8), (k, i), (between, u64::MAX >> 8)]
        })
        .collect();
    let first: Vec<_> = probes.iter().map(|(k, s)| found(&t, k, *s)).collect();
    for (i, (k, s)) in probes.iter().enumerate() {
        let present = i % 3 == 0;
        let want = present.then(|| {
            let n: u64 = std::str::from_utf8(&k[1..]).unwrap().parse().unwrap();
            (n + 1, ValueType::Value, entries[n as usize].1.clone())
        });
        assert_eq!(first[i], want, "{:?} at {s}", String::from_utf8_lossy(k));
    }
    let decided = (0..t.index.len())
        .filter(|&b| {
            let k = user_key_of(&t.index[b].last_key);
            let len = t.index_prefixes[b].handle.size as usize;
            let target = user_key_prefix(k);
            matches!(t.restarts.scan_start(b, target, len), ScanStart::At { .. })
        })
        .count();
    assert!(
        decided > t.index.len() / 2,
        "{decided} of {}",
        t.index.len()
    );
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                let again: Vec<_> = probes.iter().map(|(k, s)| found(&t, k, *s)).collect();
                assert!(again == first);
            });
        }
    });
}

#[test]
fn bad_files_are_corruption_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = build(
        dir.path(),
        "000008.sst",
        opts(1024, 16, true),
        &two_thousand(),
    );
    let good = std::fs::read(&path).unwrap();
    let try_open = |bytes: &[u8]| {
        let p = dir.path().join("bad.sst");
        std::fs::write(&p, bytes).unwrap();
        Table::open(&p, 9)
    };
    assert!(try_open(&good).is_ok());
    let corrupt = |bytes: &[u8], needle: &str| {
        let e = try_open(bytes).unwrap_err();
        assert!(e.is_corruption(), "{e}");
        assert!(e.to_string().contains(needle), "{e} lacks {needle:?}");
    };
    corrupt(&[], "shorter than");
    corrupt(&good[..63], "shorter than");
    corrupt(&good[..good.len() - 1], "magic");
    let n = good.len();
    let mut b = good.clone();
    b[n - 1] ^= 0xff;
    corrupt(&b, "magic");
    let mut b = good.clone();
    b[n - 64] ^= 1; // index offset
    corrupt(&b, "footer checksum");
    let mut b = good.clone();
    b[n - 20] ^= 1; // format version byte, covered by the crc
    corrupt(&b, "footer checksum");
    // A footer with a valid crc but an index handle past the footer.
    let footer = Footer::decode(&good, &path).unwrap();
    let mut f = footer;
    f.index.size = n as u64;
    let mut b = good.clone();
    b[n - 64..].copy_from_slice(&f.encode());
    corrupt(&b, "extends past");
    // Flipped bytes in the index, properties and filter blocks.
    for h in [footer.index, footer.properties, footer.filter] {
        let mut b = good.clone();
        b[h.offset as usize + 1] ^= 0x01;
        corrupt(&b, "checksum mismatch");
    }
    // A newer format version with a valid crc.
    let mut f = footer;
    f.format_version = 3;
    let mut b = good.clone();
    b[n - 64..].copy_from_slice(&f.encode());
    assert!(matches!(
        try_open(&b),
        Err(Error::UnsupportedVersion { found: 3, .. })
    ));
    // A missing file is an I/O error, not corruption.
    assert!(matches!(
        Table::open(&dir.path().join("missing.sst"), 1),
        Err(Error::Io { .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Arbitrary bytes as a table file: open and use never panic.
    #[test]
    fn arbitrary_files_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.sst");
        std::fs::write(&p, &bytes).unwrap();
        if let Ok(t) = Table::open(&p, 1) {
            let t = Arc::new(t);
            let _ = t.get(b"a", SequenceNumber(5), hash_key(b"a"));
            let _ = t.iter(Bound::Unbounded, Bound::Unbounded).count();
        }
    }

    /// A valid table with random bytes overwritten, or with a rewritten
    /// footer whose crc is valid: never a panic, and any answer that
    /// comes back is well formed.
    #[test]
    fn mutated_tables_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        footer_handles in proptest::option::of(proptest::collection::vec(0u64..3000, 6)),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let entries: Vec<_> = two_thousand().into_iter().take(60).collect();
        let path = build(dir.path(), "000012.sst", opts(200, 2, true), &entries);
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        for (idx, b) in &flips {
            let i = idx.index(n);
            bytes[i] = *b;
        }
        if let Some(h) = footer_handles {
            let f = Footer {
                index: BlockHandle::new(h[0], h[1]),
                filter: BlockHandle::new(h[2], h[3]),
                properties: BlockHandle::new(h[4], h[5]),
                format_version: 1,
            };
            bytes[n - FOOTER_LEN..].copy_from_slice(&f.encode());
        }
        std::fs::write(&path, &bytes).unwrap();
        if let Ok(t) = Table::open(&path, 12) {
            let t = Arc::new(t);
            for (k, _) in &entries {
                let uk = user_key_of(k);
                let _ = t.get(uk, SequenceNumber(10_000), hash_key(uk));
            }
            let _ = t.iter(Bound::Unbounded, Bound::Unbounded).count();
            let _ = t.iter(Bound::Unbounded, Bound::Unbounded).rev().count();
        }
    }
}
