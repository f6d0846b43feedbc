//! [`MemTable`]: the sorted in-memory buffer that takes every write before
//! it reaches an SSTable.
//!
//! A lock-free skiplist (crossbeam-skiplist) keyed by [`InternalKey`], so
//! several versions of one user key sit side by side, newest first, and
//! readers never block the writer. A memtable is *active* while it takes
//! writes and *immutable* once frozen for flushing; both are read the same
//! way.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_skiplist::SkipMap;

use crate::key::{InternalKey, SequenceNumber, ValueType};

/// Bytes charged per entry beyond its key and value, approximating the
/// skiplist node and the two `Vec` headers.
const ENTRY_OVERHEAD: usize = 64;

/// A sorted map from internal key to value, plus the number of the WAL
/// holding the same writes.
#[derive(Debug)]
pub struct MemTable {
    map: SkipMap<InternalKey, Vec<u8>>,
    approximate_size: AtomicUsize,
    user_bytes: AtomicU64,
    wal_number: u64,
    largest_seq: AtomicU64,
}

impl MemTable {
    /// An empty memtable whose writes are logged in WAL `wal_number`.
    pub fn new(wal_number: u64) -> Self {
        MemTable {
            map: SkipMap::new(),
            approximate_size: AtomicUsize::new(0),
            user_bytes: AtomicU64::new(0),
            wal_number,
            largest_seq: AtomicU64::new(0),
        }
    }

    /// The WAL file number whose records this memtable holds.
    pub fn wal_number(&self) -> u64 {
        self.wal_number
    }

    /// Points this memtable at WAL `wal_number`: recovery uses it once it
    /// knows which WAL new writes go to (the one it replayed, kept, or a
    /// new one).
    pub(crate) fn set_wal_number(&mut self, wal_number: u64) {
        self.wal_number = wal_number;
    }

    /// Inserts one version. Callers serialise inserts (the write lock) and
    /// never insert the same `(key, seq)` twice.
    pub fn insert(&self, user_key: &[u8], seq: SequenceNumber, vt: ValueType, value: &[u8]) {
        let key = InternalKey::new(user_key, seq, vt);
        self.approximate_size.fetch_add(
            key.encoded().len() + value.len() + ENTRY_OVERHEAD,
            Ordering::Relaxed,
        );
        self.largest_seq.fetch_max(seq.0, Ordering::Relaxed);
        self.user_bytes
            .fetch_add((user_key.len() + value.len()) as u64, Ordering::Relaxed);
        self.map.insert(key, value.to_vec());
    }

    /// The newest version of `user_key` with sequence `<= seq`: its sequence,
    /// type and value (empty for a tombstone), or `None` if there is none.
    pub fn get(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
    ) -> Option<(SequenceNumber, ValueType, Vec<u8>)> {
        let seek = InternalKey::new(user_key, seq, ValueType::FOR_SEEK);
        let entry = self.map.lower_bound(Bound::Included(&seek))?;
        let p = entry.key().parsed();
        (p.user_key == user_key).then(|| (p.seq, p.value_type, entry.value().clone()))
    }

    /// Bytes of keys, values and estimated per-entry overhead inserted so far.
    pub fn approximate_size(&self) -> usize {
        self.approximate_size.load(Ordering::Relaxed)
    }

    /// Bytes of user keys and values inserted (no overhead): what a flush
    /// of this memtable moves into an SSTable, for write amplification.
    pub fn user_bytes(&self) -> u64 {
        self.user_bytes.load(Ordering::Relaxed)
    }

    /// Number of entries (versions), tombstones included.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True if nothing was inserted.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The largest sequence number inserted, 0 if none.
    pub fn largest_seq(&self) -> SequenceNumber {
        SequenceNumber(self.largest_seq.load(Ordering::Relaxed))
    }

    /// Every entry in internal-key order, for flushing: `(encoded internal
    /// key, value)`.
    pub fn for_each(
        &self,
        mut f: impl FnMut(&[u8], &[u8]) -> crate::Result<()>,
    ) -> crate::Result<()> {
        for e in self.map.iter() {
            f(e.key().encoded(), e.value())?;
        }
        Ok(())
    }

