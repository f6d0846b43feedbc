//! [`TableProperties`]: statistics and metadata stored in each SSTable's
//! properties block.
//!
//! The block uses the data-block format (see [`crate::sstable::format`])
//! with property names as keys, in bytewise sorted order:
//!
//! | name | value |
//! |---|---|
//! | `siftdb.compression.blocks` | varint: data blocks stored compressed (format 2) |
//! | `siftdb.compression.codec` | raw UTF-8: the codec the table was written with, e.g. `lz4` (format 2) |
//! | `siftdb.compression.raw_bytes` | varint: data blocks' uncompressed contents, in bytes (format 2) |
//! | `siftdb.compression.stored_bytes` | varint: data blocks' stored contents (handle sizes, codec bytes included), in bytes (format 2) |
//! | `siftdb.filter.bits` | varint: filter bit-array size `m` (0 if no filter) |
//! | `siftdb.filter.bits_per_key` | varint: configured bits per key (0 if none) |
//! | `siftdb.filter.num_hashes` | varint: probes per key `k` (0 if none) |
//! | `siftdb.filter.policy` | raw UTF-8: [`crate::filter::FilterPolicy::name`], empty if none |
//! | `siftdb.format_version` | varint: equals the footer's version |
//! | `siftdb.keyspace` | varint ≥ 1: the keyspace the table belongs to; absent for the default keyspace (id 0) |
//! | `siftdb.key_sketch.handle` | two varints: offset and size of the key-sketch block (optional) |
//! | `siftdb.largest_seq` | varint |
//! | `siftdb.largest_user_key` | raw bytes |
//! | `siftdb.num_data_blocks` | varint |
//! | `siftdb.num_distinct_keys` | varint: distinct user keys |
//! | `siftdb.num_entries` | varint: internal entries, tombstones included |
//! | `siftdb.num_tombstones` | varint |
//! | `siftdb.prefix_filter.extractor` | raw UTF-8: the [`crate::filter::PrefixExtractor`] name (optional) |
//! | `siftdb.prefix_filter.handle` | two varints: offset and size of the prefix filter block (with the extractor) |
//! | `siftdb.prefix_filter.prefixes` | varint: distinct prefixes in it (with the extractor) |
//! | `siftdb.raw_key_bytes` | varint: sum of encoded internal-key lengths |
//! | `siftdb.raw_value_bytes` | varint: sum of value lengths |
//! | `siftdb.smallest_seq` | varint |
//! | `siftdb.smallest_user_key` | raw bytes |
//!
//! Every name above is required in format version 1, except
//! `siftdb.key_sketch.handle` (tables written before the key sketch have
//! none; its block holds a [`crate::sketch::hyperloglog::HyperLogLog`] of
//! the distinct user keys, DESIGN.md 12.10), the four
//! `siftdb.compression.*` names, which a format-2 table carries together
//! (one without the others is corruption), and the three
//! `siftdb.prefix_filter.*` names, which a table written with a prefix
//! extractor carries together (one without the others is corruption). The
//! prefix filter block is built by the table's filter policy over the
//! hashes ([`crate::filter::hash_key`]) of the distinct prefixes; a reader
//! that does not know these names ignores them, and the block, as it
//! ignores every name it does not know, so later versions may add
//! properties. Names must strictly increase, so a duplicate is corruption.

use crate::error::{Error, Result};
use crate::key::SequenceNumber;
use crate::sstable::block::Block;
use crate::sstable::block_builder::BlockBuilder;
use crate::sstable::format::BlockHandle;
use crate::util::coding::{put_varint, Decoder};

