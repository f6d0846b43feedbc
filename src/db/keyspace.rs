//! Keyspaces (column families): [`KeyspaceState`], what one LSM tree
//! owns apart from what the whole database shares; [`KeyspaceMap`], the
//! live keyspaces other than the default; and the handles [`Keyspace`]
//! and [`KeyspaceSnapshot`].
//!
//! Keyspaces share one WAL, one manifest, one sequence number, one file
//! numbering and one background thread; each has its own memtables,
//! tables and compaction state (DESIGN.md 2, 10). The default keyspace
//! (id 0) lives in `DbInner::default`, so that every `Db` call reaches it
//! without a lookup; the others are in `DbInner::keyspaces`.
//! Dropping one is `keyspace_drop.rs`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use super::stored_options::keyspace_text;
use super::{Db, DbInner, Snapshot, SuperVersion, VersionState, WriteState};
use crate::iter::DbIterator;
use crate::key::SequenceNumber;
use crate::key_range::KeyRange;
use crate::version::edit::{
    check_keyspace_name, KeyspaceAdd, KeyspaceEdit, VersionEdit, DEFAULT_KEYSPACE_NAME,
};
use crate::version::set::NUM_LEVELS;
use crate::write_batch::{check_lengths, WriteBatch};
use crate::KeyspaceOptions;
use crate::{Error, Options, Result, Slice};

/// What reads and writes through a handle of a closed database fail with
/// (as [`Error::Background`]).
pub(super) const CLOSED: &str = "the database was closed (Db::close or drop)";

/// The state of one keyspace: the super-version readers take and the
/// leveled picker's position. Shared state (the WAL, the manifest, the
/// file numbers, snapshots, the background thread and the lock that lets
/// one compaction run at a time) stays in `DbInner`.
pub(super) struct KeyspaceState {
    /// 0 for the default keyspace; ids are never reused.
    pub(super) id: u32,
    /// [`DEFAULT_KEYSPACE_NAME`] for id 0.
    pub(super) name: String,
    /// The memtables and version a new read sees; replaced whole by every
    /// rotation, flush and compaction.
    pub(super) current: RwLock<Arc<SuperVersion>>,
    /// The leveled picker's round-robin key per level (its compaction
    /// pointer): where the next compaction from that level starts.
    /// Taken only while holding `DbInner::compaction`.
    pub(super) compaction_pointers: Mutex<Vec<Vec<u8>>>,
    /// Its memtables flushed since open (`KeyspaceStats::flushes`).
    pub(super) flushes: AtomicU64,
    /// Its compactions run since open, trivial moves included
    /// (`KeyspaceStats::compactions`).
    pub(super) compactions: AtomicU64,
    /// The options it runs with: the database's, with its per-keyspace
    /// settings over them (the default's are the database's). Replaced
    /// whole by [`Db::keyspace_with`] (manifest tag 15).
    pub(super) options: RwLock<Arc<Options>>,
    /// Set, under the versions lock, once its drop is durable: a flush or
    /// compaction of it that finds this set logs nothing and deletes its
    /// outputs.
    pub(super) dropped: AtomicBool,
}

impl KeyspaceState {
    /// Keyspace `id` named `name`, whose readers start at `sv`, running
    /// with `options`, with no compaction pointer yet.
    pub(super) fn new(id: u32, name: String, sv: SuperVersion, options: Options) -> KeyspaceState {
        KeyspaceState {
            id,
            name,
            current: RwLock::new(Arc::new(sv)),
            compaction_pointers: Mutex::new(vec![Vec::new(); NUM_LEVELS]),
            flushes: AtomicU64::new(0),
            compactions: AtomicU64::new(0),
            options: RwLock::new(Arc::new(options)),
            dropped: AtomicBool::new(false),
        }
    }

    /// The options the keyspace runs with now.
    pub(super) fn options(&self) -> Arc<Options> {
        Arc::clone(&self.options.read())
    }

    /// Refuses a read, flush or compaction of a dropped keyspace.
    ///
    /// # Errors
    /// [`Error::NoSuchKeyspace`] naming it once it is dropped.
    pub(super) fn check_live(&self) -> Result<()> {
        if self.dropped.load(Ordering::SeqCst) {
            return Err(Error::NoSuchKeyspace(self.name.clone()));
        }
        Ok(())
    }

