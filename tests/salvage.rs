//! `siftdb::inspect::Salvage`: what a read-only salvage recovers from a
//! damaged database, and what it reports (DESIGN.md 11.1).
//!
//! One database is built per test, with three tables and a WAL, and every
//! write is also recorded in a history. The expected salvage is the
//! history replayed without the writes the damage destroyed, so each test
//! asserts exact values, not just the absence of a panic.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::{dir_contents, open, scratch_dir};
use siftdb::filter::{hash_key, policy_for_name};
use siftdb::inspect::sstable::{Table, TableBlocks};
use siftdb::inspect::{read_wal, table_entries, FileSet, Salvage, SalvageReport, SalvagedEntry};
use siftdb::{CompactionStyle, Db, Options};

/// Where a write went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Src {
    /// Flushed to the n-th table (0, 1, 2).
    Table(usize),
    /// Still in the WAL, as its n-th record.
    Wal(usize),
}

/// One write: key, value (`None` for a delete) and where it ended up.
#[derive(Debug, Clone)]
struct Op {
    key: String,
    value: Option<String>,
    src: Src,
}

/// The database under test and what was written to it.
struct Built {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    history: Vec<Op>,
    /// The three tables' paths, in flush order.
    tables: Vec<PathBuf>,
}

impl Built {
    /// The state after replaying every write `keep` accepts.
    fn expected(&self, keep: impl Fn(&Op) -> bool) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        for op in self.history.iter().filter(|op| keep(op)) {
            match &op.value {
                Some(v) => m.insert(op.key.clone(), v.clone()),
                None => m.remove(&op.key),
            };
        }
        m
    }

    /// The state the database holds.
    fn model(&self) -> BTreeMap<String, String> {
        self.expected(|_| true)
    }

    fn wal(&self) -> PathBuf {
        common::only_file(&self.dir, |n| n.ends_with(".log"))
    }

    fn manifest(&self) -> PathBuf {
        common::only_file(&self.dir, |n| n.starts_with("MANIFEST-"))
    }
}

fn key(i: usize) -> String {
    format!("k{i:04}")
}

/// Three tables in level 0 (no compaction) and an unflushed WAL:
/// - table 0: `k0000..k0599` = `a-i`;
/// - table 1: every third key rewritten `b-i`, and `k0100..k0119` deleted
///   where not rewritten (one version per key per table);
/// - table 2: `k0200..k0299` rewritten `c-i`;
/// - WAL: `k0300..k0319` = `w-i` (one record each), then a delete of
///   `k0001` and a put of `k9999`.
fn build() -> Built {
    let tmp = scratch_dir();
    let dir = tmp.path().join("db");
    let mut o = Options::default();
    o.compaction_style = CompactionStyle::None;
    o.block_size = 512;
    let db = open(&dir, &o);
    let mut history = Vec::new();
    let put = |db: &Db, i: usize, v: String, src: Src, h: &mut Vec<Op>| {
        db.put(key(i), &v).unwrap();
        h.push(Op {
            key: key(i),
            value: Some(v),
            src,
        });
    };
    for i in 0..600 {
        put(&db, i, format!("a-{i}"), Src::Table(0), &mut history);
    }
    db.flush().unwrap();
    for i in (0..600).step_by(3) {
        put(&db, i, format!("b-{i}"), Src::Table(1), &mut history);
    }
    for i in (100..120).filter(|i| i % 3 != 0) {
        db.delete(key(i)).unwrap();
        history.push(Op {
            key: key(i),
            value: None,
            src: Src::Table(1),
        });
    }
    db.flush().unwrap();
    for i in 200..300 {
        put(&db, i, format!("c-{i}"), Src::Table(2), &mut history);
    }
    db.flush().unwrap();
    for (n, i) in (300..320).enumerate() {
        put(&db, i, format!("w-{i}"), Src::Wal(n), &mut history);
    }
    db.delete(key(1)).unwrap();
    history.push(Op {
        key: key(1),
        value: None,
        src: Src::Wal(20),
    });
    db.put(key(9999), "w-9999").unwrap();
    history.push(Op {
        key: key(9999),
        value: Some("w-9999".into()),
        src: Src::Wal(21),
    });
    let mut live = db.live_files();
    live.sort_by_key(|f| f.number);
    let tables: Vec<PathBuf> = live.iter().map(|f| f.path.clone()).collect();
    assert_eq!(tables.len(), 3);
    assert!(live.iter().all(|f| f.level == 0));
    // The engine agrees with the history.
    let engine: BTreeMap<String, String> = db
        .iter()
        .map(|r| {
            let (k, v) = r.unwrap();
            (
                String::from_utf8(k.into_vec()).unwrap(),
                String::from_utf8(v.into_vec()).unwrap(),
            )
        })
        .collect();
    db.close().unwrap();
    let built = Built {
        _tmp: tmp,
        dir,
        history,
        tables,
    };
    assert_eq!(engine, built.model());
    built
}

