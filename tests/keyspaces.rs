//! Keyspaces (column families) in the engine (DESIGN.md 2): creation,
//! listing, separate data per keyspace, atomic batches across keyspaces,
//! reopen and read-only open, recovery of WAL ops per keyspace, stats,
//! salvage and handles that outlive their database.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use common::{log_record, Rng};
use siftdb::{Db, Error, Keyspace, Options, WriteBatch};

fn tiny_options() -> Options {
    let mut o = Options::default();
    o.write_buffer_size = 4 << 10;
    o.block_size = 512;
    o.level0_compaction_trigger = 2;
    o.max_bytes_for_level_base = 16 << 10;
    o.target_file_size = 8 << 10;
    // Rolled over often: every new manifest's first record holds every
    // keyspace.
    o.max_manifest_file_size = 4 << 10;
    o
}

fn get(ks: &Keyspace, key: &str) -> Option<String> {
    ks.get(key)
        .unwrap()
        .map(|v| String::from_utf8(v.to_vec()).unwrap())
}

fn pairs(it: siftdb::DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(common::owned).collect()
}

#[test]
fn one_key_in_two_keyspaces_holds_different_values() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let a = db.keyspace("a").unwrap();
    let b = db.keyspace("b").unwrap();
    assert_eq!((a.id(), b.id()), (1, 2));
    assert_eq!(db.keyspaces(), ["default", "a", "b"]);
    db.put("k", "in default").unwrap();
    a.put("k", "in a").unwrap();
    b.put("k", "in b").unwrap();
    a.put("only-a", "1").unwrap();
    assert_eq!(get(&a, "k").as_deref(), Some("in a"));
    assert_eq!(get(&b, "k").as_deref(), Some("in b"));
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"in default"[..]));
    assert_eq!(db.get("only-a").unwrap(), None);
    assert_eq!(get(&b, "only-a"), None);
    b.delete("k").unwrap();
    assert_eq!(get(&b, "k"), None);
    assert_eq!(get(&a, "k").as_deref(), Some("in a"));
    a.delete_range("a".."z").unwrap();
    assert_eq!(a.len().unwrap(), 0);
    assert_eq!(db.len().unwrap(), 1);
    // Opening an existing keyspace returns the same one; "default" is the
    // default keyspace.
    assert_eq!(db.keyspace("a").unwrap().id(), 1);
    let d = db.keyspace("default").unwrap();
    assert_eq!((d.id(), d.name()), (0, "default"));
    assert_eq!(get(&d, "k").as_deref(), Some("in default"));
    // The same after flushes, in tables that carry their keyspace.
    a.put("k", "in a again").unwrap();
    db.flush().unwrap();
    assert_eq!(get(&a, "k").as_deref(), Some("in a again"));
    assert_eq!(get(&b, "k"), None);
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"in default"[..]));
    assert!(db.live_files().iter().all(|f| f.properties.keyspace == 0));
    assert!(!a.live_files().is_empty());
    assert!(a.live_files().iter().all(|f| f.properties.keyspace == 1));
    drop((a, b, d));
    drop(db);
    let db = Db::open(dir.path()).unwrap();
    let a = db.existing_keyspace("a").unwrap();
    let b = db.existing_keyspace("b").unwrap();
    assert_eq!(get(&a, "k").as_deref(), Some("in a again"));
    assert_eq!(get(&b, "k"), None);
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"in default"[..]));
}

#[test]
fn keyspace_names_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let long = "x".repeat(65);
    for bad in ["", "a b", ".hidden", "-x", "é", "a/b", long.as_str()] {
        match db.keyspace(bad) {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("keyspace name"), "{m}"),
            other => panic!("{bad:?}: expected InvalidArgument, got {other:?}"),
        }
    }
    assert_eq!(db.keyspaces(), ["default"]);
    for good in ["x".repeat(64).as_str(), "a", "A-1_b.c", "0"] {
        db.keyspace(good).unwrap();
    }
    match db.existing_keyspace("absent") {
        Err(Error::NoSuchKeyspace(name)) => assert_eq!(name, "absent"),
        other => panic!("expected NoSuchKeyspace, got {other:?}"),
    }
    drop(db);
    let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert!(matches!(ro.keyspace("new"), Err(Error::ReadOnly)));
    assert_eq!(ro.keyspace("a").unwrap().id(), 2);
    assert!(matches!(
        ro.keyspace("a").unwrap().put("k", "v"),
        Err(Error::ReadOnly)
    ));
}

