//! Helpers shared by the filter benchmarks: synthetic probe keys, filter
//! copies far larger than the caches, a random-load baseline, and rounds
//! that time several contenders interleaved.

#![allow(dead_code, reason = "each bench uses a different subset")]

use std::hint::black_box;
use std::time::Instant;

use siftdb::filter::{hash_key, FilterPolicy, KeyHash};

/// Total size of the filter copies and of the random-load array.
pub const BIG_BYTES: usize = 256 << 20;
/// Operations per contender per round.
pub const PAIRED_BATCH: u64 = 50_000;

/// MurmurHash3's 64-bit finalizer.
pub fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// A fresh random key hash for probe `i`, plus an independent word for
/// choosing a copy.
pub fn synthetic(i: u64) -> (KeyHash, u64) {
    let lo = fmix64(i ^ 0x5851_f42d_4c95_7f2d);
    let hi = fmix64(i.wrapping_add(0x1405_7b7e_f767_814f));
    let pick = fmix64(i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    (KeyHash((u128::from(hi) << 64) | u128::from(lo)), pick)
}

pub fn key_hashes(prefix: &str, n: u32) -> Vec<KeyHash> {
    (0..n)
        .map(|i| hash_key(format!("{prefix}{i:010}").as_bytes()))
        .collect()
}

/// Waits until every earlier instruction, loads included, has finished
/// before any later one starts (`lfence`), so probes cannot overlap their
/// misses. A memory fence would not do: x86-64 compiles it to a locked
/// instruction, which later loads may pass speculatively.
pub fn serialize() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `lfence` touches no memory and has no preconditions; it only
    // needs SSE2, which is part of the x86-64 baseline every such CPU has.
    unsafe {
        std::arch::x86_64::_mm_lfence()
    };
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// Where a filter starts modulo 64 so that byte 8 (the first block of a
/// blocked Bloom filter) sits on a cache-line boundary.
pub const ALIGNED: usize = 56;

/// Copies of one filter in one heap allocation (4 KiB pages: the
/// development VM grants no transparent huge pages even under
/// `MADV_HUGEPAGE`), each starting at `residue` modulo 64.
pub struct Copies {
    region: Vec<u8>,
    starts: Vec<usize>,
    len: usize,
}

impl Copies {
    /// Enough copies to fill `total` bytes (at least one).
    pub fn new(filter: &[u8], total: usize, residue: usize) -> Self {
        let count = total.div_ceil(filter.len()).max(1);
        let stride = filter.len().div_ceil(64) * 64;
        let mut region = vec![0u8; count * stride + 64];
        let first = (64 + residue - region.as_ptr() as usize % 64) % 64;
        let starts: Vec<usize> = (0..count).map(|i| first + i * stride).collect();
        for &at in &starts {
            region[at..at + filter.len()].copy_from_slice(filter);
        }
        Copies {
            region,
            starts,
            len: filter.len(),
        }
    }

    /// The copy `pick` (a uniform random word) selects.
    pub fn get(&self, pick: u64) -> &[u8] {
        let i = ((u128::from(pick) * self.starts.len() as u128) >> 64) as usize;
        let at = self.starts[i];
        &self.region[at..at + self.len]
    }
}

/// One contender of the paired rounds: runs `PAIRED_BATCH` operations
/// from the given counter and returns a checksum.
pub type Batch<'a> = Box<dyn FnMut(u64) -> u64 + 'a>;

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

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A random cyclic permutation of `0..n` (Sattolo's algorithm), so that
/// following `next[i]` from any start visits every slot once.
pub fn random_cycle(n: usize) -> Vec<u64> {
    let mut next: Vec<u64> = (0..n as u64).collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for i in (1..n).rev() {
        state = fmix64(state.wrapping_add(0x9e37_79b9_7f4a_7c15));
        let j = ((u128::from(state) * i as u128) >> 64) as usize; // 0..i
        next.swap(i, j);
    }
    next
}

/// Times `rounds` rounds; each round runs one batch of every contender in
/// turn. Returns the ns per operation of each contender in each round.
pub fn interleaved(contenders: &mut [(&'static str, Batch<'_>)], rounds: usize) -> Vec<Vec<f64>> {
    let mut times = vec![Vec::with_capacity(rounds); contenders.len()];
    let mut counter = 1u64 << 40;
    for _ in 0..rounds {
        for ((_, run), t) in contenders.iter_mut().zip(&mut times) {
            let started = Instant::now();
            black_box(run(counter));
            t.push(started.elapsed().as_nanos() as f64 / PAIRED_BATCH as f64);
            counter += PAIRED_BATCH;
        }
    }
    times
}

/// The median over rounds of `a[i] / b[i]`.
pub fn ratio_median(a: &[f64], b: &[f64]) -> f64 {
    median(a.iter().zip(b).map(|(x, y)| x / y).collect())
}
