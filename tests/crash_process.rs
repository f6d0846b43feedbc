//! Process-crash campaign: a child process writes numbered batches from
//! several threads at once (so group commit forms groups), with default
//! durability (`sync = false`) while flushes and compactions run
//! constantly; the parent kills it with SIGKILL at a random moment, reopens
//! the database and checks it against a model.
//!
//! Protocol. The child is this test binary re-executed as
//! `--exact crash_child` with `SIFTDB_CRASH_CHILD=<db dir>`,
//! `SIFTDB_CRASH_SEED` and `SIFTDB_CRASH_START=<first batch id of writer
//! 0>,<of writer 1>,...`. It opens the database, prints `SIFTDB-CRASH
//! opened`, then runs one thread per writer; writer `w` writes its batches
//! `start_w`, `start_w + 1`, ... forever, over a key space of its own, and
//! after each `Db::write` returns prints `SIFTDB-CRASH ack <w> <id>
//! <flushes> <compactions>` and flushes stdout. The contents of batch `id`
//! of writer `w` are a pure function of `(seed, w, id)`, so the parent
//! rebuilds them. After the kill the parent drains the pipe, so it knows
//! every acknowledged id of every writer; for writer `w`, `A_w` is the last
//! one and `A_w + 1` the only batch of `w` that may have been in flight.
//!
//! Checks after every kill: the database opens; for every writer, its
//! contents over that writer's keys (full scan and a `get` of every key of
//! the key space) equal exactly the writer's model after batches `..=A_w`
//! or after `..=A_w+1` (every acknowledged batch of every thread applied,
//! each in-flight one all or nothing, nothing else); and the directory
//! holds only `CURRENT`, `LOCK`, the manifest `CURRENT` names, one WAL and
//! the live SSTables (no `.tmp`, no orphan). The next child goes on in the
//! same directory from each writer's first batch not applied.
//!
//! Odd cycles' children (and their checks) run with LZ4 on every level,
//! even ones without compression (`SIFTDB_CRASH_LZ4=1` tells the child),
//! so the database holds tables of both codecs and compactions read one
//! and write the other while kills land; the final manual compaction runs
//! with LZ4 and must leave only LZ4 tables.
//!
//! `SIFTDB_CRASH_CYCLES` (default 30) sets the number of kills;
//! `SIFTDB_CRASH_SEED` the seed (printed, so a failure can be replayed).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::campaign::{self, apply, check_directory, write_batch, State, Update};
use common::{child_test_command, env_u64, scratch_dir, Rng};
use siftdb::{CompactionStyle, Db, Options};

const CHILD_ENV: &str = "SIFTDB_CRASH_CHILD";
const SEED_ENV: &str = "SIFTDB_CRASH_SEED";
const START_ENV: &str = "SIFTDB_CRASH_START";
/// Set to `1` for a child that runs with LZ4 on every level.
const LZ4_ENV: &str = "SIFTDB_CRASH_LZ4";
const MARK: &str = "SIFTDB-CRASH";
/// Distinct user keys each writer's batches touch.
const KEYS: u64 = 400;
/// Writer threads in the child.
const WRITERS: u64 = 3;
/// One batch in this many holds a range deletion.
const RANGE_DELETE_ONE_IN: u64 = 20;

/// Default durability (`sync = false`) with small buffers and level
/// budgets, so that flushes and compactions (down to level 3 or 4) happen
/// many times a second, and a filter budget; with `lz4`, LZ4 data blocks
/// on every level.
fn crash_options(lz4: bool) -> Options {
    let mut o = Options::default();
    if lz4 {
        o.compression = campaign::lz4_everywhere();
    }
    o.write_buffer_size = 64 << 10;
    o.block_size = 1024;
    o.max_bytes_for_level_base = 16 << 10;
    o.level_size_multiplier = 2;
    o.target_file_size = 16 << 10;
    // A rollover every few dozen edits, so that kills land in them too.
    o.max_manifest_file_size = 4 << 10;
    // Filters sized by one budget over the runs (the other campaigns keep
    // uniform filters), so that kills land in its builds and in the
    // background's filter rebuilds too.
    o.filter_budget = Some(siftdb::filter::FilterBudget::bits_per_key(8.0));
    o
}

/// Key `i` of writer `w`'s key space.
fn key(w: u64, i: u64) -> Vec<u8> {
    format!("w{w}-key{i:04}").into_bytes()
}

/// Every key any writer touches.
fn key_space() -> impl Iterator<Item = Vec<u8>> {
    (0..WRITERS).flat_map(|w| (0..KEYS).map(move |i| key(w, i)))
}

