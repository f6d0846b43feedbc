//! The read-amplification benchmark: data-block reads per point lookup
//! over `L` overlapping runs, and over `D` levels of a leveled tree, with
//! and without Bloom filters, measured with the engine's own
//! [`siftdb::Stats`] counters and set next to the model that predicts them.
//!
//! # The model
//!
//! `L` overlapping runs (level-0 SSTables), each with a Bloom filter of
//! false-positive rate `p`, searched newest first; a present key is equally
//! likely to be in any run (see [`model`] for the derivation):
//!
//! | lookup | data-block reads | without filters |
//! |---|---|---|
//! | absent key | `L·p` | `L` |
//! | present key | `1 + ((L−1)/2)·p` | `(L+1)/2` |
//!
//! with `p = (1 − e^(−k·n/m))^k` for `m` filter bits over `n` keys and `k`
//! probes per key, smallest near `k = (m/n)·ln 2` where about half the bits
//! are set (Bloom 1970; Kirsch and Mitzenmacher 2006; the per-run cost view
//! of Monkey, Dayan et al., SIGMOD 2017, §3). At 8 runs, 40% absent
//! lookups, 10 bits/key and `k = 7` that is 5.90 reads per lookup without
//! filters and 0.64 with them (89% fewer), at a false-positive rate of
//! about 0.82% with about half the filter bits set.
//!
//! # The layouts
//!
//! Each point is a fresh database with no automatic compaction
//! ([`siftdb::CompactionStyle::None`]) and a write buffer that never fills.
//! The present keys are shuffled and cut into `L` equal runs, one flush
//! per run, so every run is a uniform sample of the whole key space. Two
//! sentinel keys (below and above every key) are written to every run, so
//! the engine's key-range check never skips a file and the filters alone
//! decide. Two key sets:
//!
//! * **synthetic** ([`Layout::Synthetic`]): `2N` distinct random keys,
//!   sorted and dealt alternately to the present and absent sets, so
//!   absent keys interleave with present ones everywhere;
//! * **debian** ([`Layout::Debian`]): the 63,681 Debian package records of
//!   `tests/data/debian-packages.tsv.gz` (name → JSON) as present keys and
//!   the English words of `tests/data/english-words.txt.gz` that are not
//!   package names as absent keys.
//!
//! # The leveled layout
//!
//! [`Layout::Leveled`] builds a tree with real leveled compaction
//! ([`siftdb::CompactionStyle::Leveled`]) that ends with level 0 empty and
//! exactly `D` non-empty levels, each one SSTable spanning the whole key
//! space, level `i` holding `M^(i−1)` times as many keys as level 1 (`M` =
//! [`Config::leveled_multiplier`], 4). In levels 1 and deeper a lookup
//! consults one candidate file per level, found by key range, so this is
//! the run model with `L = D`, except that a present key is more likely to
//! be deep (see [`model`], "A leveled tree"):
//!
//! | lookup | data-block reads | without filters |
//! |---|---|---|
//! | absent key | `Σ_j p_j` | `D` |
//! | present key | `Σ_j w_j·(1 + Σ_{i<j} p_i)` | `Σ_j w_j·j` |
//!
//! with `w_j` the fraction of keys in level `j`. The synthetic present keys
//! are shuffled and written as `U = 1 + M + … + M^(D−1)` equal *units* of
//! two flushes each (every flush a uniform sample of the key space),
//! waiting after each flush for compaction to settle, with
//!
//! * `level0_compaction_trigger` = 2: each unit is merged into level 1;
//! * `max_bytes_for_level_base` = `(M − ½)` units and
//!   `level_size_multiplier` = `M`: level `i` overflows when it holds `M`
//!   times `M^(i−1)` units, and then moves down;
//! * `target_file_size` = 1 TiB: outputs are never cut, so every level is
//!   one file and a level that overflows moves down *whole*. With several
//!   files per level, compaction moves one file at a time and leaves the
//!   level a key-range hole where that file was, so key ranges, not
//!   filters, would skip it.
//!
//! The levels then count units like the digits of a base-`M` number:
//! after `U` units, the oldest `M^(D−1)` sit in level `D`, the next
//! `M^(D−2)` in level `D−1`, …, the newest in level 1. For `D = 5` that is
//! 341 units of about 590 keys. The shape is read back from
//! [`siftdb::Db::live_files`] and the tables themselves: level 0 empty,
//! levels 1 to `D` non-empty and no other, every loaded key in exactly one
//! level, and each level covering all but [`MAX_UNCOVERED`] of the key
//! space (a key below a level's smallest or above its largest key is
//! skipped by range: [`siftdb::Stats::range_skips`]). The theory is
//! evaluated key by key over every key the lookups draw from, with each
//! level's candidate file's own `n`, `m`, `k` and key range.
//!
//! # What is measured
//!
//! Only counts, never time: the deltas of [`siftdb::Stats`] over a batch
//! of absent lookups and a batch of present lookups. The engine's counts
//! are checked, exactly, against a count made outside the engine by
//! finding the files a lookup consults (every run; in a leveled tree the
//! candidate file of each level, or a range skip) and probing each file's
//! filter block with the same key hash; a difference is an
//! [`Error::CounterMismatch`]. The theory is evaluated per file, with
//! each file's own `n`, `m` and `k`.
//!
//! The batch sizes start at [`Config::absent_lookups`] and
//! [`Config::present_lookups`] and are raised per point until the
//! standard error of every measured quantity is at most
//! 1/[`Config::sigmas`] of the acceptance tolerance ([`tolerance`]).
//!
//! # Running it
//!
//! `cargo bench --bench read_amplification` runs [`Config::default`] and
//! writes `target/readamp/readamp.csv` and four SVG plots through
//! [`run_and_report_with`]; other tools call [`run_and_report`], as
//! `kvctl bench readamp` does.

