//! Sizing each new table's filter under [`crate::Options::filter_budget`]:
//! the allocation ([`crate::filter::budget::allocate`]) is recomputed for
//! the shape the tree will have once the table is in place, and the table
//! gets its run's setting.
//!
//! The shape counts, per run, the distinct keys its tables hold (every
//! level-0 table a run, every deeper level one run); a flush adds a
//! level-0 run of the memtable's entries, and a compaction moves its
//! inputs' keys to its output level (an upper bound: the merge may drop
//! some). Each run's kind is the one the options give its level, since
//! that is what its next tables will be built with.
//!
//! Tables already written keep their filters while the shape changes, so
//! the tree drifts from the optimum and its memory from the budget; past
//! [`MEMORY_DRIFT`] or [`RATE_DRIFT`], the background rebuilds the filter
//! of the table furthest from its run's setting ([`drift_rebuild`]).

use std::collections::HashSet;
use std::sync::Arc;

use crate::compaction::Compaction;
use crate::filter::budget::{allocate, RunShape};
use crate::filter::{
    blocked_bloom, ribbon, BlockedBloomPolicy, BloomFilterPolicy, FilterBudget, FilterKind,
    LevelFilter, RibbonFilterPolicy,
};
use crate::sstable::table_builder::level_kind;
use crate::sstable::{Table, TableOptions};
use crate::version::filter_memory::design_fpr;
use crate::version::set::Version;
use crate::{CompactionStyle, Options};

/// The table about to be written.
pub(super) enum NewTable<'a> {
    /// A level-0 table of a memtable with this many entries.
    Flush { keys: u64 },
    /// The outputs of a compaction.
    Compaction(&'a Compaction),
    /// A rewrite of tables of `level >= 1` into `level` itself (the last
    /// step of a manual compaction): the shape does not change.
    InPlace { level: usize },
}

impl NewTable<'_> {
    fn level(&self) -> usize {
        match self {
            NewTable::Flush { .. } => 0,
            NewTable::Compaction(c) => c.output_level,
            NewTable::InPlace { level } => *level,
        }
    }
}

/// The layout of the table `new`: under a filter budget, with the filter
/// its run gets in the shape `version` takes once the table is in place;
/// otherwise [`TableOptions::for_level`]; the codec is always the output
/// level's. `last_level` says the table goes to the deepest level holding
/// data.
pub(super) fn table_options(
    o: &Options,
    version: &Version,
    new: NewTable<'_>,
    last_level: bool,
) -> TableOptions {
    match &o.filter_budget {
        None => TableOptions::for_level(o, new.level(), last_level),
        Some(budget) => TableOptions {
            compression: o.compression.for_level(new.level()),
            ..TableOptions::with_filter(o, &budgeted_filter(o, budget, version, &new))
        },
    }
}

/// The filter the table `new` is built with (`last_level`: it goes to
/// the deepest level holding data): its run's setting under a budget,
/// else the level's configured one (a classic Bloom filter at
/// `bits_per_key` when `filters` is empty; `bloom_hashes` is not part of
/// it).
fn configured_filter(
    o: &Options,
    version: &Version,
    new: &NewTable<'_>,
    last_level: bool,
) -> LevelFilter {
    if let Some(budget) = &o.filter_budget {
        return budgeted_filter(o, budget, version, new);
    }
    if last_level && o.skip_filters_on_last_level {
        return LevelFilter::None;
    }
    match o.filters.get(new.level()).or(o.filters.last()) {
        Some(f) => *f,
        None if o.bits_per_key == 0 => LevelFilter::None,
        None => LevelFilter::BitsPerKey(FilterKind::Bloom, f64::from(o.bits_per_key)),
    }
}

/// True if `table`'s filter is what `want` builds: no filter for
/// [`LevelFilter::None`]; else the same kind and, for bits per key, the
/// same `k` and an array within 2% of the one `want` builds for the
/// table's keys; for a rate, the same rate (the same `r` for Ribbon; for
/// the Bloom kinds, a design rate within 10% of it).
fn filter_matches(table: &Table, want: &LevelFilter) -> bool {
    let p = table.properties();
    let Some(kind) = want.kind() else {
        return p.filter_policy.is_empty();
    };
    let Some(policy) = want.policy() else {
        return false;
    };
    if p.filter_policy != policy.name() {
        return false;
    }
    match (*want, kind) {
        (LevelFilter::FalsePositiveRate(..), FilterKind::Ribbon)
        | (LevelFilter::BitsPerKey(..), FilterKind::Ribbon) => {
            Some(p.filter_bits_per_key) == ribbon_policy(want).map(|r| r.result_bits())
        }
        (LevelFilter::BitsPerKey(_, b), kind) => {
            // The array `want` would build for this many keys.
            let n = p.num_distinct_keys as usize;
            let (bits, k) = if kind == FilterKind::Bloom {
                let p = BloomFilterPolicy::with_bits_per_key(b);
                (p.bits_for(n), p.num_hashes())
            } else {
                let p = BlockedBloomPolicy::new(b);
                (u64::from(p.blocks_for(n)) * 512, p.num_hashes())
            };
            p.filter_num_hashes == k
                && (p.filter_bits as f64 - bits as f64).abs() <= 0.02 * bits as f64
        }
        (LevelFilter::FalsePositiveRate(_, rate), _) => {
            (design_fpr(table) - rate).abs() <= 0.1 * rate
        }
        (LevelFilter::None, _) => p.filter_policy.is_empty(), // (returned above)
    }
}

