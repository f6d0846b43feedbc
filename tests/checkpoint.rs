//! `Db::checkpoint` (DESIGN.md 9.1, RELIABILITY.md campaign 7): a
//! checkpoint opens as an ordinary database holding exactly the writes up
//! to its sequence number, under a random model, under concurrent writers
//! and compactions held inside its window by sync points, after an I/O
//! fault at each of its file operations, and after a real SIGKILL of the
//! process making it (the target is then absent or complete, and the next
//! attempt succeeds).

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::campaign::tiny_options;
use common::fault_fs::{Fault, FaultFs, OpKind, Persist, EIO, ENOSPC};
use common::pause::PauseOnce;
use common::{child_test_command, scratch_dir, Rng};
use siftdb::sync_point::{SyncPoint, SyncPoints};
use siftdb::{CompactionStyle, Db, Error, Options, SequenceNumber};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Every live pair of `db`, in key order.
fn contents(db: &Db) -> Model {
    db.iter().map(common::owned).collect()
}

/// `<target>.checkpoint-tmp`.
fn temp_of(target: &Path) -> PathBuf {
    siftdb::checkpoint_temp_dir(target).unwrap()
}

/// Asserts that `kvctl verify`'s checks find nothing wrong in `dir`.
fn assert_verifies(dir: &Path) {
    let report = siftdb::inspect::verify_db(dir, true, &mut |_, _| {}).unwrap();
    assert!(
        report.is_clean(),
        "{}: {:?}",
        dir.display(),
        report.problems
    );
}

/// Opens the checkpoint at `cp`, checks that it holds exactly `expected`
/// as of `seq`, that it verifies and is writable (a put survives a
/// reopen); returns its contents.
fn check_checkpoint(cp: &Path, options: &Options, expected: &Model, seq: SequenceNumber) {
    let db = Db::open_with(cp, options.clone()).unwrap();
    assert_eq!(db.last_sequence(), seq, "{}", cp.display());
    let found = contents(&db);
    assert_eq!(found.len(), expected.len(), "{}", cp.display());
    assert!(found == *expected, "{}: contents differ", cp.display());
    // A point lookup of every key too: filters and tables, not just scans.
    for (k, v) in expected {
        assert_eq!(db.get(k).unwrap().map(Vec::from).as_ref(), Some(v));
    }
    db.close().unwrap();
    assert_verifies(cp);
    let db = Db::open_with(cp, options.clone()).unwrap();
    db.put("written-to-the-checkpoint", "yes").unwrap();
    db.close().unwrap();
    let db = Db::open_with(cp, options.clone()).unwrap();
    assert_eq!(
        db.get("written-to-the-checkpoint").unwrap().as_deref(),
        Some(&b"yes"[..])
    );
}

/// Random puts, deletes, flushes and compactions with a BTreeMap model; a
/// checkpoint every round, then more writes; each checkpoint opens with
/// exactly the model as of its call.
#[test]
fn checkpoints_hold_exactly_the_model_at_their_call() {
    for seed in 1..=3u64 {
        let base = scratch_dir();
        let options = tiny_options(false);
        let db = Db::open_with(base.path().join("db"), options.clone()).unwrap();
        let mut rng = Rng(seed);
        let mut model = Model::new();
        let mut taken = Vec::new();
        for round in 0..4 {
            for _ in 0..400 {
                let key = format!("key{:03}", rng.below(300)).into_bytes();
                match rng.below(100) {
                    0..=59 => {
                        let v = format!("s{seed}r{round}v{}", rng.below(1 << 20)).into_bytes();
                        db.put(&key, &v).unwrap();
                        model.insert(key, v);
                    }
                    60..=94 => {
                        db.delete(&key).unwrap();
                        model.remove(&key);
                    }
                    95..=97 => db.flush().unwrap(),
                    _ => db.compact_range("key000"..="key150").unwrap(),
                }
            }
            let cp = base.path().join(format!("cp{round}"));
            let report = db.checkpoint(&cp).unwrap();
            assert_eq!(report.sequence, db.last_sequence());
            assert_eq!(report.path, cp);
            // tmpfs and ext4 link: nothing is copied but the WALs.
            assert_eq!(report.tables_copied, 0);
            assert_eq!(report.bytes_copied, report.wal_bytes);
            let tables = common::files_with_ext(&cp, "sst");
            assert_eq!(tables.len() as u64, report.tables_linked);
            assert_eq!(
                common::files_with_ext(&cp, "log").len() as u64,
                report.wal_files
            );
            assert!(!temp_of(&cp).exists());
            taken.push((cp, model.clone(), report.sequence));
            // Writes after the checkpoint must not reach it.
            for i in 0..50 {
                let (k, v) = (format!("key{:03}", rng.below(300)), format!("after{i}"));
                db.put(&k, &v).unwrap();
                model.insert(k.into_bytes(), v.into_bytes());
            }
        }
        for (cp, expected, seq) in &taken {
            check_checkpoint(cp, &options, expected, *seq);
        }
    }
}