const COMPRESSION_BLOCKS: &str = "siftdb.compression.blocks";
const COMPRESSION_CODEC: &str = "siftdb.compression.codec";
const COMPRESSION_RAW_BYTES: &str = "siftdb.compression.raw_bytes";
const COMPRESSION_STORED_BYTES: &str = "siftdb.compression.stored_bytes";
const FILTER_BITS: &str = "siftdb.filter.bits";
const FILTER_BITS_PER_KEY: &str = "siftdb.filter.bits_per_key";
const FILTER_NUM_HASHES: &str = "siftdb.filter.num_hashes";
const FILTER_POLICY: &str = "siftdb.filter.policy";
const FORMAT_VERSION: &str = "siftdb.format_version";
const KEYSPACE: &str = "siftdb.keyspace";
const KEY_SKETCH_HANDLE: &str = "siftdb.key_sketch.handle";
const LARGEST_SEQ: &str = "siftdb.largest_seq";
const LARGEST_USER_KEY: &str = "siftdb.largest_user_key";
const NUM_DATA_BLOCKS: &str = "siftdb.num_data_blocks";
const NUM_DISTINCT_KEYS: &str = "siftdb.num_distinct_keys";
const NUM_ENTRIES: &str = "siftdb.num_entries";
const NUM_TOMBSTONES: &str = "siftdb.num_tombstones";
const PREFIX_EXTRACTOR: &str = "siftdb.prefix_filter.extractor";
const PREFIX_HANDLE: &str = "siftdb.prefix_filter.handle";
const PREFIX_COUNT: &str = "siftdb.prefix_filter.prefixes";
const RAW_KEY_BYTES: &str = "siftdb.raw_key_bytes";
const RAW_VALUE_BYTES: &str = "siftdb.raw_value_bytes";
const SMALLEST_SEQ: &str = "siftdb.smallest_seq";
const SMALLEST_USER_KEY: &str = "siftdb.smallest_user_key";

/// Restart interval of the properties block (names share the `siftdb.`
/// prefix, so prefix compression pays).
const PROPERTIES_RESTART_INTERVAL: usize = 16;

/// Statistics and metadata of one SSTable, written by
/// [`crate::sstable::TableBuilder`] and read at [`crate::sstable::Table::open`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableProperties {
    /// Internal entries (every version and tombstone).
    pub num_entries: u64,
    /// Distinct user keys; also the number of keys in the filter.
    pub num_distinct_keys: u64,
    /// Entries of type [`crate::key::ValueType::Deletion`].
    pub num_tombstones: u64,
    /// Data blocks; equals the number of index entries.
    pub num_data_blocks: u64,
    /// Sum of the encoded internal-key lengths (user key + 8), in bytes,
    /// before prefix compression.
    pub raw_key_bytes: u64,
    /// Sum of the value lengths, in bytes.
    pub raw_value_bytes: u64,
    /// The smallest user key in the table.
    pub smallest_user_key: Vec<u8>,
    /// The largest user key in the table.
    pub largest_user_key: Vec<u8>,
    /// The smallest sequence number of any entry.
    pub smallest_seq: SequenceNumber,
    /// The largest sequence number of any entry.
    pub largest_seq: SequenceNumber,
    /// Name of the filter policy that built the filter block; empty if the
    /// table has no filter.
    pub filter_policy: String,
    /// The policy's bits per key (0 if no filter).
    pub filter_bits_per_key: u32,
    /// The filter's probes per key `k` (0 if no filter).
    pub filter_num_hashes: u32,
    /// The filter's bit-array size `m`, in bits (0 if no filter).
    pub filter_bits: u64,
    /// The table's format version.
    pub format_version: u32,
    /// The prefix filter, if the table was written with a prefix extractor
    /// (and a filter policy).
    pub prefix_filter: Option<PrefixFilterProperties>,
    /// The key-sketch block (a HyperLogLog of the distinct user keys), if
    /// the table has one.
    pub key_sketch: Option<BlockHandle>,
    /// How the data blocks were compressed: present in format-2 tables
    /// (written with a codec), `None` in format 1 (none).
    pub compression: Option<CompressionProperties>,
    /// The keyspace the table belongs to (`siftdb.keyspace`; 0, the
    /// default keyspace, when absent).
    pub keyspace: u32,
}

