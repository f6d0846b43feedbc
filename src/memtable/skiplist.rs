//! [`SkipList`]: the memtable's sorted index of versions, written by one
//! thread at a time and read by any number without locks, with every node
//! (header, tower and the entry's bytes) in one allocation of the
//! memtable's [`Arena`].
//!
//! The design is LevelDB's and RocksDB's (`InlineSkipList`): a node is
//! never removed or changed once published, so readers need no epoch or
//! reference count, only acquire loads of the links. Inserts are
//! serialised by the writer's mutex (the engine calls them under its own
//! write lock anyway, so it is never contended); the mutex also owns the
//! arena and the height generator. A reader may see a node at level 0
//! before the levels above it are linked: it is then found a little more
//! slowly, never missed.
//!
//! Compared with the crossbeam skiplist this replaces (DESIGN.md 13): no
//! `malloc` per put, no per-node `free` when a flushed memtable is
//! dropped (the arena frees its chunks), no epoch pin or reference-count
//! update per lookup or per step of a flush.
//!
//! Node layout, in the arena, 8-byte aligned:
//!
//! ```text
//! [Header, 40 bytes][tower: height × 8-byte link][user key][trailer, 8 LE][value]
//! ```

use std::cmp::Ordering;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{self, AtomicPtr, AtomicUsize};

use parking_lot::Mutex;

use super::arena::Arena;
use crate::key::{user_key_prefix, TRAILER_LEN};

/// The most levels a node can have: with half the nodes promoted at each
/// level, 24 levels index 2^24 (16 million) entries before searches
/// lengthen.
pub(super) const MAX_HEIGHT: usize = 24;

/// One node in `BRANCHING` is promoted to each next level. 2, as in
/// Pugh's paper and crossbeam, measured faster than RocksDB's 4 here:
/// `tools/compare` `fillrandom`, 4 interleaved pairs, 535–556k puts per
/// second against 462–481k, p50 1.40–1.46 µs against 1.63–1.72 (a
/// node passed over at one level is often the next level's first
/// comparison, already in the cache).
const BRANCHING: u64 = 2;

/// A node's fixed part. `repr(C)` so that the tower starts right after it,
/// at an 8-byte aligned offset.
#[repr(C)]
struct Header {
    /// The user key's first 16 bytes, big-endian and zero padded
    /// ([`user_key_prefix`]), split in two so the header is 8-aligned.
    prefix_hi: u64,
    prefix_lo: u64,
    trailer: u64,
    key_len: u32,
    value_len: u32,
    /// Links in the tower, 1..=MAX_HEIGHT.
    height: u32,
    _pad: u32,
}

const HEADER_LEN: usize = std::mem::size_of::<Header>();
const LINK_LEN: usize = std::mem::size_of::<AtomicPtr<Header>>();

/// An internal key as the skiplist orders it: user key ascending, then
/// trailer (sequence and type) descending, with the user key's 16-byte
/// prefix precomputed so that most comparisons read no key bytes. A
/// prefix that differs orders the keys as their bytes would: a byte of
/// padding only ever meets a real byte where the shorter key has ended,
/// and the shorter key sorts first then too.
#[derive(Clone, Copy, Debug)]
pub(super) struct Key<'a> {
    prefix: u128,
    user_key: &'a [u8],
    trailer: u64,
}

impl<'a> Key<'a> {
    /// The key `(user_key, trailer)`.
    pub(super) fn new(user_key: &'a [u8], trailer: u64) -> Key<'a> {
        Key {
            prefix: user_key_prefix(user_key),
            user_key,
            trailer,
        }
    }
}

impl Ord for Key<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.prefix
            .cmp(&other.prefix)
            .then_with(|| {
                // Equal prefixes: keys of at most 16 bytes are equal if
                // their lengths are, and the shorter sorts first; longer
                // keys compare their bytes.
                if self.user_key.len() <= 16 && other.user_key.len() <= 16 {
                    self.user_key.len().cmp(&other.user_key.len())
                } else {
                    self.user_key.cmp(other.user_key)
                }
            })
            .then_with(|| other.trailer.cmp(&self.trailer))
    }
}

impl PartialOrd for Key<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Key<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Key<'_> {}

/// A published node, valid while the skiplist it came from (`'a`) is.
#[derive(Clone, Copy)]
pub(super) struct Node<'a> {
    ptr: NonNull<Header>,
    _list: PhantomData<&'a SkipList>,
}

