//! [`TableIter`]: double-ended iteration over one [`Table`]'s entries
//! within user-key bounds, and the block-level reads it makes.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::{data_limit, Table};
use crate::error::{Error, Result};
use crate::iter::Entry;
use crate::key::{user_key_of, user_key_prefix, ParsedInternalKey};
use crate::sstable::block::{touch_lines, Block, BlockLayout, BlockPos};
use crate::sstable::compression::decode_data_block;
use crate::sstable::residency::ScanReadahead;
#[cfg(doc)]
use crate::Slice;

impl Table {
    /// Iterates every internal entry (all versions and tombstones) whose
    /// user key lies within `(lo, hi)`, in internal-key order from the
    /// front and in reverse from the back. See [`TableIter`].
    pub fn iter(self: &Arc<Self>, lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> TableIter {
        let n = self.index.len();
        let start = match &lo {
            Bound::Included(k) | Bound::Excluded(k) => self
                .partition_index(user_key_prefix(k), |e| {
                    !above_lo(&lo, user_key_of(&e.last_key))
                }),
            Bound::Unbounded => 0,
        };
        // Blocks before `p` end within the upper bound; block `p` may still
        // start with in-range versions, so it is the last candidate.
        let p = match &hi {
            Bound::Included(k) | Bound::Excluded(k) => self
                .partition_index(user_key_prefix(k), |e| {
                    below_hi(&hi, user_key_of(&e.last_key))
                }),
            Bound::Unbounded => n,
        };
        let end = (p + 1).min(n).max(start);
        let seeking = !matches!(lo, Bound::Unbounded);
        TableIter {
            table: Arc::clone(self),
            lo,
            hi,
            next_block: start,
            end_block: end,
            cursor: None,
            front: VecDeque::new(),
            back: VecDeque::new(),
            done: false,
            block_reads: None,
            readahead: ScanReadahead::default(),
            seeking,
        }
    }

    /// Reads data block `i` (checking its checksum), first touching its
    /// lines if it is the block a `seek` lands in, and returns its
    /// validated layout, the position to decode it from for user keys
    /// in `lo..` (the restart point before `lo`'s first entry, or the
    /// block's start) and, for a compressed block, its decompressed
    /// contents (the cursor keeps them; an uncompressed block is re-read
    /// from the map).
    ///
    /// # Errors
    /// [`Error::Corruption`] if the block fails its checksum or does not
    /// decode.
    fn open_block(&self, i: usize, lo: &Bound<Vec<u8>>, seek: bool) -> Result<OpenedBlock> {
        let contents = self.read_data_block(i)?;
        if seek {
            // As a point lookup does (`touch_lines`): the restart count,
            // the restart array, the seek's restart point and the entries
            // after it are read one after another, each miss waiting for
            // the last. (Later blocks of a scan are read from their start,
            // in order, as the CPU's own prefetcher expects: touched too, a
            // whole-table scan took 3% longer.)
            touch_lines(&contents);
        }
        let block = Block::new(&contents, &self.path, self.index[i].handle.offset)?;
        let at = match lo {
            Bound::Included(l) | Bound::Excluded(l) => block.seek_pos(l)?,
            Bound::Unbounded => BlockPos::default(),
        };
        let layout = block.layout();
        Ok((layout, at, contents.into_owned()))
    }

    /// The next entry of data block `i` from `at` whose user key lies in
    /// `(lo, hi)`, and the position after it; `None` at the end of the
    /// block or past `hi`. The block's checksum and restart array were
    /// checked when it was opened ([`Table::open_block`], which gave
    /// `layout` and, for a compressed block, `decompressed`); the mapped
    /// bytes cannot change.
    fn next_in_block(
        &self,
        i: usize,
        layout: BlockLayout,
        at: BlockPos,
        decompressed: Option<&Arc<[u8]>>,
        lo: &Bound<Vec<u8>>,
        hi: &Bound<Vec<u8>>,
    ) -> Result<Option<(Entry, BlockPos)>> {
        let handle = self.index[i].handle;
        let start = handle.offset as usize;
        let mapped;
        let contents = match decompressed {
            Some(c) => &c[..],
            None => {
                let stored = &self.mmap[start..start + handle.size as usize];
                mapped = decode_data_block(stored, self.footer.format_version, handle, &self.path)?;
                &mapped[..]
            }
        };
        let block = Block::with_layout(contents, layout, &self.path, handle.offset);
        let mut it = block.resume(at);
        while let Some(entry) = it.next_borrowed() {
            let (key, value) = entry?;
            if ParsedInternalKey::parse(key).is_none() {
                return Err(Error::corruption(
                    &self.path,
                    handle.offset,
                    "data block holds a malformed internal key",
                ));
            }
            let uk = user_key_of(key);
            if !above_lo(lo, uk) {
                continue;
            }
            if !below_hi(hi, uk) {
                return Ok(None);
            }
            let entry = (key.to_vec(), self.share(decompressed, value));
            return Ok(Some((entry, it.into_pos())));
        }
        Ok(None)
    }

    /// Decodes data block `i`, appending the entries within bounds to `out`.
    fn load_block(
        &self,
        i: usize,
        lo: &Bound<Vec<u8>>,
        hi: &Bound<Vec<u8>>,
        out: &mut VecDeque<Entry>,
    ) -> Result<()> {
        let handle = self.index[i].handle;
        let contents = self.read_data_block(i)?;
        let owned = contents.owned();
        let block = Block::new(&contents, &self.path, handle.offset)?;
        for entry in block.iter() {
            let (key, value) = entry?;
            if ParsedInternalKey::parse(&key).is_none() {
                return Err(Error::corruption(
                    &self.path,
                    handle.offset,
                    "data block holds a malformed internal key",
                ));
            }
            let uk = user_key_of(&key);
            if above_lo(lo, uk) && below_hi(hi, uk) {
                out.push_back((key, self.share(owned, value)));
            }
        }
        Ok(())
    }
}

/// True if `uk` is not below the lower bound.
pub(super) fn above_lo(lo: &Bound<Vec<u8>>, uk: &[u8]) -> bool {
    match lo {
        Bound::Included(l) => uk >= l.as_slice(),
        Bound::Excluded(l) => uk > l.as_slice(),
        Bound::Unbounded => true,
    }
}

/// The block a [`TableIter`]'s front decodes: its index, layout, the
/// position of the next entry, and its decompressed contents if it was
/// stored compressed.
type Cursor = (usize, BlockLayout, BlockPos, Option<Arc<[u8]>>);

/// A data block opened for the front of a [`TableIter`]: its layout, the
/// position to resume from, and its decompressed contents if it was
/// stored compressed.
type OpenedBlock = (BlockLayout, BlockPos, Option<Arc<[u8]>>);

/// True if `uk` is not above the upper bound.
pub(super) fn below_hi(hi: &Bound<Vec<u8>>, uk: &[u8]) -> bool {
    match hi {
        Bound::Included(h) => uk <= h.as_slice(),
        Bound::Excluded(h) => uk < h.as_slice(),
        Bound::Unbounded => true,
    }
}

/// A double-ended iterator over a table's entries within user-key bounds,
/// from [`Table::iter`]. Yields `(encoded internal key, value)`; a value
/// of at least [`Slice::SHARE_MIN`] bytes shares the table's map (or, from
/// a compressed block, the decompressed block).
///
/// Blocks not yet opened form a middle range of block indexes. `next`
/// takes blocks from the front of that range and decodes them one entry
/// at a time (checksum checked when a block is opened; the first one
/// entered at the restart point before the lower bound), copying only the
/// entries it yields, so a seek followed by a few steps costs a few
/// copies, not a block's. `next_back` decodes blocks from the back of the
/// range whole into a back buffer. When the range is empty each side takes
/// what the other has left (the back decoding the rest of the front's
/// block first), so interleaved calls meet in the middle and never yield
/// an entry twice. After an error is yielded, the iterator yields `None`
/// from both ends.
#[derive(Debug)]
pub struct TableIter {
    table: Arc<Table>,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    /// First undecoded block.
    next_block: usize,
    /// One past the last undecoded block.
    end_block: usize,
    /// The block the front decodes one entry at a time, and where in it:
    /// a seek followed by a few `next`s copies only the entries it yields
    /// (with a compressed block's decompressed contents).
    cursor: Option<Cursor>,
    /// Entries of the front, in order, once the back has run out of blocks
    /// and needed the cursor's rest (see `next_back`).
    front: VecDeque<Entry>,
    back: VecDeque<Entry>,
    done: bool,
    /// Counts every data block the iterator reads, if set.
    block_reads: Option<Arc<AtomicU64>>,
    /// The front's readahead, once it reads block after block.
    readahead: ScanReadahead,
    /// True if the next block the front opens is a seek's, entered at the
    /// lower bound: its first, if the iterator has one, and the next after
    /// a `seek_forward` that dropped the cursor.
    seeking: bool,
}

impl TableIter {
    /// Adds one to `counter` for every data block the iterator reads.
    pub fn count_block_reads(mut self, counter: Arc<AtomicU64>) -> TableIter {
        self.block_reads = Some(counter);
        self
    }

