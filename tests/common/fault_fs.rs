//! `FaultFs`: a [`FileSystem`] over `std::fs` that numbers every file
//! operation the engine performs and fails a chosen one with `EIO` or
//! `ENOSPC`, for the I/O-fault campaign (tests/io_faults.rs).
//!
//! Counted operations, numbered from 0 in the order they start: creating a
//! file, each write, each sync (`sync_data` or `sync_all`), rename, remove,
//! directory sync, directory creation and removal, and hard link. Listing a directory is passed
//! through uncounted (the engine only reads with it).

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use siftdb::fs::{FileSystem, StdFs, WritableFile};

/// Linux `EIO`.
pub const EIO: i32 = 5;
/// Linux `ENOSPC`.
pub const ENOSPC: i32 = 28;

/// The kinds of counted operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpKind {
    Create,
    /// Reopening a file for appending after cutting it (a WAL's torn tail).
    Truncate,
    Write,
    Sync,
    Rename,
    Remove,
    SyncDir,
    CreateDir,
    /// Removing a directory and everything in it.
    RemoveDir,
    /// A hard link (its new name is the path counted).
    Link,
}

/// One counted operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Op {
    pub kind: OpKind,
    pub path: PathBuf,
}

impl Op {
    /// What kind of file the operation touched: `log`, `sst`, `manifest`,
    /// `current`, `tmp` or `dir`, from the file name.
    pub fn file_kind(&self) -> &'static str {
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        match self.kind {
            OpKind::SyncDir | OpKind::CreateDir | OpKind::RemoveDir => "dir",
            _ if name.ends_with(".log") => "log",
            _ if name.ends_with(".sst") => "sst",
            _ if name.ends_with(".tmp") => "tmp",
            _ if name.starts_with("MANIFEST-") => "manifest",
            _ if name == "CURRENT" => "current",
            _ => "other",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        write!(f, "{:?} {name}", self.kind)
    }
}

/// Which operations fail once the fault is triggered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Persist {
    /// Only operation `at`: a transient error.
    Once,
    /// Every operation from `at` on until [`FaultFs::heal`]: a dead disk.
    All,
    /// Every operation of the same kind as operation `at`, from `at` on:
    /// e.g. a full disk fails every write but still removes files.
    SameKind,
}

/// A fault at an operation picked by kind rather than by number.
#[derive(Debug, Clone, Copy)]
pub struct Targeted {
    pub kind: OpKind,
    /// As [`Op::file_kind`] names it.
    pub file_kind: &'static str,
    pub errno: i32,
    /// Matching operations to let pass first.
    pub skip: u32,
    /// How long the failing operation takes (a slow disk).
    pub stall: Duration,
}

/// A planned fault.
#[derive(Debug, Clone, Copy)]
pub struct Fault {
    /// Number of the first operation to fail.
    pub at: u64,
    /// `EIO` or `ENOSPC`.
    pub errno: i32,
    pub persist: Persist,
    /// A failing write first writes the first half of its buffer, as a
    /// short write before `ENOSPC` does.
    pub torn_write: bool,
}

#[derive(Debug, Default)]
struct State {
    ops: Vec<Op>,
    fault: Option<Fault>,
    /// Kind of the operation the fault was triggered at.
    triggered: Option<OpKind>,
    /// Fails one operation picked by kind, see [`Targeted`].
    targeted: Option<Targeted>,
    /// Numbers of the operations that failed.
    failed: Vec<u64>,
}

/// See the module docs. Cheap to clone; clones share the counter.
#[derive(Debug, Clone, Default)]
pub struct FaultFs {
    state: Arc<Mutex<State>>,
}

/// What a counted operation should do.
enum Verdict {
    Proceed,
    Fail(io::Error, bool),
}

impl FaultFs {
    /// A file system that only counts.
    pub fn new() -> FaultFs {
        FaultFs::default()
    }

    /// A file system that fails as `fault` says.
    pub fn with_fault(fault: Fault) -> FaultFs {
        let fs = FaultFs::default();
        fs.state.lock().unwrap().fault = Some(fault);
        fs
    }

    /// From now on fails as `fault` says (its `at` counts from the first
    /// operation ever, as [`FaultFs::count`] does).
    pub fn set_fault(&self, fault: Fault) {
        self.state.lock().unwrap().fault = Some(fault);
    }

    /// As a `file_system` option.
    pub fn arc(&self) -> Arc<dyn FileSystem> {
        Arc::new(self.clone())
    }

    /// Every counted operation so far, in order.
    pub fn ops(&self) -> Vec<Op> {
        self.state.lock().unwrap().ops.clone()
    }

    /// Number of counted operations so far.
    pub fn count(&self) -> u64 {
        self.state.lock().unwrap().ops.len() as u64
    }

