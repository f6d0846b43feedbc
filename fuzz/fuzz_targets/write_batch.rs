//! Fuzz target `write_batch`: one WAL record payload (DESIGN.md 12.3),
//! decoded with `decode_batch`.
//!
//! Feeds: mode byte 0 or 1, then arbitrary bytes as the payload; mode 2,
//! then bytes that generate a batch (0 to 8 puts and deletes), encoded as
//! DESIGN.md 12.3 says, then mutated.
//!
//! Asserts: `decode_batch` returns `Ok` or `Err`, never panics, and
//! allocates no more than the input justifies. What decodes is within the
//! limits and re-encodes (no longer) to the same batch, and a `WriteBatch`
//! built from its updates holds the same updates; a generated batch
//! decodes to exactly what was encoded.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use siftdb::inspect::key::SequenceNumber;
use siftdb_fuzz::check::check_batch;
use siftdb_fuzz::model::{self, encode_batch};
use siftdb_fuzz::{apply, mutations, split_mode, Mode};

fuzz_target!(|data: &[u8]| {
    let Some((mode, rest)) = split_mode(data) else {
        return;
    };
    match mode {
        Mode::Raw | Mode::Fixed => {
            check_batch(rest);
        }
        Mode::Built => {
            let _ = built(rest);
        }
    }
});

fn built(data: &[u8]) -> arbitrary::Result<()> {
    let mut u = Unstructured::new(data);
    let ops = model::batch_ops(&mut u, &mut Vec::new())?;
    let seq = u.int_in_range(1..=SequenceNumber::MAX.0 + 1 - ops.len() as u64)?;
    let valid = encode_batch(seq, &ops);
    assert_eq!(check_batch(&valid), Some((seq, ops)));
    let mut bad = valid;
    apply(&mut bad, &mutations(&mut u)?);
    check_batch(&bad);
    Ok(())
}
