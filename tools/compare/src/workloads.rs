//! The db_bench-style workloads, and the plain functions that run one
//! sample of them on one engine.
//!
//! Keys are 16 ASCII decimal digits (`%016d`, db_bench's layout), so key
//! order is numeric order. Key number `2 i` is the `i`-th present key and
//! `2 i + 1` an absent one: absent keys fall between present ones, inside
//! every table's key range, so `readmissing` exercises the Bloom filters
//! rather than a range check. Values are 100 pseudo-random bytes, distinct
//! per key, so a wrong value is caught.

use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::cgroup;
use crate::engine::{self, EngineConfig, EngineKind, OpenMode, Result, KEY_LEN, VALUE_LEN};

/// Entries read after each seek in `seekrandom`.
pub const SEEK_NEXTS: usize = 10;

/// Writer thread counts of the `fillsync` workloads.
pub const SYNC_THREADS: [usize; 4] = [1, 4, 8, 16];

/// One workload, named as in db_bench.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Workload {
    /// `num` puts in ascending key order into a fresh database.
    FillSeq,
    /// `num` puts in a random permutation of the keys into a fresh database.
    FillRandom,
    /// `num` puts of uniformly random present keys (with replacement) into
    /// a database holding `num` keys.
    Overwrite,
    /// `num` gets of uniformly random present keys; every one must be found
    /// with its value.
    ReadRandom,
    /// `num` gets of uniformly random absent keys; none may be found.
    ReadMissing,
    /// `num / 10` seeks to a random present key, each followed by
    /// [`SEEK_NEXTS`] `next`s.
    SeekRandom,
    /// `sync_ops` puts, each `fdatasync`ed, split over this many threads,
    /// into a fresh database.
    FillSync(usize),
}

impl Workload {
    /// Every workload, in the order reports list them.
    pub fn all() -> Vec<Workload> {
        let mut v = vec![
            Workload::FillSeq,
            Workload::FillRandom,
            Workload::Overwrite,
            Workload::ReadRandom,
            Workload::ReadMissing,
            Workload::SeekRandom,
        ];
        v.extend(SYNC_THREADS.iter().map(|&t| Workload::FillSync(t)));
        v
    }

    /// The db_bench name (`fillsync-4` for four threads).
    pub fn name(self) -> String {
        match self {
            Workload::FillSeq => "fillseq".into(),
            Workload::FillRandom => "fillrandom".into(),
            Workload::Overwrite => "overwrite".into(),
            Workload::ReadRandom => "readrandom".into(),
            Workload::ReadMissing => "readmissing".into(),
            Workload::SeekRandom => "seekrandom".into(),
            Workload::FillSync(t) => format!("fillsync-{t}"),
        }
    }

    /// Parses one name of a `--workloads` list; `fillsync` stands for all
    /// three thread counts.
    pub fn parse(s: &str) -> Option<Vec<Workload>> {
        if s == "fillsync" {
            return Some(
                SYNC_THREADS
                    .iter()
                    .map(|&t| Workload::FillSync(t))
                    .collect(),
            );
        }
        Workload::all()
            .into_iter()
            .find(|w| w.name() == s)
            .map(|w| vec![w])
    }

    /// Runs on a database prepared by a random-order fill, flush and settle
    /// (the read workloads and `overwrite`), rather than a fresh one.
    pub fn needs_filled_db(self) -> bool {
        matches!(
            self,
            Workload::Overwrite
                | Workload::ReadRandom
                | Workload::ReadMissing
                | Workload::SeekRandom
        )
    }

    /// True for the lookups: `readrandom`, `readmissing`, `seekrandom`.
    pub fn is_read(self) -> bool {
        matches!(
            self,
            Workload::ReadRandom | Workload::ReadMissing | Workload::SeekRandom
        )
    }

    /// A number mixed into the seed so each workload draws its own keys.
    fn seed_tag(self) -> u64 {
        match self {
            Workload::FillSeq => 1,
            Workload::FillRandom => 2,
            Workload::Overwrite => 3,
            Workload::ReadRandom => 4,
            Workload::ReadMissing => 5,
            Workload::SeekRandom => 6,
            Workload::FillSync(t) => 100 + t as u64,
        }
    }
}