/// Runs a salvage of `dir` to its end, checking that it changes no file.
fn salvage(dir: &Path) -> (Vec<SalvagedEntry>, SalvageReport) {
    let before = dir_contents(dir);
    let mut s = Salvage::open(dir, &Default::default()).unwrap();
    let entries: Vec<SalvagedEntry> = s.by_ref().collect();
    let report = s.finish();
    assert!(report.finished);
    assert_eq!(
        dir_contents(dir),
        before,
        "a salvage wrote to the directory"
    );
    assert_eq!(report.keys, entries.len() as u64);
    assert!(entries.windows(2).all(|w| w[0].key < w[1].key));
    (entries, report)
}

/// The entries as a map of UTF-8 strings.
fn as_map(entries: &[SalvagedEntry]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|e| {
            (
                String::from_utf8(e.key.clone()).unwrap(),
                String::from_utf8(e.value.clone()).unwrap(),
            )
        })
        .collect()
}

fn flip(path: &Path, at: u64) {
    let mut b = std::fs::read(path).unwrap();
    b[at as usize] ^= 0x20;
    std::fs::write(path, b).unwrap();
}

/// True if a read-only open (which writes nothing) finds the damage.
fn read_only_open_fails(dir: &Path) -> bool {
    Db::open_read_only(dir, Options::default()).is_err_and(|e| e.is_corruption())
}

fn total_entries(b: &Built) -> u64 {
    b.tables
        .iter()
        .map(|p| Table::open(p, 0).unwrap().properties().num_entries)
        .sum::<u64>()
        + 22
}

#[test]
fn an_undamaged_database_salvages_whole_and_deleted_keys_stay_deleted() {
    let b = build();
    let (entries, r) = salvage(&b.dir);
    let model = b.model();
    assert_eq!(as_map(&entries), model);
    // Deleted in table 1 over table 0's puts, and in the WAL over table 0.
    for k in ["k0100", "k0101", "k0119", "k0001"] {
        assert!(!as_map(&entries).contains_key(k), "{k} came back");
    }
    assert_eq!(as_map(&entries)["k0102"], "b-102");
    assert_eq!(model.len(), 600 - 14 - 1 + 1);
    assert_eq!(r.deleted, 14 + 1);
    assert!(r.is_complete(), "{r:#?}");
    assert_eq!(r.possibly_stale, 0);
    assert!(entries.iter().all(|e| !e.possibly_stale));
    assert!(matches!(
        &r.file_set,
        FileSet::Manifest {
            current_problem: None,
            torn_tail: None,
            ..
        }
    ));
    assert_eq!(r.tables.len(), 3);
    assert!(r.tables.iter().all(|t| t.blocks_read == t.data_blocks
        && t.skipped_blocks.is_empty()
        && t.unreadable.is_none()
        && t.notes.is_empty()
        && t.level == Some(0)));
    assert_eq!(r.wals.len(), 1);
    assert_eq!((r.wals[0].records, r.wals[0].entries), (22, 22));
    assert_eq!(r.entries_read, total_entries(&b));
    // The newest version wins: the WAL's, then table 2's, then table 1's.
    let get = |k: &str| entries.iter().find(|e| e.key == k.as_bytes()).unwrap();
    assert_eq!(get("k0300").value, b"w-300");
    assert_eq!(get("k0201").value, b"c-201");
    assert_eq!(get("k0003").value, b"b-3");
    assert_eq!(get("k0004").value, b"a-4");
    assert!(get("k0300").seq > get("k0201").seq);
}

