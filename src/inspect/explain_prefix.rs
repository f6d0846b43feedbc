//! [`explain_prefix`]: which sources a prefix scan (`Db::prefix`) reads
//! through a [`DbSnapshot`], and why it leaves the others out.
//!
//! A tool does not know the options a database is opened with (they are
//! not stored), so each table's prefix filter is judged by the extractor
//! the table itself records: a built-in `siftdb.fixed_prefix.N` is rebuilt
//! from its name, as a database opened with that extractor would use it.

use std::ops::Bound;

use super::explain::ExplainSource;
use super::{DbSnapshot, KeyspaceSelector};
use crate::filter::prefix::builtin_extractor;
use crate::filter::{hash_key, FilterKind, PrefixExtractor};
use crate::key::{prefix_successor, user_key_of, SequenceNumber};
use crate::range_tombstone::RangeTombstone;
use crate::version::set::TableFile;
use crate::write_batch::check_lengths;
use crate::Result;

/// What one source of a prefix scan did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrefixOutcome {
    /// A memtable: the versions in it whose key has the scan's prefix.
    Memtable {
        /// Those versions (tombstones included).
        entries: u64,
    },
    /// The table's key range holds no key with the prefix: nothing read.
    OutOfRange,
    /// The table's prefix filter proved the prefix absent: nothing read.
    PrefixNegative {
        /// The extractor its prefix filter was built by.
        extractor: String,
        /// The filter's kind.
        kind: Option<FilterKind>,
    },
    /// The table was read.
    Read {
        /// Why its prefix filter did not leave it out.
        why: PrefixProbe,
        /// Data blocks the scan read from it.
        blocks: u64,
        /// Versions in it whose key has the prefix (tombstones included).
        entries: u64,
    },
}

/// Why a table's prefix filter did not leave it out of a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrefixProbe {
    /// The table has no prefix filter (or no filter at all).
    NoPrefixFilter,
    /// Its extractor is not a built-in one, so a tool cannot apply it.
    UnknownExtractor(String),
    /// The scan's prefix is outside the extractor's domain (for a
    /// fixed-length extractor: shorter than its prefixes), so no single
    /// extracted prefix covers the scan.
    OutsideDomain(String),
    /// The filter said "maybe": the table holds the prefix, or this is a
    /// false positive (then `entries` is 0).
    Maybe(String),
}

/// One source of a traced prefix scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixStep {
    /// The source.
    pub source: ExplainSource,
    /// What it did.
    pub outcome: PrefixOutcome,
}

/// A range deletion over some key with a traced scan's prefix: the scan
/// skips each version it hides (DESIGN.md 3.7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixRangeTombstone {
    /// The deletion.
    pub tombstone: RangeTombstone,
    /// The WAL whose memtable holds it; `None` for one flushed into the
    /// version (kept in the manifest).
    pub wal: Option<u64>,
    /// True if it covers every key with the prefix, false if only some.
    pub covers_prefix: bool,
}

/// A traced prefix scan, from [`explain_prefix`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixExplain {
    /// The scan's prefix.
    pub prefix: Vec<u8>,
    /// The sequence number read at.
    pub sequence: SequenceNumber,
    /// Every memtable, then every table, level 0 first.
    pub steps: Vec<PrefixStep>,
    /// The range deletions over keys with the prefix, newest first.
    pub range_tombstones: Vec<PrefixRangeTombstone>,
}

impl PrefixExplain {
    /// Data blocks the scan reads.
    pub fn blocks_read(&self) -> u64 {
        self.steps
            .iter()
            .map(|s| match s.outcome {
                PrefixOutcome::Read { blocks, .. } => blocks,
                _ => 0,
            })
            .sum()
    }

    /// Tables its prefix filters left out.
    pub fn prefix_negatives(&self) -> u64 {
        self.count(|o| matches!(o, PrefixOutcome::PrefixNegative { .. }))
    }

    /// Tables left out by their key range.
    pub fn range_skips(&self) -> u64 {
        self.count(|o| matches!(o, PrefixOutcome::OutOfRange))
    }

    /// Tables whose prefix filter said "maybe" but held no key of the
    /// prefix: the prefix filter's false positives.
    pub fn false_positives(&self) -> u64 {
        self.count(|o| {
            matches!(
                o,
                PrefixOutcome::Read {
                    why: PrefixProbe::Maybe(_),
                    entries: 0,
                    ..
                }
            )
        })
    }