/// What one run of the tool asks of every sample.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunConfig {
    /// Keys in a filled database, and operations of every workload but
    /// `seekrandom` (`num / 10`) and `fillsync` (`sync_ops`).
    pub num: u64,
    /// Synced puts per `fillsync` run, split evenly over its threads.
    pub sync_ops: u64,
    /// Seed of every key order and of the values; the same in a round for
    /// both engines, so they see the same operations.
    pub seed: u64,
    /// Directory under which each sample makes (and removes) a temporary
    /// directory for its database.
    pub dir: PathBuf,
    /// Engine settings that the command line can change.
    pub engine: EngineConfig,
    /// Lookups of `readrandom` and `readmissing` (`seekrandom` seeks
    /// `reads / 10`); `num` unless the command line says otherwise.
    pub reads: u64,
}

/// The outcome of one workload on one engine in one round.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SampleResult {
    /// The engine it ran on.
    pub engine: EngineKind,
    /// The workload's name ([`Workload::name`]).
    pub workload: String,
    /// The sample round (0-based).
    pub round: usize,
    /// Operations timed.
    pub ops: u64,
    /// Wall time of the whole phase, in seconds.
    pub wall_secs: f64,
    /// `ops / wall_secs`.
    pub ops_per_sec: f64,
    /// Median per-operation latency, in microseconds.
    pub p50_us: f64,
    /// 99th percentile latency, in microseconds.
    pub p99_us: f64,
    /// 99.9th percentile latency, in microseconds.
    pub p999_us: f64,
    /// Largest latency, in microseconds.
    pub max_us: f64,
    /// For reads: keys found (checked: all for `readrandom` and
    /// `seekrandom`, none for `readmissing`).
    pub found: Option<u64>,
    /// For `seekrandom`: entries read, seeks included.
    pub entries_read: Option<u64>,
    /// For workloads on a prepared database: its tree when the workload
    /// started, and how long the untimed flush and settle took.
    pub tree: Option<String>,
    /// Seconds the untimed flush-and-settle of the prepared database took.
    pub settle_secs: Option<f64>,
    /// Capped samples: the memory limit, in bytes.
    pub cap_bytes: Option<u64>,
    /// Capped samples: the block cache given to the engine, in bytes.
    pub cache_bytes: Option<u64>,
    /// Capped samples: the filled database's file bytes.
    pub db_bytes: Option<u64>,
    /// Bytes read from storage per operation during the timed phase
    /// (`read_bytes` of `/proc/self/io`).
    pub disk_read_bytes_per_op: Option<f64>,
    /// The process's resident memory as the timed phase ended (`VmRSS`), in
    /// bytes, with the harness's buffers still alive.
    pub rss_bytes: Option<u64>,
    /// The anonymous part of `rss_bytes` (`RssAnon`: heap, not mapped file
    /// pages), in bytes.
    pub anon_rss_bytes: Option<u64>,
    /// Bytes of the harness's own buffers alive at that moment (the
    /// operations' keys and the latency array), all touched, so resident.
    pub harness_bytes: Option<u64>,
    /// Capped samples: the reading process's resident memory just before it
    /// opened the engine (the executable, its libraries, the allocator).
    pub baseline_rss_bytes: Option<u64>,
    /// Capped samples: the anonymous part of `baseline_rss_bytes`.
    pub baseline_anon_rss_bytes: Option<u64>,
    /// The memory the engine said it held after the timed phase, where it
    /// reports one.
    pub accounted_bytes: Option<u64>,
}

/// Deterministic 64-bit generator (SplitMix64, Steele et al. 2014).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; bias below 2^-32 for
    /// the sizes used here).
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
}

fn rng(seed: u64, round: usize, tag: u64) -> SplitMix64 {
    let mut r = SplitMix64(seed ^ (round as u64).wrapping_mul(0x1000_0001) ^ (tag << 40));
    r.next();
    r
}

/// The key with number `n`: 16 ASCII decimal digits.
pub fn key(n: u64) -> [u8; KEY_LEN] {
    let mut k = [b'0'; KEY_LEN];
    let mut n = n;
    for b in k.iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
    assert_eq!(n, 0, "key number too large for {KEY_LEN} digits");
    k
}

