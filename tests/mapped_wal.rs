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

/// A file system that is [`StdFs`] but records, at each sync of a WAL,
/// whether the WAL was still mapped into the process.
#[cfg(target_os = "linux")]
mod spy {
    use std::ffi::OsString;
    use std::io;
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex};

    use siftdb::fs::{FileSystem, StdFs, WritableFile};

    /// `(WAL, mapped at its sync)`, in sync order.
    pub type Syncs = Arc<Mutex<Vec<(PathBuf, bool)>>>;

    #[derive(Debug, Default)]
    pub struct SpyFs {
        pub syncs: Syncs,
    }

    #[derive(Debug)]
    struct SpyLog {
        inner: Box<dyn WritableFile>,
        path: PathBuf,
        syncs: Syncs,
    }

    /// Whether `/proc/self/maps` shows a mapping of `path`.
    fn is_mapped(path: &Path) -> bool {
        let path = path.canonicalize().unwrap();
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines().any(|l| l.ends_with(path.to_str().unwrap()))
    }

    impl WritableFile for SpyLog {
        fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
            self.inner.write_all(buf)
        }
        fn sync_data(&mut self) -> io::Result<()> {
            let mapped = is_mapped(&self.path);
            self.syncs.lock().unwrap().push((self.path.clone(), mapped));
            self.inner.sync_data()
        }
        fn sync_all(&mut self) -> io::Result<()> {
            self.inner.sync_all()
        }
        fn close_for_writes(&mut self) {
            self.inner.close_for_writes()
        }
    }

    impl SpyFs {
        fn spy(&self, path: &Path, inner: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
            Box::new(SpyLog {
                inner,
                path: path.to_path_buf(),
                syncs: Arc::clone(&self.syncs),
            })
        }
    }

    impl FileSystem for SpyFs {
        fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
            StdFs.create(path)
        }
        fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
            StdFs.create_new(path)
        }
        fn reopen_truncated(&self, path: &Path, len: u64) -> io::Result<Box<dyn WritableFile>> {
            StdFs.reopen_truncated(path, len)
        }
        fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
            Ok(self.spy(path, StdFs.create_log(path)?))
        }
        fn reopen_log_truncated(&self, path: &Path, len: u64) -> io::Result<Box<dyn WritableFile>> {
            Ok(self.spy(path, StdFs.reopen_log_truncated(path, len)?))
        }
        fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
            StdFs.rename(from, to)
        }
        fn remove_file(&self, path: &Path) -> io::Result<()> {
            StdFs.remove_file(path)
        }
        fn sync_dir(&self, dir: &Path) -> io::Result<()> {
            StdFs.sync_dir(dir)
        }
        fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
            StdFs.create_dir_all(dir)
        }
        fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
            StdFs.list_dir(dir)
        }
    }
}

/// A WAL closed by a memtable rotation is unmapped before its sync: the
/// writeback of a page still mapped write-protects it, which costs a
/// TLB-flush interrupt on the writer's CPU per page (25,000 of them in a
/// `fillrandom` of a million puts; DESIGN.md 13).
#[test]
#[cfg(target_os = "linux")]
fn a_wal_closed_by_a_rotation_is_unmapped_before_its_sync() {
    let dir = common::scratch_dir();
    let fs = std::sync::Arc::new(spy::SpyFs::default());
    let mut o = siftdb::Options::default();
    o.file_system = fs.clone();
    o.write_buffer_size = 256 << 10;
    let db = Db::open_with(dir.path().join("db"), o).unwrap();
    let value = vec![b'v'; 1000];
    for i in 0..2_000u32 {
        db.put(format!("key{i:06}"), &value).unwrap();
    }
    db.flush().unwrap();
    let syncs = fs.syncs.lock().unwrap().clone();
    drop(db);
    // 2 MB through 256 KiB memtables: several rotations, each closing a
    // WAL that the background thread (or the flush) synced.
    assert!(syncs.len() >= 3, "{syncs:?}");
    let mapped: Vec<_> = syncs.iter().filter(|(_, m)| *m).collect();
    assert!(mapped.is_empty(), "synced while mapped: {mapped:?}");
}
