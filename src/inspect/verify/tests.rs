//! Tests of `verify` (`super`): a healthy database, and each kind of
//! damage it must report.

use std::fs;
use std::sync::Arc;

use super::super::testutil::{build, key, write_table};
use super::super::{current_manifest, open_table, DbSnapshot};
use super::*;
use crate::filter::{FilterPolicy, KeyHash, BLOOM_POLICY_NAME};
use crate::fs::StdFs;
use crate::key::{InternalKey, ParsedInternalKey, SequenceNumber, ValueType};
use crate::sstable::format::{BlockHandle, Footer, BLOCK_TRAILER_LEN};
use crate::sstable::TableProperties;
use crate::version::edit::{KeyspaceAdd, KeyspaceEdit, VersionEdit};
use crate::version::manifest::{Manifest, FORMAT_VERSION};

#[test]
fn verify_clean_then_damaged_data_block() {
    let tmp = tempfile::tempdir().unwrap();
    drop(build(tmp.path()));
    let r = verify_db(tmp.path(), true, &mut |_, _| {}).unwrap();
    assert!(r.is_clean(), "{:?}", r.problems);
    assert_eq!(r.tables, 3);
    assert_eq!(r.entries, 500);
    assert_eq!(r.wals, 1);
    assert!(r.data_blocks > 3);

    // Flip a byte in the second data block of the largest table.
    let snap = DbSnapshot::open(tmp.path()).unwrap();
    let f = &snap.default_tree().version.levels[0][2];
    let h = f.table.index()[1].handle;
    let path = f.table.path().to_path_buf();
    drop(snap);
    let mut bytes = fs::read(&path).unwrap();
    bytes[(h.offset + 5) as usize] ^= 0x40;
    fs::write(&path, &bytes).unwrap();
    let r = verify_db(tmp.path(), false, &mut |_, _| {}).unwrap();
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    let p = &r.problems[0];
    assert_eq!(p.file, path);
    assert_eq!(p.what, "data block 1");
    assert_eq!(p.offset, Some(h.offset));
    assert!(p.detail.contains("checksum mismatch"), "{p}");
    // --all goes on (and finds nothing else: counts are skipped).
    let r = verify_db(tmp.path(), true, &mut |_, _| {}).unwrap();
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    let r = verify_file(&path, false, &mut |_, _| {}).unwrap();
    assert_eq!(r.problems[0].what, "data block 1");
}

#[test]
fn verify_names_metadata_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    drop(build(tmp.path()));
    let snap = DbSnapshot::open(tmp.path()).unwrap();
    let t = &snap.default_tree().version.levels[0][0].table;
    let path = t.path().to_path_buf();
    let footer = *t.footer();
    drop(snap);
    let clean = fs::read(&path).unwrap();
    let len = clean.len() as u64;
    for (at, what) in [
        (footer.index.offset, "index block"),
        (footer.filter.offset, "filter block"),
        (footer.properties.offset, "properties block"),
        (len - 20, "footer"),
    ] {
        let mut b = clean.clone();
        b[at as usize + 1] ^= 1;
        fs::write(&path, &b).unwrap();
        let r = verify_file(&path, false, &mut |_, _| {}).unwrap();
        assert_eq!(r.problems.len(), 1, "{what}");
        assert_eq!(r.problems[0].what, what, "{:?}", r.problems[0]);
    }
    fs::write(&path, &clean).unwrap();
    assert!(verify_file(&path, false, &mut |_, _| {})
        .unwrap()
        .is_clean());
}

/// A policy under the Bloom name that leaves out every other key.
#[derive(Debug)]
struct Forgetful;
impl FilterPolicy for Forgetful {
    fn name(&self) -> &'static str {
        BLOOM_POLICY_NAME
    }
    fn create_filter(&self, hashes: &[KeyHash]) -> Vec<u8> {
        let half: Vec<KeyHash> = hashes.iter().step_by(2).copied().collect();
        crate::filter::BloomFilterPolicy::new(10).create_filter(&half)
    }
    fn may_match(&self, filter: &[u8], hash: KeyHash) -> bool {
        crate::filter::BloomFilterPolicy::new(10).may_match(filter, hash)
    }
    fn shape(&self, filter: &[u8]) -> crate::filter::FilterShape {
        crate::filter::BloomFilterPolicy::new(10).shape(filter)
    }
}

#[test]
fn verify_finds_filter_false_negatives() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("000009.sst");
    let t = write_table(&path, Arc::new(Forgetful), 200);
    assert_eq!(t.file_number(), 9);
    let r = verify_file(&path, true, &mut |_, _| {}).unwrap();
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    let p = &r.problems[0];
    assert_eq!(p.what, "filter block");
    assert_eq!(p.offset, Some(t.footer().filter.offset));
    assert!(p.detail.contains("false negatives"), "{p}");
    assert!(p.detail.contains("first \"key00001\""), "{p}");
}

