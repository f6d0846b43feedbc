//! [`Db`]: open, read, write, iterate, flush and close a database.
//!
//! Concurrency: any number of threads may call any method through a shared
//! `&Db` (or `Arc<Db>`). Writers are serialised by one mutex around the WAL;
//! readers take no lock beyond cloning an `Arc` of the current
//! [`SuperVersion`]. One background thread flushes frozen memtables.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex, RwLock};

use crate::compaction::{self, Compaction, MergeContext};
use crate::error::IoContext;
use crate::filename::{self, FileType};
use crate::filter::{hash_key, KeyHash};
use crate::iter::{DbIterator, EntrySource};
use crate::key::{SequenceNumber, ValueType};
use crate::log::{read_log, LogWriter};
use crate::memtable::MemTable;
use crate::sstable::{Table, TableBuilder, TableGet, TableOptions};
use crate::stats::{Counters, GetCounts, LevelStats, Stats};
use crate::version::edit::{FileMetaData, VersionEdit};
use crate::version::manifest::{self, Manifest, FORMAT_VERSION};
use crate::version::set::{ReplayedState, TableFile, Version};
use crate::write_batch::{check_lengths, decode_batch, WriteBatch};
use crate::{CompactionStyle, Error, Options, Result};

/// What a reader needs to see the whole database at one moment: the active
/// memtable, the frozen memtables waiting for flush (newest first) and the
/// current [`Version`] of SSTables. Replaced as a whole, never mutated.
#[derive(Debug)]
pub(crate) struct SuperVersion {
    pub mem: Arc<MemTable>,
    pub imms: Vec<Arc<MemTable>>,
    pub version: Arc<Version>,
}

/// State owned by the (single) writer.
struct WriteState {
    /// `None` when the database is open read-only.
    wal: Option<LogWriter>,
    mem: Arc<MemTable>,
    last_seq: u64,
}

/// State owned by whoever changes the file set.
struct VersionState {
    /// `None` when the database is open read-only.
    manifest: Option<Manifest>,
    last_seq: u64,
    /// Key and value bytes flushed since creation (manifest tag 7).
    user_bytes_flushed: u64,
    /// SSTable bytes written since creation (manifest tag 8).
    table_bytes_written: u64,
}

#[derive(Default)]
struct BgState {
    shutdown: bool,
    error: Option<String>,
}

struct DbInner {
    dir: PathBuf,
    options: Options,
    table_options: TableOptions,
    read_only: bool,
    write: Mutex<WriteState>,
    versions: Mutex<VersionState>,
    current: RwLock<Arc<SuperVersion>>,
    /// Largest sequence number whose batch is fully in a memtable: the
    /// view a new read gets.
    visible_seq: AtomicU64,
    next_file_number: AtomicU64,
    bg: Mutex<BgState>,
    bg_cv: Condvar,
    counters: Counters,
    /// Live snapshots: sequence number -> how many snapshots hold it.
    snapshots: Mutex<BTreeMap<u64, usize>>,
    /// Held while a compaction runs, so that only one runs at a time;
    /// guards the leveled picker's round-robin key per level.
    compaction: Mutex<Vec<Vec<u8>>>,
    /// Held (with an exclusive lock) until the database is dropped; `None`
    /// when open read-only.
    _lock: Option<File>,
}

/// An open siftdb database: a directory of WAL, SSTable and manifest files.
///
/// `Db` is `Send + Sync`; share it between threads with `Arc<Db>`. Dropping
/// it (or calling [`Db::close`]) stops the background thread and syncs the
/// WAL, so every acknowledged write is in an SSTable or in the synced WAL.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let db = siftdb::Db::open(dir.path())?;
/// db.put("apple", "red")?;
/// assert_eq!(db.get("apple")?.as_deref(), Some(&b"red"[..]));
/// # Ok::<(), siftdb::Error>(())
/// ```
pub struct Db {
    inner: Arc<DbInner>,
    bg_thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("dir", &self.inner.dir).finish()
    }
}

impl Db {
    /// Opens the database in directory `path` with default [`Options`],
    /// creating it if missing.
    ///
    /// # Errors
    /// As [`Db::open_with`].
    pub fn open(path: impl AsRef<Path>) -> Result<Db> {
        Db::open_with(path, Options::default())
    }