    /// The WAL of the oldest write its memtables may hold (`Lmem` in
    /// DESIGN.md 5 and 9.1): its oldest frozen memtable's, else its
    /// active memtable's.
    pub(super) fn oldest_wal(&self) -> u64 {
        self.current.read().oldest_wal()
    }
}

/// The live keyspaces other than the default, by id and by name. Replaced
/// whole (copy on write) when a keyspace is created, so that a reader
/// clones one `Arc` and looks up without holding a lock.
#[derive(Default, Clone)]
pub(super) struct KeyspaceMap {
    by_id: BTreeMap<u32, Arc<KeyspaceState>>,
    by_name: HashMap<String, u32>,
    /// The names of keyspaces dropped since the open, by id: for the error
    /// that refuses a batch still naming one (a batch holds ids only).
    dropped: BTreeMap<u32, String>,
}

impl KeyspaceMap {
    /// The keyspace named `name`, if live.
    pub(super) fn by_name(&self, name: &str) -> Option<&Arc<KeyspaceState>> {
        self.by_name.get(name).and_then(|id| self.by_id.get(id))
    }

    /// Keyspace `id`, if live.
    pub(super) fn by_id(&self, id: u32) -> Option<&Arc<KeyspaceState>> {
        self.by_id.get(&id)
    }

    /// Whether no keyspace but the default is live.
    pub(super) fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Every live keyspace other than the default, by ascending id.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Arc<KeyspaceState>> {
        self.by_id.values()
    }

    /// This map with `ks` added.
    pub(super) fn with(&self, ks: Arc<KeyspaceState>) -> KeyspaceMap {
        let mut m = self.clone();
        m.by_name.insert(ks.name.clone(), ks.id);
        m.by_id.insert(ks.id, ks);
        m
    }

    /// This map without keyspace `id`, dropped.
    pub(super) fn without(&self, id: u32) -> KeyspaceMap {
        let mut m = self.clone();
        if let Some(ks) = m.by_id.remove(&id) {
            m.by_name.remove(&ks.name);
            m.dropped.insert(id, ks.name.clone());
        }
        m
    }

    /// The name keyspace `id` had, if it was dropped since the open.
    pub(super) fn dropped_name(&self, id: u32) -> Option<&str> {
        self.dropped.get(&id).map(String::as_str)
    }
}

/// A number told apart for every `DbInner` this process opens, so that a
/// batch or a snapshot given a [`Keyspace`] of another database is refused
/// rather than written to (or read from) the keyspace with the same id.
pub(super) fn next_instance() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Checks `name` as a keyspace name other than the default's.
///
/// # Errors
/// [`Error::InvalidArgument`]: `keyspace name "a b" holds a byte other
/// than ...` (DESIGN.md 12.8 gives the rules).
pub(super) fn check_name(name: &str) -> Result<()> {
    check_keyspace_name(name).map_err(Error::InvalidArgument)
}

/// A handle on one keyspace (column family) of a [`Db`]: its own
/// keys, memtables and tables, sharing the database's WAL, sequence
/// numbers and snapshots. Cheap to clone, `Send + Sync`; it keeps the
/// database's shared state alive (not its lock: closing the `Db` still
/// lets the database go, and writes through the handle then fail).
///
/// Obtained from [`Db::keyspace`] (which creates a missing one),
/// [`Db::keyspace_with`] (with its own [`KeyspaceOptions`]) or
/// [`Db::existing_keyspace`]; [`Db::drop_keyspace`] drops one. Writes to
/// several keyspaces go into one [`WriteBatch`] with
/// [`WriteBatch::put_in`] and friends, and are atomic together; reads of
/// several at one moment go through one [`Snapshot`] with
/// [`Snapshot::keyspace`]. Each keyspace keeps its own tables, level
/// shape and options, stored in the manifest, so a reopen finds every
/// keyspace as it was (DESIGN.md 2). [`Db::checkpoint`],
/// [`crate::inspect`] and salvage take every keyspace, and kvctl the one
/// its `--keyspace NAME` names.
///
/// A handle belongs to its [`Db`]: once that is closed or dropped, `get`,
/// writes, `flush` and `compact` fail with [`Error::Background`] (another
/// handle may have opened the directory since), and new iterators see the
/// keyspace as it was at the close.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use siftdb::{Db, WriteBatch};
///
/// let db = Db::open(dir.path())?;
/// let users = db.keyspace("users")?;
/// let index = db.keyspace("users-by-mail")?;
/// // Writes to two keyspaces, atomic together.
/// let mut batch = WriteBatch::new();
/// batch.put_in(&users, "u1", "Ada")?;
/// batch.put_in(&index, "ada@example.com", "u1")?;
/// db.write(batch)?;
/// assert_eq!(users.get("u1")?.as_deref(), Some(&b"Ada"[..]));
/// assert_eq!(db.get("u1")?, None); // the default keyspace is another one
/// let snapshot = db.snapshot();
/// let found = snapshot.keyspace(&index)?.get("ada@example.com")?;
/// assert_eq!(found.as_deref(), Some(&b"u1"[..]));
/// assert_eq!(db.keyspaces(), ["default", "users", "users-by-mail"]);
///
/// db.drop_keyspace("users-by-mail")?;
/// let gone = index.get("ada@example.com");
/// assert!(matches!(gone, Err(siftdb::Error::NoSuchKeyspace(_))));
/// assert_eq!(db.keyspaces(), ["default", "users"]);
/// # Ok::<(), siftdb::Error>(())
/// ```
#[derive(Clone)]
pub struct Keyspace {
    pub(super) inner: Arc<DbInner>,
    pub(super) state: Arc<KeyspaceState>,
}

