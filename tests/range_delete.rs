//! Range deletions (`Db::delete_range`, `WriteBatch::delete_range`):
//! reads, snapshots, flushes, compactions, reopens, and the cases public
//! bug reports on range tombstones describe. The randomized model test
//! (tests/model_random.rs) mixes them into everything else.

mod common;

use common::{keys, small_options, spawn_named};
use siftdb::sync_point::SyncPoint;
use siftdb::{CompactionStyle, Db, Options, WriteBatch};

fn key(i: u32) -> String {
    format!("k{i:05}")
}

fn fill(db: &Db, n: u32, tag: &str) {
    for i in 0..n {
        db.put(key(i), format!("{tag}{i}")).unwrap();
    }
}

fn leveled() -> Options {
    let mut o = small_options();
    o.compaction_style = CompactionStyle::Leveled;
    o.target_file_size = 16 << 10;
    o.max_bytes_for_level_base = 64 << 10;
    o
}

#[test]
fn a_range_deletion_hides_its_keys_from_gets_and_scans_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path(), &small_options());
    fill(&db, 10, "v");
    db.delete_range(key(3)..key(7)).unwrap();
    for i in 0..10 {
        let expected = (!(3..7).contains(&i)).then(|| format!("v{i}"));
        assert_eq!(
            db.get(key(i))
                .unwrap()
                .map(|v| v.to_string_lossy().into_owned()),
            expected,
            "key {i}"
        );
    }
    let live = ["k00000", "k00001", "k00002", "k00007", "k00008", "k00009"];
    assert_eq!(keys(db.iter()), live);
    let mut back = keys(db.iter().rev());
    back.reverse();
    assert_eq!(back, live);
    // Written again after the deletion: visible.
    db.put(key(4), "again").unwrap();
    assert_eq!(db.get(key(4)).unwrap().unwrap(), "again");
    assert_eq!(keys(db.range(key(3)..key(6))), ["k00004"]);
    assert_eq!(db.stats().range_tombstones, 1);
}

#[test]
fn tombstones_in_the_version_and_the_memtable_apply_together_and_an_open_iterator_keeps_its_view() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path(), &small_options());
    fill(&db, 20, "v");
    db.flush().unwrap();
    db.delete_range(key(2)..key(6)).unwrap();
    db.put(key(4), "new").unwrap();
    db.flush().unwrap(); // that tombstone now lives in the version
    db.delete_range(key(5)..key(9)).unwrap(); // this one in the memtable
    db.put(key(7), "new").unwrap();
    let names = |live: &[u32]| live.iter().map(|&i| key(i)).collect::<Vec<_>>();
    let mut expected: Vec<u32> = vec![0, 1, 4, 7];
    expected.extend(9..20);
    let open = db.iter();
    // Written while `open` holds the memtable's tombstones: the memtable
    // copies them rather than change what `open` reads.
    db.delete_range(key(10)..key(12)).unwrap();
    assert_eq!(keys(open), names(&expected));
    expected.retain(|i| !(10..12).contains(i));
    assert_eq!(keys(db.iter()), names(&expected));
    let mut back = keys(db.iter().rev());
    back.reverse();
    assert_eq!(back, names(&expected));
    assert_eq!(keys(db.range(key(3)..key(11))), names(&[4, 7, 9]));
    assert_eq!(db.get(key(4)).unwrap().unwrap(), "new");
    assert_eq!(db.get(key(6)).unwrap(), None);
    assert_eq!(db.get(key(11)).unwrap(), None);
    assert_eq!(db.stats().range_tombstones, 3);
}

#[test]
fn within_a_batch_order_decides() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path(), &small_options());
    let mut b = WriteBatch::new();
    b.put("a", "before").unwrap();
    b.put("b", "before").unwrap();
    b.delete_range("a"..="b").unwrap();
    b.put("b", "after").unwrap();
    db.write(b).unwrap();
    assert_eq!(db.get("a").unwrap(), None);
    assert_eq!(db.get("b").unwrap().unwrap(), "after");
    db.flush().unwrap();
    db.compact().unwrap();
    assert_eq!(keys(db.iter()), ["b"]);
}

