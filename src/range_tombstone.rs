//! Range tombstones: [`RangeTombstone`], what `delete_range` writes, and
//! [`FragmentedRangeTombstones`], the index reads consult.
//!
//! A range tombstone `[start, end) @ seq` hides every version of every
//! user key in `start <= key < end` whose sequence number is below `seq`,
//! from every reader whose sequence number is at least `seq`. It lives in
//! the memtable that took it until that memtable is flushed, then in the
//! [`crate::version::set::Version`] (recorded in the manifest), never
//! in an SSTable: a table's point filter can therefore never hide one
//! (DESIGN.md 3.7 explains the choice).
//!
//! A read asks one question of them: the newest tombstone covering `key`
//! that a reader at sequence `s` sees, [`FragmentedRangeTombstones::max_covering`].
//! To answer it in `O(log n)` the tombstones are *fragmented* (as Pebble's
//! `keyspan` fragmenter does): cut at every start and end into disjoint
//! pieces, each listing the sequence numbers of the tombstones over it.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;

use crate::key::SequenceNumber;

/// One range deletion: every user key `k` with `start <= k < end` (`end`
/// `None`: no upper bound) is deleted at sequence `seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeTombstone {
    /// First key deleted (inclusive).
    pub start: Vec<u8>,
    /// First key past the range (exclusive); `None` deletes every key from
    /// `start` on. Always greater than `start` when present.
    pub end: Option<Vec<u8>>,
    /// The sequence number of the deletion.
    pub seq: SequenceNumber,
}

impl RangeTombstone {
    /// True if `key` lies in `[start, end)`.
    pub fn covers(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && self.end.as_deref().is_none_or(|e| key < e)
    }

    /// True if some key in `[smallest, largest]` (user keys, both
    /// inclusive: a table's key range) lies in the tombstone's range.
    pub fn overlaps(&self, smallest: &[u8], largest: &[u8]) -> bool {
        largest >= self.start.as_slice() && self.end.as_deref().is_none_or(|e| smallest < e)
    }
}

/// The half-open range `[start, end)` (`end` `None`: unbounded) holding
/// exactly the keys within `(lo, hi)`, or `None` if no key does. The
/// smallest key greater than `k` is `k` followed by a zero byte.
pub fn half_open(lo: Bound<Vec<u8>>, hi: Bound<Vec<u8>>) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let successor = |mut k: Vec<u8>| {
        k.push(0);
        k
    };
    let start = match lo {
        Bound::Included(k) => k,
        Bound::Excluded(k) => successor(k),
        Bound::Unbounded => Vec::new(),
    };
    let end = match hi {
        Bound::Included(k) => Some(successor(k)),
        Bound::Excluded(k) => Some(k),
        Bound::Unbounded => None,
    };
    match &end {
        Some(e) if e <= &start => None,
        _ => Some((start, end)),
    }
}

/// One disjoint piece of the fragmented tombstones, stored under its
/// start key.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fragment {
    end: Option<Vec<u8>>,
    /// Sequence numbers of the tombstones over the piece, oldest first
    /// (so a memtable's newest tombstone is pushed at the end).
    seqs: Vec<SequenceNumber>,
}

/// Range tombstones cut into disjoint, sorted fragments, for lookups in
/// `O(log fragments)`. `n` tombstones make at most `2n − 1` fragments; a
/// fragment lists every tombstone over it, so nested tombstones cost
/// `O(n²)` sequence numbers in the worst case (siftdb expects few, wide
/// range deletions: a tenant, a time window). Kept in a B-tree by start
/// key, so [`Self::insert`] adds one without moving the others.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FragmentedRangeTombstones {
    fragments: BTreeMap<Vec<u8>, Fragment>,
}

/// Orders range ends, `None` (unbounded) last.
fn cmp_end(a: &Option<Vec<u8>>, b: &Option<Vec<u8>>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => x.cmp(y),
    }
}

