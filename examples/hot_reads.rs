//! Reads with the read sketch on, then closes, so that `kvctl hot DIR`
//! has a window to show.
//!
//! ```text
//! cargo run --release --example hot_reads -- DIR
//! ```
//!
//! Loads 10,000 keys `user:NNNNN`, then makes 1,000,000 lookups: ranks
//! drawn from a Zipf(1.1) law over 20,000 ranks, where ranks at or above
//! 10,000 name keys that do not exist (`user:1NNNN`), so absent keys show
//! up among the hot ones.

use siftdb::{Db, HotKeyOptions, Options};

fn main() -> siftdb::Result<()> {
    let dir = std::env::args().nth(1).expect("usage: hot_reads DIR");
    let mut o = Options::default();
    o.hot_keys = Some(HotKeyOptions::default());
    let db = Db::open_with(&dir, o)?;
    for i in 0..10_000u32 {
        db.put(format!("user:{i:05}"), "profile")?;
    }
    db.flush()?;
    let ranks = 20_000usize;
    let mut cdf: Vec<f64> = (1..=ranks).map(|r| (r as f64).powf(-1.1)).collect();
    let mut acc = 0.0;
    for c in &mut cdf {
        acc += *c;
        *c = acc;
    }
    // A fixed permutation of ranks to keys, so the hot keys are not just
    // the first ones.
    let key_of = |r: usize| (r * 7_919 + 13) % ranks;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..1_000_000 {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let u = (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64;
        let r = cdf.partition_point(|&c| c < u * acc).min(ranks - 1);
        db.get(format!("user:{:05}", key_of(r)))?;
    }
    let hot = db.hot_keys(5)?;
    println!("{} lookups; top: {:?}", hot.reads(), hot.keys.first());
    db.close()
}
