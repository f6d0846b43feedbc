//! Measuring one benchmark point: build the layout, run the lookups, read
//! the engine's counters, and cross-check them against an independent
//! count made from the files' own filters.

use std::path::Path;
use std::sync::Arc;

use siftdb::filter::{bloom_stats, hash_key, policy_for_name, FilterPolicy};
use siftdb::inspect::filename::{parse_file_name, FileType};
use siftdb::inspect::sstable::Table;
use siftdb::Stats;

use super::dataset::{bench_options, load_runs, Dataset, RunLayout};
use super::model::{self, FileModel};
use super::{tolerance, Config, Error, Layout, Point, Result, Sweep};
use crate::rng::Rng;

/// What to measure: one layout (`files` runs, or `files` non-empty levels
/// for [`Layout::Leveled`]) and one filter configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PointSpec {
    pub layout: Layout,
    pub sweep: Sweep,
    pub files: usize,
    pub bits_per_key: u32,
    /// Forced `k`, or `None` for the engine's best `k`.
    pub hashes: Option<u32>,
}

impl PointSpec {
    /// A short name for messages, e.g. `synthetic L=8 bits/key=10 k=best`.
    pub fn name(&self) -> String {
        let k = self.hashes.map_or("best".to_string(), |k| k.to_string());
        format!(
            "{} {}={} bits/key={} k={k}",
            self.layout.as_str(),
            self.layout.count_name(),
            self.files,
            self.bits_per_key
        )
    }
}

/// One SSTable seen from outside the engine.
pub(super) struct FileView {
    pub table: Arc<Table>,
    pub policy: Option<Arc<dyn FilterPolicy>>,
}

impl FileView {
    /// Opens SSTable `number` at `path` (read-only; it is immutable) with
    /// the filter policy its properties name.
    pub fn open(path: &Path, number: u64) -> Result<FileView> {
        let table = Table::open(path, number)?;
        let policy = if table.has_filter() {
            policy_for_name(&table.properties().filter_policy)
        } else {
            None
        };
        Ok(FileView {
            table: Arc::new(table),
            policy,
        })
    }

    /// The model of this file's filter; `lookup_keys` is its distinct keys.
    pub fn model(&self) -> FileModel {
        let s = self.table.filter_bytes().and_then(bloom_stats);
        let keys = self.table.properties().num_distinct_keys;
        FileModel {
            lookup_keys: keys,
            filter_keys: keys,
            filter_bits: s.map_or(0, |s| s.bits),
            hashes: s.map_or(0, |s| s.num_hashes),
        }
    }

    /// Whether a lookup of a key with this hash passes the file's filter
    /// (always true without one).
    pub fn passes(&self, hash: siftdb::filter::KeyHash) -> bool {
        match (&self.policy, self.table.filter_bytes()) {
            (Some(p), Some(f)) => p.may_match(f, hash),
            _ => true,
        }
    }
}

/// The counters one batch of lookups should move, counted outside the
/// engine from the files' key ranges and filters themselves.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tally {
    pub gets: u64,
    pub memtable_hits: u64,
    pub range_skips: u64,
    pub probes: u64,
    pub negatives: u64,
    pub false_positives: u64,
    pub reads: u64,
}

impl Tally {
    /// The engine's counts between two snapshots.
    pub fn delta(before: &Stats, after: &Stats) -> Tally {
        Tally {
            gets: after.gets - before.gets,
            memtable_hits: after.memtable_hits - before.memtable_hits,
            range_skips: after.range_skips - before.range_skips,
            probes: after.filter_probes - before.filter_probes,
            negatives: after.filter_negatives - before.filter_negatives,
            false_positives: after.filter_false_positives - before.filter_false_positives,
            reads: after.data_block_reads - before.data_block_reads,
        }
    }

    /// Accounts the file holding the key: its filter passes (if it has
    /// one) and one data block is read.
    pub fn hit(&mut self, f: &FileView) {
        if f.policy.is_some() {
            self.probes += 1;
        }
        self.reads += 1;
    }

    /// Checks the engine's counts `got` of the `what` lookups of `point`
    /// against this independent count.
    ///
    /// # Errors
    /// [`Error::CounterMismatch`] naming the first counter that differs.
    pub fn check(&self, got: &Tally, point: &str, what: &str) -> Result<()> {
        for (counter, g, w) in [
            ("gets", got.gets, self.gets),
            ("memtable_hits", got.memtable_hits, self.memtable_hits),
            ("range_skips", got.range_skips, self.range_skips),
            ("filter_probes", got.probes, self.probes),
            ("filter_negatives", got.negatives, self.negatives),
            (
                "filter_false_positives",
                got.false_positives,
                self.false_positives,
            ),
            ("data_block_reads", got.reads, self.reads),
        ] {
            if g != w {
                return Err(Error::CounterMismatch {
                    point: format!("{point}, {what} lookups"),
                    counter,
                    engine: g,
                    expected: w,
                });
            }
        }
        Ok(())
    }