/// What compression did to a format-2 table's data blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressionProperties {
    /// The codec the table was written with
    /// ([`crate::Compression::name`]); blocks it did not shrink by an
    /// eighth are stored uncompressed.
    pub codec: String,
    /// Data blocks stored compressed.
    pub compressed_blocks: u64,
    /// Sum of the data blocks' uncompressed contents, in bytes.
    pub raw_bytes: u64,
    /// Sum of the data blocks' stored contents (their handle sizes: payload
    /// and codec byte, trailer excluded), in bytes.
    pub stored_bytes: u64,
}

/// Where a table's prefix filter is and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixFilterProperties {
    /// The [`crate::filter::PrefixExtractor::name`] it was built with.
    pub extractor: String,
    /// The prefix filter block (built by the table's filter policy).
    pub handle: BlockHandle,
    /// Distinct prefixes in it.
    pub prefixes: u64,
}

impl TableProperties {
    /// Encodes the properties as block contents (no trailer), names in
    /// sorted order.
    pub fn encode(&self) -> Vec<u8> {
        let v = |x: u64| {
            let mut b = Vec::with_capacity(10);
            put_varint(&mut b, x);
            b
        };
        let mut entries: Vec<(&str, Vec<u8>)> = vec![
            (FILTER_BITS, v(self.filter_bits)),
            (FILTER_BITS_PER_KEY, v(self.filter_bits_per_key.into())),
            (FILTER_NUM_HASHES, v(self.filter_num_hashes.into())),
            (FILTER_POLICY, self.filter_policy.as_bytes().to_vec()),
            (FORMAT_VERSION, v(self.format_version.into())),
            (LARGEST_SEQ, v(self.largest_seq.0)),
            (LARGEST_USER_KEY, self.largest_user_key.clone()),
            (NUM_DATA_BLOCKS, v(self.num_data_blocks)),
            (NUM_DISTINCT_KEYS, v(self.num_distinct_keys)),
            (NUM_ENTRIES, v(self.num_entries)),
            (NUM_TOMBSTONES, v(self.num_tombstones)),
            (RAW_KEY_BYTES, v(self.raw_key_bytes)),
            (RAW_VALUE_BYTES, v(self.raw_value_bytes)),
            (SMALLEST_SEQ, v(self.smallest_seq.0)),
            (SMALLEST_USER_KEY, self.smallest_user_key.clone()),
        ];
        if let Some(h) = &self.key_sketch {
            let mut handle = Vec::new();
            h.encode_to(&mut handle);
            entries.push((KEY_SKETCH_HANDLE, handle));
            entries.sort_by_key(|(name, _)| *name);
        }
        if self.keyspace != 0 {
            entries.push((KEYSPACE, v(self.keyspace.into())));
            entries.sort_by_key(|(name, _)| *name);
        }
        if let Some(c) = &self.compression {
            entries.push((COMPRESSION_BLOCKS, v(c.compressed_blocks)));
            entries.push((COMPRESSION_CODEC, c.codec.as_bytes().to_vec()));
            entries.push((COMPRESSION_RAW_BYTES, v(c.raw_bytes)));
            entries.push((COMPRESSION_STORED_BYTES, v(c.stored_bytes)));
            entries.sort_by_key(|(name, _)| *name);
        }
        if let Some(pf) = &self.prefix_filter {
            let mut handle = Vec::new();
            pf.handle.encode_to(&mut handle);
            entries.push((PREFIX_EXTRACTOR, pf.extractor.as_bytes().to_vec()));
            entries.push((PREFIX_HANDLE, handle));
            entries.push((PREFIX_COUNT, v(pf.prefixes)));
            entries.sort_by_key(|(name, _)| *name);
        }
        let mut b = BlockBuilder::new(PROPERTIES_RESTART_INTERVAL);
        for (name, value) in &entries {
            debug_assert!(b.is_empty() || b.last_key() < name.as_bytes());
            b.add(name.as_bytes(), value);
        }
        b.finish().to_vec()
    }

