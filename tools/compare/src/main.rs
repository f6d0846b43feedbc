//! `siftdb-compare`: runs db_bench-style workloads on siftdb and fjall 3
//! with identical settings, interleaving the engines, and prints the
//! median ops/s, the ratio and latency percentiles of each (README.md).

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;

use siftdb_compare::capped::{self, CapSettings};
use siftdb_compare::engine::{self, EngineConfig, EngineKind};
use siftdb_compare::report;
use siftdb_compare::workloads::{self, RunConfig, Workload};

/// Command-line arguments.
#[derive(Debug, Parser)]
#[command(
    name = "siftdb-compare",
    about = "Side-by-side benchmark of siftdb against fjall 3 (identical settings, interleaved samples)"
)]
struct Args {
    /// Keys per filled database and operations per workload (seekrandom
    /// does num/10 seeks).
    #[arg(long, default_value_t = 1_000_000)]
    num: u64,
    /// Sample rounds; each round runs every workload on each engine in
    /// turn. The median sample per engine is reported.
    #[arg(long, default_value_t = 3)]
    samples: usize,
    /// Comma-separated workloads: fillseq, fillrandom, overwrite,
    /// readrandom, readmissing, seekrandom, fillsync (= fillsync-1,
    /// fillsync-4, fillsync-8, fillsync-16) or one fillsync-T. Default: all.
    #[arg(long, value_delimiter = ',')]
    workloads: Option<Vec<String>>,
    /// Comma-separated engines: siftdb, fjall. Default: both.
    #[arg(long, value_delimiter = ',')]
    engines: Option<Vec<String>>,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// Directory to make the temporary databases under (default: a
    /// temporary directory in /tmp, removed at exit).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Synced puts per fillsync run, split evenly over its threads.
    #[arg(long, default_value_t = 2000)]
    sync_ops: u64,
    /// fjall's block cache capacity in MiB.
    #[arg(long, default_value_t = 1024)]
    fjall_cache_mib: u64,
    /// fjall's background worker threads (default: fjall's own,
    /// min(cores, 4)).
    #[arg(long)]
    fjall_worker_threads: Option<usize>,
    /// Seed of key orders and values.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Lookups per readrandom / readmissing run (seekrandom: a tenth as
    /// many seeks). Default: --num uncapped, 200000 capped.
    #[arg(long)]
    reads: Option<u64>,
    /// Read the filled database under a memory cap: each engine's sample
    /// runs in a child process in a memory cgroup (needs root), limited
    /// once the database is filled to --cap-fraction of its file bytes
    /// (or --cap-mib), and reopened with a block cache of
    /// --cache-fraction of the cap. Runs only the read workloads.
    #[arg(long)]
    capped: bool,
    /// The cap as a fraction of the filled database's file bytes.
    #[arg(long, default_value_t = 0.25)]
    cap_fraction: f64,
    /// The cap in MiB (instead of --cap-fraction).
    #[arg(long)]
    cap_mib: Option<u64>,
    /// Block cache of each engine under the cap, as a fraction of the cap.
    #[arg(long, default_value_t = 0.5)]
    cache_fraction: f64,
    /// siftdb reads point lookups with pread through a block cache
    /// (TableReads::Cached) of fjall's cache size, instead of through its
    /// memory maps.
    #[arg(long)]
    siftdb_block_cache: bool,
    /// siftdb's filters per level as a spec (kvctl's --filters grammar,
    /// e.g. blocked-bloom:10) instead of classic Bloom at 10 bits per key;
    /// an experiment beside the shared settings, said in the report
    #[arg(long, value_name = "SPEC", value_parser = parse_siftdb_filters)]
    siftdb_filters: Option<String>,
    /// Internal: run one capped sample as a child process (job as JSON on
    /// stdin, results as JSON on stdout).
    #[arg(long, hide = true)]
    child: bool,
}

/// Checks `--siftdb-filters` by siftdb's own grammar.
fn parse_siftdb_filters(spec: &str) -> Result<String, String> {
    siftdb::filter::spec::parse_filters(spec)?;
    Ok(spec.to_string())
}

fn parse_workloads(names: &Option<Vec<String>>) -> Result<Vec<Workload>, String> {
    let Some(names) = names else {
        return Ok(Workload::all());
    };
    let mut picked = Vec::new();
    for n in names.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        let ws = Workload::parse(n).ok_or_else(|| format!("unknown workload {n:?}"))?;
        picked.extend(ws);
    }
    // Report order, no duplicates.
    Ok(Workload::all()
        .into_iter()
        .filter(|w| picked.contains(w))
        .collect())
}

fn parse_engines(names: &Option<Vec<String>>) -> Result<Vec<EngineKind>, String> {
    let Some(names) = names else {
        return Ok(EngineKind::ALL.to_vec());
    };
    let mut picked = Vec::new();
    for n in names.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        picked.push(EngineKind::parse(n).ok_or_else(|| format!("unknown engine {n:?}"))?);
    }
    Ok(EngineKind::ALL
        .into_iter()
        .filter(|e| picked.contains(e))
        .collect())
}

