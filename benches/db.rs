//! Criterion benchmarks of the `Db` API: point-lookup latency over
//! overlapping runs with and without Bloom filters, put throughput, and a
//! 100-key range scan.
//!
//! `cargo bench --bench db`. Each group measures for about a second; the
//! whole file runs in well under a minute. Layouts come from
//! `siftdb_bench::readamp` (random 16-byte keys, 100-byte values, split
//! evenly over `L` level-0 runs, no compaction), so latency here and read
//! counts in `read_amplification` describe the same databases.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use siftdb::Db;
use siftdb_bench::readamp::{bench_options, load_runs, Dataset, RunLayout};

/// Keys per layout: small enough to build six layouts in a few seconds,
/// big enough that the data (about 12 MB) is not a toy.
const KEYS: usize = 100_000;
const SEED: u64 = 0x5EED;

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30)
}

/// A database of `ds` in `files` runs, in its own temporary directory.
fn layout(ds: &Dataset, files: usize, bits_per_key: u32) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let runs = RunLayout::random(ds.present.len(), files, SEED);
    let db = load_runs(dir.path(), ds, &runs, bench_options(bits_per_key, None))
        .expect("load the layout");
    (dir, db)
}

/// `get` latency of present and absent keys over 1, 4 and 16 runs, with
/// no filters and with 10 bits/key.
fn get(c: &mut Criterion) {
    let ds = Dataset::synthetic(KEYS, 16, 100, SEED).expect("keys");
    let mut g = c.benchmark_group("get");
    for files in [1, 4, 16] {
        for bits in [0, 10] {
            let (_dir, db) = layout(&ds, files, bits);
            let filters = if bits == 0 {
                "no-filter"
            } else {
                "10-bits-per-key"
            };
            for (kind, keys) in [
                (
                    "present",
                    ds.present.iter().map(|(k, _)| k).collect::<Vec<_>>(),
                ),
                ("absent", ds.absent.iter().collect::<Vec<_>>()),
            ] {
                let id = BenchmarkId::new(format!("{kind}/{filters}"), format!("L={files}"));
                let mut i = 0usize;
                g.bench_function(id, |b| {
                    b.iter(|| {
                        // Stride through the keys: a different key, and a
                        // different run, on every call.
                        i = (i + 7919) % keys.len();
                        black_box(db.get(keys[i]).expect("get"))
                    })
                });
            }
        }
    }
    g.finish();
}

/// `put` throughput of 16-byte keys with 100-byte values into a fresh
/// database with default options (the WAL is written but not synced).
fn put(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let db = Db::open(dir.path()).expect("open");
    let value = [0xabu8; 100];
    let mut g = c.benchmark_group("put");
    g.throughput(Throughput::Elements(1));
    let mut n = 0u64;
    g.bench_function("16B-key-100B-value", |b| {
        b.iter(|| {
            n += 1;
            // Spread keys over the key space (a multiplicative hash of n).
            let key = n.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes();
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&key);
            k[8..].copy_from_slice(&n.to_be_bytes());
            db.put(k, value).expect("put")
        })
    });
    g.finish();
}

/// A 100-key forward range scan starting at a present key, over 1 and 4
/// runs (the iterator merges all runs).
fn range(c: &mut Criterion) {
    let ds = Dataset::synthetic(KEYS, 16, 100, SEED).expect("keys");
    let mut g = c.benchmark_group("range-scan-100");
    g.throughput(Throughput::Elements(100));
    for files in [1, 4] {
        let (_dir, db) = layout(&ds, files, 10);
        let mut i = 0usize;
        g.bench_function(BenchmarkId::from_parameter(format!("L={files}")), |b| {
            b.iter(|| {
                i = (i + 7919) % (ds.present.len() - 200);
                let start = &ds.present[i].0;
                let mut n = 0;
                for r in db.range(start.as_slice()..).take(100) {
                    black_box(r.expect("scan"));
                    n += 1;
                }
                assert_eq!(n, 100);
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = get, put, range
}
criterion_main!(benches);
