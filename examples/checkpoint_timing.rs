//! Times `Db::checkpoint` for databases of growing size: with SSTables
//! hard-linked, a checkpoint costs a few system calls per table plus the
//! copy of the WALs not yet flushed, whatever the data size.
//!
//! ```text
//! cargo run --release --example checkpoint_timing -- [MAX_KEYS] [--dir DIR]
//! ```
//!
//! For 100k, 300k and 1M keys (up to MAX_KEYS, default 1M; 16-byte keys,
//! 100-byte values, default options but for the SSTable size: 64 MiB, the
//! default, and 2 MiB, for many tables; compacted so that no background
//! work runs meanwhile) it writes 10k more keys that stay in the memtable,
//! then times three checkpoints into new directories and prints the
//! median with the report (tables linked and copied, table and WAL
//! bytes), beside the time of copying every file of the database, each
//! synced, for comparison. Then it measures what checkpoints cost a
//! writer: one thread puts as fast as it can for a second without
//! checkpoints and a second with checkpoints made back to back, and the
//! put latencies of the two seconds are compared.
//! The databases go to a temporary directory (on the disk, not tmpfs)
//! unless `--dir` is given.

use std::time::Instant;

use siftdb::{Db, Options};

fn main() -> siftdb::Result<()> {
    let mut max_keys: u64 = 1_000_000;
    let mut dir_arg: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--dir" => dir_arg = args.next(),
            n => max_keys = n.parse().expect("MAX_KEYS is a number"),
        }
    }
    let tmp = match &dir_arg {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir_in(std::env::temp_dir()),
    }
    .expect("temporary directory");
    println!(
        "table_size\tkeys\ttables\ttable_MiB\twal_KiB\tlinked\tcopied\tcheckpoint_ms (median of 3, min..max)\tfull_copy_ms"
    );
    for (table_mib, keys) in [64u64, 2].into_iter().flat_map(|t| {
        [100_000u64, 300_000, 1_000_000]
            .into_iter()
            .filter(move |&k| k <= max_keys)
            .map(move |k| (t, k))
    }) {
        let path = tmp.path().join(format!("db{table_mib}-{keys}"));
        let mut o = Options::default();
        o.target_file_size = table_mib << 20;
        let db = Db::open_with(&path, o)?;
        let value = [b'v'; 100];
        for i in 0..keys {
            let k = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_be_bytes();
            db.put([k, k].concat(), value)?;
        }
        db.compact()?;
        for i in 0..10_000u64 {
            db.put(format!("memtable{i:08}"), value)?;
        }
        let mut times = Vec::new();
        let mut last = None;
        for run in 0..3 {
            let start = Instant::now();
            let r = db.checkpoint(tmp.path().join(format!("cp{table_mib}-{keys}-{run}")))?;
            times.push(start.elapsed().as_secs_f64() * 1e3);
            last = Some(r);
        }
        times.sort_by(f64::total_cmp);
        let copy_ms = full_copy(&path, &tmp.path().join(format!("copy{table_mib}-{keys}")));
        let r = last.expect("three runs");
        println!(
            "{table_mib} MiB\t{keys}\t{}\t{:.1}\t{:.0}\t{}\t{}\t{:.2} ({:.2}..{:.2})\t{copy_ms:.1}",
            r.tables_linked + r.tables_copied,
            r.table_bytes as f64 / (1 << 20) as f64,
            r.wal_bytes as f64 / 1024.0,
            r.tables_linked,
            r.tables_copied,
            times[1],
            times[0],
            times[2]
        );
        db.close()?;
    }
    writer_latency(tmp.path())
}

/// Put latencies of one writer during a second without checkpoints and a
/// second of back-to-back checkpoints, printed as percentiles.
fn writer_latency(dir: &std::path::Path) -> siftdb::Result<()> {
    use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
    let db = std::sync::Arc::new(Db::open(dir.join("latency"))?);
    for i in 0..200_000u64 {
        db.put(i.to_be_bytes(), [b'v'; 100])?;
    }
    db.flush()?;
    // 0: warm-up, 1: quiet, 2: checkpointing, 3: stop.
    let phase = std::sync::Arc::new(AtomicU8::new(0));
    let started = std::sync::Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, phase, started) = (db.clone(), phase.clone(), started.clone());
        std::thread::spawn(move || {
            let mut lat: [Vec<f64>; 3] = Default::default();
            let mut i = 1u64 << 40;
            started.store(true, Ordering::SeqCst);
            loop {
                let p = phase.load(Ordering::SeqCst) as usize;
                if p == 3 {
                    return lat;
                }
                let start = Instant::now();
                db.put(i.to_be_bytes(), [b'w'; 100]).expect("put");
                lat[p].push(start.elapsed().as_secs_f64() * 1e6);
                i += 1;
            }
        })
    };
    while !started.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    phase.store(1, Ordering::SeqCst);
    std::thread::sleep(std::time::Duration::from_secs(1));
    phase.store(2, Ordering::SeqCst);
    let until = Instant::now() + std::time::Duration::from_secs(1);
    let mut checkpoints = 0;
    while Instant::now() < until {
        db.checkpoint(dir.join(format!("latency-cp{checkpoints}")))?;
        checkpoints += 1;
    }
    phase.store(3, Ordering::SeqCst);
    let mut lat = writer.join().expect("writer");
    println!("\nput latency of one writer, µs: phase\tputs\tp50\tp99\tp99.9\tmax");
    for (name, l) in ["no checkpoints", "checkpoints"]
        .into_iter()
        .zip(&mut lat[1..])
    {
        l.sort_by(f64::total_cmp);
        let q = |f: f64| l[((l.len() as f64 * f) as usize).min(l.len() - 1)];
        println!(
            "{name}\t{}\t{:.1}\t{:.1}\t{:.1}\t{:.0}",
            l.len(),
            q(0.5),
            q(0.99),
            q(0.999),
            l[l.len() - 1]
        );
    }
    println!("({checkpoints} checkpoints in the second)");
    Ok(())
}

/// Milliseconds to copy every file of `src` (a live database: the lock
/// file too) into the new directory `dst`, each file synced: what a
/// checkpoint without links would cost at least.
fn full_copy(src: &std::path::Path, dst: &std::path::Path) -> f64 {
    let start = Instant::now();
    std::fs::create_dir(dst).expect("create copy directory");
    for entry in std::fs::read_dir(src).expect("list database") {
        let entry = entry.expect("list database");
        let to = dst.join(entry.file_name());
        std::fs::copy(entry.path(), &to).expect("copy");
        std::fs::File::open(&to)
            .and_then(|f| f.sync_all())
            .expect("sync");
    }
    start.elapsed().as_secs_f64() * 1e3
}
