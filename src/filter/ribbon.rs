//! A standard Ribbon filter with 128-bit coefficient rows: a static filter
//! within a few percent of the information bound, for any false-positive
//! rate `2^−r` with `r` from 1 to 32 (Dillinger and Walzer, "Ribbon filter:
//! practically smaller than Bloom and Xor", 2021, arXiv:2103.02515; the
//! "standard Ribbon" of that paper, without its homogeneous, bumped or
//! smash variants).
//!
//! # The idea
//!
//! Each key gets a row: a start slot `s`, a 128-bit coefficient `c` (bit 0
//! set) and an `r`-bit fingerprint `f`. The filter stores an `r`-bit value
//! `S[i]` for each of its `m` slots, chosen so that for every key in the set
//!
//! ```text
//! XOR over t in 0..128 with bit t of c set of S[s + t]  ==  f
//! ```
//!
//! A probe recomputes the row of its key and checks the equation: keys in
//! the set always pass (no false negatives); a key not in the set passes
//! with probability exactly `2^−r`, since its fingerprint is independent of
//! `S` and of its own `s` and `c`: given `c` and `S` the left side is fixed,
//! and `f` equals it with probability `2^−r` (the rate of the paper's
//! standard Ribbon filter). The space
//! is `m · r` bits for `n` keys, `m = (1 + ε) · n`, so `(1 + ε) · log2(1/p)`
//! bits per key against the bound of `log2(1/p)`; with 128-bit rows `ε` is
//! 2 to 7% for 10^3 to 10^7 keys ([`slot_factor`]), where a classic Bloom
//! filter needs 44% more than the bound.
//!
//! # Construction
//!
//! The rows form a band matrix over GF(2), solved by on-the-fly Gaussian
//! elimination (the paper's "Rapid Incremental Boolean Banding ON the
//! fly", which names the filter). Rows are first ordered by the block of
//! their start slot (a counting sort), so the elimination walks the slots
//! nearly in order. Then they are added one at a time: a row whose leading
//! slot is taken is XORed with the row stored there (coefficients and
//! fingerprints), shifted to its new leading 1, and tried again. A row that
//! cancels to zero with a zero fingerprint is redundant (a duplicate key);
//! with a nonzero fingerprint the system has no solution under this seed.
//! Back-substitution from the last slot to the first then fixes `S`, with
//! free slots set to 0.
//!
//! A failed seed is retried with the next seed (stored in the header, so a
//! reader recomputes the same rows): [`MAX_ATTEMPTS`] attempts, growing the
//! slot count by 1/64 of the first size after every [`SEEDS_PER_SIZE`]
//! failures. The first size succeeds with probability above 95% at every
//! `n` measured, so a second attempt is rare and the loop always ends. If
//! all attempts fail (never seen), the filter is the "matches every key"
//! encoding below: a lookup then reads the table, which is always correct.
//!
//! # Row of a key
//!
//! From the key's [`KeyHash`] and the seed `σ` (all arithmetic wrapping on
//! `u64`, `fmix64` being MurmurHash3's 64-bit finalizer):
//!
//! ```text
//! t  = σ · 0x9e37_79b9_7f4a_7c15
//! a  = fmix64(low ^ t)
//! b  = fmix64(high ^ rotate_left(t, 32))
//! s  = (a · (m − 127)) >> 64            (Lemire's range reduction, in 128 bits)
//! c  = (fmix64(b) << 64) | b | 1        (a u128; bit 0 is slot s)
//! f  = a mod 2^r                        (the low r bits)
//! ```
//!
//! # Encoding (`siftdb.ribbon.xxh3.v1`)
//!
//! ```text
//! +-------------+-------------+--------+----------------+------------------------------+
//! | blocks: u32 | seed: u32   | r: u8  | log2 width: u8 | blocks · r column words      |
//! | little-end. | little-end. | 0..=32 | = 7            | of 16 bytes, little-endian   |
//! +-------------+-------------+--------+----------------+------------------------------+
//! 0             4             8        9                10
//! ```
//!
//! The `m = 128 · blocks` slots form blocks of 128. The solution is stored
//! column by column within each block (the paper's interleaved
//! column-major layout): word `j` of block `q`, at byte `10 + 16 · (q · r +
//! j)`, is a little-endian `u128` whose bit `t` is bit `j` of `S[128 · q +
//! t]`. Every slot costs exactly `r` bits.
//!
//! A filter is well formed when its length is exactly `10 + 16 · r ·
//! blocks`, byte 9 is 7, and either `blocks ≥ 1` and `1 ≤ r ≤ 32` (a
//! filter), or `blocks = 0` and `r ≥ 1` (the empty set: nothing matches),
//! or `blocks = 0` and `r = 0` (every key matches). Anything else, in
//! particular every truncation of a well-formed filter (whose header then
//! promises more bytes than remain), answers "may match".
//!
//! # Probe
//!
//! With `q = s / 128` and `o = s % 128`, the 128 slots of the row are bits
//! `o..128` of block `q` and bits `0..o` of block `q + 1` (which exists
//! whenever `o > 0`, since `s ≤ m − 128`). For each result bit `j`, the
//! probe reads word `j` of both blocks, joins them into the window
//! `(w_q >> o) | (w_{q+1} << (128 − o))` and takes the parity of `window &
//! c`; the key passes when the `r` parities equal `f`, and the probe stops
//! at the first bit that differs. A key not in the set fails each bit with
//! probability 1/2, so it reads about two words of each block (one or two
//! cache lines in all for small `r`) before it is rejected; a key of the
//! set reads all `2 · r` words.
//!
//! # Worked example
//!
//! Keys `"a"` and `"b"` at `r = 2`: one block of 128 slots, 42 bytes
//! (pinned by the `golden_bytes` test):
//!
//! ```text
//! header  01 00 00 00  00 00 00 00  02  07               blocks = 1, seed = 0, r = 2
//! word 0  01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00   bit 0 of S[0..128]
//! word 1  04 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00   bit 1 of S[0..128]
//! ```
//!
//! One block has a single start, slot 0. Key `"a"` (coefficient ending in
//! `…dfe9`, fingerprint `01`) takes slot 0. Key `"b"` (`…8bad`,
//! fingerprint `11`) finds slot 0 taken, XORs with it (`0xe9 ^ 0xad =
//! 0x44`: its leading 1 moves two slots on) and takes slot 2 with
//! fingerprint `01 ^ 11 = 10`. Back-substitution sets the free slots to 0,
//! then `S[2] = 10`, then `S[0] = 01` (bit 2 of `"a"`'s coefficient is 0,
//! so `S[2]` does not enter its equation).

