//! The sweep itself: the keys, then per setting the builds, the rates and
//! the interleaved timing rounds (see the module docs of [`super`]).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use siftdb::filter::{hash_key, FilterPolicy, KeyHash, LevelFilter};

use super::kinds;
use super::timing::{
    fmix64, interleaved, median, random_cycle, ratio_median, serialize, synthetic, Batch, Copies,
    ALIGNED,
};
use super::{Config, Error, Measurement, Progress, Result};
use crate::rng::Rng;

/// Seed streams of the two key sets.
const PRESENT_STREAM: u64 = 0xf117_0001;
const ABSENT_STREAM: u64 = 0xf117_0002;

/// Length of the random keys, in bytes.
pub(crate) const KEY_LEN: usize = 16;

/// `n` random `KEY_LEN`-byte keys from `seed` and `stream`, hashed.
fn key_hashes(n: usize, seed: u64, stream: u64) -> Vec<KeyHash> {
    let mut rng = Rng::new(seed, &[stream]);
    let mut key = [0u8; KEY_LEN];
    (0..n)
        .map(|_| {
            rng.fill(&mut key);
            hash_key(&key)
        })
        .collect()
}

/// Everything a setting reads and does not change.
struct Inputs<'a> {
    cfg: &'a Config,
    present: Vec<KeyHash>,
    absent: Vec<KeyHash>,
    /// The random cycle of the dependent loads.
    loads: Vec<u64>,
    /// Added to the probe counters, so the probe hashes follow the seed.
    salt: u64,
}

/// Runs the sweep of a validated `cfg`.
pub(crate) fn sweep(cfg: &Config, progress: &mut dyn FnMut(&Progress)) -> Result<Vec<Measurement>> {
    let start = Instant::now();
    let inputs = Inputs {
        cfg,
        present: key_hashes(cfg.keys, cfg.seed, PRESENT_STREAM),
        absent: key_hashes(cfg.absent_keys, cfg.seed, ABSENT_STREAM),
        loads: random_cycle((cfg.uncached_bytes / 8).max(1)),
        salt: fmix64(cfg.seed ^ 0x0f11_7e45),
    };
    // One region of copies per kind, reused by every setting.
    let mut regions: Vec<Copies> = cfg.kinds.iter().map(|_| Copies::default()).collect();
    let mut rows = Vec::with_capacity(cfg.kinds.len() * cfg.bits_per_key.len());
    for (i, &bits) in cfg.bits_per_key.iter().enumerate() {
        rows.extend(setting(&inputs, bits, &mut regions)?);
        progress(&Progress {
            done: i + 1,
            total: cfg.bits_per_key.len(),
            bits_per_key: bits,
            elapsed: start.elapsed(),
        });
    }
    Ok(rows)
}

/// What a setting measured of one kind before the timing rounds.
struct Built {
    filter: Vec<u8>,
    build_ns: Vec<f64>,
    false_positives: u64,
    theory: kinds::Theory,
}

