//! Group commit, per-write sync and `Db::persist` (DESIGN.md 11).
//!
//! The first leader is held at a sync point while the others queue, so a
//! group of known size forms every time instead of when the scheduler
//! happens to make one; the WAL is then read record by record to check what
//! the group wrote: one record per batch, consecutive sequence numbers in
//! queue order, one `write` and one `fdatasync` for them all.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use common::fault_fs::{FaultFs, OpKind, EIO};
use common::pause::PauseOnce;
use common::power_fs::{PowerFs, Unsynced};
use siftdb::fs::{FileSystem, StdFs, WritableFile};
use siftdb::inspect::log::read_log;
use siftdb::inspect::write_batch::decode_batch;
use siftdb::sync_point::{SyncPoint, SyncPoints};
use siftdb::{Db, Error, Options, WriteBatch, WriteOptions};

/// `(first sequence, [(key, value)])` of every batch in the WALs of `dir`,
/// in WAL order.
type LoggedBatch = (u64, Vec<(Vec<u8>, Vec<u8>)>);

fn logged_batches(dir: &Path) -> Vec<LoggedBatch> {
    let mut wals: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    wals.sort();
    let mut out = Vec::new();
    for w in wals {
        for rec in read_log(&w).unwrap().records {
            let b = decode_batch(&rec.payload).unwrap();
            let ops = b
                .ops
                .iter()
                .map(|op| (op.key.to_vec(), op.value.to_vec()))
                .collect();
            out.push((b.first_seq.get(), ops));
        }
    }
    out
}

fn batch_of(thread: usize, i: usize, puts: usize) -> WriteBatch {
    let mut b = WriteBatch::new();
    for j in 0..puts {
        b.put(format!("t{thread}/{i:05}/{j}"), format!("{thread}:{i}"))
            .unwrap();
    }
    b
}

/// Counted operations of `kind` on WALs so far.
fn wal_ops(fs: &FaultFs, kind: OpKind) -> usize {
    fs.ops()
        .iter()
        .filter(|o| o.kind == kind && o.file_kind() == "log")
        .count()
}

/// A database whose first group-commit leader is held before it takes its
/// group, with a count of writers queued so far.
struct HeldLeader {
    pause: PauseOnce,
    queued: Arc<AtomicUsize>,
    options: Options,
}

fn held_leader(fs: &FaultFs) -> HeldLeader {
    held_leader_on(fs.arc())
}

fn held_leader_on(fs: Arc<dyn FileSystem>) -> HeldLeader {
    let pause = PauseOnce::new(SyncPoint::WriteLeaderBeforeGroup);
    pause.arm();
    let queued = Arc::new(AtomicUsize::new(0));
    let (p, q) = (pause.clone(), Arc::clone(&queued));
    let mut o = Options::default();
    o.file_system = fs;
    o.sync_points = Some(SyncPoints::new(move |point| {
        if point == SyncPoint::WriteQueued {
            q.fetch_add(1, Ordering::SeqCst);
        }
        p.reached(point);
    }));
    HeldLeader {
        pause,
        queued,
        options: o,
    }
}

/// Waits until `queued` (counted at `SyncPoint::WriteQueued`) reaches
/// `n`; panics after 10 s.
fn wait_for_queued(queued: &AtomicUsize, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while queued.load(Ordering::SeqCst) < n {
        assert!(
            std::time::Instant::now() < deadline,
            "writers did not queue"
        );
        std::thread::yield_now();
    }
}

impl HeldLeader {
    fn wait_for_queued(&self, n: usize) {
        wait_for_queued(&self.queued, n);
    }

    /// Runs one group: `leader` writes first and is held; once `writers - 1`
    /// followers (`follower(t)` for `t` in `1..writers`) have queued behind
    /// it, `before_release` runs and the leader goes on. Returns the
    /// leader's outcome (`Err` if it panicked) and the followers'.
    fn run_group(
        &self,
        db: &Db,
        writers: usize,
        leader: impl FnOnce(&Db) -> siftdb::Result<()> + Send,
        follower: impl Fn(usize, &Db) -> siftdb::Result<()> + Sync,
        before_release: impl FnOnce(),
    ) -> (
        std::thread::Result<siftdb::Result<()>>,
        Vec<siftdb::Result<()>>,
    ) {
        std::thread::scope(|s| {
            let leader = s.spawn(|| leader(db));
            self.pause.wait_until_held();
            let follower = &follower;
            let followers: Vec<_> = (1..writers)
                .map(|t| s.spawn(move || follower(t, db)))
                .collect();
            self.wait_for_queued(writers);
            before_release();
            self.pause.release();
            let leader = leader.join();
            let followers = followers.into_iter().map(|f| f.join().unwrap()).collect();
            (leader, followers)
        })
    }
}