#[test]
fn unbounded_and_inclusive_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path(), &small_options());
    for k in ["", "a", "b", "b\0", "c", "\u{ff}"] {
        db.put(k, "v").unwrap();
    }
    db.delete_range(..="a").unwrap(); // "" and "a"
    assert_eq!(keys(db.iter()), ["b", "b\0", "c", "\u{ff}"]);
    db.delete_range("b"..="b").unwrap(); // "b" alone, not "b\0"
    assert_eq!(keys(db.iter()), ["b\0", "c", "\u{ff}"]);
    db.delete_range("c"..).unwrap();
    assert_eq!(keys(db.iter()), ["b\0"]);
    db.delete_range(..).unwrap();
    assert_eq!(db.iter().count(), 0);
    assert!(matches!(
        db.delete_range("z".."a"),
        Err(siftdb::Error::InvalidArgument(_))
    ));
    db.delete_range("q".."q").unwrap(); // empty: nothing written
    assert_eq!(db.stats().range_tombstones, 4);
}

#[test]
fn a_snapshot_between_a_put_and_a_covering_range_deletion_keeps_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path(), &leveled());
    fill(&db, 2000, "v");
    let snap = db.snapshot();
    db.delete_range(key(500)..key(1500)).unwrap();
    // Through a flush and a full compaction: the snapshot's versions stay.
    db.flush().unwrap();
    db.compact().unwrap();
    assert_eq!(db.get(key(700)).unwrap(), None);
    assert_eq!(snap.get(key(700)).unwrap().unwrap(), "v700");
    assert_eq!(snap.iter().count(), 2000);
    assert_eq!(db.iter().count(), 1000);
    assert_eq!(
        db.stats().range_tombstones,
        1,
        "the tombstone waits on the tables the snapshot needs"
    );
    drop(snap);
    db.compact().unwrap();
    let s = db.stats();
    assert_eq!(s.range_tombstones, 0, "nothing left to hide");
    assert!(
        s.range_deleted_dropped >= 1000,
        "{}",
        s.range_deleted_dropped
    );
    assert_eq!(db.iter().count(), 1000);
    assert_eq!(db.get(key(1499)).unwrap(), None);
    assert_eq!(db.get(key(1500)).unwrap().unwrap(), "v1500");
}

#[test]
fn a_tombstone_over_deeper_data_wins_where_the_newer_table_filter_says_absent() {
    // The value sits in the bottom level; the range deletion is newer, and
    // a newer level-0 table holds other keys of the range on both sides of
    // the deleted keys ("b" and "y"), so they fall inside its key range
    // and its point filter is what answers "absent" for them: the read
    // must not fall through the filter to the old value.
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path(), &leveled());
    db.put("m", "old").unwrap();
    fill(&db, 500, "v");
    db.flush().unwrap();
    db.compact().unwrap();
    assert!(db.stats().levels.iter().skip(1).any(|l| l.files > 0));
    db.delete_range("a".."z").unwrap();
    db.put("b", "new").unwrap(); // keys in the range, in a newer table
    db.put("y", "new").unwrap();
    db.flush().unwrap();
    let check = |db: &Db| {
        let s = db.stats();
        assert_eq!(s.levels[0].files, 1, "the newer table is on level 0");
        for deleted in ["m".to_string(), key(3), key(499)] {
            let before = db.stats();
            assert_eq!(db.get(&deleted).unwrap(), None, "{deleted}");
            let after = db.stats();
            // The level-0 table covers the key and its filter says absent
            // (not a range skip); the bottom level's table holds the old
            // version, which the read finds and the tombstone hides.
            assert_eq!(
                (
                    after.filter_negatives - before.filter_negatives,
                    after.range_skips - before.range_skips,
                    after.data_block_reads - before.data_block_reads,
                ),
                (1, 0, 1),
                "{deleted}: filter negatives, range skips, block reads"
            );
        }
        assert_eq!(db.get("b").unwrap().unwrap(), "new");
        assert_eq!(keys(db.iter()), ["b", "y"]);
    };
    check(&db);
    drop(db);
    let db = common::open(dir.path(), &leveled());
    check(&db);
}

