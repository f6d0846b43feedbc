//! Opening a database: locking, manifest and WAL replay, the WAL new writes
//! go to, the fresh manifest, and removal of obsolete files.
//!
//! [`recover`], the open itself, and the [`RecoveryReport`] it leaves are
//! here. Beside them: `lock`, the directory's `LOCK` and whether a writer
//! holds it; `live_wal_rereads`, reading a WAL again while a writer may be
//! appending to it; `directory`, what an open makes of the path it is
//! given; `manifest_replay`, replaying the manifest and checking that the
//! files it lists are there; `wals`, pinning the WALs, picking the live
//! ones and checking each before any is replayed.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::error::IoContext;
use crate::filename::{self, FileType};
use crate::key::SequenceNumber;
use crate::log::{LogWriter, TornTail};
use crate::memtable::MemTable;
use crate::sketch::read_sketch::ReadSketch;
use crate::sstable::block_cache::BlockCache;
use crate::stats::Counters;
use crate::version::edit::VersionEdit;
use crate::version::manifest::Manifest;
use crate::version::set::Version;
use crate::write_batch::decode_batch;
use crate::{Error, Options, Result};

use super::background::background_main;
use super::filter_budget::{self, NewTable};
use super::flush::{flushed_range_tombstones, write_table};
use super::keyspace::{KeyspaceMap, KeyspaceState};
use super::stored_options;
use super::{BgState, Db, DbInner, KeyspaceVersion, SuperVersion, VersionState, WriteState};
use crate::stats::KeyPrediction;
use crate::version::edit::DEFAULT_KEYSPACE_NAME;

mod directory;
mod live_wal_rereads;
mod lock;
mod manifest_replay;
mod wals;

pub(crate) use directory::{check_fresh_directory, is_directory, no_database};
pub(crate) use live_wal_rereads::reread_while_a_writer_appends;
#[cfg(test)]
pub(crate) use live_wal_rereads::{test_support, LIVE_WAL_REREADS};
pub(super) use lock::acquire_lock;
pub(crate) use lock::held_by_a_writer;
use manifest_replay::missing_live_file;
pub(super) use manifest_replay::{replay_manifest, Replayed};
use wals::{check_wal, pin_listed};
pub(crate) use wals::{live_wals, pin_wals, PinnedWal};

/// The siftdb files in a directory, classified (flush.rs uses it from
/// here).
pub(super) use crate::filename::list_dir;

/// What [`Db::open`] (or [`Db::open_read_only`]) found on disk and
/// replayed, and what it dropped as torn by a crash: from
/// [`Db::recovery`]. A torn tail is the normal trace of a crash in the
/// middle of a write; the bytes it held were never acknowledged unless
/// they were damaged after being written (see RELIABILITY.md), so a
/// torn tail after a clean shutdown is worth a look.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// The WALs replayed into the memtable, oldest first.
    pub wals: Vec<WalReplay>,
    /// Set if the manifest ended in an incomplete record, which was
    /// dropped: a version edit whose write never returned.
    pub manifest_torn_tail: Option<TornTail>,
    /// The stored options (the `OPTIONS` file, DESIGN.md 12.13) this open
    /// did not use, one line each: `"bits_per_key: 12 stored, 10 used"`.
    /// Empty when it used them all, when there were none, and for a
    /// read-only open (which neither compares nor stores them). A writable
    /// open then stores the options it used.
    pub options_changes: Vec<String>,
    /// Set when a writable open of an existing database found no
    /// `OPTIONS` file (deleted, or the database predates it): the options
    /// this open used are now stored, and whatever settings were stored
    /// before (filters, compression, sizes) are gone unless given again.
    /// False for a new database and for a read-only open.
    pub options_file_missing: bool,
}