    /// Decodes the properties from a properties block.
    ///
    /// # Errors
    /// [`Error::Corruption`] if an entry is malformed, names are not
    /// strictly increasing, a value does not decode (varints must fill
    /// their value exactly, sequence numbers must fit in 56 bits, the
    /// policy name must be UTF-8), or a required property is missing.
    pub fn decode(block: &Block<'_>, file: &std::path::Path) -> Result<TableProperties> {
        let at = block.file_offset();
        let corrupt = |detail: String| Error::corruption(file, at, detail);
        let mut prev: Option<Vec<u8>> = None;
        let mut p = Partial::default();
        for entry in block.iter() {
            let (name, value) = entry?;
            if prev
                .as_ref()
                .is_some_and(|p| p.as_slice() >= name.as_slice())
            {
                return Err(corrupt(format!(
                    "properties out of order at {}",
                    crate::escape::escape_bytes(&name)
                )));
            }
            let name_str = std::str::from_utf8(&name).unwrap_or("");
            let varint = || -> Result<u64> {
                let mut d = Decoder::new(value);
                match d.varint() {
                    Ok(x) if d.is_empty() => Ok(x),
                    _ => Err(corrupt(format!(
                        "property {name_str} is not a single varint"
                    ))),
                }
            };
            let varint32 = || -> Result<u32> {
                u32::try_from(varint()?)
                    .map_err(|_| corrupt(format!("property {name_str} exceeds u32")))
            };
            let seq = || -> Result<SequenceNumber> {
                let s = varint()?;
                if s > SequenceNumber::MAX.0 {
                    return Err(corrupt(format!("property {name_str} exceeds 2^56 - 1")));
                }
                Ok(SequenceNumber(s))
            };
            match name_str {
                FILTER_BITS => p.filter_bits = Some(varint()?),
                FILTER_BITS_PER_KEY => p.filter_bits_per_key = Some(varint32()?),
                FILTER_NUM_HASHES => p.filter_num_hashes = Some(varint32()?),
                FILTER_POLICY => {
                    let s = std::str::from_utf8(value)
                        .map_err(|_| corrupt("filter policy name is not UTF-8".into()))?;
                    p.filter_policy = Some(s.to_string());
                }
                FORMAT_VERSION => p.format_version = Some(varint32()?),
                KEYSPACE => match varint32()? {
                    // The default keyspace's tables carry no property: one
                    // encoding per table.
                    0 => return Err(corrupt(format!("property {name_str} is 0"))),
                    id => p.keyspace = Some(id),
                },
                COMPRESSION_BLOCKS => p.compressed_blocks = Some(varint()?),
                COMPRESSION_CODEC => {
                    let s = std::str::from_utf8(value)
                        .map_err(|_| corrupt("compression codec name is not UTF-8".into()))?;
                    p.codec = Some(s.to_string());
                }
                COMPRESSION_RAW_BYTES => p.compressed_raw_bytes = Some(varint()?),
                COMPRESSION_STORED_BYTES => p.compressed_stored_bytes = Some(varint()?),
                PREFIX_EXTRACTOR => {
                    let s = std::str::from_utf8(value)
                        .map_err(|_| corrupt("prefix extractor name is not UTF-8".into()))?;
                    p.prefix_extractor = Some(s.to_string());
                }
                KEY_SKETCH_HANDLE => {
                    let mut d = Decoder::new(value);
                    match BlockHandle::decode_from(&mut d) {
                        Ok(h) if d.is_empty() => p.key_sketch = Some(h),
                        _ => {
                            return Err(corrupt(format!(
                                "property {name_str} is not a block handle"
                            )))
                        }
                    }
                }
                PREFIX_HANDLE => {
                    let mut d = Decoder::new(value);
                    match BlockHandle::decode_from(&mut d) {
                        Ok(h) if d.is_empty() => p.prefix_handle = Some(h),
                        _ => {
                            return Err(corrupt(format!(
                                "property {name_str} is not a block handle"
                            )))
                        }
                    }
                }
                PREFIX_COUNT => p.prefix_count = Some(varint()?),
                LARGEST_SEQ => p.largest_seq = Some(seq()?),
                LARGEST_USER_KEY => p.largest_user_key = Some(value.to_vec()),
                NUM_DATA_BLOCKS => p.num_data_blocks = Some(varint()?),
                NUM_DISTINCT_KEYS => p.num_distinct_keys = Some(varint()?),
                NUM_ENTRIES => p.num_entries = Some(varint()?),
                NUM_TOMBSTONES => p.num_tombstones = Some(varint()?),
                RAW_KEY_BYTES => p.raw_key_bytes = Some(varint()?),
                RAW_VALUE_BYTES => p.raw_value_bytes = Some(varint()?),
                SMALLEST_SEQ => p.smallest_seq = Some(seq()?),
                SMALLEST_USER_KEY => p.smallest_user_key = Some(value.to_vec()),
                _ => {} // Unknown: written by a newer build; ignore.
            }
            prev = Some(name);
        }
        fn req<T>(v: Option<T>, name: &str, file: &std::path::Path, at: u64) -> Result<T> {
            v.ok_or_else(|| Error::corruption(file, at, format!("missing property {name}")))
        }
        Ok(TableProperties {
            num_entries: req(p.num_entries, NUM_ENTRIES, file, at)?,
            num_distinct_keys: req(p.num_distinct_keys, NUM_DISTINCT_KEYS, file, at)?,
            num_tombstones: req(p.num_tombstones, NUM_TOMBSTONES, file, at)?,
            num_data_blocks: req(p.num_data_blocks, NUM_DATA_BLOCKS, file, at)?,
            raw_key_bytes: req(p.raw_key_bytes, RAW_KEY_BYTES, file, at)?,
            raw_value_bytes: req(p.raw_value_bytes, RAW_VALUE_BYTES, file, at)?,
            smallest_user_key: req(p.smallest_user_key, SMALLEST_USER_KEY, file, at)?,
            largest_user_key: req(p.largest_user_key, LARGEST_USER_KEY, file, at)?,
            smallest_seq: req(p.smallest_seq, SMALLEST_SEQ, file, at)?,
            largest_seq: req(p.largest_seq, LARGEST_SEQ, file, at)?,
            filter_policy: req(p.filter_policy, FILTER_POLICY, file, at)?,
            filter_bits_per_key: req(p.filter_bits_per_key, FILTER_BITS_PER_KEY, file, at)?,
            filter_num_hashes: req(p.filter_num_hashes, FILTER_NUM_HASHES, file, at)?,
            filter_bits: req(p.filter_bits, FILTER_BITS, file, at)?,
            format_version: req(p.format_version, FORMAT_VERSION, file, at)?,
            key_sketch: p.key_sketch,
            keyspace: p.keyspace.unwrap_or(0),
            compression: match (
                p.codec,
                p.compressed_blocks,
                p.compressed_raw_bytes,
                p.compressed_stored_bytes,
            ) {
                (None, None, None, None) => None,
                (Some(codec), Some(compressed_blocks), Some(raw_bytes), Some(stored_bytes)) => {
                    Some(CompressionProperties {
                        codec,
                        compressed_blocks,
                        raw_bytes,
                        stored_bytes,
                    })
                }
                _ => {
                    return Err(corrupt(
                        "the siftdb.compression properties must come together".into(),
                    ))
                }
            },
            prefix_filter: match (p.prefix_extractor, p.prefix_handle, p.prefix_count) {
                (None, None, None) => None,
                (Some(extractor), Some(handle), Some(prefixes)) => Some(PrefixFilterProperties {
                    extractor,
                    handle,
                    prefixes,
                }),
                _ => {
                    return Err(corrupt(
                        "the siftdb.prefix_filter properties must come together".into(),
                    ))
                }
            },
        })
    }
}

