//! The Count-Min sketch (Cormode and Muthukrishnan, "An improved data
//! stream summary: the count-min sketch and its applications", J.
//! Algorithms 55(1), 2005): `d` rows of `w` counters; an update adds 1 to
//! one counter per row, a query takes the minimum of the key's `d`
//! counters. The estimate never undercounts, and with `w = ⌈e/ε⌉` and
//! `d = ⌈ln(1/δ)⌉` it exceeds the true count by at most `ε·N` (`N` the
//! number of updates) with probability at least `1 − δ` (their Theorem 1).
//!
//! The `d` column indexes come from one 128-bit [`KeyHash`] by double
//! hashing (Kirsch and Mitzenmacher, "Less hashing, same performance",
//! 2006): `g_i = h1 + i·h2`, reduced to `[0, w)` by a multiply-shift, so
//! the read path's one hash of the key serves the filters and the sketch.
//!
//! Counters are relaxed [`AtomicU32`]s: any number of threads update
//! through `&self`, and no update is lost (each is one `fetch_add`).
//! Conservative update (raising only the minimal counters) is not used: it
//! needs a read-then-write per row, and two racing updates of one key
//! could then count once, an undercount.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::filter::KeyHash;

/// A Count-Min sketch of `depth` rows by `width` counters of 32 bits.
///
/// ```
/// use siftdb::filter::hash_key;
/// use siftdb::inspect::sketch::count_min::CountMin;
///
/// let cm = CountMin::with_error(0.01, 0.01).unwrap();
/// assert_eq!((cm.width(), cm.depth()), (272, 5));
/// for _ in 0..3 {
///     cm.add(hash_key(b"apple"));
/// }
/// assert!(cm.estimate(hash_key(b"apple")) >= 3);
/// ```
pub struct CountMin {
    width: usize,
    depth: usize,
    /// Row-major: row `i` is `cells[i * width..(i + 1) * width]`.
    cells: Box<[AtomicU32]>,
}

impl std::fmt::Debug for CountMin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountMin")
            .field("width", &self.width)
            .field("depth", &self.depth)
            .finish()
    }
}

/// The sketch's shape for error `epsilon` with failure probability
/// `delta`: `(w, d) = (⌈e/ε⌉, ⌈ln(1/δ)⌉)` (Cormode and Muthukrishnan 2005,
/// section 3). `None` unless `0 < epsilon < 1`, `0 < delta < 1` and `w` is
/// at most 2^24 counters.
///
/// ```
/// use siftdb::inspect::sketch::count_min::dimensions;
/// assert_eq!(dimensions(0.001, 0.01), Some((2719, 5)));
/// ```
pub fn dimensions(epsilon: f64, delta: f64) -> Option<(usize, usize)> {
    if !(epsilon > 0.0 && epsilon < 1.0 && delta > 0.0 && delta < 1.0) {
        return None;
    }
    let w = (std::f64::consts::E / epsilon).ceil();
    let d = (1.0 / delta).ln().ceil().max(1.0);
    (w <= (1u64 << 24) as f64 && d <= 64.0).then_some((w as usize, d as usize))
}