mod dataset;
mod leveled;
mod measure;
pub mod model;
mod plot;
mod report;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub use dataset::{
    bench_options, load_leveled, load_runs, sentinels, Dataset, LeveledPlan, RunLayout,
    LEVELED_L0_TRIGGER, MAX_LEVELS,
};
pub use leveled::MAX_UNCOVERED;
pub use plot::{write_plots, PLOT_FILES};
pub use report::{write_csv, write_table, CSV_COLUMNS};

use measure::PointSpec;

/// Errors of the benchmark.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The engine returned an error.
    #[error(transparent)]
    Db(#[from] siftdb::Error),
    /// A file operation failed; `context` names it.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, e.g. `"write target/readamp/readamp.csv"`.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The [`Config`] cannot be run.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// An input data file is malformed.
    #[error("bad input data: {0}")]
    Data(String),
    /// The database did not end up with the intended files.
    #[error("unexpected layout: {0}")]
    Layout(String),
    /// A lookup returned the wrong answer.
    #[error("{point}: wrong answer for key {key}: {detail}")]
    WrongAnswer {
        /// The benchmark point.
        point: String,
        /// The key, escaped.
        key: String,
        /// What was wrong.
        detail: String,
    },
    /// An engine counter disagrees with the count made from the files'
    /// filters: the engine's read statistics are wrong.
    #[error("{point}: engine counter {counter} = {engine}, but the files' filters say {expected}")]
    CounterMismatch {
        /// The benchmark point and lookup batch.
        point: String,
        /// The [`siftdb::Stats`] field.
        counter: &'static str,
        /// What the engine counted.
        engine: u64,
        /// What probing the files' filters directly gives.
        expected: u64,
    },
    /// Drawing a plot failed.
    #[error("plot {}: {detail}", path.display())]
    Plot {
        /// The SVG being written.
        path: PathBuf,
        /// What failed.
        detail: String,
    },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

/// The result type of the benchmark.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Which key set a point uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Layout {
    /// Random fixed-length keys, absent keys interleaved with present ones.
    Synthetic,
    /// Debian package names (present) and English words (absent).
    Debian,
    /// The synthetic keys in a tree built by leveled compaction, with
    /// `files` non-empty levels below an empty level 0.
    Leveled,
}

impl Layout {
    /// The name written in the CSV `layout` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Layout::Synthetic => "synthetic",
            Layout::Debian => "debian",
            Layout::Leveled => "leveled",
        }
    }

    /// What [`Point::files`] counts, in short: `L` runs, or `D` levels.
    pub fn count_name(self) -> &'static str {
        match self {
            Layout::Leveled => "D",
            _ => "L",
        }
    }

    /// Seed stream separating the layouts' random choices.
    fn stream(self) -> u64 {
        match self {
            Layout::Synthetic => 0x5157_0000,
            Layout::Debian => 0xdeb1_a000,
            Layout::Leveled => 0x1e7e_1000,
        }
    }
}