    /// Accounts one consulted file that does not hold the key.
    pub fn miss(&mut self, f: &FileView, hash: siftdb::filter::KeyHash) {
        if f.policy.is_some() {
            self.probes += 1;
            if f.passes(hash) {
                self.false_positives += 1;
                self.reads += 1;
            } else {
                self.negatives += 1;
            }
        } else {
            self.reads += 1;
        }
    }
}

/// Lays out `spec` in a fresh database under `work_dir` and measures it.
pub(crate) fn measure(
    spec: &PointSpec,
    ds: &Dataset,
    cfg: &Config,
    work_dir: &Path,
) -> Result<Point> {
    let dir = tempfile::Builder::new()
        .prefix("siftdb-readamp-")
        .tempdir_in(work_dir)
        .map_err(|e| Error::io(format!("create a directory in {}", work_dir.display()), e))?;
    let layout_seed = cfg.seed ^ spec.layout.stream();
    let runs = RunLayout::random(ds.present.len(), spec.files, layout_seed);
    let db = load_runs(
        dir.path(),
        ds,
        &runs,
        bench_options(spec.bits_per_key, spec.hashes),
    )?;

    // The files, oldest first: file r holds run r (plus the 2 sentinels).
    let files = open_files(dir.path())?;
    if files.len() != spec.files {
        return Err(Error::Layout(format!(
            "{}: the directory holds {} SSTables, expected {}",
            spec.name(),
            files.len(),
            spec.files
        )));
    }
    for (r, f) in files.iter().enumerate() {
        let want = runs.runs[r].len() as u64 + 2;
        let got = f.table.properties().num_distinct_keys;
        if got != want {
            return Err(Error::Layout(format!(
                "{}: file {r} (oldest first) holds {got} keys, expected {want}",
                spec.name()
            )));
        }
        if f.table.has_filter() != (spec.bits_per_key > 0) {
            return Err(Error::Layout(format!(
                "{}: file {r} has_filter = {} with bits_per_key = {}",
                spec.name(),
                f.table.has_filter(),
                spec.bits_per_key
            )));
        }
    }
    let models: Vec<FileModel> = files
        .iter()
        .enumerate()
        .rev()
        .map(|(r, f)| {
            let s = f.table.filter_bytes().and_then(bloom_stats);
            FileModel {
                lookup_keys: runs.runs[r].len() as u64,
                filter_keys: f.table.properties().num_distinct_keys,
                filter_bits: s.map_or(0, |s| s.bits),
                hashes: s.map_or(0, |s| s.num_hashes),
            }
        })
        .collect();
    let theory = model::expected(&models);
    let (mut bits, mut bits_set, mut k) = (0u64, 0u64, 0u32);
    for f in &files {
        if let Some(s) = f.table.filter_bytes().and_then(bloom_stats) {
            bits += s.bits;
            bits_set += s.bits_set;
            k = s.num_hashes;
        }
    }

    // How many lookups keep the statistical error well inside the
    // acceptance tolerance (see `Config::sigmas`).
    let l = spec.files as f64;
    let n_absent = needed(
        cfg.absent_lookups,
        &[
            (theory.absent_reads, theory.absent_variance, 1.0),
            theory
                .fpr
                .map_or((0.0, 0.0, 1.0), |p| (p, p * (1.0 - p), l)),
        ],
        cfg,
    );
    let n_present = needed(
        cfg.present_lookups,
        &[(theory.present_reads, theory.present_variance, 1.0)],
        cfg,
    );

    let newest_first: Vec<&FileView> = files.iter().rev().collect();
    let name = spec.name();
    let mut rng = Rng::new(
        cfg.seed ^ spec.layout.stream(),
        &[STREAM_LOOKUPS, spec.files as u64],
    );

    // Absent keys: every file is consulted and none holds the key.
    let s0 = db.stats();
    let mut want_absent = Tally::default();
    for _ in 0..n_absent {
        let key = &ds.absent[rng.below(ds.absent.len())];
        if let Some(v) = db.get(key)? {
            return Err(wrong(
                &name,
                key,
                &format!("absent key returned {} bytes", v.len()),
            ));
        }
        let h = hash_key(key);
        want_absent.gets += 1;
        for f in &newest_first {
            want_absent.miss(f, h);
        }
    }
    let s1 = db.stats();

    // Present keys: the files newer than the holder, then the holder.
    let mut want_present = Tally::default();
    for _ in 0..n_present {
        let i = rng.below(ds.present.len());
        let (key, value) = &ds.present[i];
        match db.get(key)? {
            Some(v) if v == value => {}
            Some(_) => return Err(wrong(&name, key, "present key returned a wrong value")),
            None => return Err(wrong(&name, key, "present key was not found")),
        }
        let h = hash_key(key);
        want_present.gets += 1;
        let holder = runs.run_of[i] as usize;
        for f in &newest_first[..spec.files - 1 - holder] {
            want_present.miss(f, h);
        }
        want_present.hit(newest_first[spec.files - 1 - holder]);
    }
    let s2 = db.stats();
    drop(db);

    // Runs span every key (sentinels), so nothing is skipped by key range.
    let got_absent = Tally::delta(&s0, &s1);
    let got_present = Tally::delta(&s1, &s2);
    want_absent.check(&got_absent, &name, "absent")?;
    want_present.check(&got_present, &name, "present")?;
    let (rs_a, rs_p) = (got_absent.range_skips, got_present.range_skips);

    let f = cfg.absent_fraction;
    let (na, np) = (n_absent as f64, n_present as f64);
    let per = |t: &Tally, skips: u64, n: f64| {
        (
            t.reads as f64 / n,
            (t.negatives + skips) as f64 / n,
            t.probes as f64 / n,
        )
    };
    let (ra, ska, pa) = per(&got_absent, rs_a, na);
    let (rp, skp, pp) = per(&got_present, rs_p, np);
    let filtered = spec.bits_per_key > 0;
    // Each present lookup probes its holder's filter once (a true
    // positive); every other probe is of a file without the key.
    let non_holder_probes = if filtered {
        (got_absent.probes + got_present.probes).saturating_sub(n_present as u64)
    } else {
        0
    };
    let distinct: u64 = files
        .iter()
        .map(|f| f.table.properties().num_distinct_keys)
        .sum();
    Ok(Point {
        layout: spec.layout,
        sweep: spec.sweep,
        files: spec.files,
        bits_per_key: spec.bits_per_key,
        hashes: k,
        absent_fraction: f,
        keys: ds.present.len(),
        absent_lookups: n_absent as u64,
        present_lookups: n_present as u64,
        reads_absent: ra,
        reads_present: rp,
        reads_mixed: f * ra + (1.0 - f) * rp,
        theory_absent: theory.absent_reads,
        theory_present: theory.present_reads,
        theory_mixed: theory.mixed_reads(f),
        fpr_measured: (filtered && non_holder_probes > 0).then(|| {
            (got_absent.false_positives + got_present.false_positives) as f64
                / non_holder_probes as f64
        }),
        fpr_theory: theory.fpr,
        bits_set_fraction: (bits > 0).then(|| bits_set as f64 / bits as f64),
        bits_set_theory: theory.fill,
        files_skipped_per_lookup: f * ska + (1.0 - f) * skp,
        skipped_theory: theory.mixed_skips(f),
        filter_probes_per_lookup: f * pa + (1.0 - f) * pp,
        probes_theory: theory.mixed_probes(f),
        filter_bits_per_key: bits as f64 / distinct as f64,
        levels: 0,
        level_keys: Vec::new(),
        level_files: Vec::new(),
        compactions: 0,
        range_skips_per_lookup: f * rs_a as f64 / na + (1.0 - f) * rs_p as f64 / np,
        range_skips_theory: 0.0,
    })
}

