//! Timing primitives for filter probes, shared by `kvctl bench filters`
//! and the criterion benches (`benches/common` re-exports them): synthetic
//! probe keys, filter copies far larger than the caches, an `lfence`
//! between probes, a random cycle for the dependent-load baseline, and
//! rounds that time several contenders interleaved.
//!
//! On a shared machine the memory latency drifts by tens of percent within
//! a minute, so two medians taken minutes apart do not give a reliable
//! ratio. [`interleaved`] runs one batch of every contender per round, so
//! that each round sees all of them under the same conditions; take the
//! [`median`] over rounds of each, and the [`ratio_median`] of the
//! per-round ratios.

use std::hint::black_box;
use std::time::Instant;

use siftdb::filter::KeyHash;

/// MurmurHash3's 64-bit finalizer: a bijection with full avalanche.
pub fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// A fresh random key hash for probe `i`, plus an independent word for
/// choosing a copy ([`Copies::get`]). Making one costs a few ns, which
/// every probe figure built on it includes.
pub fn synthetic(i: u64) -> (KeyHash, u64) {
    let lo = fmix64(i ^ 0x5851_f42d_4c95_7f2d);
    let hi = fmix64(i.wrapping_add(0x1405_7b7e_f767_814f));
    let pick = fmix64(i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    (KeyHash((u128::from(hi) << 64) | u128::from(lo)), pick)
}

/// Waits until every earlier instruction, loads included, has finished
/// before any later one starts (`lfence`), so probes cannot overlap their
/// misses. A memory fence would not do: x86-64 compiles it to a locked
/// instruction, which later loads may pass speculatively. Other
/// architectures get a sequentially consistent fence, which is weaker.
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

/// Where a filter starts modulo 64 so that its byte 8 (the first block of
/// a blocked Bloom filter, after its 8-byte header) sits on a cache-line
/// boundary, as the blocked Bloom policy's placement asks.
pub const ALIGNED: usize = 56;

/// Copies of one filter in one heap allocation (with 4 KiB pages, as the
/// development VM grants no transparent huge pages even under
/// `MADV_HUGEPAGE`), each starting at a chosen residue modulo 64.
#[derive(Debug, Default)]
pub struct Copies {
    region: Vec<u8>,
    starts: Vec<usize>,
    len: usize,
}

impl Copies {
    /// Enough copies of `filter` to fill `total` bytes (at least one), each
    /// starting at `residue` (below 64) modulo 64.
    pub fn new(filter: &[u8], total: usize, residue: usize) -> Self {
        let mut c = Copies::default();
        c.refill(filter, total, residue);
        c
    }

    /// Replaces the copies with copies of `filter`, as [`Copies::new`]
    /// does, reusing the allocation (so a sweep does not fault in fresh
    /// pages at every setting).
    pub fn refill(&mut self, filter: &[u8], total: usize, residue: usize) {
        let len = filter.len().max(1);
        let count = total.div_ceil(len).max(1);
        let stride = len.div_ceil(64) * 64;
        self.region.clear();
        self.region.resize(count * stride + 64, 0);
        let first = (64 + residue % 64 - self.region.as_ptr() as usize % 64) % 64;
        self.starts = (0..count).map(|i| first + i * stride).collect();
        for &at in &self.starts {
            self.region[at..at + filter.len()].copy_from_slice(filter);
        }
        self.len = filter.len();
    }

    /// The copy `pick` (a uniform random word) selects.
    pub fn get(&self, pick: u64) -> &[u8] {
        let i = ((u128::from(pick) * self.starts.len() as u128) >> 64) as usize;
        let at = self.starts[i];
        &self.region[at..at + self.len]
    }

    /// The number of copies.
    pub fn count(&self) -> usize {
        self.starts.len()
    }

    /// Bytes of filter held in all copies (`count × filter length`).
    pub fn filter_bytes(&self) -> usize {
        self.starts.len() * self.len
    }
}

/// A random cyclic permutation of `0..n` (Sattolo's algorithm), so that
/// following `next[i]` from any start visits every slot once: each step
/// of the chase is one dependent random load.
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

/// One contender of [`interleaved`]: runs one batch of operations from the
/// given counter and returns a checksum (so the work cannot be optimised
/// away).
pub type Batch<'a> = Box<dyn FnMut(u64) -> u64 + 'a>;

/// Times `rounds` rounds; each round runs one batch of every contender in
/// turn, each batch being `ops` operations. Returns the ns per operation
/// of each contender in each round. The counter handed to a batch starts
/// at 2^40 and grows by `ops` per batch, so no two batches probe the same
/// synthetic keys.
pub fn interleaved(
    contenders: &mut [(&'static str, Batch<'_>)],
    rounds: usize,
    ops: u64,
) -> Vec<Vec<f64>> {
    let mut times = vec![Vec::with_capacity(rounds); contenders.len()];
    let mut counter = 1u64 << 40;
    let per_op = ops.max(1) as f64;
    for _ in 0..rounds {
        for ((_, run), t) in contenders.iter_mut().zip(&mut times) {
            let started = Instant::now();
            black_box(run(counter));
            t.push(started.elapsed().as_nanos() as f64 / per_op);
            counter += ops;
        }
    }
    times
}

/// The median of `v` (the upper middle value for an even count; NaN for
/// none).
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The median over rounds of `a[i] / b[i]`.
pub fn ratio_median(a: &[f64], b: &[f64]) -> f64 {
    median(a.iter().zip(b).map(|(x, y)| x / y).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_aligned_and_cover_the_total() {
        let filter: Vec<u8> = (0..100u8).collect();
        for residue in [0, 56] {
            let c = Copies::new(&filter, 1000, residue);
            // 1000 / 100 = 10 copies, each 100 bytes, 128 apart.
            assert_eq!(c.count(), 10);
            assert_eq!(c.filter_bytes(), 1000);
            for pick in [0, u64::MAX / 3, u64::MAX] {
                let f = c.get(pick);
                assert_eq!(f, &filter[..]);
                assert_eq!(f.as_ptr() as usize % 64, residue);
            }
        }
        // At least one copy, however small the total.
        let mut c = Copies::new(&filter, 0, 0);
        assert_eq!(c.count(), 1);
        // Refilled with another filter, in the same allocation.
        c.refill(&[7; 300], 900, 56);
        assert_eq!((c.count(), c.filter_bytes()), (3, 900));
        assert_eq!(c.get(u64::MAX), &[7; 300][..]);
        assert_eq!(c.get(0).as_ptr() as usize % 64, 56);
    }

    #[test]
    fn random_cycle_visits_every_slot_once() {
        let next = random_cycle(1000);
        let mut seen = vec![false; 1000];
        let mut at = 0usize;
        for _ in 0..1000 {
            assert!(!seen[at], "slot {at} visited twice");
            seen[at] = true;
            at = next[at] as usize;
        }
        assert_eq!(at, 0, "back at the start after 1000 steps");
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn medians_and_ratios() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
        assert!(median(Vec::new()).is_nan());
        // Per-round ratios 2, 4, 3: the median is 3, not 9/4 (the ratio of
        // the medians).
        assert_eq!(ratio_median(&[2.0, 8.0, 9.0], &[1.0, 2.0, 3.0]), 3.0);
    }

    #[test]
    fn interleaved_runs_every_contender_every_round() {
        let calls = std::cell::RefCell::new(Vec::new());
        let mut contenders: Vec<(&'static str, Batch<'_>)> = vec![
            (
                "a",
                Box::new(|c| {
                    calls.borrow_mut().push(('a', c));
                    c
                }),
            ),
            (
                "b",
                Box::new(|c| {
                    calls.borrow_mut().push(('b', c));
                    c
                }),
            ),
        ];
        let times = interleaved(&mut contenders, 3, 10);
        assert_eq!(times.len(), 2);
        assert!(times.iter().all(|t| t.len() == 3));
        let base = 1u64 << 40;
        let want: Vec<(char, u64)> = (0..6)
            .map(|i| (if i % 2 == 0 { 'a' } else { 'b' }, base + 10 * i))
            .collect();
        drop(contenders);
        assert_eq!(calls.into_inner(), want);
    }

    #[test]
    fn synthetic_keys_differ() {
        let (a, pa) = synthetic(1);
        let (b, pb) = synthetic(2);
        assert_ne!(a, b);
        assert_ne!(pa, pb);
        assert_eq!(synthetic(1), (a, pa));
    }
}
