//! The measurements behind the choice of static filter
//! (`docs/filters-measurements.md`): siftdb's Ribbon filter against a
//! prototype binary fuse filter (Graf and Lemire, "Binary Fuse Filters: Fast
//! and Smaller Than Xor Filters", 2022) with 3 and with 4 hash positions,
//! all at 8 fingerprint bits, bit-packed (the Ribbon filter's storage;
//! widths other than 8 and 16 need it).
//!
//! The prototype follows the paper's construction: the array is cut into
//! segments of a power-of-two length; a key's positions lie in consecutive
//! segments (`h0` by range reduction, the others one segment further each,
//! at an offset within the segment taken from the hash); the paper's
//! sizing formulas for segment length and array size; keys sorted by
//! segment first; peeling; retry with a new seed. It stores its parameters
//! in memory, not in bytes, and is not a siftdb filter: it exists to be
//! measured here.
//!
//! - `space`: stored bits per key at 10^3 to 10^7 keys (untimed, printed).
//! - `build/<kind>`: one build over 1,000,000 keys.
//! - `probe-cached/<kind>`: one probe of a 100,000-key filter.
//! - paired rounds over 256 MiB of copies of the 1,000,000-key filters
//!   (as in `benches/filters.rs`), written to
//!   `$CARGO_TARGET_TMPDIR/static-filter-choice.csv`.
//!
//! `cargo bench --bench static_filter_choice` (under a minute).

mod common;

use std::fmt::Write as _;
use std::hint::black_box;

use common::{
    fmix64, interleaved, key_hashes, median, probe_batch, ratio_median, synthetic, Copies, Loads,
    ALIGNED, BIG_BYTES,
};
use criterion::{criterion_group, criterion_main, Criterion};
use siftdb::filter::{ribbon::RibbonFilterPolicy, FilterPolicy, KeyHash};

const RESULT_BITS: u32 = 8;
const CACHED_KEYS: u32 = 100_000;
const BUILD_KEYS: u32 = 1_000_000;

/// A binary fuse filter's shape for `n` keys at `arity` positions.
#[derive(Debug, Clone, Copy)]
struct Shape {
    arity: u32,
    segment_length: u32,
    segment_count_length: u32,
    array_length: u32,
}

impl Shape {
    /// The paper's sizing: segment length `2^⌊ln n / ln 3.33 + 2.25⌋` and
    /// size factor `max(1.125, 0.875 + 0.25 · ln 10^6 / ln n)` for 3
    /// positions; `2^⌊ln n / ln 2.91 − 0.5⌋` and `max(1.075, 0.77 + 0.305
    /// · ln 600000 / ln n)` for 4; segment length at most 2^18.
    fn new(n: usize, arity: u32) -> Self {
        let ln_n = (n.max(2) as f64).ln();
        let (log2_segment, factor) = if arity == 3 {
            (
                ln_n / 3.33f64.ln() + 2.25,
                (0.875 + 0.25 * 1e6f64.ln() / ln_n).max(1.125),
            )
        } else {
            (
                ln_n / 2.91f64.ln() - 0.5,
                (0.77 + 0.305 * 600_000f64.ln() / ln_n).max(1.075),
            )
        };
        let segment_length = 1u32 << (log2_segment.floor().clamp(0.0, 18.0) as u32);
        let capacity = (n as f64 * factor).round() as u32;
        let segment_count = capacity
            .div_ceil(segment_length)
            .saturating_sub(arity - 1)
            .max(1);
        Shape {
            arity,
            segment_length,
            segment_count_length: segment_count * segment_length,
            array_length: (segment_count + arity - 1) * segment_length,
        }
    }

    /// The positions of hash `h` (one per consecutive segment).
    fn positions(&self, h: u64) -> [u32; 4] {
        let h0 = ((u128::from(h) * u128::from(self.segment_count_length)) >> 64) as u32;
        let mask = self.segment_length - 1;
        let spread = fmix64(h);
        let mut p = [h0; 4];
        for (i, slot) in p.iter_mut().enumerate().skip(1) {
            let offset = (spread.rotate_left(21 * i as u32) as u32) & mask;
            *slot = (h0 + i as u32 * self.segment_length) ^ offset;
        }
        p
    }
}

fn key_word(h: KeyHash, seed: u64) -> u64 {
    fmix64(h.low() ^ seed) ^ h.high()
}

fn fingerprint(h: u64) -> u64 {
    (h ^ (h >> 32)) & ((1 << RESULT_BITS) - 1)
}

