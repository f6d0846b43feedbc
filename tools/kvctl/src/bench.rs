//! `kvctl bench readamp`: the read-amplification benchmark on your own
//! parameters (the same harness as `cargo bench --bench read_amplification`,
//! from the `siftdb-bench` crate). `kvctl bench filters`: the filter sweep
//! of `siftdb-bench` (each kind's false-positive rate against its theory,
//! bits per key stored, probe and build times).

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use siftdb::filter::FilterKind;
use siftdb_bench::readamp::{self, describe, Config};
use siftdb_bench::{filters, monkey};

use crate::error::{CliError, EXIT_CORRUPTION, EXIT_IO};
use crate::format::{count, group};

/// `bench readamp`: a point disagrees with the model beyond tolerance;
/// `bench filters`: a false-positive rate disagrees with its theory.
const EXIT_MODEL_MISS: u8 = 1;

/// Below this many MiB of copies the "uncached" probes may partly hit the
/// CPU caches (a server L3 holds 32 MiB or more).
const UNCACHED_MIB_WARNING: usize = 64;

#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  kvctl bench readamp --keys 50000 --files 1,8 --bits-per-key 0,10 --no-debian"
)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchCommand,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Data-block reads per lookup over L runs (and D levels), with and
    /// without Bloom filters, measured against the model
    Readamp(ReadampArgs),
    /// Each filter kind's false-positive rate against its theory, bits per
    /// key stored, probe time in and out of cache, and build time
    Filters(FiltersArgs),
    /// One filter memory budget spread over a leveled tree's runs (Monkey)
    /// against the same memory as uniform bits per key, on one tree
    Monkey(MonkeyArgs),
}

