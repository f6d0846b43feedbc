//! Decoder fuzzing through the public API: arbitrary bytes, and valid
//! encodings with a few bytes flipped, overwritten, inserted or cut off,
//! fed to every decoder of on-disk bytes. Each must return `Ok` or `Err`,
//! never panic; errors must be the kinds the docs promise (`Corruption`, or
//! `UnsupportedVersion` for a version field), and undamaged encodings must
//! decode to what was encoded. The global allocator of this test binary
//! refuses any allocation above 1 GiB (which aborts the run), so a length
//! read from the input and trusted would be caught.
//!
//! `PROPTEST_CASES` raises the number of cases (default 256 per property).

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use proptest::prelude::*;
use proptest::sample::Index;

use common::log_record;
use siftdb::filter::{hash_key, BloomFilterPolicy};
use siftdb::inspect::key::{InternalKey, SequenceNumber, ValueType};
use siftdb::inspect::log::{read_log, LogReader};
use siftdb::inspect::range_tombstone::RangeTombstone;
use siftdb::inspect::sstable::{Block, BlockBuilder, Table, TableBuilder, TableOptions};
use siftdb::inspect::version::edit::{FileMetaData, KeyspaceAdd, KeyspaceEdit, VersionEdit};
use siftdb::inspect::version::manifest::replay;
use siftdb::inspect::write_batch::decode_batch;
use siftdb::{Error, KeyPrediction};

struct LimitedAlloc;

const ALLOC_LIMIT: usize = 1 << 30;

