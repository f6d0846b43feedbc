//! The sketch of point lookups behind [`crate::Options::hot_keys`]: two
//! Count-Min sketches of one shape (lookups that found a value, lookups
//! that did not) and one [`TopK`] ranked by their sum, fed by every
//! [`crate::Db::get`] and [`crate::Snapshot::get`] with the key hash the
//! filters use (DESIGN.md 3.4).
//!
//! Windows: when the window's lookup count `N` reaches `window`, all
//! counters, both totals and the stored counts are halved, so `N` stays
//! below `window` (and the bound `ε·N` below `ε·window`), the first
//! halving comes after `window` lookups and each later one after about
//! `window/2` more, and a key's weight decays by half per halving. Old
//! heat fades without the cliff a reset would make (right after a reset
//! every key is cold and the top-K is empty).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::filter::KeyHash;
use crate::options::HotKeyOptions;

use super::count_min::{dimensions, CountMin};
use super::top_k::TopK;

/// One heavy key of [`HotKeys`], with its estimated lookups (decayed by the
/// window halvings). Each estimate never undercounts, and exceeds the true
/// count by at most [`HotKeys::error_bound`] with probability `1 − δ`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HotKey {
    /// The user key.
    pub key: Vec<u8>,
    /// Estimated lookups that found a value.
    pub found: u64,
    /// Estimated lookups that found none (absent or deleted).
    pub absent: u64,
}

impl HotKey {
    /// `found + absent`, the rank of the key.
    pub fn total(&self) -> u64 {
        self.found + self.absent
    }
}

/// The heaviest keys of the current window ([`crate::Db::hot_keys`]) or of
/// a saved one ([`super::hot_file::read`]).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let mut o = siftdb::Options::default();
/// o.hot_keys = Some(siftdb::HotKeyOptions::default());
/// let db = siftdb::Db::open_with(dir.path(), o)?;
/// db.put("a", "1")?;
/// for _ in 0..3 {
///     db.get("a")?;
///     db.get("missing")?;
/// }
/// let hot = db.hot_keys(10)?;
/// assert_eq!(hot.reads(), 6);
/// assert!(hot.keys.iter().any(|k| k.key == b"missing" && k.absent >= 3));
/// # Ok::<(), siftdb::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HotKeys {
    /// Heaviest first (by [`HotKey::total`], then key order).
    pub keys: Vec<HotKey>,
    /// Lookups in the window that found a value (`N_found`, decayed).
    pub found_reads: u64,
    /// Lookups in the window that found none (`N_absent`, decayed).
    pub absent_reads: u64,
    /// The sketch's `ε`.
    pub epsilon: f64,
    /// The sketch's `δ`.
    pub delta: f64,
    /// Counters per row, `⌈e/ε⌉`.
    pub width: u32,
    /// Rows, `⌈ln(1/δ)⌉`.
    pub depth: u32,
    /// The window: on `N` reaching it, every count and `N` are halved.
    pub window: u64,
    /// Windows completed (halvings applied) since the database opened.
    pub halvings: u64,
}

impl HotKeys {
    /// `N`, the window's lookups (found and absent, decayed).
    pub fn reads(&self) -> u64 {
        self.found_reads + self.absent_reads
    }

    /// `ε·N`: each of a key's `found` and `absent` estimates exceeds its
    /// true count by at most this with probability at least `1 − δ`
    /// (Cormode and Muthukrishnan 2005, Theorem 1; the sketch of found
    /// lookups has `N_found ≤ N` updates, that of absent ones `N_absent`),
    /// and their sum by at most it with probability at least `1 − 2δ`.
    pub fn error_bound(&self) -> f64 {
        self.epsilon * self.reads() as f64
    }
}

/// The live sketch of one open database.
#[derive(Debug)]
pub struct ReadSketch {
    options: HotKeyOptions,
    found: CountMin,
    absent: CountMin,
    top: TopK,
    /// The window's lookups: found in the high 32 bits, absent in the low
    /// (one `fetch_add` per lookup; each half stays below 2^31 because
    /// the sum is halved on reaching `window` ≤ 2^30).
    reads: AtomicU64,
    halvings: AtomicU64,
}

const FOUND_ONE: u64 = 1 << 32;

fn split(reads: u64) -> (u64, u64) {
    (reads >> 32, reads & 0xffff_ffff)
}

