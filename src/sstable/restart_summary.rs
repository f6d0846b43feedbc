//! [`RestartSummaries`]: for each data block of a table, the user-key
//! prefixes and offsets of its restart points, recorded the first time a
//! point lookup reads the block, so that later lookups pick the restart
//! interval to scan from memory (DESIGN.md 3.3).
//!
//! Without one, a lookup's search of a block is a chain of dependent
//! reads: the restart count at the block's end says where the restart
//! array is, the array says where the restart keys are, a comparison with
//! one says which to read next, and only then does the scan start. Issued
//! together by touching every line of the block first
//! ([`super::block::touch_lines`]) the misses overlap, but a 4 KiB block
//! is 64 lines to bring in. With the summary in memory, the lookup knows
//! the interval before it touches the block, and touches only that
//! interval's lines (and the block's last, which [`Block::new`] reads).
//!
//! Each block has one 64-byte slot, one cache line: the offsets of restart
//! points 1 to 3 and the [`user_key_prefix`] of their keys. A block with
//! more than 4 restart points is marked as not summarized and searched as
//! before. Slots are atomics, filled by whichever reader reads the block
//! first (two readers racing write the same words); a slot's first word
//! is stored last, with `Release`, and read first, with `Acquire`.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Result;
use crate::key::{user_key_of, user_key_prefix};
use crate::sstable::block::Block;

/// Restart points after the first that a slot holds: a block with at most
/// `MAX_SUMMARIZED + 1` restart points is summarized.
const MAX_SUMMARIZED: usize = 3;

/// Set in a slot's first word once it is recorded.
const RECORDED: u64 = 1 << 63;
/// Set with [`RECORDED`] when the block cannot be summarized (too many
/// restart points, larger than 64 KiB, or a malformed restart key).
const UNSUMMARIZED: u64 = 1 << 62;

/// One block's summary. Word 0: [`RECORDED`], [`UNSUMMARIZED`], the
/// number `n` of summarized restart points (bits 48..50) and their
/// offsets as 16-bit numbers (restart `j` in bits `16·(j−1)..16·j`).
/// Words `2j−1, 2j`: the high and low halves of restart `j`'s key prefix.
#[repr(C, align(64))]
#[derive(Debug, Default)]
struct Slot([AtomicU64; 8]);

/// The restart summaries of one table's data blocks, in index order.
#[derive(Debug)]
pub(crate) struct RestartSummaries {
    slots: Box<[Slot]>,
}

/// What a block's summary says about where to scan it for a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ScanStart {
    /// Not recorded yet: search the whole block, then [`RestartSummaries::record`] it.
    Unknown,
    /// Recorded, but it cannot tell: the block is not summarized, or a
    /// restart key's prefix ties with the key's. Search the whole block.
    Undecided,
    /// Scan from restart point `restart`; the answer lies in `touch`, the
    /// bytes from that restart point to the next one's first line (or to
    /// the end of the entries).
    At { restart: usize, touch: Range<usize> },
}

impl RestartSummaries {
    /// Empty summaries for a table of `blocks` data blocks: 64 bytes each.
    pub(crate) fn new(blocks: usize) -> RestartSummaries {
        RestartSummaries {
            slots: (0..blocks).map(|_| Slot::default()).collect(),
        }
    }

    /// Bytes allocated.
    pub(crate) fn memory(&self) -> usize {
        std::mem::size_of_val(&*self.slots)
    }

    /// Where to scan block `i` (of `block_len` bytes, restart array
    /// included) for a key whose [`user_key_prefix`] is `target`, as far
    /// as its summary tells.
    pub(crate) fn scan_start(&self, i: usize, target: u128, block_len: usize) -> ScanStart {
        let Some(slot) = self.slots.get(i) else {
            return ScanStart::Undecided;
        };
        let head = slot.0[0].load(Ordering::Acquire);
        if head & RECORDED == 0 {
            return ScanStart::Unknown;
        }
        if head & UNSUMMARIZED != 0 {
            return ScanStart::Undecided;
        }
        let n = ((head >> 48) & 0b11) as usize;
        // Restart keys increase, so their prefixes do not decrease: the
        // scan starts at the last restart point whose prefix is below the
        // key's, whose key is then below it too (`user_key_prefix`). A
        // prefix equal to the key's decides nothing.
        let mut restart = 0;
        for j in 1..=n {
            let hi = slot.0[2 * j - 1].load(Ordering::Relaxed);
            let lo = slot.0[2 * j].load(Ordering::Relaxed);
            let prefix = (u128::from(hi) << 64) | u128::from(lo);
            match prefix.cmp(&target) {
                std::cmp::Ordering::Less => restart = j,
                std::cmp::Ordering::Equal => return ScanStart::Undecided,
                std::cmp::Ordering::Greater => break,
            }
        }
        let offset = |j: usize| ((head >> (16 * (j - 1))) & 0xffff) as usize;
        let entries_end = block_len.saturating_sub(4 * (n + 2));
        let start = if restart == 0 { 0 } else { offset(restart) };
        // The answer may be the next restart point's first entry.
        let end = if restart < n {
            (offset(restart + 1) + 64).min(entries_end)
        } else {
            entries_end
        };
        ScanStart::At {
            restart,
            touch: start..end.max(start),
        }
    }