#[test]
fn a_batch_of_two_databases_keyspaces_is_refused() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (db1, db2) = (Db::open(d1.path()).unwrap(), Db::open(d2.path()).unwrap());
    let (a1, a2) = (db1.keyspace("a").unwrap(), db2.keyspace("a").unwrap());
    let mut batch = WriteBatch::new();
    batch.put_in(&a1, "k", "v").unwrap();
    assert!(matches!(
        batch.put_in(&a2, "k", "v"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        db2.write(batch.clone()),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(get(&a2, "k"), None);
    db1.write(batch).unwrap();
    assert_eq!(get(&a1, "k").as_deref(), Some("v"));
    let snap = db2.snapshot();
    assert!(matches!(snap.keyspace(&a1), Err(Error::InvalidArgument(_))));
}

/// A batch writing one counter into three keyspaces is seen whole through
/// every snapshot, while a writer commits more and flushes run.
#[test]
fn a_cross_keyspace_batch_is_seen_whole_through_snapshots_while_a_writer_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open_with(dir.path(), tiny_options()).unwrap();
    let a = db.keyspace("a").unwrap();
    let b = db.keyspace("b").unwrap();
    let d = db.keyspace("default").unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0u64..3000 {
                let mut batch = WriteBatch::new();
                let v = i.to_be_bytes();
                batch.put("n", v).unwrap();
                batch.put_in(&a, "n", v).unwrap();
                batch.put_in(&b, "n", v).unwrap();
                // Filler, so that memtables fill and rotate, in one
                // keyspace at a time.
                let ks = [&d, &a, &b][i as usize % 3];
                batch.put_in(ks, format!("fill{i}"), [7u8; 64]).unwrap();
                db.write(batch).unwrap();
            }
            stop.store(true, std::sync::atomic::Ordering::Release);
        });
        let mut seen = 0;
        while !stop.load(std::sync::atomic::Ordering::Acquire) || seen < 10 {
            let snap = db.snapshot();
            let values: Vec<_> = [&d, &a, &b]
                .iter()
                .map(|ks| snap.keyspace(ks).unwrap().get("n").unwrap())
                .collect();
            assert!(
                values.iter().all(|v| *v == values[0]),
                "a batch seen in part: {values:?}"
            );
            seen += 1;
        }
    });
    assert!(db.stats().flushes > 0);
    let snap = db.snapshot();
    let last = Some(2999u64.to_be_bytes().to_vec());
    for ks in [&d, &a, &b] {
        let got = snap.keyspace(ks).unwrap().get("n").unwrap();
        assert_eq!(got.map(|v| v.to_vec()), last);
    }
}

#[test]
fn reopen_and_read_only_open_list_and_read_every_keyspace() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["alpha", "beta", "gamma"];
    {
        let db = Db::open_with(dir.path(), tiny_options()).unwrap();
        for (i, name) in names.iter().enumerate() {
            let ks = db.keyspace(name).unwrap();
            for j in 0..200 {
                ks.put(format!("{name}/{j:04}"), format!("{i}:{j}"))
                    .unwrap();
            }
        }
        // "beta" in tables, the others partly in the WAL.
        db.existing_keyspace("beta").unwrap().flush().unwrap();
        db.put("d", "default").unwrap();
    }
    let check = |db: &Db| {
        assert_eq!(db.keyspaces(), ["default", "alpha", "beta", "gamma"]);
        assert_eq!(db.get("d").unwrap().as_deref(), Some(&b"default"[..]));
        for (i, name) in names.iter().enumerate() {
            let ks = db.existing_keyspace(name).unwrap();
            assert_eq!(ks.len().unwrap(), 200, "{name}");
            assert_eq!(get(&ks, &format!("{name}/0123")), Some(format!("{i}:123")));
            assert_eq!(ks.prefix(format!("{name}/00")).count(), 100);
        }
    };
    let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
    check(&ro);
    drop(ro);
    let db = Db::open_with(dir.path(), tiny_options()).unwrap();
    check(&db);
    // A new keyspace after a reopen takes the next id, never a used one.
    assert_eq!(db.keyspace("delta").unwrap().id(), 4);
    drop(db);
    let db = Db::open_with(dir.path(), tiny_options()).unwrap();
    assert_eq!(
        db.keyspaces(),
        ["default", "alpha", "beta", "gamma", "delta"]
    );
    let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert_eq!(ro.keyspaces(), db.keyspaces());
    assert_eq!(ro.existing_keyspace("gamma").unwrap().len().unwrap(), 200);
}