/// Measures every kind at `bits` bits per key.
fn setting(inputs: &Inputs<'_>, bits: f64, regions: &mut [Copies]) -> Result<Vec<Measurement>> {
    let cfg = inputs.cfg;
    let present = &inputs.present[..];
    let n = present.len();
    let policies = cfg
        .kinds
        .iter()
        .map(|&kind| {
            LevelFilter::BitsPerKey(kind, bits)
                .policy()
                .ok_or_else(|| Error::Config(format!("no {} policy", kind.label())))
        })
        .collect::<Result<Vec<Arc<dyn FilterPolicy>>>>()?;

    // Builds, the kinds interleaved within each round.
    let mut build_ns = vec![Vec::with_capacity(cfg.build_rounds); policies.len()];
    let mut filters = vec![Vec::new(); policies.len()];
    for _ in 0..cfg.build_rounds {
        for ((p, ns), filter) in policies.iter().zip(&mut build_ns).zip(&mut filters) {
            // Free the previous build first, as a fresh table build would.
            *filter = Vec::new();
            let started = Instant::now();
            *filter = p.create_filter(black_box(present));
            ns.push(started.elapsed().as_nanos() as f64 / n as f64);
        }
    }

    // Rates, untimed; every present key must pass.
    let mut built = Vec::with_capacity(policies.len());
    for ((&kind, p), (filter, build_ns)) in cfg
        .kinds
        .iter()
        .zip(&policies)
        .zip(filters.into_iter().zip(build_ns))
    {
        if !present.iter().all(|h| p.may_match(&filter, *h)) {
            return Err(Error::FalseNegative {
                kind: kind.label(),
                bits_per_key: bits,
            });
        }
        let false_positives = inputs
            .absent
            .iter()
            .filter(|h| p.may_match(&filter, **h))
            .count() as u64;
        built.push(Built {
            theory: kinds::theory(kind, &filter, n)?,
            filter,
            build_ns,
            false_positives,
        });
    }

    // Cached probes: one small filter per kind, and the key generation
    // every probe includes.
    let cached_keys = cfg.effective_cached_keys();
    let small: Vec<Copies> = policies
        .iter()
        .map(|p| Copies::new(&p.create_filter(&present[..cached_keys]), 0, ALIGNED))
        .collect();
    let salt = inputs.salt;
    let mut contenders: Vec<(&'static str, Batch<'_>)> =
        vec![("keygen", keygen_batch(cfg.cached_batch, salt))];
    for ((&kind, p), copies) in cfg.kinds.iter().zip(&policies).zip(&small) {
        let batch = probe_batch(&**p, copies, cfg.cached_batch, false, salt);
        contenders.push((kind.label(), batch));
    }
    let cached = interleaved(&mut contenders, cfg.rounds, cfg.cached_batch);
    drop(contenders);

    // Uncached probes: each kind's copies, and the dependent load.
    for (region, b) in regions.iter_mut().zip(&built) {
        region.refill(&b.filter, cfg.uncached_bytes, ALIGNED);
    }
    let mut contenders: Vec<(&'static str, Batch<'_>)> = vec![(
        "load_dependent",
        load_batch(&inputs.loads, cfg.uncached_batch),
    )];
    for ((&kind, p), copies) in cfg.kinds.iter().zip(&policies).zip(&*regions) {
        for serial in [true, false] {
            let batch = probe_batch(&**p, copies, cfg.uncached_batch, serial, salt);
            contenders.push((kind.label(), batch));
        }
    }
    let uncached = interleaved(&mut contenders, cfg.rounds, cfg.uncached_batch);
    drop(contenders);

    let load = &uncached[0];
    let keygen_ns = median(cached[0].clone());
    let rows = cfg
        .kinds
        .iter()
        .zip(built)
        .zip(regions.iter())
        .enumerate()
        .map(|(i, ((&kind, b), region))| {
            let serial = &uncached[1 + 2 * i];
            Measurement {
                kind,
                bits_per_key: bits,
                hashes: b.theory.hashes,
                result_bits: b.theory.result_bits,
                keys: n,
                cached_keys,
                absent_probes: inputs.absent.len() as u64,
                false_positives: b.false_positives,
                measured_fpr: b.false_positives as f64 / inputs.absent.len() as f64,
                theory_fpr: b.theory.fpr,
                filter_bytes: b.filter.len(),
                stored_bits_per_key: b.filter.len() as f64 * 8.0 / n as f64,
                probe_ns_cached: median(cached[1 + i].clone()),
                probe_ns_uncached: median(serial.clone()),
                probe_ns_uncached_back_to_back: median(uncached[2 + 2 * i].clone()),
                load_ns_dependent: median(load.clone()),
                uncached_vs_load: ratio_median(serial, load),
                keygen_ns,
                build_ns_per_key: median(b.build_ns),
                uncached_bytes: region.filter_bytes(),
                copies: region.count(),
                rounds: cfg.rounds,
            }
        })
        .collect();
    Ok(rows)
}

/// `ops` probes of fresh random hashes, each of a random one of `copies`,
/// with an `lfence` after each if `serial`; returns the hits.
fn probe_batch<'a>(
    policy: &'a dyn FilterPolicy,
    copies: &'a Copies,
    ops: u64,
    serial: bool,
    salt: u64,
) -> Batch<'a> {
    Box::new(move |start| {
        let mut hits = 0u64;
        for i in start..start + ops {
            let (h, pick) = synthetic(i.wrapping_add(salt));
            hits += u64::from(policy.may_match(copies.get(pick), h));
            if serial {
                serialize();
            }
        }
        hits
    })
}

