//! Randomized model test across keyspaces (RELIABILITY.md, the keyspace
//! campaigns): a `BTreeMap` per keyspace against the database through puts,
//! deletes and range deletions in one keyspace or in batches across
//! several, creations, drops and re-creations under the same name (a new
//! id: nothing of the old keyspace may come back), flushes of one keyspace
//! or all, compactions, reopens, and reads (`get`, scans both ways) of
//! every keyspace. A handle kept from before a drop must be refused. Seeds
//! are fixed; `SIFTDB_KS_MODEL_OPS` sets the operations per seed (default
//! 5,000).

mod common;

use std::collections::BTreeMap;

use common::campaign::{self, apply, State, Update};
use common::{env_u64, Rng};
use siftdb::{CompactionStyle, Db, Error, Keyspace, Options, WriteBatch};

const NAMES: [&str; 4] = ["default", "a", "b", "c"];
const KEYS: u64 = 120;

fn key(i: u64) -> Vec<u8> {
    format!("k{i:03}").into_bytes()
}

fn update(rng: &mut Rng, step: usize) -> Update {
    match rng.below(10) {
        0..=5 => {
            let mut v = format!("s{step}.").into_bytes();
            v.resize(v.len() + [0, 10, 200][rng.below(3) as usize], b'v');
            Update::Put(key(rng.below(KEYS)), v)
        }
        6..=8 => Update::Delete(key(rng.below(KEYS))),
        _ => campaign::random_range_delete(rng, KEYS, key, true),
    }
}

struct Run {
    db: Db,
    /// The live keyspaces' handles and models, by name.
    live: BTreeMap<&'static str, (Keyspace, State)>,
}

impl Run {
    fn open(dir: &std::path::Path, opts: &Options, models: BTreeMap<&'static str, State>) -> Run {
        let db = Db::open_with(dir, opts.clone()).unwrap();
        let mut names = db.keyspaces();
        names.sort();
        let mut expected: Vec<String> = models.keys().map(|n| n.to_string()).collect();
        expected.sort();
        assert_eq!(names, expected, "keyspaces after reopen");
        let live = models
            .into_iter()
            .map(|(n, m)| (n, (db.existing_keyspace(n).unwrap(), m)))
            .collect();
        Run { db, live }
    }

    fn models(&self) -> BTreeMap<&'static str, State> {
        self.live
            .iter()
            .map(|(n, (_, m))| (*n, m.clone()))
            .collect()
    }

    fn check_all(&self, what: &str) {
        for (name, (ks, model)) in &self.live {
            let found = campaign::read_state(ks, (0..KEYS).map(key))
                .unwrap_or_else(|e| panic!("{what}: keyspace {name}: {e}"));
            assert!(
                found == *model,
                "{what}: keyspace {name}: {:#?}",
                campaign::diff(model, &found)
            );
        }
    }
}