/// The filter rebuilds [`crate::Db::rebuild_filters`] runs on `version`:
/// the tables whose filter is not what [`configured_filter`] gives them
/// now, each rewritten into its own level with every entry copied (alone
/// at level 0, in groups of key-order neighbours below).
pub(super) fn rebuild_plan(o: &Options, version: &Version) -> Vec<Compaction> {
    let deepest = (1..version.levels.len())
        .rev()
        .find(|&l| !version.levels[l].is_empty())
        .unwrap_or(0);
    let rebuild = |level: usize, files: &[&Arc<crate::version::set::TableFile>]| Compaction {
        inputs: files.iter().map(|f| (level, Arc::clone(f))).collect(),
        output_level: level,
        older: Vec::new(), // nothing is dropped
        trivial_move: false,
        copy_every_entry: true,
    };
    let mut plan = Vec::new();
    for (level, files) in version.levels.iter().enumerate() {
        // Neighbours in a level below 0 are rebuilt together, up to
        // REBUILD_GROUP at a time: one manifest edit and directory sync
        // for many tables, and outputs that stay inside the group's span.
        let mut group: Vec<&Arc<crate::version::set::TableFile>> = Vec::new();
        for f in files {
            let last_level = level >= 1 && level == deepest;
            let want = configured_filter(
                o,
                version,
                &NewTable::Compaction(&rebuild(level, &[f])),
                last_level,
            );
            if filter_matches(&f.table, &want) {
                if !group.is_empty() {
                    plan.push(rebuild(level, &group));
                    group.clear();
                }
                continue;
            }
            group.push(f);
            if level == 0 || group.len() == REBUILD_GROUP {
                plan.push(rebuild(level, &group));
                group.clear();
            }
        }
        if !group.is_empty() {
            plan.push(rebuild(level, &group));
        }
    }
    plan
}

/// Most tables one filter rebuild of [`rebuild_plan`] takes.
const REBUILD_GROUP: usize = 32;

/// The setting the run `new` joins gets from the allocation of `budget`
/// over the shape after `new`.
fn budgeted_filter(
    o: &Options,
    budget: &FilterBudget,
    version: &Version,
    new: &NewTable<'_>,
) -> LevelFilter {
    let inputs: HashSet<u64> = match new {
        NewTable::Compaction(c) => c.inputs.iter().map(|(_, f)| f.meta.number).collect(),
        _ => HashSet::new(),
    };
    let input_keys: u64 = match new {
        NewTable::Compaction(c) => c
            .inputs
            .iter()
            .map(|(_, f)| f.table.properties().num_distinct_keys)
            .sum(),
        _ => 0,
    };
    // (level, keys) per run, and which run the new table joins.
    let mut runs: Vec<(usize, u64)> = Vec::new();
    let mut target = None;
    for f in &version.levels[0] {
        if !inputs.contains(&f.meta.number) {
            runs.push((0, f.table.properties().num_distinct_keys));
        }
    }
    match new {
        NewTable::Flush { keys } => {
            target = Some(runs.len());
            runs.push((0, *keys));
        }
        NewTable::Compaction(c) if c.output_level == 0 => {
            target = Some(runs.len());
            runs.push((0, input_keys));
        }
        _ => {}
    }
    for (level, files) in version.levels.iter().enumerate().skip(1) {
        let mut keys: u64 = files
            .iter()
            .filter(|f| !inputs.contains(&f.meta.number))
            .map(|f| f.table.properties().num_distinct_keys)
            .sum();
        let joins = match new {
            NewTable::Compaction(c) => c.output_level == level,
            NewTable::InPlace { level: l } => *l == level,
            NewTable::Flush { .. } => false,
        };
        if joins {
            keys += input_keys;
            target = Some(runs.len());
        }
        if keys > 0 || joins {
            runs.push((level, keys));
        }
    }
    let Some(target) = target else {
        return LevelFilter::None; // unreachable: every kind of table joins a run
    };
    let deepest = runs.iter().map(|r| r.0).max().unwrap_or(0);
    let shapes: Vec<RunShape> = runs
        .iter()
        .map(|&(level, keys)| {
            RunShape::new(keys, level_kind(o, level, level >= 1 && level == deepest))
        })
        .collect();
    let total_keys = shapes.iter().map(|r| r.keys).sum();
    // What every table's filter costs beyond its bits per key (header,
    // rounding) comes off the budget first, so that the filter blocks
    // themselves stay within it.
    let new_tables = match new {
        NewTable::Flush { .. } => 1,
        NewTable::Compaction(c) => c.inputs.len(),
        NewTable::InPlace { .. } => 0,
    };
    let overhead: f64 = version
        .files()
        .filter(|(_, f)| !inputs.contains(&f.meta.number))
        .map(|(level, _)| overhead_bits(level_kind(o, level, level >= 1 && level == deepest)))
        .sum::<f64>()
        + new_tables as f64 * overhead_bits(shapes[target].kind);
    let bits = (budget.total_bits(total_keys) - overhead).max(0.0);
    allocate(&shapes, bits).runs[target].setting
}