/// Which sweep a point belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Sweep {
    /// Files × bits per key, with the best `k`.
    FilesBits,
    /// `k` at fixed bits per key and files.
    Hashes,
    /// The real-data layout at fixed bits per key.
    RealData,
    /// Non-empty levels × bits per key of the leveled layout.
    Levels,
}

impl Sweep {
    /// The name written in the CSV `sweep` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Sweep::FilesBits => "files_x_bits",
            Sweep::Hashes => "hashes",
            Sweep::RealData => "real_data",
            Sweep::Levels => "levels_x_bits",
        }
    }
}

/// What to run. Start from [`Config::default`] and change fields.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Present keys `N` loaded per synthetic point (as many absent keys
    /// are generated). Defaults to 200,000.
    pub keys: usize,
    /// Synthetic key length in bytes (at least 8). Defaults to 16.
    pub key_len: usize,
    /// Synthetic value length in bytes. Defaults to 100.
    pub value_len: usize,
    /// Minimum absent-key lookups per point; raised per point as
    /// [`Config::sigmas`] requires. Defaults to 20,000.
    pub absent_lookups: usize,
    /// Minimum present-key lookups per point. Defaults to 20,000.
    pub present_lookups: usize,
    /// Fraction of lookups that miss in the mixed figures
    /// (`reads_mixed = f·reads_absent + (1−f)·reads_present`). Defaults to
    /// 0.4.
    pub absent_fraction: f64,
    /// Seed of every random choice (keys, values, runs, lookups). The same
    /// seed gives the same CSV. Defaults to `0x5EED`.
    pub seed: u64,
    /// Numbers of runs `L` of the files × bits-per-key sweep. Defaults to
    /// 1, 2, 4, 8, 16, 32.
    pub files: Vec<usize>,
    /// Bits per key of that sweep (0 = no filters), each with the best
    /// `k`. Defaults to 0, 2, 4, ..., 16.
    pub bits_per_key: Vec<u32>,
    /// Forced `k` values of the hash sweep. Defaults to 1..=12.
    pub hashes_sweep: Vec<u32>,
    /// Runs in the hash sweep. Defaults to 8.
    pub hashes_sweep_files: usize,
    /// Bits per key in the hash sweep. Defaults to 10.
    pub hashes_sweep_bits: u32,
    /// Runs of the Debian real-data layout; empty skips it. Defaults to 1,
    /// 4, 8, 16.
    pub debian_files: Vec<usize>,
    /// Bits per key of the Debian layout. Defaults to 10.
    pub debian_bits_per_key: u32,
    /// Non-empty levels `D` of the leveled layout (the synthetic keys after
    /// real leveled compaction; see the module docs); empty skips it, at
    /// most [`MAX_LEVELS`]. Defaults to 1, 2, 3, 4, 5.
    pub leveled_levels: Vec<usize>,
    /// Bits per key of the leveled layout, each with the best `k`.
    /// Defaults to 0 and 10.
    pub leveled_bits_per_key: Vec<u32>,
    /// Level size multiplier `M` of the leveled layout: level `i` holds
    /// `M^(i−1)` times the keys of level 1. `1 + M + … + M^(D−1)` units of
    /// two flushes must fit in [`Config::keys`]. Defaults to 4.
    pub leveled_multiplier: u32,
    /// Directory holding `debian-packages.tsv.gz` and
    /// `english-words.txt.gz`. Defaults to the repository's `tests/data`.
    pub data_dir: PathBuf,
    /// Where `readamp.csv` and the plots go. Defaults to `target/readamp`
    /// (relative to the working directory).
    pub out_dir: PathBuf,
    /// Where the temporary databases go (each is deleted when its point is
    /// done); `None` uses the system temporary directory. Defaults to
    /// `None`.
    pub work_dir: Option<PathBuf>,
    /// Lookups are raised until one standard error of each measured
    /// quantity is at most `1/sigmas` of its tolerance, so a correct
    /// engine misses by chance with probability about `2·Φ(−sigmas)` per
    /// quantity. Defaults to 5.
    pub sigmas: f64,
    /// Cap on lookups per batch. Defaults to 1,000,000.
    pub max_lookups: usize,
    /// Points measured at once; 0 uses every core. Counts do not depend on
    /// it. Defaults to 0.
    pub threads: usize,
    /// Whether [`run_and_report`] draws the SVG plots. Defaults to true.
    pub plots: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            keys: 200_000,
            key_len: 16,
            value_len: 100,
            absent_lookups: 20_000,
            present_lookups: 20_000,
            absent_fraction: 0.4,
            seed: 0x5EED,
            files: vec![1, 2, 4, 8, 16, 32],
            bits_per_key: (0..=16).step_by(2).collect(),
            hashes_sweep: (1..=12).collect(),
            hashes_sweep_files: 8,
            hashes_sweep_bits: 10,
            debian_files: vec![1, 4, 8, 16],
            debian_bits_per_key: 10,
            leveled_levels: (1..=5).collect(),
            leveled_bits_per_key: vec![0, 10],
            leveled_multiplier: 4,
            data_dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data"),
            out_dir: PathBuf::from("target/readamp"),
            work_dir: None,
            sigmas: 5.0,
            max_lookups: 1_000_000,
            threads: 0,
            plots: true,
        }
    }
}

