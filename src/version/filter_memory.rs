//! [`FilterMemory`]: what the filters of a [`Version`] cost and what they
//! buy, per level, against what the same memory would buy spread
//! uniformly or by [`crate::filter::budget::allocate`].
//!
//! A run is what an absent-key lookup probes one filter of: every level-0
//! table is a run, and every deeper level is one run (its tables hold
//! disjoint key ranges, so a lookup probes at most one). A run's rate is
//! the key-weighted mean of its tables' design rates, each by its kind's
//! theory for the table's own bits and parameters; a table without a
//! filter (or with one this build cannot read) counts as rate 1. The
//! expected false positives of an absent-key lookup are the sum of the
//! runs' rates (Monkey, section 3), for a key inside every run's key range.

use crate::filter::budget::{allocate, uniform, RunShape};
use crate::filter::{blocked_bloom, bloom, ribbon, FilterBudget, FilterKind};
use crate::sstable::Table;

use super::set::Version;

/// One level's filters.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct LevelFilterMemory {
    /// Level number.
    pub level: usize,
    /// Sorted runs: the level-0 tables, or 1 for a deeper level.
    pub runs: usize,
    /// Distinct keys, summed over the level's tables.
    pub keys: u64,
    /// Bytes of the level's filter blocks: the memory they take, with each
    /// block's few bytes of parameters beside its bit array.
    pub filter_bytes: u64,
    /// Bits of the level's filters' bit arrays (`m`, summed over tables;
    /// Ribbon: slots × result width), what the false-positive rates are
    /// bought with.
    pub filter_bits: u64,
    /// Filter bits per key in force: `filter_bits / keys` (the figure
    /// `kvctl stats` shows per level).
    pub bits_per_key: f64,
    /// Expected false positives an absent-key lookup meets in this level:
    /// the sum of its runs' rates.
    pub false_positives: f64,
    /// Bits per key [`crate::filter::budget::allocate`] would give this
    /// level's runs for the tree's shape at the same total memory (the
    /// key-weighted mean over level 0's runs).
    pub optimal_bits_per_key: f64,
}

/// The filter memory of a tree, level by level, and the expected
/// data-block reads of an absent-key lookup it gives.
///
/// ```
/// use siftdb::{Db, Options};
/// let dir = tempfile::tempdir().unwrap();
/// let db = Db::open(dir.path()).unwrap();
/// db.put(b"k", b"v").unwrap();
/// db.flush().unwrap();
/// let f = db.stats().filter_memory;
/// assert_eq!(f.levels.len(), 1);
/// // One run of one key at 10 bits per key (64 bits at least): 0.0% to 1%.
/// assert!(f.expected_false_positives < 0.01);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct FilterMemory {
    /// The levels holding tables, level 0 first.
    pub levels: Vec<LevelFilterMemory>,
    /// Expected false positives (so data-block reads) of an absent-key
    /// lookup with the filters the tables hold: `Σ p` over runs.
    pub expected_false_positives: f64,
    /// The same, if the same filter bits (`filter_bits`) gave every run
    /// the same bits per key ([`crate::filter::budget::uniform`]).
    /// Counted in bits of bit array, not bytes of filter block, so that a
    /// one-level tree compares equal to itself: a small table's block
    /// carries a few bytes of parameters that buy no rate.
    pub uniform_false_positives: f64,
    /// The same, if the same filter memory were spread over the runs as
    /// [`crate::filter::budget::allocate`] spreads it: the optimum for this
    /// shape. Above it, the tree has drifted (tables keep the filter they
    /// were built with while the shape changes).
    pub optimal_false_positives: f64,
    /// Bytes of every filter block.
    pub filter_bytes: u64,
    /// Bits of every filter's bit array (see
    /// [`LevelFilterMemory::filter_bits`]).
    pub filter_bits: u64,
    /// Distinct keys summed over every table.
    pub keys: u64,
    /// The budget in force, in bytes (`None` without
    /// [`crate::Options::filter_budget`]).
    pub budget_bytes: Option<u64>,
}

