//! The heaviest keys of a stream summarised by a Count-Min sketch: at most
//! `k` candidates with their last estimates, under one mutex that an update
//! takes only when the key's estimate may enter the top `k`.
//!
//! This is the heap of Cormode and Muthukrishnan 2005 (section 5.1, "top-k
//! items"), kept as a map with a linear minimum search (k is small; the
//! search runs only when a new key enters a full set). A key's stored
//! count may lag its estimate (see [`TopK::wants`]); readers re-estimate
//! the members from the sketch, so the lag only affects which key is
//! evicted.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::filter::KeyHash;

/// Up to `k` candidate heavy keys.
///
/// ```
/// use siftdb::filter::hash_key;
/// use siftdb::inspect::sketch::top_k::TopK;
///
/// let top = TopK::new(2);
/// for (key, est) in [(&b"a"[..], 5), (b"b", 1), (b"c", 3)] {
///     top.offer(key, hash_key(key), est, |_| 0);
/// }
/// let mut keys: Vec<_> = top.members().into_iter().map(|(k, _, _)| k).collect();
/// keys.sort();
/// assert_eq!(keys, vec![b"a".to_vec(), b"c".to_vec()]);
/// ```
#[derive(Debug)]
pub struct TopK {
    k: usize,
    /// The smallest stored count once the set is full (0 before): a key
    /// estimated below it cannot enter. May lag low, which only costs a
    /// lock.
    threshold: AtomicU64,
    members: Mutex<HashMap<Vec<u8>, Slot>>,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    hash: KeyHash,
    count: u64,
}

impl TopK {
    /// An empty set keeping at most `k` keys (at least 1).
    pub fn new(k: usize) -> TopK {
        TopK {
            k: k.max(1),
            threshold: AtomicU64::new(0),
            members: Mutex::new(HashMap::with_capacity(k.max(1) + 1)),
        }
    }

    /// The most keys kept.
    pub fn capacity(&self) -> usize {
        self.k
    }

    /// The smallest stored count once the set is full, 0 before (read
    /// without the lock; may lag low).
    #[inline]
    pub fn threshold(&self) -> u64 {
        self.threshold.load(Ordering::Relaxed)
    }

    /// Whether a key estimated at `estimate` should be offered, with no
    /// lock: it must reach the threshold, and past 64 only every 16th
    /// count is offered (a hot key's count rises by one per lookup, so it
    /// still passes a multiple of 16 within 16 lookups; its stored count
    /// lags by at most that much).
    #[inline]
    pub fn wants(&self, estimate: u64) -> bool {
        estimate >= self.threshold.load(Ordering::Relaxed)
            && (estimate <= 64 || estimate.is_multiple_of(16))
    }

    /// Offers `key` (with its `hash`) at `estimate`. A member gets the new
    /// count; a new key enters a set that is not full, or replaces the
    /// member with the smallest count if it beats that member's fresh
    /// estimate `reestimate(hash)`.
    pub fn offer(
        &self,
        key: &[u8],
        hash: KeyHash,
        estimate: u64,
        reestimate: impl Fn(KeyHash) -> u64,
    ) {
        let mut m = self.members.lock();
        if let Some(s) = m.get_mut(key) {
            s.count = s.count.max(estimate);
            return;
        }
        if m.len() < self.k {
            m.insert(
                key.to_vec(),
                Slot {
                    hash,
                    count: estimate,
                },
            );
            if m.len() == self.k {
                self.threshold.store(min_count(&m), Ordering::Relaxed);
            }
            return;
        }
        let (min_key, min_slot) = match m.iter().min_by_key(|(_, s)| s.count) {
            Some((k, s)) => (k.clone(), *s),
            None => return,
        };
        let fresh = reestimate(min_slot.hash).max(min_slot.count);
        if estimate > fresh {
            m.remove(&min_key);
            m.insert(
                key.to_vec(),
                Slot {
                    hash,
                    count: estimate,
                },
            );
        } else if let Some(s) = m.get_mut(&min_key) {
            s.count = fresh;
        }
        self.threshold.store(min_count(&m), Ordering::Relaxed);
    }

    /// The members: key, hash and stored count, in no order.
    pub fn members(&self) -> Vec<(Vec<u8>, KeyHash, u64)> {
        self.members
            .lock()
            .iter()
            .map(|(k, s)| (k.clone(), s.hash, s.count))
            .collect()
    }

    /// Halves the stored counts and the threshold, with the sketch's
    /// window halving.
    pub fn halve(&self) {
        let mut m = self.members.lock();
        for s in m.values_mut() {
            s.count /= 2;
        }
        let t = if m.len() == self.k { min_count(&m) } else { 0 };
        self.threshold.store(t, Ordering::Relaxed);
    }
}

fn min_count(m: &HashMap<Vec<u8>, Slot>) -> u64 {
    m.values().map(|s| s.count).min().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::hash_key;

    #[test]
    fn evicts_the_smallest_only_for_a_larger_estimate() {
        let top = TopK::new(2);
        top.offer(b"a", hash_key(b"a"), 10, |_| 0);
        top.offer(b"b", hash_key(b"b"), 4, |_| 0);
        assert_eq!(top.threshold.load(Ordering::Relaxed), 4);
        assert!(!top.wants(3));
        // Not above b's fresh estimate (6): b stays, at 6.
        top.offer(b"c", hash_key(b"c"), 5, |_| 6);
        let mut m = top.members();
        m.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            m.iter()
                .map(|(k, _, c)| (k.as_slice(), *c))
                .collect::<Vec<_>>(),
            vec![(&b"a"[..], 10), (&b"b"[..], 6)]
        );
        top.offer(b"c", hash_key(b"c"), 7, |_| 6);
        let mut keys: Vec<_> = top.members().into_iter().map(|(k, _, _)| k).collect();
        keys.sort();
        assert_eq!(keys, vec![b"a".to_vec(), b"c".to_vec()]);
        top.halve();
        assert_eq!(top.threshold.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn wants_samples_past_64() {
        let top = TopK::new(1);
        assert!(top.wants(1) && top.wants(64) && top.wants(80));
        assert!(!top.wants(65) && !top.wants(81));
    }
}
