//! Power loss with concurrent writers (campaign 6, RELIABILITY.md): three
//! threads write batches at once (puts, deletes and, one in five, a range
//! deletion), each over a key space of its own, so
//! that group commit forms groups (mixed sync and plain writes when
//! `sync = false`, some of them synced per write) while the background
//! flushes, syncs closed WALs and compacts. The power is cut at every file
//! operation of the run in turn; every image a disk may be left with
//! (`tests/common/power_fs.rs`) must reopen, and per writer hold a prefix of
//! its batches, each whole: with `sync = true` every batch it had
//! acknowledged (and maybe the one in flight), with `sync = false` every
//! batch up to its last write synced per write, or acknowledged before a
//! `persist` or `flush` that returned.
//!
//! The operations differ from run to run (threads race), so a cut point is
//! a number, not a given operation; a cut past the end of a run is checked
//! as a run without a cut. `SIFTDB_POWER_LOSS_LONG=1` keeps 4 random images
//! per cut instead of 1.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::campaign::{self, apply, bounded, write_batch, State, Update};
use common::power_fs::{write_image, PowerFs, Unsynced};
use common::{env_u64, scratch_dir, Rng};
use siftdb::{Db, Error, Options, WriteOptions};

const WRITERS: u64 = 3;
/// Batches per writer.
const BATCHES: u64 = 24;
/// Keys per writer.
const KEYS: u64 = 16;
const RUN_TIMEOUT: Duration = Duration::from_secs(30);

fn options(fs: Option<&PowerFs>, sync: bool) -> Options {
    let mut o = campaign::tiny_options(sync);
    if let Some(fs) = fs {
        o.file_system = fs.arc();
    }
    o
}

fn key(w: u64, i: u64) -> Vec<u8> {
    format!("w{w}-key{i:02}").into_bytes()
}

fn key_space() -> impl Iterator<Item = Vec<u8>> {
    (0..WRITERS).flat_map(|w| (0..KEYS).map(move |i| key(w, i)))
}

/// Batch `id` of writer `w`: 1 to 3 updates, the last a put naming the
/// batch (so every prefix of a writer's batches gives a distinct state);
/// one batch in five also holds a range deletion inside the writer's own
/// keys, before that put.
fn batch(w: u64, id: u64) -> Vec<Update> {
    let mut rng = Rng((w << 32 | id).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x51ed);
    let n = 1 + rng.below(3);
    let mut ops: Vec<Update> = (0..n)
        .map(|i| {
            let k = key(w, rng.below(KEYS));
            if i + 1 < n && rng.below(4) == 0 {
                Update::Delete(k)
            } else {
                let mut v = format!("w{w}b{id}.{i}.").into_bytes();
                v.resize(v.len() + rng.below(300) as usize, b'x');
                Update::Put(k, v)
            }
        })
        .collect();
    let ranges = Rng((w << 32 | id).wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0x7a9e);
    campaign::mix_in_range_delete(&mut ops, ranges, 5, KEYS, |i| key(w, i), false);
    ops
}

/// `models()[w][k]`: writer `w`'s keys after its first `k` batches.
fn models() -> Vec<Vec<State>> {
    (0..WRITERS)
        .map(|w| {
            let mut m = State::new();
            let mut out = vec![m.clone()];
            for id in 0..BATCHES {
                apply(&mut m, &batch(w, id));
                out.push(m.clone());
            }
            out
        })
        .collect()
}

/// Without `sync`, writer `w` syncs its batch `id` per write when this
/// holds, and calls `persist` after it when `id % 8 == 7`.
fn synced_write(w: u64, id: u64) -> bool {
    (id + w).is_multiple_of(5)
}

/// What one writer got: batches acknowledged, and the floor (batches that
/// must survive a power cut).
#[derive(Debug, Default, Clone, Copy)]
struct Acks {
    acked: u64,
    floor: u64,
}

/// Opens, runs the writers until each is done or meets an error, flushes
/// and closes; returns each writer's acknowledgements and the range
/// tombstones live once the writers are done (sampled once: `Db::stats`
/// after every write slows the writers enough to change how group commit
/// groups them).
fn workload(dir: &Path, fs: &PowerFs, sync: bool) -> Result<(Vec<Acks>, u64), String> {
    let db = match Db::open_with(dir, options(Some(fs), sync)) {
        Ok(db) => Arc::new(db),
        Err(Error::Io { .. }) => return Ok((vec![Acks::default(); WRITERS as usize], 0)),
        Err(e) => return Err(format!("open: unexpected error {e}")),
    };
    // Acknowledged batches of every writer, for the floor a `flush` sets.
    let acked: Vec<_> = (0..WRITERS).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (db, acked) = (Arc::clone(&db), acked.clone());
            std::thread::spawn(move || -> Result<Acks, String> {
                let mut a = Acks::default();
                for id in 0..BATCHES {
                    let per_write = !sync && synced_write(w, id);
                    let b = write_batch(&batch(w, id));
                    let r = db.write_with(
                        b,
                        &WriteOptions {
                            sync: sync || per_write,
                        },
                    );
                    let r = r.and_then(|()| {
                        a.acked += 1;
                        acked[w as usize].store(a.acked, Ordering::SeqCst);
                        if sync || per_write {
                            a.floor = a.acked;
                        }
                        if !sync && id % 8 == 7 {
                            db.persist()?;
                            a.floor = a.acked;
                        }
                        Ok(())
                    });
                    match r {
                        Ok(()) => {}
                        Err(Error::Io { .. } | Error::Background(_)) => break,
                        Err(e) => return Err(format!("writer {w}: unexpected error {e}")),
                    }
                }
                Ok(a)
            })
        })
        .collect();
    let mut acks = Vec::new();
    for t in threads {
        acks.push(t.join().map_err(|_| "a writer panicked".to_string())??);
    }
    let live = db.stats().range_tombstones;
    // Everything acknowledged before a flush that returned survives.
    if db.flush().is_ok() {
        for a in &mut acks {
            a.floor = a.acked;
        }
    }
    drop(db);
    Ok((acks, live))
}

