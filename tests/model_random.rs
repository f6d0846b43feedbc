//! Randomized model test: the database against a `BTreeMap`, through puts,
//! deletes, batches, flushes, reopens, point reads and range scans in both
//! directions. Seeds are fixed; set SIFTDB_MODEL_OPS for longer runs.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use common::Rng;
use siftdb::{Db, Options, WriteBatch};

fn key(rng: &mut Rng) -> Vec<u8> {
    // A small key space so keys are overwritten and deleted often; a few
    // empty keys and binary bytes too.
    match rng.below(20) {
        0 => Vec::new(),
        1 => vec![0xff, rng.below(4) as u8],
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

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn check_range(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, rng: &mut Rng) {
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
        .range((lo.clone(), hi.clone()))
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(got, expected, "forward {lo:?}..{hi:?}");
    let mut back: Pairs = db
        .range((lo.clone(), hi.clone()))
        .rev()
        .map(|r| r.unwrap())
        .collect();
    back.reverse();
    assert_eq!(back, expected, "backward {lo:?}..{hi:?}");
    // Interleaved ends: the union is the expected set, nothing twice.
    let mut it = db.range((lo.clone(), hi.clone()));
    let (mut front, mut tail) = (Vec::new(), Vec::new());
    loop {
        let from_back = rng.below(2) == 0;
        let item = if from_back { it.next_back() } else { it.next() };
        match item {
            Some(r) if from_back => tail.push(r.unwrap()),
            Some(r) => front.push(r.unwrap()),
            None => break,
        }
    }
    tail.reverse();
    front.extend(tail);
    assert_eq!(front, expected, "interleaved {lo:?}..{hi:?}");
}

fn run(seed: u64, ops: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.write_buffer_size = 8 << 10;
    opts.block_size = 256;
    opts.bits_per_key = [0, 4, 10][(seed % 3) as usize];
    let mut db = Db::open_with(dir.path(), opts.clone()).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = Rng(seed);
    for step in 0..ops {
        match rng.below(100) {
            0..=39 => {
                let (k, v) = (key(&mut rng), value(&mut rng));
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            40..=54 => {
                let k = key(&mut rng);
                db.delete(&k).unwrap();
                model.remove(&k);
            }
            55..=62 => {
                let mut b = WriteBatch::new();
                for _ in 0..rng.below(8) {
                    let k = key(&mut rng);
                    if rng.below(3) == 0 {
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
            63..=84 => {
                let k = key(&mut rng);
                assert_eq!(
                    db.get(&k).unwrap(),
                    model.get(&k).cloned(),
                    "seed {seed} step {step} get {k:?}"
                );
            }
            85..=92 => check_range(&db, &model, &mut rng),
            93..=96 => db.flush().unwrap(),
            _ => {
                drop(db);
                db = Db::open_with(dir.path(), opts.clone()).unwrap();
            }
        }
    }
    // Full check at the end, after one more reopen.
    drop(db);
    let db = Db::open_with(dir.path(), opts).unwrap();
    let all: Pairs = db.range::<Vec<u8>, _>(..).map(|r| r.unwrap()).collect();
    let expected: Pairs = model.into_iter().collect();
    assert_eq!(all, expected, "seed {seed} final scan");
}

fn ops() -> usize {
    std::env::var("SIFTDB_MODEL_OPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000)
}

#[test]
fn model_seed_1() {
    run(1, ops());
}

#[test]
fn model_seed_2() {
    run(2, ops());
}

#[test]
fn model_seed_3() {
    run(3, ops());
}
