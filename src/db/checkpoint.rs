//! [`Db::checkpoint`]: a consistent copy of the whole database, as of one
//! sequence number, in a new directory (DESIGN.md 9.1).
//!
//! 1. Claim `<target>.checkpoint-tmp` (created, then `flock`ed; whatever
//!    a claimed one holds is left by a checkpoint that did not finish, and
//!    is removed).
//! 2. *Fix the point.* Under the writer lock (no group is half applied:
//!    a group's WAL append and memtable inserts happen under it) and then
//!    the versions lock (no flush or compaction installs a version or
//!    deletes a WAL meanwhile): note the last sequence number, pin every
//!    keyspace's current [`Version`] (its `Arc` keeps every SSTable it
//!    lists on disk, whatever compactions do next), open every live WAL
//!    from the oldest one any keyspace's memtables have writes in (not
//!    only the WALs a memtable names: one may hold only writes of a
//!    keyspace whose memtable started in an older one, RocksDB #7789) and
//!    note its length, take the state's snapshot edit (the first record of
//!    a fresh manifest, as an open or a rollover writes it) with each
//!    keyspace's log number set to its oldest memtable's WAL, and a file
//!    number for the checkpoint's manifest. Then let both locks go:
//!    writes wait only for these few system calls, never for the copying.
//! 3. Hard-link every pinned SSTable into it (copy it where the file
//!    system cannot link), copy each pinned WAL's first noted bytes (its
//!    records up to the point, and none after), write the manifest,
//!    `CURRENT` and `OPTIONS`, and sync the files and the directory.
//! 4. Rename the directory to the target and sync the parent.
//!
//! The checkpoint is the state a crash of the source at the fixed point
//! would have left, with nothing lost to the page cache, so it opens
//! through the ordinary recovery, as an ordinary database.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::error::IoContext;
use crate::filename;
use crate::fs::FileSystem;
use crate::key::SequenceNumber;
use crate::log::LogWriter;
use crate::sync_point::{self, SyncPoint};
use crate::version::edit::VersionEdit;
use crate::version::manifest::{self, Manifest};
use crate::version::set::Version;
use crate::{Error, Result};

use super::{live_wals, pin_wals, stored_options, Db, DbInner, SuperVersion};

/// What the name of a checkpoint's temporary directory adds to its
/// target's: `<target>.checkpoint-tmp`, a sibling of the target.
pub const CHECKPOINT_TEMP_SUFFIX: &str = ".checkpoint-tmp";

/// Bytes read and written at a time when a file is copied.
const COPY_CHUNK: usize = 1 << 20;

/// What [`Db::checkpoint`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckpointReport {
    /// The checkpoint's directory (the target given).
    pub path: PathBuf,
    /// The sequence number the checkpoint holds every write up to, and
    /// none after: [`Db::last_sequence`] of the checkpoint once opened.
    pub sequence: SequenceNumber,
    /// SSTables hard-linked (they share their bytes with the source's).
    pub tables_linked: u64,
    /// SSTables copied, where the file system could not link them.
    pub tables_copied: u64,
    /// Bytes of every SSTable of the checkpoint, linked or copied.
    pub table_bytes: u64,
    /// Bytes copied: the copied SSTables' and the WALs'.
    pub bytes_copied: u64,
    /// WALs copied: every live WAL from the oldest one a memtable of any
    /// keyspace has writes in.
    pub wal_files: u64,
    /// Bytes of those WALs: the writes of the memtables, as logged.
    pub wal_bytes: u64,
    /// A temporary directory left by a checkpoint that did not finish (a
    /// crash, or a failure whose cleanup failed too) was found and removed.
    pub stale_temp_removed: bool,
}

