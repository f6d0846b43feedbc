//! [`Db`]: open, read, write, iterate, flush and close a database.
//!
//! - [`recovery`]: opening a directory (locking, manifest and WAL replay,
//!   cleanup);
//! - [`background`]: memtable rotation, flushes, compactions and the
//!   background thread;
//! - [`read`]: point lookups and iterators over one super-version;
//! - [`snapshot`]: [`Snapshot`], reads fixed at one sequence number;
//! - [`stats`]: counters, tree shapes and key-count estimates;
//! - [`write`](mod@write): group commit, per-write sync and `persist`;
//! - [`keyspace`], [`keyspace_drop`]: keyspaces (column families);
//! - [`checkpoint`]: `Db::checkpoint`, a consistent copy in a new
//!   directory.
//!
//! Concurrency: any number of threads may call any method through a shared
//! `&Db` (or `Arc<Db>`). Writers queue and are committed in groups by one
//! leader at a time (group commit);
//! readers take no lock beyond cloning an `Arc` of the current
//! [`SuperVersion`]. One background thread flushes frozen memtables and
//! runs compactions.

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use crate::error::IoContext;
use crate::filename;
use crate::fs::FileSystem;
use crate::iter::DbIterator;
use crate::key::SequenceNumber;
use crate::key_range::KeyRange;
use crate::log::LogWriter;
use crate::memtable::MemTable;
use crate::sketch::read_sketch::ReadSketch;
use crate::sstable::block_cache::BlockCache;
use crate::stats::{Counters, KeyPrediction};
use crate::sync_point::{self, SyncPoint};
use crate::version::edit::{FileMetaData, KeyspaceAdd, KeyspaceEdit, VersionEdit};
use crate::version::manifest::{self, Manifest};
use crate::version::set::Version;
use crate::write_batch::{check_lengths, WriteBatch};
use crate::{Error, Options, Result, Slice, WriteOptions};
pub use builder::DbBuilder;
pub use checkpoint::{checkpoint_temp_dir, CheckpointReport, CHECKPOINT_TEMP_SUFFIX};
pub use keyspace::{Keyspace, KeyspaceSnapshot};
use keyspace::{KeyspaceMap, KeyspaceState};
pub use snapshot::Snapshot;

/// What a reader needs to see the whole database at one moment: the active
/// memtable, the frozen memtables waiting for flush (newest first) and the
/// current [`Version`] of SSTables. Replaced as a whole, never mutated.
#[derive(Debug)]
pub(crate) struct SuperVersion {
    pub mem: Arc<MemTable>,
    pub imms: Vec<Arc<MemTable>>,
    pub version: Arc<Version>,
}

impl SuperVersion {
    /// The WAL of the oldest write its memtables may hold (`Lmem` in
    /// DESIGN.md 9.1): its oldest frozen memtable's, else its
    /// active memtable's. The keyspace's writes in older WALs are all in
    /// the tables of `version`.
    pub(crate) fn oldest_wal(&self) -> u64 {
        self.imms
            .last()
            .map_or(self.mem.wal_number(), |m| m.wal_number())
    }
}

/// The read calls `Db` and `Snapshot` both offer on top of `get` and
/// `iter` (one definition, so the two stay alike).
macro_rules! read_conveniences {
    ($view:literal) => {
        #[doc = concat!("Whether `key` has a live value ", $view, ": `get(key)?.is_some()`.")]
        ///
        /// # Errors
        /// As [`Db::get`](crate::Db::get).
        pub fn contains_key(&self, key: impl AsRef<[u8]>) -> Result<bool> {
            Ok(self.get(key)?.is_some())
        }

        #[doc = concat!("The live pair with the smallest key ", $view, ", if any: the first item of `iter()`.")]
        ///
        /// # Errors
        /// [`Error::Corruption`](crate::Error::Corruption) if a block read fails its checksum.
        pub fn first_key_value(&self) -> Result<Option<(Slice, Slice)>> {
            self.iter().next().transpose()
        }

        #[doc = concat!("The live pair with the largest key ", $view, ", if any: the first item of `iter().rev()`.")]
        ///
        /// # Errors
        /// [`Error::Corruption`](crate::Error::Corruption) if a block read fails its checksum.
        pub fn last_key_value(&self) -> Result<Option<(Slice, Slice)>> {
            self.iter().next_back().transpose()
        }

        #[doc = concat!("Whether no key has a live value ", $view, " (reads at most one pair).")]
        ///
        /// # Errors
        /// [`Error::Corruption`](crate::Error::Corruption) if a block read fails its checksum.
        pub fn is_empty(&self) -> Result<bool> {
            Ok(self.first_key_value()?.is_none())
        }

        #[doc = concat!("The exact number of live keys ", $view, ", counted by a full scan")]
        /// (it reads every table; [`Db::approximate_len`](crate::Db::approximate_len) estimates it
        /// from the key sketches without reading data).
        ///
        /// # Errors
        /// [`Error::Corruption`](crate::Error::Corruption) if a block read fails its checksum.
        pub fn len(&self) -> Result<u64> {
            self.iter().try_fold(0u64, |n, pair| pair.map(|_| n + 1))
        }
    };
}

/// State owned by the (single) writer.
struct WriteState {
    /// `None` when the database is open read-only.
    wal: Option<LogWriter>,
    /// The number of the WAL new writes go to.
    wal_number: u64,
    /// The default keyspace's active memtable.
    mem: Arc<MemTable>,
    /// The active memtable of every other live keyspace, by id.
    mems: BTreeMap<u32, Arc<MemTable>>,
    last_seq: u64,
    /// The size in bytes of each WAL a rotation closed, by number, while
    /// it may be live: entries below the smallest persisted log number
    /// are dropped at the next rotation. With the current WAL's size,
    /// what [`Options::max_total_wal_size`] bounds. Empty while the
    /// database has no keyspace but the default (the bound cannot act).
    closed_wal_bytes: BTreeMap<u64, u64>,
}