fn run(seed: u64, style: CompactionStyle, ops: usize) {
    let dir = common::scratch_dir();
    let mut opts = Options::default();
    opts.write_buffer_size = 4 << 10;
    opts.block_size = 256;
    opts.compaction_style = style;
    opts.max_bytes_for_level_base = 8 << 10;
    opts.level_size_multiplier = 2;
    opts.target_file_size = 4 << 10;
    opts.max_total_wal_size = 32 << 10;
    let mut r = Run::open(
        dir.path(),
        &opts,
        BTreeMap::from([("default", State::new())]),
    );
    // Handles of dropped keyspaces: every use must be refused.
    let mut stale: Vec<Keyspace> = Vec::new();
    let (mut created, mut dropped) = (0, 0);
    let mut rng = Rng(seed);
    for step in 0..ops {
        let what = format!("seed {seed} step {step}");
        let name = NAMES[rng.below(NAMES.len() as u64) as usize];
        match rng.below(100) {
            0..=39 => {
                if let Some((ks, model)) = r.live.get_mut(name) {
                    let u = update(&mut rng, step);
                    let res = match &u {
                        Update::Put(k, v) => ks.put(k, v),
                        Update::Delete(k) => ks.delete(k),
                        Update::DeleteRange(lo, hi) => ks.delete_range((lo.clone(), hi.clone())),
                    };
                    res.unwrap();
                    apply(model, &[u]);
                }
            }
            40..=54 => {
                // A batch across the live keyspaces.
                let mut batch = WriteBatch::new();
                let mut pieces = Vec::new();
                for _ in 0..1 + rng.below(6) {
                    let name = NAMES[rng.below(NAMES.len() as u64) as usize];
                    if let Some((ks, _)) = r.live.get(name) {
                        let u = update(&mut rng, step);
                        campaign::add_in(&mut batch, ks, std::slice::from_ref(&u));
                        pieces.push((name, u));
                    }
                }
                r.db.write(batch).unwrap();
                for (name, u) in pieces {
                    apply(&mut r.live.get_mut(name).unwrap().1, &[u]);
                }
            }
            55..=69 => {
                if let Some((ks, model)) = r.live.get(name) {
                    let k = key(rng.below(KEYS));
                    assert_eq!(
                        ks.get(&k).unwrap().map(Vec::from),
                        model.get(&k).cloned(),
                        "{what}: get in {name}"
                    );
                }
            }
            70..=72 => {
                if let Some((ks, model)) = r.live.get(name) {
                    let lo = key(rng.below(KEYS));
                    let got: Vec<_> = ks.range(lo.clone()..).map(common::owned).collect();
                    let want: Vec<_> = model
                        .range(lo..)
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    assert_eq!(got, want, "{what}: range in {name}");
                }
            }
            73..=76 => {
                if !r.live.contains_key(name) {
                    let ks = r.db.keyspace(name).unwrap();
                    assert_eq!(ks.iter().count(), 0, "{what}: re-created {name} not empty");
                    r.live.insert(name, (ks, State::new()));
                    created += 1;
                }
            }
            77..=79 => {
                if name != "default" && r.live.contains_key(name) {
                    r.db.drop_keyspace(name).unwrap();
                    let (ks, _) = r.live.remove(name).unwrap();
                    stale.push(ks);
                    dropped += 1;
                }
            }
            80..=83 => {
                if let Some((ks, _)) = r.live.get(name) {
                    ks.flush().unwrap();
                }
            }
            84..=85 => r.db.flush().unwrap(),
            86..=87 => {
                if let Some((ks, _)) = r.live.get(name) {
                    ks.compact().unwrap();
                }
            }
            88..=90 => {
                if let Some(ks) = stale.pop() {
                    let e = ks.put("x", "y").unwrap_err();
                    assert!(matches!(e, Error::NoSuchKeyspace(_)), "{what}: {e}");
                    let mut b = WriteBatch::new();
                    b.put_in(&ks, "x", "y").unwrap();
                    let e = r.db.write(b).unwrap_err();
                    assert!(matches!(e, Error::NoSuchKeyspace(_)), "{what}: {e}");
                }
            }
            91..=95 => r.check_all(&what),
            _ => {
                stale.clear();
                let models = r.models();
                drop(r);
                r = Run::open(dir.path(), &opts, models);
                r.check_all(&format!("{what} after reopen"));
            }
        }
    }
    let models = r.models();
    drop(r);
    let r = Run::open(dir.path(), &opts, models);
    r.check_all(&format!("seed {seed} final"));
    for (ks, _) in r.live.values() {
        ks.compact().unwrap();
    }
    r.check_all(&format!("seed {seed} after compacting every keyspace"));
    assert!(
        created > 5 && dropped > 5,
        "{created} creations, {dropped} drops"
    );
}

fn ops() -> usize {
    env_u64("SIFTDB_KS_MODEL_OPS", 5_000) as usize
}

#[test]
fn keyspace_model_leveled() {
    run(11, CompactionStyle::Leveled, ops());
}

#[test]
fn keyspace_model_tiered() {
    run(12, CompactionStyle::Tiered, ops());
}