#[test]
fn queued_writers_are_committed_with_one_write_and_one_sync() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultFs::new();
    let held = held_leader(&fs);
    let db = Arc::new(Db::open_with(dir.path(), held.options.clone()).unwrap());
    let (writes0, syncs0) = (wal_ops(&fs, OpKind::Write), wal_ops(&fs, OpKind::Sync));
    const WRITERS: usize = 8;
    let (leader, followers) = held.run_group(
        &db,
        WRITERS,
        |db| db.write_with(batch_of(0, 0, 3), &WriteOptions { sync: true }),
        // Followers mix sync and plain writes: the group syncs once because
        // its leader asked.
        |t, db| {
            let sync = t.is_multiple_of(2);
            db.write_with(batch_of(t, 0, t), &WriteOptions { sync })
        },
        || {},
    );
    leader.unwrap().unwrap();
    for f in followers {
        f.unwrap();
    }
    assert_eq!(
        wal_ops(&fs, OpKind::Write) - writes0,
        1,
        "one write for the group"
    );
    assert_eq!(
        wal_ops(&fs, OpKind::Sync) - syncs0,
        1,
        "one sync for the group"
    );
    assert_eq!(
        db.last_sequence().get(),
        3 + (1..WRITERS).sum::<usize>() as u64
    );
    drop(db);

    // One record per batch, the leader's first, sequence numbers
    // consecutive; each batch whole in its record.
    let logged = logged_batches(dir.path());
    assert_eq!(logged.len(), WRITERS);
    assert_eq!(logged[0].1[0].1, b"0:0");
    let mut next = 1;
    let mut threads = Vec::new();
    for (first, ops) in &logged {
        assert_eq!(*first, next);
        next += ops.len() as u64;
        let t: usize = String::from_utf8_lossy(&ops[0].1)
            .split(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(ops.len(), if t == 0 { 3 } else { t });
        assert!(ops.iter().all(|(_, v)| v == format!("{t}:0").as_bytes()));
        threads.push(t);
    }
    threads.sort();
    assert_eq!(threads, (0..WRITERS).collect::<Vec<_>>());

    let db = Db::open(dir.path()).unwrap();
    for t in 0..WRITERS {
        let puts = if t == 0 { 3 } else { t };
        for j in 0..puts {
            let v = db.get(format!("t{t}/00000/{j}")).unwrap();
            assert_eq!(v.as_deref(), Some(format!("{t}:0").as_bytes()));
        }
    }
}

#[test]
fn a_failed_sync_fails_every_batch_of_its_group_and_every_later_write() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultFs::new();
    let held = held_leader(&fs);
    let db = Arc::new(Db::open_with(dir.path(), held.options.clone()).unwrap());
    const WRITERS: usize = 6;
    let (leader, followers) = held.run_group(
        &db,
        WRITERS,
        |db| db.write_with(batch_of(0, 0, 1), &WriteOptions { sync: true }),
        |t, db| db.write(batch_of(t, 0, 1)),
        || fs.fail_next(OpKind::Sync, "log", EIO),
    );
    let mut results = vec![leader.unwrap()];
    results.extend(followers);
    // The leader reports the failed sync; each follower an I/O error of
    // the same kind (the same group).
    for (t, r) in results.iter().enumerate() {
        match r {
            Err(Error::Io { context, .. }) => {
                assert!(context.contains("sync log"), "{t}: {context}")
            }
            other => panic!("writer {t}: {other:?}"),
        }
    }
    assert_eq!(fs.failed().len(), 1);
    // Nothing after it is acknowledged.
    assert!(matches!(db.put("later", "x"), Err(Error::Background(_))));
    assert!(matches!(db.persist(), Err(Error::Background(_))));
    assert_eq!(db.last_sequence().get(), 0, "nothing became visible");
    assert_eq!(db.get(format!("t1/{:05}/0", 0)).unwrap(), None);
}

