//! WAL recovery: torn tails, sequence continuity, and corruption detection.

mod common;

use std::fs;
use std::path::PathBuf;

use common::{files_with_ext, open, small_options};
use siftdb::{Db, Error};

#[test]
fn torn_wal_tail_is_cut_before_new_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = small_options();
    opts.sync = true;
    {
        let db = open(dir.path(), &opts);
        db.put("A", "a").unwrap();
        db.put("B", "b").unwrap();
        db.put("C", "c".repeat(100)).unwrap();
    }
    let wals = files_with_ext(dir.path(), "log");
    assert_eq!(wals.len(), 1, "{wals:?}");
    let len = fs::metadata(&wals[0]).unwrap().len();
    // Record C is the last 12-byte header + 12-byte batch header + 1 + 1 +
    // 1 + 1 + 100 bytes; cut it in half.
    let f = fs::OpenOptions::new().write(true).open(&wals[0]).unwrap();
    f.set_len(len - 60).unwrap();
    drop(f);
    {
        let db = open(dir.path(), &opts);
        assert_eq!(db.get("A").unwrap().as_deref(), Some(&b"a"[..]));
        assert_eq!(db.get("B").unwrap().as_deref(), Some(&b"b"[..]));
        assert_eq!(db.get("C").unwrap(), None);
        // The open says what it replayed and what it dropped: record C
        // started 128 bytes before the old end, and 68 of them were left.
        let r = db.recovery();
        assert_eq!(r.wals.len(), 1, "{r:?}");
        let w = &r.wals[0];
        assert_eq!(w.path, wals[0]);
        assert_eq!((w.size, w.batches, w.entries), (len - 60, 2, 2), "{r:?}");
        let torn = w.torn_tail.as_ref().expect("a torn tail");
        assert_eq!(torn.offset, len - 128, "{r:?}");
        assert_eq!(r.dropped_bytes(), 68);
        assert_eq!((r.batches(), r.entries()), (2, 2));
        db.put("D", "d").unwrap();
    }
    let db = open(dir.path(), &opts);
    for (k, v) in [("A", "a"), ("B", "b"), ("D", "d")] {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_bytes()), "{k}");
    }
    assert_eq!(db.get("C").unwrap(), None);
    // A clean reopen: the same WAL, its torn tail cut by the last open,
    // holds A and B, then D.
    let r = db.recovery();
    assert_eq!(r.wals.len(), 1, "{r:?}");
    assert!(r.wals[0].torn_tail.is_none(), "{r:?}");
    assert_eq!((r.batches(), r.entries(), r.dropped_bytes()), (3, 3, 0));
    assert!(r.manifest_torn_tail.is_none());
}

#[test]
fn truncated_wal_keeps_every_synced_write_before_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = small_options();
    opts.sync = true;
    opts.write_buffer_size = 1 << 20; // stay in one WAL
    let n = 200;
    {
        let db = open(dir.path(), &opts);
        for i in 0..n {
            db.put(format!("key{i:03}"), format!("v{i:03}")).unwrap();
        }
    }
    let wal = files_with_ext(dir.path(), "log").pop().unwrap();
    let full = fs::read(&wal).unwrap();
    // Every record is the same size here; cut at several points.
    let rec = full.len() / n;
    for cut_records in [199usize, 150, 1] {
        let case = tempfile::tempdir().unwrap();
        for entry in fs::read_dir(dir.path()).unwrap() {
            let p = entry.unwrap().path();
            fs::copy(&p, case.path().join(p.file_name().unwrap())).unwrap();
        }
        let cut = cut_records * rec + rec / 2;
        let f = fs::OpenOptions::new()
            .write(true)
            .open(case.path().join(wal.file_name().unwrap()))
            .unwrap();
        f.set_len(cut as u64).unwrap();
        drop(f);
        let db = open(case.path(), &opts);
        for i in 0..n {
            let got = db.get(format!("key{i:03}")).unwrap().map(Vec::from);
            if i < cut_records {
                assert_eq!(
                    got,
                    Some(format!("v{i:03}").into_bytes()),
                    "cut {cut_records}, key {i}"
                );
            } else {
                assert_eq!(got, None, "cut {cut_records}, key {i}");
            }
        }
    }
}

