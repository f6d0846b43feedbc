//! Prefix filters (`Options::prefix_extractor`): a prefix scan, or a range
//! whose bounds share one extracted prefix, skips every table whose prefix
//! filter proves it holds no key of that prefix, and reads no data block
//! of it; results always equal a `BTreeMap` model's.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use siftdb::filter::{FilterKind, FixedPrefix, LevelFilter};
use siftdb::{CompactionStyle, Db, Options, Stats};

/// Eight overlapping level-0 tables. Prefixes are `kPPPP` (5 bytes); the
/// even ones are written, each to table `(P / 2) % 8` only, with five keys
/// `kPPPP/JJ`; the odd ones are absent, inside every table's key range.
const TABLES: u64 = 8;
const PREFIXES: u64 = 1600;

fn options(extractor: Option<usize>) -> Options {
    let mut o = Options::default();
    o.compaction_style = CompactionStyle::None;
    // So sparse that no probe in this test is a false positive (about
    // 7·10^-5 per table), which keeps the block counts exact.
    o.filters = vec![LevelFilter::BitsPerKey(FilterKind::Bloom, 20.0)];
    o.prefix_extractor = extractor.map(|n| Arc::new(FixedPrefix::new(n)) as _);
    o.block_size = 512;
    o
}

fn prefix(p: u64) -> String {
    format!("k{p:04}")
}

