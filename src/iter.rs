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
//!
//! Every source can also skip ahead from either end ([`SeekableSource`]):
//! when [`DbIterator`] lands on a version a range tombstone hides, it
//! drops, in each source whose every version that reader may see is older
//! than the tombstone, the rest of the tombstone's keys at once, instead
//! of stepping through them one by one (DESIGN.md 3.7, 4).

use std::sync::Arc;

use crate::key::{
    compare_internal_keys, user_key_of, ParsedInternalKey, SequenceNumber, ValueType,
};
use crate::range_tombstone::FragmentedRangeTombstones;
use crate::{Error, Result, Slice};

/// One entry: encoded internal key and value (which may share a table's
/// bytes; see [`Slice`]).
pub(crate) type Entry = (Vec<u8>, Slice);

/// A sorted stream of internal entries readable from both ends, that can
/// also drop the entries of a span of user keys from either end without
/// reading them.
///
/// The two ends share one window of unconsumed entries; a seek shrinks
/// that window, so what it drops is gone for both ends. A seek reads no
/// data (a table source moves its block range, a memtable source its
/// window bounds), so it cannot fail: an entry past the new bound that a
/// source had already decoded is simply dropped.
pub(crate) trait SeekableSource: DoubleEndedIterator<Item = Result<Entry>> + Send {
    /// Drops every unconsumed entry whose user key sorts below `target`
    /// (`None`: every unconsumed entry), so the front continues at the
    /// first version of the first user key `>= target`.
    fn seek_forward(&mut self, target: Option<&[u8]>);

    /// Drops every unconsumed entry whose user key is `>= target` (`None`:
    /// every unconsumed entry), so the back continues at the last version
    /// of the last user key below `target`.
    fn seek_backward(&mut self, target: Option<&[u8]>);
}

/// A sorted stream of internal entries readable from both ends, and
/// seekable ([`SeekableSource`]).
pub(crate) type EntrySource = Box<dyn SeekableSource>;

/// A source for [`MergingIterator::new`] and what it knows of its
/// versions.
pub(crate) struct Source {
    /// The entries.
    pub iter: EntrySource,
    /// No entry of `iter` that a reader at the iterator's sequence number
    /// may see has a larger sequence number (a table's `largest_seq`; a
    /// memtable's largest point-write sequence, read after the iterator's
    /// sequence number was fixed). A range tombstone newer than it hides
    /// every such entry of the source in its range, so the source may skip
    /// the range whole.
    pub newest: SequenceNumber,
}

/// A source with one entry of look-ahead at each end.
struct PeekableSource {
    inner: EntrySource,
    /// See [`Source::newest`].
    newest: SequenceNumber,
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

    /// [`SeekableSource::seek_forward`], the look-ahead included: the
    /// front entry goes unless it is at or past `target`, and the back
    /// one (the largest left) if it lies below `target`.
    fn seek_forward(&mut self, target: Option<&[u8]>) {
        let below = |e: &Entry| target.is_none_or(|t| user_key_of(&e.0) < t);
        if self.front.as_ref().is_some_and(|e| !below(e)) {
            return;
        }
        self.front = None;
        self.inner.seek_forward(target);
        if self.back.as_ref().is_some_and(below) {
            self.back = None;
        }
    }

