//! Memtable rotation and flushes: freezing the active memtable with a new
//! WAL, writing a frozen one to a level-0 table, and the log-number
//! bumps and WAL deletions that follow (DESIGN.md 2 and 5).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::compaction;
use crate::filename::{self, FileType};
use crate::fs::FileSystem;
use crate::key::SequenceNumber;
use crate::log::LogWriter;
use crate::memtable::MemTable;
use crate::range_tombstone::RangeTombstone;
use crate::sstable::{Table, TableBuilder, TableOptions};
use crate::sync_point::{self, SyncPoint};
use crate::version::edit::{FileMetaData, VersionEdit};
use crate::version::manifest;
use crate::version::set::Version;
use crate::{CompactionStyle, Error, Result};

use super::background::{scoped, set_log_number};
use super::filter_budget::{self, NewTable};
use super::keyspace::KeyspaceState;
use super::recovery::list_dir;
use super::{DbInner, SuperVersion, VersionState, WriteState};

impl DbInner {
    /// Freezes the active memtable and starts a new one with a new WAL,
    /// first waiting out the two stalls that bound a rotation: while
    /// `max_immutable_memtables` already wait for flushing (memory), and,
    /// with automatic compaction, while level 0's files and the frozen
    /// memtables that will become level-0 files number
    /// `level0_stop_trigger` or more (the files a read probes). Counting the
    /// frozen memtables is what keeps level 0 at or below the trigger: a
    /// write checks level 0 before it fills a memtable, but the memtables
    /// frozen after that check all land in level 0 (found by
    /// tests/write_stalls.rs: `flush` took level 0 past the trigger).
    ///
    /// When the live WALs hold more than [`crate::Options::max_total_wal_size`]
    /// bytes, every keyspace whose active memtable holds writes in the
    /// oldest live WAL is frozen too, so that its flush frees that WAL
    /// (a keyspace that took a few writes and then went idle would
    /// otherwise keep it, and every later one, alive).
    pub(super) fn rotate_memtables(
        &self,
        w: &mut WriteState,
        freeze: &[&KeyspaceState],
    ) -> Result<()> {
        let pinning = self.keyspaces_pinning_the_oldest_wal(w, freeze);
        let freeze: Vec<&KeyspaceState> = freeze
            .iter()
            .copied()
            .chain(pinning.iter().map(|ks| &**ks))
            .collect();
        let freeze = &freeze[..];
        {
            let must_wait = || {
                freeze.iter().any(|ks| {
                    let o = ks.options();
                    let stop = match o.compaction_style {
                        CompactionStyle::None => usize::MAX,
                        _ => o.level0_stop_trigger,
                    };
                    let cur = ks.current.read();
                    cur.imms.len() >= o.max_immutable_memtables
                        || cur.version.levels[0].len() + cur.imms.len() >= stop
                })
            };
            let mut bg = self.bg.lock();
            while must_wait() {
                if let Some(e) = &bg.error {
                    return Err(Error::Background(e.clone()));
                }
                self.bg_cv.wait(&mut bg);
            }
        }
        let number = self.next_file_number.fetch_add(1, Ordering::SeqCst);
        // No directory `fsync` here, on the writer's path: the new WAL's
        // first sync (a sync write, `persist`, or the background's once a
        // rotation closes it) syncs the directory first, so a WAL with
        // synced records cannot vanish; until then a power loss may take
        // it whole, and nothing in it was synced. A flush that logs this
        // WAL as the oldest live one of its keyspace syncs the directory
        // for its table before the edit, which covers this name too; one
        // that logs it for another keyspace (an empty keyspace's bump,
        // below) syncs the directory again first.
        let wal = LogWriter::create_deferring_dir_sync(
            self.fs(),
            &filename::wal_path(&self.dir, number),
        )?;
        // The old WAL's last records may still be only in the page cache:
        // the background thread syncs it (or a sync write does, first), off
        // the writer's path. A power loss before that may keep records of
        // the new WAL and lose the old one's tail; recovery then stops at
        // the gap in sequence numbers, so what survives is a prefix of the
        // acknowledged writes (RELIABILITY.md 5, DESIGN.md 11).
        if let Some(old) = w.wal.replace(wal) {
            // Kept only while the bound may act: a WAL closed while the
            // database had no other keyspace is not counted.
            if self.wal_bound_applies() {
                w.closed_wal_bytes.insert(w.wal_number, old.offset());
            }
            self.close_wal(old);
        }
        w.wal_number = number;
        for ks in freeze {
            let mem = Arc::new(MemTable::new(number));
            let Some(frozen) = w.replace_mem(ks.id, Arc::clone(&mem)) else {
                continue; // not live: never, while the writer lock is held
            };
            let mut cur = ks.current.write();
            let mut imms = Vec::with_capacity(cur.imms.len() + 1);
            imms.push(frozen);
            imms.extend(cur.imms.iter().cloned());
            *cur = Arc::new(SuperVersion {
                mem,
                imms,
                version: Arc::clone(&cur.version),
            });
        }
        // The empty-keyspace bump (DESIGN.md 2 and 5): a keyspace
        // holding nothing in memory has no write in any WAL older than
        // this one, so its memtable is renumbered to it; the next flush
        // edit persists that log number, and only then may the older WALs
        // go. Without it an idle keyspace would keep every WAL alive.
        for ks in self.all_keyspaces() {
            if freeze.iter().any(|f| f.id == ks.id) {
                continue;
            }
            let mut cur = ks.current.write();
            if cur.imms.is_empty() && cur.mem.is_empty() && cur.mem.wal_number() < number {
                let mem = Arc::new(MemTable::new(number));
                w.replace_mem(ks.id, Arc::clone(&mem));
                *cur = Arc::new(SuperVersion {
                    mem,
                    imms: Vec::new(),
                    version: Arc::clone(&cur.version),
                });
            }
        }
        let _bg = self.bg.lock();
        self.bg_cv.notify_all();
        Ok(())
    }