#[test]
fn a_range_split_across_compaction_outputs_stays_deleted() {
    // 16 KiB outputs: the deleted range spans many of them, and the
    // compaction cuts outputs in the middle of it.
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path(), &leveled());
    fill(&db, 5000, "v");
    db.flush().unwrap();
    db.compact().unwrap();
    let files_before = db.live_files().len();
    assert!(files_before > 4, "{files_before} files");
    db.delete_range(key(1000)..key(4000)).unwrap();
    fill(&db, 50, "w"); // newer versions below the range survive
    db.flush().unwrap();
    for check in 0..2 {
        for i in (0..5000).step_by(97) {
            let got = db.get(key(i)).unwrap();
            let expected = match i {
                0..50 => Some(format!("w{i}")),
                1000..4000 => None,
                _ => Some(format!("v{i}")),
            };
            assert_eq!(
                got.map(|v| v.to_string_lossy().into_owned()),
                expected,
                "key {i}, check {check}"
            );
        }
        assert_eq!(db.iter().count(), 2000);
        db.compact().unwrap();
    }
    assert_eq!(db.stats().range_tombstones, 0);
    assert!(db.live_files().len() < files_before);
}

/// The user keys of `db`'s live tables' entries (every version, read
/// from the files) that lie in `[lo, hi)`.
fn stored_versions_in(db: &Db, lo: &str, hi: &str) -> usize {
    db.live_files()
        .iter()
        .map(|f| {
            let t = siftdb::inspect::open_table(&f.path).unwrap();
            siftdb::inspect::table_entries(&t, Some(lo.as_bytes()))
                .map(|e| e.unwrap())
                .take_while(|e| e.user_key.as_slice() < hi.as_bytes())
                .count()
        })
        .sum()
}

