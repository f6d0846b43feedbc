//! Fuzz target `wal`: a write-ahead log (DESIGN.md 12.2 framing, 12.3
//! batches), replayed two ways: record by record through `LogReader` and
//! `decode_batch`, and whole through `Db::open_read_only` on a directory
//! whose (valid) manifest names it as the live WAL.
//!
//! Feeds: mode byte, then
//! - 0: arbitrary bytes as the WAL;
//! - 1: the same with every record's length clamped to the bytes present
//!   and both checksums recomputed, so payloads reach `decode_batch`;
//! - 2: bytes that generate 1 to 8 batches, encoded and appended with the
//!   engine's `LogWriter`, then mutated.
//!
//! Asserts: never a panic; errors are `Corruption`. Records are back to
//! back and re-frame to their bytes; what decodes re-encodes to the same
//! batch. The database opens exactly when every record and batch decodes
//! (a torn tail is dropped) and then holds what the batches wrote. A built
//! WAL replays exactly; with one byte changed it must be `Corruption`,
//! unless the byte is in the last record's payload or payload checksum,
//! which drops exactly that record (RELIABILITY.md, "What a torn WAL tail
//! costs").
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use siftdb::fs::StdFs;
use siftdb::inspect::log::LogWriter;
use siftdb_fuzz::check::check_wal;
use siftdb_fuzz::model::{self, encode_batch};
use siftdb_fuzz::{apply, fixup, mutations, single_byte_change, split_mode, Mode, Scratch};

fuzz_target!(|data: &[u8]| {
    let Some((mode, rest)) = split_mode(data) else {
        return;
    };
    let scratch = Scratch::new();
    match mode {
        Mode::Raw => {
            check_wal(scratch.path(), rest);
        }
        Mode::Fixed => {
            let mut bytes = rest.to_vec();
            fixup::fix_log(&mut bytes);
            check_wal(scratch.path(), &bytes);
        }
        Mode::Built => {
            let _ = built(&scratch, rest);
        }
    }
});

fn built(scratch: &Scratch, data: &[u8]) -> arbitrary::Result<()> {
    let mut u = Unstructured::new(data);
    let batches = model::wal_batches(&mut u)?;
    let mut seq = u.int_in_range(1..=1_000_000)?;
    let ms = mutations(&mut u)?;

    let path = scratch.join("writer.tmp");
    let mut w = LogWriter::create(&StdFs, &path).expect("create log");
    let (mut want, mut starts) = (Vec::new(), Vec::new());
    for ops in batches {
        starts.push(w.append(&encode_batch(seq, &ops)).expect("append"));
        let n = ops.len() as u64;
        want.push((seq, ops));
        seq += n;
    }
    drop(w);
    let valid = std::fs::read(&path).expect("read log");
    std::fs::remove_file(&path).expect("remove log");
    assert_eq!(check_wal(scratch.path(), &valid).as_ref(), Some(&want));

    let mut bad = valid.clone();
    apply(&mut bad, &ms);
    let got = check_wal(scratch.path(), &bad);
    if let Some(p) = single_byte_change(&valid, &bad) {
        let last = *starts.last().unwrap() as usize;
        if p >= last + 8 {
            want.pop();
            assert_eq!(got, Some(want), "byte {p} of the last record");
        } else {
            assert_eq!(got, None, "a change of byte {p} went undetected");
        }
    }
    Ok(())
}