    /// Opens (or, with `create_if_missing`, creates) the database in
    /// directory `path`, replaying the manifest and any WAL left by the last
    /// process; recovered WAL contents are flushed to a level-0 SSTable and
    /// a fresh WAL and manifest are started.
    ///
    /// # Errors
    /// - [`Error::InvalidArgument`] for bad options;
    /// - [`Error::NotADatabase`] if `path` is a file, a non-empty directory
    ///   without a database, or missing with `create_if_missing == false`;
    ///   or a database exists and `error_if_exists` is set;
    /// - [`Error::Locked`] if another `Db` holds it;
    /// - [`Error::Corruption`] for damaged files (a torn tail at the end of
    ///   a WAL is not damage: those unacknowledged bytes are dropped);
    /// - [`Error::UnsupportedVersion`] for a newer format;
    /// - [`Error::Io`] for failed file operations.
    pub fn open_with(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        options.validate()?;
        let dir = path.as_ref().to_path_buf();
        let not_db = |detail: &str| Error::NotADatabase {
            path: dir.clone(),
            detail: detail.to_string(),
        };
        match fs::metadata(&dir) {
            Ok(m) if !m.is_dir() => return Err(not_db("exists and is not a directory")),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !options.create_if_missing {
                    return Err(not_db("does not exist (create_if_missing is false)"));
                }
                fs::create_dir_all(&dir)
                    .context(|| format!("create directory {}", dir.display()))?;
            }
            Err(e) => return Err(Error::io(format!("stat {}", dir.display()), e)),
        }
        if !filename::current_path(&dir).exists() {
            // Refuse a foreign directory, or one we may not create a
            // database in, before leaving a LOCK file in it.
            check_fresh_directory(&dir)?;
            if !options.create_if_missing {
                return Err(not_db("holds no database (create_if_missing is false)"));
            }
        }
        let lock = acquire_lock(&dir)?;
        let state = match manifest::read_current(&dir)? {
            Some(number) => {
                if options.error_if_exists {
                    return Err(not_db("a database already exists (error_if_exists is set)"));
                }
                replay_manifest(&dir, number)?
            }
            None => {
                check_fresh_directory(&dir)?;
                if !options.create_if_missing {
                    return Err(not_db("holds no database (create_if_missing is false)"));
                }
                ReplayedState {
                    files: vec![BTreeMap::new(); crate::version::set::NUM_LEVELS],
                    next_file_number: 1,
                    ..Default::default()
                }
            }
        };
        recover(dir, options, Some(lock), state)
    }

    /// Opens an existing database for reading only, as tools do: no file is
    /// created, changed or deleted, no lock is taken (so it works while
    /// another process has the database open), and WAL contents are
    /// replayed into memory only. Writes, `flush` and `compact` return
    /// [`Error::ReadOnly`]. The view is fixed at open; if another process
    /// compacts meanwhile, files may vanish and reads report
    /// [`Error::Io`].
    ///
    /// # Errors
    /// As [`Db::open_with`], and [`Error::NotADatabase`] if there is no
    /// database at `path`.
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        options.validate()?;
        let dir = path.as_ref().to_path_buf();
        let Some(number) = manifest::read_current(&dir).map_err(|e| match e {
            Error::Io { .. } if !dir.is_dir() => Error::NotADatabase {
                path: dir.clone(),
                detail: "is not a directory".into(),
            },
            e => e,
        })?
        else {
            return Err(Error::NotADatabase {
                path: dir.clone(),
                detail: "holds no database (no CURRENT file)".into(),
            });
        };
        let state = replay_manifest(&dir, number)?;
        recover(dir, options, None, state)
    }

    /// Sets `key` to `value`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a key over 65,535 bytes or a value over
    /// `u32::MAX` bytes (nothing is written); [`Error::Io`] if the WAL write
    /// fails; [`Error::Background`] after an earlier background failure.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value)?;
        self.write(b)
    }

    /// Deletes `key` (writes a tombstone; deleting an absent key is fine).
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key)?;
        self.write(b)
    }

    /// Applies every update of `batch` atomically: one WAL record, one
    /// range of sequence numbers, made visible to readers all at once.
    ///
    /// # Errors
    /// [`Error::Io`] if the WAL write or sync fails (the database then
    /// turns read-only: a partly written record must not be followed by
    /// more); [`Error::Background`] after an earlier background failure.
    pub fn write(&self, mut batch: WriteBatch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let inner = &*self.inner;
        let mut w = inner.write.lock();
        inner.check_writable()?;
        inner.throttle_for_level0()?;
        if w.mem.approximate_size() >= inner.options.write_buffer_size {
            inner.rotate_memtable(&mut w)?;
        }
        let first = w.last_seq + 1;
        if first + batch.len() as u64 > SequenceNumber::MAX.0 {
            return Err(Error::InvalidArgument("sequence numbers exhausted".into()));
        }
        let payload = batch.encode(SequenceNumber(first));
        let sync = inner.options.sync;
        let logged = match w.wal.as_mut() {
            Some(wal) => wal
                .append(payload)
                .and_then(|_| if sync { wal.sync() } else { Ok(()) }),
            None => Err(Error::ReadOnly),
        };
        if let Err(e) = logged {
            inner.set_bg_error(&e);
            return Err(e);
        }
        let mut user_bytes = 0u64;
        for (i, op) in batch.iter().enumerate() {
            w.mem.insert(
                op.key,
                SequenceNumber(first + i as u64),
                op.value_type,
                op.value,
            );
            user_bytes += (op.key.len() + op.value.len()) as u64;
        }
        w.last_seq += batch.len() as u64;
        inner.visible_seq.store(w.last_seq, Ordering::Release);
        inner
            .counters
            .user_bytes_written
            .fetch_add(user_bytes, Ordering::Relaxed);
        Ok(())
    }

    /// The value of `key`, or `None` if it is absent or deleted.
    ///
    /// Reads the active memtable, the frozen memtables newest first, level-0
    /// SSTables newest first, then the one candidate file of each deeper
    /// level; the first version found answers. For each SSTable it checks
    /// the key range, then the Bloom filter (with one hash of the key per
    /// `get`, shared by every file), and reads one data block only if both
    /// pass.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a key over 65,535 bytes;
    /// [`Error::Corruption`] if a block read fails its checksum.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let key = key.as_ref();
        check_lengths(key.len(), 0)?;
        let (sv, seq) = self.inner.view();
        let mut counts = GetCounts::default();
        let r = get_from(&sv, key, seq, &mut counts);
        self.inner.counters.add_get(&counts);
        r
    }

    /// Iterates the live pairs with keys in `range`, in key order
    /// (double-ended: `.rev()` walks backwards), as of the moment of the
    /// call. Items are `Result<(key, value)>`.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> DbIterator {
        let lo = map_bound(range.start_bound());
        let hi = map_bound(range.end_bound());
        let (sv, seq) = self.inner.view();
        iterate(sv, seq, lo, hi)
    }

    /// Iterates the live pairs whose key starts with `prefix`, in key order.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        let (lo, hi) = prefix_bounds(prefix.as_ref());
        let (sv, seq) = self.inner.view();
        iterate(sv, seq, lo, hi)
    }

    /// Freezes the active memtable (if it holds anything) and waits until
    /// every frozen memtable is written to a level-0 SSTable.
    ///
    /// # Errors
    /// [`Error::Background`] if a flush fails; [`Error::Io`] if the new WAL
    /// cannot be created.
    pub fn flush(&self) -> Result<()> {
        {
            let mut w = self.inner.write.lock();
            self.inner.check_writable()?;
            if !w.mem.is_empty() {
                self.inner.rotate_memtable(&mut w)?;
            }
        }
        let mut bg = self.inner.bg.lock();
        loop {
            if let Some(e) = &bg.error {
                return Err(Error::Background(e.clone()));
            }
            if self.inner.current.read().imms.is_empty() {
                return Ok(());
            }
            self.inner.bg_cv.wait(&mut bg);
        }
    }

    /// Flushes, then compacts every level into the next, down to the deepest
    /// level holding data, and waits. Afterwards that level holds all data,
    /// without dead versions and (unless a snapshot still needs them)
    /// without tombstones.
    ///
    /// # Errors
    /// As [`Db::flush`]; [`Error::Corruption`] or [`Error::Io`] from the
    /// merge (the database is unchanged then).
    pub fn compact(&self) -> Result<()> {
        self.flush()?; // also refuses a read-only database
        self.inner.compact_manually(None)
    }

    /// As [`Db::compact`], but only for files overlapping the user keys
    /// `[lo, hi]` (level-0 files are widened to every file that overlaps
    /// them, so that no older overlapping file stays above the output).
    ///
    /// # Errors
    /// As [`Db::compact`]; [`Error::InvalidArgument`] if `lo > hi`.
    pub fn compact_range(&self, lo: impl AsRef<[u8]>, hi: impl AsRef<[u8]>) -> Result<()> {
        let (lo, hi) = (lo.as_ref(), hi.as_ref());
        if lo > hi {
            return Err(Error::InvalidArgument(
                "compact_range: lo sorts after hi".into(),
            ));
        }
        self.flush()?;
        self.inner.compact_manually(Some((lo, hi)))
    }

    /// A consistent read-only view of the database as of now. Reads through
    /// it ignore every later write; compactions keep every version it can
    /// see until it is dropped.
    pub fn snapshot(&self) -> Snapshot {
        let mut snaps = self.inner.snapshots.lock();
        let seq = self.inner.visible_seq.load(Ordering::Acquire);
        *snaps.entry(seq).or_insert(0) += 1;
        Snapshot {
            inner: Arc::clone(&self.inner),
            seq: SequenceNumber(seq),
        }
    }

    /// Waits until no frozen memtable awaits flushing and the compaction
    /// style finds nothing more to do: the tree has settled.
    ///
    /// # Errors
    /// [`Error::Background`] if a flush or compaction failed.
    pub fn wait_for_compactions(&self) -> Result<()> {
        let inner = &*self.inner;
        let mut bg = inner.bg.lock();
        loop {
            if let Some(e) = &bg.error {
                return Err(Error::Background(e.clone()));
            }
            let idle = {
                let cur = inner.current.read();
                cur.imms.is_empty() && !compaction::needs_compaction(&cur.version, &inner.options)
            };
            if idle && !inner.compaction.is_locked() {
                return Ok(());
            }
            // Background work notifies after every job; the timeout covers
            // a manual compaction finishing between the check and the wait.
            inner
                .bg_cv
                .wait_for(&mut bg, std::time::Duration::from_millis(50));
        }
    }

    /// The SSTables of the current version, level 0 first (newest first
    /// within level 0, by smallest key in deeper levels).
    pub fn live_files(&self) -> Vec<LiveFile> {
        let sv = self.inner.current.read().clone();
        sv.version
            .files()
            .map(|(level, f)| LiveFile {
                level,
                number: f.meta.number,
                path: f.table.path().to_path_buf(),
                file_size: f.meta.file_size,
                properties: f.table.properties().clone(),
            })
            .collect()
    }

    /// Counters since open and the shape of the current version.
    pub fn stats(&self) -> Stats {
        let sv = self.inner.current.read().clone();
        let levels = sv
            .version
            .levels
            .iter()
            .enumerate()
            .map(|(level, files)| {
                let mut s = LevelStats {
                    level,
                    files: files.len(),
                    ..Default::default()
                };
                for f in files {
                    let p = f.table.properties();
                    s.bytes += f.meta.file_size;
                    s.entries += p.num_entries;
                    s.distinct_keys += p.num_distinct_keys;
                    s.tombstones += p.num_tombstones;
                    s.filter_bits += p.filter_bits;
                }
                s
            })
            .collect();
        let vs = self.inner.versions.lock();
        let totals = (vs.user_bytes_flushed, vs.table_bytes_written);
        drop(vs);
        self.inner.counters.snapshot(levels, totals)
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// The options the database was opened with.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// The sequence number of the newest visible write (0 for none).
    pub fn last_sequence(&self) -> SequenceNumber {
        SequenceNumber(self.inner.visible_seq.load(Ordering::Acquire))
    }

    /// Stops the background thread and syncs the WAL. Dropping a `Db` does
    /// the same but cannot report errors.
    ///
    /// # Errors
    /// [`Error::Io`] if the final WAL sync fails.
    pub fn close(mut self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<()> {
        {
            let mut bg = self.inner.bg.lock();
            bg.shutdown = true;
            self.inner.bg_cv.notify_all();
        }
        if let Some(t) = self.bg_thread.take() {
            let _ = t.join();
        }
        match self.inner.write.lock().wal.as_mut() {
            Some(wal) => wal.sync(),
            None => Ok(()),
        }
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if self.bg_thread.is_some() {
            let _ = self.shutdown();
        }
    }
}

/// One SSTable of the current version, as [`Db::live_files`] lists it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LiveFile {
    /// Level (0 = newest, overlapping files).
    pub level: usize,
    /// File number (the `NNNNNN` of `NNNNNN.sst`).
    pub number: u64,
    /// Full path of the file.
    pub path: PathBuf,
    /// Size on disk, in bytes.
    pub file_size: u64,
    /// The table's properties block: counts, key and sequence ranges, and
    /// filter parameters.
    pub properties: crate::sstable::TableProperties,
}