/// The temporary directory of a checkpoint into `target`:
/// `target` with [`CHECKPOINT_TEMP_SUFFIX`] appended to its name.
///
/// # Errors
/// [`Error::InvalidArgument`] if `target` has no file name (`/`, `..`).
pub fn checkpoint_temp_dir(target: &Path) -> Result<PathBuf> {
    let name = target.file_name().ok_or_else(|| {
        Error::InvalidArgument(format!(
            "checkpoint target {} names no directory",
            target.display()
        ))
    })?;
    let mut tmp = name.to_os_string();
    tmp.push(CHECKPOINT_TEMP_SUFFIX);
    Ok(target.with_file_name(tmp))
}

impl Db {
    /// Makes a consistent copy of the whole database in the new directory
    /// `dir`: every write acknowledged before the call, and nothing
    /// committed after the moment the call fixed (the report's
    /// [`sequence`](CheckpointReport::sequence)), as SSTables hard-linked
    /// where the file system allows (copied otherwise), the WAL prefixes
    /// of the memtables not yet flushed, of every keyspace, and a fresh
    /// manifest, `CURRENT`
    /// and `OPTIONS`. `dir` then opens as an ordinary, writable database
    /// (it shares no file with this one that either ever changes:
    /// SSTables are immutable). Writes, flushes and compactions go on
    /// meanwhile; writers wait only while the point is fixed (a few
    /// system calls), not for the copying. `dir`'s parent is created if
    /// missing.
    ///
    /// The checkpoint is built in `<dir>.checkpoint-tmp` and renamed to
    /// `dir` once complete and synced: after a crash or an error `dir` is
    /// absent or a complete checkpoint, and the next checkpoint to `dir`
    /// removes a temporary directory left behind (an error removes its own
    /// unless that fails too).
    ///
    /// # Errors
    /// - [`Error::TargetExists`] if `dir` exists (nothing is changed);
    /// - [`Error::InvalidArgument`] if `dir` has no name or lies inside
    ///   this database's directory, or if called inside this database's
    ///   [`Db::update`] closure;
    /// - [`Error::ReadOnly`] on a handle opened with [`Db::open_read_only`]
    ///   (it holds writes replayed into memory, with no WAL of its own);
    /// - [`Error::Background`] if an earlier failure made the database
    ///   read-only (its WAL may end in records that were never
    ///   acknowledged);
    /// - [`Error::Io`] if a file operation fails (of kind `WouldBlock`
    ///   when another checkpoint is being made into `dir`). The source
    ///   database is unaffected either way.
    ///
    /// # Example
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let db = siftdb::Db::open(dir.path().join("db"))?;
    /// db.put("k", "v1")?;
    /// db.flush()?;
    /// db.put("k", "v2")?; // still in the memtable: its WAL is copied
    /// let report = db.checkpoint(dir.path().join("backup"))?;
    /// assert_eq!(report.tables_linked + report.tables_copied, 1);
    /// db.put("k", "v3")?; // after the checkpoint
    ///
    /// let copy = siftdb::Db::open(dir.path().join("backup"))?;
    /// assert_eq!(copy.get("k")?.as_deref(), Some(&b"v2"[..]));
    /// assert_eq!(copy.last_sequence(), report.sequence);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<CheckpointReport> {
        self.inner.checkpoint(dir.as_ref())
    }
}

/// A WAL opened while the point was fixed, and its length then.
struct PinnedLog {
    number: u64,
    path: PathBuf,
    file: File,
    len: u64,
}

/// What the checkpoint copies, fixed under the writer and versions locks.
struct Point {
    sequence: SequenceNumber,
    /// Every keyspace's version, the default's first: keeps every table
    /// they list on disk until the checkpoint is made.
    versions: Vec<Arc<Version>>,
    wals: Vec<PinnedLog>,
    /// The first record of the checkpoint's manifest.
    snapshot: VersionEdit,
    manifest_number: u64,
}