/// A built prototype: its shape, seed and bit-packed fingerprints.
#[derive(Debug, Clone)]
struct Fuse {
    shape: Shape,
    seed: u64,
    /// `array_length` values of `RESULT_BITS` bits, plus 8 bytes of slack
    /// for the unaligned reads.
    packed: Vec<u8>,
}

fn get(packed: &[u8], i: u32) -> u64 {
    let bit = i as usize * RESULT_BITS as usize;
    let word = u64::from_le_bytes(packed[bit / 8..bit / 8 + 8].try_into().expect("8 bytes"));
    (word >> (bit % 8)) & ((1 << RESULT_BITS) - 1)
}

fn set(packed: &mut [u8], i: u32, value: u64) {
    let bit = i as usize * RESULT_BITS as usize;
    let mut word = u64::from_le_bytes(packed[bit / 8..bit / 8 + 8].try_into().expect("8 bytes"));
    word &= !(((1 << RESULT_BITS) - 1) << (bit % 8));
    word |= value << (bit % 8);
    packed[bit / 8..bit / 8 + 8].copy_from_slice(&word.to_le_bytes());
}

impl Fuse {
    fn build(hashes: &[KeyHash], arity: u32) -> Fuse {
        let shape = Shape::new(hashes.len(), arity);
        let a = arity as usize;
        for seed in 0..100u64 {
            let seed = fmix64(seed.wrapping_add(0x9e37_79b9_7f4a_7c15));
            // Sort the key words by segment for locality, as the paper does.
            let mut words: Vec<u64> = hashes.iter().map(|&h| key_word(h, seed)).collect();
            words.sort_unstable_by_key(|&w| shape.positions(w)[0] / shape.segment_length);
            let len = shape.array_length as usize;
            let mut count = vec![0u32; len];
            let mut xors = vec![0u64; len];
            for &w in &words {
                for &p in &shape.positions(w)[..a] {
                    count[p as usize] += 1;
                    xors[p as usize] ^= w;
                }
            }
            let mut queue: Vec<u32> = (0..len as u32)
                .filter(|&p| count[p as usize] == 1)
                .collect();
            let mut stack = Vec::with_capacity(words.len());
            while let Some(p) = queue.pop() {
                if count[p as usize] != 1 {
                    continue;
                }
                let w = xors[p as usize];
                stack.push((w, p));
                for &q in &shape.positions(w)[..a] {
                    count[q as usize] -= 1;
                    xors[q as usize] ^= w;
                    if count[q as usize] == 1 {
                        queue.push(q);
                    }
                }
            }
            if stack.len() != words.len() {
                continue;
            }
            let mut packed = vec![0u8; (len * RESULT_BITS as usize).div_ceil(8) + 8];
            for &(w, p) in stack.iter().rev() {
                let mut v = fingerprint(w);
                for &q in &shape.positions(w)[..a] {
                    v ^= get(&packed, q);
                }
                set(&mut packed, p, v);
            }
            return Fuse {
                shape,
                seed,
                packed,
            };
        }
        panic!("binary fuse construction failed 100 times");
    }

    fn contains(&self, h: KeyHash) -> bool {
        let w = key_word(h, self.seed);
        let mut v = fingerprint(w);
        for &q in &self.shape.positions(w)[..self.shape.arity as usize] {
            v ^= get(&self.packed, q);
        }
        v == 0
    }

    /// Stored bits per key: the packed array (without the slack) plus a
    /// 16-byte header for the parameters a reader would need.
    fn bits_per_key(&self, n: usize) -> f64 {
        (self.shape.array_length as f64 * f64::from(RESULT_BITS) + 128.0) / n as f64
    }
}

/// The prototype as a `FilterPolicy`, so the shared probe loops take it.
/// Its filter bytes are the packed fingerprints alone; the shape and seed
/// stay in `built`.
#[derive(Debug)]
struct FusePolicy {
    built: Fuse,
}

impl FilterPolicy for FusePolicy {
    fn name(&self) -> &'static str {
        "bench.binary_fuse_prototype"
    }

    fn create_filter(&self, _: &[KeyHash]) -> Vec<u8> {
        self.built.packed.clone()
    }

    fn may_match(&self, filter: &[u8], hash: KeyHash) -> bool {
        let w = key_word(hash, self.built.seed);
        let mut v = fingerprint(w);
        for &q in &self.built.shape.positions(w)[..self.built.shape.arity as usize] {
            v ^= get(filter, q);
        }
        v == 0
    }
}

