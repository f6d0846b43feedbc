//! [`LogWriter`]: appends framed records (module docs of [`crate::log`]).

use std::path::{Path, PathBuf};

use super::{encode_header, parent_dir, sync_dir, HEADER_LEN};
use crate::error::{Error, IoContext, Result};
use crate::fs::{FileSystem, WritableFile};

/// Appends framed records to a log file.
///
/// Not internally synchronized: wrap it in a lock to share it.
#[derive(Debug)]
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    /// Bytes in the file, i.e. where the next record starts.
    offset: u64,
    /// Scratch space for header + payload, reused across appends.
    buf: Vec<u8>,
    /// Set after a failed write or sync; every later call fails with it.
    failed: Option<String>,
    /// Set by [`LogWriter::create_deferring_dir_sync`]: the directory has
    /// not been synced since the file was created, so the next
    /// [`LogWriter::sync`] syncs it first.
    pending_dir_sync: Option<std::sync::Arc<dyn FileSystem>>,
}

impl LogWriter {
    /// Creates a new, empty log at `path` through `fs`, then syncs `path`'s
    /// parent directory so the file's existence is durable.
    ///
    /// # Errors
    /// [`Error::Io`] if `path` already exists (a log is never overwritten),
    /// or if creating the file or syncing the directory fails (the empty
    /// file may then be left behind).
    pub fn create(fs: &dyn FileSystem, path: &Path) -> Result<LogWriter> {
        let file = fs
            .create_new(path)
            .context(|| format!("create log {}", path.display()))?;
        sync_dir(fs, parent_dir(path))?;
        Ok(LogWriter::from_file(file, path, 0))
    }

    /// As [`LogWriter::create`], for a write-ahead log: the file comes
    /// from [`FileSystem::create_log`] (with [`crate::fs::StdFs`] on Linux,
    /// appended through a memory map, with a zero-filled tail until the
    /// writer is dropped).
    ///
    /// # Errors
    /// As [`LogWriter::create`].
    pub fn create_wal(fs: &dyn FileSystem, path: &Path) -> Result<LogWriter> {
        let file = fs
            .create_log(path)
            .context(|| format!("create log {}", path.display()))?;
        sync_dir(fs, parent_dir(path))?;
        Ok(LogWriter::from_file(file, path, 0))
    }

    /// As [`LogWriter::create_wal`], but without syncing the directory: the
    /// first [`LogWriter::sync`] does it before it syncs the file, so a log
    /// whose records were synced still cannot vanish, but creating it costs
    /// no directory `fsync`. Until then a power loss may take the file as a
    /// whole; what it holds was never synced (a memtable rotation creates
    /// the next WAL this way, off the writer's path: DESIGN.md 11).
    ///
    /// # Errors
    /// [`Error::Io`] if `path` already exists or creating the file fails.
    pub fn create_deferring_dir_sync(
        fs: &std::sync::Arc<dyn FileSystem>,
        path: &Path,
    ) -> Result<LogWriter> {
        let file = fs
            .create_log(path)
            .context(|| format!("create log {}", path.display()))?;
        let mut w = LogWriter::from_file(file, path, 0);
        w.pending_dir_sync = Some(std::sync::Arc::clone(fs));
        Ok(w)
    }

    /// Opens an existing write-ahead log through `fs`
    /// ([`FileSystem::reopen_log_truncated`]) for appending after cutting it to
    /// its first `valid_len` bytes. `valid_len` must come from [`read_log`](super::read_log)
    /// (or [`LogReader::valid_len`](super::LogReader::valid_len)) on this same file, so that the new
    /// records follow the last complete one. If the file was longer (a
    /// torn tail), the cut is synced before this returns: a power loss can
    /// then never leave old tail bytes behind records appended later, which
    /// would read as damage rather than as a torn tail.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the file is shorter than `valid_len`;
    /// [`Error::Io`] if reading its length, opening, truncating or syncing
    /// fails.
    pub fn open_truncated(fs: &dyn FileSystem, path: &Path, valid_len: u64) -> Result<LogWriter> {
        let len = std::fs::metadata(path)
            .context(|| format!("stat log {}", path.display()))?
            .len();
        if len < valid_len {
            return Err(Error::InvalidArgument(format!(
                "cannot truncate {} ({len} bytes) to a longer length {valid_len}",
                path.display()
            )));
        }
        let file = fs
            .reopen_log_truncated(path, valid_len)
            .context(|| format!("reopen log {} at {valid_len}", path.display()))?;
        let mut writer = LogWriter::from_file(file, path, valid_len);
        if len > valid_len {
            writer.sync()?;
        }
        Ok(writer)
    }

