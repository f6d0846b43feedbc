//! A cache-local ("blocked") Bloom filter: every probe of a key falls inside
//! one 64-byte block, so a lookup touches one cache line however many bits
//! it tests (Putze, Sanders, Singler, "Cache-, Hash- and Space-Efficient
//! Bloom Filters", WEA 2007, section "Blocked Bloom Filters").
//!
//! # Parameters
//!
//! For `n` keys at `bits_per_key` bits each (fractional, kept to a
//! thousandth of a bit) the filter has `B = max(1, ⌈bits_per_key · n /
//! 512⌉)` blocks of 512 bits. Each key sets `k` bits of one block.
//! [`BlockedBloomPolicy::new`] picks the `k` that minimises
//! [`theoretical_fpr`] at the configured bits per key; that is not
//! `round(bits_per_key · ln 2)`: keys spread unevenly over blocks, and an
//! overfull block punishes a large `k` more than a classic Bloom filter
//! does, so the best `k` is about one lower (4 at 6 bits/key, 6 at 10, 9
//! at 16; [`best_hashes`]).
//!
//! # Probe positions
//!
//! From the key's 128-bit [`KeyHash`]: the block is `(low · B) >> 64`
//! (Lemire's range reduction of the low 64 bits, computed in 128 bits). Let
//! `u` be the high 64 bits. Probe `i` (for `i` in `0..k`) tests bit
//! `(u · C^i mod 2^64) >> 55` of the block, the top 9 bits of `u` times the
//! `i`-th power of the odd constant `C = 0x9e37_79b9_7f4a_7c15`
//! (multiplicative hashing, Knuth TAOCP vol. 3, 6.4). The `k` products are
//! independent of one another, so they run in parallel, and each is
//! uniform over the 512 bits because `u` is. Bit `b` of a block is bit
//! `b % 8` (least significant first) of byte `b / 8` of the block, so a
//! block read as eight little-endian `u64` words holds bit `b` in word
//! `b / 64`, bit `b % 64`.
//!
//! The probe reads the block once and ANDs the `k` tested bits without a
//! branch, so its only memory access is the one cache line (when the block
//! sits on a cache-line boundary; see *Alignment*).
//!
//! # False-positive rate
//!
//! A key not in the set lands in a block that holds `J` keys, `J ~
//! Pois(λ)` with `λ = 512 / bits_per_key` the mean keys per block (the
//! exact law is binomial, `n` keys into `B` blocks). Inside the block it is
//! a classic Bloom filter of 512 bits into which `k·J` probes fell.
//! Putze et al. (2007, section "Blocked Bloom Filters") write the blocked
//! rate as the Poisson-weighted average of those classic rates,
//!
//! ```text
//! Σ_{j ≥ 0} Pois(j; λ) · (1 − (1 − 1/512)^(k·j))^k
//! ```
//!
//! which takes the block's expected fill to the `k`-th power. In a block
//! as small as 512 bits the fill varies from block to block, and
//! `E[fill^k]` exceeds `E[fill]^k` by 0.2% at 4 bits/key, 0.9% at 10 and
//! 2.2% at 16, enough to move the best `k`. [`theoretical_fpr`] therefore
//! computes `E[fill^k]` exactly for this module's probe model (probes
//! uniform and independent, so a key's `k` probes may repeat a bit): if
//! they hit `D = d` distinct bits, all `d` are set with probability
//! `Σ_{i=0..d} (−1)^i · C(d, i) · (1 − i/512)^(k·J)` (inclusion–exclusion
//! over the bits left clear), and averaging over `J ~ Pois(λ)` turns each
//! power into `exp(−λ · (1 − (1 − i/512)^k))`. With `P(D = d)` from the
//! occupancy of `k` probes in 512 bits,
//!
//! ```text
//! fpr(bits_per_key, k) = Σ_{d=1..k} P(D = d) · Σ_{i=0..d} (−1)^i · C(d, i) · exp(−λ · (1 − (1 − i/512)^k))
//! ```
//!
//! At 10 bits/key and `k = 6` this is 0.966% (classic Bloom: 0.819% at
//! `k = 7`); the gap to the classic filter grows with bits per key (0.084%
//! against 0.046% at 16).
//!
//! [`blocked_bloom_stats`] gives the rate a built filter implies from the
//! fill of its own blocks, `(1/B) · Σ_b (bits_set_b / 512)^k`: a random
//! absent key picks block `b` with probability `1/B` and then passes all `k`
//! independent probes with probability `(bits_set_b / 512)^k`.
//!
//! # Encoding (`siftdb.blocked_bloom.xxh3.v1`)
//!
//! ```text
//! +--------------+--------+--------------+----------------+--------------------------+
//! | blocks: u32  | k: u8  | log2 bits    | reserved: u16  | B blocks of 64 bytes     |
//! | little-end.  | 1..=30 | per block: 9 | = 0            | block i at 8 + 64·i      |
//! +--------------+--------+--------------+----------------+--------------------------+
//! 0              4        5              6                8
//! ```
//!
//! A reader needs only the bytes. A filter is well formed when it is at
//! least 8 bytes long, `blocks ≥ 1`, `1 ≤ k ≤ 30`, byte 5 is 9, bytes 6..8
//! are zero, and its length is exactly `8 + 64 · blocks`. Anything else
//! (in particular every truncation of a well-formed filter, since the
//! header then promises more bytes than remain) answers "may match".
//!
//! # Alignment
//!
//! The one-cache-line property holds when each block starts on a 64-byte
//! boundary in memory, that is when the filter's first byte sits at an
//! address that is 56 modulo 64 (the header is 8 bytes). A reader that
//! wants it copies the filter to such an address; otherwise a probe may
//! touch two adjacent lines (the answers are the same either way).
//!
//! # Worked example
//!
//! Keys `"a"` and `"b"` at 10 bits/key: 20 bits, so one block, and `k = 6`.
//! The filter is 72 bytes (pinned by the `golden_bytes` test):
//!
//! ```text
//! header   01 00 00 00  06  09  00 00      blocks = 1, k = 6
//! block 0  00 00 00 00 01 00 00 00  00 00 00 00 00 00 00 00
//!          00 00 40 00 00 00 00 00  00 00 00 00 00 00 00 00
//!          80 00 00 10 00 00 00 00  00 00 04 40 10 00 00 00
//!          02 00 00 90 02 00 00 00  00 00 04 00 00 00 00 00
//! ```
//!
//! Both keys share the only block; their twelve probes set twelve
//! distinct bits (byte `0x90` at offset 8 + 51 holds two of them).

