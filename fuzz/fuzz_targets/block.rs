//! Fuzz target `block`: one SSTable data or index block (DESIGN.md 12.5).
//!
//! Feeds: mode byte 0 or 1, then arbitrary bytes as a block's contents
//! (a block has no checksum of its own, so both modes are raw); mode 2,
//! then bytes that generate sorted entries and a restart interval, built
//! with `BlockBuilder` and then mutated (see the crate docs, `src/lib.rs`).
//!
//! Asserts: `Block::new`, iteration (blocks iterate forward only) and
//! `Block::seek` return `Ok` or `Corruption`, never panic. A block that
//! iterates cleanly rebuilds to the same entries, every seek in it
//! succeeds, and if its keys are sorted each seek returns what a linear
//! scan does. A built block decodes to exactly the entries it was built
//! from.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use siftdb::inspect::sstable::BlockBuilder;
use siftdb_fuzz::check::check_block;
use siftdb_fuzz::{apply, model, mutations, split_mode, Mode};

fuzz_target!(|data: &[u8]| {
    let Some((mode, rest)) = split_mode(data) else {
        return;
    };
    match mode {
        Mode::Raw | Mode::Fixed => {
            check_block(rest);
        }
        Mode::Built => {
            let _ = built(rest);
        }
    }
});

fn built(data: &[u8]) -> arbitrary::Result<()> {
    let mut u = Unstructured::new(data);
    let entries = model::table_entries(&mut u)?;
    let mut b = BlockBuilder::new(u.int_in_range(1..=16)?);
    for (k, v) in &entries {
        b.add(k, v);
    }
    let valid = b.finish().to_vec();
    assert_eq!(check_block(&valid).as_deref(), Some(&entries[..]));
    let mut bad = valid;
    apply(&mut bad, &mutations(&mut u)?);
    check_block(&bad);
    Ok(())
}