impl<'a> Node<'a> {
    /// The node at `ptr`, or `None` for a null link.
    ///
    /// # Safety
    /// A non-null `ptr` must be a node published in a skiplist that
    /// outlives `'a` (every link's target is).
    unsafe fn from_link(ptr: *mut Header) -> Option<Node<'a>> {
        NonNull::new(ptr).map(|ptr| Node {
            ptr,
            _list: PhantomData,
        })
    }

    fn header(&self) -> &'a Header {
        // SAFETY: a published node's header was written before the release
        // store that published it, is never written again, and lives as
        // long as the skiplist (`'a`).
        unsafe { self.ptr.as_ref() }
    }

    /// The link of this node at `level` (below its height).
    fn link(&self, level: usize) -> &'a AtomicPtr<Header> {
        debug_assert!(level < self.header().height as usize);
        // SAFETY: the tower of `height` links follows the header in the
        // node's allocation (`SkipList::insert`), each initialised before
        // publication; atomics may be shared.
        unsafe {
            &*self
                .ptr
                .as_ptr()
                .cast::<u8>()
                .add(HEADER_LEN + level * LINK_LEN)
                .cast::<AtomicPtr<Header>>()
        }
    }

    /// `[user key][trailer][value]`.
    fn bytes(&self) -> &'a [u8] {
        let h = self.header();
        let len = h.key_len as usize + TRAILER_LEN + h.value_len as usize;
        // SAFETY: these bytes follow the tower in the node's allocation,
        // were copied in before publication and are never written again.
        unsafe {
            std::slice::from_raw_parts(
                self.ptr
                    .as_ptr()
                    .cast::<u8>()
                    .add(HEADER_LEN + h.height as usize * LINK_LEN),
                len,
            )
        }
    }

    /// The node's internal key, for comparisons (reads no key bytes).
    pub(super) fn key(&self) -> Key<'a> {
        let h = self.header();
        Key {
            prefix: (u128::from(h.prefix_hi) << 64) | u128::from(h.prefix_lo),
            user_key: self.user_key(),
            trailer: h.trailer,
        }
    }

    pub(super) fn user_key(&self) -> &'a [u8] {
        &self.bytes()[..self.header().key_len as usize]
    }

    pub(super) fn trailer(&self) -> u64 {
        self.header().trailer
    }

    /// The encoded internal key: user key, then trailer (8 bytes LE).
    pub(super) fn encoded(&self) -> &'a [u8] {
        &self.bytes()[..self.header().key_len as usize + TRAILER_LEN]
    }

    pub(super) fn value(&self) -> &'a [u8] {
        &self.bytes()[self.header().key_len as usize + TRAILER_LEN..]
    }

    /// The next node at level 0.
    pub(super) fn next(&self) -> Option<Node<'a>> {
        // SAFETY: links only ever point at published nodes of this list.
        unsafe { Node::from_link(self.link(0).load(atomic::Ordering::Acquire)) }
    }
}

/// What only the writer touches: the arena and the height generator.
struct Writer {
    arena: Arena,
    /// xorshift64 state (never 0).
    rng: u64,
}

/// A sorted set of internal keys, each with its value, for one memtable.
///
/// `Send` and `Sync` follow from the fields (atomic links and a mutex);
/// what makes sharing it sound is that every node reachable through a
/// link was complete before the release store that linked it, is never
/// changed after (but for its atomic links), and lives in the arena until
/// the list is dropped.
pub(super) struct SkipList {
    /// The head's tower: the first node of each level (null: none).
    head: [AtomicPtr<Header>; MAX_HEIGHT],
    /// Levels in use, 1..=MAX_HEIGHT; readers may see it raised before the
    /// head's new links, which are then still null: harmless.
    height: AtomicUsize,
    len: AtomicUsize,
    writer: Mutex<Writer>,
}