use super::{FilterPolicy, FilterShape, KeyHash};

/// The name under which [`BlockedBloomPolicy`] filters are stored. Change it
/// whenever the encoding or the probe sequence changes.
pub const BLOCKED_BLOOM_POLICY_NAME: &str = "siftdb.blocked_bloom.xxh3.v1";

/// Bytes before the first block.
pub const HEADER_LEN: usize = 8;

/// Bytes per block: one cache line.
pub const BLOCK_BYTES: usize = 64;

/// Bits per block.
const BLOCK_BITS: u32 = 512;

/// `log2(BLOCK_BITS)`, stored in byte 5 of the header.
const LOG2_BLOCK_BITS: u8 = 9;

/// Largest `k` written or accepted.
pub const MAX_HASHES: u32 = 30;

/// The odd multiplier whose powers spread the probes over a block: 2^64
/// divided by the golden ratio, rounded to odd.
const PROBE_MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// `PROBE_MULTIPLIER^i mod 2^64` for `i` in `0..MAX_HASHES`.
const MULTIPLIERS: [u64; MAX_HASHES as usize] = {
    let mut m = [1u64; MAX_HASHES as usize];
    let mut i = 1;
    while i < m.len() {
        m[i] = m[i - 1].wrapping_mul(PROBE_MULTIPLIER);
        i += 1;
    }
    m
};

/// Builds and probes blocked Bloom filters over user-key hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockedBloomPolicy {
    /// Bits per key in thousandths of a bit.
    millibits_per_key: u64,
    num_hashes: u32,
}

impl BlockedBloomPolicy {
    /// A policy with `bits_per_key` bits per distinct key (fractional, kept
    /// to a thousandth of a bit; NaN or negative counts as 0) and the `k`
    /// that minimises [`theoretical_fpr`] there ([`best_hashes`]). At 10
    /// bits/key, `k = 6` and the false-positive rate is about 0.97%.
    pub fn new(bits_per_key: f64) -> Self {
        let millibits = super::millibits(bits_per_key);
        Self::from_millibits(millibits, best_hashes(millibits as f64 / 1000.0))
    }

