//! [`Block`]: a validated, borrowed view of one block's contents, with
//! [`Block::seek`] (binary search over restart points, then a linear scan)
//! and [`BlockIter`] (every entry in order). The format is described in
//! [`crate::sstable::format`].
//!
//! Nothing here panics on malformed bytes: every length and offset read
//! from the block is checked against the bytes actually present, and a
//! failure is [`Error::Corruption`] naming the file and the byte offset of
//! the bad field.

use std::cmp::Ordering;
use std::path::Path;

use crate::error::{Error, Result};
use crate::key::{compare_to_seek, SequenceNumber};
use crate::util::coding::Decoder;

/// A block's contents (trailer excluded), with its restart array located
/// and validated.
///
/// Cheap to copy: it only borrows the bytes and the file path used in error
/// messages.
#[derive(Debug, Clone, Copy)]
pub struct Block<'a> {
    data: &'a [u8],
    /// Offset of the restart array, which is also the end of the entries.
    restarts_start: usize,
    num_restarts: usize,
    file: &'a Path,
    file_offset: u64,
}

/// Largest block [`touch_lines`] reads whole, in bytes: past it, the lines
/// a seek does not reach would cost more bandwidth than the overlap saves.
pub(crate) const TOUCH_LIMIT: usize = 16 << 10;

/// Reads one byte of every 64-byte cache line of `block` (if it is at most
/// [`TOUCH_LIMIT`] bytes), so that a point lookup's dependent reads of it
/// (the restart count and array at its end, the restart point the binary
/// search picks, the entries scanned after it) find their lines already on
/// the way: the misses overlap instead of following one another, each
/// waiting for the last to say where to read next. The loads are
/// independent, so the CPU issues them together.
///
/// Measured with `tools/compare` `readrandom` (1M keys read through the
/// maps, 3 samples a run, runs with and without it interleaved on a quiet
/// machine): siftdb's lookups per second rose by 6% to 24% across four
/// pairs of runs (DESIGN.md 3), 1% to 7% in a bare loop of gets; the
/// ratio to fjall moved within its run-to-run spread.
pub(crate) fn touch_lines(block: &[u8]) {
    touch_range(block, 0..block.len());
}

/// As [`touch_lines`], for bytes `range` of `block` only (if at most
/// [`TOUCH_LIMIT`]), and its last byte, whose line holds the restart
/// count [`Block::new`] reads first: for a lookup that knows which
/// restart interval it will scan ([`super::restart_summary`]).
pub(crate) fn touch_range(block: &[u8], range: std::ops::Range<usize>) {
    let Some(part) = block.get(range).filter(|p| p.len() <= TOUCH_LIMIT) else {
        return;
    };
    let mut acc = 0u8;
    for line in part.chunks(64) {
        acc ^= line[0];
    }
    acc ^= block.last().copied().unwrap_or(0);
    std::hint::black_box(acc);
}

/// One decoded entry header plus the slices it points at.
struct RawEntry<'a> {
    shared: usize,
    delta: &'a [u8],
    value: &'a [u8],
    /// Offset of the following entry.
    next: usize,
}