impl std::fmt::Debug for SkipList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkipList")
            .field("len", &self.len())
            .field("height", &self.height.load(atomic::Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl SkipList {
    pub(super) fn new() -> SkipList {
        SkipList {
            head: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            writer: Mutex::new(Writer {
                arena: Arena::new(),
                rng: 0x9E37_79B9_7F4A_7C15,
            }),
        }
    }

    /// Number of nodes.
    pub(super) fn len(&self) -> usize {
        self.len.load(atomic::Ordering::Relaxed)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.head[0].load(atomic::Ordering::Acquire).is_null()
    }

    /// Bytes the arena holds in chunks.
    #[cfg(test)]
    pub(super) fn arena_bytes(&self) -> usize {
        self.writer.lock().arena.allocated()
    }

    /// The link out of `pos` (`None`: the head) at `level`.
    fn link_after<'a>(&'a self, pos: Option<Node<'a>>, level: usize) -> &'a AtomicPtr<Header> {
        match pos {
            Some(n) => n.link(level),
            None => &self.head[level],
        }
    }

    /// The node after `pos` (`None`: the head) at `level`.
    fn next_at<'a>(&'a self, pos: Option<Node<'a>>, level: usize) -> Option<Node<'a>> {
        let link = self.link_after(pos, level).load(atomic::Ordering::Acquire);
        // SAFETY: links only ever point at published nodes of this list.
        unsafe { Node::from_link(link) }
    }

    /// Walks down from the head, moving right while the next node is below
    /// `key` (`inclusive`: at or below it). Returns the last node passed at
    /// level 0 (`None`: the head) and the node after it; `prev`, if given,
    /// receives the last position at each level.
    fn walk<'a>(
        &'a self,
        key: &Key<'_>,
        inclusive: bool,
        mut prev: Option<&mut [Option<Node<'a>>; MAX_HEIGHT]>,
    ) -> (Option<Node<'a>>, Option<Node<'a>>) {
        let mut pos: Option<Node<'a>> = None;
        let mut level = self.height.load(atomic::Ordering::Relaxed) - 1;
        loop {
            let next = self.next_at(pos, level);
            let right = next.is_some_and(|n| match n.key().cmp(key) {
                Ordering::Less => true,
                Ordering::Equal => inclusive,
                Ordering::Greater => false,
            });
            if right {
                pos = next;
                continue;
            }
            if let Some(prev) = prev.as_deref_mut() {
                prev[level] = pos;
            }
            if level == 0 {
                return (pos, next);
            }
            level -= 1;
        }
    }

    /// The first node at or above `key` (`inclusive`), or above it.
    pub(super) fn seek<'a>(&'a self, key: &Key<'_>, inclusive: bool) -> Option<Node<'a>> {
        self.walk(key, !inclusive, None).1
    }

    /// The last node below `key`, or (`inclusive`) at or below it.
    pub(super) fn seek_back<'a>(&'a self, key: &Key<'_>, inclusive: bool) -> Option<Node<'a>> {
        self.walk(key, inclusive, None).0
    }

    /// The first node.
    pub(super) fn first(&self) -> Option<Node<'_>> {
        self.next_at(None, 0)
    }

    /// The last node.
    pub(super) fn last(&self) -> Option<Node<'_>> {
        let mut pos = None;
        let mut level = self.height.load(atomic::Ordering::Relaxed) - 1;
        loop {
            match self.next_at(pos, level) {
                Some(n) => pos = Some(n),
                None if level == 0 => return pos,
                None => level -= 1,
            }
        }
    }

    /// Inserts `(user_key, trailer)` with `value`. The pair must not be in
    /// the list already (the engine never writes one sequence twice).
    ///
    /// # Panics
    /// Aborts, as `Vec` does, if the allocator fails.
    pub(super) fn insert(&self, user_key: &[u8], trailer: u64, value: &[u8]) {
        let mut w = self.writer.lock();
        let key = Key::new(user_key, trailer);
        let mut prev = [None; MAX_HEIGHT];
        let (_, at) = self.walk(&key, false, Some(&mut prev));
        debug_assert!(at.is_none_or(|n| n.key() != key), "duplicate key");
        let height = w.random_height();
        let old_height = self.height.load(atomic::Ordering::Relaxed);
        if height > old_height {
            // Levels above the old height start at the head (`prev` is
            // already `None` there).
            self.height.store(height, atomic::Ordering::Relaxed);
        }
        let len = HEADER_LEN + height * LINK_LEN + user_key.len() + TRAILER_LEN + value.len();
        let raw = w.arena.alloc(len);
        let header = Header {
            prefix_hi: (key.prefix >> 64) as u64,
            prefix_lo: key.prefix as u64,
            trailer,
            // Keys are at most 65,535 bytes and values under 4 GiB
            // (checked before any insert).
            key_len: user_key.len() as u32,
            value_len: value.len() as u32,
            height: height as u32,
            _pad: 0,
        };
        let base = raw.as_ptr();
        // SAFETY: `raw` is `len` fresh bytes of the arena, 8-aligned,
        // reserved for this node alone and invisible to readers until the
        // release stores below; the parts written here do not overlap each
        // other or the caller's slices.
        unsafe {
            base.cast::<Header>().write(header);
            let tower = base.add(HEADER_LEN).cast::<AtomicPtr<Header>>();
            for (level, &p) in prev.iter().enumerate().take(height) {
                let succ = self.link_after(p, level).load(atomic::Ordering::Relaxed);
                tower.add(level).write(AtomicPtr::new(succ));
            }
            let data = base.add(HEADER_LEN + height * LINK_LEN);
            std::ptr::copy_nonoverlapping(user_key.as_ptr(), data, user_key.len());
            let data = data.add(user_key.len());
            std::ptr::copy_nonoverlapping(trailer.to_le_bytes().as_ptr(), data, TRAILER_LEN);
            let data = data.add(TRAILER_LEN);
            std::ptr::copy_nonoverlapping(value.as_ptr(), data, value.len());
        }
        let node = raw.cast::<Header>().as_ptr();
        // Level 0 first: a reader that finds the node at a higher level
        // can then always descend to it.
        for (level, &p) in prev.iter().enumerate().take(height) {
            self.link_after(p, level)
                .store(node, atomic::Ordering::Release);
        }
        self.len.fetch_add(1, atomic::Ordering::Relaxed);
    }

    /// Every node in order, from the first.
    pub(super) fn iter(&self) -> impl Iterator<Item = Node<'_>> {
        std::iter::successors(self.first(), |n| n.next())
    }
}