impl WriteState {
    /// The active memtable of keyspace `id`, if live.
    fn mem_of(&self, id: u32) -> Option<&Arc<MemTable>> {
        if id == 0 {
            Some(&self.mem)
        } else {
            self.mems.get(&id)
        }
    }

    /// Makes `mem` keyspace `id`'s active memtable; returns the one it
    /// replaces.
    fn replace_mem(&mut self, id: u32, mem: Arc<MemTable>) -> Option<Arc<MemTable>> {
        if id == 0 {
            Some(std::mem::replace(&mut self.mem, mem))
        } else {
            self.mems.insert(id, mem)
        }
    }
}

/// What the versions state keeps of a keyspace other than the default.
#[derive(Debug, Clone)]
struct KeyspaceVersion {
    name: String,
    /// Its stored options text (manifest tag 13).
    options_text: String,
    /// The log number the manifest holds for it (`Lp`,
    /// DESIGN.md 5): its WALs numbered below this are
    /// flushed.
    log_number: u64,
    /// Its last compactions' key predictions, oldest first.
    key_predictions: VecDeque<KeyPrediction>,
}

/// State owned by whoever changes the file set.
struct VersionState {
    /// `None` when the database is open read-only, or once a rollover
    /// failed ([`VersionState::manifest_lost`] then says how).
    manifest: Option<Manifest>,
    /// Why a writable database has no manifest: the failed rollover's
    /// error. Edits logged after it fail with it.
    manifest_lost: Option<String>,
    /// The default keyspace's log number last logged: its writes in WALs
    /// numbered below it are in tables. A WAL is obsolete once it is below
    /// every live keyspace's logged log number
    /// ([`VersionState::min_log_number`]).
    log_number: u64,
    /// The other live keyspaces, by id.
    keyspaces: BTreeMap<u32, KeyspaceVersion>,
    /// The id the next keyspace created gets (manifest tag 16).
    next_keyspace_id: u32,
    last_seq: u64,
    /// Key and value bytes flushed since creation (manifest tag 7).
    user_bytes_flushed: u64,
    /// SSTable bytes written since creation (manifest tag 8).
    table_bytes_written: u64,
    /// Size in bytes at which the manifest is rolled over: the larger of
    /// [`Options::max_manifest_file_size`] and twice its first record (a
    /// snapshot larger than the bound must not make every edit roll).
    manifest_limit: u64,
    /// The last compactions' key predictions (manifest tag 9), oldest
    /// first; a new manifest's snapshot carries them.
    key_predictions: VecDeque<KeyPrediction>,
}

impl VersionState {
    /// The manifest to log an edit to.
    ///
    /// # Errors
    /// [`Error::Background`] once a rollover failed: whether `CURRENT`
    /// names the old manifest or the new one is unknown, so nothing more
    /// is logged. A manual compaction or a keyspace creation that found
    /// the database writable just before that (the failing flush records
    /// its error only after it lets go of the versions lock) gets this,
    /// not [`Error::ReadOnly`], which means a read-only handle.
    fn manifest_mut(&mut self) -> Result<&mut Manifest> {
        match (&mut self.manifest, &self.manifest_lost) {
            (Some(m), _) => Ok(m),
            (None, Some(why)) => Err(Error::Background(why.clone())),
            (None, None) => Err(Error::ReadOnly),
        }
    }

    /// The edit describing the whole state, with the default keyspace's
    /// files those of `version` and each other keyspace's those of its
    /// version in `others` (every live keyspace has one): the first
    /// record of a new manifest. Without keyspaces it is the version-3
    /// snapshot, byte for byte but for the version.
    fn snapshot(
        &self,
        version: &Version,
        others: &BTreeMap<u32, Arc<Version>>,
        next_file_number: u64,
    ) -> VersionEdit {
        let files = |v: &Version| -> Vec<(u32, FileMetaData)> {
            v.files()
                .map(|(level, f)| (level as u32, f.meta.clone()))
                .collect()
        };
        let keyspaces = self
            .keyspaces
            .iter()
            .map(|(&id, k)| {
                let v = others.get(&id).map(Arc::as_ref);
                let edit = KeyspaceEdit {
                    add: Some(KeyspaceAdd {
                        name: k.name.clone(),
                        options: k.options_text.clone(),
                    }),
                    log_number: Some(k.log_number),
                    new_files: v.map(files).unwrap_or_default(),
                    key_predictions: k.key_predictions.iter().copied().collect(),
                    new_range_tombstones: v
                        .map(|v| v.range_tombstones.as_new_tombstones())
                        .unwrap_or_default(),
                    ..Default::default()
                };
                (id, edit)
            })
            .collect();
        VersionEdit {
            format_version: Some(manifest::FORMAT_VERSION),
            log_number: Some(self.log_number),
            next_file_number: Some(next_file_number),
            last_sequence: Some(SequenceNumber(self.last_seq)),
            user_bytes_flushed: Some(self.user_bytes_flushed),
            table_bytes_written: Some(self.table_bytes_written),
            new_files: files(version),
            key_predictions: self.key_predictions.iter().copied().collect(),
            new_range_tombstones: version.range_tombstones.as_new_tombstones(),
            next_keyspace_id: (self.next_keyspace_id > 1).then_some(self.next_keyspace_id),
            keyspaces,
            ..Default::default()
        }
    }

    /// The log number logged for keyspace `id` (`Lp`), if live.
    fn log_number_of(&self, id: u32) -> Option<u64> {
        if id == 0 {
            Some(self.log_number)
        } else {
            self.keyspaces.get(&id).map(|k| k.log_number)
        }
    }

