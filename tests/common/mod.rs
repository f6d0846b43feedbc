//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use siftdb::{Db, Options};

/// Options with a small write buffer so tests produce several SSTables.
pub fn small_options() -> Options {
    let mut o = Options::default();
    o.write_buffer_size = 64 << 10;
    o.block_size = 1024;
    o
}

/// Opens `dir` with `opts`, panicking with the error on failure.
pub fn open(dir: &Path, opts: &Options) -> Db {
    Db::open_with(dir, opts.clone()).unwrap_or_else(|e| panic!("open {}: {e}", dir.display()))
}

/// Collects a range iterator into UTF-8 keys, panicking on errors.
pub fn keys<I: Iterator<Item = siftdb::Result<(Vec<u8>, Vec<u8>)>>>(it: I) -> Vec<String> {
    it.map(|r| String::from_utf8(r.unwrap().0).unwrap())
        .collect()
}

/// Reads a gzipped file from tests/data line by line.
pub fn gz_lines(name: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let f = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut s = String::new();
    flate2::read::GzDecoder::new(f)
        .read_to_string(&mut s)
        .unwrap();
    BufReader::new(s.as_bytes())
        .lines()
        .map(|l| l.unwrap())
        .collect()
}

/// A small deterministic generator (SplitMix64), so tests need no rand crate.
pub struct Rng(pub u64);

impl Rng {
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}