/// A read-only view of a [`Db`] fixed at the moment [`Db::snapshot`] was
/// called: `get`, `range` and `prefix` behave as on the `Db`, but see no
/// write made after that moment, however many flushes and compactions
/// follow. Dropping it releases the old versions it kept alive. It may
/// outlive the `Db` handle; reads then still work.
pub struct Snapshot {
    inner: Arc<DbInner>,
    seq: SequenceNumber,
}

impl Snapshot {
    /// The sequence number this snapshot reads at.
    pub fn sequence(&self) -> SequenceNumber {
        self.seq
    }

    /// The value `key` had when the snapshot was taken.
    ///
    /// # Errors
    /// As [`Db::get`].
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let key = key.as_ref();
        check_lengths(key.len(), 0)?;
        let sv = self.inner.current.read().clone();
        let mut counts = GetCounts::default();
        let r = get_from(&sv, key, self.seq, &mut counts);
        self.inner.counters.add_get(&counts);
        r
    }

    /// As [`Db::range`], as of the snapshot.
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> DbIterator {
        let sv = self.inner.current.read().clone();
        iterate(
            sv,
            self.seq,
            map_bound(range.start_bound()),
            map_bound(range.end_bound()),
        )
    }

    /// As [`Db::prefix`], as of the snapshot.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        let sv = self.inner.current.read().clone();
        let (lo, hi) = prefix_bounds(prefix.as_ref());
        iterate(sv, self.seq, lo, hi)
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let mut snaps = self.inner.snapshots.lock();
        if let Some(n) = snaps.get_mut(&self.seq.0) {
            *n -= 1;
            if *n == 0 {
                snaps.remove(&self.seq.0);
            }
        }
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("seq", &self.seq).finish()
    }
}