    /// The smallest log number logged for any live keyspace: every WAL
    /// below it is obsolete (DESIGN.md 5: only log numbers
    /// durable in the manifest free a WAL, never one moved in memory).
    fn min_log_number(&self) -> u64 {
        self.keyspaces
            .values()
            .map(|k| k.log_number)
            .fold(self.log_number, u64::min)
    }

    /// The rollover size for a manifest whose first record ends at
    /// `snapshot_len` bytes.
    fn limit_for(options: &Options, snapshot_len: u64) -> u64 {
        options.max_manifest_file_size.max(2 * snapshot_len)
    }
}

#[derive(Default)]
struct BgState {
    shutdown: bool,
    error: Option<String>,
}

struct DbInner {
    dir: PathBuf,
    options: Options,
    read_only: bool,
    write: Mutex<WriteState>,
    /// Writers waiting to be committed in a group (`write.rs`).
    write_queue: WriteQueue,
    /// WALs closed by a rotation and not yet synced, oldest first
    /// (`write.rs`): the background thread syncs them, or a sync write
    /// does first.
    closed_wals: Mutex<Vec<LogWriter>>,
    versions: Mutex<VersionState>,
    /// The default keyspace (id 0): every `Db` read and write reaches it
    /// without a lookup.
    default: Arc<KeyspaceState>,
    /// The other live keyspaces. Lock order: `write`, then `versions`,
    /// then this (which is held only to clone or replace the map).
    keyspaces: parking_lot::RwLock<Arc<KeyspaceMap>>,
    /// Told apart for every open database of the process
    /// ([`keyspace::next_instance`]).
    instance: u64,
    /// The id of the keyspace the background compacted last: the next
    /// automatic compaction looks at the keyspaces after it first.
    compacted_last: std::sync::atomic::AtomicU32,
    /// The data-block cache of point lookups, with
    /// [`crate::TableReads::Cached`].
    block_cache: Option<Arc<BlockCache>>,
    /// Largest sequence number whose batch is fully in a memtable: the
    /// view a new read gets.
    visible_seq: AtomicU64,
    next_file_number: AtomicU64,
    bg: Mutex<BgState>,
    /// Set once `bg.error` is: lets a write check for it without the lock.
    failed: std::sync::atomic::AtomicBool,
    /// Set when the `Db` is closed (`Db::close` or drop): a [`Keyspace`]
    /// handle that outlives it must not answer reads from a state another
    /// handle of the directory may have moved past.
    closed: std::sync::atomic::AtomicBool,
    bg_cv: Condvar,
    counters: Counters,
    /// The read sketch, with [`Options::hot_keys`].
    hot: Option<ReadSketch>,
    /// Live snapshots: sequence number -> how many snapshots hold it.
    snapshots: Mutex<BTreeMap<u64, usize>>,
    /// Held while a compaction runs, so that only one runs at a time
    /// (in any keyspace); a keyspace's compaction pointers are taken only
    /// under it.
    compaction: Mutex<()>,
    /// What the open replayed and dropped.
    recovery: RecoveryReport,
    /// The `LOCK` file, held with an exclusive lock until the `Db` closes
    /// or drops (not until the last `Snapshot` or iterator lets this go, so
    /// a snapshot kept past close does not keep the database locked);
    /// `None` when open read-only, and once closed.
    lock: Mutex<Option<File>>,
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
    /// Opens the database in directory `path` with the options it stored
    /// (its `OPTIONS` file; the defaults for what it has not stored),
    /// creating it with default [`Options`] if missing: `Db::builder(path)
    /// .open()`.
    ///
    /// # Errors
    /// As [`Db::open_with`], and [`Error::Corruption`] for a damaged
    /// `OPTIONS` file.
    pub fn open(path: impl AsRef<Path>) -> Result<Db> {
        Db::builder(path).open()
    }

    /// A [`DbBuilder`] for the database at `path`: set options by name,
    /// then `open()` (see its example).
    pub fn builder(path: impl AsRef<Path>) -> DbBuilder {
        DbBuilder::new(path.as_ref().to_path_buf())
    }

