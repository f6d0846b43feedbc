//! Range iteration: [`MergingIterator`] merges the sorted entry streams of
//! memtables and SSTables, and [`DbIterator`] turns the merged internal
//! entries into the live user key/value pairs a reader may see.
//!
//! Both are double-ended. Every source is itself a double-ended iterator
//! over one shared window of entries, so a source's entries are consumed
//! exactly once whichever end takes them; [`DbIterator`] remembers the last
//! user key each end settled and stops an end when it reaches the other's
//! key, so interleaved `next` and `next_back` never yield a key twice and
//! never split the versions of one key between the two ends.

use std::sync::Arc;

use crate::key::{compare_internal_keys, ParsedInternalKey, SequenceNumber, ValueType};
use crate::range_tombstone::FragmentedRangeTombstones;
use crate::{Error, Result, Slice};

/// One entry: encoded internal key and value (which may share a table's
/// bytes; see [`Slice`]).
pub(crate) type Entry = (Vec<u8>, Slice);

/// A sorted stream of internal entries readable from both ends.
pub(crate) type EntrySource = Box<dyn DoubleEndedIterator<Item = Result<Entry>> + Send>;

/// A source with one entry of look-ahead at each end.
struct PeekableSource {
    inner: EntrySource,
    front: Option<Entry>,
    back: Option<Entry>,
}

impl PeekableSource {
    /// The smallest unconsumed entry. When the inner iterator is used up,
    /// the entry parked at the back is the only one left, so it moves to
    /// the front.
    fn peek_front(&mut self) -> Result<Option<&Entry>> {
        if self.front.is_none() {
            match self.inner.next() {
                Some(r) => self.front = Some(r?),
                None => self.front = self.back.take(),
            }
        }
        Ok(self.front.as_ref())
    }

    /// The largest unconsumed entry (mirror of `peek_front`).
    fn peek_back(&mut self) -> Result<Option<&Entry>> {
        if self.back.is_none() {
            match self.inner.next_back() {
                Some(r) => self.back = Some(r?),
                None => self.back = self.front.take(),
            }
        }
        Ok(self.back.as_ref())
    }
}

/// Merges sources into one stream in internal-key order (forward) or its
/// reverse (backward). Sources never share an internal key (sequence
/// numbers are unique), so the merge needs no tie-break.
///
/// Each step compares the head of every source: O(number of sources) per
/// entry, which for the tens of sources an LSM tree has is cheaper in
/// practice than keeping two heaps consistent under double-ended use.
pub(crate) struct MergingIterator {
    sources: Vec<PeekableSource>,
}

impl MergingIterator {
    /// Merges `sources`; each must be sorted in internal-key order.
    pub(crate) fn new(sources: Vec<EntrySource>) -> Self {
        MergingIterator {
            sources: sources
                .into_iter()
                .map(|inner| PeekableSource {
                    inner,
                    front: None,
                    back: None,
                })
                .collect(),
        }
    }

    /// Index of the source whose head is best: smallest when `forward`,
    /// else largest.
    fn best(&mut self, forward: bool) -> Result<Option<usize>> {
        for s in &mut self.sources {
            if forward {
                s.peek_front()?;
            } else {
                s.peek_back()?;
            }
        }
        let mut best: Option<(usize, &Entry)> = None;
        for (i, s) in self.sources.iter().enumerate() {
            let Some(head) = (if forward { &s.front } else { &s.back }) else {
                continue;
            };
            let better = best.is_none_or(|(_, b)| {
                let ord = compare_internal_keys(&head.0, &b.0);
                if forward {
                    ord.is_lt()
                } else {
                    ord.is_gt()
                }
            });
            if better {
                best = Some((i, head));
            }
        }
        Ok(best.map(|(i, _)| i))
    }

    /// The largest unconsumed entry, without consuming it.
    pub(crate) fn peek_back(&mut self) -> Result<Option<&Entry>> {
        Ok(match self.best(false)? {
            Some(i) => self.sources[i].back.as_ref(),
            None => None,
        })
    }

    /// Consumes and returns the smallest unconsumed entry.
    pub(crate) fn next_front(&mut self) -> Result<Option<Entry>> {
        Ok(match self.best(true)? {
            Some(i) => self.sources[i].front.take(),
            None => None,
        })
    }