/// Properties seen so far while decoding.
#[derive(Default)]
struct Partial {
    num_entries: Option<u64>,
    num_distinct_keys: Option<u64>,
    num_tombstones: Option<u64>,
    num_data_blocks: Option<u64>,
    raw_key_bytes: Option<u64>,
    raw_value_bytes: Option<u64>,
    smallest_user_key: Option<Vec<u8>>,
    largest_user_key: Option<Vec<u8>>,
    smallest_seq: Option<SequenceNumber>,
    largest_seq: Option<SequenceNumber>,
    filter_policy: Option<String>,
    filter_bits_per_key: Option<u32>,
    filter_num_hashes: Option<u32>,
    filter_bits: Option<u64>,
    format_version: Option<u32>,
    prefix_extractor: Option<String>,
    prefix_handle: Option<BlockHandle>,
    prefix_count: Option<u64>,
    key_sketch: Option<BlockHandle>,
    codec: Option<String>,
    compressed_blocks: Option<u64>,
    compressed_raw_bytes: Option<u64>,
    compressed_stored_bytes: Option<u64>,
    keyspace: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn sample() -> TableProperties {
        TableProperties {
            num_entries: 2000,
            num_distinct_keys: 1500,
            num_tombstones: 12,
            num_data_blocks: 40,
            raw_key_bytes: 28_000,
            raw_value_bytes: 300_000,
            smallest_user_key: b"a".to_vec(),
            largest_user_key: b"zz\xff".to_vec(),
            smallest_seq: SequenceNumber(5),
            largest_seq: SequenceNumber::MAX,
            filter_policy: "siftdb.bloom.xxh3.v1".into(),
            filter_bits_per_key: 10,
            filter_num_hashes: 7,
            filter_bits: 15_000,
            format_version: 1,
            prefix_filter: None,
            key_sketch: None,
            compression: None,
            keyspace: 0,
        }
    }