use super::{FilterPolicy, FilterShape, KeyHash};

/// The name under which [`RibbonFilterPolicy`] filters are stored. Change
/// it whenever the encoding or the row derivation changes.
pub const RIBBON_POLICY_NAME: &str = "siftdb.ribbon.xxh3.v1";

/// Bytes before the first column word.
pub const HEADER_LEN: usize = 10;

/// Largest result width `r` written or accepted.
pub const MAX_RESULT_BITS: u32 = 32;

/// Seeds tried at one slot count before the slot count grows.
pub const SEEDS_PER_SIZE: u32 = 4;

/// Construction attempts before giving up (and writing a filter that
/// matches every key).
pub const MAX_ATTEMPTS: u32 = 16;

/// Coefficient width and block size, in slots.
const WIDTH: u64 = 128;

/// `log2(WIDTH)`, stored in byte 9 of the header.
const LOG2_WIDTH: u8 = 7;

/// Bytes per column word.
const WORD_BYTES: usize = 16;

/// Builds and probes Ribbon filters over user-key hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RibbonFilterPolicy {
    result_bits: u32,
}

impl RibbonFilterPolicy {
    /// A policy with `result_bits` fingerprint bits per slot (clamped to
    /// `1..=32`): false-positive rate `2^−result_bits`, about `1.04 ·
    /// result_bits` stored bits per key.
    pub fn new(result_bits: u32) -> Self {
        RibbonFilterPolicy {
            result_bits: result_bits.clamp(1, MAX_RESULT_BITS),
        }
    }

    /// The policy with the highest false-positive rate not above
    /// `fpr`: `r = ⌈log2(1/fpr)⌉`, clamped to `1..=32` (so an `fpr` of
    /// 0.01 gives `r = 7`, a rate of 0.78%). NaN or `fpr ≤ 0` gives 32.
    pub fn with_fpr(fpr: f64) -> Self {
        if fpr.is_nan() || fpr <= 0.0 {
            return Self::new(MAX_RESULT_BITS);
        }
        // `as` saturates; the clamp in `new` bounds the result.
        Self::new((1.0 / fpr).log2().ceil().max(1.0) as u32)
    }

    /// The policy with the most result bits whose stored size fits
    /// `bits_per_key` at a typical overhead of 5%: `r = ⌊bits_per_key /
    /// 1.05⌋`, clamped to `1..=32`. The rate moves in steps of a factor of
    /// 2, so a budget between two steps is not used in full (10 bits/key
    /// gives `r = 9`, about 9.4 bits/key).
    pub fn with_bits_per_key(bits_per_key: f64) -> Self {
        // The tiny nudge keeps 7.35 / 1.05 = 6.9999… from flooring to 6.
        let r = (bits_per_key / 1.05 + 1e-9).floor();
        // `as` saturates and maps NaN to 0; `new` clamps to 1..=32.
        Self::new(if r.is_nan() { 0 } else { r as u32 })
    }

