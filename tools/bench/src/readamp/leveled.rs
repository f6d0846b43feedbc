//! Measuring one point of the leveled layout: build a tree with real
//! leveled compaction, read its shape back from the files, run the
//! lookups, and cross-check the engine's counters against an independent
//! walk of the levels (candidate file by key range, then its filter).

use std::collections::HashMap;
use std::ops::Bound;
use std::path::Path;

use siftdb::filter::{bloom_stats, hash_key, KeyHash};
use siftdb::inspect::key::ParsedInternalKey;
use siftdb::inspect::key::ValueType;

use super::dataset::{load_leveled, Dataset, LeveledPlan};
use super::measure::{needed, wrong, FileView, PointSpec, Tally, STREAM_LOOKUPS};
use super::model::{self, FileModel, Paths};
use super::{Config, Error, Point, Result};
use crate::rng::Rng;

/// Most of the key space a non-empty level may leave uncovered (keys
/// outside every file of the level, counted over the absent keys): the
/// layout is meant to let filters, not key ranges, decide.
pub const MAX_UNCOVERED: f64 = 0.02;

/// One file of a level, opened outside the engine.
struct LevelFile {
    view: FileView,
    model: FileModel,
}

impl LevelFile {
    fn smallest(&self) -> &[u8] {
        &self.view.table.properties().smallest_user_key
    }

    fn largest(&self) -> &[u8] {
        &self.view.table.properties().largest_user_key
    }
}

/// The file of `level` (disjoint files in key order) a lookup of `key`
/// consults, as DESIGN.md §3 describes it: the first whose largest key is
/// `>=` the key, if its range covers the key; `None` is a range skip.
fn candidate<'a>(level: &'a [LevelFile], key: &[u8]) -> Option<&'a LevelFile> {
    let i = level.partition_point(|f| f.largest() < key);
    level.get(i).filter(|f| key >= f.smallest())
}

/// Accounts the levels above the holder (all levels for an absent key).
fn walk(t: &mut Tally, levels: &[Vec<LevelFile>], key: &[u8], h: KeyHash) {
    for level in levels {
        match candidate(level, key) {
            Some(f) => t.miss(&f.view, h),
            None => t.range_skips += 1,
        }
    }
}