#[test]
fn verify_compares_properties_with_contents() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("000005.sst");
    let t = write_table(
        &path,
        Arc::new(crate::filter::BloomFilterPolicy::new(10)),
        100,
    );
    assert!(verify_file(&path, true, &mut |_, _| {}).unwrap().is_clean());
    // Rewrite the properties block (same length, valid CRC) with one
    // tombstone too many and a wrong smallest sequence number.
    let h = t.footer().properties;
    let mut props = t.properties().clone();
    assert_eq!(props.num_tombstones, 10);
    props.num_tombstones = 11;
    props.smallest_seq = SequenceNumber(2);
    props.smallest_user_key = key(1);
    drop(t);
    let enc = props.encode();
    assert_eq!(enc.len() as u64, h.size);
    let mut bytes = fs::read(&path).unwrap();
    let (start, end) = (h.offset as usize, (h.offset + h.size) as usize);
    bytes[start..end].copy_from_slice(&enc);
    let trailer = crate::sstable::format::block_trailer(&enc);
    bytes[end..end + BLOCK_TRAILER_LEN].copy_from_slice(&trailer);
    fs::write(&path, &bytes).unwrap();
    let r = verify_file(&path, true, &mut |_, _| {}).unwrap();
    let details: Vec<&str> = r.problems.iter().map(|p| p.detail.as_str()).collect();
    assert_eq!(
        details,
        [
            "siftdb.num_tombstones is 11 but the data blocks hold 10",
            "siftdb.smallest_seq is 2 but the data blocks hold 1",
            "siftdb.smallest_user_key is \"key00001\" but the data blocks hold \"key00000\"",
        ]
    );
    assert!(r
        .problems
        .iter()
        .all(|p| p.what == "properties block" && p.offset == Some(h.offset)));
}

/// Points `CURRENT` in `dir` at a new manifest holding the current
/// state (of a database with only the default keyspace) with `change`
/// applied to it; returns the new manifest's path.
fn rewrite_manifest(dir: &Path, change: impl FnOnce(&mut VersionEdit)) -> PathBuf {
    let (_, manifest) = current_manifest(dir).unwrap();
    let state = read_manifest(&manifest).unwrap().replay_all().unwrap();
    let mut snapshot = VersionEdit {
        format_version: Some(FORMAT_VERSION),
        log_number: Some(state.log_number),
        next_file_number: Some(state.next_file_number + 1),
        last_sequence: Some(SequenceNumber(state.last_sequence)),
        ..VersionEdit::default()
    };
    for (level, files) in state.files.iter().enumerate() {
        for meta in files.values() {
            snapshot.new_files.push((level as u32, meta.clone()));
        }
    }
    change(&mut snapshot);
    let n = state.next_file_number;
    Manifest::create(&StdFs, dir, n, &snapshot).unwrap();
    filename::manifest_path(dir, n)
}

#[test]
fn verify_compares_manifest_entries_with_tables() {
    let tmp = tempfile::tempdir().unwrap();
    drop(build(tmp.path()));
    // A new manifest whose entry for one table is off by one entry and
    // one byte.
    let mut number = 0;
    rewrite_manifest(tmp.path(), |edit| {
        let (_, wrong) = &mut edit.new_files[1];
        wrong.num_entries += 1;
        wrong.file_size += 1;
        number = wrong.number;
    });
    let r = verify_db(tmp.path(), true, &mut |_, _| {}).unwrap();
    let what = format!("manifest entry of {number:06}.sst (level 0)");
    assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
    assert!(
        r.problems.iter().all(|p| p.what == what),
        "{:?}",
        r.problems
    );
    assert!(
        r.problems[0].detail.starts_with("records size "),
        "{:?}",
        r.problems
    );
    assert!(r.problems[1].detail.contains("entries but the table holds"));
    // The manifest the old CURRENT named is now an orphan: a note.
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("manifest not named by CURRENT")),
        "{:?}",
        r.notes
    );
}

