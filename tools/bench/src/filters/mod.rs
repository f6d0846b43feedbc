//! The filter sweep: for each filter kind (classic Bloom, blocked Bloom,
//! Ribbon) at each bits-per-key setting, the false-positive rate measured
//! against the kind's own theory, the bits per key actually stored, the
//! probe time with the filter in cache and far out of it, and the build
//! time per key (`kvctl bench filters`).
//!
//! # What one setting measures
//!
//! Every kind is built the way the engine builds it, from
//! [`LevelFilter::BitsPerKey`]`(kind, b)` and its [`LevelFilter::policy`],
//! and probed through the resulting `dyn` [`siftdb::filter::FilterPolicy`].
//! For Ribbon, `b` is a budget: the policy picks `r = ⌊b / 1.05⌋` result
//! bits, so it stores a little less than `b` bits per key.
//!
//! - **Keys**: [`Config::keys`] random 16-byte keys and
//!   [`Config::absent_keys`] other random keys, hashed with
//!   [`siftdb::filter::hash_key`], all from [`Config::seed`].
//! - **False-positive rate**: the fraction of the absent keys the
//!   `keys`-key filter passes, against the kind's theory for that filter
//!   (its own `m/n` and `k`, or `2^−r`). Every present key is probed too:
//!   a false negative is an [`Error::FalseNegative`].
//! - **Stored bits per key**: every byte of that filter (headers
//!   included), times 8, over `keys`.
//! - **Build**: the median over [`Config::build_rounds`] builds of that
//!   filter, ns per key, the kinds interleaved within each round.
//! - **Cached probe**: back-to-back probes of fresh random hashes against
//!   a filter of [`Config::cached_keys`] keys (100,000 by default: at most
//!   200 KB at 16 bits per key, inside a 512 KiB L2 cache; a 1,000,000-key
//!   filter is 0.5 to 2 MB and would measure L2 misses, not a cached
//!   filter).
//! - **Uncached probe**: many copies of the `keys`-key filter fill
//!   [`Config::uncached_bytes`] (256 MiB by default, 8× a 32 MiB L3 cache),
//!   and each probe, of a fresh random hash, picks a random copy. Two
//!   figures: *one at a time*, with an `lfence` after each probe so its
//!   loads finish before the next probe's start (the latency of one probe,
//!   the `probe_ns_uncached` column), and *back to back* (the CPU may
//!   overlap the misses of successive probes).
//! - **Baseline**: one step of a pointer chase around a random cycle over
//!   an array of the same size: one dependent random load, the cost the
//!   uncached probe is read against.
//!
//! # Robust timing
//!
//! Timings are medians over [`Config::rounds`] rounds. Within a setting
//! each round times one batch of every contender in turn
//! ([`timing::interleaved`]): the cached probes of every kind (and the key
//! generation they include), then the dependent load and the uncached
//! probes of every kind, so a drift of the machine's memory latency (tens
//! of percent within a minute on a shared VM) moves all of them together,
//! and the ratio of the uncached probe to the load is the median of the
//! per-round ratios.
//!
//! # The check
//!
//! Each measured rate must agree with its theory within 10%, or within
//! 0.002 where the theory is below 0.02 (the tolerance of the
//! read-amplification harness, [`crate::readamp::tolerance`]); a miss is
//! reported, not an error ([`Summary::misses`]).

mod kinds;
mod measure;
mod plot;
mod report;
pub mod timing;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use siftdb::filter::{FilterKind, LevelFilter};

pub use plot::PLOT_FILE;
pub use report::{write_csv, write_table, CSV_COLUMNS, CSV_FILE};

/// Errors of the sweep.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The [`Config`] cannot be run.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A file operation failed; `context` names it.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, e.g. `"write target/bench-filters/filters.csv"`.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Drawing the plot failed.
    #[error("plot {}: {detail}", path.display())]
    Plot {
        /// The SVG being written.
        path: PathBuf,
        /// What failed.
        detail: String,
    },
    /// A filter rejected a key it was built from.
    #[error("{kind} filter at {bits_per_key} bits per key rejects a key it was built from")]
    FalseNegative {
        /// The kind's label.
        kind: &'static str,
        /// The setting.
        bits_per_key: f64,
    },
}

