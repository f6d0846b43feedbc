//! Randomized model test: the database against a `BTreeMap`, through puts,
//! deletes, range deletes, batches, flushes, compactions (every style),
//! snapshots, reopens, point reads and range scans in both directions. Seeds are
//! fixed; set SIFTDB_MODEL_OPS (operations per seed, default 10,000) for
//! longer runs.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use common::Rng;
use siftdb::inspect::key_range::inverted;
use siftdb::{CompactionStyle, Db, Options, Snapshot, TableReads, WriteBatch};

fn key(rng: &mut Rng) -> Vec<u8> {
    // A small key space so keys are overwritten and deleted often; a few
    // empty keys and binary bytes too, and keys whose 16-byte prefixes tie
    // (the lookups and the index compare prefixes first, DESIGN.md 3):
    // keys sharing their first 16 bytes, and keys extended by zero bytes.
    match rng.below(20) {
        0 => Vec::new(),
        1 => vec![0xff, rng.below(4) as u8],
        2 => {
            let tails: [&[u8]; 5] = [b"", b"\0", b"a", b"a\0", b"b"];
            [&b"sixteen-byte-key"[..], tails[rng.below(5) as usize]].concat()
        }
        3 => {
            let mut k = format!("k{:03}", rng.below(300)).into_bytes();
            k.resize(k.len() + 1 + rng.below(2) as usize, 0);
            k
        }
        _ => format!("k{:03}", rng.below(300)).into_bytes(),
    }
}

fn value(rng: &mut Rng) -> Vec<u8> {
    let len = [0, 1, 10, 100, 700][rng.below(5) as usize];
    (0..len).map(|_| rng.below(256) as u8).collect()
}

fn bound(rng: &mut Rng) -> Bound<Vec<u8>> {
    match rng.below(3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(rng)),
        _ => Bound::Excluded(key(rng)),
    }
}

fn valid_range(lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a), Bound::Excluded(b)) | (Bound::Excluded(a), Bound::Included(b)) => {
            a < b
        }
        (Bound::Excluded(a), Bound::Excluded(b)) => a < b,
        _ => true,
    }
}

