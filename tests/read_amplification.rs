//! The read-amplification model holds on a small layout: 8 overlapping
//! runs without filters and with 10 bits/key, measured with the engine's
//! own counters (see `siftdb_bench::readamp`).
//!
//! Seeded, so the same numbers every run. The number of lookups per point
//! is raised until a standard error is at most a fifth of the tolerance,
//! so a correct engine fails these assertions by chance with probability
//! well under one in a million.

use siftdb_bench::readamp::{self, agrees, describe, Config, Headline, Point};

fn small_config() -> Config {
    let mut c = Config::default();
    c.keys = 20_000;
    c.files = vec![8];
    c.bits_per_key = vec![0, 10];
    c.hashes_sweep = Vec::new();
    c.debian_files = Vec::new();
    c.plots = false;
    c
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
