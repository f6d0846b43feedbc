//! Power loss with concurrent writers (campaign 6, RELIABILITY.md): three
//! threads write batches at once, each over a key space of its own, so
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
//! Two workloads ([`Mode`]): in the default keyspace only (puts, deletes
//! and, one batch in five, a range deletion), and across keyspaces, where
//! a batch spans two of the default, "a" and "b", or writes "a" or "b"
//! alone, and every writer's batches 1 and 3 also write "cold", which then
//! idles: its memtable pins the WALs of those batches until the
//! `max_total_wal_size` bound freezes it (the healthy run must see that
//! flush). Across keyspaces a writer's keys in every keyspace together
//! must be the model after a number of its batches: no batch in part of
//! the keyspaces it wrote.
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

use common::campaign::{self, apply, bounded, Shape, State, Update};
use common::power_fs::{write_image, PowerFs, Unsynced};
use common::{env_u64, scratch_dir, Rng};
use siftdb::{Db, Error, Keyspace, Options, Stats, WriteBatch, WriteOptions};

const WRITERS: u64 = 3;
/// Batches per writer.
const BATCHES: u64 = 24;
/// Keys per writer (in each keyspace).
const KEYS: u64 = 16;
const RUN_TIMEOUT: Duration = Duration::from_secs(30);

/// A batch: per keyspace it writes (an index into [`Mode::names`]), its
/// updates.
type Batch = Vec<(usize, Vec<Update>)>;

/// A writer's keys in every keyspace of its mode, in [`Mode::names`]' order.
type Model = Vec<State>;

/// What a sweep's writers write.
struct Mode {
    /// For messages.
    what: &'static str,
    /// The keyspaces, the default first; the others are created at open.
    names: &'static [&'static str],
    /// `batch(w, id)`: writer `w`'s batch `id`.
    batch: fn(u64, u64) -> Batch,
    /// The keyspace that goes cold: the healthy run must see it flushed
    /// before the final `flush` (by the `max_total_wal_size` bound).
    cold: Option<&'static str>,
    /// `Options::max_total_wal_size`, when not the default.
    wal_bound: Option<u64>,
}

static DEFAULT_ONLY: Mode = Mode {
    what: "default keyspace",
    names: &["default"],
    batch: default_batch,
    cold: None,
    wal_bound: None,
};

static ACROSS_KEYSPACES: Mode = Mode {
    what: "across keyspaces",
    names: &["default", "a", "b", "cold"],
    batch: keyspace_batch,
    cold: Some("cold"),
    // About four WALs (a rotation every 1 KiB memtable): "cold", which
    // holds a few hundred bytes, is frozen only by this bound.
    wal_bound: Some(4 << 10),
};

fn options(mode: &Mode, fs: Option<&PowerFs>, sync: bool) -> Options {
    let mut o = campaign::tiny_options(sync);
    if let Some(fs) = fs {
        o.file_system = fs.arc();
    }
    if let Some(bound) = mode.wal_bound {
        o.max_total_wal_size = bound;
    }
    o
}

fn key(w: u64, i: u64) -> Vec<u8> {
    format!("w{w}-key{i:02}").into_bytes()
}

fn key_space() -> impl Iterator<Item = Vec<u8>> + Clone {
    (0..WRITERS).flat_map(|w| (0..KEYS).map(move |i| key(w, i)))
}

/// Batch `id` of writer `w` in the default keyspace: 1 to 3 updates, the
/// last a put naming the batch (so every prefix of a writer's batches
/// gives a distinct state); one batch in five also holds a range deletion
/// inside the writer's own keys, before that put.
fn default_batch(w: u64, id: u64) -> Batch {
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
    vec![(0, ops)]
}

/// A piece of a batch across keyspaces, inside the writer's own keys.
const SHAPE: Shape = Shape {
    keys: KEYS,
    max_updates: 3,
    max_fill: 200,
    range_one_in: 5,
    unbounded: false,
};

/// Batches of every writer that write "cold" too; it idles after them.
const COLD_BATCHES: [u64; 2] = [1, 3];

/// Batch `id` of writer `w` across keyspaces: one in two spans two of the
/// default, "a" and "b", one in three writes "a" or "b" alone, the rest
/// the default alone; per keyspace 1 to 3 updates as
/// [`campaign::random_updates`] makes them (the last a put naming the
/// batch, one piece in five with a range deletion). Batches 1 and 3 also
/// put one short value in "cold".
fn keyspace_batch(w: u64, id: u64) -> Batch {
    let mut rng = Rng((w << 32 | id).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x6b73);
    let touched: &[usize] = match rng.below(6) {
        0 => &[0, 1],
        1 => &[1, 2],
        2 => &[0, 2],
        3 => &[1],
        4 => &[2],
        _ => &[0],
    };
    let names = ACROSS_KEYSPACES.names;
    let mut pieces: Batch = touched
        .iter()
        .map(|&ks| {
            let ops = campaign::random_updates(&mut rng, id, names[ks], &SHAPE, |i| key(w, i));
            (ks, ops)
        })
        .collect();
    if COLD_BATCHES.contains(&id) {
        let put = Update::Put(key(w, id), format!("cold:b{id}").into_bytes());
        pieces.push((names.len() - 1, vec![put]));
    }
    pieces
}