/// The WAL (here, the one kept by the last open) and the manifest of a
/// database with keyspace "a" (id 1): a record holding `ops` at sequence
/// `seq` replaces the WAL's contents.
fn rewrite_wal(dir: &Path, seq: u64, count: u32, ops: &[u8]) {
    let wals = common::files_with_ext(dir, "log");
    assert_eq!(wals.len(), 1, "{wals:?}");
    let mut payload = seq.to_le_bytes().to_vec();
    payload.extend_from_slice(&count.to_le_bytes());
    payload.extend_from_slice(ops);
    fs::write(&wals[0], log_record(&payload)).unwrap();
}

#[test]
fn an_op_of_a_never_created_keyspace_in_a_wal_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let seq = {
        let db = Db::open(dir.path()).unwrap();
        db.keyspace("a").unwrap();
        db.last_sequence().0 + 1
    };
    // put x=1 in keyspace 1 ("a"), then put y=2 in keyspace 2 (never
    // created).
    let ops = [
        0x11, 0x01, 0x01, b'x', 0x01, b'1', 0x11, 0x02, 0x01, b'y', 0x01, b'2',
    ];
    rewrite_wal(dir.path(), seq, 2, &ops);
    let before = common::dir_contents(dir.path());
    for e in [
        Db::open(dir.path()).unwrap_err(),
        Db::open_read_only(dir.path(), Options::default()).unwrap_err(),
    ] {
        match e {
            Error::Corruption { detail, .. } => assert!(
                detail.contains("a write to keyspace 2, which the manifest does not hold"),
                "{detail}"
            ),
            other => panic!("expected Corruption, got {other:?}"),
        }
    }
    assert_eq!(common::dir_contents(dir.path()), before);
    // Control: keyspace 1's op alone replays into keyspace "a".
    rewrite_wal(dir.path(), seq, 1, &ops[..6]);
    let db = Db::open(dir.path()).unwrap();
    let a = db.existing_keyspace("a").unwrap();
    assert_eq!(get(&a, "x").as_deref(), Some("1"));
    assert_eq!(db.get("x").unwrap(), None);
}

/// Random puts, deletes and range deletions in three keyspaces, with
/// flushes of one or all keyspaces, compactions and reopens, against a
/// `BTreeMap` per keyspace; every table carries its keyspace's id.
#[test]
fn flush_and_compaction_inside_a_keyspace_keep_its_data_separate() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["default", "a", "b"];
    let mut models: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = vec![BTreeMap::new(); 3];
    let mut rng = Rng(0x5eed);
    let mut rollovers = 0;
    let mut db = Db::open_with(dir.path(), tiny_options()).unwrap();
    let handles =
        |db: &Db| -> Vec<Keyspace> { names.iter().map(|n| db.keyspace(n).unwrap()).collect() };
    let mut ks = handles(&db);
    let check = |ks: &[Keyspace], models: &[BTreeMap<Vec<u8>, Vec<u8>>]| {
        for (k, model) in ks.iter().zip(models) {
            let got = pairs(k.iter());
            let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            assert_eq!(got, want, "keyspace {}", k.name());
            for f in k.live_files() {
                assert_eq!(f.properties.keyspace, k.id(), "{}", f.path.display());
            }
        }
    };
    for step in 0..6000u64 {
        let i = rng.below(3) as usize;
        let key = format!("k{:03}", rng.below(400)).into_bytes();
        match rng.below(100) {
            0..=59 => {
                let value = format!("{}:{step}:{}", names[i], "v".repeat(40)).into_bytes();
                ks[i].put(&key, &value).unwrap();
                models[i].insert(key, value);
            }
            60..=84 => {
                ks[i].delete(&key).unwrap();
                models[i].remove(&key);
            }
            85..=89 => {
                let end = format!("k{:03}", rng.below(400)).into_bytes();
                let (lo, hi) = if key <= end { (key, end) } else { (end, key) };
                ks[i].delete_range(lo.clone()..hi.clone()).unwrap();
                models[i].retain(|k, _| !(lo <= *k && *k < hi));
            }
            90..=93 => {
                // A batch over every keyspace.
                let mut batch = WriteBatch::new();
                for (j, k) in ks.iter().enumerate() {
                    let value = format!("batch{step}").into_bytes();
                    batch.put_in(k, &key, &value).unwrap();
                    models[j].insert(key.clone(), value);
                }
                db.write(batch).unwrap();
            }
            94..=95 => ks[i].flush().unwrap(),
            96 => db.flush().unwrap(),
            97 => ks[i].compact().unwrap(),
            98 => {
                check(&ks, &models);
            }
            _ => {
                rollovers += db.stats().manifest_rollovers;
                drop(ks);
                drop(db);
                db = Db::open_with(dir.path(), tiny_options()).unwrap();
                ks = handles(&db);
                check(&ks, &models);
            }
        }
    }
    db.wait_for_compactions().unwrap();
    check(&ks, &models);
    rollovers += db.stats().manifest_rollovers;
    assert!(db.stats().compactions > 0);
    assert!(rollovers > 0);
    drop(ks);
    drop(db);
    let db = Db::open_read_only(dir.path(), Options::default()).unwrap();
    check(&handles(&db), &models);
}

