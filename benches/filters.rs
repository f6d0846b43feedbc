//! Criterion benchmarks of the three filter kinds (classic Bloom, blocked
//! Bloom, Ribbon) at 4 to 16 bits per key, with the numbers
//! `docs/filters-measurements.md` reports. Every probe is of a key not in
//! the filter (the common case: a lookup probes every table that may hold
//! its key and finds it in at most one), made by `synthetic`: a fresh
//! random 128-bit hash per probe, so no two probes repeat a cache line.
//!
//! Criterion groups:
//!
//! - `build/<kind>/<bits>`: one `create_filter` over 1,000,000 keys (divide
//!   by 10^6 for ns/key).
//! - `probe-cached/<kind>/<bits>`: one probe of a 100,000-key filter (at
//!   most 200 KB, so it stays in the 512 KiB L2 cache).
//! - `probe-uncached/<kind>/<bits>`: one probe of a random one of many
//!   copies of the 1,000,000-key filter, 256 MiB in all (8× the 32 MiB L3
//!   cache), probes issued back to back so the CPU may overlap them.
//! - `probe-uncached-serial/<kind>/<bits>`: the same with an `lfence`
//!   after each probe, so each probe's memory accesses finish before the
//!   next probe's start: the latency of one probe.
//! - `random-load/dependent`: one step of a pointer chase through a random
//!   cycle over a 256 MiB array, the cost of one dependent random memory
//!   load; `random-load/independent` and `random-load/serial` load random
//!   words of the same array back to back and with the `lfence`.
//! - `probe-uncached-misaligned[-serial]/blocked_bloom/10`: blocked Bloom
//!   copies placed so that every block straddles two cache lines.
//! - `keygen`: making the synthetic hash, which every probe pays for.
//!
//! Untimed by criterion, written to `$CARGO_TARGET_TMPDIR` and printed:
//!
//! - `filters-summary.csv`: each kind's false-positive rate (2,000,000
//!   absent keys against the 100,000-key filter) with its theory and
//!   health figure, and stored bits per key; plus classic Bloom filters
//!   sized to each Ribbon setting's rate.
//! - `filters-paired.csv`: the uncached probes again, in interleaved
//!   rounds. On a shared machine the memory latency drifts by tens of
//!   percent within a minute, so criterion medians taken minutes apart do
//!   not give reliable ratios. Each round times a batch of every
//!   contender in turn (the three loads, and the three kinds back to back
//!   and serialized, on absent keys and on keys of the set) at one setting;
//!   the file has the median ns per op over rounds and the median over
//!   rounds of each per-round ratio.
//!
//! `cargo bench --bench filters` (about six minutes).

mod common;

use std::fmt::Write as _;
use std::hint::black_box;

use common::{
    interleaved, key_hashes, median, present_batch, probe_batch, ratio_median, serialize,
    synthetic, Batch, Copies, Loads, ALIGNED, BIG_BYTES,
};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use siftdb::filter::{
    blocked_bloom, bloom_stats, ribbon, BlockedBloomPolicy, BloomFilterPolicy, FilterPolicy,
    KeyHash,
};

const BITS_PER_KEY: [u32; 6] = [4, 6, 8, 10, 12, 16];
const CACHED_KEYS: u32 = 100_000;
const BUILD_KEYS: u32 = 1_000_000;
const FPR_PROBES: u32 = 2_000_000;
/// Interleaved rounds per setting.
const PAIRED_ROUNDS: usize = 31;

/// One kind at one setting, with what the summary reports about it.
struct Setting<P> {
    kind: &'static str,
    bits: u32,
    policy: P,
    /// `k` or `r`, for the summary.
    param: String,
    /// The expected false-positive rate of the 100,000-key filter.
    theory: fn(&P, &[u8], u32) -> f64,
    /// What the filter's health function says (implied or design rate).
    health: fn(&[u8]) -> f64,
}

