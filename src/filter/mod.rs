//! Per-SSTable filters that let a point lookup skip a table without reading
//! any of its data blocks.
//!
//! A filter summarises the set of *user keys* in one SSTable (never internal
//! keys: every version of a user key maps to the same filter entry, so a
//! lookup at any sequence number probes the same bits). It answers
//! [`FilterPolicy::may_match`] with "definitely absent" (`false`) or "maybe
//! present" (`true`).
//!
//! # Hash once per lookup
//!
//! The key hash is fixed crate-wide: [`hash_key`] (xxh3, 128 bits). A point
//! lookup hashes its user key once and hands the same [`KeyHash`] to the
//! filter of every SSTable it consults, so probing *t* tables costs one hash
//! plus *t* cheap probes. A policy therefore never hashes keys itself; it
//! derives its probe positions from the [`KeyHash`].
//!
//! # Self-describing, versioned by name
//!
//! The policy's [`FilterPolicy::name`] is stored in the SSTable's properties.
//! A reader that does not recognise the name (or finds a filter it cannot
//! parse) treats the filter as absent and answers "may match", which is
//! always safe. The name must therefore change whenever the encoding does.
//!
//! # Kinds
//!
//! | name | module | for |
//! |---|---|---|
//! | `siftdb.bloom.xxh3.v1` | [`bloom`] | the classic filter: `k` random bits anywhere |
//! | `siftdb.blocked_bloom.xxh3.v1` | [`blocked_bloom`] | one 64-byte block per key: one cache line per probe, 1% (4 bits/key) to 80% (16) more false positives at equal bits |
//! | `siftdb.ribbon.xxh3.v1` | [`ribbon`] | static, within 2–7% of `log2(1/p)` bits per key, any rate `2^−r`, `r` in 1..=32 |
//!
//! Every kind reads all its parameters from its own bytes; the policy
//! objects [`policy_for_name`] returns carry only build-time settings.

pub mod blocked_bloom;
pub mod bloom;
pub mod budget;
pub mod level_filter;
pub mod prefix;
pub mod ribbon;
pub mod spec;

use std::sync::Arc;

pub use blocked_bloom::{
    blocked_bloom_stats, BlockedBloomPolicy, BlockedBloomStats, BLOCKED_BLOOM_POLICY_NAME,
};
pub use bloom::{bloom_stats, theoretical_fpr, BloomFilterPolicy, BloomStats, BLOOM_POLICY_NAME};
pub use budget::{FilterBudget, RunShape};
pub use level_filter::{FilterKind, LevelFilter};
pub use prefix::{FixedPrefix, PrefixExtractor};
pub use ribbon::{ribbon_stats, RibbonFilterPolicy, RibbonStats, RIBBON_POLICY_NAME};

/// The 128-bit hash of a user key, computed once per key by [`hash_key`].
///
/// Policies split it as they need; the Bloom filter uses the low 64 bits as
/// `h1` and the high 64 bits as `h2` (see [`bloom`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyHash(pub u128);

impl KeyHash {
    /// The low 64 bits.
    pub fn low(self) -> u64 {
        self.0 as u64
    }

    /// The high 64 bits.
    pub fn high(self) -> u64 {
        (self.0 >> 64) as u64
    }
}

/// `x` for an error message: as written for ordinary numbers, in
/// scientific notation past a million (a new-user trial's
/// `--filter-budget 1e300` was echoed as 301 digits).
pub(crate) fn shown(x: f64) -> String {
    if x.is_finite() && x.abs() >= 1e6 {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}

/// Hashes a user key with xxh3-128 (seed 0), the one key hash of siftdb.
///
/// Changing this function changes the meaning of every stored filter: it
/// must never change without also changing every policy's name.
pub fn hash_key(user_key: &[u8]) -> KeyHash {
    KeyHash(xxhash_rust::xxh3::xxh3_128(user_key))
}

/// The sizing parameters a policy used for one filter, recorded in the
/// SSTable's properties for tools (`kvctl`) and experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FilterShape {
    /// Bits the policy allots per distinct key, rounded to a whole bit (for
    /// Ribbon: its result width `r`; 0 if not applicable).
    pub bits_per_key: u32,
    /// Hash probes per key, `k` (0 if not applicable).
    pub num_hashes: u32,
    /// Size of the filter's bit array, `m`, in bits.
    pub bits: u64,
}

/// Builds and probes the filter stored in each SSTable.
///
/// Implementations must be deterministic and pure: the same hashes always
/// produce the same bytes, and `may_match` must return `true` for every hash
/// that was passed to `create_filter` (no false negatives). They must never
/// panic on any `filter` bytes, since those come from disk.
pub trait FilterPolicy: Send + Sync + std::fmt::Debug {
    /// The name stored in SSTable properties. Must change whenever the
    /// encoding or the meaning of the filter bytes changes.
    fn name(&self) -> &'static str;

    /// Builds a filter over `hashes`, one per distinct user key (callers do
    /// not pass duplicates, but a policy must tolerate them).
    fn create_filter(&self, hashes: &[KeyHash]) -> Vec<u8>;

    /// `false` only if the key with `hash` was certainly not among the keys
    /// `filter` was built from. Malformed or unknown filters answer `true`.
    fn may_match(&self, filter: &[u8], hash: KeyHash) -> bool;

    /// The parameters behind `filter` (a filter this policy built), for the
    /// SSTable properties. The default reports only the filter's size.
    fn shape(&self, filter: &[u8]) -> FilterShape {
        FilterShape {
            bits_per_key: 0,
            num_hashes: 0,
            bits: filter.len() as u64 * 8,
        }
    }

