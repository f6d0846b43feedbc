//! Put, get, delete, batches, iteration, flush and reopen, including the
//! cases from public bug reports listed in the core-engine issue.

mod common;

use common::{keys, open, small_options};
use siftdb::{Db, Error, Options, Slice, WriteBatch};

#[test]
fn put_get_delete_overwrite_across_flush_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small_options();
    {
        let db = open(dir.path(), &opts);
        db.put("a", "1").unwrap();
        db.put("b", "2").unwrap();
        db.flush().unwrap();
        db.put("a", "3").unwrap();
        db.delete("b").unwrap();
        assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"3"[..]));
        assert_eq!(db.get("b").unwrap(), None);
        db.flush().unwrap();
        assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"3"[..]));
        assert_eq!(db.get("b").unwrap(), None);
        db.put("c", "4").unwrap(); // only in the WAL at close
    }
    let db = open(dir.path(), &opts);
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(db.get("b").unwrap(), None);
    assert_eq!(db.get("c").unwrap().as_deref(), Some(&b"4"[..]));
    assert_eq!(keys(db.range(..)), ["a", "c"]);
}

#[test]
fn table_holding_only_a_tombstone() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small_options();
    {
        let db = open(dir.path(), &opts);
        db.put("b1", "old").unwrap();
        db.flush().unwrap();
        db.delete("b1").unwrap();
        db.flush().unwrap();
        assert_eq!(db.get("b1").unwrap(), None);
        assert!(keys(db.range("a".."c")).is_empty());
        let s = db.stats();
        assert_eq!(s.levels[0].files, 2);
        assert_eq!(s.levels[0].tombstones, 1, "the flush kept the tombstone");
    }
    let db = open(dir.path(), &opts);
    assert_eq!(db.get("b1").unwrap(), None);
    assert!(keys(db.range("a".."c")).is_empty());
}

#[test]
fn several_versions_of_one_key_in_one_flush() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), &small_options());
    db.put("k", "1").unwrap();
    db.delete("k").unwrap();
    db.put("k", "2").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(db.stats().levels[0].entries, 3);
    assert_eq!(db.stats().levels[0].distinct_keys, 1);
}

#[test]
fn empty_value_is_not_a_tombstone() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small_options();
    {
        let db = open(dir.path(), &opts);
        db.put("k", "").unwrap();
        db.delete("j").unwrap();
        assert_eq!(db.get("k").unwrap().map(Vec::from), Some(vec![]));
        assert_eq!(db.get("j").unwrap(), None);
        db.flush().unwrap();
        assert_eq!(db.get("k").unwrap().map(Vec::from), Some(vec![]));
        assert_eq!(db.get("j").unwrap(), None);
    }
    let db = open(dir.path(), &opts);
    assert_eq!(db.get("k").unwrap().map(Vec::from), Some(vec![]));
    assert_eq!(db.get("j").unwrap(), None);
    assert_eq!(keys(db.range(..)), ["k"]);
}

#[test]
fn sequence_numbers_keep_rising_across_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small_options();
    {
        let db = open(dir.path(), &opts);
        db.put("k", "1").unwrap();
        db.flush().unwrap();
        db.close().unwrap();
    }
    let first_seq;
    {
        let db = open(dir.path(), &opts);
        first_seq = db.last_sequence();
        assert!(first_seq.get() >= 1);
        db.put("k", "2").unwrap();
        db.flush().unwrap();
        db.close().unwrap();
    }
    let db = open(dir.path(), &opts);
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"2"[..]));
    assert!(db.last_sequence() > first_seq);
}