impl Error {
    fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

/// The result type of the sweep.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Most keys per filter [`Config::validate`] accepts: a Ribbon build holds
/// about 53 bytes per key while it runs.
pub const MAX_KEYS: usize = 50_000_000;

/// Most absent keys accepted (16 bytes of hash each).
pub const MAX_ABSENT_KEYS: usize = 100_000_000;

/// Most bytes of filter copies per kind (and of the load array) accepted:
/// the sweep holds one region per kind and the load array at once.
pub const MAX_UNCACHED_BYTES: usize = 2 << 30;

/// What to run. Start from [`Config::default`] and change fields.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Keys in each filter that is built, checked and copied for the
    /// uncached probes. Defaults to 1,000,000.
    pub keys: usize,
    /// Keys in the cache-resident filter of the cached probes (the first
    /// `cached_keys` of the same keys; at most [`Config::keys`] are used).
    /// Defaults to 100,000.
    pub cached_keys: usize,
    /// Absent keys probed for the false-positive rate. Defaults to
    /// 10,000,000 (at a rate of 2^−15, about 305 false positives: a
    /// standard error of 6%).
    pub absent_keys: usize,
    /// Bits per key of the sweep, each a [`LevelFilter::BitsPerKey`] of
    /// every kind. Defaults to 4, 6, ..., 16.
    pub bits_per_key: Vec<f64>,
    /// The kinds swept. Defaults to [`FilterKind::ALL`].
    pub kinds: Vec<FilterKind>,
    /// Bytes of filter copies per kind for the uncached probes, and of the
    /// dependent-load array. Defaults to 256 MiB.
    pub uncached_bytes: usize,
    /// Interleaved timing rounds per setting (cached and uncached).
    /// Defaults to 51.
    pub rounds: usize,
    /// Builds per kind and setting for the build time. Defaults to 5.
    pub build_rounds: usize,
    /// Cached probes per contender and round. Defaults to 100,000.
    pub cached_batch: u64,
    /// Uncached probes (and loads) per contender and round. Defaults to
    /// 50,000.
    pub uncached_batch: u64,
    /// Seed of the keys and of the probe sequences. Defaults to `0x5EED`.
    pub seed: u64,
    /// Where `filters.csv` and the plot go. Defaults to
    /// `target/bench-filters` (relative to the working directory).
    pub out_dir: PathBuf,
    /// Whether [`run_and_report`] draws the SVG plot. Defaults to true.
    pub plots: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            keys: 1_000_000,
            cached_keys: 100_000,
            absent_keys: 10_000_000,
            bits_per_key: vec![4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0],
            kinds: FilterKind::ALL.to_vec(),
            uncached_bytes: 256 << 20,
            rounds: 51,
            build_rounds: 5,
            cached_batch: 100_000,
            uncached_batch: 50_000,
            seed: 0x5EED,
            out_dir: PathBuf::from("target/bench-filters"),
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
        for (name, v, max) in [
            ("keys", self.keys, MAX_KEYS),
            ("cached_keys", self.cached_keys, MAX_KEYS),
            ("absent_keys", self.absent_keys, MAX_ABSENT_KEYS),
        ] {
            if v == 0 || v > max {
                return bad(format!("{name} is {v}; it must be in 1..={max}"));
            }
        }
        if self.uncached_bytes == 0 || self.uncached_bytes > MAX_UNCACHED_BYTES {
            return bad(format!(
                "uncached_bytes is {}; it must be in 1..={MAX_UNCACHED_BYTES}",
                self.uncached_bytes
            ));
        }
        if self.rounds == 0 || self.build_rounds == 0 {
            return bad("rounds and build_rounds must be positive".into());
        }
        if self.cached_batch == 0 || self.uncached_batch == 0 {
            return bad("cached_batch and uncached_batch must be positive".into());
        }
        if self.bits_per_key.is_empty() || self.kinds.is_empty() {
            return bad("at least one bits-per-key setting and one kind are needed".into());
        }
        for (i, &b) in self.bits_per_key.iter().enumerate() {
            LevelFilter::BitsPerKey(FilterKind::Bloom, b)
                .validate()
                .map_err(|_| {
                    Error::Config(format!(
                        "bits per key {b}: it must be above 0 and at most 64"
                    ))
                })?;
            if self.bits_per_key[..i].contains(&b) {
                return bad(format!("bits per key {b} is listed twice"));
            }
        }
        for (i, k) in self.kinds.iter().enumerate() {
            if !FilterKind::ALL.contains(k) {
                return bad(format!("the {} kind is not measured", k.label()));
            }
            if self.kinds[..i].contains(k) {
                return bad(format!("the {} kind is listed twice", k.label()));
            }
        }
        Ok(())
    }

    /// Keys of the cached filter: [`Config::cached_keys`], at most
    /// [`Config::keys`].
    pub fn effective_cached_keys(&self) -> usize {
        self.cached_keys.min(self.keys)
    }
}