impl DbInner {
    /// The sequence number and super-version a new read uses. The sequence
    /// is loaded first: every write it covers is in that super-version's
    /// memtables or tables, because a memtable leaves a super-version only
    /// when its table joins it.
    fn view(&self) -> (Arc<SuperVersion>, SequenceNumber) {
        let seq = SequenceNumber(self.visible_seq.load(Ordering::Acquire));
        (self.current.read().clone(), seq)
    }

    /// Refuses writes to a read-only database or one a background error
    /// made read-only.
    fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        match &self.bg.lock().error {
            Some(e) => Err(Error::Background(e.clone())),
            None => Ok(()),
        }
    }

    fn set_bg_error(&self, e: &Error) {
        let mut bg = self.bg.lock();
        bg.error.get_or_insert_with(|| e.to_string());
        self.bg_cv.notify_all();
    }

    /// Freezes the active memtable and starts a new one with a new WAL,
    /// first waiting while `max_immutable_memtables` already wait for
    /// flushing (the write stall that bounds memory).
    fn rotate_memtable(&self, w: &mut WriteState) -> Result<()> {
        {
            let mut bg = self.bg.lock();
            while self.current.read().imms.len() >= self.options.max_immutable_memtables {
                if let Some(e) = &bg.error {
                    return Err(Error::Background(e.clone()));
                }
                self.bg_cv.wait(&mut bg);
            }
        }
        let number = self.next_file_number.fetch_add(1, Ordering::SeqCst);
        // `create` syncs the directory, so the new WAL cannot vanish.
        let wal = LogWriter::create(&filename::wal_path(&self.dir, number))?;
        let old_wal = w.wal.replace(wal);
        // The old WAL's records are already with the OS; with `sync` they
        // are on disk too. Closing it loses nothing.
        drop(old_wal);
        let mem = Arc::new(MemTable::new(number));
        let frozen = std::mem::replace(&mut w.mem, Arc::clone(&mem));
        {
            let mut cur = self.current.write();
            let mut imms = Vec::with_capacity(cur.imms.len() + 1);
            imms.push(frozen);
            imms.extend(cur.imms.iter().cloned());
            *cur = Arc::new(SuperVersion {
                mem,
                imms,
                version: Arc::clone(&cur.version),
            });
        }
        let _bg = self.bg.lock();
        self.bg_cv.notify_all();
        Ok(())
    }

    /// Writes the oldest frozen memtable `imm` to a level-0 SSTable, logs
    /// the edit to the manifest, installs the new version and deletes the
    /// memtable's WAL.
    fn flush_memtable(&self, imm: &Arc<MemTable>) -> Result<()> {
        let number = self.next_file_number.fetch_add(1, Ordering::SeqCst);
        let (meta, table) = write_table(&self.dir, number, self.table_options.clone(), imm)?;
        let mut vs = self.versions.lock();
        // WALs older than the next-oldest unflushed memtable are obsolete.
        let log_number = {
            let cur = self.current.read();
            match cur.imms.len() {
                0 | 1 => cur.mem.wal_number(),
                n => cur.imms[n - 2].wal_number(),
            }
        };
        vs.last_seq = vs.last_seq.max(imm.largest_seq().0);
        let edit = VersionEdit {
            log_number: Some(log_number),
            next_file_number: Some(self.next_file_number.load(Ordering::SeqCst)),
            last_sequence: Some(SequenceNumber(vs.last_seq)),
            new_files: vec![(0, meta.clone())],
            user_bytes_flushed: Some(vs.user_bytes_flushed + imm.user_bytes()),
            table_bytes_written: Some(vs.table_bytes_written + meta.file_size),
            ..Default::default()
        };
        vs.manifest
            .as_mut()
            .ok_or(Error::ReadOnly)?
            .log_edit(&edit)?;
        vs.user_bytes_flushed += imm.user_bytes();
        vs.table_bytes_written += meta.file_size;
        {
            let mut cur = self.current.write();
            let mut opened = BTreeMap::from([(number, table)]);
            let version = cur.version.apply(&edit, &mut opened)?;
            let imms = cur
                .imms
                .iter()
                .filter(|m| !Arc::ptr_eq(m, imm))
                .cloned()
                .collect();
            *cur = Arc::new(SuperVersion {
                mem: Arc::clone(&cur.mem),
                imms,
                version: Arc::new(version),
            });
        }
        drop(vs);
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        self.counters
            .table_bytes_written
            .fetch_add(meta.file_size, Ordering::Relaxed);
        remove_obsolete_wals(&self.dir, log_number)
    }
}

