//! Background work: installing versions, compactions, write stalls and
//! the thread that runs them and the flushes (`flush.rs`).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::compaction::{self, Compaction, MergeContext};
use crate::filename;
use crate::key::SequenceNumber;
use crate::memtable::MemTable;
use crate::sstable::{Table, TableOptions};
use crate::stats::KeyPrediction;
use crate::sync_point::{self, SyncPoint};
use crate::version::edit::{KeyspaceEdit, VersionEdit};
use crate::version::manifest::{self, Manifest};
use crate::version::set::Version;
use crate::{CompactionStyle, Error, Result};

use super::filter_budget::{self, NewTable};
use super::keyspace::KeyspaceState;
use super::{DbInner, SuperVersion, VersionState};

impl VersionState {
    /// Follows `edit`, just logged: log numbers, key predictions, the last
    /// sequence and the byte totals.
    pub(super) fn follow(&mut self, edit: &VersionEdit) {
        self.log_number = edit.log_number.unwrap_or(self.log_number);
        for (id, section) in &edit.keyspaces {
            if let Some(k) = self.keyspaces.get_mut(id) {
                k.log_number = section.log_number.unwrap_or(k.log_number);
                for p in &section.key_predictions {
                    KeyPrediction::keep(&mut k.key_predictions, *p);
                }
            }
        }
        if let Some(s) = edit.last_sequence {
            self.last_seq = self.last_seq.max(s.0);
        }
        self.user_bytes_flushed = edit.user_bytes_flushed.unwrap_or(self.user_bytes_flushed);
        self.table_bytes_written = edit.table_bytes_written.unwrap_or(self.table_bytes_written);
        for p in &edit.key_predictions {
            KeyPrediction::keep(&mut self.key_predictions, *p);
        }
    }
}

/// `e`, a default-keyspace edit, as an edit of keyspace `id`: its scoped
/// fields (tags 2, 5, 6, 9, 10, 11) moved into `id`'s section; the global
/// ones stay.
pub(super) fn scoped(mut e: VersionEdit, id: u32) -> VersionEdit {
    if id == 0 {
        return e;
    }
    let section = KeyspaceEdit {
        log_number: e.log_number.take(),
        deleted_files: std::mem::take(&mut e.deleted_files),
        new_files: std::mem::take(&mut e.new_files),
        key_predictions: std::mem::take(&mut e.key_predictions),
        new_range_tombstones: std::mem::take(&mut e.new_range_tombstones),
        range_tombstone_files: std::mem::take(&mut e.range_tombstone_files),
        ..Default::default()
    };
    e.keyspaces.insert(id, section);
    e
}

/// Sets keyspace `id`'s log number (tag 2) in `e`.
pub(super) fn set_log_number(e: &mut VersionEdit, id: u32, n: u64) {
    if id == 0 {
        e.log_number = Some(n);
    } else {
        e.keyspaces.entry(id).or_default().log_number = Some(n);
    }
}