impl Config {
    /// Checks that the configuration can run.
    ///
    /// # Errors
    /// [`Error::Config`] naming the bad field.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Config(m));
        if !(0.0..=1.0).contains(&self.absent_fraction) {
            return bad(format!(
                "absent_fraction {} is outside 0..=1",
                self.absent_fraction
            ));
        }
        let hashes_files = (!self.hashes_sweep.is_empty()).then_some(&self.hashes_sweep_files);
        let synthetic_files = self.files.iter().chain(hashes_files);
        for &l in synthetic_files.clone().chain(&self.debian_files) {
            if l == 0 || l > 1000 {
                return bad(format!("a number of files is {l}; it must be in 1..=1000"));
            }
        }
        if let Some(&l) = self.files.iter().find(|&&l| l > self.keys) {
            return bad(format!(
                "{l} files need at least {l} keys, but keys is {}",
                self.keys
            ));
        }
        if let Some(&l) = hashes_files.filter(|&&l| l > self.keys) {
            return bad(format!(
                "the k sweep (hashes_sweep) runs over {l} files, so it needs at least {l} keys, \
                 but keys is {}",
                self.keys
            ));
        }
        if !self.leveled_levels.is_empty() {
            if self.leveled_bits_per_key.is_empty() {
                return bad("leveled_levels needs at least one leveled_bits_per_key".into());
            }
            let raw = (dataset::entry_bytes(self.key_len, self.value_len) * self.keys) as f64;
            for &d in &self.leveled_levels {
                LeveledPlan::for_size(self.keys, raw, d, self.leveled_multiplier)?;
            }
        }
        for &b in self
            .bits_per_key
            .iter()
            .chain(&self.leveled_bits_per_key)
            .chain([&self.hashes_sweep_bits, &self.debian_bits_per_key])
        {
            if b > 64 {
                return bad(format!("bits_per_key {b} is over 64"));
            }
        }
        if !self.hashes_sweep.is_empty() && self.hashes_sweep_bits == 0 {
            return bad("hashes_sweep needs hashes_sweep_bits > 0".into());
        }
        if let Some(k) = self.hashes_sweep.iter().find(|k| !(1..=30).contains(*k)) {
            return bad(format!("hashes_sweep holds k = {k}; k must be in 1..=30"));
        }
        if self.absent_lookups == 0 || self.present_lookups == 0 {
            return bad("absent_lookups and present_lookups must be positive".into());
        }
        if self.sigmas.is_nan() || self.sigmas < 0.0 {
            return bad("sigmas must be non-negative".into());
        }
        Ok(())
    }

    fn specs(&self) -> Vec<PointSpec> {
        let mut specs = Vec::new();
        for &files in &self.files {
            for &bits_per_key in &self.bits_per_key {
                specs.push(PointSpec {
                    layout: Layout::Synthetic,
                    sweep: Sweep::FilesBits,
                    files,
                    bits_per_key,
                    hashes: None,
                });
            }
        }
        for &k in &self.hashes_sweep {
            specs.push(PointSpec {
                layout: Layout::Synthetic,
                sweep: Sweep::Hashes,
                files: self.hashes_sweep_files,
                bits_per_key: self.hashes_sweep_bits,
                hashes: Some(k),
            });
        }
        for &files in &self.debian_files {
            specs.push(PointSpec {
                layout: Layout::Debian,
                sweep: Sweep::RealData,
                files,
                bits_per_key: self.debian_bits_per_key,
                hashes: None,
            });
        }
        for &levels in &self.leveled_levels {
            for &bits_per_key in &self.leveled_bits_per_key {
                specs.push(PointSpec {
                    layout: Layout::Leveled,
                    sweep: Sweep::Levels,
                    files: levels,
                    bits_per_key,
                    hashes: None,
                });
            }
        }
        specs
    }
}

