//! Dropping a keyspace (DESIGN.md 2): the drop frees its tables and the
//! WALs it pinned, lets iterators opened before it read on, refuses writes
//! naming it (nothing logged), wins over a flush or compaction of it in
//! flight (their outputs deleted, nothing logged), and reopens without it.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::pause::PauseOnce;
use siftdb::sync_point::{SyncPoint, SyncPoints};
use siftdb::{Db, Error, Options, WriteBatch};

fn tiny_options() -> Options {
    let mut o = Options::default();
    o.write_buffer_size = 4 << 10;
    o.block_size = 512;
    // No automatic compaction of the few level-0 tables the tests make.
    o.level0_compaction_trigger = 8;
    o.level0_slowdown_trigger = 16;
    o.level0_stop_trigger = 24;
    o
}

fn key(i: u64) -> String {
    format!("key{i:06}")
}

fn value(i: u64) -> Vec<u8> {
    let mut v = format!("{i:06}").into_bytes();
    v.resize(64, b'.');
    v
}

fn files(dir: &Path, ext: &str) -> BTreeSet<PathBuf> {
    common::files_with_ext(dir, ext).into_iter().collect()
}

fn manifest_bytes(dir: &Path) -> Vec<u8> {
    let mut m = common::files_where(dir, |n| n.starts_with("MANIFEST-"));
    assert_eq!(m.len(), 1, "{m:?}");
    std::fs::read(m.remove(0)).unwrap()
}

#[test]
fn drop_frees_every_table_and_the_wals_it_pinned() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = tiny_options();
    o.max_total_wal_size = 0; // the cold keyspace pins every WAL
    let db = Db::open_with(dir.path(), o.clone()).unwrap();
    let cold = db.keyspace("cold").unwrap();
    for i in 0..200 {
        cold.put(key(i), value(i)).unwrap();
    }
    cold.flush().unwrap();
    cold.put("in memory", "v").unwrap();
    let tables: Vec<PathBuf> = cold.live_files().into_iter().map(|f| f.path).collect();
    assert!(tables.len() >= 2, "{tables:?}");
    for i in 0..1000 {
        db.put(key(i), value(i)).unwrap();
    }
    db.wait_for_compactions().unwrap();
    let pinned = files(dir.path(), "log");
    assert!(pinned.len() > 5, "{pinned:?}");

    db.drop_keyspace("cold").unwrap();
    assert!(tables.iter().all(|t| !t.exists()), "tables left");
    let wals = files(dir.path(), "log");
    assert!(wals.len() <= 2, "{wals:?}");
    assert!(matches!(cold.get("in memory"), Err(Error::NoSuchKeyspace(n)) if n == "cold"));
    assert!(matches!(cold.put("k", "v"), Err(Error::NoSuchKeyspace(n)) if n == "cold"));
    assert!(matches!(cold.flush(), Err(Error::NoSuchKeyspace(_))));
    assert_eq!(cold.iter().count(), 0);
    assert!(matches!(
        db.existing_keyspace("cold"),
        Err(Error::NoSuchKeyspace(_))
    ));
    assert_eq!(db.keyspaces(), ["default"]);
    // Refusals.
    let e = db.drop_keyspace("cold").unwrap_err();
    assert!(matches!(e, Error::NoSuchKeyspace(_)), "{e}");
    let e = db.drop_keyspace("default").unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let r = db.update("k", |_| {
        let e = db.drop_keyspace("other").unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        None
    });
    r.unwrap();

    // A new keyspace of the same name is a new, empty one.
    let again = db.keyspace("cold").unwrap();
    assert_ne!(again.id(), cold.id());
    assert!(again.is_empty().unwrap());
    again.put("new", "1").unwrap();
    drop((cold, again));
    db.close().unwrap();

    let db = Db::open_with(dir.path(), o).unwrap();
    assert_eq!(db.keyspaces(), ["default", "cold"]);
    let cold = db.existing_keyspace("cold").unwrap();
    assert_eq!(cold.len().unwrap(), 1);
    for i in 0..1000 {
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(&value(i)[..]));
    }
    assert!(tables.iter().all(|t| !t.exists()));
}