fn run(args: Args) -> engine::Result<()> {
    let mut selected = parse_workloads(&args.workloads)?;
    if args.capped {
        if args.workloads.is_none() {
            selected = vec![Workload::ReadRandom, Workload::ReadMissing];
        }
        if let Some(w) = selected.iter().find(|w| !w.is_read()) {
            return Err(format!(
                "--capped runs only readrandom, readmissing and seekrandom, not {}",
                w.name()
            )
            .into());
        }
        if !(args.cap_fraction > 0.0 && args.cache_fraction >= 0.0 && args.cache_fraction < 1.0) {
            return Err("--cap-fraction must be above 0 and --cache-fraction in [0, 1)".into());
        }
    }
    let engines = parse_engines(&args.engines)?;
    if selected.is_empty() || engines.is_empty() {
        return Err("no workload or no engine selected".into());
    }
    if args.num == 0 || args.samples == 0 || args.sync_ops == 0 {
        return Err("--num, --samples and --sync-ops must be at least 1".into());
    }
    // Keep the default temporary directory alive until the end.
    let (_tmp, dir) = match &args.dir {
        Some(d) => (None, d.clone()),
        None => {
            let t = tempfile::Builder::new()
                .prefix("siftdb-compare-")
                .tempdir_in("/tmp")?;
            let p = t.path().to_path_buf();
            (Some(t), p)
        }
    };
    let cfg = RunConfig {
        num: args.num,
        sync_ops: args.sync_ops,
        seed: args.seed,
        dir: dir.clone(),
        engine: EngineConfig {
            fjall_cache_mib: args.fjall_cache_mib,
            fjall_worker_threads: args.fjall_worker_threads,
            cache_bytes: None,
            siftdb_block_cache: args.siftdb_block_cache,
            siftdb_filters: args.siftdb_filters.clone(),
        },
        reads: args
            .reads
            .unwrap_or(if args.capped { 200_000 } else { args.num }),
    };
    let cap = args.capped.then(|| CapSettings {
        cap_bytes: args.cap_mib.map(|m| m << 20),
        fraction: args.cap_fraction,
        cache_fraction: args.cache_fraction,
    });
    let settings = report::Settings {
        engines: engines.clone(),
        num: args.num,
        samples: args.samples,
        sync_ops: args.sync_ops,
        key_len: engine::KEY_LEN,
        value_len: engine::VALUE_LEN,
        bits_per_key: engine::BITS_PER_KEY,
        block_size: engine::BLOCK_SIZE,
        restart_interval: engine::RESTART_INTERVAL,
        memtable_bytes: engine::MEMTABLE_BYTES,
        fjall_cache_mib: args.fjall_cache_mib,
        fjall_worker_threads: args.fjall_worker_threads,
        seek_nexts: workloads::SEEK_NEXTS,
        seed: args.seed,
        dir: dir.display().to_string(),
        fjall_version: report::fjall_version(),
        siftdb_commit: report::siftdb_commit(),
        capped: args.capped,
        cap_fraction: args.cap_fraction,
        cap_mib: args.cap_mib,
        cache_fraction: args.cache_fraction,
        siftdb_block_cache: args.siftdb_block_cache,
        siftdb_filters: args.siftdb_filters.clone(),
        reads: cfg.reads,
    };
    let date = report::utc_now();
    let started = Instant::now();
    let groups = workloads::plan_groups(&selected);
    let mut samples = Vec::new();
    for round in 0..args.samples {
        for group in &groups {
            // Capped: every engine of the round gets the cap the first
            // one's database set (one cap for all, as the figures need).
            let mut round_cap = cap.clone();
            for &kind in &engines {
                let results = if let Some(cap) = &mut round_cap {
                    let results = capped::run_group(kind, group, &cfg, round, cap)?;
                    cap.cap_bytes = cap.cap_bytes.or(results.first().and_then(|r| r.cap_bytes));
                    results
                } else {
                    workloads::run_group(kind, group, &cfg, round)?
                };
                for r in results {
                    eprintln!(
                        "[{:>6.1}s] round {}/{} {:<12} {:<6} {:>12.0} ops/s  p50 {:.2} µs  p99 {:.2} µs  p99.9 {:.2} µs",
                        started.elapsed().as_secs_f64(),
                        round + 1,
                        args.samples,
                        r.workload,
                        kind.name(),
                        r.ops_per_sec,
                        r.p50_us,
                        r.p99_us,
                        r.p999_us
                    );
                    samples.push(r);
                }
            }
        }
    }
    let rep = report::Report {
        date,
        total_wall_secs: started.elapsed().as_secs_f64(),
        machine: report::Machine::detect(),
        notes: report::notes(&settings),
        settings,
        workloads: report::summarise(&selected, &samples),
        samples,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rep)?);
    } else {
        print!("{}", report::render_text(&rep));
    }
    Ok(())
}

fn main() {
    let args = Args::parse();
    let outcome = if args.child {
        capped::run_child()
    } else {
        run(args)
    };
    if let Err(e) = outcome {
        eprintln!("siftdb-compare: error: {e}");
        std::process::exit(1);
    }
}
