//! The WAL appended through a memory map (src/fs/mapped_log.rs, DESIGN.md
//! 14, 2026-12-04): while open, a WAL is longer than its records, by a
//! zero-filled tail, and a crash leaves it so. These tests take the
//! directory as a crash leaves it (a copy made while the database is
//! open) and check what the next opens make of it.

mod common;

use std::path::Path;

use common::{copy_dir, files_with_ext};
use siftdb::Db;

/// A copy of the database at `dir` as a crash would leave it now: each
/// WAL with its zero-filled tail.
fn crash_image(dir: &Path, to: &Path) {
    copy_dir(dir, to);
    let _ = std::fs::remove_file(to.join("LOCK"));
}

#[test]
#[cfg(target_os = "linux")]
fn a_kept_wal_takes_new_records_where_its_records_end() {
    let dir = common::scratch_dir();
    let (live, image) = (dir.path().join("live"), dir.path().join("image"));
    let db = Db::open(&live).unwrap();
    db.put("a", "1").unwrap();
    let wal = &files_with_ext(&live, "log")[0];
    let on_disk = std::fs::metadata(wal).unwrap().len();
    assert!(
        on_disk >= 1 << 20,
        "the WAL is preallocated: {on_disk} bytes"
    );
    crash_image(&live, &image);
    drop(db);

    // The open after the crash keeps the one small WAL: its records end
    // long before the file does, and new records must follow them.
    let db = Db::open(&image).unwrap();
    let r = db.recovery();
    assert_eq!(r.wals.len(), 1, "{r:?}");
    let w = &r.wals[0];
    assert_eq!((w.size, w.batches, w.torn_tail.clone()), (on_disk, 1, None));
    assert!(w.end < 100, "{r:?}");
    assert_eq!(w.valid_len(), w.end);
    db.put("b", "2").unwrap();
    drop(db);
    // Closed: the WAL is cut to its records, and both writes are there.
    let wal = &files_with_ext(&image, "log")[0];
    assert!(std::fs::metadata(wal).unwrap().len() < 200);
    let db = Db::open(&image).unwrap();
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"2"[..]));
    let r = db.recovery();
    assert_eq!((r.batches(), r.dropped_bytes()), (2, 0), "{r:?}");
}
