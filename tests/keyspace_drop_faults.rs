//! Power cuts and I/O faults while keyspaces are created and dropped
//! (DESIGN.md 2): a drop is one synced manifest record, so after any cut or
//! failed operation the reopened database holds the dropped keyspace whole
//! or not at all (and then none of its tables), every other keyspace whole,
//! and every acknowledged creation and write.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::fault_fs::OpKind;
use common::fault_fs::{Fault, FaultFs, Persist, EIO, ENOSPC};
use common::power_fs::{PowerFs, Unsynced};
use common::{scratch_dir, Rng};
use siftdb::fs::FileSystem;
use siftdb::{Db, Error, Keyspace, Options};

const DOOMED_KEYS: u64 = 150;
const KEEP_KEYS: u64 = 50;

fn options(fs: std::sync::Arc<dyn FileSystem>) -> Options {
    let mut o = Options::default();
    o.write_buffer_size = 4 << 10;
    o.block_size = 512;
    o.sync = true;
    o.file_system = fs;
    o
}

fn key(i: u64) -> String {
    format!("key{i:05}")
}

/// A database with "doomed" (tables and memtable data), "keep" and the
/// default, closed cleanly; returns the table files of "doomed".
fn build_base(dir: &Path) -> BTreeSet<PathBuf> {
    let db = Db::open_with(dir, options(std::sync::Arc::new(siftdb::fs::StdFs))).unwrap();
    let doomed = db.keyspace("doomed").unwrap();
    let keep = db.keyspace("keep").unwrap();
    for i in 0..DOOMED_KEYS {
        doomed.put(key(i), "d").unwrap();
        if i == 100 {
            doomed.flush().unwrap();
        }
    }
    for i in 0..KEEP_KEYS {
        keep.put(key(i), "k").unwrap();
        db.put(key(i), "0").unwrap();
    }
    let tables = doomed.live_files().into_iter().map(|f| f.path).collect();
    drop((doomed, keep));
    db.close().unwrap();
    tables
}

fn count(ks: &Keyspace) -> u64 {
    ks.len().unwrap()
}

/// What the run under test had acknowledged.
#[derive(Debug, Default)]
struct Acked {
    created: bool,
    new_put: bool,
    dropped: bool,
}

/// Opens `dir` through `fs`, creates "new" and puts into it, drops
/// "doomed", closes; stops at the first error.
fn run(dir: &Path, fs: std::sync::Arc<dyn FileSystem>) -> Acked {
    let mut a = Acked::default();
    let Ok(db) = Db::open_with(dir, options(fs)) else {
        return a;
    };
    let _ = (|| -> siftdb::Result<()> {
        let new = db.keyspace("new")?;
        a.created = true;
        new.put("n", "1")?;
        a.new_put = true;
        db.drop_keyspace("doomed")?;
        a.dropped = true;
        // A failure has turned the database read-only: no write lands.
        Ok(())
    })();
    if !a.dropped {
        let r = db.put("after a failure", "x");
        assert!(r.is_err(), "a write after a failed create or drop: {a:?}");
    }
    drop(db);
    a
}

/// Reopens `dir` on a healthy disk and checks the outcome against `a`.
fn check(dir: &Path, a: &Acked, doomed_tables: &BTreeSet<PathBuf>, what: &str) {
    let db = match Db::open_with(dir, options(std::sync::Arc::new(siftdb::fs::StdFs))) {
        Ok(db) => db,
        Err(e) => panic!("{what}: reopen failed ({a:?}): {e}"),
    };
    let keep = db.existing_keyspace("keep").unwrap();
    assert_eq!(count(&keep), KEEP_KEYS, "{what}");
    assert_eq!(db.len().unwrap(), KEEP_KEYS, "{what}");
    match db.existing_keyspace("doomed") {
        Ok(doomed) => {
            assert!(!a.dropped, "{what}: the drop was acknowledged ({a:?})");
            assert_eq!(count(&doomed), DOOMED_KEYS, "{what}: not whole");
        }
        Err(Error::NoSuchKeyspace(_)) => {
            let left: Vec<_> = doomed_tables.iter().filter(|t| t.exists()).collect();
            assert!(left.is_empty(), "{what}: dropped, tables left: {left:?}");
        }
        Err(e) => panic!("{what}: {e}"),
    }
    match db.existing_keyspace("new") {
        Ok(new) => {
            let n = new.get("n").unwrap();
            assert!(n.is_some() || !a.new_put, "{what}: acknowledged put lost");
        }
        Err(Error::NoSuchKeyspace(_)) => assert!(!a.created, "{what}: creation lost"),
        Err(e) => panic!("{what}: {e}"),
    }
}

