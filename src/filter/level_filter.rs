//! [`LevelFilter`]: which filter kind a level's tables are built with, and
//! how large, as [`crate::Options::filters`] takes it.
//!
//! A size is given either as bits per key (fractional allowed) or as a
//! target false-positive rate; a rate is turned into the smallest setting
//! of the kind whose own theory meets it:
//!
//! - classic Bloom: `bits = ln(1/p) / (ln 2)^2` with `k = round(bits · ln
//!   2)`, the optimum of `(1 − e^(−kn/m))^k` (Bloom 1970; see
//!   [`super::bloom`]);
//! - blocked Bloom: the smallest bits per key, in steps of 1/100 of a bit,
//!   whose [`super::blocked_bloom::theoretical_fpr`] at its best `k` is at
//!   most `p` (blocking costs bits: 9.92 bits/key at 1%, against 9.59
//!   for the classic filter);
//! - Ribbon: `r = ⌈log2(1/p)⌉` result bits, rate `2^−r`
//!   ([`super::ribbon`]).
//!
//! A rate below what a kind can reach is clamped to its limit: 64 bits per
//! key for the Bloom kinds (a classic filter at about `10^-13`), `r = 32`
//! (`2^−32`, about `2.3 · 10^-10`) for Ribbon.

use std::sync::Arc;

use super::{BlockedBloomPolicy, BloomFilterPolicy, FilterPolicy, RibbonFilterPolicy};

/// A filter kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FilterKind {
    /// The classic Bloom filter: `k` bits anywhere in the array
    /// ([`super::bloom`], `siftdb.bloom.xxh3.v1`).
    Bloom,
    /// All `k` bits of a key in one 64-byte block: one cache line per probe
    /// ([`super::blocked_bloom`], `siftdb.blocked_bloom.xxh3.v1`).
    BlockedBloom,
    /// A static filter within 2–7% of the information bound `log2(1/p)`
    /// bits per key ([`super::ribbon`], `siftdb.ribbon.xxh3.v1`).
    Ribbon,
}

impl FilterKind {
    /// Every kind, in the order kvctl and the benchmarks list them.
    pub const ALL: [FilterKind; 3] = [
        FilterKind::Bloom,
        FilterKind::BlockedBloom,
        FilterKind::Ribbon,
    ];

    /// The short name kvctl shows and parses: `bloom`, `blocked-bloom`,
    /// `ribbon`.
    pub fn label(self) -> &'static str {
        match self {
            FilterKind::Bloom => "bloom",
            FilterKind::BlockedBloom => "blocked-bloom",
            FilterKind::Ribbon => "ribbon",
        }
    }

    /// The kind whose tables carry `policy_name` in their properties.
    pub fn from_policy_name(policy_name: &str) -> Option<FilterKind> {
        match policy_name {
            super::BLOOM_POLICY_NAME => Some(FilterKind::Bloom),
            super::BLOCKED_BLOOM_POLICY_NAME => Some(FilterKind::BlockedBloom),
            super::RIBBON_POLICY_NAME => Some(FilterKind::Ribbon),
            _ => None,
        }
    }
}

/// The filter the tables of one level are built with.
///
/// ```
/// use siftdb::filter::{FilterKind, LevelFilter};
/// let mut o = siftdb::Options::default();
/// // Cache-local filters on the small, hot upper levels; the compact static
/// // filter at 1% below them, where most keys live.
/// o.filters = vec![
///     LevelFilter::BitsPerKey(FilterKind::BlockedBloom, 10.0),
///     LevelFilter::BitsPerKey(FilterKind::BlockedBloom, 10.0),
///     LevelFilter::FalsePositiveRate(FilterKind::Ribbon, 0.01),
/// ];
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LevelFilter {
    /// No filter: a lookup that passes a table's key range reads one of its
    /// data blocks.
    None,
    /// `kind` with this many bits per distinct key (fractional allowed;
    /// more than 0, at most 64).
    BitsPerKey(FilterKind, f64),
    /// `kind` sized for this false-positive rate (above 0, below 1; a rate
    /// the kind cannot reach is clamped: see the module docs).
    FalsePositiveRate(FilterKind, f64),
}