/// Reopens the image in `dir` and checks every writer's keys against its
/// models; returns each writer's batch count found.
fn check_image(
    dir: &Path,
    models: &[Vec<State>],
    acks: &[Acks],
    sync: bool,
) -> Result<Vec<u64>, String> {
    let db = Db::open_with(dir, options(None, false)).map_err(|e| format!("reopen failed: {e}"))?;
    db.wait_for_compactions()
        .map_err(|e| format!("compaction after reopen: {e}"))?;
    let state = campaign::read_state(&db, key_space())?;
    let mut found = Vec::new();
    for w in 0..WRITERS as usize {
        let mine = campaign::with_prefix(&state, format!("w{w}-").as_bytes());
        let a = acks[w];
        let Some(k) = models[w].iter().position(|m| *m == mine) else {
            let diff = campaign::diff(&models[w][a.acked as usize], &mine);
            return Err(format!(
                "writer {w}: its keys match no prefix of its batches (a hole, or part of a \
                 batch); {} acknowledged, differences: {diff:?}",
                a.acked
            ));
        };
        let k = k as u64;
        let low = if sync { a.acked } else { a.floor };
        if k < low || k > a.acked + 1 {
            return Err(format!(
                "writer {w}: holds its first {k} batches; {} acknowledged, floor {}",
                a.acked, a.floor
            ));
        }
        found.push(k);
    }
    campaign::check_directory(&db, dir)?;
    db.put("zz-after", "fine")
        .map_err(|e| format!("put after reopen: {e}"))?;
    db.close().map_err(|e| format!("close after reopen: {e}"))?;
    Ok(found)
}

fn sweep(sync: bool, random_images: u64, seed: u64) -> Vec<String> {
    let models = models();
    let scratch = scratch_dir();
    let count_dir = scratch.path().join("count");
    let fs = PowerFs::new();
    let (acks, live) = workload(&count_dir, &fs, sync).unwrap();
    assert!(acks.iter().all(|a| a.acked == BATCHES), "{acks:?}");
    let range_batches = (0..WRITERS)
        .flat_map(|w| (0..BATCHES).map(move |id| batch(w, id)))
        .filter(|b| campaign::range_deletes(b) > 0)
        .count();
    println!(
        "concurrent writers, sync={sync}: healthy run: {range_batches} batches with a range \
         deletion, {live} range tombstones live after the last write"
    );
    assert!(range_batches > 0, "no batch holds a range deletion");
    let ops = fs.count();
    let t0 = Instant::now();
    let (mut failures, mut images, mut lost) = (Vec::new(), 0u64, 0u64);
    for n in 0..ops {
        let base = scratch.path().join(format!("cut-{n}"));
        let dir = base.join("db");
        let fs = PowerFs::new();
        fs.cut_power_at(n);
        let (fs2, dir2) = (fs.clone(), dir.clone());
        let what = format!("sync={sync}, cut at op {n}");
        let acks = match bounded(RUN_TIMEOUT, move || workload(&dir2, &fs2, sync)) {
            Ok(Ok((a, _))) => a,
            Ok(Err(e)) | Err(e) => {
                failures.push(format!("{what}: workload {e}"));
                continue;
            }
        };
        let mut rng = Rng(seed ^ n.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ u64::from(sync));
        for i in 0..=random_images {
            let (image, _) = if i == 0 {
                fs.image(&dir, Unsynced::Drop)
            } else {
                fs.image(&dir, Unsynced::Random(&mut rng))
            };
            let d = base.join(format!("img{i}"));
            write_image(&image, &d);
            images += 1;
            let (d2, m2, a2) = (d.clone(), models.clone(), acks.clone());
            match bounded(RUN_TIMEOUT, move || check_image(&d2, &m2, &a2, sync)) {
                Ok(Ok(found)) => {
                    lost += acks
                        .iter()
                        .zip(&found)
                        .map(|(a, k)| a.acked.saturating_sub(*k))
                        .sum::<u64>()
                }
                Ok(Err(e)) | Err(e) => failures.push(format!("{what}, image {i}, {acks:?}: {e}")),
            }
        }
        let _ = std::fs::remove_dir_all(&base);
    }
    println!(
        "concurrent writers, sync={sync}: {ops} cuts, {images} images in {:.1?}; {lost} \
         acknowledged batches lost in all (allowed above the floor without sync); {} failures",
        t0.elapsed(),
        failures.len()
    );
    failures
}

#[test]
fn power_cuts_with_concurrent_writers_keep_a_prefix_of_every_writer() {
    let long = env_u64("SIFTDB_POWER_LOSS_LONG", 0) != 0;
    let seed = env_u64("SIFTDB_POWER_LOSS_SEED", 0x90e2_c0de);
    let images = if long { 4 } else { 1 };
    let mut failed = Vec::new();
    for sync in [false, true] {
        let f = sweep(sync, images, seed);
        if let Some(first) = f.first() {
            failed.push(format!("sync={sync}: {} failures, first: {first}", f.len()));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