/// One measured configuration: one row of `readamp.csv`. All per-lookup
/// figures are means over the point's lookups; `theory_*` is the model
/// evaluated with the files' own filter sizes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Point {
    /// Key set.
    pub layout: Layout,
    /// Sweep the point belongs to.
    pub sweep: Sweep,
    /// Runs (level-0 files) `L`; for [`Layout::Leveled`], the non-empty
    /// levels `D`, which is also the most files a lookup consults.
    pub files: usize,
    /// Configured filter bits per key (0 = no filters).
    pub bits_per_key: u32,
    /// Probes per key `k` read from the filters (0 without filters).
    pub hashes: u32,
    /// Fraction of lookups that miss in the mixed figures.
    pub absent_fraction: f64,
    /// Present keys loaded.
    pub keys: usize,
    /// Absent-key lookups made.
    pub absent_lookups: u64,
    /// Present-key lookups made.
    pub present_lookups: u64,
    /// Data-block reads per absent-key lookup.
    pub reads_absent: f64,
    /// Data-block reads per present-key lookup.
    pub reads_present: f64,
    /// `f·reads_absent + (1−f)·reads_present` with `f = absent_fraction`.
    pub reads_mixed: f64,
    /// Model: reads per absent lookup (`L·p`).
    pub theory_absent: f64,
    /// Model: reads per present lookup (`1 + ((L−1)/2)·p`).
    pub theory_present: f64,
    /// Model: mixed reads per lookup.
    pub theory_mixed: f64,
    /// Filter false positives / filter probes of files not holding the
    /// key; `None` without filters.
    pub fpr_measured: Option<f64>,
    /// Model: `(1 − e^(−k·n/m))^k`, averaged over files (for
    /// [`Layout::Leveled`], over the expected probes of files not holding
    /// the key).
    pub fpr_theory: Option<f64>,
    /// Fraction of filter bits set, over all files' filters.
    pub bits_set_fraction: Option<f64>,
    /// Model: `1 − e^(−k·n/m)`.
    pub bits_set_theory: Option<f64>,
    /// Files skipped (filter said absent, or out of key range) per lookup
    /// at `absent_fraction`.
    pub files_skipped_per_lookup: f64,
    /// Model: files skipped per lookup.
    pub skipped_theory: f64,
    /// Filter probes per lookup at `absent_fraction`.
    pub filter_probes_per_lookup: f64,
    /// Model: filter probes per lookup.
    pub probes_theory: f64,
    /// Filter bits per distinct key actually stored (`Σm / Σn`; slightly
    /// above `bits_per_key` as `m` is rounded up to whole bytes).
    pub filter_bits_per_key: f64,
    /// Non-empty levels below level 0 (0 for the run layouts, whose runs
    /// are all in level 0).
    pub levels: usize,
    /// Distinct keys per non-empty level, level 1 first (empty for runs).
    pub level_keys: Vec<u64>,
    /// SSTables per non-empty level, level 1 first (empty for runs).
    pub level_files: Vec<usize>,
    /// Compactions the engine ran while the layout was built (trivial moves
    /// included; 0 for runs, which are never compacted).
    pub compactions: u64,
    /// Levels skipped because the candidate file's key range does not cover
    /// the key, per lookup at `absent_fraction` (always 0 for runs, whose
    /// sentinels make every run span every key).
    pub range_skips_per_lookup: f64,
    /// Model: range skips per lookup.
    pub range_skips_theory: f64,
}

/// One measured quantity of a [`Point`] next to its theory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Check {
    /// The CSV column of the measured value.
    pub quantity: &'static str,
    /// Measured.
    pub measured: f64,
    /// Predicted.
    pub theory: f64,
    /// Whether they agree within [`tolerance`].
    pub ok: bool,
}