/// `ops` steps of the pointer chase around `next`, continuing where the
/// previous batch stopped; returns where it stopped.
fn load_batch(next: &[u64], ops: u64) -> Batch<'_> {
    let mut at = 0u64;
    Box::new(move |_| {
        for _ in 0..ops {
            // `next` is a permutation of its own indices, so `at` is one.
            at = next[at as usize];
        }
        at
    })
}

/// Making `ops` synthetic probe hashes, as the probe batches do.
fn keygen_batch<'a>(ops: u64, salt: u64) -> Batch<'a> {
    Box::new(move |start| {
        let mut sum = 0u64;
        for i in start..start + ops {
            let (h, pick) = black_box(synthetic(i.wrapping_add(salt)));
            sum = sum.wrapping_add(h.low() ^ pick);
        }
        sum
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use siftdb::filter::FilterKind;

    #[test]
    fn keys_follow_the_seed_and_streams() {
        let a = key_hashes(100, 1, PRESENT_STREAM);
        assert_eq!(a, key_hashes(100, 1, PRESENT_STREAM));
        assert_ne!(a, key_hashes(100, 2, PRESENT_STREAM));
        let b = key_hashes(100, 1, ABSENT_STREAM);
        assert!(a.iter().all(|h| !b.contains(h)));
    }

    #[test]
    fn a_tiny_sweep_measures_every_kind_at_every_setting() {
        let cfg = super::super::tests::tiny();
        let mut seen = Vec::new();
        let rows =
            super::super::run(&cfg, &mut |p| seen.push((p.done, p.total, p.bits_per_key))).unwrap();
        assert_eq!(seen, [(1, 2, 10.0), (2, 2, 14.0)]);
        assert_eq!(rows.len(), 6);
        let order: Vec<(FilterKind, f64)> = rows.iter().map(|m| (m.kind, m.bits_per_key)).collect();
        let want: Vec<(FilterKind, f64)> = [10.0, 14.0]
            .into_iter()
            .flat_map(|b| FilterKind::ALL.map(|k| (k, b)))
            .collect();
        assert_eq!(order, want);
        for m in &rows {
            assert_eq!(
                (m.keys, m.cached_keys, m.absent_probes),
                (5_000, 1_000, 50_000)
            );
            assert_eq!(m.measured_fpr, m.false_positives as f64 / 50_000.0);
            assert!(m.within_tolerance(), "{m:?}");
            assert_eq!(m.stored_bits_per_key, m.filter_bytes as f64 * 8.0 / 5_000.0);
            assert!(m.copies >= 1 && m.uncached_bytes >= 1 << 20, "{m:?}");
            assert_eq!(m.uncached_bytes, m.copies * m.filter_bytes);
            for t in [
                m.probe_ns_cached,
                m.probe_ns_uncached,
                m.probe_ns_uncached_back_to_back,
                m.load_ns_dependent,
                m.keygen_ns,
                m.build_ns_per_key,
                m.uncached_vs_load,
            ] {
                assert!(t.is_finite() && t > 0.0, "{m:?}");
            }
        }
        // The parameters each policy picks: classic k = round(b·ln 2),
        // blocked k one lower, Ribbon r = ⌊b / 1.05⌋.
        let params: Vec<String> = rows.iter().map(Measurement::param).collect();
        assert_eq!(params, ["k=7", "k=6", "r=9", "k=10", "k=9", "r=13"]);
        // 10 bits/key over 5,000 keys: 50,000 bits + the k byte; 98 blocks
        // of 64 bytes + 8; Ribbon r = 9 at 40 blocks of 128 slots (5,100
        // slots for 1.02 slots per key, rounded up), + 10.
        let bytes: Vec<usize> = rows[..3].iter().map(|m| m.filter_bytes).collect();
        assert_eq!(bytes, [6_251, 98 * 64 + 8, 40 * 9 * 16 + 10]);
        // The seed fixes the keys, hence every count.
        let again = super::super::run(&cfg, &mut |_| {}).unwrap();
        let fp = |r: &[Measurement]| r.iter().map(|m| m.false_positives).collect::<Vec<_>>();
        assert_eq!(fp(&rows), fp(&again));
    }
}
