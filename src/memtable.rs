//! [`MemTable`]: the sorted in-memory buffer that takes every write before
//! it reaches an SSTable.
//!
//! A skiplist in internal-key order ([`skiplist`]), so several versions of
//! one user key sit side by side, newest first, and readers never block
//! the writer. A memtable is *active* while it takes writes and
//! *immutable* once frozen for flushing; both are read the same way.
//!
//! Each version is one skiplist node in the memtable's [`arena`]: a
//! header holding the first 16 bytes of the user key and the trailer
//! (most comparisons of a search are decided there, without reading the
//! key bytes: DESIGN.md 2), the node's links, then the internal key and
//! the value. No allocation of its own, and freed with the memtable in a
//! few calls.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::iter::Entry;
use crate::range_tombstone::{FragmentedRangeTombstones, RangeTombstone};
use crate::Slice;

use crate::key::{pack_trailer, SequenceNumber, ValueType, TRAILER_LEN};

mod arena;
mod skiplist;

use skiplist::{Key, Node, SkipList};

/// Bytes charged per entry beyond its key, trailer and value,
/// approximating the skiplist node (a 40-byte header and 2 links of 8
/// bytes on average) and the arena's rounding to 8 bytes (4 on average).
const ENTRY_OVERHEAD: usize = 64;

/// An internal key owning its user key: a bound of a [`MemTableIter`]'s
/// window.
#[derive(Debug)]
struct BoundKey {
    user_key: Box<[u8]>,
    trailer: u64,
}

impl BoundKey {
    fn new(user_key: &[u8], seq: SequenceNumber, vt: ValueType) -> BoundKey {
        BoundKey {
            user_key: user_key.into(),
            trailer: pack_trailer(seq, vt),
        }
    }

    fn of(node: Node<'_>) -> BoundKey {
        BoundKey {
            user_key: node.user_key().into(),
            trailer: node.trailer(),
        }
    }

    fn key(&self) -> Key<'_> {
        Key::new(&self.user_key, self.trailer)
    }
}

/// A sorted map from internal key to value, plus the number of the WAL
/// holding the same writes.
#[derive(Debug)]
pub struct MemTable {
    /// The versions, each a node in the list's own arena.
    list: SkipList,
    approximate_size: AtomicUsize,
    user_bytes: AtomicU64,
    wal_number: u64,
    largest_seq: AtomicU64,
    /// The largest sequence number of a point write (not a range
    /// deletion) inserted, 0 if none: see [`MemTable::largest_point_seq`].
    largest_point_seq: AtomicU64,
    /// Range deletions, kept apart from the skiplist: a read needs every
    /// one covering its key, not the entry nearest it. Flushes move them
    /// into the version.
    range_tombstones: parking_lot::RwLock<MemRangeTombstones>,
    /// True once `range_tombstones` is non-empty: reads of a memtable
    /// without any take no lock.
    has_range_tombstones: std::sync::atomic::AtomicBool,
}

/// A memtable's range deletions: the list in the order inserted (what a
/// flush moves into the version) and the same tombstones fragmented (what
/// reads consult), kept up to date on every insert.
#[derive(Debug, Default)]
struct MemRangeTombstones {
    list: Vec<RangeTombstone>,
    index: Arc<FragmentedRangeTombstones>,
}

