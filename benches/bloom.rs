//! Criterion benchmarks of one Bloom filter probe on a 1,000,000-key
//! filter at 10 bits/key (k = 7, 1.2 MB: larger than the L2 cache, so a
//! probe pays cache misses as it would in a big SSTable), and of the key
//! hash a lookup computes once for all files.
//!
//! `cargo bench --bench bloom`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use siftdb::filter::{hash_key, BloomFilterPolicy, FilterPolicy, KeyHash};

const KEYS: u32 = 1_000_000;

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(30)
}

fn hashes(prefix: &str, n: u32) -> Vec<KeyHash> {
    (0..n)
        .map(|i| hash_key(format!("{prefix}{i:010}").as_bytes()))
        .collect()
}

fn probe(c: &mut Criterion) {
    let policy = BloomFilterPolicy::new(10);
    let present = hashes("present-", KEYS);
    let filter = policy.create_filter(&present);
    // Keys never added: nearly all stop at an unset bit before k probes.
    let absent = hashes("absent-", 1 << 16);
    let mut g = c.benchmark_group("bloom-probe-1M-keys-10-bits-per-key");
    for (name, keys) in [("present", &present), ("absent", &absent)] {
        let mut i = 0usize;
        g.bench_function(name, |b| {
            b.iter(|| {
                i = (i + 7919) % keys.len();
                black_box(policy.may_match(black_box(&filter), keys[i]))
            })
        });
    }
    g.finish();

    let key = *b"0123456789abcdef";
    c.bench_function("hash_key-16B", |b| b.iter(|| hash_key(black_box(&key))));
}

criterion_group! {
    name = benches;
    config = config();
    targets = probe
}
criterion_main!(benches);