/// Steps of the blocked Bloom search for a rate, per bit.
const BLOCKED_STEPS_PER_BIT: f64 = 100.0;

/// Largest bits per key a setting may ask for.
const MAX_BITS_PER_KEY: f64 = 64.0;

impl LevelFilter {
    /// The policy that builds this filter, or `None` for no filter.
    pub fn policy(&self) -> Option<Arc<dyn FilterPolicy>> {
        let policy: Arc<dyn FilterPolicy> = match *self {
            LevelFilter::None => return None,
            LevelFilter::BitsPerKey(FilterKind::Bloom, b) => {
                Arc::new(BloomFilterPolicy::with_bits_per_key(b))
            }
            LevelFilter::BitsPerKey(FilterKind::BlockedBloom, b) => {
                Arc::new(BlockedBloomPolicy::new(b))
            }
            LevelFilter::BitsPerKey(FilterKind::Ribbon, b) => {
                Arc::new(RibbonFilterPolicy::with_bits_per_key(b))
            }
            LevelFilter::FalsePositiveRate(FilterKind::Bloom, p) => {
                let bits = (1.0 / p).ln() / (std::f64::consts::LN_2 * std::f64::consts::LN_2);
                Arc::new(BloomFilterPolicy::with_bits_per_key(
                    bits.min(MAX_BITS_PER_KEY),
                ))
            }
            LevelFilter::FalsePositiveRate(FilterKind::BlockedBloom, p) => {
                Arc::new(BlockedBloomPolicy::new(blocked_bits_for(p)))
            }
            LevelFilter::FalsePositiveRate(FilterKind::Ribbon, p) => {
                Arc::new(RibbonFilterPolicy::with_fpr(p))
            }
        };
        Some(policy)
    }

    /// The filter's kind, `None` for no filter.
    pub fn kind(&self) -> Option<FilterKind> {
        match *self {
            LevelFilter::None => None,
            LevelFilter::BitsPerKey(k, _) | LevelFilter::FalsePositiveRate(k, _) => Some(k),
        }
    }

    /// Checks the size.
    ///
    /// # Errors
    /// What is wrong, for [`crate::Error::InvalidArgument`]: bits per key
    /// not in `(0, 64]`, or a rate not in `(0, 1)`.
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            LevelFilter::None => Ok(()),
            LevelFilter::BitsPerKey(_, b) if b > 0.0 && b <= MAX_BITS_PER_KEY => Ok(()),
            LevelFilter::BitsPerKey(k, b) => Err(format!(
                "{} filter: bits per key must be above 0 and at most 64, not {}",
                k.label(),
                super::shown(b)
            )),
            LevelFilter::FalsePositiveRate(_, p) if p > 0.0 && p < 1.0 => Ok(()),
            LevelFilter::FalsePositiveRate(k, p) => Err(format!(
                "{} filter: the false-positive rate must be above 0 and below 1, not {p}",
                k.label()
            )),
        }
    }
}