    fn counted(&self) {
        if let Some(c) = &self.block_reads {
            c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn fail(&mut self, e: Error) -> Option<Result<Entry>> {
        self.done = true;
        self.cursor = None;
        self.front.clear();
        self.back.clear();
        Some(Err(e))
    }

    /// The front's next entry from its cursor block, opening blocks as
    /// needed; `None` once the front has no block left.
    fn next_from_blocks(&mut self) -> Result<Option<Entry>> {
        loop {
            if let Some((i, layout, at, decompressed)) = self.cursor.take() {
                let next = self.table.next_in_block(
                    i,
                    layout,
                    at,
                    decompressed.as_ref(),
                    &self.lo,
                    &self.hi,
                )?;
                if let Some((entry, at)) = next {
                    self.cursor = Some((i, layout, at, decompressed));
                    return Ok(Some(entry));
                }
                continue;
            }
            if self.next_block >= self.end_block {
                return Ok(None);
            }
            let i = self.next_block;
            self.next_block += 1;
            self.counted();
            let offset = self.table.index[i].handle.offset;
            let data_end = data_limit(&self.table.footer);
            if let Some((start, len)) = self.readahead.on_block(offset, data_end) {
                self.table.will_need(start, len);
            }
            let seek = std::mem::take(&mut self.seeking);
            let (layout, at, decompressed) = self.table.open_block(i, &self.lo, seek)?;
            self.cursor = Some((i, layout, at, decompressed));
        }
    }
}

impl Iterator for TableIter {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if let Some(e) = self.front.pop_front() {
            return Some(Ok(e));
        }
        match self.next_from_blocks() {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => self.back.pop_front().map(Ok),
            Err(e) => self.fail(e),
        }
    }
}

impl DoubleEndedIterator for TableIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            if let Some(e) = self.back.pop_back() {
                return Some(Ok(e));
            }
            if self.next_block < self.end_block {
                self.end_block -= 1;
                let i = self.end_block;
                self.counted();
                if let Err(e) = self.table.load_block(i, &self.lo, &self.hi, &mut self.back) {
                    return self.fail(e);
                }
                continue;
            }
            // No block left: what remains is the front's, the rest of its
            // cursor block first.
            if self.cursor.is_some() {
                loop {
                    match self.next_from_blocks() {
                        Ok(Some(e)) => self.front.push_back(e),
                        Ok(None) => break,
                        Err(e) => return self.fail(e),
                    }
                }
            }
            return self.front.pop_back().map(Ok);
        }
    }
}

