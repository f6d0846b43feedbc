//! Per-block compression (format-2 tables): tables that mix compressed
//! and uncompressed data blocks read back exactly through every read path
//! (mapped, block cache, iterators both ways, the salvage scan); a table
//! written before compression existed still reads; damage inside a
//! compressed block is corruption, never a panic; and the database
//! against a `BTreeMap` model with LZ4 below level 0, through flushes,
//! compactions and reopens. With the `zstd` feature the same for zstd
//! (alone and mixed with LZ4); without it, zstd options, a stored
//! `OPTIONS` naming zstd and a zstd table (`tests/data/zstd-table.sst`)
//! are clear errors.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::Rng;
use proptest::prelude::*;
use siftdb::filter::{hash_key, BloomFilterPolicy};
use siftdb::inspect::key::{
    user_key_of, InternalKey, ParsedInternalKey, SequenceNumber, ValueType,
};
use siftdb::inspect::sstable::block_cache::BlockCache;
use siftdb::inspect::sstable::format::{block_trailer, FOOTER_LEN};
use siftdb::inspect::sstable::{Block, Table, TableBlocks, TableBuilder, TableGet, TableOptions};
use siftdb::{Compression, CompressionPolicy, Db, Error, Options, TableReads};

fn opts(compression: Compression, block_size: usize) -> TableOptions {
    TableOptions {
        block_size,
        restart_interval: 4,
        filter_policy: Some(Arc::new(BloomFilterPolicy::new(10))),
        prefix_extractor: None,
        key_sketch_precision: None,
        compression,
        keyspace: 0,
    }
}

/// A value of about 120 bytes: text that compresses well for `group`s
/// that are even, pseudo-random bytes (which LZ4 cannot shrink by an
/// eighth) for odd ones, so blocks of both kinds alternate.
fn value(i: u64, group: u64) -> Vec<u8> {
    if group.is_multiple_of(2) {
        format!("value {i}: the quick brown fox jumps over the lazy dog; the quick brown fox jumps over the lazy dog")
            .into_bytes()
    } else {
        let mut r = Rng(i * 7919 + 1);
        (0..120).map(|_| r.below(256) as u8).collect()
    }
}

/// 1,500 entries, every 7th a tombstone, in runs of 60 keys alternating
/// compressible and incompressible values.
fn entries() -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..1500u64)
        .map(|i| {
            let k = format!("key{i:05}");
            if i % 7 == 3 {
                let ik =
                    InternalKey::new(k.as_bytes(), SequenceNumber(5000 - i), ValueType::Deletion);
                (ik.into_encoded(), Vec::new())
            } else {
                let ik = InternalKey::new(k.as_bytes(), SequenceNumber(5000 - i), ValueType::Value);
                (ik.into_encoded(), value(i, i / 60))
            }
        })
        .collect()
}

fn build(dir: &Path, name: &str, o: TableOptions, entries: &[(Vec<u8>, Vec<u8>)]) -> PathBuf {
    let path = dir.join(name);
    let mut b = TableBuilder::new(&path, o).unwrap();
    for (k, v) in entries {
        b.add(k, v).unwrap();
    }
    b.finish().unwrap();
    path
}

/// A table iterator's item as owned bytes, panicking on an error.
fn owned_entry(r: siftdb::Result<(Vec<u8>, siftdb::Slice)>) -> (Vec<u8>, Vec<u8>) {
    let (k, v) = r.unwrap();
    (k, v.into_vec())
}

fn found(g: TableGet) -> Option<(u64, ValueType, Vec<u8>)> {
    match g {
        TableGet::Searched { entry, .. } => entry.map(|(s, vt, v)| (s.0, vt, v.into_vec())),
        _ => None,
    }
}

/// The codec byte ending each data block of `t`, read from the map.
fn codec_bytes(t: &Table) -> Vec<u8> {
    t.index()
        .iter()
        .map(|e| {
            let stored = t.map_bytes(e.handle.offset, e.handle.size).unwrap();
            *stored.last().unwrap()
        })
        .collect()
}