/// The mean bits a table's filter block of `kind` holds beyond its bits
/// per key: the header (12.6) and the rounding of the array (to a byte,
/// to a 512-bit block, to a block of 128 slots of about 8 result bits).
fn overhead_bits(kind: Option<FilterKind>) -> f64 {
    match kind {
        None => 0.0,
        Some(FilterKind::Bloom) => 8.0 + 4.0,
        Some(FilterKind::BlockedBloom) => 8.0 * blocked_bloom::HEADER_LEN as f64 + 256.0,
        Some(FilterKind::Ribbon) => 8.0 * ribbon::HEADER_LEN as f64 + 64.0 * 8.0,
    }
}

/// How far above its budget the tree's filter memory may drift before the
/// background rebuilds filters ([`drift_rebuild`]): 1%.
pub(super) const MEMORY_DRIFT: f64 = 0.01;

/// How far above the allocation's own the tree's expected false positives
/// may drift before the background rebuilds filters: 10%.
pub(super) const RATE_DRIFT: f64 = 0.10;

/// Under a filter budget, the filter rebuild of one table when the tree
/// has drifted from its allocation, lowest in priority (the background
/// asks only when no compaction is due); `None` when it has not, and
/// always under [`CompactionStyle::None`].
///
/// Tables keep the filter they were built with while the shape changes
/// under them. A last level written while the levels above it were small
/// holds more bits per key than the allocation gives it once they have
/// grown, so the tree's memory rises above the budget; tables written
/// while level 0 was deep in a compaction backlog got less than the
/// settled shape gives them, so its false positives rise above the
/// allocation's. Compaction rewrites them only when it reaches them, which
/// for a last level, or a tree that stopped taking writes, may be never.
/// So, with the allocation of the current shape at the budget:
///
/// 1. memory more than [`MEMORY_DRIFT`] above the budget: rebuild the
///    table holding the most filter memory above its run's setting;
/// 2. else expected false positives more than [`RATE_DRIFT`] above the
///    allocation's: rebuild the table whose rebuild removes the most of
///    them (a level-0 table's whole rate, a deeper table's rate weighted
///    by its share of the level's keys).
///
/// Only tables whose filter is not their setting ([`filter_matches`]) are
/// candidates, and a rebuild leaves the shape, so the allocation, as it
/// is, and its table matching: each call picks another table or none, so
/// it never loops, and a tree off its budget for reasons no rebuild
/// changes (headers, the minimum sizes of tiny tables) triggers nothing.
pub(super) fn drift_rebuild(o: &Options, version: &Version) -> Option<Compaction> {
    let budget = o.filter_budget.as_ref()?;
    if o.compaction_style == CompactionStyle::None {
        return None; // no automatic compaction of any kind
    }
    let runs = runs_of(o, version);
    let shapes: Vec<RunShape> = runs.iter().map(|r| r.shape).collect();
    let keys: u64 = shapes.iter().map(|r| r.keys).sum();
    let bytes: u64 = version.files().map(|(_, f)| filter_len(&f.table)).sum();
    let over_budget = 8.0 * bytes as f64 > (1.0 + MEMORY_DRIFT) * budget.total_bits(keys);
    let overhead: f64 = runs
        .iter()
        .map(|r| r.files.len() as f64 * overhead_bits(r.shape.kind))
        .sum();
    let alloc = allocate(&shapes, (budget.total_bits(keys) - overhead).max(0.0));
    if !over_budget {
        // The tree's expected false positives against the allocation's.
        let mut expected = 0.0;
        for r in &runs {
            let keys = r.shape.keys.max(1) as f64;
            for f in &r.files {
                let share = f.table.properties().num_distinct_keys as f64 / keys;
                expected += share * design_fpr(&f.table);
            }
        }
        if expected <= (1.0 + RATE_DRIFT) * alloc.expected_false_positives() {
            return None;
        }
    }
    let mut worst: Option<(f64, usize, &Arc<crate::version::set::TableFile>)> = None;
    for (run, r) in runs.iter().enumerate() {
        let setting = &alloc.runs[run];
        for f in &r.files {
            if filter_matches(&f.table, &setting.setting) {
                continue; // what is left is rounding no rebuild removes
            }
            let n = f.table.properties().num_distinct_keys;
            let gain = if over_budget {
                8.0 * filter_len(&f.table) as f64 - filter_bits(&setting.setting, n)
            } else {
                let share = n as f64 / r.shape.keys.max(1) as f64;
                share * (design_fpr(&f.table) - setting.fpr)
            };
            if gain > 0.0 && worst.is_none_or(|w| gain > w.0) {
                worst = Some((gain, r.level, f));
            }
        }
    }
    let (_, level, f) = worst?;
    Some(Compaction {
        inputs: vec![(level, Arc::clone(f))],
        output_level: level,
        older: Vec::new(), // nothing is dropped
        trivial_move: false,
        copy_every_entry: true,
    })
}