// SAFETY: forwards to `System`, returning null (allowed) for oversized
// requests, which makes the allocation-failure handler abort the test.
unsafe impl GlobalAlloc for LimitedAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > ALLOC_LIMIT {
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > ALLOC_LIMIT {
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > ALLOC_LIMIT {
            return std::ptr::null_mut();
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOC: LimitedAlloc = LimitedAlloc;

/// One change to a valid encoding.
#[derive(Debug, Clone)]
enum Mutation {
    Xor(Index, u8),
    Set(Index, u8),
    Insert(Index, Vec<u8>),
    Truncate(Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<Index>(), 1..=255u8).prop_map(|(i, m)| Mutation::Xor(i, m)),
        2 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        1 => (any::<Index>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
    ]
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec(mutation(), 1..4)
}

fn mutate(mut bytes: Vec<u8>, ms: &[Mutation]) -> Vec<u8> {
    for m in ms {
        if bytes.is_empty() {
            break;
        }
        match m {
            Mutation::Xor(i, x) => {
                let at = i.index(bytes.len());
                bytes[at] ^= x;
            }
            Mutation::Set(i, b) => {
                let at = i.index(bytes.len());
                bytes[at] = *b;
            }
            Mutation::Insert(i, b) => {
                let at = i.index(bytes.len() + 1);
                bytes.splice(at..at, b.iter().copied());
            }
            Mutation::Truncate(i) => bytes.truncate(i.index(bytes.len())),
        }
    }
    bytes
}

fn arbitrary_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..600)
}

fn assert_corruption(e: &Error, what: &str) {
    assert!(
        matches!(
            e,
            Error::Corruption { .. } | Error::UnsupportedVersion { .. }
        ),
        "{what}: expected Corruption, got {e:?}"
    );
}

// ---------------------------------------------------------------------------
// Write batches (WAL payloads, DESIGN.md 12.3).

/// `(keyspace, key, Some(value))` puts, `(keyspace, key, None)` deletes;
/// keyspace 0 is the default (tags 0 and 1), others tags 0x10 and 0x11.
type Ops = Vec<(u32, Vec<u8>, Option<Vec<u8>>)>;

fn ops() -> impl Strategy<Value = Ops> {
    prop::collection::vec(
        (
            prop_oneof![3 => Just(0u32), 1 => 1..=u32::MAX],
            prop::collection::vec(any::<u8>(), 0..12),
            prop::option::of(prop::collection::vec(any::<u8>(), 0..20)),
        ),
        0..8,
    )
}

/// Encodes a batch by hand, per DESIGN.md 12.3.
fn encode_batch(seq: u64, ops: &Ops) -> Vec<u8> {
    let mut v = seq.to_le_bytes().to_vec();
    v.extend_from_slice(&(ops.len() as u32).to_le_bytes());
    let varint = |v: &mut Vec<u8>, mut n: u64| {
        while n >= 0x80 {
            v.push(n as u8 | 0x80);
            n >>= 7;
        }
        v.push(n as u8);
    };
    for (ks, k, val) in ops {
        if *ks == 0 {
            v.push(u8::from(val.is_some()));
        } else {
            v.push(0x10 | u8::from(val.is_some()));
            varint(&mut v, u64::from(*ks));
        }
        varint(&mut v, k.len() as u64);
        v.extend_from_slice(k);
        if let Some(val) = val {
            varint(&mut v, val.len() as u64);
            v.extend_from_slice(val);
        }
    }
    v
}

fn check_batch(bytes: &[u8]) {
    if let Ok(b) = decode_batch(bytes) {
        // Whatever decodes is self-consistent.
        assert!(b.first_seq.0 >= 1);
        assert!(b.first_seq.0 + b.ops.len() as u64 <= SequenceNumber::MAX.0 + 1);
        for op in &b.ops {
            assert!(op.key.len() <= siftdb::inspect::key::MAX_KEY_LEN);
            if op.value_type == ValueType::Deletion {
                assert!(op.value.is_empty());
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Version edits (DESIGN.md 12.8).

fn internal_key() -> impl Strategy<Value = InternalKey> {
    (
        prop::collection::vec(any::<u8>(), 0..10),
        0..=SequenceNumber::MAX.0,
        any::<bool>(),
    )
        .prop_map(|(k, s, put)| {
            let vt = if put {
                ValueType::Value
            } else {
                ValueType::Deletion
            };
            InternalKey::new(&k, SequenceNumber(s), vt)
        })
}

fn default_version_edit() -> impl Strategy<Value = VersionEdit> {
    let file = (
        0..7u32,
        any::<u64>(),
        any::<u64>(),
        internal_key(),
        internal_key(),
        any::<u32>(),
        any::<u32>(),
    )
        .prop_map(|(level, number, size, a, b, e, t)| {
            let (smallest, largest) = if a <= b { (a, b) } else { (b, a) };
            let (e, t) = (u64::from(e.max(t)), u64::from(e.min(t)));
            (
                level,
                FileMetaData {
                    number,
                    file_size: size,
                    smallest,
                    largest,
                    num_entries: e,
                    num_tombstones: t,
                },
            )
        });
    (
        prop::option::of(Just(1u32)),
        prop::option::of(any::<u64>()),
        prop::option::of(any::<u64>()),
        prop::option::of(0..=SequenceNumber::MAX.0),
        prop::collection::vec((0..7u32, any::<u64>()), 0..3),
        prop::collection::vec(file, 0..3),
        prop::collection::vec(key_prediction(), 0..2),
        prop::collection::vec(range_tombstone(), 0..2),
        prop::collection::vec((1..=SequenceNumber::MAX.0, any::<u64>()), 0..2),
    )
        .prop_map(
            |(fv, log, next, last, deleted, new, predictions, tombstones, waits)| VersionEdit {
                next_keyspace_id: None,
                keyspaces: Default::default(),
                format_version: fv,
                log_number: log,
                next_file_number: next,
                last_sequence: last.map(SequenceNumber),
                deleted_files: deleted,
                new_files: new,
                user_bytes_flushed: next.map(|n| n / 2),
                table_bytes_written: log,
                key_predictions: predictions,
                new_range_tombstones: tombstones,
                range_tombstone_files: waits
                    .into_iter()
                    .map(|(s, n)| (SequenceNumber(s), n))
                    .collect(),
            },
        )
}

/// A version edit with keyspace sections (format version 4): each adds
/// a keyspace, writes its log number and files, or drops it alone.
fn version_edit() -> impl Strategy<Value = VersionEdit> {
    let section = (
        prop::option::of(("[a-z][a-z0-9_.-]{0,8}", "[ -~\n]{0,20}")),
        prop::option::of(any::<u64>()),
        prop::collection::vec((0..7u32, any::<u64>()), 0..3),
        any::<bool>(),
    )
        .prop_map(|(add, log, deleted, drop)| {
            if drop {
                return KeyspaceEdit {
                    drop: true,
                    ..KeyspaceEdit::default()
                };
            }
            KeyspaceEdit {
                add: add
                    .filter(|(name, _)| name != "default")
                    .map(|(name, options)| KeyspaceAdd { name, options }),
                log_number: log,
                deleted_files: deleted,
                ..KeyspaceEdit::default()
            }
        });
    (
        default_version_edit(),
        prop::option::of(1..=u32::MAX),
        prop::collection::btree_map(1..=u32::MAX, section, 0..3),
    )
        .prop_map(|(e, next_keyspace_id, keyspaces)| VersionEdit {
            next_keyspace_id,
            keyspaces,
            ..e
        })
}

fn range_tombstone() -> impl Strategy<Value = (RangeTombstone, Vec<u64>)> {
    (
        prop::collection::vec(any::<u8>(), 0..6),
        prop::option::of(prop::collection::vec(any::<u8>(), 1..6)),
        1..=SequenceNumber::MAX.0,
        prop::collection::vec(any::<u64>(), 0..3),
    )
        .prop_map(|(start, end, seq, files)| {
            // An end must sort after the start: extend the start if not.
            let end = end.map(|e| {
                if e > start {
                    e
                } else {
                    [start.clone(), e].concat()
                }
            });
            let end = end.filter(|e| e > &start);
            (
                RangeTombstone {
                    start,
                    end,
                    seq: SequenceNumber(seq),
                },
                files,
            )
        })
}

fn key_prediction() -> impl Strategy<Value = KeyPrediction> {
    (
        0..7usize,
        any::<u32>(),
        any::<u64>(),
        0.0..1e12f64,
        0.0..1.0f64,
        any::<u64>(),
    )
        .prop_map(
            |(level, tables, entries, predicted, error, secs)| KeyPrediction {
                output_level: level,
                input_tables: tables as usize,
                input_entries: entries,
                summed_distinct_keys: entries / 2,
                predicted_distinct_keys: predicted,
                relative_std_error: error,
                distinct_input_keys: entries / 3,
                distinct_output_keys: entries / 4,
                finished_at_unix_secs: secs,
            },
        )
}

fn check_edit(bytes: &[u8]) {
    match VersionEdit::decode(bytes, Path::new("MANIFEST-000001"), 0) {
        Ok(e) => e.validate().expect("a decoded edit must validate"),
        Err(e) => assert_corruption(&e, "VersionEdit::decode"),
    }
}

// ---------------------------------------------------------------------------
// Log records (DESIGN.md 12.2).

fn check_log(bytes: &[u8]) {
    let mut r = LogReader::from_bytes(PathBuf::from("000001.log"), bytes.to_vec());
    let mut end = 0u64;
    loop {
        match r.next_record() {
            Ok(Some(rec)) => {
                assert_eq!(rec.offset, end, "records are back to back");
                end = rec.offset + 12 + rec.payload.len() as u64;
                assert!(end <= bytes.len() as u64);
            }
            Ok(None) => {
                assert!(r.valid_len() <= bytes.len() as u64);
                break;
            }
            Err(e) => {
                assert_corruption(&e, "LogReader");
                break;
            }
        }
    }
    assert_eq!(r.next_record().ok().flatten(), None, "reader is fused");
}

// ---------------------------------------------------------------------------
// Blocks and tables (DESIGN.md 12.4 to 12.7).

fn check_block(bytes: &[u8]) {
    let path = Path::new("000001.sst");
    let Ok(block) = Block::new(bytes, path, 0) else {
        return;
    };
    let mut n = 0usize;
    for entry in block.iter() {
        match entry {
            Ok((k, v)) => {
                assert!(k.len() + v.len() <= bytes.len() * 64 + 64);
                n += 1;
                assert!(n <= bytes.len(), "more entries than bytes");
            }
            Err(e) => {
                assert_corruption(&e, "BlockIter");
                break;
            }
        }
    }
    for probe in [&b""[..], b"k", b"key0050", b"\xff\xff"] {
        if let Err(e) = block.seek(probe, SequenceNumber::MAX) {
            assert_corruption(&e, "Block::seek");
        }
    }
}

/// A valid table: 300 versions of 200 keys, a filter, small blocks.
fn valid_table() -> &'static [u8] {
    static TABLE: OnceLock<Vec<u8>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.sst");
        let opts = TableOptions {
            block_size: 256,
            restart_interval: 4,
            filter_policy: Some(Arc::new(BloomFilterPolicy::new(10))),
            prefix_extractor: None,
            key_sketch_precision: Some(12),
            compression: siftdb::Compression::None,
            keyspace: 0,
        };
        let mut b = TableBuilder::new(&path, opts).unwrap();
        for i in 0..200u64 {
            let k = format!("key{i:04}");
            b.add(
                InternalKey::new(k.as_bytes(), SequenceNumber(1000 + i), ValueType::Value)
                    .encoded(),
                format!("value {i}").as_bytes(),
            )
            .unwrap();
            if i % 2 == 0 {
                b.add(
                    InternalKey::new(k.as_bytes(), SequenceNumber(i + 1), ValueType::Deletion)
                        .encoded(),
                    b"",
                )
                .unwrap();
            }
        }
        b.finish().unwrap();
        std::fs::read(&path).unwrap()
    })
}

/// Opens `bytes` as a table, reads a few keys and iterates both ways.
/// Returns the number of entries iterated, or `None` on an error.
fn check_table(bytes: &[u8]) -> Option<usize> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.sst");
    std::fs::write(&path, bytes).unwrap();
    let table = match Table::open(&path, 1) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            assert_corruption(&e, "Table::open");
            return None;
        }
    };
    let mut ok = true;
    for k in ["key0000", "key0001", "key0100", "key0199", "zzz", ""] {
        if let Err(e) = table.get(k.as_bytes(), SequenceNumber::MAX, hash_key(k.as_bytes())) {
            assert_corruption(&e, "Table::get");
            ok = false;
        }
    }
    let mut n = 0;
    for r in table.iter(Bound::Unbounded, Bound::Unbounded) {
        match r {
            Ok(_) => n += 1,
            Err(e) => {
                assert_corruption(&e, "TableIter");
                ok = false;
                break;
            }
        }
    }
    for r in table
        .iter(
            Bound::Included(b"key0050".to_vec()),
            Bound::Excluded(b"key0150".to_vec()),
        )
        .rev()
    {
        if let Err(e) = r {
            assert_corruption(&e, "TableIter rev");
            ok = false;
            break;
        }
    }
    // The key sketch is checked when it is read, not at open (a damaged
    // sketch must not make the table unreadable).
    if let Err(e) = table.key_sketch() {
        assert_corruption(&e, "Table::key_sketch");
        ok = false;
    }
    ok.then_some(n)
}