#[test]
fn a_flipped_data_block_byte_loses_that_block_only_and_says_so() {
    let b = build();
    // The block of table 1 holding the tombstone of k0101.
    let t1 = &b.tables[1];
    let table = Table::open(t1, 0).unwrap();
    let all: Vec<_> = table_entries(&table, None).map(|e| e.unwrap()).collect();
    let lost_block = all.iter().find(|e| e.user_key == b"k0101").unwrap().block;
    assert!(lost_block > 0 && lost_block + 1 < table.index().len());
    let lost_keys: BTreeSet<String> = all
        .iter()
        .filter(|e| e.block == lost_block)
        .map(|e| String::from_utf8(e.user_key.clone()).unwrap())
        .collect();
    let handle = table.index()[lost_block].handle;
    let prev_last = table.index()[lost_block - 1].last_key.clone();
    let last = table.index()[lost_block].last_key.clone();
    let largest_seq = table.properties().largest_seq;
    let policy = policy_for_name(&table.properties().filter_policy).unwrap();
    let filter = table.filter_bytes().unwrap().to_vec();
    let in_table_1 = |k: &[u8]| policy.may_match(&filter, hash_key(k));
    drop(table);
    flip(t1, handle.offset + handle.size / 2);
    // Opening reads no data block; a scan meets the damage.
    let db = Db::open_read_only(&b.dir, Options::default()).unwrap();
    assert!(db.iter().any(|r| r.is_err_and(|e| e.is_corruption())));
    drop(db);

    let (entries, r) = salvage(&b.dir);
    let got = as_map(&entries);
    // Exactly the history without the lost block's writes.
    let expected = b.expected(|op| !(op.src == Src::Table(1) && lost_keys.contains(&op.key)));
    assert_eq!(got, expected);
    // Every key outside the block has its right value.
    let model = b.model();
    for (k, v) in &model {
        if !lost_keys.contains(k) {
            assert_eq!(got.get(k), Some(v), "{k}");
        }
    }
    // Inside it, the older version surfaced: table 0's, tombstones too.
    for k in &lost_keys {
        let i: usize = k[1..].parse().unwrap();
        assert_eq!(
            got.get(k).map(String::as_str),
            Some(&*format!("a-{i}")),
            "{k}"
        );
    }
    assert!(lost_keys.contains("k0101") && !model.contains_key("k0101"));

    // The report names exactly that block.
    assert!(!r.is_complete());
    assert_eq!(r.lost_blocks(), 1);
    assert_eq!(r.unread_tables(), 0);
    let t = r.tables.iter().find(|t| &t.path == t1).unwrap();
    assert_eq!(t.skipped_blocks.len(), 1);
    let s = &t.skipped_blocks[0];
    assert_eq!(s.block, lost_block as u64);
    assert_eq!(s.handle, handle);
    assert_eq!(s.bytes(), handle.offset..handle.offset + handle.size + 4);
    assert!(s.detail.contains("checksum mismatch"), "{}", s.detail);
    let user = |ik: &[u8]| ik[..ik.len() - 8].to_vec();
    assert_eq!(s.keys.first.as_deref(), Some(&user(&prev_last)[..]));
    assert_eq!(s.keys.last.as_deref(), Some(&user(&last)[..]));
    assert_eq!(t.blocks_read, t.data_blocks - 1);
    for other in r.tables.iter().filter(|o| &o.path != t1) {
        assert!(other.skipped_blocks.is_empty() && other.unreadable.is_none());
    }
    assert_eq!(
        r.entries_read,
        total_entries(&b) - lost_keys.len() as u64,
        "one entry per key in that block"
    );
    // Flagged: exactly the yielded keys in the block's range whose version
    // is older than the damaged table's newest and that its filter does
    // not rule out, except the previous block's last key if the version
    // read is at least as new as its entry there (the lost block held only
    // older versions of it); every stale value is among them.
    let trailer = u64::from_le_bytes(prev_last[prev_last.len() - 8..].try_into().unwrap());
    let (boundary, boundary_seq) = (user(&prev_last), trailer >> 8);
    for e in &entries {
        let in_range = s.keys.contains(&e.key);
        let newer_than_lost = e.key == boundary && e.seq.0 >= boundary_seq;
        assert_eq!(
            e.possibly_stale,
            in_range && e.seq < largest_seq && !newer_than_lost && in_table_1(&e.key),
            "{e:?}"
        );
        let k = String::from_utf8(e.key.clone()).unwrap();
        if model.get(&k) != Some(&String::from_utf8(e.value.clone()).unwrap()) {
            assert!(e.possibly_stale, "{k} is stale but not flagged");
        }
    }
    assert!(r.possibly_stale >= lost_keys.len() as u64);
    assert_eq!(
        r.possibly_stale,
        entries.iter().filter(|e| e.possibly_stale).count() as u64
    );
}

