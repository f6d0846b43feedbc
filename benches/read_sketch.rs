//! The cost of the read sketch (`Options::hot_keys`) per `Db::get`: the
//! same layout opened twice, sketch off and on, timed in alternating
//! rounds so that load from other processes falls on both alike; prints
//! the median nanoseconds per `get` of each and their ratio.
//!
//! `cargo bench --bench read_sketch`. 100,000 random 16-byte keys with
//! 100-byte values in 4 level-0 runs with 10-bit Bloom filters (the
//! `db` bench's layout); three access patterns: present keys and absent
//! keys striding through the key set, and present keys with 90% of
//! lookups on 100 hot keys (the top-K's locked path). One thread. Takes
//! about 30 s.

use std::hint::black_box;
use std::time::Instant;

use siftdb::{Db, HotKeyOptions};
use siftdb_bench::readamp::{bench_options, load_runs, Dataset, RunLayout};

const KEYS: usize = 100_000;
const SEED: u64 = 0x5EED;
const ROUNDS: usize = 41;
const GETS_PER_ROUND: usize = 50_000;

fn open(ds: &Dataset, hot: bool) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let runs = RunLayout::random(ds.present.len(), 4, SEED);
    let mut o = bench_options(10, None);
    o.hot_keys = hot.then(HotKeyOptions::default);
    let db = load_runs(dir.path(), ds, &runs, o).expect("load the layout");
    (dir, db)
}

/// Nanoseconds per `get` over `order`.
fn round(db: &Db, keys: &[&[u8]], order: &[usize]) -> f64 {
    let t = Instant::now();
    for &i in order {
        black_box(db.get(keys[i]).expect("get"));
    }
    t.elapsed().as_nanos() as f64 / order.len() as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let ds = Dataset::synthetic(KEYS, 16, 100, SEED).expect("keys");
    let (_d0, off) = open(&ds, false);
    let (_d1, on) = open(&ds, true);
    let present: Vec<&[u8]> = ds.present.iter().map(|(k, _)| k.as_slice()).collect();
    let absent: Vec<&[u8]> = ds.absent.iter().map(Vec::as_slice).collect();
    let stride = |n: usize| -> Vec<usize> { (0..GETS_PER_ROUND).map(|j| (j * 7919) % n).collect() };
    let skewed: Vec<usize> = (0..GETS_PER_ROUND)
        .map(|j| {
            let x = (j as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
            if x % 10 < 9 {
                (x as usize / 10) % 100
            } else {
                (j * 7919) % KEYS
            }
        })
        .collect();
    println!("pattern              off ns/get   on ns/get   on/off");
    for (name, keys, order) in [
        ("present (stride)", &present, stride(present.len())),
        ("absent (stride)", &absent, stride(absent.len())),
        ("present (90% on 100)", &present, skewed),
    ] {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        round(&off, keys, &order);
        round(&on, keys, &order);
        for r in 0..ROUNDS {
            // Alternate which goes first, too.
            if r % 2 == 0 {
                a.push(round(&off, keys, &order));
                b.push(round(&on, keys, &order));
            } else {
                b.push(round(&on, keys, &order));
                a.push(round(&off, keys, &order));
            }
        }
        let (ma, mb) = (median(a), median(b));
        println!("{name:<20} {ma:>11.1} {mb:>11.1} {:>8.3}", mb / ma);
    }
    let hot = on.hot_keys(3).expect("sketch on");
    println!(
        "sketch saw {} lookups; heaviest: {} at {} (bound {:.0})",
        hot.reads(),
        siftdb::inspect::escape::escape_bytes(&hot.keys[0].key),
        hot.keys[0].total(),
        hot.error_bound()
    );
}
