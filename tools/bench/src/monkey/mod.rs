//! Monkey against uniform: one filter memory budget spread over the runs
//! of a real leveled tree by [`siftdb::filter::budget::allocate`], against
//! the same memory as the same bits per key everywhere
//! (`kvctl bench monkey`).
//!
//! # What it measures
//!
//! 1. **One tree.** [`Config::keys`] random keys (16-byte keys,
//!    [`Config::value_len`]-byte values, in random order) are written to a
//!    database under leveled compaction with level sizes chosen so that the
//!    tree has four levels below level 0 (level 1 at about 1/1000 of the
//!    data, size ratio 10: levels 1 to 3 full, level 4 holding about 89%),
//!    tables cut at half of level 1's size; then, with compaction off,
//!    four level-0 runs of about 0.1% of the keys each (a level 0 between
//!    compactions; the load may leave a fifth). Every point opens the tree
//!    with compaction off, so its shape stays.
//! 2. **Every point on that same tree.** For each budget `b` in
//!    [`Config::budgets`] and each policy, the database is reopened with
//!    the policy (uniform: [`LevelFilter::BitsPerKey`] classic Bloom at
//!    `b` on every level; Monkey: [`FilterBudget`] of `b`) and
//!    [`Db::rebuild_filters`] rewrites every table whose filter differs.
//!    Rebuilds copy every entry, so every point probes the same tables,
//!    keys and levels; only the filters change.
//! 3. **Reads.** Every absent key of the dataset (as many as the present
//!    ones, interleaved with them in key order, so every run's key range
//!    holds them) is looked up once, and the engine's `data_block_reads`
//!    counter over the lookups is the *measured absent-key reads per
//!    lookup*: its false positives. [`Config::present_lookups`] present
//!    keys give the present-key reads per lookup (1 plus the false
//!    positives of the runs above the key's). The *predicted* figure is
//!    the mean, over the same absent keys, of the design rates of the
//!    tables each key reaches (by key range, walking the tables outside
//!    the engine); the tree's own figure,
//!    [`FilterMemory::expected_false_positives`], the sum of the runs'
//!    rates, is reported beside it.
//! 4. **Drift.** From the Monkey tree at [`Config::reference_bits`],
//!    [`Config::drift_writes`] random overwrites run with compaction in
//!    the background; every twentieth of them, the live tree's expected
//!    false positives against the optimum for its shape at the same memory
//!    ([`FilterMemory::optimal_false_positives`]) and its filter memory
//!    against the budget. A final [`Db::rebuild_filters`] shows what
//!    bounding the drift costs.
//!
//! # The targets
//!
//! At [`Config::reference_bits`]: Monkey's measured absent-key reads at
//! least 50% below uniform's at the same measured memory (uniform's curve
//! interpolated at Monkey's memory, log-linearly between budgets); the
//! memory Monkey needs for uniform's reads at least 30% below uniform's;
//! present-key reads no more than 2% above uniform's; filter memory never
//! above the budget by more than 1%; measured reads within 10% of the
//! prediction at every budget.

mod plot;
mod report;

use std::path::{Path, PathBuf};
use std::time::Instant;

use siftdb::filter::{FilterBudget, FilterKind, LevelFilter};
use siftdb::inspect::version::filter_memory::design_fpr;
use siftdb::inspect::DbSnapshot;
use siftdb::{CompactionStyle, Db, FilterMemory, Options};

use crate::readamp::Dataset;
use crate::rng::Rng;

pub use plot::{write_plot, PLOT_FILE};
pub use report::{write_csv, write_table, CSV_FILE};

/// Errors of the benchmark.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A setting cannot be run.
    #[error("bad configuration: {0}")]
    Config(String),
    /// The engine failed.
    #[error("siftdb: {0}")]
    Db(#[from] siftdb::Error),
    /// A file could not be written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// A plot could not be drawn.
    #[error("plot {}: {detail}", path.display())]
    Plot {
        /// The plot file.
        path: PathBuf,
        /// What went wrong.
        detail: String,
    },
}