    /// Opens (or, with `create_if_missing`, creates) the database in
    /// directory `path`, replaying the manifest and any WAL left by the last
    /// process. A single WAL whose writes fit in the memtable stays in use
    /// (its torn tail, if any, cut off); otherwise the replayed writes are
    /// flushed to level-0 SSTables and a fresh WAL is started. A fresh
    /// manifest is started either way (DESIGN.md section 8). `options` are
    /// used whole, whatever the database stored; the stored settings they
    /// differ from are listed in [`RecoveryReport::options_changes`], and
    /// `options` are stored in their place (`OPTIONS`, DESIGN.md 12.13).
    ///
    /// # Errors
    /// - [`Error::InvalidArgument`] for bad options;
    /// - [`Error::NotADatabase`] if `path` is a file or below one, a
    ///   non-empty directory
    ///   without a database, or missing with `create_if_missing == false`;
    /// - [`Error::AlreadyExists`] if a database exists and
    ///   `error_if_exists` is set;
    /// - [`Error::Locked`] if another `Db` holds it;
    /// - [`Error::Corruption`] for damaged files (a torn tail at the end of
    ///   a WAL is not damage: those unacknowledged bytes are dropped);
    /// - [`Error::UnsupportedVersion`] for a newer format;
    /// - [`Error::Io`] for failed file operations.
    pub fn open_with(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        options.validate()?;
        let dir = path.as_ref().to_path_buf();
        check_path(&dir)?;
        let not_db = |detail: &str| Error::NotADatabase {
            path: dir.clone(),
            detail: detail.to_string(),
        };
        if !is_directory(&dir)? {
            if !options.create_if_missing {
                return Err(not_db("does not exist (create_if_missing is false)"));
            }
            options
                .file_system
                .create_dir_all(&dir)
                .context(|| format!("create directory {}", dir.display()))?;
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
                    return Err(Error::AlreadyExists(dir.clone()));
                }
                replay_manifest(&dir, number)?
            }
            None => {
                check_fresh_directory(&dir)?;
                if !options.create_if_missing {
                    return Err(not_db("holds no database (create_if_missing is false)"));
                }
                Replayed::fresh()
            }
        };
        // What the stored options say, next to the ones this open uses; a
        // damaged file is reported and replaced, since these options are
        // given in full.
        let existed = state.manifest.is_some();
        let (stored_bytes, found) = match stored_options::read(&dir) {
            Ok(Some((bytes, stored))) => {
                let changes = stored.differences(&options);
                (
                    Some(bytes),
                    StoredOptionsFound {
                        changes,
                        file_missing: false,
                    },
                )
            }
            Ok(None) => (
                None,
                StoredOptionsFound {
                    changes: Vec::new(),
                    file_missing: existed,
                },
            ),
            Err(e) => (
                None,
                StoredOptionsFound {
                    changes: vec![format!("the OPTIONS file was unreadable ({e}); replaced")],
                    file_missing: false,
                },
            ),
        };
        let db = recover(dir, options, Some(lock), state, None, found)?;
        let used = stored_options::encode(&db.inner.options);
        if stored_bytes.as_deref() != Some(used.as_slice()) {
            // Temporary file 000000.tmp: number 0 is never handed out, and
            // this writer holds the lock, so no other write uses it; an
            // open removes a leftover one.
            let fs = &*db.inner.options.file_system;
            stored_options::write(fs, &db.inner.dir, 0, &db.inner.options)?;
        }
        Ok(db)
    }

    /// Opens an existing database for reading only, as tools do: no file is
    /// created, changed or deleted, no lock is taken (so it works while
    /// another process has the database open), and WAL contents are
    /// replayed into memory only. Writes, `flush` and `compact` return
    /// [`Error::ReadOnly`]. The view is fixed at open, and it is a prefix
    /// of the writer's acknowledged writes: nothing is missing before the
    /// newest write it shows (an open that a writer's flush or compaction
    /// overtakes reads the manifest again; one that finds a WAL damaged
    /// while a process has the database open for writing reads that WAL
    /// again, as it may have caught a record being copied in). Reads work
    /// on after another process compacts the files away: each table stays
    /// mapped.
    ///
    /// # Errors
    /// As [`Db::open_with`], and [`Error::NotADatabase`] if there is no
    /// database at `path`; [`Error::Io`] of kind
    /// [`std::io::ErrorKind::Interrupted`] if another process flushed or
    /// compacted during every attempt for 5 s: nothing is wrong, and
    /// trying again is the remedy.
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        options.validate()?;
        let dir = path.as_ref().to_path_buf();
        check_path(&dir)?;
        if !dir.is_dir() {
            return Err(no_database(&dir));
        }
        // A writer in another process may flush or compact while we read,
        // deleting a WAL or table the manifest we read still names. If the
        // manifest changed meanwhile, read the new state; if it did not,
        // the error stands.
        //
        // The WALs are opened first, before the manifest is read: whichever
        // WAL the manifest then names stays readable even if a flush
        // deletes it before this open gets to it.
        let open = || {
            let wals = pin_wals(&*options.file_system, &dir)?;
            match manifest::read_current(&dir)? {
                Some(number) => replay_manifest(&dir, number).and_then(|state| {
                    sync_point::reach(&options.sync_points, SyncPoint::ReadOnlyOpenAfterManifest);
                    recover(
                        dir.clone(),
                        options.clone(),
                        None,
                        state,
                        Some(wals),
                        StoredOptionsFound::default(),
                    )
                }),
                // Tables or WAL data without CURRENT is Corruption.
                None => Err(no_database(&dir)),
            }
        };
        manifest::retry_while_manifest_changes(&dir, open, |_| true).map_err(|(e, changed)| {
            if !changed {
                return e;
            }
            // Every attempt met a flush or compaction; none of them is
            // damage. Say so, and that trying again is the remedy.
            Error::io(
                format!(
                    "read-only open of {}: another process changed the database during every \
                     attempt (last: {e}); try again",
                    dir.display()
                ),
                std::io::Error::from(std::io::ErrorKind::Interrupted),
            )
        })
    }

    /// Whether another process has the database at `path` open for writing
    /// (holds its `LOCK`): `Some(true)` or `Some(false)`, or `None` if that
    /// cannot be told (no `LOCK` file, or it cannot be opened). Takes no
    /// lock that outlives the call and changes nothing on disk. A handle
    /// of this process holding the lock also counts. A held lock is tried
    /// again for up to 200 ms before the answer is `Some(true)`, as
    /// [`Db::open`] retries it (a child process forked just before a
    /// handle closed holds a copy of its descriptor until `exec`).
    pub fn held_by_a_writer(path: impl AsRef<Path>) -> Option<bool> {
        recovery::held_by_a_writer(path.as_ref())
    }

    /// Sets `key` to `value`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a key over 65,535 bytes or a value
    /// over [`crate::MAX_VALUE_LEN`] (4 GiB − 128 KiB; nothing is
    /// written and the database stays writable); [`Error::Io`] if the WAL
    /// write fails; [`Error::Background`] after an earlier background
    /// failure.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        let mut b = WriteBatch::with_capacity(21 + key.len() + value.len());
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

    /// Deletes every key in `range` with one range tombstone, whatever the
    /// range holds: `get`, iterators and snapshots taken afterwards see
    /// none of its keys until they are written again. The covered data is
    /// removed from disk by later compactions (`compact` or `compact_range`
    /// over the range removes it at once, unless a snapshot still needs
    /// it), and the tombstone itself once no table holds what it hides
    /// (DESIGN.md 3.7). An empty range writes nothing.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if a bound is longer than 65,535 bytes or
    /// the range is inverted; otherwise as [`Db::put`].
    ///
    /// # Example
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let db = siftdb::Db::open(dir.path())?;
    /// for i in 0..100u32 {
    ///     db.put(format!("user/{i:03}"), "profile")?;
    /// }
    /// db.put("zebra", "stays")?;
    /// db.delete_range("user/".."user0")?; // every key starting "user/"
    /// assert_eq!(db.get("user/042")?, None);
    /// assert_eq!(db.iter().count(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_range(&self, range: impl KeyRange) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(range)?;
        self.write(b)
    }

    /// Applies every update of `batch` atomically: one WAL record, one
    /// range of sequence numbers, made visible to readers all at once.
    /// Synced before it returns if [`Options::sync`] is set (else see
    /// [`Db::write_with`] and [`Db::persist`]).
    ///
    /// # Errors
    /// [`Error::Io`] if the WAL write or sync fails (the database then
    /// turns read-only: a partly written record must not be followed by
    /// more). The batch was not applied in this process, but its record may
    /// have reached the disk, so a reopen may show it or not, whole either
    /// way, as for any write that did not return. [`Error::Background`]
    /// after an earlier background failure; [`Error::ReadOnly`] on a
    /// read-only handle (an empty batch included).
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.inner.write_batch(batch, self.inner.options.sync)
    }

    /// As [`Db::write`], with this write's own [`WriteOptions`]: with
    /// `sync: true` the call returns only once the batch, and every write
    /// acknowledged before it, is `fdatasync`ed (survives a power loss),
    /// whatever [`Options::sync`] says; with `sync: false` it survives a
    /// process crash. Concurrent writers are committed in groups, one WAL
    /// `write` and at most one `fdatasync` per group (DESIGN.md 11), so
    /// sync writes from many threads share their syncs. An empty batch
    /// with `sync: true` is [`Db::persist`].
    ///
    /// ```
    /// use siftdb::{Db, WriteBatch, WriteOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = Db::open(dir.path()).unwrap();
    /// let mut batch = WriteBatch::new();
    /// batch.put("order:17", "paid").unwrap();
    /// db.write_with(batch, &WriteOptions { sync: true }).unwrap(); // durable now
    /// ```
    ///
    /// # Errors
    /// As [`Db::write`].
    pub fn write_with(&self, batch: WriteBatch, options: &WriteOptions) -> Result<()> {
        self.inner.write_batch(batch, options.sync)
    }

    /// Atomically replaces the value of `key` by `f(current value)`:
    /// `Some(v)` puts `v`, `None` deletes the key (a `None` for an absent
    /// key writes nothing). No other write commits between the read and
    /// the write, whatever thread makes it, so concurrent updates never
    /// lose one another (four threads each adding 250 to a counter end at
    /// 1,000). Returns the value written (`None`: the key is now absent).
    /// Synced as [`Options::sync`] says.
    ///
    /// `f` runs once, on the calling thread, while this update holds the
    /// write path: every other writer waits for it, so keep it short. It
    /// may read this database (`get`, iterators, snapshots); a write,
    /// `persist`, `flush`, a compaction or `wait_for_compactions` of this
    /// database from inside it would wait for itself, and returns
    /// [`Error::InvalidArgument`] instead. Why this and not a compare-and-swap or a merge operator: it
    /// is one call with no retry loop for the caller and no operator to
    /// register at open, and its cost is one point read inside the commit;
    /// the price is that it serializes with other writes, which a merge
    /// operator would not.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a key over 65,535 bytes or a value
    /// too long; the errors of [`Db::get`] for the read and of
    /// [`Db::write`] for the write. Nothing is written on an error. If `f`
    /// panics, nothing is written and the panic continues in the caller;
    /// the database stays usable.
    ///
    /// # Example
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let db = siftdb::Db::open(dir.path())?;
    /// let add_one = |v: Option<&[u8]>| {
    ///     let n = v.map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()));
    ///     Some((n + 1).to_le_bytes().to_vec())
    /// };
    /// std::thread::scope(|s| {
    ///     for _ in 0..4 {
    ///         let db = &db;
    ///         s.spawn(move || (0..250).for_each(|_| { db.update("n", add_one).unwrap(); }));
    ///     }
    /// });
    /// assert_eq!(db.get("n")?.as_deref(), Some(&1000u64.to_le_bytes()[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn update<F>(&self, key: impl AsRef<[u8]>, f: F) -> Result<Option<Vec<u8>>>
    where
        F: FnOnce(Option<&[u8]>) -> Option<Vec<u8>>,
    {
        let key = key.as_ref();
        check_lengths(key.len(), 0)?;
        let mut f = Some(f);
        let mut written = None;
        let mut panicked = None;
        let mut build = |inner: &DbInner, seq: SequenceNumber| -> Result<WriteBatch> {
            // `seq` is the newest committed write (this writer holds the
            // write path), whose versions no compaction drops, so the
            // super-version may be taken after it (unlike `view`).
            let sv = inner.default.current.read().clone();
            let current = inner.point_get(&sv, key, seq)?;
            let f = f.take().expect("a batch is built once");
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                inner.run_as_update(|| f(current.as_deref()))
            }));
            let new = match run {
                Ok(new) => new,
                Err(payload) => {
                    panicked = Some(payload);
                    return Err(Error::InvalidArgument("the update closure panicked".into()));
                }
            };
            let mut batch = WriteBatch::new();
            match &new {
                Some(v) => batch.put(key, v)?,
                None if current.is_some() => batch.delete(key)?,
                None => {}
            }
            written = new;
            Ok(batch)
        };
        let outcome = self.inner.write_built(self.inner.options.sync, &mut build);
        if let Some(payload) = panicked {
            std::panic::resume_unwind(payload);
        }
        outcome.map(|()| written)
    }

    /// Makes every write acknowledged before the call durable against
    /// power loss: `fdatasync`s the WAL (and any older WAL not yet synced).
    /// Without [`Options::sync`], call it at the points where losing the
    /// latest writes to a power cut would matter (a commit, a checkpoint
    /// of the application); a process crash loses nothing either way.
    ///
    /// # Errors
    /// [`Error::ReadOnly`] on a read-only handle; [`Error::Io`] if the sync
    /// fails (the database then turns read-only: what reached the disk is
    /// unknown); [`Error::Background`] after an earlier failure.
    pub fn persist(&self) -> Result<()> {
        self.inner.persist()
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
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Slice>> {
        let key = key.as_ref();
        check_lengths(key.len(), 0)?;
        let (sv, seq) = self.inner.view();
        self.inner.point_get(&sv, key, seq)
    }

    /// The heaviest keys of the read sketch's current window
    /// ([`Options::hot_keys`]): at most `k` (and at most
    /// [`crate::HotKeyOptions::k`]), heaviest first, each with its
    /// estimated found and absent lookups, with the window's lookup count
    /// `N` and the bound `ε·N` ([`crate::HotKeys::error_bound`]) an
    /// estimate exceeds its true count by with probability at most `δ`
    /// (Cormode and Muthukrishnan 2005). Lookups of both [`Db::get`] and
    /// [`Snapshot::get`] count; lookups that returned an error do not.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the sketch is off
    /// (`Options::hot_keys` is `None`).
    pub fn hot_keys(&self, k: usize) -> Result<crate::HotKeys> {
        match &self.inner.hot {
            Some(s) => Ok(s.hot_keys(k)),
            None => Err(Error::InvalidArgument(
                "hot_keys: the read sketch is off (set Options::hot_keys)".to_string(),
            )),
        }
    }

    /// Iterates the live pairs with keys in `range`, in key order
    /// (double-ended: `.rev()` walks backwards), as of the moment of the
    /// call. Items are `Result<(key, value)>`.
    ///
    /// With [`Options::prefix_extractor`] set and both bounds keys of one
    /// extracted prefix, tables whose prefix filter says they hold no key
    /// of it are skipped without a read.
    pub fn range(&self, range: impl KeyRange) -> DbIterator {
        let (lo, hi) = range.into_bounds();
        let (sv, seq) = self.inner.view();
        self.inner.scan_range(&self.inner.default, sv, seq, lo, hi)
    }

    /// Iterates every live pair in key order (double-ended), as of the
    /// moment of the call: `range(..)`.
    pub fn iter(&self) -> DbIterator {
        let (sv, seq) = self.inner.view();
        let all = std::ops::Bound::Unbounded;
        self.inner
            .scan_range(&self.inner.default, sv, seq, all.clone(), all)
    }

    /// Iterates the live pairs whose key starts with `prefix`, in key order.
    /// With [`Options::prefix_extractor`] set and `prefix` in its domain
    /// (for [`crate::filter::FixedPrefix`]: at least as long as its
    /// prefixes), tables whose prefix filter says they hold no key of that
    /// prefix are skipped without a read ([`crate::Stats::prefix_negatives`]).
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        let (sv, seq) = self.inner.view();
        self.inner
            .scan_prefix(&self.inner.default, sv, seq, prefix.as_ref())
    }

    /// Freezes the active memtable (if it holds anything) and waits until
    /// every frozen memtable is written to a level-0 SSTable.
    ///
    /// # Errors
    /// [`Error::Background`] if a flush fails; [`Error::Io`] if the new WAL
    /// cannot be created.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush_keyspaces(None)
    }

    /// Flushes, then compacts every level into the next, down to the deepest
    /// level holding data, and waits. Afterwards that level holds all data,
    /// without dead versions and (unless a snapshot still needs them)
    /// without tombstones. That last level is compacted into itself, except
    /// for files that hold no tombstone, one version per key and a filter
    /// built with the current options, and that the target file size would
    /// not cut: rewriting those would change nothing, so compacting an
    /// already compacted database writes nothing (and succeeds).
    ///
    /// # Errors
    /// As [`Db::flush`]; [`Error::Corruption`] or [`Error::Io`] from the
    /// compaction, which then turns the database read-only, as a failed
    /// background compaction does: later writes report
    /// [`Error::Background`]. Every acknowledged write is still readable,
    /// and a reopen recovers them all.
    pub fn compact(&self) -> Result<()> {
        self.flush()?; // also refuses a read-only database
        self.inner.compact_manually(&self.inner.default, None)
    }

    /// Rewrites every table whose filter is not the one the options would
    /// build for it now, each into its own level, copying every entry as
    /// it is (nothing is dropped, so the table keeps its keys, its place
    /// and its level): after a change of [`Options::filters`],
    /// `bits_per_key` or [`Options::filter_budget`], the whole tree adopts
    /// the new filters for the cost of rewriting only the tables that
    /// differ, not of a full compaction. Under a budget, each table gets
    /// its run's setting in the current shape (a table whose bits per key
    /// are within 2% of it is left alone), which also undoes the drift of
    /// a tree whose shape changed since its tables were written. Returns
    /// the number of tables rewritten; writes and reads go on meanwhile,
    /// and background compactions wait.
    ///
    /// # Errors
    /// As [`Db::compact`]: a failure turns the database read-only.
    ///
    /// ```
    /// use siftdb::filter::FilterBudget;
    /// use siftdb::{Db, Options};
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = Db::open(dir.path()).unwrap();
    /// db.put(b"k", b"v").unwrap();
    /// db.flush().unwrap();
    /// drop(db);
    /// // Reopened at 14 bits per key, the table written at 10 is rebuilt.
    /// let mut o = Options::default();
    /// o.filter_budget = Some(FilterBudget::bits_per_key(14.0));
    /// let db = Db::open_with(dir.path(), o).unwrap();
    /// assert_eq!(db.rebuild_filters().unwrap(), 1);
    /// assert_eq!(db.rebuild_filters().unwrap(), 0);
    /// assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    /// ```
    pub fn rebuild_filters(&self) -> Result<usize> {
        self.inner.refuse_inside_update("rebuild_filters")?;
        self.inner.rebuild_filters()
    }

    /// As [`Db::compact`], but only for the files holding keys in `range`
    /// (any [`KeyRange`], as [`Db::range`] takes; level-0 files are widened
    /// to every file that overlaps them, so that no older overlapping file
    /// stays above the output). An empty range (`"k".."k"`) compacts
    /// nothing.
    ///
    /// # Errors
    /// As [`Db::compact`]; [`Error::InvalidArgument`] if the range starts
    /// after it ends.
    ///
    /// # Example
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let db = siftdb::Db::open(dir.path())?;
    /// db.put("user/1", "a")?;
    /// db.delete_range("user/".."user0")?;
    /// db.compact_range("user/".."user0")?; // the deleted data leaves the disk
    /// assert_eq!(db.stats().range_tombstones, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn compact_range(&self, range: impl KeyRange) -> Result<()> {
        self.inner.refuse_inside_update("compact_range")?;
        let Some(bounds) = compaction_bounds(range)? else {
            return Ok(()); // empty: no key, so no file to compact
        };
        self.flush()?;
        self.inner
            .compact_manually(&self.inner.default, Some(&bounds))
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
        self.inner.refuse_inside_update("wait_for_compactions")?;
        let inner = &*self.inner;
        let mut bg = inner.bg.lock();
        loop {
            if let Some(e) = &bg.error {
                return Err(Error::Background(e.clone()));
            }
            let idle = inner.all_keyspaces().iter().all(|ks| {
                let cur = ks.current.read();
                cur.imms.is_empty() && !background::compaction_due(&cur.version, &ks.options())
            });
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

    /// What this open found in the write-ahead logs and the manifest:
    /// batches replayed per WAL, and any torn tail dropped (with its file,
    /// offset and bytes), so that an application can log or alert on a
    /// recovery that dropped data. Fixed at open.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.inner.recovery
    }

    /// The SSTables of the current version, level 0 first (newest first
    /// within level 0, by smallest key in deeper levels). Each
    /// [`LiveFile`] holds its table open, so a table a compaction deletes
    /// meanwhile keeps its disk space until the list is dropped.
    pub fn live_files(&self) -> Vec<LiveFile> {
        live_files_of(&self.inner.default)
    }

    /// The estimated number of distinct user keys in the database: the
    /// key sketches (HyperLogLogs) of every live SSTable merged with a
    /// sketch of the memtables' keys, so no data block is read (the
    /// memtables are walked, entry by entry). A key whose newest
    /// version is a tombstone, or that a range deletion hides, still counts
    /// until a compaction drops it: this counts the keys the tree holds, an upper estimate
    /// of the live ones. Tables without a readable sketch (written before
    /// sketches existed, with `Options::key_sketch_precision = None`, or
    /// with the sketch block damaged) add their exact distinct-key counts,
    /// as if no key of theirs were elsewhere.
    /// The relative standard error is `1.04/√(2^p)`, 1.6% at the default
    /// precision; small sets are nearly exact (see
    /// [`crate::sketch::hyperloglog`]).
    ///
    /// # Errors
    /// [`Error::Corruption`] if a memtable entry is malformed (never for a
    /// damaged sketch, which counts as no sketch).
    ///
    /// # Example
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let db = siftdb::Db::open(dir.path())?;
    /// for i in 0..1000u32 {
    ///     db.put(i.to_be_bytes(), "v")?;
    ///     db.put(i.to_be_bytes(), "v2")?; // an overwrite is one key
    /// }
    /// db.flush()?;
    /// let n = db.approximate_len()?;
    /// assert!((990..=1010).contains(&n), "{n}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn approximate_len(&self) -> Result<u64> {
        self.inner.approximate_len_of(&self.inner.default)
    }

    read_conveniences!("now");

    /// The settings the database at `dir` stored in its `OPTIONS` file
    /// (DESIGN.md 12.13), as `(name, value)` text in file order, or `None`
    /// if it has none (created before the file existed, or never opened
    /// for writing). For tools: [`Db::builder`] applies them.
    ///
    /// # Errors
    /// [`Error::Corruption`] if the file is damaged,
    /// [`Error::UnsupportedVersion`] if a newer build wrote it,
    /// [`Error::Io`] if it cannot be read.
    pub fn stored_options(dir: impl AsRef<Path>) -> Result<Option<Vec<(String, String)>>> {
        Ok(stored_options::read(dir.as_ref())?.map(|(_, s)| s.settings().to_vec()))
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

    /// Stops the background thread and syncs the WAL; with
    /// [`Options::hot_keys`] on (and not read-only), writes the read
    /// sketch's window to `HOTKEYS` ([`crate::sketch::hot_file`]).
    /// Dropping a `Db` does the same but cannot report errors.
    ///
    /// # Errors
    /// [`Error::Io`] if the final WAL sync or the `HOTKEYS` write fails.
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
        let mut w = self.inner.write.lock();
        // A `Keyspace` handle may outlive this `Db`: once its lock is let
        // go, another handle may open the directory, so nothing may be
        // written through this one any more.
        if !self.inner.read_only {
            self.inner.record_bg_error(keyspace::CLOSED.into());
        }
        self.inner.closed.store(true, Ordering::Release);
        let synced = self
            .inner
            .sync_closed_wals()
            .and_then(|()| match w.wal.as_mut() {
                Some(wal) => wal.sync(),
                None => Ok(()),
            });
        drop(w);
        let hot = match &self.inner.hot {
            Some(sketch) if !self.inner.read_only => {
                let tmp = self.inner.next_file_number.fetch_add(1, Ordering::SeqCst);
                crate::sketch::hot_file::write(
                    &*self.inner.options.file_system,
                    &self.inner.dir,
                    tmp,
                    &sketch.hot_keys(usize::MAX),
                )
            }
            _ => Ok(()),
        };
        // Nothing writes once the background thread is gone and this handle
        // is closing: let the next open in (snapshots and iterators still
        // read what they hold). Every acknowledged write is in the WAL or a
        // table, synced or not, so a failed sync above does not hold it.
        drop(self.inner.lock.lock().take());
        synced.and(hot)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if self.bg_thread.is_some() {
            let _ = self.shutdown();
        }
    }
}