/// The `(tombstone, table)` pairs a compaction's edit records: the outputs
/// that may hold a version a range tombstone of `version` (the current
/// one, under the versions lock) hides. For a tombstone the merge applied
/// (`known`, sorted: the version's tombstones when the merge started, in
/// its order), the outputs that kept such a version; for one flushed while
/// the merge ran, every output overlapping it, if an input was one of its
/// tables (the merge could not drop what it hides). In the version's
/// order, each tombstone's outputs in output order.
///
/// `O((T + P) log T + U · O)` for the version's `T` tombstones, the `P`
/// pairs the outputs kept, the `U` tombstones the merge did not know and
/// the `O` outputs. (Looking each tombstone up in a list of the others,
/// once per output, made compactions beside many small deletions held by a
/// snapshot quadratic: DESIGN.md 13.)
pub(super) fn range_tombstone_files(
    c: &Compaction,
    outputs: &[compaction::Output],
    version: &Version,
    known: &[SequenceNumber],
) -> Vec<(SequenceNumber, u64)> {
    debug_assert!(known.is_sorted(), "known tombstones come sorted");
    // The outputs that kept a version each known tombstone hides, in
    // output order.
    let mut kept_in: BTreeMap<SequenceNumber, Vec<u64>> = BTreeMap::new();
    for o in outputs {
        for &seq in &o.range_tombstones_kept {
            kept_in.entry(seq).or_default().push(o.meta.number);
        }
    }
    let mut files = Vec::new();
    for t in version.range_tombstones.iter() {
        let seq = t.tombstone.seq;
        if known.binary_search(&seq).is_ok() {
            let kept = kept_in.get(&seq).map_or(&[][..], Vec::as_slice);
            files.extend(kept.iter().map(|&number| (seq, number)));
        } else if c
            .inputs
            .iter()
            .any(|(_, f)| t.pending.contains(&f.meta.number))
        {
            let overlapping = outputs.iter().filter(|o| {
                t.tombstone
                    .overlaps(o.meta.smallest.user_key(), o.meta.largest.user_key())
            });
            files.extend(overlapping.map(|o| (seq, o.meta.number)));
        }
    }
    files
}

impl DbInner {
    /// Logs `edit` to the manifest, follows it in `vs` (log number, last
    /// sequence, byte totals), and installs the version it makes (its new
    /// tables open in `opened`) in a new super-version, without the frozen
    /// memtable `flushed` if one was flushed; then rolls the manifest over
    /// if it is full. The caller holds the versions lock (`vs`), so that
    /// edits reach the manifest in the order they are installed.
    ///
    /// # Errors
    /// [`Error::Io`] if the manifest append or sync fails (the edit may or
    /// may not be durable), or if a rollover fails; [`Error::Corruption`]
    /// if the edit does not apply to the current version. The caller turns
    /// the database read-only, and deletes nothing on the edit's account.
    pub(super) fn log_and_install(
        &self,
        ks: &KeyspaceState,
        vs: &mut VersionState,
        edit: &VersionEdit,
        mut opened: BTreeMap<u64, Arc<Table>>,
        flushed: Option<&Arc<MemTable>>,
    ) -> Result<()> {
        vs.manifest_mut()?.log_edit(edit)?;
        vs.follow(edit);
        let section;
        let tree = if ks.id == 0 {
            edit
        } else {
            section = edit
                .keyspaces
                .get(&ks.id)
                .map(KeyspaceEdit::tree_edit)
                .unwrap_or_default();
            &section
        };
        {
            let mut cur = ks.current.write();
            let version = Arc::new(cur.version.apply(tree, &mut opened)?);
            let imms = cur
                .imms
                .iter()
                .filter(|m| flushed.is_none_or(|f| !Arc::ptr_eq(m, f)))
                .cloned()
                .collect();
            *cur = Arc::new(SuperVersion {
                mem: Arc::clone(&cur.mem),
                imms,
                version,
            });
        }
        self.roll_manifest_if_full(vs)
    }