/// Writes of a keyspace dropped since sit in the WAL a clean close keeps:
/// the reopen skips them, and counts them.
#[test]
fn ops_of_a_dropped_keyspace_are_skipped_at_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let gone = db.keyspace("gone").unwrap();
    let kept = db.keyspace("kept").unwrap();
    let mut b = WriteBatch::new();
    b.put_in(&gone, "a", "1").unwrap();
    b.put_in(&gone, "b", "2").unwrap();
    b.put_in(&kept, "a", "3").unwrap();
    db.write(b).unwrap();
    db.put("d", "4").unwrap();
    db.drop_keyspace("gone").unwrap();
    drop((gone, kept));
    db.close().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let w = &db.recovery().wals;
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!((w[0].entries, w[0].skipped_entries), (4, 2));
    let kept = db.existing_keyspace("kept").unwrap();
    assert_eq!(kept.get("a").unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(db.get("d").unwrap().as_deref(), Some(&b"4"[..]));
    assert_eq!(db.keyspaces(), ["default", "kept"]);
}

#[test]
fn a_held_iterator_keeps_reading_a_dropped_keyspace() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open_with(dir.path(), tiny_options()).unwrap();
    let ks = db.keyspace("ks").unwrap();
    for i in 0..100 {
        ks.put(key(i), value(i)).unwrap();
    }
    ks.flush().unwrap();
    ks.put(key(100), value(100)).unwrap(); // in the memtable
    let tables: Vec<PathBuf> = ks.live_files().into_iter().map(|f| f.path).collect();
    assert!(!tables.is_empty());
    let mut it = ks.iter();
    let first = it.next().unwrap().unwrap();
    db.drop_keyspace("ks").unwrap();
    // The tables stay while the iterator holds them.
    assert!(tables.iter().all(|t| t.exists()));
    let rest: Vec<_> = it.map(common::owned).collect();
    assert_eq!(first.0.as_ref(), key(0).as_bytes());
    assert_eq!(rest.len(), 100);
    assert_eq!(rest[99], (key(100).into_bytes(), value(100)));
    // Let go: deleted.
    assert!(tables.iter().all(|t| !t.exists()), "{tables:?}");
}

#[test]
fn a_batch_naming_a_dropped_keyspace_is_refused_and_nothing_is_logged() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let ks = db.keyspace("ks").unwrap();
    let mut b = WriteBatch::new();
    b.put(b"default key", b"v").unwrap();
    b.put_in(&ks, "k", "v").unwrap();
    db.drop_keyspace("ks").unwrap();
    let wals = files(dir.path(), "log");
    let before: Vec<u64> = wals
        .iter()
        .map(|w| std::fs::metadata(w).unwrap().len())
        .collect();
    let e = db.write(b).unwrap_err();
    // Named as the caller knew it, though the batch holds only its id.
    assert_eq!(e.to_string(), "no keyspace named \"ks\"");
    let after: Vec<u64> = wals
        .iter()
        .map(|w| std::fs::metadata(w).unwrap().len())
        .collect();
    assert_eq!(before, after, "the refused batch was logged");
    assert_eq!(db.get("default key").unwrap(), None);
}

/// Two writers in one group, the first held as leader before it takes
/// its group; keyspace "ks" is dropped once both are queued. `leader` and
/// `follower` each write through the database or through "ks". Returns
/// their outcomes and the database, reopened.
fn group_racing_a_drop(
    dir: &Path,
    leader: fn(&Db, &siftdb::Keyspace) -> siftdb::Result<()>,
    follower: fn(&Db, &siftdb::Keyspace) -> siftdb::Result<()>,
) -> (siftdb::Result<()>, siftdb::Result<()>, Db) {
    let pause = PauseOnce::new(SyncPoint::WriteLeaderBeforeGroup);
    let queued = Arc::new(AtomicUsize::new(0));
    let mut o = Options::default();
    o.sync_points = Some({
        let (pause, queued) = (pause.clone(), Arc::clone(&queued));
        SyncPoints::new(move |p| {
            if p == SyncPoint::WriteQueued {
                queued.fetch_add(1, Ordering::SeqCst);
            }
            pause.reached(p);
        })
    });
    let db = Arc::new(Db::open_with(dir, o).unwrap());
    let ks = db.keyspace("ks").unwrap();
    let spawn = |write: fn(&Db, &siftdb::Keyspace) -> siftdb::Result<()>| {
        let (db, ks) = (Arc::clone(&db), ks.clone());
        std::thread::spawn(move || write(&db, &ks))
    };
    pause.arm();
    let leader = spawn(leader);
    pause.wait_until_held();
    let follower = spawn(follower);
    while queued.load(Ordering::SeqCst) < 2 {
        std::thread::yield_now();
    }
    db.drop_keyspace("ks").unwrap();
    pause.release();
    let (leader, follower) = (leader.join().unwrap(), follower.join().unwrap());
    drop(ks);
    let db = Arc::into_inner(db).unwrap();
    db.close().unwrap();
    (leader, follower, Db::open(dir).unwrap())
}

