//! The read-amplification model holds on small layouts: 8 overlapping
//! runs without filters and with 10 bits/key, and a 3-level tree built by
//! leveled compaction, measured with the engine's own counters (see
//! `siftdb_bench::readamp`).
//!
//! Seeded, so the same numbers every run. The number of lookups per point
//! is raised until a standard error is at most a fifth of the tolerance,
//! so a correct engine fails these assertions by chance with probability
//! well under one in a million.

use siftdb_bench::readamp::model::{bloom_fpr, leveled_present_reads, present_reads};
use siftdb_bench::readamp::{self, agrees, describe, Config, Headline, Layout, Point};

fn small_config() -> Config {
    let mut c = Config::default();
    c.keys = 20_000;
    c.files = vec![8];
    c.bits_per_key = vec![0, 10];
    c.hashes_sweep = Vec::new();
    c.debian_files = Vec::new();
    c.leveled_levels = Vec::new();
    c.plots = false;
    c
}

fn assert_checks_pass(p: &Point) {
    for c in p.checks() {
        assert!(
            c.ok,
            "{}: {} measured {} vs theory {}",
            describe(p),
            c.quantity,
            c.measured,
            c.theory
        );
    }
}

fn run(c: &Config) -> Vec<Point> {
    readamp::run(c, &mut |_| {}).unwrap_or_else(|e| panic!("benchmark failed: {e}"))
}

fn within(measured: f64, expected: f64, rel: f64) -> bool {
    (measured - expected).abs() <= rel * expected
}

#[test]
fn eight_runs_match_the_model_and_the_headline() {
    let points = run(&small_config());
    assert_eq!(points.len(), 2);

    // Every measured quantity within 10% of theory (0.002 absolute where
    // theory < 0.02): reads for absent keys, present keys and the mix,
    // false-positive rate, bits set, probes and skips per lookup.
    for p in &points {
        assert_checks_pass(p);
    }

    // Present keys are found in exactly one run; absent keys read a block
    // only on a false positive.
    let h = Headline::find(&points).expect("the 8-file points at 0 and 10 bits/key");
    let (without, with) = (&h.without, &h.with);
    assert_eq!(without.reads_absent, 8.0, "no filters: every run is read");
    assert!(
        agrees(without.reads_present, 4.5),
        "{}",
        without.reads_present
    );
    assert!(with.reads_present >= 1.0 && agrees(with.reads_present, 1.0 + 3.5 * 0.0082));
    assert!(
        agrees(with.reads_absent, 8.0 * 0.0082),
        "{}",
        with.reads_absent
    );
    assert_eq!(with.hashes, 7);

    // The headline: 5.90 and 0.64 reads per lookup at 40% absent, within 5%.
    assert_eq!(with.absent_fraction, 0.4);
    assert!(
        within(without.reads_mixed, 5.90, 0.05),
        "{}",
        without.reads_mixed
    );
    assert!(within(with.reads_mixed, 0.64, 0.05), "{}", with.reads_mixed);
    assert!(within(without.theory_mixed, 5.90, 0.001));
    assert!(within(with.theory_mixed, 0.6434, 0.001));
    assert!(h.reduction > 0.88 && h.reduction < 0.90, "{}", h.reduction);
    // About half the bits set; false-positive rate near 0.82%.
    let fill = with.bits_set_fraction.unwrap();
    assert!((fill - 0.5).abs() < 0.02, "{fill}");
    assert!(agrees(with.fpr_measured.unwrap(), 0.0082));
}

#[test]
fn same_seed_same_numbers() {
    let mut c = small_config();
    c.keys = 2_000;
    c.files = vec![2];
    c.bits_per_key = vec![6];
    c.absent_lookups = 2_000;
    c.present_lookups = 2_000;
    c.max_lookups = 2_000;
    let a = run(&c);
    assert_eq!(a, run(&c));
    c.seed += 1;
    assert_ne!(a, run(&c));
}

#[test]
fn three_levels_after_leveled_compaction_match_the_model() {
    let mut c = small_config();
    c.files = Vec::new();
    c.leveled_levels = vec![3];
    c.leveled_bits_per_key = vec![10];
    let points = run(&c);
    assert_eq!(points.len(), 1);
    let p = &points[0];
    assert_eq!((p.layout, p.files, p.levels), (Layout::Leveled, 3, 3));
    // 21 units of 2 flushes: 1, 4 and 16 units in levels 1, 2 and 3, one
    // SSTable each; real compactions built it.
    assert_eq!(p.level_files, vec![1, 1, 1]);
    assert_eq!(p.level_keys.iter().sum::<u64>(), 20_000);
    let unit = 20_000.0 / 21.0;
    for (keys, units) in p.level_keys.iter().zip([1.0, 4.0, 16.0]) {
        assert!(
            (*keys as f64 - units * unit).abs() <= units,
            "{:?}",
            p.level_keys
        );
    }
    assert!(p.compactions >= 21, "{}", p.compactions);
    assert_checks_pass(p);

    // One candidate file per level: absent keys read about 3·p blocks,
    // present keys 1 + p·(levels above), weighted towards the deep level.
    let q = bloom_fpr(10.0, 7);
    assert_eq!(p.hashes, 7);
    assert!(agrees(p.reads_absent, 3.0 * q), "{}", p.reads_absent);
    let closed = leveled_present_reads(&p.level_keys, &[q; 3]);
    // The same but for the few keys beyond an upper level's key range.
    assert!(
        (p.theory_present - closed).abs() < 0.01 * (closed - 1.0),
        "{} vs {closed}",
        p.theory_present
    );
    assert!(p.theory_present > present_reads(3, q));
    assert!(agrees(p.reads_present, closed), "{}", p.reads_present);
    // Every level spans the key space: only keys beyond a level's smallest
    // or largest key are skipped by key range.
    assert!(
        p.range_skips_per_lookup < 0.01,
        "{}",
        p.range_skips_per_lookup
    );
}