    /// A policy with an explicit number of probes `k` (clamped to `1..=30`).
    pub fn with_hashes(bits_per_key: f64, num_hashes: u32) -> Self {
        Self::from_millibits(super::millibits(bits_per_key), num_hashes)
    }

    fn from_millibits(millibits_per_key: u64, num_hashes: u32) -> Self {
        BlockedBloomPolicy {
            millibits_per_key,
            num_hashes: num_hashes.clamp(1, MAX_HASHES),
        }
    }

    /// Bits allotted per distinct key, to a thousandth of a bit.
    pub fn bits_per_key(&self) -> f64 {
        self.millibits_per_key as f64 / 1000.0
    }

    /// Probes per key, `k`.
    pub fn num_hashes(&self) -> u32 {
        self.num_hashes
    }

    /// Blocks built for `n` keys: `max(1, ⌈bits_per_key · n / 512⌉)`,
    /// saturating at `u32::MAX`.
    pub fn blocks_for(&self, n: usize) -> u32 {
        let bits = (u128::from(self.millibits_per_key) * n as u128).div_ceil(1000);
        let blocks = bits.div_ceil(u128::from(BLOCK_BITS)).max(1);
        u32::try_from(blocks).unwrap_or(u32::MAX)
    }
}

/// The `k` in `1..=30` with the lowest [`theoretical_fpr`] at
/// `bits_per_key` (the smaller on a tie; 1 when no `k` filters anything).
pub fn best_hashes(bits_per_key: f64) -> u32 {
    let mut best = (1, theoretical_fpr(bits_per_key, 1));
    for k in 2..=MAX_HASHES {
        let fpr = theoretical_fpr(bits_per_key, k);
        if fpr < best.1 {
            best = (k, fpr);
        }
    }
    best.0
}

/// The block of `hash` among `blocks`.
fn block_index(hash: KeyHash, blocks: u32) -> usize {
    ((u128::from(hash.low()) * u128::from(blocks)) >> 64) as usize
}

/// The bit positions (in `0..512`) that `hash` probes inside its block.
fn probe_bits(hash: KeyHash, k: u32) -> impl Iterator<Item = u32> {
    let u = hash.high();
    MULTIPLIERS[..k as usize]
        .iter()
        .map(move |&m| (u.wrapping_mul(m) >> 55) as u32)
}

/// A well-formed filter: its `k` and its blocks (`blocks · 64` bytes).
struct Parsed<'a> {
    num_hashes: u32,
    num_blocks: u32,
    blocks: &'a [u8],
}

/// Splits a filter into its header fields and blocks, or `None` if it is
/// not a well-formed `siftdb.blocked_bloom.xxh3.v1` filter.
fn parse(filter: &[u8]) -> Option<Parsed<'_>> {
    let (header, blocks) = filter.split_first_chunk::<HEADER_LEN>()?;
    let [b0, b1, b2, b3, k, log2, r0, r1] = *header;
    let num_blocks = u32::from_le_bytes([b0, b1, b2, b3]);
    let num_hashes = u32::from(k);
    let well_formed = num_blocks >= 1
        && (1..=MAX_HASHES).contains(&num_hashes)
        && log2 == LOG2_BLOCK_BITS
        && [r0, r1] == [0, 0]
        && blocks.len() as u64 == u64::from(num_blocks) * BLOCK_BYTES as u64;
    well_formed.then_some(Parsed {
        num_hashes,
        num_blocks,
        blocks,
    })
}

/// Word `w` (in `0..8`) of a block, little-endian.
fn word(block: &[u8; BLOCK_BYTES], w: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&block[w * 8..w * 8 + 8]);
    u64::from_le_bytes(bytes)
}

