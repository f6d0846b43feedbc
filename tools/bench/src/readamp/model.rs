//! The cost model the benchmark checks the engine against.
//!
//! A point lookup in an LSM-tree with `L` overlapping runs (one SSTable
//! each) consults the runs newest first and stops at the first run that
//! holds the key. A run whose Bloom filter (Bloom 1970) answers "definitely
//! absent" costs no I/O; one whose filter answers "maybe" costs one
//! data-block read. If every filter has false-positive rate `p` and a
//! present key is equally likely to live in any run:
//!
//! * an absent key reads `L·p` data blocks per lookup (no filters: `L`);
//! * a present key reads `1 + ((L−1)/2)·p` (no filters: `(L+1)/2`): one
//!   block in the run that holds it, plus a false positive with
//!   probability `p` in each of the on average `(L−1)/2` newer runs;
//! * a Bloom filter of `m` bits over `n` keys with `k` probes per key has
//!   `p = (1 − e^(−k·n/m))^k`, minimised near `k = (m/n)·ln 2`, where about
//!   half the bits are set (Bloom 1970; with two hash functions standing in
//!   for `k` by double hashing, Kirsch and Mitzenmacher 2006).
//!
//! This per-run view of lookup cost is the one Monkey (Dayan, Athanassoulis
//! and Idreos, SIGMOD 2017, §3) uses to reallocate filter memory across
//! levels.
//!
//! [`expected`] evaluates the model per file, with each file's own `n`,
//! `m` and `k` as read from its filter, so that rounding `m` up to whole
//! bytes and unequal run sizes are part of the theory rather than of the
//! measurement error. The closed forms above ([`absent_reads`],
//! [`present_reads`], [`mixed_reads`]) are the same model with equal runs.
//!
//! # A leveled tree
//!
//! In levels 1 and deeper the files of a level have disjoint key ranges, so
//! a lookup consults one *candidate* file per level (the first whose
//! largest key is `>=` the key), newest level first, and skips the level
//! without any work if that file's range does not cover the key (a *range
//! skip*). With `D` non-empty levels, each covering the whole key space,
//! level `j` holding a fraction `w_j` of the keys and a filter of
//! false-positive rate `p_j`, this is the run model with `L = D` except
//! that a present key is not equally likely to be in any level:
//!
//! * an absent key reads `Σ_j p_j` blocks (no filters: `D`);
//! * a present key in level `j` reads `1 + Σ_{i<j} p_i`, so on average
//!   `Σ_j w_j · (1 + Σ_{i<j} p_i)` (no filters: `Σ_j w_j · j`), which is
//!   more than the runs' `1 + ((D−1)/2)·p` because deeper levels hold more
//!   keys ([`leveled_present_reads`], [`leveled_absent_reads`]).
//!
//! [`Paths`] evaluates the same model one lookup key at a time, with the
//! candidate file each level actually offers for that key (or a range
//! skip): averaged over every key a batch draws from, that is the exact
//! expectation for the files as they are, key ranges included.

/// The filter of one SSTable (one run), as the model sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FileModel {
    /// Keys that present lookups draw from and that live in this run; the
    /// run holding a present key is chosen in proportion to this.
    pub lookup_keys: u64,
    /// Distinct keys in the filter, `n` (may exceed `lookup_keys` when a
    /// layout adds keys that are never looked up).
    pub filter_keys: u64,
    /// Bits in the filter's array, `m`; 0 means the file has no filter.
    pub filter_bits: u64,
    /// Probes per key, `k`.
    pub hashes: u32,
}

impl FileModel {
    /// The filter's false-positive rate `(1 − e^(−k·n/m))^k`, or 1.0 for a
    /// file without a filter (every lookup within its range reads a block).
    pub fn fpr(&self) -> f64 {
        match self.fill() {
            Some(q) => q.powi(self.hashes as i32),
            None => 1.0,
        }
    }

    /// The expected fraction of filter bits set, `1 − e^(−k·n/m)`, or
    /// `None` without a filter.
    pub fn fill(&self) -> Option<f64> {
        if self.filter_bits == 0 || self.hashes == 0 {
            return None;
        }
        let load = f64::from(self.hashes) * self.filter_keys as f64 / self.filter_bits as f64;
        Some(1.0 - (-load).exp())
    }
}