/// The benchmark's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What to run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Present keys (as many absent keys are looked up). Defaults to
    /// 1,000,000.
    pub keys: usize,
    /// Bytes per value. Defaults to 100.
    pub value_len: usize,
    /// Present keys looked up per point. Defaults to 200,000.
    pub present_lookups: usize,
    /// Budgets to sweep, bits per key (each for both policies). Defaults
    /// to 2, 4, 6, 8, 10, 12, 14, 16.
    pub budgets: Vec<f64>,
    /// The budget the targets are read at. Defaults to 10.
    pub reference_bits: f64,
    /// Random overwrites of the drift phase (0 skips it). Defaults to
    /// 1,000,000.
    pub drift_writes: usize,
    /// Seed of every random choice. Defaults to `0x5EED`.
    pub seed: u64,
    /// Where the database is built (a temporary directory inside it).
    pub work_dir: PathBuf,
}

/// Below this many keys the level-0 runs hold under 1,000 keys each,
/// where the classic Bloom filter passes noticeably more than its theory
/// at high bits per key, and sampling noise grows: a prediction may miss
/// its 10% by that alone.
pub const FEW_KEYS: usize = 1_000_000;

impl Config {
    /// Checks the configuration before anything is loaded.
    ///
    /// # Errors
    /// [`Error::Config`] naming the setting: fewer than 1,000 keys; no
    /// budget, or one not in `(0, 40]`; a reference not among the budgets,
    /// or without a budget on each side of it (the targets interpolate
    /// between neighbours).
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Config(m));
        if self.keys < 1000 {
            return bad(format!("keys is {}; it must be at least 1,000", self.keys));
        }
        if self.budgets.is_empty() {
            return bad("budgets is empty; give at least three".into());
        }
        if let Some(b) = self.budgets.iter().find(|&&b| !(b > 0.0 && b <= 40.0)) {
            return bad(format!(
                "budget {b}: every budget must be above 0 and at most 40 bits per key"
            ));
        }
        if !self.budgets.contains(&self.reference_bits) {
            return bad(format!(
                "the reference, {}, is not among the budgets",
                self.reference_bits
            ));
        }
        let (below, above) = (
            self.budgets.iter().any(|&b| b < self.reference_bits),
            self.budgets.iter().any(|&b| b > self.reference_bits),
        );
        if !(below && above) {
            return bad(format!(
                "the budgets need one below and one above the reference, {} (the \
                 memory Monkey needs for uniform's reads is interpolated between them)",
                self.reference_bits
            ));
        }
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            keys: 1_000_000,
            value_len: 100,
            present_lookups: 200_000,
            budgets: vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0],
            reference_bits: 10.0,
            drift_writes: 1_000_000,
            seed: 0x5EED,
            work_dir: std::env::temp_dir(),
        }
    }
}

/// A filter policy under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// The same bits per key on every level.
    Uniform,
    /// One budget spread by the allocator.
    Monkey,
}

impl Policy {
    /// `uniform` or `monkey`.
    pub fn label(self) -> &'static str {
        match self {
            Policy::Uniform => "uniform",
            Policy::Monkey => "monkey",
        }
    }
}

/// One level of the tree at one point.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelRow {
    /// Level number.
    pub level: usize,
    /// Runs (tables for level 0, else 1).
    pub runs: usize,
    /// Distinct keys.
    pub keys: u64,
    /// Filter bits per key in force.
    pub bits_per_key: f64,
    /// Expected false positives this level adds to an absent-key lookup.
    pub false_positives: f64,
}

/// One measured point: a policy at a budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The policy.
    pub policy: Policy,
    /// Its budget, bits per key.
    pub budget_bits: f64,
    /// Tables rewritten to reach it.
    pub tables_rebuilt: usize,
    /// Bytes of every filter block.
    pub filter_bytes: u64,
    /// Filter bits per key of the whole tree, measured: `8 · filter_bytes /
    /// keys` (keys summed over tables).
    pub bits_per_key: f64,
    /// The prediction: the mean over the absent keys of the design rates
    /// of the tables each one reaches (every level-0 table whose key range
    /// holds it, and the one candidate table of each deeper level), from a
    /// walk of the tables outside the engine.
    pub predicted_absent_reads: f64,
    /// The tree's own figure, [`FilterMemory::expected_false_positives`]:
    /// the sum of the runs' rates, for a key inside every run's range.
    pub tree_expected_false_positives: f64,
    /// Measured data-block reads per absent-key lookup.
    pub absent_reads: f64,
    /// Measured data-block reads per present-key lookup.
    pub present_reads: f64,
    /// Absent keys looked up.
    pub absent_lookups: usize,
    /// The tree's levels.
    pub levels: Vec<LevelRow>,
}