#[derive(Debug, Args)]
#[command(
    after_help = "Loads --keys random keys into one leveled tree of four levels below level 0, then for each budget reopens it with uniform bits per key and with the Monkey budget, rebuilds the filters in place (Db::rebuild_filters: every point probes the same tables) and looks up every absent key (as many as --keys) and --present-lookups present ones, counting data-block reads. Then --drift-writes random overwrites with compaction running show how far the live tree drifts from the optimum. Prints the table and the targets, writes monkey.csv and monkey-reads-vs-memory.svg to --out, and exits 1 if a target is missed. About 4 minutes with the defaults in a release build.\n\n\
Example:\n  kvctl bench monkey --keys 200000 --budgets 4,10,16"
)]
pub struct MonkeyArgs {
    /// Present keys in the tree (as many absent keys are looked up)
    #[arg(long, default_value_t = 1_000_000)]
    pub keys: usize,
    /// Present keys looked up per point
    #[arg(long, default_value_t = 200_000)]
    pub present_lookups: usize,
    /// Budgets to sweep, bits per key (each for both policies; must
    /// bracket the reference)
    #[arg(long, value_delimiter = ',', default_values_t = vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0])]
    pub budgets: Vec<f64>,
    /// The budget the targets are read at
    #[arg(long, default_value_t = 10.0)]
    pub reference: f64,
    /// Random overwrites of the drift phase (0 skips it)
    #[arg(long, default_value_t = 1_000_000)]
    pub drift_writes: usize,
    /// Seed of the keys and lookups
    #[arg(long, default_value_t = 0x5EED)]
    pub seed: u64,
    /// Skip the SVG plot
    #[arg(long)]
    pub no_plot: bool,
    /// Where monkey.csv and the plot go
    #[arg(long, default_value = "target/bench-monkey")]
    pub out: PathBuf,
    /// Where the database is built (a temporary directory inside it)
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// No progress lines
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Writes readamp.csv and SVG plots to --out and exits 1 if a point \
disagrees with the model beyond tolerance.\n\n\
Example:\n  kvctl bench readamp --keys 50000 --files 1,8,32 --bits-per-key 0,10 --no-debian --no-leveled"
)]
pub struct ReadampArgs {
    /// Present keys per point (as many absent keys are generated); below
    /// 122,500 a point may miss a check by sampling noise alone
    #[arg(long, default_value_t = 200_000)]
    pub keys: usize,
    /// Numbers of overlapping runs L to sweep
    #[arg(long, value_delimiter = ',', default_values_t = vec![1, 2, 4, 8, 16, 32])]
    pub files: Vec<usize>,
    /// Bloom bits per key to sweep (0 = no filters), each with the best k
    #[arg(long, value_delimiter = ',', default_values_t = vec![0, 2, 4, 6, 8, 10, 12, 14, 16])]
    pub bits_per_key: Vec<u32>,
    /// Forced hash counts k for the k sweep at 10 bits per key over 8 runs
    #[arg(long, value_delimiter = ',', default_values_t = (1..=12).collect::<Vec<u32>>())]
    pub hashes: Vec<u32>,
    /// Fraction of lookups that miss, for the mixed figure
    #[arg(long, default_value_t = 0.4)]
    pub absent_fraction: f64,
    /// Seed of every random choice; the same seed gives the same CSV
    #[arg(long, default_value_t = 0x5EED)]
    pub seed: u64,
    /// Skip the layout on the real Debian keys
    #[arg(long)]
    pub no_debian: bool,
    /// Skip the leveled layout (D levels after real compaction)
    #[arg(long)]
    pub no_leveled: bool,
    /// Skip the SVG plots
    #[arg(long)]
    pub no_plots: bool,
    /// Where readamp.csv and the plots go
    #[arg(long, default_value = "target/readamp")]
    pub out: PathBuf,
    /// No progress bar
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
#[command(
    after_help = "For each kind at each setting: the false-positive rate over --absent \
absent keys against the kind's own theory, the bits per key stored (every byte), the probe \
time with a --cached-keys filter (inside L2) and with random copies of the --keys filter \
filling --uncached-mib, next to one dependent random load over as many bytes, and the build \
time per key. Timings are medians of --rounds interleaved rounds. Writes filters.csv and \
filters-fpr-vs-bits-per-key.svg to --out, prints the table, and exits 1 if a rate \
disagrees with its theory beyond 10% (or 0.002 where the theory is below 0.02). About a \
minute with the defaults in a release build, using about 1.3 GB of memory.\n\n\
Example:\n  kvctl bench filters --kinds bloom,ribbon --bits-per-key 8,10,12"
)]
pub struct FiltersArgs {
    /// Keys per filter: built, checked for false positives, and copied for
    /// the uncached probes
    #[arg(long, default_value_t = 1_000_000)]
    pub keys: usize,
    /// Keys of the cache-resident filter of the cached probes (at most
    /// --keys)
    #[arg(long, default_value_t = 100_000)]
    pub cached_keys: usize,
    /// Absent keys probed for the false-positive rate
    #[arg(long, default_value_t = 10_000_000)]
    pub absent: usize,
    /// Bits per key to sweep (for ribbon a budget: r = floor(bits / 1.05)
    /// result bits)
    #[arg(long, value_delimiter = ',', default_values_t = vec![4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0])]
    pub bits_per_key: Vec<f64>,
    /// Filter kinds to sweep: bloom, blocked-bloom, ribbon
    #[arg(long, value_delimiter = ',', value_parser = parse_kind,
          default_value = "bloom,blocked-bloom,ribbon")]
    pub kinds: Vec<FilterKind>,
    /// MiB of filter copies per kind, and of the load array, for the
    /// uncached probes
    #[arg(long, default_value_t = 256)]
    pub uncached_mib: usize,
    /// Interleaved timing rounds per setting (timings are their medians)
    #[arg(long, default_value_t = 51)]
    pub rounds: usize,
    /// Seed of the keys and probes; the same seed gives the same rates
    #[arg(long, default_value_t = 0x5EED)]
    pub seed: u64,
    /// Skip the SVG plot
    #[arg(long)]
    pub no_plot: bool,
    /// Where filters.csv and the plot go
    #[arg(long, default_value = "target/bench-filters")]
    pub out: PathBuf,
    /// No progress bar
    #[arg(long, short)]
    pub quiet: bool,
}

/// A filter kind by its label, for `--kinds`.
fn parse_kind(s: &str) -> Result<FilterKind, String> {
    FilterKind::ALL
        .into_iter()
        .find(|k| k.label() == s)
        .ok_or_else(|| format!("unknown kind {s:?}; expected bloom, blocked-bloom or ribbon"))
}

pub fn run(args: &BenchArgs) -> Result<(), CliError> {
    match &args.what {
        BenchCommand::Readamp(a) => readamp(a),
        BenchCommand::Filters(a) => filter_sweep(a),
        BenchCommand::Monkey(a) => monkey_sweep(a),
    }
}

