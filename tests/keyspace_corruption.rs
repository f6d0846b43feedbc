//! Corruption campaign at keyspace records (RELIABILITY.md campaign 2). A
//! base database holds the default keyspace, "a", "b" (its options changed:
//! a tag 15 record) and "gone" (written, then dropped: tag 14), with flush
//! edits in keyspace sections (tag 12 with the tree tags inside) and a WAL
//! of batches whose ops name keyspaces (0x10–0x12: puts, deletes and range
//! deletions in "a", "b" and "gone", the last skipped on replay). Each case
//! damages one manifest record holding a keyspace section, or one WAL
//! record holding a keyspace op: a flipped byte (4 in 5) or a truncation
//! inside the record.
//!
//! The copy is opened and every keyspace read (scans both ways and a `get`
//! of every key), under `catch_unwind`. Allowed: `Corruption` naming the
//! damaged file (the manifest case: the manifest or the WAL whose ops the
//! damaged manifest no longer explains), every file unchanged; or an open
//! that drops only what the log formats allow: WAL records past a
//! truncation, or the last WAL record when the flip is in it (every
//! keyspace then equals, together, the model after that many WAL
//! batches); the last manifest record when the open reports a torn
//! manifest tail. Never a panic, another error, or an entry in the wrong
//! keyspace (keys and values name their keyspace; a scan showing another's
//! fails).
//!
//! `SIFTDB_KS_CORRUPTION_CASES` (default 240) and
//! `SIFTDB_KS_CORRUPTION_SEED` set the size and seed.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use common::campaign::{self, apply, Shape, State, Update};
use common::{copy_dir, dir_contents, env_u64, scratch_dir, Rng};
use siftdb::inspect::log::read_log;
use siftdb::inspect::read_manifest;
use siftdb::inspect::write_batch::decode_batch;
use siftdb::{CompactionStyle, Db, Error, KeyspaceOptions, Options, WriteBatch};

const NAMES: [&str; 3] = ["default", "a", "b"];
const KEYS: u64 = 40;
/// Batches left in the WAL (unflushed) by the base.
const WAL_BATCHES: usize = 40;

fn options() -> Options {
    let mut o = Options::default();
    o.write_buffer_size = 64 << 10;
    o.block_size = 512;
    o.compaction_style = CompactionStyle::None;
    o
}

fn key(ks: &str, i: u64) -> Vec<u8> {
    format!("{ks}-key{i:03}").into_bytes()
}