impl std::iter::FusedIterator for TableIter {}

impl TableIter {
    /// Drops every unconsumed entry: the buffers, the cursor and the
    /// blocks not yet opened.
    fn drop_all(&mut self) {
        self.cursor = None;
        self.front.clear();
        self.back.clear();
        self.next_block = self.end_block;
    }
}

impl crate::iter::SeekableSource for TableIter {
    /// Raises the lower bound to `target` and moves the first unopened
    /// block to the first whose last key is `>= target`, so the blocks in
    /// between are never read; the cursor's block is left when it ends
    /// below `target` (else its entries below `target` are passed over
    /// without a copy), and the buffers lose their entries below it.
    fn seek_forward(&mut self, target: Option<&[u8]>) {
        let Some(target) = target else {
            self.drop_all();
            return;
        };
        let below = |e: &Entry| user_key_of(&e.0) < target;
        while self.front.front().is_some_and(below) {
            self.front.pop_front();
        }
        if !self.front.is_empty() {
            return; // the front's next entry is already at or past target
        }
        let stronger = match &self.lo {
            Bound::Included(l) | Bound::Excluded(l) => target > l.as_slice(),
            Bound::Unbounded => true,
        };
        if stronger {
            self.lo = Bound::Included(target.to_vec());
        }
        let ends_below = |i: usize| user_key_of(&self.table.index[i].last_key) < target;
        if self.cursor.as_ref().is_some_and(|c| ends_below(c.0)) {
            self.cursor = None;
        }
        let first = self.table.partition_index(user_key_prefix(target), |e| {
            user_key_of(&e.last_key) < target
        });
        self.next_block = self.next_block.max(first).min(self.end_block);
        // The next block the front opens is entered at the new bound.
        self.seeking |= self.cursor.is_none();
        while self.back.front().is_some_and(below) {
            self.back.pop_front();
        }
    }