/// The `i`-th present key.
pub fn present_key(i: u64) -> [u8; KEY_LEN] {
    key(2 * i)
}

/// The `i`-th absent key: between present keys `i` and `i + 1`.
pub fn absent_key(i: u64) -> [u8; KEY_LEN] {
    key(2 * i + 1)
}

/// The value of every key: the key number (8 bytes, little-endian), then
/// a window into one pseudo-random pool at an offset drawn from the
/// number, as db_bench slices its `RandomGenerator`. Deterministic,
/// distinct per key, and a few hundred KiB however many keys there are,
/// so that the generator does not weigh on the memory of a capped run
/// (`--capped`).
pub struct Values(Vec<u8>);

/// Bytes in the value pool: windows start at one of `POOL_LEN - VALUE_LEN`
/// offsets.
const POOL_LEN: usize = 1 << 18;

impl Values {
    /// Generates the pool from `seed` (the same for every round: the
    /// values are data, not an operation order).
    pub fn new(seed: u64) -> Values {
        let mut r = SplitMix64(seed ^ 0x5eed_0000_0000_0000);
        let mut v = Vec::with_capacity(POOL_LEN + 8);
        while v.len() < POOL_LEN {
            v.extend_from_slice(&r.next().to_le_bytes());
        }
        v.truncate(POOL_LEN);
        Values(v)
    }

    /// Value `i`.
    pub fn get(&self, i: u64) -> [u8; VALUE_LEN] {
        let mut v = [0u8; VALUE_LEN];
        v[..8].copy_from_slice(&i.to_le_bytes());
        let rest = VALUE_LEN - 8;
        let at = SplitMix64(i).below((POOL_LEN - rest) as u64 + 1) as usize;
        v[8..].copy_from_slice(&self.0[at..at + rest]);
        v
    }
}

fn permutation(num: u64, r: &mut SplitMix64) -> Vec<u64> {
    let mut p: Vec<u64> = (0..num).collect();
    for i in (1..p.len()).rev() {
        let j = r.below(i as u64 + 1) as usize;
        p.swap(i, j);
    }
    p
}

fn uniform(count: u64, below: u64, r: &mut SplitMix64) -> Vec<u64> {
    (0..count).map(|_| r.below(below)).collect()
}

/// Per-operation latencies of one phase, in nanoseconds, and its wall time;
/// the process's resident memory as the phase ended, with the harness's own
/// buffers (the operations and the latencies) still alive, and their bytes.
struct Timing {
    lat_ns: Vec<u64>,
    wall: Duration,
    rss_at_end: Option<u64>,
    anon_at_end: Option<u64>,
    harness_bytes: u64,
}

fn percentile_us(sorted_ns: &[u64], q: f64) -> f64 {
    if sorted_ns.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted_ns.len() as f64).ceil() as usize).clamp(1, sorted_ns.len());
    sorted_ns[rank - 1] as f64 / 1000.0
}

fn result(kind: EngineKind, w: Workload, round: usize, mut t: Timing) -> SampleResult {
    t.lat_ns.sort_unstable();
    let ops = t.lat_ns.len() as u64;
    let secs = t.wall.as_secs_f64();
    SampleResult {
        engine: kind,
        workload: w.name(),
        round,
        ops,
        wall_secs: secs,
        ops_per_sec: if secs > 0.0 { ops as f64 / secs } else { 0.0 },
        p50_us: percentile_us(&t.lat_ns, 0.50),
        p99_us: percentile_us(&t.lat_ns, 0.99),
        p999_us: percentile_us(&t.lat_ns, 0.999),
        max_us: t.lat_ns.last().map_or(0.0, |&n| n as f64 / 1000.0),
        found: None,
        entries_read: None,
        tree: None,
        settle_secs: None,
        cap_bytes: None,
        cache_bytes: None,
        db_bytes: None,
        disk_read_bytes_per_op: None,
        rss_bytes: t.rss_at_end,
        anon_rss_bytes: t.anon_at_end,
        harness_bytes: Some(t.harness_bytes),
        baseline_rss_bytes: None,
        baseline_anon_rss_bytes: None,
        accounted_bytes: None,
    }
}