// ---------------------------------------------------------------------------
// Manifests (log of version edits, DESIGN.md 12.8).

fn check_manifest(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("MANIFEST-000001"), bytes).unwrap();
    match replay(dir.path(), 1) {
        Ok(r) => {
            assert!(!r.records.is_empty());
            assert!(r.records[0].edit.format_version.is_some());
        }
        Err(e) => assert_corruption(&e, "manifest::replay"),
    }
}

fn valid_manifest(edits: &[VersionEdit]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, e) in edits.iter().enumerate() {
        let mut e = e.clone();
        if i == 0 {
            e.format_version = Some(4);
        } else {
            e.format_version = None;
        }
        out.extend(log_record(&e.encode()));
    }
    out
}

proptest! {
    // No regression files: tests/ has no lib.rs for proptest to anchor
    // them to. A failure prints the minimal input instead.
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn batch_arbitrary_bytes(bytes in arbitrary_bytes()) {
        check_batch(&bytes);
    }

    #[test]
    fn batch_valid_round_trips_and_survives_mutation(
        seq in 1..1_000_000u64, ops in ops(), ms in mutations()
    ) {
        let enc = encode_batch(seq, &ops);
        let d = decode_batch(&enc).expect("valid batch");
        prop_assert_eq!(d.first_seq.0, seq);
        prop_assert_eq!(d.ops.len(), ops.len());
        for (op, (ks, k, v)) in d.ops.iter().zip(&ops) {
            prop_assert_eq!(op.keyspace, *ks);
            prop_assert_eq!(op.key, &k[..]);
            prop_assert_eq!(op.value, v.as_deref().unwrap_or_default());
        }
        check_batch(&mutate(enc, &ms));
    }

    #[test]
    fn log_arbitrary_bytes(bytes in arbitrary_bytes()) {
        check_log(&bytes);
    }

    #[test]
    fn log_valid_round_trips_and_survives_mutation(
        payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..6),
        ms in mutations(),
    ) {
        let enc: Vec<u8> = payloads.iter().flat_map(|p| log_record(p)).collect();
        // Through a file, as recovery reads it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        std::fs::write(&path, &enc).unwrap();
        let c = read_log(&path).expect("valid log");
        prop_assert!(c.torn_tail.is_none());
        prop_assert_eq!(c.valid_len, enc.len() as u64);
        let got: Vec<Vec<u8>> = c.records.into_iter().map(|r| r.payload).collect();
        prop_assert_eq!(&got, &payloads);
        let bad = mutate(enc, &ms);
        check_log(&bad);
        std::fs::write(&path, &bad).unwrap();
        if let Err(e) = read_log(&path) {
            assert_corruption(&e, "read_log");
        }
    }

    #[test]
    fn version_edit_arbitrary_bytes(bytes in arbitrary_bytes()) {
        check_edit(&bytes);
    }

    #[test]
    fn version_edit_valid_round_trips_and_survives_mutation(
        edit in version_edit(), ms in mutations()
    ) {
        edit.validate().expect("generated edits are valid");
        let enc = edit.encode();
        let back = VersionEdit::decode(&enc, Path::new("MANIFEST-000001"), 0).expect("decode");
        prop_assert_eq!(&back, &edit);
        check_edit(&mutate(enc, &ms));
    }

    #[test]
    fn block_arbitrary_bytes(bytes in arbitrary_bytes()) {
        check_block(&bytes);
    }

    #[test]
    fn block_valid_round_trips_and_survives_mutation(
        n in 0..60usize, restart in 1..8usize, ms in mutations()
    ) {
        let mut b = BlockBuilder::new(restart);
        let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
            .map(|i| {
                let k = InternalKey::new(
                    format!("key{i:04}").as_bytes(), SequenceNumber(7), ValueType::Value,
                );
                (k.into_encoded(), format!("v{i}").into_bytes())
            })
            .collect();
        for (k, v) in &entries {
            b.add(k, v);
        }
        let enc = b.finish().to_vec();
        let block = Block::new(&enc, Path::new("000001.sst"), 0).expect("valid block");
        let got: Vec<(Vec<u8>, Vec<u8>)> =
            block.iter().map(|r| r.map(|(k, v)| (k, v.to_vec())).unwrap()).collect();
        prop_assert_eq!(&got, &entries);
        check_block(&mutate(enc, &ms));
    }

    #[test]
    fn table_arbitrary_bytes(bytes in arbitrary_bytes()) {
        // Almost always too short or without the magic; still must not panic.
        check_table(&bytes);
    }

    #[test]
    fn table_mutated_valid_table(ms in mutations()) {
        let valid = valid_table();
        let bad = mutate(valid.to_vec(), &ms);
        let n = check_table(&bad);
        if bad == valid {
            prop_assert_eq!(n, Some(300));
        } else {
            // Every byte is covered by a block or footer checksum.
            prop_assert_eq!(n, None, "damage went undetected");
        }
    }

    #[test]
    fn manifest_arbitrary_bytes(bytes in arbitrary_bytes()) {
        check_manifest(&bytes);
    }

    #[test]
    fn manifest_valid_replays_and_survives_mutation(
        edits in prop::collection::vec(version_edit(), 1..5), ms in mutations()
    ) {
        let enc = valid_manifest(&edits);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("MANIFEST-000001"), &enc).unwrap();
        let r = replay(dir.path(), 1).expect("valid manifest");
        prop_assert_eq!(r.records.len(), edits.len());
        check_manifest(&mutate(enc, &ms));
    }
}