#[test]
fn last_key_of_every_block_and_a_one_key_table() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.block_size = 1024;
    let db = open(dir.path(), &opts);
    for i in 0..2000 {
        db.put(format!("k{i:05}"), format!("value-{i}")).unwrap();
    }
    db.flush().unwrap();
    for i in 0..2000 {
        assert_eq!(
            db.get(format!("k{i:05}")).unwrap().map(Vec::from),
            Some(format!("value-{i}").into_bytes()),
            "k{i:05}"
        );
    }
    assert_eq!(db.get("k02000").unwrap(), None);
    assert_eq!(db.get("k").unwrap(), None);
    let s = db.stats();
    assert_eq!(s.levels[0].files, 1);
    assert_eq!(s.levels[0].entries, 2000);

    let dir2 = tempfile::tempdir().unwrap();
    let db2 = open(dir2.path(), &opts);
    db2.put("only", "one").unwrap();
    db2.flush().unwrap();
    assert_eq!(db2.get("only").unwrap().as_deref(), Some(&b"one"[..]));
    assert_eq!(db2.get("onlx").unwrap(), None);
    assert_eq!(db2.get("onlz").unwrap(), None);
    assert_eq!(keys(db2.range(..).rev()), ["only"]);
}

#[test]
fn level0_newest_file_wins() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = small_options();
    opts.compaction_style = siftdb::CompactionStyle::None;
    {
        let db = open(dir.path(), &opts);
        for v in 1..=5 {
            db.put("same", format!("v{v}")).unwrap();
            db.put(format!("other{v}"), "x").unwrap();
            db.flush().unwrap();
        }
        assert_eq!(db.stats().levels[0].files, 5);
        assert_eq!(db.get("same").unwrap().as_deref(), Some(&b"v5"[..]));
    }
    let db = open(dir.path(), &opts);
    assert_eq!(db.get("same").unwrap().as_deref(), Some(&b"v5"[..]));
}

#[test]
fn reverse_iteration_over_deleted_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), &small_options());
    for k in ["a", "b", "c", "d", "e"] {
        db.put(k, k).unwrap();
    }
    db.flush().unwrap();
    db.delete("c").unwrap();
    assert_eq!(keys(db.range("b"..="d").rev()), ["d", "b"]);
    assert_eq!(keys(db.range("b"..="d")), ["b", "d"]);

    // Alternating ends never yields a key twice, with versions split
    // between a table and the memtable.
    db.put("b", "b2").unwrap();
    db.put("d", "d2").unwrap();
    let mut it = db.range(..);
    let mut seen = Vec::new();
    loop {
        let f = it.next().map(|r| r.unwrap().0);
        let b = it.next_back().map(|r| r.unwrap().0);
        if f.is_none() && b.is_none() {
            break;
        }
        seen.extend(f);
        seen.extend(b);
    }
    let mut sorted: Vec<String> = seen
        .into_iter()
        .map(|k| String::from_utf8(k.into_vec()).unwrap())
        .collect();
    sorted.sort();
    assert_eq!(sorted, ["a", "b", "d", "e"]);
    let values: Vec<Slice> = db.range("b"..="d").map(|r| r.unwrap().1).collect();
    assert_eq!(values, [b"b2".to_vec(), b"d2".to_vec()]);
    let values: Vec<Slice> = db.range("b"..="d").rev().map(|r| r.unwrap().1).collect();
    assert_eq!(values, [b"d2".to_vec(), b"b2".to_vec()]);
}

#[test]
fn prefix_scan() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), &small_options());
    for k in ["lib", "liba", "libz", "lic", "li\u{ff}", "python3-x"] {
        db.put(k, "v").unwrap();
    }
    db.flush().unwrap();
    db.put("libb", "v").unwrap();
    assert_eq!(keys(db.prefix("lib")), ["lib", "liba", "libb", "libz"]);
    assert_eq!(
        keys(db.prefix("lib").rev()),
        ["libz", "libb", "liba", "lib"]
    );
    assert_eq!(keys(db.prefix("")).len(), 7);
    assert!(keys(db.prefix("zzz")).is_empty());
}