/// Applies a range deletion to the model.
fn delete_range_in(model: &mut Model, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) {
    if valid_range(lo, hi) {
        let doomed: Vec<Vec<u8>> = model
            .range((lo.clone(), hi.clone()))
            .map(|(k, _)| k.clone())
            .collect();
        for k in doomed {
            model.remove(&k);
        }
    }
}

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;
type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// What a range read can be made from: the database or a snapshot.
trait Reader {
    fn range_of(&self, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> siftdb::DbIterator;
}

impl Reader for Db {
    fn range_of(&self, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> siftdb::DbIterator {
        self.range((lo, hi))
    }
}

impl Reader for Snapshot {
    fn range_of(&self, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> siftdb::DbIterator {
        self.range((lo, hi))
    }
}

fn check_range(db: &dyn Reader, model: &BTreeMap<Vec<u8>, Vec<u8>>, rng: &mut Rng) {
    let (lo, hi) = (bound(rng), bound(rng));
    let expected: Pairs = if valid_range(&lo, &hi) {
        model
            .range((lo.clone(), hi.clone()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    } else {
        Vec::new()
    };
    let got: Pairs = db
        .range_of(lo.clone(), hi.clone())
        .map(common::owned)
        .collect();
    assert_eq!(got, expected, "forward {lo:?}..{hi:?}");
    let mut back: Pairs = db
        .range_of(lo.clone(), hi.clone())
        .rev()
        .map(common::owned)
        .collect();
    back.reverse();
    assert_eq!(back, expected, "backward {lo:?}..{hi:?}");
    // Interleaved ends: the union is the expected set, nothing twice.
    let mut it = db.range_of(lo.clone(), hi.clone());
    let (mut front, mut tail) = (Vec::new(), Vec::new());
    loop {
        let from_back = rng.below(2) == 0;
        let item = if from_back { it.next_back() } else { it.next() };
        match item {
            Some(r) if from_back => tail.push(common::owned(r)),
            Some(r) => front.push(common::owned(r)),
            None => break,
        }
    }
    tail.reverse();
    front.extend(tail);
    assert_eq!(front, expected, "interleaved {lo:?}..{hi:?}");
}

fn run(seed: u64, style: CompactionStyle, ops: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.write_buffer_size = 8 << 10;
    opts.block_size = 256;
    opts.bits_per_key = [0, 4, 10][(seed % 3) as usize];
    opts.compaction_style = style;
    opts.max_bytes_for_level_base = 16 << 10;
    opts.level_size_multiplier = 2;
    opts.target_file_size = 8 << 10;
    // Odd seeds read through the smallest block cache, which evicts all
    // the time; even seeds through the maps.
    if seed % 2 == 1 {
        opts.table_reads = TableReads::Cached { capacity: 64 << 10 };
    }
    let mut db = Db::open_with(dir.path(), opts.clone()).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut snapshots: Vec<(Snapshot, Model)> = Vec::new();
    let mut rng = Rng(seed);
    for step in 0..ops {
        match rng.below(100) {
            0..=37 => {
                let (k, v) = (key(&mut rng), value(&mut rng));
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            38..=49 => {
                let k = key(&mut rng);
                db.delete(&k).unwrap();
                model.remove(&k);
            }
            50..=51 => {
                let (lo, hi) = (bound(&mut rng), bound(&mut rng));
                let r = db.delete_range((lo.clone(), hi.clone()));
                if inverted(&lo, &hi) {
                    assert!(matches!(r, Err(siftdb::Error::InvalidArgument(_))));
                } else {
                    r.unwrap();
                    delete_range_in(&mut model, &lo, &hi);
                }
            }
            52..=58 => {
                let mut b = WriteBatch::new();
                for _ in 0..rng.below(8) {
                    let k = key(&mut rng);
                    if rng.below(10) == 0 {
                        let hi = Bound::Included(key(&mut rng));
                        let lo = Bound::Included(k);
                        if !inverted(&lo, &hi) {
                            b.delete_range((lo.clone(), hi.clone())).unwrap();
                            delete_range_in(&mut model, &lo, &hi);
                        }
                    } else if rng.below(3) == 0 {
                        b.delete(&k).unwrap();
                        model.remove(&k);
                    } else {
                        let v = value(&mut rng);
                        b.put(&k, &v).unwrap();
                        model.insert(k, v);
                    }
                }
                db.write(b).unwrap();
            }
            59..=76 => {
                let k = key(&mut rng);
                assert_eq!(
                    db.get(&k).unwrap().map(Vec::from),
                    model.get(&k).cloned(),
                    "seed {seed} step {step} get {k:?}"
                );
            }
            77..=82 => check_range(&db, &model, &mut rng),
            83..=85 => {
                if snapshots.len() < 4 {
                    snapshots.push((db.snapshot(), model.clone()));
                } else {
                    snapshots.remove(rng.below(4) as usize);
                }
            }
            86..=89 => {
                if !snapshots.is_empty() {
                    let (snap, m) = &snapshots[rng.below(snapshots.len() as u64) as usize];
                    let k = key(&mut rng);
                    assert_eq!(
                        snap.get(&k).unwrap().map(Vec::from),
                        m.get(&k).cloned(),
                        "seed {seed} step {step} snapshot get"
                    );
                    check_range(snap, m, &mut rng);
                }
            }
            90..=92 => db.flush().unwrap(),
            93 => db.compact().unwrap(),
            94..=95 => {
                let (a, b) = (key(&mut rng), key(&mut rng));
                db.compact_range(a.clone().min(b.clone())..=a.max(b))
                    .unwrap();
            }
            96 => db.wait_for_compactions().unwrap(),
            _ => {
                snapshots.clear();
                drop(db);
                db = Db::open_with(dir.path(), opts.clone()).unwrap();
            }
        }
    }
    // Full check at the end, after one more reopen.
    snapshots.clear();
    drop(db);
    let db = Db::open_with(dir.path(), opts).unwrap();
    let all: Pairs = db.range(..).map(common::owned).collect();
    let expected: Pairs = model.into_iter().collect();
    assert_eq!(all, expected, "seed {seed} final scan");
    // With no snapshot left, a full compaction drops everything the range
    // tombstones hide, and with it every tombstone.
    db.compact().unwrap();
    assert_eq!(db.stats().range_tombstones, 0, "seed {seed}");
    let all: Pairs = db.range(..).map(common::owned).collect();
    assert_eq!(all, expected, "seed {seed} scan after compact");
}

fn ops() -> usize {
    std::env::var("SIFTDB_MODEL_OPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000)
}

#[test]
fn model_leveled() {
    run(1, CompactionStyle::Leveled, ops());
    run(4, CompactionStyle::Leveled, ops());
}

#[test]
fn model_tiered() {
    run(2, CompactionStyle::Tiered, ops());
    run(5, CompactionStyle::Tiered, ops());
}

#[test]
fn model_no_compaction() {
    run(3, CompactionStyle::None, ops());
    run(6, CompactionStyle::None, ops());
}
