//! What the sweep knows about each filter kind: the parameter the policy
//! chose (`k` or `r`), read from the filter's own bytes, and the kind's
//! own theory of its false-positive rate.

use siftdb::filter::{
    blocked_bloom, bloom, bloom_stats, ribbon, BloomFilterPolicy, FilterKind, RibbonFilterPolicy,
};

use super::{Error, Result};

/// Bits in one blocked Bloom block.
const BLOCK_BITS: f64 = 512.0;

/// Slots per Ribbon block.
const RIBBON_WIDTH: f64 = 128.0;

/// The chosen parameter of a built filter and the false-positive rate its
/// kind's theory predicts for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Theory {
    /// Probes per key `k` (the Bloom kinds), or `None`.
    pub hashes: Option<u32>,
    /// Result bits `r` (Ribbon), or `None`.
    pub result_bits: Option<u32>,
    /// The predicted rate.
    pub fpr: f64,
}

/// The theory of `filter`, built by a policy of `kind` over `keys` keys:
///
/// - classic Bloom: `(1 − e^(−k·n/m))^k` with the filter's own `m` and `k`
///   ([`bloom::theoretical_fpr`]);
/// - blocked Bloom: the exact blocked formula at the filter's own `m/n`
///   and `k` ([`blocked_bloom::theoretical_fpr`]);
/// - Ribbon: `2^−r` ([`ribbon::theoretical_fpr`]).
///
/// # Errors
/// [`Error::Config`] if `kind` is one this harness does not know, or the
/// filter does not decode as that kind (which would be a bug).
pub(crate) fn theory(kind: FilterKind, filter: &[u8], keys: usize) -> Result<Theory> {
    let n = keys.max(1) as f64;
    let undecodable = || Error::Config(format!("a {} filter did not decode", kind.label()));
    Ok(match kind {
        FilterKind::Bloom => {
            let s = bloom_stats(filter).ok_or_else(undecodable)?;
            Theory {
                hashes: Some(s.num_hashes),
                result_bits: None,
                fpr: bloom::theoretical_fpr(s.bits as f64 / n, s.num_hashes),
            }
        }
        FilterKind::BlockedBloom => {
            let s = blocked_bloom::blocked_bloom_stats(filter).ok_or_else(undecodable)?;
            let bits_per_key = f64::from(s.blocks) * BLOCK_BITS / n;
            Theory {
                hashes: Some(s.num_hashes),
                result_bits: None,
                fpr: blocked_bloom::theoretical_fpr(bits_per_key, s.num_hashes),
            }
        }
        FilterKind::Ribbon => {
            let s = ribbon::ribbon_stats(filter).ok_or_else(undecodable)?;
            Theory {
                hashes: None,
                result_bits: Some(s.result_bits),
                fpr: s.design_fpr,
            }
        }
        other => {
            return Err(Error::Config(format!(
                "no theory for the {} filter kind",
                other.label()
            )))
        }
    })
}

/// The kind's theory as a curve of `(stored bits per key, rate)` over
/// stored bits per key from `lo` to `hi`, for filters of `keys` keys, at
/// the parameter each kind's policy picks:
///
/// - classic Bloom at `b` bits per key: `k = round(b · ln 2)`;
/// - blocked Bloom: the `k` that minimises its rate
///   ([`blocked_bloom::best_hashes`]);
/// - Ribbon: `2^−r` at `r · slots/key` stored bits, for real `r` (the
///   filter stores `r` bits in each of `(1 + ε)·n` slots; [`ribbon::slot_factor`],
///   rounded to whole blocks of 128), a straight line on a log scale.
///
/// Empty for a kind without a theory.
pub(crate) fn curve(kind: FilterKind, keys: usize, lo: f64, hi: f64) -> Vec<(f64, f64)> {
    const STEPS: u32 = 400;
    let xs = (0..=STEPS).map(|i| lo + (hi - lo) * f64::from(i) / f64::from(STEPS));
    match kind {
        FilterKind::Bloom => xs
            .map(|b| {
                let k = BloomFilterPolicy::with_bits_per_key(b).num_hashes();
                (b, bloom::theoretical_fpr(b, k))
            })
            .collect(),
        FilterKind::BlockedBloom => xs
            .map(|b| {
                let k = blocked_bloom::best_hashes(b);
                (b, blocked_bloom::theoretical_fpr(b, k))
            })
            .collect(),
        FilterKind::Ribbon => {
            let slots_per_key = ribbon_slots_per_key(keys);
            xs.map(|x| (x, 0.5f64.powf(x / slots_per_key))).collect()
        }
        _ => Vec::new(),
    }
}