/// `Db::stats` lists every keyspace (default first) and sums their
/// memory; `Keyspace::stats` gives one keyspace's tree and its own flush
/// count (DESIGN.md 2).
#[test]
fn stats_list_every_keyspace_and_memory_sums_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let (a, b) = (db.keyspace("a").unwrap(), db.keyspace("b").unwrap());
    db.put("d", "in the default's memtable").unwrap();
    for i in 0..100 {
        a.put(format!("a{i:03}"), "flushed").unwrap();
    }
    a.flush().unwrap();
    a.delete_range("a0".."a1").unwrap();
    for i in 0..50 {
        b.put(format!("b{i:03}"), "in b's memtable").unwrap();
    }
    let s = db.stats();
    let names: Vec<(u32, &str)> = s.keyspaces.iter().map(|k| (k.id, &*k.name)).collect();
    assert_eq!(names, [(0, "default"), (1, "a"), (2, "b")]);
    let (d, ka, kb) = (&s.keyspaces[0], &s.keyspaces[1], &s.keyspaces[2]);
    // The compatibility fields are the default's.
    assert_eq!(s.levels, d.levels);
    assert_eq!(s.levels[0].files, 0);
    assert_eq!((ka.levels[0].files, ka.levels[0].entries), (1, 100));
    assert_eq!(kb.levels[0].files, 0);
    assert_eq!((s.range_tombstones, ka.range_tombstones), (0, 1));
    assert!(d.memtable_bytes > 0 && kb.memtable_bytes > d.memtable_bytes);
    assert_eq!((ka.flushes, kb.flushes, s.flushes), (1, 0, 1));
    // "a"'s log number is the WAL its flush rotated to: the newest.
    let newest = *common::wal_numbers(dir.path()).last().unwrap();
    assert_eq!(ka.log_number, newest);
    // Memory sums every keyspace: the memtables, and a's table's filter.
    let memtables: u64 = s.keyspaces.iter().map(|k| k.memtable_bytes).sum();
    assert_eq!(s.memory.memtables, memtables);
    let one = a.stats();
    assert!(one.memory.pinned_filters > 0);
    assert_eq!(s.memory.pinned_filters, one.memory.pinned_filters);
    assert_eq!(
        s.memory.pinned_indexes, one.memory.pinned_indexes,
        "only a has a table"
    );
    // One keyspace's stats: its tree, its flushes, itself listed.
    assert_eq!(one.levels, ka.levels);
    assert_eq!((one.flushes, one.range_tombstones), (1, 1));
    assert_eq!(one.keyspaces, std::slice::from_ref(ka));
    assert_eq!(one.memory.memtables, ka.memtable_bytes);
    assert_eq!(b.stats().flushes, 0);
    assert_eq!(b.stats().memory.memtables, kb.memtable_bytes);
}

