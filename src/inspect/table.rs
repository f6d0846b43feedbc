//! One SSTable, for listings and dumps: its summary ([`TableInfo`]), its
//! filter's health ([`FilterInfo`]), its properties block as stored and
//! its entries; and summaries over many tables ([`level_summaries`],
//! [`filter_settings`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::number_of;
use crate::filter::{
    blocked_bloom, blocked_bloom_stats, bloom_stats, ribbon_stats, theoretical_fpr, FilterKind,
};
use crate::key::{user_key_of, ParsedInternalKey, SequenceNumber, ValueType};
use crate::sstable::{Block, Table, TableProperties};
use crate::util::coding::Decoder;
use crate::LevelStats;
use crate::{Error, Result};

/// [`FilterInfo::degraded`] flags a filter whose implied false-positive
/// rate exceeds its design rate by more than this factor.
pub const DEGRADED_FACTOR: f64 = 2.0;

/// Opens a lone table file; its number is taken from an `NNNNNN.sst` name
/// (0 otherwise).
///
/// # Errors
/// As [`Table::open`].
pub fn open_table(path: &Path) -> Result<Table> {
    Table::open(path, number_of(path).unwrap_or(0))
}

/// What a filter's own bytes say about it, whatever its kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterStats {
    /// The kind.
    pub kind: FilterKind,
    /// Bits that hold keys: the array `m` (classic), `512 · blocks`
    /// (blocked), `r · slots` (Ribbon).
    pub bits: u64,
    /// Probes per key, `k` (0 for Ribbon).
    pub num_hashes: u32,
    /// Result bits per slot, `r` (Ribbon; 0 for the other kinds).
    pub result_bits: u32,
    /// Bits set to 1 (the Bloom kinds; `None` for Ribbon, whose solution
    /// bits are half set whatever its health).
    pub bits_set: Option<u64>,
    /// The false-positive rate the filter's bytes imply for a key it was
    /// not built from: classic `(set / m)^k`; blocked, the same per block,
    /// averaged over blocks; Ribbon `2^−r`, fixed by its width.
    pub implied_fpr: f64,
}

impl FilterStats {
    /// Decodes `filter`, a filter of `kind`; `None` if it is malformed.
    pub fn decode(kind: FilterKind, filter: &[u8]) -> Option<FilterStats> {
        Some(match kind {
            FilterKind::Bloom => {
                let b = bloom_stats(filter)?;
                FilterStats {
                    kind,
                    bits: b.bits,
                    num_hashes: b.num_hashes,
                    result_bits: 0,
                    bits_set: Some(b.bits_set),
                    implied_fpr: if b.bits == 0 {
                        1.0
                    } else {
                        (b.bits_set as f64 / b.bits as f64).powi(b.num_hashes as i32)
                    },
                }
            }
            FilterKind::BlockedBloom => {
                let b = blocked_bloom_stats(filter)?;
                FilterStats {
                    kind,
                    bits: u64::from(b.blocks) * 512,
                    num_hashes: b.num_hashes,
                    result_bits: 0,
                    bits_set: Some(b.bits_set),
                    implied_fpr: b.implied_fpr,
                }
            }
            FilterKind::Ribbon => {
                let r = ribbon_stats(filter)?;
                FilterStats {
                    kind,
                    bits: r.slots * u64::from(r.result_bits),
                    num_hashes: 0,
                    result_bits: r.result_bits,
                    bits_set: None,
                    implied_fpr: r.design_fpr,
                }
            }
        })
    }
}

/// What a table's filter block and properties say about its filter.
#[derive(Debug, Clone, PartialEq)]
pub struct FilterInfo {
    /// The policy name in the properties; empty if the table has no filter.
    pub policy: String,
    /// True if this build knows the policy (lookups consult the filter).
    pub known_policy: bool,
    /// Bytes of the filter block (0 without one): its memory cost.
    pub block_bytes: u64,
    /// Keys in the filter: the table's distinct user keys.
    pub keys: u64,
    /// Bits per key the writer was configured with, rounded (for Ribbon:
    /// its width `r`).
    pub configured_bits_per_key: u32,
    /// The decoded filter, if the policy is known and the bytes are well
    /// formed.
    pub stats: Option<FilterStats>,
}

impl FilterInfo {
    /// The filter of `table`.
    pub fn of(table: &Table) -> FilterInfo {
        let p = table.properties();
        let bytes = table.filter_bytes();
        let known = table.has_filter();
        let kind = FilterKind::from_policy_name(&p.filter_policy);
        FilterInfo {
            policy: p.filter_policy.clone(),
            known_policy: known,
            block_bytes: bytes.map_or(0, |b| b.len() as u64),
            keys: p.num_distinct_keys,
            configured_bits_per_key: p.filter_bits_per_key,
            stats: match (known, kind, bytes) {
                (true, Some(kind), Some(b)) => FilterStats::decode(kind, b),
                _ => None,
            },
        }
    }