/// A batch naming the keyspace is queued behind a leader held before it
/// takes its group; the drop lands meanwhile. The leader's group holds both:
/// the batch naming the dropped keyspace is refused, the leader's own write
/// commits.
#[test]
fn only_the_batch_naming_a_dropped_keyspace_fails_in_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let (leader, follower, db) = group_racing_a_drop(
        dir.path(),
        |db, _| db.put("leader", "v"),
        |_, ks| ks.put("follower", "v"),
    );
    leader.unwrap();
    let e = follower.unwrap_err();
    assert!(matches!(e, Error::NoSuchKeyspace(_)), "{e}");
    assert_eq!(db.get("leader").unwrap().as_deref(), Some(&b"v"[..]));
    let w = &db.recovery().wals;
    assert_eq!(w.iter().map(|w| w.skipped_entries).sum::<u64>(), 0, "{w:?}");
    assert_eq!(w.iter().map(|w| w.entries).sum::<u64>(), 1, "{w:?}");
}

/// As above with the roles swapped: the leader's own batch names the
/// dropped keyspace. The follower's write commits and is reported so, not
/// with the leader's refusal.
#[test]
fn a_refused_leader_does_not_fail_its_followers() {
    let dir = tempfile::tempdir().unwrap();
    let (leader, follower, db) = group_racing_a_drop(
        dir.path(),
        |_, ks| ks.put("leader", "v"),
        |db, _| db.put("follower", "v"),
    );
    let e = leader.unwrap_err();
    assert_eq!(e.to_string(), "no keyspace named \"ks\"");
    follower.unwrap();
    assert_eq!(db.get("follower").unwrap().as_deref(), Some(&b"v"[..]));
}

/// The keyspace dropped while a background flush of it is held after
/// writing its table: the flush logs nothing and deletes the table.
#[test]
fn a_flush_of_a_keyspace_dropped_meanwhile_logs_nothing_and_deletes_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let pause = PauseOnce::new(SyncPoint::FlushBeforeInstall);
    let mut o = tiny_options();
    o.sync_points = Some(pause.sync_points());
    let db = Db::open_with(dir.path(), o).unwrap();
    let ks = db.keyspace("ks").unwrap();
    ks.put("k", "v").unwrap();
    let before = files(dir.path(), "sst");
    pause.arm();
    let flusher = {
        let ks = ks.clone();
        std::thread::spawn(move || ks.flush())
    };
    pause.wait_until_held();
    let written: Vec<PathBuf> = files(dir.path(), "sst")
        .difference(&before)
        .cloned()
        .collect();
    assert_eq!(written.len(), 1, "the held flush wrote its table");
    db.drop_keyspace("ks").unwrap();
    let manifest = manifest_bytes(dir.path());
    pause.release();
    let _ = flusher.join().unwrap(); // Ok, or NoSuchKeyspace: it raced the drop
    db.put("after", "v").unwrap(); // still writable
    drop(ks);
    // Joins the background thread: the held flush has finished.
    db.close().unwrap();
    assert_eq!(
        manifest_bytes(dir.path()),
        manifest,
        "the flush logged an edit"
    );
    assert!(!written[0].exists(), "the flush's table is left");
    assert_eq!(files(dir.path(), "sst"), before);
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(db.keyspaces(), ["default"]);
}

