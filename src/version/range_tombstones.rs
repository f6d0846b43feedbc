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
use std::sync::Arc;

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
#[derive(Debug, Clone, Default)]
pub struct RangeTombstoneSet {
    live: BTreeMap<SequenceNumber, LiveRangeTombstone>,
    index: Arc<FragmentedRangeTombstones>,
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
        self.live.values()
    }

    /// The tombstone written at `seq`, if the set holds it.
    pub fn get(&self, seq: SequenceNumber) -> Option<&LiveRangeTombstone> {
        self.live.get(&seq)
    }

    /// The fragmented index over every tombstone, for reads.
    pub fn index(&self) -> &Arc<FragmentedRangeTombstones> {
        &self.index
    }

    /// The set after `edit`, whose live tables afterwards satisfy
    /// `is_live`. Tables the edit deletes (and does not add back: a move)
    /// leave every list; the edit's new tombstones join with their lists;
    /// the edit's `(seq, file)` pairs extend lists; a tombstone whose list
    /// is then empty leaves the set.
    ///
    /// # Errors
    /// What is wrong (the caller reports it as corruption of the edit): a
    /// tombstone added twice, a list extended for an absent tombstone, or a
    /// list naming a table that is not live.
    pub fn apply(
        &self,
        edit: &VersionEdit,
        is_live: impl Fn(u64) -> bool,
    ) -> std::result::Result<RangeTombstoneSet, String> {
        if self.live.is_empty()
            && edit.new_range_tombstones.is_empty()
            && edit.range_tombstone_files.is_empty()
        {
            return Ok(self.clone());
        }
        let mut live = self.live.clone();
        let readded: BTreeSet<u64> = edit.new_files.iter().map(|(_, f)| f.number).collect();
        for &(_, number) in &edit.deleted_files {
            if !readded.contains(&number) {
                for t in live.values_mut() {
                    t.pending.remove(&number);
                }
            }
        }
        for (t, files) in &edit.new_range_tombstones {
            let entry = LiveRangeTombstone {
                tombstone: t.clone(),
                pending: files.iter().copied().collect(),
            };
            if live.insert(t.seq, entry).is_some() {
                return Err(format!("adds range tombstone {} twice", t.seq));
            }
        }
        for &(seq, number) in &edit.range_tombstone_files {
            live.get_mut(&seq)
                .ok_or_else(|| format!("extends range tombstone {seq}, which is absent"))?
                .pending
                .insert(number);
        }
        for (seq, t) in &live {
            if let Some(n) = t.pending.iter().find(|&&n| !is_live(n)) {
                return Err(format!(
                    "range tombstone {seq} waits on table {n}, which is not live"
                ));
            }
        }
        live.retain(|_, t| !t.pending.is_empty());
        let same = live.len() == self.live.len() && live.keys().eq(self.live.keys());
        let index = if same {
            Arc::clone(&self.index)
        } else {
            Arc::new(FragmentedRangeTombstones::new(
                live.values().map(|t| &t.tombstone),
            ))
        };
        Ok(RangeTombstoneSet { live, index })
    }

    /// The tombstones as a manifest snapshot lists them.
    pub fn as_new_tombstones(&self) -> Vec<(RangeTombstone, Vec<u64>)> {
        self.live
            .values()
            .map(|t| (t.tombstone.clone(), t.pending.iter().copied().collect()))
            .collect()
    }
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
        let s = s.apply(&mv, live).unwrap();
        assert_eq!(s.get(SequenceNumber(7)).unwrap().pending.len(), 2);
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