    /// The kind, if the policy is one this build knows.
    pub fn kind(&self) -> Option<FilterKind> {
        FilterKind::from_policy_name(&self.policy)
    }

    /// Bits of the filter per key: its key-holding bits over `n` (0
    /// without a decoded filter).
    pub fn bits_per_key(&self) -> f64 {
        match &self.stats {
            Some(s) if self.keys > 0 => s.bits as f64 / self.keys as f64,
            _ => 0.0,
        }
    }

    /// Fraction of the bits set (the Bloom kinds).
    pub fn fraction_set(&self) -> Option<f64> {
        let s = self.stats.as_ref().filter(|s| s.bits > 0)?;
        Some(s.bits_set? as f64 / s.bits as f64)
    }

    /// The false-positive rate the filter's bytes imply
    /// ([`FilterStats::implied_fpr`]).
    pub fn implied_fpr(&self) -> Option<f64> {
        Some(self.stats.as_ref()?.implied_fpr)
    }

    /// The false-positive rate the filter was designed for, by its kind's
    /// theory for its parameters and `n` keys: classic
    /// [`theoretical_fpr`]`(m / n, k)`, blocked
    /// [`blocked_bloom::theoretical_fpr`]`(512 · blocks / n, k)`, Ribbon
    /// `2^−r`.
    pub fn design_fpr(&self) -> Option<f64> {
        let s = self.stats.as_ref()?;
        Some(match s.kind {
            FilterKind::Bloom => theoretical_fpr(self.bits_per_key(), s.num_hashes),
            FilterKind::BlockedBloom => {
                blocked_bloom::theoretical_fpr(self.bits_per_key(), s.num_hashes)
            }
            FilterKind::Ribbon => s.implied_fpr,
        })
    }

    /// True if the implied rate is more than [`DEGRADED_FACTOR`] times the
    /// design rate (more bits set than `n` keys should set: the filter was
    /// built over more keys than the table holds, or its bits are damaged).
    /// A Ribbon filter's rate is fixed by its width, so it never is.
    pub fn degraded(&self) -> bool {
        match (self.implied_fpr(), self.design_fpr()) {
            (Some(i), Some(d)) => i > DEGRADED_FACTOR * d,
            _ => false,
        }
    }
}

/// One table's summary, for listings.
#[derive(Debug, Clone)]
pub struct TableInfo {
    /// Level in the tree (`None` for a lone file).
    pub level: Option<usize>,
    /// File number.
    pub number: u64,
    /// Path.
    pub path: PathBuf,
    /// Size on disk in bytes.
    pub file_size: u64,
    /// The properties block.
    pub properties: TableProperties,
    /// Data blocks (index entries).
    pub data_blocks: u64,
    /// Bytes of data blocks, trailers excluded.
    pub data_bytes: u64,
    /// The filter.
    pub filter: FilterInfo,
}

impl TableInfo {
    /// Summarises `table`.
    pub fn new(level: Option<usize>, table: &Table) -> TableInfo {
        TableInfo {
            level,
            number: table.file_number(),
            path: table.path().to_path_buf(),
            file_size: table.file_size(),
            properties: table.properties().clone(),
            data_blocks: table.index().len() as u64,
            data_bytes: table.index().iter().map(|e| e.handle.size).sum(),
            filter: FilterInfo::of(table),
        }
    }
}

/// A value in the properties block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PropertyValue {
    /// A varint.
    Number(u64),
    /// Raw bytes (user keys, the policy name, unknown properties).
    Bytes(Vec<u8>),
}

/// The properties whose values are varints (DESIGN.md 12.5); the others
/// (the policy name, the smallest and largest user keys) and any unknown
/// name are shown as bytes.
const NUMBER_PROPERTIES: [&str; 17] = [
    "siftdb.compression.blocks",
    "siftdb.compression.raw_bytes",
    "siftdb.compression.stored_bytes",
    "siftdb.filter.bits",
    "siftdb.filter.bits_per_key",
    "siftdb.filter.num_hashes",
    "siftdb.format_version",
    "siftdb.keyspace",
    "siftdb.largest_seq",
    "siftdb.num_data_blocks",
    "siftdb.num_distinct_keys",
    "siftdb.num_entries",
    "siftdb.num_tombstones",
    "siftdb.prefix_filter.prefixes",
    "siftdb.raw_key_bytes",
    "siftdb.raw_value_bytes",
    "siftdb.smallest_seq",
];