impl DbInner {
    fn checkpoint(&self, target: &Path) -> Result<CheckpointReport> {
        self.refuse_inside_update("checkpoint")?;
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        self.check_writable()?;
        let fs = &**self.fs();
        let tmp = checkpoint_temp_dir(target)?;
        if exists(target)? {
            return Err(Error::TargetExists(target.to_path_buf()));
        }
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        // Before and after making the parent: first as far as it exists
        // (so nothing is made inside the database), then resolved whole.
        self.refuse_inside_source(target, existing_ancestor(parent))?;
        fs.create_dir_all(parent)
            .context(|| format!("create directory {}", parent.display()))?;
        self.refuse_inside_source(target, parent)?;
        let claim = claim_temp_dir(fs, &tmp, target)?;
        let made = self.make_checkpoint(fs, &tmp, target, parent);
        if made.is_err() && exists(&tmp).unwrap_or(true) {
            // Best effort: a leftover is removed by the next attempt.
            let _ = fs.remove_dir_all(&tmp);
        }
        let stale = claim.stale;
        drop(claim);
        let mut report = made?;
        report.stale_temp_removed = stale;
        Ok(report)
    }

    /// Refuses `target` if `dir`, an existing directory at or above it,
    /// is this database's directory or lies below it (the database's open
    /// would find a foreign directory).
    fn refuse_inside_source(&self, target: &Path, dir: &Path) -> Result<()> {
        let canonical = |p: &Path| {
            p.canonicalize()
                .context(|| format!("resolve {}", p.display()))
        };
        if canonical(dir)?.starts_with(canonical(&self.dir)?) {
            return Err(Error::InvalidArgument(format!(
                "checkpoint target {} lies inside the database directory {}",
                target.display(),
                self.dir.display()
            )));
        }
        Ok(())
    }

    /// Steps 2 to 4 of the module docs, in the claimed `tmp`.
    fn make_checkpoint(
        &self,
        fs: &dyn FileSystem,
        tmp: &Path,
        target: &Path,
        parent: &Path,
    ) -> Result<CheckpointReport> {
        let point = self.fix_point()?;
        sync_point::reach(&self.options.sync_points, SyncPoint::CheckpointAfterPoint);
        let mut report = CheckpointReport {
            path: target.to_path_buf(),
            sequence: point.sequence,
            tables_linked: 0,
            tables_copied: 0,
            table_bytes: 0,
            bytes_copied: 0,
            wal_files: 0,
            wal_bytes: 0,
            stale_temp_removed: false,
        };
        for (_, f) in point.versions.iter().flat_map(|v| v.files()) {
            let (src, dst) = (f.table.path(), filename::table_path(tmp, f.meta.number));
            report.table_bytes += f.meta.file_size;
            match fs.hard_link(src, &dst) {
                Ok(()) => report.tables_linked += 1,
                Err(e) if cannot_link(&e) => {
                    let file = File::open(src).context(|| format!("open {}", src.display()))?;
                    let n = copy_prefix(fs, &file, src, &dst, f.meta.file_size)?;
                    report.tables_copied += 1;
                    report.bytes_copied += n;
                }
                Err(e) => {
                    return Err(Error::io(
                        format!("link {} to {}", src.display(), dst.display()),
                        e,
                    ))
                }
            }
        }
        for w in &point.wals {
            let dst = filename::wal_path(tmp, w.number);
            let n = copy_prefix(fs, &w.file, &w.path, &dst, w.len)?;
            report.wal_files += 1;
            report.wal_bytes += n;
            report.bytes_copied += n;
        }
        // The versions' tables are linked or copied: let them go.
        drop(point.versions);
        // Syncs the manifest and the directory, then points CURRENT at it
        // (temporary file, sync, rename, directory sync).
        Manifest::create(fs, tmp, point.manifest_number, &point.snapshot)?;
        // Temporary file 000000.tmp: no other file of the checkpoint has
        // number 0.
        stored_options::write(fs, tmp, 0, &self.options)?;
        // The links and the WAL copies' names.
        manifest::sync_dir(fs, tmp)?;
        sync_point::reach(&self.options.sync_points, SyncPoint::CheckpointBeforeRename);
        if exists(target)? {
            return Err(Error::TargetExists(target.to_path_buf()));
        }
        fs.rename(tmp, target)
            .context(|| format!("rename {} to {}", tmp.display(), target.display()))?;
        manifest::sync_dir(fs, parent)?;
        Ok(report)
    }