fn choice(c: &mut Criterion) {
    let ribbon = RibbonFilterPolicy::new(RESULT_BITS);
    let mut out = String::from("what,kind,n,value\n");
    let mut record = |what: &str, kind: &str, n: u32, value: f64| {
        let line = format!("{what},{kind},{n},{value:.4}");
        println!("CHOICE|{line}");
        let _ = writeln!(out, "{line}");
    };

    // Space and false-positive rate, untimed.
    for n in [1_000u32, 10_000, 100_000, 1_000_000, 10_000_000] {
        let keys = key_hashes("space-", n);
        for arity in [3, 4] {
            let f = Fuse::build(&keys, arity);
            record(
                "bits_per_key",
                &format!("fuse{arity}"),
                n,
                f.bits_per_key(keys.len()),
            );
        }
        let f = ribbon.create_filter(&keys);
        record(
            "bits_per_key",
            "ribbon",
            n,
            f.len() as f64 * 8.0 / f64::from(n),
        );
    }
    let absent = key_hashes("absent-", 1_000_000);
    let cached = key_hashes("present-", CACHED_KEYS);
    let fuse_cached = [3, 4].map(|a| Fuse::build(&cached, a));
    for f in &fuse_cached {
        assert!(cached.iter().all(|h| f.contains(*h)));
        let fp = absent.iter().filter(|h| f.contains(**h)).count();
        let kind = format!("fuse{}", f.shape.arity);
        record("fpr", &kind, CACHED_KEYS, fp as f64 / absent.len() as f64);
    }
    let ribbon_cached = ribbon.create_filter(&cached);
    let fp = absent
        .iter()
        .filter(|h| ribbon.may_match(&ribbon_cached, **h))
        .count();
    record(
        "fpr",
        "ribbon",
        CACHED_KEYS,
        fp as f64 / absent.len() as f64,
    );

    // Build and cached probes.
    let built = key_hashes("built-", BUILD_KEYS);
    for arity in [3, 4] {
        c.bench_function(&format!("build/fuse{arity}"), |b| {
            b.iter(|| Fuse::build(black_box(&built), arity))
        });
    }
    c.bench_function("build/ribbon", |b| {
        b.iter(|| ribbon.create_filter(black_box(&built)))
    });
    let mut i = 0u64;
    for f in &fuse_cached {
        c.bench_function(&format!("probe-cached/fuse{}", f.shape.arity), |b| {
            b.iter(|| {
                i += 1;
                f.contains(synthetic(i).0)
            })
        });
    }
    c.bench_function("probe-cached/ribbon", |b| {
        b.iter(|| {
            i += 1;
            ribbon.may_match(&ribbon_cached, synthetic(i).0)
        })
    });

    // Uncached probes, interleaved with the random-load baseline.
    let fuse_policies = [3, 4].map(|a| FusePolicy {
        built: Fuse::build(&built, a),
    });
    let fuse_copies: Vec<Copies> = fuse_policies
        .iter()
        .map(|p| Copies::new(&p.built.packed, BIG_BYTES, ALIGNED))
        .collect();
    let ribbon_copies = Copies::new(&ribbon.create_filter(&built), BIG_BYTES, ALIGNED);
    let loads = Loads::new();
    let mut contenders = loads.batches();
    contenders.truncate(1); // load_dependent
    for (serial, names) in [
        (false, ["fuse3", "fuse4", "ribbon"]),
        (true, ["fuse3_serial", "fuse4_serial", "ribbon_serial"]),
    ] {
        contenders.push((
            names[0],
            probe_batch(&fuse_policies[0], &fuse_copies[0], serial),
        ));
        contenders.push((
            names[1],
            probe_batch(&fuse_policies[1], &fuse_copies[1], serial),
        ));
        contenders.push((names[2], probe_batch(&ribbon, &ribbon_copies, serial)));
    }
    let times = interleaved(&mut contenders, 31);
    for ((name, _), t) in contenders.iter().zip(&times) {
        record("uncached_ns", name, BUILD_KEYS, median(t.clone()));
    }
    for (a, b) in [(1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0)] {
        let name = format!("{}/{}", contenders[a].0, contenders[b].0);
        record(
            "ratio",
            &name,
            BUILD_KEYS,
            ratio_median(&times[a], &times[b]),
        );
    }
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("static-filter-choice.csv");
    std::fs::write(&path, out).expect("write the results");
    println!("written: {}", path.display());
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = choice
}
criterion_main!(benches);
