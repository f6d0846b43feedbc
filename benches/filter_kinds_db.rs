//! End to end, per filter kind: `get` latency of absent and present keys on
//! a 1,000,000-key leveled database (random 16-byte keys, 100-byte values)
//! whose every table carries the same kind of filter.
//!
//! `cargo bench --bench filter_kinds_db` (about a minute on 2 cores). One
//! database is loaded and compacted, copied once per kind, and each copy is
//! compacted again with its kind's filter. The copies are then timed in
//! interleaved rounds (every kind takes a turn in every round), because
//! this shared machine's speed drifts by tens of percent within a minute:
//! the ratios printed are medians of the per-round ratios to the classic
//! Bloom filter, measured in one run. Writes `target/filter-kinds-db.csv`.
//!
//! First, the read-amplification headline point per kind: 200,000 keys in
//! 8 overlapping runs, 40% of lookups absent, 10 bits per key; data-block
//! reads per lookup measured by the engine's counters against
//! `0.4 · L · p + 0.6 · (1 + (L − 1)/2 · p)` with each kind's own design
//! rate `p` (README, "Read amplification").

use std::path::Path;
use std::time::Instant;

use siftdb::filter::{FilterKind, LevelFilter};
use siftdb::{Db, Options};
use siftdb_bench::readamp::Dataset;

const KEYS: usize = 1_000_000;
const ROUNDS: usize = 21;
const GETS_PER_ROUND: usize = 20_000;