impl Point {
    /// Every measured quantity with a theory, checked against it.
    pub fn checks(&self) -> Vec<Check> {
        let mut out = Vec::new();
        let mut add = |quantity, measured: f64, theory: f64| {
            out.push(Check {
                quantity,
                measured,
                theory,
                ok: agrees(measured, theory),
            })
        };
        add("reads_absent", self.reads_absent, self.theory_absent);
        add("reads_present", self.reads_present, self.theory_present);
        add("reads_mixed", self.reads_mixed, self.theory_mixed);
        if let (Some(m), Some(t)) = (self.fpr_measured, self.fpr_theory) {
            add("fpr_measured", m, t);
        }
        if let (Some(m), Some(t)) = (self.bits_set_fraction, self.bits_set_theory) {
            add("bits_set_fraction", m, t);
        }
        add(
            "files_skipped_per_lookup",
            self.files_skipped_per_lookup,
            self.skipped_theory,
        );
        add(
            "filter_probes_per_lookup",
            self.filter_probes_per_lookup,
            self.probes_theory,
        );
        if self.layout == Layout::Leveled {
            add(
                "range_skips_per_lookup",
                self.range_skips_per_lookup,
                self.range_skips_theory,
            );
        }
        out
    }

    /// True if every [`Point::checks`] passes.
    pub fn within_tolerance(&self) -> bool {
        self.checks().iter().all(|c| c.ok)
    }

    /// Total lookups (absent plus present).
    pub fn lookups(&self) -> u64 {
        self.absent_lookups + self.present_lookups
    }
}

/// Relative tolerance of the acceptance check.
pub const REL_TOLERANCE: f64 = 0.10;
/// Absolute tolerance used where the theory is below [`SMALL_THEORY`].
pub const ABS_TOLERANCE: f64 = 0.002;
/// Theory values below this are checked with [`ABS_TOLERANCE`].
pub const SMALL_THEORY: f64 = 0.02;

/// The largest acceptable `|measured − theory|`: 10% of `theory`, or
/// 0.002 where `theory < 0.02`.
pub fn tolerance(theory: f64) -> f64 {
    if theory.abs() < SMALL_THEORY {
        ABS_TOLERANCE
    } else {
        REL_TOLERANCE * theory.abs()
    }
}

/// The keys (of each set, present and absent) below which a correct
/// engine may miss a check by sampling noise alone: lookups draw from
/// these fixed sets, and a repeated key repeats its filter answers, so
/// extra lookups cannot bring the error of a false-positive rate under the
/// spread of the key set itself. That spread is `sqrt(p(1 − p)/n)` for `n`
/// keys (one probe each; more when a lookup probes several files), and
/// `sigmas` of it fit in [`tolerance`]`(p)` for every `p` once `n ≥ p(1 −
/// p)·(sigmas / tolerance(p))²` at the worst `p`, which is
/// [`SMALL_THEORY`], where the tolerance turns absolute. 122,500 keys at
/// the default 5 sigmas.
pub fn keys_for_checks(sigmas: f64) -> usize {
    let p = SMALL_THEORY;
    (p * (1.0 - p) * (sigmas / tolerance(p)).powi(2)).ceil() as usize
}

/// Whether `measured` agrees with `theory` within [`tolerance`].
pub fn agrees(measured: f64, theory: f64) -> bool {
    (measured - theory).abs() <= tolerance(theory) * (1.0 + 1e-12)
}

/// Progress of [`run`]: one report per finished point.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Points finished, this one included.
    pub done: usize,
    /// Points in the run.
    pub total: usize,
    /// The point just finished.
    pub point: &'a Point,
    /// Time since the run started.
    pub elapsed: Duration,
}

