//! One table's checks: data-block checksums, block layout, key order,
//! index keys, the filters and the properties against what the blocks
//! hold ([`check_table`]), and which part of a table an error that stopped
//! it from opening is in ([`locate_in_table`]).

use std::cmp::Ordering;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::report::{show_internal, Checker};
use crate::escape::escape_bytes;
use crate::filter::{hash_key, policy_for_name};
use crate::inspect::{file_name, FilterStats};
use crate::key::{compare_internal_keys, user_key_of, ParsedInternalKey, ValueType};
use crate::sstable::format::{Footer, BLOCK_TRAILER_LEN, FOOTER_LEN};
use crate::sstable::Table;
use crate::{Error, Result};

/// Names the table part holding `e`'s offset, from the file's footer.
pub(super) fn locate_in_table(path: &Path, e: &Error) -> String {
    let Error::Corruption { offset, .. } = e else {
        return "table".into();
    };
    let footer = (|| -> std::io::Result<Option<Footer>> {
        let mut f = crate::util::file::open_regular(path)?;
        let len = f.metadata()?.len();
        if len < FOOTER_LEN as u64 {
            return Ok(None);
        }
        f.seek(SeekFrom::Start(len - FOOTER_LEN as u64))?;
        let mut buf = [0u8; FOOTER_LEN];
        f.read_exact(&mut buf)?;
        if *offset >= len - FOOTER_LEN as u64 {
            return Ok(None);
        }
        Ok(Footer::decode(&buf, path).ok())
    })();
    match footer {
        Ok(Some(f)) if *offset == f.index.offset => "index block".into(),
        Ok(Some(f)) if !f.filter.is_null() && *offset == f.filter.offset => "filter block".into(),
        Ok(Some(f)) if *offset >= f.properties.offset && *offset < f.index.offset => {
            "properties block".into()
        }
        Ok(Some(f)) if *offset >= f.index.offset => "index block".into(),
        Ok(None) => "footer".into(),
        _ => "table".into(),
    }
}

/// What the data blocks of a table actually hold.
#[derive(Debug, Default)]
pub(super) struct Contents {
    pub(super) entries: u64,
    pub(super) distinct: u64,
    pub(super) tombstones: u64,
    pub(super) raw_key_bytes: u64,
    pub(super) raw_value_bytes: u64,
    pub(super) smallest_seq: u64,
    pub(super) largest_seq: u64,
    pub(super) first_key: Vec<u8>,
    pub(super) last_key: Vec<u8>,
}