fn bloom_setting(bits: u32) -> Setting<BloomFilterPolicy> {
    let policy = BloomFilterPolicy::new(bits);
    Setting {
        kind: "bloom",
        bits,
        param: format!("k={}", policy.num_hashes()),
        policy,
        theory: |p, f, n| {
            let m = bloom_stats(f).map_or(0, |s| s.bits) as f64;
            siftdb::filter::theoretical_fpr(m / f64::from(n), p.num_hashes())
        },
        health: |f| {
            // The classic filter's own fill: (bits set / m)^k.
            bloom_stats(f).map_or(1.0, |s| {
                (s.bits_set as f64 / s.bits as f64).powi(s.num_hashes as i32)
            })
        },
    }
}

fn blocked_setting(bits: u32) -> Setting<BlockedBloomPolicy> {
    let policy = BlockedBloomPolicy::new(f64::from(bits));
    Setting {
        kind: "blocked_bloom",
        bits,
        param: format!("k={}", policy.num_hashes()),
        policy,
        theory: |p, f, n| {
            let blocks = blocked_bloom::blocked_bloom_stats(f).map_or(0, |s| s.blocks);
            let m = f64::from(blocks) * 512.0;
            blocked_bloom::theoretical_fpr(m / f64::from(n), p.num_hashes())
        },
        health: |f| blocked_bloom::blocked_bloom_stats(f).map_or(1.0, |s| s.implied_fpr),
    }
}

fn ribbon_setting(bits: u32) -> Setting<ribbon::RibbonFilterPolicy> {
    let policy = ribbon::RibbonFilterPolicy::with_bits_per_key(f64::from(bits));
    Setting {
        kind: "ribbon",
        bits,
        param: format!("r={}", policy.result_bits()),
        policy,
        theory: |p, _, _| ribbon::theoretical_fpr(p.result_bits()),
        health: |f| ribbon::ribbon_stats(f).map_or(1.0, |s| s.design_fpr),
    }
}

/// Shared inputs: key sets and the summary being written.
struct Inputs {
    cached: Vec<KeyHash>,
    build: Vec<KeyHash>,
    absent: Vec<KeyHash>,
    summary: String,
}

impl Inputs {
    fn new() -> Self {
        Inputs {
            cached: key_hashes("present-", CACHED_KEYS),
            build: key_hashes("built-", BUILD_KEYS),
            absent: key_hashes("absent-", FPR_PROBES),
            summary: String::from(
                "kind,bits_per_key,param,measured_fpr,theory_fpr,health_fpr,stored_bits_per_key,stored_bits_per_key_1m\n",
            ),
        }
    }
}

/// Measures accuracy and space (untimed), benchmarks building and the
/// cached and uncached probes, and returns the 256 MiB of copies for the
/// paired rounds.
fn bench_setting<P: FilterPolicy>(
    c: &mut Criterion,
    inputs: &mut Inputs,
    s: &Setting<P>,
) -> Copies {
    let id = || BenchmarkId::new(s.kind, s.bits);

    let small = s.policy.create_filter(&inputs.cached);
    let fp = inputs
        .absent
        .iter()
        .filter(|h| s.policy.may_match(&small, **h))
        .count();
    let measured = fp as f64 / inputs.absent.len() as f64;
    let theory = (s.theory)(&s.policy, &small, CACHED_KEYS);
    let stored = small.len() as f64 * 8.0 / f64::from(CACHED_KEYS);
    let big = s.policy.create_filter(&inputs.build);
    assert!(inputs.build.iter().all(|h| s.policy.may_match(&big, *h)));
    let stored_big = big.len() as f64 * 8.0 / f64::from(BUILD_KEYS);
    let line = format!(
        "{},{},{},{:.6},{:.6},{:.6},{:.4},{:.4}",
        s.kind,
        s.bits,
        s.param,
        measured,
        theory,
        (s.health)(&small),
        stored,
        stored_big
    );
    println!("FILTERS|{line}");
    let _ = writeln!(inputs.summary, "{line}");

    c.benchmark_group("build").bench_function(id(), |b| {
        b.iter(|| s.policy.create_filter(black_box(&inputs.build)))
    });

    let small = Copies::new(&small, 0, ALIGNED);
    let mut i = 0u64;
    c.benchmark_group("probe-cached").bench_function(id(), |b| {
        b.iter(|| {
            i += 1;
            let (h, _) = synthetic(i);
            s.policy.may_match(small.get(0), h)
        })
    });

    let copies = Copies::new(&big, BIG_BYTES, ALIGNED);
    probe_uncached(c, "", id(), &s.policy, &copies, &mut i);
    copies
}