#[test]
fn concurrent_mixed_writers_keep_order_atomicity_and_every_acknowledged_batch() {
    let dir = tempfile::tempdir().unwrap();
    const THREADS: usize = 8;
    const BATCHES: usize = 150;
    let mut o = Options::default();
    // Several rotations: groups span WALs, and the background syncs the
    // closed ones.
    o.write_buffer_size = 48 << 10;
    {
        let db = Arc::new(Db::open_with(dir.path(), o.clone()).unwrap());
        let start = Arc::new(Barrier::new(THREADS));
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (db, start) = (Arc::clone(&db), Arc::clone(&start));
                s.spawn(move || {
                    start.wait();
                    for i in 0..BATCHES {
                        let sync = (i + t).is_multiple_of(5);
                        db.write_with(batch_of(t, i, 3), &WriteOptions { sync })
                            .unwrap();
                        if i % 50 == 49 {
                            std::thread::yield_now();
                        }
                    }
                });
            }
        });
        assert_eq!(db.last_sequence().get(), (THREADS * BATCHES * 3) as u64);
        db.wait_for_compactions().unwrap();
    }
    let db = Db::open_with(dir.path(), o).unwrap();
    for t in 0..THREADS {
        let got: Vec<_> = db.prefix(format!("t{t}/")).map(|r| r.unwrap()).collect();
        assert_eq!(got.len(), BATCHES * 3, "thread {t}");
        for (k, v) in got {
            let i: usize = String::from_utf8_lossy(&k)[format!("t{t}/").len()..][..5]
                .parse()
                .unwrap();
            assert_eq!(v, format!("{t}:{i}").into_bytes());
        }
    }
}

#[test]
fn wal_records_follow_commit_order_across_threads() {
    // Each thread's batches are logged in the order the thread wrote them,
    // each batch whole in one record, with sequence numbers consecutive
    // across the whole log.
    let dir = tempfile::tempdir().unwrap();
    const THREADS: usize = 6;
    const BATCHES: usize = 200;
    {
        let db = Arc::new(Db::open(dir.path()).unwrap());
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let db = Arc::clone(&db);
                s.spawn(move || {
                    for i in 0..BATCHES {
                        let sync = i % 7 == t % 7;
                        db.write_with(batch_of(t, i, 1 + i % 3), &WriteOptions { sync })
                            .unwrap();
                    }
                });
            }
        });
    }
    let logged = logged_batches(dir.path());
    assert_eq!(logged.len(), THREADS * BATCHES);
    let mut next_seq = 1;
    let mut next_i = [0usize; THREADS];
    for (first, ops) in &logged {
        assert_eq!(*first, next_seq);
        next_seq += ops.len() as u64;
        let v = String::from_utf8(ops[0].1.clone()).unwrap();
        let (t, i) = v.split_once(':').unwrap();
        let (t, i): (usize, usize) = (t.parse().unwrap(), i.parse().unwrap());
        assert_eq!(i, next_i[t], "thread {t}'s batches out of order");
        next_i[t] += 1;
        assert_eq!(ops.len(), 1 + i % 3);
        assert!(ops.iter().all(|(_, val)| *val == ops[0].1));
    }
    assert_eq!(next_i, [BATCHES; THREADS]);
}

#[test]
fn per_write_sync_and_persist_survive_a_power_cut() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("db");
    let fs = PowerFs::new();
    let mut o = Options::default();
    o.file_system = fs.arc();
    let db = Db::open_with(&dir, o).unwrap();
    db.put("plain-1", "a").unwrap();
    let mut b = WriteBatch::new();
    b.put("synced", "b").unwrap();
    db.write_with(b, &WriteOptions { sync: true }).unwrap();
    db.put("plain-2", "c").unwrap();
    db.put("plain-3", "d").unwrap();
    db.persist().unwrap();
    db.put("unsynced", "e").unwrap();
    fs.cut_power_now();
    drop(db);
    // The disk keeps nothing that was not synced.
    fs.crash_image_with(Unsynced::With(&mut |_, _, _| 0));
    let db = Db::open(&dir).unwrap();
    for (k, v) in [
        ("plain-1", "a"),
        ("synced", "b"),
        ("plain-2", "c"),
        ("plain-3", "d"),
    ] {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_bytes()), "{k}");
    }
    assert_eq!(db.get("unsynced").unwrap(), None);
}