/// `siftdb::inspect` reads every keyspace: `DbSnapshot` holds one tree
/// per keyspace (its tables, and its writes in the live WALs), `explain`
/// and `explain_prefix` trace a lookup in the keyspace selected (by name
/// or id; `NoSuchKeyspace` for none), `stats` lists each, and `verify_db`
/// checks every keyspace's tables and finds them sound.
#[test]
fn inspection_reads_every_keyspace() {
    use siftdb::inspect::{
        explain, explain_prefix, verify_db, DbSnapshot, ExplainSource, KeyspaceSelector,
        PrefixOutcome, Verdict,
    };
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let (a, b) = (db.keyspace("a").unwrap(), db.keyspace("b").unwrap());
    db.put("k", "default").unwrap();
    a.put("k", "in a's table").unwrap();
    a.flush().unwrap();
    a.put("m", "in a's memtable").unwrap();
    b.put("k", "in b").unwrap();
    b.delete_range("x".."y").unwrap();
    let snap = DbSnapshot::open(dir.path()).unwrap();
    let trees: Vec<(u32, &str, usize)> = snap
        .keyspaces
        .iter()
        .map(|t| (t.id, &*t.name, t.tables().len()))
        .collect();
    assert_eq!(trees, [(0, "default", 0), (1, "a", 1), (2, "b", 0)]);
    let a_tables = snap
        .tree(&KeyspaceSelector::Name("a".into()))
        .unwrap()
        .tables();
    assert_eq!(a_tables[0].properties.keyspace, 1);
    assert_eq!(snap.last_sequence, db.last_sequence());
    // The default's put keeps the first WAL live, with a's first put
    // (also in a's table, so not in its tree's memtables).
    assert_eq!(snap.wals.iter().map(|w| w.ops).sum::<u64>(), 4);
    let a_mems: Vec<usize> = snap.keyspaces[1].mems.iter().map(|m| m.mem.len()).collect();
    assert_eq!(a_mems, [1]);
    assert_eq!(snap.wals.iter().map(|w| w.range_deletions).sum::<u64>(), 1);

    let get = |sel: KeyspaceSelector, key: &str| explain(&snap, &sel, key.as_bytes());
    let value = |sel: KeyspaceSelector, key: &str| get(sel, key).unwrap().verdict;
    let name = |n: &str| KeyspaceSelector::Name(n.into());
    assert_eq!(
        value(KeyspaceSelector::Default, "k"),
        Verdict::Value(b"default".to_vec())
    );
    let in_a = get(name("a"), "k").unwrap();
    assert_eq!(in_a.verdict, Verdict::Value(b"in a's table".to_vec()));
    assert!(matches!(
        in_a.steps.last().unwrap().source,
        ExplainSource::Table { level: 0, .. }
    ));
    assert_eq!(
        value(KeyspaceSelector::Id(1), "m"),
        Verdict::Value(b"in a's memtable".to_vec())
    );
    assert_eq!(value(name("b"), "k"), Verdict::Value(b"in b".to_vec()));
    assert_eq!(value(name("b"), "m"), Verdict::Absent);
    assert!(matches!(
        value(name("b"), "xx"),
        Verdict::RangeDeleted { .. }
    ));
    assert_eq!(value(KeyspaceSelector::Default, "m"), Verdict::Absent);
    for (sel, shown) in [(name("nope"), "nope"), (KeyspaceSelector::Id(9), "id 9")] {
        match get(sel, "k") {
            Err(Error::NoSuchKeyspace(n)) => assert_eq!(n, shown),
            other => panic!("expected NoSuchKeyspace, got {other:?}"),
        }
    }
    let p = explain_prefix(&snap, &name("a"), b"k").unwrap();
    let read: Vec<u64> = p
        .steps
        .iter()
        .filter_map(|s| match s.outcome {
            PrefixOutcome::Read { entries, .. } => Some(entries),
            _ => None,
        })
        .collect();
    assert_eq!(read, [1]);

    // The same shape as the engine's own stats, keyspace by keyspace.
    let (mine, engine) = (snap.stats(), db.stats());
    assert_eq!(mine.keyspaces.len(), 3);
    for (m, e) in mine.keyspaces.iter().zip(&engine.keyspaces) {
        assert_eq!((m.id, &m.name, &m.levels), (e.id, &e.name, &e.levels));
        assert_eq!(m.log_number, e.log_number);
        assert_eq!(m.range_tombstones, e.range_tombstones);
    }
    assert_eq!(mine.memory.pinned_filters, engine.memory.pinned_filters);

    let report = verify_db(dir.path(), true, &mut |_, _| {}).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!((report.tables, report.wal_records), (1, 5));
}