/// Every entry of the properties block as stored, in order: names and
/// values, unknown names included (shown as bytes).
///
/// # Errors
/// [`Error::Corruption`] if the block does not decode.
pub fn properties_block(table: &Table) -> Result<Vec<(String, PropertyValue)>> {
    let handle = table.footer().properties;
    let block = table.read_block(handle)?;
    let mut out = Vec::new();
    for entry in block.iter() {
        let (name, value) = entry?;
        let name = String::from_utf8_lossy(&name).into_owned();
        let mut d = Decoder::new(value);
        let v = match d.varint() {
            Ok(n) if d.is_empty() && NUMBER_PROPERTIES.contains(&name.as_str()) => {
                PropertyValue::Number(n)
            }
            _ => PropertyValue::Bytes(value.to_vec()),
        };
        out.push((name, v));
    }
    Ok(out)
}

/// One internal entry of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableEntry {
    /// Index of the data block holding it.
    pub block: usize,
    /// The user key.
    pub user_key: Vec<u8>,
    /// Sequence number.
    pub seq: SequenceNumber,
    /// Put or delete.
    pub value_type: ValueType,
    /// The value (empty for a tombstone).
    pub value: Vec<u8>,
}

/// An encoded internal key and its value.
type Pair = (Vec<u8>, Vec<u8>);

/// Iterator over a table's entries, from [`table_entries`].
#[derive(Debug)]
pub struct TableEntries<'t> {
    table: &'t Table,
    from: Option<Vec<u8>>,
    next_block: usize,
    /// The block being read and its entries decoded (a compressed block
    /// is decompressed whole, so its entries are decoded at once), up to
    /// and including the first that does not decode.
    current: Option<(usize, std::vec::IntoIter<Result<Pair>>)>,
    done: bool,
}

/// Every internal entry of `table` (all versions and tombstones) in key
/// order, starting at the first whose user key is `>= from`. Blocks are
/// read (and checksummed) only as the iteration reaches them.
pub fn table_entries<'t>(table: &'t Table, from: Option<&[u8]>) -> TableEntries<'t> {
    let next_block = match from {
        Some(k) => table
            .index()
            .partition_point(|e| user_key_of(&e.last_key) < k),
        None => 0,
    };
    TableEntries {
        table,
        from: from.map(<[u8]>::to_vec),
        next_block,
        current: None,
        done: false,
    }
}

impl Iterator for TableEntries<'_> {
    type Item = Result<TableEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            if let Some((block, iter)) = &mut self.current {
                match iter.next() {
                    Some(Ok((key, value))) => {
                        let Some(p) = ParsedInternalKey::parse(&key) else {
                            self.done = true;
                            let at = self.table.index()[*block].handle.offset;
                            return Some(Err(Error::corruption(
                                self.table.path(),
                                at,
                                "data block holds a malformed internal key",
                            )));
                        };
                        if self.from.as_deref().is_some_and(|f| p.user_key < f) {
                            continue;
                        }
                        return Some(Ok(TableEntry {
                            block: *block,
                            user_key: p.user_key.to_vec(),
                            seq: p.seq,
                            value_type: p.value_type,
                            value,
                        }));
                    }
                    Some(Err(e)) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                    None => self.current = None,
                }
            }
            let Some(entry) = self.table.index().get(self.next_block) else {
                self.done = true;
                break;
            };
            let decoded = self.table.data_block(entry.handle).and_then(|contents| {
                let block = Block::new(&contents, self.table.path(), entry.handle.offset)?;
                let mut entries = Vec::new();
                for e in block.iter() {
                    let failed = e.is_err();
                    entries.push(e.map(|(k, v)| (k, v.to_vec())));
                    if failed {
                        break;
                    }
                }
                Ok(entries)
            });
            match decoded {
                Ok(entries) => self.current = Some((self.next_block, entries.into_iter())),
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
            self.next_block += 1;
        }
        None
    }
}

/// One summary per level of the tree (empty levels included), then the
/// total (whose `level` is the number of levels).
pub fn level_summaries(tables: &[TableInfo], levels: usize) -> (Vec<LevelStats>, LevelStats) {
    let mut out: Vec<LevelStats> = (0..levels)
        .map(|level| LevelStats {
            level,
            ..Default::default()
        })
        .collect();
    let mut total = LevelStats {
        level: levels,
        ..Default::default()
    };
    for t in tables {
        let add =
            |l: &mut LevelStats| l.add_table(t.file_size, &t.properties, t.filter.block_bytes);
        if let Some(l) = t.level.and_then(|l| out.get_mut(l)) {
            add(l);
        }
        add(&mut total);
    }
    (out, total)
}