#[test]
fn a_damaged_manifest_falls_back_to_every_table_and_loses_nothing() {
    let b = build();
    let manifest = b.manifest();
    // Damage the first record (the snapshot), which later records follow.
    flip(&manifest, 14);
    assert!(read_only_open_fails(&b.dir));
    let (entries, r) = salvage(&b.dir);
    assert_eq!(as_map(&entries), b.model());
    let FileSet::Directory { reason } = &r.file_set else {
        panic!("{:?}", r.file_set);
    };
    assert!(
        reason.contains("MANIFEST-") && reason.contains("cannot be read"),
        "{reason}"
    );
    assert!(!r.is_complete(), "the live set is unknown");
    assert_eq!(r.tables.len(), 3);
    assert!(r
        .tables
        .iter()
        .all(|t| t.level.is_none() && t.skipped_blocks.is_empty()));
    assert_eq!(r.wals.len(), 1);
    assert_eq!(r.possibly_stale, 0);
    assert_eq!(r.entries_read, total_entries(&b));
}

#[test]
fn without_current_the_only_manifest_is_used_and_with_it_damaged_every_table() {
    let b = build();
    std::fs::remove_file(b.dir.join("CURRENT")).unwrap();
    let (entries, r) = salvage(&b.dir);
    assert_eq!(as_map(&entries), b.model());
    let FileSet::Manifest {
        current_problem: Some(why),
        ..
    } = &r.file_set
    else {
        panic!("{:?}", r.file_set);
    };
    assert!(why.contains("CURRENT does not exist"), "{why}");
    assert!(r.is_complete());

    // A garbled CURRENT: the same.
    std::fs::write(b.dir.join("CURRENT"), "MANIFEST-7\n").unwrap();
    let (_, r) = salvage(&b.dir);
    assert!(
        matches!(&r.file_set, FileSet::Manifest { current_problem: Some(w), .. }
        if w.contains("CURRENT cannot be used"))
    );

    // CURRENT naming a manifest that does not exist (a flipped digit):
    // the only manifest is used. (It once fell back to every file.)
    std::fs::write(b.dir.join("CURRENT"), "MANIFEST-999999\n").unwrap();
    let (entries, r) = salvage(&b.dir);
    assert_eq!(as_map(&entries), b.model());
    assert!(
        matches!(&r.file_set, FileSet::Manifest { current_problem: Some(w), .. }
        if w.contains("MANIFEST-999999") && w.contains("does not exist")),
        "{:?}",
        r.file_set
    );
    assert!(r.is_complete());

    // A missing live table is lost, like an unreadable one: its manifest
    // range is flagged. It used to make the salvage read every file and
    // report nothing lost while older values of its keys came back (found
    // by a new-user trial).
    std::fs::remove_file(b.dir.join("CURRENT")).unwrap();
    let gone = b.tables[2].clone();
    let kept = std::fs::read(&gone).unwrap();
    std::fs::remove_file(&gone).unwrap();
    // Table 2 lost whole, its manifest range flagged; returns why.
    let table_2_lost = || {
        let (entries, r) = salvage(&b.dir);
        assert!(!r.file_set.is_directory(), "{:?}", r.file_set);
        assert_eq!(as_map(&entries), b.expected(|op| op.src != Src::Table(2)));
        assert!(!r.is_complete());
        assert_eq!(r.unread_tables(), 1);
        let t = &r.tables[2];
        assert_eq!(t.path, gone);
        assert_eq!(t.keys.first.as_deref(), Some(&b"k0200"[..]));
        assert_eq!(t.keys.last.as_deref(), Some(&b"k0299"[..]));
        for e in &entries {
            assert_eq!(e.possibly_stale, t.keys.contains(&e.key), "{e:?}");
        }
        assert_eq!(r.possibly_stale, 100);
        t.unreadable.clone().unwrap()
    };
    assert_eq!(table_2_lost().what, "file");
    std::fs::write(&gone, &kept).unwrap();

    // A live table replaced by another valid table is not read as the
    // table the manifest names: lost, as a missing one, and said so. It
    // used to salvage the other table's keys twice and report nothing
    // lost (found by a new-user trial).
    std::fs::copy(&b.tables[0], &gone).unwrap();
    let unread = table_2_lost();
    assert_eq!(unread.what, "file");
    assert!(
        unread.detail.contains("not the table the manifest names"),
        "{unread:?}"
    );
    std::fs::write(&gone, kept).unwrap();

    // A missing live WAL: everything may be stale.
    let wal = b.wal();
    let kept = std::fs::read(&wal).unwrap();
    std::fs::remove_file(&wal).unwrap();
    let (entries, r) = salvage(&b.dir);
    assert!(!r.file_set.is_directory(), "{:?}", r.file_set);
    assert_eq!(
        as_map(&entries),
        b.expected(|op| matches!(op.src, Src::Table(_)))
    );
    assert_eq!(r.damaged_wals(), 1);
    assert_eq!(r.wals[0].path, wal);
    assert!(entries.iter().all(|e| e.possibly_stale));
    std::fs::write(&wal, kept).unwrap();

    // Manifest damaged too: every table and WAL.
    flip(&b.manifest(), 14);
    let (entries, r) = salvage(&b.dir);
    assert!(r.file_set.is_directory());
    assert_eq!(as_map(&entries), b.model());
}