/// The keyspace dropped while a compaction of it is held before its
/// install: it logs nothing, its outputs go, and so do its inputs.
#[test]
fn a_compaction_of_a_keyspace_dropped_meanwhile_logs_nothing_and_deletes_its_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let pause = PauseOnce::new(SyncPoint::CompactionBeforeInstall);
    let mut o = tiny_options();
    o.sync_points = Some(pause.sync_points());
    let db = Db::open_with(dir.path(), o).unwrap();
    let ks = db.keyspace("ks").unwrap();
    for round in 0..3 {
        for i in 0..40 {
            ks.put(key(i), value(round * 100 + i)).unwrap();
        }
        ks.flush().unwrap();
    }
    let inputs: Vec<PathBuf> = ks.live_files().into_iter().map(|f| f.path).collect();
    assert!(inputs.len() >= 3, "{inputs:?}");
    pause.arm();
    let compactor = {
        let ks = ks.clone();
        std::thread::spawn(move || ks.compact())
    };
    pause.wait_until_held();
    let all = files(dir.path(), "sst");
    let outputs: Vec<&PathBuf> = all.iter().filter(|p| !inputs.contains(p)).collect();
    assert!(!outputs.is_empty(), "the held compaction wrote no output");
    db.drop_keyspace("ks").unwrap();
    let manifest = manifest_bytes(dir.path());
    pause.release();
    compactor.join().unwrap().unwrap();
    assert_eq!(
        manifest_bytes(dir.path()),
        manifest,
        "the compaction logged an edit"
    );
    let left = files(dir.path(), "sst");
    assert!(left.is_empty(), "tables left: {left:?}");
    drop(ks);
    db.close().unwrap();
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(db.keyspaces(), ["default"]);
}

/// A dropped keyspace's writes stay in the live WAL until it is deleted;
/// inspection, like the open, skips them: they are not damage (found when
/// the drop met the inspection of every keyspace in one merge).
#[test]
fn inspection_skips_the_writes_of_a_dropped_keyspace() {
    use siftdb::inspect::{verify_db, DbSnapshot};
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.put("k", "v").unwrap();
    let gone = db.keyspace("gone").unwrap();
    gone.put("k", "in gone").unwrap();
    drop(gone);
    db.drop_keyspace("gone").unwrap();
    let snap = DbSnapshot::open(dir.path()).unwrap();
    let names: Vec<&str> = snap.keyspaces.iter().map(|t| &*t.name).collect();
    assert_eq!(names, ["default"]);
    assert_eq!(
        snap.keyspaces[0]
            .mems
            .iter()
            .map(|m| m.mem.len())
            .sum::<usize>(),
        1
    );
    let report = verify_db(dir.path(), true, &mut |_, _| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.wals, 1);
}

/// Dropping a keyspace deletes the WALs it alone kept alive, and with
/// them its unflushed writes' sequence numbers: the manifest must then
/// record that those sequences are accounted for, or the next open reads
/// the hole as a power loss and drops every later write (found by a
/// new-user trial: d2 and d3, the second synced, were gone after a clean
/// close and reopen).
#[test]
fn writes_after_a_drop_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::builder(dir.path())
        .write_buffer_size(4096)
        .open()
        .unwrap();
    let b = db.keyspace("b").unwrap();
    let mut batch = WriteBatch::new();
    batch.put("d1", vec![b'v'; 5000]).unwrap(); // fills the default's memtable
    batch.put_in(&b, "x", "1").unwrap(); // the newest sequence is b's
    db.write(batch).unwrap();
    db.put("d2", "2").unwrap(); // rotates; the default's memtable flushes
    db.wait_for_compactions().unwrap();
    drop(b);
    db.drop_keyspace("b").unwrap(); // deletes the WAL only b kept
    let mut d3 = WriteBatch::new();
    d3.put("d3", "3").unwrap();
    db.write_with(d3, &siftdb::WriteOptions { sync: true })
        .unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(db.get("d2").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.get("d3").unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(db.get("d1").unwrap().map(|v| v.len()), Some(5000));
    let r = db.recovery();
    assert!(r.wals.iter().all(|w| w.torn_tail.is_none()), "{r:?}");
}

/// A dropped keyspace's writes take sequence numbers that no flush edit
/// records; once the drop deletes the WAL holding them, the manifest must
/// still cover them, or recovery sees a gap before the next WAL and drops
/// it, with the other keyspaces' acknowledged writes (found by
/// tests/keyspace_model.rs).
#[test]
fn a_drop_keeps_the_other_keyspaces_later_writes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let b = db.keyspace("b").unwrap();
    db.put("k0", "0").unwrap();
    b.put("kb", "1").unwrap(); // in the first WAL, never flushed
    db.existing_keyspace("default").unwrap().flush().unwrap();
    db.put("k1", "1").unwrap(); // in the second WAL
    db.drop_keyspace("b").unwrap(); // deletes the first WAL
    drop(b);
    drop(db);
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(db.recovery().dropped_bytes(), 0, "{:?}", db.recovery());
    assert_eq!(db.get("k0").unwrap().as_deref(), Some(&b"0"[..]));
    assert_eq!(db.get("k1").unwrap().as_deref(), Some(&b"1"[..]));
}