/// The updates of batch `id`: 1 to 8 puts and deletes over the key space;
/// the last is always a put whose value names the batch, so that applying
/// a batch always changes the state. One batch in 20 also holds a range
/// deletion inside the writer's own keys (the other writers' keys are
/// theirs), before that last put.
fn batch_ops(seed: u64, w: u64, id: u64) -> Vec<Update> {
    let mut rng = Rng(seed ^ id.wrapping_mul(0xd134_2543_de82_ef95) ^ w.rotate_left(40));
    let n = 1 + rng.below(8);
    let mut ops: Vec<Update> = (0..n)
        .map(|i| {
            let key = key(w, rng.below(KEYS));
            if i + 1 < n && rng.below(10) < 3 {
                Update::Delete(key)
            } else {
                let fill = rng.below(100) as usize;
                let c = b'a' + rng.below(26) as u8;
                let mut v = format!("w{w}b{id}.{i}.").into_bytes();
                v.resize(v.len() + fill, c);
                Update::Put(key, v)
            }
        })
        .collect();
    let ranges = Rng(rng.next_u64() ^ 0x7a9e_de1e);
    campaign::mix_in_range_delete(
        &mut ops,
        ranges,
        RANGE_DELETE_ONE_IN,
        KEYS,
        |i| key(w, i),
        false,
    );
    ops
}

/// The child: each writer writes its batches from its `SIFTDB_CRASH_START`
/// on until killed. Without `SIFTDB_CRASH_CHILD` (a normal test run) it
/// does nothing.
#[test]
fn crash_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let seed = env_u64(SEED_ENV, 0);
    let starts: Vec<u64> = std::env::var(START_ENV)
        .expect("child: start ids")
        .split(',')
        .map(|s| s.parse().expect("child: start id"))
        .collect();
    assert_eq!(starts.len() as u64, WRITERS);
    let lz4 = env_u64(LZ4_ENV, 0) != 0;
    let db = Db::open_with(&dir, crash_options(lz4)).expect("child: open");
    let out = std::sync::Mutex::new(std::io::stdout());
    let say = |line: String| {
        let mut out = out.lock().unwrap();
        if writeln!(out, "{MARK} {line}")
            .and_then(|_| out.flush())
            .is_err()
        {
            // The parent is gone: stop rather than write forever.
            std::process::exit(3);
        }
    };
    say("opened".into());
    // A backstop in case the parent dies without killing us.
    let deadline = Instant::now() + Duration::from_secs(120);
    std::thread::scope(|s| {
        for (w, &start) in starts.iter().enumerate() {
            let (db, say) = (&db, &say);
            s.spawn(move || {
                for id in start.. {
                    db.write(write_batch(&batch_ops(seed, w as u64, id)))
                        .expect("child: write");
                    let st = db.stats();
                    say(format!(
                        "ack {w} {id} {} {} {} {}",
                        st.flushes, st.compactions, st.range_tombstones, st.range_deleted_dropped
                    ));
                    if Instant::now() > deadline {
                        std::process::exit(2);
                    }
                }
            });
        }
    });
}

enum Event {
    Opened,
    Ack {
        writer: usize,
        id: u64,
        activity: u64,
        /// `Stats::range_tombstones` and `range_deleted_dropped` then.
        range_tombstones: u64,
        range_dropped: u64,
    },
}

fn parse_line(line: &str) -> Option<Event> {
    let rest = &line[line.find(MARK)? + MARK.len()..];
    let mut words = rest.split_whitespace();
    match words.next()? {
        "opened" => Some(Event::Opened),
        "ack" => {
            let mut num = || words.next()?.parse::<u64>().ok();
            let writer = num()? as usize;
            let id = num()?;
            let activity = num()? + num()?;
            let range_tombstones = num()?;
            let range_dropped = num()?;
            Some(Event::Ack {
                writer,
                id,
                activity,
                range_tombstones,
                range_dropped,
            })
        }
        _ => None,
    }
}

#[derive(Default, Debug)]
struct Totals {
    acked: u64,
    in_flight_applied: u64,
    in_flight_absent: u64,
    killed_before_open: u64,
    killed_after_activity: u64,
    max_ssts: usize,
    deepest_level: usize,
    /// Acknowledged batches holding a range deletion.
    range_batches: u64,
    /// Most range tombstones live at once (child's stats, or after reopen).
    max_range_tombstones: u64,
    /// Times the live count fell between two acknowledgements of a child:
    /// tombstones garbage-collected by compactions.
    range_gc: u64,
    /// Versions compactions dropped because a range deletion hid them.
    range_dropped: u64,
    /// Kills of children running with LZ4, and the most LZ4 tables below
    /// level 0 (compactions' outputs) seen after one.
    lz4_kills: u64,
    max_lz4_deeper: usize,
}