/// A `Keyspace` handle that outlives its database writes nothing once it
/// closed (its lock is let go: another handle may open the directory).
#[test]
fn a_handle_outliving_its_database_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let closing = Db::open(dir.path()).unwrap();
    let orphan = closing.keyspace("x").unwrap();
    closing.close().unwrap();
    assert!(matches!(orphan.put("k", "v"), Err(Error::Background(_))));
}

/// Salvage reads one keyspace (DESIGN.md 11.1): with the
/// manifest, its tables and its WAL ops, by name or id; with the manifest
/// destroyed, the tables whose `siftdb.keyspace` property names it (absent:
/// the default) and its WAL ops, by id only.
#[test]
fn salvage_reads_one_keyspace_with_or_without_the_manifest() {
    use siftdb::inspect::{KeyspaceSelector, Salvage};
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path()).unwrap();
        let (a, b) = (db.keyspace("a").unwrap(), db.keyspace("b").unwrap());
        for k in ["d1", "d2"] {
            db.put(k, "default").unwrap();
        }
        for k in ["a1", "a2", "a3"] {
            a.put(k, "a's table").unwrap();
        }
        b.put("b1", "b's table").unwrap();
        db.flush().unwrap();
        a.put("a4", "a's WAL").unwrap();
        a.delete("a1").unwrap();
        b.put("a2", "b's WAL").unwrap();
        db.put("d3", "default's WAL").unwrap();
    }
    let salvage = |sel: KeyspaceSelector| -> siftdb::Result<(Vec<String>, _)> {
        let mut s = Salvage::open(dir.path(), &sel)?;
        let keys = s
            .by_ref()
            .map(|e| {
                let (k, v) = (e.key, e.value);
                format!(
                    "{}={}",
                    String::from_utf8(k).unwrap(),
                    String::from_utf8(v).unwrap()
                )
            })
            .collect();
        Ok((keys, s.finish()))
    };
    let expected_a = ["a2=a's table", "a3=a's table", "a4=a's WAL"];
    let expected_d = ["d1=default", "d2=default", "d3=default's WAL"];
    let expected_b = ["a2=b's WAL", "b1=b's table"];
    let (keys, report) = salvage(KeyspaceSelector::Name("a".into())).unwrap();
    assert_eq!(keys, expected_a);
    assert!(report.is_complete(), "{report:?}");
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    assert_eq!(report.keyspace_name.as_deref(), Some("a"));
    assert_eq!(
        (report.keyspace, &report.keyspaces[..]),
        (1, &[0, 1, 2][..])
    );
    assert_eq!(report.tables.len(), 1);
    let (keys, report) = salvage(KeyspaceSelector::Id(2)).unwrap();
    assert_eq!(keys, expected_b);
    let b_table = report.tables[0].path.clone();
    assert_eq!(salvage(KeyspaceSelector::Default).unwrap().0, expected_d);
    assert!(matches!(
        salvage(KeyspaceSelector::Name("nope".into())),
        Err(Error::NoSuchKeyspace(n)) if n == "nope"
    ));

    // The manifest destroyed: tables by their property, names unknown.
    for f in common::files_where(dir.path(), |n| n.starts_with("MANIFEST") || n == "CURRENT") {
        fs::remove_file(f).unwrap();
    }
    let (keys, report) = salvage(KeyspaceSelector::Id(1)).unwrap();
    assert_eq!(keys, expected_a);
    assert!(report.file_set.is_directory());
    assert_eq!(
        (report.keyspace, report.keyspace_name.as_deref()),
        (1, None)
    );
    assert_eq!(report.keyspaces, [0, 1, 2]);
    assert_eq!(report.tables.len(), 1);
    assert_eq!(report.possibly_stale, 0);
    assert_eq!(salvage(KeyspaceSelector::Id(2)).unwrap().0, expected_b);
    assert_eq!(salvage(KeyspaceSelector::Default).unwrap().0, expected_d);
    let by_name = salvage(KeyspaceSelector::Name("default".into())).unwrap();
    assert_eq!(by_name.0, expected_d);
    match salvage(KeyspaceSelector::Name("a".into())) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("select it by id"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // An id no table or op names: nothing, and nothing lost.
    let (keys, report) = salvage(KeyspaceSelector::Id(7)).unwrap();
    assert!(keys.is_empty());
    assert_eq!(report.keyspaces, [0, 1, 2]);
    // b's table with its footer destroyed cannot be placed: skipped by
    // every salvage, each key it might have shadowed flagged.
    let mut bytes = fs::read(&b_table).unwrap();
    let n = bytes.len();
    bytes[n - 8..].fill(0);
    fs::write(&b_table, bytes).unwrap();
    let (keys, report) = salvage(KeyspaceSelector::Default).unwrap();
    assert_eq!(keys, expected_d);
    let unread: Vec<&str> = report
        .tables
        .iter()
        .filter_map(|t| t.unreadable.as_ref().map(|u| &*u.what))
        .collect();
    assert_eq!(unread, ["properties block"]);
    assert_eq!(report.possibly_stale, 3);
    assert!(!report.is_complete());
}