impl MemTable {
    /// An empty memtable whose writes are logged in WAL `wal_number`.
    pub fn new(wal_number: u64) -> Self {
        MemTable {
            list: SkipList::new(),
            approximate_size: AtomicUsize::new(0),
            user_bytes: AtomicU64::new(0),
            wal_number,
            largest_seq: AtomicU64::new(0),
            largest_point_seq: AtomicU64::new(0),
            range_tombstones: parking_lot::RwLock::new(MemRangeTombstones::default()),
            has_range_tombstones: std::sync::atomic::AtomicBool::new(false),
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
    /// never insert the same `(key, seq)` twice. A
    /// [`ValueType::RangeDeletion`] is a batch's range deletion: `user_key`
    /// is its start and `value` its end (empty: unbounded), and it goes to
    /// the memtable's range tombstones, not the skiplist.
    pub fn insert(&self, user_key: &[u8], seq: SequenceNumber, vt: ValueType, value: &[u8]) {
        if vt == ValueType::RangeDeletion {
            self.approximate_size.fetch_add(
                user_key.len() + value.len() + ENTRY_OVERHEAD,
                Ordering::Relaxed,
            );
            self.largest_seq.fetch_max(seq.0, Ordering::Relaxed);
            let t = RangeTombstone {
                start: user_key.to_vec(),
                end: (!value.is_empty()).then(|| value.to_vec()),
                seq,
            };
            let mut ts = self.range_tombstones.write();
            // Copies the index only if a reader still holds it.
            Arc::make_mut(&mut ts.index).insert(&t);
            ts.list.push(t);
            self.has_range_tombstones.store(true, Ordering::Release);
            return;
        }
        self.approximate_size.fetch_add(
            user_key.len() + TRAILER_LEN + value.len() + ENTRY_OVERHEAD,
            Ordering::Relaxed,
        );
        self.largest_seq.fetch_max(seq.0, Ordering::Relaxed);
        self.largest_point_seq.fetch_max(seq.0, Ordering::Relaxed);
        self.user_bytes
            .fetch_add((user_key.len() + value.len()) as u64, Ordering::Relaxed);
        self.list.insert(user_key, pack_trailer(seq, vt), value);
    }

    /// The newest version of `user_key` with sequence `<= seq`: its sequence,
    /// type and value (empty for a tombstone), or `None` if there is none.
    pub fn get(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
    ) -> Option<(SequenceNumber, ValueType, Slice)> {
        if self.list.is_empty() {
            // A fresh memtable (the usual case after a flush).
            return None;
        }
        let seek = Key::new(user_key, pack_trailer(seq, ValueType::FOR_SEEK));
        let e = self.list.seek(&seek, true)?;
        let vt = if e.trailer() & 0xff == 0 {
            ValueType::Deletion
        } else {
            ValueType::Value
        };
        (e.user_key() == user_key).then(|| {
            (
                SequenceNumber(e.trailer() >> 8),
                vt,
                Slice::copy_from_slice(e.value()),
            )
        })
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

    /// Number of entries (versions), tombstones included; range
    /// deletions are not entries ([`MemTable::range_tombstones`]).
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True if it holds an entry (a put or a point deletion); a memtable
    /// holding only range deletions flushes to no table.
    pub fn has_entries(&self) -> bool {
        !self.list.is_empty()
    }

    /// True if nothing was inserted: no entry and no range deletion.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty() && !self.has_range_tombstones.load(Ordering::Acquire)
    }

    /// The largest sequence number `<= read_seq` of a range deletion in
    /// this memtable covering `user_key`, or [`SequenceNumber::ZERO`]:
    /// `O(log n)` in its range deletions, free when it has none.
    pub fn max_range_tombstone(&self, user_key: &[u8], read_seq: SequenceNumber) -> SequenceNumber {
        if !self.has_range_tombstones.load(Ordering::Acquire) {
            return SequenceNumber::ZERO;
        }
        self.range_tombstones
            .read()
            .index
            .max_covering(user_key, read_seq)
    }

    /// The memtable's range deletions, fragmented (every one inserted so
    /// far: a reader applies only those its sequence number sees), or
    /// `None` if it has none. Shared, not copied: a later insert copies
    /// the index instead if this one is still held.
    pub fn range_tombstone_index(&self) -> Option<Arc<FragmentedRangeTombstones>> {
        if !self.has_range_tombstones.load(Ordering::Acquire) {
            return None;
        }
        Some(Arc::clone(&self.range_tombstones.read().index))
    }

    /// How many range deletions the memtable holds (without copying them).
    pub fn range_tombstone_count(&self) -> usize {
        if !self.has_range_tombstones.load(Ordering::Acquire) {
            return 0;
        }
        self.range_tombstones.read().list.len()
    }

    /// The memtable's range deletions with sequence `<= read_seq`, in the
    /// order inserted.
    pub fn range_tombstones(&self, read_seq: SequenceNumber) -> Vec<RangeTombstone> {
        if !self.has_range_tombstones.load(Ordering::Acquire) {
            return Vec::new();
        }
        self.range_tombstones
            .read()
            .list
            .iter()
            .filter(|t| t.seq <= read_seq)
            .cloned()
            .collect()
    }

    /// The largest sequence number inserted, 0 if none.
    pub fn largest_seq(&self) -> SequenceNumber {
        SequenceNumber(self.largest_seq.load(Ordering::Relaxed))
    }

    /// The largest sequence number of a point write (a value or a point
    /// deletion) inserted, 0 if none. Read after a reader's sequence
    /// number was fixed, it bounds every version in the skiplist that
    /// reader may see (each was inserted before its sequence number was
    /// published): a scan's memtable source skips the keys of a range
    /// tombstone newer than it whole (DESIGN.md 4).
    pub fn largest_point_seq(&self) -> SequenceNumber {
        SequenceNumber(self.largest_point_seq.load(Ordering::Relaxed))
    }

    /// Every entry in internal-key order, for flushing: `(encoded internal
    /// key, value)`.
    pub fn for_each(
        &self,
        mut f: impl FnMut(&[u8], &[u8]) -> crate::Result<()>,
    ) -> crate::Result<()> {
        for n in self.list.iter() {
            f(n.encoded(), n.value())?;
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
fn lower_internal(b: Bound<&[u8]>) -> Bound<BoundKey> {
    match b {
        // The first version of k is (k, MAX); the last is (k, 0, Deletion).
        Bound::Included(k) => {
            Bound::Included(BoundKey::new(k, SequenceNumber::MAX, ValueType::FOR_SEEK))
        }
        Bound::Excluded(k) => {
            Bound::Excluded(BoundKey::new(k, SequenceNumber::ZERO, ValueType::Deletion))
        }
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The internal-key bound equivalent to an upper user-key bound.
fn upper_internal(b: Bound<&[u8]>) -> Bound<BoundKey> {
    match b {
        Bound::Included(k) => {
            Bound::Included(BoundKey::new(k, SequenceNumber::ZERO, ValueType::Deletion))
        }
        Bound::Excluded(k) => {
            Bound::Excluded(BoundKey::new(k, SequenceNumber::MAX, ValueType::FOR_SEEK))
        }
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
    lo: Bound<BoundKey>,
    hi: Bound<BoundKey>,
    front: VecDeque<Entry>,
    back: VecDeque<Entry>,
    exhausted: bool,
}

impl MemTableIter {
    fn window_is_empty(&self) -> bool {
        match (&self.lo, &self.hi) {
            (Bound::Included(a), Bound::Included(b)) => a.key() > b.key(),
            (Bound::Included(a), Bound::Excluded(b))
            | (Bound::Excluded(a), Bound::Included(b))
            | (Bound::Excluded(a), Bound::Excluded(b)) => a.key() >= b.key(),
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
        let list = &self.mem.list;
        // The bounds as keys once per refill (each computes its prefix).
        let lo = self.lo.as_ref().map(BoundKey::key);
        let hi = self.hi.as_ref().map(BoundKey::key);
        let copy = |n: Node<'_>| (n.encoded().to_vec(), Slice::copy_from_slice(n.value()));
        let mut edge = None;
        if from_front {
            let mut at = match &lo {
                Bound::Included(k) => list.seek(k, true),
                Bound::Excluded(k) => list.seek(k, false),
                Bound::Unbounded => list.first(),
            };
            for _ in 0..CHUNK {
                let Some(n) = at.filter(|n| !beyond(&n.key(), &hi, true)) else {
                    break;
                };
                self.front.push_back(copy(n));
                edge = Some(n);
                at = n.next();
            }
        } else {
            // No back links: each step is a search for the node before.
            let mut at = match &hi {
                Bound::Included(k) => list.seek_back(k, true),
                Bound::Excluded(k) => list.seek_back(k, false),
                Bound::Unbounded => list.last(),
            };
            for _ in 0..CHUNK {
                let Some(n) = at.filter(|n| !beyond(&n.key(), &lo, false)) else {
                    break;
                };
                self.back.push_back(copy(n));
                edge = Some(n);
                at = list.seek_back(&n.key(), false);
            }
        }
        let Some(edge) = edge.map(BoundKey::of) else {
            self.exhausted = true;
            return false;
        };
        if from_front {
            self.lo = Bound::Excluded(edge);
        } else {
            self.hi = Bound::Excluded(edge);
        }
        true
    }
}

/// Whether `k` lies outside `bound`: above it if `upper`, else below it.
fn beyond(k: &Key<'_>, bound: &Bound<Key<'_>>, upper: bool) -> bool {
    match bound {
        Bound::Included(b) if upper => k > b,
        Bound::Included(b) => k < b,
        Bound::Excluded(b) if upper => k >= b,
        Bound::Excluded(b) => k <= b,
        Bound::Unbounded => false,
    }
}

impl crate::iter::SeekableSource for MemTableIter {
    /// Drops the front buffer's entries below `target`; if that empties
    /// it, raises the window's lower bound to `target`'s first version,
    /// and drops the back buffer's entries below `target` (its smallest
    /// are the window's last).
    fn seek_forward(&mut self, target: Option<&[u8]>) {
        let Some(target) = target else {
            self.drop_all();
            return;
        };
        let below = |e: &Entry| crate::key::user_key_of(&e.0) < target;
        while self.front.front().is_some_and(below) {
            self.front.pop_front();
        }
        if self.front.is_empty() {
            let edge = BoundKey::new(target, SequenceNumber::MAX, ValueType::FOR_SEEK);
            let raise = match &self.lo {
                Bound::Included(a) | Bound::Excluded(a) => a.key() < edge.key(),
                Bound::Unbounded => true,
            };
            if raise {
                self.lo = Bound::Included(edge);
            }
        }
        // Stored in descending order: the smallest are at the back.
        while self.back.back().is_some_and(below) {
            self.back.pop_back();
        }
    }

    /// Mirror of `seek_forward`: drops the back buffer's entries at or
    /// above `target`, lowers the window's upper bound below `target`'s
    /// first version, and drops the front buffer's entries at or above it.
    fn seek_backward(&mut self, target: Option<&[u8]>) {
        let Some(target) = target else {
            self.drop_all();
            return;
        };
        let at_or_above = |e: &Entry| crate::key::user_key_of(&e.0) >= target;
        while self.back.front().is_some_and(at_or_above) {
            self.back.pop_front();
        }
        if self.back.is_empty() {
            let edge = BoundKey::new(target, SequenceNumber::MAX, ValueType::FOR_SEEK);
            let lower = match &self.hi {
                Bound::Included(a) => a.key() >= edge.key(),
                Bound::Excluded(a) => a.key() > edge.key(),
                Bound::Unbounded => true,
            };
            if lower {
                self.hi = Bound::Excluded(edge);
            }
        }
        while self.front.back().is_some_and(at_or_above) {
            self.front.pop_back();
        }
    }
}

impl MemTableIter {
    /// Drops every unconsumed entry: both buffers and the window.
    fn drop_all(&mut self) {
        self.front.clear();
        self.back.clear();
        self.exhausted = true;
    }
}

impl Iterator for MemTableIter {
    type Item = crate::Result<Entry>;

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
    use crate::key::InternalKey;

    /// Readers racing the writer across arena chunks (and past large
    /// entries with chunks of their own) find every published entry
    /// whole: its bytes were copied before the skiplist published it.
    #[test]
    fn readers_see_whole_entries_while_the_arena_grows() {
        let mem = Arc::new(MemTable::new(1));
        let value = |i: u64| -> Vec<u8> {
            let len = if i.is_multiple_of(997) {
                300 << 10
            } else {
                (i % 200) as usize
            };
            vec![(i % 251) as u8; len]
        };
        let key = |i: u64| format!("key{i:08}").into_bytes();
        let published = Arc::new(AtomicU64::new(0));
        const N: u64 = 30_000;
        std::thread::scope(|s| {
            for r in 0..2u64 {
                let (mem, published) = (Arc::clone(&mem), Arc::clone(&published));
                s.spawn(move || {
                    let mut x = r + 1;
                    loop {
                        let upto = published.load(Ordering::Acquire);
                        if upto > 0 {
                            x = x
                                .wrapping_mul(6364136223846793005)
                                .wrapping_add(1442695040888963407);
                            let i = (x >> 33) % upto;
                            let got = mem.get(&key(i), SequenceNumber(u64::MAX >> 8));
                            let (seq, vt, v) = got.expect("a published key is found");
                            assert_eq!((seq.0, vt), (i + 1, ValueType::Value));
                            assert!(v.as_ref() == value(i).as_slice(), "value of key {i}");
                        }
                        if upto == N {
                            break;
                        }
                    }
                });
            }
            for i in 0..N {
                mem.insert(&key(i), SequenceNumber(i + 1), ValueType::Value, &value(i));
                published.store(i + 1, Ordering::Release);
            }
        });
        assert!(mem.list.arena_bytes() > 2 * arena::CHUNK);
    }

    fn keys(it: impl Iterator<Item = crate::Result<Entry>>) -> Vec<String> {
        it.map(|r| format!("{:?}", InternalKey::from_encoded(r.unwrap().0).unwrap()))
            .collect()
    }

    #[test]
    fn entries_sort_as_encoded_internal_keys() {
        let users: [&[u8]; 16] = [
            b"",
            b"\0",
            b"a",
            b"a\0",
            b"a\0\x01",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefghi",
            b"abcdefgz",
            b"abcdefg",
            b"0000000000012345",
            b"0000000000012345\0",
            b"00000000000123456",
            b"0000000000012346",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
            b"\xff",
        ];
        let mut entries = Vec::new();
        for u in users {
            for (seq, vt) in [
                (1, ValueType::Value),
                (7, ValueType::Deletion),
                (7, ValueType::Value),
            ] {
                let k = InternalKey::new(u, SequenceNumber(seq), vt).into_encoded();
                entries.push((k, pack_trailer(SequenceNumber(seq), vt), u));
            }
        }
        for (ea, ta, ua) in &entries {
            for (eb, tb, ub) in &entries {
                assert_eq!(
                    Key::new(ua, *ta).cmp(&Key::new(ub, *tb)),
                    crate::key::compare_internal_keys(ea, eb),
                    "{ea:?} vs {eb:?}"
                );
            }
        }
    }

    #[test]
    fn range_deletions_are_indexed_as_inserted_and_a_held_index_keeps_its_view() {
        let m = MemTable::new(1);
        assert_eq!(m.range_tombstone_index(), None);
        let s = SequenceNumber;
        m.insert(b"b", s(5), ValueType::RangeDeletion, b"f");
        m.insert(b"d", s(7), ValueType::RangeDeletion, b""); // no end
        assert!(!m.is_empty() && !m.has_entries());
        assert_eq!(m.range_tombstone_count(), 2);
        assert_eq!(m.max_range_tombstone(b"c", s(100)), s(5));
        assert_eq!(m.max_range_tombstone(b"e", s(100)), s(7));
        assert_eq!(m.max_range_tombstone(b"e", s(6)), s(5), "7 is too new");
        assert_eq!(m.max_range_tombstone(b"a", s(100)), SequenceNumber::ZERO);
        assert_eq!(m.max_range_tombstone(b"zzz", s(100)), s(7));
        let held = m.range_tombstone_index().unwrap();
        m.insert(b"a", s(9), ValueType::RangeDeletion, b"c");
        assert_eq!(held.max_covering(b"a", s(100)), SequenceNumber::ZERO);
        assert_eq!(m.max_range_tombstone(b"a", s(100)), s(9));
        assert_eq!(m.max_range_tombstone(b"b", s(100)), s(9));
        let listed: Vec<u64> = m.range_tombstones(s(8)).iter().map(|t| t.seq.0).collect();
        assert_eq!(
            listed,
            [5, 7],
            "in the order inserted, as a reader at 8 sees them"
        );
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
            Some((SequenceNumber(3), ValueType::Value, Slice::from("3")))
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

    use proptest::prelude::Strategy;

    proptest::proptest! {
        /// Seeks from either end, interleaved with next/next_back over
        /// bounds, drop exactly the entries a model drops, across refills
        /// of the 64-entry buffers (DESIGN.md 4).
        #[test]
        fn seeks_match_model(
            versions in proptest::collection::vec((0u32..300, proptest::bool::ANY), 0..400),
            lo in proptest::option::of(0u32..300),
            hi in proptest::option::of(0u32..300),
            steps in crate::iter::source_model::steps(
                (0u32..320).prop_map(|i| format!("{i:03}").into_bytes()),
            ),
        ) {
            let m = Arc::new(MemTable::new(1));
            let k = |i: u32| format!("{i:03}").into_bytes();
            let mut model = Vec::new();
            for (seq, &(i, del)) in versions.iter().enumerate() {
                let seq = SequenceNumber(seq as u64 + 1);
                let vt = if del { ValueType::Deletion } else { ValueType::Value };
                let value = if del { Vec::new() } else { format!("v{seq:?}").into_bytes() };
                m.insert(&k(i), seq, vt, &value);
                model.push((InternalKey::new(&k(i), seq, vt).into_encoded(), value));
            }
            model.sort_by(|a, b| crate::key::compare_internal_keys(&a.0, &b.0));
            let (lo, hi) = (lo.map(k), hi.map(k));
            model.retain(|(ik, _)| {
                let uk = crate::key::user_key_of(ik);
                lo.as_deref().is_none_or(|l| uk >= l) && hi.as_deref().is_none_or(|h| uk < h)
            });
            let (l, h) = (
                lo.as_deref().map_or(Bound::Unbounded, Bound::Included),
                hi.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
            );
            crate::iter::source_model::check(&mut m.iter(l, h), model, &steps);
        }
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