    /// The keyspaces outside `freeze` that a rotation must freeze to keep
    /// the live WALs within [`crate::Options::max_total_wal_size`]: when
    /// they hold more, each whose active memtable holds writes and names
    /// the oldest live WAL (or an older one). Empty when the bound is 0 or
    /// the database has no keyspace but the default.
    fn keyspaces_pinning_the_oldest_wal(
        &self,
        w: &mut WriteState,
        freeze: &[&KeyspaceState],
    ) -> Vec<Arc<KeyspaceState>> {
        if !self.wal_bound_applies() {
            w.closed_wal_bytes.clear();
            return Vec::new();
        }
        let oldest = self.versions.lock().min_log_number();
        w.closed_wal_bytes.retain(|&n, _| n >= oldest);
        let current = w.wal.as_ref().map_or(0, |wal| wal.offset());
        let total: u64 = w.closed_wal_bytes.values().sum::<u64>() + current;
        if total <= self.options.max_total_wal_size {
            return Vec::new();
        }
        self.all_keyspaces()
            .into_iter()
            .filter(|ks| freeze.iter().all(|f| f.id != ks.id))
            .filter(|ks| {
                w.mem_of(ks.id)
                    .is_some_and(|m| !m.is_empty() && m.wal_number() <= oldest)
            })
            .collect()
    }

    /// Whether [`crate::Options::max_total_wal_size`] may freeze a
    /// keyspace: the bound is set and a keyspace other than the default
    /// exists. Without one, the keyspace rotating is the only one that can
    /// hold writes, and the writer's path takes no versions lock for the
    /// bound (a flush holds that lock through its syncs).
    fn wal_bound_applies(&self) -> bool {
        self.options.max_total_wal_size > 0 && !self.keyspaces.read().is_empty()
    }

