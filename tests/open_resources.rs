//! What an open database costs in file descriptors and memory, measured in
//! a child process (a copy of this test binary) so that nothing else in
//! the process counts:
//!
//! - a database with more tables than the open-file limit opens, writable
//!   and read-only (recovery used to open every table before decoding any:
//!   1,200 tables failed at limits of 256 to 1,100);
//! - a running database, flushing and compacting, stays within the
//!   descriptor bound DESIGN.md 9 states;
//! - opening a database whose WAL is a 256 MiB sparse file does not read it
//!   into memory (WALs were read whole: 2 GB of memory for a 2 GiB WAL).

mod common;

use std::path::Path;
use std::process::Command;

use common::child_test_command;
use siftdb::{CompactionStyle, Db, Options};

/// Descriptors a running `Db` may hold at once, beyond those of the
/// process (DESIGN.md 9).
const RUNNING_DB_DESCRIPTORS: usize = 12;

/// Runs `test` of this binary as a child under `ulimit -n limit` with `env`
/// set, and returns its stdout; panics if it fails.
fn run_child(test: &str, limit: u32, env: &[(&str, &Path)]) -> String {
    let inner = child_test_command(test);
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!("ulimit -n {limit} && exec \"$@\""))
        .arg("sh")
        .arg(inner.get_program())
        .args(inner.get_args());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "child {test} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The value of the `name=` line the child printed.
fn reported(stdout: &str, name: &str) -> u64 {
    let prefix = format!("{name}=");
    stdout
        .lines()
        .find_map(|l| l.split_once(&prefix).map(|(_, v)| v))
        .unwrap_or_else(|| panic!("child printed no {name}:\n{stdout}"))
        .trim()
        .parse()
        .unwrap()
}

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

const TABLES: u64 = 600;

fn many_tables_options() -> Options {
    let mut o = Options::default();
    o.compaction_style = CompactionStyle::None;
    o.write_buffer_size = 1 << 10;
    o
}

/// Child of `a_database_with_more_tables_than_the_descriptor_limit_opens`.
#[test]
fn many_tables_child() {
    let Some(dir) = std::env::var_os("SIFTDB_MANY_TABLES_CHILD") else {
        return;
    };
    for read_only in [true, false] {
        let db = if read_only {
            Db::open_read_only(&dir, many_tables_options())
        } else {
            Db::open_with(&dir, many_tables_options())
        }
        .unwrap_or_else(|e| panic!("open (read-only: {read_only}): {e}"));
        assert_eq!(db.live_files().len() as u64, TABLES);
        for i in [0, TABLES / 2, TABLES - 1] {
            assert_eq!(
                db.get(format!("key{i:05}")).unwrap().map(Vec::from),
                Some(format!("value {i}").into_bytes())
            );
        }
        assert_eq!(db.iter().count() as u64, TABLES);
        if !read_only {
            db.put("after", "reopen").unwrap();
            db.flush().unwrap();
        }
    }
    println!("opened");
}

#[test]
fn a_database_with_more_tables_than_the_descriptor_limit_opens() {
    let dir = common::scratch_dir();
    {
        let db = Db::open_with(dir.path(), many_tables_options()).unwrap();
        for i in 0..TABLES {
            db.put(format!("key{i:05}"), format!("value {i}")).unwrap();
            db.flush().unwrap();
        }
        assert_eq!(db.live_files().len() as u64, TABLES);
    }
    let out = run_child(
        "many_tables_child",
        256,
        &[("SIFTDB_MANY_TABLES_CHILD", dir.path())],
    );
    assert!(out.contains("opened"), "{out}");
}