/// What a writable open found in the stored options, for its
/// [`RecoveryReport`]: `changes` as [`RecoveryReport::options_changes`],
/// `file_missing` as [`RecoveryReport::options_file_missing`].
#[derive(Debug, Default)]
pub(super) struct StoredOptionsFound {
    pub changes: Vec<String>,
    pub file_missing: bool,
}

/// One WAL as the open replayed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalReplay {
    /// The log file.
    pub path: PathBuf,
    /// Its length in bytes when read.
    pub size: u64,
    /// Where its records end, in bytes: `size`, or where a zero-filled
    /// tail starts (space a memory-mapped WAL preallocated and never
    /// wrote, DESIGN.md 14, 2026-12-04), or where reading stopped at a
    /// torn tail.
    pub end: u64,
    /// Write batches replayed (one per complete record).
    pub batches: u64,
    /// Puts and deletes in those batches.
    pub entries: u64,
    /// Of those entries, the ones of keyspaces dropped since (skipped:
    /// the drop is durable, and their tables are gone).
    pub skipped_entries: u64,
    /// Set if the log ended in an incomplete record; the bytes from its
    /// offset to `size` were not replayed.
    pub torn_tail: Option<TornTail>,
}

impl WalReplay {
    /// Bytes of complete records, replayed: the torn tail's offset, or
    /// [`WalReplay::end`] if there is none. A WAL kept by the open is cut
    /// to this length before new records are appended after it.
    pub fn valid_len(&self) -> u64 {
        self.torn_tail.as_ref().map_or(self.end, |t| t.offset)
    }
}

impl RecoveryReport {
    /// Write batches replayed from every WAL.
    pub fn batches(&self) -> u64 {
        self.wals.iter().map(|w| w.batches).sum()
    }

    /// Puts and deletes replayed from every WAL.
    pub fn entries(&self) -> u64 {
        self.wals.iter().map(|w| w.entries).sum()
    }

    /// Bytes of torn WAL tails dropped (0 after a clean shutdown).
    pub fn dropped_bytes(&self) -> u64 {
        self.wals
            .iter()
            .filter_map(|w| w.torn_tail.as_ref().map(|t| w.size - t.offset))
            .sum()
    }
}

/// The largest file number an open accepts (2^63): far beyond any a
/// database reaches (one per flush, compaction output and open), with room
/// left so that numbering new files cannot overflow.
pub(crate) const MAX_FILE_NUMBER: u64 = 1 << 63;

/// The largest WAL an open keeps for new writes (4 MiB). Replaying one
/// costs every later open until a flush: 4 MiB of 100-byte puts take about
/// 20 ms, 16 MiB about 120 ms (DESIGN.md 13). A larger WAL is flushed once
/// instead, into a table of at least this size.
pub(crate) const KEEP_WAL_MAX_BYTES: u64 = 4 << 20;

/// One keyspace's tree while an open recovers it.
struct Tree {
    id: u32,
    name: String,
    /// Its stored options text (empty for the default, which keeps its
    /// options in `OPTIONS`).
    options_text: String,
    /// The options it runs with (the database's for the default).
    options: Options,
    /// Its log number: the manifest's, then the WAL new writes go to.
    log_number: u64,
    version: Version,
    mem: MemTable,
    key_predictions: std::collections::VecDeque<KeyPrediction>,
}

