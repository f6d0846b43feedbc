//! [`BlockCache`]: a bounded, sharded cache of data blocks read with
//! `pread`, for [`crate::options::TableReads::Cached`] (DESIGN.md 3.3).
//!
//! Each shard is a CLOCK cache (Corbató 1968; the approximation of LRU
//! that RocksDB's `HyperClockCache` and most kernels use): a lookup sets
//! its slot's reference bit, and eviction sweeps a hand over the slots,
//! clearing set bits and evicting the first slot found clear. Blocks are
//! `Arc<[u8]>`, so a reader keeps the block it got even if it is evicted
//! meanwhile. Only blocks whose checksum was verified are inserted.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use parking_lot::Mutex;

/// Which block: the table's file number and the block's file offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockKey {
    /// The table's file number (never reused within a database).
    pub file_number: u64,
    /// The block's offset in the file.
    pub offset: u64,
}

/// Bytes charged per cached block on top of its contents: the slot, the
/// map entry and the `Arc` header, rounded up.
pub const ENTRY_OVERHEAD: usize = 96;

/// Shards, each with its own lock, so that concurrent readers rarely
/// wait on each other.
const SHARDS: usize = 16;

/// Hashes a [`BlockKey`] with one multiply per word, then folds the high
/// half into the low (a product's low bits depend only on its input's
/// low bits, and block offsets share theirs); SipHash would cost more
/// than the rest of a hit.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(23) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type KeyMap = HashMap<BlockKey, usize, BuildHasherDefault<KeyHasher>>;

struct Slot {
    key: BlockKey,
    block: Arc<[u8]>,
    referenced: bool,
}

#[derive(Default)]
struct Shard {
    map: KeyMap,
    /// Slots in CLOCK order; `None` marks a free slot (listed in `free`).
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    hand: usize,
    /// Bytes charged: contents plus [`ENTRY_OVERHEAD`] per block.
    used: usize,
}

impl Shard {
    fn evict_one(&mut self) -> bool {
        if self.map.is_empty() {
            return false;
        }
        loop {
            if self.hand >= self.slots.len() {
                self.hand = 0;
            }
            let i = self.hand;
            self.hand += 1;
            let Some(slot) = self.slots[i].as_mut() else {
                continue;
            };
            if slot.referenced {
                slot.referenced = false;
                continue;
            }
            let slot = self.slots[i].take().expect("checked above");
            self.map.remove(&slot.key);
            self.used -= slot.block.len() + ENTRY_OVERHEAD;
            self.free.push(i);
            return true;
        }
    }
}

/// A bounded cache of data blocks, shared by every table of a database.
///
/// Capacity is in bytes of block contents plus [`ENTRY_OVERHEAD`] per
/// block, split evenly over 16 shards; a block larger than a shard's
/// share is not cached.
///
/// ```
/// use std::sync::Arc;
/// use siftdb::inspect::sstable::block_cache::{BlockCache, BlockKey};
///
/// let cache = BlockCache::new(1 << 20);
/// let key = BlockKey { file_number: 7, offset: 4096 };
/// assert!(cache.get(key).is_none());
/// cache.insert(key, Arc::from(&b"block bytes"[..]));
/// assert_eq!(&*cache.get(key).unwrap(), b"block bytes");
/// assert!(cache.used() > 0 && cache.used() <= cache.capacity());
/// ```
pub struct BlockCache {
    shards: Box<[Mutex<Shard>]>,
    shard_capacity: usize,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.capacity())
            .field("used", &self.used())
            .finish()
    }
}