/// A checkpoint of an empty database, and of one whose writes are all in
/// the memtable (only its WAL is copied).
#[test]
fn empty_and_memtable_only_databases() {
    let base = scratch_dir();
    let db = Db::open(base.path().join("db")).unwrap();
    let r = db.checkpoint(base.path().join("empty")).unwrap();
    assert_eq!(
        (r.sequence, r.tables_linked, r.wal_files),
        (SequenceNumber(0), 0, 1)
    );
    check_checkpoint(
        &base.path().join("empty"),
        &Options::default(),
        &Model::new(),
        SequenceNumber(0),
    );
    db.put("a", "1").unwrap();
    let r = db.checkpoint(base.path().join("mem")).unwrap();
    assert_eq!(r.table_bytes, 0);
    assert!(r.wal_bytes > 0);
    let expected = Model::from([(b"a".to_vec(), b"1".to_vec())]);
    check_checkpoint(
        &base.path().join("mem"),
        &Options::default(),
        &expected,
        r.sequence,
    );
}

/// Keyspaces (DESIGN.md 9.1, RocksDB #7789): "a" writes in
/// WAL w0; "b" is flushed twice, rotating to w1 and w2, while "a" writes
/// again in w1. No memtable names w1 ("a"'s started in w0, "b"'s and the
/// default's in w2), yet it holds "a"'s second write: the checkpoint
/// copies every WAL from the oldest memtable's on, and its manifest
/// carries each keyspace's log number, so it opens with both of "a"'s
/// writes and every other keyspace whole.
#[test]
fn a_wal_no_memtable_names_is_copied_with_every_keyspace() {
    let base = scratch_dir();
    let (src, cp) = (base.path().join("db"), base.path().join("cp"));
    let db = Db::open(&src).unwrap();
    let (a, b) = (db.keyspace("a").unwrap(), db.keyspace("b").unwrap());
    db.put("d", "default").unwrap();
    db.flush().unwrap();
    a.put("k1", "in w0").unwrap();
    b.put("x", "b1").unwrap();
    b.flush().unwrap();
    a.put("k2", "in w1").unwrap();
    b.put("y", "b2").unwrap();
    b.flush().unwrap();
    let wals = common::files_with_ext(&src, "log");
    assert_eq!(wals.len(), 3, "{wals:?}");
    let report = db.checkpoint(&cp).unwrap();
    assert_eq!(report.wal_files, 3);
    assert_eq!(report.tables_linked + report.tables_copied, 3);
    db.put("d", "after").unwrap();
    a.put("k3", "after").unwrap();
    drop((a, b, db));

    let copy = Db::open(&cp).unwrap();
    assert_eq!(copy.keyspaces(), ["default", "a", "b"]);
    assert_eq!(copy.last_sequence(), report.sequence);
    let read = |ks: &str, k: &str| {
        let ks = copy.existing_keyspace(ks).unwrap();
        ks.get(k)
            .unwrap()
            .map(|v| String::from_utf8(v.to_vec()).unwrap())
    };
    assert_eq!(read("a", "k1").as_deref(), Some("in w0"));
    assert_eq!(read("a", "k2").as_deref(), Some("in w1"));
    assert_eq!(read("a", "k3"), None);
    assert_eq!(read("b", "x").as_deref(), Some("b1"));
    assert_eq!(read("b", "y").as_deref(), Some("b2"));
    assert_eq!(read("default", "d").as_deref(), Some("default"));
    assert_eq!(copy.existing_keyspace("a").unwrap().len().unwrap(), 2);
    drop(copy);
    assert_verifies(&cp);
}

