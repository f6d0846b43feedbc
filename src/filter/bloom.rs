//! A classic Bloom filter (Bloom 1970) probed by double hashing.
//!
//! # Parameters
//!
//! For `n` distinct keys at `bits_per_key` bits each, the bit array holds
//! `m = max(64, ⌈bits_per_key · n⌉)` bits, rounded up to a whole byte.
//! `bits_per_key` may be fractional ([`BloomFilterPolicy::with_bits_per_key`],
//! to a thousandth of a bit); a whole number gives exactly the sizes of
//! [`BloomFilterPolicy::new`]. Each key sets `k` bits; both constructors pick
//! `k = round(bits_per_key · ln 2)` clamped to `1..=30`, the `k` that
//! minimises the false-positive rate `(1 − e^(−k·n/m))^k` for a given `m/n`
//! (see [`theoretical_fpr`]). The encoding does not record `bits_per_key`:
//! a reader derives `m` from the length, so fractional settings need no new
//! name.
//!
//! # Probe positions
//!
//! From the key's 128-bit [`KeyHash`]: `h1` = low 64 bits, `h2` = high 64
//! bits with the lowest bit forced to 1 (so `h2` is odd, hence nonzero, and
//! the `k` probes never collapse onto one value). Probe `i` (for `i` in
//! `0..k`) is `g_i = h1 + i·h2` (wrapping `u64` arithmetic), the double
//! hashing of Kirsch and Mitzenmacher, "Less Hashing, Same Performance:
//! Building a Better Bloom Filter" (2006), which keeps the asymptotic
//! false-positive rate of `k` independent hashes. `g_i` is mapped to a bit
//! index in `0..m` by Lemire's fast range reduction, `(g_i · m) >> 64`
//! computed in 128 bits ("Fast Random Integer Generation in an Interval",
//! 2019), which uses the high bits of `g_i` and needs no division.
//!
//! # Encoding (`siftdb.bloom.xxh3.v1`)
//!
//! ```text
//! +-------------------------------------+--------+
//! | bit array: m/8 bytes                | k: u8  |
//! +-------------------------------------+--------+
//! ```
//!
//! Bit `b` is bit `b % 8` (least significant first) of byte `b / 8`. `k` sits
//! in the last byte, as in LevelDB, so `m = 8 · (len − 1)` is derived from
//! the length and a reader needs no other metadata. A filter shorter than 2
//! bytes, or with `k == 0` or `k > 30`, is not a filter this code wrote: it
//! answers "may match" for every key, which is always safe.
//!
//! Worked example (pinned by the `golden_bytes` test): the keys `"a"` and
//! `"b"` at 10 bits/key give `k = 7` and `m = max(64, 20) = 64`, and encode
//! to the 9 bytes `40 60 20 00 19 01 88 0b 07` (14 probes set 13 distinct
//! bits; the last byte is `k`).

use super::{FilterPolicy, FilterShape, KeyHash};

/// The name under which [`BloomFilterPolicy`] filters are stored. Change it
/// whenever the encoding or the probe sequence changes.
pub const BLOOM_POLICY_NAME: &str = "siftdb.bloom.xxh3.v1";

/// Smallest bit array built, in bits, so tiny tables still get a useful
/// filter.
const MIN_BITS: u64 = 64;

/// Largest `k` written or accepted. Larger values in a filter's last byte
/// are treated as an unknown encoding.
pub const MAX_HASHES: u32 = 30;

/// Probes [`BloomFilterPolicy::may_match`] tests together, without a
/// branch between them, before it may stop at a clear bit. Stopping at the
/// first clear bit reads the fewest lines, but each stop is a branch on
/// a bit just loaded, which the CPU guesses wrong about half the time; a
/// group's loads are all in flight at once. At 10 bits per key (`k = 7`,
/// half the bits set) a group of 3 ends 7 absent-key probes in 8 after its
/// first group. Measured on three level-0 tables of 1M keys (DESIGN.md
/// 13): an absent key costs 117 ns when the filters are out of the CPU's
/// caches (one probe at a time: 142; groups of 2: 122) and 85 ns when they
/// are in (75; 81).
const PROBE_GROUP: usize = 3;

/// Builds and probes Bloom filters over user-key hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloomFilterPolicy {
    /// Bits per key in thousandths of a bit (10 bits/key is 10_000).
    millibits_per_key: u64,
    num_hashes: u32,
}

impl BloomFilterPolicy {
    /// A policy with `bits_per_key` bits per distinct key and the
    /// rate-minimising `k = round(bits_per_key · ln 2)`, clamped to
    /// `1..=30`. At 10 bits/key, `k = 7` and the false-positive rate is
    /// about 0.82%.
    pub fn new(bits_per_key: u32) -> Self {
        Self::with_bits_per_key(f64::from(bits_per_key))
    }