    /// Consumes and returns the largest unconsumed entry.
    pub(crate) fn next_back(&mut self) -> Result<Option<Entry>> {
        Ok(match self.best(false)? {
            Some(i) => self.sources[i].back.take(),
            None => None,
        })
    }
}

fn parse(ik: &[u8]) -> Result<ParsedInternalKey<'_>> {
    ParsedInternalKey::parse(ik)
        .ok_or_else(|| Error::corruption("<iterator>", 0, "entry with a malformed internal key"))
}

/// A range-tombstone answer and the keys it holds for: `(seq, start, end)`,
/// as [`FragmentedRangeTombstones::covering_span`] gives it, owned.
type TombstoneSpan = (SequenceNumber, Option<Vec<u8>>, Option<Vec<u8>>);

/// Iterator over live user key/value pairs in key order, as of one sequence
/// number: the newest version of each key with sequence `<=` that number
/// wins, and keys whose winning version is a tombstone, or is older than a
/// range deletion over the key, are skipped.
///
/// Items are `Result<(key, value)>`; after an error the iterator ends.
/// Double-ended: `.rev()` walks backwards, and `next`/`next_back` may be
/// interleaved. The iterator holds the memtables and SSTables it reads, so
/// it sees a fixed view however long it lives, even after the [`crate::Db`]
/// is closed or dropped (as a [`crate::Snapshot`] does); hold it briefly,
/// because the files it references cannot be deleted until it is dropped.
///
/// # Example
/// ```
/// let dir = tempfile::tempdir()?;
/// let db = siftdb::Db::open(dir.path())?;
/// for k in ["a", "b", "c", "d"] {
///     db.put(k, k.to_uppercase())?;
/// }
/// let backwards: Vec<siftdb::Slice> = db.range("b".."d").keys().rev().collect::<Result<_, _>>()?;
/// assert_eq!(backwards, ["c", "b"]);
/// let (first, value) = db.iter().next().transpose()?.expect("not empty");
/// assert_eq!((first.as_slice(), value.as_slice()), (&b"a"[..], &b"A"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct DbIterator {
    merge: MergingIterator,
    seq: SequenceNumber,
    /// Last user key the front end settled (yielded or found deleted).
    front_key: Option<Slice>,
    /// Last user key the back end settled.
    back_key: Option<Slice>,
    done: bool,
    /// The range tombstones this view applies, one index per memtable and
    /// one for the version (empty ones left out): a version older than the
    /// newest tombstone over its key (and visible at `seq`) is deleted.
    range_tombstones: Vec<Arc<FragmentedRangeTombstones>>,
    /// The last answer of `range_tombstones` and the span of keys it holds
    /// for (`start` inclusive, `end` exclusive, `None` unbounded; where the
    /// spans of every index meet): a scan searches the fragments again
    /// only when it leaves the span.
    tombstone_span: Option<TombstoneSpan>,
    /// Keeps memtables and tables alive for the iterator's lifetime.
    _pin: Box<dyn std::any::Any + Send + Sync>,
}

impl DbIterator {
    pub(crate) fn new(
        sources: Vec<EntrySource>,
        seq: SequenceNumber,
        pin: Box<dyn std::any::Any + Send + Sync>,
    ) -> Self {
        DbIterator {
            merge: MergingIterator::new(sources),
            seq,
            front_key: None,
            back_key: None,
            done: false,
            range_tombstones: Vec::new(),
            tombstone_span: None,
            _pin: pin,
        }
    }

    /// Applies `tombstones` (range deletions, any number of indexes) to
    /// this view.
    pub(crate) fn with_range_tombstones(
        mut self,
        tombstones: Vec<Arc<FragmentedRangeTombstones>>,
    ) -> Self {
        self.range_tombstones = tombstones;
        self.range_tombstones.retain(|t| !t.is_empty());
        self
    }