/// Writer threads and a compactor keep going while the checkpoint is held
/// after fixing its point and again before its rename. Each writer puts
/// its own numbered keys in order, so the writes up to any sequence
/// number are a prefix per writer; every put is one sequence number, so
/// the checkpoint must hold exactly `sequence` keys, and every key
/// acknowledged before the call.
#[test]
fn concurrent_writes_and_compactions_do_not_reach_the_checkpoint() {
    const WRITERS: usize = 3;
    let base = scratch_dir();
    let after_point = PauseOnce::new(SyncPoint::CheckpointAfterPoint);
    let before_rename = PauseOnce::new(SyncPoint::CheckpointBeforeRename);
    let mut options = tiny_options(false);
    options.write_buffer_size = 4 << 10;
    let (a, b) = (after_point.clone(), before_rename.clone());
    options.sync_points = Some(SyncPoints::new(move |p| {
        a.reached(p);
        b.reached(p);
    }));
    let db = Arc::new(Db::open_with(base.path().join("db"), options.clone()).unwrap());
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    let compactions = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let key = |w: usize, i: u64| format!("w{w}-{i:07}").into_bytes();
    let mut threads = Vec::new();
    for w in 0..WRITERS {
        let (db, acked, stop) = (Arc::clone(&db), Arc::clone(&acked), Arc::clone(&stop));
        threads.push(std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                db.put(key(w, i), format!("value of {w} {i}")).unwrap();
                i += 1;
                acked[w].store(i, Ordering::SeqCst);
            }
        }));
    }
    {
        let (db, compactions, stop) =
            (Arc::clone(&db), Arc::clone(&compactions), Arc::clone(&stop));
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                db.compact_range("w0"..="w9").unwrap();
                compactions.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    let total = |acked: &[AtomicU64]| acked.iter().map(|a| a.load(Ordering::SeqCst)).sum::<u64>();
    let wait_for = |what: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !what() {
            assert!(std::time::Instant::now() < deadline, "timed out");
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    wait_for(&|| total(&acked) >= 2000 && compactions.load(Ordering::SeqCst) >= 2);
    after_point.arm();
    before_rename.arm();
    let acked_before: Vec<u64> = acked.iter().map(|a| a.load(Ordering::SeqCst)).collect();
    let cp = base.path().join("cp");
    let maker = {
        let (db, cp) = (Arc::clone(&db), cp.clone());
        std::thread::spawn(move || db.checkpoint(&cp).unwrap())
    };
    // Held with the point fixed: writes and compactions go on (and delete
    // tables the checkpoint has yet to link).
    for pause in [&after_point, &before_rename] {
        pause.wait_until_held();
        let (writes, done) = (total(&acked), compactions.load(Ordering::SeqCst));
        wait_for(&|| {
            total(&acked) >= writes + 1000 && compactions.load(Ordering::SeqCst) >= done + 2
        });
        pause.release();
    }
    let report = maker.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    assert!(db.last_sequence().0 >= report.sequence.0 + 2000);

    let mut plain = tiny_options(false);
    plain.write_buffer_size = 4 << 10;
    let copy = Db::open_with(&cp, plain).unwrap();
    assert_eq!(copy.last_sequence(), report.sequence);
    let found = contents(&copy);
    assert_eq!(found.len() as u64, report.sequence.0);
    for (w, &before) in acked_before.iter().enumerate() {
        let n = found
            .keys()
            .filter(|k| k.starts_with(format!("w{w}-").as_bytes()))
            .count() as u64;
        assert!(
            n >= before,
            "writer {w}: {n} keys, {before} acknowledged before the call"
        );
        for i in 0..n {
            assert_eq!(
                found.get(&key(w, i)),
                Some(&format!("value of {w} {i}").into_bytes()),
                "writer {w} key {i} of {n}"
            );
        }
    }
    drop(copy);
    assert_verifies(&cp);
    // The source is whole too.
    let source = contents(&db);
    assert_eq!(source.len() as u64, db.last_sequence().0);
}

/// A table the checkpoint pinned, moved to the next level (a trivial
/// move: the same file) and then compacted away there while the
/// checkpoint is held: the file must stay on disk until the checkpoint
/// links it. (The moved file was a new `TableFile`, and its compaction
/// deleted the file under the older version that still listed it:
/// `NotFound` on the link, found by the concurrency test above.)
#[test]
fn a_table_moved_and_compacted_while_held_is_still_linked() {
    let base = scratch_dir();
    let pause = PauseOnce::new(SyncPoint::CheckpointAfterPoint);
    let mut options = Options::default();
    options.compaction_style = CompactionStyle::None;
    options.sync_points = Some(pause.sync_points());
    let db = Arc::new(Db::open_with(base.path().join("db"), options).unwrap());
    db.put("a", "1").unwrap();
    db.put("b", "2").unwrap();
    db.delete("b").unwrap();
    db.flush().unwrap();
    assert_eq!(db.live_files()[0].level, 0);
    let pinned = db.live_files()[0].path.clone();
    pause.arm();
    let cp = base.path().join("cp");
    let maker = {
        let (db, cp) = (Arc::clone(&db), cp.clone());
        std::thread::spawn(move || db.checkpoint(&cp))
    };
    pause.wait_until_held();
    // Level 0 into 1 moves the file; level 1 into itself rewrites it (it
    // holds a tombstone) and drops the moved file.
    db.compact().unwrap();
    assert_ne!(db.live_files()[0].path, pinned);
    assert!(pinned.exists(), "the pinned table was deleted");
    pause.release();
    let report = maker.join().unwrap().unwrap();
    assert_eq!(report.tables_linked, 1);
    assert!(!pinned.exists(), "the table outlived the checkpoint's pin");
    let expected = Model::from([(b"a".to_vec(), b"1".to_vec())]);
    check_checkpoint(&cp, &Options::default(), &expected, report.sequence);
}

#[test]
fn refusals_are_clear_and_change_nothing() {
    let base = scratch_dir();
    let path = base.path().join("db");
    let db = Db::open(&path).unwrap();
    db.put("k", "v").unwrap();

    // An existing target, empty directory or file.
    let empty = base.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let file = base.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    for target in [&empty, &file, &path] {
        let e = db.checkpoint(target).unwrap_err();
        assert!(matches!(&e, Error::TargetExists(p) if p == target), "{e}");
        assert!(e.to_string().contains("already exists"), "{e}");
        assert!(!temp_of(target).exists());
    }
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);

    // Inside the database directory.
    let inside = path.join("cp");
    let e = db.checkpoint(&inside).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(!inside.exists() && !temp_of(&inside).exists());
    // Deeper: refused before any directory is made, naming the target (a
    // new-user trial was told of its parent, and `a/b` was left behind).
    let deep = path.join("a").join("b").join("cp");
    let e = db.checkpoint(&deep).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert!(
        e.to_string().contains(&format!("{}", deep.display())),
        "{e}"
    );
    assert!(!path.join("a").exists());

    // No name.
    assert!(matches!(db.checkpoint("/"), Err(Error::InvalidArgument(_))));

    // From inside an update closure (it would wait for itself).
    let mut inner = None;
    db.update("k", |v| {
        inner = Some(db.checkpoint(base.path().join("in-update")));
        v.map(<[u8]>::to_vec)
    })
    .unwrap();
    assert!(matches!(inner, Some(Err(Error::InvalidArgument(_)))));
    assert!(!base.path().join("in-update").exists());

    // A missing parent is created.
    let deep = base.path().join("a/b/cp");
    db.checkpoint(&deep).unwrap();
    assert_eq!(
        Db::open(&deep).unwrap().get("k").unwrap().as_deref(),
        Some(&b"v"[..])
    );
    db.close().unwrap();

    // A read-only handle has no WAL of its own to copy: refused.
    let ro = Db::open_read_only(&path, Options::default()).unwrap();
    let target = base.path().join("from-read-only");
    assert!(matches!(ro.checkpoint(&target), Err(Error::ReadOnly)));
    assert!(!target.exists() && !temp_of(&target).exists());
}

