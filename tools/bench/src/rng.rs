//! A small deterministic generator, so every benchmark run with the same
//! seed lays out and probes exactly the same keys on every machine (no
//! dependence on a `rand` version's algorithm).

/// SplitMix64 (Steele, Lea and Flood, "Fast Splittable Pseudorandom Number
/// Generators", OOPSLA 2014): one 64-bit state, full period, good enough
/// statistics for choosing keys and shuffling.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed` and a list of `streams` that select
    /// an independent sequence (e.g. the layout and the number of files),
    /// so that each benchmark point is reproducible on its own.
    pub(crate) fn new(seed: u64, streams: &[u64]) -> Rng {
        let mut r = Rng(seed);
        for &s in streams {
            r.0 ^= s.wrapping_mul(0xd6e8_feb8_6659_fd93);
            r.0 = r.next_u64();
        }
        r
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the bias is below
    /// `n / 2^64`, far under anything a benchmark can see). `n` must be
    /// positive.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Fills `buf` with random bytes.
    pub(crate) fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }

    /// Shuffles `v` uniformly (Fisher–Yates).
    pub(crate) fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_stream_separated() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(7, &[1, 8]).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(
            Rng::new(7, &[1, 8]).next_u64(),
            Rng::new(7, &[1, 16]).next_u64()
        );
        // SplitMix64 reference: seed 0 gives 0xe220a8397b1dcdaf first.
        assert_eq!(Rng(0).next_u64(), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn below_is_in_range_and_roughly_uniform() {
        let mut r = Rng::new(1, &[]);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[r.below(10)] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut v: Vec<u32> = (0..1000).collect();
        Rng::new(3, &[]).shuffle(&mut v);
        assert_ne!(v, (0..1000).collect::<Vec<_>>());
        v.sort_unstable();
        assert_eq!(v, (0..1000).collect::<Vec<_>>());
    }
}