impl Point {
    /// Measured over predicted absent-key reads, minus 1.
    pub fn prediction_error(&self) -> f64 {
        self.absent_reads / self.predicted_absent_reads - 1.0
    }
}

/// One sample of the drift phase.
#[derive(Debug, Clone, PartialEq)]
pub struct DriftSample {
    /// Overwrites so far.
    pub writes: usize,
    /// Expected false positives of the live tree.
    pub expected: f64,
    /// The optimum for its shape at the same memory.
    pub optimal: f64,
    /// Filter bytes over the budget's bytes.
    pub memory_over_budget: f64,
    /// Tables rewritten in the background to bound the drift, so far.
    pub filter_rebuilds: u64,
}

/// The drift phase.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Drift {
    /// Samples, in order.
    pub samples: Vec<DriftSample>,
    /// Once compaction caught up after the overwrites: filter memory over
    /// the budget's.
    pub settled_memory: f64,
    /// Then: expected false positives over the optimum for the shape.
    pub settled_drift: f64,
    /// Tables the final rebuild rewrote.
    pub rebuilt: usize,
    /// After the final rebuild: expected over optimal.
    pub after_rebuild: f64,
    /// Bytes compactions wrote during the overwrites, and the part of them
    /// the background filter rebuilds wrote.
    pub compaction_bytes: u64,
    /// See `compaction_bytes`.
    pub filter_rebuild_bytes: u64,
    /// Tables the background rebuilt during the overwrites and the
    /// settling after them.
    pub filter_rebuilds: u64,
    /// Bytes of keys and values the overwrites wrote.
    pub user_bytes: u64,
}

/// Everything one run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The configuration.
    pub keys: usize,
    /// Seconds to load the tree.
    pub load_secs: f64,
    /// Every point, uniform and Monkey interleaved by budget.
    pub points: Vec<Point>,
    /// The drift phase (empty when skipped).
    pub drift: Drift,
    /// Seconds of the whole run.
    pub secs: f64,
}

/// How the tree is laid out: level 1 at `level_base` bytes, size ratio
/// 10, memtables of twice that, tables cut at half of it (so that level 1
/// holds a table or two when the load ends), level 0 compacted from 2
/// tables (so that the load leaves at most one there).
#[derive(Debug, Clone, Copy)]
struct Layout {
    level_base: u64,
}

/// Level-0 runs the tree is given after the leveled load.
const LEVEL0_RUNS: usize = 4;

impl Layout {
    /// The options of the tree under `policy` at `bits`: `compaction` says
    /// whether compaction runs (the load and the drift) or not (the points,
    /// so that the shape stays as it is).
    fn options(self, policy: Policy, bits: f64, compaction: bool) -> Options {
        let mut o = Options::default();
        o.compaction_style = if compaction {
            CompactionStyle::Leveled
        } else {
            CompactionStyle::None
        };
        o.write_buffer_size = (2 * self.level_base).clamp(64 << 10, 8 << 20) as usize;
        o.max_bytes_for_level_base = self.level_base;
        o.level_size_multiplier = 10;
        o.target_file_size = (self.level_base / 2).max(32 << 10);
        // The load leaves at most one table in level 0.
        o.level0_compaction_trigger = 2;
        match policy {
            Policy::Uniform => o.filters = vec![LevelFilter::BitsPerKey(FilterKind::Bloom, bits)],
            Policy::Monkey => o.filter_budget = Some(FilterBudget::bits_per_key(bits)),
        }
        o
    }
}

