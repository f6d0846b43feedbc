//! Process-crash campaign: a child process writes numbered batches with
//! default durability (`sync = false`) while flushes and compactions run
//! constantly; the parent kills it with SIGKILL at a random moment, reopens
//! the database and checks it against a model.
//!
//! Protocol. The child is this test binary re-executed as
//! `--exact crash_child` with `SIFTDB_CRASH_CHILD=<db dir>`,
//! `SIFTDB_CRASH_SEED` and `SIFTDB_CRASH_START=<first batch id>`. It opens
//! the database, prints `SIFTDB-CRASH opened`, then writes batch `start`,
//! `start + 1`, ... forever; after each `Db::write` returns it prints
//! `SIFTDB-CRASH ack <id> <flushes> <compactions>` and flushes stdout. The
//! contents of batch `id` are a pure function of `(seed, id)`, so the parent
//! rebuilds them. After the kill the parent drains the pipe, so it knows
//! every acknowledged id; `A` is the last one and `A + 1` the only batch
//! that may have been in flight.
//!
//! Checks after every kill: the database opens; its contents (full scan and
//! a `get` of every key of the key space) equal exactly the model after
//! batches `..=A` or the model after batches `..=A+1` (every acknowledged
//! batch applied, the in-flight one all or nothing, nothing else); and the
//! directory holds only `CURRENT`, `LOCK`, the manifest `CURRENT` names, one
//! WAL and the live SSTables (no `.tmp`, no orphan). The next child goes on
//! in the same directory from the first batch not applied.
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
const MARK: &str = "SIFTDB-CRASH";
/// Distinct user keys the batches touch.
const KEYS: u64 = 1000;

/// Default durability (`sync = false`) with small buffers and level
/// budgets, so that flushes and compactions (down to level 3 or 4) happen
/// many times a second, and a filter budget.
fn crash_options() -> Options {
    let mut o = Options::default();
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

/// Key `i` of the key space.
fn key(i: u64) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// The updates of batch `id`: 1 to 8 puts and deletes over the key space;
/// the last is always a put whose value names the batch, so that applying
/// a batch always changes the state.
fn batch_ops(seed: u64, id: u64) -> Vec<Update> {
    let mut rng = Rng(seed ^ id.wrapping_mul(0xd134_2543_de82_ef95));
    let n = 1 + rng.below(8);
    (0..n)
        .map(|i| {
            let key = key(rng.below(KEYS));
            if i + 1 < n && rng.below(10) < 3 {
                (key, None)
            } else {
                let fill = rng.below(100) as usize;
                let c = b'a' + rng.below(26) as u8;
                let mut v = format!("b{id}.{i}.").into_bytes();
                v.resize(v.len() + fill, c);
                (key, Some(v))
            }
        })
        .collect()
}

/// The child: writes batches from `SIFTDB_CRASH_START` on until killed.
/// Without `SIFTDB_CRASH_CHILD` (a normal test run) it does nothing.
#[test]
fn crash_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let seed = env_u64(SEED_ENV, 0);
    let start = env_u64(START_ENV, 0);
    let db = Db::open_with(&dir, crash_options()).expect("child: open");
    let mut out = std::io::stdout().lock();
    let say = |out: &mut std::io::StdoutLock<'_>, line: String| {
        if writeln!(out, "{MARK} {line}")
            .and_then(|_| out.flush())
            .is_err()
        {
            // The parent is gone: stop rather than write forever.
            std::process::exit(3);
        }
    };
    say(&mut out, "opened".into());
    // A backstop in case the parent dies without killing us.
    let deadline = Instant::now() + Duration::from_secs(120);
    for id in start.. {
        db.write(write_batch(&batch_ops(seed, id)))
            .expect("child: write");
        let s = db.stats();
        say(
            &mut out,
            format!("ack {id} {} {}", s.flushes, s.compactions),
        );
        if Instant::now() > deadline {
            std::process::exit(2);
        }
    }
}

enum Event {
    Opened,
    Ack { id: u64, activity: u64 },
}