/// Times `op` over `items`: one clock read per operation, each latency the
/// time since the previous read (so it includes the loop's own few
/// nanoseconds), and the wall time from before the first operation to
/// after the last.
fn timed<T>(items: &[T], mut op: impl FnMut(&T) -> Result<()>) -> Result<Timing> {
    let mut lat_ns = Vec::with_capacity(items.len());
    let start = Instant::now();
    let mut prev = start;
    for item in items {
        op(item)?;
        let now = Instant::now();
        lat_ns.push((now - prev).as_nanos() as u64);
        prev = now;
    }
    let rss_at_end = cgroup::resident_bytes().ok();
    let anon_at_end = cgroup::resident_anon_bytes().ok();
    let harness_bytes = (std::mem::size_of_val(items) + lat_ns.capacity() * 8) as u64;
    Ok(Timing {
        lat_ns,
        wall: prev - start,
        rss_at_end,
        anon_at_end,
        harness_bytes,
    })
}

/// Flushes every dirty page of the machine (`sync(1)`), so that no sample
/// pays for the write-back of the one before it.
fn sync_filesystems() {
    let _ = std::process::Command::new("sync").status();
}

/// A temporary directory under `cfg.dir` with a path for a database in it.
///
/// # Errors
/// The directory could not be made.
pub fn sample_dir(cfg: &RunConfig) -> Result<(tempfile::TempDir, PathBuf)> {
    std::fs::create_dir_all(&cfg.dir)?;
    let tmp = tempfile::Builder::new()
        .prefix("siftdb-compare-")
        .tempdir_in(&cfg.dir)?;
    let db = tmp.path().join("db");
    Ok((tmp, db))
}

/// Runs one sample of `workload` on engine `kind` in round `round`: makes
/// its database (fresh, or filled and settled for the read workloads and
/// `overwrite`), times the workload, checks what it read, removes the
/// database. A plain function of its arguments, so that it can equally run
/// in a child process.
pub fn run_one(
    kind: EngineKind,
    workload: Workload,
    cfg: &RunConfig,
    round: usize,
) -> Result<SampleResult> {
    let mut v = run_group(kind, &[workload], cfg, round)?;
    Ok(v.remove(0))
}

/// Runs a sample of each of `workloads` on engine `kind`, in the given
/// order, and returns their results in that order. Workloads that need a
/// filled database ([`Workload::needs_filled_db`]) share one, filled once
/// (untimed) by `num` puts in random order and then flushed and settled;
/// put `overwrite` last, since it changes that database. Every other
/// workload gets a fresh database of its own.
pub fn run_group(
    kind: EngineKind,
    workloads: &[Workload],
    cfg: &RunConfig,
    round: usize,
) -> Result<Vec<SampleResult>> {
    let values = Values::new(cfg.seed);
    let mut out = Vec::with_capacity(workloads.len());
    let mut filled: Option<Filled> = None;
    for &w in workloads {
        let r = if w.needs_filled_db() {
            if filled.is_none() {
                filled = Some(Filled::build(kind, cfg, round, &values)?);
            }
            let f = filled.as_ref().expect("filled just above");
            let mut r = measure_on_filled(kind, w, f.db.as_ref(), cfg, round, &values)?;
            r.tree = Some(f.fill.tree.clone());
            r.settle_secs = Some(f.fill.settle_secs);
            r
        } else {
            run_fresh(kind, w, cfg, round, &values)?
        };
        out.push(r);
    }
    Ok(out)
}

/// What filling the read database left: its tree and how long the untimed
/// flush and settle took.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FillOutcome {
    /// The tree on disk ([`engine::Engine::describe_tree`]).
    pub tree: String,
    /// Seconds of the flush and settle.
    pub settle_secs: f64,
}

/// Fills a fresh database at `path` as [`run_group`] fills the read
/// database of round `round`, settles it and closes it: the first half of
/// a capped sample, run in its own process so that the memory it used is
/// gone before the cap is set.
///
/// # Errors
/// The engine's errors.
pub fn fill_read_database(
    kind: EngineKind,
    cfg: &RunConfig,
    round: usize,
    path: &Path,
) -> Result<FillOutcome> {
    let db = engine::open(kind, path, OpenMode::Fresh, false, &cfg.engine)?;
    fill_and_settle(db.as_ref(), cfg, round, &Values::new(cfg.seed))
}