#[test]
fn an_empty_sync_write_syncs_what_came_before() {
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultFs::new();
    let mut o = Options::default();
    o.file_system = fs.arc();
    let db = Db::open_with(dir.path(), o).unwrap();
    db.put("k", "v").unwrap();
    let syncs = wal_ops(&fs, OpKind::Sync);
    db.write_with(WriteBatch::new(), &WriteOptions { sync: true })
        .unwrap();
    assert_eq!(wal_ops(&fs, OpKind::Sync), syncs + 1, "as persist does");
    db.write_with(WriteBatch::new(), &WriteOptions { sync: false })
        .unwrap();
    assert_eq!(wal_ops(&fs, OpKind::Sync), syncs + 1);
}

#[test]
fn persist_on_a_read_only_handle_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    Db::open(dir.path()).unwrap().put("k", "v").unwrap();
    let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert!(matches!(ro.persist(), Err(Error::ReadOnly)));
    assert!(matches!(
        ro.write_with(batch_of(0, 0, 1), &WriteOptions { sync: true }),
        Err(Error::ReadOnly)
    ));
}

/// `StdFs`, except that WAL writes panic once `panic` is set.
#[derive(Debug, Clone, Default)]
struct PanickingWal {
    panic: Arc<std::sync::atomic::AtomicBool>,
}

#[derive(Debug)]
struct PanickingFile {
    inner: Box<dyn WritableFile>,
    panic: Arc<std::sync::atomic::AtomicBool>,
}

impl WritableFile for PanickingFile {
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        assert!(
            !self.panic.load(Ordering::SeqCst),
            "injected panic in a WAL write"
        );
        self.inner.write_all(buf)
    }
    fn sync_data(&mut self) -> std::io::Result<()> {
        self.inner.sync_data()
    }
    fn sync_all(&mut self) -> std::io::Result<()> {
        self.inner.sync_all()
    }
}

impl FileSystem for PanickingWal {
    fn create(&self, p: &Path) -> std::io::Result<Box<dyn WritableFile>> {
        StdFs.create(p)
    }
    fn create_new(&self, p: &Path) -> std::io::Result<Box<dyn WritableFile>> {
        Ok(Box::new(PanickingFile {
            inner: StdFs.create_new(p)?,
            panic: Arc::clone(&self.panic),
        }))
    }
    fn reopen_truncated(&self, p: &Path, len: u64) -> std::io::Result<Box<dyn WritableFile>> {
        StdFs.reopen_truncated(p, len)
    }
    fn rename(&self, a: &Path, b: &Path) -> std::io::Result<()> {
        StdFs.rename(a, b)
    }
    fn remove_file(&self, p: &Path) -> std::io::Result<()> {
        StdFs.remove_file(p)
    }
    fn sync_dir(&self, d: &Path) -> std::io::Result<()> {
        StdFs.sync_dir(d)
    }
    fn create_dir_all(&self, d: &Path) -> std::io::Result<()> {
        StdFs.create_dir_all(d)
    }
    fn list_dir(&self, d: &Path) -> std::io::Result<Vec<std::ffi::OsString>> {
        StdFs.list_dir(d)
    }
}

#[test]
fn a_panic_in_a_leader_fails_its_followers_instead_of_hanging_them() {
    let dir = tempfile::tempdir().unwrap();
    let fs = PanickingWal::default();
    let held = held_leader_on(Arc::new(fs.clone()));
    let db = Arc::new(Db::open_with(dir.path(), held.options.clone()).unwrap());
    const WRITERS: usize = 4;
    let (leader, followers) = held.run_group(
        &db,
        WRITERS,
        |db| db.write(batch_of(0, 0, 1)),
        |t, db| db.write(batch_of(t, 0, 1)),
        || fs.panic.store(true, Ordering::SeqCst),
    );
    assert!(leader.is_err(), "the leader's panic goes on in its thread");
    for f in followers {
        assert!(matches!(f, Err(Error::Background(_))), "{f:?}");
    }
    fs.panic.store(false, Ordering::SeqCst);
    assert!(matches!(db.put("later", "x"), Err(Error::Background(_))));
}