/// What the model predicts for one layout, per lookup.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Expected {
    /// Data-block reads per lookup of an absent key.
    pub absent_reads: f64,
    /// Data-block reads per lookup of a present key.
    pub present_reads: f64,
    /// Variance of the reads of one absent lookup (for sizing samples).
    pub absent_variance: f64,
    /// Variance of the reads of one present lookup.
    pub present_variance: f64,
    /// Files skipped (filter says absent) per absent lookup.
    pub absent_skips: f64,
    /// Files skipped per present lookup.
    pub present_skips: f64,
    /// Filter probes per absent lookup (0 without filters).
    pub absent_probes: f64,
    /// Filter probes per present lookup (0 without filters).
    pub present_probes: f64,
    /// Mean false-positive rate over the files, `None` without filters.
    pub fpr: Option<f64>,
    /// Expected fraction of filter bits set over all files (weighted by
    /// `m`), `None` without filters.
    pub fill: Option<f64>,
}

impl Expected {
    /// Data-block reads per lookup when a fraction `absent_fraction` of
    /// lookups are for absent keys.
    pub fn mixed_reads(&self, absent_fraction: f64) -> f64 {
        absent_fraction * self.absent_reads + (1.0 - absent_fraction) * self.present_reads
    }

    /// Files skipped per lookup at `absent_fraction`.
    pub fn mixed_skips(&self, absent_fraction: f64) -> f64 {
        absent_fraction * self.absent_skips + (1.0 - absent_fraction) * self.present_skips
    }

    /// Filter probes per lookup at `absent_fraction`.
    pub fn mixed_probes(&self, absent_fraction: f64) -> f64 {
        absent_fraction * self.absent_probes + (1.0 - absent_fraction) * self.present_probes
    }
}

/// Evaluates the model for `files`, listed newest first (the order a
/// lookup consults them). Every file is assumed to span the whole key
/// range, so no key-range check ever skips one.
///
/// Returns all zeros for an empty list.
pub fn expected(files: &[FileModel]) -> Expected {
    let total: u64 = files.iter().map(|f| f.lookup_keys).sum();
    if files.is_empty() || total == 0 {
        return Expected::default();
    }
    let filtered = files.iter().any(|f| f.fill().is_some());
    let p: Vec<f64> = files.iter().map(FileModel::fpr).collect();

    // Absent: every file is consulted; each reads a block with prob. p_i.
    let absent_reads: f64 = p.iter().sum();
    let absent_variance: f64 = p.iter().map(|p| p * (1.0 - p)).sum();
    let absent_skips: f64 = p.iter().map(|p| 1.0 - p).sum();

    // Present: the key lives in file j with probability w_j; the files
    // newer than j each read a block with probability p_i, file j always.
    let (mut reads, mut second, mut within, mut skips, mut probes) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let (mut newer_p, mut newer_var, mut newer_skip) = (0.0, 0.0, 0.0);
    for (j, f) in files.iter().enumerate() {
        let w = f.lookup_keys as f64 / total as f64;
        let c = 1.0 + newer_p;
        reads += w * c;
        second += w * c * c;
        within += w * newer_var;
        skips += w * newer_skip;
        probes += w * (j + 1) as f64;
        newer_p += p[j];
        newer_var += p[j] * (1.0 - p[j]);
        newer_skip += 1.0 - p[j];
    }
    let present_variance = within + (second - reads * reads).max(0.0);

    let (mut fill_bits, mut bits) = (0.0, 0.0);
    for f in files {
        if let Some(q) = f.fill() {
            fill_bits += q * f.filter_bits as f64;
            bits += f.filter_bits as f64;
        }
    }
    let filter_files = files.iter().filter(|f| f.fill().is_some()).count();
    Expected {
        absent_reads,
        present_reads: reads,
        absent_variance,
        present_variance,
        absent_skips,
        present_skips: skips,
        absent_probes: if filtered { files.len() as f64 } else { 0.0 },
        present_probes: if filtered { probes } else { 0.0 },
        fpr: filtered.then(|| {
            files
                .iter()
                .zip(&p)
                .filter(|(f, _)| f.fill().is_some())
                .map(|(_, p)| p)
                .sum::<f64>()
                / filter_files as f64
        }),
        fill: (bits > 0.0).then(|| fill_bits / bits),
    }
}

