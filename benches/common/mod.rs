//! Helpers shared by the filter benchmarks: synthetic probe keys, filter
//! copies far larger than the caches, a random-load baseline, and rounds
//! that time several contenders interleaved.

#![allow(dead_code, reason = "each bench uses a different subset")]

use siftdb::filter::{hash_key, FilterPolicy, KeyHash};
use siftdb_bench::filters::timing;

// The primitives `kvctl bench filters` uses too, from `siftdb-bench`.
#[allow(
    unused_imports,
    reason = "static_filter_choice uses it, filters does not"
)]
pub use timing::fmix64;
pub use timing::{
    median, random_cycle, ratio_median, serialize, synthetic, Batch, Copies, ALIGNED,
};

/// The criterion settings of the filter benches: short runs, few samples
/// (the interleaved rounds carry the ratios).
pub fn config() -> criterion::Criterion {
    criterion::Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_millis(1500))
        .sample_size(10)
        .without_plots()
}

/// Total size of the filter copies and of the random-load array.
pub const BIG_BYTES: usize = 256 << 20;
/// Operations per contender per round.
pub const PAIRED_BATCH: u64 = 50_000;

pub fn key_hashes(prefix: &str, n: u32) -> Vec<KeyHash> {
    (0..n)
        .map(|i| hash_key(format!("{prefix}{i:010}").as_bytes()))
        .collect()
}

pub fn probe_batch<'a, P: FilterPolicy>(
    policy: &'a P,
    copies: &'a Copies,
    serial: bool,
) -> Batch<'a> {
    Box::new(move |start| {
        let mut hits = 0u64;
        for i in start..start + PAIRED_BATCH {
            let (h, p) = synthetic(i);
            hits += u64::from(policy.may_match(copies.get(p), h));
            if serial {
                serialize();
            }
        }
        hits
    })
}

/// Like [`probe_batch`], but probing keys the filter was built from
/// (`present`, read in order, so the key array streams from memory), each
/// in a random copy.
pub fn present_batch<'a, P: FilterPolicy>(
    policy: &'a P,
    copies: &'a Copies,
    present: &'a [KeyHash],
    serial: bool,
) -> Batch<'a> {
    Box::new(move |start| {
        let mut hits = 0u64;
        for i in start..start + PAIRED_BATCH {
            let (_, p) = synthetic(i);
            let h = present[i as usize % present.len()];
            hits += u64::from(policy.may_match(copies.get(p), h));
            if serial {
                serialize();
            }
        }
        assert_eq!(hits, PAIRED_BATCH, "a false negative");
        hits
    })
}

/// The random-load array: `next[i]` is the successor of `i` on one random
/// cycle through all 2^25 words (256 MiB).
pub struct Loads {
    pub next: Vec<u64>,
}

impl Loads {
    pub fn new() -> Self {
        Loads {
            next: random_cycle(BIG_BYTES / 8),
        }
    }

    pub fn index(&self, p: u64) -> usize {
        ((u128::from(p) * self.next.len() as u128) >> 64) as usize
    }

    pub fn batches(&self) -> Vec<(&'static str, Batch<'_>)> {
        let mut at = 0u64;
        vec![
            (
                "load_dependent",
                Box::new(move |_| {
                    for _ in 0..PAIRED_BATCH {
                        at = self.next[at as usize];
                    }
                    at
                }),
            ),
            (
                "load_independent",
                Box::new(move |start| {
                    let mut sum = 0u64;
                    for i in start..start + PAIRED_BATCH {
                        sum = sum.wrapping_add(self.next[self.index(synthetic(i).1)]);
                    }
                    sum
                }),
            ),
            (
                "load_serial",
                Box::new(move |start| {
                    let mut sum = 0u64;
                    for i in start..start + PAIRED_BATCH {
                        sum = sum.wrapping_add(self.next[self.index(synthetic(i).1)]);
                        serialize();
                    }
                    sum
                }),
            ),
        ]
    }
}

/// Times `rounds` rounds of [`PAIRED_BATCH`] operations per contender
/// ([`siftdb_bench::filters::timing::interleaved`]). Returns the ns per
/// operation of each contender in each round.
pub fn interleaved(contenders: &mut [(&'static str, Batch<'_>)], rounds: usize) -> Vec<Vec<f64>> {
    timing::interleaved(contenders, rounds, PAIRED_BATCH)
}