/// The second half of a capped sample: reopens the database that
/// [`fill_read_database`] left at `path` (with `cfg.engine`'s capped block
/// cache) and runs each of `workloads`, all reads, on it.
///
/// # Errors
/// The engine's errors, and any read that finds a wrong answer.
pub fn run_reads(
    kind: EngineKind,
    workloads: &[Workload],
    cfg: &RunConfig,
    round: usize,
    path: &Path,
) -> Result<Vec<SampleResult>> {
    let values = Values::new(cfg.seed);
    let baseline = cgroup::resident_bytes().ok();
    let baseline_anon = cgroup::resident_anon_bytes().ok();
    let db = engine::open(kind, path, OpenMode::Existing, false, &cfg.engine)?;
    workloads
        .iter()
        .map(|&w| {
            let mut r = measure_on_filled(kind, w, db.as_ref(), cfg, round, &values)?;
            r.baseline_rss_bytes = baseline;
            r.baseline_anon_rss_bytes = baseline_anon;
            Ok(r)
        })
        .collect()
}

/// The shared database of the read workloads and `overwrite`.
struct Filled {
    // Field order: the database closes before its directory is removed.
    db: Box<dyn engine::Engine>,
    _tmp: tempfile::TempDir,
    fill: FillOutcome,
}

impl Filled {
    fn build(kind: EngineKind, cfg: &RunConfig, round: usize, values: &Values) -> Result<Filled> {
        let (tmp, path) = sample_dir(cfg)?;
        let db = engine::open(kind, &path, OpenMode::Fresh, false, &cfg.engine)?;
        let fill = fill_and_settle(db.as_ref(), cfg, round, values)?;
        Ok(Filled {
            db,
            _tmp: tmp,
            fill,
        })
    }
}

/// `num` puts of every present key in a random order (untimed), then the
/// engine's flush and settle (timed, for the report), then `sync(1)`.
fn fill_and_settle(
    db: &dyn engine::Engine,
    cfg: &RunConfig,
    round: usize,
    values: &Values,
) -> Result<FillOutcome> {
    let order = permutation(cfg.num, &mut rng(cfg.seed, round, 7));
    for &i in &order {
        db.put(&present_key(i), &values.get(i))?;
    }
    drop(order);
    let start = Instant::now();
    db.flush_and_settle()?;
    let settle_secs = start.elapsed().as_secs_f64();
    let tree = db.describe_tree();
    sync_filesystems();
    Ok(FillOutcome { tree, settle_secs })
}

/// [`run_on_filled`], with the bytes read from storage per operation.
fn measure_on_filled(
    kind: EngineKind,
    w: Workload,
    db: &dyn engine::Engine,
    cfg: &RunConfig,
    round: usize,
    values: &Values,
) -> Result<SampleResult> {
    let before = cgroup::disk_read_bytes().ok();
    let mut r = run_on_filled(kind, w, db, cfg, round, values)?;
    if let (Some(a), Ok(b)) = (before, cgroup::disk_read_bytes()) {
        r.disk_read_bytes_per_op = Some(b.saturating_sub(a) as f64 / r.ops.max(1) as f64);
    }
    r.accounted_bytes = db.accounted_memory();
    Ok(r)
}

