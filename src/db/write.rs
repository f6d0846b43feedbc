//! The write path: group commit, per-write durability and
//! [`Db::persist`](super::Db::persist) (DESIGN.md 11).
//!
//! Writers queue their batches. The writer at the front of the queue, when
//! no other is committing, becomes the *leader*: it takes the batches queued
//! behind it (up to [`MAX_GROUP_BYTES`]), gives them consecutive sequence
//! numbers in queue order, appends them to the WAL as one record each in a
//! single `write`, and `fdatasync`s once if any of them asked for sync. It
//! then inserts every batch into the memtable, publishes the new visible
//! sequence, wakes each follower with its own outcome and hands leadership
//! to the writer at the front of the queue, if any. So N
//! concurrent sync writers cost about one `fdatasync` per group instead of
//! one each, each batch stays one WAL record (atomic), and sequence numbers
//! follow commit order.
//!
//! A WAL closed by a memtable rotation is synced by the background thread
//! (or, first, by any sync write or `persist` that comes before that), so a
//! rotation costs the writer no `fdatasync`. A power loss may then keep
//! records of the new WAL and lose the tail of the old one; recovery stops
//! at the first gap in sequence numbers (`recovery/wals.rs`), so what
//! survives is still a prefix of the acknowledged writes.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::key::SequenceNumber;
use crate::log::LogWriter;
use crate::sync_point::{self, SyncPoint};
use crate::write_batch::WriteBatch;
use crate::{Error, Result};

use std::sync::Arc;

use super::keyspace::KeyspaceState;
use super::{DbInner, WriteState};

/// Most bytes of batches one leader commits in a group. A leader whose own
/// batch is small takes at most [`SMALL_LEADER_EXTRA`] more, so that a
/// single small write is not held up behind a megabyte of others' (the
/// bounds of LevelDB's `BuildBatchGroup`).
const MAX_GROUP_BYTES: usize = 1 << 20;
/// See [`MAX_GROUP_BYTES`].
const SMALL_LEADER_EXTRA: usize = 128 << 10;
/// Times a sync leader yields at most for writers to queue behind it.
const MAX_SYNC_LEADER_YIELDS: usize = 4;
/// Longest a queued writer yields the CPU, watching for its signal, before
/// it parks ([`WriteQueue::spin_bound`]). Waits of a group commit that
/// `fdatasync`s on a fast disk (about 100–300 µs here) fit under it; on a
/// disk whose syncs take longer, writers park at once.
const MAX_SPIN: Duration = Duration::from_micros(500);

/// A batch waiting in the queue.
struct QueuedWrite {
    batch: WriteBatch,
    sync: bool,
    /// A read-modify-write ([`Db::update`](super::Db::update)): its batch
    /// is built by its own writer while it leads, from the value committed
    /// last, so it is committed in a group of its own.
    exclusive: bool,
    /// Set by the leader when the batch names a keyspace that is not live
    /// (dropped meanwhile): the batch is then emptied, so nothing of it is
    /// logged, and its writer gets [`Error::NoSuchKeyspace`] with this
    /// text while the rest of the group commits.
    refused: Option<String>,
    /// Where its writer waits to be told its outcome or to lead.
    waiter: Arc<Waiter>,
}

/// What a waiting writer is told, through its [`Waiter`].
enum Signal {
    /// The leader that committed the writer's batch, with the writer's own
    /// outcome.
    Done(Result<()>),
    /// The previous leader handed over leadership: the writer is at the
    /// front of the queue and leads the next group.
    Lead,
}

/// The place one writer waits while queued (DESIGN.md 2): a leader posts
/// it a [`Signal`] and wakes that writer's thread alone, so a completed
/// group wakes its own followers and at most one next leader, not every
/// queued writer (with one condition variable for all, writers queued for
/// the next group woke at every group only to wait again). Each thread
/// reuses one: a thread has at most one write queued at a time (it waits
/// for it), and each queued write is posted exactly one signal, which its
/// writer takes before it returns or leads, so no signal outlives its
/// write.
///
/// A sync writer first yields the CPU for a while, watching `posted`, and
/// parks only if its signal has not come by then ([`WriteQueue::spin_bound`];
/// RocksDB's write thread does the same, its "adaptive yield"). A parked
/// writer costs the leader a `futex` wake, and a machine whose other CPUs
/// went idle meanwhile must bring one back to run it: on the 2-CPU test
/// machine, 35 µs per group of 8 (DESIGN.md 13).
struct Waiter {
    /// The writer's thread, unparked by [`Waiter::post`].
    thread: std::thread::Thread,
    /// The signal posted and not yet taken.
    signal: parking_lot::Mutex<Option<Signal>>,
    /// Set after a signal is posted, cleared when its writer takes it: a
    /// hint the yielding writer reads without the lock (the signal itself
    /// is always taken under it).
    posted: AtomicBool,
}