#[test]
fn a_range_split_across_compaction_outputs_keeps_what_a_snapshot_needs() {
    // A snapshot older than the deletion pins the versions it covers, so
    // the one compaction that rewrites the tables the tombstone waits on
    // keeps them, and with 4 KiB outputs it cuts several inside the
    // range. Each output holding covered versions must join the
    // tombstone's list, or the tombstone would be garbage-collected with
    // the first of them rewritten and the others' versions would come back.
    let (lo, hi) = (1000, 2000);
    let mut o = leveled();
    o.target_file_size = 4 << 10;
    // One level holds it all: no background compaction moves a table.
    o.max_bytes_for_level_base = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path(), &o);
    fill(&db, 3000, "v");
    db.flush().unwrap();
    db.compact().unwrap();
    let snap = db.snapshot();
    db.delete_range(key(lo)..key(hi)).unwrap();
    // A memtable of range deletions only: no table, the tombstone goes
    // into the version, waiting on the tables overlapping its range.
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let before: std::collections::BTreeSet<u64> =
        db.live_files().iter().map(|f| f.number).collect();
    let compactions = db.stats().compactions;
    db.compact().unwrap();
    assert_eq!(db.stats().compactions - compactions, 1, "one compaction");
    let mut outputs: Vec<_> = db
        .live_files()
        .into_iter()
        .filter(|f| !before.contains(&f.number))
        .collect();
    outputs.sort_by(|a, b| {
        a.properties
            .smallest_user_key
            .cmp(&b.properties.smallest_user_key)
    });
    assert!(outputs.len() >= 3, "{} outputs", outputs.len());
    let inside = |k: &[u8]| key(lo).as_bytes() <= k && k < key(hi).as_bytes();
    let cuts_inside = outputs
        .windows(2)
        .filter(|w| {
            inside(&w[0].properties.largest_user_key) && inside(&w[1].properties.smallest_user_key)
        })
        .count();
    assert!(cuts_inside >= 1, "no output boundary inside the range");
    assert_eq!(stored_versions_in(&db, &key(lo), &key(hi)), 1000);
    assert_eq!(db.stats().range_tombstones, 1);

    let check_current = |db: &Db| {
        for i in 0..3000 {
            let expected = (!(lo..hi).contains(&i)).then(|| format!("v{i}"));
            let got = db.get(key(i)).unwrap();
            assert_eq!(
                got.map(|v| v.to_string_lossy().into_owned()),
                expected,
                "key {i}"
            );
        }
        assert_eq!(db.iter().count(), 2000);
        assert_eq!(db.range(key(lo)..key(hi)).count(), 0);
    };
    check_current(&db);
    for i in 0..3000 {
        assert_eq!(
            snap.get(key(i)).unwrap().unwrap(),
            format!("v{i}"),
            "snapshot, key {i}"
        );
    }
    assert_eq!(snap.iter().count(), 3000);
    assert_eq!(snap.range(key(lo)..key(hi)).count(), 1000);
    drop(snap);
    drop(db);

    // After a reopen no snapshot can be held over from before it, but the
    // versions it read are still in the outputs, the tombstone still waits
    // on them (the manifest lists them, tag 11), and current reads see none.
    let db = common::open(dir.path(), &o);
    assert_eq!(db.stats().range_tombstones, 1);
    assert_eq!(stored_versions_in(&db, &key(lo), &key(hi)), 1000);
    check_current(&db);
    // Now nothing needs them: a compaction rewrites every output on the
    // tombstone's list, drops them all, and the tombstone goes.
    db.compact().unwrap();
    check_current(&db);
    assert_eq!(db.stats().range_tombstones, 0);
    assert_eq!(stored_versions_in(&db, &key(lo), &key(hi)), 0);
    drop(db);
    let db = common::open(dir.path(), &o);
    check_current(&db);
}

#[test]
fn range_deletions_survive_reopens_from_the_wal_and_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = leveled();
    o.max_manifest_file_size = 1024; // roll often: snapshots carry them
                                     // No background compaction, which would drop the covered keys and the
                                     // tombstone with them before the reopen under test.
    o.compaction_style = CompactionStyle::None;
    {
        let db = common::open(dir.path(), &o);
        fill(&db, 1000, "v");
        db.flush().unwrap();
        db.delete_range(key(100)..key(200)).unwrap(); // only in the WAL
    }
    {
        let db = common::open(dir.path(), &o);
        assert_eq!(db.iter().count(), 900);
        db.flush().unwrap(); // now in the manifest
        for i in 0..30 {
            db.put(format!("x{i}"), "roll the manifest").unwrap();
            db.flush().unwrap();
        }
        assert!(db.stats().manifest_rollovers > 0);
        assert_eq!(db.stats().range_tombstones, 1);
    }
    let db = common::open(dir.path(), &o);
    assert_eq!(db.get(key(150)).unwrap(), None);
    assert_eq!(db.get(key(200)).unwrap().unwrap(), "v200");
    assert_eq!(db.iter().count(), 930);
    db.compact().unwrap();
    assert_eq!(db.stats().range_tombstones, 0);
    drop(db);
    let db = common::open(dir.path(), &o);
    assert_eq!(db.iter().count(), 930);
}

#[test]
fn a_memtable_of_only_range_deletions_flushes_to_no_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path(), &leveled());
    fill(&db, 100, "v");
    db.flush().unwrap();
    let tables = db.live_files().len();
    db.delete_range(key(10)..key(20)).unwrap();
    db.flush().unwrap();
    assert_eq!(db.live_files().len(), tables);
    assert_eq!(db.stats().range_tombstones, 1);
    assert_eq!(db.iter().count(), 90);
    // A deletion over keys no table holds has nothing to wait on.
    db.delete_range("zz"..).unwrap();
    db.flush().unwrap();
    assert_eq!(db.stats().range_tombstones, 1);
}