#[test]
fn a_torn_wal_tail_drops_the_last_batch_and_interior_damage_the_rest() {
    let b = build();
    let wal = b.wal();
    let records = read_wal(&wal).unwrap().records;
    assert_eq!(records.len(), 22);
    let bytes = std::fs::read(&wal).unwrap();

    // Torn: the last record (the put of k9999) cut in half.
    let last = records[21].offset;
    std::fs::write(&wal, &bytes[..bytes.len() - 5]).unwrap();
    let (entries, r) = salvage(&b.dir);
    assert_eq!(as_map(&entries), b.expected(|op| op.src != Src::Wal(21)));
    let w = &r.wals[0];
    assert_eq!(w.torn_tail.as_ref().unwrap().offset, last);
    assert_eq!(w.unread_bytes(), bytes.len() as u64 - 5 - last);
    assert!(w.damage.is_none());
    assert_eq!((w.records, w.entries), (21, 21));
    // What an open drops too: nothing acknowledged is lost.
    assert!(r.is_complete());
    assert_eq!(r.possibly_stale, 0);

    // Damage in record 5's payload, with records after it: records 5 on
    // are lost, so k0001's delete is too and its old value comes back.
    let at = records[5].offset;
    let mut damaged = bytes.clone();
    damaged[at as usize + 12 + 3] ^= 0x01;
    std::fs::write(&wal, &damaged).unwrap();
    assert!(read_only_open_fails(&b.dir));
    let (entries, r) = salvage(&b.dir);
    let expected = b.expected(|op| !matches!(op.src, Src::Wal(n) if n >= 5));
    assert_eq!(as_map(&entries), expected);
    assert_eq!(expected.get("k0001").map(String::as_str), Some("a-1"));
    assert_eq!(expected.get("k0305").map(String::as_str), Some("a-305"));
    assert_eq!(expected.get("k0306").map(String::as_str), Some("b-306"));
    let w = &r.wals[0];
    let d = w.damage.as_ref().unwrap();
    assert_eq!(d.offset, at);
    assert!(d.detail.contains("checksum"), "{}", d.detail);
    assert_eq!(w.unread_bytes(), bytes.len() as u64 - at);
    assert_eq!((w.records, w.entries), (5, 5));
    assert!(!r.is_complete());
    assert_eq!(r.damaged_wals(), 1);
    // Any key may have had a newer version after the damage.
    assert!(entries.iter().all(|e| e.possibly_stale));
}