/// The two uncached benchmarks of one policy over `copies`: probes back to
/// back, then serialized by `lfence`.
fn probe_uncached<P: FilterPolicy>(
    c: &mut Criterion,
    variant: &str,
    id: BenchmarkId,
    policy: &P,
    copies: &Copies,
    i: &mut u64,
) {
    c.benchmark_group(format!("probe-uncached{variant}"))
        .bench_function(id.clone(), |b| {
            b.iter(|| {
                *i += 1;
                let (h, p) = synthetic(*i);
                policy.may_match(copies.get(p), h)
            })
        });
    c.benchmark_group(format!("probe-uncached{variant}-serial"))
        .bench_function(id, |b| {
            b.iter(|| {
                *i += 1;
                let (h, p) = synthetic(*i);
                let r = policy.may_match(copies.get(p), h);
                serialize();
                r
            })
        });
}

/// Interleaved rounds over every contender at one setting; appends the
/// medians and the median per-round ratios to `out`.
fn paired_rounds(bits: u32, mut contenders: Vec<(&'static str, Batch<'_>)>, out: &mut String) {
    let times = interleaved(&mut contenders, PAIRED_ROUNDS);
    let at = |name: &str| {
        contenders
            .iter()
            .position(|(n, _)| *n == name)
            .expect("contender")
    };
    for ((name, _), t) in contenders.iter().zip(&times) {
        let line = format!("{bits},{name},{:.1}", median(t.clone()));
        println!("PAIRED|{line}");
        let _ = writeln!(out, "{line}");
    }
    let ratios = [
        ("blocked_bloom", "load_dependent"),
        ("blocked_bloom_serial", "load_dependent"),
        ("bloom", "blocked_bloom"),
        ("bloom_serial", "blocked_bloom_serial"),
        ("ribbon", "load_dependent"),
        ("ribbon_serial", "load_dependent"),
        ("bloom", "load_dependent"),
        ("bloom_serial", "load_dependent"),
        ("bloom_present", "blocked_bloom_present"),
        ("bloom_present_serial", "blocked_bloom_present_serial"),
        ("blocked_bloom_present_serial", "load_dependent"),
        ("ribbon_present_serial", "load_dependent"),
    ];
    for (a, b) in ratios {
        let r = ratio_median(&times[at(a)], &times[at(b)]);
        let line = format!("{bits},{a}/{b},{r:.3}");
        println!("PAIRED|{line}");
        let _ = writeln!(out, "{line}");
    }
}

/// Classic Bloom filters sized to the false-positive rate of each Ribbon
/// setting (the fewest bits per key, in steps of 0.01, whose best `k`
/// reaches `2^−r`), for the equal-rate space comparison. Untimed.
fn bloom_at_ribbon_rates(inputs: &mut Inputs) {
    for bits in BITS_PER_KEY {
        let r = ribbon::RibbonFilterPolicy::with_bits_per_key(f64::from(bits)).result_bits();
        let target = ribbon::theoretical_fpr(r);
        let best = |b: f64| {
            (1..=30u32)
                .map(|k| siftdb::filter::theoretical_fpr(b, k))
                .fold(1.0, f64::min)
        };
        let mut b = 1.0;
        while best(b) > target {
            b += 0.01;
        }
        let policy = BloomFilterPolicy::with_bits_per_key(b);
        let f = policy.create_filter(&inputs.cached);
        let fp = inputs
            .absent
            .iter()
            .filter(|h| policy.may_match(&f, **h))
            .count();
        let line = format!(
            "bloom_at_ribbon_r{r},{b:.2},k={},{:.6},{:.6},,{:.4},",
            policy.num_hashes(),
            fp as f64 / inputs.absent.len() as f64,
            siftdb::filter::theoretical_fpr(b, policy.num_hashes()),
            f.len() as f64 * 8.0 / f64::from(CACHED_KEYS),
        );
        println!("FILTERS|{line}");
        let _ = writeln!(inputs.summary, "{line}");
    }
}

