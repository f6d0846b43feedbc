//! Loads N random keys and reports write amplification and the level shape.
//!
//! ```text
//! cargo run --release --example fill -- [KEYS] [--style leveled|tiered|none] [--dir DIR]
//! ```
//!
//! Keys are 16 random bytes, values 100 bytes, written one put at a time
//! with default options (64 MiB memtable, 256 MiB level 1, 10 bits/key).
//! The database goes to a temporary directory unless `--dir` is given.

use std::time::Instant;

use siftdb::{CompactionStyle, Db, Options};

fn main() -> siftdb::Result<()> {
    let mut keys: u64 = 10_000_000;
    let mut style = CompactionStyle::Leveled;
    let mut dir_arg: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--style" => {
                style = match args.next().as_deref() {
                    Some("leveled") => CompactionStyle::Leveled,
                    Some("tiered") => CompactionStyle::Tiered,
                    Some("none") => CompactionStyle::None,
                    other => panic!("unknown style {other:?}"),
                }
            }
            "--dir" => dir_arg = args.next(),
            n => keys = n.replace('_', "").parse().expect("KEYS must be a number"),
        }
    }
    let tmp = tempfile::tempdir().expect("temporary directory");
    let dir = dir_arg
        .map(Into::into)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let mut opts = Options::default();
    opts.compaction_style = style;
    let db = Db::open_with(&dir, opts)?;

    let start = Instant::now();
    let mut state: u64 = 0x5eed;
    let value = [0x61u8; 100];
    for i in 0..keys {
        let mut key = [0u8; 16];
        for half in key.chunks_mut(8) {
            // SplitMix64
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            half.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
        }
        db.put(key, value)?;
        if (i + 1) % 1_000_000 == 0 {
            eprintln!("{} keys, {:.1} s", i + 1, start.elapsed().as_secs_f64());
        }
    }
    let load = start.elapsed();
    db.flush()?;
    db.wait_for_compactions()?;
    let total = start.elapsed();
    let s = db.stats();
    println!("keys written:          {keys} (16-byte keys, 100-byte values, {style:?})");
    println!(
        "load time:             {:.1} s ({:.0} puts/s)",
        load.as_secs_f64(),
        keys as f64 / load.as_secs_f64()
    );
    println!("until settled:         {:.1} s", total.as_secs_f64());
    println!("user bytes:            {}", s.user_bytes_written);
    println!(
        "SSTable bytes written: {} (flushes {}, compactions {})",
        s.table_bytes_written, s.flushes, s.compactions
    );
    println!("write amplification:   {:.2}", s.write_amplification());
    println!(
        "dropped:               {} versions, {} tombstones",
        s.versions_dropped, s.tombstones_dropped
    );
    println!("level  files        bytes      entries");
    for l in &s.levels {
        if l.files > 0 {
            println!(
                "{:>5} {:>6} {:>12} {:>12}",
                l.level, l.files, l.bytes, l.entries
            );
        }
    }
    db.close()
}
