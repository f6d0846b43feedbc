//! A write-ahead log appended through a shared memory map (Linux): what
//! [`StdFs`](super::StdFs) returns from
//! [`FileSystem::create_log`](super::FileSystem::create_log).
//!
//! A `write` per commit costs a system call and the kernel's whole write
//! path (about half of a 1.9 µs put in `fillseq`, DESIGN.md 11).
//! Copying the bytes into a shared mapping of the file instead keeps the
//! guarantee a `write` gives: once the copy returns the bytes are in the
//! page cache, which belongs to the kernel, so a crash of the process
//! cannot lose them; [`WritableFile::sync_data`] (`fdatasync`, which writes
//! back pages dirtied through a mapping as it does any other) makes them
//! survive a power loss, as before.
//!
//! The file is extended ahead of the writes by `fallocate` in steps of
//! [`WINDOW`] bytes, and the mapping covers the window being written, so a
//! page fault never has to allocate disk space: a full disk is an
//! `ENOSPC` from [`WritableFile::write_all`], not a `SIGBUS`. Dropping the
//! file cuts it back to the bytes written. A crash leaves a zero-filled
//! tail of up to one window instead, which the log reader takes as the end
//! of the log (src/log/mod.rs, rule 2).
//!
//! Publication order: each `write_all` (one group commit: whole records)
//! copies its first 4 bytes (the first record's length, not zero: no WAL
//! record is empty), then all the others but those at [`PUBLISHED_LAST`],
//! then, after a release fence, those: the first record's length
//! checksum. A process killed in the middle of the copy therefore leaves
//! the group whole, or not begun (zeros: the end of the log), or a first
//! header with its length and a zero checksum: a torn tail by rule 2.
//! (Copy order alone would not do: `memcpy` stores the first bytes of a
//! large copy last.) Every state of the file is one of those, so a reader
//! in another process (a read-only open, `kvctl`) that read the file at
//! one instant would find no more. But a read is no snapshot: one that
//! reads a header before the writer copies its group and the bytes after
//! it once they are copied finds a zeroed header (or a zero length)
//! followed by data, and one can, in a window of nanoseconds, catch the
//! checksum's store half done where it straddles a cache line (a checksum
//! zero in part). Both read as corruption by rule 2, and reading again
//! finds the group whole: `kvctl verify` reported the first in 2 of 240
//! runs beside a process writing with 8 threads. So a reader that takes
//! no lock reads a WAL again before it reports damage while a process
//! holds the database open for writing
//! (`db::recovery::reread_while_a_writer_appends`).
//!
//! The mapping is `SIGBUS`-prone in the way the SSTable maps are: a file
//! truncated under it by another program, or a disk that fails to read a
//! page back, kills the process rather than returning an error. Neither
//! loses an acknowledged write.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{fence, Ordering};

use memmap2::{MmapMut, MmapOptions};

use super::WritableFile;

/// Bytes the file is extended by, and the alignment and least length of
/// the mapped window: 1 MiB, a multiple of every page size Linux uses, so
/// the mapping's offset is always valid. A crash leaves at most this much
/// zero-filled tail; extending and mapping costs about 90 µs per window
/// (some 7,000 puts of 140 bytes).
pub const WINDOW: u64 = 1 << 20;

/// The bytes of each `write_all` that are copied last: the first log
/// record's `len_crc` (src/log/mod.rs).
pub const PUBLISHED_LAST: std::ops::Range<usize> = 4..8;

/// A log file appended through a shared, writable memory map of a
/// preallocated window.
#[derive(Debug)]
pub struct MappedLogFile {
    file: File,
    /// The mapped window; `None` until the first write, and while it is
    /// being replaced.
    map: Option<MmapMut>,
    /// Windows written before the current one, kept mapped until the file
    /// is closed for writes or dropped: unmapping a window costs about
    /// 1 µs per dirty page (300 µs for a full one), which belongs off the
    /// writer's path (the background thread closes and syncs a WAL that
    /// a rotation closed).
    retired: Vec<MmapMut>,
    /// File offset of the window's first byte (a multiple of [`WINDOW`]).
    map_start: u64,
    /// Bytes written: where the next `write_all` starts.
    len: u64,
}