#[test]
fn a_table_mixing_lz4_and_plain_blocks_reads_back_through_every_path() {
    mixed_table_reads_back(Compression::Lz4);
}

#[cfg(feature = "zstd")]
#[test]
fn a_table_mixing_zstd_and_plain_blocks_reads_back_through_every_path() {
    mixed_table_reads_back(Compression::Zstd);
}

fn mixed_table_reads_back(codec: Compression) {
    let dir = tempfile::tempdir().unwrap();
    let es = entries();
    let path = build(dir.path(), "000001.sst", opts(codec, 1024), &es);
    let t = Arc::new(Table::open(&path, 1).unwrap());
    assert_eq!(t.footer().format_version, 2);
    let c = t.properties().compression.clone().unwrap();
    assert_eq!(c.codec, codec.name());
    let blocks = t.index().len() as u64;
    assert_eq!(t.properties().num_data_blocks, blocks);
    assert!(
        c.compressed_blocks > 0 && c.compressed_blocks < blocks,
        "{c:?} of {blocks}"
    );
    assert!(c.stored_bytes < c.raw_bytes, "{c:?}");
    assert_eq!(
        c.stored_bytes,
        t.index().iter().map(|e| e.handle.size).sum::<u64>()
    );
    let codecs = codec_bytes(&t);
    assert_eq!(
        codecs.iter().filter(|&&b| b == codec.code()).count() as u64,
        c.compressed_blocks
    );
    assert!(codecs.iter().all(|&b| b == 0 || b == codec.code()));
    // Every block's contents decode, and hold what the model says.
    for e in t.index() {
        let contents = t.data_block(e.handle).unwrap();
        let block = Block::new(&contents, t.path(), e.handle.offset).unwrap();
        let last = block.iter().last().unwrap().unwrap().0;
        assert_eq!(last, e.last_key);
    }

    // Point lookups, mapped and through a small cache (which evicts).
    let cache = BlockCache::new(64 << 10);
    for (i, (k, v)) in es.iter().enumerate() {
        let p = ParsedInternalKey::parse(k).unwrap();
        let uk = p.user_key;
        let want = Some((5000 - i as u64, p.value_type, v.clone()));
        let mapped = t.get(uk, SequenceNumber(9999), hash_key(uk)).unwrap();
        assert_eq!(found(mapped), want, "{i}");
        let cached = t
            .get_cached(uk, SequenceNumber(9999), hash_key(uk), Some(&cache))
            .unwrap();
        assert_eq!(found(cached), want, "{i} cached");
        // Older than the entry: absent.
        let older = t.get(uk, SequenceNumber(1), hash_key(uk)).unwrap();
        assert_eq!(found(older), None);
    }
    // Twice through the cache: the decompressed blocks it holds answer.
    for (k, v) in es.iter().step_by(5) {
        let uk = user_key_of(k);
        let g = t
            .get_cached(uk, SequenceNumber(9999), hash_key(uk), Some(&cache))
            .unwrap();
        assert_eq!(found(g).unwrap().2, *v);
    }

    // Iteration: whole, reversed, bounded, and interleaved.
    let all: Vec<_> = t
        .iter(Bound::Unbounded, Bound::Unbounded)
        .map(owned_entry)
        .collect();
    assert_eq!(all, es);
    let mut rev: Vec<_> = t
        .iter(Bound::Unbounded, Bound::Unbounded)
        .rev()
        .map(owned_entry)
        .collect();
    rev.reverse();
    assert_eq!(rev, es);
    let mut rng = Rng(17);
    for _ in 0..40 {
        let a = rng.below(1600);
        let b = a + rng.below(300);
        let (lo, hi) = (format!("key{a:05}"), format!("key{b:05}"));
        let want: Vec<_> = es
            .iter()
            .filter(|(k, _)| {
                let uk = user_key_of(k);
                uk >= lo.as_bytes() && uk < hi.as_bytes()
            })
            .cloned()
            .collect();
        let mut it = t.iter(
            Bound::Included(lo.clone().into_bytes()),
            Bound::Excluded(hi.clone().into_bytes()),
        );
        let (mut front, mut back) = (Vec::new(), Vec::new());
        loop {
            let from_back = rng.below(3) == 0;
            match if from_back { it.next_back() } else { it.next() } {
                Some(r) if from_back => back.push(owned_entry(r)),
                Some(r) => front.push(owned_entry(r)),
                None => break,
            }
        }
        back.reverse();
        front.extend(back);
        assert_eq!(front, want, "{lo}..{hi}");
    }

    // The salvage scan finds the same blocks, with the footer and without.
    let scanned = TableBlocks::open_by_scan(&path).unwrap();
    assert_eq!(scanned.index(), t.index());
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - FOOTER_LEN..].fill(0);
    let broken = dir.path().join("000002.sst");
    std::fs::write(&broken, &bytes).unwrap();
    let scanned = TableBlocks::open_by_scan(&broken).unwrap();
    assert_eq!(scanned.format_version(), 2);
    assert_eq!(scanned.index(), t.index());
    for e in scanned.index() {
        let contents = scanned.read_block(e.handle).unwrap();
        Block::new(&contents, &broken, e.handle.offset).unwrap();
    }
}