/// Options for the fault sweep: no background work (so that the op
/// numbers of a checkpoint are the same every time), and two levels of
/// tables plus a memtable.
fn quiet_options(fs: &FaultFs) -> Options {
    let mut o = Options::default();
    o.compaction_style = CompactionStyle::None;
    o.file_system = fs.arc();
    o
}

/// An `EIO` at each file operation of a checkpoint in turn: the call
/// fails, no temporary directory is left, the target is absent (or, for a
/// failed sync of the parent after the rename, a complete checkpoint),
/// and the source goes on working. A dead disk (every operation failing)
/// leaves the temporary directory, which the next attempt removes.
#[test]
fn an_io_fault_at_any_step_leaves_no_partial_checkpoint() {
    let base = scratch_dir();
    let fs = FaultFs::new();
    let options = quiet_options(&fs);
    let db = Db::open_with(base.path().join("db"), options.clone()).unwrap();
    let mut model = Model::new();
    for t in 0..3 {
        for i in 0..50 {
            let (k, v) = (format!("k{i:03}"), format!("t{t}"));
            db.put(&k, &v).unwrap();
            model.insert(k.into_bytes(), v.into_bytes());
        }
        db.flush().unwrap();
    }
    // Reopened, so that no background work of the flushes (a closed
    // WAL's sync, an obsolete WAL's removal) shifts the op numbers below.
    db.close().unwrap();
    let db = Db::open_with(base.path().join("db"), options.clone()).unwrap();
    db.put("k000", "in the memtable").unwrap();
    model.insert(b"k000".to_vec(), b"in the memtable".to_vec());

    let start = fs.count();
    let clean = db.checkpoint(base.path().join("clean")).unwrap();
    let ops: Vec<_> = fs.ops()[start as usize..].to_vec();
    let kinds: Vec<OpKind> = ops.iter().map(|o| o.kind).collect();
    for k in [
        OpKind::CreateDir,
        OpKind::Link,
        OpKind::Create,
        OpKind::Write,
        OpKind::Sync,
        OpKind::Rename,
        OpKind::SyncDir,
    ] {
        assert!(kinds.contains(&k), "{k:?} not among {kinds:?}");
    }
    assert_eq!(clean.tables_linked, 3);
    let mut plain = Options::default();
    plain.compaction_style = CompactionStyle::None;

    for (n, op) in ops.iter().enumerate() {
        let target = base.path().join(format!("cp{n}"));
        fs.set_fault(Fault {
            at: fs.count() + n as u64,
            errno: if n % 2 == 0 { EIO } else { ENOSPC },
            persist: Persist::Once,
            torn_write: true,
        });
        let seq = db.last_sequence();
        let r = db.checkpoint(&target);
        fs.heal();
        let e = r.expect_err(&format!("a fault at {op} went unnoticed"));
        assert!(matches!(e, Error::Io { .. }), "{op}: {e}");
        assert!(
            !temp_of(&target).exists(),
            "{op}: the temporary directory is left"
        );
        if target.exists() {
            // Only the parent's sync comes after the rename.
            assert_eq!(n, ops.len() - 1, "{op}: a target after a fault");
            assert_eq!(op.kind, OpKind::SyncDir);
            check_checkpoint(&target, &plain, &model, seq);
        }
        // The source is untouched and writable.
        db.put("after", format!("{n}")).unwrap();
        assert_eq!(
            db.get("after").unwrap().map(Vec::from),
            Some(format!("{n}").into_bytes())
        );
        db.delete("after").unwrap();
    }

    // A dead disk from the fourth operation on: the cleanup fails too.
    let target = base.path().join("dead");
    fs.set_fault(Fault {
        at: fs.count() + 3,
        errno: EIO,
        persist: Persist::All,
        torn_write: false,
    });
    assert!(db.checkpoint(&target).is_err());
    fs.heal();
    assert!(!target.exists());
    assert!(temp_of(&target).exists(), "the cleanup was meant to fail");
    let report = db.checkpoint(&target).unwrap();
    assert!(report.stale_temp_removed);
    assert!(!temp_of(&target).exists());
    check_checkpoint(&target, &plain, &model, report.sequence);
    db.close().unwrap();
}