fn options() -> Options {
    let mut o = Options::default();
    o.write_buffer_size = 8 << 20;
    o.target_file_size = 8 << 20;
    o.max_bytes_for_level_base = 32 << 20;
    o
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_name() != "LOCK" {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// The headline point of the read-amplification benchmark, per kind.
fn seed_point() {
    use siftdb::filter::{blocked_bloom, bloom, ribbon};
    use siftdb_bench::readamp::{bench_options, load_runs, RunLayout};
    const RUNS: usize = 8;
    let ds = Dataset::synthetic(200_000, 16, 100, 0x5EED).expect("keys");
    let layout = RunLayout::random(ds.present.len(), RUNS, 0x5EED);
    let kinds = [
        (
            "bloom 10, k = 7",
            FilterKind::Bloom,
            bloom::theoretical_fpr(10.0, 7),
        ),
        (
            "blocked-bloom 10, k = 6",
            FilterKind::BlockedBloom,
            blocked_bloom::theoretical_fpr(10.0, 6),
        ),
        (
            "ribbon 10, r = 9",
            FilterKind::Ribbon,
            ribbon::theoretical_fpr(9),
        ),
    ];
    println!("8 runs, 40% absent, 10 bits per key: data-block reads per lookup");
    println!("{:<24} {:>9} {:>9} {:>9}", "kind", "measured", "model", "p");
    let (absent, present) = (40_000, 60_000);
    for (name, kind, p) in kinds {
        let dir = tempfile::tempdir().unwrap();
        let mut o = bench_options(10, None);
        o.filters = vec![LevelFilter::BitsPerKey(kind, 10.0)];
        let db = load_runs(dir.path(), &ds, &layout, o).expect("load the layout");
        let before = db.stats().data_block_reads;
        for k in ds.absent.iter().take(absent) {
            db.get(k).unwrap();
        }
        for (k, _) in ds.present.iter().step_by(3).take(present) {
            db.get(k).unwrap();
        }
        let reads = (db.stats().data_block_reads - before) as f64 / (absent + present) as f64;
        let l = RUNS as f64;
        let model = 0.4 * l * p + 0.6 * (1.0 + (l - 1.0) / 2.0 * p);
        println!("{name:<24} {reads:>9.4} {model:>9.4} {:>8.3}%", p * 100.0);
    }
    println!("(no filter: 5.9 reads per lookup at this point)\n");
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument selects nothing here.
    seed_point();
    let ds = Dataset::synthetic(KEYS, 16, 100, 0x5EED).expect("keys");
    let base = tempfile::tempdir().unwrap();
    let loaded = base.path().join("loaded");
    let t = Instant::now();
    {
        let db = Db::open_with(&loaded, options()).unwrap();
        for (k, v) in &ds.present {
            db.put(k, v).unwrap();
        }
        db.compact().unwrap();
    }
    eprintln!("loaded {KEYS} keys in {:.1} s", t.elapsed().as_secs_f64());

    let kinds: Vec<(&str, Vec<LevelFilter>)> = vec![
        ("bloom 10", vec![]),
        (
            "blocked-bloom 10",
            vec![LevelFilter::BitsPerKey(FilterKind::BlockedBloom, 10.0)],
        ),
        (
            "ribbon 10 (r = 9)",
            vec![LevelFilter::BitsPerKey(FilterKind::Ribbon, 10.0)],
        ),
        (
            "ribbon 1% (r = 7)",
            vec![LevelFilter::FalsePositiveRate(FilterKind::Ribbon, 0.01)],
        ),
    ];
    let mut dbs = Vec::new();
    for (i, (name, filters)) in kinds.iter().enumerate() {
        let dir = base.path().join(format!("kind{i}"));
        copy_dir(&loaded, &dir);
        let mut o = options();
        o.filters = filters.clone();
        let db = Db::open_with(&dir, o).unwrap();
        db.compact().unwrap();
        let s = db.stats();
        let filter_bytes: u64 = s.levels.iter().map(|l| l.filter_bytes).sum();
        let levels: Vec<String> = s
            .levels
            .iter()
            .filter(|l| l.files > 0)
            .map(|l| format!("L{} {} files", l.level, l.files))
            .collect();
        eprintln!(
            "{name}: {} of filters ({:.2} bits/key), {}",
            filter_bytes,
            filter_bytes as f64 * 8.0 / KEYS as f64,
            levels.join(", ")
        );
        dbs.push((name, db, filter_bytes));
    }
    // Warm the page cache and the maps.
    for (_, db, _) in &dbs {
        for k in ds.absent.iter().step_by(97) {
            db.get(k).unwrap();
        }
        for (k, _) in ds.present.iter().step_by(97) {
            db.get(k).unwrap();
        }
    }

    // For profiles: `SIFTDB_PROFILE_ABSENT=SECS` loops absent gets on the
    // first kind for that long (record with `perf record --delay`).
    if let Some(secs) = std::env::var("SIFTDB_PROFILE_ABSENT")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        let end = Instant::now() + std::time::Duration::from_secs(secs);
        let mut n = 0usize;
        eprintln!("profiling absent gets");
        while Instant::now() < end {
            for _ in 0..1000 {
                n = (n + 7919) % KEYS;
                std::hint::black_box(dbs[0].1.get(&ds.absent[n]).unwrap());
            }
        }
        return;
    }
    // ns[present as usize][kind]: per-get time of each round.
    let mut ns: [Vec<Vec<f64>>; 2] = [vec![Vec::new(); dbs.len()], vec![Vec::new(); dbs.len()]];
    let mut reads = vec![(0u64, 0u64); dbs.len()];
    let mut start = 0usize;
    for _ in 0..ROUNDS {
        // This round's keys, copied next to each other first: fetching a
        // key from the 2M scattered allocations of the dataset missed the
        // cache, and cost more than the lookup itself.
        let round_keys = |present: bool| -> Vec<u8> {
            (0..GETS_PER_ROUND)
                .flat_map(|j| {
                    let n = (start + j * 7919) % KEYS;
                    if present {
                        ds.present[n].0.clone()
                    } else {
                        ds.absent[n].clone()
                    }
                })
                .collect()
        };
        let keys = [round_keys(false), round_keys(true)];
        for (i, (_, db, _)) in dbs.iter().enumerate() {
            for present in [false, true] {
                let before = db.stats().data_block_reads;
                let t = Instant::now();
                for key in keys[present as usize].chunks_exact(16) {
                    std::hint::black_box(db.get(key).unwrap());
                }
                let per_get = t.elapsed().as_nanos() as f64 / GETS_PER_ROUND as f64;
                ns[present as usize][i].push(per_get);
                let r = db.stats().data_block_reads - before;
                if present {
                    reads[i].1 += r;
                } else {
                    reads[i].0 += r;
                }
            }
        }
        start += 104_729;
    }
    let lookups = (ROUNDS * GETS_PER_ROUND) as f64;
    let mut csv = String::from(
        "kind,filter_bits_per_key,absent_get_ns,present_get_ns,absent_vs_bloom,present_vs_bloom,absent_reads_per_get,present_reads_per_get\n",
    );
    println!(
        "{:<20} {:>9} {:>12} {:>13} {:>16} {:>17} {:>12}",
        "kind",
        "bits/key",
        "absent ns",
        "present ns",
        "absent vs bloom",
        "present vs bloom",
        "absent reads"
    );
    for (i, (name, _, filter_bytes)) in dbs.iter().enumerate() {
        let ratio = |p: usize| {
            let mut r: Vec<f64> = ns[p][0].iter().zip(&ns[p][i]).map(|(b, x)| b / x).collect();
            median(&mut r)
        };
        let (absent_ratio, present_ratio) = (ratio(0), ratio(1));
        let absent = median(&mut ns[0][i].clone());
        let present = median(&mut ns[1][i].clone());
        let bits = *filter_bytes as f64 * 8.0 / KEYS as f64;
        let absent_reads = reads[i].0 as f64 / lookups;
        let present_reads = reads[i].1 as f64 / lookups;
        println!(
            "{name:<20} {bits:>9.2} {absent:>12.0} {present:>13.0} {absent_ratio:>15.2}x {present_ratio:>16.2}x {absent_reads:>12.4}"
        );
        csv.push_str(&format!(
            "{name},{bits:.3},{absent:.1},{present:.1},{absent_ratio:.3},{present_ratio:.3},{absent_reads:.5},{present_reads:.5}\n"
        ));
    }
    println!("(ratios: medians over {ROUNDS} interleaved rounds of bloom's time over the kind's; above 1 is faster)");
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/filter-kinds-db.csv");
    std::fs::write(&out, csv).unwrap();
    eprintln!("wrote {}", out.display());
}