/// Measures every point of `cfg` (files × bits per key, the `k` sweep,
/// the Debian layout, then levels × bits per key), calling `progress` after each (in completion
/// order, on the calling thread). Returns the points in that sweep order.
///
/// # Errors
/// [`Error::Config`] for a bad configuration; engine, I/O and data errors;
/// [`Error::CounterMismatch`] or [`Error::WrongAnswer`] if the engine
/// miscounts or misanswers.
pub fn run(cfg: &Config, progress: &mut dyn FnMut(&Progress<'_>)) -> Result<Vec<Point>> {
    cfg.validate()?;
    let start = Instant::now();
    let specs = cfg.specs();
    let synthetic = if specs
        .iter()
        .any(|s| matches!(s.layout, Layout::Synthetic | Layout::Leveled))
    {
        Dataset::synthetic(cfg.keys, cfg.key_len, cfg.value_len, cfg.seed)?
    } else {
        Dataset::default()
    };
    let debian = if specs.iter().any(|s| s.layout == Layout::Debian) {
        let ds = Dataset::debian(&cfg.data_dir)?;
        if let Some(&l) = cfg.debian_files.iter().find(|&&l| l > ds.present.len()) {
            return Err(Error::Config(format!("{l} files need at least {l} keys")));
        }
        ds
    } else {
        Dataset::default()
    };
    let work_dir = cfg.work_dir.clone().unwrap_or_else(std::env::temp_dir);
    let threads = match cfg.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .min(specs.len())
    .max(1);

    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let mut results: Vec<Option<Point>> = vec![None; specs.len()];
    let mut first_error = None;
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        for _ in 0..threads {
            let tx = tx.clone();
            let (specs, next, stop) = (&specs, &next, &stop);
            let (synthetic, debian, work_dir) = (&synthetic, &debian, &work_dir);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= specs.len() || stop.load(Ordering::Relaxed) {
                    return;
                }
                let r = match specs[i].layout {
                    Layout::Debian => measure::measure(&specs[i], debian, cfg, work_dir),
                    Layout::Leveled => leveled::measure(&specs[i], synthetic, cfg, work_dir),
                    Layout::Synthetic => measure::measure(&specs[i], synthetic, cfg, work_dir),
                };
                if r.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                if tx.send((i, r)).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        let mut done = 0;
        for (i, r) in rx {
            match r {
                Ok(p) => {
                    done += 1;
                    progress(&Progress {
                        done,
                        total: specs.len(),
                        point: &p,
                        elapsed: start.elapsed(),
                    });
                    results[i] = Some(p);
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
    });
    if let Some(e) = first_error {
        return Err(e);
    }
    Ok(results.into_iter().flatten().collect())
}

/// The headline comparison: the same layout without and with filters.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Headline {
    /// The point without filters.
    pub without: Point,
    /// The point with filters.
    pub with: Point,
    /// `1 − with.reads_mixed / without.reads_mixed`.
    pub reduction: f64,
}

/// Runs of the headline comparison.
pub const HEADLINE_FILES: usize = 8;
/// Bits per key of the headline comparison.
pub const HEADLINE_BITS_PER_KEY: u32 = 10;

impl Headline {
    /// Finds the synthetic 8-file points at 0 and 10 bits per key among
    /// `points`.
    pub fn find(points: &[Point]) -> Option<Headline> {
        let at = |bits| {
            points.iter().find(|p| {
                p.layout == Layout::Synthetic
                    && p.sweep == Sweep::FilesBits
                    && p.files == HEADLINE_FILES
                    && p.bits_per_key == bits
            })
        };
        let (without, with) = (at(0)?.clone(), at(HEADLINE_BITS_PER_KEY)?.clone());
        let reduction = 1.0 - with.reads_mixed / without.reads_mixed;
        Some(Headline {
            without,
            with,
            reduction,
        })
    }
}

/// What [`run_and_report`] produced.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Summary {
    /// Every point, in sweep order.
    pub points: Vec<Point>,
    /// The 8-file comparison, if both points were run.
    pub headline: Option<Headline>,
    /// Checks outside tolerance, with their point's description.
    pub misses: Vec<(String, Check)>,
    /// The CSV written.
    pub csv: PathBuf,
    /// The SVG plots written.
    pub plots: Vec<PathBuf>,
    /// Wall-clock time of the whole run.
    pub elapsed: Duration,
}

/// Runs `cfg` and reports: the tables (measured | theory | ratio) and the
/// headline to `out`, `readamp.csv` and (if [`Config::plots`]) the SVG
/// plots to [`Config::out_dir`]. Progress is not reported; see
/// [`run_and_report_with`].
///
/// ```no_run
/// use siftdb_bench::readamp::{self, Config};
///
/// let mut cfg = Config::default();
/// cfg.keys = 50_000; // a quicker run
/// cfg.out_dir = "target/readamp-quick".into();
/// let summary = readamp::run_and_report(&cfg, &mut std::io::stdout())?;
/// if !summary.misses.is_empty() {
///     eprintln!("{} checks disagree with the model", summary.misses.len());
/// }
/// # Ok::<(), readamp::Error>(())
/// ```
///
/// # Errors
/// As [`run`], plus [`Error::Io`] / [`Error::Plot`] for the outputs.
/// Points outside tolerance are not errors: see [`Summary::misses`].
pub fn run_and_report(cfg: &Config, out: &mut dyn Write) -> Result<Summary> {
    run_and_report_with(cfg, out, &mut |_| {})
}

/// [`run_and_report`] with a progress callback (see [`run`]).
///
/// # Errors
/// As [`run_and_report`].
pub fn run_and_report_with(
    cfg: &Config,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(&Progress<'_>),
) -> Result<Summary> {
    let start = Instant::now();
    let points = run(cfg, progress)?;
    std::fs::create_dir_all(&cfg.out_dir)
        .map_err(|e| Error::io(format!("create {}", cfg.out_dir.display()), e))?;
    let csv = cfg.out_dir.join("readamp.csv");
    write_csv(&points, &csv)?;
    let plots = if cfg.plots {
        plot::write_plots(&points, &cfg.out_dir)?
    } else {
        Vec::new()
    };
    let misses: Vec<(String, Check)> = points
        .iter()
        .flat_map(|p| {
            let name = describe(p);
            p.checks()
                .into_iter()
                .filter(|c| !c.ok)
                .map(move |c| (name.clone(), c))
        })
        .collect();
    let summary = Summary {
        headline: Headline::find(&points),
        points,
        misses,
        csv,
        plots,
        elapsed: start.elapsed(),
    };
    report::write_report(&summary, out).map_err(|e| Error::io("write the report", e))?;
    Ok(summary)
}

/// A one-line description of a point, e.g. `synthetic L=8 bits/key=10
/// k=7` or `leveled D=5 bits/key=10 k=7`.
pub fn describe(p: &Point) -> String {
    format!(
        "{} {}={} bits/key={} k={}",
        p.layout.as_str(),
        p.layout.count_name(),
        p.files,
        p.bits_per_key,
        p.hashes
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_for_checks_is_where_the_key_set_fits_the_tolerance() {
        assert_eq!(keys_for_checks(5.0), 122_500);
        // At that size, 5 standard deviations of the rate at 0.02 fill the
        // tolerance, and both sides of the switch are no wider.
        let sd = |p: f64| (p * (1.0 - p) / 122_500.0).sqrt();
        assert!((5.0 * sd(0.02) - tolerance(0.02)).abs() < 1e-9);
        for p in [0.001, 0.01, 0.019, 0.05, 0.2, 0.6] {
            assert!(5.0 * sd(p) <= tolerance(p), "{p}");
        }
    }

    #[test]
    fn tolerance_switches_to_absolute_below_002() {
        assert_eq!(tolerance(0.019), 0.002);
        assert!((tolerance(0.02) - 0.002).abs() < 1e-15);
        assert!((tolerance(5.9) - 0.59).abs() < 1e-12);
        assert!(agrees(0.0655, 0.06));
        assert!(!agrees(0.067, 0.06));
        assert!(agrees(0.0119, 0.01));
        assert!(!agrees(0.0121, 0.01));
    }

    #[test]
    fn default_config_is_valid_and_has_the_headline_points() {
        let c = Config::default();
        c.validate().unwrap();
        let specs = c.specs();
        assert_eq!(specs.len(), 6 * 9 + 12 + 4 + 5 * 2);
        assert!(specs
            .iter()
            .any(|s| s.layout == Layout::Leveled && s.files == 5 && s.bits_per_key == 10));
        assert!(specs.iter().any(|s| s.files == 8 && s.bits_per_key == 0));
        assert!(specs.iter().any(|s| s.files == 8 && s.bits_per_key == 10));
        let bad = Config {
            absent_fraction: 1.5,
            ..Config::default()
        };
        assert!(bad.validate().is_err());
        let bad = Config {
            hashes_sweep: vec![0],
            ..Config::default()
        };
        assert!(bad.validate().is_err());
        // Found by a new-user trial: 5 keys with `files` = [1] blamed "8
        // files", which only the k sweep uses.
        let few = Config {
            keys: 5,
            files: vec![1],
            ..Config::default()
        };
        let e = few.validate().unwrap_err().to_string();
        assert!(
            e.contains("the k sweep (hashes_sweep) runs over 8 files"),
            "{e}"
        );
        // 1 + 4 + … + 4^5 = 1365 units of 2 flushes fit in 200,000 keys,
        // not in 2,000; 7 levels do not exist.
        for (keys, levels, ok) in [(200_000, 6, true), (2_000, 6, false), (200_000, 7, false)] {
            let c = Config {
                keys,
                leveled_levels: vec![levels],
                ..Config::default()
            };
            assert_eq!(c.validate().is_ok(), ok, "{keys} keys, {levels} levels");
        }
    }
}
