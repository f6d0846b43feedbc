//! Campaign 3: I/O faults (RELIABILITY.md).
//!
//! Every file operation on the engine's write path goes through
//! `Options::file_system`. `FaultFs` (tests/common/fault_fs.rs) numbers
//! them and fails a chosen one with `EIO` or `ENOSPC`: only that one
//! (transient), every later one (a dead disk), or every later one of the
//! same kind (a full disk that still removes files); a failing write may
//! first write half its buffer.
//!
//! `workload_sweep` runs a workload (open, 48 small batches with flushes and
//! leveled compactions after every few, a manual compaction, close) once
//! to count its operations, then once per operation with that operation
//! failing. Each run must surface the fault (never a panic, never a hang,
//! never a silent failure), refuse every write after a background error
//! with `Error::Background` naming the cause, keep answering reads, and,
//! reopened on a healthy file system, hold every acknowledged write and at
//! most the one batch whose WAL append failed. `open_sweep` does the same
//! for the operations of `Db::open` recovering a database. The
//! `sync = true` workload sweep runs with LZ4 on every level (flushes and
//! compactions write compressed tables, the reads and the reopens read
//! them); its healthy run must end with LZ4 tables below level 0, written
//! by compactions.
//!
//! `SIFTDB_IO_FAULT_DENSE=1` runs every fault mode with both error codes
//! at every operation (three times the CI size).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use common::campaign::{self, apply, bounded, check_directory, write_batch, State, Update};
use common::fault_fs::{Fault, FaultFs, Op, OpKind, Persist, Targeted, EIO, ENOSPC};
use common::{env_u64, scratch_dir, Rng};
use siftdb::{Db, Error, Options};

const BATCHES: u64 = 48;
const KEYS: u64 = 40;
/// A run that takes longer than this is a hang.
const RUN_TIMEOUT: Duration = Duration::from_secs(30);

/// The campaigns' tiny options over `fs`; with `lz4`, LZ4 data blocks on
/// every level and half the level-1 budget (compressed tables are
/// smaller: the tree still reaches level 2).
fn options(fs: &FaultFs, sync: bool, lz4: bool) -> Options {
    let mut o = campaign::tiny_options(sync);
    if lz4 {
        o.compression = campaign::lz4_everywhere();
        o.max_bytes_for_level_base /= 2;
    }
    o.file_system = fs.arc();
    o
}

/// Key `i` of the key space.
fn key(i: u64) -> Vec<u8> {
    format!("key{i:03}").into_bytes()
}

/// Batch `id`: 1 to 3 updates over `KEYS` keys, one in five a delete. Every
/// value names its batch. One batch in six also holds a range deletion
/// (sometimes open-ended) before its last update, so faults land on
/// flushes and compactions with range tombstones live, on the manifest
/// edits that record them (tags 10 and 11) and on the edits that
/// garbage-collect them.
fn batch(id: u64) -> Vec<Update> {
    let mut rng = Rng(id.wrapping_mul(0x9e37_79b9) ^ 0xfa17);
    let mut ops: Vec<Update> = (0..1 + id % 3)
        .map(|j| {
            let key = key(rng.below(KEYS));
            if rng.below(5) == 0 {
                Update::Delete(key)
            } else {
                let value = format!("b{id:04}-{j}-{}", "v".repeat(40)).into_bytes();
                Update::Put(key, value)
            }
        })
        .collect();
    let ranges = Rng(id.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0xfa17);
    campaign::mix_in_range_delete(&mut ops, ranges, 6, KEYS, key, true);
    ops
}

/// Full contents, read and cross-checked over the key space
/// ([`campaign::read_state`]).
fn read_state(db: &Db) -> Result<State, String> {
    campaign::read_state(db, (0..KEYS).map(key))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Open,
    Write(u64),
    Wait,
    Flush,
    Compact,
    Close,
}

impl Call {
    /// Changes the database (must fail once it is read-only).
    fn mutates(self) -> bool {
        matches!(self, Call::Write(_) | Call::Flush | Call::Compact)
    }
}

#[derive(Debug, Clone)]
enum Outcome {
    Ok,
    Io(String),
    Background(String),
    Other(String),
}