fn monkey_sweep(a: &MonkeyArgs) -> Result<(), CliError> {
    check_out(&a.out)?;
    let mut cfg = monkey::Config::default();
    cfg.keys = a.keys;
    cfg.present_lookups = a.present_lookups;
    cfg.budgets = a.budgets.clone();
    cfg.budgets.sort_by(f64::total_cmp);
    cfg.reference_bits = a.reference;
    cfg.drift_writes = a.drift_writes;
    cfg.seed = a.seed;
    if let Some(w) = &a.work_dir {
        cfg.work_dir = w.clone();
    }
    // Refuse a bad configuration before the minutes of loading.
    cfg.validate().map_err(|e| {
        CliError::usage(format!("{e}")).with_hint("see --budgets, --reference and --keys")
    })?;
    if a.keys < monkey::FEW_KEYS {
        eprintln!(
            "kvctl: warning: --keys {} is below {}: its level-0 runs hold under 1,000 keys, \
             whose filters pass more than their theory at high bits per key, so a prediction \
             or a target may miss by that and by sampling noise alone",
            group(a.keys as u64),
            group(monkey::FEW_KEYS as u64)
        );
    }
    if cfg!(debug_assertions) {
        eprintln!(
            "kvctl: warning: this kvctl is a debug build and will be slow; use `cargo run \
             --release -p kvctl -- bench monkey`"
        );
    }
    let quiet = a.quiet;
    let summary = monkey::run(&cfg, &mut |line| {
        if !quiet {
            eprintln!("{line}");
        }
    })
    .map_err(|e| match e {
        monkey::Error::Config(_) => CliError::usage(e.to_string()),
        e => CliError::new(EXIT_IO, e.to_string()),
    })?;
    std::fs::create_dir_all(&a.out)
        .map_err(|e| CliError::new(EXIT_IO, format!("create {}: {e}", a.out.display())))?;
    monkey::write_csv(&summary, &a.out).map_err(|e| CliError::new(EXIT_IO, e.to_string()))?;
    if !a.no_plot {
        monkey::write_plot(&summary, &a.out).map_err(|e| CliError::new(EXIT_IO, e.to_string()))?;
    }
    let mut out = Vec::new();
    let _ = monkey::write_table(&summary, a.reference, &mut out);
    let mut stdout = io::stdout().lock();
    let _ = stdout.write_all(&out);
    let _ = writeln!(stdout, "wrote {}", a.out.join(monkey::CSV_FILE).display());
    match summary.targets(a.reference) {
        Some(t) if t.all_met() => Ok(()),
        Some(_) => Err(CliError::new(
            EXIT_MODEL_MISS,
            "a target was missed (see the lines above)",
        )),
        None => Err(CliError::usage(
            "the budgets do not bracket the reference's reads: widen --budgets",
        )),
    }
}

/// A usage error if `out` names something that is not a directory.
fn check_out(out: &std::path::Path) -> Result<(), CliError> {
    if out.exists() && !out.is_dir() {
        return Err(CliError::usage(format!(
            "--out {}: exists and is not a directory",
            out.display()
        )));
    }
    Ok(())
}

/// A progress bar (its length set as the run reports), hidden with `quiet` or off a terminal.
fn progress_bar(quiet: bool) -> ProgressBar {
    if quiet || !io::stdout().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(0);
    if let Ok(style) =
        ProgressStyle::with_template("[{elapsed_precise}] {wide_bar} {pos}/{len}  {msg}")
    {
        pb.set_style(style);
    }
    pb
}

fn filter_sweep(a: &FiltersArgs) -> Result<(), CliError> {
    check_out(&a.out)?;
    let uncached_bytes = a
        .uncached_mib
        .checked_mul(1 << 20)
        .filter(|&b| b > 0 && b <= filters::MAX_UNCACHED_BYTES)
        .ok_or_else(|| {
            CliError::usage(format!(
                "--uncached-mib {}: it must be in 1..={}",
                a.uncached_mib,
                filters::MAX_UNCACHED_BYTES >> 20
            ))
        })?;
    let mut cfg = filters::Config::default();
    cfg.keys = a.keys;
    cfg.cached_keys = a.cached_keys;
    cfg.absent_keys = a.absent;
    cfg.bits_per_key = a.bits_per_key.clone();
    cfg.kinds = a.kinds.clone();
    cfg.uncached_bytes = uncached_bytes;
    cfg.rounds = a.rounds;
    cfg.seed = a.seed;
    cfg.plots = !a.no_plot;
    cfg.out_dir = a.out.clone();
    // Refuse a bad configuration before the warnings.
    if let Err(e) = cfg.validate() {
        return Err(CliError::usage(e.to_string()));
    }
    if cfg!(debug_assertions) {
        eprintln!(
            "kvctl: warning: this kvctl is a debug build, whose timings mean little; \
             use `cargo run --release -p kvctl -- bench filters`"
        );
    }
    if a.uncached_mib < UNCACHED_MIB_WARNING {
        eprintln!(
            "kvctl: warning: --uncached-mib {} is below {UNCACHED_MIB_WARNING}: the copies may \
             partly fit the CPU caches, so the uncached probes may look faster than they are",
            a.uncached_mib
        );
    }
    let enough = readamp::keys_for_checks(5.0);
    let few_absent = (a.absent < enough).then(|| {
        format!(
            "--absent {} is below {}, the absent keys a 5-sigma check of a false-positive \
             rate needs: a rate may disagree with its theory by sampling noise alone",
            group(a.absent as u64),
            group(enough as u64)
        )
    });
    if let Some(w) = &few_absent {
        eprintln!("kvctl: warning: {w}");
    }
    let pb = progress_bar(a.quiet);
    let mut out = Vec::new();
    let result = filters::run_and_report(&cfg, &mut out, &mut |p| {
        pb.set_length(p.total as u64);
        pb.set_position(p.done as u64);
        pb.set_message(format!("{} bits/key done", p.bits_per_key));
    });
    pb.finish_and_clear();
    let mut stdout = io::stdout().lock();
    let _ = stdout.write_all(&out);
    match result {
        Ok(s) if s.misses.is_empty() => Ok(()),
        Ok(s) => {
            let e = CliError::new(
                EXIT_MODEL_MISS,
                format!(
                    "{} outside tolerance (see the table above)",
                    count(s.misses.len() as u64, "false-positive rate")
                ),
            );
            Err(match few_absent {
                Some(_) => e.with_hint(format!(
                    "rerun with --absent {} or more before reading the misses as a fault",
                    group(enough as u64)
                )),
                None => e,
            })
        }
        Err(e @ filters::Error::Config(_)) => Err(CliError::usage(e.to_string())),
        // A filter that rejects one of its own keys answers wrongly.
        Err(e @ filters::Error::FalseNegative { .. }) => {
            Err(CliError::new(EXIT_CORRUPTION, e.to_string()))
        }
        Err(e) => Err(CliError::new(EXIT_IO, e.to_string())),
    }
}