    /// Freezes the active memtable of `only` (of every keyspace if
    /// `None`) if it holds anything, and waits until every frozen memtable
    /// of those keyspaces is written to a level-0 SSTable.
    ///
    /// # Errors
    /// As [`super::Db::flush`].
    pub(super) fn flush_keyspaces(&self, only: Option<&Arc<KeyspaceState>>) -> Result<()> {
        self.refuse_inside_update("flush")?;
        let targets = match only {
            Some(ks) => vec![Arc::clone(ks)],
            None => self.all_keyspaces(),
        };
        {
            let mut w = self.write.lock();
            self.check_writable()?;
            let full: Vec<&KeyspaceState> = targets
                .iter()
                .filter(|ks| w.mem_of(ks.id).is_some_and(|m| !m.is_empty()))
                .map(|ks| &**ks)
                .collect();
            if !full.is_empty() {
                self.rotate_memtables(&mut w, &full)?;
            }
        }
        let mut bg = self.bg.lock();
        loop {
            if let Some(e) = &bg.error {
                return Err(Error::Background(e.clone()));
            }
            if targets.iter().all(|ks| ks.current.read().imms.is_empty()) {
                return Ok(());
            }
            self.bg_cv.wait(&mut bg);
        }
    }

    /// Writes the oldest frozen memtable `imm` of keyspace `ks` to a
    /// level-0 SSTable, logs the edit to the manifest, installs the new
    /// version and deletes the WALs no live keyspace needs any more.
    ///
    /// The edit also carries the log number of every other keyspace whose
    /// oldest write in memory moved past the one the manifest holds (an
    /// empty keyspace's bump, DESIGN.md 2 and 5): that is how a
    /// bump becomes durable, and only durable log numbers free a WAL.
    /// Before the edit, the WALs rotations closed are synced (the unsynced
    /// tail of an older WAL may be another keyspace's only copy of writes
    /// older than those this table holds), and the directory too when the
    /// edit names another keyspace's WAL (created, maybe, after this
    /// table's directory sync).
    pub(super) fn flush_memtable(&self, ks: &KeyspaceState, imm: &Arc<MemTable>) -> Result<()> {
        sync_point::reach(&self.options.sync_points, SyncPoint::FlushStart);
        // A memtable holding only range deletions writes no table.
        let table = if !imm.has_entries() {
            None
        } else {
            let number = self.next_file_number.fetch_add(1, Ordering::SeqCst);
            let table_options = {
                let version = Arc::clone(&ks.current.read().version);
                let keys = imm.len() as u64;
                TableOptions {
                    keyspace: ks.id,
                    ..filter_budget::table_options(
                        &ks.options(),
                        &version,
                        NewTable::Flush { keys },
                        false,
                    )
                }
            };
            Some(write_table(
                self.fs(),
                &self.dir,
                number,
                table_options,
                imm,
            )?)
        };
        sync_point::reach(&self.options.sync_points, SyncPoint::FlushBeforeInstall);
        let mut vs = self.versions.lock();
        if ks.dropped.load(Ordering::SeqCst) {
            // Dropped while the table was written: nothing to log, and the
            // table is no keyspace's.
            drop(vs);
            if let Some((m, _)) = table {
                let _ = self
                    .fs()
                    .remove_file(&filename::table_path(&self.dir, m.number));
            }
            return Ok(());
        }
        // WALs older than the next-oldest unflushed memtable hold nothing
        // more of this keyspace.
        let (log_number, new_range_tombstones) = {
            let cur = ks.current.read();
            let log_number = match cur.imms.len() {
                0 | 1 => cur.mem.wal_number(),
                n => cur.imms[n - 2].wal_number(),
            };
            let meta = table.as_ref().map(|(m, _)| m);
            (
                log_number,
                flushed_range_tombstones(imm, &cur.version, meta),
            )
        };
        vs.last_seq = vs.last_seq.max(imm.largest_seq().0);
        let file_size = table.as_ref().map_or(0, |(m, _)| m.file_size);
        let mut edit = scoped(
            VersionEdit {
                log_number: Some(log_number),
                new_files: table.iter().map(|(m, _)| (0, m.clone())).collect(),
                new_range_tombstones,
                ..Default::default()
            },
            ks.id,
        );
        edit.next_file_number = Some(self.next_file_number.load(Ordering::SeqCst));
        edit.last_sequence = Some(SequenceNumber(vs.last_seq));
        edit.user_bytes_flushed = Some(vs.user_bytes_flushed + imm.user_bytes());
        edit.table_bytes_written = Some(vs.table_bytes_written + file_size);
        self.add_bumps(&vs, &mut edit, ks.id)?;
        let opened = table
            .map(|(m, t)| BTreeMap::from([(m.number, t)]))
            .unwrap_or_default();
        self.log_and_install(ks, &mut vs, &edit, opened, Some(imm))?;
        let obsolete_below = vs.min_log_number();
        drop(vs);
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        ks.flushes.fetch_add(1, Ordering::Relaxed);
        self.counters
            .table_bytes_written
            .fetch_add(file_size, Ordering::Relaxed);
        remove_obsolete_wals(&**self.fs(), &self.dir, obsolete_below)
    }
}

