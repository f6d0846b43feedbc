//! Campaigns 5 and 6 across keyspaces (RELIABILITY.md): one workload writes
//! batches spanning the default keyspace, "hot" (most batches, flushed on
//! its own) and "cold" (batches 2 and 20 only, so its memtable pins the
//! first WAL while "hot" and the default rotate and flush past it: the WAL
//! retention rule, the flush edits' log numbers and the empty-keyspace bump
//! all act), with a close and reopen halfway (recovery replays each
//! keyspace from its own log number) and a flush of every keyspace near the
//! end.
//!
//! `power_cut_sweep_across_keyspaces` cuts the power (`PowerFs`) at every
//! file operation, for `sync = false` and `sync = true`; each cut gives a
//! drop-unsynced image (in a copy) and a random one. `io_fault_sweep_across_
//! keyspaces` fails every operation with `EIO` once, and with a torn `ENOSPC`
//! for every later operation (or every later one of its kind, alternately).
//! Reopened on a healthy disk, every database must open and hold, in all
//! three keyspaces together, exactly the model after the first `k` batches:
//! no batch in part of its keyspaces, no keyspace ahead of another; `k` the
//! acknowledged count or one more (I/O faults, and power cuts with
//! `sync = true`), or at least the count before the last successful flush
//! or close (power cuts with `sync = false`). The directory holds only the
//! live tables of every keyspace and one WAL.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::campaign::{self, apply, Shape, State, Update};
use common::fault_fs::{Fault, FaultFs, Persist, EIO, ENOSPC};
use common::power_fs::{write_image, PowerFs, Unsynced};
use common::{env_u64, scratch_dir, Rng};
use siftdb::fs::{FileSystem, StdFs};
use siftdb::{Db, Keyspace, Options, WriteBatch};

const NAMES: [&str; 3] = ["default", "hot", "cold"];
const BATCHES: u64 = 36;
const KEYS: u64 = 24;
/// Batches that write "cold".
const COLD: [u64; 2] = [2, 20];
const RUN_TIMEOUT: Duration = Duration::from_secs(30);

fn options(fs: Arc<dyn FileSystem>, sync: bool) -> Options {
    let mut o = campaign::tiny_options(sync);
    o.file_system = fs;
    o
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:03}").into_bytes()
}

/// A batch's updates in one keyspace.
const SHAPE: Shape = Shape {
    keys: KEYS,
    max_updates: 3,
    max_fill: 60,
    range_one_in: 6,
    unbounded: true,
};

