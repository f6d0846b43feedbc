//! Fuzz target `bloom`: the Bloom filter block (`siftdb.bloom.xxh3.v1`,
//! the `filter::bloom` module docs), probed as `Table::get` probes it.
//!
//! Feeds: mode byte 0 or 1, then arbitrary bytes as the filter, probed
//! with hashes of keys cut from the input and with raw 128-bit hashes;
//! mode 2, then bytes that generate keys and a policy (bits per key, `k`),
//! whose filter `create_filter` builds, then mutated.
//!
//! Asserts: `may_match`, `bloom_stats` and `shape` never panic;
//! malformed filters (shorter than 2 bytes, `k` outside 1 to 30) match
//! everything; statistics agree with the bytes. A built filter matches
//! every key it was built from (no false negatives) and has the size and
//! `k` the policy promises.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use siftdb::filter::{bloom_stats, hash_key, BloomFilterPolicy, FilterPolicy, KeyHash};
use siftdb_fuzz::check::check_filter;
use siftdb_fuzz::{apply, mutations, split_mode, Mode};

fuzz_target!(|data: &[u8]| {
    let Some((mode, rest)) = split_mode(data) else {
        return;
    };
    match mode {
        Mode::Raw | Mode::Fixed => {
            let mut hashes: Vec<KeyHash> = rest.chunks(7).take(16).map(hash_key).collect();
            hashes.extend(
                rest.chunks_exact(16)
                    .take(4)
                    .map(|c| KeyHash(u128::from_le_bytes(c.try_into().unwrap()))),
            );
            hashes.push(hash_key(b""));
            check_filter(rest, &hashes);
        }
        Mode::Built => {
            let _ = built(rest);
        }
    }
});

fn built(data: &[u8]) -> arbitrary::Result<()> {
    let mut u = Unstructured::new(data);
    let bits_per_key = u.int_in_range(0..=30)?;
    let policy = if u.arbitrary()? {
        BloomFilterPolicy::with_hashes(bits_per_key, u.int_in_range(0..=40)?)
    } else {
        BloomFilterPolicy::new(bits_per_key)
    };
    let n = u.int_in_range(0..=64)?;
    let mut hashes = Vec::with_capacity(n);
    for _ in 0..n {
        let len = u.int_in_range(0..=12)?;
        hashes.push(hash_key(u.bytes(len)?));
    }
    let filter = policy.create_filter(&hashes);
    let stats = bloom_stats(&filter).expect("a built filter is well formed");
    assert_eq!(stats.bits, policy.bits_for(hashes.len()));
    assert_eq!(stats.num_hashes, policy.num_hashes());
    for h in &hashes {
        assert!(policy.may_match(&filter, *h), "false negative");
    }
    check_filter(&filter, &hashes);
    let mut bad = filter;
    apply(&mut bad, &mutations(&mut u)?);
    check_filter(&bad, &hashes);
    Ok(())
}
