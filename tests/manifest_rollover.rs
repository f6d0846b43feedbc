//! The manifest is rolled over while the database runs: it gains a record
//! at every flush and compaction, and used to be rewritten only at open, so
//! a database that stayed open grew it without bound. Crash safety of the
//! rollover is swept by the power-loss and I/O-fault campaigns, whose tiny
//! options roll the manifest over every few edits.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use common::fault_fs::{FaultFs, OpKind, EIO};
use common::pause::PauseOnce;
use siftdb::sync_point::SyncPoint;
use siftdb::{Db, Error, Options};

/// The manifests in `dir`, with their sizes and where their first record
/// (the snapshot) ends. A manifest the database deletes (after a
/// rollover) between the listing and its reading is left out, as is one
/// whose first record is not written yet.
fn manifests(dir: &Path) -> Vec<(String, u64, u64)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().starts_with("MANIFEST-"))
        .filter_map(|e| match std::fs::read(e.path()) {
            // The log framing (DESIGN.md 12.2): a 12-byte header whose
            // first 4 bytes are the payload length.
            Ok(b) if b.len() >= 4 => {
                let payload = u32::from_le_bytes(b[..4].try_into().unwrap());
                let name = e.file_name().to_string_lossy().into_owned();
                Some((name, b.len() as u64, 12 + u64::from(payload)))
            }
            Ok(_) => None,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => panic!("read {:?}: {err}", e.path()),
        })
        .collect()
}

#[test]
fn the_manifest_stays_bounded_while_the_database_runs() {
    let dir = common::scratch_dir();
    let mut o = Options::default();
    o.write_buffer_size = 2 << 10;
    o.target_file_size = 2 << 10;
    o.max_bytes_for_level_base = 8 << 10;
    o.level0_compaction_trigger = 2;
    o.max_manifest_file_size = 2 << 10;
    let db = Db::open_with(dir.path(), o.clone()).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = common::Rng(11);
    let (mut largest, mut most_files) = (0, 0);
    for i in 0..6000u64 {
        let k = format!("key{:04}", rng.below(800));
        if rng.below(10) == 0 {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = format!("value {i}");
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        if i % 100 == 0 {
            let m = manifests(dir.path());
            most_files = most_files.max(m.len());
            // The rollover bound is the larger of the option and twice the
            // snapshot (so that a snapshot above the option does not roll
            // at every edit), plus one edit: a rollover follows the edit
            // that passes it.
            for (name, len, snapshot) in &m {
                let bound = (2u64 << 10).max(2 * snapshot) + 2048;
                assert!(
                    len < &bound,
                    "{name} reached {len} bytes (snapshot {snapshot})"
                );
            }
            largest = largest.max(m.iter().map(|(_, len, _)| *len).max().unwrap_or(0));
            if i % 1000 == 0 {
                // A reader in another process opens whichever is current.
                let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
                assert_eq!(ro.iter().count(), model.len());
            }
        }
    }
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    let live = db.live_files().len();
    drop(db);
    println!(
        "{} flushes, {} compactions, {} rollovers; largest manifest {largest} bytes, \
         at most {most_files} manifest files; {live} tables",
        s.flushes, s.compactions, s.manifest_rollovers
    );
    assert!(s.manifest_rollovers >= 10, "{s:?}");
    // A snapshot holds a few dozen tables and up to 64 compactions' key
    // predictions (about 35 bytes each): the manifest stays a few KiB.
    assert!(largest < 12 << 10, "a manifest reached {largest} bytes");
    // One manifest, or two for the moment of a rollover.
    assert!(most_files <= 2, "{most_files} manifests at once");
    let db = Db::open_with(dir.path(), o).unwrap();
    assert_eq!(manifests(dir.path()).len(), 1);
    let got: BTreeMap<String, String> = db
        .iter()
        .map(|r| {
            let (k, v) = r.unwrap();
            (
                String::from_utf8(k.into_vec()).unwrap(),
                String::from_utf8(v.into_vec()).unwrap(),
            )
        })
        .collect();
    assert_eq!(got, model);
}

/// A failed rollover leaves the database no manifest to log to, and the
/// flush that failed records its error only once it has let go of the
/// versions lock. A manual compaction that found the database writable
/// before that, and logs its edit in between, must report the rollover's
/// failure, not [`Error::ReadOnly`] as if the handle had been opened
/// read-only (found by the power-loss campaign in CI: seed 2430779614,
/// a flush's rollover cut while `compact` ran).
#[test]
fn a_compaction_after_a_failed_rollover_reports_the_failure() {
    let dir = common::scratch_dir();
    let fs = FaultFs::new();
    let pause = PauseOnce::for_thread(SyncPoint::CompactionBeforeInstall, "manual");
    let mut o = Options::default();
    o.file_system = fs.arc();
    // No background compaction, and no write stall behind the paused one.
    (o.level0_compaction_trigger, o.level0_slowdown_trigger) = (1000, 1000);
    o.level0_stop_trigger = 1000;
    o.max_manifest_file_size = 1024;
    o.sync_points = Some(pause.sync_points());
    let db = Arc::new(Db::open_with(dir.path(), o).unwrap());
    for k in ["a", "b"] {
        db.put(k, "old").unwrap();
        db.flush().unwrap();
    }
    pause.arm();
    let compacting = {
        let db = Arc::clone(&db);
        std::thread::Builder::new()
            .name("manual".into())
            .spawn(move || db.compact())
            .unwrap()
    };
    pause.wait_until_held();
    // Flush until an edit fills the manifest and its rollover fails.
    fs.fail_next(OpKind::Create, "manifest", EIO);
    let mut flushes = 0;
    let failed = loop {
        db.put(format!("k{flushes}"), "v").unwrap();
        match db.flush() {
            Ok(()) if flushes < 500 => flushes += 1,
            other => break other,
        }
    };
    assert!(
        fs.failed().iter().any(|(_, op)| op.kind == OpKind::Create),
        "no rollover failed in {flushes} flushes ({failed:?})"
    );
    pause.release();
    let compacted = compacting.join().unwrap();
    assert!(
        matches!(compacted, Err(Error::Io { .. } | Error::Background(_))),
        "the compaction returned {compacted:?}"
    );
    assert!(matches!(db.put("c", "v"), Err(Error::Background(_))));
    drop(db);
    // Every acknowledged write is there after a reopen.
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"old"[..]));
    for i in 0..flushes {
        assert!(db.get(format!("k{i}")).unwrap().is_some(), "k{i}");
    }
}