    /// Step 2 of the module docs.
    ///
    /// # Errors
    /// [`Error::Background`] after an earlier failure; [`Error::Io`] if a
    /// WAL cannot be opened.
    fn fix_point(&self) -> Result<Point> {
        let ws = self.write.lock();
        self.check_writable()?;
        // A flush installs its version under this lock and deletes a WAL
        // only once every keyspace's log number *in the manifest* is past
        // it, so every WAL at or above the oldest live memtable's exists.
        let vs = self.versions.lock();
        let keyspaces = self.all_keyspaces();
        let views: Vec<Arc<SuperVersion>> = keyspaces
            .iter()
            .map(|ks| ks.current.read().clone())
            .collect();
        // Each keyspace's `Lmem` (DESIGN.md 9.1): its writes in
        // older WALs are in the tables of its pinned version.
        let log_numbers: Vec<u64> = views.iter().map(|sv| sv.oldest_wal()).collect();
        let oldest = log_numbers.iter().copied().min().unwrap_or(ws.wal_number);
        // Every WAL from the oldest `Lmem` on, not only those a memtable
        // names: a WAL may hold only writes of a keyspace whose memtable
        // started in an older one (RocksDB #7789).
        let mut wals = Vec::new();
        // Closed WALs are synced and dropped under this lock.
        let closed = self.closed_wals.lock();
        for w in live_wals(pin_wals(&**self.fs(), &self.dir)?, oldest)? {
            // The end of its last committed record: a writer's offset
            // while it has one, the WAL being written or one closed and
            // not yet synced (a mapped WAL is longer than its records
            // until its writer is dropped: src/fs/mapped_log.rs);
            // otherwise the file's length.
            let writer_offset = std::iter::once(ws.wal.as_ref())
                .flatten()
                .chain(closed.iter())
                .find(|l| l.path() == w.path)
                .map(LogWriter::offset);
            let len = match writer_offset {
                Some(offset) => offset,
                None => w
                    .file
                    .metadata()
                    .context(|| format!("stat {}", w.path.display()))?
                    .len(),
            };
            wals.push(PinnedLog {
                number: w.number,
                path: w.path,
                file: w.file,
                len,
            });
        }
        drop(closed);
        let manifest_number = self.next_file_number.fetch_add(1, Ordering::SeqCst);
        let others: BTreeMap<u32, Arc<Version>> = keyspaces
            .iter()
            .zip(&views)
            .skip(1)
            .map(|(ks, sv)| (ks.id, Arc::clone(&sv.version)))
            .collect();
        let mut snapshot = vs.snapshot(&views[0].version, &others, manifest_number + 1);
        snapshot.log_number = Some(log_numbers[0]);
        for (ks, &log_number) in keyspaces.iter().zip(&log_numbers).skip(1) {
            if let Some(section) = snapshot.keyspaces.get_mut(&ks.id) {
                section.log_number = Some(log_number);
            }
        }
        let sequence = SequenceNumber(ws.last_seq);
        drop(vs);
        drop(ws);
        Ok(Point {
            sequence,
            versions: views.iter().map(|sv| Arc::clone(&sv.version)).collect(),
            wals,
            snapshot,
            manifest_number,
        })
    }
}

/// Whether `path` names anything (a dangling symlink included).
fn exists(path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(format!("stat {}", path.display()), e)),
    }
}

