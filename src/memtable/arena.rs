//! [`Arena`]: the bytes of a memtable's entries, bump-allocated in chunks
//! of [`CHUNK`] bytes and freed together when the memtable is dropped.
//!
//! One `malloc` per put for an entry's bytes, and one `free` each when a
//! flushed memtable is dropped on the background thread, cost twice: in
//! the insert path, and in the drop, whose frees of the writer's
//! allocations take the lock of the writer's malloc arena and collide
//! with its `malloc`s (DESIGN.md 13, where `fillrandom`'s tail comes
//! from). Here an entry's bytes are copied to the end of the current
//! chunk, and a dropped memtable frees a handful of chunks.
//!
//! Bytes handed out are never written again or moved until the arena is
//! dropped; the memtable drops its skiplist, whose entries point here,
//! first.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

use parking_lot::Mutex;

/// Bytes per chunk; an entry larger than a quarter of this gets a chunk of
/// its own, so that no chunk wastes more than a quarter of itself.
pub(super) const CHUNK: usize = 1 << 20;

/// A bump allocator of immutable byte strings.
#[derive(Debug)]
pub(super) struct Arena {
    state: Mutex<Bump>,
}

#[derive(Debug)]
struct Bump {
    /// Every chunk allocated, to free at drop.
    chunks: Vec<(NonNull<u8>, Layout)>,
    /// The next free byte of the current chunk and how many follow it
    /// (dangling and 0 before the first chunk).
    next: NonNull<u8>,
    left: usize,
    /// Bytes of all chunks.
    allocated: usize,
}

// SAFETY: the chunks are plain heap memory owned by the arena; the
// pointers in `Bump` are only used under its mutex, and the bytes handed
// out are immutable, so sharing or moving the arena across threads is
// sound.
unsafe impl Send for Arena {}
// SAFETY: as above: every mutation goes through the mutex.
unsafe impl Sync for Arena {}

impl Arena {
    /// An arena with no chunk yet.
    pub(super) fn new() -> Arena {
        Arena {
            state: Mutex::new(Bump {
                chunks: Vec::new(),
                next: NonNull::dangling(),
                left: 0,
                allocated: 0,
            }),
        }
    }

    /// Copies `parts`, one after another, into new arena bytes and returns
    /// where they start and how many there are. The bytes stay valid and
    /// unchanged until the arena is dropped.
    ///
    /// # Panics
    /// Aborts (as `Vec` does) if the allocator fails; panics if the total
    /// length overflows `usize`.
    pub(super) fn copy(&self, parts: &[&[u8]]) -> (NonNull<u8>, usize) {
        let len = parts
            .iter()
            .map(|p| p.len())
            .try_fold(0usize, usize::checked_add)
            .expect("entry length overflows usize");
        let mut b = self.state.lock();
        let start = if len > CHUNK / 4 {
            b.chunk(len)
        } else {
            if b.left < len {
                b.next = b.chunk(CHUNK);
                b.left = CHUNK;
            }
            let start = b.next;
            // SAFETY: `left >= len` bytes follow `start` in the current
            // chunk (for `len == 0` before any chunk, the offset is 0).
            b.next = unsafe { start.add(len) };
            b.left -= len;
            start
        };
        let mut at = start.as_ptr();
        for p in parts {
            // SAFETY: `[start, start + len)` lies in one live chunk (or is
            // empty), was reserved for this call alone under the lock, and
            // no reader can see it before the caller publishes the entry;
            // each part is copied into its own subrange of it, from memory
            // outside the arena (so the ranges do not overlap).
            unsafe {
                std::ptr::copy_nonoverlapping(p.as_ptr(), at, p.len());
                at = at.add(p.len());
            }
        }
        (start, len)
    }

    /// Bytes allocated in chunks.
    #[cfg(test)]
    pub(super) fn allocated(&self) -> usize {
        self.state.lock().allocated
    }
}

impl Bump {
    /// Allocates a chunk of `size > 0` bytes, recorded for the drop.
    fn chunk(&mut self, size: usize) -> NonNull<u8> {
        let layout = Layout::from_size_align(size, 16).expect("chunk size overflows");
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
        for (ptr, layout) in self.state.get_mut().chunks.drain(..) {
            // SAFETY: each chunk was allocated by `Bump::chunk` with this
            // layout and is freed once; the memtable drops every entry
            // pointing into the arena before the arena.
            unsafe { dealloc(ptr.as_ptr(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(p: NonNull<u8>, len: usize) -> Vec<u8> {
        // SAFETY: test: the arena is alive and `(p, len)` came from it.
        unsafe { std::slice::from_raw_parts(p.as_ptr(), len) }.to_vec()
    }

    /// Copies land whole and stay put while later ones fill the chunk and
    /// start new ones; large entries get chunks of their own.
    #[test]
    fn copies_stay_valid_across_chunks() {
        let a = Arena::new();
        let mut kept = Vec::new();
        for i in 0..20_000u32 {
            let v = vec![(i % 251) as u8; (i % 300) as usize];
            let (p, len) = a.copy(&[&i.to_le_bytes(), &v]);
            kept.push((p, len, i, v));
        }
        let big = vec![7u8; CHUNK];
        let (bp, blen) = a.copy(&[&big]);
        let (ep, elen) = a.copy(&[]);
        assert_eq!(elen, 0);
        assert!(bytes(ep, 0).is_empty());
        for (p, len, i, v) in &kept {
            let got = bytes(*p, *len);
            assert_eq!(&got[..4], &i.to_le_bytes());
            assert_eq!(&got[4..], &v[..]);
        }
        assert_eq!(bytes(bp, blen), big);
        // 20,000 entries of 4 to 303 bytes: about 3 MiB in 1 MiB chunks,
        // plus the large one's own.
        assert!(a.allocated() >= 4 * CHUNK && a.allocated() <= 6 * CHUNK);
    }
}
