//! What returning [`siftdb::Slice`] saves: point lookups and scans of
//! values from 100 B to 1 MiB in flushed tables, each measured as the
//! engine returns them (`get` → `Slice`, which shares the table's map for
//! values of at least `Slice::SHARE_MIN` bytes) and with the copy into a
//! `Vec` that the API made before `Slice` (`copied`). The ratio of the two
//! in one run is the figure; DESIGN.md 3.5 records it.
//!
//! `cargo bench --bench value_sharing`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use siftdb::Db;

/// Value sizes, and how many keys of each (about 16 MiB per size).
const SIZES: [(usize, u32); 4] = [
    (100, 100_000),
    (1 << 10, 16_384),
    (64 << 10, 256),
    (1 << 20, 16),
];

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20)
}

fn key(i: u32) -> [u8; 8] {
    // Spread lookups over the whole table.
    (i.wrapping_mul(2_654_435_761))
        .to_be_bytes()
        .repeat(2)
        .try_into()
        .unwrap()
}

fn load(dir: &std::path::Path, size: usize, n: u32) -> Db {
    let db = Db::builder(dir).open().expect("open");
    let value = vec![0x5a; size];
    for i in 0..n {
        db.put(key(i), &value).expect("put");
    }
    db.flush().expect("flush");
    db
}

fn lookups(c: &mut Criterion) {
    for (size, n) in SIZES {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = load(dir.path(), size, n);
        let mut g = c.benchmark_group("get");
        g.throughput(Throughput::Bytes(size as u64));
        let mut i = 0u32;
        g.bench_function(BenchmarkId::new("slice", size), |b| {
            b.iter(|| {
                i = (i + 1) % n;
                black_box(db.get(key(i)).expect("get").expect("present"))
            })
        });
        g.bench_function(BenchmarkId::new("copied", size), |b| {
            b.iter(|| {
                i = (i + 1) % n;
                black_box(db.get(key(i)).expect("get").expect("present").to_vec())
            })
        });
        g.finish();

        let mut g = c.benchmark_group("scan");
        g.throughput(Throughput::Bytes(size as u64 * u64::from(n)));
        g.bench_function(BenchmarkId::new("slice", size), |b| {
            b.iter(|| {
                db.iter()
                    .values()
                    .map(|v| black_box(v.expect("scan")).len())
                    .sum::<usize>()
            })
        });
        g.bench_function(BenchmarkId::new("copied", size), |b| {
            b.iter(|| {
                db.iter()
                    .values()
                    .map(|v| black_box(v.expect("scan").to_vec()).len())
                    .sum::<usize>()
            })
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = config();
    targets = lookups
}
criterion_main!(benches);