/// Expected counts of one batch of lookups in a tree where key ranges
/// decide which files a lookup consults (levels 1 and deeper), built one
/// lookup key at a time with [`Paths::add`]. Add every key the batch draws
/// from (uniformly): the means are then exact expectations, and the
/// variances those of one lookup drawn at random (the spread over keys plus
/// the filters' coin flips), for sizing samples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Paths {
    keys: u64,
    reads: f64,
    reads_sq: f64,
    reads_within: f64,
    skips: f64,
    probes: f64,
    range_skips: f64,
    range_skips_sq: f64,
    false_positives: f64,
    other_probes: f64,
}

impl Paths {
    /// Adds one lookup key. `consulted` lists, newest level first, every
    /// level the lookup passes without finding the key: `Some(file)` when
    /// that level's candidate file covers the key (its filter is probed and
    /// a false positive, probability `p`, costs a read; without a filter
    /// the block is always read), `None` when the level is skipped by key
    /// range. `holder` is the file holding the key (present keys): its
    /// filter is probed and one block is always read.
    pub fn add(&mut self, consulted: &[Option<FileModel>], holder: Option<&FileModel>) {
        let (mut reads, mut var, mut skips, mut probes) = (0.0, 0.0, 0.0, 0.0);
        let (mut range, mut fp, mut other) = (0.0, 0.0, 0.0);
        for c in consulted {
            match c {
                None => range += 1.0,
                Some(f) => {
                    let p = f.fpr();
                    reads += p;
                    var += p * (1.0 - p);
                    if f.fill().is_some() {
                        probes += 1.0;
                        other += 1.0;
                        fp += p;
                        skips += 1.0 - p;
                    }
                }
            }
        }
        if let Some(h) = holder {
            reads += 1.0;
            if h.fill().is_some() {
                probes += 1.0;
            }
        }
        self.keys += 1;
        self.reads += reads;
        self.reads_sq += reads * reads;
        self.reads_within += var;
        self.skips += skips + range;
        self.probes += probes;
        self.range_skips += range;
        self.range_skips_sq += range * range;
        self.false_positives += fp;
        self.other_probes += other;
    }

    /// Lookup keys added.
    pub fn keys(&self) -> u64 {
        self.keys
    }

    fn mean(&self, sum: f64) -> f64 {
        if self.keys == 0 {
            0.0
        } else {
            sum / self.keys as f64
        }
    }

    /// Data-block reads per lookup.
    pub fn reads(&self) -> f64 {
        self.mean(self.reads)
    }

    /// Variance of the reads of one lookup.
    pub fn reads_variance(&self) -> f64 {
        let m = self.reads();
        self.mean(self.reads_within) + (self.mean(self.reads_sq) - m * m).max(0.0)
    }

    /// Files skipped per lookup: filter negatives plus range skips.
    pub fn skips(&self) -> f64 {
        self.mean(self.skips)
    }

    /// Filter probes per lookup.
    pub fn probes(&self) -> f64 {
        self.mean(self.probes)
    }

    /// Levels skipped by key range per lookup.
    pub fn range_skips(&self) -> f64 {
        self.mean(self.range_skips)
    }

    /// Variance of the range skips of one lookup (they depend on the key
    /// only).
    pub fn range_skips_variance(&self) -> f64 {
        let m = self.range_skips();
        (self.mean(self.range_skips_sq) - m * m).max(0.0)
    }

    /// Filter false positives per lookup.
    pub fn false_positives(&self) -> f64 {
        self.mean(self.false_positives)
    }

    /// Filter probes of files not holding the key, per lookup.
    pub fn other_probes(&self) -> f64 {
        self.mean(self.other_probes)
    }

    /// The false-positive rate the filters probed are expected to show:
    /// false positives over probes of files not holding the key; `None`
    /// when no filter is probed.
    pub fn fpr(&self) -> Option<f64> {
        (self.other_probes > 0.0).then(|| self.false_positives / self.other_probes)
    }
}