impl std::fmt::Debug for Keyspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyspace")
            .field("id", &self.state.id)
            .field("name", &self.state.name)
            .finish()
    }
}

impl Keyspace {
    /// The keyspace's name (`"default"` for the default keyspace).
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// The keyspace's id: 0 for the default, else the id its creation
    /// took (ids are never reused).
    pub fn id(&self) -> u32 {
        self.state.id
    }

    /// The options the keyspace runs with: the database's, with the
    /// keyspace's own settings ([`KeyspaceOptions`]) over them. For the
    /// default keyspace, [`Db::options`].
    pub fn options(&self) -> Arc<Options> {
        self.state.options()
    }

    /// The instance of the database this handle belongs to (see
    /// [`next_instance`]).
    pub(crate) fn instance(&self) -> u64 {
        self.inner.instance
    }

    /// The value of `key` in this keyspace, or `None` if absent or
    /// deleted.
    ///
    /// # Errors
    /// As [`Db::get`]; [`Error::NoSuchKeyspace`] once the keyspace is dropped.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Slice>> {
        let key = key.as_ref();
        check_lengths(key.len(), 0)?;
        self.inner.check_live(&self.state)?;
        let (sv, seq) = self.inner.view_of(&self.state);
        self.inner.point_get(&sv, key, seq)
    }

    /// Sets `key` to `value` in this keyspace.
    ///
    /// # Errors
    /// As [`Db::put`]; [`Error::NoSuchKeyspace`] once the keyspace is dropped.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.inner.check_live(&self.state)?;
        let mut b = WriteBatch::new();
        b.put_in(self, key, value)?;
        self.inner.write_batch(b, self.inner.options.sync)
    }

    /// Deletes `key` in this keyspace.
    ///
    /// # Errors
    /// As [`Db::delete`]; [`Error::NoSuchKeyspace`] once the keyspace is dropped.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.inner.check_live(&self.state)?;
        let mut b = WriteBatch::new();
        b.delete_in(self, key)?;
        self.inner.write_batch(b, self.inner.options.sync)
    }

    /// Deletes every key of `range` in this keyspace with one range
    /// tombstone, as [`Db::delete_range`] does in the default.
    ///
    /// # Errors
    /// As [`Db::delete_range`]; [`Error::NoSuchKeyspace`] once the keyspace is dropped.
    pub fn delete_range(&self, range: impl KeyRange) -> Result<()> {
        self.inner.check_live(&self.state)?;
        let mut b = WriteBatch::new();
        b.delete_range_in(self, range)?;
        self.inner.write_batch(b, self.inner.options.sync)
    }

    /// Iterates the live pairs of this keyspace with keys in `range`, in
    /// key order (double-ended), as of the moment of the call.
    pub fn range(&self, range: impl KeyRange) -> DbIterator {
        let (lo, hi) = range.into_bounds();
        let (sv, seq) = self.inner.view_of(&self.state);
        self.inner.scan_range(&self.state, sv, seq, lo, hi)
    }

    /// Iterates every live pair of this keyspace in key order: `range(..)`.
    pub fn iter(&self) -> DbIterator {
        self.range(..)
    }

    /// Iterates the live pairs of this keyspace whose key starts with
    /// `prefix`, in key order.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        let (sv, seq) = self.inner.view_of(&self.state);
        self.inner
            .scan_prefix(&self.state, sv, seq, prefix.as_ref())
    }

    read_conveniences!("now in this keyspace");

    /// Freezes this keyspace's active memtable (if it holds anything) and
    /// waits until every frozen memtable of it is written to a level-0
    /// SSTable. Other keyspaces' memtables stay as they are.
    ///
    /// # Errors
    /// As [`Db::flush`]; [`Error::NoSuchKeyspace`] once the keyspace is dropped.
    pub fn flush(&self) -> Result<()> {
        self.inner.check_live(&self.state)?;
        self.inner.flush_keyspaces(Some(&self.state))
    }

    /// Flushes this keyspace, then compacts its tables as
    /// [`Db::compact`] does the default's.
    ///
    /// # Errors
    /// As [`Db::compact`]; [`Error::NoSuchKeyspace`] once the keyspace is dropped.
    pub fn compact(&self) -> Result<()> {
        self.flush()?;
        self.inner.compact_manually(&self.state, None)
    }

    /// The estimated number of distinct live keys in this keyspace, as
    /// [`Db::approximate_len`] estimates the default's.
    ///
    /// # Errors
    /// As [`Db::approximate_len`].
    pub fn approximate_len(&self) -> Result<u64> {
        self.inner.approximate_len_of(&self.state)
    }

    /// Flushes this keyspace, then compacts its files holding keys in
    /// `range`, as [`Db::compact_range`] does the default's.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = siftdb::Db::open(dir.path())?;
    /// let logs = db.keyspace("logs")?;
    /// logs.put("day/1", "a")?;
    /// logs.delete_range("day/".."day0")?;
    /// logs.compact_range("day/".."day0")?; // the deleted data leaves the disk
    /// assert_eq!(logs.stats().range_tombstones, 0);
    /// assert_eq!(logs.approximate_len()?, 0);
    /// # drop(logs);
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Db::compact_range`]; [`Error::NoSuchKeyspace`] once the
    /// keyspace is dropped.
    pub fn compact_range(&self, range: impl KeyRange) -> Result<()> {
        self.inner.refuse_inside_update("compact_range")?;
        let Some(bounds) = super::compaction_bounds(range)? else {
            return Ok(());
        };
        self.flush()?;
        self.inner.compact_manually(&self.state, Some(&bounds))
    }

    /// The SSTables of this keyspace's current version, as
    /// [`Db::live_files`] lists the default's.
    pub fn live_files(&self) -> Vec<super::LiveFile> {
        super::live_files_of(&self.state)
    }
}

/// Reads of one keyspace as of a [`Snapshot`]: from
/// [`Snapshot::keyspace`]. Every keyspace read through one snapshot sees
/// the same writes, so a batch over several keyspaces is seen whole or
/// not at all.
pub struct KeyspaceSnapshot<'a> {
    snapshot: &'a Snapshot,
    state: Arc<KeyspaceState>,
}

impl std::fmt::Debug for KeyspaceSnapshot<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyspaceSnapshot")
            .field("keyspace", &self.state.name)
            .field("seq", &self.snapshot.seq)
            .finish()
    }
}

impl KeyspaceSnapshot<'_> {
    /// The sequence number the snapshot reads at.
    pub fn sequence(&self) -> SequenceNumber {
        self.snapshot.seq
    }

    /// The value `key` had in the keyspace when the snapshot was taken.
    ///
    /// # Errors
    /// As [`Db::get`]; [`Error::NoSuchKeyspace`] once the keyspace is dropped.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Slice>> {
        let key = key.as_ref();
        check_lengths(key.len(), 0)?;
        self.snapshot.inner.check_live(&self.state)?;
        let sv = self.state.current.read().clone();
        self.snapshot.inner.point_get(&sv, key, self.snapshot.seq)
    }

    /// As [`Keyspace::range`], as of the snapshot.
    pub fn range(&self, range: impl KeyRange) -> DbIterator {
        let sv = self.state.current.read().clone();
        let (lo, hi) = range.into_bounds();
        self.snapshot
            .inner
            .scan_range(&self.state, sv, self.snapshot.seq, lo, hi)
    }

    /// As [`Keyspace::iter`], as of the snapshot.
    pub fn iter(&self) -> DbIterator {
        self.range(..)
    }

    /// As [`Keyspace::prefix`], as of the snapshot.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        let sv = self.state.current.read().clone();
        self.snapshot
            .inner
            .scan_prefix(&self.state, sv, self.snapshot.seq, prefix.as_ref())
    }

    read_conveniences!("in this keyspace as of the snapshot");
}

impl Snapshot {
    /// Reads of keyspace `ks` as of this snapshot. A snapshot does not
    /// keep a keyspace alive: once [`Db::drop_keyspace`] drops it, even a
    /// snapshot taken before the drop reads it no more (its `get` is
    /// [`Error::NoSuchKeyspace`], as [`KeyspaceSnapshot::get`] says).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `ks` belongs to another database.
    pub fn keyspace(&self, ks: &Keyspace) -> Result<KeyspaceSnapshot<'_>> {
        if ks.inner.instance != self.inner.instance {
            return Err(Error::InvalidArgument(format!(
                "keyspace \"{}\" belongs to another database than this snapshot",
                ks.state.name
            )));
        }
        Ok(KeyspaceSnapshot {
            snapshot: self,
            state: Arc::clone(&ks.state),
        })
    }
}

impl Db {
    /// The keyspace named `name`, created if missing (with the database's
    /// per-keyspace options, [`KeyspaceOptions::from_options`], stored in
    /// the manifest with it: DESIGN.md 12.8). The creation is durable
    /// before this returns. `"default"` is the default keyspace, the one
    /// `Db`'s own reads and writes use. An existing keyspace keeps the
    /// options it has (see [`Db::keyspace_with`]).
    ///
    /// # Errors
    /// - [`Error::InvalidArgument`] for a bad name: 1 to 64 bytes of ASCII
    ///   letters, digits, `_`, `-` and `.`, not starting with `.` or `-`;
    ///   when called inside this database's `update` closure; or, for a
    ///   missing keyspace, when the database's prefix extractor is not
    ///   built in (a keyspace stores its extractor by name);
    /// - [`Error::ReadOnly`] on a read-only handle, for a missing keyspace;
    /// - [`Error::Io`] if the manifest write fails (the database then
    ///   turns read-only: whether the keyspace exists is settled by the
    ///   next open); [`Error::Background`] after an earlier failure.
    pub fn keyspace(&self, name: &str) -> Result<Keyspace> {
        if name == DEFAULT_KEYSPACE_NAME {
            return Ok(self.default_keyspace());
        }
        check_name(name)?;
        if let Some(state) = self.inner.keyspaces.read().by_name(name) {
            return Ok(self.handle(Arc::clone(state)));
        }
        if self.inner.read_only {
            return Err(Error::ReadOnly);
        }
        let options = KeyspaceOptions::from_options(&self.inner.options);
        let (state, _) = self.inner.open_keyspace(name, &options, false)?;
        Ok(self.handle(state))
    }

    /// The keyspace named `name` running with `options` (over the
    /// database's other settings): created with them if missing; if it
    /// exists with other settings, they are replaced (one manifest edit,
    /// tag 15, durable before this returns) and take effect at once (the
    /// next table built, the next rotation; tables already written keep
    /// theirs). Returns the handle and the settings that changed, one
    /// line each as [`RecoveryReport::options_changes`] words them
    /// (`"block_size: 4096 stored, 16384 used"`; empty for a new keyspace
    /// or unchanged settings).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = siftdb::Db::open(dir.path())?;
    /// let small = siftdb::KeyspaceOptions::default().block_size(1024);
    /// let (logs, changes) = db.keyspace_with("logs", small)?;
    /// assert!(changes.is_empty()); // new
    /// let big = siftdb::KeyspaceOptions::default().block_size(16384);
    /// let (_, changes) = db.keyspace_with("logs", big)?;
    /// assert_eq!(changes, ["block_size: 1024 stored, 16384 used"]);
    /// # drop(logs);
    /// # Ok::<(), siftdb::Error>(())
    /// ```
    ///
    /// [`RecoveryReport::options_changes`]: super::RecoveryReport::options_changes
    ///
    /// # Errors
    /// As [`Db::keyspace`], and [`Error::InvalidArgument`] for settings
    /// [`Options::validate`] refuses, a prefix extractor that is not built
    /// in, or settings for `"default"` other than the database's (set
    /// those when opening it); [`Error::ReadOnly`] on a read-only handle
    /// when the settings differ from the stored ones.
    pub fn keyspace_with(
        &self,
        name: &str,
        options: KeyspaceOptions,
    ) -> Result<(Keyspace, Vec<String>)> {
        if name == DEFAULT_KEYSPACE_NAME {
            let db = &self.inner.options;
            let want = keyspace_text(&options.over(db));
            if want != keyspace_text(db) {
                return Err(Error::InvalidArgument(
                    "the default keyspace runs with the database's options: set them when \
                     opening it (Db::builder)"
                        .into(),
                ));
            }
            return Ok((self.default_keyspace(), Vec::new()));
        }
        check_name(name)?;
        let (state, changes) = self.inner.open_keyspace(name, &options, true)?;
        Ok((self.handle(state), changes))
    }

    /// The live keyspace named `name` (`"default"` included); never
    /// creates one.
    ///
    /// # Errors
    /// [`Error::NoSuchKeyspace`] if none is live by that name (a bad name
    /// included).
    pub fn existing_keyspace(&self, name: &str) -> Result<Keyspace> {
        if name == DEFAULT_KEYSPACE_NAME {
            return Ok(self.default_keyspace());
        }
        match self.inner.keyspaces.read().by_name(name) {
            Some(state) => Ok(self.handle(Arc::clone(state))),
            None => Err(Error::NoSuchKeyspace(name.to_string())),
        }
    }

    /// The names of the live keyspaces: `"default"` first, then the others
    /// in the order they were created.
    pub fn keyspaces(&self) -> Vec<String> {
        let map = Arc::clone(&self.inner.keyspaces.read());
        std::iter::once(DEFAULT_KEYSPACE_NAME.to_string())
            .chain(map.iter().map(|k| k.name.clone()))
            .collect()
    }

    fn default_keyspace(&self) -> Keyspace {
        self.handle(Arc::clone(&self.inner.default))
    }

    fn handle(&self, state: Arc<KeyspaceState>) -> Keyspace {
        Keyspace {
            inner: Arc::clone(&self.inner),
            state,
        }
    }
}

