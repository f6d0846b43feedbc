//! Generators for [`crate::Mode::Built`]: valid models drawn from the fuzz
//! input with [`arbitrary`], and hand encodings that follow DESIGN.md.

use std::sync::Arc;

use arbitrary::{Result, Unstructured};
use siftdb::filter::BloomFilterPolicy;
use siftdb::inspect::key::{compare_internal_keys, InternalKey, SequenceNumber, ValueType};
use siftdb::inspect::sstable::TableOptions;
use siftdb::inspect::version::edit::{FileMetaData, VersionEdit};

/// `(user key, Some(value))` for a put, `(user key, None)` for a delete.
pub type Op = (Vec<u8>, Option<Vec<u8>>);

/// A user key: one seen before (a third of the time, so that keys get
/// several versions) or up to 12 new bytes.
fn user_key(u: &mut Unstructured<'_>, seen: &mut Vec<Vec<u8>>) -> Result<Vec<u8>> {
    if !seen.is_empty() && u.ratio(1, 3)? {
        return Ok(u.choose(seen)?.clone());
    }
    let n = u.int_in_range(0..=12)?;
    let k = u.bytes(n)?.to_vec();
    seen.push(k.clone());
    Ok(k)
}

fn value(u: &mut Unstructured<'_>) -> Result<Vec<u8>> {
    let n = u.int_in_range(0..=40)?;
    Ok(u.bytes(n)?.to_vec())
}

fn seq(u: &mut Unstructured<'_>) -> Result<u64> {
    // Mostly small, sometimes near the 56-bit limit.
    if u.ratio(1, 8)? {
        Ok(SequenceNumber::MAX.0 - u.int_in_range(0..=1000)?)
    } else {
        u.int_in_range(0..=100_000)
    }
}

/// 1 to 64 table entries `(encoded internal key, value)` in strictly
/// increasing internal-key order, tombstones with empty values, at most
/// one entry per (user key, sequence number).
pub fn table_entries(u: &mut Unstructured<'_>) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let n = u.int_in_range(1..=64)?;
    let mut seen = Vec::new();
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let k = user_key(u, &mut seen)?;
        let s = SequenceNumber(seq(u)?);
        let entry = if u.ratio(1, 4)? {
            (
                InternalKey::new(&k, s, ValueType::Deletion).into_encoded(),
                Vec::new(),
            )
        } else {
            (
                InternalKey::new(&k, s, ValueType::Value).into_encoded(),
                value(u)?,
            )
        };
        out.push(entry);
    }
    out.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
    // One entry per (user key, seq): the user key and the trailer's seq
    // bits, i.e. all but the type byte of the encoded key.
    out.dedup_by(|a, b| {
        a.0[..a.0.len() - 8] == b.0[..b.0.len() - 8] && a.0[a.0.len() - 7..] == b.0[b.0.len() - 7..]
    });
    Ok(out)
}

/// A table layout: block size 1 to 512, restart interval 1 to 16, and a
/// Bloom filter of 0 to 20 bits per key, or none.
pub fn table_options(u: &mut Unstructured<'_>) -> Result<TableOptions> {
    Ok(TableOptions {
        block_size: u.int_in_range(1..=512)?,
        restart_interval: u.int_in_range(1..=16)?,
        filter_policy: if u.arbitrary()? {
            Some(Arc::new(BloomFilterPolicy::new(u.int_in_range(0..=20)?)))
        } else {
            None
        },
        prefix_extractor: None,
        key_sketch_precision: u.arbitrary::<bool>()?.then_some(12),
        compression: if u.arbitrary()? {
            siftdb::Compression::Lz4
        } else {
            siftdb::Compression::None
        },
        keyspace: 0,
    })
}