impl ReadSketch {
    /// A zeroed sketch. `None` if `options` fails
    /// [`HotKeyOptions::validate`].
    pub fn new(options: &HotKeyOptions) -> Option<ReadSketch> {
        options.validate().ok()?;
        let (w, d) = dimensions(options.epsilon, options.delta)?;
        Some(ReadSketch {
            options: options.clone(),
            found: CountMin::new(w, d),
            absent: CountMin::new(w, d),
            top: TopK::new(options.k),
            reads: AtomicU64::new(0),
            halvings: AtomicU64::new(0),
        })
    }

    /// Counts one lookup of `key` (whose [`crate::filter::hash_key`] is
    /// `hash`) that found a value or not. Costs `d` relaxed `fetch_add`s on
    /// the counters and one on the window's totals; only when the key may
    /// be among the heaviest (its count of this outcome at least half the
    /// top-K threshold, and at most 64 or a multiple of 16), `d` loads of
    /// the other sketch and the top-K lock.
    #[inline]
    pub fn record(&self, key: &[u8], hash: KeyHash, found: bool) {
        let (this, other, one) = if found {
            (&self.found, &self.absent, FOUND_ONE)
        } else {
            (&self.absent, &self.found, 1)
        };
        let e = u64::from(this.add(hash));
        // A sum at or above the threshold has one side at half of it; the
        // sampling of `TopK::wants` is applied to this side's count, which
        // rises by one per lookup of this outcome.
        if 2 * e >= self.top.threshold() && (e <= 64 || e.is_multiple_of(16)) {
            let total = e + u64::from(other.estimate(hash));
            if total >= self.top.threshold() {
                self.top.offer(key, hash, total, |h| self.total(h));
            }
        }
        let (f, a) = split(self.reads.fetch_add(one, Ordering::Relaxed) + one);
        // Exactly one lookup takes the total to `window`.
        if f + a == self.options.window {
            self.halve();
        }
    }

    fn total(&self, h: KeyHash) -> u64 {
        u64::from(self.found.estimate(h)) + u64::from(self.absent.estimate(h))
    }