impl DbInner {
    /// The write stall: with automatic compaction, a write waits while level
    /// 0 holds `level0_stop_trigger` files or more, and is delayed by 1 ms
    /// once it holds `level0_slowdown_trigger`, so that compaction keeps up
    /// and the files a read probes stay bounded.
    fn throttle_for_level0(&self) -> Result<()> {
        if self.options.compaction_style == CompactionStyle::None {
            return Ok(());
        }
        let level0 = || self.current.read().version.levels[0].len();
        if level0() >= self.options.level0_stop_trigger {
            let mut bg = self.bg.lock();
            while level0() >= self.options.level0_stop_trigger {
                if let Some(e) = &bg.error {
                    return Err(Error::Background(e.clone()));
                }
                self.bg_cv.wait(&mut bg);
            }
        } else if level0() >= self.options.level0_slowdown_trigger {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        Ok(())
    }

    /// The oldest sequence number a reader may still read at: the oldest
    /// live snapshot, else the newest visible sequence.
    fn smallest_snapshot(&self) -> SequenceNumber {
        let snaps = self.snapshots.lock();
        match snaps.keys().next() {
            Some(&s) => SequenceNumber(s),
            None => SequenceNumber(self.visible_seq.load(Ordering::Acquire)),
        }
    }

    /// Runs one automatic compaction if the picker finds one and no other
    /// compaction is running.
    fn compact_once_if_needed(&self) -> Result<()> {
        let Some(mut pointers) = self.compaction.try_lock() else {
            return Ok(());
        };
        let version = Arc::clone(&self.current.read().version);
        match compaction::pick(&version, &self.options, &mut pointers) {
            Some(c) => self.run_compaction(&c),
            None => Ok(()),
        }
    }

    /// Executes `c`: merges its inputs into new tables (or moves a single
    /// file), logs one manifest edit, installs the new version and marks the
    /// inputs obsolete so that each is deleted once no reader holds it.
    /// The caller holds the `compaction` lock.
    fn run_compaction(&self, c: &Compaction) -> Result<()> {
        let (outputs, counts) = if c.trivial_move {
            (Vec::new(), compaction::CompactionCounts::default())
        } else {
            let next = || self.next_file_number.fetch_add(1, Ordering::SeqCst);
            let ctx = MergeContext {
                dir: &self.dir,
                table_options: self.table_options.clone(),
                target_file_size: self.options.target_file_size,
                smallest_snapshot: self.smallest_snapshot(),
                new_file_number: &next,
            };
            compaction::merge(c, &ctx)?
        };
        manifest::sync_dir(&self.dir)?;
        let mut edit = compaction::edit_for(c, &outputs);
        let mut opened: BTreeMap<u64, Arc<Table>> = outputs
            .iter()
            .map(|o| (o.meta.number, Arc::clone(&o.table)))
            .collect();
        if c.trivial_move {
            let (_, f) = &c.inputs[0];
            opened.insert(f.meta.number, Arc::clone(&f.table));
        }
        let mut vs = self.versions.lock();
        edit.next_file_number = Some(self.next_file_number.load(Ordering::SeqCst));
        edit.last_sequence = Some(SequenceNumber(vs.last_seq));
        edit.table_bytes_written = Some(vs.table_bytes_written + counts.bytes_written);
        if let Err(e) = vs
            .manifest
            .as_mut()
            .ok_or(Error::ReadOnly)
            .and_then(|m| m.log_edit(&edit))
        {
            for o in &outputs {
                let _ = fs::remove_file(o.table.path());
            }
            return Err(e);
        }
        vs.table_bytes_written += counts.bytes_written;
        {
            let mut cur = self.current.write();
            let version = cur.version.apply(&edit, &mut opened)?;
            *cur = Arc::new(SuperVersion {
                mem: Arc::clone(&cur.mem),
                imms: cur.imms.clone(),
                version: Arc::new(version),
            });
        }
        drop(vs);
        if !c.trivial_move {
            for (_, f) in &c.inputs {
                f.mark_obsolete();
            }
        }
        let r = Ordering::Relaxed;
        let k = &self.counters;
        k.compactions.fetch_add(1, r);
        k.compaction_bytes_read.fetch_add(counts.bytes_read, r);
        k.compaction_bytes_written
            .fetch_add(counts.bytes_written, r);
        k.table_bytes_written.fetch_add(counts.bytes_written, r);
        k.tombstones_dropped.fetch_add(counts.tombstones_dropped, r);
        k.versions_dropped.fetch_add(counts.versions_dropped, r);
        Ok(())
    }

    /// Compacts, level by level from 0, the files overlapping `range` (all
    /// files if `None`) into the next level, down to the deepest level that
    /// holds data (at least level 1), which is then compacted into itself.
    fn compact_manually(&self, range: Option<(&[u8], &[u8])>) -> Result<()> {
        let mut _pointers = self.compaction.lock();
        let deepest = {
            let v = &self.current.read().version;
            (1..v.levels.len())
                .rev()
                .find(|&l| !v.levels[l].is_empty())
                .unwrap_or(1)
        };
        let mut result = Ok(());
        for level in 0..=deepest {
            let version = Arc::clone(&self.current.read().version);
            if let Some(c) = compaction::pick_manual(&version, level, range, level == deepest) {
                result = self.run_compaction(&c);
                if result.is_err() {
                    break;
                }
            }
        }
        drop(_pointers);
        let _bg = self.bg.lock();
        self.bg_cv.notify_all();
        result
    }
}

/// Writes `mem` to SSTable `number` in `dir`, synced (file and directory),
/// and opens it.
fn write_table(
    dir: &Path,
    number: u64,
    opts: TableOptions,
    mem: &MemTable,
) -> Result<(FileMetaData, Arc<Table>)> {
    let mut builder = TableBuilder::new(&filename::table_path(dir, number), opts)?;
    mem.for_each(|k, v| builder.add(k, v))?; // dropping an unfinished builder deletes its file
    let out = compaction::finish_output(dir, number, builder)?;
    manifest::sync_dir(dir)?;
    Ok((out.meta, out.table))
}

/// Deletes every WAL numbered below `log_number`. Failures are ignored: a
/// leftover WAL is replayed harmlessly (its writes are already in tables,
/// and the manifest's log number skips it).
fn remove_obsolete_wals(dir: &Path, log_number: u64) -> Result<()> {
    for (t, path) in list_dir(dir)? {
        if let FileType::Wal(n) = t {
            if n < log_number {
                let _ = fs::remove_file(path);
            }
        }
    }
    Ok(())
}

/// The siftdb files in `dir`, classified.
fn list_dir(dir: &Path) -> Result<Vec<(FileType, PathBuf)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).context(|| format!("list {}", dir.display()))? {
        let entry = entry.context(|| format!("list {}", dir.display()))?;
        if let Some(t) = entry
            .file_name()
            .to_str()
            .and_then(filename::parse_file_name)
        {
            out.push((t, entry.path()));
        }
    }
    Ok(out)
}