/// A table the manifest lists in keyspace 1 whose `siftdb.keyspace`
/// property says the default (absent) is a problem of its manifest
/// entry; the other tables, the keyspace's WALs and the sections'
/// shape are sound.
#[test]
fn verify_compares_a_tables_keyspace_with_the_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    drop(build(tmp.path()));
    assert!(verify_db(tmp.path(), true, &mut |_, _| {})
        .unwrap()
        .is_clean());
    let mut number = 0;
    rewrite_manifest(tmp.path(), |edit| {
        let moved = edit.new_files.remove(1);
        number = moved.1.number;
        edit.next_keyspace_id = Some(2);
        edit.keyspaces.insert(
            1,
            KeyspaceEdit {
                add: Some(KeyspaceAdd {
                    name: "moved".into(),
                    options: String::new(),
                }),
                log_number: edit.log_number,
                new_files: vec![moved],
                ..Default::default()
            },
        );
    });
    let r = verify_db(tmp.path(), true, &mut |_, _| {}).unwrap();
    assert_eq!(r.tables, 3);
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    let p = &r.problems[0];
    assert_eq!(
        p.what,
        format!("manifest entry of {number:06}.sst (level 0 of keyspace 1)")
    );
    assert_eq!(
        p.detail,
        "records it in keyspace 1 but its property siftdb.keyspace says 0"
    );
}

/// Writes a table by hand from `blocks` of `(user key, seq)` puts, in
/// the given order (the builder would refuse a bad order), with
/// properties that match the contents, so only the order is wrong.
/// `rename` replaces one block's index key: `(block, user key)`.
fn raw_table(path: &Path, blocks: &[&[(&str, u64)]], rename: Option<(usize, &str)>) {
    use crate::sstable::format::block_trailer;
    // Data blocks without a codec byte: format 1.
    const TABLE_FORMAT: u32 = 1;
    use crate::sstable::BlockBuilder;
    let mut file = Vec::new();
    let mut index = BlockBuilder::new(1);
    let mut props = TableProperties {
        format_version: TABLE_FORMAT,
        num_data_blocks: blocks.len() as u64,
        smallest_seq: SequenceNumber(u64::MAX),
        ..TableProperties::default()
    };
    let write = |file: &mut Vec<u8>, contents: &[u8]| {
        let h = BlockHandle::new(file.len() as u64, contents.len() as u64);
        file.extend_from_slice(contents);
        file.extend_from_slice(&block_trailer(contents));
        h
    };
    let mut prev: Option<&str> = None;
    for (i, entries) in blocks.iter().enumerate() {
        let mut b = BlockBuilder::new(16);
        let mut last = Vec::new();
        for (j, &(k, seq)) in entries.iter().enumerate() {
            last = InternalKey::new(k.as_bytes(), SequenceNumber(seq), ValueType::Value)
                .into_encoded();
            b.add(&last, b"v");
            if i == 0 && j == 0 {
                props.smallest_user_key = k.as_bytes().to_vec();
            }
            props.largest_user_key = k.as_bytes().to_vec();
            props.num_entries += 1;
            props.num_distinct_keys += u64::from(prev != Some(k));
            props.raw_key_bytes += last.len() as u64;
            props.raw_value_bytes += 1;
            props.smallest_seq = props.smallest_seq.min(SequenceNumber(seq));
            props.largest_seq = props.largest_seq.max(SequenceNumber(seq));
            prev = Some(k);
        }
        let h = write(&mut file, b.finish());
        if let Some((_, k)) = rename.filter(|r| r.0 == i) {
            let seq = ParsedInternalKey::parse(&last).unwrap().seq;
            last = InternalKey::new(k.as_bytes(), seq, ValueType::Value).into_encoded();
        }
        let mut v = Vec::new();
        h.encode_to(&mut v);
        index.add(&last, &v);
    }
    let properties = write(&mut file, &props.encode());
    let index = write(&mut file, index.finish());
    let footer = Footer {
        index,
        filter: BlockHandle::default(),
        properties,
        format_version: TABLE_FORMAT,
    };
    file.extend_from_slice(&footer.encode());
    fs::write(path, file).unwrap();
}

#[test]
fn verify_checks_key_order_within_and_across_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("000001.sst");
    raw_table(&good, &[&[("a", 1), ("b", 2)], &[("c", 3)]], None);
    assert!(verify_file(&good, true, &mut |_, _| {}).unwrap().is_clean());

    let within = tmp.path().join("000002.sst");
    raw_table(&within, &[&[("b", 2), ("a", 1)], &[("c", 3)]], None);
    let r = verify_file(&within, true, &mut |_, _| {}).unwrap();
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert_eq!(r.problems[0].what, "data block 0");
    assert_eq!(r.problems[0].offset, Some(0));
    assert_eq!(
        r.problems[0].detail,
        "key \"a\"@1 put is not after the previous key \"b\"@2 put"
    );

    let across = tmp.path().join("000003.sst");
    raw_table(
        &across,
        &[&[("a", 1), ("c", 3)], &[("b", 2), ("d", 4)]],
        None,
    );
    let r = verify_file(&across, true, &mut |_, _| {}).unwrap();
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert_eq!(r.problems[0].what, "data block 1");
    assert_eq!(
        r.problems[0].detail,
        "key \"b\"@2 put is not after the previous key \"c\"@3 put \
         (the last of the previous block)"
    );
}