/// Cuts the power at every file operation of an open, a creation and a
/// drop (of a keyspace with tables and memtable data): every image reopens
/// with "doomed" whole or gone without a table left, "keep" and the
/// default whole, and nothing acknowledged lost.
#[test]
fn drop_keyspace_is_atomic() {
    let scratch = scratch_dir();
    let base = scratch.path().join("base");
    let doomed = build_base(&base);
    assert!(!doomed.is_empty());
    let at = |dir: &Path| -> BTreeSet<PathBuf> {
        let names: Vec<_> = doomed
            .iter()
            .map(|t| t.file_name().unwrap().to_owned())
            .collect();
        names.iter().map(|n| dir.join(n)).collect()
    };
    let total = {
        let dir = scratch.path().join("count");
        common::copy_dir(&base, &dir);
        let fs = PowerFs::new();
        let a = run(&dir, fs.arc());
        assert!(a.dropped, "{a:?}");
        fs.count()
    };
    let mut rng = Rng(11);
    let mut outcomes = [0u32; 2];
    for cut in 0..=total {
        let dir = scratch.path().join(format!("cut{cut}"));
        common::copy_dir(&base, &dir);
        let fs = PowerFs::new();
        fs.cut_power_at(cut);
        let a = run(&dir, fs.arc());
        if cut % 2 == 0 {
            fs.crash_image(&mut rng);
        } else {
            fs.crash_image_dropping_unsynced();
        }
        check(&dir, &a, &at(&dir), &format!("cut at {cut} of {total}"));
        let db = Db::open(&dir).unwrap();
        outcomes[usize::from(db.existing_keyspace("doomed").is_err())] += 1;
    }
    // Both outcomes occur: the sweep crossed the drop's record.
    eprintln!("{outcomes:?} of {total}");
    assert!(
        outcomes[0] > 0 && outcomes[1] > 0,
        "{outcomes:?} of {total}"
    );
}

/// Fails each file operation of an open, a creation and a drop in turn,
/// with `EIO` and with `ENOSPC`: the failing call returns an error (never
/// a panic), the database turns read-only, and a healthy reopen finds
/// every keyspace whole or (the one created or dropped) consistently
/// present or absent.
#[test]
fn a_failed_operation_of_a_create_or_drop_loses_nothing() {
    let scratch = scratch_dir();
    let base = scratch.path().join("base");
    let doomed = build_base(&base);
    let total = {
        let dir = scratch.path().join("count");
        common::copy_dir(&base, &dir);
        let fs = FaultFs::new();
        assert!(run(&dir, fs.arc()).dropped);
        fs.count()
    };
    let mut failed_calls = 0;
    for at in 0..total {
        for errno in [EIO, ENOSPC] {
            let dir = scratch.path().join(format!("at{at}-{errno}"));
            common::copy_dir(&base, &dir);
            let fs = FaultFs::with_fault(Fault {
                at,
                errno,
                persist: Persist::Once,
                torn_write: errno == ENOSPC,
            });
            let a = run(&dir, fs.arc());
            failed_calls += u32::from(!a.dropped);
            let names = doomed.iter().map(|t| dir.join(t.file_name().unwrap()));
            check(&dir, &a, &names.collect(), &format!("op {at} {errno}"));
        }
    }
    assert!(
        failed_calls > 0,
        "no fault reached a call of {total} operations"
    );
}

/// The hole a drop's last sequence could hide (RELIABILITY.md 5): the
/// drop records the largest sequence in the dropped keyspace's memtables,
/// which may lie in the current WAL, after another keyspace's unsynced
/// write. If a rotation then closed that WAL and a power cut took its
/// tail (the background sync held) while the next WAL's records and name
/// survived, recovery found no gap in the sequence numbers and kept the
/// newer write without the older one. The drop syncs the WALs first, so
/// every write acknowledged before it survives.
#[test]
fn a_drop_leaves_no_hidden_hole_in_the_wal() {
    let scratch = scratch_dir();
    let dir = scratch.path().join("db");
    let fs = PowerFs::new();
    let mut o = options(fs.arc());
    o.sync = false;
    o.write_buffer_size = 64 << 10;
    let db = Db::open_with(&dir, o).unwrap();
    let small = siftdb::KeyspaceOptions::default().write_buffer_size(1 << 10);
    let (other, _) = db.keyspace_with("other", small).unwrap();
    let doomed = db.keyspace("doomed").unwrap();
    // Fills "other"'s memtable, so that its next write rotates the WAL.
    other.put("o", vec![b'o'; 2 << 10]).unwrap(); // sequence 1
    db.put("a", "a").unwrap(); // sequence 2
    doomed.put("b", "b").unwrap(); // sequence 3, the drop's last sequence
    db.drop_keyspace("doomed").unwrap();
    let first_wal = common::wal_numbers(&dir)[0];
    // The background thread's sync of the WAL the rotation closes waits.
    fs.hold_next(OpKind::Sync, "log");
    other.put("x", "x").unwrap(); // sequence 4, in a new WAL
    fs.wait_until_held(std::time::Duration::from_secs(10));
    // A keyspace creation syncs the directory: the new WAL's name is
    // durable, its records reached the disk, the old WAL's tail did not.
    db.keyspace("later").unwrap();
    fs.cut_power_now();
    fs.release();
    drop((other, doomed));
    drop(db);
    let old = format!("{first_wal:06}.log");
    let mut keep = |name: &std::ffi::OsStr, synced: usize, len: usize| {
        if name.to_str() == Some(old.as_str()) {
            0
        } else {
            len - synced
        }
    };
    let loss = fs.crash_image_with(Unsynced::With(&mut keep));
    let db = Db::open(&dir).unwrap();
    let other = db.existing_keyspace("other").unwrap();
    let (a, x) = (db.get("a").unwrap(), other.get("x").unwrap());
    assert!(
        x.is_none() || a.is_some(),
        "x (sequence 4) survived without a (sequence 2): not a prefix ({loss:?})"
    );
    assert_eq!(a.as_deref(), Some(&b"a"[..]), "{loss:?}");
    assert_eq!(other.get("o").unwrap().map(|v| v.len()), Some(2 << 10));
}