    fn count(&self, f: impl Fn(&PrefixOutcome) -> bool) -> u64 {
        self.steps.iter().filter(|s| f(&s.outcome)).count() as u64
    }
}

/// Traces `Keyspace::prefix(prefix)` in the keyspace of `snap` that
/// `keyspace` selects (`Db::prefix` for the default): every memtable, then every table
/// in lookup order, each either left out by its key range, left out by its
/// prefix filter (probed as the engine probes it, with the extractor the
/// table records), or read (with the data blocks the scan reads from it);
/// and the range deletions (memtables' and the version's) over keys with
/// the prefix.
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a prefix
/// over 65,535 bytes; [`Error::NoSuchKeyspace`](crate::Error::NoSuchKeyspace)
/// if `snap` holds no keyspace so selected;
/// [`Error::Corruption`](crate::Error::Corruption) if a data block read
/// fails.
pub fn explain_prefix(
    snap: &DbSnapshot,
    keyspace: &KeyspaceSelector,
    prefix: &[u8],
) -> Result<PrefixExplain> {
    check_lengths(prefix.len(), 0)?;
    let tree = snap.tree(keyspace)?;
    let lo = Bound::Included(prefix.to_vec());
    let hi = prefix_successor(prefix).map_or(Bound::Unbounded, Bound::Excluded);
    let mut steps = Vec::new();
    for wal in tree.mems.iter().rev() {
        let mut entries = 0;
        wal.mem.for_each(|k, _| {
            entries += u64::from(user_key_of(k).starts_with(prefix));
            Ok(())
        })?;
        steps.push(PrefixStep {
            source: ExplainSource::Memtable {
                wal: wal.wal,
                entries: wal.mem.len() as u64,
                range_deletions: wal.range_deletions,
            },
            outcome: PrefixOutcome::Memtable { entries },
        });
    }
    for (level, files) in tree.version.levels.iter().enumerate() {
        for (position, f) in files.iter().enumerate() {
            let outcome = table_outcome(f, prefix, &lo, &hi)?;
            let p = f.table.properties();
            steps.push(PrefixStep {
                source: ExplainSource::Table {
                    level,
                    number: f.meta.number,
                    position,
                    level_files: files.len(),
                    smallest: p.smallest_user_key.clone(),
                    largest: p.largest_user_key.clone(),
                    filter: FilterKind::from_policy_name(&p.filter_policy)
                        .filter(|_| f.table.has_filter()),
                },
                outcome,
            });
        }
    }
    let hi_key = match &hi {
        Bound::Excluded(h) => Some(h.as_slice()),
        _ => None,
    };
    let seq = snap.last_sequence;
    let memtables = tree.mems.iter().flat_map(|w| {
        w.mem
            .range_tombstones(seq)
            .into_iter()
            .map(move |t| (t, Some(w.wal)))
    });
    let version = tree
        .version
        .range_tombstones
        .iter()
        .filter(|t| t.tombstone.seq <= seq)
        .map(|t| (t.tombstone.clone(), None));
    let mut range_tombstones: Vec<PrefixRangeTombstone> = memtables
        .chain(version)
        .filter_map(|(t, wal)| {
            let starts_before_hi = hi_key.is_none_or(|h| t.start.as_slice() < h);
            let ends_after_lo = t.end.as_deref().is_none_or(|e| e > prefix);
            let covers_prefix = t.start.as_slice() <= prefix
                && match (t.end.as_deref(), hi_key) {
                    (None, _) => true,
                    (Some(e), Some(h)) => e >= h,
                    (Some(_), None) => false,
                };
            (starts_before_hi && ends_after_lo).then_some(PrefixRangeTombstone {
                tombstone: t,
                wal,
                covers_prefix,
            })
        })
        .collect();
    range_tombstones.sort_by_key(|t| std::cmp::Reverse(t.tombstone.seq));
    Ok(PrefixExplain {
        prefix: prefix.to_vec(),
        sequence: seq,
        steps,
        range_tombstones,
    })
}

