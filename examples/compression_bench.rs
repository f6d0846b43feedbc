//! What LZ4 (and, with the `zstd` feature, zstd) data-block compression
//! saves and costs (DESIGN.md 13): table bytes, and point lookups of
//! present keys (readrandom) and absent keys (readmissing) and seeks
//! (seekrandom: `range(k..)` and its first entry), in ops/s, without and
//! with compression, through the maps and through a block cache.
//!
//! ```text
//! cargo run --release --example compression_bench [-- KEYS OPS SAMPLES]
//! cargo run --release --example compression_bench --features zstd [-- KEYS OPS SAMPLES]
//! ```
//!
//! Two datasets: the 63,681 Debian package records of
//! `tests/data/debian-packages.tsv.gz` (JSON values of 78 to 425 bytes,
//! absent keys from English words), and `KEYS` synthetic keys (default
//! 1,000,000; 16 bytes, `key` and 13 digits of a shuffled index) with
//! 100-byte compressible values (words from a 64-word vocabulary),
//! absent keys between them. Each database is loaded in random order,
//! compacted to one level and reopened; the variants (none, lz4 on every
//! level, and zstd on every level with the feature) are open side by side,
//! and each sample runs `OPS` operations of each kind on each in turn, so
//! the ratios compare figures measured in the same run. Prints the median
//! of `SAMPLES` (default 5) samples, with the ratios to none (and zstd /
//! lz4), and what reading one stored data block costs in each variant
//! (`Table::data_block` over every block of the tables, 5 passes after a
//! warm one: the CRC check, and the decompression of compressed blocks).

use std::path::Path;
use std::time::Instant;

use siftdb::inspect::sstable::Table;
use siftdb::{CompressionPolicy, Db, Options, TableReads};
use siftdb_bench::readamp::Dataset;

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// `n` keys `key` + 13 digits (even indexes present, odd ones absent) with
/// 100-byte values made of words.
fn synthetic(n: usize) -> Dataset {
    const WORDS: [&str; 64] = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra",
        "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "red", "green", "blue",
        "cyan", "magenta", "yellow", "black", "white", "north", "south", "east", "west", "spring",
        "summer", "autumn", "winter", "iron", "copper", "silver", "gold", "tin", "lead", "oak",
        "ash", "elm", "pine", "birch", "maple", "cedar", "willow", "one", "two", "three", "four",
        "five", "six", "seven", "eight",
    ];
    let mut rng = Rng(0x5EED);
    let mut present = Vec::with_capacity(n);
    let mut absent = Vec::with_capacity(n);
    for i in 0..2 * n as u64 {
        let k = format!("key{:013}", i * 7).into_bytes();
        if i % 2 == 0 {
            let mut v = String::with_capacity(110);
            while v.len() < 100 {
                v.push_str(WORDS[rng.below(WORDS.len())]);
                v.push(' ');
            }
            v.truncate(100);
            present.push((k, v.into_bytes()));
        } else {
            absent.push(k);
        }
    }
    Dataset { present, absent }
}

fn options(compression: &str, cached: bool) -> Options {
    let mut o = Options::default();
    o.compression = compression.parse::<CompressionPolicy>().unwrap();
    if cached {
        o.table_reads = TableReads::Cached {
            capacity: 256 << 20,
        };
    }
    o
}

/// Loads `ds` in a shuffled order into `dir`, compacts it and closes it;
/// returns (table bytes, raw and stored data-block bytes of its
/// compressed tables).
fn load(dir: &Path, ds: &Dataset, compression: &str) -> siftdb::Result<(u64, u64, u64)> {
    let db = Db::open_with(dir, options(compression, false))?;
    let mut order: Vec<usize> = (0..ds.present.len()).collect();
    let mut rng = Rng(42);
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    for i in order {
        let (k, v) = &ds.present[i];
        db.put(k, v)?;
    }
    db.flush()?;
    db.compact()?;
    db.wait_for_compactions()?;
    let files = db.live_files();
    let bytes = files.iter().map(|f| f.file_size).sum();
    // Format-1 tables (no compression) carry no such figures.
    let (mut raw, mut stored) = (0, 0);
    for c in files
        .iter()
        .filter_map(|f| f.properties.compression.as_ref())
    {
        raw += c.raw_bytes;
        stored += c.stored_bytes;
    }
    db.close()?;
    Ok((bytes, raw, stored))
}

/// Microseconds per `Table::data_block` (CRC check and decompression)
/// over every data block of the database in `dir` (5 passes after a warm
/// one), and the blocks read per pass.
fn block_read_cost(dir: &Path, compression: &str) -> siftdb::Result<(f64, usize)> {
    let db = Db::open_with(dir, options(compression, false))?;
    let tables: Vec<Table> = db
        .live_files()
        .iter()
        .map(|f| Table::open(&f.path, f.number))
        .collect::<siftdb::Result<_>>()?;
    db.close()?;
    let blocks: usize = tables.iter().map(|t| t.index().len()).sum();
    let mut bytes = 0usize;
    let mut t0 = Instant::now();
    // A first pass, untimed, faults the maps in.
    for pass in 0..6 {
        if pass == 1 {
            t0 = Instant::now();
        }
        for t in &tables {
            for e in t.index() {
                bytes += t.data_block(e.handle)?.len();
            }
        }
    }
    std::hint::black_box(bytes);
    Ok((
        t0.elapsed().as_secs_f64() * 1e6 / (5 * blocks) as f64,
        blocks,
    ))
}