    /// A policy with a fractional number of bits per distinct key (kept to a
    /// thousandth of a bit; NaN or negative counts as 0) and
    /// `k = round(bits_per_key · ln 2)`, clamped to `1..=30`. At 9.5
    /// bits/key, `k = 7` and the false-positive rate is about 1.0%.
    pub fn with_bits_per_key(bits_per_key: f64) -> Self {
        let millibits = super::millibits(bits_per_key);
        let k = (millibits as f64 / 1000.0 * std::f64::consts::LN_2).round();
        // `k` is finite and non-negative; the cast saturates, then clamps.
        Self::with_millibits_and_hashes(millibits, k as u32)
    }

    /// A policy with an explicit number of hash probes `k` (clamped to
    /// `1..=30`), for experiments on the `k` trade-off: fewer probes cost
    /// less per lookup but raise the false-positive rate.
    pub fn with_hashes(bits_per_key: u32, num_hashes: u32) -> Self {
        Self::with_millibits_and_hashes(u64::from(bits_per_key) * 1000, num_hashes)
    }

    fn with_millibits_and_hashes(millibits_per_key: u64, num_hashes: u32) -> Self {
        BloomFilterPolicy {
            millibits_per_key,
            num_hashes: num_hashes.clamp(1, MAX_HASHES),
        }
    }

    /// Bits allotted per distinct key, rounded to the nearest whole bit
    /// (the figure [`FilterShape::bits_per_key`] records); see
    /// [`BloomFilterPolicy::fractional_bits_per_key`] for the exact setting.
    pub fn bits_per_key(&self) -> u32 {
        super::whole_bits(self.millibits_per_key)
    }

    /// Bits allotted per distinct key, to a thousandth of a bit.
    pub fn fractional_bits_per_key(&self) -> f64 {
        self.millibits_per_key as f64 / 1000.0
    }

    /// Probes per key, `k`.
    pub fn num_hashes(&self) -> u32 {
        self.num_hashes
    }

    /// Bits in the array built for `n` keys: `max(64, ⌈bits_per_key · n⌉)`
    /// rounded up to a multiple of 8.
    pub fn bits_for(&self, n: usize) -> u64 {
        let raw = (u128::from(self.millibits_per_key) * n as u128).div_ceil(1000);
        let raw = u64::try_from(raw).unwrap_or(u64::MAX).max(MIN_BITS);
        raw.div_ceil(8).saturating_mul(8)
    }
}

/// The probe positions of `hash` in an array of `m` bits, in order.
fn probes(hash: KeyHash, k: u32, m: u64) -> impl Iterator<Item = u64> {
    let h1 = hash.low();
    let h2 = hash.high() | 1;
    (0..u64::from(k)).map(move |i| {
        let g = h1.wrapping_add(i.wrapping_mul(h2));
        ((u128::from(g) * u128::from(m)) >> 64) as u64
    })
}

/// Splits a filter into its bit array and `k`, or `None` if it is not a
/// well-formed `siftdb.bloom.xxh3.v1` filter.
fn parse(filter: &[u8]) -> Option<(&[u8], u32)> {
    let (&k, bits) = filter.split_last()?;
    let k = u32::from(k);
    if bits.is_empty() || k == 0 || k > MAX_HASHES {
        return None;
    }
    Some((bits, k))
}

impl FilterPolicy for BloomFilterPolicy {
    fn name(&self) -> &'static str {
        BLOOM_POLICY_NAME
    }

    fn create_filter(&self, hashes: &[KeyHash]) -> Vec<u8> {
        let m = self.bits_for(hashes.len());
        let bytes = usize::try_from(m / 8).expect("filter size exceeds the address space");
        let mut out = vec![0u8; bytes + 1];
        for &h in hashes {
            for bit in probes(h, self.num_hashes, m) {
                // bit < m = 8 · bytes, so the index is in range.
                out[(bit / 8) as usize] |= 1 << (bit % 8);
            }
        }
        out[bytes] = self.num_hashes as u8;
        out
    }

    fn may_match(&self, filter: &[u8], hash: KeyHash) -> bool {
        let Some((bits, k)) = parse(filter) else {
            return true;
        };
        let m = bits.len() as u64 * 8;
        // 1 if the bit is set (or, in a malformed filter, out of range).
        let bit_at = |bit: u64| bits.get((bit / 8) as usize).map_or(1, |b| b >> (bit % 8)) & 1;
        let mut probes = probes(hash, k, m);
        for _ in 0..(k as usize).div_ceil(PROBE_GROUP) {
            let group = probes
                .by_ref()
                .take(PROBE_GROUP)
                .fold(1, |g, bit| g & bit_at(bit));
            if group == 0 {
                return false;
            }
        }
        true
    }

    fn shape(&self, filter: &[u8]) -> FilterShape {
        let stats = bloom_stats(filter);
        FilterShape {
            bits_per_key: self.bits_per_key(),
            num_hashes: stats.map_or(0, |s| s.num_hashes),
            bits: stats.map_or(0, |s| s.bits),
        }
    }
}