#[test]
fn verify_checks_index_keys_against_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("000004.sst");
    // Index entry 0 names "bb", which still sorts before block 1.
    raw_table(
        &path,
        &[&[("a", 1), ("b", 2)], &[("c", 3)]],
        Some((0, "bb")),
    );
    let t = open_table(&path).unwrap();
    let r = verify_file(&path, true, &mut |_, _| {}).unwrap();
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert_eq!(r.problems[0].what, "index block");
    assert_eq!(r.problems[0].offset, Some(t.footer().index.offset));
    assert_eq!(
        r.problems[0].detail,
        "index entry 0 says the block ends with \"bb\"@2 put, it ends with \"b\"@2 put"
    );
}

#[test]
fn verify_finds_overlapping_files_in_a_sorted_level() {
    let tmp = tempfile::tempdir().unwrap();
    drop(build(tmp.path()));
    // Claim that the (overlapping) level-0 tables are in level 1.
    let manifest = rewrite_manifest(tmp.path(), |edit| {
        edit.new_files.iter_mut().for_each(|(level, _)| *level = 1);
    });
    let r = verify_db(tmp.path(), true, &mut |_, _| {}).unwrap();
    assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
    let p = &r.problems[0];
    assert_eq!(p.what, "level 1");
    assert_eq!(p.file, manifest);
    assert!(p.detail.contains(" overlaps "), "{p}");
    let r = verify_db(tmp.path(), false, &mut |_, _| {}).unwrap();
    assert_eq!(r.problems.len(), 1);
}

/// A user's report: `kvctl verify` beside a process writing with 8
/// threads exited 3 in 2 of 240 runs with "WAL record at offset 49868:
/// length checksum mismatch: stored 0x00000000", and was clean when run
/// again: it had read a record header before the writer copied that group
/// in, and the bytes after it once they were copied.
#[test]
fn verify_reads_again_a_wal_group_a_writer_is_copying() {
    use crate::db::recovery_test_support::{count_rereads, CaughtGroup};
    let tmp = tempfile::tempdir().unwrap();
    let caught = CaughtGroup::new(tmp.path());
    let (rereads, _hook) = count_rereads(Some(Box::new(caught.completer())));
    let r = verify_db(tmp.path(), false, &mut |_, _| {}).unwrap();
    assert!(r.is_clean(), "{:?}", r.problems);
    assert_eq!((r.wals, r.wal_records), (1, 2));
    assert_eq!(rereads.get(), 1);
    // One WAL alone (`kvctl verify DB/NNNNNN.log`) too.
    caught.catch();
    let r = verify_file(&caught.wal, false, &mut |_, _| {}).unwrap();
    assert!(r.is_clean(), "{:?}", r.problems);
    assert_eq!(r.wal_records, 2);
    assert_eq!(rereads.get(), 2);
}

#[test]
fn verify_reports_wal_damage_that_persists_or_has_no_writer() {
    use crate::db::recovery_test_support::{count_rereads, CaughtGroup};
    use crate::db::LIVE_WAL_REREADS;
    let tmp = tempfile::tempdir().unwrap();
    let caught = CaughtGroup::new(tmp.path());
    let (rereads, _hook) = count_rereads(None);
    let expect_damage = |r: VerifyReport| {
        assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
        let p = &r.problems[0];
        assert_eq!(
            (&p.file, p.what.as_str(), p.offset),
            (&caught.wal, "WAL record", Some(caught.offset))
        );
        assert_eq!(
            p.detail,
            "length checksum mismatch: stored 0x00000000, computed 0x2144df1c"
        );
    };
    // Held by a writer: read again, and reported once it persists.
    expect_damage(verify_db(tmp.path(), false, &mut |_, _| {}).unwrap());
    assert_eq!(rereads.get(), LIVE_WAL_REREADS);
    expect_damage(verify_file(&caught.wal, false, &mut |_, _| {}).unwrap());
    assert_eq!(rereads.get(), 2 * LIVE_WAL_REREADS);
    // No writer: reported at once.
    rereads.set(0);
    caught.db.close().unwrap();
    expect_damage(verify_db(tmp.path(), false, &mut |_, _| {}).unwrap());
    expect_damage(verify_file(&caught.wal, false, &mut |_, _| {}).unwrap());
    assert_eq!(rereads.get(), 0);
}