#[test]
fn batches_apply_atomically_and_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), &small_options());
    let mut b = WriteBatch::new();
    b.put("x", "1").unwrap();
    b.put("y", "2").unwrap();
    b.delete("x").unwrap();
    b.put("y", "3").unwrap();
    db.write(b).unwrap();
    assert_eq!(db.get("x").unwrap(), None);
    assert_eq!(db.get("y").unwrap().as_deref(), Some(&b"3"[..]));
    assert_eq!(db.last_sequence().get(), 4);
    db.write(WriteBatch::new()).unwrap();
    assert_eq!(
        db.last_sequence().get(),
        4,
        "an empty batch takes no sequence"
    );
}

#[test]
fn over_long_keys_are_invalid_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), &small_options());
    let long = vec![b'k'; 65_536];
    assert!(matches!(db.put(&long, "v"), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.delete(&long), Err(Error::InvalidArgument(_))));
    assert!(matches!(db.get(&long), Err(Error::InvalidArgument(_))));
    assert_eq!(db.last_sequence().get(), 0);
    let max = vec![b'k'; 65_535];
    db.put(&max, "v").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(&max).unwrap().as_deref(), Some(&b"v"[..]));
    // Values over MAX_VALUE_LEN are checked by length (see write_batch unit tests);
    // the check used by put is the same function.
    assert!(siftdb::inspect::write_batch::check_lengths(0, u64::from(u32::MAX) + 1).is_err());
}

#[test]
fn second_open_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), &small_options());
    match Db::open(dir.path()) {
        Err(Error::Locked(p)) => assert_eq!(p, dir.path()),
        other => panic!("expected Locked, got {other:?}"),
    }
    drop(db);
    Db::open(dir.path()).expect("lock released on drop");
}

#[test]
fn paths_that_are_not_databases() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "hello").unwrap();
    assert!(matches!(Db::open(&file), Err(Error::NotADatabase { .. })));
    assert_eq!(std::fs::read(&file).unwrap(), b"hello");

    let other = dir.path().join("photos");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("cat.jpg"), "jpeg").unwrap();
    assert!(matches!(Db::open(&other), Err(Error::NotADatabase { .. })));
    assert_eq!(
        std::fs::read_dir(&other).unwrap().count(),
        1,
        "nothing created"
    );

    let mut o = Options::default();
    o.create_if_missing = false;
    assert!(matches!(
        Db::open_with(dir.path().join("missing"), o),
        Err(Error::NotADatabase { .. })
    ));
    assert!(!dir.path().join("missing").exists());

    // An empty directory without create_if_missing: refused, left empty.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let mut o = Options::default();
    o.create_if_missing = false;
    assert!(matches!(
        Db::open_with(&empty, o),
        Err(Error::NotADatabase { .. })
    ));
    assert_eq!(
        std::fs::read_dir(&empty).unwrap().count(),
        0,
        "no LOCK left behind"
    );
}

#[test]
fn concurrent_readers_and_writer() {
    let dir = tempfile::tempdir().unwrap();
    let db = std::sync::Arc::new(open(dir.path(), &small_options()));
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            for i in 0..5000u32 {
                db.put(format!("key{:04}", i % 500), i.to_le_bytes())
                    .unwrap();
            }
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || {
                for round in 0..200u32 {
                    let k = format!("key{:04}", round % 500);
                    if let Some(v) = db.get(&k).unwrap() {
                        let i = u32::from_le_bytes(v[..].try_into().unwrap());
                        assert_eq!(i % 500, round % 500, "value belongs to its key");
                    }
                }
            })
        })
        .collect();
    writer.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    for k in 0..500u32 {
        let v = db.get(format!("key{k:04}")).unwrap().unwrap();
        assert_eq!(u32::from_le_bytes(v[..].try_into().unwrap()), 4500 + k);
    }
}