/// Checks one opened table: data-block checksums, block layout, key order
/// within and across blocks, index keys, property counts and the filter.
/// Returns what the blocks hold when every block was read (so that
/// counts are meaningful), `None` otherwise. Stops early if `c` says so.
pub(super) fn check_table(c: &mut Checker<'_>, table: &Table) -> Result<Option<Contents>> {
    let path = table.path();
    c.report.tables += 1;
    c.report.table_bytes += table.file_size();
    let footer = *table.footer();
    let mut t = Contents::default();
    let p = table.properties();
    // The filter, probed with every distinct user key as the scan finds it.
    let filter = match (table.filter_bytes(), policy_for_name(&p.filter_policy)) {
        (Some(bytes), Some(policy)) => Some((bytes, policy)),
        (Some(_), None) => {
            c.report.notes.push(format!(
                "{}: filter policy \"{}\" is unknown to this build; filter not checked",
                file_name(path),
                escape_bytes(p.filter_policy.as_bytes())
            ));
            None
        }
        (None, _) => None,
    };
    let mut misses = 0u64;
    let mut first_miss: Option<Vec<u8>> = None;
    // The prefix filter, probed with every distinct prefix, when its
    // extractor is one this build can rebuild from its name.
    let prefix_check = match (&p.prefix_filter, &filter, table.prefix_filter_bytes()) {
        (Some(pf), Some(_), Some(bytes)) => {
            match crate::filter::prefix::builtin_extractor(&pf.extractor) {
                Some(ex) => Some((ex, bytes)),
                None => {
                    c.report.notes.push(format!(
                    "{}: prefix extractor \"{}\" is not a built-in one; prefix filter not checked",
                    file_name(path),
                    escape_bytes(pf.extractor.as_bytes())
                ));
                    None
                }
            }
        }
        _ => None,
    };
    let (mut prefix_misses, mut first_prefix_miss) = (0u64, None::<Vec<u8>>);
    let mut last_prefix: Option<Vec<u8>> = None;
    let mut complete = true;
    let mut expected_offset = 0u64;
    let mut prev_key: Option<Vec<u8>> = None;
    let mut done_bytes = 0u64;
    for (i, ie) in table.index().iter().enumerate() {
        let what = format!("data block {i}");
        let h = ie.handle;
        if h.offset != expected_offset {
            let detail = format!(
                "starts at {} but the previous block ends at {expected_offset} (index entry {i} points at {h})",
                h.offset
            );
            if c.problem(path, &what, Some(h.offset), detail) {
                return Ok(None);
            }
        }
        expected_offset = h.end_with_trailer().unwrap_or(u64::MAX);
        let contents = table.data_block(h);
        let block = match contents {
            Ok(ref contents) => crate::sstable::Block::new(contents, path, h.offset),
            Err(e) => Err(e),
        };
        let block = match block {
            Ok(b) => b,
            Err(e) => {
                complete = false;
                if c.corruption(e, &what)? {
                    return Ok(None);
                }
                continue;
            }
        };
        c.report.data_blocks += 1;
        let mut last_in_block: Option<Vec<u8>> = None;
        let mut block_ok = true;
        for entry in block.iter() {
            let (key, value) = match entry {
                Ok(kv) => kv,
                Err(e) => {
                    (complete, block_ok) = (false, false);
                    if c.corruption(e, &what)? {
                        return Ok(None);
                    }
                    break;
                }
            };
            let Some(ik) = ParsedInternalKey::parse(&key) else {
                (complete, block_ok) = (false, false);
                let d = format!("malformed internal key {}", escape_bytes(&key));
                if c.problem(path, &what, Some(h.offset), d) {
                    return Ok(None);
                }
                break;
            };
            if let Some(prev) = &prev_key {
                if compare_internal_keys(prev, &key) != Ordering::Less {
                    let d = format!(
                        "key {} is not after the previous key {}{}",
                        show_internal(&key),
                        show_internal(prev),
                        if last_in_block.is_none() {
                            " (the last of the previous block)"
                        } else {
                            ""
                        }
                    );
                    if c.problem(path, &what, Some(h.offset), d) {
                        return Ok(None);
                    }
                }
            }
            let new_user_key = prev_key
                .as_deref()
                .is_none_or(|prev| user_key_of(prev) != ik.user_key);
            if new_user_key {
                t.distinct += 1;
                if let Some((bytes, policy)) = &filter {
                    c.report.filter_probes += 1;
                    if !policy.may_match(bytes, hash_key(ik.user_key)) {
                        misses += 1;
                        first_miss.get_or_insert_with(|| ik.user_key.to_vec());
                    }
                    if let Some((ex, prefix_bytes)) = &prefix_check {
                        if let Some(q) = crate::filter::PrefixExtractor::prefix(ex, ik.user_key) {
                            if last_prefix.as_deref() != Some(q) {
                                if !policy.may_match(prefix_bytes, hash_key(q)) {
                                    prefix_misses += 1;
                                    first_prefix_miss.get_or_insert_with(|| q.to_vec());
                                }
                                last_prefix = Some(q.to_vec());
                            }
                        }
                    }
                }
            }
            if t.entries == 0 {
                t.first_key = key.clone();
                t.smallest_seq = ik.seq.0;
            }
            t.entries += 1;
            if ik.value_type == ValueType::Deletion {
                t.tombstones += 1;
            }
            t.raw_key_bytes += key.len() as u64;
            t.raw_value_bytes += value.len() as u64;
            t.smallest_seq = t.smallest_seq.min(ik.seq.0);
            t.largest_seq = t.largest_seq.max(ik.seq.0);
            c.report.entries += 1;
            last_in_block = Some(key.clone());
            prev_key = Some(key);
        }
        if let Some(k) = last_in_block.as_ref().filter(|k| **k != ie.last_key) {
            let d = format!(
                "index entry {i} says the block ends with {}, it ends with {}",
                show_internal(&ie.last_key),
                show_internal(k)
            );
            if c.problem(path, "index block", Some(footer.index.offset), d) {
                return Ok(None);
            }
        }
        if last_in_block.is_none()
            && block_ok
            && c.problem(path, &what, Some(h.offset), "block holds no entries")
        {
            return Ok(None);
        }
        let step = h.size + BLOCK_TRAILER_LEN as u64;
        done_bytes += step;
        c.advance(step);
    }
    if let Some(k) = prev_key {
        t.last_key = k;
    }
    // The metadata blocks follow the data blocks: the filter (if any),
    // then the key sketch (if any), then the properties.
    let meta_start = if !footer.filter.is_null() {
        footer.filter.offset
    } else if let Some(h) = p.key_sketch {
        h.offset.min(footer.properties.offset)
    } else {
        footer.properties.offset
    };
    // A filter that asks for a placement (the blocked Bloom filter) may be
    // preceded by up to 63 zero bytes of padding (DESIGN.md 12.4).
    let padding = meta_start.saturating_sub(expected_offset);
    let padded = padding > 0
        && padding < 64
        && !footer.filter.is_null()
        && table
            .map_bytes(expected_offset, padding)
            .is_some_and(|b| b.iter().all(|&x| x == 0));
    if complete && expected_offset != meta_start && !padded {
        let d = format!(
            "data blocks end at {expected_offset} but the next block starts at {meta_start}"
        );
        if c.problem(path, "index block", Some(footer.index.offset), d) {
            return Ok(None);
        }
    }
    c.advance(table.file_size().saturating_sub(done_bytes));

    // The key sketch decodes (its checksum included).
    // A corruption error already names its offset: only its detail goes in
    // the problem, whose own offset is printed once.
    if let Err(e) = table.key_sketch() {
        let at = p.key_sketch.map(|h| h.offset);
        let stop = match e {
            Error::Corruption { offset, detail, .. } => {
                c.problem(path, "key sketch block", Some(offset), detail)
            }
            e => c.problem(path, "key sketch block", at, e.to_string()),
        };
        if stop {
            return Ok(None);
        }
    }

    // Filter: no false negatives, and its shape matches the properties.
    if let Some((bytes, _)) = &filter {
        let at = Some(footer.filter.offset);
        let kind = crate::filter::FilterKind::from_policy_name(&p.filter_policy);
        if let Some(s) = kind.and_then(|k| FilterStats::decode(k, bytes)) {
            if s.bits != p.filter_bits || s.num_hashes != p.filter_num_hashes {
                let d = format!(
                    "filter has {} bits, k = {}; the properties say {} bits, k = {}",
                    s.bits, s.num_hashes, p.filter_bits, p.filter_num_hashes
                );
                if c.problem(path, "filter block", at, d) {
                    return Ok(None);
                }
            }
        }
        if let Some(key) = &first_miss {
            let d = format!(
                "filter answers \"absent\" for {misses} of the {} keys the table holds (false \
                 negatives), first \"{}\"",
                t.distinct,
                escape_bytes(key)
            );
            if c.problem(path, "filter block", at, d) {
                return Ok(None);
            }
        }
        if let Some(q) = &first_prefix_miss {
            let at = p.prefix_filter.as_ref().map(|pf| pf.handle.offset);
            let d = format!(
                "prefix filter answers \"absent\" for {prefix_misses} prefixes the table holds \
                 (false negatives), first \"{}\"",
                escape_bytes(q)
            );
            if c.problem(path, "prefix filter block", at, d) {
                return Ok(None);
            }
        }
    }
    if !complete {
        return Ok(None);
    }

    // Properties against contents.
    let at = Some(footer.properties.offset);
    let pairs: [(&str, u64, u64); 7] = [
        ("num_entries", p.num_entries, t.entries),
        ("num_distinct_keys", p.num_distinct_keys, t.distinct),
        ("num_tombstones", p.num_tombstones, t.tombstones),
        ("smallest_seq", p.smallest_seq.0, t.smallest_seq),
        ("largest_seq", p.largest_seq.0, t.largest_seq),
        ("raw_key_bytes", p.raw_key_bytes, t.raw_key_bytes),
        ("raw_value_bytes", p.raw_value_bytes, t.raw_value_bytes),
    ];
    for (name, says, holds) in pairs {
        if says != holds {
            let d = format!("siftdb.{name} is {says} but the data blocks hold {holds}");
            if c.problem(path, "properties block", at, d) {
                return Ok(None);
            }
        }
    }
    let keys = [
        (
            "smallest_user_key",
            &p.smallest_user_key,
            user_key_of(&t.first_key),
        ),
        (
            "largest_user_key",
            &p.largest_user_key,
            user_key_of(&t.last_key),
        ),
    ];
    for (name, says, holds) in keys {
        if says.as_slice() != holds {
            let d = format!(
                "siftdb.{name} is \"{}\" but the data blocks hold \"{}\"",
                escape_bytes(says),
                escape_bytes(holds)
            );
            if c.problem(path, "properties block", at, d) {
                return Ok(None);
            }
        }
    }
    Ok(Some(t))
}
