//! `kvctl bench readamp`: the read-amplification benchmark on your own
//! parameters (the same harness as `cargo bench --bench read_amplification`,
//! from the `siftdb-bench` crate).

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use siftdb_bench::readamp::{self, describe, Config};

use crate::error::{CliError, EXIT_IO};
use crate::format::{count, group};

/// `bench readamp`: a point disagrees with the model beyond tolerance.
const EXIT_MODEL_MISS: u8 = 1;

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

pub fn run(args: &BenchArgs) -> Result<(), CliError> {
    match &args.what {
        BenchCommand::Readamp(a) => readamp(a),
    }
}

fn readamp(a: &ReadampArgs) -> Result<(), CliError> {
    if a.out.exists() && !a.out.is_dir() {
        return Err(CliError::usage(format!(
            "--out {}: exists and is not a directory",
            a.out.display()
        )));
    }
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
    let pb = if a.quiet || !io::stdout().is_terminal() {
        ProgressBar::hidden()
    } else {
        let pb = ProgressBar::new(0);
        if let Ok(style) =
            ProgressStyle::with_template("[{elapsed_precise}] {wide_bar} {pos}/{len}  {msg}")
        {
            pb.set_style(style);
        }
        pb
    };
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
        Ok(s) if s.misses.is_empty() => {
            let _ = writeln!(stdout, "wrote {}", s.csv.display());
            Ok(())
        }
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