    /// Replaces the manifest by a new one whose only record is a snapshot
    /// of the state (every keyspace's current version and `vs`), once it has reached
    /// `vs.manifest_limit` bytes, so that it does not grow without bound
    /// while the database stays open. [`Manifest::create`] writes and syncs
    /// the new manifest, then points `CURRENT` at it with a synced rename,
    /// and only then is the old one deleted: a crash at any point leaves
    /// `CURRENT` naming a complete manifest that describes this state, and
    /// the next open deletes whichever is left over. A read-only open in
    /// another process sees the manifest's identity change and reads again.
    ///
    /// # Errors
    /// [`Error::Io`] if the new manifest or `CURRENT` cannot be written.
    /// `CURRENT` may then name either manifest, so no later edit is logged
    /// (they fail with [`Error::Background`] naming this error, from
    /// [`VersionState::manifest_mut`]); the caller turns the database
    /// read-only, and the next open recovers from whichever `CURRENT`
    /// names.
    pub(super) fn roll_manifest_if_full(&self, vs: &mut VersionState) -> Result<()> {
        let Some(old) = vs.manifest.take_if(|m| m.size() >= vs.manifest_limit) else {
            return Ok(());
        };
        let number = self.next_file_number.fetch_add(1, Ordering::SeqCst);
        let version = Arc::clone(&self.default.current.read().version);
        let snapshot = vs.snapshot(
            &version,
            &self.other_versions(),
            self.next_file_number.load(Ordering::SeqCst),
        );
        let new = Manifest::create(&**self.fs(), &self.dir, number, &snapshot)
            .inspect_err(|e| vs.manifest_lost = Some(format!("manifest rollover failed: {e}")))?;
        vs.manifest_limit = VersionState::limit_for(&self.options, new.size());
        vs.manifest = Some(new);
        // A failure leaves an obsolete manifest that the next open removes.
        let _ = self.fs().remove_file(old.path());
        self.counters
            .manifest_rollovers
            .fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The write stall: with automatic compaction, a write waits while
    /// level 0 of keyspace `ks` (one the write goes to) holds `level0_stop_trigger` files or more, and is delayed by 1 ms
    /// once it holds `level0_slowdown_trigger`, so that compaction keeps up
    /// and the files a read probes stay bounded.
    pub(super) fn throttle_for_level0(&self, ks: &KeyspaceState) -> Result<()> {
        let o = ks.options();
        if o.compaction_style == CompactionStyle::None {
            return Ok(());
        }
        let level0 = || ks.current.read().version.levels[0].len();
        let files = level0();
        if files >= o.level0_stop_trigger {
            let mut bg = self.bg.lock();
            while level0() >= o.level0_stop_trigger {
                if let Some(e) = &bg.error {
                    return Err(Error::Background(e.clone()));
                }
                self.bg_cv.wait(&mut bg);
            }
        } else if files >= o.level0_slowdown_trigger {
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
    /// compaction is running. A failure turns the database read-only.
    fn compact_once_if_needed(&self) {
        let Some(_running) = self.compaction.try_lock() else {
            return;
        };
        // Round robin: the keyspaces after the one compacted last first,
        // so that a busy keyspace does not starve the others.
        let all = self.all_keyspaces();
        let last = self.compacted_last.load(Ordering::Relaxed);
        let start = all.iter().position(|k| k.id > last).unwrap_or(0);
        let mut job = None;
        for i in 0..all.len() {
            let ks = &all[(start + i) % all.len()];
            let version = Arc::clone(&ks.current.read().version);
            let options = ks.options();
            let picked = {
                let mut pointers = ks.compaction_pointers.lock();
                compaction::pick(&version, &options, &mut pointers)
            };
            if let Some(c) = picked.or_else(|| filter_budget::drift_rebuild(&options, &version)) {
                job = Some((Arc::clone(ks), c, version));
                break;
            }
        }
        let Some((ks, c, version)) = job else {
            return;
        };
        self.compacted_last.store(ks.id, Ordering::Relaxed);
        let result = self.run_compaction(&ks, &c);
        // A failure turns the database read-only before the lock is let
        // go: a manual compaction waiting for the lock must find it so, not
        // run and report success (found by tests/io_faults.rs under load).
        if let Err(e) = &result {
            self.record_bg_error(format!("compaction failed: {e}"));
        }
        // Let go of the inputs (deleting those now obsolete, unless a reader
        // holds them) before the lock, so that `wait_for_compactions`
        // returns only after the deletions.
        drop((c, version));
        drop(_running);
    }

    /// Executes `c`, a compaction of keyspace `ks`: merges its inputs into
    /// new tables (or moves a single file), logs one manifest edit,
    /// installs the new version and marks the inputs obsolete so that each
    /// is deleted once no reader holds it. The caller holds the
    /// `compaction` lock.
    fn run_compaction(&self, ks: &KeyspaceState, c: &Compaction) -> Result<()> {
        sync_point::reach(&self.options.sync_points, SyncPoint::CompactionStart);
        let prediction = if c.trivial_move {
            None
        } else {
            compaction::predict_distinct_keys(c)
        };
        // The range tombstones the merge applies (none for a move), oldest
        // first as the version lists them: sorted.
        let mut known_tombstones: Vec<SequenceNumber> = Vec::new();
        let (outputs, counts) = if c.trivial_move {
            (Vec::new(), compaction::CompactionCounts::default())
        } else {
            let next = || self.next_file_number.fetch_add(1, Ordering::SeqCst);
            let options = ks.options();
            // The deepest level holding data gets its own filter setting
            // (`skip_filters_on_last_level`). Only this compaction can move
            // data below its output level, and it holds the lock.
            let version = Arc::clone(&ks.current.read().version);
            let last_level = c.output_level >= 1
                && version.levels[c.output_level + 1..]
                    .iter()
                    .all(Vec::is_empty);
            let table_options = TableOptions {
                keyspace: ks.id,
                ..filter_budget::table_options(
                    &options,
                    &version,
                    NewTable::Compaction(c),
                    last_level,
                )
            };
            let range_tombstones = Arc::clone(version.range_tombstones.index());
            known_tombstones = version
                .range_tombstones
                .iter()
                .map(|t| t.tombstone.seq)
                .collect();
            drop(version);
            let ctx = MergeContext {
                dir: &self.dir,
                fs: self.fs(),
                table_options,
                // A tiered merge writes one run, and a run is one table:
                // cut into several, each would count as a run and trigger
                // the next merge, without end.
                target_file_size: if c.output_level == 0 {
                    u64::MAX
                } else {
                    options.target_file_size
                },
                smallest_snapshot: self.smallest_snapshot(),
                range_tombstones,
                new_file_number: &next,
            };
            compaction::merge(c, &ctx)?
        };
        manifest::sync_dir(&**self.fs(), &self.dir)?;
        sync_point::reach(
            &self.options.sync_points,
            SyncPoint::CompactionBeforeInstall,
        );
        let mut edit = compaction::edit_for(c, &outputs);
        if let Some((predicted, error)) = prediction {
            let props = || c.inputs.iter().map(|(_, f)| f.table.properties());
            edit.key_predictions.push(KeyPrediction {
                output_level: c.output_level,
                input_tables: c.inputs.len(),
                input_entries: props().map(|p| p.num_entries).sum(),
                summed_distinct_keys: props().map(|p| p.num_distinct_keys).sum(),
                predicted_distinct_keys: predicted,
                relative_std_error: error,
                distinct_input_keys: counts.distinct_input_keys,
                distinct_output_keys: outputs
                    .iter()
                    .map(|o| o.table.properties().num_distinct_keys)
                    .sum(),
                finished_at_unix_secs: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
            });
        }
        let mut opened: BTreeMap<u64, Arc<Table>> = outputs
            .iter()
            .map(|o| (o.meta.number, Arc::clone(&o.table)))
            .collect();
        if c.trivial_move {
            let (_, f) = &c.inputs[0];
            opened.insert(f.meta.number, Arc::clone(&f.table));
        }
        let mut vs = self.versions.lock();
        if ks.dropped.load(Ordering::SeqCst) {
            // Dropped while the merge ran: nothing to log; the outputs are
            // no keyspace's (the inputs were marked obsolete by the drop).
            drop(vs);
            for o in &outputs {
                let _ = self
                    .fs()
                    .remove_file(&filename::table_path(&self.dir, o.meta.number));
            }
            return Ok(());
        }
        edit.next_file_number = Some(self.next_file_number.load(Ordering::SeqCst));
        edit.last_sequence = Some(SequenceNumber(vs.last_seq));
        edit.table_bytes_written = Some(vs.table_bytes_written + counts.bytes_written);
        edit.range_tombstone_files = {
            let cur = ks.current.read();
            range_tombstone_files(c, &outputs, &cur.version, &known_tombstones)
        };
        let edit = scoped(edit, ks.id);
        // If this fails, whether the edit is durable is unknown (a failed
        // sync may follow a complete write): the outputs may be live on the
        // next open, so they stay, and so do the inputs. If the edit did
        // not land, that open deletes the outputs as orphans.
        self.log_and_install(ks, &mut vs, &edit, opened, None)?;
        drop(vs);
        if !c.trivial_move {
            for (_, f) in &c.inputs {
                f.mark_obsolete(Arc::clone(self.fs()));
            }
        }
        let r = Ordering::Relaxed;
        let k = &self.counters;
        k.compactions.fetch_add(1, r);
        ks.compactions.fetch_add(1, r);
        if c.copy_every_entry {
            k.filter_rebuilds.fetch_add(c.inputs.len() as u64, r);
            k.filter_rebuild_bytes_written
                .fetch_add(counts.bytes_written, r);
        }
        k.compaction_bytes_read.fetch_add(counts.bytes_read, r);
        k.compaction_bytes_written
            .fetch_add(counts.bytes_written, r);
        k.table_bytes_written.fetch_add(counts.bytes_written, r);
        k.tombstones_dropped.fetch_add(counts.tombstones_dropped, r);
        k.versions_dropped.fetch_add(counts.versions_dropped, r);
        k.range_deleted_dropped
            .fetch_add(counts.range_deleted_dropped, r);
        Ok(())
    }

    /// Compacts keyspace `ks`, level by level from 0, the files overlapping `range` (all
    /// files if `None`) into the next level, down to the deepest level that
    /// holds data (at least level 1), which is then compacted into itself,
    /// except for files a rewrite cannot change
    /// ([`compaction::rewriting_changes_nothing`]). Running no compaction at
    /// all is a success. A failure turns the database read-only, as in the
    /// background.
    pub(super) fn compact_manually(
        &self,
        ks: &KeyspaceState,
        range: Option<&compaction::KeyBounds>,
    ) -> Result<()> {
        let _running = self.compaction.lock();
        let options = ks.options();
        let deepest = {
            let v = &ks.current.read().version;
            (1..v.levels.len())
                .rev()
                .find(|&l| !v.levels[l].is_empty())
                .unwrap_or(1)
        };
        let mut result = Ok(());
        for level in 0..=deepest {
            // A background job may have failed meanwhile (while this waited
            // for the lock, say): the database is read-only then.
            result = self.check_writable();
            if result.is_err() {
                break;
            }
            let version = Arc::clone(&ks.current.read().version);
            // All of the deepest level's runs are picked from one version:
            // re-picking after each would find a run that a snapshot keeps
            // dirty again, without end.
            let jobs = if level == deepest {
                compaction::pick_manual_bottommost(
                    &version,
                    level,
                    range,
                    &filter_budget::table_options(
                        &options,
                        &version,
                        NewTable::InPlace { level },
                        true,
                    ),
                    options.target_file_size,
                )
            } else {
                compaction::pick_manual(&version, level, range)
                    .into_iter()
                    .collect()
            };
            for c in &jobs {
                result = self.run_compaction(ks, c);
                if result.is_err() {
                    break;
                }
            }
            if result.is_err() {
                break;
            }
        }
        // As in the background: read-only before the lock is let go.
        if let Err(e) = &result {
            self.record_bg_error(format!("compaction failed: {e}"));
        }
        drop(_running);
        // Notified under `bg`, so that no waiter misses it between its
        // check and its wait.
        let _bg = self.bg.lock();
        self.bg_cv.notify_all();
        result
    }
}

impl DbInner {
    /// Rewrites, one by one, every table whose filter is not what the
    /// options would build for it now, each into its own level with every
    /// entry copied ([`filter_budget::rebuild_plan`]); returns how many. A
    /// failure turns the database read-only, as in the background.
    pub(super) fn rebuild_filters(&self) -> Result<usize> {
        let _running = self.compaction.lock();
        self.check_writable()?;
        let version = Arc::clone(&self.default.current.read().version);
        let plan = filter_budget::rebuild_plan(&self.options, &version);
        drop(version);
        let mut result = Ok(plan.iter().map(|c| c.inputs.len()).sum());
        for c in &plan {
            let run = || self.run_compaction(&self.default, c);
            if let Err(e) = self.check_writable().and_then(|()| run()) {
                result = Err(e);
                break;
            }
        }
        if let Err(e) = &result {
            self.record_bg_error(format!("filter rebuild failed: {e}"));
        }
        drop(plan);
        drop(_running);
        let _bg = self.bg.lock();
        self.bg_cv.notify_all();
        result
    }
}

/// What the background thread does next.
enum BgJob {
    /// Sync the WALs rotations closed (`write.rs`).
    SyncClosedWals,
    /// Flush this frozen memtable of this keyspace.
    Flush(Arc<KeyspaceState>, Arc<MemTable>),
    Compact,
}

/// True if the background has a compaction to run on `v`: one the style
/// calls for, or a filter rebuild of a tree that drifted from its filter
/// budget ([`filter_budget::drift_rebuild`]).
pub(super) fn compaction_due(v: &Version, o: &crate::Options) -> bool {
    compaction::needs_compaction(v, o) || filter_budget::drift_rebuild(o, v).is_some()
}

/// The background thread: syncs the WALs rotations closed, else flushes the
/// oldest frozen memtable, else runs the compaction the style calls for,
/// until shut down. Syncs and flushes come first because sync writes and
/// stalled writers wait for them. A failure is recorded and ends the
/// thread; the database then refuses writes (reads still work).
pub(super) fn background_main(inner: Arc<DbInner>) {
    loop {
        let job = {
            let mut bg = inner.bg.lock();
            loop {
                if bg.shutdown || bg.error.is_some() {
                    return;
                }
                // Not `lock`: a sync writer may hold the list through a
                // sync (it empties it then), and `bg` is held here.
                if inner.closed_wals.try_lock().is_some_and(|c| !c.is_empty()) {
                    break BgJob::SyncClosedWals;
                }
                // The frozen memtable with the oldest WAL, in any keyspace
                // (each keyspace's oldest is its last): the oldest WAL
                // frees first, and each keyspace flushes in order.
                let all = inner.all_keyspaces();
                let oldest = all
                    .iter()
                    .filter_map(|ks| Some((ks, ks.current.read().imms.last().cloned()?)))
                    .min_by_key(|(_, m)| m.wal_number());
                if let Some((ks, m)) = oldest {
                    break BgJob::Flush(Arc::clone(ks), m);
                }
                if !inner.compaction.is_locked()
                    && all
                        .iter()
                        .any(|ks| compaction_due(&ks.current.read().version, &ks.options()))
                {
                    break BgJob::Compact;
                }
                inner.bg_cv.wait(&mut bg);
            }
        };
        match job {
            // A failure is recorded by the call: the database turns
            // read-only and this thread ends.
            BgJob::SyncClosedWals => {
                let _ = inner.sync_closed_wals();
            }
            BgJob::Flush(ks, imm) => {
                if let Err(e) = inner.flush_memtable(&ks, &imm) {
                    inner.record_bg_error(format!("flush failed: {e}"));
                }
            }
            BgJob::Compact => inner.compact_once_if_needed(),
        }
        let _bg = inner.bg.lock();
        inner.bg_cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::compaction::Output;
    use crate::key::{InternalKey, ValueType};
    use crate::range_tombstone::RangeTombstone;
    use crate::sstable::TableBuilder;
    use crate::version::range_tombstones::RangeTombstoneSet;
    use crate::version::set::TableFile;

    /// Table `number` in `dir` holding keys `k{first:05}` to
    /// `k{last:05}`, as a compaction output that kept a version the
    /// tombstones `kept` hide.
    fn output(dir: &Path, number: u64, first: u32, last: u32, kept: &[u64]) -> Output {
        let path = filename::table_path(dir, number);
        let mut b = TableBuilder::new(&path, TableOptions::default()).unwrap();
        for k in first..=last {
            let ik = InternalKey::new(
                format!("k{k:05}").as_bytes(),
                SequenceNumber(1),
                ValueType::Value,
            );
            b.add(ik.encoded(), b"v").unwrap();
        }
        let mut o = compaction::finish_output(dir, number, b).unwrap();
        o.range_tombstones_kept = kept.iter().map(|&s| SequenceNumber(s)).collect();
        o
    }

    /// `[k{start:05}, k{end:05})` at `seq`.
    fn tomb(start: u32, end: u32, seq: u64) -> RangeTombstone {
        RangeTombstone {
            start: format!("k{start:05}").into_bytes(),
            end: Some(format!("k{end:05}").into_bytes()),
            seq: SequenceNumber(seq),
        }
    }

    #[test]
    fn range_tombstone_files_lists_kept_known_and_overlapped_unknown_tombstones() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let input = |number, first, last| {
            let o = output(d, number, first, last, &[]);
            Arc::new(TableFile::new(o.meta, o.table))
        };
        // Inputs 1 and 2; table 3 stays outside the compaction.
        let c = Compaction {
            inputs: vec![(0, input(1, 0, 299)), (1, input(2, 0, 299))],
            output_level: 1,
            older: Vec::new(),
            trivial_move: false,
            copy_every_entry: false,
        };
        // Outputs 10, 11, 12 of keys 0-99, 100-199, 200-299; each lists
        // the known tombstones hiding a version it kept.
        let outputs = [
            output(d, 10, 0, 99, &[4, 5]),
            output(d, 11, 100, 199, &[7]),
            output(d, 12, 200, 299, &[5, 7]),
        ];
        // The merge knew 4 to 7; 4 has left the version since. 20 to 23
        // were flushed while it ran.
        let known = [4, 5, 6, 7].map(SequenceNumber);
        let live = [
            (tomb(0, 300, 5), vec![1, 3]),   // kept in 10 and 12
            (tomb(0, 300, 6), vec![1, 2]),   // known, kept nowhere
            (tomb(50, 250, 7), vec![2, 3]),  // kept in 11 and 12
            (tomb(150, 250, 20), vec![1]),   // unknown, on input 1: 11, 12
            (tomb(0, 300, 21), vec![3]),     // unknown, on no input
            (tomb(500, 600, 22), vec![2]),   // unknown, on input 2, overlaps none
            (tomb(99, 100, 23), vec![2, 3]), // unknown, on input 2: 10 only
        ];
        let mut version = Version::empty();
        version.range_tombstones = RangeTombstoneSet::default()
            .apply(
                &VersionEdit {
                    new_range_tombstones: live.to_vec(),
                    ..Default::default()
                },
                |_| true,
            )
            .unwrap();
        let files = range_tombstone_files(&c, &outputs, &version, &known);
        let s = SequenceNumber;
        assert_eq!(
            files,
            [
                (s(5), 10),
                (s(5), 12),
                (s(7), 11),
                (s(7), 12),
                (s(20), 11),
                (s(20), 12),
                (s(23), 10),
            ]
        );
        // Nothing kept and nothing unknown: nothing to list.
        let bare = [output(d, 13, 0, 299, &[])];
        let known_all: Vec<SequenceNumber> = version
            .range_tombstones
            .iter()
            .map(|t| t.tombstone.seq)
            .collect();
        assert!(range_tombstone_files(&c, &bare, &version, &known_all).is_empty());
    }
}
