//! Fuzz target `sstable`: a whole `.sst` file (DESIGN.md 12.4 to 12.7),
//! opened with `Table::open` from a file, as the engine does.
//!
//! Feeds: mode byte, then
//! - 0: arbitrary bytes as the file;
//! - 1: the same with the checksums recomputed (every data block the index
//!   names, filter, properties, index, footer CRC and magic), so the
//!   fuzzer reaches the block, index and properties decoders;
//! - 2: bytes that generate sorted entries and a layout (block size,
//!   restart interval, Bloom filter or none), written by `TableBuilder`,
//!   then mutated.
//!
//! Asserts: open, `get` (of keys taken from the index, the entries and the
//! properties) and iteration return `Ok` or `Corruption` /
//! `UnsupportedVersion`, never panic. Forward, backward and interleaved
//! scans agree when they finish. A built table reads back exactly: every
//! entry, `get` of each key at several sequence numbers and of absent keys,
//! bounded ranges both ways. Changing any one byte of a built table must
//! make open or the full scan fail.
#![no_main]

use std::path::Path;

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use siftdb::inspect::sstable::TableBuilder;
use siftdb_fuzz::check::{check_table, check_table_exact};
use siftdb_fuzz::{apply, fixup, model, mutations, single_byte_change, split_mode, Mode, Scratch};

fuzz_target!(|data: &[u8]| {
    let Some((mode, rest)) = split_mode(data) else {
        return;
    };
    let scratch = Scratch::new();
    let path = scratch.join("000001.sst");
    match mode {
        Mode::Raw => {
            check_table(&path, rest);
        }
        Mode::Fixed => {
            let mut bytes = rest.to_vec();
            fixup::fix_table(&mut bytes);
            check_table(&path, &bytes);
        }
        Mode::Built => {
            let _ = built(&path, rest);
        }
    }
});

fn built(path: &Path, data: &[u8]) -> arbitrary::Result<()> {
    let mut u = Unstructured::new(data);
    let opts = model::table_options(&mut u)?;
    let entries = model::table_entries(&mut u)?;
    let ms = mutations(&mut u)?;
    let mut b = TableBuilder::new(path, opts).expect("create table");
    for (k, v) in &entries {
        b.add(k, v).expect("add a valid entry");
    }
    b.finish().expect("finish table");
    let valid = std::fs::read(path).expect("read table");
    check_table_exact(path, &valid, &entries);

    let mut bad = valid.clone();
    apply(&mut bad, &ms);
    let read = check_table(path, &bad);
    if let Some(p) = single_byte_change(&valid, &bad) {
        assert!(read.is_none(), "a change of byte {p} went undetected");
    }
    Ok(())
}