fn dir_contents(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn read_only_open_changes_nothing_and_ignores_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small_options();
    {
        let db = open(dir.path(), &opts);
        db.put("a", "1").unwrap();
        db.flush().unwrap();
        db.put("b", "2").unwrap(); // only in the WAL
        db.delete("a").unwrap();
    }
    let before = dir_contents(dir.path());
    {
        let ro = Db::open_read_only(dir.path(), opts.clone()).unwrap();
        assert_eq!(
            ro.get("a").unwrap().map(Vec::from),
            None,
            "the WAL's delete is replayed in memory"
        );
        assert_eq!(ro.get("b").unwrap().as_deref(), Some(&b"2"[..]));
        assert_eq!(keys(ro.range(..)), ["b"]);
        assert!(matches!(ro.put("c", "3"), Err(Error::ReadOnly)));
        // Even an empty batch: a write to a read-only handle is refused.
        assert!(matches!(
            ro.write(siftdb::WriteBatch::new()),
            Err(Error::ReadOnly)
        ));
        assert!(matches!(ro.delete("b"), Err(Error::ReadOnly)));
        assert!(matches!(ro.flush(), Err(Error::ReadOnly)));
        assert!(matches!(ro.compact(), Err(Error::ReadOnly)));
        ro.close().unwrap();
    }
    assert_eq!(
        dir_contents(dir.path()),
        before,
        "read-only open wrote nothing"
    );

    // It also works while a writer holds the LOCK.
    let writer = open(dir.path(), &opts);
    writer.put("c", "3").unwrap();
    let ro = Db::open_read_only(dir.path(), opts.clone()).unwrap();
    assert_eq!(keys(ro.range(..)), ["b", "c"]);
    drop(ro);
    drop(writer);

    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(
        Db::open_read_only(empty.path(), opts.clone()),
        Err(Error::NotADatabase { .. })
    ));
    assert!(matches!(
        Db::open_read_only(empty.path().join("missing"), opts),
        Err(Error::NotADatabase { .. })
    ));
    assert_eq!(std::fs::read_dir(empty.path()).unwrap().count(), 0);
}

#[test]
fn read_only_opens_succeed_while_a_writer_flushes_and_compacts() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = small_options();
    opts.write_buffer_size = 4 << 10;
    opts.max_bytes_for_level_base = 16 << 10;
    opts.target_file_size = 8 << 10;
    let writer = std::sync::Arc::new(open(dir.path(), &opts));
    writer.put("stable", "yes").unwrap();
    writer.flush().unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let handle = {
        let (db, stop) = (writer.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                db.put(format!("k{:06}", i % 3000), [b'v'; 64]).unwrap();
                i += 1;
            }
            i
        })
    };
    for _ in 0..100 {
        let ro = Db::open_read_only(dir.path(), opts.clone())
            .unwrap_or_else(|e| panic!("read-only open during writes: {e}"));
        assert_eq!(ro.get("stable").unwrap().as_deref(), Some(&b"yes"[..]));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let written = handle.join().unwrap();
    assert!(written > 0);
    assert!(
        writer.stats().flushes > 0,
        "the writer flushed during the test"
    );
}

/// A long value read from a table stays readable after a compaction has
/// replaced that table and deleted its file (the returned `Slice` shares
/// the file's map), and a clone of it shares its bytes.
#[test]
fn a_long_value_outlives_the_table_it_was_read_from() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let big = |i: u8| vec![i; 64 << 10];
    db.put("a", big(1)).unwrap();
    db.put("b", big(2)).unwrap();
    db.flush().unwrap();
    let a: Slice = db.get("a").unwrap().unwrap();
    let b = db.range("b"..).next().unwrap().unwrap().1;
    let clone = a.clone();
    assert_eq!(clone.as_ptr(), a.as_ptr(), "a clone shares the bytes");
    let before: Vec<_> = db.live_files().into_iter().map(|f| f.path).collect();
    db.put("a", "new").unwrap();
    db.flush().unwrap();
    db.compact().unwrap();
    assert!(
        before.iter().all(|p| !p.exists()),
        "the old table is deleted"
    );
    assert_eq!(a, big(1));
    assert_eq!(b, big(2));
    assert_eq!(db.get("a").unwrap().unwrap(), "new");
    drop(db);
    assert_eq!(clone, big(1), "and after the database is closed");
}