    #[test]
    fn the_keyspace_property_is_written_only_outside_the_default() {
        let default = sample().encode();
        assert!(!sample_entries()
            .iter()
            .any(|(k, _)| k.as_slice() == KEYSPACE.as_bytes()));
        let p = TableProperties {
            keyspace: 300,
            ..sample()
        };
        let enc = p.encode();
        assert!(enc.len() > default.len());
        assert_eq!(decode(&enc).unwrap(), p);
        // Id 0 spelled out is not the default's encoding: refused.
        let mut entries = sample_entries();
        entries.push((KEYSPACE.as_bytes().to_vec(), vec![0]));
        entries.sort();
        let pairs: Vec<(&str, &[u8])> = entries
            .iter()
            .map(|(k, v)| (std::str::from_utf8(k).unwrap(), v.as_slice()))
            .collect();
        let e = decode(&with_entries(&pairs)).unwrap_err().to_string();
        assert!(e.contains("siftdb.keyspace is 0"), "{e}");
    }

    fn decode(bytes: &[u8]) -> Result<TableProperties> {
        let b = Block::new(bytes, Path::new("t.sst"), 0)?;
        TableProperties::decode(&b, Path::new("t.sst"))
    }

    fn with_entries(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = BlockBuilder::new(1);
        for (k, v) in entries {
            b.add(k.as_bytes(), v);
        }
        b.finish().to_vec()
    }

    /// The entries of `sample()` as (name, value) pairs.
    fn sample_entries() -> Vec<(Vec<u8>, Vec<u8>)> {
        let enc = sample().encode();
        let b = Block::new(&enc, Path::new("t.sst"), 0).unwrap();
        b.iter()
            .map(|r| r.map(|(k, v)| (k, v.to_vec())))
            .collect::<Result<_>>()
            .unwrap()
    }