    /// Mirror of `seek_forward`: lowers the upper bound below `target`,
    /// moves the end of the unopened blocks to just past the first whose
    /// last key is `>= target`, and drops the buffers' entries at or
    /// above `target` (the cursor stops at the new bound by itself).
    fn seek_backward(&mut self, target: Option<&[u8]>) {
        let Some(target) = target else {
            self.drop_all();
            return;
        };
        let at_or_above = |e: &Entry| user_key_of(&e.0) >= target;
        while self.back.back().is_some_and(at_or_above) {
            self.back.pop_back();
        }
        if !self.back.is_empty() {
            return; // the back's next entry is already below target
        }
        let stronger = match &self.hi {
            Bound::Included(h) => target <= h.as_slice(),
            Bound::Excluded(h) => target < h.as_slice(),
            Bound::Unbounded => true,
        };
        if stronger {
            self.hi = Bound::Excluded(target.to_vec());
        }
        // Blocks after the first whose last key is >= target hold only
        // keys >= target; so does that block too if it is the first and
        // the table's smallest key is >= target (the index has no first
        // keys, but the properties have the table's).
        let last = self.table.partition_index(user_key_prefix(target), |e| {
            user_key_of(&e.last_key) < target
        });
        let keep = if last == 0 && self.table.properties.smallest_user_key.as_slice() >= target {
            0
        } else {
            last.saturating_add(1)
        };
        self.end_block = self.end_block.min(keep).max(self.next_block);
        while self.front.back().is_some_and(at_or_above) {
            self.front.pop_back();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, VecDeque};

    use proptest::prelude::*;

    use super::*;
    use crate::key::{InternalKey, SequenceNumber, ValueType};
    use crate::sstable::table::tests::{build, found, opts, owned, two_thousand};

    #[test]
    fn bounded_iteration() {
        let dir = tempfile::tempdir().unwrap();
        let path = build(
            dir.path(),
            "000010.sst",
            opts(256, 4, false),
            &two_thousand(),
        );
        let t = Arc::new(Table::open(&path, 10).unwrap());
        let keys = |lo: Bound<&str>, hi: Bound<&str>| -> Vec<String> {
            let conv = |b: Bound<&str>| b.map(|s| s.as_bytes().to_vec());
            t.iter(conv(lo), conv(hi))
                .map(|r| String::from_utf8(user_key_of(&r.unwrap().0).to_vec()).unwrap())
                .collect()
        };
        use Bound::*;
        assert_eq!(
            keys(Included("k00010"), Excluded("k00013")),
            ["k00010", "k00011", "k00012"]
        );
        assert_eq!(
            keys(Excluded("k00010"), Included("k00013")),
            ["k00011", "k00012", "k00013"]
        );
        assert_eq!(keys(Included("k01998"), Unbounded), ["k01998", "k01999"]);
        assert_eq!(keys(Unbounded, Excluded("k00002")), ["k00000", "k00001"]);
        assert!(keys(Included("k00013"), Excluded("k00010")).is_empty());
        assert!(keys(Included("z"), Unbounded).is_empty());
        assert!(keys(Unbounded, Excluded("a")).is_empty());
        assert_eq!(keys(Included("k00500"), Included("k00999")).len(), 500);
    }

    /// A model entry: user key from a small alphabet, seq, type.
    fn arb_entries() -> impl Strategy<Value = BTreeMap<InternalKey, Vec<u8>>> {
        proptest::collection::vec(
            (
                proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 0..4),
                1u64..50,
                any::<bool>(),
                proptest::collection::vec(any::<u8>(), 0..24),
            ),
            1..120,
        )
        .prop_map(|v| {
            v.into_iter()
                .map(|(k, s, del, val)| {
                    let vt = if del {
                        ValueType::Deletion
                    } else {
                        ValueType::Value
                    };
                    let val = if del { vec![] } else { val };
                    (InternalKey::new(&k, SequenceNumber(s), vt), val)
                })
                .collect()
        })
    }

