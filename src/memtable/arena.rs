//! [`Arena`]: the memory of a memtable's skiplist nodes (each node's
//! header, tower and entry bytes), bump-allocated in chunks of [`CHUNK`]
//! bytes and freed together when the memtable is dropped.
//!
//! One `malloc` per put, and one `free` each when a flushed memtable is
//! dropped on the background thread, cost twice: in the insert path, and
//! in the drop, whose frees of the writer's allocations take the lock of
//! the writer's malloc arena and collide with its `malloc`s (DESIGN.md 13,
//! where `fillrandom`'s tail came from). Here a node is carved from the
//! end of the current chunk, and a dropped memtable frees a handful of
//! chunks.
//!
//! The arena has one owner, the skiplist's writer (under its mutex);
//! memory handed out is never moved or freed until the arena is dropped,
//! with the skiplist that points into it.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

/// Bytes per chunk; an allocation larger than a quarter of this gets a
/// chunk of its own, so that no chunk wastes more than a quarter of itself.
pub(super) const CHUNK: usize = 1 << 20;

/// Alignment of every allocation (a skiplist node's header and links).
pub(super) const ALIGN: usize = 8;

/// A bump allocator of 8-byte aligned blocks.
#[derive(Debug)]
pub(super) struct Arena {
    /// Every chunk allocated, to free at drop.
    chunks: Vec<(NonNull<u8>, Layout)>,
    /// The next free byte of the current chunk and how many follow it
    /// (dangling and 0 before the first chunk).
    next: NonNull<u8>,
    left: usize,
    /// Bytes of all chunks.
    allocated: usize,
}

// SAFETY: the chunks are plain heap memory owned by the arena, which only
// its owner (`&mut self`) changes; the memory handed out is the caller's
// to share (the skiplist publishes it with release stores). Moving the
// arena to another thread moves that ownership with it.
unsafe impl Send for Arena {}

impl Arena {
    /// An arena with no chunk yet.
    pub(super) fn new() -> Arena {
        Arena {
            chunks: Vec::new(),
            // Aligned, so that a first allocation of 0 bytes is too.
            next: NonNull::<u64>::dangling().cast(),
            left: 0,
            allocated: 0,
        }
    }

    /// `len` fresh bytes, 8-byte aligned, uninitialised, valid and never
    /// handed out again until the arena is dropped.
    ///
    /// # Panics
    /// Aborts (as `Vec` does) if the allocator fails; panics if `len`
    /// rounded up to 8 overflows `usize`.
    pub(super) fn alloc(&mut self, len: usize) -> NonNull<u8> {
        let len = len
            .checked_next_multiple_of(ALIGN)
            .expect("allocation length overflows usize");
        if len > CHUNK / 4 {
            return self.chunk(len.max(ALIGN));
        }
        if self.left < len {
            self.next = self.chunk(CHUNK);
            self.left = CHUNK;
        }
        let start = self.next;
        // SAFETY: `left >= len` bytes follow `start` in the current chunk
        // (for `len == 0` before any chunk, the offset is 0).
        self.next = unsafe { start.add(len) };
        self.left -= len;
        start
    }

    /// Bytes allocated in chunks.
    #[cfg(test)]
    pub(super) fn allocated(&self) -> usize {
        self.allocated
    }

    /// Allocates a chunk of `size > 0` bytes, recorded for the drop.
    fn chunk(&mut self, size: usize) -> NonNull<u8> {
        let layout = Layout::from_size_align(size, ALIGN).expect("chunk size overflows");
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { alloc(layout) };
        let Some(ptr) = NonNull::new(ptr) else {
            handle_alloc_error(layout)
        };
        self.chunks.push((ptr, layout));
        self.allocated += size;
        ptr
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for (ptr, layout) in self.chunks.drain(..) {
            // SAFETY: each chunk was allocated by `Arena::chunk` with this
            // layout and is freed once; the skiplist owning the arena is
            // being dropped, so nothing points into it any more.
            unsafe { dealloc(ptr.as_ptr(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks are aligned, disjoint and stay put while later ones fill the
    /// chunk and start new ones; large ones get chunks of their own.
    #[test]
    fn blocks_stay_valid_and_aligned_across_chunks() {
        let mut a = Arena::new();
        let mut kept = Vec::new();
        // Fewer under Miri, which is slow: still more than one chunk.
        let n = if cfg!(miri) { 9_000 } else { 20_000 };
        for i in 0..n {
            let len = 4 + (i % 300) as usize;
            let p = a.alloc(len);
            assert_eq!(p.as_ptr() as usize % ALIGN, 0);
            let fill = (i % 251) as u8;
            // SAFETY: test: `len` fresh bytes of the live arena.
            unsafe { std::ptr::write_bytes(p.as_ptr(), fill, len) };
            kept.push((p, len, fill));
        }
        let big = a.alloc(CHUNK);
        // SAFETY: test: as above.
        unsafe { std::ptr::write_bytes(big.as_ptr(), 7, CHUNK) };
        let empty = a.alloc(0);
        assert_eq!(empty.as_ptr() as usize % ALIGN, 0);
        for (p, len, fill) in &kept {
            // SAFETY: test: the arena is alive and `(p, len)` came from it.
            let got = unsafe { std::slice::from_raw_parts(p.as_ptr(), *len) };
            assert!(got.iter().all(|b| b == fill), "block of {len} overwritten");
        }
        // 20,000 blocks of 8 to 304 bytes: about 3 MiB in 1 MiB chunks,
        // plus the large one's own (9,000: about 1.4 MiB, plus it).
        let chunks = if cfg!(miri) { 3..=4 } else { 4..=6 };
        assert!(
            chunks.contains(&(a.allocated() / CHUNK)),
            "{}",
            a.allocated()
        );
    }
}
