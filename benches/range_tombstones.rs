//! What live range tombstones cost a read: point lookups of present and
//! absent keys, and a 1,000-key scan, in a database of 200,000 flushed
//! keys holding 0, 10 or 1,000 flushed range tombstones (each over one
//! absent key, so every one stays live: its range overlaps the tables),
//! or 10 or 10,000 still in the memtable; and what a put and a range
//! deletion cost beside 10,000 range deletions in the memtable. The ratio to the database without any,
//! in one run, is the figure; DESIGN.md 3.7 and 13 record it.
//!
//! `scan_10_after_delete_range` is the scan cliff of DESIGN.md 3.7 at a
//! quarter of its scale: a 10-key scan from the first key of 250,000
//! flushed keys whose first 200,000 one range deletion hides (in the
//! memtable, or flushed into the version), against the same scan without
//! the deletion.
//!
//! `cargo bench --bench range_tombstones`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use siftdb::{CompactionStyle, Db};

const KEYS: u32 = 200_000;

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20)
}

/// Key `i`; the database holds the even ones.
fn key(i: u32) -> String {
    format!("k{i:07}")
}

/// A step that visits keys in a scattered order.
fn scatter(i: u32) -> u32 {
    i.wrapping_mul(2_654_435_761) % KEYS
}

/// 200,000 keys, flushed; then `flushed` range tombstones moved into the
/// version by a flush, then `in_memtable` left in the memtable. No
/// compaction runs, so every tombstone stays live.
fn load(dir: &std::path::Path, flushed: u32, in_memtable: u32) -> Db {
    let db = Db::builder(dir)
        .compaction_style(CompactionStyle::None)
        .open()
        .expect("open");
    for i in (0..KEYS).step_by(2) {
        db.put(key(i), "value of about thirty bytes....")
            .expect("put");
    }
    db.flush().expect("flush");
    let odd = |j: u32| (j * (KEYS / 2 / flushed.max(in_memtable).max(1))) * 2 + 1;
    for j in 0..flushed {
        db.delete_range(key(odd(j))..=key(odd(j)))
            .expect("delete_range");
    }
    db.flush().expect("flush");
    for j in 0..in_memtable {
        db.delete_range(key(odd(j))..=key(odd(j)))
            .expect("delete_range");
    }
    assert_eq!(
        db.stats().range_tombstones,
        u64::from(flushed + in_memtable)
    );
    db
}

fn reads(c: &mut Criterion) {
    let cases = [
        ("none", 0, 0),
        ("flushed-10", 10, 0),
        ("flushed-1000", 1000, 0),
        ("memtable-10", 0, 10),
        ("memtable-10000", 0, 10_000),
    ];
    let dbs: Vec<(&str, tempfile::TempDir, Db)> = cases
        .iter()
        .map(|&(name, flushed, mem)| {
            let dir = tempfile::tempdir().expect("tempdir");
            let db = load(dir.path(), flushed, mem);
            (name, dir, db)
        })
        .collect();
    let mut g = c.benchmark_group("get_present");
    for (name, _, db) in &dbs {
        let mut i = 0u32;
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                let k = key(scatter(i) & !1);
                black_box(db.get(k).expect("get").expect("present"))
            })
        });
    }
    g.finish();
    let mut g = c.benchmark_group("get_absent");
    for (name, _, db) in &dbs {
        let mut i = 0u32;
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                black_box(db.get(key(scatter(i) | 1)).expect("get"))
            })
        });
    }
    g.finish();
    let mut g = c.benchmark_group("scan_1000");
    for (name, _, db) in &dbs {
        let mut i = 0u32;
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                let from = key(scatter(i) % (KEYS - 2_000));
                black_box(db.range(from..).take(1000).count())
            })
        });
    }
    g.finish();
    // Writing into a memtable that already holds 10,000 range deletions:
    // a put, and one more range deletion at a scattered key (which the
    // memtable adds to its fragmented index). Runs last: it grows the
    // database the reads above measured.
    let (_, _, db) = dbs
        .iter()
        .find(|(name, _, _)| *name == "memtable-10000")
        .expect("the case exists");
    let mut g = c.benchmark_group("write_beside_10000_memtable_tombstones");
    let mut i = 0u32;
    g.bench_function("put", |b| {
        b.iter(|| {
            i = i.wrapping_add(1);
            db.put(key(scatter(i) & !1), "value of about thirty bytes....")
                .expect("put")
        })
    });
    g.bench_function("delete_range", |b| {
        b.iter(|| {
            i = i.wrapping_add(1);
            let k = key(scatter(i) | 1);
            db.delete_range(k.clone()..=k).expect("delete_range")
        })
    });
    g.finish();
}

/// Keys of the scan-cliff databases; the range deletion hides the first
/// [`CLIFF_DELETED`].
const CLIFF_KEYS: u32 = 250_000;
const CLIFF_DELETED: u32 = 200_000;

/// [`CLIFF_KEYS`] keys, flushed; then, if `delete`, one range deletion of
/// the first [`CLIFF_DELETED`], flushed into the version if `flush`. No
/// compaction runs, so the hidden versions stay in the tables.
fn cliff(dir: &std::path::Path, delete: bool, flush: bool) -> Db {
    let db = Db::builder(dir)
        .compaction_style(CompactionStyle::None)
        .open()
        .expect("open");
    for i in 0..CLIFF_KEYS {
        db.put(key(i), "value of about thirty bytes....")
            .expect("put");
    }
    db.flush().expect("flush");
    if delete {
        db.delete_range(key(0)..key(CLIFF_DELETED))
            .expect("delete_range");
    }
    if flush {
        db.flush().expect("flush");
    }
    db
}

/// A 10-key scan from the first key, forward and backward from the
/// deletion's end, with and without the range deletion over the first
/// 200,000 of 250,000 keys.
fn scan_after_delete_range(c: &mut Criterion) {
    let cases = [
        ("none", false, false),
        ("memtable", true, false),
        ("flushed", true, true),
    ];
    let mut g = c.benchmark_group("scan_10_after_delete_range");
    for (name, delete, flush) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = cliff(dir.path(), delete, flush);
        let first = if delete { CLIFF_DELETED } else { 0 };
        let want: Vec<String> = (first..first + 10).map(key).collect();
        let got: Vec<String> = db
            .iter()
            .keys()
            .take(10)
            .map(|k| String::from_utf8(k.expect("scan").to_vec()).expect("utf-8"))
            .collect();
        assert_eq!(got, want, "{name}");
        g.bench_function(BenchmarkId::new("forward", name), |b| {
            b.iter(|| black_box(db.iter().take(10).count()))
        });
        // Backward from just past the deletion: the first key lies inside
        // it, so the scan crosses all of it to the start and ends.
        let to = key(CLIFF_DELETED + 10);
        g.bench_function(BenchmarkId::new("backward", name), |b| {
            b.iter(|| black_box(db.range(..to.as_str()).rev().take(20).count()))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = reads, scan_after_delete_range
}
criterion_main!(benches);