/// One kind at one setting: one row of `filters.csv`. Times are medians in
/// ns; every probe figure includes making its random hash
/// ([`Measurement::keygen_ns`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Measurement {
    /// The kind.
    pub kind: FilterKind,
    /// The setting: [`LevelFilter::BitsPerKey`]`(kind, bits_per_key)`.
    pub bits_per_key: f64,
    /// Probes per key `k` the policy chose (the Bloom kinds).
    pub hashes: Option<u32>,
    /// Result bits `r` the policy chose (Ribbon).
    pub result_bits: Option<u32>,
    /// Keys in the measured filter.
    pub keys: usize,
    /// Keys in the cached filter.
    pub cached_keys: usize,
    /// Absent keys probed.
    pub absent_probes: u64,
    /// Absent keys the filter passed.
    pub false_positives: u64,
    /// `false_positives / absent_probes`.
    pub measured_fpr: f64,
    /// The kind's theory for this filter.
    pub theory_fpr: f64,
    /// Bytes of the filter.
    pub filter_bytes: usize,
    /// `8 · filter_bytes / keys`.
    pub stored_bits_per_key: f64,
    /// One back-to-back probe of the cached filter.
    pub probe_ns_cached: f64,
    /// One probe of a random copy, one probe at a time (`lfence`).
    pub probe_ns_uncached: f64,
    /// One probe of a random copy, back to back.
    pub probe_ns_uncached_back_to_back: f64,
    /// One dependent random load over the same number of bytes, in the
    /// same rounds as the uncached probes.
    pub load_ns_dependent: f64,
    /// Median over rounds of `probe_ns_uncached / load_ns_dependent`.
    pub uncached_vs_load: f64,
    /// Making one random probe hash, in the same rounds as the cached
    /// probes.
    pub keygen_ns: f64,
    /// Building the filter, per key.
    pub build_ns_per_key: f64,
    /// Bytes of the copies probed uncached.
    pub uncached_bytes: usize,
    /// Copies of the filter in them.
    pub copies: usize,
    /// Timing rounds.
    pub rounds: usize,
}

impl Measurement {
    /// Whether the measured rate agrees with the theory: within 10%, or
    /// 0.002 where the theory is below 0.02 ([`crate::readamp::agrees`]).
    pub fn within_tolerance(&self) -> bool {
        crate::readamp::agrees(self.measured_fpr, self.theory_fpr)
    }

    /// The bits per key a perfect filter needs for the measured rate,
    /// `log2(1/p)` (`None` at a rate of 0).
    pub fn bound_bits_per_key(&self) -> Option<f64> {
        (self.measured_fpr > 0.0).then(|| (1.0 / self.measured_fpr).log2())
    }

    /// `k=7` or `r=9`: the parameter the policy chose.
    pub fn param(&self) -> String {
        match (self.hashes, self.result_bits) {
            (Some(k), _) => format!("k={k}"),
            (None, Some(r)) => format!("r={r}"),
            (None, None) => "-".into(),
        }
    }
}

/// Progress of [`run`]: one report per finished setting.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Settings finished, this one included.
    pub done: usize,
    /// Settings in the run.
    pub total: usize,
    /// The bits per key just finished.
    pub bits_per_key: f64,
    /// Time since the run started.
    pub elapsed: Duration,
}

/// Measures every kind at every setting of `cfg`, calling `progress` after
/// each setting. Returns the measurements setting by setting, each
/// setting's kinds in [`Config::kinds`] order.
///
/// # Errors
/// [`Error::Config`] for a bad configuration; [`Error::FalseNegative`] if
/// a filter rejects one of its keys.
pub fn run(cfg: &Config, progress: &mut dyn FnMut(&Progress)) -> Result<Vec<Measurement>> {
    cfg.validate()?;
    measure::sweep(cfg, progress)
}

/// What [`run_and_report`] produced.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Summary {
    /// Every measurement, setting by setting.
    pub rows: Vec<Measurement>,
    /// The measurements whose rate disagrees with the theory.
    pub misses: Vec<Measurement>,
    /// The CSV written.
    pub csv: PathBuf,
    /// The SVG plot written, if any.
    pub plot: Option<PathBuf>,
    /// Wall-clock time of the whole run.
    pub elapsed: Duration,
}