/// Child of `a_running_database_holds_few_descriptors`: runs writes,
/// flushes, background and manual compactions and reads while a thread
/// samples how many descriptors the process holds, and prints the most it
/// saw beyond those held before the open.
#[test]
fn descriptor_count_child() {
    let Some(dir) = std::env::var_os("SIFTDB_DESCRIPTORS_CHILD") else {
        return;
    };
    let before = open_descriptors();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut most = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // The listing itself holds one descriptor.
                most = most.max(open_descriptors() - 1);
            }
            most
        })
    };
    let mut o = Options::default();
    o.write_buffer_size = 4 << 10;
    o.target_file_size = 4 << 10;
    o.max_bytes_for_level_base = 16 << 10;
    o.level0_compaction_trigger = 2;
    let db = Db::open_with(&dir, o).unwrap();
    for i in 0..20_000u64 {
        db.put(format!("key{:05}", i % 3000), format!("value {i:030}"))
            .unwrap();
        if i % 5000 == 4999 {
            db.compact_range("key00500"..="key01500").unwrap();
            assert!(db.get("key00007").unwrap().is_some());
        }
    }
    db.compact().unwrap();
    let tables = db.live_files().len();
    let s = db.stats();
    drop(db);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let most = sampler.join().unwrap();
    println!("flushes={}", s.flushes);
    println!("compactions={}", s.compactions);
    println!("tables={tables}");
    println!("extra_descriptors={}", most.saturating_sub(before));
}

#[test]
fn a_running_database_holds_few_descriptors() {
    let dir = common::scratch_dir();
    // The limit leaves the process its own few descriptors plus the bound.
    let out = run_child(
        "descriptor_count_child",
        64,
        &[("SIFTDB_DESCRIPTORS_CHILD", dir.path())],
    );
    let extra = reported(&out, "extra_descriptors") as usize;
    println!("{out}");
    assert!(reported(&out, "flushes") > 50 && reported(&out, "compactions") > 10);
    assert!(
        extra <= RUNNING_DB_DESCRIPTORS,
        "the database held {extra} descriptors at once, more than {RUNNING_DB_DESCRIPTORS}"
    );
}

/// The process's peak resident memory in bytes (`VmHWM`).
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kb << 10
}

const SPARSE_WAL_BYTES: u64 = 256 << 20;

/// Child of `a_huge_sparse_wal_is_not_read_into_memory`.
#[test]
fn sparse_wal_child() {
    let Some(dir) = std::env::var_os("SIFTDB_SPARSE_WAL_CHILD") else {
        return;
    };
    let before = peak_rss();
    for read_only in [true, false] {
        let db = if read_only {
            Db::open_read_only(&dir, Options::default())
        } else {
            Db::open(&dir)
        }
        .unwrap();
        assert_eq!(db.get("in-wal").unwrap().as_deref(), Some(&b"yes"[..]));
        // Read to its end: a zero-filled tail, where the log ends, with
        // no torn record (nothing dropped).
        let r = db.recovery();
        let w = &r.wals[0];
        assert_eq!(
            (w.size, w.torn_tail.clone()),
            (SPARSE_WAL_BYTES, None),
            "{r:?}"
        );
        assert!(w.end < 1 << 20, "{r:?}");
        assert_eq!(r.dropped_bytes(), 0);
    }
    println!("peak_growth={}", peak_rss().saturating_sub(before));
}

#[test]
fn a_huge_sparse_wal_is_not_read_into_memory() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path()).unwrap();
        db.put("in-wal", "yes").unwrap();
    }
    let wal = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "log"))
        .unwrap();
    // A zero-filled tail, as a crash after the file system extended the
    // file can leave: 256 MiB that read as the end, with no block on disk.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&wal)
        .unwrap()
        .set_len(SPARSE_WAL_BYTES)
        .unwrap();
    let out = run_child(
        "sparse_wal_child",
        1024,
        &[("SIFTDB_SPARSE_WAL_CHILD", dir.path())],
    );
    let growth = reported(&out, "peak_growth");
    println!("peak resident memory grew by {growth} bytes");
    assert!(
        growth < 64 << 20,
        "opening grew the peak resident memory by {growth} bytes"
    );
    // The writable open cut the zero-filled tail off.
    assert!(std::fs::metadata(&wal).unwrap().len() < 1 << 20);
}