    /// Result bits per slot, `r`.
    pub fn result_bits(&self) -> u32 {
        self.result_bits
    }

    /// The false-positive rate this policy is built for, `2^−r`.
    pub fn design_fpr(&self) -> f64 {
        theoretical_fpr(self.result_bits)
    }

    /// Blocks of 128 slots for `n` keys at the first attempt: `⌈n ·
    /// factor(n) / 128⌉`, at least 1 for `n ≥ 1` and 0 for `n = 0`, where
    /// `factor` is [`slot_factor`].
    pub fn blocks_for(&self, n: usize) -> u32 {
        if n == 0 {
            return 0;
        }
        let slots = (n as f64 * slot_factor(n)).ceil();
        // `as` saturates for absurd `n`.
        let blocks = (slots / WIDTH as f64).ceil().max(1.0);
        if blocks >= f64::from(u32::MAX) {
            u32::MAX
        } else {
            blocks as u32
        }
    }
}

/// Slots per key at the first attempt, `1 + ε` with `ε = max(0.02, 0.005 ·
/// log2(n) − 0.045)`: 1.02 up to 2^13 keys, 1.035 at 2^16, 1.055 at 2^20,
/// 1.075 at 2^24. Measured (the ignored `sizing_experiment` test): at this
/// factor a seed succeeds for at least 95% of key sets from 2^13 to 2^22
/// keys; below 2^13 keys the whole blocks add more slack.
pub fn slot_factor(n: usize) -> f64 {
    let log2n = (n.max(1) as f64).log2();
    1.0 + (0.005 * log2n - 0.045).max(0.02)
}

/// The false-positive rate of a Ribbon filter with `r` result bits, `2^−r`
/// (see the module doc): 1.0 for `r = 0`.
pub fn theoretical_fpr(result_bits: u32) -> f64 {
    0.5f64.powi(result_bits.min(1100) as i32)
}

/// MurmurHash3's 64-bit finalizer: a bijection with full avalanche.
fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// A key's equation: start slot, coefficient (bit 0 set) and fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Row {
    start: u64,
    coeff: u128,
    fingerprint: u32,
}