impl Outcome {
    fn of(r: &siftdb::Result<()>) -> Outcome {
        match r {
            Ok(()) => Outcome::Ok,
            Err(e @ Error::Io { .. }) => Outcome::Io(e.to_string()),
            Err(Error::Background(m)) => Outcome::Background(m.clone()),
            Err(e) => Outcome::Other(e.to_string()),
        }
    }

    fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok)
    }
}

/// One API call of a run: what it was, the numbers of the file operations
/// that started during it, and how it ended.
#[derive(Debug, Clone)]
struct CallRecord {
    call: Call,
    ops: std::ops::Range<u64>,
    outcome: Outcome,
}

#[derive(Debug, Default)]
struct Run {
    calls: Vec<CallRecord>,
    /// Contents read in-process at the end, if the open succeeded.
    scan: Option<Result<State, String>>,
    /// Flushes, compactions and the deepest level holding files, at the end.
    shape: (u64, u64, usize),
    /// Most range tombstones live after a write, and versions compactions
    /// dropped as range-deleted.
    range: (u64, u64),
    /// How the live tables were compressed, at the end.
    codecs: Option<campaign::Codecs>,
}

fn record(run: &mut Run, fs: &FaultFs, call: Call, f: impl FnOnce() -> siftdb::Result<()>) -> bool {
    let start = fs.count();
    let r = f();
    run.calls.push(CallRecord {
        call,
        ops: start..fs.count(),
        outcome: Outcome::of(&r),
    });
    r.is_ok()
}

/// The workload: open, write every batch (waiting for background work after
/// each, so that the order of file operations repeats from run to run),
/// compact by hand halfway and at the end, read everything back, close.
/// Carries on after errors, recording every call.
fn workload(dir: &Path, fs: &FaultFs, sync: bool, lz4: bool) -> Run {
    let mut run = Run::default();
    let mut db = None;
    record(&mut run, fs, Call::Open, || {
        db = Some(Db::open_with(dir, options(fs, sync, lz4))?);
        Ok(())
    });
    let Some(db) = db else { return run };
    for id in 0..BATCHES {
        let b = write_batch(&batch(id));
        record(&mut run, fs, Call::Write(id), || db.write(b));
        run.range.0 = run.range.0.max(db.stats().range_tombstones);
        record(&mut run, fs, Call::Wait, || db.wait_for_compactions());
        if id == BATCHES / 2 {
            record(&mut run, fs, Call::Compact, || db.compact());
        }
    }
    record(&mut run, fs, Call::Flush, || db.flush());
    record(&mut run, fs, Call::Compact, || db.compact());
    record(&mut run, fs, Call::Wait, || db.wait_for_compactions());
    run.scan = Some(read_state(&db));
    run.shape = campaign::shape(&db);
    run.codecs = Some(campaign::codecs(&db));
    run.range.1 = db.stats().range_deleted_dropped;
    record(&mut run, fs, Call::Close, || db.close());
    run
}

/// Reopens `dir` on a healthy file system (with LZ4 if `lz4`, as the run
/// had) and checks the result against `allowed` (any one of them), then
/// that the database still works.
fn reopen_and_check(dir: &Path, allowed: &[State], what: &str, lz4: bool) -> Result<(), String> {
    let healthy = FaultFs::new();
    let db = Db::open_with(dir, options(&healthy, false, lz4))
        .map_err(|e| format!("healthy reopen failed: {e}"))?;
    db.wait_for_compactions()
        .map_err(|e| format!("compaction after reopen: {e}"))?;
    check_directory(&db, dir)?;
    let state = read_state(&db).map_err(|e| format!("read after reopen: {e}"))?;
    if !allowed.contains(&state) {
        let diff = campaign::diff(&allowed[0], &state);
        return Err(format!(
            "{what}: reopened contents match no allowed state; vs acknowledged: {diff:?}"
        ));
    }
    // Still fully usable: write, flush, compact, reopen, read.
    db.put("zz-after", "fine")
        .map_err(|e| format!("put after reopen: {e}"))?;
    db.compact()
        .map_err(|e| format!("compact after reopen: {e}"))?;
    drop(db);
    let db = Db::open_with(dir, options(&healthy, false, lz4))
        .map_err(|e| format!("second reopen: {e}"))?;
    match db.get("zz-after") {
        Ok(Some(v)) if v == b"fine" => Ok(()),
        other => Err(format!("write after reopen lost: {other:?}")),
    }
}