/// Where the file system cannot link (`EXDEV`: the target on another
/// file system; `EPERM`: one without links), the table is copied, synced,
/// and the checkpoint is the same.
#[test]
fn a_table_that_cannot_be_linked_is_copied() {
    const EXDEV: i32 = 18;
    const EPERM: i32 = 1;
    for errno in [EXDEV, EPERM] {
        let base = scratch_dir();
        let fs = FaultFs::new();
        let options = quiet_options(&fs);
        let db = Db::open_with(base.path().join("db"), options).unwrap();
        let mut model = Model::new();
        for t in 0..3u32 {
            for i in 0..200u32 {
                let (k, v) = (format!("k{i:04}"), format!("t{t}-{i}"));
                db.put(&k, &v).unwrap();
                model.insert(k.into_bytes(), v.into_bytes());
            }
            db.flush().unwrap();
        }
        fs.fail_targeted(common::fault_fs::Targeted {
            kind: OpKind::Link,
            file_kind: "sst",
            errno,
            skip: 1,
            stall: Duration::ZERO,
        });
        let cp = base.path().join("cp");
        let r = db.checkpoint(&cp).unwrap();
        assert_eq!((r.tables_linked, r.tables_copied), (2, 1), "errno {errno}");
        let all_tables: u64 = db.live_files().iter().map(|f| f.file_size).sum();
        assert_eq!(r.table_bytes, all_tables);
        assert!(r.bytes_copied > r.wal_bytes && r.bytes_copied < r.wal_bytes + all_tables);
        // One table of its own (one name), two shared with the source.
        use std::os::unix::fs::MetadataExt;
        let mut names: Vec<u64> = common::files_with_ext(&cp, "sst")
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().nlink())
            .collect();
        names.sort_unstable();
        assert_eq!(names, [1, 2, 2]);
        let mut plain = Options::default();
        plain.compaction_style = CompactionStyle::None;
        check_checkpoint(&cp, &plain, &model, r.sequence);
    }
}

