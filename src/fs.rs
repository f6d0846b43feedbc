//! The file-system seam: every file operation on the engine's write path
//! goes through a [`FileSystem`], so that tests can inject failures (a
//! write, sync or rename failing with `EIO` or `ENOSPC` at a chosen
//! operation) without touching the engine.
//!
//! Routed: creating a file for writing and every write and sync of it
//! (WAL, manifest, SSTable, `CURRENT`'s temporary file), reopening a WAL
//! for appending after cutting its torn tail, renaming,
//! removing, syncing a directory, creating the database directory and
//! listing it; for [`Db::checkpoint`](crate::Db::checkpoint), creating
//! and removing its directory and hard-linking SSTables into it. Not routed: reading files back (logs, the manifest and
//! `CURRENT` at open, the memory map of a finished SSTable), `stat` checks
//! at open, and the `LOCK` file. Those read what the writes above left, so
//! a wrapper around [`StdFs`] sees every change the engine makes.
//!
//! The default, [`StdFs`], is `std::fs`. This module depends on nothing
//! else in the crate.

use std::ffi::OsString;
use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

#[cfg(target_os = "linux")]
pub mod mapped_log;

/// A file open for writing, as [`FileSystem::create`] and
/// [`FileSystem::create_new`] return it. Writes go to the operating system
/// without user-space buffering: once `write_all` returns, a process crash
/// cannot lose the bytes; only the syncs make them survive a power loss.
pub trait WritableFile: Send + Debug {
    /// Writes all of `buf` at the end of what was written so far. On error
    /// an unknown prefix of `buf` may have been written.
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Makes the contents and the length durable (`fdatasync`). After an
    /// error, what reached the disk is unknown.
    fn sync_data(&mut self) -> io::Result<()>;
    /// Makes the contents and all metadata durable (`fsync`).
    fn sync_all(&mut self) -> io::Result<()>;
    /// Says that nothing more will be written to the file (it may still be
    /// synced): the engine calls it on a write-ahead log closed by a
    /// memtable rotation, before that log's last sync. The default does
    /// nothing. A [`mapped_log::MappedLogFile`] drops its mappings, so
    /// that the sync's writeback has no mapped page to write-protect:
    /// each such page costs a TLB-flush interrupt on every other CPU
    /// running the process (DESIGN.md 13).
    fn close_for_writes(&mut self) {}
}

/// The file operations the engine performs on its write path. Paths are
/// full paths; implementations must be usable from several threads.
pub trait FileSystem: Send + Sync + Debug {
    /// Creates the file at `path`, truncating it if it exists, and opens it
    /// for writing.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Creates the file at `path` and opens it for appending; fails with
    /// [`io::ErrorKind::AlreadyExists`] if it exists.
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;
    /// Opens the existing file at `path` for appending after cutting it to
    /// its first `len` bytes (`len` at most its length). The cut is durable
    /// after the next sync of the returned file.
    fn reopen_truncated(&self, path: &Path, len: u64) -> io::Result<Box<dyn WritableFile>>;
    /// Creates a write-ahead log at `path`, as [`FileSystem::create_new`]
    /// does (the default). The engine only appends to it, one group commit
    /// per `write_all`, and drops it when it is closed. [`StdFs`] on Linux
    /// returns a [`mapped_log::MappedLogFile`] instead, appended through a
    /// memory map without a system call per write; its file is longer than
    /// what was written, by a zero-filled tail, until it is dropped.
    fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.create_new(path)
    }
    /// Reopens the write-ahead log at `path` for appending after cutting it
    /// to its first `len` bytes, as [`FileSystem::reopen_truncated`] does
    /// (the default); [`StdFs`] on Linux maps it, as
    /// [`FileSystem::create_log`] says.
    fn reopen_log_truncated(&self, path: &Path, len: u64) -> io::Result<Box<dyn WritableFile>> {
        self.reopen_truncated(path, len)
    }
    /// Renames `from` to `to`, atomically replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes the file at `path`.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Makes the creation, removal and renaming of files in `dir` durable
    /// (`fsync` of the directory).
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Creates `dir` and any missing parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// The names of the entries of `dir`, in no particular order.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>>;
    /// Creates the directory `dir` (its parent must exist); fails with
    /// [`io::ErrorKind::AlreadyExists`] if something is there. The
    /// default calls [`std::fs::create_dir`], for implementations written
    /// before checkpoints.
    fn create_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir(dir)
    }
    /// Removes `dir` and everything in it. The default calls
    /// [`std::fs::remove_dir_all`].
    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::remove_dir_all(dir)
    }
    /// Makes `to` a second name (a hard link) of the existing file `from`.
    /// A file system that cannot returns an error of kind
    /// [`io::ErrorKind::Unsupported`] (the default) or
    /// [`io::ErrorKind::CrossesDevices`] (`EXDEV`), and the checkpoint
    /// copies the file instead. The new name is durable after a
    /// [`sync_dir`](Self::sync_dir) of its directory.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let _ = (from, to);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this file system makes no hard links",
        ))
    }
}

