//! Process-crash campaign across keyspaces (RELIABILITY.md campaign 1): a
//! child process writes numbered batches that span the default keyspace,
//! "hot" (most batches), "cold" (one batch in 16, so its memtable spans
//! many WALs and pins the oldest) and "temp", which exists for the first
//! half of every period of [`PERIOD`] batches: the child creates it before
//! batch `PERIOD * j` and drops it before batch `PERIOD * j + PERIOD / 2`,
//! so every period re-creates it under the same name with a new id. The
//! parent kills the child with SIGKILL at a random moment, reopens and
//! checks.
//!
//! Protocol: this test binary re-executed as `--exact keyspace_crash_child`
//! with `SIFTDB_KS_CRASH_CHILD=<db dir>`, `SIFTDB_KS_CRASH_SEED` and
//! `SIFTDB_KS_CRASH_START=<first batch id>`; it prints `SIFTDB-KS-CRASH
//! ack <id>` after each `Db::write` returns. A batch's contents are a
//! function of (seed, id): in each keyspace it touches, 1 to 4 puts and
//! deletes over [`KEYS`] keys (one piece in 20 with a range deletion too,
//! some open-ended) and last a put whose value names the batch.
//!
//! Checks after every kill: the database opens; the contents of all four
//! keyspaces (scans both ways and a `get` of every key) equal, together,
//! the model after the first `n` batches, with `n` the acknowledged count
//! or one more: every acknowledged batch whole in every keyspace it
//! touched, the in-flight one all or nothing, each keyspace a prefix.
//! "temp" must be absent outside its windows and hold exactly its window's
//! batches inside one (nothing of an earlier incarnation); at a window's
//! edge, where the kill may land between the creation or drop and the
//! batch after it, it may be either. The directory holds only the live
//! files of the live keyspaces and one WAL.
//!
//! `SIFTDB_KS_CRASH_CYCLES` (default 15) sets the number of kills,
//! `SIFTDB_KS_CRASH_SEED` the seed.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::campaign::{self, apply, Shape, State, Update};
use common::{child_test_command, env_u64, scratch_dir, Rng};
use siftdb::{CompactionStyle, Db, Keyspace, Options, WriteBatch};

const CHILD_ENV: &str = "SIFTDB_KS_CRASH_CHILD";
const SEED_ENV: &str = "SIFTDB_KS_CRASH_SEED";
const START_ENV: &str = "SIFTDB_KS_CRASH_START";
const MARK: &str = "SIFTDB-KS-CRASH";
/// The keyspaces, by index; "temp" (index [`TEMP`]) comes and goes.
const NAMES: [&str; 4] = ["default", "hot", "cold", "temp"];
const TEMP: usize = 3;
/// "temp" lives for the first half of every period of this many batches.
const PERIOD: u64 = 300;
/// Keys per keyspace.
const KEYS: u64 = 200;