    fn halve(&self) {
        let _ = self
            .reads
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                let (f, a) = split(v);
                Some(((f / 2) << 32) | (a / 2))
            });
        self.found.halve();
        self.absent.halve();
        self.top.halve();
        self.halvings.fetch_add(1, Ordering::Relaxed);
    }

    /// The `k` heaviest tracked keys (at most [`HotKeyOptions::k`]), each
    /// re-estimated from the sketches, heaviest first.
    pub fn hot_keys(&self, k: usize) -> HotKeys {
        let mut keys: Vec<HotKey> = self
            .top
            .members()
            .into_iter()
            .map(|(key, h, _)| HotKey {
                key,
                found: u64::from(self.found.estimate(h)),
                absent: u64::from(self.absent.estimate(h)),
            })
            .collect();
        keys.sort_by(|a, b| b.total().cmp(&a.total()).then_with(|| a.key.cmp(&b.key)));
        keys.truncate(k);
        let (found_reads, absent_reads) = split(self.reads.load(Ordering::Relaxed));
        HotKeys {
            keys,
            found_reads,
            absent_reads,
            epsilon: self.options.epsilon,
            delta: self.options.delta,
            width: self.found.width() as u32,
            depth: self.found.depth() as u32,
            window: self.options.window,
            halvings: self.halvings.load(Ordering::Relaxed),
        }
    }

    /// Heap bytes of the two sketches' counters.
    pub fn memory(&self) -> usize {
        self.found.memory() + self.absent.memory()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::filter::hash_key;

    /// A Zipf(`s`) sampler over ranks `0..n` by inverse CDF, driven by a
    /// xorshift64* generator (deterministic).
    struct Zipf {
        cdf: Vec<f64>,
        state: u64,
    }

    impl Zipf {
        fn new(n: usize, s: f64, seed: u64) -> Zipf {
            let mut cdf = Vec::with_capacity(n);
            let mut acc = 0.0;
            for r in 1..=n {
                acc += (r as f64).powf(-s);
                cdf.push(acc);
            }
            for c in &mut cdf {
                *c /= acc;
            }
            Zipf {
                cdf,
                state: seed | 1,
            }
        }

        fn next(&mut self) -> u32 {
            self.state ^= self.state >> 12;
            self.state ^= self.state << 25;
            self.state ^= self.state >> 27;
            let u =
                (self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64;
            self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1) as u32
        }
    }

    fn zipf_top10_in_hot_keys(reads: usize) {
        let opts = HotKeyOptions {
            window: 1 << 30,
            ..Default::default()
        };
        let sketch = ReadSketch::new(&opts).unwrap();
        let mut zipf = Zipf::new(1_000_000, 1.1, 42);
        let mut exact: HashMap<u32, u64> = HashMap::new();
        for _ in 0..reads {
            let r = zipf.next();
            let key = r.to_be_bytes();
            // Every 7th rank is an absent key, to exercise both sketches.
            sketch.record(&key, hash_key(&key), !r.is_multiple_of(7));
            *exact.entry(r).or_default() += 1;
        }
        let hot = sketch.hot_keys(100);
        assert_eq!(hot.keys.len(), 100);
        assert_eq!(hot.reads(), reads as u64);
        let mut truth: Vec<(u32, u64)> = exact.into_iter().collect();
        truth.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let bound = hot.error_bound();
        for (rank, count) in &truth[..10] {
            let k = hot
                .keys
                .iter()
                .find(|k| k.key == rank.to_be_bytes())
                .unwrap_or_else(|| panic!("true top-10 key {rank} ({count} reads) missing"));
            assert!(k.total() >= *count, "undercount of {rank}");
            assert!(
                (k.total() - count) as f64 <= bound,
                "{rank}: {} vs {count}",
                k.total()
            );
            if rank.is_multiple_of(7) {
                assert!(k.absent >= *count && k.found <= bound as u64);
            } else {
                assert!(k.found >= *count && k.absent <= bound as u64);
            }
        }
    }

    /// The issue's size: 10M reads over 1M keys (about 4 s at the test
    /// profile's opt-level 1 on 2 cores).
    #[test]
    fn zipf_10m_true_top10_in_hot_keys_100() {
        zipf_top10_in_hot_keys(10_000_000);
    }

    #[test]
    fn window_halves_counts_totals_and_the_top_k() {
        let opts = HotKeyOptions {
            epsilon: 0.01,
            delta: 0.01,
            k: 4,
            window: 1000,
        };
        let s = ReadSketch::new(&opts).unwrap();
        let (hot, cold) = (b"hot".as_slice(), b"cold".as_slice());
        for i in 0..999 {
            if i % 3 == 0 {
                s.record(cold, hash_key(cold), false);
            } else {
                s.record(hot, hash_key(hot), true);
            }
        }
        let before = s.hot_keys(4);
        assert_eq!(
            (before.found_reads, before.absent_reads, before.halvings),
            (666, 333, 0)
        );
        assert_eq!(before.keys[0].key, hot);
        assert!(before.keys[0].found >= 666 && before.keys[0].found <= 666 + 10);
        // The 1000th lookup closes the window: everything is halved.
        s.record(hot, hash_key(hot), true);
        let after = s.hot_keys(4);
        assert_eq!(
            (after.found_reads, after.absent_reads, after.halvings),
            (333, 166, 1)
        );
        assert!(after.keys[0].found >= 333 && after.keys[0].found <= 333 + 5);
        let c = after.keys.iter().find(|k| k.key == cold).unwrap();
        assert!(c.absent >= 166 && c.absent <= 166 + 5 && c.found <= 5);
        // Only cold lookups: N reaches 1000 again after 501 (halving to
        // 166 found, 333 absent), then 499 more; cold overtakes hot.
        for _ in 0..1000 {
            s.record(cold, hash_key(cold), false);
        }
        let third = s.hot_keys(4);
        assert_eq!(
            (third.found_reads, third.absent_reads, third.halvings),
            (166, 333 + 499, 2)
        );
        assert_eq!(third.keys[0].key, cold);
        assert!(third.keys[0].absent >= 832 && third.keys[0].absent <= 832 + 10);
        assert!(third.keys[1].found >= 333 / 2 && third.keys[1].found <= 333 / 2 + 10);
    }

    #[test]
    fn bad_options_give_no_sketch() {
        let bad = HotKeyOptions {
            epsilon: 0.0,
            ..Default::default()
        };
        assert!(ReadSketch::new(&bad).is_none());
        assert!(bad.validate().is_err());
    }
}