/// Runs the benchmark. `progress` gets a line per step.
///
/// # Errors
/// [`Error::Config`] for an empty key set or no budgets; [`Error::Db`] if
/// the engine fails.
pub fn run(cfg: &Config, progress: &mut dyn FnMut(&str)) -> Result<Summary> {
    cfg.validate()?;
    let started = Instant::now();
    let ds = Dataset::synthetic(cfg.keys, 16, cfg.value_len, cfg.seed)
        .map_err(|e| Error::Config(e.to_string()))?;
    let dir = tempfile::Builder::new()
        .prefix("siftdb-monkey-")
        .tempdir_in(&cfg.work_dir)
        .map_err(|source| Error::Io {
            what: format!("create a directory in {}", cfg.work_dir.display()),
            source,
        })?;
    // Level 1 at 1/1000 of the data: levels 1 to 3 hold 11% of it, level
    // 4 the rest, and each level-0 run about as much as level 1.
    let entry_bytes = 16 + cfg.value_len + 8;
    let data_bytes = (cfg.keys * entry_bytes) as u64;
    let layout = Layout {
        level_base: (data_bytes / 1000).max(16 << 10),
    };
    let per_run = (cfg.keys / 1000)
        .min(layout.level_base as usize / entry_bytes)
        .max(1);
    progress(&format!(
        "loading {} keys (level 1 at {} KiB, ratio 10), then {LEVEL0_RUNS} level-0 runs of {per_run}",
        cfg.keys,
        layout.level_base >> 10
    ));
    let load = Instant::now();
    let mut order: Vec<usize> = (0..ds.present.len()).collect();
    Rng::new(cfg.seed, &[1]).shuffle(&mut order);
    let (leveled, level0) = order.split_at(order.len().saturating_sub(LEVEL0_RUNS * per_run));
    {
        let db = Db::open_with(dir.path(), layout.options(Policy::Uniform, 10.0, true))?;
        for &i in leveled {
            let (k, v) = &ds.present[i];
            db.put(k, v)?;
        }
        db.flush()?;
        db.wait_for_compactions()?;
        db.close()?;
        // The level-0 runs, with compaction off so that they stay.
        let db = Db::open_with(dir.path(), layout.options(Policy::Uniform, 10.0, false))?;
        for run in level0.chunks(per_run) {
            for &i in run {
                let (k, v) = &ds.present[i];
                db.put(k, v)?;
            }
            db.flush()?;
        }
        db.close()?;
    }
    let load_secs = load.elapsed().as_secs_f64();
    let mut absent = ds.absent.clone();
    Rng::new(cfg.seed, &[2]).shuffle(&mut absent);
    let mut present: Vec<&[u8]> = ds.present.iter().map(|(k, _)| &k[..]).collect();
    Rng::new(cfg.seed, &[3]).shuffle(&mut present);
    present.truncate(cfg.present_lookups.max(1));

    let mut points = Vec::new();
    for &bits in &cfg.budgets {
        for policy in [Policy::Uniform, Policy::Monkey] {
            let db = Db::open_with(dir.path(), layout.options(policy, bits, false))?;
            let mut p = measure(&db, policy, bits, &absent, &present)?;
            p.predicted_absent_reads = walk_prediction(dir.path(), &absent)?;
            progress(&format!(
                "{:>7} at {bits:>4} bits/key: {:.4} absent reads per lookup (predicted {:.4}), {:.2} bits/key in force, {} tables rebuilt",
                policy.label(),
                p.absent_reads,
                p.predicted_absent_reads,
                p.bits_per_key,
                p.tables_rebuilt
            ));
            points.push(p);
            db.close()?;
        }
    }
    let drift = if cfg.drift_writes > 0 {
        drift(cfg, dir.path(), layout, &ds, progress)?
    } else {
        Drift::default()
    };
    Ok(Summary {
        keys: cfg.keys,
        load_secs,
        points,
        drift,
        secs: started.elapsed().as_secs_f64(),
    })
}