fn parse_line(line: &str) -> Option<Event> {
    let rest = &line[line.find(MARK)? + MARK.len()..];
    let mut words = rest.split_whitespace();
    match words.next()? {
        "opened" => Some(Event::Opened),
        "ack" => {
            let mut num = || words.next()?.parse::<u64>().ok();
            let id = num()?;
            let activity = num()? + num()?;
            Some(Event::Ack { id, activity })
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
}

#[test]
fn crash_process_campaign() {
    let cycles = env_u64("SIFTDB_CRASH_CYCLES", 30);
    let seed = env_u64(SEED_ENV, 0x5eed_c4a5);
    println!("crash campaign: {cycles} cycles, {SEED_ENV}={seed}");
    let scratch = scratch_dir();
    let dir = scratch.path().join("db");
    let mut rng = Rng(seed.rotate_left(17));
    let mut model = State::new();
    // Batches 0..applied are in the database.
    let mut applied = 0u64;
    let mut t = Totals::default();
    let started = Instant::now();

    for cycle in 0..cycles {
        let start = applied;
        let mut child = child_test_command("crash_child")
            .env(CHILD_ENV, &dir)
            .env(SEED_ENV, seed.to_string())
            .env(START_ENV, start.to_string())
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
        let mut acks: Vec<u64> = Vec::new();
        let mut opened = false;
        let mut last_activity = None;
        let mut early_exit = false;
        loop {
            let left = delay.saturating_sub(t0.elapsed());
            if left.is_zero() {
                break;
            }
            match rx.recv_timeout(left) {
                Ok(Event::Opened) => opened = true,
                Ok(Event::Ack { id, activity }) => {
                    acks.push(id);
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
        let _ = child.kill(); // SIGKILL
        let status = child.wait().expect("wait for child");
        reader.join().unwrap();
        let child_err = err_reader.join().unwrap();
        // Acknowledgements printed before the kill but not yet read.
        for ev in rx.try_iter() {
            match ev {
                Event::Opened => opened = true,
                Event::Ack { id, .. } => acks.push(id),
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
        for (i, id) in acks.iter().enumerate() {
            assert_eq!(*id, start + i as u64, "cycle {cycle}: acks out of sequence");
        }
        let n_acked = acks.len() as u64;
        t.acked += n_acked;
        for id in start..start + n_acked {
            apply(&mut model, &batch_ops(seed, id));
        }
        let in_flight = start + n_acked;
        let mut with_in_flight = model.clone();
        apply(&mut with_in_flight, &batch_ops(seed, in_flight));

        // Reopen without background compaction, so the directory listing
        // cannot change under the check.
        let mut opts = crash_options();
        opts.compaction_style = CompactionStyle::None;
        let db = Db::open_with(&dir, opts).unwrap_or_else(|e| {
            panic!("cycle {cycle}: open after kill failed: {e}; {SEED_ENV}={seed}")
        });
        check_directory(&db, &dir)
            .unwrap_or_else(|e| panic!("cycle {cycle}: {e}; {SEED_ENV}={seed}"));
        let files = db.live_files();
        t.max_ssts = t.max_ssts.max(files.len());
        t.deepest_level = t
            .deepest_level
            .max(files.iter().map(|f| f.level).max().unwrap_or(0));
        let state = campaign::read_state(&db, (0..KEYS).map(key))
            .unwrap_or_else(|e| panic!("cycle {cycle}: {e}; {SEED_ENV}={seed}"));
        if state == model {
            t.in_flight_absent += 1;
            applied = in_flight;
        } else if state == with_in_flight {
            t.in_flight_applied += 1;
            model = with_in_flight;
            applied = in_flight + 1;
        } else {
            let diff = campaign::diff(&model, &state);
            panic!(
                "cycle {cycle}: after batches {start}..{in_flight} were acknowledged, the database \
                 matches neither the model through batch {} nor through {in_flight}; first \
                 differences: {diff:#?}; {SEED_ENV}={seed}",
                in_flight as i64 - 1
            );
        }
        db.close().expect("close after check");
    }
    println!(
        "crash campaign: {cycles} kills in {:.1} s; {} batches acknowledged, none lost; \
         in-flight batch applied {} times, absent {} times; {} kills before the child's \
         open returned, {} right after a flush/compaction; up to {} SSTables, down to level {}",
        started.elapsed().as_secs_f64(),
        t.acked,
        t.in_flight_applied,
        t.in_flight_absent,
        t.killed_before_open,
        t.killed_after_activity,
        t.max_ssts,
        t.deepest_level
    );
    assert!(t.acked > 0, "no batch was ever acknowledged");
}
