//! Helpers shared by the tests of the inspect modules.

use std::path::Path;
use std::sync::Arc;

use crate::filter::{FilterPolicy, KeyHash, BLOOM_POLICY_NAME};
use crate::key::{InternalKey, ValueType};
use crate::sstable::{Table, TableBuilder, TableOptions};
use crate::{CompactionStyle, Db, Options, SequenceNumber};

use super::open_table;

/// Small blocks and no compaction, so tests control the file set.
pub(super) fn options() -> Options {
    Options {
        write_buffer_size: 1 << 20,
        block_size: 256,
        compaction_style: CompactionStyle::None,
        ..Options::default()
    }
}

/// `key00042` for 42.
pub(super) fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Three flushed tables: keys 0..300 (file A), 100..200 rewritten (B),
/// 0..300 step 3 deleted (C, newest); then a few unflushed writes.
pub(super) fn build(dir: &Path) -> Db {
    let db = Db::open_with(dir, options()).unwrap();
    for i in 0..300 {
        db.put(key(i), format!("v1-{i}")).unwrap();
    }
    db.flush().unwrap();
    for i in 100..200 {
        db.put(key(i), format!("v2-{i}")).unwrap();
    }
    db.flush().unwrap();
    for i in (0..300).step_by(3) {
        db.delete(key(i)).unwrap();
    }
    db.flush().unwrap();
    db.put(key(1), "mem").unwrap();
    db.delete(key(2)).unwrap();
    db
}

/// A policy under the Bloom name that sets every bit.
#[derive(Debug)]
pub(super) struct Saturated;
impl FilterPolicy for Saturated {
    fn name(&self) -> &'static str {
        BLOOM_POLICY_NAME
    }
    fn create_filter(&self, hashes: &[KeyHash]) -> Vec<u8> {
        let mut f = crate::filter::BloomFilterPolicy::new(10).create_filter(hashes);
        let n = f.len() - 1;
        f[..n].fill(0xff);
        f
    }
    fn may_match(&self, _: &[u8], _: KeyHash) -> bool {
        true
    }
    fn shape(&self, filter: &[u8]) -> crate::filter::FilterShape {
        crate::filter::BloomFilterPolicy::new(10).shape(filter)
    }
}

/// A table of `n` keys (`key(0)..`, every tenth a tombstone, sequence
/// numbers from 1) with `policy`'s filter, written at `path` and opened.
pub(super) fn write_table(path: &Path, policy: Arc<dyn FilterPolicy>, n: u32) -> Table {
    let opts = TableOptions {
        block_size: 256,
        restart_interval: 4,
        filter_policy: Some(policy),
        prefix_extractor: None,
        key_sketch_precision: None,
        compression: crate::sstable::Compression::None,
        keyspace: 0,
    };
    let mut b = TableBuilder::new(path, opts).unwrap();
    for i in 0..n {
        let vt = if i % 10 == 0 {
            ValueType::Deletion
        } else {
            ValueType::Value
        };
        let v: &[u8] = if vt == ValueType::Value {
            b"value"
        } else {
            b""
        };
        b.add(
            InternalKey::new(&key(i), SequenceNumber(u64::from(i) + 1), vt).encoded(),
            v,
        )
        .unwrap();
    }
    b.finish().unwrap();
    open_table(path).unwrap()
}