/// Rebuilds `db`'s filters to the policy and measures one point.
fn measure(
    db: &Db,
    policy: Policy,
    bits: f64,
    absent: &[Vec<u8>],
    present: &[&[u8]],
) -> Result<Point> {
    db.wait_for_compactions()?;
    let tables_rebuilt = db.rebuild_filters()?;
    let before = db.stats();
    for k in absent {
        if db.get(k)?.is_some() {
            return Err(Error::Config("an absent key was found".into()));
        }
    }
    let mid = db.stats();
    for k in present {
        if db.get(k)?.is_none() {
            return Err(Error::Config("a present key was not found".into()));
        }
    }
    let after = db.stats();
    let f: &FilterMemory = &after.filter_memory;
    Ok(Point {
        policy,
        budget_bits: bits,
        tables_rebuilt,
        filter_bytes: f.filter_bytes,
        bits_per_key: 8.0 * f.filter_bytes as f64 / f.keys.max(1) as f64,
        predicted_absent_reads: f.expected_false_positives,
        tree_expected_false_positives: f.expected_false_positives,
        absent_reads: (mid.data_block_reads - before.data_block_reads) as f64 / absent.len() as f64,
        present_reads: (after.data_block_reads - mid.data_block_reads) as f64
            / present.len() as f64,
        absent_lookups: absent.len(),
        levels: f
            .levels
            .iter()
            .map(|l| LevelRow {
                level: l.level,
                runs: l.runs,
                keys: l.keys,
                bits_per_key: l.bits_per_key,
                false_positives: l.false_positives,
            })
            .collect(),
    })
}

/// The mean over `absent` of the design rates of the tables each key
/// reaches in the database in `dir`, read outside the engine.
fn walk_prediction(dir: &Path, absent: &[Vec<u8>]) -> Result<f64> {
    let snap = DbSnapshot::open(dir)?;
    let levels = &snap.default_tree().version.levels;
    let rates: Vec<Vec<f64>> = levels
        .iter()
        .map(|files| files.iter().map(|f| design_fpr(&f.table)).collect())
        .collect();
    let mut sum = 0.0;
    for key in absent {
        let key = key.as_slice();
        for (level, files) in levels.iter().enumerate() {
            let covers = |f: &siftdb::inspect::version::set::TableFile| {
                f.smallest_user_key() <= key && key <= f.largest_user_key()
            };
            if level == 0 {
                for (i, f) in files.iter().enumerate() {
                    if covers(f) {
                        sum += rates[0][i];
                    }
                }
            } else {
                let i = files.partition_point(|f| f.largest_user_key() < key);
                if files.get(i).is_some_and(|f| covers(f)) {
                    sum += rates[level][i];
                }
            }
        }
    }
    Ok(sum / absent.len().max(1) as f64)
}

