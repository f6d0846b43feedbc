//! Medians, ratios, the text table and the JSON document.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::engine::{
    EngineKind, BITS_PER_KEY, BLOCK_SIZE, KEY_LEN, MEMTABLE_BYTES, RESTART_INTERVAL, VALUE_LEN,
};
use crate::workloads::{SampleResult, Workload, SEEK_NEXTS};

const MIB: f64 = (1u64 << 20) as f64;

/// The machine a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// Cores available to this process.
    pub nproc: usize,
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// Kernel release (/proc/sys/kernel/osrelease).
    pub kernel: String,
    /// Total memory from /proc/meminfo, in MiB.
    pub mem_mib: u64,
}

impl Machine {
    /// Reads the machine's description from /proc.
    pub fn detect() -> Machine {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or_else(|| "unknown".to_string(), |(_, m)| m.trim().to_string());
        let mem_mib = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|l| l.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb / 1024);
        Machine {
            nproc: std::thread::available_parallelism().map_or(1, usize::from),
            cpu_model,
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            mem_mib,
        }
    }
}

/// Everything that was fixed for a run, as printed in the header.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// Engines compared, in interleaving order.
    pub engines: Vec<EngineKind>,
    /// Keys per filled database and operations per workload.
    pub num: u64,
    /// Sample rounds.
    pub samples: usize,
    /// Synced puts per `fillsync` run.
    pub sync_ops: u64,
    /// Key length in bytes.
    pub key_len: usize,
    /// Value length in bytes.
    pub value_len: usize,
    /// Bloom filter bits per key (every level, both engines).
    pub bits_per_key: u32,
    /// Data block size in bytes.
    pub block_size: usize,
    /// Data block restart interval.
    pub restart_interval: usize,
    /// Memtable size in bytes.
    pub memtable_bytes: usize,
    /// fjall block cache in MiB.
    pub fjall_cache_mib: u64,
    /// fjall worker threads (`None`: fjall's default, min(cores, 4)).
    pub fjall_worker_threads: Option<usize>,
    /// Entries read after each seek.
    pub seek_nexts: usize,
    /// Seed of key orders and values.
    pub seed: u64,
    /// Directory the databases were made under.
    pub dir: String,
    /// fjall's version, from this crate's Cargo.lock.
    pub fjall_version: String,
    /// siftdb's git commit, if the source tree is a git checkout.
    pub siftdb_commit: Option<String>,
    /// Whether the reads ran under a memory cap (`--capped`).
    pub capped: bool,
    /// The cap as a fraction of the database's file bytes.
    pub cap_fraction: f64,
    /// The cap in MiB, when given instead of a fraction.
    pub cap_mib: Option<u64>,
    /// The capped block cache as a fraction of the cap.
    pub cache_fraction: f64,
    /// siftdb read point lookups through a block cache of fjall's size.
    pub siftdb_block_cache: bool,
    /// siftdb's filter spec, when it replaces the shared Bloom setting.
    #[serde(default)]
    pub siftdb_filters: Option<String>,
    /// Lookups per read workload.
    pub reads: u64,
}

/// fjall's version as locked in tools/compare/Cargo.lock.
pub fn fjall_version() -> String {
    let lock = include_str!("../Cargo.lock");
    let mut lines = lock.lines();
    while let Some(l) = lines.next() {
        if l == "name = \"fjall\"" {
            if let Some(v) = lines.next().and_then(|v| v.strip_prefix("version = ")) {
                return v.trim_matches('"').to_string();
            }
        }
    }
    "unknown".into()
}

