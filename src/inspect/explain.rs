//! [`explain`]: the path of one point lookup through a [`DbSnapshot`].

use super::{DbSnapshot, KeyspaceSelector};
use crate::filter::{hash_key, FilterKind, KeyHash};
use crate::key::{SequenceNumber, ValueType};
use crate::sstable::format::BlockHandle;
use crate::sstable::TableGet;
use crate::version::set::TableFile;
use crate::write_batch::check_lengths;
use crate::Result;

/// A version found by a lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundEntry {
    /// Its sequence number.
    pub seq: SequenceNumber,
    /// Put or delete.
    pub value_type: ValueType,
    /// The value (empty for a tombstone).
    pub value: Vec<u8>,
}

/// What a lookup step consulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExplainSource {
    /// The memtable replayed from one WAL.
    Memtable {
        /// The WAL's file number.
        wal: u64,
        /// Entries in it (puts and deletes).
        entries: u64,
        /// Range deletions in it (not in `entries`).
        range_deletions: u64,
    },
    /// One SSTable.
    Table {
        /// Its level.
        level: usize,
        /// Its file number.
        number: u64,
        /// Its position among the level's files (lookup order).
        position: usize,
        /// Files in the level.
        level_files: usize,
        /// Smallest user key in the table.
        smallest: Vec<u8>,
        /// Largest user key in the table.
        largest: Vec<u8>,
        /// The kind of its filter; `None` if it has none (or one this
        /// build does not know, which lookups ignore).
        filter: Option<FilterKind>,
    },
    /// A level ≥ 1 with no candidate: the key sorts after every file's
    /// largest key (the engine counts this as a key-range skip).
    Level {
        /// The level.
        level: usize,
        /// Files in it.
        files: usize,
        /// The largest user key of its last file.
        largest: Vec<u8>,
    },
}

/// What one step found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExplainOutcome {
    /// The memtable holds no visible version of the key.
    NotInMemtable,
    /// The key is outside the table's `[smallest, largest]`: nothing read.
    OutOfRange,
    /// The filter proved the key absent: nothing read.
    FilterNegative,
    /// No file of the level may hold the key.
    PastLevel,
    /// The answer was found here (memtable or table).
    Found {
        /// For a table: the index entry and data block read.
        block: Option<(usize, BlockHandle)>,
        /// The version found.
        entry: FoundEntry,
    },
    /// The table's filter (if any) said "maybe" and its index was searched,
    /// but it holds no visible version: a filter false positive when
    /// `filtered`.
    Searched {
        /// True if the filter was consulted (and said "maybe").
        filtered: bool,
        /// The index entry and data block read, or `None` if the key sorts
        /// after the table's last entry (no block read).
        block: Option<(usize, BlockHandle)>,
    },
}

/// One step of a traced lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExplainStep {
    /// What was consulted.
    pub source: ExplainSource,
    /// What it said.
    pub outcome: ExplainOutcome,
}

/// The answer of a point lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A value, as [`crate::Db::get`] returns it.
    Value(Vec<u8>),
    /// The newest version is a tombstone: `get` returns `None`.
    Tombstone,
    /// No source holds the key: `get` returns `None`.
    Absent,
    /// A range deletion written at `seq` covers the key and is newer than
    /// the version found (if any): `get` returns `None` (DESIGN.md 3.7).
    RangeDeleted {
        /// The range deletion's sequence number.
        seq: SequenceNumber,
    },
}

impl Verdict {
    /// What [`crate::Db::get`] returns for the same key.
    pub fn as_get(&self) -> Option<&[u8]> {
        match self {
            Verdict::Value(v) => Some(v),
            _ => None,
        }
    }
}

/// A traced point lookup, from [`explain`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explain {
    /// The key looked up.
    pub key: Vec<u8>,
    /// The sequence number read at.
    pub sequence: SequenceNumber,
    /// Each source consulted, in order; the last one answered unless the
    /// verdict is [`Verdict::Absent`].
    pub steps: Vec<ExplainStep>,
    /// The answer.
    pub verdict: Verdict,
}