/// The smallest bits per key (in hundredths) at which a blocked Bloom filter
/// with its best `k` has a theoretical rate of at most `p`; 64 if none does.
fn blocked_bits_for(p: f64) -> f64 {
    use super::blocked_bloom::{best_hashes, theoretical_fpr};
    let meets = |bits: f64| theoretical_fpr(bits, best_hashes(bits)) <= p;
    // The rate falls as bits grow: bisect over whole steps.
    let (mut lo, mut hi) = (1u32, (MAX_BITS_PER_KEY * BLOCKED_STEPS_PER_BIT) as u32);
    if !meets(f64::from(hi) / BLOCKED_STEPS_PER_BIT) {
        return MAX_BITS_PER_KEY;
    }
    while lo < hi {
        let mid = (lo + hi) / 2;
        if meets(f64::from(mid) / BLOCKED_STEPS_PER_BIT) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    f64::from(hi) / BLOCKED_STEPS_PER_BIT
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{blocked_bloom, bloom, hash_key, ribbon, KeyHash};

    #[test]
    fn a_rate_becomes_the_smallest_setting_that_meets_it() {
        // Classic Bloom at 1%: 9.585 bits/key, k = 7, theory 1.00%.
        let p = LevelFilter::FalsePositiveRate(FilterKind::Bloom, 0.01)
            .policy()
            .unwrap();
        let keys: Vec<KeyHash> = (0..1000u32).map(|i| hash_key(&i.to_le_bytes())).collect();
        let shape = p.shape(&p.create_filter(&keys));
        assert_eq!((shape.bits_per_key, shape.num_hashes), (10, 7));
        // 9,585 bits for 1,000 keys, rounded up to whole bytes.
        assert_eq!(shape.bits, 9592);
        assert!((bloom::theoretical_fpr(9.585, 7) - 0.01).abs() < 0.0003);
        // Blocked Bloom at 1%: just enough bits for its own theory.
        let bb = blocked_bits_for(0.01);
        let k = blocked_bloom::best_hashes(bb);
        assert!(blocked_bloom::theoretical_fpr(bb, k) <= 0.01);
        let less = bb - 0.01;
        assert!(
            blocked_bloom::theoretical_fpr(less, blocked_bloom::best_hashes(less)) > 0.01,
            "{bb}"
        );
        // 9.92 bits/key, against 9.59 for the classic filter.
        assert!((9.6..10.5).contains(&bb), "{bb}");
        // Ribbon at 1%: r = 7, rate 0.78%.
        assert_eq!(ribbon::theoretical_fpr(7), 1.0 / 128.0);
        assert_eq!(blocked_bits_for(1e-30), MAX_BITS_PER_KEY);
        // Rates out of reach are clamped to each kind's limit.
        let keys: Vec<KeyHash> = (0..100u32).map(|i| hash_key(&i.to_le_bytes())).collect();
        let shape = |kind| {
            let p = LevelFilter::FalsePositiveRate(kind, 1e-30)
                .policy()
                .unwrap();
            p.shape(&p.create_filter(&keys))
        };
        assert_eq!(shape(FilterKind::Bloom).bits_per_key, 64);
        assert_eq!(shape(FilterKind::Ribbon).bits_per_key, 32);
    }

    #[test]
    fn every_setting_builds_its_kind_and_finds_every_key() {
        let keys: Vec<KeyHash> = (0..2000u32).map(|i| hash_key(&i.to_le_bytes())).collect();
        for kind in FilterKind::ALL {
            for f in [
                LevelFilter::BitsPerKey(kind, 6.0),
                LevelFilter::FalsePositiveRate(kind, 0.02),
            ] {
                f.validate().unwrap();
                let p = f.policy().unwrap();
                assert_eq!(FilterKind::from_policy_name(p.name()), Some(kind));
                assert_eq!(f.kind(), Some(kind));
                let filter = p.create_filter(&keys);
                assert!(keys.iter().all(|&h| p.may_match(&filter, h)), "{f:?}");
                // At 1.6% to 6%, 10,000 absent keys give 160 to 600
                // false positives: far fewer than all, far more than none.
                let fp = (0..10_000u32)
                    .filter(|i| p.may_match(&filter, hash_key(format!("absent{i}").as_bytes())))
                    .count();
                assert!((80..1000).contains(&fp), "{f:?}: {fp} false positives");
            }
        }
        assert!(LevelFilter::None.policy().is_none());
        assert_eq!(LevelFilter::None.kind(), None);
    }

    #[test]
    fn bad_sizes_are_refused() {
        for f in [
            LevelFilter::BitsPerKey(FilterKind::Bloom, 0.0),
            LevelFilter::BitsPerKey(FilterKind::Ribbon, 65.0),
            LevelFilter::BitsPerKey(FilterKind::BlockedBloom, f64::NAN),
            LevelFilter::FalsePositiveRate(FilterKind::Bloom, 0.0),
            LevelFilter::FalsePositiveRate(FilterKind::Ribbon, 1.0),
            LevelFilter::FalsePositiveRate(FilterKind::BlockedBloom, f64::NAN),
        ] {
            assert!(f.validate().is_err(), "{f:?}");
        }
        assert_eq!(
            LevelFilter::BitsPerKey(FilterKind::Ribbon, 65.0)
                .validate()
                .unwrap_err(),
            "ribbon filter: bits per key must be above 0 and at most 64, not 65"
        );
    }
}
