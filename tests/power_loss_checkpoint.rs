//! Campaign 6 for checkpoints (RELIABILITY.md): the power cut at every file
//! operation of `Db::checkpoint`.
//!
//! A database with tables in several levels, a live WAL, range
//! deletions (flushed and not) and two keyspaces beside the default (one
//! cold, whose memtable pins the oldest WAL, DESIGN.md 9.1)
//! runs on a `PowerFs`
//! (tests/common/power_fs.rs), which models the checkpoint's temporary
//! directory, its hard links, its rename to the target and the parent's
//! sync. For each operation `n` of the checkpoint call, a fresh copy of
//! the database is checkpointed with the power cut at `n`; the disk is
//! rebuilt as a cut could leave it (durable names and directory entries
//! only, a random part of each file's unsynced bytes) and then:
//!
//! - the target is absent, or it opens and holds exactly the database as
//!   of the call (every write acknowledged before it; the source wrote
//!   with `sync = true`, so nothing acknowledged may be missing);
//! - the source opens and holds the same;
//! - a second checkpoint into the same target succeeds (removing what the
//!   cut one left) and holds the same.
//!
//! The cut that lands after the checkpoint's last operation is the
//! control: it must publish. `SIFTDB_POWER_LOSS_SEED` sets the images'
//! seed.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::power_fs::{PowerFs, Unsynced};
use common::{env_u64, scratch_dir, Rng};
use siftdb::{CompactionStyle, Db, Keyspace, Options};

type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// Every keyspace's contents, by name.
type States = BTreeMap<String, State>;

fn options(fs: Option<&PowerFs>) -> Options {
    let mut o = common::campaign::tiny_options(true);
    o.compaction_style = CompactionStyle::Leveled;
    if let Some(fs) = fs {
        o.file_system = fs.arc();
    }
    o
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// Builds the source in `dir` through `fs` and returns its contents. The
/// default keyspace: 300 keys over several flushes (and the compactions
/// they trigger), a range deletion flushed and one only in the WAL, and a
/// few writes after it. Keyspace "cold", never flushed: a put before
/// everything else, so its memtable pins the first WAL while the others
/// rotate past it, one in a middle WAL (which no memtable names then) and
/// one in the last WAL. Keyspace "hot": puts
/// flushed with each round and a range deletion in its memtable.
fn build(dir: &Path, fs: &PowerFs) -> (Db, States) {
    let db = Db::open_with(dir, options(Some(fs))).unwrap();
    let (default, cold) = (
        db.existing_keyspace("default").unwrap(),
        db.keyspace("cold").unwrap(),
    );
    let hot = db.keyspace("hot").unwrap();
    let mut model = States::new();
    let put = |ks: &Keyspace, model: &mut States, k: Vec<u8>, v: String| {
        ks.put(&k, &v).unwrap();
        model
            .entry(ks.name().to_string())
            .or_default()
            .insert(k, v.into_bytes());
    };
    put(&cold, &mut model, b"c1".to_vec(), "first WAL".into());
    for round in 0..3 {
        if round == 1 {
            // In a WAL no memtable will name: "cold"'s started earlier.
            put(&cold, &mut model, b"c2".to_vec(), "middle WAL".into());
        }
        for i in 0..100 {
            put(
                &default,
                &mut model,
                key(round * 100 + i),
                format!("r{round}-{i}"),
            );
        }
        for i in 0..20 {
            put(&hot, &mut model, key(round * 20 + i), format!("hot{round}"));
        }
        default.flush().unwrap();
        hot.flush().unwrap();
    }
    db.wait_for_compactions().unwrap();
    db.delete_range(key(20)..key(40)).unwrap();
    default.flush().unwrap();
    db.delete_range(key(250)..=key(260)).unwrap();
    hot.delete_range(key(0)..key(10)).unwrap();
    let m = model.get_mut("default").unwrap();
    for i in (20..40).chain(250..=260) {
        m.remove(&key(i));
    }
    let m = model.get_mut("hot").unwrap();
    for i in 0..10 {
        m.remove(&key(i));
    }
    for i in 0..5 {
        put(&default, &mut model, key(i * 7), "after".into());
    }
    put(&cold, &mut model, b"c3".to_vec(), "last WAL".into());
    assert!(
        common::files_with_ext(dir, "log").len() > 2,
        "the cold keyspace pins older WALs"
    );
    (db, model)
}

/// Every keyspace's live pairs, by name.
fn contents(db: &Db) -> States {
    db.keyspaces()
        .into_iter()
        .map(|name| {
            let ks = db.existing_keyspace(&name).unwrap();
            let pairs = ks
                .iter()
                .map(|r| {
                    let (k, v) = r.unwrap();
                    (k.into_vec(), v.into_vec())
                })
                .collect();
            (name, pairs)
        })
        .collect()
}

#[test]
fn a_power_cut_anywhere_in_a_checkpoint_leaves_no_target_or_a_whole_one() {
    let seed = env_u64("SIFTDB_POWER_LOSS_SEED", 0x5eed_c0de);
    let mut rng = Rng(seed);
    let (mut published, mut absent) = (0u32, 0u32);
    for n in 0.. {
        let root = scratch_dir();
        let (src, target) = (root.path().join("db"), root.path().join("copies/ckpt"));
        let fs = PowerFs::new();
        let (db, model) = build(&src, &fs);
        let start = fs.count();
        fs.cut_power_at(start + n);
        let made = db.checkpoint(&target);
        let cut = fs.is_dead();
        drop(db);
        fs.crash_image_with(Unsynced::Random(&mut rng));
        let what = format!("cut at checkpoint operation {n} (seed {seed:#x})");
        if !cut {
            made.unwrap_or_else(|e| panic!("{what}: the uncut checkpoint failed: {e}"));
        }
        if target.exists() {
            let copy = Db::open_with(&target, options(None))
                .unwrap_or_else(|e| panic!("{what}: the target does not open: {e}"));
            assert_eq!(contents(&copy), model, "{what}: the target");
            drop(copy);
            published += 1;
        } else {
            assert!(cut, "{what}: no target without a cut");
            absent += 1;
        }
        let source = Db::open_with(&src, options(None))
            .unwrap_or_else(|e| panic!("{what}: the source does not open: {e}"));
        assert_eq!(contents(&source), model, "{what}: the source");
        if !target.exists() {
            // What the cut left (a temporary directory) does not stop the
            // next checkpoint.
            source
                .checkpoint(&target)
                .unwrap_or_else(|e| panic!("{what}: a second checkpoint failed: {e}"));
            let copy = Db::open_with(&target, options(None)).unwrap();
            assert_eq!(contents(&copy), model, "{what}: the second checkpoint");
        }
        if !cut {
            break; // the control: every operation has been cut once
        }
    }
    assert!(
        published >= 1 && absent >= 10,
        "{published} published, {absent} absent"
    );
    eprintln!("checkpoint power cuts: {absent} left no target, {published} a whole one");
}