/// 0 to 8 operations of one write batch.
pub fn batch_ops(u: &mut Unstructured<'_>, seen: &mut Vec<Vec<u8>>) -> Result<Vec<Op>> {
    let n = u.int_in_range(0..=8)?;
    let mut ops = Vec::with_capacity(n);
    for _ in 0..n {
        let k = user_key(u, seen)?;
        let v = if u.ratio(1, 4)? {
            None
        } else {
            Some(value(u)?)
        };
        ops.push((k, v));
    }
    Ok(ops)
}

/// 1 to 8 batches for one WAL, keys shared between them.
pub fn wal_batches(u: &mut Unstructured<'_>) -> Result<Vec<Vec<Op>>> {
    let n = u.int_in_range(1..=8)?;
    let mut seen = Vec::new();
    (0..n).map(|_| batch_ops(u, &mut seen)).collect()
}

/// Encodes a write batch by hand, per DESIGN.md 12.3 (and the
/// `write_batch` module docs): `seq: u64 LE | count: u32 LE | records`.
pub fn encode_batch(first_seq: u64, ops: &[Op]) -> Vec<u8> {
    let mut v = first_seq.to_le_bytes().to_vec();
    v.extend_from_slice(&(ops.len() as u32).to_le_bytes());
    for (k, val) in ops {
        v.push(u8::from(val.is_some()));
        put_varint(&mut v, k.len() as u64);
        v.extend_from_slice(k);
        if let Some(val) = val {
            put_varint(&mut v, val.len() as u64);
            v.extend_from_slice(val);
        }
    }
    v
}

fn put_varint(v: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        v.push(n as u8 | 0x80);
        n >>= 7;
    }
    v.push(n as u8);
}

fn internal_key(u: &mut Unstructured<'_>) -> Result<InternalKey> {
    let n = u.int_in_range(0..=10)?;
    let k = u.bytes(n)?;
    let s = SequenceNumber(u.int_in_range(0..=SequenceNumber::MAX.0)?);
    let vt = if u.arbitrary()? {
        ValueType::Value
    } else {
        ValueType::Deletion
    };
    Ok(InternalKey::new(k, s, vt))
}

/// A version edit that passes [`VersionEdit::validate`]: levels below 7,
/// smallest key not after largest, tombstones not above entries.
pub fn version_edit(u: &mut Unstructured<'_>) -> Result<VersionEdit> {
    let mut e = VersionEdit {
        format_version: None,
        log_number: u.arbitrary()?,
        next_file_number: u.arbitrary()?,
        last_sequence: if u.arbitrary()? {
            Some(SequenceNumber(u.int_in_range(0..=SequenceNumber::MAX.0)?))
        } else {
            None
        },
        user_bytes_flushed: u.arbitrary()?,
        table_bytes_written: u.arbitrary()?,
        ..VersionEdit::default()
    };
    for _ in 0..u.int_in_range(0..=3)? {
        e.deleted_files
            .push((u.int_in_range(0..=6)?, u.arbitrary()?));
    }
    for _ in 0..u.int_in_range(0..=3)? {
        let (a, b) = (internal_key(u)?, internal_key(u)?);
        let (smallest, largest) = if a <= b { (a, b) } else { (b, a) };
        let (x, y): (u32, u32) = (u.arbitrary()?, u.arbitrary()?);
        e.new_files.push((
            u.int_in_range(0..=6)?,
            FileMetaData {
                number: u.arbitrary()?,
                file_size: u.arbitrary()?,
                smallest,
                largest,
                num_entries: u64::from(x.max(y)),
                num_tombstones: u64::from(x.min(y)),
            },
        ));
    }
    Ok(e)
}

/// 1 to 5 edits for one manifest: the first carries format version 1.
pub fn manifest_edits(u: &mut Unstructured<'_>) -> Result<Vec<VersionEdit>> {
    let n = u.int_in_range(1..=5)?;
    let mut edits = Vec::with_capacity(n);
    for i in 0..n {
        let mut e = version_edit(u)?;
        e.format_version = (i == 0).then_some(1);
        edits.push(e);
    }
    Ok(edits)
}