/// Checks one faulty run of the workload; returns the violations.
fn check_run(run: &Run, fs: &FaultFs, dir: &Path, sync: bool, lz4: bool) -> Vec<String> {
    let mut v = Vec::new();
    let failed = fs.failed();
    let first_failed = failed.first().map(|(_, op)| op.clone());
    let any_error = run.calls.iter().any(|c| !c.outcome.is_ok());

    // No silent failure: only a failed removal of garbage may go unreported.
    if let Some(op) = &first_failed {
        if op.kind != OpKind::Remove && !any_error {
            v.push(format!("fault at {op} went unreported"));
        }
    }
    // Errors are I/O errors, or Background naming the cause.
    for c in &run.calls {
        match &c.outcome {
            Outcome::Other(e) => {
                v.push(format!("{:?} failed with an unexpected error: {e}", c.call))
            }
            Outcome::Io(m) | Outcome::Background(m) if !m.contains("os error") => {
                v.push(format!("{:?}: error does not name the cause: {m}", c.call))
            }
            _ => {}
        }
    }
    // Read-only after a background error, or after a failed WAL write.
    // Only a write appends to a WAL. Without `sync` a WAL sync is the
    // background's, of a WAL a rotation closed, and may fall in a write's
    // operations (it runs while the write does) without being that
    // write's: the write was acknowledged, and the failure surfaces as
    // `Background` on a later call. With `sync` the write syncs the closed
    // WALs itself before its own, so a failed one fails it either way.
    let wal_failed = |c: &CallRecord| {
        failed.iter().any(|(n, op)| {
            c.ops.contains(n)
                && op.file_kind() == "log"
                && (op.kind == OpKind::Write || (sync && op.kind == OpKind::Sync))
        })
    };
    // A failed compaction turns the database read-only too, unless what
    // failed was the flush before it starting a new WAL (creating the file or
    // syncing the directory after), which changes nothing and is not fatal:
    // a later write just tries again.
    let ops = fs.ops();
    let wal_creation = |n: u64| {
        let op = |n: u64| ops.get(n as usize);
        let created_log =
            |o: Option<&Op>| o.is_some_and(|o| o.kind == OpKind::Create && o.file_kind() == "log");
        created_log(op(n))
            || (op(n).is_some_and(|o| o.kind == OpKind::SyncDir) && n > 0 && created_log(op(n - 1)))
    };
    let compaction_failed = |c: &CallRecord| {
        c.call == Call::Compact
            && !c.outcome.is_ok()
            && failed
                .iter()
                .find(|(n, _)| c.ops.contains(n))
                .is_some_and(|&(n, _)| !wal_creation(n))
    };
    let poisoned_from = run.calls.iter().position(|c| {
        matches!(c.outcome, Outcome::Background(_))
            || (matches!(c.call, Call::Write(_)) && wal_failed(c))
            || compaction_failed(c)
    });
    if let Some(p) = poisoned_from {
        if matches!(run.calls[p].call, Call::Write(_)) && run.calls[p].outcome.is_ok() {
            v.push(format!(
                "{:?} returned Ok although its WAL write failed",
                run.calls[p].call
            ));
        }
        for c in &run.calls[p + 1..] {
            if c.call.mutates() && !matches!(c.outcome, Outcome::Background(_)) {
                v.push(format!(
                    "{:?} after the database turned read-only returned {:?}",
                    c.call, c.outcome
                ));
            }
        }
    }

    // Model: acknowledged writes; candidates: plus one failed write.
    let mut acked = State::new();
    let mut failed_writes = Vec::new();
    for c in &run.calls {
        if let Call::Write(id) = c.call {
            if c.outcome.is_ok() {
                apply(&mut acked, &batch(id));
            } else {
                failed_writes.push(id);
            }
        }
    }
    match &run.scan {
        Some(Ok(state)) if *state != acked => {
            v.push("in-process scan differs from the acknowledged writes".into())
        }
        Some(Err(e)) => v.push(format!("read failed after the fault: {e}")),
        _ => {}
    }
    let mut allowed = vec![acked];
    for &u in &failed_writes {
        let mut m = State::new();
        for c in &run.calls {
            if let Call::Write(id) = c.call {
                if c.outcome.is_ok() || id == u {
                    apply(&mut m, &batch(id));
                }
            }
        }
        allowed.push(m);
    }
    if let Err(e) = reopen_and_check(dir, &allowed, "workload", lz4) {
        v.push(e);
    }
    v
}