/// Whether a failed `hard_link` says that the file system cannot link
/// (so copying is the remedy) rather than that something failed.
fn cannot_link(e: &io::Error) -> bool {
    // EPERM: the file system does not do links (FAT, some FUSE); EMLINK:
    // the file has too many names already.
    const EPERM: i32 = 1;
    const EMLINK: i32 = 31;
    matches!(
        e.kind(),
        io::ErrorKind::Unsupported | io::ErrorKind::CrossesDevices
    ) || matches!(e.raw_os_error(), Some(EPERM | EMLINK))
}

/// Writes the first `len` bytes of `src` (opened from `src_path`) to the
/// new file `dst`, synced; returns `len`.
///
/// # Errors
/// [`Error::Io`] if a read, the creation, a write or the sync fails, or
/// (kind `UnexpectedEof`) if `src` is shorter than `len`.
fn copy_prefix(
    fs: &dyn FileSystem,
    src: &File,
    src_path: &Path,
    dst: &Path,
    len: u64,
) -> Result<u64> {
    let what = || format!("copy {} to {}", src_path.display(), dst.display());
    let mut out = fs.create_new(dst).context(what)?;
    let mut buf = vec![0u8; COPY_CHUNK.min(len as usize)];
    let mut at = 0u64;
    while at < len {
        let want = (len - at).min(buf.len() as u64) as usize;
        let n = src.read_at(&mut buf[..want], at).context(what)?;
        if n == 0 {
            return Err(Error::io(
                what(),
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("{} ends at byte {at} of {len}", src_path.display()),
                ),
            ));
        }
        out.write_all(&buf[..n]).context(what)?;
        at += n as u64;
    }
    out.sync_all().context(what)?;
    Ok(len)
}

/// The claimed temporary directory: its `flock` is held while this lives.
struct Claim {
    _lock: File,
    /// It held a stale checkpoint's files, now removed.
    stale: bool,
}

/// Creates (or finds) `tmp` and takes an exclusive `flock` on it, so that
/// no other checkpoint into `target` uses it meanwhile; then empties it.
/// A directory that was there before and could be locked was left by a
/// checkpoint that did not finish.
///
/// # Errors
/// [`Error::Io`] of kind `WouldBlock` if another checkpoint holds it;
/// [`Error::Io`] if it cannot be created, locked or emptied, or is not a
/// directory.
fn claim_temp_dir(fs: &dyn FileSystem, tmp: &Path, target: &Path) -> Result<Claim> {
    let what = || format!("claim {}", tmp.display());
    // A few rounds: another process may remove and recreate the name
    // between our steps.
    for _ in 0..8 {
        let created = match fs.create_dir(tmp) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => false,
            Err(e) => return Err(Error::io(format!("create directory {}", tmp.display()), e)),
        };
        let dir = match File::open(tmp) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(what(), e)),
        };
        let meta = dir.metadata().context(what)?;
        if !meta.is_dir() {
            return Err(Error::io(
                what(),
                io::Error::new(io::ErrorKind::NotADirectory, "not a directory"),
            ));
        }
        match dir.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Error::io(
                    format!(
                        "another checkpoint into {} is being made (it holds {})",
                        target.display(),
                        tmp.display()
                    ),
                    io::Error::from(io::ErrorKind::WouldBlock),
                ))
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(what(), e)),
        }
        // The name may have moved on to another directory since the open.
        match std::fs::symlink_metadata(tmp) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Error::io(
                    what(),
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "a symbolic link, not a directory of siftdb's",
                    ),
                ))
            }
            Ok(m) if m.dev() == meta.dev() && m.ino() == meta.ino() => {}
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(what(), e)),
        }
        let mut stale = !created;
        for name in fs.list_dir(tmp).context(what)? {
            stale = true;
            let path = tmp.join(&name);
            let removed = match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => fs.remove_dir_all(&path),
                _ => fs.remove_file(&path),
            };
            removed.context(|| format!("remove {}", path.display()))?;
        }
        return Ok(Claim { _lock: dir, stale });
    }
    Err(Error::io(
        what(),
        io::Error::new(
            io::ErrorKind::Interrupted,
            "the directory kept being replaced; try again",
        ),
    ))
}