/// Operations per second of `ops` calls of `op(i)`.
fn rate(ops: usize, mut op: impl FnMut(usize)) -> f64 {
    let t = Instant::now();
    for i in 0..ops {
        op(i);
    }
    ops as f64 / t.elapsed().as_secs_f64()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run(name: &str, ds: &Dataset, ops: usize, samples: usize) -> siftdb::Result<()> {
    let root = tempfile::tempdir().map_err(|e| siftdb::Error::io("tempdir", e))?;
    let variants: &[&str] = if cfg!(feature = "zstd") {
        &["none", "lz4", "zstd"]
    } else {
        &["none", "lz4"]
    };
    let mut sizes = Vec::new();
    for v in variants {
        let t = Instant::now();
        sizes.push(load(&root.path().join(v), ds, v)?);
        eprintln!("{name}: loaded {v} in {:.1} s", t.elapsed().as_secs_f64());
    }
    println!("\n{name}: {} keys", ds.present.len());
    for (v, size) in variants.iter().zip(&sizes).skip(1) {
        println!(
            "  {v}: table bytes {} / none {} = {:.3}; data blocks {} raw bytes stored in {} ({:.2}x)",
            size.0,
            sizes[0].0,
            size.0 as f64 / sizes[0].0 as f64,
            size.1,
            size.2,
            size.1 as f64 / size.2 as f64
        );
    }
    for v in variants {
        let (us, blocks) = block_read_cost(&root.path().join(v), v)?;
        println!("  {v}: {us:.2} µs per data block read ({blocks} blocks)");
    }
    let mut rng = Rng(7);
    let present: Vec<&[u8]> = (0..ops)
        .map(|_| ds.present[rng.below(ds.present.len())].0.as_slice())
        .collect();
    let absent: Vec<&[u8]> = (0..ops)
        .map(|_| ds.absent[rng.below(ds.absent.len())].as_slice())
        .collect();
    let mut head = String::from("  | reads | op |");
    for v in variants {
        head.push_str(&format!(" {v} ops/s |"));
    }
    for v in &variants[1..] {
        head.push_str(&format!(" {v} / none |"));
    }
    if variants.len() == 3 {
        head.push_str(" zstd / lz4 |");
    }
    println!("{head}");
    println!(
        "  |---|---|{}",
        "---:|".repeat(2 * variants.len() - 1 + usize::from(variants.len() == 3))
    );
    for cached in [false, true] {
        let dbs: Vec<Db> = variants
            .iter()
            .map(|v| Db::open_with(root.path().join(v), options(v, cached)))
            .collect::<siftdb::Result<_>>()?;
        // Warm: the page cache (and the block cache) hold every table.
        for db in &dbs {
            for k in &present {
                db.get(k)?;
            }
        }
        let kinds = ["readrandom", "readmissing", "seekrandom"];
        // figures[kind][variant] = samples
        let mut figures = vec![vec![Vec::new(); dbs.len()]; kinds.len()];
        for _ in 0..samples {
            for (d, db) in dbs.iter().enumerate() {
                figures[0][d].push(rate(ops, |i| {
                    assert!(db.get(present[i]).unwrap().is_some());
                }));
                figures[1][d].push(rate(ops, |i| {
                    assert!(db.get(absent[i]).unwrap().is_none());
                }));
                figures[2][d].push(rate(ops, |i| {
                    let mut it = db.range(absent[i].to_vec()..);
                    std::hint::black_box(it.next());
                }));
            }
        }
        for (k, kind) in kinds.iter().enumerate() {
            let m: Vec<f64> = figures[k].iter_mut().map(|f| median(f)).collect();
            let mut row = format!(
                "  | {} | {kind} |",
                if cached { "cache 256 MiB" } else { "mapped" }
            );
            for r in &m {
                row.push_str(&format!(" {r:.0} |"));
            }
            for r in &m[1..] {
                row.push_str(&format!(" {:.2} |", r / m[0]));
            }
            if m.len() == 3 {
                row.push_str(&format!(" {:.2} |", m[2] / m[1]));
            }
            println!("{row}");
        }
    }
    Ok(())
}

fn main() -> siftdb::Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| {
            a.parse()
                .expect("usage: compression_bench [KEYS OPS SAMPLES]")
        })
        .collect();
    let keys = args.first().copied().unwrap_or(1_000_000);
    let ops = args.get(1).copied().unwrap_or(200_000);
    let samples = args.get(2).copied().unwrap_or(5);
    let debian = Dataset::debian(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data"
    )))
    .map_err(|e| siftdb::Error::InvalidArgument(e.to_string()))?;
    run("debian", &debian, ops, samples)?;
    run("synthetic", &synthetic(keys), ops, samples)?;
    Ok(())
}