/// What a Bloom filter's bytes say about it, for tools such as `kvctl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloomStats {
    /// Size of the bit array, `m`, in bits.
    pub bits: u64,
    /// Probes per key, `k`.
    pub num_hashes: u32,
    /// Bits set to 1. For `n` keys the expected fraction `bits_set / m` is
    /// about `1 − e^(−k·n/m)`.
    pub bits_set: u64,
}

/// Decodes the statistics of a `siftdb.bloom.xxh3.v1` filter, or `None` if
/// the bytes are not one (too short, or `k` outside `1..=30`).
pub fn bloom_stats(filter: &[u8]) -> Option<BloomStats> {
    let (bits, k) = parse(filter)?;
    Some(BloomStats {
        bits: bits.len() as u64 * 8,
        num_hashes: k,
        bits_set: bits.iter().map(|b| u64::from(b.count_ones())).sum(),
    })
}

/// The expected false-positive rate of a Bloom filter with `bits_per_key`
/// bits per key (`m/n`) and `k` probes: `(1 − e^(−k/bits_per_key))^k`
/// (Bloom, "Space/Time Trade-offs in Hash Coding with Allowable Errors",
/// CACM 1970, in the usual large-`m` approximation). Returns 1.0 when
/// `bits_per_key <= 0` or `k == 0` (no filter rejects anything).
pub fn theoretical_fpr(bits_per_key: f64, k: u32) -> f64 {
    if bits_per_key.is_nan() || bits_per_key <= 0.0 || k == 0 {
        return 1.0;
    }
    let k = f64::from(k);
    (1.0 - (-k / bits_per_key).exp()).powf(k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::hash_key;
    use crate::filter::testutil::hashes;

    #[test]
    fn k_is_rounded_bits_times_ln2_and_clamped() {
        assert_eq!(BloomFilterPolicy::new(10).num_hashes(), 7);
        assert_eq!(BloomFilterPolicy::new(1).num_hashes(), 1);
        assert_eq!(BloomFilterPolicy::new(0).num_hashes(), 1);
        assert_eq!(BloomFilterPolicy::new(3).num_hashes(), 2);
        assert_eq!(BloomFilterPolicy::new(64).num_hashes(), 30);
        assert_eq!(BloomFilterPolicy::with_hashes(10, 0).num_hashes(), 1);
        assert_eq!(BloomFilterPolicy::with_hashes(10, 99).num_hashes(), 30);
        assert_eq!(BloomFilterPolicy::with_hashes(10, 3).num_hashes(), 3);
    }

    #[test]
    fn fractional_bits_per_key() {
        // A whole number is the same policy as `new`.
        assert_eq!(
            BloomFilterPolicy::with_bits_per_key(10.0),
            BloomFilterPolicy::new(10)
        );
        let p = BloomFilterPolicy::with_bits_per_key(9.5);
        assert_eq!(p.num_hashes(), 7); // round(9.5 · ln 2) = round(6.58)
        assert_eq!(p.fractional_bits_per_key(), 9.5);
        assert_eq!(p.bits_per_key(), 10);
        assert_eq!(BloomFilterPolicy::with_bits_per_key(9.4).bits_per_key(), 9);
        // m = ⌈9.5 · n⌉ rounded up to a byte.
        assert_eq!(p.bits_for(100), 952);
        assert_eq!(p.bits_for(1_000_000), 9_500_000);
        assert_eq!(p.bits_for(3), 64);
        // A thousandth of a bit is kept; NaN and negative mean 0 bits/key.
        // 4.1234 is kept as 4.123: 41,230 bits, rounded up to 41,232.
        assert_eq!(
            BloomFilterPolicy::with_bits_per_key(4.1234).bits_for(10_000),
            41_232
        );
        for bad in [f64::NAN, -3.0, 0.0] {
            let p = BloomFilterPolicy::with_bits_per_key(bad);
            assert_eq!((p.bits_for(1000), p.num_hashes()), (64, 1), "{bad}");
        }
        let huge = BloomFilterPolicy::with_bits_per_key(f64::INFINITY);
        // Sizes saturate instead of overflowing.
        assert_eq!(huge.bits_for(10_000), u64::MAX);
        assert_eq!(huge.bits_per_key(), u32::MAX);

        // The filter is read by the same name: m comes from the length.
        let keys = hashes(0..100_000, "present");
        let f = p.create_filter(&keys);
        assert_eq!(f.len(), 950_000 / 8 + 1);
        assert_eq!(p.name(), BLOOM_POLICY_NAME);
        let reader = BloomFilterPolicy::new(10);
        assert!(keys.iter().all(|h| reader.may_match(&f, *h)));
        let expected = theoretical_fpr(9.5, 7);
        assert!((expected - 0.010_46).abs() < 1e-4, "{expected}");
        let absent = hashes(0..200_000, "absent");
        let fp = absent.iter().filter(|h| reader.may_match(&f, **h)).count();
        let measured = fp as f64 / absent.len() as f64;
        assert!(
            (measured - expected).abs() / expected < 0.10,
            "fpr {measured} vs expected {expected}"
        );
        assert_eq!(p.shape(&f).bits_per_key, 10);
        assert_eq!(p.shape(&f).bits, 950_000);
    }

    #[test]
    fn bit_array_size() {
        let p = BloomFilterPolicy::new(10);
        assert_eq!(p.bits_for(0), 64);
        assert_eq!(p.bits_for(6), 64);
        assert_eq!(p.bits_for(7), 70u64.div_ceil(8) * 8);
        assert_eq!(p.bits_for(7), 72);
        assert_eq!(p.bits_for(100_000), 1_000_000);
        assert_eq!(p.create_filter(&[]).len(), 9);
        assert_eq!(p.create_filter(&hashes(0..7, "k")).len(), 10);
    }

    #[test]
    fn golden_bytes() {
        let p = BloomFilterPolicy::new(10);
        let f = p.create_filter(&[hash_key(b"a"), hash_key(b"b")]);
        assert_eq!(f, [0x40, 0x60, 0x20, 0x00, 0x19, 0x01, 0x88, 0x0b, 0x07]);
        let s = bloom_stats(&f).unwrap();
        assert_eq!(
            s,
            BloomStats {
                bits: 64,
                num_hashes: 7,
                bits_set: 13
            }
        );
        assert!(p.may_match(&f, hash_key(b"a")));
        assert!(p.may_match(&f, hash_key(b"b")));
        // An empty key set still yields a valid, all-zero filter.
        assert_eq!(p.create_filter(&[]), [0, 0, 0, 0, 0, 0, 0, 0, 7]);
        assert!(!p.may_match(&p.create_filter(&[]), hash_key(b"a")));
    }

    #[test]
    fn probe_positions_follow_the_documented_formula() {
        let h = KeyHash(0x0000_0000_0000_0002_8000_0000_0000_0000);
        // h1 = 2^63, h2 = 2 | 1 = 3, m = 64: g_i = 2^63 + 3i, index = g_i >> 58.
        let got: Vec<u64> = probes(h, 3, 64).collect();
        assert_eq!(got, [32, 32, 32]);
        let h = KeyHash(1u128 << 126);
        // h1 = 0, h2 = 2^62 | 1: g_1 = 2^62 + 1 -> 16, g_2 = 2^63 + 2 -> 32.
        let got: Vec<u64> = probes(h, 3, 64).collect();
        assert_eq!(got, [0, 16, 32]);
    }

    /// `may_match` tests its probes in groups; its answer must still be
    /// "every probe's bit is set", for every `k` (whole and partial last
    /// groups), on filters of every fill.
    #[test]
    fn may_match_is_true_exactly_when_every_probe_is_set() {
        let every_probe_set = |f: &[u8], h: KeyHash| {
            let (bits, k) = parse(f).unwrap();
            probes(h, k, bits.len() as u64 * 8).all(|b| bits[(b / 8) as usize] >> (b % 8) & 1 == 1)
        };
        let absent = hashes(0..20_000, "absent");
        // k = 1, 2, 3, 4, 5, 6, 7, 10: every remainder modulo the group.
        for bits_per_key in [1, 3, 4, 6, 7, 8, 10, 14] {
            let p = BloomFilterPolicy::new(bits_per_key);
            let f = p.create_filter(&hashes(0..2_000, "present"));
            let (mut yes, mut no) = (0, 0);
            for &h in &absent {
                let want = every_probe_set(&f, h);
                assert_eq!(p.may_match(&f, h), want, "k = {}", p.num_hashes);
                if want {
                    yes += 1;
                } else {
                    no += 1;
                }
            }
            assert!(
                yes > 0 && no > 0,
                "k = {}: {yes} passed, {no} failed",
                p.num_hashes
            );
        }
        // Only the last probe's bit clear: a group that stopped early, or a
        // partial last group skipped, would answer true.
        for k in 1..=10u32 {
            let h = hash_key(b"last probe");
            let m = 1024;
            let mut f = vec![0xffu8; (m / 8) as usize];
            f.push(k as u8);
            let last = probes(h, k, m).last().unwrap();
            if probes(h, k, m).filter(|&b| b == last).count() > 1 {
                continue; // an earlier probe hits the same bit
            }
            f[(last / 8) as usize] &= !(1 << (last % 8));
            assert!(!BloomFilterPolicy::new(10).may_match(&f, h), "k = {k}");
        }
    }

    #[test]
    fn no_false_negatives() {
        let p = BloomFilterPolicy::new(10);
        let keys = hashes(0..100_000, "present");
        let f = p.create_filter(&keys);
        for h in &keys {
            assert!(p.may_match(&f, *h));
        }
        // Low bits per key still never lose a key.
        let p = BloomFilterPolicy::new(1);
        let f = p.create_filter(&keys);
        assert!(keys.iter().all(|h| p.may_match(&f, *h)));
    }

    #[test]
    fn measured_fpr_and_fill_match_theory() {
        let p = BloomFilterPolicy::new(10);
        let n = 100_000u32;
        let f = p.create_filter(&hashes(0..n, "present"));
        let stats = bloom_stats(&f).unwrap();
        let (m, k, n) = (stats.bits as f64, f64::from(stats.num_hashes), f64::from(n));
        assert_eq!(stats.bits, 1_000_000);
        assert_eq!(stats.num_hashes, 7);

        let fill = 1.0 - (-k * n / m).exp();
        let measured_fill = stats.bits_set as f64 / m;
        assert!(
            (measured_fill - fill).abs() / fill < 0.01,
            "fill {measured_fill} vs expected {fill}"
        );

        let expected = fill.powf(k);
        let absent = hashes(0..100_000, "absent");
        let fp = absent.iter().filter(|h| p.may_match(&f, **h)).count();
        let measured = fp as f64 / absent.len() as f64;
        assert!(
            (measured - expected).abs() / expected < 0.15,
            "fpr {measured} vs expected {expected}"
        );
        // The bits-per-key form agrees with the actual-m form here.
        assert!((theoretical_fpr(10.0, 7) - expected).abs() < 1e-12);
    }

    #[test]
    fn theoretical_fpr_values() {
        // (1 - e^-0.7)^7
        assert!((theoretical_fpr(10.0, 7) - 0.008_193_5).abs() < 1e-6);
        // k = 1: 1 - e^-1/b
        assert!((theoretical_fpr(1.0, 1) - (1.0 - (-1.0f64).exp())).abs() < 1e-12);
        assert_eq!(theoretical_fpr(0.0, 7), 1.0);
        assert_eq!(theoretical_fpr(10.0, 0), 1.0);
        assert_eq!(theoretical_fpr(f64::NAN, 3), 1.0);
    }

    #[test]
    fn malformed_filters_answer_may_match() {
        let p = BloomFilterPolicy::new(10);
        let h = hash_key(b"x");
        // Empty, k only, k = 0, k > 30: never panic, always "maybe".
        for f in [&[][..], &[7], &[0, 0, 0, 0, 0], &[0, 0, 0, 31], &[0, 0xff]] {
            assert!(p.may_match(f, h), "{f:?}");
            assert!(bloom_stats(f).is_none());
        }
        // A single byte of bits is a valid (tiny) filter.
        assert!(!p.may_match(&[0, 1], h));
        assert_eq!(
            bloom_stats(&[0xff, 30]),
            Some(BloomStats {
                bits: 8,
                num_hashes: 30,
                bits_set: 8
            })
        );
        // Every 1-3 byte input is probed without panicking.
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                let _ = p.may_match(&[a, b], h);
                let _ = p.may_match(&[a, a, b], h);
            }
        }
    }

    #[test]
    fn shape_reports_parameters() {
        let p = BloomFilterPolicy::with_hashes(12, 5);
        let f = p.create_filter(&hashes(0..100, "s"));
        assert_eq!(
            p.shape(&f),
            FilterShape {
                bits_per_key: 12,
                num_hashes: 5,
                bits: 1200
            }
        );
        assert_eq!(p.name(), BLOOM_POLICY_NAME);
    }
}
