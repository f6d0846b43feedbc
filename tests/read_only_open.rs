//! `Db::open_read_only` while another handle writes, flushes and compacts
//! as fast as it can: every open must succeed (a writer deleting a WAL or
//! table the reader's manifest named is retried, not an error) and see a
//! prefix of the writes: nothing missing before the newest write it shows.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use common::pause::PauseOnce;
use siftdb::sync_point::SyncPoint;
use siftdb::{Db, Options};

/// Starts `Db::open_read_only(dir)` on a thread named "reader" and returns
/// once it is held right after reading the manifest; releasing the pause
/// lets it go on.
fn read_only_open_held_after_the_manifest(
    dir: &Path,
) -> (PauseOnce, std::thread::JoinHandle<siftdb::Result<Db>>) {
    let pause = PauseOnce::for_thread(SyncPoint::ReadOnlyOpenAfterManifest, "reader");
    let mut o = Options::default();
    o.sync_points = Some(pause.sync_points());
    pause.arm();
    let path = dir.to_path_buf();
    let reader = std::thread::Builder::new()
        .name("reader".into())
        .spawn(move || Db::open_read_only(path, o))
        .unwrap();
    pause.wait_until_held();
    (pause, reader)
}

/// A read-only open held after it has read the manifest, while the writer
/// flushes the memtable whose WAL that manifest names (deleting the WAL)
/// and writes on into the next WAL. Before the fix the open found neither
/// the new table nor the old WAL and returned a view with a hole: the
/// later write present, the earlier one missing.
#[test]
fn a_read_only_open_held_across_a_flush_sees_no_hole() {
    let dir = tempfile::tempdir().unwrap();
    let writer = Db::open(dir.path()).unwrap();
    writer.put("earlier", "1").unwrap();
    let (pause, reader) = read_only_open_held_after_the_manifest(dir.path());
    writer.flush().unwrap();
    writer.put("later", "2").unwrap();
    pause.release();
    let db = reader.join().unwrap().unwrap();
    let (earlier, later) = (db.get("earlier").unwrap(), db.get("later").unwrap());
    assert!(
        earlier.is_some() || later.is_none(),
        "the open shows \"later\" ({later:?}) but not \"earlier\", written before it"
    );
    assert_eq!(earlier.as_deref(), Some(&b"1"[..]));
}

const KEYS: u64 = 5000;

/// Write number `c` goes to key `c % KEYS`, and its value starts with `c`.
fn put_number(db: &Db, c: u64) {
    db.put(
        format!("k{:06}", c % KEYS),
        format!("{c:012}{}", "v".repeat(68)),
    )
    .unwrap();
}

/// Whether `values` (what a view holds for keys `0..KEYS`, by the number
/// of the write that set them) is a prefix of the writes `0..`: with `top`
/// the newest write number shown, every key holds the newest write to it
/// numbered `top` or below. Returns `top`, or what is wrong.
fn prefix_of_the_writes(values: &[u64]) -> Result<u64, String> {
    if values.len() as u64 != KEYS {
        return Err(format!("{} keys, not {KEYS}", values.len()));
    }
    let top = *values.iter().max().unwrap();
    for (j, &c) in values.iter().enumerate() {
        let j = j as u64;
        let expected = j + (top - j) / KEYS * KEYS;
        if c != expected {
            return Err(format!(
                "write {top} is in the view, but k{j:06} holds write {c}, not {expected}"
            ));
        }
    }
    Ok(top)
}

/// The write number a value starts with.
fn number_in(value: &[u8]) -> u64 {
    std::str::from_utf8(&value[..12]).unwrap().parse().unwrap()
}