    /// Records block `i`'s summary from `block` (its contents, checked).
    /// Does nothing if `i` is past the table's blocks.
    pub(crate) fn record(&self, i: usize, block: &Block<'_>) {
        let Some(slot) = self.slots.get(i) else {
            return;
        };
        let head = summarize(block, slot)
            .ok()
            .flatten()
            .unwrap_or(UNSUMMARIZED);
        slot.0[0].store(head | RECORDED, Ordering::Release);
    }
}

/// Stores the key prefixes of `block`'s restart points after the first in
/// `slot` and returns the slot's first word, or `None` if the block has
/// more restart points than a slot holds, is too large for 16-bit offsets,
/// or has a restart key too short to be an internal key (the words stored
/// then mean nothing: the first word will say so).
///
/// # Errors
/// [`crate::Error::Corruption`] if a restart entry is malformed.
fn summarize(block: &Block<'_>, slot: &Slot) -> Result<Option<u64>> {
    let restarts = block.num_restarts();
    if restarts == 0 || restarts > MAX_SUMMARIZED + 1 || block.contents().len() > 0xffff {
        return Ok(None);
    }
    let n = restarts - 1;
    let mut head = (n as u64) << 48;
    for j in 1..=n {
        let Some((at, key)) = block.restart_key(j)? else {
            return Ok(None);
        };
        if key.len() < 8 {
            return Ok(None);
        }
        head |= (at as u64) << (16 * (j - 1));
        let prefix = user_key_prefix(user_key_of(key));
        slot.0[2 * j - 1].store((prefix >> 64) as u64, Ordering::Relaxed);
        slot.0[2 * j].store(prefix as u64, Ordering::Relaxed);
    }
    Ok(Some(head))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{InternalKey, SequenceNumber, ValueType};
    use crate::sstable::block_builder::BlockBuilder;
    use std::path::Path;

    fn block_bytes(keys: &[&str], restart_interval: usize) -> Vec<u8> {
        let mut b = BlockBuilder::new(restart_interval);
        for k in keys {
            let ik = InternalKey::new(k.as_bytes(), SequenceNumber(1), ValueType::Value);
            b.add(ik.encoded(), b"value");
        }
        b.finish().to_vec()
    }

    /// A recorded summary picks the restart point a binary search would,
    /// and the bytes it says to touch hold the entry a seek finds.
    #[test]
    fn the_summary_picks_the_interval_the_search_would() {
        let keys: Vec<String> = (0..12).map(|i| format!("key{:02}", 2 * i)).collect();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let bytes = block_bytes(&refs, 4); // restarts at key00, key08, key16
        let block = Block::new(&bytes, Path::new("t"), 0).unwrap();
        assert_eq!(block.num_restarts(), 3);
        let s = RestartSummaries::new(2);
        assert_eq!(
            s.scan_start(0, user_key_prefix(b"key05"), bytes.len()),
            ScanStart::Unknown
        );
        s.record(0, &block);
        for probe in 0..26 {
            let k = format!("key{probe:02}");
            let want = block.seek(k.as_bytes(), SequenceNumber(9)).unwrap();
            match s.scan_start(0, user_key_prefix(k.as_bytes()), bytes.len()) {
                ScanStart::At { restart, touch } => {
                    // Keys of 5 bytes: every prefix is the whole key, so a
                    // restart key (after the first) equal to the probe is
                    // a tie.
                    assert!(probe != 8 && probe != 16, "{k}");
                    let expected = match probe {
                        0..=8 => 0,
                        9..=16 => 1,
                        _ => 2,
                    };
                    assert_eq!(restart, expected, "{k}");
                    let got = block.seek_from(restart, k.as_bytes(), SequenceNumber(9));
                    assert_eq!(got.unwrap(), want, "{k}");
                    // The touched bytes run from the chosen restart point
                    // to the next one's first line, or to the entries' end.
                    let entries_end = bytes.len() - 4 - 4 * 3;
                    let (at, _) = block.restart_key(restart).unwrap().unwrap();
                    assert_eq!(touch.start, at, "{k}");
                    match block.restart_key(restart + 1).unwrap() {
                        Some((next, _)) => {
                            assert_eq!(touch.end, (next + 64).min(entries_end), "{k}")
                        }
                        None => assert_eq!(touch.end, entries_end, "{k}"),
                    }
                }
                ScanStart::Undecided => assert!(probe == 8 || probe == 16, "{k}"),
                ScanStart::Unknown => panic!("{k}: recorded"),
            }
        }
    }

    /// A block with more restart points than a slot holds is recorded as
    /// not summarized, and a slot past the table's blocks decides nothing.
    #[test]
    fn large_blocks_are_not_summarized() {
        let keys: Vec<String> = (0..10).map(|i| format!("k{i}")).collect();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let bytes = block_bytes(&refs, 1);
        let block = Block::new(&bytes, Path::new("t"), 0).unwrap();
        let s = RestartSummaries::new(1);
        s.record(0, &block);
        assert_eq!(
            s.scan_start(0, user_key_prefix(b"k5"), bytes.len()),
            ScanStart::Undecided
        );
        assert_eq!(
            s.scan_start(1, user_key_prefix(b"k5"), bytes.len()),
            ScanStart::Undecided
        );
        s.record(1, &block);
        assert_eq!(s.memory(), 64);
    }
}
