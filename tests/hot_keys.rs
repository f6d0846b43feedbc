//! The read sketch through `Db` (`Options::hot_keys`): found and absent
//! lookups counted apart, snapshot reads counted, the HOTKEYS file on
//! close, and the switch's errors.

use siftdb::inspect::sketch::hot_file;
use siftdb::{Db, Error, HotKeyOptions, Options};

fn options(hot: bool) -> Options {
    let mut o = Options::default();
    o.write_buffer_size = 64 << 10;
    o.hot_keys = hot.then(HotKeyOptions::default);
    o
}

#[test]
fn hot_present_and_absent_keys_are_split_and_saved_on_close() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open_with(dir.path(), options(true)).unwrap();
    for i in 0..200u32 {
        db.put(format!("k{i:04}"), "v").unwrap();
    }
    db.put("deleted", "x").unwrap();
    db.flush().unwrap();
    db.delete("deleted").unwrap(); // memtable tombstone over a table value
    db.put("in-memtable", "m").unwrap();
    for _ in 0..50 {
        assert!(db.get("k0007").unwrap().is_some()); // from an SSTable
    }
    for _ in 0..30 {
        assert!(db.get("ghost").unwrap().is_none()); // absent everywhere
    }
    for _ in 0..20 {
        assert!(db.get("deleted").unwrap().is_none());
        assert!(db.get("in-memtable").unwrap().is_some());
    }
    let snap = db.snapshot();
    for _ in 0..5 {
        assert!(snap.get("k0007").unwrap().is_some());
    }
    for i in 0..200u32 {
        db.get(format!("k{i:04}")).unwrap();
    }
    // Over-long keys are refused before the sketch sees them.
    assert!(db.get(vec![0u8; 70_000]).is_err());

    let hot = db.hot_keys(4).unwrap();
    assert_eq!(hot.reads(), 50 + 30 + 40 + 5 + 200);
    assert_eq!(
        (hot.found_reads, hot.absent_reads),
        (50 + 20 + 5 + 200, 30 + 20)
    );
    assert_eq!((hot.width, hot.depth), (2719, 5));
    assert!(hot.error_bound() < 1.0, "ε·N = {}", hot.error_bound());
    // ε·N < 1: the estimates are exact (with probability 1 − δ each).
    let got: Vec<(&[u8], u64, u64)> = hot
        .keys
        .iter()
        .map(|k| (k.key.as_slice(), k.found, k.absent))
        .collect();
    assert_eq!(
        got,
        vec![
            (&b"k0007"[..], 56, 0),
            (&b"ghost"[..], 0, 30),
            (&b"deleted"[..], 0, 20),
            (&b"in-memtable"[..], 20, 0),
        ]
    );
    let all = db.hot_keys(usize::MAX).unwrap();
    assert_eq!(all.keys.len(), 100, "k = 100 tracked");
    drop(snap);
    db.close().unwrap();

    let saved = hot_file::read(dir.path())
        .unwrap()
        .expect("HOTKEYS written");
    assert_eq!(saved, all);
    assert!(dir.path().join("HOTKEYS").is_file());
    assert!(
        std::fs::read_dir(dir.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp")),
        "the temporary file was renamed"
    );

    // Reopen: the sketch starts empty; dropping the Db rewrites the file.
    let db = Db::open_with(dir.path(), options(true)).unwrap();
    assert_eq!(db.hot_keys(10).unwrap().reads(), 0);
    db.get("ghost").unwrap();
    drop(db);
    let saved = hot_file::read(dir.path()).unwrap().unwrap();
    assert_eq!(saved.reads(), 1);
    assert_eq!(saved.keys[0].key, b"ghost");
}

#[test]
fn switch_off_means_an_error_and_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open_with(dir.path(), options(false)).unwrap();
    db.get("a").unwrap();
    match db.hot_keys(10) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("read sketch is off"), "{m}"),
        other => panic!("{other:?}"),
    }
    db.close().unwrap();
    assert!(hot_file::read(dir.path()).unwrap().is_none());

    let mut bad = options(true);
    bad.hot_keys.as_mut().unwrap().window = 0;
    assert!(matches!(
        Db::open_with(dir.path(), bad),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn a_flipped_byte_in_hotkeys_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open_with(dir.path(), options(true)).unwrap();
    db.get("a").unwrap();
    db.close().unwrap();
    let path = dir.path().join("HOTKEYS");
    let mut b = std::fs::read(&path).unwrap();
    b[30] ^= 1;
    std::fs::write(&path, &b).unwrap();
    let e = hot_file::read(dir.path()).unwrap_err();
    assert!(e.is_corruption(), "{e}");
    assert!(e.to_string().contains("checksum"), "{e}");
    // The engine itself never reads the file: the database still opens.
    let db = Db::open_with(dir.path(), options(true)).unwrap();
    db.close().unwrap();
    assert!(hot_file::read(dir.path()).unwrap().is_some(), "rewritten");
}
