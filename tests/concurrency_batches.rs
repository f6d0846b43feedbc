//! Readers never see part of a batch: a writer rewrites a group of keys in
//! one `WriteBatch` per round, with flushes and compactions running, while
//! readers check through snapshots and iterators that every key of the
//! group holds the same round number. Set SIFTDB_BATCH_ROUNDS for a longer
//! run.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use siftdb::{Db, Options, WriteBatch};

const KEYS: usize = 40;

fn key(i: usize) -> String {
    format!("group/{i:03}")
}

fn rounds() -> u64 {
    std::env::var("SIFTDB_BATCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1500)
}

/// The round every pair carries; panics if they differ or a key is missing.
fn one_round(pairs: &[(Vec<u8>, Vec<u8>)], what: &str) -> u64 {
    assert_eq!(
        pairs.len(),
        KEYS,
        "{what}: a key is missing: {} of {KEYS}",
        pairs.len()
    );
    let first = u64::from_le_bytes(pairs[0].1[..8].try_into().unwrap());
    for (k, v) in pairs {
        let r = u64::from_le_bytes(v[..8].try_into().unwrap());
        assert_eq!(
            r,
            first,
            "{what}: {} holds round {r}, {} holds {first}",
            String::from_utf8_lossy(k),
            key(0)
        );
    }
    first
}

#[test]
fn snapshots_and_iterators_never_see_a_partial_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.write_buffer_size = 16 << 10;
    o.max_bytes_for_level_base = 32 << 10;
    o.target_file_size = 16 << 10;
    let db = Arc::new(Db::open_with(dir.path(), o).unwrap());
    let write_round = |db: &Db, r: u64| {
        let mut b = WriteBatch::new();
        for i in 0..KEYS {
            let mut v = r.to_le_bytes().to_vec();
            v.extend_from_slice(&[b'x'; 56]);
            b.put(key(i), v).unwrap();
        }
        db.write(b).unwrap();
    };
    write_round(&db, 0);
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|t| {
            let (db, done) = (db.clone(), done.clone());
            std::thread::spawn(move || {
                let mut checks = 0u64;
                let mut last = 0;
                while !done.load(Ordering::Relaxed) {
                    let pairs: Vec<_> = if t == 0 {
                        db.prefix("group/").map(common::owned).collect()
                    } else {
                        let mut v: Vec<_> = db.prefix("group/").rev().map(common::owned).collect();
                        v.reverse();
                        v
                    };
                    let r = one_round(&pairs, "iterator");
                    assert!(r >= last, "rounds go forward: {r} after {last}");
                    last = r;
                    let snap = db.snapshot();
                    let before: Vec<_> = snap.prefix("group/").map(common::owned).collect();
                    let r = one_round(&before, "snapshot");
                    // The snapshot keeps answering the same round while the
                    // writer moves on.
                    std::thread::yield_now();
                    for i in [0, KEYS / 2, KEYS - 1] {
                        let v = snap.get(key(i)).unwrap().unwrap();
                        assert_eq!(
                            u64::from_le_bytes(v[..8].try_into().unwrap()),
                            r,
                            "snapshot get"
                        );
                    }
                    checks += 1;
                }
                checks
            })
        })
        .collect();
    for r in 1..=rounds() {
        write_round(&db, r);
    }
    done.store(true, Ordering::Relaxed);
    for h in readers {
        assert!(h.join().unwrap() > 0, "each reader checked at least once");
    }
    let s = db.stats();
    assert!(
        s.flushes > 0 && s.compactions > 0,
        "flushes and compactions ran: {s:?}"
    );
    let last: Vec<_> = db.prefix("group/").map(common::owned).collect();
    assert_eq!(one_round(&last, "final"), rounds());
}