/// Takes the exclusive lock on `dir/LOCK`.
fn acquire_lock(dir: &Path) -> Result<File> {
    let path = filename::lock_path(dir);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .context(|| format!("open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Locked(dir.to_path_buf())),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(Error::io(format!("lock {}", path.display()), e))
        }
    }
}

/// Replays manifest `number` in `dir` and checks that the files it lists
/// as live are present.
///
/// Replay drops a final record that looks torn, which is right for an edit
/// cut off by a crash inside `Manifest::log_edit`: nothing depended on it,
/// so every file the state before it names still exists. A manifest that
/// lost a durable edit (truncated, or its last record damaged) looks the
/// same to replay, but the files that edit obsoleted are gone: after a
/// flush, the WAL that held the flushed writes; after a compaction, its
/// inputs. Opening anyway would silently lose those writes, so a missing
/// live table, or a missing WAL at the manifest's log number (the WAL of
/// the oldest unflushed memtable, created before any edit names it and
/// deleted only after a later edit moves the log number past it), is
/// `Corruption` naming the manifest. Found by tests/corruption_campaign.rs;
/// pinned by tests/regress_manifest_tail.rs.
fn replay_manifest(dir: &Path, number: u64) -> Result<ReplayedState> {
    let replay = manifest::replay(dir, number)?;
    let state = ReplayedState::from_edits(&replay.edits)?;
    let manifest = filename::manifest_path(dir, number);
    let (at, why) = match &replay.torn_tail {
        Some(t) => (
            t.offset,
            format!(
                "; the manifest ends in a torn record at offset {} ({}), so it may have lost edits",
                t.offset, t.reason
            ),
        ),
        None => (0, String::new()),
    };
    let mut needed: Vec<PathBuf> = state
        .files
        .iter()
        .flat_map(|level| level.keys())
        .map(|&n| filename::table_path(dir, n))
        .collect();
    if state.log_number > 0 {
        needed.push(filename::wal_path(dir, state.log_number));
    }
    for path in needed {
        match fs::metadata(&path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::corruption(
                    &manifest,
                    at,
                    format!(
                        "{} is live according to the manifest but missing{why}",
                        path.file_name().unwrap_or_default().to_string_lossy()
                    ),
                ));
            }
            Err(e) => return Err(Error::io(format!("stat {}", path.display()), e)),
        }
    }
    Ok(state)
}

/// A directory without `CURRENT` may become a new database only if it holds
/// nothing but what an interrupted creation leaves (`LOCK`, temporary
/// files, a manifest never made current, empty WALs).
fn check_fresh_directory(dir: &Path) -> Result<()> {
    for entry in fs::read_dir(dir).context(|| format!("list {}", dir.display()))? {
        let entry = entry.context(|| format!("list {}", dir.display()))?;
        let name = entry.file_name();
        let kind = name.to_str().and_then(filename::parse_file_name);
        let empty = entry.metadata().map(|m| m.len() == 0).unwrap_or(false);
        match kind {
            Some(FileType::Lock | FileType::Temp(_) | FileType::Manifest(_)) => {}
            Some(FileType::Wal(_)) if empty => {}
            Some(FileType::Table(_) | FileType::Wal(_)) => {
                return Err(Error::corruption(
                    filename::current_path(dir),
                    0,
                    "CURRENT is missing but the directory holds SSTables or WAL data",
                ))
            }
            _ => {
                return Err(Error::NotADatabase {
                    path: dir.to_path_buf(),
                    detail: format!(
                        "directory is not empty and holds no siftdb database (found {:?})",
                        name
                    ),
                })
            }
        }
    }
    Ok(())
}