/// Data-block reads per absent-key lookup in a leveled tree whose every
/// level covers the whole key space, with filter false-positive rates `p`
/// (one per non-empty level; 1.0 for no filter): `Σ_j p_j`.
pub fn leveled_absent_reads(p: &[f64]) -> f64 {
    p.iter().sum()
}

/// Data-block reads per present-key lookup in a leveled tree whose
/// non-empty levels, newest first, hold `level_keys` keys and have filter
/// false-positive rates `p`, every level covering the whole key space:
/// `Σ_j w_j · (1 + Σ_{i<j} p_i)` with `w_j = level_keys[j] / Σ level_keys`;
/// `Σ_j w_j · j` (levels numbered from 1) without filters. 0 without keys.
pub fn leveled_present_reads(level_keys: &[u64], p: &[f64]) -> f64 {
    let total: u64 = level_keys.iter().sum();
    if total == 0 {
        return 0.0;
    }
    let mut above = 0.0;
    let mut reads = 0.0;
    for (&n, &p) in level_keys.iter().zip(p) {
        reads += n as f64 / total as f64 * (1.0 + above);
        above += p;
    }
    reads
}

/// Data-block reads per absent-key lookup over `files` equal runs whose
/// filters have false-positive rate `p` (1.0 for no filters): `L·p`.
pub fn absent_reads(files: usize, p: f64) -> f64 {
    files as f64 * p
}

/// Data-block reads per present-key lookup over `files` equal runs with
/// false-positive rate `p`: `1 + ((L−1)/2)·p`, which is `(L+1)/2` for
/// `p = 1` (no filters).
pub fn present_reads(files: usize, p: f64) -> f64 {
    1.0 + (files as f64 - 1.0) / 2.0 * p
}

/// Data-block reads per lookup when a fraction `absent_fraction` of
/// lookups miss: `f·L·p + (1−f)·(1 + ((L−1)/2)·p)`.
pub fn mixed_reads(files: usize, p: f64, absent_fraction: f64) -> f64 {
    absent_fraction * absent_reads(files, p) + (1.0 - absent_fraction) * present_reads(files, p)
}

/// The false-positive rate of a Bloom filter with `bits_per_key` bits per
/// key (`m/n`) and `k` probes, `(1 − e^(−k·n/m))^k`; 1.0 when
/// `bits_per_key` is 0 (no filter). Same as
/// [`siftdb::filter::theoretical_fpr`].
pub fn bloom_fpr(bits_per_key: f64, k: u32) -> f64 {
    siftdb::filter::theoretical_fpr(bits_per_key, k)
}

