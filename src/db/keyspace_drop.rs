//! Dropping a keyspace (DESIGN.md 2 and 9): one synced
//! manifest record, then its tables, memtables and the WALs only it kept
//! alive go.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::flush::remove_obsolete_wals;
use super::keyspace::KeyspaceState;
use super::{Db, DbInner, SuperVersion};
use crate::key::SequenceNumber;
use crate::memtable::MemTable;
use crate::version::edit::{KeyspaceEdit, VersionEdit, DEFAULT_KEYSPACE_NAME};
use crate::version::set::Version;
use crate::{Error, Result};

impl Db {
    /// Drops the keyspace named `name`: its keys, tables and memtables.
    /// The drop is one manifest record, synced before this returns, so a
    /// crash leaves the keyspace whole or gone, never in part. The WALs
    /// are synced first, so a drop, like [`Db::persist`], also makes every
    /// write acknowledged before it durable against power loss. Then its
    /// tables are deleted (each once no iterator still reads it), and so
    /// are the WALs it alone kept alive.
    ///
    /// A write naming it, and not yet committed, is refused whole with
    /// [`Error::NoSuchKeyspace`] (nothing of it is logged; other writes of
    /// its commit group go on). Iterators opened before the drop keep
    /// reading what they saw; through a [`Keyspace`](super::Keyspace)
    /// handle or a snapshot view of it, `get`, writes, `flush` and
    /// `compact` then fail with [`Error::NoSuchKeyspace`], and new
    /// iterators are empty. A later [`Db::keyspace`] of the same name
    /// creates a new, empty keyspace with a new id.
    ///
    /// # Errors
    /// - [`Error::InvalidArgument`] for `"default"`, which cannot be
    ///   dropped, or when called inside this database's `update` closure;
    /// - [`Error::NoSuchKeyspace`] if no keyspace of that name is live;
    /// - [`Error::ReadOnly`] on a read-only handle;
    /// - [`Error::Io`] if a sync or the manifest write fails: the database
    ///   then turns read-only, nothing is deleted, and the next open finds
    ///   the keyspace whole or gone; [`Error::Background`] after an
    ///   earlier failure.
    pub fn drop_keyspace(&self, name: &str) -> Result<()> {
        self.inner.drop_keyspace(name)
    }
}

impl DbInner {
    /// [`Db::drop_keyspace`]: under the writer and versions locks, syncs
    /// every WAL, then logs `{12 id, 14}` (with the log numbers of
    /// keyspaces whose bump is not persisted yet), synced; marks the
    /// keyspace dropped and removes it from the live state. Then, without
    /// the locks, marks its tables obsolete, lets its memtables go and
    /// deletes the WALs below the new smallest persisted log number.
    fn drop_keyspace(&self, name: &str) -> Result<()> {
        if name == DEFAULT_KEYSPACE_NAME {
            return Err(Error::InvalidArgument(
                "the default keyspace cannot be dropped".into(),
            ));
        }
        self.refuse_inside_update("keyspace drop")?;
        let (state, obsolete_below) = {
            let mut ws = self.write.lock();
            let live = self.keyspaces.read().by_name(name).cloned();
            let Some(state) = live else {
                return Err(Error::NoSuchKeyspace(name.to_string()));
            };
            self.check_writable()?;
            let mut vs = self.versions.lock();
            let mut edit = VersionEdit::default();
            edit.keyspaces.insert(
                state.id,
                KeyspaceEdit {
                    drop: true,
                    ..Default::default()
                },
            );
            // `add_bumps` syncs the WALs rotations closed; the current one
            // is synced too, because the sequence this edit records may lie
            // in it (below).
            let synced = self
                .add_bumps(&vs, &mut edit, state.id)
                .and_then(|_| ws.wal.as_mut().map_or(Ok(()), |w| w.sync()));
            if let Err(e) = synced {
                self.record_bg_error(format!("keyspace drop failed: {e}"));
                return Err(e);
            }
            // The WALs this drop frees may hold the keyspace's unflushed
            // writes, the newest sequences in them: the edit accounts for
            // them, or the next open would take their absence for a power
            // loss (a gap, DESIGN.md 8 step 5) and drop every later write.
            // Every other write in those WALs is in a table already. That
            // sequence may pass other keyspaces' writes in the live WALs,
            // and then the gap check could not see a power loss taking
            // them with newer records kept; every WAL is synced above, so
            // none of them can be lost (RELIABILITY.md 5).
            let unflushed = {
                let cur = state.current.read();
                std::iter::once(&cur.mem)
                    .chain(&cur.imms)
                    .map(|m| m.largest_seq().0)
                    .max()
                    .unwrap_or(0)
            };
            edit.last_sequence = Some(SequenceNumber(vs.last_seq.max(unflushed)));
            self.log_keyspace_edit(&mut vs, &edit, "keyspace drop")?;
            vs.follow(&edit);
            state.dropped.store(true, Ordering::SeqCst);
            vs.keyspaces.remove(&state.id);
            ws.mems.remove(&state.id);
            {
                let mut map = self.keyspaces.write();
                *map = Arc::new(map.without(state.id));
            }
            self.roll_manifest_or_fail(&mut vs)?;
            (state, vs.min_log_number())
        };
        self.let_go_of(&state);
        // A failure leaves WALs that the next open deletes.
        let _ = remove_obsolete_wals(&**self.fs(), &self.dir, obsolete_below);
        let _bg = self.bg.lock();
        self.bg_cv.notify_all();
        Ok(())
    }

    /// Lets go of dropped keyspace `state`'s memtables and version: its
    /// tables are marked obsolete, so each is deleted once the last reader
    /// holding it (an iterator opened before the drop) lets go.
    fn let_go_of(&self, state: &KeyspaceState) {
        let empty = Arc::new(SuperVersion {
            mem: Arc::new(MemTable::new(0)),
            imms: Vec::new(),
            version: Arc::new(Version::empty()),
        });
        let old = std::mem::replace(&mut *state.current.write(), empty);
        for (_, f) in old.version.files() {
            f.mark_obsolete(Arc::clone(self.fs()));
        }
    }
}