#[test]
fn every_compaction_style_drops_what_a_range_deletion_hides() {
    for style in [
        CompactionStyle::Leveled,
        CompactionStyle::Tiered,
        CompactionStyle::None,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut o = leveled();
        o.compaction_style = style;
        let db = common::open(dir.path(), &o);
        for round in 0..4 {
            fill(&db, 800, &format!("r{round}-"));
            db.flush().unwrap();
        }
        db.delete_range(..key(400)).unwrap();
        db.wait_for_compactions().unwrap();
        assert_eq!(db.iter().count(), 400, "{style:?}");
        db.compact().unwrap();
        assert_eq!(db.iter().count(), 400, "{style:?}");
        assert_eq!(db.get(key(399)).unwrap(), None, "{style:?}");
        assert_eq!(db.get(key(400)).unwrap().unwrap(), "r3-400", "{style:?}");
        assert_eq!(db.stats().range_tombstones, 0, "{style:?}");
    }
}

/// A manual compaction held at `point` while a range deletion over its
/// input's keys is written and flushed: at `CompactionStart` the merge
/// then knows the tombstone and drops what it hides; at
/// `CompactionBeforeInstall` it has merged without it, so its outputs must
/// join the tombstone's tables, or the tombstone would be dropped with the
/// hidden keys still in them (and they would come back).
fn a_range_deletion_flushed_during_a_compaction(point: SyncPoint) {
    let dir = tempfile::tempdir().unwrap();
    let hold = common::pause::PauseOnce::for_thread(point, "manual");
    let mut o = leveled();
    o.compaction_style = CompactionStyle::None;
    o.sync_points = Some(hold.sync_points());
    let db = std::sync::Arc::new(common::open(dir.path(), &o));
    // Level 1 holds older versions of the keys level 0 holds, so the held
    // compaction is a merge, not a move of the level-0 table.
    fill(&db, 1000, "old");
    db.flush().unwrap();
    db.compact().unwrap();
    fill(&db, 1000, "v");
    db.flush().unwrap();
    hold.arm();
    let manual = {
        let db = std::sync::Arc::clone(&db);
        spawn_named("manual", move || db.compact())
    };
    hold.wait_until_held();
    db.delete_range(key(100)..key(900)).unwrap();
    db.flush().unwrap();
    assert_eq!(db.stats().range_tombstones, 1);
    hold.release();
    manual.join().unwrap().unwrap();
    let check = |db: &Db, when: &str| {
        assert_eq!(db.iter().count(), 200, "{point:?} {when}");
        assert_eq!(db.get(key(500)).unwrap(), None, "{point:?} {when}");
        assert_eq!(
            db.get(key(900)).unwrap().unwrap(),
            "v900",
            "{point:?} {when}"
        );
    };
    check(&db, "after the compaction");
    drop(db);
    let db = common::open(dir.path(), &o);
    check(&db, "after a reopen");
    db.compact().unwrap();
    check(&db, "after a second compaction");
    assert_eq!(db.stats().range_tombstones, 0, "{point:?}");
}

#[test]
fn a_range_deletion_flushed_while_a_compaction_starts_is_applied_by_it() {
    a_range_deletion_flushed_during_a_compaction(SyncPoint::CompactionStart);
}

#[test]
fn a_range_deletion_flushed_while_a_compaction_installs_waits_on_its_outputs() {
    a_range_deletion_flushed_during_a_compaction(SyncPoint::CompactionBeforeInstall);
}