#[test]
fn metadata_damage_loses_nothing_and_a_walk_past_a_bad_index_stops_at_damage() {
    let b = build();
    let t0 = &b.tables[0];
    let footer = *TableBlocks::open(t0).unwrap().footer().unwrap();
    assert!(!footer.filter.is_null());
    flip(t0, footer.filter.offset + 3);
    let t1 = &b.tables[1];
    let props = TableBlocks::open(t1).unwrap().footer().unwrap().properties;
    flip(t1, props.offset + 5);
    assert!(read_only_open_fails(&b.dir));
    let (entries, r) = salvage(&b.dir);
    assert_eq!(as_map(&entries), b.model());
    assert!(r.is_complete(), "{r:#?}");
    assert!(r.tables[0]
        .notes
        .iter()
        .any(|n| n.contains("filter block damaged")));
    assert!(r.tables[1]
        .notes
        .iter()
        .any(|n| n.contains("properties block damaged")));

    // A bad footer on table 2: its data blocks are found by walking the
    // file, up to its largest key (from the manifest): nothing is lost.
    // (The whole table used to be lost.)
    let t2 = &b.tables[2];
    let good = std::fs::read(t2).unwrap();
    let len = good.len() as u64;
    flip(t2, len - 20);
    let (entries, r) = salvage(&b.dir);
    assert_eq!(as_map(&entries), b.model());
    assert_eq!((r.unread_tables(), r.lost_blocks()), (0, 0), "{r:#?}");
    assert_eq!(r.possibly_stale, 0);
    let t = &r.tables[2];
    assert!(
        t.notes.iter().any(|n| n.contains("footer damaged")
            && n.contains("data blocks found by walking the file")
            && n.contains("nothing lost")),
        "{:?}",
        t.notes
    );
    std::fs::write(t2, &good).unwrap();

    // A bad index block on table 0 and a bad data block after it: the walk
    // stops there, and the rest of the table, from the last key found to
    // its largest, is lost and flagged.
    let t0 = &b.tables[0];
    let blocks = TableBlocks::open(t0).unwrap();
    let index = blocks.index().to_vec();
    let index_at = blocks.footer().unwrap().index.offset;
    drop(blocks);
    flip(t0, index_at + 2);
    let k = index.len() / 2;
    flip(t0, index[k].handle.offset + 7);
    let (entries, r) = salvage(&b.dir);
    let t = &r.tables[0];
    assert!(t.unreadable.is_none());
    assert_eq!(t.blocks_read, k as u64, "{t:#?}");
    assert_eq!(t.skipped_blocks.len(), 1);
    let skipped = &t.skipped_blocks[0];
    assert_eq!(skipped.handle.offset, index[k].handle.offset);
    let last_found = siftdb::inspect::key::user_key_of(&index[k - 1].last_key).to_vec();
    assert_eq!(skipped.keys.first.as_deref(), Some(&last_found[..]));
    assert_eq!(skipped.keys.last.as_deref(), Some(&b"k0599"[..]));
    // Table 0 held the first version of every key: those past the walk
    // survive only where a later table or the WAL rewrote them.
    let kept = |op: &Op| op.src != Src::Table(0) || op.key.as_bytes() <= &last_found[..];
    assert_eq!(as_map(&entries), b.expected(kept));
    // Every surviving key past the walk has a version written after all of
    // table 0's (b-, c-, w-), so none may be stale.
    assert!(
        entries.iter().all(|e| !e.possibly_stale),
        "{:?}",
        entries.iter().find(|e| e.possibly_stale)
    );
    assert_eq!(r.possibly_stale, 0);
    assert!(entries.len() < b.model().len());
    assert!(!r.is_complete());
}