impl<'a> Block<'a> {
    /// Validates `contents` as a block: the trailing restart count, the
    /// restart array (within the block, `restart[0] = 0`, strictly
    /// increasing, every offset before the array) and that a block with
    /// entries has at least one restart point. Entries themselves are
    /// checked as they are decoded. `file` and `file_offset` (where
    /// `contents` starts in the file) are used only in error reports.
    ///
    /// # Errors
    /// [`Error::Corruption`] at the offset of the bad field.
    pub fn new(contents: &'a [u8], file: &'a Path, file_offset: u64) -> Result<Block<'a>> {
        let corrupt = |pos: usize, detail: String| {
            Error::corruption(file, file_offset.saturating_add(pos as u64), detail)
        };
        let len = contents.len();
        let Some(count_at) = len.checked_sub(4) else {
            return Err(corrupt(
                0,
                format!("block of {len} bytes is shorter than its restart count"),
            ));
        };
        let num_restarts = read_u32(contents, count_at) as usize;
        if num_restarts > count_at / 4 {
            return Err(corrupt(
                count_at,
                format!("{num_restarts} restart points do not fit in a {len}-byte block"),
            ));
        }
        let restarts_start = count_at - 4 * num_restarts;
        let block = Block {
            data: contents,
            restarts_start,
            num_restarts,
            file,
            file_offset,
        };
        if num_restarts == 0 {
            if restarts_start != 0 {
                return Err(corrupt(
                    count_at,
                    "block has entries but no restart points".into(),
                ));
            }
            return Ok(block);
        }
        let mut prev: Option<usize> = None;
        for i in 0..num_restarts {
            let r = block.restart(i);
            let ok = match prev {
                None => r == 0,
                Some(p) => r > p,
            } && r < restarts_start;
            if !ok {
                return Err(corrupt(
                    restarts_start + 4 * i,
                    format!(
                        "restart point {i} has bad offset {r} (entries end at {restarts_start})"
                    ),
                ));
            }
            prev = Some(r);
        }
        Ok(block)
    }

    /// Where the restart array lies, as [`Block::new`] validated it.
    pub(crate) fn layout(&self) -> BlockLayout {
        BlockLayout {
            restarts_start: self.restarts_start,
            num_restarts: self.num_restarts,
        }
    }

    /// The block over `contents` whose restart array `layout` describes,
    /// without validating it again. `layout` must come from
    /// [`Block::layout`] of a block over these same bytes (a table
    /// iterator stepping through a block it opened, whose mapped bytes
    /// cannot change).
    pub(crate) fn with_layout(
        contents: &'a [u8],
        layout: BlockLayout,
        file: &'a Path,
        file_offset: u64,
    ) -> Block<'a> {
        Block {
            data: contents,
            restarts_start: layout.restarts_start,
            num_restarts: layout.num_restarts,
            file,
            file_offset,
        }
    }

    /// The whole contents, restart array included.
    pub fn contents(&self) -> &'a [u8] {
        self.data
    }

    /// Number of restart points.
    pub fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// True if the block holds no entries.
    pub fn is_empty(&self) -> bool {
        self.restarts_start == 0
    }

    /// Offset in the file of the block's first byte, as given to
    /// [`Block::new`].
    pub fn file_offset(&self) -> u64 {
        self.file_offset
    }

    /// Every entry in block order.
    pub fn iter(&self) -> BlockIter<'a> {
        self.resume(BlockPos::default())
    }

    /// Iterates on from `at` (a position an iterator over these same bytes
    /// gave up with [`BlockIter::into_pos`], or [`Block::seek_pos`]).
    pub(crate) fn resume(&self, at: BlockPos) -> BlockIter<'a> {
        BlockIter {
            block: *self,
            pos: at.pos,
            next_restart: at.next_restart,
            key: at.key,
            failed: at.failed,
        }
    }

    /// The position of the last restart point whose key has a user key
    /// below `user_key` (the first restart point if none has): iterating
    /// from there reaches every entry of `user_key` and above, after at
    /// most one restart interval of entries below it.
    ///
    /// # Errors
    /// [`Error::Corruption`] if a restart entry visited is malformed.
    pub(crate) fn seek_pos(&self, user_key: &[u8]) -> Result<BlockPos> {
        if self.num_restarts == 0 {
            return Ok(BlockPos::default());
        }
        let (mut lo, mut hi) = (0usize, self.num_restarts - 1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            let entry = self.decode_entry(self.restart(mid), 0)?;
            if crate::key::user_key_of(entry.delta) < user_key {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        Ok(BlockPos {
            pos: self.restart(lo),
            next_restart: lo,
            key: Vec::new(),
            failed: false,
        })
    }

    /// Finds the first entry whose internal key is `>=` the seek key
    /// `(user_key, seq)` (see [`compare_to_seek`]), returning its encoded
    /// key and its value, or `None` if every entry sorts before it.
    ///
    /// Binary search over restart points compares the restart keys in place
    /// (they share no prefix); the linear scan from the chosen restart point
    /// rebuilds keys in one reused buffer, which is returned.
    ///
    /// # Errors
    /// [`Error::Corruption`] if an entry visited is malformed.
    pub fn seek(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
    ) -> Result<Option<(Vec<u8>, &'a [u8])>> {
        if self.num_restarts == 0 {
            return Ok(None);
        }
        // Find the last restart point whose key is < target; fall back to 0.
        let (mut lo, mut hi) = (0usize, self.num_restarts - 1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            let entry = self.decode_entry(self.restart(mid), 0)?;
            if compare_to_seek(entry.delta, user_key, seq) == Ordering::Less {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        self.seek_from(lo, user_key, seq)
    }

    /// As [`Block::seek`], scanning from restart point `r`, which the
    /// caller knows to be the last whose key sorts below the seek key (or
    /// 0 if none does): the binary search is skipped. A restart point
    /// past the last is taken as the last.
    ///
    /// # Errors
    /// [`Error::Corruption`] if an entry visited is malformed.
    pub fn seek_from(
        &self,
        r: usize,
        user_key: &[u8],
        seq: SequenceNumber,
    ) -> Result<Option<(Vec<u8>, &'a [u8])>> {
        if self.num_restarts == 0 {
            return Ok(None);
        }
        let mut key = Vec::new();
        let mut pos = self.restart(r.min(self.num_restarts - 1));
        while pos < self.restarts_start {
            let entry = self.decode_entry(pos, key.len())?;
            key.truncate(entry.shared);
            key.extend_from_slice(entry.delta);
            if compare_to_seek(&key, user_key, seq) != Ordering::Less {
                return Ok(Some((key, entry.value)));
            }
            pos = entry.next;
        }
        Ok(None)
    }

    /// Restart point `i`'s offset in the block and its key (stored whole:
    /// a restart entry shares no bytes), or `None` past the last.
    ///
    /// # Errors
    /// [`Error::Corruption`] if the entry there is malformed.
    pub fn restart_key(&self, i: usize) -> Result<Option<(usize, &'a [u8])>> {
        if i >= self.num_restarts {
            return Ok(None);
        }
        let at = self.restart(i);
        Ok(Some((at, self.decode_entry(at, 0)?.delta)))
    }

    /// Offset of restart point `i`. REQUIRES: `i < num_restarts`.
    fn restart(&self, i: usize) -> usize {
        read_u32(self.data, self.restarts_start + 4 * i) as usize
    }

    fn corrupt(&self, pos: usize, detail: impl Into<String>) -> Error {
        Error::corruption(
            self.file,
            self.file_offset.saturating_add(pos as u64),
            detail,
        )
    }

    /// Decodes the entry at `pos` (REQUIRES: `pos < restarts_start`) whose
    /// predecessor's key is `prev_key_len` bytes long (0 at a restart).
    fn decode_entry(&self, pos: usize, prev_key_len: usize) -> Result<RawEntry<'a>> {
        let region = &self.data[pos..self.restarts_start];
        let mut d = Decoder::new(region);
        let bad = |e: crate::util::coding::DecodeError| self.corrupt(pos + e.offset, e.to_string());
        let shared = d.varint().map_err(bad)?;
        let unshared = d.varint().map_err(bad)?;
        let value_len = d.varint().map_err(bad)?;
        if shared > prev_key_len as u64 {
            return Err(self.corrupt(
                pos,
                format!("entry shares {shared} key bytes but the previous key has {prev_key_len}"),
            ));
        }
        let rem = d.remaining() as u64;
        if unshared > rem || value_len > rem - unshared {
            return Err(self.corrupt(
                pos,
                format!(
                    "entry key ({unshared} bytes) and value ({value_len} bytes) run past the \
                     {rem} bytes left before the restart array"
                ),
            ));
        }
        // Both lengths are now <= rem, which fits in usize.
        let delta = d.bytes(unshared as usize).map_err(bad)?;
        let value = d.bytes(value_len as usize).map_err(bad)?;
        Ok(RawEntry {
            shared: shared as usize,
            delta,
            value,
            next: pos + d.position(),
        })
    }
}

/// Reads a `u32` LE at `at`. REQUIRES: `at + 4 <= buf.len()`.
fn read_u32(buf: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&buf[at..at + 4]);
    u32::from_le_bytes(b)
}

/// Iterates a block's entries in order, yielding `(key, value)` with the
/// key rebuilt into an owned `Vec` and the value borrowed from the block.
///
/// Besides the per-entry checks, it verifies that every restart point falls
/// on an entry boundary and that entries at restart points share no prefix.
/// After yielding an error it yields `None`.
#[derive(Debug, Clone)]
pub struct BlockIter<'a> {
    block: Block<'a>,
    pos: usize,
    next_restart: usize,
    key: Vec<u8>,
    failed: bool,
}