#[test]
fn a_checkpoint_keeps_range_deletions_flushed_and_unflushed() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path(), &leveled());
    fill(&db, 1000, "v");
    db.flush().unwrap();
    db.delete_range(key(100)..key(200)).unwrap();
    db.flush().unwrap(); // in the version
    db.delete_range(key(300)..key(400)).unwrap(); // in the memtable
    let copies = tempfile::tempdir().unwrap();
    let target = copies.path().join("copy");
    db.checkpoint(&target).unwrap();
    db.put(key(150), "after the checkpoint").unwrap();
    drop(db);
    let copy = common::open(&target, &leveled());
    assert_eq!(copy.iter().count(), 800);
    assert_eq!(copy.get(key(150)).unwrap(), None);
    assert_eq!(copy.get(key(350)).unwrap(), None);
    assert_eq!(copy.get(key(400)).unwrap().unwrap(), "v400");
    copy.compact().unwrap();
    assert_eq!(copy.iter().count(), 800);
    assert_eq!(copy.stats().range_tombstones, 0);
}

/// Readers racing range deletions, flushes and compactions: once
/// `delete_range` of a block returned, no read started afterwards sees a
/// key of that block, and every key outside the deleted blocks keeps its
/// value. Readers yield between the two steps that fix their view, and a
/// thread loops flushes and compactions. `SIFTDB_RANGE_RACE_ROUNDS` sets
/// the number of blocks deleted (default 40).
#[test]
fn deleted_ranges_stay_deleted_while_flushes_and_compactions_race_readers() {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::sync::Arc;
    const BLOCK: u32 = 25;
    let rounds = common::env_u64("SIFTDB_RANGE_RACE_ROUNDS", 40) as u32;
    let dir = tempfile::tempdir().unwrap();
    let mut o = leveled();
    o.sync_points = Some(siftdb::sync_point::SyncPoints::new(|p| {
        if p == SyncPoint::ReadBetweenVersionAndSequence {
            std::thread::yield_now();
        }
    }));
    let db = Arc::new(common::open(dir.path(), &o));
    fill(&db, rounds * BLOCK * 2, "v");
    // Blocks 0, 2, 4, ... are deleted in turn; `deleted` counts those done.
    let deleted = Arc::new(AtomicU32::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                db.flush().unwrap();
                if n.is_multiple_of(3) {
                    db.compact().unwrap();
                }
                n += 1;
            }
            n
        })
    };
    let readers: Vec<_> = (0..3u32)
        .map(|r| {
            let (db, deleted, stop) = (Arc::clone(&db), Arc::clone(&deleted), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut checks = 0u64;
                let mut x = 0x9e37_79b9u32.wrapping_mul(r + 1);
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    let done = deleted.load(Ordering::Acquire);
                    let i = (x >> 8) % (rounds * BLOCK * 2);
                    let block = i / BLOCK;
                    let gone = block.is_multiple_of(2) && block / 2 < done;
                    let kept = block % 2 == 1;
                    let got = db.get(key(i)).unwrap();
                    if gone {
                        assert_eq!(got, None, "key {i} of deleted block {block}");
                    } else if kept {
                        assert_eq!(got.unwrap(), format!("v{i}").as_str(), "key {i}");
                    }
                    if x.is_multiple_of(16) {
                        // A scan over the block must agree too.
                        let (lo, hi) = (block * BLOCK, (block + 1) * BLOCK);
                        let n = db.range(key(lo)..key(hi)).count() as u32;
                        if gone {
                            assert_eq!(n, 0, "scan of deleted block {block}");
                        } else if kept {
                            assert_eq!(n, BLOCK, "scan of block {block}");
                        }
                    }
                    checks += 1;
                }
                checks
            })
        })
        .collect();
    for b in 0..rounds {
        let block = 2 * b;
        db.delete_range(key(block * BLOCK)..key((block + 1) * BLOCK))
            .unwrap();
        deleted.store(b + 1, Ordering::Release);
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    stop.store(true, Ordering::Relaxed);
    let churns = churn.join().unwrap();
    let checks: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(
        churns > 3 && checks > 1000,
        "{churns} flush rounds, {checks} checks"
    );
    assert_eq!(db.iter().count() as u32, rounds * BLOCK);
}