fn run_on_filled(
    kind: EngineKind,
    w: Workload,
    db: &dyn engine::Engine,
    cfg: &RunConfig,
    round: usize,
    values: &Values,
) -> Result<SampleResult> {
    let mut r = rng(cfg.seed, round, w.seed_tag());
    let (n, reads) = (cfg.num, cfg.reads);
    match w {
        Workload::ReadRandom => {
            let keys: Vec<(u64, [u8; KEY_LEN])> = uniform(reads, n, &mut r)
                .into_iter()
                .map(|i| (i, present_key(i)))
                .collect();
            let mut found = 0u64;
            let mut wrong = 0u64;
            let t = timed(&keys, |(i, k)| {
                let want = values.get(*i);
                if db.get(k, &mut |v| wrong += u64::from(v != want))? {
                    found += 1;
                }
                Ok(())
            })?;
            if found != reads || wrong != 0 {
                return Err(format!(
                    "{}: readrandom found {found} of {reads} present keys, {wrong} with a wrong value",
                    kind.name()
                )
                .into());
            }
            let mut res = result(kind, w, round, t);
            res.found = Some(found);
            Ok(res)
        }
        Workload::ReadMissing => {
            let keys: Vec<[u8; KEY_LEN]> = uniform(reads, n, &mut r)
                .into_iter()
                .map(absent_key)
                .collect();
            let mut found = 0u64;
            let t = timed(&keys, |k| {
                if db.get(k, &mut |_| {})? {
                    found += 1;
                }
                Ok(())
            })?;
            if found != 0 {
                return Err(format!(
                    "{}: readmissing found {found} of {reads} absent keys",
                    kind.name()
                )
                .into());
            }
            let mut res = result(kind, w, round, t);
            res.found = Some(found);
            Ok(res)
        }
        Workload::SeekRandom => {
            let seeks = (reads / 10).max(1);
            let keys: Vec<(u64, [u8; KEY_LEN])> = uniform(seeks, n, &mut r)
                .into_iter()
                .map(|i| (i, present_key(i)))
                .collect();
            let mut found = 0u64;
            let mut entries = 0u64;
            let mut bad = 0u64;
            let t = timed(&keys, |(i, k)| {
                let mut pos = 0u64;
                let read = db.seek_and_next(k, SEEK_NEXTS, &mut |key, value| {
                    // Entry `pos` after the seek must be present key i + pos.
                    let j = *i + pos;
                    if key != present_key(j) || value != values.get(j) {
                        bad += 1;
                    } else if pos == 0 {
                        found += 1;
                    }
                    pos += 1;
                })?;
                let expect = (SEEK_NEXTS as u64 + 1).min(n - *i);
                if read as u64 != expect {
                    bad += 1;
                }
                entries += read as u64;
                Ok(())
            })?;
            if found != seeks || bad != 0 {
                return Err(format!(
                    "{}: seekrandom landed on {found} of {seeks} present keys; {bad} wrong entries or counts",
                    kind.name()
                )
                .into());
            }
            let mut res = result(kind, w, round, t);
            res.found = Some(found);
            res.entries_read = Some(entries);
            Ok(res)
        }
        Workload::Overwrite => {
            let ops: Vec<(u64, [u8; KEY_LEN])> = uniform(n, n, &mut r)
                .into_iter()
                .enumerate()
                .map(|(j, i)| (j as u64, present_key(i)))
                .collect();
            sync_filesystems();
            let t = timed(&ops, |(j, k)| db.put(k, &values.get(*j)))?;
            Ok(result(kind, w, round, t))
        }
        _ => unreachable!("{} does not run on a filled database", w.name()),
    }
}

fn run_fresh(
    kind: EngineKind,
    w: Workload,
    cfg: &RunConfig,
    round: usize,
    values: &Values,
) -> Result<SampleResult> {
    let mut r = rng(cfg.seed, round, w.seed_tag());
    let (_tmp, path) = sample_dir(cfg)?;
    match w {
        Workload::FillSeq | Workload::FillRandom => {
            let order = if w == Workload::FillSeq {
                (0..cfg.num).collect()
            } else {
                permutation(cfg.num, &mut r)
            };
            let ops: Vec<(u64, [u8; KEY_LEN])> =
                order.into_iter().map(|i| (i, present_key(i))).collect();
            sync_filesystems();
            let db = engine::open(kind, &path, OpenMode::Fresh, false, &cfg.engine)?;
            let t = timed(&ops, |(i, k)| db.put(k, &values.get(*i)))?;
            drop(db);
            Ok(result(kind, w, round, t))
        }
        Workload::FillSync(threads) => {
            run_fillsync(kind, threads, cfg, &path, &mut r, values, round)
        }
        _ => unreachable!("{} needs a filled database", w.name()),
    }
}