/// A validated block's restart array: where it starts and how many points
/// it has ([`Block::layout`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockLayout {
    restarts_start: usize,
    num_restarts: usize,
}

/// Where a [`BlockIter`] stands, without a borrow of the block's bytes: a
/// table iterator keeps it between calls and resumes on the same bytes.
#[derive(Debug, Clone, Default)]
pub(crate) struct BlockPos {
    pos: usize,
    next_restart: usize,
    key: Vec<u8>,
    failed: bool,
}

impl<'a> BlockIter<'a> {
    /// Gives up the iterator, keeping its position.
    pub(crate) fn into_pos(self) -> BlockPos {
        BlockPos {
            pos: self.pos,
            next_restart: self.next_restart,
            key: self.key,
            failed: self.failed,
        }
    }

    /// As `next`, but lends the key from the iterator's own buffer instead
    /// of copying it: a caller that skips entries allocates nothing.
    pub(crate) fn next_borrowed(&mut self) -> Option<Result<(&[u8], &'a [u8])>> {
        if self.failed {
            return None;
        }
        let b = &self.block;
        if self.pos >= b.restarts_start {
            if self.next_restart < b.num_restarts {
                self.failed = true;
                return Some(Err(b.corrupt(
                    b.restarts_start + 4 * self.next_restart,
                    format!(
                        "restart point {} at {} is inside an entry",
                        self.next_restart,
                        b.restart(self.next_restart)
                    ),
                )));
            }
            return None;
        }
        match self.advance() {
            Ok(value) => Some(Ok((&self.key, value))),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }

    /// Decodes the entry at the position into the key buffer and moves
    /// past it; returns its value.
    fn advance(&mut self) -> Result<&'a [u8]> {
        let b = &self.block;
        let at_restart = if self.next_restart < b.num_restarts {
            let r = b.restart(self.next_restart);
            if self.pos > r {
                return Err(b.corrupt(
                    b.restarts_start + 4 * self.next_restart,
                    format!(
                        "restart point {} at {r} is inside an entry",
                        self.next_restart
                    ),
                ));
            }
            r == self.pos
        } else {
            false
        };
        let prev_len = if at_restart { 0 } else { self.key.len() };
        let entry = b.decode_entry(self.pos, prev_len)?;
        if at_restart {
            self.next_restart += 1;
        }
        self.key.truncate(entry.shared);
        self.key.extend_from_slice(entry.delta);
        self.pos = entry.next;
        Ok(entry.value)
    }
}