/// Seed stream of the lookups.
pub(super) const STREAM_LOOKUPS: u64 = 3;

pub(super) fn wrong(point: &str, key: &[u8], detail: &str) -> Error {
    Error::WrongAnswer {
        point: point.to_string(),
        key: siftdb::inspect::escape::escape_bytes(key),
        detail: detail.to_string(),
    }
}

/// The lookups needed so that, for each `(mean, variance, samples per
/// lookup)`, `sigmas` standard errors of the mean stay within the
/// acceptance tolerance of the mean; at least `base`, at most
/// `cfg.max_lookups`.
pub(super) fn needed(base: usize, quantities: &[(f64, f64, f64)], cfg: &Config) -> usize {
    let mut n = base as f64;
    for &(mean, var, per_lookup) in quantities {
        if var <= 0.0 || per_lookup <= 0.0 {
            continue;
        }
        let sd_allowed = tolerance(mean) / cfg.sigmas;
        n = n.max(var / (sd_allowed * sd_allowed) / per_lookup);
    }
    (n.ceil() as usize).clamp(base, cfg.max_lookups.max(base))
}

/// Opens every SSTable in `dir` (read-only; they are immutable), oldest
/// first in the order the engine ranks level-0 files (largest sequence
/// number, then file number).
fn open_files(dir: &Path) -> Result<Vec<FileView>> {
    let mut files = Vec::new();
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::io(format!("list {}", dir.display()), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(format!("list {}", dir.display()), e))?;
        let name = entry.file_name();
        if let Some(FileType::Table(n)) = name.to_str().and_then(parse_file_name) {
            files.push(FileView::open(&entry.path(), n)?);
        }
    }
    files.sort_by_key(|f| (f.table.properties().largest_seq, f.table.file_number()));
    Ok(files)
}
