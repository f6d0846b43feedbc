//! Per-level filter policies (`Options::filters`): a database written under
//! three policies across reopens holds tables of every kind side by side,
//! answers exactly as a `BTreeMap` model for present and absent keys, and a
//! compaction rebuilds each output with its level's policy. Every kind finds
//! every Debian package name in a filter built over them.

mod common;

use std::collections::{BTreeMap, HashSet};

use siftdb::filter::{
    hash_key, FilterKind, KeyHash, LevelFilter, BLOCKED_BLOOM_POLICY_NAME, BLOOM_POLICY_NAME,
    RIBBON_POLICY_NAME,
};
use siftdb::{Db, Options};

fn base_options() -> Options {
    let mut o = Options::default();
    o.write_buffer_size = 8 << 10;
    o.target_file_size = 8 << 10;
    o.max_bytes_for_level_base = 32 << 10;
    o.level0_compaction_trigger = 2;
    o
}

/// The three policies the phases use.
fn phases() -> Vec<Options> {
    let classic = base_options();
    let mut upper_blocked = base_options();
    upper_blocked.filters = vec![
        LevelFilter::BitsPerKey(FilterKind::BlockedBloom, 10.0),
        LevelFilter::FalsePositiveRate(FilterKind::Ribbon, 0.01),
    ];
    let mut mixed = base_options();
    mixed.filters = vec![
        LevelFilter::BitsPerKey(FilterKind::Ribbon, 8.0),
        LevelFilter::None,
        LevelFilter::FalsePositiveRate(FilterKind::BlockedBloom, 0.02),
    ];
    vec![classic, upper_blocked, mixed]
}

/// Policy names of the live tables, by level.
fn kinds_by_level(db: &Db) -> BTreeMap<usize, HashSet<String>> {
    let mut m: BTreeMap<usize, HashSet<String>> = BTreeMap::new();
    for f in db.live_files() {
        m.entry(f.level)
            .or_default()
            .insert(f.properties.filter_policy.clone());
    }
    m
}

fn check(db: &Db, model: &BTreeMap<String, String>, what: &str) {
    for i in 0..3000 {
        let k = format!("key{i:05}");
        assert_eq!(
            db.get(&k).unwrap().map(Vec::from),
            model.get(&k).map(|v| v.clone().into_bytes()),
            "{what}: {k}"
        );
    }
    let all: Vec<(Vec<u8>, Vec<u8>)> = db.iter().map(common::owned).collect();
    assert_eq!(all.len(), model.len(), "{what}: scan");
}

#[test]
fn three_policies_across_reopens_answer_as_the_model_and_compaction_applies_each_levels_policy() {
    let dir = common::scratch_dir();
    let mut model = BTreeMap::new();
    let mut rng = common::Rng(5);
    let mut seen = HashSet::new();
    for (phase, o) in phases().into_iter().enumerate() {
        let db = Db::open_with(dir.path(), o).unwrap();
        for n in 0..4000u64 {
            // Keys 0..2000 are written; 2000..3000 stay absent.
            let k = format!("key{:05}", rng.below(2000));
            if rng.below(8) == 0 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = format!("phase {phase} write {n}");
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
        check(&db, &model, &format!("phase {phase}"));
        for names in kinds_by_level(&db).into_values() {
            seen.extend(names);
        }
        db.close().unwrap();
    }
    // Tables of every kind were written (some may since be compacted away,
    // so each phase recorded what it saw).
    for name in [
        BLOOM_POLICY_NAME,
        BLOCKED_BLOOM_POLICY_NAME,
        RIBBON_POLICY_NAME,
        "",
    ] {
        assert!(
            seen.contains(name),
            "no table with filter {name:?}: {seen:?}"
        );
    }

    // Reopen under the last policy and compact everything: each output
    // carries its level's filter.
    let mut o = phases().pop().unwrap();
    let db = Db::open_with(dir.path(), o.clone()).unwrap();
    check(&db, &model, "reopened");
    db.compact().unwrap();
    check(&db, &model, "compacted");
    let by_level = kinds_by_level(&db);
    // Everything sits in one level, at least level 2 (the third entry,
    // which serves deeper levels too).
    assert_eq!(by_level.len(), 1, "{by_level:?}");
    let (&deepest, names) = by_level.iter().next().unwrap();
    assert!(deepest >= 2, "{by_level:?}");
    assert_eq!(
        names,
        &HashSet::from([BLOCKED_BLOOM_POLICY_NAME.to_string()])
    );
    // Absent keys inside the table's key range: nearly all skip it by its
    // filter (2% design).
    let before = db.stats();
    for i in 0..1000 {
        assert_eq!(db.get(format!("key{i:05}x")).unwrap(), None);
    }
    let after = db.stats();
    let reads = after.data_block_reads - before.data_block_reads;
    assert!(reads < 60, "{reads} data-block reads for 1,000 absent keys");
    // `verify` accepts the padding that places a blocked Bloom filter on
    // cache lines, and finds no false negative in any kind.
    drop(db);
    let report = siftdb::inspect::verify_db(dir.path(), true, &mut |_, _| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let db = Db::open_with(dir.path(), o.clone()).unwrap();
    drop(db);

    // The same data with no filter on the last level: compaction drops it,
    // and absent keys in its key range read a data block each.
    o.skip_filters_on_last_level = true;
    o.filters.clear();
    let db = Db::open_with(dir.path(), o).unwrap();
    db.compact().unwrap();
    check(&db, &model, "compacted without last-level filters");
    let by_level = kinds_by_level(&db);
    let deepest = *by_level.keys().max().unwrap();
    assert_eq!(by_level[&deepest], HashSet::from([String::new()]));
    let before = db.stats();
    for i in 0..1000 {
        // Keys absent from the model but inside the tables' key range.
        let k = format!("key{i:05}x");
        assert_eq!(db.get(&k).unwrap(), None);
    }
    let after = db.stats();
    assert!(
        after.data_block_reads - before.data_block_reads >= 900,
        "{} reads",
        after.data_block_reads - before.data_block_reads
    );
}

#[test]
fn every_kind_finds_every_debian_package_name() {
    let names: Vec<KeyHash> = common::gz_lines("debian-packages.tsv.gz")
        .iter()
        .map(|l| hash_key(l.split_once('\t').unwrap().0.as_bytes()))
        .collect();
    assert_eq!(names.len(), 63_681);
    for kind in FilterKind::ALL {
        for f in [
            LevelFilter::BitsPerKey(kind, 4.0),
            LevelFilter::BitsPerKey(kind, 9.5),
            LevelFilter::FalsePositiveRate(kind, 0.001),
        ] {
            let p = f.policy().unwrap();
            let filter = p.create_filter(&names);
            let missed = names.iter().filter(|&&h| !p.may_match(&filter, h)).count();
            assert_eq!(missed, 0, "{f:?}: {missed} false negatives");
        }
    }
}