/// Opens tables, replays WALs (flushing each memtable that fills), keeps
/// the one replayed WAL for new writes when it all fit in the memtable (or
/// else flushes and starts a fresh WAL), writes a fresh manifest, removes
/// obsolete files and starts the background thread.
///
/// With `lock == None` the database is opened read-only: WALs are replayed
/// into the active memtable and nothing on disk is touched.
pub(super) fn recover(
    dir: PathBuf,
    options: Options,
    lock: Option<File>,
    replayed: Replayed,
    pinned_wals: Option<Vec<PinnedWal>>,
    stored_options: StoredOptionsFound,
) -> Result<Db> {
    let Replayed {
        manifest: manifest_path,
        state,
        torn_tail: manifest_torn_tail,
    } = replayed;
    let read_only = lock.is_none();
    let fs = Arc::clone(&options.file_system);
    let on_disk = list_dir(&*fs, &dir)?;
    // New files are numbered past every number in use. A number no real
    // database reaches (a damaged manifest, a stray file) would leave no
    // room and overflow the counter: refuse it before touching anything.
    let (max_on_disk, max_path) = on_disk
        .iter()
        .filter_map(|(t, p)| Some((t.number()?, p.clone())))
        .max()
        .unwrap_or((0, dir.clone()));
    if max_on_disk > MAX_FILE_NUMBER {
        return Err(Error::corruption(
            max_path,
            0,
            format!("file number {max_on_disk} is above the largest allowed, {MAX_FILE_NUMBER}"),
        ));
    }
    let mut next_file = state.next_file_number.max(max_on_disk + 1).max(1);

    // Pin every file the state needs before decoding any: a writer in
    // another process (when this open is read-only) may delete a table or
    // WAL once a newer manifest edit stops naming it, but an open or mapped
    // file stays readable. A read-only open pinned its WALs before it read
    // the manifest (`pinned_wals`); tables are mapped here, microseconds
    // each, and their descriptors closed at once, so that an open needs no
    // more descriptors however many tables there are. A file already gone
    // fails the open, and `Db::open_read_only` reads the manifest again.
    let pinned = pinned_wals.unwrap_or_else(|| pin_listed(&on_disk));
    // Each keyspace's tree as the manifest left it, the default first.
    let mut trees = Vec::with_capacity(1 + state.keyspaces.len());
    let (version, tables_seq) = Version::load(&dir, &state).map_err(|(_, e)| e)?;
    let mut last_seq = state.last_sequence.max(tables_seq.0);
    trees.push(Tree {
        id: 0,
        name: DEFAULT_KEYSPACE_NAME.to_string(),
        options_text: String::new(),
        options: options.clone(),
        log_number: state.log_number,
        version,
        mem: MemTable::new(0),
        key_predictions: state.key_predictions.clone(),
    });
    for (&id, k) in &state.keyspaces {
        let (version, tables_seq) =
            Version::load_tree(&dir, &k.files, &k.range_tombstones).map_err(|(_, e)| e)?;
        last_seq = last_seq.max(tables_seq.0);
        let manifest = manifest_path.as_deref().unwrap_or(&dir);
        trees.push(Tree {
            id,
            name: k.name.clone(),
            options_text: k.options_text.clone(),
            options: stored_options::keyspace_options(&options, &k.options_text, manifest)?,
            log_number: k.log_number,
            version,
            mem: MemTable::new(0),
            key_predictions: k.key_predictions.clone(),
        });
    }
    let index: BTreeMap<u32, usize> = trees.iter().enumerate().map(|(i, t)| (t.id, i)).collect();
    // Every WAL from the smallest log number on is live: it may hold
    // writes of a keyspace whose tables do not.
    let min_log = trees.iter().map(|t| t.log_number).min().unwrap_or(0);
    let wals = live_wals(pinned, min_log)?;
    // The WAL each log number names holds the oldest writes its
    // keyspace's tables do not, and must be there (see `replay_manifest`).
    // A read-only open also races a writer in another process: a flush
    // that logged its edit and deleted that WAL before it was pinned
    // leaves the open with neither the new table nor the WAL, and
    // replaying the later WALs alone would show newer writes with older
    // ones missing (found by an adversarial run; pinned by
    // tests/read_only_open.rs). `Db::open_read_only` then reads the
    // manifest again, which has changed.
    for t in &trees {
        if t.log_number > 0 && !wals.iter().any(|w| w.number == t.log_number) {
            return Err(missing_live_file(
                manifest_path.as_deref().unwrap_or(&dir),
                manifest_torn_tail.as_ref(),
                &filename::wal_path(&dir, t.log_number),
            ));
        }
    }

    // (user bytes flushed, table bytes written) since creation.
    let mut totals = (state.user_bytes_flushed, state.table_bytes_written);
    // Writes `tree`'s memtable to a level-0 table, if it holds anything.
    let flush_recovered =
        |tree: &mut Tree, next_file: &mut u64, totals: &mut (u64, u64)| -> Result<()> {
            let mem = &tree.mem;
            if mem.is_empty() {
                return Ok(());
            }
            // A memtable holding only range deletions writes no table.
            let table = if !mem.has_entries() {
                None
            } else {
                let number = *next_file;
                *next_file += 1;
                let keys = mem.len() as u64;
                let table_options = crate::sstable::TableOptions {
                    keyspace: tree.id,
                    ..filter_budget::table_options(
                        &tree.options,
                        &tree.version,
                        NewTable::Flush { keys },
                        false,
                    )
                };
                Some(write_table(&fs, &dir, number, table_options, mem)?)
            };
            totals.0 += mem.user_bytes();
            totals.1 += table.as_ref().map_or(0, |(m, _)| m.file_size);
            let new_range_tombstones =
                flushed_range_tombstones(mem, &tree.version, table.as_ref().map(|(m, _)| m));
            let edit = VersionEdit {
                new_files: table.iter().map(|(m, _)| (0, m.clone())).collect(),
                new_range_tombstones,
                ..Default::default()
            };
            let mut opened = table
                .map(|(m, t)| BTreeMap::from([(m.number, t)]))
                .unwrap_or_default();
            tree.version = tree.version.apply(&edit, &mut opened)?;
            tree.mem = MemTable::new(0);
            Ok(())
        };
    // Check every WAL, record by record, and decode every batch before
    // replaying any: replay may flush tables, and damage found after that
    // would fail the open with files already changed. Both passes stream,
    // so memory holds one record at a time, whatever the WALs' size.
    // The first batch must start right after the manifest's last sequence
    // (the newest write in the tables): a later start means the oldest
    // live WAL lost records to a power loss.
    let mut next_seq = Some(last_seq + 1);
    let live = |id: u32| index.contains_key(&id);
    // A read-only open may read a WAL that a writer in another process is
    // appending to: damage it finds there is read again before it counts.
    let mut checked = Vec::with_capacity(wals.len());
    for w in &wals {
        let check = || {
            let mut next = next_seq;
            check_wal(w, &mut next, &live, state.next_keyspace_id).map(|c| (c, next))
        };
        let (c, next) = if read_only {
            reread_while_a_writer_appends(&dir, check, |r| {
                matches!(r, Err(Error::Corruption { .. }))
            })
        } else {
            check()
        }?;
        next_seq = next;
        checked.push(c);
    }
    // A cut (torn tail or gap) in a WAL below some keyspace's log number:
    // that keyspace's tables hold writes newer than the cut, which a
    // replay stopping there would lose for the others, so what remains
    // would not be a prefix. Flushes sync the older WALs before logging a
    // later log number, so only damage leaves this (as in RocksDB's
    // "column family inconsistency").
    if let Some(i) = checked.iter().position(|c| c.torn_tail.is_some()) {
        if let Some(t) = trees.iter().find(|t| t.log_number > wals[i].number) {
            return Err(Error::corruption(
                &wals[i].path,
                checked[i].valid_len(),
                format!(
                    "the WAL is cut here, but keyspace \"{}\" has tables holding writes of \
                     later WALs (its log number is {}): replaying up to the cut would not \
                     leave a prefix of the writes",
                    t.name, t.log_number
                ),
            ));
        }
    }
    // What the tables hold: the last sequence a fresh manifest records, so
    // that the next open can check the first WAL batch against it.
    let mut durable_seq = last_seq;
    let kept_candidate = match (&wals[..], &checked[..]) {
        ([w], [c]) => Some((w.number, w.path.clone(), c.valid_len())),
        _ => None,
    };
    let mut flushed_during_replay = false;
    let mut touched: Vec<usize> = Vec::new();
    for (w, replayed) in wals.into_iter().zip(&checked) {
        let number = w.number;
        let mut reader = w.reader_up_to(replayed.valid_len())?;
        while let Some(rec) = reader.next_record()? {
            let batch = decode_batch(&rec.payload)
                .map_err(|d| Error::corruption(reader.path(), rec.offset, d))?;
            touched.clear();
            for (i, op) in batch.ops.iter().enumerate() {
                let seq = SequenceNumber(batch.first_seq.0 + i as u64);
                last_seq = last_seq.max(seq.0);
                // Every id is live or dropped (`check_wal`; a dropped
                // one's ops are skipped). A keyspace whose log number is
                // past this WAL has the write in a table.
                let Some(&t) = index.get(&op.keyspace) else {
                    continue;
                };
                if number >= trees[t].log_number {
                    trees[t].mem.insert(op.key, seq, op.value_type, op.value);
                    if !touched.contains(&t) {
                        touched.push(t);
                    }
                }
            }
            if read_only {
                continue;
            }
            for &t in &touched {
                if trees[t].mem.approximate_size() >= trees[t].options.write_buffer_size {
                    flush_recovered(&mut trees[t], &mut next_file, &mut totals)?;
                    flushed_during_replay = true;
                    durable_seq = last_seq;
                }
            }
        }
    }
    let report = RecoveryReport {
        wals: checked,
        manifest_torn_tail,
        options_changes: stored_options.changes,
        options_file_missing: stored_options.file_missing,
    };
    let (wal, wal_number) = if read_only {
        (None, 0)
    } else {
        // One WAL of at most KEEP_WAL_MAX_BYTES whose batches all fit in
        // the memtables (the usual case after a clean close or a crash)
        // stays live: the memtables keep its batches, new writes are
        // appended to it after its torn tail, if any, is cut off, and
        // nothing is flushed, so reopening does not add a level-0 table
        // each time. Otherwise (several WALs, a larger one, or a replay
        // that filled a memtable) flush what remains, in every keyspace,
        // and start a fresh WAL. Either way every keyspace's log number is
        // then that WAL, and a fresh manifest holds the whole state.
        let reuse = kept_candidate
            .filter(|&(_, _, valid_len)| !flushed_during_replay && valid_len <= KEEP_WAL_MAX_BYTES);
        let (wal_number, wal) = match reuse {
            Some((number, path, valid_len)) => {
                (number, LogWriter::open_truncated(&*fs, &path, valid_len)?)
            }
            None => {
                for tree in &mut trees {
                    flush_recovered(tree, &mut next_file, &mut totals)?;
                }
                durable_seq = last_seq;
                let number = next_file;
                next_file += 1;
                let path = filename::wal_path(&dir, number);
                (number, LogWriter::create_wal(&*fs, &path)?)
            }
        };
        for tree in &mut trees {
            tree.mem.set_wal_number(wal_number);
            tree.log_number = wal_number;
        }
        (Some(wal), wal_number)
    };
    let mut trees = trees.into_iter();
    let Some(default) = trees.next() else {
        unreachable!("the default keyspace's tree is pushed first");
    };
    let others: Vec<(Tree, Arc<Version>, Arc<MemTable>)> = trees
        .map(|mut t| {
            let version = Arc::new(std::mem::replace(&mut t.version, Version::empty()));
            let mem = Arc::new(std::mem::replace(&mut t.mem, MemTable::new(0)));
            (t, version, mem)
        })
        .collect();
    let mut versions = VersionState {
        manifest: None,
        manifest_lost: None,
        log_number: default.log_number,
        keyspaces: others
            .iter()
            .map(|(t, _, _)| {
                let k = KeyspaceVersion {
                    name: t.name.clone(),
                    options_text: t.options_text.clone(),
                    log_number: t.log_number,
                    key_predictions: t.key_predictions.clone(),
                };
                (t.id, k)
            })
            .collect(),
        next_keyspace_id: state.next_keyspace_id,
        last_seq: durable_seq,
        user_bytes_flushed: totals.0,
        table_bytes_written: totals.1,
        manifest_limit: u64::MAX,
        key_predictions: default.key_predictions.clone(),
    };
    let version = Arc::new(default.version);
    let mem = Arc::new(default.mem);
    if !read_only {
        let manifest_number = next_file;
        next_file += 1;
        let other_versions = others
            .iter()
            .map(|(t, v, _)| (t.id, Arc::clone(v)))
            .collect();
        let snapshot = versions.snapshot(&version, &other_versions, next_file);
        let manifest = Manifest::create(&*fs, &dir, manifest_number, &snapshot)?;
        versions.manifest_limit = VersionState::limit_for(&options, manifest.size());
        versions.manifest = Some(manifest);

        // Everything not in the new state is garbage now.
        let live: std::collections::HashSet<u64> = std::iter::once(&version)
            .chain(others.iter().map(|(_, v, _)| v))
            .flat_map(|v| v.files().map(|(_, f)| f.meta.number))
            .collect();
        for (t, path) in list_dir(&*fs, &dir)? {
            let obsolete = match t {
                FileType::Wal(n) => n < wal_number,
                FileType::Table(n) => !live.contains(&n),
                FileType::Manifest(n) => n != manifest_number,
                FileType::Temp(_) => true,
                FileType::Current | FileType::Lock | FileType::HotKeys | FileType::Options => false,
            };
            // A directory under a siftdb name is not something siftdb made:
            // leave it (removing it fails, and would fail every open).
            let directory = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
            if obsolete && !directory {
                fs.remove_file(&path)
                    .context(|| format!("remove {}", path.display()))?;
            }
        }
    }
    let mut map = KeyspaceMap::default();
    let mut mems = BTreeMap::new();
    for (t, version, mem) in others {
        mems.insert(t.id, Arc::clone(&mem));
        let sv = SuperVersion {
            mem,
            imms: Vec::new(),
            version,
        };
        map = map.with(Arc::new(KeyspaceState::new(t.id, t.name, sv, t.options)));
    }
    let block_cache = match options.table_reads {
        crate::TableReads::Mapped => None,
        crate::TableReads::Cached { capacity } => Some(Arc::new(BlockCache::new(capacity))),
    };
    let hot = options.hot_keys.as_ref().and_then(ReadSketch::new);
    let default_options = options.clone();
    let inner = Arc::new(DbInner {
        dir,
        options,
        block_cache,
        read_only,
        write: Mutex::new(WriteState {
            wal,
            wal_number,
            mem: Arc::clone(&mem),
            mems,
            last_seq,
            closed_wal_bytes: BTreeMap::new(),
        }),
        write_queue: Default::default(),
        closed_wals: Mutex::new(Vec::new()),
        versions: Mutex::new(versions),
        default: Arc::new(KeyspaceState::new(
            0,
            DEFAULT_KEYSPACE_NAME.to_string(),
            SuperVersion {
                mem,
                imms: Vec::new(),
                version,
            },
            default_options,
        )),
        keyspaces: parking_lot::RwLock::new(Arc::new(map)),
        instance: super::keyspace::next_instance(),
        compacted_last: Default::default(),
        visible_seq: AtomicU64::new(last_seq),
        next_file_number: AtomicU64::new(next_file),
        bg: Mutex::new(BgState::default()),
        failed: Default::default(),
        closed: Default::default(),
        bg_cv: Condvar::new(),
        counters: Counters::default(),
        hot,
        snapshots: Mutex::new(BTreeMap::new()),
        compaction: Mutex::new(()),
        recovery: report,
        lock: Mutex::new(lock),
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
