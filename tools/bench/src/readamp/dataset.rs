//! The keys a benchmark point loads and looks up, and how they are laid
//! out into runs ([`load_runs`]) or into a leveled tree ([`load_leveled`]).

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::Path;

use siftdb::inspect::util::coding::varint_len;
use siftdb::inspect::version::set::NUM_LEVELS;
use siftdb::{CompactionStyle, Db, Options};

use super::{Error, Result};
use crate::rng::Rng;

/// A key set: pairs to load (present keys) and keys never loaded (absent
/// keys) drawn from the same key space.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    /// Keys and values that are loaded into the database.
    pub present: Vec<(Vec<u8>, Vec<u8>)>,
    /// Keys that are looked up but never loaded.
    pub absent: Vec<Vec<u8>>,
}

impl Dataset {
    /// `keys` present and `keys` absent random keys of `key_len` bytes,
    /// with random values of `value_len` bytes. All `2·keys` keys are
    /// distinct; sorted, they alternate present, absent, present, ..., so
    /// absent keys are interleaved with present ones across the whole key
    /// space and no key-range check can tell them apart.
    ///
    /// # Errors
    /// [`Error::Config`] if `key_len < 8` (too few distinct keys to draw
    /// from) or `keys == 0`.
    pub fn synthetic(keys: usize, key_len: usize, value_len: usize, seed: u64) -> Result<Dataset> {
        if key_len < 8 {
            return Err(Error::Config(format!(
                "key_len is {key_len}; it must be at least 8 bytes"
            )));
        }
        if keys == 0 {
            return Err(Error::Config("keys must be at least 1".into()));
        }
        let mut rng = Rng::new(seed, &[STREAM_KEYS]);
        let mut all: Vec<Vec<u8>> = Vec::with_capacity(2 * keys + 16);
        while all.len() < 2 * keys {
            while all.len() < 2 * keys {
                let mut k = vec![0u8; key_len];
                rng.fill(&mut k);
                all.push(k);
            }
            all.sort_unstable();
            all.dedup();
        }
        let mut present = Vec::with_capacity(keys);
        let mut absent = Vec::with_capacity(keys);
        for (i, k) in all.into_iter().enumerate() {
            if i % 2 == 0 {
                let mut v = vec![0u8; value_len];
                rng.fill(&mut v);
                present.push((k, v));
            } else {
                absent.push(k);
            }
        }
        Ok(Dataset { present, absent })
    }

    /// The Debian package records in `data_dir/debian-packages.tsv.gz`
    /// (`NAME<TAB>JSON` per line: key = package name, value = JSON) as
    /// present keys, and the words of `data_dir/english-words.txt.gz` that
    /// are not package names as absent keys.
    ///
    /// # Errors
    /// [`Error::Io`] if a file cannot be read; [`Error::Data`] if a record
    /// has no tab or a file holds no keys.
    pub fn debian(data_dir: &Path) -> Result<Dataset> {
        let packages = gz_lines(&data_dir.join("debian-packages.tsv.gz"))?;
        let mut present = Vec::with_capacity(packages.len());
        let mut names = HashSet::with_capacity(packages.len());
        for (i, line) in packages.iter().enumerate() {
            let (name, json) = line.split_once('\t').ok_or_else(|| {
                Error::Data(format!(
                    "debian-packages.tsv.gz line {}: no tab between name and JSON",
                    i + 1
                ))
            })?;
            if name.is_empty() || !names.insert(name.to_string()) {
                return Err(Error::Data(format!(
                    "debian-packages.tsv.gz line {}: empty or repeated package name {name:?}",
                    i + 1
                )));
            }
            present.push((name.as_bytes().to_vec(), json.as_bytes().to_vec()));
        }
        let mut absent: Vec<Vec<u8>> = gz_lines(&data_dir.join("english-words.txt.gz"))?
            .into_iter()
            .filter(|w| !w.is_empty() && !names.contains(w))
            .map(String::into_bytes)
            .collect();
        absent.sort_unstable();
        absent.dedup();
        if present.is_empty() || absent.is_empty() {
            return Err(Error::Data(format!(
                "{}: found {} package records and {} absent words; need some of each",
                data_dir.display(),
                present.len(),
                absent.len()
            )));
        }
        Ok(Dataset { present, absent })
    }

    /// The longest key, in bytes.
    fn max_key_len(&self) -> usize {
        self.present
            .iter()
            .map(|(k, _)| k.len())
            .chain(self.absent.iter().map(Vec::len))
            .max()
            .unwrap_or(0)
    }
}

/// Seed stream of the key set.
const STREAM_KEYS: u64 = 1;