#[test]
fn each_follower_is_woken_with_its_own_outcome() {
    // One group whose followers end differently: those whose batch names a
    // keyspace dropped while they queued are refused, the rest commit. Each
    // must get its own outcome, not the leader's or another follower's.
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultFs::new();
    let held = held_leader(&fs);
    let db = Arc::new(Db::open_with(dir.path(), held.options.clone()).unwrap());
    let doomed = db.keyspace("doomed").unwrap();
    const WRITERS: usize = 7;
    let (leader, followers) = held.run_group(
        &db,
        WRITERS,
        |db| db.write_with(batch_of(0, 0, 1), &WriteOptions { sync: true }),
        |t, db| {
            if t % 2 == 1 {
                let mut b = WriteBatch::new();
                b.put_in(&doomed, format!("t{t}"), "x").unwrap();
                db.write(b)
            } else {
                db.write(batch_of(t, 0, 1))
            }
        },
        || db.drop_keyspace("doomed").unwrap(),
    );
    leader.unwrap().unwrap();
    for (i, f) in followers.into_iter().enumerate() {
        let t = i + 1;
        if t % 2 == 1 {
            assert!(
                matches!(f, Err(Error::NoSuchKeyspace(_))),
                "writer {t}: {f:?}"
            );
        } else {
            f.unwrap_or_else(|e| panic!("writer {t}: {e}"));
            let v = db.get(format!("t{t}/00000/0")).unwrap();
            assert_eq!(v.as_deref(), Some(format!("{t}:0").as_bytes()));
        }
    }
}

/// Runs `writers` on threads of their own and waits for all of them, at
/// most 20 seconds: a writer left waiting forever (a group commit that lost
/// it) fails the test instead of hanging it. Returns each writer's
/// outcome, in order (`Err` if it panicked).
fn join_within_deadline(
    writers: Vec<Box<dyn FnOnce() -> siftdb::Result<()> + Send>>,
) -> Vec<std::thread::Result<siftdb::Result<()>>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let n = writers.len();
    for (i, w) in writers.into_iter().enumerate() {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(w));
            let _ = tx.send((i, r));
        });
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut out: Vec<Option<_>> = (0..n).map(|_| None).collect();
    for _ in 0..n {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let (i, r) = rx
            .recv_timeout(left)
            .expect("a writer was never answered: the group commit lost it");
        out[i] = Some(r);
    }
    out.into_iter().map(Option::unwrap).collect()
}

/// A database whose `update` closures can be held open (the update's
/// writer then leads a group of its own and holds the write path), with a
/// count of writers queued so far.
struct HeldUpdate {
    queued: Arc<AtomicUsize>,
    options: Options,
}

impl HeldUpdate {
    fn on(fs: Arc<dyn FileSystem>) -> HeldUpdate {
        let queued = Arc::new(AtomicUsize::new(0));
        let q = Arc::clone(&queued);
        let mut o = Options::default();
        o.file_system = fs;
        o.sync_points = Some(SyncPoints::new(move |point| {
            if point == SyncPoint::WriteQueued {
                q.fetch_add(1, Ordering::SeqCst);
            }
        }));
        HeldUpdate { queued, options: o }
    }

    fn wait_for_queued(&self, n: usize) {
        wait_for_queued(&self.queued, n);
    }
}

/// An update of `key` whose closure signals `inside` and then waits for
/// `gate` before it returns `value`.
fn held_update(
    db: &Arc<Db>,
    key: &'static str,
    inside: std::sync::mpsc::Sender<()>,
    gate: Arc<Barrier>,
) -> Box<dyn FnOnce() -> siftdb::Result<()> + Send> {
    let db = Arc::clone(db);
    Box::new(move || {
        db.update(key, |_| {
            inside.send(()).unwrap();
            gate.wait();
            Some(b"updated".to_vec())
        })
        .map(|_| ())
    })
}