impl Waiter {
    /// A waiter for the current thread.
    fn for_current_thread() -> Waiter {
        Waiter {
            thread: std::thread::current(),
            signal: parking_lot::Mutex::new(None),
            posted: AtomicBool::new(false),
        }
    }

    /// The current thread's waiter (a new one if its thread-local is
    /// already destroyed, in a thread-local destructor that writes).
    fn current() -> Arc<Waiter> {
        thread_local! {
            static WAITER: Arc<Waiter> = Arc::new(Waiter::for_current_thread());
        }
        WAITER
            .try_with(Arc::clone)
            .unwrap_or_else(|_| Arc::new(Waiter::for_current_thread()))
    }

    /// Posts `signal` and wakes the waiting thread.
    fn post(&self, signal: Signal) {
        let old = self.signal.lock().replace(signal);
        debug_assert!(old.is_none(), "a queued write got two signals");
        self.posted.store(true, Ordering::Release);
        self.thread.unpark();
    }

    /// Waits on the current thread (this waiter's) until a signal is
    /// posted, and takes it: yielding the CPU for up to `spin` first, then
    /// parked. A wake-up without a signal (an unpark that came after its
    /// writer had already seen its signal, or one from outside siftdb:
    /// `park` allows spurious ones) costs one more look.
    fn wait(&self, spin: Duration) -> Signal {
        if !spin.is_zero() {
            let start = Instant::now();
            while !self.posted.load(Ordering::Acquire) && start.elapsed() < spin {
                std::thread::yield_now();
            }
        }
        loop {
            if let Some(signal) = self.signal.lock().take() {
                // The next signal comes only after this writer queues
                // another write, which it does after this returns.
                self.posted.store(false, Ordering::Relaxed);
                return signal;
            }
            std::thread::park();
        }
    }
}