/// Traces the point lookup of `key` in the keyspace of `snap` that
/// `keyspace` selects, visiting sources in the engine's order (DESIGN.md
/// section 3): the memtables (the keyspace's writes in each live WAL,
/// newest first), the level-0 tables newest first, then in each deeper
/// level the one file whose largest key is `>=` the key (binary search),
/// each table through [`Table::get`](crate::sstable::Table::get) (key
/// range, filter, index, one data block). The first version found answers.
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for a key
/// over 65,535 bytes; [`Error::NoSuchKeyspace`](crate::Error::NoSuchKeyspace)
/// if `snap` holds no keyspace so selected;
/// [`Error::Corruption`](crate::Error::Corruption) if a data block read
/// fails.
pub fn explain(snap: &DbSnapshot, keyspace: &KeyspaceSelector, key: &[u8]) -> Result<Explain> {
    check_lengths(key.len(), 0)?;
    let tree = snap.tree(keyspace)?;
    let seq = snap.last_sequence;
    let mut steps = Vec::new();
    // The newest range deletion over the key, as `Db::get` applies it.
    let range_deleted = tree
        .mems
        .iter()
        .map(|w| w.mem.max_range_tombstone(key, seq))
        .fold(
            tree.version.range_tombstones.index().max_covering(key, seq),
            SequenceNumber::max,
        );
    let finish = |steps: Vec<ExplainStep>| {
        let found = match steps.last().map(|s| &s.outcome) {
            Some(ExplainOutcome::Found { entry, .. }) => Some(entry),
            _ => None,
        };
        let verdict = match found {
            _ if found.is_none_or(|e| e.seq < range_deleted)
                && range_deleted > SequenceNumber::ZERO =>
            {
                Verdict::RangeDeleted { seq: range_deleted }
            }
            Some(entry) => match entry.value_type {
                ValueType::Value => Verdict::Value(entry.value.clone()),
                ValueType::Deletion | ValueType::RangeDeletion => Verdict::Tombstone,
            },
            None => Verdict::Absent,
        };
        Explain {
            key: key.to_vec(),
            sequence: seq,
            steps,
            verdict,
        }
    };
    for wal in tree.mems.iter().rev() {
        let source = ExplainSource::Memtable {
            wal: wal.wal,
            entries: wal.mem.len() as u64,
            range_deletions: wal.range_deletions,
        };
        match wal.mem.get(key, seq) {
            Some((s, value_type, value)) => {
                steps.push(ExplainStep {
                    source,
                    outcome: ExplainOutcome::Found {
                        block: None,
                        entry: FoundEntry {
                            seq: s,
                            value_type,
                            value: value.into_vec(),
                        },
                    },
                });
                return Ok(finish(steps));
            }
            None => steps.push(ExplainStep {
                source,
                outcome: ExplainOutcome::NotInMemtable,
            }),
        }
    }
    let hash = hash_key(key);
    for (level, files) in tree.version.levels.iter().enumerate() {
        let candidates: Vec<usize> = if level == 0 {
            (0..files.len()).collect()
        } else {
            let i = files.partition_point(|f| f.largest_user_key() < key);
            if i == files.len() {
                if let Some(last) = files.last() {
                    steps.push(ExplainStep {
                        source: ExplainSource::Level {
                            level,
                            files: files.len(),
                            largest: last.largest_user_key().to_vec(),
                        },
                        outcome: ExplainOutcome::PastLevel,
                    });
                }
                continue;
            }
            vec![i]
        };
        for i in candidates {
            let step = probe(&files[i], level, i, files.len(), key, seq, hash)?;
            let found = matches!(step.outcome, ExplainOutcome::Found { .. });
            steps.push(step);
            if found {
                return Ok(finish(steps));
            }
        }
    }
    Ok(finish(steps))
}