/// Bits of the filter block `setting` builds over `keys` keys, headers
/// included (for Ribbon, at its first attempt, which nearly always
/// succeeds).
fn filter_bits(setting: &LevelFilter, keys: u64) -> f64 {
    let n = keys as usize;
    let bits = match *setting {
        LevelFilter::None => 0,
        LevelFilter::BitsPerKey(FilterKind::Bloom, b) => {
            BloomFilterPolicy::with_bits_per_key(b).bits_for(n) + 8
        }
        LevelFilter::BitsPerKey(FilterKind::BlockedBloom, b) => {
            u64::from(BlockedBloomPolicy::new(b).blocks_for(n)) * 512
                + 8 * blocked_bloom::HEADER_LEN as u64
        }
        _ => match ribbon_policy(setting) {
            // The size its first attempt builds (a rate for the Bloom
            // kinds, which the allocator does not produce, counts as 0).
            Some(p) => {
                let r = u64::from(p.result_bits());
                u64::from(p.blocks_for(n)) * 128 * r + 8 * ribbon::HEADER_LEN as u64
            }
            None => 0,
        },
    };
    bits as f64
}

/// The Ribbon policy `setting` builds with, if it is a Ribbon setting.
fn ribbon_policy(setting: &LevelFilter) -> Option<RibbonFilterPolicy> {
    match *setting {
        LevelFilter::BitsPerKey(FilterKind::Ribbon, b) => {
            Some(RibbonFilterPolicy::with_bits_per_key(b))
        }
        LevelFilter::FalsePositiveRate(FilterKind::Ribbon, p) => {
            Some(RibbonFilterPolicy::with_fpr(p))
        }
        _ => None,
    }
}

/// Bytes of `table`'s filter block (0 without one).
fn filter_len(table: &Table) -> u64 {
    table.filter_bytes().map_or(0, |b| b.len() as u64)
}

/// A run of the current version with its tables.
struct Run<'a> {
    level: usize,
    shape: RunShape,
    files: Vec<&'a Arc<crate::version::set::TableFile>>,
}

/// The runs of `version` (each level-0 table, each non-empty deeper
/// level), with the kinds the options give their levels.
fn runs_of<'a>(o: &Options, version: &'a Version) -> Vec<Run<'a>> {
    let deepest = (1..version.levels.len())
        .rev()
        .find(|&l| !version.levels[l].is_empty())
        .unwrap_or(0);
    let mut runs = Vec::new();
    for (level, files) in version.levels.iter().enumerate() {
        let kind = level_kind(o, level, level >= 1 && level == deepest);
        let groups: Vec<Vec<&Arc<crate::version::set::TableFile>>> = if level == 0 {
            files.iter().map(|f| vec![f]).collect()
        } else if files.is_empty() {
            Vec::new()
        } else {
            vec![files.iter().collect()]
        };
        for files in groups {
            let keys = files
                .iter()
                .map(|f| f.table.properties().num_distinct_keys)
                .sum();
            runs.push(Run {
                level,
                // Sized as one filter over the run, as new tables are
                // planned (`table_options`), so that a rebuild never disagrees
                // with the setting a flush or compaction chose.
                shape: RunShape::new(keys, kind),
                files,
            });
        }
    }
    runs
}