    /// [`SeekableSource::seek_backward`], the look-ahead included (mirror
    /// of `seek_forward`).
    fn seek_backward(&mut self, target: Option<&[u8]>) {
        let at_or_above = |e: &Entry| target.is_none_or(|t| user_key_of(&e.0) >= t);
        if self.back.as_ref().is_some_and(|e| !at_or_above(e)) {
            return;
        }
        self.back = None;
        self.inner.seek_backward(target);
        if self.front.as_ref().is_some_and(at_or_above) {
            self.front = None;
        }
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
    pub(crate) fn new(sources: Vec<Source>) -> Self {
        MergingIterator {
            sources: sources
                .into_iter()
                .map(|s| PeekableSource {
                    inner: s.iter,
                    newest: s.newest,
                    front: None,
                    back: None,
                })
                .collect(),
        }
    }

    /// In every source whose versions are all older than `older_than`
    /// ([`Source::newest`]), drops the unconsumed entries below `target`
    /// (`None`: all of them); the others are left as they are.
    pub(crate) fn seek_forward(&mut self, target: Option<&[u8]>, older_than: SequenceNumber) {
        for s in &mut self.sources {
            if s.newest < older_than {
                s.seek_forward(target);
            }
        }
    }

    /// In every source whose versions are all older than `older_than`,
    /// drops the unconsumed entries at or above `target` (`None`: all of
    /// them).
    pub(crate) fn seek_backward(&mut self, target: Option<&[u8]>, older_than: SequenceNumber) {
        for s in &mut self.sources {
            if s.newest < older_than {
                s.seek_backward(target);
            }
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
        sources: Vec<Source>,
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

    /// After the front landed on a version that the last range-tombstone
    /// answer hides: every source whose versions are all older than that
    /// tombstone skips to the end of its span (where the answer may
    /// change), so the front does not step through the hidden versions
    /// one by one. Sources holding newer versions are stepped as before.
    fn skip_hidden_forward(&mut self) {
        if let Some((seq, _, hi)) = &self.tombstone_span {
            self.merge.seek_forward(hi.as_deref(), *seq);
        }
    }

    /// Mirror of `skip_hidden_forward` for the back: such sources drop
    /// the rest of the span, down to its start.
    fn skip_hidden_backward(&mut self) {
        if let Some((seq, lo, _)) = &self.tombstone_span {
            self.merge.seek_backward(lo.as_deref(), *seq);
        }
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
            if deleted {
                self.skip_hidden_forward();
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
            if let Some((seq, vt, value)) = winner {
                let deleted = self.range_deleted(&user_key, seq);
                if vt == ValueType::Value && !deleted {
                    return Ok(Some((user_key, value)));
                }
                if deleted {
                    self.skip_hidden_backward();
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

/// A model test for [`SeekableSource`] implementations: the same steps on
/// a source and on a deque of its expected entries.
#[cfg(test)]
pub(crate) mod source_model {
    use std::collections::VecDeque;

    use proptest::prelude::*;

    use super::SeekableSource;
    use crate::key::user_key_of;

    /// One step: take from an end, or seek from an end (`None`: past
    /// everything).
    #[derive(Debug, Clone)]
    pub(crate) enum Step {
        /// `next`.
        Next,
        /// `next_back`.
        NextBack,
        /// [`SeekableSource::seek_forward`] to a user key.
        SeekForward(Option<Vec<u8>>),
        /// [`SeekableSource::seek_backward`] to a user key.
        SeekBackward(Option<Vec<u8>>),
    }

    /// Steps over user keys drawn from `key`, mostly takes.
    pub(crate) fn steps(
        key: impl Strategy<Value = Vec<u8>> + Clone,
    ) -> impl Strategy<Value = Vec<Step>> {
        let step = prop_oneof![
            4 => Just(Step::Next),
            4 => Just(Step::NextBack),
            1 => prop::option::weighted(0.9, key.clone()).prop_map(Step::SeekForward),
            1 => prop::option::weighted(0.9, key).prop_map(Step::SeekBackward),
        ];
        prop::collection::vec(step, 0..60)
    }

    /// Runs `steps` on `source` and on `expected` (its entries in order:
    /// encoded internal key and value), asserting the same entries, then
    /// drains both from the front.
    pub(crate) fn check(
        source: &mut dyn SeekableSource,
        expected: Vec<(Vec<u8>, Vec<u8>)>,
        steps: &[Step],
    ) {
        let mut model: VecDeque<(Vec<u8>, Vec<u8>)> = expected.into();
        let owned = |r: crate::Result<super::Entry>| {
            let (k, v) = r.expect("no error");
            (k, v.to_vec())
        };
        for (i, step) in steps.iter().enumerate() {
            match step {
                Step::Next => assert_eq!(source.next().map(owned), model.pop_front(), "step {i}"),
                Step::NextBack => {
                    assert_eq!(source.next_back().map(owned), model.pop_back(), "step {i}")
                }
                Step::SeekForward(t) => {
                    source.seek_forward(t.as_deref());
                    while model
                        .front()
                        .is_some_and(|(k, _)| t.as_deref().is_none_or(|t| user_key_of(k) < t))
                    {
                        model.pop_front();
                    }
                }
                Step::SeekBackward(t) => {
                    source.seek_backward(t.as_deref());
                    while model
                        .back()
                        .is_some_and(|(k, _)| t.as_deref().is_none_or(|t| user_key_of(k) >= t))
                    {
                        model.pop_back();
                    }
                }
            }
        }
        let rest: Vec<_> = std::iter::from_fn(|| source.next()).map(owned).collect();
        assert_eq!(rest, Vec::from(model), "the rest");
        assert!(source.next().is_none() && source.next_back().is_none());
    }
}
