//! The keys a benchmark point loads and looks up, and how they are laid
//! out into runs.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::Path;

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