/// The SSTables of `ks`'s current version, as [`Db::live_files`] lists
/// them.
fn live_files_of(ks: &KeyspaceState) -> Vec<LiveFile> {
    let sv = ks.current.read().clone();
    sv.version
        .files()
        .map(|(level, f)| LiveFile {
            level,
            number: f.meta.number,
            path: f.table.path().to_path_buf(),
            file_size: f.meta.file_size,
            properties: f.table.properties().clone(),
            table: Arc::clone(&f.table),
        })
        .collect()
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
    /// The open table, so that what the listing names can be read after
    /// a compaction deletes its file (its map keeps the bytes, and the
    /// disk space, until the last `LiveFile` of it is dropped).
    table: Arc<crate::sstable::Table>,
}

impl LiveFile {
    /// The HyperLogLog of the table's distinct user keys (DESIGN.md 6.8),
    /// or `None` for a table written without one (before sketches existed,
    /// or with `Options::key_sketch_precision = None`). Read from the table
    /// this listing holds open, not from [`LiveFile::path`]: a compaction
    /// that has deleted the file since (in this process, or in the writer
    /// a read-only handle reads beside) does not disturb it.
    ///
    /// # Errors
    /// [`Error::Corruption`] if the sketch block's handle leaves the file,
    /// its checksum fails, or it does not decode.
    pub fn key_sketch(&self) -> Result<Option<crate::sketch::hyperloglog::HyperLogLog>> {
        self.table.key_sketch()
    }
}