fn build(dir: &std::path::Path) -> BTreeMap<String, String> {
    let db = Db::open_with(dir, options(Some(5))).unwrap();
    let mut model = BTreeMap::new();
    for t in 0..TABLES {
        for p in (0..PREFIXES).step_by(2).filter(|p| (p / 2) % TABLES == t) {
            for j in 0..5 {
                let (k, v) = (format!("{}/{j:02}", prefix(p)), format!("v{p}.{j}"));
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        db.flush().unwrap();
    }
    assert_eq!(db.live_files().len() as u64, TABLES);
    model
}

fn scan(
    it: impl Iterator<Item = siftdb::Result<(siftdb::Slice, siftdb::Slice)>>,
) -> Vec<(String, String)> {
    it.map(|r| {
        let (k, v) = r.unwrap();
        (
            String::from_utf8(k.into_vec()).unwrap(),
            String::from_utf8(v.into_vec()).unwrap(),
        )
    })
    .collect()
}

fn model_scan(model: &BTreeMap<String, String>, p: &str) -> Vec<(String, String)> {
    model
        .iter()
        .filter(|(k, _)| k.starts_with(p))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// (block reads, prefix probes, prefix negatives) between two stats.
fn delta(before: &Stats, after: &Stats) -> (u64, u64, u64) {
    (
        after.scan_block_reads - before.scan_block_reads,
        after.prefix_probes - before.prefix_probes,
        after.prefix_negatives - before.prefix_negatives,
    )
}

#[test]
fn prefix_scans_read_only_the_tables_that_hold_the_prefix() {
    let dir = common::scratch_dir();
    let model = build(dir.path());
    let db = Db::open_with(dir.path(), options(Some(5))).unwrap();

    // A prefix no table holds: every table probed, none read.
    let before = db.stats();
    assert!(scan(db.prefix(prefix(801))).is_empty());
    assert_eq!(delta(&before, &db.stats()), (0, TABLES, TABLES));

    // A prefix held by one table: only that table is read, one block
    // (its five keys are adjacent).
    let before = db.stats();
    let p = prefix(802);
    assert_eq!(scan(db.prefix(&p)), model_scan(&model, &p));
    assert_eq!(scan(db.prefix(&p)).len(), 5);
    let (reads, probes, negatives) = delta(&before, &db.stats());
    assert_eq!((probes, negatives), (2 * TABLES, 2 * (TABLES - 1)));
    assert!((2..=4).contains(&reads), "{reads} blocks for two scans");

    // A longer scan prefix in the domain uses the same filter.
    let before = db.stats();
    assert_eq!(scan(db.prefix("k0802/0")), model_scan(&model, "k0802/0"));
    assert_eq!(delta(&before, &db.stats()).2, TABLES - 1);

    // A range whose bounds share one prefix, both ways.
    let before = db.stats();
    let got: Vec<_> = scan(db.range("k0802/01".."k0802/04"));
    let want: Vec<_> = model
        .range("k0802/01".to_string().."k0802/04".to_string())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(got.len(), 3);
    let mut back: Vec<_> = scan(db.range("k0802/01"..="k0802/04").rev());
    back.reverse();
    assert_eq!(back.len(), 4);
    assert_eq!(delta(&before, &db.stats()).2, 2 * (TABLES - 1));

    // Scans the filter cannot serve still answer exactly: a prefix too
    // short for the extractor, and a range across prefixes.
    let before = db.stats();
    assert_eq!(scan(db.prefix("k08")), model_scan(&model, "k08"));
    let across: Vec<_> = scan(db.range("k0801".."k0805"));
    assert_eq!(across.len(), 10);
    assert_eq!(delta(&before, &db.stats()).1, 0);

    // Compaction rebuilds the prefix filters.
    drop(db);
    let mut o = options(Some(5));
    o.compaction_style = CompactionStyle::Leveled;
    let db = Db::open_with(dir.path(), o).unwrap();
    db.compact().unwrap();
    assert!(db
        .live_files()
        .iter()
        .all(|f| f.level >= 1 && f.properties.prefix_filter.is_some()));
    let before = db.stats();
    for p in (1..PREFIXES).step_by(2).take(100) {
        assert!(scan(db.prefix(prefix(p))).is_empty());
    }
    let (reads, _, negatives) = delta(&before, &db.stats());
    assert_eq!(reads, 0);
    assert!(negatives >= 100, "{negatives}");
    for p in (0..PREFIXES).step_by(50) {
        assert_eq!(scan(db.prefix(prefix(p))), model_scan(&model, &prefix(p)));
    }
}

#[test]
fn another_extractor_or_none_scans_every_table_and_answers_the_same() {
    let dir = common::scratch_dir();
    let model = build(dir.path());
    for extractor in [None, Some(4)] {
        let db = Db::open_with(dir.path(), options(extractor)).unwrap();
        let before = db.stats();
        for p in [801, 802, 1598] {
            assert_eq!(scan(db.prefix(prefix(p))), model_scan(&model, &prefix(p)));
        }
        let (reads, probes, _) = delta(&before, &db.stats());
        // The tables' filters were built by `siftdb.fixed_prefix.5`: no
        // other extractor may use them, so every table whose key range
        // covers the prefix is read (all eight for 801 and 802).
        assert_eq!(probes, 0, "{extractor:?}");
        assert!(reads > 2 * TABLES, "{extractor:?}: {reads}");
    }
}

/// `verify` probes every table's prefix filter with the prefixes its keys
/// have: a clean database has no problem; a prefix filter that lost its
/// bits (with a checksum that still matches) is reported.
#[test]
fn verify_finds_prefix_filter_false_negatives() {
    let dir = common::scratch_dir();
    build(dir.path());
    let report = siftdb::inspect::verify_db(dir.path(), true, &mut |_, _| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);

    let db = Db::open_with(dir.path(), options(Some(5))).unwrap();
    let f = db.live_files().remove(0);
    drop(db);
    let pf = f.properties.prefix_filter.clone().unwrap();
    let mut bytes = std::fs::read(&f.path).unwrap();
    let (start, len) = (pf.handle.offset as usize, pf.handle.size as usize);
    // Clear the bit array (a classic Bloom filter keeps k in its last
    // byte), then write a matching checksum.
    bytes[start..start + len - 1].fill(0);
    let crc = common::crc32(&bytes[start..start + len]);
    bytes[start + len..start + len + 4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&f.path, &bytes).unwrap();
    let report = siftdb::inspect::verify_db(dir.path(), true, &mut |_, _| {}).unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    let p = &report.problems[0];
    assert_eq!(p.what, "prefix filter block");
    assert!(p.detail.contains("100 prefixes the table holds"), "{p:?}");
}