/// The short commit of the siftdb source tree this was built from.
pub fn siftdb_commit() -> Option<String> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = std::process::Command::new("git")
        .args(["-C", root, "rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    let dirty = std::process::Command::new("git")
        .args(["-C", root, "status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|o| !o.stdout.is_empty());
    out.status.success().then(|| {
        let c = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if dirty {
            format!("{c}-dirty")
        } else {
            c
        }
    })
}

/// Now, as `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// One engine's summary of one workload.
#[derive(Debug, Clone, Serialize)]
pub struct EngineSummary {
    /// ops/s of the median sample.
    pub median_ops_per_sec: f64,
    /// The median sample's p50 latency, in µs.
    pub p50_us: f64,
    /// The median sample's p99 latency, in µs.
    pub p99_us: f64,
    /// The median sample's p99.9 latency, in µs.
    pub p999_us: f64,
    /// The median sample's round.
    pub median_round: usize,
    /// ops/s of every sample, in round order.
    pub samples_ops_per_sec: Vec<f64>,
    /// The prepared database's tree in the median sample, where there was
    /// one.
    pub tree: Option<String>,
    /// The median sample's bytes read from storage per operation.
    pub disk_read_bytes_per_op: Option<f64>,
    /// The median sample's resident memory as the workload ended.
    pub rss_bytes: Option<u64>,
    /// Capped samples: the part of it that is the engine's, the resident
    /// memory less the process's before the engine opened and less the
    /// harness's live buffers.
    pub engine_rss_bytes: Option<u64>,
    /// Capped samples: the anonymous part of `engine_rss_bytes` (the
    /// engine's heap, without mapped file pages).
    pub engine_anon_rss_bytes: Option<u64>,
    /// The memory the engine reported holding then, if it reports one.
    pub accounted_bytes: Option<u64>,
}

/// A sample's resident bytes (total or anonymous) less the reading
/// process's before the engine opened and less the harness's live buffers:
/// the engine's part. `None` where no baseline was taken (uncapped runs).
fn engine_part(at_end: Option<u64>, baseline: Option<u64>, s: &SampleResult) -> Option<u64> {
    Some(
        at_end?
            .saturating_sub(baseline?)
            .saturating_sub(s.harness_bytes.unwrap_or(0)),
    )
}

/// Both engines' summaries of one workload.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadSummary {
    /// The workload's db_bench name.
    pub name: String,
    /// siftdb's median ops/s over fjall's (above 1: siftdb is faster), when
    /// both ran.
    pub ratio: Option<f64>,
    /// Summary per engine name.
    pub engines: BTreeMap<String, EngineSummary>,
}

/// The whole report: printed as a table, or serialised with `--json`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// When the run started.
    pub date: String,
    /// Wall time of the whole run, in seconds.
    pub total_wall_secs: f64,
    /// The machine.
    pub machine: Machine,
    /// The fixed settings.
    pub settings: Settings,
    /// What the numbers mean and how the engines were configured.
    pub notes: Vec<String>,
    /// Per workload, in report order.
    pub workloads: Vec<WorkloadSummary>,
    /// Every sample.
    pub samples: Vec<SampleResult>,
}

/// The sample with the median ops/s (the lower middle one for an even
/// count).
fn median(samples: &[&SampleResult]) -> Option<SampleResult> {
    let mut v: Vec<&SampleResult> = samples.to_vec();
    v.sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
    v.get(v.len().saturating_sub(1) / 2).map(|s| (*s).clone())
}

/// Summarises `samples` per workload (in `order`) and engine.
pub fn summarise(order: &[Workload], samples: &[SampleResult]) -> Vec<WorkloadSummary> {
    let mut out = Vec::new();
    for w in order {
        let name = w.name();
        let mut engines = BTreeMap::new();
        for kind in EngineKind::ALL {
            let mut mine: Vec<&SampleResult> = samples
                .iter()
                .filter(|s| s.workload == name && s.engine == kind)
                .collect();
            mine.sort_by_key(|s| s.round);
            if let Some(m) = median(&mine) {
                engines.insert(
                    kind.name().to_string(),
                    EngineSummary {
                        median_ops_per_sec: m.ops_per_sec,
                        p50_us: m.p50_us,
                        p99_us: m.p99_us,
                        p999_us: m.p999_us,
                        median_round: m.round,
                        samples_ops_per_sec: mine.iter().map(|s| s.ops_per_sec).collect(),
                        tree: m.tree.clone(),
                        disk_read_bytes_per_op: m.disk_read_bytes_per_op,
                        rss_bytes: m.rss_bytes,
                        engine_rss_bytes: engine_part(m.rss_bytes, m.baseline_rss_bytes, &m),
                        engine_anon_rss_bytes: engine_part(
                            m.anon_rss_bytes,
                            m.baseline_anon_rss_bytes,
                            &m,
                        ),
                        accounted_bytes: m.accounted_bytes,
                    },
                );
            }
        }
        if engines.is_empty() {
            continue;
        }
        let ratio = match (engines.get("siftdb"), engines.get("fjall")) {
            (Some(s), Some(f)) if f.median_ops_per_sec > 0.0 => {
                Some(s.median_ops_per_sec / f.median_ops_per_sec)
            }
            _ => None,
        };
        out.push(WorkloadSummary {
            name,
            ratio,
            engines,
        });
    }
    out
}

/// The notes printed under the header: how each number was taken and what
/// each engine was set to.
pub fn notes(settings: &Settings) -> Vec<String> {
    let mib = |b: usize| b >> 20;
    let mut notes = Vec::new();
    if let Some(spec) = &settings.siftdb_filters {
        notes.push(format!(
            "EXPERIMENT: siftdb's filters are `{spec}` (per level, level 0 first; \
             --siftdb-filters), not the {BITS_PER_KEY} bits/key classic Bloom filters fjall has"
        ));
    }
    notes.extend([
        format!(
            "keys: {KEY_LEN} ASCII decimal digits (key order = index order); present key i is number 2i, \
             absent key i is 2i+1 (between present keys, so readmissing reaches the Bloom filters); \
             values: {VALUE_LEN} bytes, the key number (8 bytes) then pseudo-random bytes (a window into a \
             256 KiB random pool, as db_bench slices its generator), distinct per key"
        ),
        format!(
            "both engines: {BITS_PER_KEY} bits/key Bloom filters on every level, {} KiB data blocks, \
             restart interval {RESTART_INTERVAL}, no compression (siftdb has none; fjall: data, index and \
             journal compression off), {} MiB memtable (siftdb write_buffer_size, fjall max_memtable_size), \
             leveled compaction with each engine's defaults (both: L0 trigger 4, 64 MiB tables, 256 MiB \
             level base, ratio 10; fjall keeps its first non-L0 level at the deepest level, L6)",
            BLOCK_SIZE >> 10,
            mib(MEMTABLE_BYTES)
        ),
        "durability (all but fillsync): siftdb Options::sync = false: each put copies its WAL record \
         into the page cache through the WAL's shared memory map before returning (no system call), \
         no fsync. fjall: its default (manual_journal_persist = false): each insert \
         flushes the journal's 8 KiB user-space buffer with write() before returning \
         (PersistMode::Buffer), no fsync. Same guarantee: an acknowledged write survives a process \
         crash, not a power loss."
            .to_string(),
        "fillsync-T: T threads share the puts; siftdb write_with(WriteOptions { sync: true }) (group \
         commit: one leader writes the queued batches and fdatasyncs the WAL once for them); fjall insert + Database::persist(PersistMode::SyncData) \
         (fdatasync of the journal, under the journal lock but after the insert released it, so one \
         thread's fdatasync can cover other threads' inserts; fjall journals are preallocated to 64 MiB, \
         siftdb's WAL grows with each append). ops/s over the whole run, from the threads' start to the \
         last one's end."
            .to_string(),
        if settings.capped {
            format!(
                "capped: each engine's sample runs in a child process in its own memory cgroup. The \
                 database is filled and settled without a limit, closed, limited to {} of its file \
                 bytes (the first engine's database in each round sets the limit for every engine of the \
                 round; the kernel drops the cgroup's page cache down to the limit) and reopened with a \
                 block cache of {:.0}% of the limit ({}); {} lookups per read workload, cold. disk read/op \
                 is read_bytes of /proc/self/io over the timed phase.",
                settings
                    .cap_mib
                    .map_or_else(|| format!("{:.0}%", settings.cap_fraction * 100.0), |m| format!("{m} MiB (not a fraction)")),
                settings.cache_fraction * 100.0,
                if settings.siftdb_block_cache {
                    "both engines: fjall's, and siftdb's TableReads::Cached"
                } else {
                    "fjall; siftdb reads tables through mmap, so its cache is the page cache inside the limit"
                },
                settings.reads
            )
        } else {
            // Data in tables: key, value and a few bytes of entry overhead.
            let data_mib = (settings.num * (KEY_LEN + VALUE_LEN + 16) as u64) >> 20;
            let fits = if settings.fjall_cache_mib >= data_mib + data_mib / 4 {
                "larger than all its data, so its reads are not cache-bound"
            } else {
                "NOT larger than its data, so its reads may miss the cache"
            };
            format!(
                "caches: fjall block cache {} MiB, {fits} (~{data_mib} MiB of tables at {} keys); \
                 siftdb {}. Nothing is dropped from the page cache between phases: reads are from \
                 memory for both.",
                settings.fjall_cache_mib,
                settings.num,
                if settings.siftdb_block_cache {
                    "point lookups through a block cache of the same size (TableReads::Cached)"
                } else {
                    "reads tables through mmap (the OS page cache)"
                }
            )
        },
        format!(
            "fills (fillseq, fillrandom, overwrite, fillsync) time the puts only: the clock stops after the \
             last put returns, before any final flush. readrandom/readmissing/seekrandom/overwrite run on one \
             database per engine per round, filled (untimed) by {} puts in random order, then flushed and \
             settled (siftdb: flush + wait_for_compactions; fjall: rotate_memtable_and_wait, then wait \
             until no flush or compaction runs or completes for 200 ms); overwrite runs last on it. \
             seekrandom: num/10 seeks, each reading the entry found and {SEEK_NEXTS} more. Every read is \
             checked: each present key must be found with its value, no absent key may be.",
            settings.num
        ),
        "latency: one clock read per operation (Instant), each latency the time since the previous \
         read; ops/s = operations / wall time of the phase. Median of the samples per engine; latency \
         percentiles are the median sample's. ratio = siftdb ops/s / fjall ops/s (above 1: siftdb \
         faster). Engines interleave in each round (siftdb, fjall), and sync(1) runs before every \
         timed phase so that neither pays for the other's write-back."
            .to_string(),
    ]);
    notes
}

fn fmt_ops(x: f64) -> String {
    if x >= 100_000.0 {
        format!("{:.0}k", x / 1000.0)
    } else if x >= 10_000.0 {
        format!("{:.1}k", x / 1000.0)
    } else {
        format!("{x:.0}")
    }
}

fn fmt_us(x: f64) -> String {
    if x >= 1000.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn fmt_lat(s: Option<&EngineSummary>) -> String {
    s.map_or_else(
        || "-".to_string(),
        |s| {
            format!(
                "{} / {} / {}",
                fmt_us(s.p50_us),
                fmt_us(s.p99_us),
                fmt_us(s.p999_us)
            )
        },
    )
}

/// The report as text: header, notes, table, prepared trees.
pub fn render_text(r: &Report) -> String {
    let s = &r.settings;
    let mut o = String::new();
    let _ = writeln!(o, "siftdb-compare: siftdb vs fjall {}", s.fjall_version);
    let _ = writeln!(o, "date:     {}", r.date);
    let _ = writeln!(
        o,
        "machine:  {} cores, {}, {} MiB RAM, Linux {}",
        r.machine.nproc, r.machine.cpu_model, r.machine.mem_mib, r.machine.kernel
    );
    let _ = writeln!(
        o,
        "siftdb:   commit {}",
        s.siftdb_commit.as_deref().unwrap_or("unknown")
    );
    let _ = writeln!(
        o,
        "run:      num {}, {} samples, sync-ops {}, seed {}, fjall workers {}, dir {}",
        s.num,
        s.samples,
        s.sync_ops,
        s.seed,
        s.fjall_worker_threads
            .map_or_else(|| "default (min(cores, 4))".to_string(), |n| n.to_string()),
        s.dir
    );
    for n in &r.notes {
        let _ = writeln!(o, "- {n}");
    }
    let _ = writeln!(o);
    let headers = [
        "workload",
        "siftdb ops/s",
        "fjall ops/s",
        "ratio",
        "siftdb p50/p99/p99.9 µs",
        "fjall p50/p99/p99.9 µs",
    ];
    let rows: Vec<[String; 6]> = r
        .workloads
        .iter()
        .map(|w| {
            let sd = w.engines.get("siftdb");
            let fj = w.engines.get("fjall");
            [
                w.name.clone(),
                sd.map_or_else(|| "-".into(), |e| fmt_ops(e.median_ops_per_sec)),
                fj.map_or_else(|| "-".into(), |e| fmt_ops(e.median_ops_per_sec)),
                w.ratio.map_or_else(|| "-".into(), |x| format!("{x:.2}")),
                fmt_lat(sd),
                fmt_lat(fj),
            ]
        })
        .collect();
    let mut widths = headers.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 6]| -> String {
        let mut l = String::from("|");
        for (i, c) in cells.iter().enumerate() {
            let pad = widths[i] - c.chars().count();
            if i == 0 {
                let _ = write!(l, " {c}{} |", " ".repeat(pad));
            } else {
                let _ = write!(l, " {}{c} |", " ".repeat(pad));
            }
        }
        l
    };
    let _ = writeln!(o, "{}", line(headers));
    let sep: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
    let _ = writeln!(o, "|-{}-|", sep.join("-|-"));
    for row in &rows {
        let _ = writeln!(o, "{}", line(row.each_ref().map(String::as_str)));
    }
    let _ = writeln!(o);
    for w in &r.workloads {
        let samples: Vec<String> = EngineKind::ALL
            .iter()
            .filter_map(|k| w.engines.get(k.name()).map(|s| (k.name(), s)))
            .map(|(e, s)| {
                let v: Vec<String> = s.samples_ops_per_sec.iter().map(|&x| fmt_ops(x)).collect();
                format!("{e} [{}]", v.join(", "))
            })
            .collect();
        let _ = writeln!(o, "samples ops/s {:<12} {}", w.name, samples.join("  "));
    }
    for w in &r.workloads {
        let disk: Vec<String> = EngineKind::ALL
            .iter()
            .filter_map(|k| w.engines.get(k.name()).map(|s| (k.name(), s)))
            .filter_map(|(e, s)| {
                let b = s.disk_read_bytes_per_op?;
                Some(format!(
                    "{e} {b:.0} B ({:.2} blocks)",
                    b / r.settings.block_size as f64
                ))
            })
            .collect();
        if !disk.is_empty() && r.settings.capped {
            let _ = writeln!(o, "disk read/op  {:<12} {}", w.name, disk.join("  "));
        }
    }
    for w in &r.workloads {
        let mem: Vec<String> = EngineKind::ALL
            .iter()
            .filter_map(|k| w.engines.get(k.name()).map(|s| (k.name(), s)))
            .filter_map(|(e, s)| {
                let rss = s.rss_bytes?;
                let engine = match (s.engine_rss_bytes, s.engine_anon_rss_bytes) {
                    (Some(b), Some(a)) => format!(
                        ", the engine's part {:.1} MiB ({:.1} MiB anonymous)",
                        b as f64 / MIB,
                        a as f64 / MIB
                    ),
                    _ => String::new(),
                };
                let accounted = match (s.accounted_bytes, s.engine_rss_bytes) {
                    (Some(a), Some(b)) if a > 0 => format!(
                        "; it accounts for {:.1} MiB: engine RSS {:.2}x that, anonymous {:.2}x",
                        a as f64 / MIB,
                        b as f64 / a as f64,
                        s.engine_anon_rss_bytes.unwrap_or(0) as f64 / a as f64
                    ),
                    (Some(a), None) if a > 0 => format!(
                        " (accounts for {:.1} MiB: RSS {:.2}x that)",
                        a as f64 / MIB,
                        rss as f64 / a as f64
                    ),
                    _ => String::new(),
                };
                Some(format!(
                    "{e} RSS {:.1} MiB{engine}{accounted}",
                    rss as f64 / MIB
                ))
            })
            .collect();
        if !mem.is_empty() {
            let _ = writeln!(o, "memory after  {:<12} {}", w.name, mem.join("  "));
        }
    }
    // The cap of each capped sample.
    for smp in &r.samples {
        if let (Some(cap), Some(cache), Some(db)) = (smp.cap_bytes, smp.cache_bytes, smp.db_bytes) {
            if smp.workload == r.workloads.first().map_or("", |w| w.name.as_str()) {
                let _ = writeln!(
                    o,
                    "capped, round {}, {}: database {} MiB, cap {} MiB, block cache {} MiB",
                    smp.round + 1,
                    smp.engine.name(),
                    db >> 20,
                    cap >> 20,
                    cache >> 20
                );
            }
        }
    }
    // The prepared database of each engine, as its reads found it.
    let mut trees: BTreeMap<(usize, usize), (String, f64)> = BTreeMap::new();
    for smp in &r.samples {
        if let (Some(t), Some(secs)) = (&smp.tree, smp.settle_secs) {
            let engine = EngineKind::ALL.iter().position(|&k| k == smp.engine);
            trees.insert((smp.round, engine.unwrap_or(0)), (t.clone(), secs));
        }
    }
    for ((round, engine), (tree, secs)) in &trees {
        let _ = writeln!(
            o,
            "read database, round {}, {}: {tree}; untimed flush+settle took {secs:.2} s",
            round + 1,
            EngineKind::ALL[*engine].name()
        );
    }
    let _ = writeln!(o, "total wall time: {:.1} s", r.total_wall_secs);
    o
}