mod background;
mod builder;
mod checkpoint;
mod filter_budget;
mod flush;
mod keyspace;
mod keyspace_drop;
mod read;
mod recovery;
mod snapshot;
mod stats;
mod stored_options;
mod write;

use recovery::{
    acquire_lock, check_fresh_directory, recover, replay_manifest, Replayed, StoredOptionsFound,
};
pub(crate) use recovery::{
    is_directory, live_wals, no_database, pin_wals, reread_while_a_writer_appends, PinnedWal,
};
#[cfg(test)]
pub(crate) use recovery::{test_support as recovery_test_support, LIVE_WAL_REREADS};
pub use recovery::{RecoveryReport, WalReplay};
use write::WriteQueue;

impl DbInner {
    /// Refuses a read, flush or compaction through a handle of keyspace
    /// `ks`: dropped, or of a closed database.
    ///
    /// # Errors
    /// [`Error::NoSuchKeyspace`] once it is dropped; [`Error::Background`]
    /// once the database is closed, as writes get.
    fn check_live(&self, ks: &KeyspaceState) -> Result<()> {
        ks.check_live()?;
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Background(keyspace::CLOSED.into()));
        }
        Ok(())
    }

    /// Refuses writes to a read-only database or one a background error
    /// made read-only.
    fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        // Every write comes here: skip the lock while nothing failed.
        if !self.failed.load(Ordering::Acquire) {
            return Ok(());
        }
        match &self.bg.lock().error {
            Some(e) => Err(Error::Background(e.clone())),
            None => Ok(()),
        }
    }

    /// Every live keyspace, the default first, then by ascending id.
    fn all_keyspaces(&self) -> Vec<Arc<KeyspaceState>> {
        let map = Arc::clone(&self.keyspaces.read());
        std::iter::once(Arc::clone(&self.default))
            .chain(map.iter().cloned())
            .collect()
    }

    /// The current version of every live keyspace other than the default,
    /// by id.
    fn other_versions(&self) -> BTreeMap<u32, Arc<Version>> {
        let map = Arc::clone(&self.keyspaces.read());
        map.iter()
            .map(|ks| (ks.id, Arc::clone(&ks.current.read().version)))
            .collect()
    }

    /// The file system every write goes through ([`Options::file_system`]).
    fn fs(&self) -> &Arc<dyn FileSystem> {
        &self.options.file_system
    }

    /// Turns the database read-only with `message`, unless an earlier
    /// failure already did, and wakes every waiter so that it sees it.
    fn record_bg_error(&self, message: String) {
        let mut bg = self.bg.lock();
        bg.error.get_or_insert(message);
        self.failed.store(true, Ordering::Release);
        self.bg_cv.notify_all();
    }
}

/// Refuses the empty path, which names no directory (the file system
/// would answer with an error naming nothing).
///
/// # Errors
/// [`Error::InvalidArgument`] for an empty path.
fn check_path(dir: &Path) -> Result<()> {
    if dir.as_os_str().is_empty() {
        return Err(Error::InvalidArgument(
            "the database path is empty: name a directory (\".\" for the current one)".into(),
        ));
    }
    Ok(())
}

/// The bounds of `range` for [`Db::compact_range`] and
/// [`Keyspace::compact_range`]: `None` for an empty range (nothing to
/// compact).
///
/// # Errors
/// [`Error::InvalidArgument`] if the range starts after it ends.
pub(super) fn compaction_bounds(
    range: impl KeyRange,
) -> Result<Option<crate::compaction::KeyBounds>> {
    let (lo, hi) = range.into_bounds();
    if crate::key_range::inverted(&lo, &hi) {
        return Err(Error::InvalidArgument(
            "compact_range: the range starts after it ends".into(),
        ));
    }
    if crate::range_tombstone::half_open(lo.clone(), hi.clone()).is_none() {
        return Ok(None);
    }
    Ok(Some((lo, hi)))
}