/// The drift phase on the Monkey tree at the reference budget.
fn drift(
    cfg: &Config,
    dir: &Path,
    layout: Layout,
    ds: &Dataset,
    progress: &mut dyn FnMut(&str),
) -> Result<Drift> {
    let bits = cfg.reference_bits;
    let db = Db::open_with(dir, layout.options(Policy::Monkey, bits, true))?;
    db.rebuild_filters()?;
    let start = db.stats();
    let mut rng = Rng::new(cfg.seed, &[4]);
    let mut samples = Vec::new();
    let every = (cfg.drift_writes / 20).max(1);
    let mut value = vec![0u8; cfg.value_len];
    for i in 1..=cfg.drift_writes {
        let (k, _) = &ds.present[rng.below(ds.present.len())];
        rng.fill(&mut value);
        db.put(k, &value)?;
        if i % every == 0 || i == cfg.drift_writes {
            let stats = db.stats();
            let f = &stats.filter_memory;
            let s = DriftSample {
                writes: i,
                expected: f.expected_false_positives,
                optimal: f.optimal_false_positives,
                memory_over_budget: f.filter_bytes as f64
                    / f.budget_bytes.unwrap_or(f.filter_bytes).max(1) as f64,
                filter_rebuilds: stats.filter_rebuilds - start.filter_rebuilds,
            };
            progress(&format!(
                "drift after {i} overwrites: expected {:.4} against optimal {:.4} ({:+.1}%), memory {:.3} of the budget",
                s.expected,
                s.optimal,
                100.0 * (s.expected / s.optimal - 1.0),
                s.memory_over_budget,
            ));
            samples.push(s);
        }
    }
    db.flush()?;
    db.wait_for_compactions()?;
    let end = db.stats();
    let settled = &end.filter_memory;
    let settled_memory =
        settled.filter_bytes as f64 / settled.budget_bytes.unwrap_or(1).max(1) as f64;
    let settled_drift = settled.expected_false_positives / settled.optimal_false_positives;
    progress(&format!(
        "settled (compaction caught up): expected {:+.1}% above the optimum, memory {settled_memory:.3} of the budget",
        100.0 * (settled_drift - 1.0)
    ));
    let rebuilt = db.rebuild_filters()?;
    let f = db.stats().filter_memory;
    let after_rebuild = f.expected_false_positives / f.optimal_false_positives;
    progress(&format!(
        "final rebuild: {rebuilt} tables, expected {:.4} against optimal {:.4}",
        f.expected_false_positives, f.optimal_false_positives
    ));
    db.close()?;
    Ok(Drift {
        filter_rebuilds: end.filter_rebuilds - start.filter_rebuilds,
        samples,
        settled_memory,
        settled_drift,
        rebuilt,
        after_rebuild,
        compaction_bytes: end.compaction_bytes_written - start.compaction_bytes_written,
        filter_rebuild_bytes: end.filter_rebuild_bytes_written - start.filter_rebuild_bytes_written,
        user_bytes: end.user_bytes_written - start.user_bytes_written,
    })
}

/// The targets read off a summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Targets {
    /// Monkey's measured absent reads at the reference budget.
    pub monkey_reads: f64,
    /// Uniform's measured absent reads at Monkey's measured memory
    /// (interpolated).
    pub uniform_reads_same_memory: f64,
    /// `1 − monkey / uniform` at the same memory.
    pub read_reduction: f64,
    /// Uniform's memory at the reference budget, bits per key.
    pub uniform_bits: f64,
    /// Monkey's memory for uniform's reads there (interpolated).
    pub monkey_bits_same_reads: f64,
    /// `1 − monkey / uniform` memory at equal reads.
    pub memory_saving: f64,
    /// Monkey's present reads over uniform's, at the reference budget,
    /// minus 1.
    pub present_penalty: f64,
    /// The largest filter memory over its budget, minus 1, over every
    /// Monkey point (the drift samples are reported on their own).
    pub worst_over_budget: f64,
    /// The largest |measured / predicted − 1| over every point.
    pub worst_prediction_error: f64,
}

impl Targets {
    /// True if every target is met: reads at least 50% fewer, memory at
    /// least 30% less, present reads at most 2% more, memory at most 1%
    /// over the budget, predictions within 10%.
    pub fn all_met(&self) -> bool {
        self.read_reduction >= 0.5
            && self.memory_saving >= 0.3
            && self.present_penalty <= 0.02
            && self.worst_over_budget <= 0.01
            && self.worst_prediction_error <= 0.10
    }
}

/// `y` at `x` on the curve through `points` (sorted by `x`), linear in
/// `x` and in `ln y` between neighbours; `None` outside.
fn interpolate(points: &[(f64, f64)], x: f64) -> Option<f64> {
    points.windows(2).find_map(|w| {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        if (x0..=x1).contains(&x) && x1 > x0 {
            let t = (x - x0) / (x1 - x0);
            Some((y0.ln() + t * (y1.ln() - y0.ln())).exp())
        } else {
            None
        }
    })
}

/// `x` where the curve through `points` (sorted by `x`, `y` falling)
/// reaches `y`, linear in `x` and `ln y` between neighbours.
fn inverse(points: &[(f64, f64)], y: f64) -> Option<f64> {
    points.windows(2).find_map(|w| {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        if y <= y0 && y >= y1 && y0 > y1 {
            let t = (y0.ln() - y.ln()) / (y0.ln() - y1.ln());
            Some(x0 + t * (x1 - x0))
        } else {
            None
        }
    })
}