/// A filter configuration found in the tables' properties. Options are not
/// stored in format version 1; this is what the files reveal about the
/// ones they were written with.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FilterSetting {
    /// Policy name, empty for tables without a filter.
    pub policy: String,
    /// Configured bits per key.
    pub bits_per_key: u32,
    /// Probes per key, `k`.
    pub num_hashes: u32,
    /// Tables written with it.
    pub files: u64,
}

/// The distinct filter configurations of `tables`, most common first.
pub fn filter_settings(tables: &[TableInfo]) -> Vec<FilterSetting> {
    let mut m: BTreeMap<(String, u32, u32), u64> = BTreeMap::new();
    for t in tables {
        let p = &t.properties;
        *m.entry((
            p.filter_policy.clone(),
            p.filter_bits_per_key,
            p.filter_num_hashes,
        ))
        .or_default() += 1;
    }
    let mut v: Vec<FilterSetting> = m
        .into_iter()
        .map(
            |((policy, bits_per_key, num_hashes), files)| FilterSetting {
                policy,
                bits_per_key,
                num_hashes,
                files,
            },
        )
        .collect();
    v.sort_by(|a, b| b.files.cmp(&a.files).then_with(|| a.cmp(b)));
    v
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::testutil::{key, write_table, Saturated};
    use super::super::verify_file;
    use super::*;
    use crate::filter::BLOOM_POLICY_NAME;

    #[test]
    fn filter_health_flags_a_saturated_filter() {
        let tmp = tempfile::tempdir().unwrap();
        let good = write_table(
            &tmp.path().join("000001.sst"),
            Arc::new(crate::filter::BloomFilterPolicy::new(10)),
            1000,
        );
        let g = FilterInfo::of(&good);
        assert_eq!(g.keys, 1000);
        assert_eq!(g.stats.unwrap().bits, 10_000);
        assert_eq!(g.stats.unwrap().num_hashes, 7);
        assert_eq!(g.stats.unwrap().kind, FilterKind::Bloom);
        assert_eq!(g.block_bytes, 10_000 / 8 + 1);
        assert!((g.bits_per_key() - 10.0).abs() < 1e-9);
        let design = g.design_fpr().unwrap();
        assert!((design - theoretical_fpr(10.0, 7)).abs() < 1e-12);
        assert!(!g.degraded(), "{g:?}");
        let bad = write_table(&tmp.path().join("000002.sst"), Arc::new(Saturated), 1000);
        let b = FilterInfo::of(&bad);
        assert_eq!(b.fraction_set(), Some(1.0));
        assert_eq!(b.implied_fpr(), Some(1.0));
        assert!(b.degraded());
        // No false negatives, so verify passes it.
        assert!(verify_file(bad.path(), true, &mut |_, _| {})
            .unwrap()
            .is_clean());
    }

    #[test]
    fn entries_from_and_properties() {
        let tmp = tempfile::tempdir().unwrap();
        let t = write_table(
            &tmp.path().join("000003.sst"),
            Arc::new(crate::filter::BloomFilterPolicy::new(10)),
            100,
        );
        let all: Vec<TableEntry> = table_entries(&t, None).map(|e| e.unwrap()).collect();
        assert_eq!(all.len(), 100);
        assert_eq!(all[0].value_type, ValueType::Deletion);
        assert_eq!(all[1].seq, SequenceNumber(2));
        assert!(all.windows(2).all(|w| w[0].block <= w[1].block));
        let from: Vec<TableEntry> = table_entries(&t, Some(b"key00042x"))
            .map(|e| e.unwrap())
            .collect();
        assert_eq!(from.len(), 57);
        assert_eq!(from[0].user_key, key(43));
        assert_eq!(table_entries(&t, Some(b"zz")).count(), 0);
        let props = properties_block(&t).unwrap();
        let get = |n: &str| props.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
        assert_eq!(get("siftdb.num_entries"), Some(PropertyValue::Number(100)));
        assert_eq!(
            get("siftdb.num_tombstones"),
            Some(PropertyValue::Number(10))
        );
        assert_eq!(
            get("siftdb.smallest_user_key"),
            Some(PropertyValue::Bytes(key(0)))
        );
        assert_eq!(
            get("siftdb.filter.policy"),
            Some(PropertyValue::Bytes(BLOOM_POLICY_NAME.as_bytes().to_vec()))
        );
        assert_eq!(props.len(), 15);
        assert!(props.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