/// A table whose codec is none is format 1: no codec bytes, no
/// compression properties, blocks readable as stored.
#[test]
fn a_table_without_compression_is_format_1_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let es = entries();
    let path = build(dir.path(), "000003.sst", opts(Compression::None, 1024), &es);
    let t = Table::open(&path, 3).unwrap();
    assert_eq!(t.footer().format_version, 1);
    assert_eq!(t.properties().format_version, 1);
    assert_eq!(t.properties().compression, None);
    for e in t.index() {
        // Read as stored, no codec byte to strip.
        let block = t.read_block(e.handle).unwrap();
        assert_eq!(block.contents().len() as u64, e.handle.size);
        assert_eq!(&*t.data_block(e.handle).unwrap(), block.contents());
    }
    let lz4 = build(dir.path(), "000004.sst", opts(Compression::Lz4, 1024), &es);
    assert!(std::fs::metadata(&lz4).unwrap().len() < std::fs::metadata(&path).unwrap().len());
}

/// `tests/data/v1-table.sst` was written by the build before compression
/// (commit 324f75b): 100 keys `key000..key099`, sequence 1000 − i, every
/// tenth from 3 a tombstone, values `value {i} repeated repeated
/// repeated`, 256-byte blocks, restart interval 4, a 10-bit Bloom filter.
#[test]
fn a_format_1_table_from_the_previous_build_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000005.sst");
    std::fs::write(&path, include_bytes!("data/v1-table.sst")).unwrap();
    let t = Arc::new(Table::open(&path, 5).unwrap());
    assert_eq!(t.footer().format_version, 1);
    let got: Vec<_> = t
        .iter(Bound::Unbounded, Bound::Unbounded)
        .map(owned_entry)
        .collect();
    assert_eq!(got.len(), 100);
    for (i, (k, v)) in got.iter().enumerate() {
        let p = ParsedInternalKey::parse(k).unwrap();
        assert_eq!(p.user_key, format!("key{i:03}").as_bytes());
        assert_eq!(p.seq, SequenceNumber(1000 - i as u64));
        if i % 10 == 3 {
            assert_eq!(p.value_type, ValueType::Deletion);
        } else {
            assert_eq!(
                v,
                format!("value {i} repeated repeated repeated").as_bytes()
            );
        }
        let g = t.get(p.user_key, SequenceNumber(5000), hash_key(p.user_key));
        assert_eq!(found(g.unwrap()).unwrap().2, *v);
    }
    // And rebuilding it with this build's format 1 gives the same bytes.
    let rebuilt = build(
        dir.path(),
        "000006.sst",
        TableOptions {
            block_size: 256,
            ..opts(Compression::None, 256)
        },
        &got,
    );
    assert_eq!(
        std::fs::read(rebuilt).unwrap(),
        include_bytes!("data/v1-table.sst")
    );
}

