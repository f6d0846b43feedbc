//! End-to-end tests of kvctl's inspection commands (`info`, `sst`,
//! `verify`, `manifest`, `wal`, `explain`, `filters`) against databases
//! built here with small blocks and `CompactionStyle::None`, so the layout
//! (three overlapping level-0 tables and a WAL) is exact.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

mod common;

use common::{code, kvctl, ok, p, stderr, stdout, CORRUPTION_HINT};
use serde_json::{json, Value};
use siftdb::{CompactionStyle, Db, Options};

/// Runs a `--json` command that must succeed and parses its output.
fn json_ok(args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    serde_json::from_str(&stdout(&ok(kvctl(&a)))).expect("valid JSON")
}

fn options() -> Options {
    let mut o = Options::default();
    o.write_buffer_size = 64 << 10;
    o.block_size = 256;
    o.compaction_style = CompactionStyle::None;
    o
}

fn key(i: u32) -> String {
    format!("k{i:03}")
}

/// Three flushes, so three level-0 tables whose key ranges overlap:
/// 000004.sst holds k000, k003, ... ("one-i", seq 1..=100), 000006.sst
/// k001, k004, ... ("two-i", 101..=200), 000008.sst k002, k005, ...
/// ("three-i", 201..=300) plus tombstones for k003 and k006 (301, 302).
/// Then the WAL 000007.log gets `put m-key mem` (303) and `delete k001`
/// (304), never flushed.
fn build(dir: &Path) -> Db {
    let db = Db::open_with(dir, options()).unwrap();
    for r in 0..3 {
        for i in (0..300).filter(|i| i % 3 == r) {
            let v = format!("{}-{i}", ["one", "two", "three"][r as usize]);
            db.put(key(i), v).unwrap();
        }
        if r == 2 {
            db.delete(key(3)).unwrap();
            db.delete(key(6)).unwrap();
        }
        db.flush().unwrap();
    }
    db.put("m-key", "mem").unwrap();
    db.delete(key(1)).unwrap();
    db
}

/// Opens `dir` for writing. A concurrent test's `Command::spawn` may
/// briefly hold an inherited copy of the LOCK file's descriptor (between
/// its fork and exec) just after this process closed the database, so a
/// `Locked` error is retried for a moment.
fn reopen(dir: &Path) -> Db {
    for _ in 0..200 {
        match Db::open_with(dir, options()) {
            Err(siftdb::Error::Locked(_)) => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            r => return r.unwrap(),
        }
    }
    panic!("{} stayed locked", dir.display());
}

/// [`build`] in a fresh temporary directory, closed.
fn layout() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    build(&db).close().unwrap();
    (tmp, db)
}