impl CountMin {
    /// A zeroed sketch of `depth` rows by `width` counters (each at least 1;
    /// a zero is raised to 1).
    pub fn new(width: usize, depth: usize) -> CountMin {
        let (width, depth) = (width.max(1), depth.max(1));
        CountMin {
            width,
            depth,
            cells: (0..width * depth).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// A zeroed sketch shaped by [`dimensions`]; `None` for parameters it
    /// refuses.
    pub fn with_error(epsilon: f64, delta: f64) -> Option<CountMin> {
        dimensions(epsilon, delta).map(|(w, d)| CountMin::new(w, d))
    }

    /// Counters per row (`w`).
    pub fn width(&self) -> usize {
        self.width
    }

    /// Rows (`d`).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The cell of `hash` in row `row`: `g_row = h1 + row·h2` (h2 forced
    /// odd), reduced to the row by `⌊g·w / 2^64⌋` (Lemire 2019).
    #[inline]
    fn cell(&self, hash: KeyHash, row: usize) -> usize {
        let g = hash
            .low()
            .wrapping_add((row as u64).wrapping_mul(hash.high() | 1));
        row * self.width + ((g as u128 * self.width as u128) >> 64) as usize
    }

    /// Counts one occurrence of the key with `hash` and returns its
    /// estimate including it (the minimum over rows of each counter's new
    /// value). Counters wrap past 2^32 − 1; callers keep the total below
    /// that ([`crate::options::HotKeyOptions::window`]).
    #[inline]
    pub fn add(&self, hash: KeyHash) -> u32 {
        // Plain loads first, which the processor overlaps, so the cache
        // misses of the `d` rows are taken together; each locked
        // `fetch_add` below is a full barrier and would otherwise wait for
        // its own miss in turn.
        let mut touch = 0u32;
        for row in 0..self.depth {
            touch |= self.cells[self.cell(hash, row)].load(Ordering::Relaxed);
        }
        std::hint::black_box(touch);
        let mut min = u32::MAX;
        for row in 0..self.depth {
            let old = self.cells[self.cell(hash, row)].fetch_add(1, Ordering::Relaxed);
            min = min.min(old.wrapping_add(1));
        }
        min
    }

    /// The estimated count of the key with `hash`: never below its true
    /// count, above it by at most `ε·N` with probability `1 − δ`.
    #[inline]
    pub fn estimate(&self, hash: KeyHash) -> u32 {
        (0..self.depth)
            .map(|row| self.cells[self.cell(hash, row)].load(Ordering::Relaxed))
            .min()
            .unwrap_or(0)
    }

    /// Halves every counter (rounding down), each with one atomic
    /// read-modify-write, so concurrent updates are not lost. A counter
    /// holding keys with counts `a + b` becomes `⌊(a + b)/2⌋ ≥ ⌊a/2⌋ +
    /// ⌊b/2⌋`: estimates still never undercount the halved counts.
    pub fn halve(&self) {
        for c in self.cells.iter() {
            let _ = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(v / 2));
        }
    }

    /// Heap bytes of the counters.
    pub fn memory(&self) -> usize {
        self.cells.len() * std::mem::size_of::<AtomicU32>()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;
    use crate::filter::hash_key;

    #[test]
    fn default_parameters_give_the_seed_shape() {
        assert_eq!(dimensions(0.001, 0.01), Some((2719, 5)));
        assert_eq!(dimensions(0.01, 0.001), Some((272, 7)));
        assert_eq!(dimensions(0.0, 0.01), None);
        assert_eq!(dimensions(0.01, 1.0), None);
        assert_eq!(dimensions(1e-9, 0.01), None, "over 2^24 columns");
    }

    #[test]
    fn halving_keeps_estimates_at_or_above_halved_counts() {
        let cm = CountMin::new(16, 3);
        let mut exact = HashMap::new();
        for i in 0..1000u32 {
            let k = i % 37;
            cm.add(hash_key(&k.to_le_bytes()));
            *exact.entry(k).or_insert(0u32) += 1;
        }
        cm.halve();
        for (k, n) in exact {
            assert!(cm.estimate(hash_key(&k.to_le_bytes())) >= n / 2, "{k}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Against an exact count: never an undercount, and the overcount
        /// exceeds ε·N in at most a δ fraction of the keys queried (with
        /// slack for sampling: the bound is per query, in expectation).
        #[test]
        fn never_undercounts_and_overcounts_within_epsilon_n(
            stream in proptest::collection::vec(0u32..2_000, 1..6_000),
        ) {
            // ε = 0.02, δ = 0.05: 136 × 3, small enough to collide often.
            let (eps, delta) = (0.02, 0.05);
            let cm = CountMin::with_error(eps, delta).unwrap();
            prop_assert_eq!((cm.width(), cm.depth()), (136, 3));
            let mut exact: HashMap<u32, u32> = HashMap::new();
            for k in &stream {
                cm.add(hash_key(&k.to_le_bytes()));
                *exact.entry(*k).or_default() += 1;
            }
            let n = stream.len() as f64;
            let mut over = 0usize;
            for k in 0u32..2_000 {
                let truth = exact.get(&k).copied().unwrap_or(0);
                let est = cm.estimate(hash_key(&k.to_le_bytes()));
                prop_assert!(est >= truth, "key {} estimated {} < {}", k, est, truth);
                if f64::from(est - truth) > eps * n {
                    over += 1;
                }
            }
            // At most δ of 2,000 queries in expectation (100); allow 1.5×.
            prop_assert!(over <= 150, "{} of 2000 queries over ε·N", over);
        }
    }
}