    /// A double-ended iterator over the versions whose user key lies within
    /// `(lo, hi)`, in internal-key order (see [`MemTableIter`]).
    pub fn iter(self: &Arc<Self>, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> MemTableIter {
        MemTableIter {
            mem: Arc::clone(self),
            lo: lower_internal(lo),
            hi: upper_internal(hi),
            front: VecDeque::new(),
            back: VecDeque::new(),
            exhausted: false,
        }
    }
}

/// The internal-key bound equivalent to a lower user-key bound.
fn lower_internal(b: Bound<&[u8]>) -> Bound<InternalKey> {
    match b {
        // The first version of k is (k, MAX); the last is (k, 0, Deletion).
        Bound::Included(k) => Bound::Included(InternalKey::new(
            k,
            SequenceNumber::MAX,
            ValueType::FOR_SEEK,
        )),
        Bound::Excluded(k) => Bound::Excluded(InternalKey::new(
            k,
            SequenceNumber::ZERO,
            ValueType::Deletion,
        )),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The internal-key bound equivalent to an upper user-key bound.
fn upper_internal(b: Bound<&[u8]>) -> Bound<InternalKey> {
    match b {
        Bound::Included(k) => Bound::Included(InternalKey::new(
            k,
            SequenceNumber::ZERO,
            ValueType::Deletion,
        )),
        Bound::Excluded(k) => Bound::Excluded(InternalKey::new(
            k,
            SequenceNumber::MAX,
            ValueType::FOR_SEEK,
        )),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Entries fetched from the skiplist per refill.
const CHUNK: usize = 64;

/// Iterator over a range of a [`MemTable`], yielding `(encoded internal key,
/// value)` forward and backward.
///
/// It owns an `Arc` of the memtable and keeps no borrow into it: each side
/// copies up to 64 entries at a time out of the unread window `(lo, hi)` and
/// narrows the window past them, so interleaved `next` and `next_back`
/// never yield an entry twice. Entries inserted after the iterator was made
/// may appear; readers filter them out by sequence number.
pub struct MemTableIter {
    mem: Arc<MemTable>,
    lo: Bound<InternalKey>,
    hi: Bound<InternalKey>,
    front: VecDeque<(Vec<u8>, Vec<u8>)>,
    back: VecDeque<(Vec<u8>, Vec<u8>)>,
    exhausted: bool,
}

impl MemTableIter {
    fn window_is_empty(&self) -> bool {
        match (&self.lo, &self.hi) {
            (Bound::Included(a), Bound::Included(b)) => a > b,
            (Bound::Included(a), Bound::Excluded(b))
            | (Bound::Excluded(a), Bound::Included(b))
            | (Bound::Excluded(a), Bound::Excluded(b)) => a >= b,
            _ => false,
        }
    }

    /// Copies up to CHUNK entries from one end of the window; false if the
    /// window is empty.
    fn refill(&mut self, from_front: bool) -> bool {
        if self.exhausted || self.window_is_empty() {
            self.exhausted = true;
            return false;
        }
        let range = self.mem.map.range((self.lo.clone(), self.hi.clone()));
        let taken: Vec<(Vec<u8>, Vec<u8>)> = if from_front {
            range
                .take(CHUNK)
                .map(|e| (e.key().encoded().to_vec(), e.value().clone()))
                .collect()
        } else {
            range
                .rev()
                .take(CHUNK)
                .map(|e| (e.key().encoded().to_vec(), e.value().clone()))
                .collect()
        };
        let Some(last) = taken.last() else {
            self.exhausted = true;
            return false;
        };
        // Keys in the map always parse: they were built by InternalKey::new.
        let edge = InternalKey::from_encoded(last.0.clone()).expect("memtable keys are valid");
        if from_front {
            self.lo = Bound::Excluded(edge);
            self.front.extend(taken);
        } else {
            self.hi = Bound::Excluded(edge);
            self.back.extend(taken);
        }
        true
    }
}

impl Iterator for MemTableIter {
    type Item = crate::Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(e) = self.front.pop_front() {
                return Some(Ok(e));
            }
            if !self.refill(true) {
                // The window is used up: what is left sits in the back buffer,
                // stored in descending order.
                return self.back.pop_back().map(Ok);
            }
        }
    }
}

impl DoubleEndedIterator for MemTableIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(e) = self.back.pop_front() {
                return Some(Ok(e));
            }
            if !self.refill(false) {
                return self.front.pop_back().map(Ok);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(it: impl Iterator<Item = crate::Result<(Vec<u8>, Vec<u8>)>>) -> Vec<String> {
        it.map(|r| format!("{:?}", InternalKey::from_encoded(r.unwrap().0).unwrap()))
            .collect()
    }

    #[test]
    fn get_returns_newest_visible_version() {
        let m = MemTable::new(1);
        m.insert(b"k", SequenceNumber(1), ValueType::Value, b"1");
        m.insert(b"k", SequenceNumber(2), ValueType::Deletion, b"");
        m.insert(b"k", SequenceNumber(3), ValueType::Value, b"3");
        m.insert(b"l", SequenceNumber(4), ValueType::Value, b"4");
        assert_eq!(
            m.get(b"k", SequenceNumber(9)),
            Some((SequenceNumber(3), ValueType::Value, b"3".to_vec()))
        );
        assert_eq!(
            m.get(b"k", SequenceNumber(2)).unwrap().1,
            ValueType::Deletion
        );
        assert_eq!(m.get(b"k", SequenceNumber(1)).unwrap().2, b"1");
        assert_eq!(m.get(b"j", SequenceNumber(9)), None);
        assert_eq!(m.get(b"l", SequenceNumber(3)), None);
        assert_eq!(m.len(), 4);
        assert_eq!(m.largest_seq(), SequenceNumber(4));
        assert!(m.approximate_size() >= 4 * ENTRY_OVERHEAD);
    }

    #[test]
    fn iter_respects_user_key_bounds_in_both_directions() {
        let m = Arc::new(MemTable::new(1));
        for (i, k) in ["a", "b", "b", "c", "d"].iter().enumerate() {
            m.insert(
                k.as_bytes(),
                SequenceNumber(i as u64 + 1),
                ValueType::Value,
                b"",
            );
        }
        let fwd = keys(m.iter(Bound::Excluded(b"a"), Bound::Included(b"c")));
        assert_eq!(fwd, ["b@3:put", "b@2:put", "c@4:put"]);
        let back = keys(m.iter(Bound::Excluded(b"a"), Bound::Included(b"c")).rev());
        assert_eq!(back, ["c@4:put", "b@2:put", "b@3:put"]);
        assert!(keys(m.iter(Bound::Included(b"c"), Bound::Excluded(b"c"))).is_empty());
        assert!(keys(m.iter(Bound::Included(b"z"), Bound::Included(b"a"))).is_empty());
    }

    #[test]
    fn interleaved_ends_meet_without_duplicates() {
        let m = Arc::new(MemTable::new(1));
        for i in 0..1000u32 {
            m.insert(
                format!("{i:05}").as_bytes(),
                SequenceNumber(u64::from(i) + 1),
                ValueType::Value,
                b"",
            );
        }
        for pattern in [1usize, 2, 3, 7, 130] {
            let mut it = m.iter(Bound::Unbounded, Bound::Unbounded);
            let mut seen = Vec::new();
            for step in 0.. {
                let item = if step % pattern == 0 {
                    it.next_back()
                } else {
                    it.next()
                };
                let Some(r) = item else { break };
                seen.push(crate::key::user_key_of(&r.unwrap().0).to_vec());
            }
            assert_eq!(seen.len(), 1000, "pattern {pattern}");
            seen.sort();
            seen.dedup();
            assert_eq!(seen.len(), 1000, "pattern {pattern}: duplicates");
        }
    }
}