/// Replaces a block's contents in a table file and rewrites its CRC
/// trailer, as a writer bug (not bit rot) would leave it.
fn rewrite_block(path: &Path, offset: usize, size: usize, f: impl FnOnce(&mut [u8])) {
    let mut b = std::fs::read(path).unwrap();
    f(&mut b[offset..offset + size]);
    let crc = siftdb::inspect::util::crc::crc32(&b[offset..offset + size]);
    b[offset + size..offset + size + 4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(path, b).unwrap();
}

// ---------------------------------------------------------------- info

#[test]
fn info_human_and_json() {
    let (_tmp, db) = layout();
    let out = stdout(&ok(kvctl(&["info", p(&db)])));
    for line in [
        "format version    4",
        "manifest          MANIFEST-000002 (4 edits, 197 B)",
        "last sequence     304",
        "log number        7",
        "next file number  9",
        "write amp         2.65 (8.8 KiB of SSTables written for 3.3 KiB of keys and values flushed, since creation)",
        "WAL               000007.log  65 B, 2 records, 2 updates",
        "options           stored in OPTIONS:",
        "                  block_size 256",
        "                  compaction_style none",
        "                  write_buffer_size 65536",
        "                  the SSTables' properties show:",
        "                  filter siftdb.bloom.xxh3.v1, 10 bits/key, k = 7 (3 SSTables)",
        "                  data blocks average 246 B (25 blocks)",
        "level  files     size  entries  table keys  tombstones  filter memory  bits/key",
        "L0         3  8.8 KiB      302         302           2          381 B     10.01",
        "total      3  8.8 KiB      302         302           2          381 B     10.01",
    ] {
        assert!(
            out.lines().any(|l| l == line),
            "missing {line:?} in:\n{out}"
        );
    }

    let j = json_ok(&["info", p(&db)]);
    assert_eq!(j["format_version"], 4);
    assert_eq!(
        j["manifest"],
        json!({"name": "MANIFEST-000002", "number": 2, "size": 197, "edits": 4, "torn_tail": null})
    );
    assert_eq!(j["last_sequence"], 304);
    assert_eq!(j["manifest_last_sequence"], 302);
    assert_eq!(j["log_number"], 7);
    assert_eq!(j["next_file_number"], 9);
    assert_eq!(j["user_bytes_flushed"], 3398);
    assert_eq!(j["table_bytes_written"], 8999);
    assert_eq!(j["write_amplification"], 8999.0 / 3398.0);
    assert_eq!(
        j["wals"],
        json!([{"name": "000007.log", "number": 7, "size": 65, "records": 2, "ops": 2, "range_deletions": 0, "torn_tail": null}])
    );
    assert_eq!(j["options"]["persisted"], true);
    assert_eq!(j["options"]["stored"]["block_size"], "256");
    assert_eq!(
        j["options"]["filters"],
        json!([{"policy": "siftdb.bloom.xxh3.v1", "bits_per_key": 10, "num_hashes": 7, "files": 3}])
    );
    assert_eq!(j["options"]["data_blocks"], 25);
    assert_eq!(j["levels"].as_array().unwrap().len(), 7);
    let l0 = &j["levels"][0];
    assert_eq!(l0["level"], 0);
    assert_eq!(l0["files"], 3);
    assert_eq!(l0["entries"], 302);
    assert_eq!(l0["distinct_keys"], 302);
    assert_eq!(l0["tombstones"], 2);
    assert_eq!(l0["filter_bytes"], 381);
    assert_eq!(l0["filter_bits"], 3024);
    assert_eq!(j["levels"][1]["files"], 0);
    assert_eq!(j["total"]["files"], 3);
    assert_eq!(j["total"]["bytes"], l0["bytes"]);
}

// ---------------------------------------------------------------- sst

#[test]
fn sst_list_human_and_json() {
    let (_tmp, db) = layout();
    let out = stdout(&ok(kvctl(&["sst", "list", p(&db)])));
    assert_eq!(
        out,
        "\
level  file           size  entries  keys  tombstones  key range     seq range   bits/key
L0     000008.sst  3.1 KiB      102   102           2  k002 .. k299  201 .. 302     10.04
L0     000006.sst  2.8 KiB      100   100           0  k001 .. k298  101 .. 200     10.00
L0     000004.sst  2.8 KiB      100   100           0  k000 .. k297  1 .. 100       10.00
"
    );
    let j = json_ok(&["sst", "list", p(&db)]);
    let t = j["tables"].as_array().unwrap();
    let numbers: Vec<u64> = t.iter().map(|r| r["number"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [8, 6, 4]);
    assert_eq!(
        t[2],
        json!({
            "level": 0, "number": 4, "name": "000004.sst", "size": 2905,
            "entries": 100, "distinct_keys": 100, "tombstones": 0,
            "smallest_key": "k000", "largest_key": "k297",
            "smallest_seq": 1, "largest_seq": 100, "data_blocks": 8,
            "filter_bits_per_key": 10.0,
        })
    );
    assert_eq!(t[0]["tombstones"], 2);
    // --hex prints keys as hex.
    let j = json_ok(&["sst", "list", p(&db), "--hex"]);
    assert_eq!(j["tables"][2]["smallest_key"], "6b303030");
}

#[test]
fn sst_dump_a_lone_file() {
    let (tmp, db) = layout();
    // A copy outside any database.
    let lone = tmp.path().join("lone.sst");
    std::fs::copy(db.join("000004.sst"), &lone).unwrap();
    std::fs::remove_dir_all(&db).unwrap();

    let out = stdout(&ok(kvctl(&["sst", "dump", p(&lone)])));
    assert!(out.starts_with(
        "lone.sst: 2,905 bytes, 8 data blocks, format version 1\n\
         footer: index {offset 2650, size 187}, filter {offset 2008, size 126}, properties {offset 2364, size 282}\n\
         key sketch {offset 2138, size 222}: HyperLogLog, precision 12, sparse, estimates 100 distinct keys (100 exact)\n"
    ), "{out}");
    for line in [
        "  siftdb.num_entries          100",
        "  siftdb.smallest_user_key    k000",
        "  siftdb.filter.policy        siftdb.bloom.xxh3.v1",
        "  kind         bloom",
        "  keys         100",
        "  m            1,000 bits (126 bytes in the block)",
        "  parameters   k = 7",
        "  bits/key     10.00 (configured 10)",
        "  design FPR   0.82%  = (1 - e^(-k/(m/n)))^k",
    ] {
        assert!(
            out.lines().any(|l| l == line),
            "missing {line:?} in:\n{out}"
        );
    }
    assert!(
        !out.contains("\nindex\n") && !out.contains("\nentries\n"),
        "{out}"
    );

    let out = stdout(&ok(kvctl(&["sst", "dump", p(&lone), "--index"])));
    assert!(
        out.contains(
            "  block  offset  size  last key  seq  type\n\
         \x20     0       0   262  k039       14  put\n\
         \x20     1     266   267  k081       28  put\n"
        ),
        "{out}"
    );

    let out = stdout(&ok(kvctl(&[
        "sst",
        "dump",
        p(&lone),
        "--entries",
        "--from",
        "k100",
        "--limit",
        "3",
    ])));
    assert!(
        out.ends_with(
            "entries\n\
         \x20 block  key   seq  type  value\n\
         \x20     2  k102   35  put   one-102\n\
         \x20     2  k105   36  put   one-105\n\
         \x20     2  k108   37  put   one-108\n"
        ),
        "{out}"
    );

    let j = json_ok(&[
        "sst",
        "dump",
        p(&lone),
        "--props",
        "--index",
        "--entries",
        "--filter",
    ]);
    assert_eq!(j["number"], 0);
    assert_eq!(j["size"], 2905);
    assert_eq!(j["footer"]["filter"], json!({"offset": 2008, "size": 126}));
    assert_eq!(j["properties"]["siftdb.num_entries"], 100);
    assert_eq!(j["properties"]["siftdb.largest_user_key"], "k297");
    assert_eq!(j["properties"]["siftdb.largest_seq"], 100);
    assert_eq!(j["index"].as_array().unwrap().len(), 8);
    assert_eq!(
        j["index"][7],
        json!({"block": 7, "offset": j["index"][7]["offset"], "size": j["index"][7]["size"],
               "last_key": "k297", "last_seq": 100, "last_type": "put"})
    );
    let entries = j["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 100);
    assert_eq!(
        entries[0],
        json!({"block": 0, "key": "k000", "seq": 1, "type": "put", "value": "one-0"})
    );
    let f = &j["filter"];
    assert_eq!(f["keys"], 100);
    assert_eq!(f["bits"], 1000);
    assert_eq!(f["num_hashes"], 7);
    assert_eq!(f["block_bytes"], 126);
    assert_eq!(f["warning"], false);
    let implied = f["implied_fpr"].as_f64().unwrap();
    let fraction = f["fraction_set"].as_f64().unwrap();
    assert!((implied - fraction.powi(7)).abs() < 1e-12);
    assert!((f["design_fpr"].as_f64().unwrap() - 0.008_194).abs() < 1e-5);

    // A tombstone's entry in the newest table of a fresh layout.
    let (_tmp2, db2) = layout();
    let j = json_ok(&[
        "sst",
        "dump",
        p(&db2.join("000008.sst")),
        "--entries",
        "--from",
        "k003",
        "--limit",
        "1",
    ]);
    assert_eq!(
        j["entries"],
        json!([{"block": 0, "key": "k003", "seq": 301, "type": "delete", "value": ""}])
    );
    assert_eq!(j["number"], 8);
}

// ---------------------------------------------------------------- verify

#[test]
fn verify_clean_then_a_flipped_data_block_byte() {
    let (_tmp, db) = layout();
    let out = stdout(&ok(kvctl(&["verify", p(&db)])));
    assert_eq!(
        out,
        "OK: checked manifest (4 edits), 3 SSTables (8.8 KiB: 25 data blocks, 302 entries, \
         302 keys probed in filters), 1 WAL (2 records); no problems\n"
    );
    let j = json_ok(&["verify", p(&db)]);
    assert_eq!(j["ok"], true);
    assert_eq!(j["problems"], json!([]));
    assert_eq!(
        j["checked"],
        json!({"manifest_edits": 4, "tables": 3, "table_bytes": 8999, "data_blocks": 25,
               "entries": 302, "filter_probes": 302, "wals": 1, "wal_records": 2})
    );

    // Flip one byte inside data block 1 of 000004.sst.
    let sst = db.join("000004.sst");
    let idx = json_ok(&["sst", "dump", p(&sst), "--index"]);
    let off = idx["index"][1]["offset"].as_u64().unwrap();
    assert_eq!(off, 266);
    let mut bytes = std::fs::read(&sst).unwrap();
    bytes[off as usize + 10] ^= 0x01;
    std::fs::write(&sst, &bytes).unwrap();

    let o = kvctl(&["verify", p(&db)]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let err = stderr(&o);
    let want = format!(
        "kvctl: verify: {}: data block 1 at offset 266: ",
        sst.display()
    );
    assert!(err.starts_with(&want), "{err}");
    assert!(err.contains("checksum mismatch"), "{err}");
    assert!(err.contains("hint: run `kvctl verify --all`"), "{err}");
    assert!(o.stdout.is_empty(), "{}", stdout(&o));

    // --all: the full report, still exit 3.
    let o = kvctl(&["verify", p(&db), "--all"]);
    assert_eq!(code(&o), 3);
    let out = stdout(&o);
    assert!(
        out.starts_with(&format!(
            "PROBLEM: {}: data block 1 at offset 266: ",
            sst.display()
        )),
        "{out}"
    );
    assert!(out.ends_with("; 1 problem found\n"), "{out}");
    assert_eq!(
        stderr(&o),
        "kvctl: verify: 1 problem found\nhint: keep a copy of the directory and do not write \
         to it; `kvctl export --salvage DB FILE` writes out every entry that can still be read, \
         and lists what cannot\n"
    );
    let o = kvctl(&["verify", p(&db), "--all", "--json"]);
    assert_eq!(code(&o), 3);
    let j: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["ok"], false);
    assert_eq!(j["problems"].as_array().unwrap().len(), 1);
    let pr = &j["problems"][0];
    assert_eq!(pr["file"], p(&sst));
    assert_eq!(pr["what"], "data block 1");
    assert_eq!(pr["offset"], 266);
    // The lone file too.
    let o = kvctl(&["verify", p(&sst)]);
    assert_eq!(code(&o), 3);
    assert!(
        stderr(&o).contains("data block 1 at offset 266"),
        "{}",
        stderr(&o)
    );

    // A lookup that needs the block fails as corruption too.
    let o = kvctl(&["explain", p(&db), "k042"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
}

#[test]
fn verify_reports_filter_false_negatives_and_overlaps_nothing_else() {
    let (_tmp, db) = layout();
    // An all-zero filter answers "absent" for every key: a writer bug.
    let sst = db.join("000006.sst");
    let j = json_ok(&["sst", "dump", p(&sst)]);
    let f = &j["footer"]["filter"];
    let (off, size) = (
        f["offset"].as_u64().unwrap() as usize,
        f["size"].as_u64().unwrap() as usize,
    );
    rewrite_block(&sst, off, size, |b| {
        let n = b.len() - 1;
        b[..n].fill(0);
    });
    let o = kvctl(&["verify", p(&db)]);
    assert_eq!(code(&o), 3);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{}: filter block at offset {off}: filter answers \"absent\" for 100 of the 100 keys \
             the table holds (false negatives), first \"k001\"",
            sst.display()
        )),
        "{err}"
    );
    // Lookups now miss keys the table holds: explain shows the filter
    // skipping the table that has the value.
    let j = json_ok(&["explain", p(&db), "k004"]);
    assert_eq!(j["verdict"], "absent");
    assert_eq!(j["steps"][2]["number"], 6);
    assert_eq!(j["steps"][2]["outcome"], "filter_negative");
}

#[test]
fn verify_lone_wal_and_manifest_and_usage() {
    let (_tmp, db) = layout();
    let out = stdout(&ok(kvctl(&["verify", p(&db.join("000007.log"))])));
    assert_eq!(out, "OK: checked 1 WAL (2 records); no problems\n");
    let out = stdout(&ok(kvctl(&["verify", p(&db.join("MANIFEST-000002"))])));
    assert_eq!(out, "OK: checked manifest (4 edits); no problems\n");
    let o = kvctl(&["verify", p(&db.join("CURRENT"))]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let o = kvctl(&["verify", p(&db.join("nothing"))]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    // A live table removed: corruption naming the manifest and the file.
    std::fs::remove_file(db.join("000006.sst")).unwrap();
    let o = kvctl(&["verify", p(&db)]);
    assert_eq!(code(&o), 3);
    assert!(
        stderr(&o).contains(
            "000006.sst is live according to the manifest but missing (deleted or moved: the \
             manifest may well be intact)"
        ),
        "{}",
        stderr(&o)
    );
    let o = kvctl(&["info", p(&db)]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
}

// ---------------------------------------------------------------- manifest, wal

#[test]
fn manifest_dump_human_and_json() {
    let (_tmp, db) = layout();
    let out = stdout(&ok(kvctl(&["manifest", "dump", p(&db)])));
    let want_start = "\
MANIFEST-000002: 4 edits, 197 B

edit 0 at offset 0 (12 bytes), snapshot
  tag  field                value
    1  format_version       4
    2  log_number           1
    3  next_file_number     3
    4  last_sequence        0
    7  user_bytes_flushed   0
    8  table_bytes_written  0
";
    assert!(out.starts_with(want_start), "{out}");
    let want_end = "\
edit 3 at offset 139 (46 bytes)
  tag  field                value
    2  log_number           7
    3  next_file_number     9
    4  last_sequence        302
    7  user_bytes_flushed   3398
    8  table_bytes_written  8999
    6  new_file             L0 000008.sst  3179 bytes  102 entries  2 tombstones  k002@201 put .. k299@300 put
";
    assert!(out.ends_with(want_end), "{out}");

    let j = json_ok(&["manifest", "dump", p(&db)]);
    assert_eq!(j["size"], 197);
    assert_eq!(j["torn_tail"], Value::Null);
    let r = j["records"].as_array().unwrap();
    assert_eq!(r.len(), 4);
    assert_eq!(r[1]["offset"], 24);
    assert_eq!(r[1]["size"], 45);
    assert_eq!(
        r[1]["fields"],
        json!([
            {"tag": 2, "name": "log_number", "value": 3},
            {"tag": 3, "name": "next_file_number", "value": 5},
            {"tag": 4, "name": "last_sequence", "value": 100},
            {"tag": 7, "name": "user_bytes_flushed", "value": 1062},
            {"tag": 8, "name": "table_bytes_written", "value": 2905},
            {"tag": 6, "name": "new_file", "level": 0, "number": 4, "file_size": 2905,
             "smallest": {"key": "k000", "seq": 1, "type": "put"},
             "largest": {"key": "k297", "seq": 100, "type": "put"},
             "entries": 100, "tombstones": 0},
        ])
    );
    // A manifest file directly.
    let j2 = json_ok(&["manifest", "dump", p(&db.join("MANIFEST-000002"))]);
    assert_eq!(j2["records"], j["records"]);

    // After a compaction, an edit deletes the inputs (tag 5).
    let d = reopen(&db);
    d.compact().unwrap();
    d.close().unwrap();
    let j = json_ok(&["manifest", "dump", p(&db)]);
    let deleted: Vec<u64> = j["records"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["fields"].as_array().unwrap().clone())
        .filter(|f| f["tag"] == 5)
        .map(|f| {
            assert_eq!(f["name"], "deleted_file");
            f["number"].as_u64().unwrap()
        })
        .collect();
    assert!(
        deleted.contains(&4) && deleted.contains(&6) && deleted.contains(&8),
        "{j:#}"
    );
}

#[test]
fn wal_dump_then_a_torn_tail_then_damage() {
    let (_tmp, db) = layout();
    let out = stdout(&ok(kvctl(&["wal", "dump", p(&db)])));
    assert_eq!(
        out,
        "\
000007.log: 65 B, 2 records, 2 updates
  offset  bytes  seq  op      key    value
       0     23  303  put     m-key  mem
      35     18  304  delete  k001
"
    );
    let j = json_ok(&["wal", "dump", p(&db)]);
    assert_eq!(
        j["wals"][0]["records"],
        json!([
            {"offset": 0, "batch_bytes": 23, "first_seq": 303,
             "ops": [{"seq": 303, "type": "put", "key": "m-key", "value": "mem"}]},
            {"offset": 35, "batch_bytes": 18, "first_seq": 304,
             "ops": [{"seq": 304, "type": "delete", "key": "k001", "value": null}]},
        ])
    );
    assert_eq!(j["wals"][0]["torn_tail"], Value::Null);
    assert_eq!(j["wals"][0]["number"], 7);

    // Cut the WAL in the middle of its second record.
    let wal = db.join("000007.log");
    let bytes = std::fs::read(&wal).unwrap();
    std::fs::write(&wal, &bytes[..50]).unwrap();
    let out = stdout(&ok(kvctl(&["wal", "dump", p(&db)])));
    assert_eq!(
        out,
        "\
000007.log: 50 B, 1 record, 1 update
  offset  bytes  seq  op   key    value
       0     23  303  put  m-key  mem
torn tail at offset 35: record cut off: 18 payload bytes declared, 3 present (recovery drops it: a write cut short by a crash or by a write error such as a full disk, or, if it was synced, damage to the last record)
"
    );
    let j = json_ok(&["wal", "dump", p(&wal)]);
    assert_eq!(
        j["wals"][0]["torn_tail"],
        json!({"offset": 35, "reason": "record cut off: 18 payload bytes declared, 3 present"})
    );
    assert_eq!(j["wals"][0]["records"].as_array().unwrap().len(), 1);
    assert_eq!(j["wals"][0]["corruption"], Value::Null);
    // The torn delete is gone: k001 reads from its table again.
    let j = json_ok(&["explain", p(&db), "k001"]);
    assert_eq!(j["verdict"], "value");
    assert_eq!(j["value"], "two-1");
    assert!(stdout(&ok(kvctl(&["info", p(&db)]))).contains("torn tail at offset 35"));
    let out = stdout(&ok(kvctl(&["verify", p(&db)])));
    assert!(
        out.contains("note: 000007.log: torn tail at offset 35"),
        "{out}"
    );
    // The verdict points at the note instead of saying "no problems"
    // alone: a torn tail may be damage to an acknowledged write.
    assert!(
        out.ends_with("; no damage, but see the note above\n"),
        "{out}"
    );

    // Damage inside the first record, with bytes after it: corruption.
    let mut b = bytes.clone();
    b[14] ^= 0xff;
    std::fs::write(&wal, &b).unwrap();
    let o = kvctl(&["wal", "dump", p(&db)]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("000007.log: 65 B, 0 records, 0 updates\n"),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains(&format!(
            "corruption in {} at offset 0: payload checksum mismatch",
            wal.display()
        )),
        "{}",
        stderr(&o)
    );
    // There is no repair command: the hint points at salvage.
    let salvage = "`kvctl export --salvage DB FILE` writes out every entry that can still be \
                   read, and lists what cannot";
    assert!(
        stderr(&o).ends_with(&format!(
            "\nhint: the records before the damage are listed; the database does not open with \
             this damage, but {salvage}\n"
        )),
        "{}",
        stderr(&o)
    );
    let o = kvctl(&["wal", "dump", p(&wal)]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        stderr(&o).ends_with(&format!(
            "\nhint: the records before the damage are listed (a file that is not a siftdb WAL \
             reads as damaged); a database whose live WAL has this damage does not open, but \
             {salvage}\n"
        )),
        "{}",
        stderr(&o)
    );
    let o = kvctl(&["verify", p(&db)]);
    assert_eq!(code(&o), 3);
    assert!(
        stderr(&o).ends_with(&format!(
            "\nhint: run `kvctl verify --all` to check everything and list every problem; keep \
             a copy of the directory and do not write to it; {salvage}\n"
        )),
        "{}",
        stderr(&o)
    );
}

// ---------------------------------------------------------------- explain

#[test]
fn explain_found_in_the_third_file_consulted() {
    let (_tmp, db) = layout();
    let out = stdout(&ok(kvctl(&["explain", p(&db), "k150"])));
    assert_eq!(
        out,
        "\
lookup of \"k150\" at sequence 304
  step  source                            result
     1  memtable (000007.log, 2 entries)  no version
     2  L0 000008.sst (1 of 3)            skipped by bloom filter (says absent)
     3  L0 000006.sst (2 of 3)            skipped by bloom filter (says absent)
     4  L0 000004.sst (3 of 3)            bloom filter: maybe; index entry 3 -> data block {offset 798, size 261}: found put @51
answer: value one-150 (step 4, L0 000004.sst)
cost: 1 data-block read, 0 sources skipped by key range, 2 SSTables skipped by filter, 0 filter false positives
"
    );
    let j = json_ok(&["explain", p(&db), "k150"]);
    assert_eq!(j["key"], "k150");
    assert_eq!(j["sequence"], 304);
    assert_eq!(j["verdict"], "value");
    assert_eq!(j["value"], "one-150");
    assert_eq!(j["answered_by"], 4);
    assert_eq!(j["data_block_reads"], 1);
    assert_eq!(j["filter_negatives"], 2);
    assert_eq!(j["range_skips"], 0);
    assert_eq!(
        j["steps"][0],
        json!({"step": 1, "source": "memtable", "wal": 7, "entries": 2, "range_deletions": 0, "outcome": "not_in_memtable"})
    );
    assert_eq!(
        j["steps"][3],
        json!({"step": 4, "source": "sstable", "level": 0, "number": 4, "position": 2,
               "level_files": 3, "smallest_key": "k000", "largest_key": "k297",
               "filter_kind": "bloom",
               "outcome": "found", "index_entry": 3, "block": {"offset": 798, "size": 261},
               "seq": 51, "type": "put"})
    );
}

#[test]
fn explain_absent_key_skipped_by_every_filter() {
    let (_tmp, db) = layout();
    let out = stdout(&ok(kvctl(&["explain", p(&db), "k007x"])));
    assert_eq!(
        out,
        "\
lookup of \"k007x\" at sequence 304
  step  source                            result
     1  memtable (000007.log, 2 entries)  no version
     2  L0 000008.sst (1 of 3)            skipped by bloom filter (says absent)
     3  L0 000006.sst (2 of 3)            skipped by bloom filter (says absent)
     4  L0 000004.sst (3 of 3)            skipped by bloom filter (says absent)
answer: not found: no memtable or SSTable holds a version of the key; get returns nothing
cost: 0 data-block reads, 0 sources skipped by key range, 3 SSTables skipped by filter, 0 filter false positives
"
    );
    let j = json_ok(&["explain", p(&db), "k007x"]);
    assert_eq!(j["verdict"], "absent");
    assert_eq!(j["value"], Value::Null);
    assert_eq!(j["answered_by"], Value::Null);
    assert_eq!(j["data_block_reads"], 0);
    assert_eq!(j["filter_negatives"], 3);
    let outcomes: Vec<&str> = j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        [
            "not_in_memtable",
            "filter_negative",
            "filter_negative",
            "filter_negative"
        ]
    );

    // A filter false positive: the oldest table's filter says "maybe".
    let j = json_ok(&["explain", p(&db), "k203x"]);
    assert_eq!(j["verdict"], "absent");
    assert_eq!(j["filter_false_positives"], 1);
    assert_eq!(j["data_block_reads"], 1);
    assert_eq!(j["steps"][3]["outcome"], "searched");
    assert_eq!(j["steps"][3]["filter_false_positive"], true);
    // Out of every range: skipped without probing a filter.
    let j = json_ok(&["explain", p(&db), "a"]);
    assert_eq!(j["range_skips"], 3);
    assert_eq!(j["filter_negatives"], 0);
}

#[test]
fn explain_tombstones_memtable_and_hex() {
    let (_tmp, db) = layout();
    let j = json_ok(&["explain", p(&db), "k003"]);
    assert_eq!(j["verdict"], "tombstone");
    assert_eq!(j["steps"].as_array().unwrap().len(), 2);
    assert_eq!(j["steps"][1]["type"], "delete");
    assert_eq!(j["steps"][1]["seq"], 301);
    let j = json_ok(&["explain", p(&db), "k001"]);
    assert_eq!(j["verdict"], "tombstone");
    assert_eq!(j["answered_by"], 1);
    assert_eq!(j["steps"][0]["outcome"], "found");
    let out = stdout(&ok(kvctl(&["explain", p(&db), "m-key"])));
    assert!(
        out.contains("answer: value mem (step 1, memtable of 000007.log)"),
        "{out}"
    );
    let j = json_ok(&["explain", p(&db), "m-key", "--hex"]);
    assert_eq!(j["key"], "6d2d6b6579");
    assert_eq!(j["value"], "6d656d");
}

/// An empty value was printed as nothing: "answer: value  (step 1, ...)".
#[test]
fn explain_names_an_empty_value() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = siftdb::Db::open(&dir).unwrap();
    db.put("e", "").unwrap();
    db.close().unwrap();
    let out = stdout(&ok(kvctl(&["explain", p(&dir), "e"])));
    assert!(out.contains("answer: an empty value (step 1, "), "{out}");
    assert_eq!(json_ok(&["explain", p(&dir), "e"])["value"], "");
}

#[test]
fn explain_agrees_with_get() {
    let (_tmp, db) = layout();
    let mut keys: Vec<String> = (0..310).step_by(7).map(key).collect();
    keys.extend(["m-key", "k001", "k003", "k006", "k203x", "zzz", ""].map(String::from));
    for k in &keys {
        let j = json_ok(&["explain", p(&db), k]);
        let g = kvctl(&["get", p(&db), k]);
        match code(&g) {
            0 => {
                assert_eq!(j["verdict"], "value", "{k}");
                assert_eq!(
                    format!("{}\n", j["value"].as_str().unwrap()),
                    stdout(&g),
                    "{k}"
                );
            }
            1 => assert_ne!(j["verdict"], "value", "{k}: {j:#}"),
            c => panic!("get {k}: exit {c}: {}", stderr(&g)),
        }
    }
}

// ---------------------------------------------------------------- filters

#[test]
fn filters_human_json_and_a_saturated_filter() {
    let (_tmp, db) = layout();
    let out = stdout(&ok(kvctl(&["filters", p(&db)])));
    assert_eq!(
        out,
        "\
level  file        kind   keys   bits  k/r  bits/key  bits set  implied FPR  design FPR  health
L0     000008.sst  bloom   102  1,024    7     10.04     51.1%        0.91%       0.80%  ok
L0     000006.sst  bloom   100  1,000    7     10.00     49.2%        0.70%       0.82%  ok
L0     000004.sst  bloom   100  1,000    7     10.00     50.3%        0.81%       0.82%  ok
3 SSTables, 0 above 2x their design rate

level  runs  keys  filter bytes  bits/key  optimal bits/key  expected FP per absent lookup
L0        3   302           381     10.01             10.01                        0.02443
expected false positives per absent-key lookup: 0.02443 (381 bytes of filters, 10.01 filter bits per key); \
the same bits as uniform bits per key: 0.02442; spread optimally (Monkey): 0.02442
"
    );
    let j = json_ok(&["filters", p(&db)]);
    assert_eq!(j["warnings"], 0);
    // Three equal level-0 runs: the optimum is uniform; the design rates of
    // 1,000-bit arrays (0.80%, 0.82%, 0.82%) sum to 0.0244.
    let m = &j["memory"];
    assert_eq!(m["keys"], 302);
    assert_eq!(m["filter_bytes"], 381);
    // Bits per key count the bit arrays (1,024 + 1,000 + 1,000), as the
    // tables' own column does, not the blocks' bytes.
    assert_eq!(m["filter_bits"], 3024);
    assert_eq!(m["levels"][0]["runs"], 3);
    assert_eq!(m["levels"][0]["level"], 0);
    let fp = m["expected_false_positives"].as_f64().unwrap();
    assert!((fp - 0.02443).abs() < 0.00001, "{m:#}");
    assert_eq!(m["uniform_false_positives"], m["optimal_false_positives"]);
    let f = &j["filters"][1];
    assert_eq!(f["name"], "000006.sst");
    assert_eq!(f["level"], 0);
    assert_eq!(f["keys"], 100);
    assert_eq!(f["bits"], 1000);
    assert_eq!(f["bits_set"], 492);
    assert_eq!(f["num_hashes"], 7);
    assert_eq!(f["fraction_set"], 0.492);
    assert_eq!(f["warning"], false);

    // Set every bit of 000006.sst's filter (CRC rewritten, so nothing but
    // the filter's health is wrong).
    let sst = db.join("000006.sst");
    let j = json_ok(&["sst", "dump", p(&sst)]);
    let h = &j["footer"]["filter"];
    let (off, size) = (
        h["offset"].as_u64().unwrap() as usize,
        h["size"].as_u64().unwrap() as usize,
    );
    rewrite_block(&sst, off, size, |b| {
        let n = b.len() - 1;
        b[..n].fill(0xff);
    });
    let out = stdout(&ok(kvctl(&["filters", p(&db)])));
    assert!(out.contains(
        "L0     000006.sst  bloom   100  1,000    7     10.00    100.0%       100.0%       0.82%  WARNING: implied rate > 2x design\n"
    ), "{out}");
    assert!(
        out.contains("3 SSTables, 1 above 2x their design rate\n"),
        "{out}"
    );
    let j = json_ok(&["filters", p(&db)]);
    assert_eq!(j["warnings"], 1);
    assert_eq!(j["filters"][1]["warning"], true);
    assert_eq!(j["filters"][1]["implied_fpr"], 1.0);
    // No false negatives: verify passes it; filters is the tool that sees it.
    ok(kvctl(&["verify", p(&db)]));
}

// ---------------------------------------------------------------- concurrency

#[test]
fn works_while_another_handle_has_the_database_open() {
    let (_tmp, db) = layout();
    let held = reopen(&db);
    // Reopening kept the WAL and its two records (nothing flushed); the
    // held handle writes more to the same WAL.
    held.put("live", "yes").unwrap();
    let names = || {
        let mut v: Vec<String> = std::fs::read_dir(&db)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let before = names();
    for args in [
        vec!["info", p(&db)],
        vec!["sst", "list", p(&db)],
        vec!["verify", p(&db)],
        vec!["manifest", "dump", p(&db)],
        vec!["wal", "dump", p(&db)],
        vec!["filters", p(&db)],
        vec!["explain", p(&db), "live"],
    ] {
        let o = ok(kvctl(&args));
        assert!(!o.stdout.is_empty(), "{args:?}");
    }
    let j = json_ok(&["explain", p(&db), "live"]);
    assert_eq!(j["verdict"], "value");
    assert_eq!(j["steps"][0]["source"], "memtable");
    let j = json_ok(&["info", p(&db)]);
    assert_eq!(j["levels"][0]["files"], 3);
    let j = json_ok(&["wal", "dump", p(&db)]);
    assert_eq!(j["wals"][0]["records"].as_array().unwrap().len(), 3, "{j}");
    // Nothing was created or removed by the inspections.
    assert_eq!(names(), before);
    drop(held);
}

#[test]
fn concurrent_flushes_and_compactions_are_never_reported_as_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut o = Options::default();
    o.write_buffer_size = 4 << 10;
    o.block_size = 256;
    o.level0_compaction_trigger = 2;
    let db = Arc::new(Db::open_with(&dir, o).unwrap());
    for i in 0..500 {
        db.put(format!("key{i:05}"), "x".repeat(40)).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                db.put(format!("key{:05}", i % 3000), format!("v{i}"))
                    .unwrap();
                if i.is_multiple_of(50) {
                    db.compact().unwrap();
                }
                i += 1;
            }
        })
    };
    let d = dir.to_str().unwrap();
    let mut vanished = 0;
    for round in 0..20 {
        for args in [
            vec!["info", d],
            vec!["sst", "list", d],
            vec!["verify", d, "--quiet"],
            vec!["filters", d],
            vec!["explain", d, "key00042"],
            vec!["wal", "dump", d],
            vec!["manifest", "dump", d],
        ] {
            let o = kvctl(&args);
            match code(&o) {
                0 => {}
                4 if stderr(&o).contains("vanished while being read") => {
                    eprintln!("{}", stderr(&o));
                    vanished += 1
                }
                c => panic!("round {round} {args:?}: exit {c}: {}", stderr(&o)),
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    // Retries make a vanished file rare; it is never corruption.
    eprintln!("{vanished} of 140 runs saw a file vanish");
    assert!(vanished <= 3, "{vanished} runs lost a file");
}

// ---------------------------------------------------------------- help, usage

#[test]
fn inspection_help_carries_examples() {
    for cmd in [
        &["info"][..],
        &["sst"],
        &["sst", "list"],
        &["sst", "dump"],
        &["verify"],
        &["manifest"],
        &["manifest", "dump"],
        &["wal"],
        &["wal", "dump"],
        &["explain"],
        &["filters"],
    ] {
        let mut a = cmd.to_vec();
        a.push("--help");
        let h = stdout(&ok(kvctl(&a)));
        assert!(h.contains("Example:\n  kvctl "), "{cmd:?}: {h}");
    }
}

/// `verify` reports a damaged `CURRENT` as the engine's open does: as
/// corruption (exit 3), not as a vanished file or a missing database.
#[test]
fn verify_diagnoses_a_damaged_current_as_open_does() {
    let (_tmp, db) = layout();
    // CURRENT names a manifest that does not exist: the error is about
    // CURRENT, not the missing manifest.
    let current = db.join("CURRENT");
    std::fs::write(&current, "MANIFEST-999999\n").unwrap();
    let detail = "CURRENT names MANIFEST-999999, which does not exist";
    let o = kvctl(&["get", p(&db), "k"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "kvctl: corruption in {} at offset 0: {detail}\nhint: {CORRUPTION_HINT}\n",
            current.display()
        )
    );
    let o = kvctl(&["verify", p(&db)]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with(&format!(
            "kvctl: verify: {}: CURRENT at offset 0: {detail}\n",
            current.display()
        )),
        "{}",
        stderr(&o)
    );
    let o = kvctl(&["verify", p(&db), "--json"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("a JSON report");
    assert_eq!(
        v["problems"],
        json!([{"file": p(&current), "what": "CURRENT", "offset": 0, "detail": detail}])
    );
    // A malformed CURRENT: with --json, a report naming it.
    std::fs::write(db.join("CURRENT"), "MANIFEST-00000X\n").unwrap();
    let o = kvctl(&["verify", p(&db), "--json"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("a JSON report");
    assert_eq!(v["ok"], false);
    assert_eq!(v["problems"][0]["what"], "CURRENT");
    assert_eq!(v["problems"][0]["offset"], 0);
    // No CURRENT at all, beside tables and a WAL.
    std::fs::remove_file(db.join("CURRENT")).unwrap();
    for args in [
        &["verify", p(&db)][..],
        &["info", p(&db)],
        &["get", p(&db), "k"],
    ] {
        let o = kvctl(args);
        assert_eq!(code(&o), 3, "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("CURRENT is missing but the directory holds SSTables"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn inspection_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    // Every command says the same of a path that does not exist.
    for cmd in [
        &["info"][..],
        &["verify"],
        &["filters"],
        &["get", "k"],
        &["scan"],
        &["stats"],
        &["delete", "k"],
        &["compact"],
    ] {
        let mut a = vec![cmd[0], p(&missing)];
        a.extend(&cmd[1..]);
        let o = kvctl(&a);
        assert_eq!(code(&o), 2, "{cmd:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("missing: does not exist"),
            "{cmd:?}: {}",
            stderr(&o)
        );
    }
    assert!(!missing.exists());
    let o = kvctl(&["sst", "dump", p(tmp.path())]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let o = kvctl(&["sst", "dump", "x.sst", "--from", "a"]);
    assert_eq!(code(&o), 2, "--from needs --entries: {}", stderr(&o));
    let o = kvctl(&["wal", "dump", p(&missing)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    // An .sst that is not a table: corruption (exit 3), naming the footer.
    let junk = tmp.path().join("000001.sst");
    std::fs::write(&junk, vec![7u8; 100]).unwrap();
    let o = kvctl(&["sst", "dump", p(&junk)]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let o = kvctl(&["verify", p(&junk)]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("000001.sst: footer at offset 92: bad table magic"),
        "{}",
        stderr(&o)
    );
}

/// Found by a new-user trial: verify's hint for a damaged OPTIONS file
/// pointed at salvage, though the file holds no data, and said "at offset
/// 0" for a bad byte at offset 20; a damaged key sketch said "at offset X"
/// twice.
#[test]
fn verify_reports_options_and_key_sketch_damage_once_at_the_real_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    for i in 0..50 {
        ok(kvctl(&["put", p(&db), &format!("k{i:03}"), "v"]));
    }
    ok(kvctl(&["compact", p(&db), "-q"]));
    let clean = tmp.path().join("clean");
    std::fs::create_dir(&clean).unwrap();
    for f in std::fs::read_dir(&db).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, clean.join(f.file_name().unwrap())).unwrap();
    }

    let options = db.join("OPTIONS");
    let mut bytes = std::fs::read(&options).unwrap();
    bytes[20] = 0xff;
    std::fs::write(&options, &bytes).unwrap();
    let o = kvctl(&["verify", p(&db), "-q"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "kvctl: verify: {}: OPTIONS file at offset 20: not UTF-8\n\
             hint: run `kvctl verify --all` to check everything and list every problem; the \
             OPTIONS file holds settings only, no keys or values: `kvctl options DB --reset` \
             replaces it with the defaults\n",
            options.display()
        )
    );
    let o = kvctl(&["verify", p(&db), "-q", "--all"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        stderr(&o).ends_with(
            "hint: the OPTIONS file holds settings only, no keys or values: `kvctl options DB \
             --reset` replaces it with the defaults\n"
        ),
        "{}",
        stderr(&o)
    );

    // A flipped byte in the clean copy's key sketch.
    let f = &siftdb::Db::open_read_only(&clean, siftdb::Options::default())
        .unwrap()
        .live_files()[0];
    let handle = f.properties.key_sketch.expect("a sketch");
    let mut bytes = std::fs::read(&f.path).unwrap();
    bytes[(handle.offset + handle.size / 2) as usize] ^= 0x40;
    std::fs::write(&f.path, &bytes).unwrap();
    let o = kvctl(&["verify", p(&clean), "-q"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let e = stderr(&o);
    let first = e.lines().next().unwrap();
    assert!(
        first.starts_with(&format!(
            "kvctl: verify: {}: key sketch block at offset {}: ",
            f.path.display(),
            handle.offset
        )),
        "{e}"
    );
    assert_eq!(first.matches("at offset").count(), 1, "{e}");
    assert!(e.contains("export --salvage"), "{e}");
}

// ---------------------------------------------------------------- range deletions

/// `a`, `b`, `c` (seq 1..=3) flushed to one table; the range deletion
/// `[c, d)` (4) flushed too, so kept in the manifest; then, only in the
/// WAL, the range deletion `[b, no end)` (5) and `put z 26` (6).
fn range_deleted_db() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::open_with(&dir, options()).unwrap();
    for (k, v) in [("a", "1"), ("b", "2"), ("c", "3")] {
        db.put(k, v).unwrap();
    }
    db.flush().unwrap();
    db.delete_range("c".."d").unwrap();
    db.flush().unwrap();
    db.delete_range("b"..).unwrap();
    db.put("z", "26").unwrap();
    db.close().unwrap();
    (tmp, dir)
}

/// The only live WAL of `db`.
fn only_wal(db: &Path) -> PathBuf {
    let wals = common::files_with_ext(db, "log");
    assert_eq!(wals.len(), 1, "{wals:?}");
    wals[0].clone()
}

/// Found by a new-user trial: an unbounded range deletion's end showed as
/// an empty value, like a bounded one's that was never there.
#[test]
fn wal_dump_shows_an_unbounded_range_deletion_as_no_end() {
    let (_tmp, db) = range_deleted_db();
    let wal = only_wal(&db);
    let out = stdout(&ok(kvctl(&["wal", "dump", p(&wal)])));
    let rows: Vec<&str> = out.lines().skip(2).collect();
    assert_eq!(rows.len(), 2, "{out}");
    let cells = |row: &str| row.split_whitespace().map(String::from).collect::<Vec<_>>();
    assert_eq!(
        cells(rows[0])[2..],
        ["5", "delete_range", "b", "(no", "end)"]
    );
    assert_eq!(cells(rows[1])[2..], ["6", "put", "z", "26"]);
    let j = json_ok(&["wal", "dump", p(&wal)]);
    let ops: Vec<&Value> = j["wals"][0]["records"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["ops"].as_array().unwrap())
        .collect();
    assert_eq!(
        ops,
        [
            &json!({"seq": 5, "type": "delete_range", "key": "b", "value": null}),
            &json!({"seq": 6, "type": "put", "key": "z", "value": "26"}),
        ]
    );
    // A bounded end is shown as it is.
    let (_tmp2, db2) = range_deleted_db();
    let d = Db::open_with(&db2, options()).unwrap();
    d.delete_range("m".."n").unwrap();
    d.close().unwrap();
    let j = json_ok(&["wal", "dump", p(&db2)]);
    let last = j["wals"][0]["records"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["ops"],
        json!([{"seq": 7, "type": "delete_range", "key": "m", "value": "n"}])
    );
}

/// Found by a new-user trial: `info` counted a WAL's puts and deletes but
/// not its range deletions.
#[test]
fn info_counts_a_wals_range_deletions() {
    let (_tmp, db) = range_deleted_db();
    let wal = only_wal(&db);
    let name = wal.file_name().unwrap().to_str().unwrap().to_string();
    let size = std::fs::metadata(&wal).unwrap().len();
    let out = stdout(&ok(kvctl(&["info", p(&db)])));
    let line = format!("WAL               {name}  {size} B, 2 records, 1 update, 1 range deletion");
    assert!(
        out.lines().any(|l| l == line),
        "missing {line:?} in:\n{out}"
    );
    let j = json_ok(&["info", p(&db)]);
    assert_eq!(j["wals"][0]["records"], 2);
    assert_eq!(j["wals"][0]["ops"], 1);
    assert_eq!(j["wals"][0]["range_deletions"], 1);
    // `wal dump` counts the same way.
    let out = stdout(&ok(kvctl(&["wal", "dump", p(&db)])));
    assert!(
        out.starts_with(&format!(
            "{name}: {size} B, 2 records, 1 update, 1 range deletion\n"
        )),
        "{out}"
    );
    // Without range deletions, nothing changes.
    let (_tmp, db) = layout();
    let j = json_ok(&["info", p(&db)]);
    assert_eq!(j["wals"][0]["range_deletions"], 0);
    assert!(
        stdout(&ok(kvctl(&["info", p(&db)]))).contains("000007.log  65 B, 2 records, 2 updates\n")
    );
}

/// Found by a new-user trial: `info` showed nothing of the range
/// tombstones a flush had moved to the manifest (`stats` counted them).
#[test]
fn info_counts_the_manifests_range_tombstones() {
    // `[c, d)` is in the manifest, `[b, no end)` only in the WAL.
    let (_tmp, db) = range_deleted_db();
    let out = stdout(&ok(kvctl(&["info", p(&db)])));
    let line = "range tombstones  1 live in the manifest";
    assert!(
        out.lines().any(|l| l == line),
        "missing {line:?} in:\n{out}"
    );
    let j = json_ok(&["info", p(&db)]);
    assert_eq!(j["range_tombstones"], 1);
    assert_eq!(j["wals"][0]["range_deletions"], 1);
    // None: the line says so.
    let (_tmp, db) = layout();
    assert_eq!(json_ok(&["info", p(&db)])["range_tombstones"], 0);
    let out = stdout(&ok(kvctl(&["info", p(&db)])));
    assert!(
        out.lines()
            .any(|l| l == "range tombstones  0 live in the manifest"),
        "{out}"
    );
}

/// Found by a new-user trial: `explain` showed a memtable's entries but
/// not its range deletions.
#[test]
fn explain_counts_a_memtables_range_deletions() {
    // The WAL holds `[b, no end)` and `put z 26`.
    let (_tmp, db) = range_deleted_db();
    let wal = only_wal(&db);
    let name = wal.file_name().unwrap().to_str().unwrap().to_string();
    let out = stdout(&ok(kvctl(&["explain", p(&db), "a"])));
    let source = format!("memtable ({name}, 1 entry, 1 range deletion)");
    assert!(out.contains(&source), "missing {source:?} in:\n{out}");
    let j = json_ok(&["explain", p(&db), "a"]);
    assert_eq!(j["steps"][0]["source"], "memtable");
    assert_eq!(j["steps"][0]["entries"], 1);
    assert_eq!(j["steps"][0]["range_deletions"], 1);
    // Only range deletions: "0 entries, 1 range deletion".
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let d = Db::open_with(&dir, options()).unwrap();
    d.delete_range("m".."n").unwrap();
    d.close().unwrap();
    let name = only_wal(&dir)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let out = stdout(&ok(kvctl(&["explain", p(&dir), "m"])));
    let source = format!("memtable ({name}, 0 entries, 1 range deletion)");
    assert!(out.contains(&source), "missing {source:?} in:\n{out}");
    // Without range deletions, the source reads as before.
    let (_tmp, db) = layout();
    let out = stdout(&ok(kvctl(&["explain", p(&db), "a"])));
    assert!(out.contains("memtable (000007.log, 2 entries)"), "{out}");
    assert_eq!(
        json_ok(&["explain", p(&db), "a"])["steps"][0]["range_deletions"],
        0
    );
}

/// The `answer:` line of `kvctl explain DB KEY`.
fn answer(db: &Path, key: &str) -> String {
    let out = stdout(&ok(kvctl(&["explain", p(db), key])));
    out.lines()
        .find_map(|l| l.strip_prefix("answer: "))
        .unwrap_or_else(|| panic!("no answer in:\n{out}"))
        .to_string()
}

/// Found by a new-user trial: a key never written was "deleted by the
/// range deletion ..., newer than any version found" (none was found),
/// and a plain miss was "absent: no source holds the key".
#[test]
fn explain_says_plainly_that_a_key_was_never_found() {
    let (_tmp, db) = range_deleted_db();
    // Never written, and outside every range deletion.
    assert_eq!(
        answer(&db, "0"),
        "not found: no memtable or SSTable holds a version of the key; get returns nothing"
    );
    // Never written, inside [b, no end) @5.
    assert_eq!(
        answer(&db, "nope"),
        "not found: no memtable or SSTable holds a version of the key, and the range deletion \
         at sequence 5 covers it; get returns nothing"
    );
    let j = json_ok(&["explain", p(&db), "nope"]);
    assert_eq!(j["verdict"], "range_deleted");
    assert_eq!(j["answered_by"], Value::Null);
    assert_eq!(j["range_deletion_seq"], 5);
    // Written, then range-deleted: the version found is named.
    assert_eq!(
        answer(&db, "b"),
        "deleted by the range deletion at sequence 5, newer than the version found (put @2, \
         step 2): get returns nothing"
    );
    // Written after the range deletion.
    assert_eq!(
        answer(&db, "z"),
        "value 26 (step 1, memtable of 000005.log)"
    );
}

/// Found by a new-user trial: `explain --prefix` did not show the range
/// deletions over the prefix, which hide what the tables it reads hold.
#[test]
fn explain_prefix_lists_the_range_deletions_over_the_prefix() {
    let (_tmp, db) = range_deleted_db();
    let out = stdout(&ok(kvctl(&["explain", p(&db), "--prefix", "c"])));
    let section: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("range deletions"))
        .take_while(|l| !l.starts_with("cost:"))
        .collect();
    assert_eq!(
        section,
        [
            "range deletions over the prefix, newest first (each hides the older versions of the keys it covers):",
            "  [b .. (no end)) @5  memtable of 000005.log  every key with the prefix",
            "  [c .. d) @4         manifest                every key with the prefix",
        ],
        "{out}"
    );
    let j = json_ok(&["explain", p(&db), "--prefix", "c"]);
    assert_eq!(
        j["range_tombstones"],
        json!([
            {"start": "b", "end": null, "seq": 5, "source": "memtable", "wal": 5, "covers_prefix": true},
            {"start": "c", "end": "d", "seq": 4, "source": "manifest", "wal": null, "covers_prefix": true},
        ])
    );
    // [c, d) is outside the prefix b; over the empty prefix both cover
    // only some keys.
    let j = json_ok(&["explain", p(&db), "--prefix", "b"]);
    let seqs: Vec<&Value> = j["range_tombstones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["seq"])
        .collect();
    assert_eq!(seqs, [&json!(5)]);
    let j = json_ok(&["explain", p(&db), "--prefix", ""]);
    let covers: Vec<&Value> = j["range_tombstones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["covers_prefix"])
        .collect();
    assert_eq!(covers, [&json!(false), &json!(false)]);
    let out = stdout(&ok(kvctl(&["explain", p(&db), "--prefix", ""])));
    assert!(
        out.contains("  [c .. d) @4         manifest                some keys with the prefix\n"),
        "{out}"
    );
    // Without range deletions there is no such section, and an empty list.
    let (_tmp, db) = layout();
    let out = stdout(&ok(kvctl(&["explain", p(&db), "--prefix", "k00"])));
    assert!(!out.contains("range deletion"), "{out}");
    assert_eq!(
        json_ok(&["explain", p(&db), "--prefix", "k00"])["range_tombstones"],
        json!([])
    );
}

/// An op in a keyspace other than the default (WAL tag 0x11, DESIGN.md
/// 12.3) is shown with its keyspace, not as the default's.
#[test]
fn wal_dump_shows_the_keyspace_of_an_op() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = tmp.path().join("000009.log");
    let mut batch = 7u64.to_le_bytes().to_vec();
    batch.extend_from_slice(&2u32.to_le_bytes());
    batch.extend_from_slice(&[0x01, 0x01, b'k', 0x01, b'v']); // put k=v (default)
    batch.extend_from_slice(&[0x11, 0x03, 0x01, b'a', 0x01, b'b']); // put a=b in 3
    let mut w = siftdb::inspect::log::LogWriter::create(&siftdb::fs::StdFs, &wal).unwrap();
    w.append(&batch).unwrap();
    w.sync().unwrap();
    drop(w);
    let out = stdout(&ok(kvctl(&["wal", "dump", p(&wal)])));
    assert_eq!(
        out,
        "\
000009.log: 35 B, 1 record, 2 updates
  offset  bytes  seq  op        key  value
       0     23    7  put       k    v
                   8  put ks=3  a    b
"
    );
    let j = json_ok(&["wal", "dump", p(&wal)]);
    assert_eq!(
        j["wals"][0]["records"][0]["ops"],
        json!([
            {"seq": 7, "type": "put", "key": "k", "value": "v"},
            {"seq": 8, "type": "put", "key": "a", "value": "b", "keyspace": 3},
        ])
    );
}