/// The row of `hash` under `seed` in a filter of `slots` slots (a multiple
/// of 128, at least 128) with `r` result bits.
fn row(hash: KeyHash, seed: u32, slots: u64, r: u32) -> Row {
    let t = u64::from(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let a = fmix64(hash.low() ^ t);
    let b = fmix64(hash.high() ^ t.rotate_left(32));
    let starts = slots - (WIDTH - 1);
    Row {
        start: ((u128::from(a) * u128::from(starts)) >> 64) as u64,
        coeff: (u128::from(fmix64(b)) << 64) | u128::from(b) | 1,
        fingerprint: (a as u32) & result_mask(r),
    }
}

/// The low `r` bits set (`r` in `0..=32`).
fn result_mask(r: u32) -> u32 {
    if r >= 32 {
        u32::MAX
    } else {
        (1u32 << r) - 1
    }
}

/// Solves the system for `hashes` at `blocks` blocks and `seed`, returning
/// the encoded filter, or `None` if this seed has no solution.
fn build(hashes: &[KeyHash], r: u32, blocks: u32, seed: u32) -> Option<Vec<u8>> {
    let (coeffs, results) = band(hashes, r, blocks, seed)?;
    Some(solve(&coeffs, &results, r, blocks, seed))
}

/// The banded system: per slot, the coefficient (0 if free) and the
/// fingerprint of the row stored there, or `None` if a row is inconsistent.
fn band(hashes: &[KeyHash], r: u32, blocks: u32, seed: u32) -> Option<(Vec<u128>, Vec<u32>)> {
    let slots = u64::from(blocks) * WIDTH;
    let m = usize::try_from(slots).expect("filter size exceeds the address space");
    let mut coeffs = vec![0u128; m];
    let mut results = vec![0u32; m];
    for Row {
        start,
        mut coeff,
        mut fingerprint,
    } in rows_by_block(hashes, r, blocks, seed)
    {
        // Invariant: `coeff` has bit 0 set and its highest bit lands at or
        // before slot m − 1, so `i` stays in range.
        let mut i = start as usize;
        loop {
            let stored = coeffs[i];
            if stored == 0 {
                coeffs[i] = coeff;
                results[i] = fingerprint;
                break;
            }
            coeff ^= stored;
            fingerprint ^= results[i];
            if coeff == 0 {
                if fingerprint == 0 {
                    break; // redundant: the same equation again
                }
                return None;
            }
            let shift = coeff.trailing_zeros();
            coeff >>= shift;
            i += shift as usize;
        }
    }
    Some((coeffs, results))
}

/// The rows of `hashes` ordered by the block of their start slot (a
/// counting sort), so that banding walks the slot arrays nearly in order
/// instead of missing the cache on every key. The order changes neither
/// whether the system is solvable nor its solution with free slots 0: the
/// pivot slots of an echelon form of the same rows are the same.
fn rows_by_block(hashes: &[KeyHash], r: u32, blocks: u32, seed: u32) -> Vec<Row> {
    let slots = u64::from(blocks) * WIDTH;
    let block_of = |row: &Row| (row.start / WIDTH) as usize;
    // next[q] = where the next row of block q goes; first the counts.
    let mut next = vec![0usize; blocks as usize + 1];
    for &h in hashes {
        next[block_of(&row(h, seed, slots, r)) + 1] += 1;
    }
    for q in 1..next.len() {
        next[q] += next[q - 1];
    }
    let mut sorted = vec![Row::default(); hashes.len()];
    for &h in hashes {
        let row = row(h, seed, slots, r);
        let at = &mut next[block_of(&row)];
        sorted[*at] = row;
        *at += 1;
    }
    sorted
}

/// Back-substitution: the filter whose solution satisfies every stored row
/// (free slots 0), encoded with its header.
fn solve(coeffs: &[u128], results: &[u32], r: u32, blocks: u32, seed: u32) -> Vec<u8> {
    let m = coeffs.len();
    let r_us = r as usize;
    let data_len = m / WIDTH as usize * r_us * WORD_BYTES;
    let mut out = vec![0u8; HEADER_LEN + data_len];
    write_header(&mut out, blocks, seed, r);
    // state[j] bit t = bit j of S[i + t] for the slot i just solved.
    let mut state = vec![0u128; r_us];
    for i in (0..m).rev() {
        let (c, f) = (coeffs[i], results[i]);
        for (j, s) in state.iter_mut().enumerate() {
            let shifted = *s << 1;
            let bit = if c == 0 {
                0 // a free slot
            } else {
                ((shifted & c).count_ones() ^ (f >> j)) & 1
            };
            *s = shifted | u128::from(bit);
        }
        if i % WIDTH as usize == 0 {
            let at = HEADER_LEN + i / WIDTH as usize * r_us * WORD_BYTES;
            for (j, s) in state.iter().enumerate() {
                out[at + j * WORD_BYTES..at + (j + 1) * WORD_BYTES]
                    .copy_from_slice(&s.to_le_bytes());
            }
        }
    }
    out
}

fn write_header(out: &mut [u8], blocks: u32, seed: u32, r: u32) {
    out[..4].copy_from_slice(&blocks.to_le_bytes());
    out[4..8].copy_from_slice(&seed.to_le_bytes());
    out[8] = r as u8;
    out[9] = LOG2_WIDTH;
}

/// The filter over `hashes` with `r` result bits, starting at `first`
/// blocks: attempt `a` (in `0..MAX_ATTEMPTS`) uses seed `a` and `first +
/// ⌈first/64⌉ · ⌊a / SEEDS_PER_SIZE⌋` blocks; the filter that matches every
/// key if all fail.
fn create(hashes: &[KeyHash], r: u32, first: u32) -> Vec<u8> {
    if hashes.is_empty() {
        return header_only(r);
    }
    let first = first.max(1);
    for attempt in 0..MAX_ATTEMPTS {
        let growth = u64::from(first).div_ceil(64) * u64::from(attempt / SEEDS_PER_SIZE);
        let blocks = u32::try_from(u64::from(first) + growth).unwrap_or(u32::MAX);
        if let Some(filter) = build(hashes, r, blocks, attempt) {
            return filter;
        }
    }
    header_only(0)
}

/// A header-only filter: `r ≥ 1` is the empty set, `r = 0` matches every
/// key.
fn header_only(r: u32) -> Vec<u8> {
    let mut out = vec![0u8; HEADER_LEN];
    write_header(&mut out, 0, 0, r);
    out
}

/// What a well-formed filter's header says.
#[derive(Debug, Clone, Copy)]
enum Parsed<'a> {
    /// No key matches.
    Empty,
    /// Every key matches.
    All,
    /// A solved system.
    Solution {
        blocks: u32,
        seed: u32,
        r: u32,
        words: &'a [u8],
    },
}

fn parse(filter: &[u8]) -> Option<Parsed<'_>> {
    let (header, words) = filter.split_first_chunk::<HEADER_LEN>()?;
    let [b0, b1, b2, b3, s0, s1, s2, s3, r, log2] = *header;
    let blocks = u32::from_le_bytes([b0, b1, b2, b3]);
    let seed = u32::from_le_bytes([s0, s1, s2, s3]);
    let r = u32::from(r);
    if log2 != LOG2_WIDTH || r > MAX_RESULT_BITS {
        return None;
    }
    let expected = u64::from(blocks) * u64::from(r) * WORD_BYTES as u64;
    if words.len() as u64 != expected {
        return None;
    }
    match (blocks, r) {
        (0, 0) => Some(Parsed::All),
        (0, _) => Some(Parsed::Empty),
        (_, 0) => None,
        _ => Some(Parsed::Solution {
            blocks,
            seed,
            r,
            words,
        }),
    }
}