    /// Where the filter's first byte should sit in the table file, as
    /// `(modulus, remainder)`: a table builder pads before the filter block
    /// so that its offset is `remainder` modulo `modulus`. Tables are mapped
    /// at page boundaries, so this aligns the filter in memory too. The
    /// default, `None`, asks for nothing.
    fn placement(&self) -> Option<(u64, u64)> {
        None
    }
}

/// `bits_per_key` in thousandths of a bit, the resolution at which the
/// policies keep a fractional setting (NaN and negative values become 0,
/// values too large for a `u64` saturate).
fn millibits(bits_per_key: f64) -> u64 {
    // `as` saturates and maps NaN to 0.
    (bits_per_key * 1000.0).round() as u64
}

/// A setting in thousandths of a bit, rounded to the nearest whole bit
/// (what [`FilterShape::bits_per_key`] records), saturating.
fn whole_bits(millibits: u64) -> u32 {
    u32::try_from(millibits.saturating_add(500) / 1000).unwrap_or(u32::MAX)
}

/// The policy that reads filters written under `name`, or `None` if this
/// build does not know the name (the filter must then be ignored).
///
/// Reading needs no sizing parameters: a Bloom filter stores its `k` and
/// its length gives `m`; the other kinds keep theirs in a header. The
/// build settings of the returned policy are the defaults (10 bits/key,
/// `r = 7`).
pub fn policy_for_name(name: &str) -> Option<Arc<dyn FilterPolicy>> {
    match name {
        BLOOM_POLICY_NAME => Some(Arc::new(BloomFilterPolicy::new(10))),
        BLOCKED_BLOOM_POLICY_NAME => Some(Arc::new(BlockedBloomPolicy::new(10.0))),
        RIBBON_POLICY_NAME => Some(Arc::new(RibbonFilterPolicy::new(7))),
        _ => None,
    }
}

/// Key sets and rate measurements the kinds' unit tests share.
#[cfg(test)]
pub(crate) mod testutil {
    use super::{hash_key, FilterPolicy, KeyHash};

    /// The hashes of the keys `{prefix}{i:08}` for `i` in `range`.
    pub fn hashes(range: std::ops::Range<u32>, prefix: &str) -> Vec<KeyHash> {
        range
            .map(|i| hash_key(format!("{prefix}{i:08}").as_bytes()))
            .collect()
    }

    /// The fraction of `n` keys never added that `filter` lets through.
    pub fn measured_fpr(p: &dyn FilterPolicy, filter: &[u8], n: u32) -> f64 {
        let absent = hashes(0..n, "absent");
        let fp = absent.iter().filter(|h| p.may_match(filter, **h)).count();
        fp as f64 / f64::from(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_key_is_xxh3_128_of_the_user_key() {
        // Reference value of XXH3_128bits("") with seed 0 from the xxHash
        // project's test vectors.
        assert_eq!(
            hash_key(b""),
            KeyHash(0x99aa_06d3_0147_98d8_6001_c324_468d_497f)
        );
        let h = hash_key(b"siftdb");
        assert_eq!(h.0, xxhash_rust::xxh3::xxh3_128(b"siftdb"));
        assert_eq!(h.low(), h.0 as u64);
        assert_eq!(h.high(), (h.0 >> 64) as u64);
    }

    #[test]
    fn policy_lookup_by_name() {
        let p = policy_for_name(BLOOM_POLICY_NAME).unwrap();
        assert_eq!(p.name(), "siftdb.bloom.xxh3.v1");
        let keys: Vec<KeyHash> = (0..500u32).map(|i| hash_key(&i.to_le_bytes())).collect();
        // Each kind's reader answers for filters built at other settings.
        let built: [(Arc<dyn FilterPolicy>, &str); 3] = [
            (
                Arc::new(BloomFilterPolicy::with_bits_per_key(6.5)),
                BLOOM_POLICY_NAME,
            ),
            (
                Arc::new(BlockedBloomPolicy::new(15.0)),
                BLOCKED_BLOOM_POLICY_NAME,
            ),
            (Arc::new(RibbonFilterPolicy::new(13)), RIBBON_POLICY_NAME),
        ];
        for (builder, name) in built {
            assert_eq!(builder.name(), name);
            let filter = builder.create_filter(&keys);
            let reader = policy_for_name(name).unwrap();
            assert_eq!(reader.name(), name);
            assert!(keys.iter().all(|h| reader.may_match(&filter, *h)), "{name}");
            assert!(!reader.may_match(&filter, hash_key(b"absent")), "{name}");
        }
        assert!(policy_for_name("leveldb.BuiltinBloomFilter2").is_none());
        assert!(policy_for_name("").is_none());
    }

    #[test]
    fn default_shape_reports_bits() {
        #[derive(Debug)]
        struct AllPass;
        impl FilterPolicy for AllPass {
            fn name(&self) -> &'static str {
                "test.allpass"
            }
            fn create_filter(&self, _: &[KeyHash]) -> Vec<u8> {
                vec![0; 3]
            }
            fn may_match(&self, _: &[u8], _: KeyHash) -> bool {
                true
            }
        }
        let f = AllPass.create_filter(&[]);
        assert_eq!(
            AllPass.shape(&f),
            FilterShape {
                bits_per_key: 0,
                num_hashes: 0,
                bits: 24
            }
        );
    }
}