/// Rewrites block `i`'s codec byte (and its CRC, so only the codec byte
/// is wrong).
fn set_codec_byte(bytes: &mut [u8], t: &Table, i: usize, code: u8) {
    let h = t.index()[i].handle;
    let (start, end) = (h.offset as usize, (h.offset + h.size) as usize);
    bytes[end - 1] = code;
    let trailer = block_trailer(&bytes[start..end]);
    bytes[end..end + 4].copy_from_slice(&trailer);
}

#[test]
fn an_unknown_codec_byte_is_corruption_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let es = entries();
    let path = build(dir.path(), "000007.sst", opts(Compression::Lz4, 1024), &es);
    let t = Table::open(&path, 7).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    set_codec_byte(&mut bytes, &t, 0, 2);
    std::fs::write(&path, &bytes).unwrap();
    let t = Arc::new(Table::open(&path, 7).unwrap());
    let uk = user_key_of(&es[0].0);
    // An LZ4 block marked zstd: without the feature the codec is missing
    // (not damage: `InvalidArgument`), with it the payload is no zstd
    // frame (corruption).
    let e = t.get(uk, SequenceNumber(9999), hash_key(uk)).unwrap_err();
    assert!(e.to_string().contains("zstd data block"), "{e}");
    if cfg!(feature = "zstd") {
        assert!(matches!(e, Error::Corruption { .. }), "{e}");
    } else {
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        assert!(
            e.to_string()
                .contains("(codec byte 2): this build has no zstd support"),
            "{e}"
        );
    }
    let e = t
        .iter(Bound::Unbounded, Bound::Unbounded)
        .find_map(|r| r.err());
    assert_eq!(e.unwrap().is_corruption(), cfg!(feature = "zstd"));
    // A byte no codec has.
    set_codec_byte(&mut bytes, &t, 0, 9);
    std::fs::write(&path, &bytes).unwrap();
    let t = Table::open(&path, 7).unwrap();
    let e = t.data_block(t.index()[0].handle).unwrap_err();
    assert!(
        e.to_string()
            .contains("has codec byte 9, which no codec has"),
        "{e}"
    );
    // An uncompressed block marked LZ4 does not decompress: corruption.
    let t0 = Table::open(&path, 7).unwrap();
    let plain = codec_bytes(&t0).iter().position(|&b| b == 0).unwrap();
    set_codec_byte(&mut bytes, &t0, plain, 1);
    std::fs::write(&path, &bytes).unwrap();
    let t = Table::open(&path, 7).unwrap();
    let e = t.data_block(t.index()[plain].handle).unwrap_err();
    assert!(e.is_corruption(), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Bytes of a compressed table overwritten inside its data blocks,
    /// with the damaged blocks' CRCs recomputed half the time (so the
    /// decompressor and block decoder see the damage): every read is an
    /// answer or corruption, never a panic, and the salvage scan too.
    #[test]
    fn damaged_compressed_tables_are_corruption_never_a_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        fix_crc in any::<bool>(),
        zstd in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let es: Vec<_> = entries().into_iter().take(300).collect();
        // zstd in half the cases of a build with it.
        let codec = if zstd && cfg!(feature = "zstd") { Compression::Zstd } else { Compression::Lz4 };
        let path = build(dir.path(), "000008.sst", opts(codec, 512), &es);
        let t = Table::open(&path, 8).unwrap();
        let handles: Vec<_> = t.index().iter().map(|e| e.handle).collect();
        let data_end = (handles.last().unwrap().offset + handles.last().unwrap().size) as usize;
        drop(t);
        let mut bytes = std::fs::read(&path).unwrap();
        for (idx, b) in &flips {
            bytes[idx.index(data_end)] = *b;
        }
        if fix_crc {
            for h in &handles {
                let (s, e) = (h.offset as usize, (h.offset + h.size) as usize);
                let trailer = block_trailer(&bytes[s..e]);
                bytes[e..e + 4].copy_from_slice(&trailer);
            }
        }
        std::fs::write(&path, &bytes).unwrap();
        let t = Arc::new(Table::open(&path, 8).unwrap());
        let cache = BlockCache::new(64 << 10);
        for (k, _) in &es {
            let uk = user_key_of(k);
            for r in [
                t.get(uk, SequenceNumber(9999), hash_key(uk)),
                t.get_cached(uk, SequenceNumber(9999), hash_key(uk), Some(&cache)),
            ] {
                if let Err(e) = r {
                    prop_assert!(e.is_corruption(), "{}", e);
                }
            }
        }
        for r in t.iter(Bound::Unbounded, Bound::Unbounded) {
            if let Err(e) = r {
                prop_assert!(e.is_corruption(), "{}", e);
            }
        }
        let _ = t.iter(Bound::Unbounded, Bound::Unbounded).rev().count();
        let scanned = TableBlocks::open_by_scan(&path).unwrap();
        for e in scanned.index() {
            let _ = scanned.read_block(e.handle);
        }
    }
}