    fn from_file(file: Box<dyn WritableFile>, path: &Path, offset: u64) -> LogWriter {
        LogWriter {
            file,
            path: path.to_path_buf(),
            offset,
            buf: Vec::new(),
            failed: None,
            pending_dir_sync: None,
        }
    }

    /// Appends one record holding `payload` and returns the record's offset
    /// (where its header starts) in bytes from the start of the file.
    ///
    /// Header and payload go to the file in a single `write_all`, without
    /// user-space buffering: once this returns, a process crash cannot lose
    /// the record, but a power loss can until [`LogWriter::sync`] returns.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `payload` is longer than
    /// [`MAX_PAYLOAD_LEN`](super::MAX_PAYLOAD_LEN) (nothing is written); [`Error::Io`] if the write
    /// fails, after which the file may end in a partial record and this
    /// writer fails every later call.
    pub fn append(&mut self, payload: &[u8]) -> Result<u64> {
        let at = self.offset;
        self.append_all([payload])?;
        Ok(at)
    }

    /// Appends one record per payload, in order, with one `write_all` for
    /// them all (group commit's single write). As for [`LogWriter::append`],
    /// once this returns a process crash cannot lose them; a crash during
    /// the call may keep any prefix of the records (each one whole or not at
    /// all, by the torn-tail rules).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if a payload is longer than
    /// [`MAX_PAYLOAD_LEN`](super::MAX_PAYLOAD_LEN) (nothing is written); [`Error::Io`] if the write
    /// fails, after which the file may end in a partial record and this
    /// writer fails every later call.
    pub fn append_all<'a>(&mut self, payloads: impl IntoIterator<Item = &'a [u8]>) -> Result<()> {
        self.check_usable()?;
        self.buf.clear();
        for payload in payloads {
            let header = encode_header(payload)?;
            self.buf.reserve(HEADER_LEN + payload.len());
            self.buf.extend_from_slice(&header);
            self.buf.extend_from_slice(payload);
        }
        if self.buf.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.file.write_all(&self.buf) {
            let context = format!("append to log {} at {}", self.path.display(), self.offset);
            self.failed = Some(format!("{context}: {e}"));
            return Err(Error::io(context, e));
        }
        self.offset += self.buf.len() as u64;
        // Do not keep a multi-megabyte scratch buffer alive after one big
        // record.
        if self.buf.capacity() > 1 << 20 {
            self.buf = Vec::new();
        }
        Ok(())
    }

    /// Tells the file nothing more will be appended
    /// ([`WritableFile::close_for_writes`](crate::fs::WritableFile::close_for_writes)):
    /// called on a WAL closed by a rotation, before its last sync.
    pub fn close_for_writes(&mut self) {
        self.file.close_for_writes();
    }

    /// Makes every appended record durable (`fdatasync`, which also persists
    /// the file length), after syncing the directory if the log was made by
    /// [`LogWriter::create_deferring_dir_sync`] and this is its first sync.
    ///
    /// # Errors
    /// [`Error::Io`] if the sync fails, after which this writer fails every
    /// later call (what reached the disk is unknown).
    pub fn sync(&mut self) -> Result<()> {
        self.check_usable()?;
        if let Some(fs) = &self.pending_dir_sync {
            if let Err(e) = sync_dir(&**fs, parent_dir(&self.path)) {
                self.failed = Some(e.to_string());
                return Err(e);
            }
            self.pending_dir_sync = None;
        }
        if let Err(e) = self.file.sync_data() {
            let context = format!("sync log {}", self.path.display());
            self.failed = Some(format!("{context}: {e}"));
            return Err(Error::io(context, e));
        }
        Ok(())
    }

    /// Bytes in the file: the offset the next record will get.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn check_usable(&self) -> Result<()> {
        match &self.failed {
            None => Ok(()),
            Some(why) => Err(Error::io(
                format!("log {} is unusable", self.path.display()),
                std::io::Error::other(format!("an earlier operation failed: {why}")),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::{payload_len, read_log, LogReader, LogRecord};
    use super::*;
    use crate::fs::StdFs;

    /// Counts directory syncs, passing everything to `StdFs`.
    #[derive(Debug, Default)]
    struct DirSyncCounter(std::sync::atomic::AtomicUsize);

    impl FileSystem for DirSyncCounter {
        fn create(&self, p: &Path) -> std::io::Result<Box<dyn WritableFile>> {
            crate::fs::StdFs.create(p)
        }
        fn create_new(&self, p: &Path) -> std::io::Result<Box<dyn WritableFile>> {
            crate::fs::StdFs.create_new(p)
        }
        fn reopen_truncated(&self, p: &Path, len: u64) -> std::io::Result<Box<dyn WritableFile>> {
            crate::fs::StdFs.reopen_truncated(p, len)
        }
        fn rename(&self, a: &Path, b: &Path) -> std::io::Result<()> {
            crate::fs::StdFs.rename(a, b)
        }
        fn remove_file(&self, p: &Path) -> std::io::Result<()> {
            crate::fs::StdFs.remove_file(p)
        }
        fn sync_dir(&self, d: &Path) -> std::io::Result<()> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            crate::fs::StdFs.sync_dir(d)
        }
        fn create_dir_all(&self, d: &Path) -> std::io::Result<()> {
            crate::fs::StdFs.create_dir_all(d)
        }
        fn list_dir(&self, d: &Path) -> std::io::Result<Vec<std::ffi::OsString>> {
            crate::fs::StdFs.list_dir(d)
        }
    }

    #[test]
    fn a_deferred_directory_sync_happens_at_the_first_sync_only() {
        let dir = tempfile::tempdir().unwrap();
        let counter = std::sync::Arc::new(DirSyncCounter::default());
        let fs: std::sync::Arc<dyn FileSystem> = counter.clone();
        let syncs = || counter.0.load(std::sync::atomic::Ordering::SeqCst);
        LogWriter::create(&*fs, &dir.path().join("000001.log")).unwrap();
        assert_eq!(syncs(), 1, "create syncs the directory at once");
        let mut w =
            LogWriter::create_deferring_dir_sync(&fs, &dir.path().join("000002.log")).unwrap();
        w.append(b"x").unwrap();
        assert_eq!(syncs(), 1, "no directory sync before the first sync");
        w.sync().unwrap();
        assert_eq!(syncs(), 2);
        w.append(b"y").unwrap();
        w.sync().unwrap();
        assert_eq!(syncs(), 2, "once only");
    }

    #[test]
    fn append_all_frames_each_payload_in_order_in_one_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let mut w = LogWriter::create(&crate::fs::StdFs, &path).unwrap();
        w.append(b"first").unwrap();
        w.append_all([&b"abc"[..], b"", b"de"]).unwrap();
        assert_eq!(w.offset(), (HEADER_LEN * 4 + 5 + 3 + 2) as u64);
        let bytes = std::fs::read(&path).unwrap();
        let expected: Vec<u8> = [&b"first"[..], b"abc", b"", b"de"]
            .iter()
            .flat_map(|p| frame(p))
            .collect();
        assert_eq!(bytes, expected);
        // Nothing to append is a no-op.
        w.append_all([]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), expected.len());
    }

    #[test]
    fn writer_and_reader_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let mut w = LogWriter::create(&StdFs, &path).unwrap();
        assert_eq!(w.path(), path);
        assert_eq!(w.append(b"abc").unwrap(), 0);
        assert_eq!(w.append(b"").unwrap(), 15);
        assert_eq!(w.append(b"hello").unwrap(), 27);
        w.sync().unwrap();
        assert_eq!(w.offset(), 44);
        assert_eq!(std::fs::read(&path).unwrap(), three());

        let c = read_log(&path).unwrap();
        assert_eq!(
            c.records,
            vec![
                LogRecord {
                    offset: 0,
                    payload: b"abc".to_vec()
                },
                LogRecord {
                    offset: 15,
                    payload: vec![]
                },
                LogRecord {
                    offset: 27,
                    payload: b"hello".to_vec()
                },
            ]
        );
        assert_eq!(c.torn_tail, None);
        assert_eq!(c.valid_len, 44);

        let from_iter: Vec<LogRecord> = LogReader::open(&path)
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(from_iter, c.records);
    }

    #[test]
    fn append_is_visible_without_sync() {
        // No user-space buffering: another reader sees the record at once.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.log");
        let mut w = LogWriter::create(&StdFs, &path).unwrap();
        w.append(b"x").unwrap();
        assert_eq!(payloads(&read_log(&path).unwrap()), [b"x"]);
    }

    #[test]
    fn create_refuses_to_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.log");
        std::fs::write(&path, b"keep").unwrap();
        let err = LogWriter::create(&StdFs, &path).unwrap_err();
        assert!(matches!(err, Error::Io { ref source, .. }
            if source.kind() == std::io::ErrorKind::AlreadyExists));
        assert_eq!(std::fs::read(&path).unwrap(), b"keep");
    }

    /// A file whose writes fail after `ok_writes` successful ones, and
    /// whose syncs fail if `fail_sync`.
    #[derive(Debug)]
    struct Failing {
        ok_writes: usize,
        fail_sync: bool,
    }

    impl WritableFile for Failing {
        fn write_all(&mut self, _: &[u8]) -> std::io::Result<()> {
            match self.ok_writes.checked_sub(1) {
                Some(n) => {
                    self.ok_writes = n;
                    Ok(())
                }
                None => Err(std::io::Error::from_raw_os_error(28)),
            }
        }
        fn sync_data(&mut self) -> std::io::Result<()> {
            match self.fail_sync {
                true => Err(std::io::Error::from_raw_os_error(5)),
                false => Ok(()),
            }
        }
        fn sync_all(&mut self) -> std::io::Result<()> {
            self.sync_data()
        }
    }

    #[test]
    fn failed_append_or_sync_makes_the_writer_refuse_everything() {
        let path = Path::new("1.log");
        for (ok_writes, fail_sync) in [(1, false), (5, true)] {
            let file = Box::new(Failing {
                ok_writes,
                fail_sync,
            });
            let mut w = LogWriter::from_file(file, path, 0);
            assert_eq!(w.append(b"first").unwrap(), 0);
            let first = if fail_sync {
                w.sync()
            } else {
                w.append(b"second").map(drop)
            };
            let cause = first.unwrap_err().to_string();
            let cause = cause.trim_start_matches("I/O error: ");
            assert!(cause.contains("os error"), "{cause}");
            for later in [w.append(b"third").map(drop), w.sync()] {
                let e = later.unwrap_err().to_string();
                assert!(e.contains("unusable") && e.contains(cause), "{e}");
            }
            assert_eq!(w.offset(), 17, "a failed append does not advance");
        }
    }

    #[test]
    fn oversized_payload_is_invalid_argument() {
        assert!(payload_len(u32::MAX as usize).is_ok());
        #[cfg(target_pointer_width = "64")]
        assert!(matches!(
            payload_len(u32::MAX as usize + 1),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn open_truncated_appends_after_the_last_complete_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.log");
        let mut b = three();
        b.extend_from_slice(&[0xaa; 5]);
        std::fs::write(&path, &b).unwrap();
        let c = read_log(&path).unwrap();
        let mut w = LogWriter::open_truncated(&StdFs, &path, c.valid_len).unwrap();
        assert_eq!(w.offset(), 44);
        assert_eq!(w.append(b"new").unwrap(), 44);
        w.sync().unwrap();
        // While open, a mapped WAL (Linux) ends in zero-filled space that
        // reads as the end; dropped, it is cut to what was written.
        let check = |open: bool| {
            let c = read_log(&path).unwrap();
            assert_eq!(payloads(&c), [&b"abc"[..], b"", b"hello", b"new"]);
            assert_eq!((&c.torn_tail, c.valid_len), (&None, 59));
            assert_eq!(c.file_len > 59, open && cfg!(target_os = "linux"));
        };
        check(true);
        drop(w);
        check(false);
        assert!(LogWriter::open_truncated(&StdFs, &path, 1000).is_err());
    }
}