/// Column word `j` of block `q`, or `None` past the end.
fn column(words: &[u8], r: usize, q: usize, j: usize) -> Option<u128> {
    let at = (q * r + j) * WORD_BYTES;
    let bytes: [u8; WORD_BYTES] = words.get(at..at + WORD_BYTES)?.try_into().ok()?;
    Some(u128::from_le_bytes(bytes))
}

impl FilterPolicy for RibbonFilterPolicy {
    fn name(&self) -> &'static str {
        RIBBON_POLICY_NAME
    }

    fn create_filter(&self, hashes: &[KeyHash]) -> Vec<u8> {
        create(hashes, self.result_bits, self.blocks_for(hashes.len()))
    }

    fn may_match(&self, filter: &[u8], hash: KeyHash) -> bool {
        let (blocks, seed, r, words) = match parse(filter) {
            None | Some(Parsed::All) => return true,
            Some(Parsed::Empty) => return false,
            Some(Parsed::Solution {
                blocks,
                seed,
                r,
                words,
            }) => (blocks, seed, r, words),
        };
        let row = row(hash, seed, u64::from(blocks) * WIDTH, r);
        let (q, o) = ((row.start / WIDTH) as usize, (row.start % WIDTH) as u32);
        let r = r as usize;
        for j in 0..r {
            let Some(lo) = column(words, r, q, j) else {
                return true;
            };
            let window = if o == 0 {
                lo
            } else {
                let Some(hi) = column(words, r, q + 1, j) else {
                    return true;
                };
                (lo >> o) | (hi << (128 - o))
            };
            if ((window & row.coeff).count_ones() ^ (row.fingerprint >> j)) & 1 != 0 {
                return false;
            }
        }
        true
    }

    /// `bits_per_key` records the result width `r` the policy builds with
    /// (the setting that fixes the rate, `2^−r`; the stored bits per key
    /// are `r` times the slots per key), `num_hashes` 0.
    fn shape(&self, filter: &[u8]) -> FilterShape {
        let bits = match parse(filter) {
            Some(Parsed::Solution { blocks, r, .. }) => u64::from(blocks) * WIDTH * u64::from(r),
            _ => 0,
        };
        FilterShape {
            bits_per_key: self.result_bits,
            num_hashes: 0,
            bits,
        }
    }
}

/// What a Ribbon filter's bytes say about it, for tools such as `kvctl`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RibbonStats {
    /// Slots, `m` (a multiple of 128; 0 for the empty set and for the
    /// filter that matches every key).
    pub slots: u64,
    /// Result bits per slot, `r` (0 for the filter that matches every key).
    pub result_bits: u32,
    /// The seed the construction settled on (0 at the first attempt).
    pub seed: u32,
    /// The rate the filter was built for, `2^−r` from its width alone
    /// (0.0 for the empty set, 1.0 for the filter that matches every key).
    pub design_fpr: f64,
}