impl DbInner {
    /// Keyspace `name` (checked, not the default's): made live with
    /// `options` over the database's if missing (its add edit: tag 16 and
    /// a section with tags 13 and 2, synced); if live and `replace`, its
    /// settings replaced by `options` when they differ (a section with tag
    /// 15, synced). Returns it and the settings that changed. A new
    /// keyspace's log number is the WAL new writes go to, whose name the
    /// directory is synced for first (a rotation defers that sync, and the
    /// manifest must never name a WAL a power loss can take).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for options [`Options::validate`]
    /// refuses or a custom prefix extractor, inside this database's
    /// `update` closure, or when keyspace ids are exhausted;
    /// [`Error::ReadOnly`] on a read-only handle for anything to log;
    /// [`Error::Io`] if the directory sync or the manifest write fails
    /// (the database then turns read-only); [`Error::Background`] after
    /// an earlier failure.
    pub(super) fn open_keyspace(
        &self,
        name: &str,
        options: &KeyspaceOptions,
        replace: bool,
    ) -> Result<(Arc<KeyspaceState>, Vec<String>)> {
        let merged = options.over(&self.options);
        merged.validate()?;
        if let Some(e) = merged.prefix_extractor.as_deref() {
            if !super::stored_options::restorable(e) {
                return Err(Error::InvalidArgument(format!(
                    "keyspace \"{name}\": prefix extractor {} is not built in, so it cannot be \
                     stored with the keyspace; keyspaces other than the default take a built-in \
                     one (siftdb::filter::FixedPrefix) or none",
                    e.name()
                )));
            }
        }
        let text = keyspace_text(&merged);
        let live = self.keyspaces.read().by_name(name).cloned();
        if let Some(state) = &live {
            // Nothing to log: no lock, and fine on a read-only handle.
            let vs_text = self
                .versions
                .lock()
                .keyspaces
                .get(&state.id)
                .map(|k| k.options_text.clone());
            if !replace || vs_text.as_deref() == Some(text.as_str()) {
                return Ok((Arc::clone(state), Vec::new()));
            }
        }
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        self.refuse_inside_update("keyspace creation or options change")?;
        let mut ws = self.write.lock();
        self.check_writable()?;
        let mut vs = self.versions.lock();
        let live = self.keyspaces.read().by_name(name).cloned();
        let state = match live {
            Some(state) => state,
            None => {
                let state = self.create_keyspace(&mut ws, &mut vs, name, merged, text)?;
                return Ok((state, Vec::new()));
            }
        };
        // Live (perhaps created by another thread meanwhile).
        let Some(stored) = vs.keyspaces.get(&state.id).map(|k| k.options_text.clone()) else {
            return Err(Error::NoSuchKeyspace(name.to_string()));
        };
        if !replace || stored == text {
            return Ok((state, Vec::new()));
        }
        let changes = super::stored_options::keyspace_differences(&stored, &merged);
        let mut edit = VersionEdit::default();
        edit.keyspaces.insert(
            state.id,
            KeyspaceEdit {
                options: Some(text.clone()),
                ..Default::default()
            },
        );
        self.log_keyspace_edit(&mut vs, &edit, "keyspace options change")?;
        if let Some(k) = vs.keyspaces.get_mut(&state.id) {
            k.options_text = text;
        }
        *state.options.write() = Arc::new(merged);
        self.roll_manifest_or_fail(&mut vs)?;
        drop(vs);
        drop(ws);
        Ok((state, changes))
    }