    #[test]
    fn names_are_sorted_and_round_trip() {
        let entries = sample_entries();
        assert_eq!(entries.len(), 15);
        assert!(entries.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(entries[0].0, b"siftdb.filter.bits");
        assert_eq!(entries[0].1, [0x98, 0x75]); // 15000 as a varint
        assert_eq!(
            entries[3],
            (
                b"siftdb.filter.policy".to_vec(),
                b"siftdb.bloom.xxh3.v1".to_vec()
            )
        );
        assert_eq!(decode(&sample().encode()).unwrap(), sample());
        let empty = TableProperties::default();
        assert_eq!(decode(&empty.encode()).unwrap(), empty);
    }

    #[test]
    fn unknown_names_are_ignored_and_missing_ones_are_corruption() {
        let mut entries = sample_entries();
        entries.insert(0, (b"aaa.future".to_vec(), b"??".to_vec()));
        entries.push((b"zzz.future".to_vec(), vec![0xff; 3]));
        let refs: Vec<(&str, &[u8])> = entries
            .iter()
            .map(|(k, v)| (std::str::from_utf8(k).unwrap(), v.as_slice()))
            .collect();
        assert_eq!(decode(&with_entries(&refs)).unwrap(), sample());

        let missing: Vec<(&str, &[u8])> = refs
            .iter()
            .copied()
            .filter(|(k, _)| *k != "siftdb.num_entries")
            .collect();
        let e = decode(&with_entries(&missing)).unwrap_err();
        assert!(
            e.to_string()
                .contains("missing property siftdb.num_entries"),
            "{e}"
        );
    }

    #[test]
    fn bad_values_are_corruption() {
        let entries = sample_entries();
        let replace = |name: &str, value: &[u8]| {
            let refs: Vec<(&str, &[u8])> = entries
                .iter()
                .map(|(k, v)| {
                    let k = std::str::from_utf8(k).unwrap();
                    (k, if k == name { value } else { v.as_slice() })
                })
                .collect();
            decode(&with_entries(&refs)).unwrap_err()
        };
        assert!(replace("siftdb.num_entries", &[0x80]).is_corruption());
        assert!(replace("siftdb.num_entries", &[1, 2]).is_corruption());
        assert!(
            replace("siftdb.filter.num_hashes", &[0xff, 0xff, 0xff, 0xff, 0x1f]).is_corruption()
        );
        assert!(replace(
            "siftdb.largest_seq",
            &[0xff; 8].iter().copied().chain([1]).collect::<Vec<_>>()
        )
        .is_corruption());
        assert!(replace("siftdb.filter.policy", &[0xff]).is_corruption());
        // Duplicate name.
        let dup = with_entries(&[("siftdb.a", b""), ("siftdb.a", b"")]);
        assert!(decode(&dup)
            .unwrap_err()
            .to_string()
            .contains("out of order"));
    }

    /// The `(name, value)` entries of encoded properties, in block order.
    fn block_entries(enc: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let b = Block::new(enc, Path::new("t.sst"), 0).unwrap();
        b.iter()
            .map(|r| r.map(|(k, v)| (k, v.to_vec())))
            .collect::<Result<_>>()
            .unwrap()
    }

    #[test]
    fn a_prefix_filter_adds_three_properties_in_name_order() {
        let mut p = sample();
        p.prefix_filter = Some(PrefixFilterProperties {
            extractor: "siftdb.fixed_prefix.5".into(),
            handle: BlockHandle::new(4100, 300),
            prefixes: 800,
        });
        let enc = p.encode();
        let entries = block_entries(&enc);
        assert_eq!(entries.len(), 18);
        assert!(entries.windows(2).all(|w| w[0].0 < w[1].0));
        // After siftdb.num_tombstones (index 10), before siftdb.raw_key_bytes.
        assert_eq!(
            entries[11],
            (
                b"siftdb.prefix_filter.extractor".to_vec(),
                b"siftdb.fixed_prefix.5".to_vec()
            )
        );
        // Offset 4100 and size 300 as two varints.
        assert_eq!(
            entries[12],
            (
                b"siftdb.prefix_filter.handle".to_vec(),
                vec![0x84, 0x20, 0xac, 0x02]
            )
        );
        assert_eq!(
            entries[13],
            (b"siftdb.prefix_filter.prefixes".to_vec(), vec![0xa0, 0x06])
        );
        assert_eq!(entries[14].0, b"siftdb.raw_key_bytes");
        assert_eq!(decode(&enc).unwrap(), p);

        // One of the three without the others is corruption.
        let mut partial: Vec<(&str, &[u8])> = Vec::new();
        let kept: Vec<(String, Vec<u8>)> = entries
            .iter()
            .filter(|(k, _)| k.as_slice() != b"siftdb.prefix_filter.prefixes")
            .map(|(k, v)| (String::from_utf8(k.clone()).unwrap(), v.clone()))
            .collect();
        for (k, v) in &kept {
            partial.push((k.as_str(), v.as_slice()));
        }
        let e = decode(&with_entries(&partial)).unwrap_err();
        assert!(e.to_string().contains("must come together"), "{e}");
    }

    #[test]
    fn a_key_sketch_adds_its_handle_after_the_format_version() {
        let mut p = sample();
        p.key_sketch = Some(BlockHandle::new(9000, 2050));
        let enc = p.encode();
        let entries = block_entries(&enc);
        assert_eq!(entries.len(), 16);
        assert!(entries.windows(2).all(|w| w[0].0 < w[1].0));
        // siftdb.format_version is entry 4; the handle follows it: offset
        // 9000 (0xa8 0x46) and size 2050 (0x82 0x10) as two varints.
        assert_eq!(
            entries[5],
            (
                b"siftdb.key_sketch.handle".to_vec(),
                vec![0xa8, 0x46, 0x82, 0x10]
            )
        );
        assert_eq!(decode(&enc).unwrap(), p);
        // A handle that is not two varints is corruption.
        let mut bad = sample_entries();
        bad.insert(5, (b"siftdb.key_sketch.handle".to_vec(), vec![0x80]));
        let refs: Vec<(&str, &[u8])> = bad
            .iter()
            .map(|(k, v)| (std::str::from_utf8(k).unwrap(), v.as_slice()))
            .collect();
        assert!(decode(&with_entries(&refs)).unwrap_err().is_corruption());
    }

    #[test]
    fn compression_adds_four_properties_first_in_name_order() {
        let mut p = sample();
        p.format_version = 2;
        p.compression = Some(CompressionProperties {
            codec: "lz4".into(),
            compressed_blocks: 30,
            raw_bytes: 160_000,
            stored_bytes: 70_000,
        });
        let enc = p.encode();
        let entries = block_entries(&enc);
        assert_eq!(entries.len(), 19);
        assert!(entries.windows(2).all(|w| w[0].0 < w[1].0));
        // "siftdb.compression.*" sorts before "siftdb.filter.*".
        assert_eq!(
            entries[0],
            (b"siftdb.compression.blocks".to_vec(), vec![30])
        );
        assert_eq!(
            entries[1],
            (b"siftdb.compression.codec".to_vec(), b"lz4".to_vec())
        );
        // 160,000 and 70,000 as varints.
        assert_eq!(
            entries[2],
            (
                b"siftdb.compression.raw_bytes".to_vec(),
                vec![0x80, 0xe2, 0x09]
            )
        );
        assert_eq!(
            entries[3],
            (
                b"siftdb.compression.stored_bytes".to_vec(),
                vec![0xf0, 0xa2, 0x04]
            )
        );
        assert_eq!(entries[4].0, b"siftdb.filter.bits");
        assert_eq!(decode(&enc).unwrap(), p);
        // One of the four without the others is corruption.
        let kept: Vec<(String, Vec<u8>)> = entries
            .iter()
            .filter(|(k, _)| k.as_slice() != b"siftdb.compression.blocks")
            .map(|(k, v)| (String::from_utf8(k.clone()).unwrap(), v.clone()))
            .collect();
        let partial: Vec<(&str, &[u8])> = kept
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_slice()))
            .collect();
        let e = decode(&with_entries(&partial)).unwrap_err();
        assert!(e.to_string().contains("must come together"), "{e}");
    }
}