#[test]
fn bad_paths_are_clear_errors() {
    let tmp = scratch_dir();
    let missing = tmp.path().join("missing");
    let e = Salvage::open(&missing, &Default::default()).unwrap_err();
    assert!(matches!(e, siftdb::Error::NotADatabase { .. }), "{e}");
    let e = Salvage::open(tmp.path(), &Default::default()).unwrap_err();
    assert!(e.to_string().contains("no siftdb file"), "{e}");
    let file = tmp.path().join("f");
    std::fs::write(&file, "x").unwrap();
    assert!(matches!(
        Salvage::open(&file, &Default::default()).unwrap_err(),
        siftdb::Error::NotADatabase { .. }
    ));
    // Only a truncated table: it is reported, not an error.
    std::fs::write(tmp.path().join("000007.sst"), "short").unwrap();
    let (entries, r) = salvage(tmp.path());
    assert!(entries.is_empty());
    assert!(r.file_set.is_directory());
    assert_eq!(r.tables[0].unreadable.as_ref().unwrap().what, "footer");
}

/// A writer may delete files while salvage opens them, which would read as
/// lost data: a database some handle has open for writing is refused with
/// `Locked`, and salvaged once it is closed. `Db::held_by_a_writer` says
/// which, and `None` where there is no `LOCK` to tell by.
#[test]
fn a_database_open_for_writing_is_not_salvaged() {
    let b = build();
    assert_eq!(Db::held_by_a_writer(&b.dir), Some(false));
    let mut o = Options::default();
    o.compaction_style = CompactionStyle::None;
    let db = open(&b.dir, &o);
    assert_eq!(Db::held_by_a_writer(&b.dir), Some(true));
    match Salvage::open(&b.dir, &Default::default()) {
        Err(siftdb::Error::Locked(p)) => assert_eq!(p, b.dir),
        other => panic!("expected Locked, got {other:?}"),
    }
    drop(db);
    assert_eq!(Db::held_by_a_writer(&b.dir), Some(false));
    let (entries, r) = salvage(&b.dir);
    assert!(r.is_complete(), "{r:?}");
    assert_eq!(as_map(&entries), b.model());
    let tmp = scratch_dir();
    assert_eq!(Db::held_by_a_writer(tmp.path()), None);
}

/// A lock let go within moments is no writer: a child process forked
/// just before a handle closed holds a copy of its `LOCK` descriptor until
/// it calls `exec`, so the lock looks held for a moment after `close`.
/// `held_by_a_writer` (and so salvage) retries it, as `Db::open` does;
/// it refused at once before (kvctl's tests, which spawn processes from
/// many threads, saw `export --salvage` fail with `Locked` now and then).
#[test]
fn a_lock_let_go_within_moments_is_not_a_writer() {
    let b = build();
    let held = std::fs::File::open(b.dir.join("LOCK")).unwrap();
    held.lock().unwrap();
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(50));
        drop(held);
    });
    assert_eq!(Db::held_by_a_writer(&b.dir), Some(false));
    releaser.join().unwrap();
    let (entries, r) = salvage(&b.dir);
    assert!(r.is_complete(), "{r:?}");
    assert_eq!(as_map(&entries), b.model());
}