impl FilterPolicy for BlockedBloomPolicy {
    fn name(&self) -> &'static str {
        BLOCKED_BLOOM_POLICY_NAME
    }

    fn create_filter(&self, hashes: &[KeyHash]) -> Vec<u8> {
        let num_blocks = self.blocks_for(hashes.len());
        let len = usize::try_from(u64::from(num_blocks) * BLOCK_BYTES as u64)
            .ok()
            .and_then(|n| n.checked_add(HEADER_LEN))
            .expect("filter size exceeds the address space");
        let mut out = vec![0u8; len];
        out[..4].copy_from_slice(&num_blocks.to_le_bytes());
        out[4] = self.num_hashes as u8;
        out[5] = LOG2_BLOCK_BITS;
        for &h in hashes {
            let base = HEADER_LEN + block_index(h, num_blocks) * BLOCK_BYTES;
            for bit in probe_bits(h, self.num_hashes) {
                // block_index < num_blocks and bit < 512, so the byte is
                // inside the block.
                out[base + (bit / 8) as usize] |= 1 << (bit % 8);
            }
        }
        out
    }

    fn may_match(&self, filter: &[u8], hash: KeyHash) -> bool {
        let Some(f) = parse(filter) else {
            return true;
        };
        let at = block_index(hash, f.num_blocks) * BLOCK_BYTES;
        let Some(block) = f
            .blocks
            .get(at..at + BLOCK_BYTES)
            .and_then(|b| <&[u8; BLOCK_BYTES]>::try_from(b).ok())
        else {
            return true;
        };
        // No early exit: the k tests are independent and branch-free.
        let mut all = 1u64;
        for bit in probe_bits(hash, f.num_hashes) {
            all &= word(block, (bit / 64) as usize) >> (bit % 64);
        }
        all & 1 == 1
    }

    /// The blocks after the 8-byte header start on a cache line (offset
    /// 56 modulo 64), so that every probe reads one line: placed 32 bytes
    /// off, an uncached probe cost 18–20% more (docs/filters-measurements.md).
    fn placement(&self) -> Option<(u64, u64)> {
        Some((BLOCK_BYTES as u64, (BLOCK_BYTES - HEADER_LEN) as u64))
    }

    fn shape(&self, filter: &[u8]) -> FilterShape {
        let parsed = parse(filter);
        FilterShape {
            bits_per_key: super::whole_bits(self.millibits_per_key),
            num_hashes: parsed.as_ref().map_or(0, |f| f.num_hashes),
            bits: parsed.map_or(0, |f| u64::from(f.num_blocks) * u64::from(BLOCK_BITS)),
        }
    }
}

/// What a blocked Bloom filter's bytes say about it, for tools such as
/// `kvctl`: its size, `k`, fill and the false-positive rate its fill
/// implies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockedBloomStats {
    /// Number of 512-bit blocks, `B`.
    pub blocks: u32,
    /// Probes per key, `k`.
    pub num_hashes: u32,
    /// Bits set to 1, over all blocks.
    pub bits_set: u64,
    /// The fullest block's bits set (out of 512): a block near 512 rejects
    /// almost nothing.
    pub max_block_bits_set: u32,
    /// The rate the filter's own fill implies for a key it was not built
    /// from: `(1/B) · Σ_b (bits_set_b / 512)^k`.
    pub implied_fpr: f64,
}

/// Decodes the statistics of a `siftdb.blocked_bloom.xxh3.v1` filter, or
/// `None` if the bytes are not one.
pub fn blocked_bloom_stats(filter: &[u8]) -> Option<BlockedBloomStats> {
    let f = parse(filter)?;
    let k = f.num_hashes as i32;
    let (mut bits_set, mut max_block, mut sum) = (0u64, 0u32, 0.0f64);
    for block in f.blocks.chunks_exact(BLOCK_BYTES) {
        let set: u32 = block.iter().map(|b| b.count_ones()).sum();
        bits_set += u64::from(set);
        max_block = max_block.max(set);
        sum += (f64::from(set) / f64::from(BLOCK_BITS)).powi(k);
    }
    Some(BlockedBloomStats {
        blocks: f.num_blocks,
        num_hashes: f.num_hashes,
        bits_set,
        max_block_bits_set: max_block,
        implied_fpr: sum / f64::from(f.num_blocks),
    })
}

