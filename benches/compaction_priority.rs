//! Write and space amplification of the leveled picker's two priorities
//! (`Options::compaction_priority`): `RoundRobin` (LevelDB's compact
//! pointer) against `MostDuplicates` (the file whose merge drops the most
//! duplicate keys per byte written, estimated from the key sketches).
//!
//! Two overwrite-heavy workloads, each run once per priority with the
//! same keys (the figures are counts, not times, so one run is enough):
//! - `uniform`: puts of keys drawn uniformly from 400,000;
//! - `skewed`: 90% of the puts into a hot 10% of the key range.
//!
//! Write amplification is SSTable bytes written per byte flushed (over the
//! run); space amplification is the table bytes at the end (after
//! compactions settle) per byte of the live keys and values.
//!
//! `cargo bench --bench compaction_priority` (about a minute).

use siftdb::{CompactionPriority, Db, Options};

const KEYS: u64 = 400_000;
const PUTS: u64 = 2_000_000;
const VALUE_LEN: usize = 100;

/// SplitMix64 (Steele et al. 2014).
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

struct Outcome {
    write_amp: f64,
    space_amp: f64,
    compactions: u64,
    secs: f64,
}

fn run(skewed: bool, priority: CompactionPriority) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    o.write_buffer_size = 1 << 20;
    o.target_file_size = 1 << 20;
    o.max_bytes_for_level_base = 4 << 20;
    o.compaction_priority = priority;
    let db = Db::open_with(dir.path(), o).unwrap();
    let mut rng = 42u64;
    let mut live = std::collections::HashSet::new();
    let value = vec![b'v'; VALUE_LEN];
    let start = std::time::Instant::now();
    for _ in 0..PUTS {
        let r = next(&mut rng);
        let k = if skewed && !r.is_multiple_of(10) {
            // The hot tenth of the key range.
            (r >> 8) % (KEYS / 10) + KEYS / 2
        } else {
            (r >> 8) % KEYS
        };
        db.put(format!("{k:016}"), &value).unwrap();
        live.insert(k);
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let secs = start.elapsed().as_secs_f64();
    let s = db.stats();
    let table_bytes: u64 = s.levels.iter().map(|l| l.bytes).sum();
    Outcome {
        write_amp: s.write_amplification(),
        space_amp: table_bytes as f64 / (live.len() as f64 * (16 + VALUE_LEN) as f64),
        compactions: s.compactions,
        secs,
    }
}

fn main() {
    // `cargo test --benches` runs bench targets with `--bench`-less args;
    // keep that quick by measuring only when invoked as a benchmark.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    println!("workload  priority        write amp  space amp  compactions  wall s");
    for skewed in [false, true] {
        let name = if skewed { "skewed" } else { "uniform" };
        let mut rr = None;
        for p in [
            CompactionPriority::RoundRobin,
            CompactionPriority::MostDuplicates,
        ] {
            let out = run(skewed, p);
            println!(
                "{name:<9} {:<15} {:>9.3} {:>10.3} {:>12} {:>7.1}",
                format!("{p:?}"),
                out.write_amp,
                out.space_amp,
                out.compactions,
                out.secs
            );
            match rr {
                None => rr = Some(out),
                Some(ref base) => println!(
                    "{name:<9} ratio (MostDuplicates / RoundRobin): write amp {:.3}, space amp {:.3}",
                    out.write_amp / base.write_amp,
                    out.space_amp / base.space_amp
                ),
            }
        }
    }
}