impl DbInner {
    /// Adds to `edit` (a flush's or a drop's, built under the versions
    /// lock `vs`) the log number of every live keyspace but `except` whose
    /// oldest write in memory moved past the one the manifest holds (an
    /// empty keyspace's bump, DESIGN.md 2 and 5): that is how a
    /// bump becomes durable, and only durable log numbers free a WAL.
    /// Then syncs the WALs rotations closed (the unsynced tail of an older
    /// WAL may be another keyspace's only copy of writes older than those
    /// the edit declares flushed), and the directory when a bump names a
    /// WAL (created, maybe, after the last directory sync).
    ///
    /// # Errors
    /// [`Error::Io`] if a sync fails.
    pub(super) fn add_bumps(
        &self,
        vs: &VersionState,
        edit: &mut VersionEdit,
        except: u32,
    ) -> Result<()> {
        let mut bumped = false;
        for other in self.all_keyspaces() {
            if other.id == except {
                continue;
            }
            let oldest = other.oldest_wal();
            if vs.log_number_of(other.id).is_some_and(|lp| oldest > lp) {
                set_log_number(edit, other.id, oldest);
                bumped = true;
            }
        }
        self.sync_closed_wals()?;
        if bumped {
            manifest::sync_dir(&**self.fs(), &self.dir)?;
        }
        Ok(())
    }
}

/// The range tombstones of the memtable `mem` being flushed, for its
/// flush's edit: each with the tables that may hold a version it hides,
/// which are the tables of `version` overlapping its range and the flushed
/// table (`flushed`) if it does (every older write is in one of them by
/// now; DESIGN.md 3.7).
pub(super) fn flushed_range_tombstones(
    mem: &MemTable,
    version: &Version,
    flushed: Option<&FileMetaData>,
) -> Vec<(RangeTombstone, Vec<u64>)> {
    mem.range_tombstones(SequenceNumber::MAX)
        .into_iter()
        .map(|t| {
            let metas = version.files().map(|(_, f)| &f.meta).chain(flushed);
            let pending = metas
                .filter(|m| t.overlaps(m.smallest.user_key(), m.largest.user_key()))
                .map(|m| m.number)
                .collect();
            (t, pending)
        })
        .collect()
}

/// Writes `mem` to SSTable `number` in `dir`, synced (file and directory),
/// and opens it.
pub(super) fn write_table(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    number: u64,
    opts: TableOptions,
    mem: &MemTable,
) -> Result<(FileMetaData, Arc<Table>)> {
    let path = filename::table_path(dir, number);
    let mut builder = TableBuilder::with_fs(Arc::clone(fs), &path, opts)?;
    mem.for_each(|k, v| builder.add(k, v))?; // dropping an unfinished builder deletes its file
    let out = compaction::finish_output(dir, number, builder)?;
    manifest::sync_dir(&**fs, dir)?;
    Ok((out.meta, out.table))
}

/// Deletes every WAL numbered below `log_number`. Failures are ignored: a
/// leftover WAL is replayed harmlessly (its writes are already in tables,
/// and the manifest's log number skips it).
pub(super) fn remove_obsolete_wals(fs: &dyn FileSystem, dir: &Path, log_number: u64) -> Result<()> {
    for (t, path) in list_dir(fs, dir)? {
        if let FileType::Wal(n) = t {
            if n < log_number {
                let _ = fs.remove_file(&path);
            }
        }
    }
    Ok(())
}