/// The expected false-positive rate of a blocked Bloom filter with
/// `bits_per_key` bits per key and `k` probes per key, for the
/// probe model of this module (uniform probes with repetition, Poisson
/// block loads; derivation in the module doc):
///
/// ```text
/// Σ_{d=1..k} P(D = d) · Σ_{i=0..d} (−1)^i · C(d, i) · exp(−λ · (1 − (1 − i/512)^k)),  λ = 512 / bits_per_key
/// ```
///
/// where `D` is the number of distinct bits among a key's `k` probes.
/// Returns 1.0 when `bits_per_key <= 0` (or NaN) or `k == 0`, and 0.0 for
/// infinitely many bits.
pub fn theoretical_fpr(bits_per_key: f64, k: u32) -> f64 {
    if bits_per_key.is_nan() || bits_per_key <= 0.0 || k == 0 {
        return 1.0;
    }
    let m = f64::from(BLOCK_BITS);
    let lambda = m / bits_per_key;
    let k = k.min(MAX_HASHES) as usize;
    // distinct[d] = P(D = d) after the probes placed so far.
    let mut distinct = vec![0.0f64; k + 1];
    distinct[0] = 1.0;
    for _ in 0..k {
        for d in (0..=k).rev() {
            let stay = distinct[d] * d as f64 / m;
            let grow = if d == 0 {
                0.0
            } else {
                distinct[d - 1] * (m - (d - 1) as f64) / m
            };
            distinct[d] = stay + grow;
        }
    }
    // covered[i] = E[(1 − i/512)^(k·J)] for J ~ Pois(λ): the chance that
    // none of the block's k·J bits lands on i given positions.
    let covered: Vec<f64> = (0..=k)
        .map(|i| (-lambda * (1.0 - (1.0 - i as f64 / m).powi(k as i32))).exp())
        .collect();
    let mut total = 0.0;
    let mut binom = vec![0.0f64; k + 1]; // row d of Pascal's triangle
    binom[0] = 1.0;
    for (d, p_d) in distinct.iter().enumerate().skip(1) {
        for i in (1..=d).rev() {
            binom[i] += binom[i - 1];
        }
        // P(d given bits all set) by inclusion–exclusion.
        let all_set: f64 = (0..=d)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 } * binom[i] * covered[i])
            .sum();
        total += p_d * all_set;
    }
    total.clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::hash_key;
    use crate::filter::testutil::{hashes, measured_fpr};
    use proptest::prelude::*;

    #[test]
    fn multipliers_are_powers_of_the_odd_constant() {
        assert_eq!(MULTIPLIERS[0], 1);
        assert_eq!(MULTIPLIERS[1], PROBE_MULTIPLIER);
        assert_eq!(
            MULTIPLIERS[2],
            PROBE_MULTIPLIER.wrapping_mul(PROBE_MULTIPLIER)
        );
        assert!(MULTIPLIERS.iter().all(|m| m % 2 == 1));
    }

    #[test]
    fn probe_positions_follow_the_documented_formula() {
        // low = 2^63 picks the middle block of 4; high = 2^55 · 3 gives bit
        // 3 for i = 0, then the top 9 bits of 3·2^55·C^i.
        let h = KeyHash((3u128 << (64 + 55)) | (1u128 << 63));
        assert_eq!(block_index(h, 4), 2);
        let got: Vec<u32> = probe_bits(h, 3).collect();
        let u = 3u64 << 55;
        let want: Vec<u32> = (0..3)
            .map(|i| (u.wrapping_mul(MULTIPLIERS[i]) >> 55) as u32)
            .collect();
        assert_eq!(got[0], 3);
        assert_eq!(got, want);
        assert!(probe_bits(hash_key(b"x"), 30).all(|b| b < 512));
    }

    #[test]
    fn best_k_by_the_blocked_formula() {
        // One lower than round(bits_per_key · ln 2) from about 6 bits/key up.
        let got: Vec<u32> = [2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0]
            .iter()
            .map(|&b| best_hashes(b))
            .collect();
        assert_eq!(got, [1, 3, 4, 5, 6, 8, 9, 11]);
        assert_eq!(BlockedBloomPolicy::new(10.0).num_hashes(), 6);
        assert_eq!(BlockedBloomPolicy::new(9.5).num_hashes(), best_hashes(9.5));
        assert_eq!(BlockedBloomPolicy::new(0.0).num_hashes(), 1);
        assert_eq!(BlockedBloomPolicy::new(f64::NAN).num_hashes(), 1);
        assert_eq!(BlockedBloomPolicy::with_hashes(10.0, 0).num_hashes(), 1);
        assert_eq!(BlockedBloomPolicy::with_hashes(10.0, 99).num_hashes(), 30);
    }

    #[test]
    fn theoretical_fpr_values() {
        // k = 1 has the closed form 1 − exp(−λ/512) = 1 − e^(−1/bits_per_key).
        for b in [1.0f64, 2.0, 5.0] {
            let want = 1.0 - (-1.0 / b).exp();
            assert!((theoretical_fpr(b, 1) - want).abs() < 1e-12, "{b}");
        }
        // Above the classic rate at equal k and bits, and close to it for a
        // small k, where the uneven block loads matter least.
        for (b, k) in [(4.0, 3), (10.0, 6), (10.0, 7), (16.0, 9)] {
            let classic = crate::filter::theoretical_fpr(b, k);
            let blocked = theoretical_fpr(b, k);
            assert!(blocked > classic && blocked < 1.7 * classic, "{b} {k}");
        }
        assert!((theoretical_fpr(10.0, 6) - 0.009_66).abs() < 0.000_01);
        assert!((theoretical_fpr(16.0, 9) - 0.000_84).abs() < 0.000_01);
        assert_eq!(theoretical_fpr(0.0, 6), 1.0);
        assert_eq!(theoretical_fpr(-1.0, 6), 1.0);
        assert_eq!(theoretical_fpr(f64::NAN, 6), 1.0);
        assert_eq!(theoretical_fpr(10.0, 0), 1.0);
        assert_eq!(theoretical_fpr(f64::INFINITY, 6), 0.0);
        // Tiny settings stay finite and at most 1.
        let tiny = theoretical_fpr(0.001, 2);
        assert!(tiny > 0.99 && tiny <= 1.0, "{tiny}");
        // The exact E[fill^k] is a little above the brief form
        // Σ Pois(j; λ) (1 − (1 − 1/512)^(k·j))^k, by 0.9% at 10 bits/key.
        let brief = |b: f64, k: u32| {
            let (lambda, k) = (512.0 / b, f64::from(k));
            let mut pois = (-lambda).exp();
            let mut sum = 0.0;
            for j in 0..2000 {
                if j > 0 {
                    pois *= lambda / f64::from(j);
                }
                sum += pois * (1.0 - (1.0 - 1.0f64 / 512.0).powf(k * f64::from(j))).powf(k);
            }
            sum
        };
        let ratio = theoretical_fpr(10.0, 6) / brief(10.0, 6);
        assert!((ratio - 1.0093).abs() < 0.0005, "{ratio}");
        let ratio = theoretical_fpr(4.0, 3) / brief(4.0, 3);
        assert!((ratio - 1.0017).abs() < 0.0005, "{ratio}");
    }

    #[test]
    fn block_count() {
        let p = BlockedBloomPolicy::new(10.0);
        assert_eq!(p.blocks_for(0), 1);
        assert_eq!(p.blocks_for(51), 1);
        assert_eq!(p.blocks_for(52), 2);
        assert_eq!(p.blocks_for(100_000), 1954);
        // Fractional: 9.5 · 100,000 = 950,000 bits = 1855.5 blocks, up to 1856.
        assert_eq!(BlockedBloomPolicy::new(9.5).blocks_for(100_000), 1856);
        assert_eq!(
            BlockedBloomPolicy::new(f64::INFINITY).blocks_for(10),
            u32::MAX
        );
        assert_eq!(p.create_filter(&[]).len(), HEADER_LEN + BLOCK_BYTES);
        assert_eq!(p.create_filter(&hashes(0..52, "k")).len(), HEADER_LEN + 128);
    }

    #[test]
    fn golden_bytes() {
        let p = BlockedBloomPolicy::new(10.0);
        let f = p.create_filter(&[hash_key(b"a"), hash_key(b"b")]);
        let mut want = vec![0x01, 0x00, 0x00, 0x00, 0x06, 0x09, 0x00, 0x00];
        want.extend_from_slice(&[
            0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x04, 0x40, 0x10, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x90, 0x02, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00,
        ]);
        assert_eq!(f, want, "{f:02x?}");
        let s = blocked_bloom_stats(&f).unwrap();
        assert_eq!((s.blocks, s.num_hashes, s.bits_set), (1, 6, 12));
        assert_eq!(s.max_block_bits_set, 12);
        assert!((s.implied_fpr - (12.0f64 / 512.0).powi(6)).abs() < 1e-18);
        assert!(p.may_match(&f, hash_key(b"a")));
        assert!(p.may_match(&f, hash_key(b"b")));
        // An empty key set yields one all-zero block, which rejects all.
        let empty = p.create_filter(&[]);
        assert_eq!(&empty[..HEADER_LEN], [1, 0, 0, 0, 6, 9, 0, 0]);
        assert!(empty[HEADER_LEN..].iter().all(|&b| b == 0));
        assert!(!p.may_match(&empty, hash_key(b"a")));
        assert_eq!(blocked_bloom_stats(&empty).unwrap().implied_fpr, 0.0);
    }

    #[test]
    fn no_false_negatives_at_many_settings() {
        let keys = hashes(0..20_000, "present");
        for bits in [0.5, 1.0, 4.0, 9.5, 10.0, 16.0, 24.0] {
            let p = BlockedBloomPolicy::new(bits);
            let f = p.create_filter(&keys);
            assert!(keys.iter().all(|h| p.may_match(&f, *h)), "{bits}");
        }
        let p = BlockedBloomPolicy::with_hashes(10.0, 30);
        let f = p.create_filter(&keys);
        assert!(keys.iter().all(|h| p.may_match(&f, *h)));
    }

    #[test]
    fn duplicates_are_tolerated() {
        let p = BlockedBloomPolicy::new(10.0);
        let mut keys = hashes(0..1000, "dup");
        // The blocks follow the length given, duplicates included: 2,000
        // hashes at 10 bits/key get the 40 blocks of 1,000 at 20.
        let once = BlockedBloomPolicy::with_hashes(20.0, 6).create_filter(&keys);
        keys.extend_from_within(..);
        let twice = p.create_filter(&keys);
        assert!(keys.iter().all(|h| p.may_match(&twice, *h)));
        assert_eq!(blocked_bloom_stats(&twice).unwrap().blocks, 40);
        assert_eq!(once, twice);
    }

    #[test]
    fn measured_fpr_matches_theory() {
        // bits/key, k: the chosen k and one off it either way at 10.
        let n = 1u32 << 17;
        let keys = hashes(0..n, "present");
        for (bits, k) in [
            (4.0, 3),
            (8.0, 5),
            (10.0, 5),
            (10.0, 6),
            (10.0, 7),
            (16.0, 9),
        ] {
            let p = BlockedBloomPolicy::with_hashes(bits, k);
            let f = p.create_filter(&keys);
            let stats = blocked_bloom_stats(&f).unwrap();
            // With these n the block count is exact: m/n = bits.
            assert_eq!(f64::from(stats.blocks) * 512.0, bits * f64::from(n));
            let theory = theoretical_fpr(bits, k);
            let measured = measured_fpr(&p, &f, 400_000);
            let tolerance = if theory < 0.02 { 0.002 } else { 0.1 * theory };
            assert!(
                (measured - theory).abs() < tolerance,
                "{bits} bits/key, k {k}: fpr {measured} vs theory {theory}"
            );
            // The rate implied by the fill tracks both (tighter than 10%).
            assert!(
                (stats.implied_fpr - theory).abs() / theory < 0.05,
                "{bits} bits/key, k {k}: implied {} vs theory {theory}",
                stats.implied_fpr
            );
            if theory >= 0.004 {
                assert!(
                    (measured - theory).abs() / theory < 0.10,
                    "{bits} bits/key, k {k}: fpr {measured} vs theory {theory}"
                );
            }
        }
    }

    /// The measured rate around the chosen k at each setting (2^17 keys,
    /// 10^6 absent probes), printed for docs/filters-measurements.md.
    #[test]
    #[ignore]
    fn k_sweep() {
        let n = 1u32 << 17;
        let keys = hashes(0..n, "present");
        for bits in [4.0, 6.0, 8.0, 10.0, 12.0, 16.0] {
            let best = best_hashes(bits);
            let mut line = format!("{bits} bits/key, best k {best}:");
            for k in best.saturating_sub(2).max(1)..=best + 2 {
                let p = BlockedBloomPolicy::with_hashes(bits, k);
                let f = p.create_filter(&keys);
                let measured = measured_fpr(&p, &f, 1_000_000);
                line += &format!(
                    " k={k} {:.4}% (theory {:.4}%)",
                    100.0 * measured,
                    100.0 * theoretical_fpr(bits, k)
                );
            }
            eprintln!("{line}");
        }
    }

    #[test]
    fn fractional_bits_per_key() {
        let n = 100_000u32;
        let keys = hashes(0..n, "present");
        let p = BlockedBloomPolicy::new(9.5);
        let f = p.create_filter(&keys);
        assert_eq!(f.len(), HEADER_LEN + 1856 * BLOCK_BYTES);
        let actual_bits = 1856.0 * 512.0 / f64::from(n);
        let theory = theoretical_fpr(actual_bits, p.num_hashes());
        let measured = measured_fpr(&p, &f, 400_000);
        assert!(
            (measured - theory).abs() / theory < 0.10,
            "fpr {measured} vs theory {theory}"
        );
        // Between the 9- and 10-bit rates.
        assert!(theory < theoretical_fpr(9.0, 6) && theory > theoretical_fpr(10.0, 6));
        assert_eq!(p.shape(&f).bits_per_key, 10);
        assert_eq!(p.shape(&f).bits, 1856 * 512);
        assert_eq!(p.shape(&f).num_hashes, p.num_hashes());
    }

    #[test]
    fn malformed_and_truncated_filters_answer_may_match() {
        let p = BlockedBloomPolicy::new(10.0);
        let probes = hashes(0..64, "probe");
        let f = p.create_filter(&hashes(0..200, "k"));
        assert_eq!(f.len(), HEADER_LEN + 4 * BLOCK_BYTES);
        // Every truncation, including the empty filter, is not well formed.
        for len in 0..f.len() {
            let t = &f[..len];
            assert!(blocked_bloom_stats(t).is_none(), "len {len}");
            assert!(probes.iter().all(|h| p.may_match(t, *h)), "len {len}");
        }
        // So is one byte too many.
        let mut longer = f.clone();
        longer.push(0);
        assert!(probes.iter().all(|h| p.may_match(&longer, *h)));
        // Header fields out of range.
        for (at, value) in [
            (0, 0u8),
            (0, 5),
            (3, 1),
            (4, 0),
            (4, 31),
            (5, 8),
            (6, 1),
            (7, 1),
        ] {
            let mut bad = f.clone();
            bad[at] = value;
            assert!(blocked_bloom_stats(&bad).is_none(), "byte {at} = {value}");
            assert!(probes.iter().all(|h| p.may_match(&bad, *h)));
        }
        // Every single-bit flip is probed without panicking; a flip in the
        // blocks or in k leaves a well-formed filter.
        for bit in 0..f.len() * 8 {
            let mut flipped = f.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            for h in &probes {
                let _ = p.may_match(&flipped, *h);
            }
            let _ = blocked_bloom_stats(&flipped);
            let _ = p.shape(&flipped);
        }
    }

    proptest! {
        #[test]
        fn never_a_false_negative(
            keys in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..24), 0..600),
            bits in 1.0f64..20.0,
        ) {
            let p = BlockedBloomPolicy::new(bits);
            let hashes: Vec<KeyHash> = keys.iter().map(|k| hash_key(k)).collect();
            let f = p.create_filter(&hashes);
            prop_assert_eq!(f.len(), HEADER_LEN + p.blocks_for(hashes.len()) as usize * BLOCK_BYTES);
            for h in &hashes {
                prop_assert!(p.may_match(&f, *h));
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(
            bytes in prop::collection::vec(any::<u8>(), 0..300),
            key in prop::collection::vec(any::<u8>(), 0..8),
        ) {
            let p = BlockedBloomPolicy::new(10.0);
            let _ = p.may_match(&bytes, hash_key(&key));
            let _ = blocked_bloom_stats(&bytes);
            let _ = p.shape(&bytes);
        }
    }

    #[test]
    fn empty_and_single_key_sets() {
        let p = BlockedBloomPolicy::new(10.0);
        let one = hash_key(b"only");
        let f = p.create_filter(&[one]);
        assert!(p.may_match(&f, one));
        assert_eq!(blocked_bloom_stats(&f).unwrap().bits_set, 6);
        let absent = hashes(0..1000, "absent");
        assert!(absent
            .iter()
            .all(|h| !p.may_match(&p.create_filter(&[]), *h)));
    }

    #[test]
    fn shape_and_name() {
        let p = BlockedBloomPolicy::new(12.0);
        let f = p.create_filter(&hashes(0..1000, "s"));
        assert_eq!(
            p.shape(&f),
            FilterShape {
                bits_per_key: 12,
                num_hashes: 8,
                bits: 24 * 512
            }
        );
        assert_eq!(p.shape(&[]).bits, 0);
        assert_eq!(p.name(), "siftdb.blocked_bloom.xxh3.v1");
    }
}