impl MappedLogFile {
    /// Creates the file at `path` (failing if it exists) and preallocates
    /// its first window. Where the file system cannot preallocate
    /// (`fallocate` unsupported), returns the file opened for appending
    /// with `write` instead.
    ///
    /// # Errors
    /// The I/O error of creating, preallocating (`ENOSPC` on a full disk)
    /// or mapping the file; `AlreadyExists` if `path` exists.
    pub fn create_new(path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        MappedLogFile::start(file, path, 0)
    }

    /// Opens the existing file at `path` for appending after cutting it to
    /// its first `len` bytes (as [`FileSystem::reopen_truncated`](super::FileSystem::reopen_truncated)),
    /// mapped, or appended with `write` as [`MappedLogFile::create_new`]
    /// says.
    ///
    /// # Errors
    /// The I/O error of opening, truncating, preallocating or mapping it.
    pub fn reopen_truncated(path: &Path, len: u64) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        file.set_len(len)?;
        MappedLogFile::start(file, path, len)
    }

    /// Maps the window holding offset `len`, or falls back to a plain
    /// appending file if `fallocate` is not supported.
    fn start(file: File, path: &Path, len: u64) -> io::Result<Box<dyn WritableFile>> {
        let mut f = MappedLogFile {
            file,
            map: None,
            retired: Vec::new(),
            map_start: 0,
            len,
        };
        match f.ensure(0) {
            Ok(()) => Ok(Box::new(f)),
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                // Nothing was written: the length is still `len`.
                drop(f);
                Ok(Box::new(OpenOptions::new().append(true).open(path)?))
            }
            Err(e) => Err(e),
        }
    }

    /// Makes the window cover `need` more bytes from `len`: if it does
    /// not, preallocates from the window boundary at or below `len` to the
    /// one at or above `len + need` (at least one window), and maps that.
    fn ensure(&mut self, need: u64) -> io::Result<()> {
        let end = self.len + need;
        if let Some(m) = &self.map {
            if end <= self.map_start + m.len() as u64 {
                return Ok(());
            }
        }
        let start = self.len / WINDOW * WINDOW;
        let stop = end.div_ceil(WINDOW).max(start / WINDOW + 1) * WINDOW;
        let map_len = usize::try_from(stop - start)
            .map_err(|_| io::Error::other("log write larger than the address space"))?;
        self.retired.extend(self.map.take());
        fallocate(&self.file, start, stop - start)?;
        // SAFETY: the mapping is of a file this writer created (or, at
        // open, reopened under the database's LOCK) and is the only one to
        // write; [start, stop) lies inside the file, which `fallocate` has
        // just extended and backed with disk space. The bytes are only
        // ever copied into, never read as typed data, so a concurrent
        // change by another program cannot break memory safety; a
        // truncation by another program would raise SIGBUS (module docs).
        let map = unsafe {
            MmapOptions::new()
                .offset(start)
                .len(map_len)
                .map_mut(&self.file)?
        };
        self.map = Some(map);
        self.map_start = start;
        Ok(())
    }
}

impl WritableFile for MappedLogFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        self.ensure(buf.len() as u64)?;
        let at = (self.len - self.map_start) as usize;
        let Some(map) = self.map.as_mut() else {
            return Err(io::Error::other("log window not mapped"));
        };
        let dst = &mut map[at..at + buf.len()];
        let last = PUBLISHED_LAST.start.min(buf.len())..PUBLISHED_LAST.end.min(buf.len());
        dst[..last.start].copy_from_slice(&buf[..last.start]);
        dst[last.end..].copy_from_slice(&buf[last.end..]);
        // The checksum becomes visible after the rest (module docs). On
        // x86 this orders the compiler only: stores are seen in program
        // order.
        fence(Ordering::Release);
        dst[last.clone()].copy_from_slice(&buf[last]);
        self.len += buf.len() as u64;
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        // `fdatasync` writes back the pages dirtied through the mapping.
        self.file.sync_data()
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.file.sync_all()
    }

    /// Unmaps every window (a later write would map one again). Unmapping
    /// dirty pages costs about 1 µs each, on the caller's thread; the
    /// engine calls this on the background thread.
    fn close_for_writes(&mut self) {
        self.map = None;
        self.retired.clear();
    }
}