fn options() -> Options {
    let mut o = Options::default();
    o.write_buffer_size = 16 << 10;
    o.block_size = 1024;
    o.max_bytes_for_level_base = 32 << 10;
    o.level_size_multiplier = 2;
    o.target_file_size = 16 << 10;
    o.max_manifest_file_size = 4 << 10;
    // Small enough that "cold" is sometimes flushed because the WALs it
    // pins pass the bound, and sometimes by its own buffer.
    o.max_total_wal_size = 256 << 10;
    o
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

fn key_space() -> impl Iterator<Item = Vec<u8>> + Clone {
    (0..KEYS).map(key)
}

/// A batch's updates in one keyspace.
const SHAPE: Shape = Shape {
    keys: KEYS,
    max_updates: 4,
    max_fill: 80,
    range_one_in: 20,
    unbounded: true,
};

/// True when "temp" exists while batch `id` is written.
fn temp_live(id: u64) -> bool {
    id % PERIOD < PERIOD / 2
}

/// Batch `id`: per keyspace it touches (at least one), its updates.
fn batch_ops(seed: u64, id: u64) -> Vec<(usize, Vec<Update>)> {
    let mut rng = Rng(seed ^ id.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut pieces = Vec::new();
    for (ks, one_in) in [(0, 2), (1, 1), (2, 16), (TEMP, 3)] {
        // "hot" is in three batches in four.
        let draw = if ks == 1 {
            rng.below(4) != 0
        } else {
            rng.below(one_in) == 0
        };
        if !draw || (ks == TEMP && !temp_live(id)) {
            continue;
        }
        let ops = campaign::random_updates(&mut rng, id, NAMES[ks], &SHAPE, key);
        pieces.push((ks, ops));
    }
    if pieces.is_empty() {
        pieces.push((
            1,
            vec![Update::Put(key(id % KEYS), format!("hot:b{id}").into())],
        ));
    }
    pieces
}

/// The model: each keyspace's contents, `None` for one that does not exist.
type Model = Vec<Option<State>>;

/// Applies batch `id` to `model`, with "temp"'s creation or drop before it.
fn advance(model: &mut Model, seed: u64, id: u64) {
    if id.is_multiple_of(PERIOD) {
        model[TEMP] = Some(State::new());
    } else if id % PERIOD == PERIOD / 2 {
        model[TEMP] = None;
    }
    for (ks, ops) in batch_ops(seed, id) {
        apply(model[ks].get_or_insert_with(State::new), &ops);
    }
}

/// True when `found` is `model` after `n` batches, but for "temp" at a
/// window's edge: before batch `n` the child creates or drops it, and the
/// kill may land between that and the batch.
fn matches(found: &Model, model: &Model, n: u64) -> bool {
    let empty = |m: &Option<State>| m.as_ref().is_none_or(State::is_empty);
    let fixed = found[..TEMP].iter().zip(&model[..TEMP]).all(|(f, m)| {
        // "hot" and "cold" are created when the first child opens, so are
        // absent only while nothing was written.
        f == m || (f.is_none() && n == 0 && empty(m))
    });
    let temp = found[TEMP] == model[TEMP]
        || (n.is_multiple_of(PERIOD) && found[TEMP] == Some(State::new()))
        || (n % PERIOD == PERIOD / 2 && found[TEMP].is_none());
    fixed && temp
}

fn drop_temp_if_there(db: &Db) {
    if db.keyspaces().iter().any(|n| n == NAMES[TEMP]) {
        db.drop_keyspace(NAMES[TEMP]).expect("child: drop temp");
    }
}

/// The child: writes batches from `SIFTDB_KS_CRASH_START` on until killed;
/// does nothing in a normal test run.
#[test]
fn keyspace_crash_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let seed = env_u64(SEED_ENV, 0);
    let start = env_u64(START_ENV, 0);
    let db = Db::open_with(&dir, options()).expect("child: open");
    let ks: Vec<Keyspace> = NAMES[..TEMP]
        .iter()
        .map(|n| db.keyspace(n).expect("child: keyspace"))
        .collect();
    let mut temp = None;
    if temp_live(start) {
        temp = Some(db.keyspace(NAMES[TEMP]).expect("child: temp"));
    } else {
        drop_temp_if_there(&db);
    }
    let mut out = std::io::stdout();
    let deadline = Instant::now() + Duration::from_secs(60);
    for id in start.. {
        if id.is_multiple_of(PERIOD) {
            temp = Some(db.keyspace(NAMES[TEMP]).expect("child: create temp"));
        } else if id % PERIOD == PERIOD / 2 {
            temp = None;
            drop_temp_if_there(&db);
        }
        let mut batch = WriteBatch::new();
        for (k, ops) in batch_ops(seed, id) {
            let target = if k == TEMP {
                temp.as_ref().unwrap()
            } else {
                &ks[k]
            };
            campaign::add_in(&mut batch, target, &ops);
        }
        db.write(batch).expect("child: write");
        if writeln!(out, "{MARK} ack {id}")
            .and_then(|_| out.flush())
            .is_err()
            || Instant::now() > deadline
        {
            std::process::exit(3);
        }
    }
}

#[test]
fn keyspace_crash_campaign() {
    let cycles = env_u64("SIFTDB_KS_CRASH_CYCLES", 15);
    let seed = env_u64(SEED_ENV, 0x6b73_c4a5);
    println!("keyspace crash campaign: {cycles} cycles, {SEED_ENV}={seed}");
    let scratch = scratch_dir();
    let dir = scratch.path().join("db");
    let mut rng = Rng(seed.rotate_left(23));
    let mut model: Model = vec![None; NAMES.len()];
    let mut applied = 0u64;
    let (mut acked_total, mut in_flight_applied, mut in_flight_absent) = (0, 0, 0);
    let started = Instant::now();
    for cycle in 0..cycles {
        let start = applied;
        let mut child = child_test_command("keyspace_crash_child")
            .env(CHILD_ENV, &dir)
            .env(SEED_ENV, seed.to_string())
            .env(START_ENV, start.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // The first line follows libtest's "test ... " unbroken.
                let id = line
                    .find(MARK)
                    .and_then(|at| line[at..].strip_prefix(&format!("{MARK} ack ")))
                    .and_then(|s| s.trim().parse::<u64>().ok());
                if let Some(id) = id {
                    if tx.send(id).is_err() {
                        break;
                    }
                }
            }
        });
        // One cycle in eight kills within 10 ms, often inside the open.
        let delay = Duration::from_millis(if rng.below(8) == 0 {
            1 + rng.below(10)
        } else {
            20 + rng.below(280)
        });
        std::thread::sleep(delay);
        child.kill().unwrap();
        let status = child.wait().unwrap();
        reader.join().unwrap();
        {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(status.signal(), Some(9), "cycle {cycle}: child {status}");
        }
        let acked: Vec<u64> = rx.try_iter().collect();
        for (i, id) in acked.iter().enumerate() {
            assert_eq!(*id, start + i as u64, "cycle {cycle}: acks out of order");
        }
        acked_total += acked.len() as u64;
        for id in start..start + acked.len() as u64 {
            advance(&mut model, seed, id);
        }
        let n = start + acked.len() as u64;
        let mut with_in_flight = model.clone();
        advance(&mut with_in_flight, seed, n);

        let mut opts = options();
        opts.compaction_style = CompactionStyle::None;
        let db = Db::open_with(&dir, opts)
            .unwrap_or_else(|e| panic!("cycle {cycle}: open after kill: {e}; {SEED_ENV}={seed}"));
        campaign::check_directory(&db, &dir)
            .unwrap_or_else(|e| panic!("cycle {cycle}: {e}; {SEED_ENV}={seed}"));
        let found = campaign::read_keyspaces(&db, &NAMES, key_space())
            .unwrap_or_else(|e| panic!("cycle {cycle}: {e}; {SEED_ENV}={seed}"));
        if matches(&found, &model, n) {
            in_flight_absent += 1;
            applied = n;
        } else if matches(&found, &with_in_flight, n + 1) {
            in_flight_applied += 1;
            model = with_in_flight;
            applied = n + 1;
        } else {
            let diffs: Vec<String> = (0..NAMES.len())
                .filter(|&k| found[k] != model[k])
                .map(|k| {
                    let (m, f) = (model[k].clone(), found[k].clone());
                    format!(
                        "{}: model {}, found {}: {:?}",
                        NAMES[k],
                        m.as_ref()
                            .map_or("absent".into(), |m| format!("{} keys", m.len())),
                        f.as_ref()
                            .map_or("absent".into(), |f| format!("{} keys", f.len())),
                        campaign::diff(&m.unwrap_or_default(), &f.unwrap_or_default())
                    )
                })
                .collect();
            panic!(
                "cycle {cycle}: batches {start}..{n} acknowledged; the keyspaces match \
                 neither the model through batch {} nor through {n}: {diffs:#?}; \
                 {SEED_ENV}={seed}",
                n as i64 - 1
            );
        }
        db.close().unwrap();
    }
    let periods = applied / PERIOD;
    println!(
        "keyspace crash campaign: {cycles} kills in {:.1} s; {applied} batches applied \
         ({acked_total} acknowledged, none lost); in-flight batch applied {in_flight_applied} \
         times, absent {in_flight_absent}; \"temp\" created {} times and dropped {} times",
        started.elapsed().as_secs_f64(),
        periods + u64::from(!applied.is_multiple_of(PERIOD)),
        periods + u64::from(applied % PERIOD > PERIOD / 2),
    );
    assert!(applied > 2 * PERIOD, "only {applied} batches written");

    // Compacting every keyspace changes no contents.
    let db = Db::open_with(&dir, options()).unwrap();
    for name in db.keyspaces() {
        db.existing_keyspace(&name).unwrap().compact().unwrap();
    }
    let found = campaign::read_keyspaces(&db, &NAMES, key_space()).unwrap();
    assert!(
        matches(&found, &model, applied),
        "contents changed by compaction"
    );
}