/// Batch `id`: per keyspace it touches, 1 to 3 puts and deletes and last a
/// put naming the batch; one piece in six with a range deletion too.
fn batch(id: u64) -> Vec<(usize, Vec<Update>)> {
    let mut rng = Rng(0x6b73_fa17 ^ id.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut pieces = Vec::new();
    for (ks, name) in NAMES.iter().enumerate() {
        let take = match ks {
            0 => rng.below(2) == 0,
            1 => rng.below(5) != 0,
            _ => COLD.contains(&id),
        };
        // "hot" takes a batch no keyspace before it took.
        if !(take || ks == 1 && pieces.is_empty()) {
            continue;
        }
        let ops = campaign::random_updates(&mut rng, id, name, &SHAPE, key);
        pieces.push((ks, ops));
    }
    pieces
}

/// `models()[k]`: every keyspace's contents after the first `k` batches.
fn models() -> Vec<Vec<State>> {
    let mut m = vec![vec![State::new(); NAMES.len()]];
    for id in 0..BATCHES {
        let mut next = m.last().unwrap().clone();
        for (ks, ops) in batch(id) {
            apply(&mut next[ks], &ops);
        }
        m.push(next);
    }
    m
}

/// What a run acknowledged.
#[derive(Debug, Default, Clone)]
struct Run {
    /// "hot" and "cold" exist (their creation returned).
    created: bool,
    acked: u64,
    /// Batches acknowledged before the last `Db::flush` or `close` that
    /// returned `Ok`.
    floor: u64,
    /// The first error, if any.
    error: Option<String>,
    /// Most WALs in the directory after a batch ("cold" pins the first).
    max_wals: usize,
}

/// Opens `dir` through `fs`, creates "hot" and "cold", writes the batches
/// (with `settle`, waiting for the background after each, so that the
/// operations repeat from run to run; without, racing flushes, compactions
/// and the background's syncs of closed WALs), flushes "hot" alone after batch 10, closes and
/// reopens after batch 18, flushes everything after batch 28, closes.
/// Stops at the first error.
fn workload(dir: &Path, fs: Arc<dyn FileSystem>, sync: bool, settle: bool) -> Run {
    let mut run = Run::default();
    let r = (|| -> siftdb::Result<()> {
        let mut db = Db::open_with(dir, options(Arc::clone(&fs), sync))?;
        let mut ks: Vec<Keyspace> = NAMES
            .iter()
            .map(|n| db.keyspace(n))
            .collect::<siftdb::Result<_>>()?;
        run.created = true;
        for id in 0..BATCHES {
            let mut b = WriteBatch::new();
            for (k, ops) in batch(id) {
                campaign::add_in(&mut b, &ks[k], &ops);
            }
            db.write(b)?;
            run.acked = id + 1;
            if settle {
                db.wait_for_compactions()?;
            }
            let wals = common::file_names(dir)
                .iter()
                .filter(|n| n.ends_with(".log"))
                .count();
            run.max_wals = run.max_wals.max(wals);
            match id {
                10 => ks[1].flush()?,
                18 => {
                    drop(ks);
                    db.close()?;
                    run.floor = run.acked;
                    db = Db::open_with(dir, options(Arc::clone(&fs), sync))?;
                    ks = NAMES
                        .iter()
                        .map(|n| db.existing_keyspace(n))
                        .collect::<siftdb::Result<_>>()?;
                }
                28 => {
                    db.flush()?;
                    run.floor = run.acked;
                }
                _ => {}
            }
        }
        drop(ks);
        db.close()?;
        run.floor = run.acked;
        Ok(())
    })();
    run.error = r.err().map(|e| e.to_string());
    run
}

/// Opens `dir` on a healthy disk and finds the `k` in `allowed` whose
/// model every keyspace matches.
fn check(
    dir: &Path,
    models: &[Vec<State>],
    run: &Run,
    allowed: std::ops::RangeInclusive<u64>,
) -> Result<u64, String> {
    let db = Db::open_with(dir, options(Arc::new(StdFs), false))
        .map_err(|e| format!("open failed: {e}"))?;
    campaign::check_directory(&db, dir)?;
    let found = campaign::read_keyspaces(&db, &NAMES, (0..KEYS).map(key))?;
    if run.created && found.iter().any(Option::is_none) {
        return Err(format!("a keyspace is missing: {:?}", db.keyspaces()));
    }
    let found: Vec<State> = found.into_iter().map(Option::unwrap_or_default).collect();
    let k = (0..=BATCHES)
        .rev()
        .find(|&k| models[k as usize] == found)
        .ok_or_else(|| {
            let near = &models[run.acked as usize];
            let diffs: Vec<String> = (0..NAMES.len())
                .filter(|&i| near[i] != found[i])
                .map(|i| format!("{}: {:?}", NAMES[i], campaign::diff(&near[i], &found[i])))
                .collect();
            format!(
                "the keyspaces together match the model after no number of batches \
                 (a batch in part of its keyspaces, or one keyspace ahead of \
                 another); against batch {}: {diffs:?}",
                run.acked
            )
        })?;
    if !allowed.contains(&k) {
        return Err(format!("holds {k} batches, allowed {allowed:?}"));
    }
    db.close().map_err(|e| format!("close: {e}"))?;
    Ok(k)
}

fn fail_report(failures: &[String], runs: usize) {
    assert!(
        failures.is_empty(),
        "{} of {runs} runs failed:\n{}",
        failures.len(),
        failures
            .iter()
            .take(12)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn power_cut_sweep_across_keyspaces() {
    power_cut_sweep(&[(false, true), (true, true)]);
}

/// Writes race with the background, which syncs the WALs rotations close:
/// a cut may then land between a flush edit and that sync, which the edit
/// must not have waited on (`sync = false` only: with `sync = true` every
/// write is synced).
#[test]
fn power_cut_sweep_across_keyspaces_racing() {
    power_cut_sweep(&[(false, false)]);
}

/// Runs the power-cut sweep for each `(sync, settle)`.
fn power_cut_sweep(settings: &[(bool, bool)]) {
    let models = models();
    let scratch = scratch_dir();
    let mut rng = Rng(env_u64("SIFTDB_POWER_LOSS_SEED", 0x6b73));
    // CI size: one image per cut, drop-unsynced and random alternately.
    let long = std::env::var_os("SIFTDB_POWER_LOSS_LONG").is_some();
    let mut failures = Vec::new();
    let (mut images, mut lost) = (0, 0);
    for &(sync, settle) in settings {
        let total = {
            let dir = scratch.path().join(format!("count-{sync}"));
            let fs = PowerFs::new();
            let run = workload(&dir, fs.arc(), sync, settle);
            assert!(run.error.is_none(), "healthy run: {run:?}");
            // "cold" kept its first WAL alive while "hot" rotated past it.
            assert!(run.max_wals >= 3, "healthy run: {run:?}");
            fs.count()
        };
        for cut in 0..=total {
            let dir = scratch.path().join(format!("cut-{sync}-{cut}"));
            let fs = PowerFs::new();
            fs.cut_power_at(cut);
            let run = {
                let (dir, fs) = (dir.clone(), fs.arc());
                campaign::bounded(RUN_TIMEOUT, move || workload(&dir, fs, sync, settle))
            };
            let run = match run {
                Ok(run) => run,
                Err(e) => {
                    failures.push(format!("sync={sync} cut {cut}: the run {e}"));
                    continue;
                }
            };
            let allowed = if sync {
                run.acked..=run.acked + 1
            } else {
                run.floor..=run.acked + 1
            };
            let copy = scratch.path().join(format!("cut-{sync}-{cut}-drop"));
            let (image, _) = fs.image(&dir, Unsynced::Drop);
            write_image(&image, &copy);
            fs.crash_image(&mut rng);
            let kinds = [("drop-unsynced", &copy), ("random", &dir)];
            let kinds = if long {
                &kinds[..]
            } else {
                &kinds[(cut % 2) as usize..][..1]
            };
            for &(what, d) in kinds {
                images += 1;
                match check(d, &models, &run, allowed.clone()) {
                    Ok(k) => lost += run.acked.saturating_sub(k),
                    Err(e) => failures.push(format!(
                        "sync={sync} cut {cut} of {total} ({what} image, {} acknowledged, \
                         floor {}): {e}",
                        run.acked, run.floor
                    )),
                }
            }
            let _ = std::fs::remove_dir_all(&dir);
            let _ = std::fs::remove_dir_all(&copy);
        }
        println!("sync={sync} settle={settle}: {} cut points", total + 1);
    }
    println!("{images} images, {lost} acknowledged batches lost in all (sync = false only)");
    fail_report(&failures, images);
}

#[test]
fn io_fault_sweep_across_keyspaces() {
    let models = models();
    let scratch = scratch_dir();
    let mut failures = Vec::new();
    let (mut runs, mut surfaced) = (0, 0);
    // CI size: the torn ENOSPC at every second operation only.
    let dense = std::env::var_os("SIFTDB_IO_FAULT_DENSE").is_some();
    for sync in [false, true] {
        let total = {
            let dir = scratch.path().join(format!("count-{sync}"));
            let fs = FaultFs::new();
            let run = workload(&dir, fs.arc(), sync, true);
            assert!(run.error.is_none(), "healthy run: {run:?}");
            fs.count()
        };
        for at in 0..total {
            let modes = [
                (EIO, Persist::Once),
                (
                    ENOSPC,
                    if at % 4 == 0 {
                        Persist::All
                    } else {
                        Persist::SameKind
                    },
                ),
            ];
            let modes = if dense || at % 2 == 0 {
                &modes[..]
            } else {
                &modes[..1]
            };
            for &(errno, persist) in modes {
                runs += 1;
                let dir = scratch.path().join(format!("at-{sync}-{at}-{errno}"));
                let fs = FaultFs::with_fault(Fault {
                    at,
                    errno,
                    persist,
                    torn_write: errno == ENOSPC,
                });
                let run = {
                    let (dir, fs) = (dir.clone(), fs.arc());
                    campaign::bounded(RUN_TIMEOUT, move || workload(&dir, fs, sync, true))
                };
                let what = format!("sync={sync} op {at} of {total} errno {errno} {persist:?}");
                let run = match run {
                    Ok(run) => run,
                    Err(e) => {
                        failures.push(format!("{what}: the run {e}"));
                        continue;
                    }
                };
                surfaced += u32::from(run.error.is_some());
                if let Some(e) = &run.error {
                    if !e.contains("I/O") && !e.contains("background") && !e.contains("os error") {
                        failures.push(format!("{what}: unexpected error {e}"));
                    }
                }
                if let Err(e) = check(&dir, &models, &run, run.acked..=run.acked + 1) {
                    failures.push(format!("{what} ({} acknowledged): {e}", run.acked));
                }
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
        println!("sync={sync}: {total} operations");
    }
    println!("{runs} runs, {surfaced} surfaced the fault");
    fail_report(&failures, runs);
}