/// Reads a gzip file into lines.
fn gz_lines(path: &Path) -> Result<Vec<String>> {
    let file =
        std::fs::File::open(path).map_err(|e| Error::io(format!("open {}", path.display()), e))?;
    BufReader::new(flate2::read::GzDecoder::new(file))
        .lines()
        .collect::<std::io::Result<Vec<String>>>()
        .map_err(|e| Error::io(format!("read {}", path.display()), e))
}

/// How the present keys of a [`Dataset`] are spread over runs.
#[derive(Debug, Clone)]
pub struct RunLayout {
    /// `run_of[i]` is the run (0 = oldest) holding `present[i]`.
    pub run_of: Vec<u32>,
    /// `runs[r]` lists the indices into `present` of run `r`'s keys.
    pub runs: Vec<Vec<usize>>,
}

impl RunLayout {
    /// Assigns `n` keys to `files` runs at random: a seeded shuffle cut
    /// into `files` chunks whose sizes differ by at most one. Every run is
    /// then a uniform sample of the key space.
    pub fn random(n: usize, files: usize, seed: u64) -> RunLayout {
        let mut order: Vec<usize> = (0..n).collect();
        Rng::new(seed, &[STREAM_RUNS, files as u64]).shuffle(&mut order);
        let mut run_of = vec![0u32; n];
        let mut runs = Vec::with_capacity(files);
        for r in 0..files {
            let chunk = order[r * n / files..(r + 1) * n / files].to_vec();
            for &i in &chunk {
                run_of[i] = r as u32;
            }
            runs.push(chunk);
        }
        RunLayout { run_of, runs }
    }
}

/// Seed stream of the run assignment.
const STREAM_RUNS: u64 = 2;

/// The two keys written to every run so that every run's key range spans
/// every key of `ds`: a one-byte `0x00` below all of them and `0xff`
/// repeated one byte longer than the longest key above all of them. They
/// are never looked up, but they are in every file's filter (counted in the
/// model's `n`).
pub fn sentinels(ds: &Dataset) -> [Vec<u8>; 2] {
    [vec![0x00], vec![0xff; ds.max_key_len() + 1]]
}

/// Options for a benchmark database: no automatic compaction, a write
/// buffer too large to fill (runs are cut by explicit flushes only), and
/// the given filter.
pub fn bench_options(bits_per_key: u32, hashes: Option<u32>) -> Options {
    let mut o = Options::default();
    o.compaction_style = CompactionStyle::None;
    o.write_buffer_size = 1 << 40;
    o.bits_per_key = bits_per_key;
    o.bloom_hashes = hashes;
    o
}

/// Creates a database in the empty directory `dir` and loads the present
/// keys of `ds` into exactly `layout.runs.len()` level-0 runs, oldest
/// first, flushing after each run. Each run also gets the two
/// [`sentinels`], so key-range checks never skip a run.
///
/// # Errors
/// Engine errors; [`Error::Layout`] if the database does not end up with
/// exactly one level-0 file per run and nothing else.
pub fn load_runs(dir: &Path, ds: &Dataset, layout: &RunLayout, options: Options) -> Result<Db> {
    if options.write_buffer_size < (1 << 40) {
        return Err(Error::Config(
            "load_runs needs a write buffer that never fills (see bench_options)".into(),
        ));
    }
    let db = Db::open_with(dir, options)?;
    let [low, high] = sentinels(ds);
    for run in &layout.runs {
        db.put(&low, b"")?;
        db.put(&high, b"")?;
        for &i in run {
            let (k, v) = &ds.present[i];
            db.put(k, v)?;
        }
        db.flush()?;
    }
    let stats = db.stats();
    let l0 = stats.levels.first().map_or(0, |l| l.files);
    let deeper: usize = stats.levels.iter().skip(1).map(|l| l.files).sum();
    if l0 != layout.runs.len() || deeper != 0 {
        return Err(Error::Layout(format!(
            "expected {} level-0 files and none deeper, found {l0} and {deeper}",
            layout.runs.len()
        )));
    }
    Ok(db)
}

/// Level-0 files that trigger a compaction in the leveled layout: the
/// smallest trigger the engine accepts, so one compaction *unit* of data
/// is two flushes.
pub const LEVELED_L0_TRIGGER: usize = 2;

/// The most non-empty levels a leveled layout can ask for (levels 1 to 6).
pub const MAX_LEVELS: usize = NUM_LEVELS - 1;

/// How a leveled point is built: `units = 1 + M + … + M^(D−1)` equal
/// compaction units of uniformly random keys, each written as
/// [`LEVELED_L0_TRIGGER`] flushes, with level budgets of `M − ½` units
/// times `M^(i−1)` and outputs never cut, so that leveled compaction
/// leaves level `i` holding `M^(i−1)` units in one SSTable. See the
/// `readamp` module documentation ("The leveled layout").
#[derive(Debug, Clone, PartialEq)]
pub struct LeveledPlan {
    /// Non-empty levels wanted, `D`.
    pub levels: usize,
    /// Level size multiplier `M`.
    pub multiplier: u32,
    /// Compaction units written: `1 + M + … + M^(D−1)`.
    pub units: usize,
    /// Estimated SSTable bytes of one unit (entries plus about 1% of block
    /// trailers, restart points and index).
    pub unit_bytes: f64,
}