fn table_outcome(
    f: &TableFile,
    prefix: &[u8],
    lo: &Bound<Vec<u8>>,
    hi: &Bound<Vec<u8>>,
) -> Result<PrefixOutcome> {
    let (smallest, largest) = (f.smallest_user_key(), f.largest_user_key());
    let below_hi = match hi {
        Bound::Excluded(h) => smallest < h.as_slice(),
        _ => true,
    };
    if largest < prefix || !below_hi {
        return Ok(PrefixOutcome::OutOfRange);
    }
    let why = match &f.table.properties().prefix_filter {
        None => PrefixProbe::NoPrefixFilter,
        Some(pf) => match builtin_extractor(&pf.extractor) {
            None => PrefixProbe::UnknownExtractor(pf.extractor.clone()),
            Some(ex) => match ex.prefix(prefix) {
                None => PrefixProbe::OutsideDomain(pf.extractor.clone()),
                Some(q) => match f.table.prefix_may_match(ex.name(), hash_key(q)) {
                    Some(false) => {
                        return Ok(PrefixOutcome::PrefixNegative {
                            extractor: pf.extractor.clone(),
                            kind: FilterKind::from_policy_name(&f.table.properties().filter_policy),
                        })
                    }
                    Some(true) => PrefixProbe::Maybe(pf.extractor.clone()),
                    None => PrefixProbe::NoPrefixFilter,
                },
            },
        },
    };
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut entries = 0;
    for e in f
        .table
        .iter(lo.clone(), hi.clone())
        .count_block_reads(std::sync::Arc::clone(&counter))
    {
        e?;
        entries += 1;
    }
    let blocks = counter.load(std::sync::atomic::Ordering::Relaxed);
    Ok(PrefixOutcome::Read {
        why,
        blocks,
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::FixedPrefix;
    use crate::{CompactionStyle, Db, Options};
    use std::sync::Arc;

    #[test]
    fn a_prefix_scan_is_traced_table_by_table() {
        let dir = tempfile::tempdir().unwrap();
        let o = Options {
            compaction_style: CompactionStyle::None,
            bits_per_key: 20,
            prefix_extractor: Some(Arc::new(FixedPrefix::new(3))),
            ..Default::default()
        };
        let db = Db::open_with(dir.path(), o).unwrap();
        // Three overlapping tables; "b.." only in the second.
        for (t, prefixes) in [["a00", "c00"], ["a01", "b00"], ["a02", "c01"]]
            .iter()
            .enumerate()
        {
            for p in prefixes {
                for j in 0..3 {
                    db.put(format!("{p}/{j}"), format!("{t}")).unwrap();
                }
            }
            db.flush().unwrap();
        }
        db.put("b00/x", "in the memtable").unwrap();
        drop(db);
        let snap = DbSnapshot::open(dir.path()).unwrap();
        let e = explain_prefix(&snap, &KeyspaceSelector::Default, b"b00").unwrap();
        assert_eq!(e.steps.len(), 4);
        assert_eq!(e.steps[0].outcome, PrefixOutcome::Memtable { entries: 1 });
        // Level 0 is newest first: the third table, the second, the first.
        assert!(matches!(
            e.steps[1].outcome,
            PrefixOutcome::PrefixNegative { ref extractor, kind: Some(FilterKind::Bloom) }
                if extractor == "siftdb.fixed_prefix.3"
        ));
        assert_eq!(
            e.steps[2].outcome,
            PrefixOutcome::Read {
                why: PrefixProbe::Maybe("siftdb.fixed_prefix.3".into()),
                blocks: 1,
                entries: 3
            }
        );
        assert!(matches!(
            e.steps[3].outcome,
            PrefixOutcome::PrefixNegative { .. }
        ));
        assert_eq!((e.blocks_read(), e.prefix_negatives()), (1, 2));
        assert_eq!((e.range_skips(), e.false_positives()), (0, 0));
        // Shorter than the extractor's prefixes: every table in range is read.
        let e = explain_prefix(&snap, &KeyspaceSelector::Default, b"a").unwrap();
        assert_eq!(e.prefix_negatives(), 0);
        assert!(matches!(
            e.steps[1].outcome,
            PrefixOutcome::Read {
                why: PrefixProbe::OutsideDomain(_),
                entries: 3,
                ..
            }
        ));
        // Past every table's key range.
        let e = explain_prefix(&snap, &KeyspaceSelector::Default, b"zzz").unwrap();
        assert_eq!(e.range_skips(), 3);
    }
}