/// Slots per key of a Ribbon filter over `keys` keys at its first
/// attempt: whole blocks of 128 slots for `(1 + ε)·n`.
pub(crate) fn ribbon_slots_per_key(keys: usize) -> f64 {
    let n = keys.max(1);
    f64::from(RibbonFilterPolicy::new(1).blocks_for(n)) * RIBBON_WIDTH / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use siftdb::filter::{hash_key, KeyHash, LevelFilter};

    fn keys(n: u32) -> Vec<KeyHash> {
        (0..n).map(|i| hash_key(&i.to_le_bytes())).collect()
    }

    #[test]
    fn theory_reads_each_kind_from_its_bytes() {
        let k = keys(10_000);
        let build = |kind, b| {
            LevelFilter::BitsPerKey(kind, b)
                .policy()
                .unwrap()
                .create_filter(&k)
        };
        // Classic Bloom at 10 bits/key: k = 7, (1 − e^−0.7)^7 = 0.8194%.
        let t = theory(FilterKind::Bloom, &build(FilterKind::Bloom, 10.0), 10_000).unwrap();
        assert_eq!((t.hashes, t.result_bits), (Some(7), None));
        assert!((t.fpr - 0.008_193_5).abs() < 1e-6, "{}", t.fpr);
        // Blocked Bloom at 10 bits/key: k = 6, 0.966%, at the filter's own
        // m/n (196 blocks for 10,000 keys: 10.035 bits/key).
        let f = build(FilterKind::BlockedBloom, 10.0);
        let t = theory(FilterKind::BlockedBloom, &f, 10_000).unwrap();
        assert_eq!((t.hashes, t.result_bits), (Some(6), None));
        let want = blocked_bloom::theoretical_fpr(196.0 * 512.0 / 10_000.0, 6);
        assert_eq!(t.fpr, want);
        assert!((t.fpr - 0.009_6).abs() < 0.000_2, "{}", t.fpr);
        // Ribbon at "10 bits per key": r = ⌊10 / 1.05⌋ = 9, 2^−9.
        let t = theory(FilterKind::Ribbon, &build(FilterKind::Ribbon, 10.0), 10_000).unwrap();
        assert_eq!((t.hashes, t.result_bits), (None, Some(9)));
        assert_eq!(t.fpr, 1.0 / 512.0);
        // Bytes of another kind do not decode.
        let e = theory(FilterKind::Ribbon, &build(FilterKind::Bloom, 10.0), 10_000).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid configuration: a ribbon filter did not decode"
        );
    }

    #[test]
    fn curves_follow_each_kind_and_stay_above_the_bound() {
        for kind in FilterKind::ALL {
            let c = curve(kind, 1_000_000, 2.0, 16.0);
            assert_eq!(c.len(), 401);
            assert_eq!(c[0].0, 2.0);
            assert_eq!(c[400].0, 16.0);
            // No filter beats the information bound 2^−b.
            assert!(c.iter().all(|&(b, p)| p > 0.5f64.powf(b)), "{kind:?}");
        }
        let at = |kind, b: f64| curve(kind, 1_000_000, b, b)[0].1;
        assert!((at(FilterKind::Bloom, 10.0) - 0.008_193_5).abs() < 1e-6);
        assert!((at(FilterKind::BlockedBloom, 10.0) - 0.009_66).abs() < 1e-5);
        // 1,000,000 keys: ⌈1,054,658 / 128⌉ = 8240 blocks, 1.05472 slots
        // per key; 7 result bits then cost 7.38 bits per key.
        let spk = ribbon_slots_per_key(1_000_000);
        assert!((spk - 1.054_72).abs() < 1e-12, "{spk}");
        let p = at(FilterKind::Ribbon, 7.0 * spk);
        assert!((p - 1.0 / 128.0).abs() < 1e-12, "{p}");
    }
}
