//! Write stalls bound level 0: however writes, `flush` calls and the
//! background flush interleave, level 0 never holds more than
//! `level0_stop_trigger` files (DESIGN.md 6.4).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::pause::PauseOnce;
use common::spawn_named;
use siftdb::sync_point::{SyncPoint, SyncPoints};
use siftdb::{Db, Options};

fn level0(db: &Db) -> usize {
    db.live_files().iter().filter(|f| f.level == 0).count()
}

/// With compactions held, two `flush` calls whose memtables were filled
/// while level 0 was one file below the stop trigger: before the fix both
/// rotated (a flush did not wait out the stall) and level 0 reached the
/// trigger plus one. Now the second waits until compaction makes room.
#[test]
fn flushes_never_take_level0_past_the_stop_trigger() {
    let dir = tempfile::tempdir().unwrap();
    let hold_compaction = PauseOnce::for_thread(SyncPoint::CompactionStart, "manual");
    let hold_flush = PauseOnce::for_thread(SyncPoint::FlushStart, "siftdb-bg");
    let mut o = Options::default();
    o.level0_compaction_trigger = 2;
    o.level0_slowdown_trigger = 3;
    o.level0_stop_trigger = 3;
    o.sync_points = Some({
        let (c, f) = (hold_compaction.clone(), hold_flush.clone());
        SyncPoints::new(move |p| {
            c.reached(p);
            f.reached(p);
        })
    });
    let db = Arc::new(Db::open_with(dir.path(), o).unwrap());
    db.put("a0", "0").unwrap();
    db.flush().unwrap();
    // A manual compaction that holds the compaction lock, so that no
    // compaction shrinks level 0 while the flushes run.
    hold_compaction.arm();
    let manual = {
        let db = Arc::clone(&db);
        spawn_named("manual", move || db.compact_range("a"..="z"))
    };
    hold_compaction.wait_until_held();
    db.put("a1", "1").unwrap();
    db.flush().unwrap();
    assert_eq!(level0(&db), 2);

    // The first flush freezes its memtable and the background flush of it
    // is held; meanwhile a second writer fills the next memtable (level 0
    // is still 2, below the trigger, so the put passes) and flushes.
    hold_flush.arm();
    let first = {
        let db = Arc::clone(&db);
        spawn_named("first", move || {
            db.put("b1", "1").unwrap();
            db.flush()
        })
    };
    hold_flush.wait_until_held();
    let second = {
        let db = Arc::clone(&db);
        spawn_named("second", move || {
            db.put("b2", "2").unwrap();
            db.flush()
        })
    };
    std::thread::sleep(Duration::from_millis(200));
    hold_flush.release();

    let mut most = 0;
    let deadline = Instant::now() + Duration::from_millis(500);
    while Instant::now() < deadline && !(first.is_finished() && second.is_finished()) {
        most = most.max(level0(&db));
        std::thread::sleep(Duration::from_millis(5));
    }
    most = most.max(level0(&db));
    assert!(
        most <= 3,
        "level 0 held {most} files with a stop trigger of 3"
    );
    assert!(
        !second.is_finished(),
        "the second flush should wait while level 0 is at the trigger"
    );

    hold_compaction.release();
    manual.join().unwrap().unwrap();
    first.join().unwrap().unwrap();
    second.join().unwrap().unwrap();
    db.wait_for_compactions().unwrap();
    assert!(level0(&db) < 3);
    for (k, v) in [("a0", "0"), ("a1", "1"), ("b1", "1"), ("b2", "2")] {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_bytes()), "{k}");
    }
}