const CHILD_ENV: &str = "SIFTDB_CHECKPOINT_CHILD";
const MARK: &str = "SIFTDB-CHECKPOINT";
/// Keys the parent writes before the first child.
const BASE_KEYS: u64 = 3000;
/// Keys each child writes before its checkpoint.
const CHILD_KEYS: u64 = 500;

fn crash_key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn crash_value(i: u64) -> Vec<u8> {
    let mut v = format!("value{i}-").into_bytes();
    v.resize(100, b'x');
    v
}

fn crash_options() -> Options {
    let mut o = Options::default();
    o.write_buffer_size = 256 << 10;
    o
}

/// The child: opens `<dir>/db`, writes keys `from..from + CHILD_KEYS`,
/// says so, then makes a checkpoint into `<dir>/<target>`, pausing for a
/// minute at the sync point named `SIFTDB_CHECKPOINT_HOLD` (if any) after
/// saying it got there. Without the environment variable it does nothing.
#[test]
fn checkpoint_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let from: u64 = std::env::var("SIFTDB_CHECKPOINT_FROM")
        .unwrap()
        .parse()
        .unwrap();
    let target = dir.join(std::env::var("SIFTDB_CHECKPOINT_TARGET").unwrap());
    let hold = std::env::var("SIFTDB_CHECKPOINT_HOLD").unwrap_or_default();
    let mut o = crash_options();
    o.sync_points = Some(SyncPoints::new(move |p| {
        if format!("{p:?}") == hold {
            println!("{MARK} held");
            std::thread::sleep(Duration::from_secs(60));
        }
    }));
    let db = Db::open_with(dir.join("db"), o).unwrap();
    for i in from..from + CHILD_KEYS {
        db.put(crash_key(i), crash_value(i)).unwrap();
    }
    println!("{MARK} written");
    db.checkpoint(&target).unwrap();
    println!("{MARK} done");
    std::thread::sleep(Duration::from_secs(60));
}

