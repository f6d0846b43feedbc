//! How a [`crate::sstable::Table`] reads its memory map when the page
//! cache does not hold the file (DESIGN.md 3.3).
//!
//! A table map is advised `MADV_RANDOM`, so a page fault reads one page
//! instead of a readahead window that would evict the pages the next
//! lookups need. A data block (4 KiB by default, at any file offset)
//! nearly always spans two pages, though, and two faults are two disk
//! round trips one after the other. `madvise(MADV_WILLNEED)` over the
//! block asks for both pages in one request, but it is a system call
//! (measured: 30% off in-memory `readrandom`), so a table asks for it
//! only while it is [`ColdHint`]: while its recent block reads were slow
//! enough to have waited on the disk. One read in [`TIMED_ONE_IN`] is
//! timed, to keep the clock off most lookups.
//!
//! A scan is different: once an iterator has read two blocks in a row it
//! is likely to read many, and [`ScanReadahead`] asks for the blocks ahead
//! of it in windows that double from 64 KiB to 1 MiB, as the kernel's own
//! readahead would, at one system call per window.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// A block read slower than this waited on the disk, not on memory: a
/// page-cache hit, the block's checksum included, takes a microsecond or
/// two; a read from the disk tens to hundreds.
pub const COLD_READ: Duration = Duration::from_micros(20);

/// Block reads that ask for their whole block after a cold one.
pub const COLD_READS_AHEAD: u32 = 64;

/// One block read in this many, per thread, is timed: a clock read costs
/// about 45 ns here, a twentieth of an in-memory lookup, and a table whose
/// pages are gone makes every read slow, so a sample finds it as surely.
pub const TIMED_ONE_IN: u32 = 16;