/// A batch: per keyspace name, its updates.
type Batch = Vec<(&'static str, Vec<Update>)>;

fn random_batch(rng: &mut Rng, id: usize, with_gone: bool) -> Batch {
    let mut names: Vec<&'static str> = NAMES.to_vec();
    if with_gone {
        names.push("gone");
    }
    let mut batch = Vec::new();
    for ks in names {
        if rng.below(2) == 0 {
            continue;
        }
        let shape = Shape {
            keys: KEYS,
            max_updates: 3,
            max_fill: 0,
            range_one_in: 4,
            unbounded: false,
        };
        let ops = campaign::random_updates(rng, id as u64, ks, &shape, |i| key(ks, i));
        batch.push((ks, ops));
    }
    if batch.is_empty() {
        batch.push((
            "a",
            vec![Update::Put(key("a", 0), format!("a:b{id}").into())],
        ));
    }
    batch
}

struct Base {
    dir: PathBuf,
    /// `models[k]`: the three keyspaces after `k` of the WAL's batches.
    models: Vec<Vec<State>>,
    manifest: String,
    /// (start, end) of each manifest record holding a keyspace section.
    manifest_records: Vec<(u64, u64)>,
    wal: String,
    /// (start, end) of every WAL record, and of those naming a keyspace.
    wal_records: Vec<(u64, u64)>,
    wal_keyspace_records: Vec<(u64, u64)>,
}

fn build_base(root: &Path, rng: &mut Rng) -> Base {
    let dir = root.join("base");
    let db = Db::open_with(&dir, options()).unwrap();
    let handle = |name: &str| db.keyspace(name).unwrap();
    let mut state = vec![State::new(); NAMES.len()];
    let write = |batch: &Batch, state: &mut Vec<State>| {
        let mut b = WriteBatch::new();
        for (ks, ops) in batch {
            campaign::add_in(&mut b, &handle(ks), ops);
            if let Some(i) = NAMES.iter().position(|n| n == ks) {
                apply(&mut state[i], ops);
            }
        }
        db.write(b).unwrap();
    };
    handle("gone");
    for id in 0..60 {
        write(&random_batch(rng, id, true), &mut state);
        if id % 15 == 14 {
            handle("a").flush().unwrap();
            handle(["b", "gone"][id / 15 % 2]).flush().unwrap();
        }
    }
    db.flush().unwrap();
    db.keyspace_with("b", KeyspaceOptions::default().bits_per_key(14))
        .unwrap();
    let mut models = vec![state.clone()];
    for id in 0..WAL_BATCHES {
        // "gone" takes writes in the first half, then is dropped: its ops
        // stay in the WAL, skipped on replay.
        if id == WAL_BATCHES / 2 {
            db.drop_keyspace("gone").unwrap();
        }
        write(
            &random_batch(rng, 100 + id, id < WAL_BATCHES / 2),
            &mut state,
        );
        models.push(state.clone());
    }
    db.close().unwrap();

    let names = common::file_names(&dir);
    let wal = names.iter().find(|n| n.ends_with(".log")).unwrap().clone();
    let log = read_log(&dir.join(&wal)).unwrap();
    assert_eq!(log.records.len(), WAL_BATCHES, "WAL records");
    let span = |offset: u64, len: usize| (offset, offset + 12 + len as u64);
    let wal_records: Vec<(u64, u64)> = log
        .records
        .iter()
        .map(|r| span(r.offset, r.payload.len()))
        .collect();
    let wal_keyspace_records: Vec<(u64, u64)> = log
        .records
        .iter()
        .filter(|r| {
            decode_batch(&r.payload)
                .unwrap()
                .ops
                .iter()
                .any(|op| op.keyspace != 0)
        })
        .map(|r| span(r.offset, r.payload.len()))
        .collect();
    let manifest = std::fs::read_to_string(dir.join("CURRENT"))
        .unwrap()
        .trim_end()
        .to_string();
    let edits = read_manifest(&dir.join(&manifest)).unwrap();
    let manifest_records: Vec<(u64, u64)> = edits
        .records
        .iter()
        .filter(|r| !r.edit.keyspaces.is_empty())
        .map(|r| (r.offset, r.offset + 12 + r.payload_len))
        .collect();
    let sections: Vec<_> = edits
        .records
        .iter()
        .flat_map(|r| r.edit.keyspaces.values())
        .collect();
    let count = |f: fn(&&_) -> bool| sections.iter().filter(f).count();
    assert!(
        count(|e| e.add.is_some()) >= 3
            && count(|e| e.options.is_some()) >= 1
            && count(|e| e.drop) == 1
            && count(|e| !e.new_files.is_empty()) >= 3,
        "the manifest should hold keyspace additions, an options change, a drop and \
         flushes in keyspace sections"
    );
    assert!(wal_keyspace_records.len() >= WAL_BATCHES / 2);
    Base {
        dir,
        models,
        manifest,
        manifest_records,
        wal,
        wal_records,
        wal_keyspace_records,
    }
}

#[derive(Debug, Clone, Copy)]
enum Damage {
    Flip { offset: u64, mask: u8 },
    Truncate { len: u64 },
}

#[derive(Debug, Clone)]
struct Case {
    wal: bool,
    file: String,
    damage: Damage,
}

fn pick_case(base: &Base, wal: bool, rng: &mut Rng) -> Case {
    let records = if wal {
        &base.wal_keyspace_records
    } else {
        &base.manifest_records
    };
    let (start, end) = records[rng.below(records.len() as u64) as usize];
    let offset = start + rng.below(end - start);
    let damage = if rng.below(5) == 0 {
        Damage::Truncate { len: offset }
    } else {
        let mask = if rng.below(2) == 0 {
            1 << rng.below(8)
        } else {
            1 + rng.below(255) as u8
        };
        Damage::Flip { offset, mask }
    };
    let file = if wal { &base.wal } else { &base.manifest };
    Case {
        wal,
        file: file.clone(),
        damage,
    }
}

fn apply_damage(dir: &Path, case: &Case) {
    let path = dir.join(&case.file);
    let mut bytes = std::fs::read(&path).unwrap();
    match case.damage {
        Damage::Flip { offset, mask } => bytes[offset as usize] ^= mask,
        Damage::Truncate { len } => bytes.truncate(len as usize),
    }
    std::fs::write(&path, bytes).unwrap();
}

/// The numbers of WAL batches the database may show if it opens.
fn allowed(base: &Base, case: &Case) -> Vec<usize> {
    let full = WAL_BATCHES;
    if !case.wal {
        return vec![full];
    }
    match case.damage {
        Damage::Truncate { len } => vec![base.wal_records.iter().filter(|r| r.1 <= len).count()],
        Damage::Flip { offset, .. } if offset >= base.wal_records[full - 1].0 => vec![full - 1],
        // Inside the log, corruption: a single flip never zeroes a whole
        // length checksum, which is what the log reader takes for a group
        // commit not yet written (rule 2, src/log/mod.rs).
        Damage::Flip { .. } => Vec::new(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Corruption,
    WalTail,
    ManifestTail,
    Intact,
}

fn key_space(ks: &'static str) -> impl Iterator<Item = Vec<u8>> {
    (0..KEYS).map(move |i| key(ks, i))
}

fn evaluate(base: &Base, dir: &Path, case: &Case) -> Result<Outcome, String> {
    let before = dir_contents(dir);
    let db = match Db::open_with(dir, options()) {
        Ok(db) => db,
        Err(e) => {
            let names = |f: &Path| {
                let n = f.file_name().unwrap().to_string_lossy();
                n == case.file || (!case.wal && n == base.wal)
            };
            return match &e {
                Error::Corruption { file, .. } if names(file) => {
                    if dir_contents(dir) != before {
                        return Err(format!("the failed open changed files: {e}"));
                    }
                    Ok(Outcome::Corruption)
                }
                _ => Err(format!("open: not a clean report of the damage: {e:?}")),
            };
        }
    };
    let mut found = Vec::new();
    for name in NAMES {
        let ks = db
            .existing_keyspace(name)
            .map_err(|e| format!("keyspace {name}: {e}"))?;
        let state = campaign::read_state(&ks, key_space(name))
            .map_err(|e| format!("keyspace {name}: {e}"))?;
        if let Some(v) = state
            .values()
            .find(|v| !v.starts_with(format!("{name}:").as_bytes()))
        {
            return Err(format!(
                "keyspace {name} holds a value of another: {}",
                String::from_utf8_lossy(v)
            ));
        }
        found.push(state);
    }
    if let Ok(gone) = db.existing_keyspace("gone") {
        // Only a dropped drop record brings it back.
        if db.recovery().manifest_torn_tail.is_none() {
            return Err("\"gone\" is back without a torn manifest tail".into());
        }
        campaign::read_state(&gone, key_space("gone")).map_err(|e| format!("gone: {e}"))?;
    }
    // A batch that wrote only "gone" leaves the three as they were: the
    // states may match several counts.
    let allowed = allowed(base, case);
    let matching: Vec<usize> = (0..base.models.len())
        .filter(|&k| base.models[k] == found)
        .collect();
    let k = matching
        .iter()
        .copied()
        .find(|k| allowed.contains(k))
        .or(matching.first().copied());
    match k {
        Some(k) if allowed.contains(&k) && k == WAL_BATCHES => {
            if db.recovery().manifest_torn_tail.is_some() {
                Ok(Outcome::ManifestTail)
            } else {
                Ok(Outcome::Intact)
            }
        }
        Some(k) if allowed.contains(&k) => Ok(Outcome::WalTail),
        _ => Err(format!(
            "opened holding {matching:?} of the WAL's batches, allowed {allowed:?} (recovery: {:?})",
            db.recovery()
        )),
    }
}

#[test]
fn keyspace_corruption_campaign() {
    let cases = env_u64("SIFTDB_KS_CORRUPTION_CASES", 240);
    let seed = env_u64("SIFTDB_KS_CORRUPTION_SEED", 0x6b73_c022);
    println!("keyspace corruption campaign: {cases} cases, SIFTDB_KS_CORRUPTION_SEED={seed}");
    let scratch = scratch_dir();
    let mut rng = Rng(seed);
    let base = build_base(scratch.path(), &mut Rng(7));
    let mut tally = std::collections::BTreeMap::new();
    let mut failures = Vec::new();
    for n in 0..cases {
        let case = pick_case(&base, n % 2 == 0, &mut rng);
        let dir = scratch.path().join(format!("case{n}"));
        copy_dir(&base.dir, &dir);
        apply_damage(&dir, &case);
        let r =
            catch_unwind(AssertUnwindSafe(|| evaluate(&base, &dir, &case))).unwrap_or_else(|p| {
                Err(format!(
                    "panicked: {}",
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default()
                ))
            });
        match r {
            Ok(o) => *tally.entry((case.wal, o)).or_insert(0u32) += 1,
            Err(e) => failures.push(format!("case {n} {case:?}: {e}")),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!(
        "{} manifest records with keyspace sections, {} of {} WAL records with keyspace \
         ops; outcomes (wal, outcome): {tally:?}",
        base.manifest_records.len(),
        base.wal_keyspace_records.len(),
        base.wal_records.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed; SIFTDB_KS_CORRUPTION_SEED={seed}:\n{}",
        failures.len(),
        failures[..failures.len().min(12)].join("\n")
    );
}