impl LeveledPlan {
    /// The plan for `levels` non-empty levels of the present keys of `ds`
    /// at multiplier `multiplier` and `bits_per_key` filter bits per key.
    ///
    /// # Errors
    /// [`Error::Config`] if `levels` is outside `1..=`[`MAX_LEVELS`], the
    /// multiplier is below 2, there are too few keys for one per flush, or
    /// the level-1 budget would be under the engine's 1024-byte minimum.
    pub fn new(
        ds: &Dataset,
        levels: usize,
        multiplier: u32,
        bits_per_key: u32,
    ) -> Result<LeveledPlan> {
        let entries: usize = ds
            .present
            .iter()
            .map(|(k, v)| entry_bytes(k.len(), v.len()))
            .sum();
        let keys = ds.present.len();
        let raw = entries as f64 + keys as f64 * f64::from(bits_per_key) / 8.0;
        LeveledPlan::for_size(keys, raw, levels, multiplier)
    }

    /// The plan for `keys` keys whose data-block entries and filter bits
    /// take `raw_bytes` in all.
    ///
    /// # Errors
    /// As [`LeveledPlan::new`].
    pub fn for_size(
        keys: usize,
        raw_bytes: f64,
        levels: usize,
        multiplier: u32,
    ) -> Result<LeveledPlan> {
        let units = leveled_units(levels, multiplier)?;
        if units.saturating_mul(LEVELED_L0_TRIGGER) > keys {
            return Err(Error::Config(format!(
                "{levels} levels at multiplier {multiplier} need {units} units of \
                 {LEVELED_L0_TRIGGER} flushes, so at least {} keys; keys is {keys}",
                units.saturating_mul(LEVELED_L0_TRIGGER)
            )));
        }
        let plan = LeveledPlan {
            levels,
            multiplier,
            units,
            unit_bytes: raw_bytes * 1.01 / units as f64,
        };
        if plan.level_base() < 1024 {
            return Err(Error::Config(format!(
                "{levels} levels at multiplier {multiplier} leave {:.0} bytes per unit; \
                 the level-1 budget must be at least 1024 bytes (use more keys)",
                plan.unit_bytes
            )));
        }
        Ok(plan)
    }

    /// Flushes of the load, [`LEVELED_L0_TRIGGER`] per unit.
    pub fn flushes(&self) -> usize {
        self.units * LEVELED_L0_TRIGGER
    }

    /// `max_bytes_for_level_base`: `M − ½` units.
    fn level_base(&self) -> u64 {
        ((f64::from(self.multiplier) - 0.5) * self.unit_bytes).round() as u64
    }

    /// Options for the leveled layout: leveled compaction triggered by two
    /// level-0 files, level budgets of `(M − ½)·M^(i−1)` units, outputs
    /// never cut (`target_file_size` of 1 TiB, so a level that overflows
    /// moves down whole and leaves no key-range hole), a write buffer that
    /// never fills (units are cut by explicit flushes), and the given
    /// filter.
    pub fn options(&self, bits_per_key: u32, hashes: Option<u32>) -> Options {
        let mut o = Options::default();
        o.compaction_style = CompactionStyle::Leveled;
        o.write_buffer_size = 1 << 40;
        o.bits_per_key = bits_per_key;
        o.bloom_hashes = hashes;
        o.level0_compaction_trigger = LEVELED_L0_TRIGGER;
        o.max_bytes_for_level_base = self.level_base();
        o.level_size_multiplier = self.multiplier;
        o.target_file_size = 1 << 40;
        o
    }
}

/// Bytes of one data-block entry (shared-prefix, suffix-length and
/// value-length varints, then the internal key and the value) for a key of
/// `key_len` bytes and a value of `value_len`, before prefix compression.
pub fn entry_bytes(key_len: usize, value_len: usize) -> usize {
    let ik = key_len + 8;
    1 + varint_len(ik as u64) + varint_len(value_len as u64) + ik + value_len
}

/// `1 + M + … + M^(D−1)`, checked.
fn leveled_units(levels: usize, multiplier: u32) -> Result<usize> {
    if !(1..=MAX_LEVELS).contains(&levels) {
        return Err(Error::Config(format!(
            "a leveled layout has {levels} levels; it must have 1..={MAX_LEVELS}"
        )));
    }
    if multiplier < 2 {
        return Err(Error::Config(format!(
            "level multiplier {multiplier}; it must be at least 2"
        )));
    }
    let mut units = 0usize;
    let mut unit = 1usize;
    for _ in 0..levels {
        units = units.saturating_add(unit);
        unit = unit.saturating_mul(multiplier as usize);
    }
    Ok(units)
}