/// The nearest directory at or above `dir` that exists (`.` for a
/// relative path none of whose ancestors exists).
fn existing_ancestor(dir: &Path) -> &Path {
    dir.ancestors()
        .find(|a| !a.as_os_str().is_empty() && a.exists())
        .unwrap_or(Path::new("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_temporary_directory_is_a_sibling() {
        assert_eq!(
            checkpoint_temp_dir(Path::new("/a/b/cp")).unwrap(),
            Path::new("/a/b/cp.checkpoint-tmp")
        );
        assert_eq!(
            checkpoint_temp_dir(Path::new("cp")).unwrap(),
            Path::new("cp.checkpoint-tmp")
        );
        assert!(matches!(
            checkpoint_temp_dir(Path::new("/")),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn a_claim_excludes_another_and_a_stale_directory_is_emptied() {
        let dir = tempfile::tempdir().unwrap();
        let (target, tmp) = (dir.path().join("cp"), dir.path().join("cp.checkpoint-tmp"));
        let fs = crate::fs::StdFs;
        let first = claim_temp_dir(&fs, &tmp, &target).unwrap();
        assert!(!first.stale);
        std::fs::write(tmp.join("000007.sst"), b"x").unwrap();
        let e = claim_temp_dir(&fs, &tmp, &target).err().unwrap();
        assert!(
            matches!(&e, Error::Io { source, .. } if source.kind() == io::ErrorKind::WouldBlock),
            "{e}"
        );
        drop(first);
        // As a crash leaves it: files, and no lock.
        let second = claim_temp_dir(&fs, &tmp, &target).unwrap();
        assert!(second.stale);
        assert!(fs.list_dir(&tmp).unwrap().is_empty());
        drop(second);

        // Not a directory, or a link to one: refused, left alone.
        let (target, tmp) = (dir.path().join("f"), dir.path().join("f.checkpoint-tmp"));
        std::fs::write(&tmp, b"x").unwrap();
        let e = claim_temp_dir(&fs, &tmp, &target).err().unwrap();
        assert!(e.to_string().contains("not a directory"), "{e}");
        let (target, tmp) = (dir.path().join("l"), dir.path().join("l.checkpoint-tmp"));
        std::os::unix::fs::symlink(dir.path().join("cp.checkpoint-tmp"), &tmp).unwrap();
        let e = claim_temp_dir(&fs, &tmp, &target).err().unwrap();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(
            std::fs::read(dir.path().join("f.checkpoint-tmp")).unwrap(),
            b"x"
        );
    }

    #[test]
    fn copy_prefix_copies_exactly_the_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("a");
        std::fs::write(&src, b"0123456789").unwrap();
        let file = File::open(&src).unwrap();
        let fs = crate::fs::StdFs;
        let dst = dir.path().join("b");
        assert_eq!(copy_prefix(&fs, &file, &src, &dst, 4).unwrap(), 4);
        assert_eq!(std::fs::read(&dst).unwrap(), b"0123");
        let long = dir.path().join("c");
        let e = copy_prefix(&fs, &file, &src, &long, 11).unwrap_err();
        assert!(
            matches!(&e, Error::Io { source, .. } if source.kind() == io::ErrorKind::UnexpectedEof),
            "{e}"
        );
        assert_eq!(
            copy_prefix(&fs, &file, &src, &dir.path().join("d"), 0).unwrap(),
            0
        );
    }

    #[test]
    fn only_lack_of_support_falls_back_to_a_copy() {
        assert!(cannot_link(&io::Error::from(io::ErrorKind::CrossesDevices)));
        assert!(cannot_link(&io::Error::from(io::ErrorKind::Unsupported)));
        assert!(cannot_link(&io::Error::from_raw_os_error(1)));
        assert!(!cannot_link(&io::Error::from_raw_os_error(5)));
        assert!(!cannot_link(&io::Error::from_raw_os_error(28)));
    }
}
