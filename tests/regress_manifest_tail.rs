//! Regression (found by the corruption campaign): losing the tail of the
//! manifest silently lost acknowledged writes.
//!
//! Manifest replay drops a final record that looks torn (DESIGN.md 8, step
//! 3): right for an edit cut off by a crash inside `log_edit`, which nothing
//! depended on. But a manifest truncated, or with its last record damaged,
//! after the edit was durable looks the same, and the files that edit
//! obsoleted are gone: for a flush edit, the WAL holding the flushed writes
//! (so `open` succeeded and those keys were silently missing); for a
//! compaction edit, its input tables (so `open` failed with an `Io`
//! "not found" rather than reporting corruption). Open must refuse with
//! `Corruption` naming the manifest instead.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{dir_contents, open, small_options};
use siftdb::inspect::version::edit::VersionEdit;
use siftdb::inspect::version::manifest::replay;
use siftdb::{Db, Error};

/// The live manifest and its number.
fn live_manifest(dir: &Path) -> (PathBuf, u64) {
    let name = fs::read_to_string(dir.join("CURRENT")).unwrap();
    let name = name.trim_end();
    let number = name.trim_start_matches("MANIFEST-").parse().unwrap();
    (dir.join(name), number)
}

/// The last edit of the live manifest.
fn last_edit(dir: &Path) -> VersionEdit {
    let (_, number) = live_manifest(dir);
    replay(dir, number).unwrap().records.pop().unwrap().edit
}

/// Puts `key0000` to `key0099`, all set to `value`, then flushes them: the
/// flush logs an edit (new table, newer log number), then deletes the WAL
/// that held the writes.
fn put_keys_and_flush(db: &Db, value: &str) {
    for i in 0..100 {
        db.put(format!("key{i:04}"), value).unwrap();
    }
    db.flush().unwrap();
}

/// Cuts the manifest just inside its last record's header, which replay
/// reads as a torn tail, and returns the offset of that record.
fn cut_last_record(dir: &Path) -> u64 {
    let (path, number) = live_manifest(dir);
    let records = siftdb::inspect::log::read_log(&path).unwrap().records;
    assert!(records.len() >= 2, "snapshot plus at least one edit");
    let last = records.last().unwrap().offset;
    let f = fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(last + 5).unwrap();
    drop(f);
    let r = replay(dir, number).unwrap();
    assert!(r.torn_tail.is_some(), "replay must see a torn tail");
    last
}

fn assert_corruption_naming_manifest(dir: &Path, what: &str) {
    let (manifest, _) = live_manifest(dir);
    let before = dir_contents(dir);
    match Db::open_with(dir, small_options()) {
        Err(Error::Corruption { file, detail, .. }) => {
            assert_eq!(file, manifest, "{what}: {detail}");
            assert!(detail.contains("missing"), "{what}: {detail}");
        }
        Err(e) => panic!("{what}: expected Corruption naming the manifest, got {e:?}"),
        Ok(db) => {
            let lost = db.get("key0000").unwrap();
            panic!("{what}: open succeeded (key0000 = {lost:?})");
        }
    }
    assert_eq!(
        dir_contents(dir),
        before,
        "{what}: failed open changed files"
    );
}

#[test]
fn lost_flush_edit_is_corruption_not_silent_data_loss() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path(), &small_options());
        put_keys_and_flush(&db, "flushed");
        db.close().unwrap();
    }
    let last = last_edit(dir.path());
    assert_eq!(last.new_files.len(), 1, "last edit is the flush: {last:?}");
    cut_last_record(dir.path());
    assert_corruption_naming_manifest(dir.path(), "flush edit cut off");
}

#[test]
fn lost_flush_edit_by_a_flipped_byte_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path(), &small_options());
        put_keys_and_flush(&db, "flushed");
    }
    // Damage the last byte of the last record's payload: its checksum
    // fails and it ends the file, so replay takes it for a torn tail.
    let (path, _) = live_manifest(dir.path());
    let mut bytes = fs::read(&path).unwrap();
    *bytes.last_mut().unwrap() ^= 0x40;
    fs::write(&path, bytes).unwrap();
    assert_corruption_naming_manifest(dir.path(), "flush edit flipped");
}

#[test]
fn lost_compaction_edit_is_corruption_not_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path(), &small_options());
        for round in 0..4 {
            put_keys_and_flush(&db, &format!("round {round}"));
        }
        db.wait_for_compactions().unwrap();
        db.close().unwrap();
    }
    let last = last_edit(dir.path());
    assert!(
        !last.deleted_files.is_empty() && !last.new_files.is_empty(),
        "last edit is a merging compaction: {last:?}"
    );
    cut_last_record(dir.path());
    assert_corruption_naming_manifest(dir.path(), "compaction edit cut off");
}

#[test]
fn edit_torn_by_a_crash_is_still_dropped_quietly() {
    // The case the torn-tail rule exists for: an edit cut off before it
    // was durable, so the files it would obsolete are all still there.
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path(), &small_options());
        put_keys_and_flush(&db, "v");
        db.put("late", "in the WAL").unwrap();
    }
    // Append half of a plausible next edit, as a crash inside log_edit
    // leaves it.
    let (path, _) = live_manifest(dir.path());
    let record = common::log_record(&[0x02, 0x63, 0x03, 0x64]);
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    std::io::Write::write_all(&mut f, &record[..10]).unwrap();
    drop(f);
    let db = open(dir.path(), &small_options());
    assert_eq!(db.get("key0042").unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(db.get("late").unwrap().as_deref(), Some(&b"in the WAL"[..]));
}