#[test]
fn flipped_byte_in_sstable_data_block_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small_options();
    {
        let db = open(dir.path(), &opts);
        for i in 0..100 {
            db.put(format!("key{i:03}"), "value").unwrap();
        }
        db.flush().unwrap();
    }
    let sst = files_with_ext(dir.path(), "sst").pop().unwrap();
    let mut bytes = fs::read(&sst).unwrap();
    bytes[20] ^= 0x40; // inside the first data block
    fs::write(&sst, &bytes).unwrap();
    let db = open(dir.path(), &opts);
    match db.get("key000") {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, sst),
        other => panic!("expected corruption, got {other:?}"),
    }
    // A range scan over the bad block reports it too, and does not panic.
    let results: Vec<_> = db.range(..).collect();
    assert!(results
        .iter()
        .any(|r| matches!(r, Err(Error::Corruption { .. }))));
}

#[test]
fn interior_wal_corruption_is_reported_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = small_options();
    opts.write_buffer_size = 1 << 20;
    {
        let db = open(dir.path(), &opts);
        for i in 0..50 {
            db.put(format!("key{i:03}"), "value").unwrap();
        }
    }
    let wal = files_with_ext(dir.path(), "log").pop().unwrap();
    let mut bytes = fs::read(&wal).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    fs::write(&wal, &bytes).unwrap();
    match siftdb::Db::open_with(dir.path(), opts) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, wal),
        other => panic!("expected corruption, got {other:?}"),
    }
    assert_eq!(
        fs::read(&wal).unwrap(),
        bytes,
        "the damaged WAL is left as found"
    );
}

#[test]
fn bad_manifest_edit_is_corruption_naming_the_manifest_file() {
    use siftdb::inspect::log::LogWriter;
    use siftdb::inspect::version::edit::VersionEdit;

    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), &small_options());
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    drop(db);
    // Append a well-formed edit that deletes a table the tree never had.
    let current = fs::read_to_string(dir.path().join("CURRENT")).unwrap();
    let manifest = dir.path().join(current.trim_end());
    let len = fs::metadata(&manifest).unwrap().len();
    let mut w = LogWriter::open_truncated(&siftdb::fs::StdFs, &manifest, len).unwrap();
    let edit = VersionEdit {
        deleted_files: vec![(0, 999_999)],
        ..Default::default()
    };
    w.append(&edit.encode()).unwrap();
    w.sync().unwrap();
    drop(w);

    match siftdb::Db::open(dir.path()) {
        Err(Error::Corruption { file, detail, .. }) => {
            assert_eq!(file, manifest, "{detail}");
            assert!(detail.contains("999999"), "{detail}");
        }
        Err(e) => panic!("expected Corruption, got {e}"),
        Ok(_) => panic!("opened a database whose manifest deletes a missing table"),
    }
}

/// Damage deep in the WALs must fail the open before it writes anything:
/// replay used to flush SSTables whenever the memtable filled, so a bad
/// record found later left orphan tables behind (found by a review of
/// RELIABILITY.md's "leaves every file exactly as it was").
#[test]
fn wal_damage_found_after_a_replay_flush_changes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut big = small_options();
    big.write_buffer_size = 4 << 20;
    {
        let db = open(dir.path(), &big);
        for i in 0..300 {
            db.put(format!("key{i:04}"), "v".repeat(1000)).unwrap();
        }
    }
    let wals = files_with_ext(dir.path(), "log");
    assert_eq!(wals.len(), 1, "{wals:?}");
    // Four fifths in, replace a record by a well-framed one whose batch
    // does not decode: the log reads fine, the batch decoder objects.
    let bytes = fs::read(&wals[0]).unwrap();
    let records = siftdb::inspect::log::read_log(&wals[0]).unwrap().records;
    let k = records.len() * 4 / 5;
    let (at, next) = (records[k].offset as usize, records[k + 1].offset as usize);
    let mut damaged = bytes[..at].to_vec();
    damaged.extend(common::log_record(b"not a batch"));
    damaged.extend(&bytes[next..]);
    fs::write(&wals[0], damaged).unwrap();
    let before = common::dir_contents(dir.path());
    // A 64 KiB memtable fills several times before the damage is reached.
    let mut small = small_options();
    small.write_buffer_size = 64 << 10;
    match siftdb::Db::open_with(dir.path(), small) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, wals[0]),
        Err(e) => panic!("expected Corruption, got {e}"),
        Ok(_) => panic!("opened a database with a damaged WAL"),
    }
    let after = common::dir_contents(dir.path());
    let names = |m: &std::collections::BTreeMap<String, Vec<u8>>| {
        m.iter()
            .map(|(n, b)| (n.clone(), b.len()))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&after), names(&before), "a failed open changed files");
    assert!(after == before, "a failed open changed file contents");
}

