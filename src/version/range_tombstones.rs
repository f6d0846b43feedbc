//! [`RangeTombstoneSet`]: the range deletions a version holds, each with
//! the tables that may still hold versions it covers.
//!
//! A flush moves its memtable's range tombstones here, in the same edit
//! that adds its table, and lists with each the live tables that overlap
//! its range: only they can hold a version it hides (every older write is
//! in a table by then, and every newer one has a larger sequence number).
//! A compaction that knew a tombstone drops the versions it hides and
//! lists only the outputs that kept one (for a snapshot); a table deleted
//! by any edit leaves every list. A tombstone whose list empties has
//! nothing left to hide and leaves the set: that is its garbage
//! collection, recorded in the manifest by the edits themselves (DESIGN.md
//! 3.7, 12.8).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use crate::key::SequenceNumber;
use crate::range_tombstone::{FragmentedRangeTombstones, RangeTombstone};
use crate::version::edit::VersionEdit;

/// A range tombstone of the version and the tables that may hold versions
/// it hides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveRangeTombstone {
    /// The deletion.
    pub tombstone: RangeTombstone,
    /// File numbers of the live tables that may hold a version it hides.
    /// Never empty: the tombstone leaves the set when it would be.
    pub pending: BTreeSet<u64>,
}

/// The range tombstones of one version, keyed by sequence number (unique:
/// every operation of a batch has its own), with their fragmented index.
///
/// Versions are immutable and each edit makes a new one, so the set is
/// cheap to copy: the tombstones are shared (`Arc`) until an edit changes
/// one, and the index is built on first use, once per version that is
/// read, not once per edit (a replay of many edits builds none).
#[derive(Debug, Clone, Default)]
pub struct RangeTombstoneSet {
    live: BTreeMap<SequenceNumber, Arc<LiveRangeTombstone>>,
    index: OnceLock<Arc<FragmentedRangeTombstones>>,
}

impl RangeTombstoneSet {
    /// True if the version has no range tombstone (the usual case: every
    /// read then skips them at the cost of one branch).
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Number of range tombstones.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// The tombstones, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &LiveRangeTombstone> {
        self.live.values().map(|t| &**t)
    }

    /// The tombstone written at `seq`, if the set holds it.
    pub fn get(&self, seq: SequenceNumber) -> Option<&LiveRangeTombstone> {
        self.live.get(&seq).map(|t| &**t)
    }

    /// The fragmented index over every tombstone, for reads: built by the
    /// first call on this set, `O(n log n)`, then shared.
    pub fn index(&self) -> &Arc<FragmentedRangeTombstones> {
        self.index.get_or_init(|| {
            Arc::new(FragmentedRangeTombstones::new(
                self.live.values().map(|t| &t.tombstone),
            ))
        })
    }

    /// The set after `edit`, whose live tables afterwards satisfy
    /// `is_live`: a copy with [`Self::apply_in_place`] applied.
    ///
    /// # Errors
    /// As [`Self::apply_in_place`].
    pub fn apply(
        &self,
        edit: &VersionEdit,
        is_live: impl Fn(u64) -> bool,
    ) -> std::result::Result<RangeTombstoneSet, String> {
        let mut next = self.clone();
        next.apply_in_place(edit, is_live)?;
        Ok(next)
    }

    /// Applies `edit`, whose live tables afterwards satisfy `is_live`.
    /// Tables the edit deletes (and does not add back: a move) leave every
    /// list; the edit's new tombstones join with their lists; the edit's
    /// `(seq, file)` pairs extend lists; a tombstone whose list is then
    /// empty leaves the set. Only the lists the edit adds to are checked
    /// against `is_live`: the others held live tables before it, and it
    /// removed the tables it deletes from them. `O(Σ min(list, tables
    /// deleted) · log)` over the tombstones, plus the lists it changes and
    /// the edit's own tombstone fields: linear in the tombstones, not
    /// tombstones × tables deleted.
    ///
    /// # Errors
    /// What is wrong (the caller reports it as corruption of the edit): a
    /// tombstone added twice, a list extended for an absent tombstone, or a
    /// list naming a table that is not live. The set is then left part
    /// applied: callers drop it.
    pub fn apply_in_place(
        &mut self,
        edit: &VersionEdit,
        is_live: impl Fn(u64) -> bool,
    ) -> std::result::Result<(), String> {
        if self.live.is_empty()
            && edit.new_range_tombstones.is_empty()
            && edit.range_tombstone_files.is_empty()
        {
            return Ok(());
        }
        let before = self.live.len();
        let mut emptied = false;
        let readded: BTreeSet<u64> = edit.new_files.iter().map(|(_, f)| f.number).collect();
        let gone: BTreeSet<u64> = edit
            .deleted_files
            .iter()
            .map(|&(_, number)| number)
            .filter(|number| !readded.contains(number))
            .collect();
        // One pass over the tombstones, not one per table deleted (a
        // manual compaction deletes every table of a level). A list that
        // shares a table with `gone` is rewritten in `O(list)`, what
        // copying it away from the version before costs anyway.
        if !gone.is_empty() {
            for t in self.live.values_mut() {
                if shares_a_table(&t.pending, &gone) {
                    let t = Arc::make_mut(t);
                    t.pending.retain(|n| !gone.contains(n));
                    emptied |= t.pending.is_empty();
                }
            }
        }
        let not_live = |seq: SequenceNumber, n: u64| {
            format!("range tombstone {seq} waits on table {n}, which is not live")
        };
        for (t, files) in &edit.new_range_tombstones {
            if let Some(&n) = files.iter().find(|&&n| !is_live(n)) {
                return Err(not_live(t.seq, n));
            }
            let entry = LiveRangeTombstone {
                tombstone: t.clone(),
                pending: files.iter().copied().collect(),
            };
            emptied |= entry.pending.is_empty();
            if self.live.insert(t.seq, Arc::new(entry)).is_some() {
                return Err(format!("adds range tombstone {} twice", t.seq));
            }
        }
        for &(seq, number) in &edit.range_tombstone_files {
            let t = self
                .live
                .get_mut(&seq)
                .ok_or_else(|| format!("extends range tombstone {seq}, which is absent"))?;
            if !is_live(number) {
                return Err(not_live(seq, number));
            }
            Arc::make_mut(t).pending.insert(number);
        }
        if emptied {
            self.live.retain(|_, t| !t.pending.is_empty());
        }
        if self.live.len() != before || emptied {
            // The tombstones changed: the next read builds the index anew.
            self.index = OnceLock::new();
        }
        Ok(())
    }

    /// The tombstones as a manifest snapshot lists them.
    pub fn as_new_tombstones(&self) -> Vec<(RangeTombstone, Vec<u64>)> {
        self.live
            .values()
            .map(|t| (t.tombstone.clone(), t.pending.iter().copied().collect()))
            .collect()
    }
}