    /// True if a range tombstone this view sees deletes the version of
    /// `user_key` written at `version_seq`.
    fn range_deleted(&mut self, user_key: &[u8], version_seq: SequenceNumber) -> bool {
        if self.range_tombstones.is_empty() {
            return false;
        }
        let inside = |(_, lo, hi): &TombstoneSpan| {
            lo.as_deref().is_none_or(|lo| lo <= user_key)
                && hi.as_deref().is_none_or(|hi| user_key < hi)
        };
        if !self.tombstone_span.as_ref().is_some_and(inside) {
            // The newest answer of any index, over the keys where every
            // index keeps its answer: the latest start, the earliest end.
            let (mut seq, mut lo, mut hi) = (SequenceNumber::ZERO, None, None);
            for t in &self.range_tombstones {
                let (s, l, h) = t.covering_span(user_key, self.seq);
                seq = seq.max(s);
                if l.is_some() && l > lo {
                    lo = l;
                }
                if h.is_some() && (hi.is_none() || h < hi) {
                    hi = h;
                }
            }
            self.tombstone_span = Some((seq, lo.map(<[u8]>::to_vec), hi.map(<[u8]>::to_vec)));
        }
        self.tombstone_span
            .as_ref()
            .is_some_and(|(seq, _, _)| *seq > version_seq)
    }

    fn step_front(&mut self) -> Result<Option<(Slice, Slice)>> {
        loop {
            let Some((ik, value)) = self.merge.next_front()? else {
                return Ok(None);
            };
            let p = parse(&ik)?;
            if p.seq > self.seq || self.front_key.as_deref() == Some(p.user_key) {
                continue; // too new for this view, or an older version
            }
            if self.back_key.as_deref().is_some_and(|b| p.user_key >= b) {
                return Ok(None);
            }
            let user_key = Slice::copy_from_slice(p.user_key);
            let vt = p.value_type;
            let deleted = self.range_deleted(p.user_key, p.seq);
            self.front_key = Some(user_key.clone());
            if vt == ValueType::Value && !deleted {
                return Ok(Some((user_key, value)));
            }
        }
    }

    fn step_back(&mut self) -> Result<Option<(Slice, Slice)>> {
        loop {
            let Some((ik, value)) = self.merge.next_back()? else {
                return Ok(None);
            };
            let p = parse(&ik)?;
            if self.front_key.as_deref().is_some_and(|f| p.user_key <= f) {
                return Ok(None);
            }
            let user_key = Slice::copy_from_slice(p.user_key);
            // Going backwards, versions arrive oldest first: keep the newest
            // one this view may see.
            let mut winner = (p.seq <= self.seq).then_some((p.seq, p.value_type, value));
            loop {
                let same_key = match self.merge.peek_back()? {
                    Some((next, _)) => parse(next)?.user_key == &user_key[..],
                    None => false,
                };
                if !same_key {
                    break;
                }
                let Some((ik, value)) = self.merge.next_back()? else {
                    break;
                };
                let p = parse(&ik)?;
                if p.seq <= self.seq {
                    winner = Some((p.seq, p.value_type, value));
                }
            }
            self.back_key = Some(user_key.clone());
            if let Some((seq, ValueType::Value, value)) = winner {
                if !self.range_deleted(&user_key, seq) {
                    return Ok(Some((user_key, value)));
                }
            }
        }
    }

    fn finish(&mut self, r: Result<Option<(Slice, Slice)>>) -> Option<Result<(Slice, Slice)>> {
        match r {
            Ok(Some(kv)) => Some(Ok(kv)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Slice, Slice)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.step_front();
        self.finish(r)
    }
}

impl DoubleEndedIterator for DbIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.step_back();
        self.finish(r)
    }
}

impl DbIterator {
    /// The keys alone, in the same order (double-ended). Values are still
    /// read (they sit beside the keys in each block) but not returned.
    pub fn keys(self) -> Keys {
        Keys(self)
    }

    /// The values alone, in key order (double-ended).
    pub fn values(self) -> Values {
        Values(self)
    }
}

/// The keys of a [`DbIterator`] ([`DbIterator::keys`]): items are
/// `Result<key>`.
#[derive(Debug)]
pub struct Keys(DbIterator);

/// The values of a [`DbIterator`] ([`DbIterator::values`]): items are
/// `Result<value>`.
#[derive(Debug)]
pub struct Values(DbIterator);

impl Iterator for Keys {
    type Item = Result<Slice>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|r| r.map(|(k, _)| k))
    }
}

impl DoubleEndedIterator for Keys {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|r| r.map(|(k, _)| k))
    }
}

impl Iterator for Values {
    type Item = Result<Slice>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|r| r.map(|(_, v)| v))
    }
}

impl DoubleEndedIterator for Values {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|r| r.map(|(_, v)| v))
    }
}

impl std::fmt::Debug for DbIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbIterator")
            .field("seq", &self.seq)
            .field("sources", &self.merge.sources.len())
            .field("done", &self.done)
            .finish()
    }
}