/// Builds the leveled layout of `spec` (`spec.files` = non-empty levels
/// `D`) in a fresh database under `work_dir` and measures it.
pub(crate) fn measure(
    spec: &PointSpec,
    ds: &Dataset,
    cfg: &Config,
    work_dir: &Path,
) -> Result<Point> {
    let name = spec.name();
    let dir = tempfile::Builder::new()
        .prefix("siftdb-readamp-")
        .tempdir_in(work_dir)
        .map_err(|e| Error::io(format!("create a directory in {}", work_dir.display()), e))?;
    let plan = LeveledPlan::new(ds, spec.files, cfg.leveled_multiplier, spec.bits_per_key)?;
    let seed = cfg.seed ^ spec.layout.stream();
    let db = load_leveled(
        dir.path(),
        ds,
        &plan,
        plan.options(spec.bits_per_key, spec.hashes),
        seed,
    )?;
    let compactions = db.stats().compactions;

    // The tree as the engine lists it, each file opened independently.
    let mut levels: Vec<Vec<LevelFile>> = (0..plan.levels).map(|_| Vec::new()).collect();
    for lf in db.live_files() {
        if lf.level == 0 || lf.level > plan.levels {
            return Err(Error::Layout(format!(
                "{name}: file {} is live at level {}",
                lf.number, lf.level
            )));
        }
        let view = FileView::open(&lf.path, lf.number)?;
        if view.table.has_filter() != (spec.bits_per_key > 0) {
            return Err(Error::Layout(format!(
                "{name}: file {} has_filter = {} with bits_per_key = {}",
                lf.number,
                view.table.has_filter(),
                spec.bits_per_key
            )));
        }
        let model = view.model();
        levels[lf.level - 1].push(LevelFile { view, model });
    }
    for (i, level) in levels.iter_mut().enumerate() {
        level.sort_by(|a, b| a.smallest().cmp(b.smallest()));
        if level.is_empty() || level.windows(2).any(|w| w[0].largest() >= w[1].smallest()) {
            return Err(Error::Layout(format!(
                "{name}: level {} is empty or its files overlap",
                i + 1
            )));
        }
    }

    // Which level holds each present key, read from the tables themselves:
    // every loaded key exactly once, with its value, and nothing else.
    let index: HashMap<&[u8], usize> = ds
        .present
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (k.as_slice(), i))
        .collect();
    let mut level_of = vec![usize::MAX; ds.present.len()];
    for (li, level) in levels.iter().enumerate() {
        for f in level {
            for entry in f.view.table.iter(Bound::Unbounded, Bound::Unbounded) {
                let (ik, value) = entry?;
                let p = ParsedInternalKey::parse(&ik)
                    .ok_or_else(|| Error::Layout(format!("{name}: malformed internal key")))?;
                let bad = |what: &str| {
                    Error::Layout(format!(
                        "{name}: level {} holds {what} {}",
                        li + 1,
                        siftdb::inspect::escape::escape_bytes(p.user_key)
                    ))
                };
                let Some(&i) = index.get(p.user_key) else {
                    return Err(bad("a key never loaded,"));
                };
                if p.value_type != ValueType::Value || value != ds.present[i].1 {
                    return Err(bad("a tombstone or a wrong value for"));
                }
                if level_of[i] != usize::MAX {
                    return Err(bad("a second version of"));
                }
                level_of[i] = li;
            }
        }
    }
    if let Some(i) = level_of.iter().position(|&l| l == usize::MAX) {
        return Err(wrong(&name, &ds.present[i].0, "loaded key is in no level"));
    }
    let mut level_keys = vec![0u64; plan.levels];
    for &l in &level_of {
        level_keys[l] += 1;
    }

    // The model, key by key over every key the lookups draw from.
    let mut consulted: Vec<Option<FileModel>> = Vec::with_capacity(plan.levels);
    let mut absent = Paths::default();
    let mut uncovered = vec![0u64; plan.levels];
    for key in &ds.absent {
        consulted.clear();
        for (li, level) in levels.iter().enumerate() {
            let c = candidate(level, key);
            uncovered[li] += u64::from(c.is_none());
            consulted.push(c.map(|f| f.model));
        }
        absent.add(&consulted, None);
    }
    if let Some((li, &u)) = uncovered
        .iter()
        .enumerate()
        .find(|(_, &u)| u as f64 > MAX_UNCOVERED * ds.absent.len() as f64)
    {
        return Err(Error::Layout(format!(
            "{name}: level {} covers too little of the key space: {u} of {} absent keys \
             fall outside its files",
            li + 1,
            ds.absent.len()
        )));
    }
    let mut present = Paths::default();
    for (i, (key, _)) in ds.present.iter().enumerate() {
        let holder_level = level_of[i];
        consulted.clear();
        for level in &levels[..holder_level] {
            consulted.push(candidate(level, key).map(|f| f.model));
        }
        let holder = candidate(&levels[holder_level], key)
            .ok_or_else(|| wrong(&name, key, "the level holding the key does not cover it"))?;
        present.add(&consulted, Some(&holder.model));
    }

    let all_models: Vec<FileModel> = levels.iter().flatten().map(|f| f.model).collect();
    let fill = model::expected(&all_models).fill;
    let n_absent = needed(
        cfg.absent_lookups,
        &[
            (absent.reads(), absent.reads_variance(), 1.0),
            (absent.range_skips(), absent.range_skips_variance(), 1.0),
            absent.fpr().map_or((0.0, 0.0, 1.0), |p| {
                (p, p * (1.0 - p), absent.other_probes())
            }),
        ],
        cfg,
    );
    let n_present = needed(
        cfg.present_lookups,
        &[
            (present.reads(), present.reads_variance(), 1.0),
            (present.range_skips(), present.range_skips_variance(), 1.0),
        ],
        cfg,
    );

    let mut rng = Rng::new(seed, &[STREAM_LOOKUPS, spec.files as u64]);
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
        want_absent.gets += 1;
        walk(&mut want_absent, &levels, key, hash_key(key));
    }
    let s1 = db.stats();
    let mut want_present = Tally::default();
    for _ in 0..n_present {
        let i = rng.below(ds.present.len());
        let (key, value) = &ds.present[i];
        match db.get(key)? {
            Some(v) if v == value => {}
            Some(_) => return Err(wrong(&name, key, "present key returned a wrong value")),
            None => return Err(wrong(&name, key, "present key was not found")),
        }
        want_present.gets += 1;
        let l = level_of[i];
        walk(&mut want_present, &levels[..l], key, hash_key(key));
        if let Some(f) = candidate(&levels[l], key) {
            want_present.hit(&f.view);
        }
    }
    let s2 = db.stats();
    drop(db);
    let got_absent = Tally::delta(&s0, &s1);
    let got_present = Tally::delta(&s1, &s2);
    want_absent.check(&got_absent, &name, "absent")?;
    want_present.check(&got_present, &name, "present")?;

    let f = cfg.absent_fraction;
    let (na, np) = (n_absent as f64, n_present as f64);
    let mix = |a: f64, p: f64| f * a + (1.0 - f) * p;
    let per = |count: u64, n: f64| count as f64 / n;
    let filtered = spec.bits_per_key > 0;
    let non_holder_probes = if filtered {
        (got_absent.probes + got_present.probes).saturating_sub(n_present as u64)
    } else {
        0
    };
    let (mut bits, mut bits_set, mut k) = (0u64, 0u64, 0u32);
    for lf in levels.iter().flatten() {
        if let Some(s) = lf.view.table.filter_bytes().and_then(bloom_stats) {
            bits += s.bits;
            bits_set += s.bits_set;
            k = s.num_hashes;
        }
    }
    // The false-positive rate the batches should show: expected false
    // positives over expected probes of files not holding the key.
    let fpr_theory = filtered.then(|| {
        (na * absent.false_positives() + np * present.false_positives())
            / (na * absent.other_probes() + np * present.other_probes())
    });
    let distinct: u64 = level_keys.iter().sum();
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
        reads_absent: per(got_absent.reads, na),
        reads_present: per(got_present.reads, np),
        reads_mixed: mix(per(got_absent.reads, na), per(got_present.reads, np)),
        theory_absent: absent.reads(),
        theory_present: present.reads(),
        theory_mixed: mix(absent.reads(), present.reads()),
        fpr_measured: (filtered && non_holder_probes > 0).then(|| {
            (got_absent.false_positives + got_present.false_positives) as f64
                / non_holder_probes as f64
        }),
        fpr_theory,
        bits_set_fraction: (bits > 0).then(|| bits_set as f64 / bits as f64),
        bits_set_theory: fill,
        files_skipped_per_lookup: mix(
            per(got_absent.negatives + got_absent.range_skips, na),
            per(got_present.negatives + got_present.range_skips, np),
        ),
        skipped_theory: mix(absent.skips(), present.skips()),
        filter_probes_per_lookup: mix(per(got_absent.probes, na), per(got_present.probes, np)),
        probes_theory: mix(absent.probes(), present.probes()),
        filter_bits_per_key: bits as f64 / distinct as f64,
        levels: plan.levels,
        level_keys,
        level_files: levels.iter().map(Vec::len).collect(),
        compactions,
        range_skips_per_lookup: mix(
            per(got_absent.range_skips, na),
            per(got_present.range_skips, np),
        ),
        range_skips_theory: mix(absent.range_skips(), present.range_skips()),
    })
}