thread_local! {
    /// The database (its `DbInner`'s address) whose `Db::update` closure
    /// this thread is running, or 0: that closure holds the write path,
    /// so a write, flush or compaction of the same database from inside it
    /// would wait for itself.
    static IN_UPDATE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl DbInner {
    /// Refuses a call that needs the write path from inside this
    /// database's `update` closure (it would deadlock).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `what`.
    pub(super) fn refuse_inside_update(&self, what: &str) -> Result<()> {
        if IN_UPDATE.with(std::cell::Cell::get) == self as *const DbInner as usize {
            return Err(Error::InvalidArgument(format!(
                "{what} called inside this database's update closure, which holds the write \
                 path (it would wait for itself): return the value and write after update"
            )));
        }
        Ok(())
    }

    /// Runs `f` as this database's `update` closure (see
    /// [`refuse_inside_update`](Self::refuse_inside_update)); the mark is
    /// cleared even if `f` panics.
    pub(super) fn run_as_update<T>(&self, f: impl FnOnce() -> T) -> T {
        struct Clear;
        impl Drop for Clear {
            fn drop(&mut self) {
                IN_UPDATE.with(|c| c.set(0));
            }
        }
        IN_UPDATE.with(|c| c.set(self as *const DbInner as usize));
        let _clear = Clear;
        f()
    }
}

/// Builds a read-modify-write's batch while its writer leads and holds the
/// write lock, given the sequence number of the last committed write.
pub(super) type BuildBatch<'a> = &'a mut dyn FnMut(&DbInner, SequenceNumber) -> Result<WriteBatch>;

/// The queue of writers (DESIGN.md 2), behind one mutex. A queued writer
/// waits on its own [`Waiter`], not on a condition variable shared by all.
#[derive(Default)]
pub(super) struct WriteQueue {
    state: parking_lot::Mutex<QueueState>,
    /// A moving average of how long queued sync writers waited for their
    /// signal, in nanoseconds (each wait moves it an eighth of the way;
    /// updates racing one another may lose one, which an average can
    /// afford).
    recent_wait_ns: AtomicU64,
}

impl WriteQueue {
    /// How long a writer about to wait yields before it parks: twice the
    /// recent average wait, so that a typical wait ends while it yields,
    /// or none when that is over [`MAX_SPIN`] (a slow disk: yielding for
    /// milliseconds would only burn a CPU). It starts at none and learns
    /// from the waits that follow.
    fn spin_bound(&self) -> Duration {
        spin_bound_for(Duration::from_nanos(
            self.recent_wait_ns.load(Ordering::Relaxed),
        ))
    }

    /// Waits on `waiter` for its signal: if `yields`, yielding first for
    /// up to [`Self::spin_bound`] and counting the wait in the average;
    /// else parked at once.
    fn wait(&self, waiter: &Waiter, yields: bool) -> Signal {
        if !yields {
            return waiter.wait(Duration::ZERO);
        }
        let started = Instant::now();
        let signal = waiter.wait(self.spin_bound());
        self.record_wait(started.elapsed());
        signal
    }

    /// Adds one writer's wait to the recent average.
    fn record_wait(&self, waited: Duration) {
        let waited = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
        let avg = self.recent_wait_ns.load(Ordering::Relaxed);
        let next = avg - avg / 8 + waited / 8;
        self.recent_wait_ns.store(next, Ordering::Relaxed);
    }
}

/// [`WriteQueue::spin_bound`] for a recent average wait of `avg`.
fn spin_bound_for(avg: Duration) -> Duration {
    let bound = avg.saturating_mul(2);
    if bound > MAX_SPIN {
        Duration::ZERO
    } else {
        bound
    }
}

#[derive(Default)]
struct QueueState {
    waiting: VecDeque<QueuedWrite>,
    /// A writer leads: it is committing a group (taken out of `waiting`),
    /// or it was handed leadership and is at the front of `waiting`. When
    /// this is false, `waiting` is empty.
    leading: bool,
    /// Writers in the last group committed.
    last_group: usize,
}

thread_local! {
    /// An empty vector whose capacity this thread reuses for the groups it
    /// leads (no allocation per write). Taken while the thread leads, so a
    /// write to another database from inside an `update` closure simply
    /// finds it empty.
    static SPARE_GROUP: std::cell::Cell<Vec<QueuedWrite>> = const { std::cell::Cell::new(Vec::new()) };
}

impl DbInner {
    /// Commits `batch` through the queue, synced if `sync`; returns when it
    /// is in the WAL (and synced, if asked) and visible to readers.
    ///
    /// # Errors
    /// As [`Db::write`](super::Db::write); a follower gets the error of its
    /// group (an I/O error as a copy with the same kind and message).
    pub(super) fn write_batch(&self, batch: WriteBatch, sync: bool) -> Result<()> {
        if batch.instance() != 0 && batch.instance() != self.instance {
            return Err(Error::InvalidArgument(
                "the batch writes to a keyspace of another database".into(),
            ));
        }
        if batch.is_empty() && !sync {
            return self.check_writable();
        }
        self.commit_queued(batch, sync, None)
    }

    /// Commits the batch `build` makes, atomically with the read it does:
    /// no other write commits between the two (see [`BuildBatch`]).
    ///
    /// # Errors
    /// As [`Db::write`](super::Db::write), and whatever `build` returns
    /// (nothing is then written).
    pub(super) fn write_built(&self, sync: bool, build: BuildBatch<'_>) -> Result<()> {
        self.commit_queued(WriteBatch::new(), sync, Some(build))
    }

    /// Queues `batch` and either waits for a leader to commit it (and
    /// returns the outcome that leader posts this writer) or leads: when
    /// the queue was empty and no writer led, or when the previous leader
    /// hands over. A leader commits its group ([`take_group`],
    /// [`Self::commit_group`]), wakes each follower with its own outcome,
    /// and hands leadership to the writer at the front of the queue (or
    /// gives it up when the queue is empty).
    fn commit_queued(
        &self,
        batch: WriteBatch,
        sync: bool,
        mut build: Option<BuildBatch<'_>>,
    ) -> Result<()> {
        self.refuse_inside_update("a write")?;
        let exclusive = build.is_some();
        // An empty sync batch (`persist`, or `write_with` of an empty batch)
        // logs nothing but joins a group like any write, so its sync is
        // shared with theirs and covers every write acknowledged before.
        let queue = &self.write_queue;
        let waiter = Waiter::current();
        let mut q = queue.state.lock();
        q.waiting.push_back(QueuedWrite {
            batch,
            sync,
            exclusive,
            refused: None,
            waiter: Arc::clone(&waiter),
        });
        let points = &self.options.sync_points;
        sync_point::reach(points, SyncPoint::WriteQueued);
        if q.leading {
            // Wait for a leader to commit this batch, or to hand over.
            drop(q);
            // Only a sync write yields: its wait is mostly an `fdatasync`,
            // during which the CPUs have little else to run. Writers that
            // wait for a leader's CPU work (copies, memtable inserts) would
            // take the CPU from it: yielding, 4 threads of plain puts on
            // 2 cores went from 720k to 430k per second.
            let signal = queue.wait(&waiter, sync && self.options.adaptive_write_yield);
            match signal {
                Signal::Done(outcome) => return outcome,
                Signal::Lead => {}
            }
            q = queue.state.lock();
        } else {
            // No leader, so the queue was empty: this writer is its front.
            q.leading = true;
        }
        debug_assert!(q
            .waiting
            .front()
            .is_some_and(|w| Arc::ptr_eq(&w.waiter, &waiter)));
        // This writer leads: take the group.
        if points.is_some() {
            drop(q);
            sync_point::reach(points, SyncPoint::WriteLeaderBeforeGroup);
            q = queue.state.lock();
        }
        // A sync leader that finds fewer writers queued than its
        // predecessor committed lets the writers that group just released
        // queue up first: they are about to, and joining this group saves
        // each an `fdatasync` of its own (otherwise large and small groups
        // alternate). A yield costs microseconds; a sync, hundreds.
        let mut yields = 0;
        while yields < MAX_SYNC_LEADER_YIELDS
            && q.waiting.front().is_some_and(|w| w.sync)
            && q.waiting.len() < q.last_group
        {
            drop(q);
            std::thread::yield_now();
            yields += 1;
            q = queue.state.lock();
        }
        let mut group = SPARE_GROUP.try_with(|g| g.take()).unwrap_or_default();
        take_group(&mut q.waiting, &mut group);
        drop(q);
        // A panic inside the commit (a bug: nothing there panics on bad
        // input) must not leave the followers waiting for an outcome and
        // the queue led forever: they get an error, the database turns
        // read-only, and the panic goes on in this thread.
        let committed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.commit_group(&mut group, build.take())
        }));
        let (outcome, panic) = match committed {
            Ok(outcome) => (outcome, None),
            Err(panic) => {
                let e = "a write panicked while committing its group".to_string();
                self.record_bg_error(e.clone());
                (Err(Error::Background(e)), Some(panic))
            }
        };
        // Each writer's own outcome comes from the group's: a batch refused
        // for a dropped keyspace fails alone, and only when the group
        // committed (the rest of it did).
        let refusal = |w: &QueuedWrite| {
            w.refused
                .clone()
                .filter(|_| outcome.is_ok())
                .map(Error::NoSuchKeyspace)
        };
        // Give up leadership if no writer queued while this group
        // committed (the next to arrive then leads at once); otherwise keep
        // it, to hand to the writer at the front of the queue.
        let mut q = queue.state.lock();
        q.last_group = group.len();
        let next = q.waiting.front().map(|w| Arc::clone(&w.waiter));
        q.leading = next.is_some();
        drop(q);
        // Wake each follower, alone, with its own outcome...
        for w in &group[1..] {
            let theirs =
                refusal(w).map_or_else(|| outcome.as_ref().map(|_| ()).map_err(copy_error), Err);
            w.waiter.post(Signal::Done(theirs));
        }
        // ...then the next leader, which finds them queued behind it.
        if let Some(next) = next {
            next.post(Signal::Lead);
        }
        let mine = refusal(&group[0]).map_or(outcome, Err);
        // Keep the group's allocation for this thread's next group.
        group.clear();
        let _ = SPARE_GROUP.try_with(|g| g.set(group));
        if let Some(panic) = panic {
            std::panic::resume_unwind(panic);
        }
        mine
    }

    /// Logs the batches of one group and applies them to the memtable, as
    /// the leader.
    fn commit_group(&self, group: &mut [QueuedWrite], build: Option<BuildBatch<'_>>) -> Result<()> {
        let sync = group.iter().any(|w| w.sync);
        let mut ws = self.write.lock();
        self.check_writable()?;
        // The keyspaces other than the default the group writes to: each
        // may stall or rotate the group as the default does. A batch
        // naming one that is not live (dropped since the batch was made)
        // is refused whole, before anything is logged; the others commit.
        let mut others: Vec<Arc<KeyspaceState>> = Vec::new();
        if group.iter().any(|w| !w.batch.keyspaces().is_empty()) {
            let map = Arc::clone(&self.keyspaces.read());
            for w in group.iter_mut() {
                let missing = w
                    .batch
                    .keyspaces()
                    .iter()
                    .copied()
                    .find(|id| map.by_id(*id).is_none() || !ws.mems.contains_key(id));
                if let Some(id) = missing {
                    let name = map
                        .dropped_name(id)
                        .map_or_else(|| format!("(id {id}; dropped)"), str::to_string);
                    w.refused = Some(name);
                    w.batch = WriteBatch::new();
                    continue;
                }
                for &id in w.batch.keyspaces() {
                    if others.iter().all(|k| k.id != id) {
                        others.extend(map.by_id(id).cloned());
                    }
                }
            }
        }
        self.throttle_for_level0(&self.default)?;
        for ks in &others {
            self.throttle_for_level0(ks)?;
        }
        let full = |ws: &WriteState, ks: &KeyspaceState| {
            let limit = ks.options.read().write_buffer_size;
            ws.mem_of(ks.id)
                .is_some_and(|m| m.approximate_size() >= limit)
        };
        if full(&ws, &self.default) || others.iter().any(|ks| full(&ws, ks)) {
            let freeze: Vec<&KeyspaceState> = std::iter::once(&*self.default)
                .chain(others.iter().map(|ks| &**ks))
                .filter(|ks| full(&ws, ks))
                .collect();
            self.rotate_memtables(&mut ws, &freeze)?;
        }
        if let Some(build) = build {
            // The group is this writer's alone (`take_group`), and the lock
            // held keeps every other commit out until this one is visible.
            group[0].batch = build(self, SequenceNumber(ws.last_seq))?;
        }
        let count: u64 = group.iter().map(|w| w.batch.len() as u64).sum();
        let first = ws.last_seq + 1;
        if first + count > SequenceNumber::MAX.0 {
            return Err(Error::InvalidArgument("sequence numbers exhausted".into()));
        }
        // Each batch is one record (so each stays atomic on its own), and
        // the group is one `write_all` (a copy into the WAL's map).
        let mut seq = first;
        for w in group.iter_mut() {
            w.batch.stamp(SequenceNumber(seq));
            seq += w.batch.len() as u64;
        }
        let payloads = group
            .iter()
            .filter(|w| !w.batch.is_empty())
            .map(|w| w.batch.encoded());
        let logged = match ws.wal.as_mut() {
            Some(wal) => wal.append_all(payloads).and_then(|_| {
                if sync {
                    // Every acknowledged write in an older WAL must be
                    // durable before this one is reported durable.
                    self.sync_closed_wals()?;
                    wal.sync()
                } else {
                    Ok(())
                }
            }),
            None => Err(Error::ReadOnly),
        };
        if let Err(e) = logged {
            self.record_bg_error(e.to_string());
            return Err(e);
        }
        let mut user_bytes = 0u64;
        let mut seq = first;
        for w in group.iter() {
            for op in w.batch.iter() {
                // Every keyspace was found live above, under this lock.
                if let Some(mem) = ws.mem_of(op.keyspace) {
                    mem.insert(op.key, SequenceNumber(seq), op.value_type, op.value);
                }
                user_bytes += (op.key.len() + op.value.len()) as u64;
                seq += 1;
            }
        }
        ws.last_seq += count;
        self.visible_seq.store(ws.last_seq, Ordering::Release);
        self.counters
            .user_bytes_written
            .fetch_add(user_bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Syncs every WAL a rotation closed and nobody synced yet, oldest
    /// first, holding the list's lock throughout, so that when this
    /// returns (from any thread) every one of them is durable.
    ///
    /// # Errors
    /// [`Error::Io`] if a sync fails; the database then turns read-only.
    pub(super) fn sync_closed_wals(&self) -> Result<()> {
        let mut closed = self.closed_wals.lock();
        while let Some(wal) = closed.first_mut() {
            // Unmapped first: writeback of a mapped page write-protects it,
            // a TLB-flush interrupt to the writer's CPU per page.
            wal.close_for_writes();
            if let Err(e) = wal.sync() {
                // The background thread takes this lock while it holds
                // `bg`: release it before `record_bg_error` takes `bg`.
                drop(closed);
                self.record_bg_error(e.to_string());
                return Err(e);
            }
            closed.remove(0);
        }
        Ok(())
    }

    /// Queues `wal`, just closed by a rotation, for [`Self::sync_closed_wals`].
    pub(super) fn close_wal(&self, wal: LogWriter) {
        self.closed_wals.lock().push(wal);
    }

    /// Makes every write acknowledged so far durable against power loss:
    /// an empty sync write through the queue, so that it shares a group's
    /// `fdatasync` (which also syncs the WALs rotations closed first).
    ///
    /// # Errors
    /// [`Error::ReadOnly`] on a read-only handle; [`Error::Io`] if a sync
    /// fails (the database then turns read-only); [`Error::Background`]
    /// after an earlier failure.
    pub(super) fn persist(&self) -> Result<()> {
        self.write_batch(WriteBatch::new(), true)
    }
}

/// Puts into `group` the batches a leader commits: the batch at the front (the leader's
/// own) and those queued behind it, in order, within the size bound.
fn take_group(waiting: &mut VecDeque<QueuedWrite>, group: &mut Vec<QueuedWrite>) {
    let leader = waiting.pop_front().expect("the leader is queued");
    let first = leader.batch.encoded_len();
    let limit = if first <= SMALL_LEADER_EXTRA {
        first + SMALL_LEADER_EXTRA
    } else {
        MAX_GROUP_BYTES
    };
    let mut bytes = first;
    let alone = leader.exclusive;
    group.push(leader);
    while let Some(next) = waiting.front().filter(|_| !alone) {
        if next.exclusive {
            break;
        }
        bytes += next.batch.encoded_len();
        if bytes > limit {
            break;
        }
        group.extend(waiting.pop_front());
    }
}

/// The error a follower reports for its group's failure `e`, which the
/// leader returns itself (an [`Error`] is not `Clone`: an I/O error is
/// copied with its kind and message).
fn copy_error(e: &Error) -> Error {
    match e {
        Error::Io { context, source } => Error::io(
            context.clone(),
            std::io::Error::new(source.kind(), source.to_string()),
        ),
        Error::InvalidArgument(s) => Error::InvalidArgument(s.clone()),
        Error::ReadOnly => Error::ReadOnly,
        Error::Background(s) => Error::Background(s.clone()),
        other => Error::Background(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(id: u64, value_len: usize) -> QueuedWrite {
        let mut batch = WriteBatch::new();
        batch.put(id.to_be_bytes(), vec![0u8; value_len]).unwrap();
        QueuedWrite {
            batch,
            sync: false,
            exclusive: false,
            refused: None,
            waiter: Waiter::current(),
        }
    }

    /// The `id` a batch of [`queued`] was made with (its key).
    fn id(w: &QueuedWrite) -> u64 {
        let key = w.batch.iter().next().expect("one put").key;
        u64::from_be_bytes(key.try_into().expect("an 8-byte key"))
    }

    #[test]
    fn a_read_modify_write_is_committed_in_a_group_of_its_own() {
        let mut q: VecDeque<QueuedWrite> = (0..5).map(|i| queued(i, 10)).collect();
        q[2].exclusive = true;
        // Followers stop before it...
        let ids = |g: Vec<QueuedWrite>| g.iter().map(id).collect::<Vec<_>>();
        assert_eq!(ids(group_of(&mut q)), [0, 1]);
        // ...and, leading, it takes no follower.
        assert_eq!(ids(group_of(&mut q)), [2]);
        assert_eq!(ids(group_of(&mut q)), [3, 4]);
    }

    fn group_of(q: &mut VecDeque<QueuedWrite>) -> Vec<QueuedWrite> {
        let mut g = Vec::new();
        take_group(q, &mut g);
        g
    }

    #[test]
    fn a_group_takes_the_queue_in_order_within_the_bound() {
        let mut q: VecDeque<_> = (0..5).map(|i| queued(i, 100)).collect();
        let g = group_of(&mut q);
        assert_eq!(g.iter().map(id).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        assert!(q.is_empty());

        // A small leader takes at most 128 KiB more: 50 KiB batches, so
        // the leader and two followers.
        let mut q: VecDeque<_> = (0..5).map(|i| queued(i, 50 << 10)).collect();
        let g = group_of(&mut q);
        assert_eq!(g.iter().map(id).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(q.front().map(id), Some(3));

        // A large leader goes up to 1 MiB in all.
        let mut q: VecDeque<_> = [
            queued(0, 600 << 10),
            queued(1, 300 << 10),
            queued(2, 300 << 10),
        ]
        .into_iter()
        .collect();
        let g = group_of(&mut q);
        assert_eq!(g.iter().map(id).collect::<Vec<_>>(), [0, 1]);
        // A leader over the bound goes alone.
        let mut q: VecDeque<_> = [queued(0, 2 << 20), queued(1, 10)].into_iter().collect();
        assert_eq!(group_of(&mut q).len(), 1);
    }

    #[test]
    fn a_waiter_takes_the_signal_posted_before_or_while_it_waits() {
        let w = Waiter::current();
        // Posted before it waits: taken at once, and taken only once.
        w.post(Signal::Lead);
        assert!(matches!(w.wait(Duration::ZERO), Signal::Lead));
        assert!(w.signal.lock().is_none());
        assert!(!w.posted.load(Ordering::Relaxed));
        // Posted by another thread, most likely while it is parked: it
        // wakes with it.
        let poster = Arc::clone(&w);
        let t = std::thread::spawn(move || {
            std::thread::yield_now();
            poster.post(Signal::Done(Err(Error::ReadOnly)));
        });
        assert!(matches!(
            w.wait(Duration::ZERO),
            Signal::Done(Err(Error::ReadOnly))
        ));
        t.join().unwrap();
        // The same waiter serves the thread's next write.
        assert!(Arc::ptr_eq(&w, &Waiter::current()));
    }

    #[test]
    fn a_yielding_waiter_takes_its_signal_as_soon_as_it_is_posted() {
        let w = Waiter::current();
        // The poster sleeps long enough for the waiter to be yielding by
        // then, and posts.
        let poster = Arc::clone(&w);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            poster.post(Signal::Lead);
        });
        // A bound of a minute: the signal, not the bound, ends the wait
        // (the bound expiring would leave it to `park`, which also
        // returns it, so the time is what tells the two apart).
        let started = Instant::now();
        assert!(matches!(w.wait(Duration::from_secs(60)), Signal::Lead));
        assert!(started.elapsed() < Duration::from_secs(30));
        assert!(!w.posted.load(Ordering::Relaxed), "the hint is cleared");
        t.join().unwrap();
    }

    #[test]
    fn writers_yield_for_twice_the_recent_wait_unless_that_is_long() {
        let us = Duration::from_micros;
        assert_eq!(spin_bound_for(Duration::ZERO), Duration::ZERO);
        assert_eq!(spin_bound_for(us(40)), us(80));
        assert_eq!(spin_bound_for(us(250)), us(500));
        // A slow disk's waits: park at once.
        assert_eq!(spin_bound_for(us(251)), Duration::ZERO);
        assert_eq!(spin_bound_for(Duration::from_millis(8)), Duration::ZERO);

        // The average moves an eighth of the way to each wait.
        let q = WriteQueue::default();
        assert_eq!(q.spin_bound(), Duration::ZERO, "it starts at none");
        q.record_wait(us(800));
        assert_eq!(q.recent_wait_ns.load(Ordering::Relaxed), 100_000);
        assert_eq!(q.spin_bound(), us(200));
        q.record_wait(Duration::ZERO);
        assert_eq!(q.recent_wait_ns.load(Ordering::Relaxed), 87_500);
        // Long waits take it over the bound, and short ones bring it back.
        for _ in 0..20 {
            q.record_wait(Duration::from_millis(5));
        }
        assert_eq!(q.spin_bound(), Duration::ZERO);
        for _ in 0..60 {
            q.record_wait(us(100));
        }
        assert!(q.spin_bound() > Duration::ZERO);
    }

    #[test]
    fn a_follower_gets_the_same_kind_of_error() {
        let e = Error::io("sync log x", std::io::Error::other("EIO"));
        let copy = copy_error(&e);
        assert_eq!(copy.to_string(), e.to_string());
        assert!(
            matches!(copy, Error::Io { ref source, .. } if source.kind() == std::io::ErrorKind::Other)
        );
        assert!(matches!(copy_error(&Error::ReadOnly), Error::ReadOnly));
    }
}