impl FilterMemory {
    /// The report for `version`, with `budget` if one is in force.
    pub fn of(version: &Version, budget: Option<&FilterBudget>) -> FilterMemory {
        let mut report = FilterMemory::default();
        let mut runs: Vec<RunShape> = Vec::new();
        for (level, files) in version.levels.iter().enumerate() {
            if files.is_empty() {
                continue;
            }
            let mut l = LevelFilterMemory {
                level,
                runs: if level == 0 { files.len() } else { 1 },
                ..Default::default()
            };
            // (keys × rate) summed, for the key-weighted mean of a level.
            let mut weighted = 0.0;
            // A deeper level's run: its kind is that of its largest table
            // with a filter; each table has its own filter, so Ribbon's
            // overhead is that of the largest table, not of one filter
            // over the whole level.
            let mut largest_filtered: Option<(u64, FilterKind)> = None;
            let mut filter_keys = 0;
            for f in files {
                let (keys, fpr) = (f.table.properties().num_distinct_keys, design_fpr(&f.table));
                filter_keys = filter_keys.max(keys);
                if let Some(kind) = kind_of(&f.table) {
                    if largest_filtered.is_none_or(|(n, _)| keys >= n) {
                        largest_filtered = Some((keys, kind));
                    }
                }
                l.keys += keys;
                l.filter_bytes += f.table.filter_bytes().map_or(0, |b| b.len() as u64);
                if f.table.has_filter() {
                    l.filter_bits += f.table.properties().filter_bits;
                }
                if level == 0 {
                    l.false_positives += fpr;
                    runs.push(RunShape::new(keys, kind_of(&f.table)));
                } else {
                    weighted += keys as f64 * fpr;
                }
            }
            if level > 0 {
                l.false_positives = if l.keys == 0 {
                    1.0
                } else {
                    weighted / l.keys as f64
                };
                runs.push(RunShape {
                    keys: l.keys,
                    kind: largest_filtered.map(|(_, kind)| kind),
                    filter_keys,
                });
            }
            l.bits_per_key = if l.keys == 0 {
                0.0
            } else {
                l.filter_bits as f64 / l.keys as f64
            };
            report.keys += l.keys;
            report.filter_bytes += l.filter_bytes;
            report.filter_bits += l.filter_bits;
            report.expected_false_positives += l.false_positives;
            report.levels.push(l);
        }
        let bits = report.filter_bits as f64;
        report.uniform_false_positives = uniform(&runs, bits).expected_false_positives();
        let optimal = allocate(&runs, bits);
        report.optimal_false_positives = optimal.expected_false_positives();
        // Level 0's runs come first, one per table, then one per level.
        let mut at = optimal.runs.iter().zip(&runs);
        for l in &mut report.levels {
            let mut bits = 0.0;
            for _ in 0..l.runs {
                if let Some((f, r)) = at.next() {
                    bits += f.bits_per_key * r.keys as f64;
                }
            }
            l.optimal_bits_per_key = if l.keys == 0 {
                0.0
            } else {
                bits / l.keys as f64
            };
        }
        report.budget_bytes = budget.map(|b| (b.total_bits(report.keys) / 8.0) as u64);
        report
    }
}

/// The kind of `table`'s filter, if it has one this build reads.
fn kind_of(table: &Table) -> Option<FilterKind> {
    if !table.has_filter() {
        return None;
    }
    FilterKind::from_policy_name(&table.properties().filter_policy)
}

/// The false-positive rate `table`'s filter was built for, by its kind's
/// theory for the parameters its properties record (classic and blocked
/// Bloom at `m / n` bits per key and `k` probes, Ribbon `2^−r`); 1 without
/// a filter this build reads, 0 for a table of no keys.
pub fn design_fpr(table: &Table) -> f64 {
    let p = table.properties();
    let Some(kind) = kind_of(table) else {
        return 1.0;
    };
    if p.num_distinct_keys == 0 {
        return 0.0;
    }
    let bits_per_key = p.filter_bits as f64 / p.num_distinct_keys as f64;
    match kind {
        FilterKind::Bloom => bloom::theoretical_fpr(bits_per_key, p.filter_num_hashes),
        FilterKind::BlockedBloom => {
            blocked_bloom::theoretical_fpr(bits_per_key, p.filter_num_hashes)
        }
        FilterKind::Ribbon => ribbon::theoretical_fpr(p.filter_bits_per_key),
    }
}