    fn arb_bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
        let key = proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c')], 0..4);
        prop_oneof![
            Just(Bound::Unbounded),
            key.clone().prop_map(Bound::Included),
            key.prop_map(Bound::Excluded),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Seeks from either end, interleaved with next/next_back over
        /// bounds, drop exactly the entries a model drops, over blocks of
        /// every size (DESIGN.md 4).
        #[test]
        fn seeks_match_model(
            model in arb_entries(),
            block_size in 16usize..300,
            restart_interval in 1usize..5,
            lo in arb_bound(),
            hi in arb_bound(),
            steps in crate::iter::source_model::steps(
                proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b'c'), Just(b'd')], 0..4),
            ),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let entries: Vec<(Vec<u8>, Vec<u8>)> =
                model.iter().map(|(k, v)| (k.encoded().to_vec(), v.clone())).collect();
            let path = build(dir.path(), "000012.sst", opts(block_size, restart_interval, false), &entries);
            let t = Arc::new(Table::open(&path, 12).unwrap());
            let expected: Vec<(Vec<u8>, Vec<u8>)> = entries
                .into_iter()
                .filter(|(k, _)| above_lo(&lo, user_key_of(k)) && below_hi(&hi, user_key_of(k)))
                .collect();
            crate::iter::source_model::check(&mut t.iter(lo, hi), expected, &steps);
        }

        /// Interleaved next/next_back over bounds match a BTreeMap model.
        #[test]
        fn double_ended_iteration_matches_model(
            model in arb_entries(),
            block_size in 16usize..300,
            restart_interval in 1usize..5,
            lo in arb_bound(),
            hi in arb_bound(),
            ops in proptest::collection::vec(any::<bool>(), 0..300),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let entries: Vec<(Vec<u8>, Vec<u8>)> =
                model.iter().map(|(k, v)| (k.encoded().to_vec(), v.clone())).collect();
            let path = build(dir.path(), "000011.sst", opts(block_size, restart_interval, true), &entries);
            let t = Arc::new(Table::open(&path, 11).unwrap());

            let mut expected: VecDeque<(Vec<u8>, Vec<u8>)> = entries
                .iter()
                .filter(|(k, _)| above_lo(&lo, user_key_of(k)) && below_hi(&hi, user_key_of(k)))
                .cloned()
                .collect();
            let mut it = t.iter(lo.clone(), hi.clone());
            for &forward in &ops {
                let (got, want) = if forward {
                    (it.next(), expected.pop_front())
                } else {
                    (it.next_back(), expected.pop_back())
                };
                prop_assert_eq!(got.map(owned), want);
            }
            // Drain the rest forward.
            let rest: Vec<_> = it.by_ref().map(owned).collect();
            prop_assert_eq!(rest, expected.into_iter().collect::<Vec<_>>());
            prop_assert!(it.next().is_none());
            prop_assert!(it.next_back().is_none());

            // Point lookups agree with the model at a few sequence numbers.
            for seq in [0u64, 10, 25, 60] {
                for uk in [&b""[..], b"a", b"ab", b"c", b"cc", b"ccc", b"d"] {
                    let want = model
                        .iter()
                        .find(|(k, _)| {
                            let p = k.parsed();
                            p.user_key == uk && p.seq.0 <= seq
                        })
                        .map(|(k, v)| (k.parsed().seq.0, k.parsed().value_type, v.clone()));
                    prop_assert_eq!(found(&t, uk, seq), want);
                }
            }
        }
    }
}
