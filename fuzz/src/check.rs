//! The checks the targets run: feed bytes to one decoder (or the whole
//! read path), require `Ok` or a documented error, and cross-check what
//! decodes. Each returns what it decoded, or `None` if it was rejected.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use siftdb::filter::{bloom_stats, hash_key, BloomFilterPolicy, FilterPolicy, KeyHash};
use siftdb::inspect::filename::{current_path, manifest_path, wal_path};
use siftdb::inspect::key::{
    compare_internal_keys, compare_to_seek, user_key_of, ParsedInternalKey, SequenceNumber,
    ValueType, MAX_KEY_LEN,
};
use siftdb::inspect::log::{LogReader, LogRecord};
use siftdb::inspect::sstable::{Block, BlockBuilder, Table, TableGet};
use siftdb::inspect::version::edit::VersionEdit;
use siftdb::inspect::version::manifest::{read_current, replay};
use siftdb::inspect::write_batch::decode_batch;
use siftdb::{Db, Options, WriteBatch};

use crate::model::{encode_batch, Op};
use crate::{assert_corruption, frame};

/// A key-value pair as the iterators yield it.
pub type Kv = (Vec<u8>, Vec<u8>);

/// Collects an iterator of results, requiring a documented error if one
/// comes; `None` if one came.
fn collect<K: Into<Vec<u8>>, V: Into<Vec<u8>>, I: Iterator<Item = siftdb::Result<(K, V)>>>(
    it: I,
    what: &str,
) -> Option<Vec<Kv>> {
    let mut out = Vec::new();
    for r in it {
        match r {
            Ok((k, v)) => out.push((k.into(), v.into())),
            Err(e) => {
                assert_corruption(&e, what);
                return None;
            }
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------
// Blocks (DESIGN.md 12.5).

/// Decodes `bytes` as a data or index block, iterates it and seeks in it.
///
/// If iteration gets through every entry without error: rebuilding the
/// entries with [`BlockBuilder`] decodes to the same entries; every seek
/// succeeds; and if the keys are in internal-key order, each seek returns
/// what a linear scan for the first entry `>=` the seek key returns.
pub fn check_block(bytes: &[u8]) -> Option<Vec<Kv>> {
    let path = Path::new("000001.sst");
    let block = match Block::new(bytes, path, 0) {
        Ok(b) => b,
        Err(e) => {
            assert_corruption(&e, "Block::new");
            return None;
        }
    };
    let mut entries = Vec::new();
    let mut complete = true;
    for r in block.iter() {
        match r {
            Ok((k, v)) => {
                entries.push((k, v.to_vec()));
                // Every entry takes at least its three varints.
                assert!(3 * entries.len() <= bytes.len(), "more entries than bytes");
            }
            Err(e) => {
                assert_corruption(&e, "BlockIter");
                complete = false;
                break;
            }
        }
    }
    assert_eq!(block.is_empty(), complete && entries.is_empty());

    // Seek targets: the keys found, and a few fixed probes.
    let mut targets: Vec<(Vec<u8>, SequenceNumber)> = entries
        .iter()
        .take(32)
        .filter_map(|(k, _)| ParsedInternalKey::parse(k).map(|p| (p.user_key.to_vec(), p.seq)))
        .collect();
    targets.push((Vec::new(), SequenceNumber::MAX));
    targets.push((vec![0xff; 3], SequenceNumber::ZERO));
    if let Some((k, _)) = entries.first() {
        targets.push((user_key_of(k).to_vec(), SequenceNumber::MAX));
    }

    if !complete {
        for (uk, seq) in &targets {
            if let Err(e) = block.seek(uk, *seq) {
                assert_corruption(&e, "Block::seek");
            }
        }
        return None;
    }

    for interval in [1, 16] {
        let mut b = BlockBuilder::new(interval);
        for (k, v) in &entries {
            b.add(k, v);
        }
        let enc = b.finish().to_vec();
        let again = Block::new(&enc, path, 0).expect("a rebuilt block decodes");
        let back: Vec<Kv> = again
            .iter()
            .map(|r| {
                r.map(|(k, v)| (k, v.to_vec()))
                    .expect("a rebuilt block iterates")
            })
            .collect();
        assert_eq!(back, entries, "rebuilt block (restart interval {interval})");
    }

    let sorted = entries
        .windows(2)
        .all(|w| compare_internal_keys(&w[0].0, &w[1].0) != Ordering::Greater);
    for (uk, seq) in &targets {
        let got = block
            .seek(uk, *seq)
            .expect("seek in a block that iterated cleanly");
        if sorted {
            let want = entries
                .iter()
                .find(|(k, _)| compare_to_seek(k, uk, *seq) != Ordering::Less);
            assert_eq!(
                got.map(|(k, v)| (k, v.to_vec())).as_ref(),
                want,
                "seek({uk:?}, {seq}) disagrees with a linear scan"
            );
        }
    }
    Some(entries)
}

// ---------------------------------------------------------------------------
// Tables (DESIGN.md 12.4 to 12.7).

/// Writes `bytes` to `path` and opens it as a table; then iterates it
/// forward, backward and interleaved (all three must agree when they
/// finish), `get`s keys taken from the index, the entries and the
/// properties, and reads a bounded range both ways. Returns the forward
/// entries if open and the forward scan succeeded.
pub fn check_table(path: &Path, bytes: &[u8]) -> Option<Vec<Kv>> {
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    let table = match Table::open(path, 1) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            assert_corruption(&e, "Table::open");
            return None;
        }
    };
    assert!(!table.index().is_empty());
    assert_eq!(table.file_size(), bytes.len() as u64);
    if let Some(f) = table.filter_bytes() {
        check_filter(f, &[hash_key(b"")]);
    }

    let forward = collect(table.iter(Bound::Unbounded, Bound::Unbounded), "TableIter");
    let backward = collect(
        table.iter(Bound::Unbounded, Bound::Unbounded).rev(),
        "TableIter rev",
    );
    if let (Some(f), Some(b)) = (&forward, &backward) {
        let mut b = b.clone();
        b.reverse();
        assert_eq!(f, &b, "backward scan is not the forward scan reversed");
    }
    // Two steps from the front, one from the back, until they meet.
    let mut it = table.iter(Bound::Unbounded, Bound::Unbounded);
    let (mut front, mut back) = (Vec::new(), Vec::new());
    let mut step = 0usize;
    let interleaved_ok = loop {
        let from_back = step % 3 == 2;
        step += 1;
        let r = if from_back { it.next_back() } else { it.next() };
        match r {
            None => break true,
            Some(Ok((k, v))) if from_back => back.push((k, v.into_vec())),
            Some(Ok((k, v))) => front.push((k, v.into_vec())),
            Some(Err(e)) => {
                assert_corruption(&e, "TableIter interleaved");
                assert!(it.next().is_none() && it.next_back().is_none(), "not fused");
                break false;
            }
        }
    };
    if let (true, Some(f)) = (interleaved_ok, &forward) {
        back.reverse();
        front.extend(back);
        assert_eq!(&front, f, "interleaved scan differs from the forward scan");
    }

    // Keys taken from the input: index keys, some entries, the properties.
    let mut keys: Vec<Vec<u8>> = table
        .index()
        .iter()
        .take(4)
        .map(|e| user_key_of(&e.last_key).to_vec())
        .collect();
    if let Some(f) = &forward {
        let step = (f.len() / 8).max(1);
        keys.extend(f.iter().step_by(step).map(|(k, _)| user_key_of(k).to_vec()));
    }
    let p = table.properties();
    keys.push(p.smallest_user_key.clone());
    keys.push(p.largest_user_key.clone());
    keys.push(Vec::new());
    for k in &keys {
        for seq in [SequenceNumber::MAX, SequenceNumber(1)] {
            if let Err(e) = table.get(k, seq, hash_key(k)) {
                assert_corruption(&e, "Table::get");
            }
        }
    }
    let (lo, hi) = (keys[0].clone(), keys[keys.len() / 2].clone());
    let range = || table.iter(Bound::Included(lo.clone()), Bound::Excluded(hi.clone()));
    let f = collect(range(), "TableIter range");
    let b = collect(range().rev(), "TableIter range rev");
    if let (Some(f), Some(mut b)) = (f, b) {
        b.reverse();
        assert_eq!(f, b, "range scan differs backward");
    }
    forward
}

/// The newest `(seq, type, value)` of `uk` at or below `seq` in sorted
/// `entries`.
fn expected_get(
    entries: &[Kv],
    uk: &[u8],
    seq: SequenceNumber,
) -> Option<(SequenceNumber, ValueType, Vec<u8>)> {
    entries.iter().find_map(|(k, v)| {
        let p = ParsedInternalKey::parse(k).expect("model keys parse");
        (p.user_key == uk && p.seq <= seq).then(|| (p.seq, p.value_type, v.clone()))
    })
}

/// For a table built from `entries`: [`check_table`] must read exactly
/// `entries`; `get` of every user key (at several sequence numbers) and of
/// absent keys must answer as the model does; range scans both ways must
/// return exactly the entries in range.
pub fn check_table_exact(path: &Path, bytes: &[u8], entries: &[Kv]) {
    let got = check_table(path, bytes).expect("a table the builder wrote must read back");
    assert_eq!(got, entries, "table entries differ from what was written");
    let table = Arc::new(Table::open(path, 1).expect("reopen"));

    let mut keys: Vec<&[u8]> = entries.iter().map(|(k, _)| user_key_of(k)).collect();
    keys.dedup();
    for (i, uk) in keys.iter().enumerate().take(16) {
        let mut absent = uk.to_vec();
        absent.push(0);
        let seqs: Vec<SequenceNumber> = entries
            .iter()
            .filter_map(|(k, _)| ParsedInternalKey::parse(k))
            .filter(|p| p.user_key == *uk)
            .take(2)
            .flat_map(|p| [p.seq, SequenceNumber(p.seq.0.saturating_sub(1))])
            .chain([SequenceNumber::MAX, SequenceNumber::ZERO])
            .collect();
        for probe in [uk.to_vec(), absent] {
            for &s in &seqs {
                let want = expected_get(entries, &probe, s);
                match table
                    .get(&probe, s, hash_key(&probe))
                    .expect("get in a valid table")
                {
                    TableGet::OutOfRange | TableGet::FilterNegative => assert!(
                        want.is_none(),
                        "get({probe:?}, {s}) skipped the table, expected {want:?}"
                    ),
                    TableGet::Searched { entry, .. } => {
                        let entry = entry.map(|(s, vt, v)| (s, vt, v.into_vec()));
                        assert_eq!(entry, want, "get({probe:?}, {s})")
                    }
                }
            }
        }
        if i >= 4 {
            continue;
        }
        // A range from this key to a later one, both bound kinds.
        let hi = keys[(i + 1 + i / 2).min(keys.len() - 1)].to_vec();
        for (lo_b, hi_b) in [
            (Bound::Included(uk.to_vec()), Bound::Excluded(hi.clone())),
            (Bound::Excluded(uk.to_vec()), Bound::Included(hi.clone())),
        ] {
            let want: Vec<Kv> = entries
                .iter()
                .filter(|(k, _)| {
                    let u = user_key_of(k);
                    (match &lo_b {
                        Bound::Included(l) => u >= l.as_slice(),
                        Bound::Excluded(l) => u > l.as_slice(),
                        Bound::Unbounded => true,
                    }) && (match &hi_b {
                        Bound::Included(h) => u <= h.as_slice(),
                        Bound::Excluded(h) => u < h.as_slice(),
                        Bound::Unbounded => true,
                    })
                })
                .cloned()
                .collect();
            let f = collect(table.iter(lo_b.clone(), hi_b.clone()), "range").unwrap();
            assert_eq!(f, want, "range {lo_b:?}..{hi_b:?}");
            let mut b = collect(table.iter(lo_b.clone(), hi_b.clone()).rev(), "range").unwrap();
            b.reverse();
            assert_eq!(b, want, "range {lo_b:?}..{hi_b:?} backward");
        }
    }
}

// ---------------------------------------------------------------------------
// Log records (DESIGN.md 12.2).

/// What a log held: its complete records and whether it ended torn.
#[derive(Debug)]
pub struct LogRead {
    /// The complete records, in order.
    pub records: Vec<LogRecord>,
    /// The log ended in a torn record.
    pub torn: bool,
}

/// Reads `bytes` as a log. Records must lie back to back from offset 0,
/// `valid_len` must be where they end (the whole input unless torn), and
/// re-framing the payloads must give back exactly the bytes they came
/// from. `None` if the reader reported corruption.
pub fn check_log(bytes: &[u8]) -> Option<LogRead> {
    let mut r = LogReader::from_bytes("000002.log".into(), bytes.to_vec());
    let mut records = Vec::new();
    let mut end = 0u64;
    loop {
        match r.next_record() {
            Ok(Some(rec)) => {
                assert_eq!(rec.offset, end, "records are back to back");
                end = rec.offset + 12 + rec.payload.len() as u64;
                assert!(end <= bytes.len() as u64);
                records.push(rec);
            }
            Ok(None) => break,
            Err(e) => {
                assert_corruption(&e, "LogReader");
                assert_eq!(r.next_record().ok().flatten(), None, "reader is fused");
                return None;
            }
        }
    }
    assert_eq!(r.next_record().ok().flatten(), None, "reader is fused");
    assert_eq!(r.valid_len(), end);
    let torn = match r.torn_tail() {
        Some(t) => {
            assert_eq!(t.offset, end);
            assert!(end < bytes.len() as u64, "a torn tail has bytes");
            true
        }
        None => {
            assert_eq!(end, bytes.len() as u64, "untorn log read to its end");
            false
        }
    };
    let reframed: Vec<u8> = records.iter().flat_map(|r| frame(&r.payload)).collect();
    assert_eq!(
        &reframed[..],
        &bytes[..end as usize],
        "records re-frame to their bytes"
    );
    Some(LogRead { records, torn })
}

// ---------------------------------------------------------------------------
// Write batches (DESIGN.md 12.3).

/// Decodes a WAL payload. What decodes must be within the limits (keys up
/// to 65,535 bytes, tombstones without values, sequence numbers within 56
/// bits); re-encoding it by hand must decode to the same batch and be no
/// longer than the input; and a [`WriteBatch`] built from the same updates
/// must hold the same updates. A batch holding a range deletion (record
/// type 2) is checked for its bounds (each at most 65,536 bytes, the end
/// empty or after the start) and then returns `None`: the models here
/// have no range deletions. So does a batch holding an op in a keyspace
/// other than the default (tags 0x10-0x12): the models have one keyspace,
/// and a database whose WAL holds such an op does not open in this build.
pub fn check_batch(payload: &[u8]) -> Option<(u64, Vec<Op>)> {
    let b = decode_batch(payload).ok()?;
    assert!(b.first_seq.0 >= 1);
    assert!(b.first_seq.0 + b.ops.len() as u64 <= SequenceNumber::MAX.0 + 1);
    if b.ops.iter().any(|op| op.keyspace != 0) {
        return None;
    }
    let mut wb = WriteBatch::new();
    let mut ops = Vec::with_capacity(b.ops.len());
    let mut has_range_deletion = false;
    for op in &b.ops {
        if op.value_type == ValueType::RangeDeletion {
            assert!(op.key.len() <= MAX_KEY_LEN + 1 && op.value.len() <= MAX_KEY_LEN + 1);
            assert!(op.value.is_empty() || op.value > op.key);
            has_range_deletion = true;
            continue;
        }
        assert!(op.key.len() <= MAX_KEY_LEN);
        match op.value_type {
            ValueType::Deletion => {
                assert!(op.value.is_empty());
                wb.delete(op.key)
                    .expect("a decoded delete is within limits");
                ops.push((op.key.to_vec(), None));
            }
            ValueType::Value => {
                wb.put(op.key, op.value)
                    .expect("a decoded put is within limits");
                ops.push((op.key.to_vec(), Some(op.value.to_vec())));
            }
            ValueType::RangeDeletion => unreachable!("handled above"),
        }
    }
    if has_range_deletion {
        return None;
    }
    let enc = encode_batch(b.first_seq.0, &ops);
    assert!(enc.len() <= payload.len(), "canonical encoding is longer");
    let again = decode_batch(&enc).expect("a re-encoded batch decodes");
    assert_eq!(again.first_seq, b.first_seq);
    assert_eq!(again.ops, b.ops);
    assert_eq!(wb.iter().collect::<Vec<_>>(), b.ops);
    assert_eq!(wb.encoded_len(), enc.len());
    Some((b.first_seq.0, ops))
}

// ---------------------------------------------------------------------------
// Version edits (DESIGN.md 12.8).

/// Decodes a version edit. What decodes must validate, agree with
/// `peek_format_version`, and re-encode (no longer than the input) to
/// bytes that decode to the same edit.
pub fn check_edit(bytes: &[u8]) -> Option<VersionEdit> {
    let file = Path::new("MANIFEST-000001");
    let e = match VersionEdit::decode(bytes, file, 0) {
        Ok(e) => e,
        Err(err) => {
            assert_corruption(&err, "VersionEdit::decode");
            return None;
        }
    };
    e.validate().expect("a decoded edit validates");
    if let Some(v) = VersionEdit::peek_format_version(bytes) {
        assert_eq!(e.format_version, Some(v));
    }
    let enc = e.encode();
    assert!(enc.len() <= bytes.len(), "canonical encoding is longer");
    assert_eq!(
        VersionEdit::decode(&enc, file, 0).expect("a re-encoded edit decodes"),
        e
    );
    Some(e)
}

// ---------------------------------------------------------------------------
// Whole-database replay (DESIGN.md 8).

/// Opens `dir` read-only (replaying its manifest and WAL into memory, as
/// `Db::open` does, without writing). If it opens, scans forward and
/// backward (they must agree) and `get`s every key found (it must return
/// the value scanned). Returns the contents.
pub fn open_db(dir: &Path) -> Option<Vec<Kv>> {
    let db = match Db::open_read_only(dir, Options::default()) {
        Ok(db) => db,
        Err(e) => {
            assert_corruption(&e, "Db::open_read_only");
            return None;
        }
    };
    let f = collect(db.iter(), "Db::iter")?;
    if let Some(mut b) = collect(db.iter().rev(), "Db::iter rev") {
        b.reverse();
        assert_eq!(f, b, "database scans disagree");
    }
    for (k, v) in f.iter().take(64) {
        match db.get(k) {
            Ok(got) => assert_eq!(
                got.as_deref(),
                Some(v.as_slice()),
                "get({k:?}) differs from the scan"
            ),
            Err(e) => assert_corruption(&e, "Db::get"),
        }
    }
    Some(f)
}

fn write_current(dir: &Path) {
    std::fs::write(current_path(dir), b"MANIFEST-000001\n").unwrap();
}

/// Lays out a database in `dir` whose manifest (valid, written by hand)
/// names WAL 2 as live, with `wal` as that WAL.
pub fn write_wal_db(dir: &Path, wal: &[u8]) {
    let snapshot = VersionEdit {
        format_version: Some(1),
        log_number: Some(2),
        next_file_number: Some(3),
        last_sequence: Some(SequenceNumber(0)),
        ..VersionEdit::default()
    };
    std::fs::write(manifest_path(dir, 1), frame(&snapshot.encode())).unwrap();
    write_current(dir);
    std::fs::write(wal_path(dir, 2), wal).unwrap();
}

/// The database state after applying `batches` in order, if their
/// sequence numbers increase (otherwise the newest write is ambiguous).
fn model(batches: &[(u64, Vec<Op>)]) -> Option<Vec<Kv>> {
    let mut next = 0u64;
    let mut state = BTreeMap::new();
    for (seq, ops) in batches {
        if ops.is_empty() {
            continue;
        }
        if *seq < next {
            return None;
        }
        next = seq + ops.len() as u64;
        for (k, v) in ops {
            match v {
                Some(v) => state.insert(k.clone(), v.clone()),
                None => state.remove(k),
            };
        }
    }
    Some(state.into_iter().collect())
}

/// Replays `wal` as the live WAL of a database in `dir`, two ways: record
/// by record with [`check_log`] and [`check_batch`], and through
/// [`Db::open_read_only`] ([`open_db`]). They must agree: the database
/// opens exactly when every record and batch decodes (a torn tail is
/// dropped), and then holds what the batches wrote. Returns the batches.
pub fn check_wal(dir: &Path, wal: &[u8]) -> Option<Vec<(u64, Vec<Op>)>> {
    let batches = check_log(wal).and_then(|log| {
        log.records
            .iter()
            .map(|r| check_batch(&r.payload))
            .collect::<Option<Vec<_>>>()
    });
    write_wal_db(dir, wal);
    let db = open_db(dir);
    match (&batches, &db) {
        (Some(b), Some(contents)) => {
            if let Some(want) = model(b) {
                assert_eq!(
                    contents, &want,
                    "replayed database differs from the batches"
                );
            }
        }
        (Some(_), None) => panic!("the WAL decodes, but the database did not open"),
        (None, Some(_)) => panic!("the database opened on a WAL that does not decode"),
        (None, None) => {}
    }
    batches
}

/// Writes `bytes` as `dir/MANIFEST-000001`, with a `CURRENT` naming it,
/// and replays it with `manifest::replay`. If that succeeds, it must have
/// read the records the log reader reads (same offsets, same torn tail),
/// each decoded as [`check_edit`] decodes it, the first carrying a format
/// version. The edits are then folded into a `ReplayedState`, and if that
/// succeeds an empty WAL at its log number is created and the directory is
/// opened read-only ([`open_db`]). Returns the edits.
pub fn check_manifest(dir: &Path, bytes: &[u8]) -> Option<Vec<VersionEdit>> {
    std::fs::write(manifest_path(dir, 1), bytes).unwrap();
    write_current(dir);
    assert_eq!(read_current(dir).expect("CURRENT"), Some(1));
    let log = check_log(bytes);
    let decoded: Option<Vec<VersionEdit>> = log
        .as_ref()
        .and_then(|l| l.records.iter().map(|r| check_edit(&r.payload)).collect());
    let contents = match replay(dir, 1) {
        Ok(c) => c,
        Err(e) => {
            assert_corruption(&e, "manifest::replay");
            return None;
        }
    };
    let log = log.expect("replay read a log the log reader rejects");
    assert_eq!(contents.torn_tail.is_some(), log.torn);
    let offsets: Vec<u64> = contents.records.iter().map(|r| r.offset).collect();
    let want: Vec<u64> = log.records.iter().map(|r| r.offset).collect();
    assert_eq!(
        offsets, want,
        "replay and the log reader disagree on records"
    );
    let edits = decoded.expect("replay accepted an edit VersionEdit::decode rejects");
    assert_eq!(contents.edits().cloned().collect::<Vec<_>>(), edits);
    assert!(edits[0].format_version.is_some());
    match contents.replay_all() {
        Ok(state) => {
            // Any number, u64::MAX included: open refuses numbers above
            // 2^63 as Corruption (found by this target; fuzz/README.md,
            // "Findings").
            if state.log_number > 0 {
                std::fs::write(wal_path(dir, state.log_number), b"").unwrap();
            }
            open_db(dir);
        }
        Err(e) => assert_corruption(&e, "ManifestContents::replay"),
    }
    Some(edits)
}

// ---------------------------------------------------------------------------
// Filters (the `filter::bloom` module docs).

/// Probes `filter` with `hashes`. `bloom_stats` must recognise exactly the
/// well-formed filters (at least one byte of bits, then `k` in 1 to 30);
/// a malformed filter matches everything; a full one matches everything;
/// an empty one (no bit set) nothing; and the statistics must agree with
/// the bytes and with `shape`.
pub fn check_filter(filter: &[u8], hashes: &[KeyHash]) {
    let policy = BloomFilterPolicy::new(10);
    let stats = bloom_stats(filter);
    let k = filter.last().copied().unwrap_or(0);
    let well_formed = filter.len() >= 2 && (1..=30).contains(&k);
    assert_eq!(
        stats.is_some(),
        well_formed,
        "bloom_stats of {} bytes, k {k}",
        filter.len()
    );
    if let Some(s) = stats {
        assert_eq!(s.bits, (filter.len() as u64 - 1) * 8);
        assert_eq!(s.num_hashes, u32::from(k));
        assert!(s.bits_set <= s.bits);
        let shape = policy.shape(filter);
        assert_eq!((shape.bits, shape.num_hashes), (s.bits, s.num_hashes));
    }
    for &h in hashes {
        let m = policy.may_match(filter, h);
        match stats {
            None => assert!(m, "a malformed filter must match"),
            Some(s) if s.bits_set == s.bits => assert!(m, "a full filter must match"),
            Some(s) if s.bits_set == 0 => assert!(!m, "an empty filter must not match"),
            Some(_) => {}
        }
    }
}