impl FragmentedRangeTombstones {
    /// Fragments `tombstones` (any order, overlaps allowed).
    pub fn new<'a>(tombstones: impl IntoIterator<Item = &'a RangeTombstone>) -> Self {
        let tombstones: Vec<&RangeTombstone> = tombstones.into_iter().collect();
        if tombstones.is_empty() {
            return FragmentedRangeTombstones::default();
        }
        // Every start and end cuts; between two neighbouring cuts, the
        // covering set does not change.
        let mut cuts: Vec<Option<Vec<u8>>> = Vec::with_capacity(2 * tombstones.len());
        for t in &tombstones {
            cuts.push(Some(t.start.clone()));
            cuts.push(t.end.clone());
        }
        cuts.sort_by(cmp_end);
        cuts.dedup();
        // Sweep the cuts left to right, keeping the tombstones that cover
        // the current piece (those started at or before it, not yet ended).
        let mut by_start = tombstones;
        by_start.sort_by(|a, b| a.start.cmp(&b.start));
        let mut next = 0;
        let mut active: Vec<&RangeTombstone> = Vec::new();
        let mut fragments = BTreeMap::new();
        for pair in cuts.windows(2) {
            let Some(start) = &pair[0] else { break };
            let end = &pair[1];
            while next < by_start.len() && by_start[next].start.as_slice() <= start.as_slice() {
                active.push(by_start[next]);
                next += 1;
            }
            // A tombstone ending at or before this piece's start is done.
            active.retain(|t| t.end.as_deref().is_none_or(|e| e > start.as_slice()));
            if active.is_empty() {
                continue; // a gap between tombstones
            }
            let mut seqs: Vec<SequenceNumber> = active.iter().map(|t| t.seq).collect();
            seqs.sort_unstable();
            seqs.dedup();
            let end = end.clone();
            fragments.insert(start.clone(), Fragment { end, seqs });
        }
        FragmentedRangeTombstones { fragments }
    }

    /// Adds one tombstone in place: the same fragments as [`Self::new`]
    /// over the old tombstones and `t`, in `O((k + 1) log n)` (`k` the
    /// fragments `t` overlaps; each gains `t`'s sequence number at its
    /// end when `t` is the newest, as in a memtable). The memtable keeps
    /// its range deletions fragmented this way, so no read fragments them
    /// again.
    pub fn insert(&mut self, t: &RangeTombstone) {
        // Cut the fragments straddling `start` and `end`: then every
        // fragment overlapping `t` lies inside it.
        self.split_at(&t.start);
        if let Some(end) = &t.end {
            self.split_at(end);
        }
        let upper = match &t.end {
            Some(e) => Bound::Excluded(e.as_slice()),
            None => Bound::Unbounded,
        };
        let mut gaps: Vec<(Vec<u8>, Fragment)> = Vec::new();
        // Where the part of `t` not yet covered begins (`None`: nowhere).
        let mut covered_to: Option<&[u8]> = Some(&t.start);
        let gap = |from: &[u8], to: Option<&[u8]>| {
            let end = to.map(<[u8]>::to_vec);
            (
                from.to_vec(),
                Fragment {
                    end,
                    seqs: vec![t.seq],
                },
            )
        };
        let inside = (Bound::Included(t.start.as_slice()), upper);
        for (start, f) in self.fragments.range_mut::<[u8], _>(inside) {
            if let Some(from) = covered_to.filter(|&from| from < start.as_slice()) {
                gaps.push(gap(from, Some(start)));
            }
            if let Err(at) = f.seqs.binary_search(&t.seq) {
                f.seqs.insert(at, t.seq);
            }
            let f: &Fragment = f;
            covered_to = f.end.as_deref();
        }
        if let Some(from) = covered_to {
            if t.end.as_deref().is_none_or(|e| from < e) {
                gaps.push(gap(from, t.end.as_deref()));
            }
        }
        self.fragments.extend(gaps);
    }

    /// Cuts the fragment holding `at` in two at `at`, if one holds it and
    /// begins before it: both halves keep its tombstones.
    fn split_at(&mut self, at: &[u8]) {
        let before = (Bound::Unbounded, Bound::Excluded(at));
        let Some((_, f)) = self.fragments.range_mut::<[u8], _>(before).next_back() else {
            return;
        };
        if f.end.as_deref().is_some_and(|e| e <= at) {
            return;
        }
        let tail = Fragment {
            end: f.end.replace(at.to_vec()),
            seqs: f.seqs.clone(),
        };
        self.fragments.insert(at.to_vec(), tail);
    }

    /// True if there is no tombstone: every lookup answers 0 at once.
    pub fn is_empty(&self) -> bool {
        self.fragments.is_empty()
    }

    /// The last fragment starting at or before `key`, with its start.
    fn at_or_before(&self, key: &[u8]) -> Option<(&Vec<u8>, &Fragment)> {
        self.fragments
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(key)))
            .next_back()
    }

    /// The fragment holding `key`, if any.
    fn fragment(&self, key: &[u8]) -> Option<&Fragment> {
        let (_, f) = self.at_or_before(key)?;
        f.end.as_deref().is_none_or(|e| key < e).then_some(f)
    }

    /// The largest sequence number `<= read_seq` of a tombstone covering
    /// `key`, or [`SequenceNumber::ZERO`] if none does: a version of `key`
    /// with a smaller sequence number is deleted for a reader at
    /// `read_seq`.
    pub fn max_covering(&self, key: &[u8], read_seq: SequenceNumber) -> SequenceNumber {
        if self.fragments.is_empty() {
            return SequenceNumber::ZERO;
        }
        self.covering_span(key, read_seq).0
    }

    /// [`Self::max_covering`] for `key`, with the span of keys around it
    /// that share the answer: `(seq, start, end)`, `start` inclusive
    /// (`None`: from the first key), `end` exclusive (`None`: no end). A
    /// scan asks again only once it leaves the span.
    pub fn covering_span(
        &self,
        key: &[u8],
        read_seq: SequenceNumber,
    ) -> (SequenceNumber, Option<&[u8]>, Option<&[u8]>) {
        let before = self.at_or_before(key);
        if let Some((start, f)) = before {
            if f.end.as_deref().is_none_or(|e| key < e) {
                let seq = f.seqs.iter().rev().find(|&&s| s <= read_seq).copied();
                return (
                    seq.unwrap_or(SequenceNumber::ZERO),
                    Some(start),
                    f.end.as_deref(),
                );
            }
        }
        // In a gap: after the previous fragment, before the next.
        let start = before.and_then(|(_, f)| f.end.as_deref());
        let end = self
            .fragments
            .range::<[u8], _>((Bound::Excluded(key), Bound::Unbounded))
            .next()
            .map(|(k, _)| k.as_slice());
        (SequenceNumber::ZERO, start, end)
    }

    /// The sequence numbers of every tombstone covering `key`, oldest
    /// first (empty if none).
    pub fn covering(&self, key: &[u8]) -> &[SequenceNumber] {
        self.fragment(key).map_or(&[], |f| &f.seqs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(start: &str, end: Option<&str>, seq: u64) -> RangeTombstone {
        RangeTombstone {
            start: start.as_bytes().to_vec(),
            end: end.map(|e| e.as_bytes().to_vec()),
            seq: SequenceNumber(seq),
        }
    }

    /// The answer by brute force over the tombstones themselves.
    fn brute(ts: &[RangeTombstone], key: &[u8], read: u64) -> u64 {
        ts.iter()
            .filter(|t| t.covers(key) && t.seq.0 <= read)
            .map(|t| t.seq.0)
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn overlapping_tombstones_answer_the_newest_visible_one() {
        let ts = [t("b", Some("f"), 5), t("d", Some("h"), 9), t("x", None, 3)];
        let f = FragmentedRangeTombstones::new(&ts);
        let s = SequenceNumber;
        assert_eq!(f.max_covering(b"a", s(100)), s(0));
        assert_eq!(f.max_covering(b"b", s(100)), s(5));
        assert_eq!(f.max_covering(b"d", s(100)), s(9));
        assert_eq!(f.max_covering(b"d", s(8)), s(5), "a snapshot before seq 9");
        assert_eq!(f.max_covering(b"d", s(4)), s(0));
        assert_eq!(f.max_covering(b"f", s(100)), s(9), "f is past the first");
        assert_eq!(f.max_covering(b"h", s(100)), s(0), "ends are exclusive");
        assert_eq!(f.max_covering(b"w", s(100)), s(0));
        assert_eq!(f.max_covering(b"zzzz", s(100)), s(3), "no upper bound");
        assert_eq!(f.covering(b"e"), &[s(5), s(9)]);
        assert!(f.covering(b"a").is_empty());
    }

    #[test]
    fn fragments_agree_with_brute_force_on_random_tombstones() {
        // A small deterministic generator: keys are one or two letters.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let key = |r: u64| {
            let a = (b'a' + (r % 6) as u8) as char;
            if r.is_multiple_of(3) {
                a.to_string()
            } else {
                format!("{a}{}", (b'a' + ((r >> 8) % 4) as u8) as char)
            }
        };
        for _ in 0..200 {
            let n = (next() % 6) as usize;
            let mut ts = Vec::new();
            for i in 0..n {
                let (a, b) = (key(next()), key(next()));
                let (lo, hi) = if a < b { (a, b) } else { (b, a) };
                let end = if next() % 5 == 0 {
                    None
                } else {
                    Some(hi.as_str())
                };
                if end.is_some_and(|e| e <= lo.as_str()) {
                    continue;
                }
                ts.push(t(&lo, end, 1 + i as u64 * 2));
            }
            let f = FragmentedRangeTombstones::new(&ts);
            for probe in 0..40u64 {
                let k = key(next());
                let read = probe % 13;
                let want = brute(&ts, k.as_bytes(), read);
                assert_eq!(
                    f.max_covering(k.as_bytes(), SequenceNumber(read)).0,
                    want,
                    "key {k} at {read} over {ts:?}"
                );
                // Every key of the span around it has the same answer.
                let (seq, lo, hi) = f.covering_span(k.as_bytes(), SequenceNumber(read));
                assert_eq!(seq.0, want);
                assert!(lo.is_none_or(|lo| lo <= k.as_bytes()));
                assert!(hi.is_none_or(|hi| k.as_bytes() < hi));
                for other in 0..20u64 {
                    let o = key(other * 7919);
                    let inside = lo.is_none_or(|lo| lo <= o.as_bytes())
                        && hi.is_none_or(|hi| o.as_bytes() < hi);
                    if inside {
                        assert_eq!(
                            brute(&ts, o.as_bytes(), read),
                            want,
                            "{o} in the span of {k}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn insert_makes_the_fragments_new_makes() {
        // Random tombstones over a small alphabet (so they overlap, nest,
        // share starts and ends, and some are unbounded), added one at a
        // time in and out of sequence order: after every insert the
        // fragments equal those `new` builds from scratch.
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        for round in 0..300 {
            let mut all: Vec<RangeTombstone> = Vec::new();
            let mut incremental = FragmentedRangeTombstones::default();
            for i in 0..1 + next(12) {
                let a = next(8) as u8;
                let b = a + 1 + next(8 - u64::from(a)) as u8;
                let key = |c: u8| vec![b'a' + c];
                let seq = if round % 2 == 0 { i + 1 } else { 1 + next(6) };
                let t = RangeTombstone {
                    start: if next(5) == 0 { Vec::new() } else { key(a) },
                    end: (b < 8 && next(4) != 0).then(|| key(b)),
                    seq: SequenceNumber(seq),
                };
                incremental.insert(&t);
                all.push(t);
                assert_eq!(
                    incremental,
                    FragmentedRangeTombstones::new(&all),
                    "round {round}: {all:?}"
                );
            }
        }
    }

    #[test]
    fn insert_splits_and_fills_around_existing_fragments() {
        let mut f = FragmentedRangeTombstones::new(&[t("c", Some("e"), 5)]);
        f.insert(&t("a", Some("d"), 7));
        f.insert(&t("g", None, 8));
        // Each fragment as "start..end: seqs", oldest first.
        let cuts: Vec<String> = f
            .fragments
            .iter()
            .map(|(k, x)| {
                let end = x.end.as_deref().map(String::from_utf8_lossy);
                let seqs: Vec<u64> = x.seqs.iter().map(|s| s.0).collect();
                format!(
                    "{}..{}: {seqs:?}",
                    String::from_utf8_lossy(k),
                    end.unwrap_or_default()
                )
            })
            .collect();
        assert_eq!(cuts, ["a..c: [7]", "c..d: [5, 7]", "d..e: [5]", "g..: [8]"]);
        let s = SequenceNumber;
        assert_eq!(
            f.max_covering(b"f", SequenceNumber::MAX),
            SequenceNumber::ZERO
        );
        assert_eq!(
            f.max_covering(b"zz", SequenceNumber(7)),
            SequenceNumber::ZERO
        );
        assert_eq!(f.max_covering(b"zz", SequenceNumber(8)), s(8));
    }

    #[test]
    fn half_open_turns_bounds_into_start_and_end() {
        let v = |s: &str| s.as_bytes().to_vec();
        let inc = |s: &str| Bound::Included(v(s));
        let exc = |s: &str| Bound::Excluded(v(s));
        assert_eq!(half_open(inc("a"), exc("c")), Some((v("a"), Some(v("c")))));
        assert_eq!(
            half_open(exc("a"), inc("c")),
            Some((b"a\0".to_vec(), Some(b"c\0".to_vec())))
        );
        assert_eq!(
            half_open(Bound::Unbounded, Bound::Unbounded),
            Some((Vec::new(), None))
        );
        assert_eq!(half_open(inc("c"), exc("c")), None, "empty");
        assert_eq!(half_open(inc("d"), exc("c")), None, "inverted");
        assert_eq!(half_open(exc("c"), inc("c")), None);
        assert_eq!(
            half_open(inc("c"), inc("c")),
            Some((v("c"), Some(b"c\0".to_vec())))
        );
    }

    #[test]
    fn overlap_with_a_table_range() {
        let r = t("c", Some("f"), 1);
        assert!(r.overlaps(b"a", b"c"));
        assert!(!r.overlaps(b"a", b"b"));
        assert!(r.overlaps(b"e", b"z"));
        assert!(!r.overlaps(b"f", b"z"), "the end is exclusive");
        assert!(t("c", None, 1).overlaps(b"x", b"z"));
    }
}