fn readamp(a: &ReadampArgs) -> Result<(), CliError> {
    check_out(&a.out)?;
    let mut cfg = Config::default();
    cfg.keys = a.keys;
    cfg.files = a.files.clone();
    cfg.bits_per_key = a.bits_per_key.clone();
    cfg.hashes_sweep = a.hashes.clone();
    cfg.absent_fraction = a.absent_fraction;
    cfg.seed = a.seed;
    cfg.out_dir = a.out.clone();
    cfg.plots = !a.no_plots;
    if a.no_debian {
        cfg.debian_files.clear();
    }
    if a.no_leveled {
        cfg.leveled_levels.clear();
    }
    // Refuse a bad configuration before the warnings (a new-user trial
    // got a warning about `--keys 0` and then the error).
    if a.keys == 0 {
        return Err(CliError::usage(
            "--keys 0: the benchmark needs at least one key per file",
        ));
    }
    if let Err(e) = cfg.validate() {
        return Err(CliError::usage(e.to_string()));
    }
    // Below this many keys a correct engine may miss checks by noise.
    let enough = readamp::keys_for_checks(cfg.sigmas);
    let few_keys = (a.keys < enough).then(|| {
        format!(
            "--keys {} is below {}, the keys a {}-sigma check of a false-positive rate \
             needs: lookups reuse the same keys, so a point may disagree with the model by \
             sampling noise alone",
            group(a.keys as u64),
            group(enough as u64),
            cfg.sigmas
        )
    });
    if let Some(w) = &few_keys {
        eprintln!("kvctl: warning: {w}");
    }
    let pb = progress_bar(a.quiet);
    let mut out = Vec::new();
    let result = readamp::run_and_report_with(&cfg, &mut out, &mut |p| {
        pb.set_length(p.total as u64);
        pb.set_position(p.done as u64);
        pb.set_message(describe(p.point));
    });
    pb.finish_and_clear();
    let mut stdout = io::stdout().lock();
    let _ = stdout.write_all(&out);
    match result {
        // The report already names the CSV and the plots.
        Ok(s) if s.misses.is_empty() => Ok(()),
        // Exit 1, as `cargo bench --bench read_amplification` does (for
        // `bench`, 1 means "disagrees with the model", not "not found").
        Ok(s) => {
            let e = CliError::new(
                EXIT_MODEL_MISS,
                format!(
                    "{} outside tolerance (see the tables above)",
                    count(s.misses.len() as u64, "check")
                ),
            );
            Err(match few_keys {
                Some(_) => e.with_hint(format!(
                    "rerun with --keys {} or more before reading the misses as a fault",
                    group(enough as u64)
                )),
                None => e,
            })
        }
        Err(e @ readamp::Error::Config(_)) => Err(CliError::usage(e.to_string())),
        // The parameters could not build the intended files (too few keys
        // for the levels asked for): a usage error, not an I/O one.
        Err(e @ readamp::Error::Layout(_)) => Err(CliError::usage(e.to_string()).with_hint(
            "the layout needs more keys: raise --keys (default 200,000) or skip it \
             (--no-leveled, --no-debian)",
        )),
        Err(e) => Err(CliError::new(EXIT_IO, e.to_string())),
    }
}