/// `models(mode)[w][k]`: writer `w`'s keys after its first `k` batches.
fn models(mode: &Mode) -> Vec<Vec<Model>> {
    (0..WRITERS)
        .map(|w| {
            let mut m = vec![State::new(); mode.names.len()];
            let mut out = vec![m.clone()];
            for id in 0..BATCHES {
                for (ks, ops) in (mode.batch)(w, id) {
                    apply(&mut m[ks], &ops);
                }
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

/// What a run got.
#[derive(Debug, Default, Clone)]
struct Run {
    acks: Vec<Acks>,
    /// Every keyspace of the mode exists (its creation returned).
    created: bool,
}

/// Opens, creates the keyspaces, runs the writers until each is done or
/// meets an error, flushes and closes; returns what the run got and the
/// database's stats once the writers are done, before the flush (sampled
/// once: `Db::stats` after every write slows the writers enough to change
/// how group commit groups them); `None` when the open or a creation
/// failed.
fn workload(
    mode: &'static Mode,
    dir: &Path,
    fs: &PowerFs,
    sync: bool,
) -> Result<(Run, Option<Stats>), String> {
    let mut run = Run {
        acks: vec![Acks::default(); WRITERS as usize],
        created: false,
    };
    let db = match Db::open_with(dir, options(mode, Some(fs), sync)) {
        Ok(db) => Arc::new(db),
        Err(Error::Io { .. }) => return Ok((run, None)),
        Err(e) => return Err(format!("open: unexpected error {e}")),
    };
    let ks: Vec<Keyspace> = match mode.names.iter().map(|n| db.keyspace(n)).collect() {
        Ok(ks) => ks,
        Err(Error::Io { .. } | Error::Background(_)) => return Ok((run, None)),
        Err(e) => return Err(format!("keyspace: unexpected error {e}")),
    };
    run.created = true;
    // Acknowledged batches of every writer, for the floor a `flush` sets.
    let acked: Vec<_> = (0..WRITERS).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (db, ks, acked) = (Arc::clone(&db), ks.clone(), acked.clone());
            std::thread::spawn(move || -> Result<Acks, String> {
                let mut a = Acks::default();
                for id in 0..BATCHES {
                    let per_write = !sync && synced_write(w, id);
                    let mut b = WriteBatch::new();
                    for (k, ops) in (mode.batch)(w, id) {
                        campaign::add_in(&mut b, &ks[k], &ops);
                    }
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
    for (w, t) in threads.into_iter().enumerate() {
        run.acks[w] = t.join().map_err(|_| "a writer panicked".to_string())??;
    }
    let stats = db.stats();
    // Everything acknowledged before a flush that returned survives.
    if db.flush().is_ok() {
        for a in &mut run.acks {
            a.floor = a.acked;
        }
    }
    drop(ks);
    drop(db);
    Ok((run, Some(stats)))
}

/// Reopens the image in `dir` and checks every writer's keys, in every
/// keyspace together, against its models; returns each writer's batch
/// count found.
fn check_image(
    mode: &Mode,
    dir: &Path,
    models: &[Vec<Model>],
    run: &Run,
    sync: bool,
) -> Result<Vec<u64>, String> {
    let db = Db::open_with(dir, options(mode, None, false))
        .map_err(|e| format!("reopen failed: {e}"))?;
    db.wait_for_compactions()
        .map_err(|e| format!("compaction after reopen: {e}"))?;
    let state = campaign::read_keyspaces(&db, mode.names, key_space())?;
    if run.created && state.iter().any(Option::is_none) {
        return Err(format!("a keyspace is missing: {:?}", db.keyspaces()));
    }
    let state: Vec<State> = state.into_iter().map(Option::unwrap_or_default).collect();
    let mut found = Vec::new();
    for (w, (models, &a)) in models.iter().zip(&run.acks).enumerate() {
        let mine: Model = state
            .iter()
            .map(|s| campaign::with_prefix(s, format!("w{w}-").as_bytes()))
            .collect();
        let Some(k) = models.iter().position(|m| *m == mine) else {
            let near = &models[a.acked as usize];
            let diffs: Vec<String> = (mode.names.iter().zip(near).zip(&mine))
                .filter(|((_, n), m)| n != m)
                .map(|((name, n), m)| format!("{name}: {:?}", campaign::diff(n, m)))
                .collect();
            return Err(format!(
                "writer {w}: its keys match no prefix of its batches (a hole, or part of a \
                 batch); {} acknowledged, differences: {diffs:?}",
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

/// Runs the writers once without a cut and checks what the workload is
/// meant to exercise; returns the number of file operations.
fn healthy_run(mode: &'static Mode, dir: &Path, sync: bool) -> u64 {
    let fs = PowerFs::new();
    let (run, stats) = workload(mode, dir, &fs, sync).unwrap();
    assert!(run.acks.iter().all(|a| a.acked == BATCHES), "{run:?}");
    let stats = stats.unwrap();
    let batches: Vec<Batch> = (0..WRITERS)
        .flat_map(|w| (0..BATCHES).map(move |id| (mode.batch)(w, id)))
        .collect();
    let count = |f: &dyn Fn(&Batch) -> bool| batches.iter().filter(|b| f(b)).count();
    let ranges = count(&|b| b.iter().any(|(_, ops)| campaign::range_deletes(ops) > 0));
    let spanning = count(&|b| b.len() > 1);
    let other_alone = count(&|b| b.len() == 1 && b[0].0 != 0);
    let live: u64 = stats.keyspaces.iter().map(|k| k.range_tombstones).sum();
    let flushes: Vec<String> = stats
        .keyspaces
        .iter()
        .map(|k| format!("{} {}", k.name, k.flushes))
        .collect();
    println!(
        "{}, sync={sync}: healthy run: {} batches, {ranges} with a range deletion, {spanning} \
         spanning keyspaces, {other_alone} in one other keyspace alone; {live} range \
         tombstones live after the last write; flushes before the final one: {flushes:?}",
        mode.what,
        batches.len()
    );
    assert!(ranges > 0, "no batch holds a range deletion");
    if mode.names.len() > 1 {
        assert!(spanning > 0 && other_alone > 0, "{spanning} {other_alone}");
    }
    if let Some(cold) = mode.cold {
        // Its memtable holds a few hundred bytes, a quarter of a write
        // buffer: only the WAL bound flushes it before the final flush.
        let cold = stats.keyspaces.iter().find(|k| k.name == cold).unwrap();
        assert!(cold.flushes > 0, "the WAL bound never froze {cold:?}");
    }
    fs.count()
}

fn sweep(mode: &'static Mode, sync: bool, random_images: u64, seed: u64) -> Vec<String> {
    let models = models(mode);
    let scratch = scratch_dir();
    let ops = healthy_run(mode, &scratch.path().join("count"), sync);
    let t0 = Instant::now();
    let (mut failures, mut images, mut lost) = (Vec::new(), 0u64, 0u64);
    for n in 0..ops {
        let base = scratch.path().join(format!("cut-{n}"));
        let dir = base.join("db");
        let fs = PowerFs::new();
        fs.cut_power_at(n);
        let (fs2, dir2) = (fs.clone(), dir.clone());
        let what = format!("{}, sync={sync}, cut at op {n}", mode.what);
        let run = match bounded(RUN_TIMEOUT, move || workload(mode, &dir2, &fs2, sync)) {
            Ok(Ok((run, _))) => run,
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
            let (d2, m2, r2) = (d.clone(), models.clone(), run.clone());
            match bounded(RUN_TIMEOUT, move || check_image(mode, &d2, &m2, &r2, sync)) {
                Ok(Ok(found)) => {
                    lost += run
                        .acks
                        .iter()
                        .zip(&found)
                        .map(|(a, k)| a.acked.saturating_sub(*k))
                        .sum::<u64>()
                }
                Ok(Err(e)) | Err(e) => failures.push(format!("{what}, image {i}, {run:?}: {e}")),
            }
        }
        let _ = std::fs::remove_dir_all(&base);
    }
    println!(
        "{}, sync={sync}: {ops} cuts, {images} images in {:.1?}; {lost} acknowledged batches \
         lost in all (allowed above the floor without sync); {} failures",
        mode.what,
        t0.elapsed(),
        failures.len()
    );
    failures
}

/// Both `sync` settings of `mode`'s sweep.
fn sweeps(mode: &'static Mode) {
    let long = env_u64("SIFTDB_POWER_LOSS_LONG", 0) != 0;
    let seed = env_u64("SIFTDB_POWER_LOSS_SEED", 0x90e2_c0de);
    let images = if long { 4 } else { 1 };
    let mut failed = Vec::new();
    for sync in [false, true] {
        let f = sweep(mode, sync, images, seed);
        if let Some(first) = f.first() {
            failed.push(format!("sync={sync}: {} failures, first: {first}", f.len()));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn power_cuts_with_concurrent_writers_keep_a_prefix_of_every_writer() {
    sweeps(&DEFAULT_ONLY);
}

#[test]
fn power_cuts_with_concurrent_writers_across_keyspaces_keep_every_batch_whole() {
    sweeps(&ACROSS_KEYSPACES);
}
