//! Fuzz target `manifest`: a manifest (DESIGN.md 12.2 framing, 12.8
//! version edits) named by `CURRENT`, replayed with `manifest::replay`,
//! folded into a `ReplayedState`, and opened with `Db::open_read_only`;
//! and the same bytes decoded directly as one `VersionEdit`.
//!
//! Feeds: mode byte, then
//! - 0: arbitrary bytes as the manifest, and as one encoded edit;
//! - 1: the same with every record's length clamped and checksums
//!   recomputed, so payloads reach `VersionEdit::decode`;
//! - 2: bytes that generate 1 to 5 valid edits (the first with format
//!   version 1), appended with the engine's `LogWriter`, then mutated.
//!
//! Asserts: never a panic; errors are `Corruption` or
//! `UnsupportedVersion`. Decoded edits validate and re-encode to the same
//! edit; replay returns exactly the log's records decoded one by one.
//! Generated edits round-trip and a built manifest replays to exactly
//! them; with one byte changed, the log reader reports `Corruption` unless
//! the byte is in the last record's payload or payload checksum (that
//! record is dropped), and replay returns at most that one edit fewer.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use siftdb::fs::StdFs;
use siftdb::inspect::log::LogWriter;
use siftdb_fuzz::check::{check_edit, check_log, check_manifest};
use siftdb_fuzz::{apply, fixup, model, mutations, single_byte_change, split_mode, Mode, Scratch};

fuzz_target!(|data: &[u8]| {
    let Some((mode, rest)) = split_mode(data) else {
        return;
    };
    let scratch = Scratch::new();
    match mode {
        Mode::Raw => {
            check_edit(rest);
            check_manifest(scratch.path(), rest);
        }
        Mode::Fixed => {
            let mut bytes = rest.to_vec();
            fixup::fix_log(&mut bytes);
            check_manifest(scratch.path(), &bytes);
        }
        Mode::Built => {
            let _ = built(&scratch, rest);
        }
    }
});

fn built(scratch: &Scratch, data: &[u8]) -> arbitrary::Result<()> {
    let mut u = Unstructured::new(data);
    let edits = model::manifest_edits(&mut u)?;
    let ms = mutations(&mut u)?;

    let path = scratch.join("writer.tmp");
    let mut w = LogWriter::create(&StdFs, &path).expect("create log");
    let mut starts = Vec::new();
    for e in &edits {
        e.validate().expect("generated edits are valid");
        let enc = e.encode();
        assert_eq!(check_edit(&enc).as_ref(), Some(e), "edit round trip");
        starts.push(w.append(&enc).expect("append"));
    }
    drop(w);
    let valid = std::fs::read(&path).expect("read log");
    std::fs::remove_file(&path).expect("remove log");
    assert_eq!(
        check_manifest(scratch.path(), &valid).as_ref(),
        Some(&edits)
    );

    let mut bad = valid.clone();
    apply(&mut bad, &ms);
    let got = check_manifest(scratch.path(), &bad);
    if let Some(p) = single_byte_change(&valid, &bad) {
        let last = *starts.last().unwrap() as usize;
        let log = check_log(&bad);
        if p >= last + 8 {
            let log = log.expect("damage to the last record is a torn tail");
            assert!(log.torn);
            assert_eq!(log.records.len(), edits.len() - 1);
        } else {
            assert!(log.is_none(), "a change of byte {p} went undetected");
        }
        if let Some(got) = got {
            assert_eq!(
                got[..],
                edits[..edits.len() - 1],
                "byte {p} of the last record"
            );
        }
    }
    Ok(())
}