/// True if `a` and `b` share a file number: `O(min · log max)`.
fn shares_a_table(a: &BTreeSet<u64>, b: &BTreeSet<u64>) -> bool {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    small.iter().any(|n| large.contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{InternalKey, ValueType};
    use crate::version::edit::FileMetaData;

    fn tomb(seq: u64) -> RangeTombstone {
        RangeTombstone {
            start: b"b".to_vec(),
            end: Some(b"d".to_vec()),
            seq: SequenceNumber(seq),
        }
    }

    fn meta(number: u64) -> FileMetaData {
        let k = |s: &str| InternalKey::new(s.as_bytes(), SequenceNumber(1), ValueType::Value);
        FileMetaData {
            number,
            file_size: 1,
            smallest: k("a"),
            largest: k("z"),
            num_entries: 1,
            num_tombstones: 0,
        }
    }

    #[test]
    fn applied_in_place_as_by_copy_and_the_index_follows_the_tombstones() {
        let live = |n: u64| n < 100;
        let add = |seq: u64, files: Vec<u64>| VersionEdit {
            new_range_tombstones: vec![(tomb(seq), files)],
            ..Default::default()
        };
        let mut in_place = RangeTombstoneSet::default();
        let mut by_copy = RangeTombstoneSet::default();
        let c = SequenceNumber(100);
        for (i, e) in [add(7, vec![3]), add(9, vec![3, 4])].iter().enumerate() {
            in_place.apply_in_place(e, live).unwrap();
            by_copy = by_copy.apply(e, live).unwrap();
            let newest = SequenceNumber([7, 9][i]);
            assert_eq!(in_place.index().max_covering(b"c", c), newest);
            assert_eq!(by_copy.index().max_covering(b"c", c), newest);
        }
        // Table 4 goes: tombstone 9 still waits on 3. Then 3 goes: none.
        let drop_table = |n: u64| VersionEdit {
            deleted_files: vec![(0, n)],
            ..Default::default()
        };
        in_place.apply_in_place(&drop_table(4), live).unwrap();
        assert_eq!(in_place.len(), 2);
        in_place.apply_in_place(&drop_table(3), live).unwrap();
        assert!(in_place.is_empty());
        assert_eq!(in_place.index().max_covering(b"c", c), SequenceNumber::ZERO);
        let by_copy = by_copy.apply(&drop_table(3), live).unwrap();
        assert_eq!(by_copy.len(), 1, "9 still waits on 4");
        assert_eq!(by_copy.index().max_covering(b"c", c), SequenceNumber(9));
        // A list naming a table that is not live is refused.
        let err = RangeTombstoneSet::default()
            .apply_in_place(&add(5, vec![200]), live)
            .unwrap_err();
        assert!(err.contains("waits on table 200"), "{err}");
    }

    #[test]
    fn a_tombstone_lives_until_its_last_table_is_gone() {
        let live = |n: u64| n < 100;
        let add = VersionEdit {
            new_range_tombstones: vec![(tomb(7), vec![3, 4])],
            ..Default::default()
        };
        let s = RangeTombstoneSet::default().apply(&add, live).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(
            s.index().max_covering(b"c", SequenceNumber(9)),
            SequenceNumber(7)
        );
        // A compaction of 3 into 5 that kept a hidden version in 5.
        let compact = VersionEdit {
            deleted_files: vec![(0, 3)],
            new_files: vec![(1, meta(5))],
            range_tombstone_files: vec![(SequenceNumber(7), 5)],
            ..Default::default()
        };
        let s = s.apply(&compact, live).unwrap();
        assert_eq!(
            s.get(SequenceNumber(7)).unwrap().pending,
            BTreeSet::from([4, 5])
        );
        // Moving 4 to another level keeps it on the list.
        let mv = VersionEdit {
            deleted_files: vec![(0, 4)],
            new_files: vec![(1, meta(4))],
            ..Default::default()
        };
        let before = Arc::clone(s.index());
        let s = s.apply(&mv, live).unwrap();
        assert_eq!(s.get(SequenceNumber(7)).unwrap().pending.len(), 2);
        assert!(
            Arc::ptr_eq(&before, s.index()),
            "the same tombstones share the index"
        );
        let gone = VersionEdit {
            deleted_files: vec![(1, 4), (1, 5)],
            new_files: vec![(2, meta(6))],
            ..Default::default()
        };
        let s = s.apply(&gone, live).unwrap();
        assert!(s.is_empty());
        assert!(s.index().is_empty());
    }

    #[test]
    fn an_edit_deleting_many_tables_shortens_only_the_lists_naming_one() {
        let live = |n: u64| n < 100;
        let add = VersionEdit {
            new_range_tombstones: vec![
                (tomb(5), vec![1, 2, 3, 4, 5, 15, 16]),
                (tomb(6), vec![6]),
                (tomb(7), vec![9]),
                (tomb(8), vec![10, 11]),
            ],
            ..Default::default()
        };
        let s = RangeTombstoneSet::default().apply(&add, live).unwrap();
        // Deletes 2, 6, 9 (moved: added back) and 12, 13, 14 (on no list):
        // lists longer and shorter than the five tables gone.
        let edit = VersionEdit {
            deleted_files: [2, 6, 9, 12, 13, 14].map(|n| (1, n)).to_vec(),
            new_files: vec![(2, meta(9))],
            ..Default::default()
        };
        let next = s.apply(&edit, live).unwrap();
        let pending = |s: &RangeTombstoneSet, seq| {
            s.get(SequenceNumber(seq))
                .map(|t| t.pending.iter().copied().collect::<Vec<_>>())
        };
        assert_eq!(pending(&next, 5), Some(vec![1, 3, 4, 5, 15, 16]));
        assert_eq!(pending(&next, 6), None, "its only table went");
        assert_eq!(pending(&next, 7), Some(vec![9]), "a move keeps it");
        assert_eq!(pending(&next, 8), Some(vec![10, 11]));
        for seq in [7, 8] {
            let seq = SequenceNumber(seq);
            assert!(
                std::ptr::eq(s.get(seq).unwrap(), next.get(seq).unwrap()),
                "an unchanged tombstone stays shared"
            );
        }
        assert_eq!(
            next.index().max_covering(b"c", SequenceNumber(100)),
            SequenceNumber(8)
        );
    }

    #[test]
    fn inconsistent_edits_are_refused() {
        let live = |n: u64| n < 100;
        let add = VersionEdit {
            new_range_tombstones: vec![(tomb(7), vec![3])],
            ..Default::default()
        };
        let s = RangeTombstoneSet::default().apply(&add, live).unwrap();
        assert!(s.apply(&add, live).unwrap_err().contains("twice"));
        let absent = VersionEdit {
            range_tombstone_files: vec![(SequenceNumber(8), 3)],
            ..Default::default()
        };
        assert!(s.apply(&absent, live).unwrap_err().contains("absent"));
        let dead = VersionEdit {
            range_tombstone_files: vec![(SequenceNumber(7), 200)],
            ..Default::default()
        };
        assert!(s.apply(&dead, live).unwrap_err().contains("not live"));
        // A tombstone with nothing to hide never joins.
        let nothing = VersionEdit {
            new_range_tombstones: vec![(tomb(9), vec![])],
            ..Default::default()
        };
        assert_eq!(s.apply(&nothing, live).unwrap().len(), 1);
    }
}