impl Drop for MappedLogFile {
    /// Unmaps the windows and cuts the preallocated tail off. A failure
    /// leaves the zero-filled tail, which readers take as the end.
    fn drop(&mut self) {
        self.map = None;
        self.retired.clear();
        let _ = self.file.set_len(self.len);
    }
}

/// Allocates disk space for `len` bytes at `offset` of `file`, extending
/// it if they end past its length (`fallocate(2)`, mode 0).
///
/// # Errors
/// The OS error: `ENOSPC` on a full disk, `EOPNOTSUPP` where the file
/// system cannot preallocate.
fn fallocate(file: &File, offset: u64, len: u64) -> io::Result<()> {
    let too_large = || io::Error::other("log offset out of range");
    let offset = libc::off_t::try_from(offset).map_err(|_| too_large())?;
    let len = libc::off_t::try_from(len).map_err(|_| too_large())?;
    // SAFETY: a plain system call on a descriptor `file` owns and keeps
    // open for the call; it reads and writes no memory of this process.
    let r = unsafe { libc::fallocate(file.as_raw_fd(), 0, offset, len) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(f: &mut Box<dyn WritableFile>, bytes: &[u8]) {
        f.write_all(bytes).unwrap();
    }

    #[test]
    fn bytes_land_in_order_across_windows_and_the_tail_is_cut_at_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let mut f = MappedLogFile::create_new(&path).unwrap();
        let mut expected = Vec::new();
        // Writes of odd sizes, one larger than a window, crossing windows.
        for (i, n) in [5usize, 3, 700_000, 1_500_000, 17, 400_000]
            .into_iter()
            .enumerate()
        {
            let chunk: Vec<u8> = (0..n).map(|j| (i * 31 + j % 251) as u8 | 1).collect();
            write(&mut f, &chunk);
            expected.extend_from_slice(&chunk);
        }
        // Preallocated ahead while open; read back through `read`.
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(on_disk.len() as u64 % WINDOW, 0);
        assert!(on_disk.len() > expected.len());
        assert_eq!(&on_disk[..expected.len()], &expected[..]);
        assert!(on_disk[expected.len()..].iter().all(|&b| b == 0));
        f.sync_data().unwrap();
        drop(f);
        assert_eq!(std::fs::read(&path).unwrap(), expected);
    }

    #[test]
    fn a_reopened_file_appends_after_the_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000002.log");
        std::fs::write(&path, b"keep-this|and-not-this").unwrap();
        let mut f = MappedLogFile::reopen_truncated(&path, 10).unwrap();
        write(&mut f, b"appended");
        drop(f);
        assert_eq!(std::fs::read(&path).unwrap(), b"keep-this|appended");
    }

    /// Whether `/proc/self/maps` shows a mapping of `path`.
    fn is_mapped(path: &Path) -> bool {
        let path = path.canonicalize().unwrap();
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines().any(|l| l.ends_with(path.to_str().unwrap()))
    }

    /// Closing for writes unmaps every window (the current and the
    /// retired ones); the file still syncs and is cut at drop, and a
    /// write after it maps a window again.
    #[test]
    fn closing_for_writes_unmaps_every_window() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000004.log");
        let mut f = MappedLogFile::create_new(&path).unwrap();
        let first = vec![7u8; 1_500_000];
        write(&mut f, &first);
        assert!(is_mapped(&path));
        f.close_for_writes();
        assert!(!is_mapped(&path));
        f.sync_data().unwrap();
        write(&mut f, b"late");
        assert!(is_mapped(&path));
        drop(f);
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(on_disk.len(), first.len() + 4);
        assert_eq!(&on_disk[first.len()..], b"late");
    }

    #[test]
    fn create_new_refuses_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000003.log");
        std::fs::write(&path, b"x").unwrap();
        let e = MappedLogFile::create_new(&path).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"x");
    }
}