/// Decodes the statistics of a `siftdb.ribbon.xxh3.v1` filter, or `None`
/// if the bytes are not one.
pub fn ribbon_stats(filter: &[u8]) -> Option<RibbonStats> {
    Some(match parse(filter)? {
        Parsed::Empty => RibbonStats {
            slots: 0,
            result_bits: u32::from(filter[8]),
            seed: 0,
            design_fpr: 0.0,
        },
        Parsed::All => RibbonStats {
            slots: 0,
            result_bits: 0,
            seed: 0,
            design_fpr: 1.0,
        },
        Parsed::Solution {
            blocks, seed, r, ..
        } => RibbonStats {
            slots: u64::from(blocks) * WIDTH,
            result_bits: r,
            seed,
            design_fpr: theoretical_fpr(r),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::hash_key;
    use crate::filter::testutil::{hashes, measured_fpr};

    #[test]
    fn row_follows_the_documented_formula() {
        let h = KeyHash(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);
        let slots = 1280;
        for seed in [0u32, 1, 7] {
            let t = u64::from(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let a = fmix64(h.low() ^ t);
            let b = fmix64(h.high() ^ t.rotate_left(32));
            let got = row(h, seed, slots, 7);
            assert_eq!(got.start, ((u128::from(a) * 1153) >> 64) as u64);
            assert_eq!(got.coeff, (u128::from(fmix64(b)) << 64) | u128::from(b) | 1);
            assert_eq!(got.fingerprint, (a & 0x7f) as u32);
            assert!(got.start <= slots - 128);
        }
        // fmix64 is MurmurHash3's finalizer (its value at 1).
        assert_eq!(fmix64(0), 0);
        assert_eq!(fmix64(1), 0xb456_bcfc_34c2_cb2c);
        assert_eq!(result_mask(0), 0);
        assert_eq!(result_mask(7), 0x7f);
        assert_eq!(result_mask(32), u32::MAX);
    }

    #[test]
    fn constructors_pick_the_width() {
        assert_eq!(RibbonFilterPolicy::new(0).result_bits(), 1);
        assert_eq!(RibbonFilterPolicy::new(99).result_bits(), 32);
        assert_eq!(RibbonFilterPolicy::with_fpr(0.01).result_bits(), 7);
        assert_eq!(RibbonFilterPolicy::with_fpr(1.0 / 128.0).result_bits(), 7);
        assert_eq!(RibbonFilterPolicy::with_fpr(0.001).result_bits(), 10);
        assert_eq!(RibbonFilterPolicy::with_fpr(0.5).result_bits(), 1);
        assert_eq!(RibbonFilterPolicy::with_fpr(0.9).result_bits(), 1);
        assert_eq!(RibbonFilterPolicy::with_fpr(2.0).result_bits(), 1);
        assert_eq!(RibbonFilterPolicy::with_fpr(1e-30).result_bits(), 32);
        assert_eq!(RibbonFilterPolicy::with_fpr(0.0).result_bits(), 32);
        assert_eq!(RibbonFilterPolicy::with_fpr(f64::NAN).result_bits(), 32);
        assert_eq!(RibbonFilterPolicy::with_bits_per_key(10.0).result_bits(), 9);
        assert_eq!(RibbonFilterPolicy::with_bits_per_key(7.35).result_bits(), 7);
        assert_eq!(RibbonFilterPolicy::with_bits_per_key(4.0).result_bits(), 3);
        assert_eq!(RibbonFilterPolicy::with_bits_per_key(0.5).result_bits(), 1);
        assert_eq!(
            RibbonFilterPolicy::with_bits_per_key(f64::NAN).result_bits(),
            1
        );
        assert_eq!(RibbonFilterPolicy::with_bits_per_key(1e9).result_bits(), 32);
        assert_eq!(RibbonFilterPolicy::new(7).design_fpr(), 1.0 / 128.0);
        assert_eq!(theoretical_fpr(0), 1.0);
        assert_eq!(theoretical_fpr(10), 1.0 / 1024.0);
    }

    #[test]
    fn slot_counts() {
        let p = RibbonFilterPolicy::new(7);
        assert_eq!(p.blocks_for(0), 0);
        assert_eq!(p.blocks_for(1), 1);
        assert_eq!(p.blocks_for(125), 1); // 125 · 1.02 = 127.5
        assert_eq!(p.blocks_for(126), 2);
        assert!((slot_factor(1 << 10) - 1.02).abs() < 1e-12);
        assert!((slot_factor(1 << 16) - 1.035).abs() < 1e-12);
        assert!((slot_factor(1 << 20) - 1.055).abs() < 1e-12);
        assert_eq!(p.blocks_for(1 << 20), 8643); // ⌈2^20 · 1.055 / 128⌉ = ⌈8642.6⌉
        assert_eq!(p.blocks_for(usize::MAX), u32::MAX);
    }

    #[test]
    fn golden_bytes() {
        let p = RibbonFilterPolicy::new(2);
        let f = p.create_filter(&[hash_key(b"a"), hash_key(b"b")]);
        let want: Vec<u8> = [
            &[0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x07][..],
            &GOLDEN_WORDS[..],
        ]
        .concat();
        assert_eq!(f, want, "{f:02x?}");
        assert_eq!(
            ribbon_stats(&f),
            Some(RibbonStats {
                slots: 128,
                result_bits: 2,
                seed: 0,
                design_fpr: 0.25
            })
        );
        assert!(p.may_match(&f, hash_key(b"a")));
        assert!(p.may_match(&f, hash_key(b"b")));
    }

    /// Word 0 (bit 0 of each slot) then word 1 (bit 1).
    const GOLDEN_WORDS: [u8; 32] = [
        0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, //
        0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn empty_and_single_key_sets() {
        let p = RibbonFilterPolicy::new(7);
        let empty = p.create_filter(&[]);
        assert_eq!(empty, [0, 0, 0, 0, 0, 0, 0, 0, 7, 7]);
        let absent = hashes(0..1000, "absent");
        assert!(absent.iter().all(|h| !p.may_match(&empty, *h)));
        let s = ribbon_stats(&empty).unwrap();
        assert_eq!((s.slots, s.result_bits, s.design_fpr), (0, 7, 0.0));
        assert_eq!(p.shape(&empty).bits, 0);

        let one = hash_key(b"only");
        let f = p.create_filter(&[one]);
        assert_eq!(f.len(), HEADER_LEN + 7 * 16);
        assert!(p.may_match(&f, one));
        let fp = absent.iter().filter(|h| p.may_match(&f, **h)).count();
        assert!(fp < 30, "{fp} of 1000 at a design rate of 1/128");
    }

    #[test]
    fn duplicates_are_tolerated() {
        let p = RibbonFilterPolicy::new(8);
        let mut keys = hashes(0..5000, "dup");
        keys.extend_from_within(..);
        keys.extend_from_within(..2000);
        let f = p.create_filter(&keys);
        assert!(keys.iter().all(|h| p.may_match(&f, *h)));
        // Repeated equations are redundant, not conflicting: seed 0 holds.
        assert_eq!(ribbon_stats(&f).unwrap().seed, 0);
    }

    #[test]
    fn measured_fpr_matches_theory() {
        let n = 100_000u32;
        let keys = hashes(0..n, "present");
        for r in [1u32, 2, 4, 7, 10, 16] {
            let p = RibbonFilterPolicy::new(r);
            let f = p.create_filter(&keys);
            assert!(keys.iter().all(|h| p.may_match(&f, *h)), "r {r}");
            let theory = theoretical_fpr(r);
            assert_eq!(ribbon_stats(&f).unwrap().design_fpr, theory);
            let measured = measured_fpr(&p, &f, 400_000);
            let tolerance = if theory < 0.02 { 0.002 } else { 0.1 * theory };
            assert!(
                (measured - theory).abs() < tolerance,
                "r {r}: fpr {measured} vs theory {theory}"
            );
            if r <= 7 {
                assert!(
                    (measured - theory).abs() / theory < 0.10,
                    "r {r}: fpr {measured} vs theory {theory}"
                );
            }
        }
    }

    #[test]
    fn space_near_the_information_bound() {
        // At r = 7 (FPR 0.78%) the stored bits per key are within 10% of
        // log2(1/p) of the measured p, and at least 25% below the classic
        // Bloom filter's for the same rate.
        let n = 100_000u32;
        let keys = hashes(0..n, "present");
        let p = RibbonFilterPolicy::with_fpr(0.01);
        let f = p.create_filter(&keys);
        let stored = f.len() as f64 * 8.0 / f64::from(n);
        let measured = measured_fpr(&p, &f, 1_000_000);
        let bound = (1.0 / measured).log2();
        assert!(measured <= 0.01, "{measured}");
        assert!(stored / bound <= 1.10, "{stored} bits/key against {bound}");
        // Bloom: (1 − e^(−k/b))^k at its best k is at least p only for
        // b ≥ 1.44 · log2(1/p) − ...; search the smallest b that reaches p.
        let mut bloom_bits = 1.0;
        while (1..=30u32)
            .map(|k| crate::filter::theoretical_fpr(bloom_bits, k))
            .fold(1.0, f64::min)
            > measured
        {
            bloom_bits += 0.01;
        }
        assert!(
            stored <= 0.75 * bloom_bits,
            "{stored} vs Bloom {bloom_bits}"
        );
    }

    #[test]
    fn construction_retries_with_another_seed_and_always_ends() {
        // Starting at exactly n slots no seed can succeed (about n/e free
        // rows are needed); the slot count grows every 4 seeds until one
        // does, and the seed is in the header.
        let n = 1u32 << 14;
        let keys = hashes(0..n, "retry");
        let f = create(&keys, 8, n / 128);
        let s = ribbon_stats(&f).unwrap();
        assert!(s.seed >= SEEDS_PER_SIZE, "{s:?}");
        assert!(s.slots > u64::from(n));
        let p = RibbonFilterPolicy::new(8);
        assert!(keys.iter().all(|h| p.may_match(&f, *h)));

        // Far too few slots: every attempt fails and the filter matches
        // every key.
        let keys = hashes(0..1000, "retry");
        let f = create(&keys, 8, 1);
        assert_eq!(f, [0, 0, 0, 0, 0, 0, 0, 0, 0, 7]);
        assert!(hashes(0..100, "absent").iter().all(|h| p.may_match(&f, *h)));
        assert_eq!(ribbon_stats(&f).unwrap().design_fpr, 1.0);
    }

    #[test]
    fn a_million_keys_build() {
        let n = 1u32 << 20;
        let keys = hashes(0..n, "big");
        let p = RibbonFilterPolicy::new(7);
        let f = p.create_filter(&keys);
        let s = ribbon_stats(&f).unwrap();
        assert_eq!(s.result_bits, 7);
        assert!(keys.iter().all(|h| p.may_match(&f, *h)));
        let stored = f.len() as f64 * 8.0 / f64::from(n);
        assert!(stored < 7.0 * 1.07, "{stored}");
    }

    #[test]
    fn malformed_and_truncated_filters_answer_may_match() {
        let p = RibbonFilterPolicy::new(5);
        let probes = hashes(0..64, "probe");
        let f = p.create_filter(&hashes(0..300, "k"));
        let blocks = u32::from_le_bytes(f[..4].try_into().unwrap()) as usize;
        assert_eq!(f.len(), HEADER_LEN + blocks * 5 * 16);
        for len in 0..f.len() {
            let t = &f[..len];
            assert!(ribbon_stats(t).is_none(), "len {len}");
            assert!(probes.iter().all(|h| p.may_match(t, *h)), "len {len}");
        }
        let mut longer = f.clone();
        longer.push(0);
        assert!(probes.iter().all(|h| p.may_match(&longer, *h)));
        // Header fields out of range or inconsistent with the length.
        for (at, value) in [(0, 0u8), (0, 9), (3, 1), (8, 0), (8, 4), (8, 33), (9, 6)] {
            let mut bad = f.clone();
            bad[at] = value;
            assert!(ribbon_stats(&bad).is_none(), "byte {at} = {value}");
            assert!(probes.iter().all(|h| p.may_match(&bad, *h)));
        }
        // r = 0 with blocks is not a filter; blocks = 0 needs no data.
        assert!(ribbon_stats(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 7]).is_none());
        assert!(p.may_match(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 7], probes[0]));
        // Every single-bit flip is probed without panicking. A flip in the
        // seed or the words leaves a well-formed filter that answers
        // differently; that is not detectable and need not be.
        for bit in 0..f.len() * 8 {
            let mut flipped = f.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            for h in &probes {
                let _ = p.may_match(&flipped, *h);
            }
            let _ = ribbon_stats(&flipped);
            let _ = p.shape(&flipped);
        }
    }

    #[test]
    fn shape_and_name() {
        let p = RibbonFilterPolicy::new(9);
        let f = p.create_filter(&hashes(0..1000, "s"));
        let slots = ribbon_stats(&f).unwrap().slots;
        assert_eq!(
            p.shape(&f),
            FilterShape {
                bits_per_key: 9,
                num_hashes: 0,
                bits: slots * 9
            }
        );
        assert_eq!(p.shape(&[]).bits, 0);
        assert_eq!(p.name(), "siftdb.ribbon.xxh3.v1");
    }

    proptest::proptest! {
        #[test]
        fn never_a_false_negative(
            keys in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..24), 0..600),
            r in 1u32..=32,
        ) {
            let p = RibbonFilterPolicy::new(r);
            let hashes: Vec<KeyHash> = keys.iter().map(|k| hash_key(k)).collect();
            let f = p.create_filter(&hashes);
            for h in &hashes {
                proptest::prop_assert!(p.may_match(&f, *h));
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
            key in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..8),
        ) {
            let p = RibbonFilterPolicy::new(7);
            let _ = p.may_match(&bytes, hash_key(&key));
            let _ = ribbon_stats(&bytes);
            let _ = p.shape(&bytes);
        }

        #[test]
        fn well_formed_headers_over_arbitrary_words_never_panic(
            blocks in 0u32..4,
            r in 0u32..=32,
            seed in proptest::prelude::any::<u32>(),
            fill in proptest::prelude::any::<u8>(),
            key in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..8),
        ) {
            let mut f = vec![fill; HEADER_LEN + blocks as usize * r as usize * 16];
            write_header(&mut f, blocks, seed, r);
            let p = RibbonFilterPolicy::new(7);
            let _ = p.may_match(&f, hash_key(&key));
            let _ = ribbon_stats(&f);
        }
    }

    /// Success rate of the first seed at `factor` slots per key: prints
    /// a table for choosing `slot_factor`.
    #[test]
    #[ignore]
    fn sizing_experiment() {
        let grid: Vec<f64> = std::env::var("RIBBON_GRID")
            .map(|g| g.split(',').map(|x| x.parse().unwrap()).collect())
            .unwrap_or_else(|_| vec![1.01, 1.02, 1.03, 1.04, 1.05, 1.06, 1.08]);
        let sizes: Vec<u32> = std::env::var("RIBBON_LOG2N")
            .map(|g| g.split(',').map(|x| x.parse().unwrap()).collect())
            .unwrap_or_else(|_| vec![8, 10, 12, 14, 16, 18, 20]);
        for log2n in sizes {
            let n = 1usize << log2n;
            let trials = if log2n >= 21 {
                20
            } else if log2n >= 18 {
                60
            } else {
                300
            };
            let mut line = format!("n=2^{log2n}:");
            for &factor in &grid {
                let blocks = ((n as f64 * factor) / 128.0).ceil() as u32;
                let mut ok = 0;
                for t in 0..trials {
                    let keys = hashes(0..n as u32, &format!("t{t}-"));
                    if band(&keys, 32, blocks, 0).is_some() {
                        ok += 1;
                    }
                }
                line += &format!(" {factor}:{:.2}", f64::from(ok) / f64::from(trials));
            }
            eprintln!("{line}");
        }
    }
}