impl Summary {
    /// The points of one policy, by budget.
    pub fn of(&self, policy: Policy) -> Vec<&Point> {
        self.points.iter().filter(|p| p.policy == policy).collect()
    }

    /// The targets at `reference` bits per key; `None` if the sweep does
    /// not bracket them.
    pub fn targets(&self, reference: f64) -> Option<Targets> {
        let curve = |policy| -> Vec<(f64, f64)> {
            self.of(policy)
                .iter()
                .map(|p| (p.bits_per_key, p.absent_reads.max(1e-9)))
                .collect()
        };
        let (uniform, monkey) = (curve(Policy::Uniform), curve(Policy::Monkey));
        let at = |policy| {
            self.points
                .iter()
                .find(|p| p.policy == policy && p.budget_bits == reference)
        };
        let (u, m) = (at(Policy::Uniform)?, at(Policy::Monkey)?);
        let uniform_same = interpolate(&uniform, m.bits_per_key).unwrap_or(u.absent_reads);
        let monkey_bits = inverse(&monkey, u.absent_reads)?;
        let worst_over = self
            .of(Policy::Monkey)
            .iter()
            .map(|p| p.filter_bytes as f64 / (p.budget_bits * keys_of(p) / 8.0) - 1.0)
            .fold(f64::MIN, f64::max);
        Some(Targets {
            monkey_reads: m.absent_reads,
            uniform_reads_same_memory: uniform_same,
            read_reduction: 1.0 - m.absent_reads / uniform_same,
            uniform_bits: u.bits_per_key,
            monkey_bits_same_reads: monkey_bits,
            memory_saving: 1.0 - monkey_bits / u.bits_per_key,
            present_penalty: m.present_reads / u.present_reads - 1.0,
            worst_over_budget: worst_over,
            worst_prediction_error: self
                .points
                .iter()
                .map(|p| p.prediction_error().abs())
                .fold(0.0, f64::max),
        })
    }
}

/// Keys summed over the point's levels.
fn keys_of(p: &Point) -> f64 {
    p.levels.iter().map(|l| l.keys as f64).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolation_is_log_linear_and_inverts() {
        let pts = [(2.0, 0.4), (4.0, 0.1), (6.0, 0.025)];
        assert!((interpolate(&pts, 3.0).unwrap() - 0.2).abs() < 1e-12);
        assert!((inverse(&pts, 0.2).unwrap() - 3.0).abs() < 1e-12);
        assert!((inverse(&pts, 0.05).unwrap() - 5.0).abs() < 1e-12);
        assert_eq!(interpolate(&pts, 7.0), None);
        assert_eq!(inverse(&pts, 0.5), None);
    }

    #[test]
    fn a_small_run_meets_every_target() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config {
            keys: 60_000,
            present_lookups: 20_000,
            budgets: vec![6.0, 10.0, 14.0],
            drift_writes: 20_000,
            work_dir: dir.path().to_path_buf(),
            ..Config::default()
        };
        let s = run(&cfg, &mut |_| {}).unwrap();
        assert_eq!(s.points.len(), 6);
        // Level 0's four runs and at least three levels below (level 1,
        // smaller than one memtable here, may be empty).
        let levels = &s.points[0].levels;
        assert!(
            (LEVEL0_RUNS..=LEVEL0_RUNS + 1).contains(&levels[0].runs),
            "{levels:?}"
        );
        assert!(
            levels.iter().filter(|l| l.level >= 1).count() >= 3,
            "{levels:?}"
        );
        // Every point probes the same tables: only the filters change.
        for p in &s.points {
            let keys: Vec<u64> = p.levels.iter().map(|l| l.keys).collect();
            assert_eq!(keys, levels.iter().map(|l| l.keys).collect::<Vec<_>>());
        }
        let t = s.targets(10.0).unwrap();
        assert!(t.read_reduction > 0.3, "{t:?}");
        assert!(t.worst_over_budget < 0.01, "{t:?}");
        assert!(t.present_penalty < 0.02, "{t:?}");
        assert_eq!(s.drift.samples.len(), 20);
        assert!(s.drift.settled_memory <= 1.0 + 0.011, "{:?}", s.drift);
    }
}