fn run_fillsync(
    kind: EngineKind,
    threads: usize,
    cfg: &RunConfig,
    path: &Path,
    r: &mut SplitMix64,
    values: &Values,
    round: usize,
) -> Result<SampleResult> {
    let per_thread = (cfg.sync_ops as usize / threads).max(1);
    let order = permutation((per_thread * threads) as u64, r);
    let ops: Vec<(u64, [u8; KEY_LEN])> = order.into_iter().map(|i| (i, present_key(i))).collect();
    sync_filesystems();
    let db = engine::open(kind, path, OpenMode::Fresh, true, &cfg.engine)?;
    let db = db.as_ref();
    let barrier = Barrier::new(threads + 1);
    let (wall, lats) = std::thread::scope(|s| -> Result<(Duration, Vec<Vec<u64>>)> {
        let handles: Vec<_> = ops
            .chunks(per_thread)
            .map(|chunk| {
                let barrier = &barrier;
                s.spawn(move || -> Result<Vec<u64>> {
                    barrier.wait();
                    let t = timed(chunk, |(i, k)| db.put_sync(k, &values.get(*i)))?;
                    Ok(t.lat_ns)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let mut lats = Vec::with_capacity(threads);
        let mut first_err = None;
        for h in handles {
            match h.join().expect("fillsync thread panicked") {
                Ok(l) => lats.push(l),
                Err(e) => first_err = first_err.or(Some(e)),
            }
        }
        let wall = start.elapsed();
        match first_err {
            Some(e) => Err(e),
            None => Ok((wall, lats)),
        }
    })?;
    let t = Timing {
        lat_ns: lats.into_iter().flatten().collect(),
        wall,
        rss_at_end: None,
        anon_at_end: None,
        harness_bytes: 0,
    };
    Ok(result(kind, Workload::FillSync(threads), round, t))
}

/// Splits the selected workloads into the groups a round runs, in report
/// order: each fill alone, then the workloads sharing a filled database
/// (reads first, `overwrite` last), then each `fillsync`.
pub fn plan_groups(selected: &[Workload]) -> Vec<Vec<Workload>> {
    let has = |w: Workload| selected.contains(&w);
    let mut groups = Vec::new();
    for w in [Workload::FillSeq, Workload::FillRandom] {
        if has(w) {
            groups.push(vec![w]);
        }
    }
    let filled: Vec<Workload> = [
        Workload::ReadRandom,
        Workload::ReadMissing,
        Workload::SeekRandom,
        Workload::Overwrite,
    ]
    .into_iter()
    .filter(|&w| has(w))
    .collect();
    if !filled.is_empty() {
        groups.push(filled);
    }
    for &t in &SYNC_THREADS {
        if has(Workload::FillSync(t)) {
            groups.push(vec![Workload::FillSync(t)]);
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_as_their_numbers() {
        assert_eq!(&key(42), b"0000000000000042");
        assert!(present_key(9) < absent_key(9));
        assert!(absent_key(9) < present_key(10));
        assert!(present_key(99_999) < present_key(100_000));
    }

    #[test]
    fn permutation_is_a_permutation() {
        let mut p = permutation(1000, &mut SplitMix64(3));
        p.sort_unstable();
        assert_eq!(p, (0..1000).collect::<Vec<_>>());
    }

    /// A run of `num` keys and reads under `dir`, with a 16 MiB fjall cache.
    fn small_config(dir: &Path, num: u64, sync_ops: u64, seed: u64) -> RunConfig {
        RunConfig {
            num,
            sync_ops,
            seed,
            dir: dir.to_path_buf(),
            engine: EngineConfig {
                fjall_cache_mib: 16,
                fjall_worker_threads: None,
                cache_bytes: None,
                siftdb_block_cache: false,
                siftdb_filters: None,
            },
            reads: num,
        }
    }

    #[test]
    fn percentiles_pick_ranks() {
        let v: Vec<u64> = (1..=1000).map(|x| x * 1000).collect();
        assert_eq!(percentile_us(&v, 0.5), 500.0);
        assert_eq!(percentile_us(&v, 0.99), 990.0);
        assert_eq!(percentile_us(&v, 0.999), 999.0);
    }

    #[test]
    fn both_engines_reopen_what_they_wrote() {
        let cfg = EngineConfig {
            fjall_cache_mib: 16,
            fjall_worker_threads: None,
            cache_bytes: None,
            siftdb_block_cache: false,
            siftdb_filters: None,
        };
        let values = Values::new(9);
        for kind in EngineKind::ALL {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("db");
            {
                let db = engine::open(kind, &path, OpenMode::Fresh, false, &cfg).unwrap();
                for i in 0..100 {
                    db.put(&present_key(i), &values.get(i)).unwrap();
                }
                db.flush_and_settle().unwrap();
            }
            assert!(engine::open(kind, &path, OpenMode::Fresh, false, &cfg).is_err());
            let db = engine::open(kind, &path, OpenMode::Existing, false, &cfg).unwrap();
            let mut got = Vec::new();
            assert!(db.get(&present_key(7), &mut |v| got = v.to_vec()).unwrap());
            assert_eq!(got, values.get(7));
            assert!(!db.get(&absent_key(7), &mut |_| {}).unwrap());
            let mut keys = Vec::new();
            let read = db
                .seek_and_next(&absent_key(95), 10, &mut |k, _| keys.push(k.to_vec()))
                .unwrap();
            assert_eq!(read, 4, "{}", kind.name());
            assert_eq!(keys[0], present_key(96));
            let other = tempfile::tempdir().unwrap();
            assert!(engine::open(
                kind,
                &other.path().join("none"),
                OpenMode::Existing,
                false,
                &cfg
            )
            .is_err());
        }
    }

    #[test]
    fn run_one_checks_its_reads() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = small_config(dir.path(), 500, 8, 5);
        for kind in EngineKind::ALL {
            let r = run_one(kind, Workload::ReadRandom, &cfg, 0).unwrap();
            assert_eq!(r.found, Some(500));
            let r = run_one(kind, Workload::ReadMissing, &cfg, 0).unwrap();
            assert_eq!(r.found, Some(0));
        }
        // Every sample removed its database.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn values_are_windows_of_one_pool_distinct_per_key() {
        let v = Values::new(3);
        assert_eq!(v.get(7), Values::new(3).get(7), "deterministic");
        assert_eq!(v.get(7).len(), VALUE_LEN);
        let distinct: std::collections::HashSet<[u8; VALUE_LEN]> =
            (0..10_000).map(|i| v.get(i)).collect();
        assert_eq!(distinct.len(), 10_000);
        // Past the number, windows of the pool: not all one byte.
        assert!(v.get(7)[8..].iter().any(|&b| b != v.get(7)[8]));
    }

    /// The two halves of a capped sample, without the cgroup: a fill that
    /// closes the database, then reads on the reopened one, checked, with
    /// the bytes read from storage per lookup measured.
    #[test]
    fn a_filled_database_reopens_for_reads() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = small_config(dir.path(), 800, 8, 2);
        cfg.engine.cache_bytes = Some(1 << 20);
        cfg.engine.siftdb_block_cache = true;
        cfg.reads = 300;
        let reads = [
            Workload::ReadRandom,
            Workload::ReadMissing,
            Workload::SeekRandom,
        ];
        for kind in EngineKind::ALL {
            let (_tmp, path) = sample_dir(&cfg).unwrap();
            let fill = fill_read_database(kind, &cfg, 0, &path).unwrap();
            assert!(!fill.tree.is_empty());
            let res = run_reads(kind, &reads, &cfg, 0, &path).unwrap();
            assert_eq!(res[0].found, Some(300));
            assert_eq!(res[1].found, Some(0));
            assert_eq!(res[2].found, Some(30));
            assert!(res.iter().all(|r| r.disk_read_bytes_per_op.is_some()));
            assert!(res.iter().all(|r| r.rss_bytes.unwrap() > 0));
            assert_eq!(res[0].accounted_bytes.is_some(), kind == EngineKind::Siftdb);
        }
    }

    #[test]
    fn every_workload_runs_on_both_engines() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = small_config(dir.path(), 2000, 32, 1);
        for kind in EngineKind::ALL {
            for group in plan_groups(&Workload::all()) {
                let res = run_group(kind, &group, &cfg, 0).unwrap();
                assert_eq!(res.len(), group.len());
                for r in res {
                    assert!(r.ops > 0 && r.ops_per_sec > 0.0, "{r:?}");
                }
            }
        }
    }
}