/// One table's step of [`explain`].
fn probe(
    f: &TableFile,
    level: usize,
    position: usize,
    level_files: usize,
    key: &[u8],
    seq: SequenceNumber,
    hash: KeyHash,
) -> Result<ExplainStep> {
    let table = &f.table;
    let p = table.properties();
    let source = ExplainSource::Table {
        level,
        number: f.meta.number,
        position,
        level_files,
        smallest: p.smallest_user_key.clone(),
        filter: FilterKind::from_policy_name(&p.filter_policy).filter(|_| table.has_filter()),
        largest: p.largest_user_key.clone(),
    };
    let with_index = |h: BlockHandle| {
        let i = table
            .index()
            .iter()
            .position(|e| e.handle == h)
            .unwrap_or(0);
        (i, h)
    };
    let outcome = match table.get(key, seq, hash)? {
        TableGet::OutOfRange => ExplainOutcome::OutOfRange,
        TableGet::FilterNegative => ExplainOutcome::FilterNegative,
        TableGet::Searched { block, entry } => match entry {
            Some((s, value_type, value)) => ExplainOutcome::Found {
                block: block.map(with_index),
                entry: FoundEntry {
                    seq: s,
                    value_type,
                    value: value.into_vec(),
                },
            },
            None => ExplainOutcome::Searched {
                filtered: table.has_filter(),
                block: block.map(with_index),
            },
        },
    };
    Ok(ExplainStep { source, outcome })
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{build, key, options};
    use super::*;
    use crate::{CompactionStyle, Db};

    /// Explains `key(i)` and checks the verdict against `db.get`.
    fn explain_as_get(snap: &DbSnapshot, db: &Db, i: u32) -> Explain {
        let k = key(i);
        let e = explain(snap, &KeyspaceSelector::Default, &k).unwrap();
        assert_eq!(
            e.verdict.as_get(),
            db.get(&k).unwrap().as_deref(),
            "key {i}"
        );
        e
    }

    #[test]
    fn explain_agrees_with_get() {
        let tmp = tempfile::tempdir().unwrap();
        let db = build(tmp.path());
        let snap = DbSnapshot::open(tmp.path()).unwrap();
        for i in 0..400 {
            explain_as_get(&snap, &db, i);
        }
        // key 1: in the memtable.
        let e = explain(&snap, &KeyspaceSelector::Default, &key(1)).unwrap();
        assert_eq!(e.steps.len(), 1);
        assert_eq!(e.verdict, Verdict::Value(b"mem".to_vec()));
        // key 2: a tombstone in the memtable.
        assert_eq!(
            explain(&snap, &KeyspaceSelector::Default, &key(2))
                .unwrap()
                .verdict,
            Verdict::Tombstone
        );
        // key 3: deleted in the newest table (second step).
        let e = explain(&snap, &KeyspaceSelector::Default, &key(3)).unwrap();
        assert_eq!(e.verdict, Verdict::Tombstone);
        assert_eq!(e.steps.len(), 2);
        // key 4: memtable miss, C filter/range skip, B out of range, found in A.
        let e = explain(&snap, &KeyspaceSelector::Default, &key(4)).unwrap();
        assert_eq!(e.verdict, Verdict::Value(b"v1-4".to_vec()));
        assert_eq!(e.steps.len(), 4);
        assert_eq!(e.steps[2].outcome, ExplainOutcome::OutOfRange);
        assert!(matches!(
            e.steps[3].outcome,
            ExplainOutcome::Found {
                block: Some((0, _)),
                ..
            }
        ));
        // key 150 (not a multiple of 3... 150 is): use 151, in B.
        let e = explain(&snap, &KeyspaceSelector::Default, &key(151)).unwrap();
        assert_eq!(e.verdict, Verdict::Value(b"v2-151".to_vec()));
        // An absent key past every range.
        let e = explain(&snap, &KeyspaceSelector::Default, b"zzz").unwrap();
        assert_eq!(e.verdict, Verdict::Absent);
        assert!(e.steps[1..]
            .iter()
            .all(|s| s.outcome == ExplainOutcome::OutOfRange));
    }

    #[test]
    fn explain_walks_deeper_levels_by_binary_search() {
        let tmp = tempfile::tempdir().unwrap();
        let mut o = options();
        o.compaction_style = CompactionStyle::Leveled;
        o.target_file_size = 2048;
        let db = Db::open_with(tmp.path(), o).unwrap();
        for i in 0..500 {
            db.put(key(i), format!("value-{i}")).unwrap();
        }
        db.compact().unwrap();
        db.put(key(7), "newer").unwrap();
        db.flush().unwrap();
        let snap = DbSnapshot::open(tmp.path()).unwrap();
        let deep = snap
            .default_tree()
            .version
            .levels
            .iter()
            .skip(1)
            .find(|l| l.len() > 1)
            .unwrap();
        assert!(deep.len() > 1);
        for i in (0..520).step_by(7) {
            let e = explain_as_get(&snap, &db, i);
            // At most one table per deeper level.
            let deep_steps = e
                .steps
                .iter()
                .filter(|s| matches!(s.source, ExplainSource::Table { level, .. } if level > 0))
                .count();
            assert!(deep_steps <= 1, "{e:?}");
        }
        let e = explain(&snap, &KeyspaceSelector::Default, b"zzz").unwrap();
        assert!(matches!(
            e.steps.last().unwrap().outcome,
            ExplainOutcome::PastLevel
        ));
    }
}