#[test]
fn crash_process_campaign() {
    let cycles = env_u64("SIFTDB_CRASH_CYCLES", 30);
    let seed = env_u64(SEED_ENV, 0x5eed_c4a5);
    println!("crash campaign: {cycles} cycles, {SEED_ENV}={seed}");
    let scratch = scratch_dir();
    let dir = scratch.path().join("db");
    let mut rng = Rng(seed.rotate_left(17));
    // Per writer: its model, and the batches `0..applied` in the database.
    let mut model = vec![State::new(); WRITERS as usize];
    let mut applied = vec![0u64; WRITERS as usize];
    let mut t = Totals::default();
    let started = Instant::now();

    for cycle in 0..cycles {
        let lz4 = cycle % 2 == 1;
        t.lz4_kills += u64::from(lz4);
        let start = applied.clone();
        let starts = start.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut child = child_test_command("crash_child")
            .env(CHILD_ENV, &dir)
            .env(SEED_ENV, seed.to_string())
            .env(START_ENV, starts.join(","))
            .env(LZ4_ENV, u64::from(lz4).to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(ev) = parse_line(&line) {
                    if tx.send(ev).is_err() {
                        break;
                    }
                }
            }
        });
        let err_reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });

        // Kill after 10..=300 ms, or (one cycle in three) right after the
        // first acknowledgement that shows a flush or compaction finished
        // since the previous one, when the next is likely under way. One
        // cycle in eight kills after only 1..=10 ms instead, often while
        // the child is still recovering inside `Db::open`.
        let delay = Duration::from_millis(if rng.below(8) == 0 {
            1 + rng.below(10)
        } else {
            10 + rng.below(291)
        });
        let on_activity = rng.below(3) == 0;
        let t0 = Instant::now();
        let mut acks: Vec<Vec<u64>> = vec![Vec::new(); WRITERS as usize];
        let mut opened = false;
        let mut last_activity = None;
        let mut last_range = (None, 0u64);
        let mut early_exit = false;
        loop {
            let left = delay.saturating_sub(t0.elapsed());
            if left.is_zero() {
                break;
            }
            match rx.recv_timeout(left) {
                Ok(Event::Opened) => opened = true,
                Ok(Event::Ack {
                    writer,
                    id,
                    activity,
                    range_tombstones,
                    range_dropped,
                }) => {
                    acks[writer].push(id);
                    t.max_range_tombstones = t.max_range_tombstones.max(range_tombstones);
                    if last_range.0.is_some_and(|r| range_tombstones < r) {
                        t.range_gc += 1;
                    }
                    last_range = (Some(range_tombstones), range_dropped);
                    let busy = last_activity.is_some_and(|a| activity > a);
                    last_activity = Some(activity);
                    if on_activity && busy && t0.elapsed() >= Duration::from_millis(10) {
                        t.killed_after_activity += 1;
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => break,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    early_exit = true;
                    break;
                }
            }
        }
        t.range_dropped += last_range.1;
        let _ = child.kill(); // SIGKILL
        let status = child.wait().expect("wait for child");
        reader.join().unwrap();
        let child_err = err_reader.join().unwrap();
        // Acknowledgements printed before the kill but not yet read.
        for ev in rx.try_iter() {
            match ev {
                Event::Opened => opened = true,
                Event::Ack { writer, id, .. } => acks[writer].push(id),
            }
        }
        {
            use std::os::unix::process::ExitStatusExt;
            assert!(
                !early_exit && status.signal() == Some(9),
                "cycle {cycle}: child exited on its own ({status}) before the kill; stderr:\n{child_err}"
            );
        }
        if !opened {
            t.killed_before_open += 1;
        }
        // Per writer: the model through its last acknowledged batch, and
        // with its in-flight batch too.
        let mut with_in_flight = Vec::new();
        for w in 0..WRITERS as usize {
            for (i, id) in acks[w].iter().enumerate() {
                assert_eq!(
                    *id,
                    start[w] + i as u64,
                    "cycle {cycle}: writer {w}: acks out of sequence"
                );
            }
            let n_acked = acks[w].len() as u64;
            t.acked += n_acked;
            for id in start[w]..start[w] + n_acked {
                let ops = batch_ops(seed, w as u64, id);
                t.range_batches += (campaign::range_deletes(&ops) > 0) as u64;
                apply(&mut model[w], &ops);
            }
            let mut m = model[w].clone();
            apply(&mut m, &batch_ops(seed, w as u64, start[w] + n_acked));
            with_in_flight.push(m);
        }

        // Reopen without background compaction, so the directory listing
        // cannot change under the check.
        let mut opts = crash_options(lz4);
        opts.compaction_style = CompactionStyle::None;
        let db = Db::open_with(&dir, opts).unwrap_or_else(|e| {
            panic!("cycle {cycle}: open after kill failed: {e}; {SEED_ENV}={seed}")
        });
        check_directory(&db, &dir)
            .unwrap_or_else(|e| panic!("cycle {cycle}: {e}; {SEED_ENV}={seed}"));
        t.max_range_tombstones = t.max_range_tombstones.max(db.stats().range_tombstones);
        let files = db.live_files();
        if lz4 {
            let lz4_deeper = campaign::codecs(&db).deeper.get("lz4").copied();
            t.max_lz4_deeper = t.max_lz4_deeper.max(lz4_deeper.unwrap_or(0));
        }
        t.max_ssts = t.max_ssts.max(files.len());
        t.deepest_level = t
            .deepest_level
            .max(files.iter().map(|f| f.level).max().unwrap_or(0));
        let state = campaign::read_state(&db, key_space())
            .unwrap_or_else(|e| panic!("cycle {cycle}: {e}; {SEED_ENV}={seed}"));
        for w in 0..WRITERS as usize {
            let mine = campaign::with_prefix(&state, format!("w{w}-").as_bytes());
            let in_flight = start[w] + acks[w].len() as u64;
            if mine == model[w] {
                t.in_flight_absent += 1;
                applied[w] = in_flight;
            } else if mine == with_in_flight[w] {
                t.in_flight_applied += 1;
                model[w] = with_in_flight[w].clone();
                applied[w] = in_flight + 1;
            } else {
                let diff = campaign::diff(&model[w], &mine);
                panic!(
                    "cycle {cycle}: writer {w}: after batches {}..{in_flight} were acknowledged, \
                     its keys match neither its model through batch {} nor through \
                     {in_flight}; first differences: {diff:#?}; {SEED_ENV}={seed}",
                    start[w],
                    in_flight as i64 - 1
                );
            }
        }
        db.close().expect("close after check");
    }
    println!(
        "crash campaign: {cycles} kills in {:.1} s; {} batches acknowledged by {WRITERS} \
         writers, none lost; in-flight batch applied {} times, absent {} times (per writer \
         and kill); {} kills before the child's \
         open returned, {} right after a flush/compaction; up to {} SSTables, down to level {}; \
         {} acknowledged batches held a range deletion, up to {} range tombstones live, \
         {} times fewer after a compaction (garbage-collected), {} versions dropped by them; \
         {} kills with LZ4 on, up to {} LZ4 tables below level 0 after one",
        started.elapsed().as_secs_f64(),
        t.acked,
        t.in_flight_applied,
        t.in_flight_absent,
        t.killed_before_open,
        t.killed_after_activity,
        t.max_ssts,
        t.deepest_level,
        t.range_batches,
        t.max_range_tombstones,
        t.range_gc,
        t.range_dropped,
        t.lz4_kills,
        t.max_lz4_deeper
    );
    assert!(t.acked > 0, "no batch was ever acknowledged");
    assert!(
        t.lz4_kills == 0 || t.max_lz4_deeper > 0,
        "no LZ4 table below level 0 after any kill of a child running with LZ4"
    );

    // A manual compaction rewrites every table a range tombstone waits on,
    // so afterwards none is live (DESIGN.md 3.7) and the contents are
    // unchanged: every version the tombstones hid is gone with them. With
    // LZ4 on, it rewrites the uncompressed tables too (a table's format
    // version differs), so every table below level 0 is then one a
    // compaction wrote with LZ4.
    let db = Db::open_with(&dir, crash_options(true)).expect("final open");
    db.compact().expect("final compaction");
    let codecs = campaign::check_lz4_compactions(&db)
        .unwrap_or_else(|e| panic!("after the final compaction: {e}; {SEED_ENV}={seed}"));
    println!("crash campaign: after the final compaction with LZ4: {codecs:?}");
    let left = db.stats().range_tombstones;
    let state = campaign::read_state(&db, key_space()).expect("final read");
    for (w, model) in model.iter().enumerate() {
        let mine = campaign::with_prefix(&state, format!("w{w}-").as_bytes());
        assert_eq!(
            mine, *model,
            "writer {w}: contents changed by the final compaction; {SEED_ENV}={seed}"
        );
    }
    assert_eq!(
        left, 0,
        "range tombstones left after compact(); {SEED_ENV}={seed}"
    );
    db.close().unwrap();
}
