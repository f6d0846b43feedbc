//! `Db::open_read_only` while another handle writes, flushes and compacts
//! as fast as it can: every open must succeed (a writer deleting a WAL or
//! table the reader's manifest named is retried, not an error) and see a
//! consistent prefix of the writes.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use siftdb::{Db, Options};

#[test]
fn read_only_opens_succeed_while_a_writer_flushes_and_compacts() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    // A flush every ~40 puts and a compaction every few flushes.
    o.write_buffer_size = 4 << 10;
    o.block_size = 1024;
    // Many small tables, so that a read-only open (which opens each) takes
    // long enough for the writer to change the tree under it.
    o.target_file_size = 8 << 10;
    o.max_bytes_for_level_base = 64 << 10;
    let writer = Db::open_with(dir.path(), o).unwrap();
    writer.put("seed", "0").unwrap();
    for i in 0..5000 {
        writer.put(format!("k{i:06}"), "v".repeat(80)).unwrap();
    }
    writer.flush().unwrap();
    writer.wait_for_compactions().unwrap();
    println!("{} live tables", writer.live_files().len());
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let t = {
        let (stop, written) = (Arc::clone(&stop), Arc::clone(&written));
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                writer
                    .put(format!("k{:06}", i % 5000), "v".repeat(80))
                    .unwrap();
                i += 1;
                written.store(i, Ordering::Relaxed);
            }
            writer.stats()
        })
    };
    let mut failures = Vec::new();
    let opens = 300;
    for _ in 0..opens {
        let before = written.load(Ordering::Relaxed);
        match Db::open_read_only(dir.path(), Options::default()) {
            Ok(db) => {
                // Writes are acknowledged in order: the reader holds every
                // write acknowledged before it opened.
                if before > 0 {
                    let last = format!("k{:06}", (before - 1) % 5000);
                    assert!(db.get(&last).unwrap().is_some(), "{last} missing");
                }
                assert_eq!(db.get("seed").unwrap().as_deref(), Some(&b"0"[..]));
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let stats = t.join().unwrap();
    println!(
        "{opens} read-only opens during {} puts, {} flushes, {} compactions: {} failed",
        written.load(Ordering::Relaxed),
        stats.flushes,
        stats.compactions,
        failures.len()
    );
    assert!(stats.flushes > 10 && stats.compactions > 2, "{stats:?}");
    assert!(
        failures.is_empty(),
        "{} failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}