#[test]
fn range_deletions_from_the_manifest_and_the_wal_stay_deleted() {
    let tmp = scratch_dir();
    let dir = tmp.path().join("db");
    let mut o = Options::default();
    o.compaction_style = CompactionStyle::None;
    let db = open(&dir, &o);
    let mut model = BTreeMap::new();
    for i in 0..100 {
        db.put(key(i), format!("a-{i}")).unwrap();
        model.insert(key(i), format!("a-{i}"));
    }
    db.flush().unwrap();
    db.delete_range(key(10)..key(20)).unwrap(); // flushed: in the manifest
    db.put(key(15), "again").unwrap(); // newer: survives
    db.flush().unwrap();
    db.delete_range(key(50)..=key(59)).unwrap(); // only in the WAL
    drop(db);
    for i in (10..20).chain(50..60) {
        model.remove(&key(i));
    }
    model.insert(key(15), "again".into());
    let (entries, report) = salvage(&dir);
    assert_eq!(as_map(&entries), model);
    assert_eq!(report.keys, 81);
    assert_eq!(report.possibly_stale, 0);
}

/// Found by a new-user trial: a damaged data block was reported lost (exit
/// 3 from `kvctl export --salvage`) even when a newer range deletion hid
/// every key it could hold. It is now a note, and the salvage complete; a
/// damaged block outside the deletion is still lost.
#[test]
fn a_damaged_block_under_a_newer_range_deletion_loses_nothing() {
    let tmp = scratch_dir();
    let dir = tmp.path().join("db");
    let mut o = Options::default();
    o.compaction_style = CompactionStyle::None;
    o.block_size = 256;
    let db = open(&dir, &o);
    let mut model = BTreeMap::new();
    for i in 0..400 {
        db.put(key(i), format!("v-{i}")).unwrap();
        model.insert(key(i), format!("v-{i}"));
    }
    db.flush().unwrap();
    db.delete_range(key(100)..key(300)).unwrap();
    db.flush().unwrap();
    // A memtable of range deletions alone flushes to no table: the
    // deletion is the manifest's, over the one table.
    assert_eq!(db.live_files().len(), 1);
    let table = db.live_files()[0].path.clone();
    drop(db);
    for i in 100..300 {
        model.remove(&key(i));
    }
    let t = Table::open(&table, 0).unwrap();
    let all: Vec<_> = table_entries(&t, None).map(|e| e.unwrap()).collect();
    let block_of = |k: &str| {
        all.iter()
            .find(|e| e.user_key == k.as_bytes())
            .unwrap()
            .block
    };
    let (hidden, visible) = (block_of(&key(200)), block_of(&key(350)));
    // The hidden block lies wholly inside [100, 300).
    assert!(block_of(&key(100)) < hidden && hidden < block_of(&key(299)));
    let (h, v) = (t.index()[hidden].handle, t.index()[visible].handle);
    drop(t);

    flip(&table, h.offset + h.size / 2);
    let (entries, r) = salvage(&dir);
    assert!(r.is_complete(), "{r:?}");
    assert_eq!(r.lost_blocks(), 0);
    let notes: Vec<&String> = r.tables.iter().flat_map(|t| &t.notes).collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("hidden by a newer range deletion")),
        "{notes:?}"
    );
    assert_eq!(as_map(&entries), model);

    flip(&table, v.offset + v.size / 2);
    let (_, r) = salvage(&dir);
    assert_eq!(r.lost_blocks(), 1, "{r:?}");
    assert!(!r.is_complete());
}