    /// Logs `edit` (a keyspace's creation, options change or drop),
    /// synced. A failure turns the database read-only with `what` in the
    /// message: whether the edit is durable is unknown, the next open
    /// settles it, and nothing more is logged meanwhile.
    pub(super) fn log_keyspace_edit(
        &self,
        vs: &mut VersionState,
        edit: &VersionEdit,
        what: &str,
    ) -> Result<()> {
        let logged = vs.manifest_mut().and_then(|m| m.log_edit(edit));
        if let Err(e) = &logged {
            self.record_bg_error(format!("{what} failed: {e}"));
        }
        logged
    }

    /// Rolls the manifest over if full; a failure turns the database
    /// read-only.
    pub(super) fn roll_manifest_or_fail(&self, vs: &mut VersionState) -> Result<()> {
        let rolled = self.roll_manifest_if_full(vs);
        if let Err(e) = &rolled {
            self.record_bg_error(format!("manifest rollover failed: {e}"));
        }
        rolled
    }

    /// Creates keyspace `name` (checked, and not live) running with
    /// `options`, stored as `text`: logs its add edit, synced, then makes
    /// it live. The caller holds the writer and versions locks.
    fn create_keyspace(
        &self,
        ws: &mut WriteState,
        vs: &mut VersionState,
        name: &str,
        options: Options,
        text: String,
    ) -> Result<Arc<KeyspaceState>> {
        let id = vs.next_keyspace_id;
        let next = id.checked_add(1).ok_or_else(|| {
            Error::InvalidArgument("keyspace ids are exhausted (4294967295 created)".into())
        })?;
        let mut edit = VersionEdit {
            next_keyspace_id: Some(next),
            ..Default::default()
        };
        edit.keyspaces.insert(
            id,
            KeyspaceEdit {
                add: Some(KeyspaceAdd {
                    name: name.to_string(),
                    options: text.clone(),
                }),
                log_number: Some(ws.wal_number),
                ..Default::default()
            },
        );
        if let Err(e) = crate::version::manifest::sync_dir(&**self.fs(), &self.dir) {
            self.record_bg_error(format!("keyspace creation failed: {e}"));
            return Err(e);
        }
        self.log_keyspace_edit(vs, &edit, "keyspace creation")?;
        vs.next_keyspace_id = next;
        vs.keyspaces.insert(
            id,
            super::KeyspaceVersion {
                name: name.to_string(),
                options_text: text,
                log_number: ws.wal_number,
                key_predictions: Default::default(),
            },
        );
        let mem = Arc::new(crate::memtable::MemTable::new(ws.wal_number));
        ws.mems.insert(id, Arc::clone(&mem));
        let state = Arc::new(KeyspaceState::new(
            id,
            name.to_string(),
            SuperVersion {
                mem,
                imms: Vec::new(),
                version: Arc::new(crate::version::set::Version::empty()),
            },
            options,
        ));
        {
            let mut map = self.keyspaces.write();
            *map = Arc::new(map.with(Arc::clone(&state)));
        }
        self.roll_manifest_or_fail(vs)?;
        Ok(state)
    }
}