/// The blocked Bloom filter at 10 bits/key with every block straddling two
/// cache lines (blocks start 32 bytes into a line): the cost of ignoring
/// the alignment the module doc asks for.
fn blocked_misaligned(c: &mut Criterion, inputs: &Inputs) {
    let policy = BlockedBloomPolicy::new(10.0);
    let big = policy.create_filter(&inputs.build);
    let copies = Copies::new(&big, BIG_BYTES, (ALIGNED + 32) % 64);
    let id = BenchmarkId::new("blocked_bloom", 10);
    probe_uncached(c, "-misaligned", id, &policy, &copies, &mut 0);
}

fn random_loads(c: &mut Criterion, loads: &Loads) {
    let mut g = c.benchmark_group("random-load");
    let mut at = 0u64;
    g.bench_function("dependent", |b| {
        b.iter(|| {
            at = loads.next[at as usize];
            at
        })
    });
    let mut i = 0u64;
    g.bench_function("independent", |b| {
        b.iter(|| {
            i += 1;
            loads.next[loads.index(synthetic(i).1)]
        })
    });
    g.bench_function("serial", |b| {
        b.iter(|| {
            i += 1;
            let v = loads.next[loads.index(synthetic(i).1)];
            serialize();
            v
        })
    });
    g.finish();

    let mut i = 0u64;
    c.bench_function("keygen", |b| {
        b.iter(|| {
            i += 1;
            synthetic(i)
        })
    });
}

fn filters(c: &mut Criterion) {
    let loads = Loads::new();
    random_loads(c, &loads);
    let mut inputs = Inputs::new();
    let mut paired = String::from("bits_per_key,contender,value\n");
    for bits in BITS_PER_KEY {
        let (bloom, blocked, ribbon) = (
            bloom_setting(bits),
            blocked_setting(bits),
            ribbon_setting(bits),
        );
        let bloom_copies = bench_setting(c, &mut inputs, &bloom);
        let blocked_copies = bench_setting(c, &mut inputs, &blocked);
        let ribbon_copies = bench_setting(c, &mut inputs, &ribbon);
        let mut contenders = loads.batches();
        for (serial, names) in [
            (false, ["bloom", "blocked_bloom", "ribbon"]),
            (
                true,
                ["bloom_serial", "blocked_bloom_serial", "ribbon_serial"],
            ),
        ] {
            contenders.push((names[0], probe_batch(&bloom.policy, &bloom_copies, serial)));
            contenders.push((
                names[1],
                probe_batch(&blocked.policy, &blocked_copies, serial),
            ));
            contenders.push((
                names[2],
                probe_batch(&ribbon.policy, &ribbon_copies, serial),
            ));
        }
        let present = &inputs.build;
        for (serial, names) in [
            (
                false,
                ["bloom_present", "blocked_bloom_present", "ribbon_present"],
            ),
            (
                true,
                [
                    "bloom_present_serial",
                    "blocked_bloom_present_serial",
                    "ribbon_present_serial",
                ],
            ),
        ] {
            let (p, c) = (&bloom.policy, &bloom_copies);
            contenders.push((names[0], present_batch(p, c, present, serial)));
            let (p, c) = (&blocked.policy, &blocked_copies);
            contenders.push((names[1], present_batch(p, c, present, serial)));
            let (p, c) = (&ribbon.policy, &ribbon_copies);
            contenders.push((names[2], present_batch(p, c, present, serial)));
        }
        paired_rounds(bits, contenders, &mut paired);
    }
    blocked_misaligned(c, &inputs);
    bloom_at_ribbon_rates(&mut inputs);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    for (name, text) in [
        ("filters-summary.csv", &inputs.summary),
        ("filters-paired.csv", &paired),
    ] {
        std::fs::write(dir.join(name), text).expect("write the results");
        println!("written: {}", dir.join(name).display());
    }
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = filters
}
criterion_main!(benches);