#[test]
fn writers_queued_behind_a_committing_group_are_handed_leadership() {
    // An update holds the write path while three sync writers queue behind
    // its group. When it completes, it hands leadership to the first of
    // them, which must commit all three as one group: one WAL write and
    // one sync, nothing lost, nobody left waiting.
    let dir = tempfile::tempdir().unwrap();
    let fs = FaultFs::new();
    let held = HeldUpdate::on(fs.arc());
    let db = Arc::new(Db::open_with(dir.path(), held.options.clone()).unwrap());
    let (writes0, syncs0) = (wal_ops(&fs, OpKind::Write), wal_ops(&fs, OpKind::Sync));
    let (inside_tx, inside) = std::sync::mpsc::channel();
    let gate = Arc::new(Barrier::new(2));
    let update = held_update(&db, "u", inside_tx, Arc::clone(&gate));
    let writers: Vec<Box<dyn FnOnce() -> siftdb::Result<()> + Send>> = (1..=3)
        .map(|t| {
            let db = Arc::clone(&db);
            Box::new(move || db.write_with(batch_of(t, 0, 2), &WriteOptions { sync: true }))
                as Box<dyn FnOnce() -> siftdb::Result<()> + Send>
        })
        .collect();
    let results = std::thread::scope(|s| {
        let joined_update = s.spawn(|| join_within_deadline(vec![update]));
        // The update leads and holds the write path; then the three queue.
        inside.recv().unwrap();
        let joined = s.spawn(|| join_within_deadline(writers));
        held.wait_for_queued(4);
        gate.wait();
        let mut r = joined_update.join().unwrap();
        r.extend(joined.join().unwrap());
        r
    });
    for r in results {
        r.unwrap().unwrap();
    }
    assert_eq!(
        wal_ops(&fs, OpKind::Write) - writes0,
        2,
        "the update's record, then one write for the three"
    );
    assert_eq!(
        wal_ops(&fs, OpKind::Sync) - syncs0,
        1,
        "the three writers share one sync"
    );
    assert_eq!(db.last_sequence().get(), 1 + 3 * 2);
    assert_eq!(db.get("u").unwrap().as_deref(), Some(&b"updated"[..]));
    for t in 1..=3 {
        for j in 0..2 {
            let v = db.get(format!("t{t}/00000/{j}")).unwrap();
            assert_eq!(v.as_deref(), Some(format!("{t}:0").as_bytes()));
        }
    }
    drop(db);
    // In the WAL: the update first, then the three in one run.
    let logged = logged_batches(dir.path());
    assert_eq!(logged.len(), 4);
    assert_eq!(logged[0].1, [(b"u".to_vec(), b"updated".to_vec())]);
}

#[test]
fn writers_queued_behind_a_panicking_group_are_not_left_waiting() {
    // The update's WAL write panics while two writers are queued behind
    // its group: the panic goes on in the updater, the database turns
    // read-only, and the two still get an answer (the error), through the
    // leadership the failed group hands on.
    let dir = tempfile::tempdir().unwrap();
    let fs = PanickingWal::default();
    let held = HeldUpdate::on(Arc::new(fs.clone()));
    let db = Arc::new(Db::open_with(dir.path(), held.options.clone()).unwrap());
    let (inside_tx, inside) = std::sync::mpsc::channel();
    let gate = Arc::new(Barrier::new(2));
    let mut writers = vec![held_update(&db, "u", inside_tx, Arc::clone(&gate))];
    for t in 1..=2 {
        let db = Arc::clone(&db);
        writers.push(Box::new(move || db.write(batch_of(t, 0, 1))));
    }
    let results = std::thread::scope(|s| {
        // The update leads and holds the write path; then the two queue.
        let update = writers.remove(0);
        let joined_update = s.spawn(|| join_within_deadline(vec![update]));
        inside.recv().unwrap();
        let joined = s.spawn(|| join_within_deadline(writers));
        held.wait_for_queued(3);
        fs.panic.store(true, Ordering::SeqCst);
        gate.wait();
        let mut r = joined_update.join().unwrap();
        r.extend(joined.join().unwrap());
        r
    });
    assert!(results[0].is_err(), "the panic goes on in the updater");
    for r in &results[1..] {
        match r {
            Ok(Err(Error::Background(_))) => {}
            other => panic!("{other:?}"),
        }
    }
    fs.panic.store(false, Ordering::SeqCst);
    assert!(matches!(db.put("later", "x"), Err(Error::Background(_))));
}

#[test]
fn a_thread_leading_one_database_can_follow_in_another() {
    // Inside an update of one database (its writer leads there), a put to
    // a second database queues as a follower behind that one's held
    // leader: the thread waits for it there, and both complete.
    let dir1 = tempfile::tempdir().unwrap();
    let dir2 = tempfile::tempdir().unwrap();
    let db1 = Arc::new(Db::open(dir1.path()).unwrap());
    let fs2 = FaultFs::new();
    let held = held_leader(&fs2);
    let db2 = Arc::new(Db::open_with(dir2.path(), held.options.clone()).unwrap());
    let (leader, followers) = held.run_group(
        &db2,
        2,
        |db2| db2.put("leader", "1"),
        |_, db2| {
            db1.update("k", |_| {
                db2.put("from-update", "2").unwrap();
                Some(b"v".to_vec())
            })
            .map(|_| ())
        },
        || {},
    );
    leader.unwrap().unwrap();
    for f in followers {
        f.unwrap();
    }
    assert_eq!(db1.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(db2.get("from-update").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db2.get("leader").unwrap().as_deref(), Some(&b"1"[..]));
}