impl BlockCache {
    /// A cache holding at most `capacity` bytes (contents plus overhead).
    pub fn new(capacity: usize) -> BlockCache {
        BlockCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            shard_capacity: capacity / SHARDS,
        }
    }

    fn shard(&self, key: &BlockKey) -> &Mutex<Shard> {
        let mut h = KeyHasher::default();
        h.write_u64(key.file_number);
        h.write_u64(key.offset);
        &self.shards[(h.finish() >> 32) as usize % SHARDS]
    }

    /// The cached block `key`, if present (marking it recently used).
    pub fn get(&self, key: BlockKey) -> Option<Arc<[u8]>> {
        let mut shard = self.shard(&key).lock();
        let &i = shard.map.get(&key)?;
        let slot = shard.slots[i].as_mut().expect("mapped slots are full");
        slot.referenced = true;
        Some(Arc::clone(&slot.block))
    }

    /// Caches `block` as `key` (replacing any block cached under it),
    /// evicting blocks not used since the hand last passed them until it
    /// fits. A block larger than a shard's share is not cached.
    pub fn insert(&self, key: BlockKey, block: Arc<[u8]>) {
        let charge = block.len() + ENTRY_OVERHEAD;
        if charge > self.shard_capacity {
            return;
        }
        let mut shard = self.shard(&key).lock();
        if let Some(&i) = shard.map.get(&key) {
            let old = shard.slots[i].take().expect("mapped slots are full");
            shard.used -= old.block.len() + ENTRY_OVERHEAD;
            shard.map.remove(&key);
            shard.free.push(i);
        }
        while shard.used + charge > self.shard_capacity {
            if !shard.evict_one() {
                break;
            }
        }
        let slot = Slot {
            key,
            block,
            referenced: false,
        };
        let i = match shard.free.pop() {
            Some(i) => {
                shard.slots[i] = Some(slot);
                i
            }
            None => {
                shard.slots.push(Some(slot));
                shard.slots.len() - 1
            }
        };
        shard.map.insert(key, i);
        shard.used += charge;
    }

    /// The configured capacity, in bytes (rounded down to a multiple of
    /// the shard count).
    pub fn capacity(&self) -> usize {
        self.shard_capacity * SHARDS
    }

    /// Bytes charged now: cached contents plus [`ENTRY_OVERHEAD`] per
    /// block. Never above [`BlockCache::capacity`].
    pub fn used(&self) -> usize {
        self.shards.iter().map(|s| s.lock().used).sum()
    }

    /// Blocks cached now.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().map.len()).sum()
    }

    /// True if no block is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(file_number: u64, offset: u64) -> BlockKey {
        BlockKey {
            file_number,
            offset,
        }
    }

    fn block(fill: u8, len: usize) -> Arc<[u8]> {
        Arc::from(vec![fill; len])
    }

    #[test]
    fn capacity_is_respected_whatever_is_inserted() {
        let cache = BlockCache::new(SHARDS * 10_000);
        for i in 0..2_000u64 {
            cache.insert(
                key(i % 5, i * 4096),
                block(i as u8, 1000 + (i % 7) as usize * 100),
            );
            assert!(cache.used() <= cache.capacity(), "after {i}");
        }
        // Each shard holds about 10_000 / ~1400 bytes of blocks, so the
        // keys must spread over every shard.
        assert!(cache.len() >= SHARDS * 4, "{} cached", cache.len());
        assert!(cache.shards.iter().all(|s| !s.lock().map.is_empty()));
        assert!(cache.used() >= cache.capacity() / 2, "{cache:?}");
        // What is cached is what was inserted under that key.
        for i in 0..2_000u64 {
            if let Some(b) = cache.get(key(i % 5, i * 4096)) {
                assert_eq!(b.len(), 1000 + (i % 7) as usize * 100);
                assert!(b.iter().all(|&x| x == i as u8));
            }
        }
    }

    #[test]
    fn eviction_keeps_blocks_used_since_the_hand_passed() {
        // One shard's share fits three 1 KiB blocks.
        let cache = BlockCache::new(SHARDS * (3 * (1024 + ENTRY_OVERHEAD)));
        // Keys of one shard.
        let keys: Vec<BlockKey> = (0..10_000)
            .map(|i| key(1, i * 4096))
            .filter(|k| std::ptr::eq(cache.shard(k), cache.shard(&key(1, 0))))
            .take(5)
            .collect();
        for k in &keys[..3] {
            cache.insert(*k, block(1, 1024));
        }
        assert!(cache.get(keys[0]).is_some(), "makes keys[0] referenced");
        cache.insert(keys[3], block(2, 1024));
        assert!(cache.get(keys[0]).is_some(), "referenced: kept");
        assert!(
            cache.get(keys[1]).is_none(),
            "the first unreferenced: evicted"
        );
        assert!(cache.get(keys[2]).is_some());
        assert!(cache.get(keys[3]).is_some());
        assert_eq!(cache.len(), 3);
    }

    #[test]
    fn a_block_larger_than_a_shard_is_not_cached_and_a_replacement_is_charged_once() {
        let cache = BlockCache::new(SHARDS * 2048);
        cache.insert(key(1, 0), block(0, 4096));
        assert!(cache.is_empty());
        cache.insert(key(1, 0), block(1, 100));
        cache.insert(key(1, 0), block(2, 200));
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.used(), 200 + ENTRY_OVERHEAD);
        assert_eq!(cache.get(key(1, 0)).unwrap()[0], 2);
    }

    #[test]
    fn concurrent_readers_and_writers_see_whole_blocks() {
        let cache = Arc::new(BlockCache::new(SHARDS * 8 * (512 + ENTRY_OVERHEAD)));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let cache = Arc::clone(&cache);
                std::thread::spawn(move || {
                    for i in 0..20_000u64 {
                        let k = key(t % 2, (i % 300) * 512);
                        match cache.get(k) {
                            // A block under a key always holds its key's byte.
                            Some(b) => assert!(b.iter().all(|&x| x == (i % 300) as u8)),
                            None => cache.insert(k, block((i % 300) as u8, 512)),
                        }
                        if i % 64 == 0 {
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(cache.used() <= cache.capacity());
        assert!(!cache.is_empty());
    }
}
