//! The sketch of point lookups behind [`crate::Options::hot_keys`]: two
//! Count-Min sketches of one shape (lookups that found a value, lookups
//! that did not) and one [`TopK`] ranked by their sum, fed by every
//! [`crate::Db::get`] and [`crate::Snapshot::get`] with the key hash the
//! filters use (DESIGN.md 3.4).
//!
//! Windows: every `window` lookups all counters, totals and stored counts
//! are halved, so a key's weight decays by half per window and old heat
//! fades without the cliff a reset would make (right after a reset every
//! key is cold and the top-K is empty).

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
    /// Lookups per window (after each, everything is halved).
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
    found_n: AtomicU64,
    absent_n: AtomicU64,
    /// Lookups since open, for the window boundary.
    reads: AtomicU64,
    halvings: AtomicU64,
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
            found_n: AtomicU64::new(0),
            absent_n: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            halvings: AtomicU64::new(0),
        })
    }

    /// Counts one lookup of `key` (whose [`crate::filter::hash_key`] is
    /// `hash`) that found a value or not. Costs `d` relaxed `fetch_add`s,
    /// two more on totals, and, only when the key may be among the
    /// heaviest, `d` loads and the top-K lock.
    #[inline]
    pub fn record(&self, key: &[u8], hash: KeyHash, found: bool) {
        let (this, other, n) = if found {
            (&self.found, &self.absent, &self.found_n)
        } else {
            (&self.absent, &self.found, &self.absent_n)
        };
        let e = u64::from(this.add(hash));
        n.fetch_add(1, Ordering::Relaxed);
        // A sum at or above the threshold has one side at half of it.
        if 2 * e >= self.top.threshold() {
            let total = e + u64::from(other.estimate(hash));
            if self.top.wants(total) {
                self.top.offer(key, hash, total, |h| self.total(h));
            }
        }
        let r = self.reads.fetch_add(1, Ordering::Relaxed) + 1;
        if r.is_multiple_of(self.options.window) {
            self.halve();
        }
    }

    fn total(&self, h: KeyHash) -> u64 {
        u64::from(self.found.estimate(h)) + u64::from(self.absent.estimate(h))
    }

    fn halve(&self) {
        self.found.halve();
        self.absent.halve();
        for n in [&self.found_n, &self.absent_n] {
            let _ = n.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(v / 2));
        }
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
        HotKeys {
            keys,
            found_reads: self.found_n.load(Ordering::Relaxed),
            absent_reads: self.absent_n.load(Ordering::Relaxed),
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