/// The `k` siftdb uses for `bits_per_key` when none is forced:
/// `round(bits_per_key · ln 2)` clamped to `1..=30`, the integer nearest
/// the minimiser of [`bloom_fpr`].
pub fn best_hashes(bits_per_key: u32) -> u32 {
    siftdb::filter::BloomFilterPolicy::new(bits_per_key).num_hashes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn equal(l: usize, bits_per_key: u64, k: u32) -> Vec<FileModel> {
        vec![
            FileModel {
                lookup_keys: 1000,
                filter_keys: 1000,
                filter_bits: bits_per_key * 1000,
                hashes: k,
            };
            l
        ]
    }

    #[test]
    fn headline_numbers() {
        // 8 files, 40% absent: 5.90 reads without filters, 0.64 with
        // 10 bits/key and k = 7.
        assert!((mixed_reads(8, 1.0, 0.4) - 5.9).abs() < 1e-12);
        let p = bloom_fpr(10.0, 7);
        assert!((p - 0.008_19).abs() < 1e-5);
        let with = mixed_reads(8, p, 0.4);
        assert!((with - 0.6434).abs() < 1e-3, "{with}");
        assert!((1.0 - with / 5.9 - 0.89).abs() < 0.01);
        assert_eq!(best_hashes(10), 7);
    }

    #[test]
    fn per_file_model_reduces_to_closed_forms() {
        for l in [1, 2, 8, 32] {
            let e = expected(&equal(l, 10, 7));
            let p = bloom_fpr(10.0, 7);
            assert!((e.absent_reads - absent_reads(l, p)).abs() < 1e-12);
            assert!((e.present_reads - present_reads(l, p)).abs() < 1e-12);
            assert!((e.fpr.unwrap() - p).abs() < 1e-15);
            assert!((e.fill.unwrap() - (1.0 - (-0.7f64).exp())).abs() < 1e-12);
            assert_eq!(e.absent_probes, l as f64);
            assert!((e.present_probes - (l as f64 + 1.0) / 2.0).abs() < 1e-12);
            assert!((e.absent_skips - l as f64 * (1.0 - p)).abs() < 1e-12);
            let none = expected(&equal(l, 0, 0));
            assert_eq!(none.absent_reads, l as f64);
            assert!((none.present_reads - (l as f64 + 1.0) / 2.0).abs() < 1e-12);
            // Uniform position 1..=L: variance (L²−1)/12.
            let v = (l * l - 1) as f64 / 12.0;
            assert!((none.present_variance - v).abs() < 1e-9);
            assert_eq!(none.fpr, None);
            assert_eq!(none.absent_probes, 0.0);
            assert_eq!(none.absent_skips, 0.0);
        }
    }

    #[test]
    fn paths_reduce_to_the_leveled_closed_forms() {
        // Three levels of 100, 400 and 1600 keys, full coverage.
        let keys = [100u64, 400, 1600];
        for bits in [0u64, 10] {
            let files: Vec<FileModel> = keys
                .iter()
                .map(|&n| FileModel {
                    lookup_keys: n,
                    filter_keys: n,
                    filter_bits: bits * n,
                    hashes: if bits == 0 { 0 } else { 7 },
                })
                .collect();
            let p: Vec<f64> = files.iter().map(FileModel::fpr).collect();
            let consulted: Vec<Option<FileModel>> = files.iter().copied().map(Some).collect();
            let mut absent = Paths::default();
            let mut present = Paths::default();
            for _ in 0..10 {
                absent.add(&consulted, None);
            }
            for (j, f) in files.iter().enumerate() {
                for _ in 0..keys[j] {
                    present.add(&consulted[..j], Some(f));
                }
            }
            assert!((absent.reads() - leveled_absent_reads(&p)).abs() < 1e-12);
            let want = leveled_present_reads(&keys, &p);
            assert!((present.reads() - want).abs() < 1e-12);
            assert_eq!(absent.range_skips(), 0.0);
            if bits == 0 {
                assert_eq!(absent.reads(), 3.0);
                // (100·1 + 400·2 + 1600·3) / 2100
                assert!((want - 5700.0 / 2100.0).abs() < 1e-12);
                assert_eq!(present.probes(), 0.0);
                assert_eq!(absent.fpr(), None);
            } else {
                let q = bloom_fpr(10.0, 7);
                assert!((absent.fpr().unwrap() - q).abs() < 1e-12);
                assert_eq!(absent.probes(), 3.0);
                assert!((absent.skips() - 3.0 * (1.0 - q)).abs() < 1e-12);
            }
        }
        // Equal levels: the run model with L = D.
        let p = bloom_fpr(10.0, 7);
        let r = leveled_present_reads(&[5, 5, 5, 5], &[p; 4]);
        assert!((r - present_reads(4, p)).abs() < 1e-12);
        // A range skip costs nothing and is counted.
        let f = equal(1, 10, 7)[0];
        let mut one = Paths::default();
        one.add(&[None, Some(f)], None);
        one.add(&[Some(f), Some(f)], None);
        assert!((one.range_skips() - 0.5).abs() < 1e-12);
        assert!((one.range_skips_variance() - 0.25).abs() < 1e-12);
        assert!((one.reads() - 1.5 * f.fpr()).abs() < 1e-12);
        assert!((one.skips() - (0.5 + 1.5 * (1.0 - f.fpr()))).abs() < 1e-12);
    }

    #[test]
    fn half_the_bits_are_set_at_the_best_k() {
        let f = equal(1, 10, 7)[0];
        assert!((f.fill().unwrap() - 0.5).abs() < 0.01);
        // k = 7 beats its neighbours at 10 bits/key.
        assert!(bloom_fpr(10.0, 7) < bloom_fpr(10.0, 6));
        assert!(bloom_fpr(10.0, 7) < bloom_fpr(10.0, 8));
    }
}