/// Runs `cfg` and reports: `filters.csv` and (if [`Config::plots`]) the
/// SVG plot to [`Config::out_dir`], then the table and the check to
/// `out`.
///
/// ```no_run
/// use siftdb_bench::filters::{self, Config};
///
/// let mut cfg = Config::default();
/// cfg.bits_per_key = vec![8.0, 10.0];
/// cfg.out_dir = "target/bench-filters-quick".into();
/// let summary = filters::run_and_report(&cfg, &mut std::io::stdout(), &mut |_| {})?;
/// if !summary.misses.is_empty() {
///     eprintln!("{} rates disagree with their theory", summary.misses.len());
/// }
/// # Ok::<(), filters::Error>(())
/// ```
///
/// # Errors
/// As [`run`], plus [`Error::Io`] / [`Error::Plot`] for the outputs.
/// Rates outside tolerance are not errors: see [`Summary::misses`].
pub fn run_and_report(
    cfg: &Config,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Summary> {
    let start = Instant::now();
    // Fail before the run, not after it.
    if cfg.out_dir.exists() && !cfg.out_dir.is_dir() {
        return Err(Error::Config(format!(
            "out_dir {} exists and is not a directory",
            cfg.out_dir.display()
        )));
    }
    let rows = run(cfg, progress)?;
    std::fs::create_dir_all(&cfg.out_dir)
        .map_err(|e| Error::io(format!("create {}", cfg.out_dir.display()), e))?;
    let csv = cfg.out_dir.join(CSV_FILE);
    write_csv(&rows, &csv)?;
    let plot = if cfg.plots {
        Some(plot::write_plot(&rows, &cfg.out_dir.join(PLOT_FILE))?)
    } else {
        None
    };
    let summary = Summary {
        misses: rows
            .iter()
            .filter(|m| !m.within_tolerance())
            .cloned()
            .collect(),
        rows,
        csv,
        plot,
        elapsed: start.elapsed(),
    };
    report::write_report(&summary, out).map_err(|e| Error::io("write the report", e))?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sweep small enough for a unit test.
    pub(crate) fn tiny() -> Config {
        Config {
            keys: 5_000,
            cached_keys: 1_000,
            absent_keys: 50_000,
            bits_per_key: vec![10.0, 14.0],
            uncached_bytes: 1 << 20,
            rounds: 3,
            build_rounds: 2,
            cached_batch: 1_000,
            uncached_batch: 1_000,
            ..Config::default()
        }
    }

    #[test]
    fn default_config_is_valid() {
        let c = Config::default();
        c.validate().unwrap();
        assert_eq!(c.kinds, FilterKind::ALL);
        assert_eq!(c.bits_per_key.len(), 7);
        assert_eq!(c.effective_cached_keys(), 100_000);
        assert_eq!(tiny().effective_cached_keys(), 1_000);
        let c = Config {
            keys: 500,
            ..tiny()
        };
        assert_eq!(c.effective_cached_keys(), 500);
    }

    #[test]
    fn bad_configs_name_the_field() {
        let e = |c: Config| c.validate().unwrap_err().to_string();
        assert_eq!(
            e(Config { keys: 0, ..tiny() }),
            "invalid configuration: keys is 0; it must be in 1..=50000000"
        );
        assert_eq!(
            e(Config {
                bits_per_key: vec![8.0, 0.0],
                ..tiny()
            }),
            "invalid configuration: bits per key 0: it must be above 0 and at most 64"
        );
        assert_eq!(
            e(Config {
                bits_per_key: vec![8.0, 8.0],
                ..tiny()
            }),
            "invalid configuration: bits per key 8 is listed twice"
        );
        assert_eq!(
            e(Config {
                kinds: vec![FilterKind::Ribbon, FilterKind::Ribbon],
                ..tiny()
            }),
            "invalid configuration: the ribbon kind is listed twice"
        );
        assert!(e(Config {
            rounds: 0,
            ..tiny()
        })
        .contains("rounds"));
        assert!(e(Config {
            kinds: vec![],
            ..tiny()
        })
        .contains("one kind"));
        assert!(e(Config {
            uncached_bytes: 0,
            ..tiny()
        })
        .contains("uncached_bytes is 0"));
    }
}