thread_local! {
    /// Block reads this thread has made, for [`ColdHint::should_time`].
    static READS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether a table's recent block reads waited on the disk: a countdown
/// that a cold read resets to [`COLD_READS_AHEAD`] and every prefetched
/// read decrements, so a table whose pages are back in memory stops
/// paying for the system call within that many reads.
#[derive(Debug, Default)]
pub struct ColdHint {
    reads_ahead: AtomicU32,
}

impl ColdHint {
    /// True if the next block read should ask for its whole block first;
    /// counts that read against the countdown.
    pub fn take(&self) -> bool {
        // Relaxed: a hint; a lost update costs one system call or one
        // extra fault.
        let left = self.reads_ahead.load(Ordering::Relaxed);
        if left == 0 {
            return false;
        }
        self.reads_ahead.store(left - 1, Ordering::Relaxed);
        true
    }

    /// True for the block reads to time: one in [`TIMED_ONE_IN`] of the
    /// calling thread's.
    pub fn should_time() -> bool {
        READS.with(|n| {
            let v = n.get().wrapping_add(1);
            n.set(v);
            v % TIMED_ONE_IN == 0
        })
    }

    /// Records how long a (timed) block read took.
    pub fn record(&self, elapsed: Duration) {
        if elapsed >= COLD_READ {
            self.reads_ahead.store(COLD_READS_AHEAD, Ordering::Relaxed);
        }
    }
}

/// Blocks a scan reads in a row before it reads ahead: a seek followed by
/// a few steps reads one or two blocks, already in memory more often than
/// not, and a window asked for then is a system call wasted (RocksDB reads
/// ahead from an iterator's third read of a file too:
/// `num_file_reads_for_auto_readahead = 2`). Measured with a seek and 10
/// steps over 3 tables of 1M keys in memory: from the second block, the
/// `madvise` calls took 6.7% of the time (DESIGN.md 3.3).
pub const SCAN_READS_BEFORE_READAHEAD: u32 = 2;

/// The first readahead window of a scan, in bytes.
pub const SCAN_WINDOW_MIN: u64 = 64 << 10;
/// The largest readahead window of a scan, in bytes.
pub const SCAN_WINDOW_MAX: u64 = 1 << 20;

/// The readahead of one forward scan over a table's data blocks: which
/// byte range to ask the kernel for, and when.
#[derive(Debug, Default, Clone)]
pub struct ScanReadahead {
    /// Blocks read so far by the scan.
    blocks: u32,
    /// The scan has asked for everything before this file offset.
    requested_to: u64,
    /// The size of the next window.
    window: u64,
}

impl ScanReadahead {
    /// Called as the scan opens a block that starts at `offset` (data
    /// ends at `data_end`): the byte range `(start, len)` to ask the
    /// kernel for now, if any. Nothing for the scan's first
    /// [`SCAN_READS_BEFORE_READAHEAD`] blocks (a seek followed by a few
    /// steps should not read ahead); from the next on, a window past what
    /// was asked for before, once the scan reaches it.
    pub fn on_block(&mut self, offset: u64, data_end: u64) -> Option<(u64, u64)> {
        self.blocks = self.blocks.saturating_add(1);
        if self.blocks <= SCAN_READS_BEFORE_READAHEAD
            || offset < self.requested_to
            || offset >= data_end
        {
            return None;
        }
        self.window = if self.window == 0 {
            SCAN_WINDOW_MIN
        } else {
            (self.window * 2).min(SCAN_WINDOW_MAX)
        };
        let len = self.window.min(data_end - offset);
        self.requested_to = offset + len;
        Some((offset, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cold_read_turns_on_whole_block_reads_for_a_countdown() {
        let h = ColdHint::default();
        assert!(!h.take(), "a new table is not cold");
        h.record(Duration::from_micros(2));
        assert!(!h.take(), "a fast read is a page-cache hit");
        h.record(COLD_READ);
        let taken = (0..COLD_READS_AHEAD + 10).filter(|_| h.take()).count();
        assert_eq!(taken, COLD_READS_AHEAD as usize);
        assert!(!h.take());
        // Another cold read starts the countdown again.
        h.record(Duration::from_millis(1));
        assert!(h.take());
    }

    #[test]
    fn one_read_in_sixteen_is_timed_per_thread() {
        let timed = (0..TIMED_ONE_IN * 10)
            .filter(|_| ColdHint::should_time())
            .count();
        assert_eq!(timed, 10);
        let other = std::thread::spawn(|| (0..TIMED_ONE_IN - 1).any(|_| ColdHint::should_time()));
        assert!(
            !other.join().unwrap(),
            "another thread counts its own reads"
        );
    }

    #[test]
    fn a_scan_reads_ahead_from_its_third_block_in_doubling_windows() {
        let mut r = ScanReadahead::default();
        let end = 10 << 20;
        assert_eq!(r.on_block(0, end), None, "first block: maybe a seek");
        assert_eq!(r.on_block(4096, end), None, "a seek and a few steps");
        // Third block at 8 KiB: a 64 KiB window from there.
        assert_eq!(r.on_block(8192, end), Some((8192, 64 << 10)));
        // Blocks inside the window ask for nothing more.
        assert_eq!(r.on_block(12288, end), None);
        assert_eq!(r.on_block(8192 + (60 << 10), end), None);
        // Past it: a window twice as large, then up to 1 MiB.
        let at = 8192 + (64 << 10);
        assert_eq!(r.on_block(at, end), Some((at, 128 << 10)));
        let mut at = at + (128 << 10);
        let mut sizes = Vec::new();
        while let Some((start, len)) = r.on_block(at, end) {
            assert_eq!(start, at);
            sizes.push(len);
            at += len;
            if sizes.len() == 5 {
                break;
            }
        }
        assert_eq!(sizes, [256 << 10, 512 << 10, 1 << 20, 1 << 20, 1 << 20]);
        // The last window stops at the end of the data.
        let mut r = ScanReadahead::default();
        r.on_block(0, 100_000);
        r.on_block(4096, 100_000);
        assert_eq!(r.on_block(90_000, 100_000), Some((90_000, 10_000)));
        assert_eq!(r.on_block(100_000, 100_000), None);
    }
}