    /// The operations that were failed, with their numbers.
    pub fn failed(&self) -> Vec<(u64, Op)> {
        let s = self.state.lock().unwrap();
        s.failed
            .iter()
            .map(|&i| (i, s.ops[i as usize].clone()))
            .collect()
    }

    /// Fails the next operation of `kind` on a file of `file_kind` (as
    /// [`Op::file_kind`] names it) with `errno`, once.
    pub fn fail_next(&self, kind: OpKind, file_kind: &'static str, errno: i32) {
        self.fail_targeted(Targeted {
            kind,
            file_kind,
            errno,
            skip: 0,
            stall: Duration::ZERO,
        });
    }

    /// Fails one operation as `t` says.
    pub fn fail_targeted(&self, t: Targeted) {
        self.state.lock().unwrap().targeted = Some(t);
    }

    /// Stops failing operations.
    pub fn heal(&self) {
        let mut s = self.state.lock().unwrap();
        s.fault = None;
        s.targeted = None;
    }

    fn check(&self, kind: OpKind, path: &Path) -> Verdict {
        let mut s = self.state.lock().unwrap();
        let n = s.ops.len() as u64;
        let op = Op {
            kind,
            path: path.to_path_buf(),
        };
        if let Some(t) = s.targeted.as_mut() {
            if t.kind == kind && op.file_kind() == t.file_kind {
                if t.skip > 0 {
                    t.skip -= 1;
                } else {
                    let (errno, stall) = (t.errno, t.stall);
                    s.targeted = None;
                    s.ops.push(op);
                    s.failed.push(n);
                    drop(s);
                    std::thread::sleep(stall);
                    return Verdict::Fail(io::Error::from_raw_os_error(errno), false);
                }
            }
        }
        s.ops.push(op);
        let Some(f) = s.fault else {
            return Verdict::Proceed;
        };
        let fail = if n == f.at {
            s.triggered = Some(kind);
            true
        } else {
            n > f.at
                && match f.persist {
                    Persist::Once => false,
                    Persist::All => true,
                    Persist::SameKind => s.triggered == Some(kind),
                }
        };
        if !fail {
            return Verdict::Proceed;
        }
        s.failed.push(n);
        Verdict::Fail(io::Error::from_raw_os_error(f.errno), f.torn_write)
    }

    fn simple(&self, kind: OpKind, path: &Path) -> io::Result<()> {
        match self.check(kind, path) {
            Verdict::Proceed => Ok(()),
            Verdict::Fail(e, _) => Err(e),
        }
    }
}

impl FileSystem for FaultFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.simple(OpKind::Create, path)?;
        Ok(Box::new(FaultFile {
            fs: self.clone(),
            path: path.to_path_buf(),
            inner: StdFs.create(path)?,
        }))
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.simple(OpKind::Create, path)?;
        Ok(Box::new(FaultFile {
            fs: self.clone(),
            path: path.to_path_buf(),
            inner: StdFs.create_new(path)?,
        }))
    }

    fn reopen_truncated(&self, path: &Path, len: u64) -> io::Result<Box<dyn WritableFile>> {
        self.simple(OpKind::Truncate, path)?;
        Ok(Box::new(FaultFile {
            fs: self.clone(),
            path: path.to_path_buf(),
            inner: StdFs.reopen_truncated(path, len)?,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.simple(OpKind::Rename, from)?;
        StdFs.rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.simple(OpKind::Remove, path)?;
        StdFs.remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.simple(OpKind::SyncDir, dir)?;
        StdFs.sync_dir(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.simple(OpKind::CreateDir, dir)?;
        StdFs.create_dir_all(dir)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        StdFs.list_dir(dir)
    }

    fn create_dir(&self, dir: &Path) -> io::Result<()> {
        self.simple(OpKind::CreateDir, dir)?;
        StdFs.create_dir(dir)
    }

    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.simple(OpKind::RemoveDir, dir)?;
        StdFs.remove_dir_all(dir)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.simple(OpKind::Link, to)?;
        StdFs.hard_link(from, to)
    }
}

/// A file opened through a [`FaultFs`].
#[derive(Debug)]
struct FaultFile {
    fs: FaultFs,
    path: PathBuf,
    inner: Box<dyn WritableFile>,
}

impl WritableFile for FaultFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self.fs.check(OpKind::Write, &self.path) {
            Verdict::Proceed => self.inner.write_all(buf),
            Verdict::Fail(e, torn) => {
                if torn {
                    self.inner.write_all(&buf[..buf.len() / 2])?;
                }
                Err(e)
            }
        }
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.fs.simple(OpKind::Sync, &self.path)?;
        self.inner.sync_data()
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.fs.simple(OpKind::Sync, &self.path)?;
        self.inner.sync_all()
    }
}