/// A compressible value of 0 to 600 bytes.
fn model_value(rng: &mut Rng) -> Vec<u8> {
    let len = [0, 8, 100, 300, 600][rng.below(5) as usize];
    let word = ["alpha ", "beta ", "gamma ", "delta "][rng.below(4) as usize];
    word.bytes().cycle().take(len).collect()
}

fn run_model(seed: u64, policy: &str, cached: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.write_buffer_size = 8 << 10;
    o.block_size = 256;
    o.max_bytes_for_level_base = 16 << 10;
    o.level_size_multiplier = 2;
    o.target_file_size = 8 << 10;
    o.compression = policy.parse().unwrap();
    if cached {
        o.table_reads = TableReads::Cached { capacity: 64 << 10 };
    }
    let mut db = Db::open_with(dir.path(), o.clone()).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = Rng(seed);
    for step in 0..2500 {
        let k = format!("k{:03}", rng.below(400)).into_bytes();
        match rng.below(100) {
            0..=49 => {
                let v = model_value(&mut rng);
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            50..=59 => {
                db.delete(&k).unwrap();
                model.remove(&k);
            }
            60..=84 => assert_eq!(
                db.get(&k).unwrap().map(Vec::from),
                model.get(&k).cloned(),
                "step {step}"
            ),
            85..=89 => {
                let got: Vec<_> = db.range(k.clone()..).map(common::owned).collect();
                let want: Vec<_> = model
                    .range(k.clone()..)
                    .map(|(a, b)| (a.clone(), b.clone()))
                    .collect();
                assert_eq!(got, want, "step {step}");
                let mut back: Vec<_> = db.range(..k.clone()).rev().map(common::owned).collect();
                back.reverse();
                let want: Vec<_> = model
                    .range(..k.clone())
                    .map(|(a, b)| (a.clone(), b.clone()))
                    .collect();
                assert_eq!(back, want, "step {step}");
            }
            90..=94 => db.flush().unwrap(),
            95..=96 => db.compact().unwrap(),
            _ => {
                drop(db);
                db = Db::open_with(dir.path(), o.clone()).unwrap();
            }
        }
    }
    db.compact().unwrap();
    let files = db.live_files();
    // Every table has the codec of its level.
    let policy: CompressionPolicy = policy.parse().unwrap();
    for f in &files {
        let codec = policy.for_level(f.level);
        let want = if codec == Compression::None { 1 } else { 2 };
        assert_eq!(f.properties.format_version, want, "level {}", f.level);
        if let Some(c) = &f.properties.compression {
            assert_eq!(c.codec, codec.name());
        }
    }
    assert!(
        files.iter().any(|f| f
            .properties
            .compression
            .as_ref()
            .is_some_and(|c| c.compressed_blocks > 0)),
        "some blocks compressed"
    );
    drop(db);
    let db = Db::open_with(dir.path(), o).unwrap();
    let all: Vec<_> = db.iter().map(common::owned).collect();
    let want: Vec<_> = model.into_iter().collect();
    assert_eq!(all, want);
    drop(db);
    let report = siftdb::inspect::verify_db(dir.path(), true, &mut |_, _| {}).unwrap();
    assert!(report.problems.is_empty(), "{report:?}");
}

#[test]
fn model_with_lz4_below_level_0_through_flushes_compactions_and_reopens() {
    run_model(1, "none,lz4", false);
    run_model(2, "none,lz4", true);
}

#[test]
fn model_with_lz4_everywhere() {
    run_model(3, "lz4", false);
}

#[cfg(feature = "zstd")]
#[test]
fn model_with_zstd_below_lz4_and_zstd_everywhere() {
    run_model(4, "none,lz4,zstd", false);
    run_model(5, "zstd", true);
}

/// `tests/data/zstd-table.sst`, written by `build` with zstd (256-byte
/// blocks, 100 entries of [`entries`]): read back with the feature, a
/// clear `InvalidArgument` naming the missing feature without it (not
/// corruption: the table is sound).
#[test]
fn a_zstd_table_reads_with_the_feature_and_names_it_without() {
    let dir = tempfile::tempdir().unwrap();
    let es: Vec<_> = entries().into_iter().take(100).collect();
    let path = dir.path().join("000010.sst");
    std::fs::write(&path, include_bytes!("data/zstd-table.sst")).unwrap();
    let t = Arc::new(Table::open(&path, 10).unwrap());
    assert_eq!(t.footer().format_version, 2);
    assert_eq!(t.properties().compression.as_ref().unwrap().codec, "zstd");
    let codecs = codec_bytes(&t);
    assert!(codecs.contains(&2) && codecs.contains(&0), "{codecs:?}");
    let got: Vec<_> = t.iter(Bound::Unbounded, Bound::Unbounded).collect();
    if cfg!(feature = "zstd") {
        let got: Vec<_> = got.into_iter().map(owned_entry).collect();
        assert_eq!(got, es);
    } else {
        let e = got.into_iter().find_map(|r| r.err()).unwrap();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        assert!(
            e.to_string().contains(
                "(codec byte 2): this build has no zstd support; rebuild with --features zstd"
            ),
            "{e}"
        );
        let uk = user_key_of(&es[50].0);
        let e = t.get(uk, SequenceNumber(9999), hash_key(uk)).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    }
}

/// Replaces the `compression` line of `dir`'s OPTIONS with `value`,
/// recomputing the file's checksum line.
fn store_compression(dir: &Path, value: &str) {
    let path = dir.join("OPTIONS");
    let text = std::fs::read_to_string(&path).unwrap();
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with("crc32 "))
        .map(|l| {
            if l.starts_with("compression ") {
                format!("compression {value}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    assert!(body.contains(&format!("compression {value}\n")), "{body}");
    let crc = crc32fast::hash(body.as_bytes());
    std::fs::write(&path, format!("{body}crc32 {crc:08x}\n")).unwrap();
}

/// Options naming zstd, and a database whose stored OPTIONS does, open
/// in a build with the feature (the stored policy kept); without it they
/// are `InvalidArgument` naming the rebuild, before anything is written.
#[test]
fn zstd_options_need_the_feature() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.compression = "none,zstd".parse().unwrap();
    let r = Db::open_with(dir.path().join("a"), o);
    let db = tempfile::tempdir().unwrap();
    Db::open(db.path()).unwrap().close().unwrap();
    store_compression(db.path(), "none,zstd");
    let reopened = Db::open(db.path());
    if cfg!(feature = "zstd") {
        r.unwrap().close().unwrap();
        let d = reopened.unwrap();
        assert_eq!(d.options().compression.to_string(), "none,zstd");
        return;
    }
    for e in [r.err().unwrap(), reopened.err().unwrap()] {
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        assert_eq!(
            e.to_string(),
            "invalid argument: compression zstd: this build has no zstd support; \
             rebuild with --features zstd"
        );
    }
    assert!(!dir.path().join("a").exists());
    // The stored setting is left as it was, for a build with the feature.
    let text = std::fs::read_to_string(db.path().join("OPTIONS")).unwrap();
    assert!(text.contains("compression none,zstd\n"), "{text}");
}