/// Runs `opens` views of the database (fewer if `budget` runs out first),
/// each read by `view` (which returns what every key holds, by write
/// number), while a writer cycles the keys through a 1 KiB write buffer;
/// every view must open and be a prefix of the writes holding every write
/// acknowledged before it began.
fn views_while_a_writer_flushes(
    opens: usize,
    budget: std::time::Duration,
    view: impl Fn(&Path) -> siftdb::Result<Vec<u64>>,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::default();
    // A flush every ~10 puts and a compaction every few flushes.
    o.write_buffer_size = 1 << 10;
    o.block_size = 1024;
    // Many small tables, so that a read-only open (which opens each) takes
    // long enough for the writer to change the tree under it.
    o.target_file_size = 8 << 10;
    o.max_bytes_for_level_base = 64 << 10;
    let writer = Db::open_with(dir.path(), o).unwrap();
    for c in 0..KEYS {
        put_number(&writer, c);
    }
    writer.flush().unwrap();
    writer.wait_for_compactions().unwrap();
    println!("{} live tables", writer.live_files().len());
    let stop = Arc::new(AtomicBool::new(false));
    // Writes acknowledged so far: numbers 0..written.
    let written = Arc::new(AtomicU64::new(KEYS));
    let t = {
        let (stop, written) = (Arc::clone(&stop), Arc::clone(&written));
        std::thread::spawn(move || {
            let mut c = KEYS;
            while !stop.load(Ordering::Relaxed) {
                put_number(&writer, c);
                c += 1;
                written.store(c, Ordering::Release);
            }
            writer.stats()
        })
    };
    let (mut failures, mut holes) = (Vec::new(), Vec::new());
    let start = std::time::Instant::now();
    let mut views = 0;
    while views < opens && start.elapsed() < budget {
        views += 1;
        let before = written.load(Ordering::Acquire);
        match view(dir.path()) {
            // Writes are acknowledged in order: the view holds every write
            // acknowledged before the open began.
            Ok(values) => match prefix_of_the_writes(&values) {
                Ok(top) if top + 1 >= before => {}
                Ok(top) => holes.push(format!("newest write {top}, {before} acknowledged")),
                Err(e) => holes.push(e),
            },
            Err(e) => failures.push(e.to_string()),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let stats = t.join().unwrap();
    println!(
        "{views} views in {:.1} s during {} puts, {} flushes, {} compactions: {} failed, {} not a prefix",
        start.elapsed().as_secs_f64(),
        written.load(Ordering::Relaxed) - KEYS,
        stats.flushes,
        stats.compactions,
        failures.len(),
        holes.len()
    );
    assert!(stats.flushes > 10 && stats.compactions > 2, "{stats:?}");
    assert!(
        holes.is_empty(),
        "{} views were not a prefix of the writes: {:?}",
        holes.len(),
        &holes[..holes.len().min(5)]
    );
    assert!(
        failures.is_empty(),
        "{} failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

#[test]
fn read_only_opens_see_a_prefix_of_the_writes_while_a_writer_flushes_and_compacts() {
    views_while_a_writer_flushes(300, std::time::Duration::from_secs(10), |dir| {
        let db = Db::open_read_only(dir, Options::default())?;
        db.iter().map(|r| r.map(|(_, v)| number_in(&v))).collect()
    });
}

/// kvctl's inspection commands (`explain`, `stats`, `info`) read through
/// `inspect::DbSnapshot`, which had the same hole as `Db::open_read_only`.
#[test]
fn inspection_snapshots_see_a_prefix_of_the_writes_while_a_writer_flushes_and_compacts() {
    views_while_a_writer_flushes(200, std::time::Duration::from_secs(8), |dir| {
        let snap = siftdb::inspect::DbSnapshot::open(dir)?;
        (0..KEYS)
            .map(|j| {
                let e = siftdb::inspect::explain(
                    &snap,
                    &Default::default(),
                    format!("k{j:06}").as_bytes(),
                )?;
                Ok(e.verdict.as_get().map_or(u64::MAX, number_in))
            })
            .collect()
    });
}

/// A read-only open pins the WALs before it reads the manifest, so it may
/// meet writes to a keyspace created after the manifest it read: those
/// are `Corruption` to it (DESIGN.md 8), and it reads the
/// manifest again, which the creation changed. Held after reading the
/// manifest while the writer creates a keyspace and writes to it, the
/// open succeeds and shows the keyspace with its write.
#[test]
fn a_read_only_open_meets_a_keyspace_created_after_it_read_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let writer = Db::open(dir.path()).unwrap();
    writer.put("k", "default").unwrap();
    let (pause, reader) = read_only_open_held_after_the_manifest(dir.path());
    writer.keyspace("late").unwrap().put("k", "late").unwrap();
    pause.release();
    let db = reader
        .join()
        .unwrap()
        .unwrap_or_else(|e| panic!("read-only open: {e}"));
    assert_eq!(db.keyspaces(), ["default", "late"]);
    let late = db.existing_keyspace("late").unwrap();
    assert_eq!(late.get("k").unwrap().as_deref(), Some(&b"late"[..]));
}