impl Writer {
    /// 1 + the number of times a fair 1-in-[`BRANCHING`] draw succeeds in
    /// a row, at most [`MAX_HEIGHT`].
    fn random_height(&mut self) -> usize {
        let mut height = 1;
        while height < MAX_HEIGHT {
            // xorshift64 (Marsaglia, "Xorshift RNGs", 2003).
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            if !self.rng.is_multiple_of(BRANCHING) {
                break;
            }
            height += 1;
        }
        height
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    fn owned(n: Node<'_>) -> (Vec<u8>, u64, Vec<u8>) {
        (n.user_key().to_vec(), n.trailer(), n.value().to_vec())
    }

    /// The model's key, ordered as the list's: user key ascending,
    /// trailer descending.
    type ModelKey = (Vec<u8>, std::cmp::Reverse<u64>);

    fn model_key(k: &[u8], t: u64) -> ModelKey {
        (k.to_vec(), std::cmp::Reverse(t))
    }

    proptest::proptest! {
        /// Inserts in any order read back sorted, and every seek from
        /// either side, inclusive or not, lands where a BTreeMap's range
        /// does; keys share 16-byte prefixes and differ only in length, so
        /// every branch of the comparison is taken.
        #[test]
        fn seeks_match_a_btreemap(
            entries in proptest::collection::vec(
                (proptest::sample::select(vec![
                    &b""[..], b"a", b"a\0", b"abcdefghijklmnop", b"abcdefghijklmnopq",
                    b"abcdefghijklmnop\0", b"abcdefghijklmnoq", b"\xff\xff",
                ]), 0u64..6, proptest::collection::vec(proptest::num::u8::ANY, 0..20)),
                0..200,
            ),
            probes in proptest::collection::vec((0usize..8, 0u64..7), 0..40),
        ) {
            let keys: [&[u8]; 8] = [
                b"", b"a", b"a\0", b"abcdefghijklmnop", b"abcdefghijklmnopq",
                b"abcdefghijklmnop\0", b"abcdefghijklmnoq", b"\xff\xff",
            ];
            let list = SkipList::new();
            let mut model = BTreeMap::new();
            for (k, t, v) in entries {
                if let std::collections::btree_map::Entry::Vacant(e) = model.entry(model_key(k, t)) {
                    list.insert(k, t, &v);
                    e.insert(v);
                }
            }
            let all: Vec<_> = list.iter().map(owned).collect();
            let want: Vec<_> = model.iter().map(|((k, t), v)| (k.clone(), t.0, v.clone())).collect();
            proptest::prop_assert_eq!(&all, &want);
            proptest::prop_assert_eq!(list.len(), want.len());
            proptest::prop_assert_eq!(list.last().map(owned), want.last().cloned());
            for (i, t) in probes {
                let probe = model_key(keys[i], t);
                let key = Key::new(keys[i], t);
                use std::ops::Bound::*;
                let as_tuple = |e: Option<(&ModelKey, &Vec<u8>)>| {
                    e.map(|((k, t), v)| (k.clone(), t.0, v.clone()))
                };
                proptest::prop_assert_eq!(
                    list.seek(&key, true).map(owned),
                    as_tuple(model.range((Included(&probe), Unbounded)).next())
                );
                proptest::prop_assert_eq!(
                    list.seek(&key, false).map(owned),
                    as_tuple(model.range((Excluded(&probe), Unbounded)).next())
                );
                proptest::prop_assert_eq!(
                    list.seek_back(&key, true).map(owned),
                    as_tuple(model.range((Unbounded, Included(&probe))).next_back())
                );
                proptest::prop_assert_eq!(
                    list.seek_back(&key, false).map(owned),
                    as_tuple(model.range((Unbounded, Excluded(&probe))).next_back())
                );
            }
        }
    }

    /// Readers walking the list (one forward along level 0, one backward
    /// by `seek_back`, as a memtable iterator's back end does) and seeking
    /// while the writer inserts in random order always see a sorted list
    /// that holds every key published before the walk began, with its
    /// value whole.
    #[test]
    fn readers_see_a_sorted_list_holding_every_published_node() {
        // Fewer under Miri, which checks every access of the unsafe code.
        const N: u64 = if cfg!(miri) { 400 } else { 20_000 };
        let list = Arc::new(SkipList::new());
        let published = Arc::new(AtomicU64::new(0));
        // A fixed permutation of 0..N (multiplication by an odd constant).
        let key_of = |i: u64| (i * 7_919) % N;
        let key = |k: u64| format!("key{k:012}").into_bytes();
        std::thread::scope(|s| {
            for backward in [false, true] {
                let (list, published) = (Arc::clone(&list), Arc::clone(&published));
                s.spawn(move || loop {
                    let upto = published.load(atomic::Ordering::Acquire);
                    let mut seen = 0u64;
                    let mut last: Option<Vec<u8>> = None;
                    let walk: Box<dyn Iterator<Item = Node<'_>>> = if backward {
                        Box::new(std::iter::successors(list.last(), |n| {
                            list.seek_back(&n.key(), false)
                        }))
                    } else {
                        Box::new(list.iter())
                    };
                    for n in walk {
                        let in_order = match &last {
                            None => true,
                            Some(l) if backward => n.user_key() < l.as_slice(),
                            Some(l) => l.as_slice() < n.user_key(),
                        };
                        assert!(in_order, "out of order (backward: {backward})");
                        let k: u64 = std::str::from_utf8(&n.user_key()[3..])
                            .unwrap()
                            .parse()
                            .unwrap();
                        assert_eq!(n.value(), &k.to_le_bytes().repeat((k % 7) as usize)[..]);
                        last = Some(n.user_key().to_vec());
                        seen += 1;
                    }
                    assert!(seen >= upto, "saw {seen} of {upto} published");
                    if upto > 0 {
                        let k = key_of(upto - 1);
                        let found = list.seek(&Key::new(&key(k), u64::MAX), true).unwrap();
                        assert_eq!(found.user_key(), key(k));
                    }
                    if upto == N {
                        break;
                    }
                });
            }
            for i in 0..N {
                let k = key_of(i);
                list.insert(&key(k), 1, &k.to_le_bytes().repeat((k % 7) as usize));
                published.store(i + 1, atomic::Ordering::Release);
                if i % 64 == 0 {
                    // Widen the window in which readers meet a half-linked
                    // tower.
                    std::thread::yield_now();
                }
            }
        });
        assert_eq!(list.len(), N as usize);
        let h = list.height.load(atomic::Ordering::Relaxed);
        // log2(20,000) is about 14 (log2(400) about 9): the height is
        // near it, not 1 or 24.
        let low = if cfg!(miri) { 6 } else { 11 };
        assert!((low..=MAX_HEIGHT).contains(&h), "height {h}");
    }

    #[test]
    fn heights_fall_geometrically() {
        let mut w = Writer {
            arena: Arena::new(),
            rng: 0x9E37_79B9_7F4A_7C15,
        };
        let mut at_least = [0u32; MAX_HEIGHT + 1];
        for _ in 0..100_000 {
            let h = w.random_height();
            for c in &mut at_least[..=h] {
                *c += 1;
            }
        }
        // Half reach height 2, a quarter height 3, an eighth height 4.
        for (h, want) in [(2, 50_000.0), (3, 25_000.0), (4, 12_500.0)] {
            let got = f64::from(at_least[h]);
            assert!((got / want - 1.0).abs() < 0.1, "height {h}: {got}");
        }
    }
}