/// A reopen with a few unflushed writes used to flush them into a level-0
/// table, so a script calling `kvctl put` in a loop made one tiny SSTable
/// per call (59 tables, write amplification 37, for 60 puts). Recovery
/// now keeps a WAL whose writes fit in the memtable, and the memtable.
#[test]
fn reopening_with_unflushed_writes_creates_no_table() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small_options();
    // Entries written so far: every round's writes are replayed at the
    // next open, because none was ever flushed.
    let mut written = 0;
    for round in 0..20u64 {
        let db = open(dir.path(), &opts);
        assert!(
            db.live_files().is_empty(),
            "round {round}: {:?}",
            db.live_files()
        );
        let r = db.recovery();
        assert_eq!(r.entries(), written, "round {round}: {r:?}");
        // Odd rounds delete the previous round's key.
        for i in 0..round {
            let deleted = i % 2 == 0 && i + 2 <= round;
            let want = (!deleted).then(|| format!("v{i}").into_bytes());
            assert_eq!(
                db.get(format!("k{i}")).unwrap().map(Vec::from),
                want,
                "round {round}, k{i}"
            );
        }
        let count = db.get("count").unwrap().map(Vec::from);
        let want = round.checked_sub(1).map(|c| c.to_string().into_bytes());
        assert_eq!(count, want, "round {round}");
        db.put(format!("k{round}"), format!("v{round}")).unwrap();
        db.put("count", round.to_string()).unwrap();
        written += 2;
        if round % 2 == 1 {
            db.delete(format!("k{}", round - 1)).unwrap();
            written += 1;
        }
        db.close().unwrap();
    }
    assert_eq!(files_with_ext(dir.path(), "sst"), Vec::<PathBuf>::new());
    assert_eq!(files_with_ext(dir.path(), "log").len(), 1);
}

/// A WAL larger than 4 MiB is flushed at open rather than kept: every later
/// open would replay it again (16 MiB of small puts: ~120 ms per open).
#[test]
fn a_wal_larger_than_4_mib_is_flushed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = small_options();
    opts.write_buffer_size = 64 << 20;
    let value = "v".repeat(1000);
    let keys = 4500; // ~4.4 MiB of WAL
    {
        let db = open(dir.path(), &opts);
        for i in 0..keys {
            db.put(format!("key{i:05}"), &value).unwrap();
        }
    }
    let wal = files_with_ext(dir.path(), "log").remove(0);
    assert!(std::fs::metadata(&wal).unwrap().len() > 4 << 20);
    let db = open(dir.path(), &opts);
    assert_eq!(db.live_files().len(), 1, "flushed into one table");
    let wals = files_with_ext(dir.path(), "log");
    assert_eq!(wals.len(), 1);
    assert_ne!(wals[0], wal, "a fresh WAL");
    assert_eq!(
        db.get("key04499").unwrap().map(Vec::from),
        Some(value.clone().into_bytes())
    );
    drop(db);

    // Just under the limit: kept.
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path(), &opts);
        for i in 0..3500 {
            db.put(format!("key{i:05}"), &value).unwrap();
        }
    }
    let wal = files_with_ext(dir.path(), "log").remove(0);
    let db = open(dir.path(), &opts);
    assert!(db.live_files().is_empty());
    assert_eq!(files_with_ext(dir.path(), "log"), vec![wal]);
}

/// A live table's file replaced by another valid table (a backup restored
/// with mixed files, a copy over the wrong name) is corruption at open,
/// naming the file, rather than read as the table the manifest names: it
/// used to answer "not found" for the lost table's keys and list the other
/// table's twice, with every command exiting 0 (found by a new-user
/// trial). The manifest records each table's size, entry count and key
/// range; the file's properties must agree.
#[test]
fn a_table_file_replaced_by_another_table_is_corruption_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = small_options();
    opts.compaction_style = siftdb::CompactionStyle::None;
    {
        let db = open(dir.path(), &opts);
        for i in 0..100 {
            db.put(format!("a{i:03}"), "value").unwrap();
        }
        db.flush().unwrap();
        for i in 0..100 {
            db.put(format!("b{i:03}"), "value").unwrap();
        }
        db.flush().unwrap();
    }
    let mut tables = files_with_ext(dir.path(), "sst");
    tables.sort();
    assert_eq!(tables.len(), 2);
    fs::copy(&tables[0], &tables[1]).unwrap();
    for e in [
        Db::open_with(dir.path(), opts.clone()).unwrap_err(),
        Db::open_read_only(dir.path(), opts.clone()).unwrap_err(),
    ] {
        match e {
            Error::Corruption { file, detail, .. } => {
                assert_eq!(file, tables[1]);
                assert!(
                    detail.contains("not the table the manifest names"),
                    "{detail}"
                );
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }
}