/// Kills a child (SIGKILL) held at each sync point of its checkpoint, and
/// at random moments of unheld ones (`SIFTDB_CHECKPOINT_SEED` sets them); after each kill, the target is
/// absent or a complete checkpoint holding every key written, and a new
/// checkpoint into it (the temporary directory left over by the kill
/// removed) succeeds.
#[test]
fn a_killed_checkpoint_leaves_nothing_or_a_whole_one() {
    let base = scratch_dir();
    {
        let db = Db::open_with(base.path().join("db"), crash_options()).unwrap();
        for i in 0..BASE_KEYS {
            db.put(crash_key(i), crash_value(i)).unwrap();
            if i % 1000 == 999 {
                db.flush().unwrap();
            }
        }
    }
    let seed = common::env_u64("SIFTDB_CHECKPOINT_SEED", 7);
    eprintln!("SIFTDB_CHECKPOINT_SEED={seed}");
    let mut rng = Rng(seed);
    let holds = [
        "CheckpointAfterPoint",
        "CheckpointBeforeRename",
        "",
        "",
        "",
        "",
    ];
    let mut written = BASE_KEYS;
    for (case, hold) in holds.iter().enumerate() {
        let target = format!("cp{case}");
        let mut child = child_test_command("checkpoint_child")
            .env(CHILD_ENV, base.path())
            .env("SIFTDB_CHECKPOINT_FROM", written.to_string())
            .env("SIFTDB_CHECKPOINT_TARGET", &target)
            .env("SIFTDB_CHECKPOINT_HOLD", hold)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut next_mark = || loop {
            let line = lines.next().expect("the child ended").unwrap();
            // The harness's `test checkpoint_child ... ` may precede it.
            if let Some(at) = line.find(MARK) {
                return line[at + MARK.len()..].trim().to_string();
            }
        };
        assert_eq!(next_mark(), "written");
        if hold.is_empty() {
            // Somewhere in the checkpoint, or just after it.
            std::thread::sleep(Duration::from_micros(rng.below(1500)));
        } else {
            assert_eq!(next_mark(), "held");
        }
        child.kill().unwrap();
        child.wait().unwrap();
        written += CHILD_KEYS;

        let target = base.path().join(&target);
        let expected: Model = (0..written)
            .map(|i| (crash_key(i), crash_value(i)))
            .collect();
        let temp_left = temp_of(&target).exists();
        eprintln!(
            "case {case} (hold {hold:?}): target {}, temporary directory {}",
            if target.exists() {
                "complete"
            } else {
                "absent"
            },
            if temp_left { "left" } else { "absent" }
        );
        if target.exists() {
            assert!(hold.is_empty(), "a checkpoint held at {hold} was renamed");
            let db = Db::open_with(&target, crash_options()).unwrap();
            assert!(
                contents(&db) == expected,
                "case {case}: the checkpoint differs"
            );
            drop(db);
            assert_verifies(&target);
            continue;
        }
        if !hold.is_empty() {
            assert!(
                temp_of(&target).exists(),
                "case {case}: no temporary directory"
            );
        }
        // The source opens (the kill let its lock go) and a new attempt
        // succeeds, removing what the killed one left.
        let db = Db::open_with(base.path().join("db"), crash_options()).unwrap();
        let had_temp = temp_of(&target).exists();
        let report = db.checkpoint(&target).unwrap();
        assert_eq!(report.stale_temp_removed, had_temp);
        assert!(!temp_of(&target).exists());
        drop(db);
        check_checkpoint(&target, &crash_options(), &expected, report.sequence);
    }
}