impl<'a> Iterator for BlockIter<'a> {
    type Item = Result<(Vec<u8>, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_borrowed()
            .map(|r| r.map(|(key, value)| (key.to_vec(), value)))
    }
}

impl std::iter::FusedIterator for BlockIter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{user_key_of, InternalKey, ParsedInternalKey, ValueType};
    use crate::sstable::block_builder::BlockBuilder;
    use proptest::prelude::*;

    const F: &str = "000001.sst";

    /// Any length, empty and past the limit included, is read without a
    /// panic (the lookup path calls it on every block it searches).
    #[test]
    fn touch_lines_takes_any_length() {
        let bytes = vec![7u8; TOUCH_LIMIT + 1];
        for len in [0, 1, 63, 64, 65, 4096, TOUCH_LIMIT, TOUCH_LIMIT + 1] {
            touch_lines(&bytes[..len]);
        }
    }

    fn ik(k: &str, s: u64, vt: ValueType) -> Vec<u8> {
        InternalKey::new(k.as_bytes(), SequenceNumber(s), vt).into_encoded()
    }

    #[rustfmt::skip]
    const GOLDEN: &[u8] = &[
        0x00, 0x0d, 0x01, b'a', b'p', b'p', b'l', b'e', 0x01, 0x03, 0, 0, 0, 0, 0, 0, b'x',
        0x04, 0x09, 0x02, b'y', 0x01, 0x02, 0, 0, 0, 0, 0, 0, b'y', b'y',
        0x00, 0x09, 0x00, b'b', 0x00, 0x01, 0, 0, 0, 0, 0, 0,
        0x00, 0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
    ];

    fn p() -> &'static Path {
        Path::new(F)
    }

    #[test]
    fn golden_block_decodes() {
        let b = Block::new(GOLDEN, p(), 100).unwrap();
        assert_eq!(b.num_restarts(), 2);
        let got: Vec<(Vec<u8>, Vec<u8>)> = b
            .iter()
            .map(|r| r.map(|(k, v)| (k, v.to_vec())))
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(
            got,
            vec![
                (ik("apple", 3, ValueType::Value), b"x".to_vec()),
                (ik("apply", 2, ValueType::Value), b"yy".to_vec()),
                (ik("b", 1, ValueType::Deletion), b"".to_vec()),
            ]
        );
        // Seeks.
        let s = |k: &str, seq: u64| {
            b.seek(k.as_bytes(), SequenceNumber(seq))
                .unwrap()
                .map(|(k, v)| {
                    (
                        ParsedInternalKey::parse(&k).unwrap().seq.0,
                        user_key_of(&k).to_vec(),
                        v.to_vec(),
                    )
                })
        };
        assert_eq!(s("a", 9), Some((3, b"apple".to_vec(), b"x".to_vec())));
        assert_eq!(s("apple", 3), Some((3, b"apple".to_vec(), b"x".to_vec())));
        // apple@2 is past apple@3: next is apply@2.
        assert_eq!(s("apple", 2), Some((2, b"apply".to_vec(), b"yy".to_vec())));
        assert_eq!(s("apply", 9), Some((2, b"apply".to_vec(), b"yy".to_vec())));
        assert_eq!(s("apply", 1), Some((1, b"b".to_vec(), b"".to_vec())));
        assert_eq!(s("b", 1), Some((1, b"b".to_vec(), b"".to_vec())));
        assert_eq!(s("b", 0), None);
        assert_eq!(s("c", 100), None);
    }

    #[test]
    fn empty_block() {
        let b = Block::new(&[0, 0, 0, 0], p(), 0).unwrap();
        assert!(b.is_empty());
        assert_eq!(b.iter().count(), 0);
        assert!(b.seek(b"a", SequenceNumber(1)).unwrap().is_none());
    }

    #[test]
    fn seek_finds_every_key() {
        for interval in [1, 2, 3, 16] {
            let mut bb = BlockBuilder::new(interval);
            let mut keys = Vec::new();
            for i in 0..300u64 {
                // Two versions of each user key, newest first.
                for seq in [2 * i + 2, 2 * i + 1] {
                    let k = ik(&format!("key{i:05}"), seq, ValueType::Value);
                    bb.add(&k, &seq.to_le_bytes());
                    keys.push((k, seq));
                }
            }
            let contents = bb.finish().to_vec();
            let b = Block::new(&contents, p(), 0).unwrap();
            assert_eq!(b.iter().count(), keys.len());
            for (k, seq) in &keys {
                let uk = user_key_of(k);
                let (found, v) = b.seek(uk, SequenceNumber(*seq)).unwrap().unwrap();
                assert_eq!(&found, k);
                assert_eq!(v, seq.to_le_bytes());
                // A seek at MAX lands on the newest version (odd seqs are older).
                let (found, _) = b.seek(uk, SequenceNumber::MAX).unwrap().unwrap();
                assert_eq!(ParsedInternalKey::parse(&found).unwrap().seq.0 % 2, 0);
                assert_eq!(user_key_of(&found), uk);
            }
            // Before the first key and after the last.
            let (first, _) = b.seek(b"", SequenceNumber::MAX).unwrap().unwrap();
            assert_eq!(first, keys[0].0);
            assert!(b.seek(b"key99999", SequenceNumber::MAX).unwrap().is_none());
        }
    }

    #[test]
    fn malformed_blocks_are_corruption() {
        let path = p();
        let is_corrupt = |bytes: &[u8]| Block::new(bytes, path, 0).unwrap_err().is_corruption();
        // Too short for a count.
        assert!(is_corrupt(&[0, 0, 0]));
        // Count larger than fits.
        assert!(is_corrupt(&[0, 0, 0, 0, 2, 0, 0, 0]));
        // Entries without restart points.
        assert!(is_corrupt(&[1, 2, 3, 0, 0, 0, 0]));
        // restart[0] != 0.
        assert!(is_corrupt(&[0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0]));
        // Restart offset at the restart array.
        assert!(is_corrupt(&[
            0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0
        ]));
        // Restart offsets not increasing.
        assert!(is_corrupt(&[
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0
        ]));
        // A valid two-restart header over 4 bytes of entries.
        assert!(Block::new(&[0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0], path, 0).is_ok());

        // Shared > previous key length in the second entry.
        let mut bad = GOLDEN.to_vec();
        bad[17] = 20;
        let b = Block::new(&bad, path, 1000).unwrap();
        let e = b.iter().nth(1).unwrap().unwrap_err();
        assert!(matches!(e, Error::Corruption { offset: 1017, .. }), "{e}");
        // The iterator stops after the error.
        let mut it = b.iter();
        assert!(it.next().unwrap().is_ok());
        assert!(it.next().unwrap().is_err());
        assert!(it.next().is_none());

        // A value length running past the entries.
        let mut bad = GOLDEN.to_vec();
        bad[2] = 100;
        let b = Block::new(&bad, path, 0).unwrap();
        assert!(b.iter().next().unwrap().unwrap_err().is_corruption());
        assert!(b.seek(b"a", SequenceNumber(1)).unwrap_err().is_corruption());

        // A restart point inside an entry (offset 20, not 17 or 31).
        let mut bad = GOLDEN.to_vec();
        bad[47] = 20;
        let b = Block::new(&bad, path, 0).unwrap();
        let r: Result<Vec<_>> = b.iter().collect();
        assert!(r.unwrap_err().to_string().contains("inside an entry"));
        // A restart point inside the last entry (offset 35, not 31).
        let mut bad = GOLDEN.to_vec();
        bad[47] = 35;
        let b = Block::new(&bad, path, 0).unwrap();
        let r: Vec<Result<_>> = b.iter().collect();
        assert_eq!(r.len(), 4);
        assert!(r[..3].iter().all(|e| e.is_ok()));
        assert!(r[3]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("inside an entry"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Arbitrary bytes never panic the decoder, whatever is asked of it.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200),
                                       key in proptest::collection::vec(any::<u8>(), 0..12),
                                       seq in any::<u64>()) {
            if let Ok(b) = Block::new(&bytes, p(), 0) {
                for r in b.iter() {
                    let _ = r;
                }
                let _ = b.seek(&key, SequenceNumber(seq & SequenceNumber::MAX.0));
            }
        }

        /// Well-formed block headers with random entry bytes (the interesting
        /// case: past the restart-array checks).
        #[test]
        fn random_entries_never_panic(entries in proptest::collection::vec(any::<u8>(), 1..120),
                                      restarts in proptest::collection::vec(0u32..130, 0..4),
                                      key in proptest::collection::vec(any::<u8>(), 0..12)) {
            let mut bytes = entries.clone();
            let mut rs = restarts.clone();
            rs.sort_unstable();
            rs.dedup();
            if let Some(first) = rs.first_mut() { *first = 0; }
            for r in &rs { bytes.extend_from_slice(&r.to_le_bytes()); }
            bytes.extend_from_slice(&(rs.len() as u32).to_le_bytes());
            if let Ok(b) = Block::new(&bytes, p(), 0) {
                let n = b.iter().take_while(|r| r.is_ok()).count();
                prop_assert!(n <= entries.len());
                let _ = b.seek(&key, SequenceNumber(7));
            }
        }
    }
}