/// [`FileSystem`] on `std::fs`: the default.
#[derive(Debug, Default, Clone, Copy)]
pub struct StdFs;

impl WritableFile for File {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        Write::write_all(self, buf)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        File::sync_data(self)
    }

    fn sync_all(&mut self) -> io::Result<()> {
        File::sync_all(self)
    }
}

impl FileSystem for StdFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        Ok(Box::new(File::create(path)?))
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(path)?;
        Ok(Box::new(file))
    }

    fn reopen_truncated(&self, path: &Path, len: u64) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new().append(true).open(path)?;
        file.set_len(len)?;
        Ok(Box::new(file))
    }

    #[cfg(target_os = "linux")]
    fn create_log(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        mapped_log::MappedLogFile::create_new(path)
    }

    #[cfg(target_os = "linux")]
    fn reopen_log_truncated(&self, path: &Path, len: u64) -> io::Result<Box<dyn WritableFile>> {
        mapped_log::MappedLogFile::reopen_truncated(path, len)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        // Directories cannot be opened as files outside Unix; there the
        // rename and create are as durable as the platform makes them.
        #[cfg(unix)]
        {
            File::open(dir)?.sync_all()
        }
        #[cfg(not(unix))]
        {
            let _ = dir;
            Ok(())
        }
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        std::fs::read_dir(dir)?
            .map(|e| e.map(|e| e.file_name()))
            .collect()
    }

    fn create_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir(dir)
    }

    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::remove_dir_all(dir)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::hard_link(from, to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn std_fs_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs;
        let a = dir.path().join("a");
        let mut f = fs.create_new(&a).unwrap();
        f.write_all(b"hello ").unwrap();
        f.write_all(b"world").unwrap();
        f.sync_data().unwrap();
        f.sync_all().unwrap();
        drop(f);
        assert_eq!(
            fs.create_new(&a).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        assert_eq!(std::fs::read(&a).unwrap(), b"hello world");

        // `create` truncates.
        let mut f = fs.create(&a).unwrap();
        f.write_all(b"x").unwrap();
        drop(f);
        assert_eq!(std::fs::read(&a).unwrap(), b"x");

        let b = dir.path().join("sub/b");
        fs.create_dir_all(b.parent().unwrap()).unwrap();
        fs.rename(&a, &b).unwrap();
        fs.sync_dir(dir.path()).unwrap();
        assert_eq!(
            fs.list_dir(dir.path()).unwrap(),
            vec![OsString::from("sub")]
        );
        fs.remove_file(&b).unwrap();
        assert!(fs.list_dir(b.parent().unwrap()).unwrap().is_empty());
        assert_eq!(
            fs.remove_file(&b).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn std_fs_links_and_makes_and_removes_directories() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs;
        let sub = dir.path().join("sub");
        fs.create_dir(&sub).unwrap();
        assert_eq!(
            fs.create_dir(&sub).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        let a = sub.join("a");
        fs.create_new(&a).unwrap().write_all(b"abc").unwrap();
        let b = dir.path().join("b");
        fs.hard_link(&a, &b).unwrap();
        fs.remove_dir_all(&sub).unwrap();
        assert!(!sub.exists());
        // The second name keeps the contents.
        assert_eq!(std::fs::read(&b).unwrap(), b"abc");

        /// A file system with only the required methods.
        #[derive(Debug)]
        struct Minimal;
        impl FileSystem for Minimal {
            fn create(&self, p: &Path) -> io::Result<Box<dyn WritableFile>> {
                StdFs.create(p)
            }
            fn create_new(&self, p: &Path) -> io::Result<Box<dyn WritableFile>> {
                StdFs.create_new(p)
            }
            fn reopen_truncated(&self, p: &Path, l: u64) -> io::Result<Box<dyn WritableFile>> {
                StdFs.reopen_truncated(p, l)
            }
            fn rename(&self, f: &Path, t: &Path) -> io::Result<()> {
                StdFs.rename(f, t)
            }
            fn remove_file(&self, p: &Path) -> io::Result<()> {
                StdFs.remove_file(p)
            }
            fn sync_dir(&self, d: &Path) -> io::Result<()> {
                StdFs.sync_dir(d)
            }
            fn create_dir_all(&self, d: &Path) -> io::Result<()> {
                StdFs.create_dir_all(d)
            }
            fn list_dir(&self, d: &Path) -> io::Result<Vec<OsString>> {
                StdFs.list_dir(d)
            }
        }
        let err = Minimal.hard_link(&b, &dir.path().join("c")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Unsupported);
    }
}