/// The offsets of the records of the log file at `path` (DESIGN.md 12.2:
/// a 12-byte header whose first 4 bytes are the payload length; the files
/// here are shorter than one 32 KiB block).
fn record_offsets(path: &Path) -> Vec<u64> {
    let bytes = fs::read(path).unwrap();
    assert!(bytes.len() < 32 << 10);
    let mut offsets = Vec::new();
    let mut at = 0usize;
    while at + 12 <= bytes.len() {
        offsets.push(at as u64);
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        at += 12 + len;
    }
    offsets
}

/// A WAL cut (here by hand: damage) below the log number of a keyspace
/// whose tables hold writes newer than the cut would reopen as no prefix
/// (keyspace "a"'s put present, the default's older put missing): open
/// refuses it as `Corruption` (DESIGN.md 8, step 5).
#[test]
fn a_wal_cut_below_a_keyspaces_log_number_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path()).unwrap();
        let a = db.keyspace("a").unwrap();
        for i in 0..5 {
            db.put(format!("d{i}"), "older").unwrap();
        }
        a.put("x", "newer").unwrap();
        // "a" alone rotates and flushes: its log number passes the WAL
        // that still holds the default's puts.
        a.flush().unwrap();
    }
    let wals = common::files_with_ext(dir.path(), "log");
    assert_eq!(wals.len(), 2, "{wals:?}");
    // Cut the first WAL inside the record of the default's last put (the
    // record before "a"'s).
    let offsets = record_offsets(&wals[0]);
    let cut = offsets[offsets.len() - 2] + 5;
    let f = fs::OpenOptions::new().write(true).open(&wals[0]).unwrap();
    f.set_len(cut).unwrap();
    drop(f);
    let before = common::dir_contents(dir.path());
    match Db::open(dir.path()) {
        Err(Error::Corruption { file, detail, .. }) => {
            assert_eq!(file, wals[0]);
            assert!(detail.contains("keyspace \"a\" has tables"), "{detail}");
        }
        Err(e) => panic!("expected Corruption, got {e}"),
        Ok(db) => {
            let a = db.existing_keyspace("a").unwrap();
            panic!(
                "opened with d4 {:?} and a's x {:?}",
                db.get("d4").unwrap(),
                a.get("x").unwrap()
            )
        }
    }
    assert_eq!(common::dir_contents(dir.path()), before);
}

/// A `Keyspace` handle that outlives its `Db` fails its reads as it fails
/// its writes: another handle may have opened the directory and changed
/// the keyspace since (a new-user trial read "old" through the stale
/// handle after a new `Db` had written "new").
#[test]
fn a_handle_of_a_closed_database_refuses_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let a = db.keyspace("a").unwrap();
    a.put("k", "old").unwrap();
    assert_eq!(a.get("k").unwrap().as_deref(), Some(&b"old"[..]));
    drop(db);
    let db = Db::open(dir.path()).unwrap();
    db.keyspace("a").unwrap().put("k", "new").unwrap();
    assert!(matches!(a.get("k"), Err(Error::Background(m)) if m.contains("closed")));
    assert!(matches!(a.put("k", "x"), Err(Error::Background(_))));
    let fresh = db.existing_keyspace("a").unwrap();
    assert_eq!(fresh.get("k").unwrap().as_deref(), Some(&b"new"[..]));
}
