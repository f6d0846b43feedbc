//! Writes a seed corpus of real encodings into `corpus/<target>/` (next to
//! this crate's `Cargo.toml`, or under the directory given as the first
//! argument), so fuzzing starts from valid files instead of from nothing:
//!
//! - a small database written by the engine itself (`Db` with tiny
//!   buffers, so it flushes and compacts): its SSTables, manifest and WAL;
//! - tables written by `TableBuilder` with and without a filter, at two
//!   block sizes;
//! - the data, index and properties blocks and the filter of those tables,
//!   and the WAL's record payloads (write batches).
//!
//! Each file is prefixed with the mode byte the targets read (src/lib.rs):
//! `0` (raw) and `1` (checksums fixed up) for files, plus a few random
//! inputs for mode `2` (generated). Run it with any toolchain:
//!
//! ```sh
//! cargo run --manifest-path fuzz/Cargo.toml --bin seed
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use siftdb::filter::BloomFilterPolicy;
use siftdb::inspect::key::{InternalKey, SequenceNumber, ValueType};
use siftdb::inspect::log::read_log;
use siftdb::inspect::sstable::{Table, TableBuilder, TableOptions};
use siftdb::{Db, Options, WriteBatch};
use siftdb_fuzz::Mode;

struct Corpus {
    root: PathBuf,
    count: usize,
}

impl Corpus {
    /// Writes `bytes` as seed `name` of `target`, once per mode in `modes`.
    fn add(&mut self, target: &str, name: &str, modes: &[Mode], bytes: &[u8]) {
        let dir = self.root.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        for m in modes {
            let mut v = vec![m.byte()];
            v.extend_from_slice(bytes);
            std::fs::write(dir.join(format!("seed-{name}-mode{}", m.byte())), v).unwrap();
            self.count += 1;
        }
    }
}

const FILE: &[Mode] = &[Mode::Raw, Mode::Fixed];
const RAW: &[Mode] = &[Mode::Raw];

/// SplitMix64, for the generated-mode seeds.
fn random_bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

/// Adds a table's blocks and filter to the `block` and `bloom` corpora.
fn add_table_parts(c: &mut Corpus, name: &str, path: &Path) {
    let table = Table::open(path, 1).unwrap();
    for (i, e) in table.index().iter().take(3).enumerate() {
        let b = table.read_block(e.handle).unwrap();
        c.add("block", &format!("{name}-data{i}"), RAW, b.contents());
    }
    let footer = *table.footer();
    c.add(
        "block",
        &format!("{name}-index"),
        RAW,
        table.read_block(footer.index).unwrap().contents(),
    );
    c.add(
        "block",
        &format!("{name}-properties"),
        RAW,
        table.read_block(footer.properties).unwrap().contents(),
    );
    if let Some(f) = table.filter_bytes() {
        c.add("bloom", name, RAW, f);
    }
}

/// A database written by the engine: flushed and compacted tables, a
/// manifest with several edits, and a WAL of unflushed batches.
fn engine_database(c: &mut Corpus, scratch: &Path) {
    let dir = scratch.join("db");
    let mut o = Options::default();
    o.write_buffer_size = 2 << 10;
    o.block_size = 256;
    o.block_restart_interval = 4;
    o.level0_compaction_trigger = 2;
    o.max_bytes_for_level_base = 4 << 10;
    let db = Db::open_with(&dir, o).unwrap();
    for round in 0..3u32 {
        for i in 0..60u32 {
            let mut b = WriteBatch::new();
            b.put(
                format!("key{:03}", (i * 7 + round) % 90),
                format!("value {round}.{i}"),
            )
            .unwrap();
            if i % 5 == 0 {
                b.delete(format!("key{:03}", (i + 40) % 90)).unwrap();
            }
            db.write(b).unwrap();
        }
        db.flush().unwrap();
    }
    db.compact().unwrap();
    for i in 0..6u32 {
        let mut b = WriteBatch::new();
        b.put(format!("wal{i}"), "v").unwrap();
        b.delete(format!("key{i:03}")).unwrap();
        db.write(b).unwrap();
    }
    drop(db);

    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(&path).unwrap();
        if name.ends_with(".sst") && n < 4 {
            n += 1;
            c.add("sstable", &format!("db-{name}"), FILE, &bytes);
            add_table_parts(c, &format!("db-{name}"), &path);
        } else if name.starts_with("MANIFEST-") {
            c.add("manifest", "db", FILE, &bytes);
        } else if name.ends_with(".log") && !bytes.is_empty() {
            c.add("wal", "db", FILE, &bytes);
            for (i, r) in read_log(&path).unwrap().records.iter().enumerate() {
                c.add("write_batch", &format!("db-{i}"), RAW, &r.payload);
            }
        }
    }
}

/// Tables written directly by `TableBuilder`, in several layouts.
fn built_tables(c: &mut Corpus, scratch: &Path) {
    for (name, block_size, filter) in [
        ("small-blocks-filter", 64, true),
        ("small-blocks", 64, false),
        ("one-block-filter", 4096, true),
    ] {
        let path = scratch.join(format!("{name}.sst"));
        let opts = TableOptions {
            block_size,
            restart_interval: 3,
            filter_policy: filter.then(|| Arc::new(BloomFilterPolicy::new(10)) as _),
            prefix_extractor: None,
            key_sketch_precision: None,
            compression: siftdb::Compression::None,
            keyspace: 0,
        };
        let mut b = TableBuilder::new(&path, opts).unwrap();
        for i in 0..24u64 {
            let k = format!("k{i:02}");
            let ik = InternalKey::new(k.as_bytes(), SequenceNumber(100 + i), ValueType::Value);
            b.add(ik.encoded(), format!("v{i}").as_bytes()).unwrap();
            if i % 3 == 0 {
                let del =
                    InternalKey::new(k.as_bytes(), SequenceNumber(i + 1), ValueType::Deletion);
                b.add(del.encoded(), b"").unwrap();
            }
        }
        b.finish().unwrap();
        c.add("sstable", name, FILE, &std::fs::read(&path).unwrap());
        add_table_parts(c, name, &path);
    }
}

fn main() {
    let root = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus"));
    let scratch = siftdb_fuzz::Scratch::new();
    let mut c = Corpus { root, count: 0 };
    engine_database(&mut c, scratch.path());
    built_tables(&mut c, scratch.path());
    for target in [
        "block",
        "sstable",
        "wal",
        "manifest",
        "write_batch",
        "bloom",
    ] {
        for i in 0..4u64 {
            let bytes = random_bytes(i + 1, 64 << i);
            c.add(target, &format!("random{i}"), &[Mode::Built], &bytes);
        }
    }
    println!("wrote {} seed files under {}", c.count, c.root.display());
}