/// What the sweep did, for the report.
#[derive(Default)]
struct Tally {
    runs: u64,
    /// Faults injected, by (kind, file kind).
    by_op: BTreeMap<(OpKind, &'static str), u64>,
    /// How the first error surfaced, by call.
    surfaced: BTreeMap<String, u64>,
    /// One line per failed run.
    failures: Vec<String>,
}

impl Tally {
    /// Notes one run's violations (none: it passed).
    fn record(&mut self, what: &str, violations: Vec<String>) {
        if let Some(first) = violations.first() {
            let more = match violations.len() {
                1 => String::new(),
                n => format!(" (and {} more)", n - 1),
            };
            self.failures.push(format!("{what}: {first}{more}"));
        }
    }

    fn report(&self, name: &str, elapsed: Duration) {
        println!("{name}: {} runs in {:.1?}", self.runs, elapsed);
        for ((k, f), n) in &self.by_op {
            println!("  fault at {k:?} {f}: {n}");
        }
        for (s, n) in &self.surfaced {
            println!("  first error from {s}: {n}");
        }
        for f in self.failures.iter().take(30) {
            println!("  FAIL {f}");
        }
        assert!(
            self.failures.is_empty(),
            "{name}: {} of {} runs failed (first: {})",
            self.failures.len(),
            self.runs,
            self.failures[0]
        );
    }
}

/// The fault modes tried at operation `i`: in CI a transient `EIO` and a
/// persistent, torn `ENOSPC` (every later operation, or every later one of
/// the same kind, in turn); dense, all six combinations.
fn modes(i: u64, dense: bool) -> Vec<Fault> {
    let all = [
        (Persist::Once, EIO, false),
        (Persist::All, ENOSPC, true),
        (Persist::SameKind, ENOSPC, true),
        (Persist::Once, ENOSPC, true),
        (Persist::All, EIO, false),
        (Persist::SameKind, EIO, false),
    ];
    let pick: Vec<_> = if dense {
        all.to_vec()
    } else {
        vec![all[0], all[1 + (i % 2) as usize]]
    };
    pick.into_iter()
        .map(|(persist, errno, torn_write)| Fault {
            at: i,
            errno,
            persist,
            torn_write,
        })
        .collect()
}

fn describe(ops: &[Op], fault: &Fault) -> String {
    let op = ops
        .get(fault.at as usize)
        .map_or("past the end".to_string(), |o| o.to_string());
    format!(
        "op {} ({op}), {:?}, errno {}{}",
        fault.at,
        fault.persist,
        fault.errno,
        if fault.torn_write { ", torn" } else { "" }
    )
}

#[test]
fn workload_sweep() {
    let dense = env_u64("SIFTDB_IO_FAULT_DENSE", 0) != 0;
    let started = Instant::now();
    let scratch = scratch_dir();
    for sync in [false, true] {
        let lz4 = sync;
        // Learn the operations of a healthy run.
        let dir = scratch.path().join(format!("count-{sync}"));
        let fs = FaultFs::new();
        let run = workload(&dir, &fs, sync, lz4);
        assert!(
            run.calls.iter().all(|c| c.outcome.is_ok()),
            "healthy run failed: {:?}",
            run.calls.iter().find(|c| !c.outcome.is_ok())
        );
        let ops = fs.ops();
        let kinds: BTreeSet<_> = ops.iter().map(|o| (o.kind, o.file_kind())).collect();
        let (flushes, compactions, deepest) = run.shape;
        let (most_live, range_dropped) = run.range;
        println!(
            "sync={sync}, lz4={lz4}: healthy run: {} operations, {} distinct (kind, file); \
             {flushes} flushes, {compactions} compactions, data down to level {deepest}; \
             {} batches with a range deletion, up to {most_live} range tombstones live, \
             {range_dropped} versions dropped by them",
            ops.len(),
            kinds.len(),
            (0..BATCHES)
                .filter(|&id| campaign::range_deletes(&batch(id)) > 0)
                .count()
        );
        assert!(flushes >= 2 && compactions >= 2 && deepest >= 2);
        assert!(most_live > 0, "no range tombstone was ever live");
        let codecs = run.codecs.clone().expect("healthy run read its tables");
        if lz4 {
            campaign::check_lz4_compactions_of(&codecs).unwrap();
        } else {
            assert_eq!(codecs.compressed_blocks, 0, "{codecs:?}");
        }
        println!("sync={sync}, lz4={lz4}: healthy run's tables at the end: {codecs:?}");

        let mut tally = Tally::default();
        let t0 = Instant::now();
        for i in 0..ops.len() as u64 {
            for fault in modes(i, dense) {
                let dir = scratch.path().join(format!(
                    "run-{sync}-{i}-{:?}-{}",
                    fault.persist, fault.errno
                ));
                let fs = FaultFs::with_fault(fault);
                let what = format!("sync={sync}, lz4={lz4}, {}", describe(&ops, &fault));
                tally.runs += 1;
                let (fs2, dir2) = (fs.clone(), dir.clone());
                let run = match bounded(RUN_TIMEOUT, move || workload(&dir2, &fs2, sync, lz4)) {
                    Ok(run) => run,
                    Err(e) => {
                        tally.failures.push(format!("{what}: workload {e}"));
                        continue;
                    }
                };
                if let Some((_, op)) = fs.failed().first() {
                    *tally.by_op.entry((op.kind, op.file_kind())).or_default() += 1;
                }
                if let Some(c) = run.calls.iter().find(|c| !c.outcome.is_ok()) {
                    let how = match c.outcome {
                        Outcome::Io(_) => "Io",
                        Outcome::Background(_) => "Background",
                        _ => "other",
                    };
                    let call = match c.call {
                        Call::Write(_) => "Write".to_string(),
                        other => format!("{other:?}"),
                    };
                    *tally.surfaced.entry(format!("{call} ({how})")).or_default() += 1;
                }
                fs.heal();
                tally.record(&what, check_run(&run, &fs, &dir, sync, lz4));
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
        tally.report(
            &format!("workload sweep, sync={sync}, lz4={lz4}"),
            t0.elapsed(),
        );
    }
    println!("workload sweep total {:.1?}", started.elapsed());
}

/// A database for `open_sweep`: tables on several levels, a WAL holding
/// unflushed batches, and the acknowledged state.
fn build_recovery_base(dir: &Path) -> State {
    let fs = FaultFs::new();
    let db = Db::open_with(dir, options(&fs, false, false)).unwrap();
    let mut model = State::new();
    for id in 0..BATCHES {
        db.write(write_batch(&batch(id))).unwrap();
        apply(&mut model, &batch(id));
        if id == 30 {
            db.wait_for_compactions().unwrap();
        }
    }
    db.wait_for_compactions().unwrap();
    let files = db.live_files();
    let levels: BTreeSet<usize> = files.iter().map(|f| f.level).collect();
    println!(
        "recovery base: {} tables on levels {levels:?}, {} keys",
        files.len(),
        model.len()
    );
    assert!(files.len() >= 2 && levels.len() >= 2);
    drop(db);
    model
}

#[test]
fn open_sweep() {
    let dense = env_u64("SIFTDB_IO_FAULT_DENSE", 0) != 0;
    let scratch = scratch_dir();
    let base = scratch.path().join("base");
    let model = build_recovery_base(&base);

    let count_dir = scratch.path().join("count");
    common::copy_dir(&base, &count_dir);
    let fs = FaultFs::new();
    let db = Db::open_with(&count_dir, options(&fs, false, false)).unwrap();
    // Only the operations of `open` itself (closing syncs the WAL).
    let ops = fs.ops();
    drop(db);
    println!("Db::open of the base: {} operations", ops.len());
    for (i, op) in ops.iter().enumerate() {
        println!("  {i}: {op}");
    }

    let t0 = Instant::now();
    let mut tally = Tally::default();
    for i in 0..ops.len() as u64 {
        // There are few operations: three modes each, six if dense.
        for fault in modes(i, true).into_iter().take(if dense { 6 } else { 3 }) {
            let dir = scratch
                .path()
                .join(format!("open-{i}-{:?}-{}", fault.persist, fault.errno));
            common::copy_dir(&base, &dir);
            let what = format!("open, {}", describe(&ops, &fault));
            tally.runs += 1;
            let fs = FaultFs::with_fault(fault);
            let (fs2, dir2) = (fs.clone(), dir.clone());
            let opened = match bounded(RUN_TIMEOUT, move || {
                Db::open_with(&dir2, options(&fs2, false, false)).map(drop)
            }) {
                Ok(r) => r,
                Err(e) => {
                    tally.failures.push(format!("{what}: open {e}"));
                    continue;
                }
            };
            let mut violations = Vec::new();
            if let Some((_, op)) = fs.failed().first() {
                *tally.by_op.entry((op.kind, op.file_kind())).or_default() += 1;
                // Every step of recovery is reported, removing old files
                // included.
                match &opened {
                    Ok(()) => violations.push("open succeeded despite the fault".to_string()),
                    Err(Error::Io { .. }) => {}
                    Err(e) => violations.push(format!("unexpected error {e}")),
                }
            }
            *tally
                .surfaced
                .entry(
                    if opened.is_ok() {
                        "open (Ok)"
                    } else {
                        "open (Io)"
                    }
                    .into(),
                )
                .or_default() += 1;
            fs.heal();
            if let Err(e) = reopen_and_check(&dir, std::slice::from_ref(&model), "open", false) {
                violations.push(e);
            }
            tally.record(&what, violations);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    tally.report("open sweep", t0.elapsed());
}

/// For the regressions below: a database in `dir` on `fs` without
/// background compaction, holding batches `0..batches` with a flush after
/// every `flush_every`, and the model of its contents.
fn without_compaction(dir: &Path, fs: &FaultFs, batches: u64, flush_every: u64) -> (Db, State) {
    let mut o = options(fs, false, false);
    o.compaction_style = siftdb::CompactionStyle::None;
    let db = Db::open_with(dir, o).unwrap();
    let mut model = State::new();
    for id in 0..batches {
        apply(&mut model, &batch(id));
        db.write(write_batch(&batch(id))).unwrap();
        if id % flush_every == flush_every - 1 {
            db.flush().unwrap();
        }
    }
    (db, model)
}

/// Asserts that `r`, the result of a call that changes the database, is
/// `Error::Background` naming OS error `errno`: the database is read-only.
fn assert_read_only(r: siftdb::Result<()>, errno: i32) {
    match r {
        Err(Error::Background(m)) => assert!(m.contains(&format!("os error {errno}")), "{m}"),
        other => panic!("expected Error::Background, got {other:?}"),
    }
}

/// Asserts that reads of `db` still answer with `model`; then drops it,
/// heals `fs` and checks that a reopen recovers `model` (`reopen_and_check`).
fn assert_recovers(db: Db, fs: &FaultFs, dir: &Path, model: State, what: &str) {
    assert_eq!(read_state(&db).unwrap(), model);
    drop(db);
    fs.heal();
    reopen_and_check(dir, &[model], what, false).unwrap();
}

/// Found by `workload_sweep` (a failed manifest sync during a compaction):
/// the compaction deleted its outputs after `log_edit` failed, but the edit
/// had reached the file, so the reopened manifest listed missing tables and
/// the database could not be opened (`Corruption`). And a failed manual
/// compaction left the database writable with a manifest that refuses every
/// later edit.
#[test]
fn failed_manifest_sync_in_compaction_keeps_outputs() {
    let scratch = scratch_dir();
    let dir = scratch.path().join("db");
    let fs = FaultFs::new();
    let (db, model) = without_compaction(&dir, &fs, 20, 5);
    assert!(db.live_files().len() >= 4);
    fs.fail_next(OpKind::Sync, "manifest", EIO);
    let e = db.compact().unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert_eq!(fs.failed().len(), 1);
    // Read-only from now on, naming the cause; reads still work.
    for r in [db.put("x", "y"), db.flush(), db.compact()] {
        assert_read_only(r, EIO);
    }
    assert_recovers(db, &fs, &dir, model, "after a failed manifest sync");
}

/// Found by `workload_sweep` (a failed table write during `compact()`): a
/// manual compaction that failed returned the error but left the database
/// writable, unlike a background one. After a failed manifest edit the
/// manifest refuses every later edit, so the next flush failed anyway; now
/// any failed compaction turns the database read-only at once.
#[test]
fn failed_manual_compaction_turns_the_database_read_only() {
    let scratch = scratch_dir();
    let dir = scratch.path().join("db");
    let fs = FaultFs::new();
    let (db, model) = without_compaction(&dir, &fs, 10, 1);
    fs.fail_next(OpKind::Write, "sst", ENOSPC);
    let e = db.compact().unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert_read_only(db.put("x", "y"), ENOSPC);
    assert_recovers(db, &fs, &dir, model, "after a failed manual compaction");
}

/// Found by `workload_sweep` (a failed table write in a background
/// compaction that started while `compact()` was flushing): the manual
/// compaction waited for the background one, then ran anyway and returned
/// `Ok` although the database had just turned read-only.
#[test]
fn compact_reports_a_background_compaction_that_failed_meanwhile() {
    let scratch = scratch_dir();
    let dir = scratch.path().join("db");
    let fs = FaultFs::new();
    let db = Db::open_with(&dir, options(&fs, false, false)).unwrap();
    db.put("a", "1").unwrap();
    db.flush().unwrap();
    db.put("b", "2").unwrap();
    // The flush puts a second file in level 0, which starts a background
    // compaction; its output (the second table created from here) fails
    // after 200 ms, while `compact` waits for the compaction lock. (The
    // failure is counted when the stall begins.)
    fs.fail_targeted(Targeted {
        kind: OpKind::Create,
        file_kind: "sst",
        errno: EIO,
        skip: 1,
        stall: Duration::from_millis(200),
    });
    db.flush().unwrap();
    let t0 = Instant::now();
    while fs.failed().is_empty() {
        assert!(t0.elapsed() < RUN_TIMEOUT, "no background compaction");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_read_only(db.compact(), EIO);
    assert!(matches!(db.put("c", "3"), Err(Error::Background(_))));
}

/// An open that keeps the last WAL cuts its torn tail off and syncs the
/// cut before anything is appended. A failure of either step fails the
/// open with `Io`, and the next open still has every complete record.
#[test]
fn a_failed_cut_of_a_torn_wal_tail_fails_the_open_and_loses_nothing() {
    for (kind, what) in [(OpKind::Truncate, "the cut"), (OpKind::Sync, "its sync")] {
        let scratch = scratch_dir();
        let dir = scratch.path().join("db");
        let fs = FaultFs::new();
        {
            let db = Db::open_with(&dir, options(&fs, true, false)).unwrap();
            db.put("a", "1").unwrap();
            db.put("b", "2").unwrap();
        }
        let wal = common::only_file(&dir, |n| n.ends_with(".log"));
        let complete = std::fs::metadata(&wal).unwrap().len();
        // Half a record header: a write cut off by a crash.
        let mut f = std::fs::OpenOptions::new().append(true).open(&wal).unwrap();
        std::io::Write::write_all(&mut f, &[0x5a; 6]).unwrap();
        drop(f);
        let before = fs.ops().len();
        fs.fail_next(kind, "log", EIO);
        match Db::open_with(&dir, options(&fs, true, false)) {
            Err(Error::Io { context, .. }) => assert!(context.contains("log"), "{what}: {context}"),
            Err(e) => panic!("{what}: expected Io, got {e}"),
            Ok(_) => panic!("{what}: the open ignored the failure"),
        }
        assert!(
            fs.ops()[before..]
                .iter()
                .any(|o| o.kind == OpKind::Truncate),
            "{what}: the open never cut the tail"
        );
        fs.heal();
        let db = Db::open_with(&dir, options(&fs, true, false)).unwrap();
        assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"1"[..]), "{what}");
        assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"2"[..]), "{what}");
        db.put("c", "3").unwrap();
        drop(db);
        // The same WAL: its tail cut at the last complete record, then `c`.
        let db = Db::open_with(&dir, options(&fs, true, false)).unwrap();
        assert_eq!(db.recovery().wals.len(), 1);
        assert_eq!(db.recovery().wals[0].path, wal, "{what}");
        assert_eq!(db.recovery().dropped_bytes(), 0, "{what}");
        assert_eq!(db.recovery().entries(), 3, "{what}");
        assert!(std::fs::metadata(&wal).unwrap().len() > complete);
    }
}