/// Creates a database in the empty directory `dir` with `options` (from
/// [`LeveledPlan::options`]) and loads the present keys of `ds` as
/// `plan.flushes()` flushes of a seeded shuffle (each a uniform sample of
/// the key space), waiting after each flush until compaction has settled,
/// so the result depends on the data only, not on timing.
///
/// # Errors
/// Engine errors; [`Error::Config`] for options that are not leveled with
/// a write buffer that never fills; [`Error::Layout`] if the database does
/// not end up with level 0 empty and exactly levels 1 to `plan.levels`
/// non-empty.
pub fn load_leveled(
    dir: &Path,
    ds: &Dataset,
    plan: &LeveledPlan,
    options: Options,
    seed: u64,
) -> Result<Db> {
    if options.compaction_style != CompactionStyle::Leveled || options.write_buffer_size < (1 << 40)
    {
        return Err(Error::Config(
            "load_leveled needs leveled compaction and a write buffer that never fills \
             (see LeveledPlan::options)"
                .into(),
        ));
    }
    let db = Db::open_with(dir, options)?;
    let flushes = RunLayout::random(ds.present.len(), plan.flushes(), seed);
    for run in &flushes.runs {
        for &i in run {
            let (k, v) = &ds.present[i];
            db.put(k, v)?;
        }
        db.flush()?;
        db.wait_for_compactions()?;
    }
    let stats = db.stats();
    let files: Vec<usize> = stats.levels.iter().map(|l| l.files).collect();
    let wanted = |level: usize| (1..=plan.levels).contains(&level);
    if files
        .iter()
        .enumerate()
        .any(|(level, &n)| (n > 0) != wanted(level))
    {
        return Err(Error::Layout(format!(
            "expected level 0 empty and levels 1 to {} non-empty, found files per level {files:?}",
            plan.levels
        )));
    }
    Ok(db)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_keys_alternate_and_are_distinct() {
        let ds = Dataset::synthetic(1000, 16, 10, 42).unwrap();
        assert_eq!(ds.present.len(), 1000);
        assert_eq!(ds.absent.len(), 1000);
        for (i, (k, v)) in ds.present.iter().enumerate() {
            assert_eq!((k.len(), v.len()), (16, 10));
            assert!(k < &ds.absent[i]);
            if i + 1 < ds.present.len() {
                assert!(ds.absent[i] < ds.present[i + 1].0);
            }
        }
        let again = Dataset::synthetic(1000, 16, 10, 42).unwrap();
        assert_eq!(again.absent, ds.absent);
        assert!(Dataset::synthetic(10, 4, 10, 1).is_err());
        let [lo, hi] = sentinels(&ds);
        assert!(ds.present.iter().all(|(k, _)| &lo < k && k < &hi));
        assert!(ds.absent.iter().all(|k| &lo < k && k < &hi));
    }

    #[test]
    fn leveled_plan_units_and_budgets() {
        let ds = Dataset::synthetic(10_000, 16, 100, 1).unwrap();
        let p = LeveledPlan::new(&ds, 3, 4, 10).unwrap();
        assert_eq!((p.units, p.flushes()), (21, 42));
        // 16 + 8 key bytes, 100 value bytes, 3 varint bytes, 1.25 filter.
        let want = 10_000.0 * 128.25 * 1.01 / 21.0;
        assert!((p.unit_bytes - want).abs() < 1e-6, "{}", p.unit_bytes);
        let o = p.options(10, None);
        assert_eq!(o.max_bytes_for_level_base, (3.5 * want).round() as u64);
        assert_eq!(o.level_size_multiplier, 4);
        o.validate().unwrap();
        assert!(LeveledPlan::new(&ds, 0, 4, 10).is_err());
        assert!(LeveledPlan::new(&ds, 7, 4, 10).is_err());
        assert!(LeveledPlan::new(&ds, 2, 1, 10).is_err());
        // 1 + 10 + ... + 10^5 units cannot get one key per flush.
        assert!(LeveledPlan::new(&ds, 6, 10, 10).is_err());
    }

    #[test]
    fn runs_partition_the_keys_evenly() {
        let l = RunLayout::random(103, 8, 9);
        assert_eq!(l.runs.len(), 8);
        let sizes: Vec<usize> = l.runs.iter().map(Vec::len).collect();
        assert!(sizes.iter().all(|&s| s == 12 || s == 13), "{sizes:?}");
        let mut all: Vec<usize> = l.runs.concat();
        all.sort_unstable();
        assert_eq!(all, (0..103).collect::<Vec<_>>());
        for (r, run) in l.runs.iter().enumerate() {
            assert!(run.iter().all(|&i| l.run_of[i] == r as u32));
        }
    }
}
