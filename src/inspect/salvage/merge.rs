//! The merge: every source's entries by internal key, the newest version
//! of each user key winning, and the lost ranges ([`Lost`]) that flag a
//! yielded key as possibly stale.

use std::cmp::Ordering;
#[cfg(doc)]
use std::collections::BinaryHeap;
use std::sync::Arc;

use super::tables::TableCursor;
use super::{Entry, KeyRange, Salvage, SalvagedEntry};
use crate::filter::{hash_key, FilterPolicy};
use crate::key::{
    compare_internal_keys, user_key_of, ParsedInternalKey, SequenceNumber, ValueType,
};

/// Lost data: its user key range and the largest sequence number it may
/// have held (`None`: unknown).
#[derive(Debug)]
pub(super) struct Lost {
    pub(super) keys: KeyRange,
    pub(super) max_seq: Option<u64>,
    /// For a data block after the first: the previous block's last user
    /// key and sequence number. Versions sort newest first, so the lost
    /// block's versions of that key are all older than that one.
    pub(super) older_than: Option<(Vec<u8>, u64)>,
    /// The table's filter, when intact: a key it rules out was not in the
    /// table, so not in the lost block.
    pub(super) filter: Option<Arc<TableFilter>>,
}

/// A table's verified filter block and the policy that reads it.
#[derive(Debug)]
pub(super) struct TableFilter {
    pub(super) policy: Arc<dyn FilterPolicy>,
    pub(super) bytes: Vec<u8>,
}

impl Lost {
    /// Lost data of unknown sequence numbers in `keys`.
    pub(super) fn unknown(keys: KeyRange) -> Lost {
        Lost {
            keys,
            max_seq: None,
            older_than: None,
            filter: None,
        }
    }

    /// True if this may have held a version of `key` newer than `seq`.
    fn may_be_newer(&self, key: &[u8], seq: u64) -> bool {
        if !self.keys.contains(key) {
            return false;
        }
        let mut max = self.max_seq.unwrap_or(u64::MAX);
        if let Some((k, s)) = &self.older_than {
            if k.as_slice() == key {
                max = max.min(s.saturating_sub(1));
            }
        }
        max > seq
            && self
                .filter
                .as_ref()
                .is_none_or(|f| f.policy.may_match(&f.bytes, hash_key(key)))
    }
}

/// A sorted stream of entries.
#[derive(Debug)]
pub(super) enum Source {
    /// Every WAL entry, sorted in internal-key order.
    Wal(std::vec::IntoIter<Entry>),
    /// One table, read block by block.
    Table(Box<TableCursor>),
}

/// The head entry of source `source`, ordered so that [`BinaryHeap`] (a
/// max-heap) pops the smallest internal key first.
#[derive(Debug)]
pub(super) struct Head {
    key: Vec<u8>,
    value: Vec<u8>,
    source: usize,
}

impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_internal_keys(&other.key, &self.key).then(other.source.cmp(&self.source))
    }
}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Head {}

impl Salvage {
    /// Pushes the next entry of source `s` onto the heap, if any.
    pub(super) fn refill(&mut self, s: usize) {
        let next = match &mut self.sources[s] {
            Source::Wal(entries) => entries.next(),
            Source::Table(cursor) => {
                cursor.next_entry(&mut self.report, &mut self.active, &self.range_index)
            }
        };
        if let Some((key, value)) = next {
            self.heap.push(Head {
                key,
                value,
                source: s,
            });
        }
    }

    /// Pops the smallest entry and refills its source.
    fn pop(&mut self) -> Option<Head> {
        let head = self.heap.pop()?;
        self.report.entries_read += 1;
        self.refill(head.source);
        Some(head)
    }

    /// True if user key `key`, whose newest readable version has sequence
    /// `seq`, lies in a lost range that may have held a newer version.
    /// Called in ascending key order, after every version of `key` has
    /// been merged (so that every block that may hold `key` has been read
    /// or skipped).
    fn possibly_stale(&mut self, key: &[u8], seq: u64) -> bool {
        while let Some(l) = self
            .pending
            .pop_if(|l| l.keys.first.as_deref().is_none_or(|f| f <= key))
        {
            self.active.push(l);
        }
        self.active
            .retain(|l| l.keys.last.as_deref().is_none_or(|last| last >= key));
        self.active.iter().any(|l| l.may_be_newer(key, seq))
    }
}

impl Iterator for Salvage {
    type Item = SalvagedEntry;

    fn next(&mut self) -> Option<SalvagedEntry> {
        loop {
            let Some(newest) = self.pop() else {
                self.report.finished = true;
                return None;
            };
            // Older versions of the same user key lose.
            while self
                .heap
                .peek()
                .is_some_and(|h| user_key_of(&h.key) == user_key_of(&newest.key))
            {
                self.pop();
            }
            let Some(p) = ParsedInternalKey::parse(&newest.key) else {
                continue; // Not reached: sources check every key.
            };
            if p.value_type == ValueType::Deletion
                || self
                    .range_index
                    .max_covering(p.user_key, SequenceNumber::MAX)
                    > p.seq
            {
                self.report.deleted += 1;
                continue;
            }
            let (seq, key) = (p.seq, p.user_key.to_vec());
            let stale = self.possibly_stale(&key, seq.0);
            self.report.keys += 1;
            self.report.possibly_stale += u64::from(stale);
            return Some(SalvagedEntry {
                key,
                value: newest.value,
                seq,
                possibly_stale: stale,
            });
        }
    }
}