/// Opens tables, replays WALs, flushes what they held, starts a fresh WAL
/// and manifest, removes obsolete files and starts the background thread.
///
/// With `lock == None` the database is opened read-only: WALs are replayed
/// into the active memtable and nothing on disk is touched.
fn recover(dir: PathBuf, options: Options, lock: Option<File>, state: ReplayedState) -> Result<Db> {
    let read_only = lock.is_none();
    let table_options = TableOptions::from_db_options(&options);
    let on_disk = list_dir(&dir)?;
    let max_on_disk = on_disk
        .iter()
        .filter_map(|(t, _)| match *t {
            FileType::Wal(n) | FileType::Table(n) | FileType::Manifest(n) | FileType::Temp(n) => {
                Some(n)
            }
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let mut next_file = state.next_file_number.max(max_on_disk + 1).max(1);

    // Open every live table.
    let mut all = VersionEdit::default();
    let mut opened = BTreeMap::new();
    let mut last_seq = state.last_sequence;
    for (level, files) in state.files.iter().enumerate() {
        for meta in files.values() {
            let table = Table::open(&filename::table_path(&dir, meta.number), meta.number)?;
            last_seq = last_seq.max(table.properties().largest_seq.0);
            opened.insert(meta.number, Arc::new(table));
            all.new_files.push((level as u32, meta.clone()));
        }
    }
    let mut version = Version::empty().apply(&all, &mut opened)?;

    // Replay live WALs, oldest first, flushing whenever a memtable fills.
    let mut wals: Vec<u64> = on_disk
        .iter()
        .filter_map(|(t, _)| match *t {
            FileType::Wal(n) if n >= state.log_number => Some(n),
            _ => None,
        })
        .collect();
    wals.sort_unstable();
    let mut mem = MemTable::new(0);
    // (user bytes flushed, table bytes written) since creation.
    let mut totals = (state.user_bytes_flushed, state.table_bytes_written);
    let flush_recovered = |mem: &mut MemTable,
                           version: &mut Version,
                           next_file: &mut u64,
                           totals: &mut (u64, u64)|
     -> Result<()> {
        if mem.is_empty() {
            return Ok(());
        }
        let number = *next_file;
        *next_file += 1;
        let (meta, table) = write_table(&dir, number, table_options.clone(), mem)?;
        totals.0 += mem.user_bytes();
        totals.1 += meta.file_size;
        let edit = VersionEdit {
            new_files: vec![(0, meta)],
            ..Default::default()
        };
        *version = version.apply(&edit, &mut BTreeMap::from([(number, table)]))?;
        *mem = MemTable::new(0);
        Ok(())
    };
    for &n in &wals {
        let path = filename::wal_path(&dir, n);
        let contents = read_log(&path)?;
        for rec in &contents.records {
            let batch =
                decode_batch(&rec.payload).map_err(|d| Error::corruption(&path, rec.offset, d))?;
            for (i, op) in batch.ops.iter().enumerate() {
                let seq = SequenceNumber(batch.first_seq.0 + i as u64);
                mem.insert(op.key, seq, op.value_type, op.value);
                last_seq = last_seq.max(seq.0);
            }
            if !read_only && mem.approximate_size() >= options.write_buffer_size {
                flush_recovered(&mut mem, &mut version, &mut next_file, &mut totals)?;
            }
        }
    }
    let (wal, manifest, mem) = if read_only {
        (None, None, Arc::new(mem))
    } else {
        flush_recovered(&mut mem, &mut version, &mut next_file, &mut totals)?;

        // A fresh WAL, then a fresh manifest holding the whole state.
        let wal_number = next_file;
        let manifest_number = next_file + 1;
        next_file += 2;
        let wal = LogWriter::create(&filename::wal_path(&dir, wal_number))?;
        let mut snapshot = VersionEdit {
            format_version: Some(FORMAT_VERSION),
            log_number: Some(wal_number),
            next_file_number: Some(next_file),
            last_sequence: Some(SequenceNumber(last_seq)),
            user_bytes_flushed: Some(totals.0),
            table_bytes_written: Some(totals.1),
            ..Default::default()
        };
        for (level, f) in version.files() {
            snapshot.new_files.push((level as u32, f.meta.clone()));
        }
        let manifest = Manifest::create(&dir, manifest_number, &snapshot)?;

        // Everything not in the new state is garbage now.
        let live: std::collections::HashSet<u64> =
            version.files().map(|(_, f)| f.meta.number).collect();
        for (t, path) in list_dir(&dir)? {
            let obsolete = match t {
                FileType::Wal(n) => n < wal_number,
                FileType::Table(n) => !live.contains(&n),
                FileType::Manifest(n) => n != manifest_number,
                FileType::Temp(_) => true,
                FileType::Current | FileType::Lock => false,
            };
            if obsolete {
                fs::remove_file(&path).context(|| format!("remove {}", path.display()))?;
            }
        }
        (
            Some(wal),
            Some(manifest),
            Arc::new(MemTable::new(wal_number)),
        )
    };
    let (user_bytes_flushed, table_bytes_written) = totals;
    let inner = Arc::new(DbInner {
        dir,
        options,
        table_options,
        read_only,
        write: Mutex::new(WriteState {
            wal,
            mem: Arc::clone(&mem),
            last_seq,
        }),
        versions: Mutex::new(VersionState {
            manifest,
            last_seq,
            user_bytes_flushed,
            table_bytes_written,
        }),
        current: RwLock::new(Arc::new(SuperVersion {
            mem,
            imms: Vec::new(),
            version: Arc::new(version),
        })),
        visible_seq: AtomicU64::new(last_seq),
        next_file_number: AtomicU64::new(next_file),
        bg: Mutex::new(BgState::default()),
        bg_cv: Condvar::new(),
        counters: Counters::default(),
        snapshots: Mutex::new(BTreeMap::new()),
        compaction: Mutex::new(vec![Vec::new(); crate::version::set::NUM_LEVELS]),
        _lock: lock,
    });
    let bg_thread = if read_only {
        None
    } else {
        let bg_inner = Arc::clone(&inner);
        let t = std::thread::Builder::new()
            .name("siftdb-bg".into())
            .spawn(move || background_main(bg_inner))
            .context(|| "spawn background thread".to_string())?;
        Some(t)
    };
    Ok(Db { inner, bg_thread })
}

/// What the background thread does next.
enum BgJob {
    Flush(Arc<MemTable>),
    Compact,
}

/// The background thread: flushes the oldest frozen memtable, else runs
/// the compaction the style calls for, until shut down. Flushes come first
/// because writers wait for them. A failure is recorded and ends the
/// thread; the database then refuses writes (reads still work).
fn background_main(inner: Arc<DbInner>) {
    loop {
        let job = {
            let mut bg = inner.bg.lock();
            loop {
                if bg.shutdown || bg.error.is_some() {
                    return;
                }
                if let Some(m) = inner.current.read().imms.last().cloned() {
                    break BgJob::Flush(m);
                }
                if !inner.compaction.is_locked()
                    && compaction::needs_compaction(&inner.current.read().version, &inner.options)
                {
                    break BgJob::Compact;
                }
                inner.bg_cv.wait(&mut bg);
            }
        };
        let result = match job {
            BgJob::Flush(imm) => inner
                .flush_memtable(&imm)
                .map_err(|e| format!("flush failed: {e}")),
            BgJob::Compact => inner
                .compact_once_if_needed()
                .map_err(|e| format!("compaction failed: {e}")),
        };
        let mut bg = inner.bg.lock();
        if let Err(e) = result {
            bg.error.get_or_insert(e);
        }
        inner.bg_cv.notify_all();
    }
}

/// Point lookup in one super-version at sequence `seq`.
fn get_from(
    sv: &SuperVersion,
    key: &[u8],
    seq: SequenceNumber,
    c: &mut GetCounts,
) -> Result<Option<Vec<u8>>> {
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        if let Some((_, vt, value)) = mem.get(key, seq) {
            c.memtable_hit = true;
            return Ok((vt == ValueType::Value).then_some(value));
        }
    }
    let hash = hash_key(key);
    for f in &sv.version.levels[0] {
        if let Some(answer) = probe(f, key, seq, hash, c)? {
            return Ok(answer);
        }
    }
    for files in &sv.version.levels[1..] {
        // Disjoint, sorted files: the only candidate is the first whose
        // largest key is >= key.
        let i = files.partition_point(|f| f.largest_user_key() < key);
        match files.get(i) {
            Some(f) => {
                if let Some(answer) = probe(f, key, seq, hash, c)? {
                    return Ok(answer);
                }
            }
            // Past the level's last key: skipped by key range.
            None if !files.is_empty() => c.range_skips += 1,
            None => {}
        }
    }
    Ok(None)
}

/// Looks `key` up in one table: `Some(answer)` ends the search.
fn probe(
    f: &TableFile,
    key: &[u8],
    seq: SequenceNumber,
    hash: KeyHash,
    c: &mut GetCounts,
) -> Result<Option<Option<Vec<u8>>>> {
    let has_filter = f.table.has_filter();
    match f.table.get(key, seq, hash)? {
        TableGet::OutOfRange => {
            c.range_skips += 1;
            Ok(None)
        }
        TableGet::FilterNegative => {
            c.filter_probes += 1;
            c.filter_negatives += 1;
            Ok(None)
        }
        TableGet::Searched { block, entry } => {
            if has_filter {
                c.filter_probes += 1;
            }
            if block.is_some() {
                c.data_block_reads += 1;
            }
            match entry {
                Some((_, ValueType::Value, v)) => Ok(Some(Some(v))),
                Some((_, ValueType::Deletion, _)) => Ok(Some(None)),
                None => {
                    if has_filter {
                        c.filter_false_positives += 1;
                    }
                    Ok(None)
                }
            }
        }
    }
}

fn map_bound<K: AsRef<[u8]>>(b: Bound<&K>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The user-key bounds of the keys starting with `p`.
fn prefix_bounds(p: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let hi = match crate::key::prefix_successor(p) {
        Some(s) => Bound::Excluded(s),
        None => Bound::Unbounded,
    };
    (Bound::Included(p.to_vec()), hi)
}

/// True if a file spanning user keys `[smallest, largest]` may hold a key
/// within `(lo, hi)`.
fn overlaps(smallest: &[u8], largest: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let above_lo = match lo {
        Bound::Included(k) => largest >= k.as_slice(),
        Bound::Excluded(k) => largest > k.as_slice(),
        Bound::Unbounded => true,
    };
    let below_hi = match hi {
        Bound::Included(k) => smallest <= k.as_slice(),
        Bound::Excluded(k) => smallest < k.as_slice(),
        Bound::Unbounded => true,
    };
    above_lo && below_hi
}

fn iterate(
    sv: Arc<SuperVersion>,
    seq: SequenceNumber,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
) -> DbIterator {
    let mut sources: Vec<EntrySource> = Vec::new();
    for mem in std::iter::once(&sv.mem).chain(sv.imms.iter()) {
        let (l, h) = (
            lo.as_ref().map(Vec::as_slice),
            hi.as_ref().map(Vec::as_slice),
        );
        sources.push(Box::new(mem.iter(l, h)));
    }
    for (_, f) in sv.version.files() {
        if overlaps(f.smallest_user_key(), f.largest_user_key(), &lo, &hi) {
            sources.push(Box::new(f.table.iter(lo.clone(), hi.clone())));
        }
    }
    DbIterator::new(sources, seq, Box::new(sv))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_cases() {
        let inc = |s: &str| Bound::Included(s.as_bytes().to_vec());
        let exc = |s: &str| Bound::Excluded(s.as_bytes().to_vec());
        assert!(overlaps(b"b", b"d", &inc("d"), &Bound::Unbounded));
        assert!(!overlaps(b"b", b"d", &exc("d"), &Bound::Unbounded));
        assert!(!overlaps(b"b", b"d", &Bound::Unbounded, &exc("b")));
        assert!(overlaps(b"b", b"d", &Bound::Unbounded, &inc("b")));
    }
}
