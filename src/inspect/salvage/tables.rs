//! Reading tables: opening each one (a damaged footer or index walked
//! around), then its data blocks one at a time as the merge reaches them,
//! recording every damaged block and the keys it lost.

use std::path::Path;
use std::sync::Arc;

use super::merge::{Lost, Source, TableFilter};
use super::{Entry, KeyRange, Salvage, SalvageReport, SkippedBlock, TableSalvage, UnreadTable};
use crate::filename;
use crate::filter::{policy_for_name, FilterPolicy};
use crate::key::{user_key_of, ParsedInternalKey, SequenceNumber};
use crate::range_tombstone::FragmentedRangeTombstones;
use crate::sstable::compression::{Compression, NO_ZSTD};
use crate::sstable::format::{BLOCK_TRAILER_LEN, FOOTER_LEN};
use crate::sstable::table::checked_data_entries;
use crate::sstable::{BlockHandle, TableBlocks};
use crate::version::edit::FileMetaData;
use crate::version::set::manifest_mismatch;
use crate::{Error, Result};

/// Reads one table's data blocks in order, skipping damaged ones.
#[derive(Debug)]
pub(super) struct TableCursor {
    table: TableBlocks,
    /// Index of the table's entry in [`SalvageReport::tables`].
    report: usize,
    next_block: usize,
    buffered: std::vec::IntoIter<Entry>,
    /// Last key of the last block read, to check the order across blocks.
    last_key: Option<Vec<u8>>,
    /// The table's largest sequence number, if the properties say.
    largest_seq: Option<u64>,
    /// The policy of the table's filter, if the filter block and the
    /// properties naming it are intact and the policy is known.
    filter_policy: Option<Arc<dyn FilterPolicy>>,
    /// The filter, copied out at the first skipped block.
    filter: Option<Arc<TableFilter>>,
}

impl Salvage {
    /// Opens table `number` (at `level`, with manifest entry `meta`, when
    /// the manifest is used) and adds it as a source, or records why not.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if its properties say it holds blocks of
    /// a codec this build lacks (zstd without the `zstd` feature): they are
    /// not lost, this build cannot read them, so the salvage is refused
    /// rather than reporting them lost.
    pub(super) fn open_table(
        &mut self,
        dir: &Path,
        level: Option<usize>,
        number: u64,
        meta: Option<&FileMetaData>,
    ) -> Result<()> {
        let path = filename::table_path(dir, number);
        let mut t = TableSalvage {
            path: path.clone(),
            number,
            level,
            size: None,
            keys: meta.map_or_else(KeyRange::everything, |m| KeyRange {
                first: Some(m.smallest.user_key().to_vec()),
                last: Some(m.largest.user_key().to_vec()),
            }),
            data_blocks: 0,
            blocks_read: 0,
            entries: 0,
            skipped_blocks: Vec::new(),
            unreadable: None,
            notes: Vec::new(),
        };
        // A damaged footer or index does not lose the data blocks: they are
        // found by walking the file (`TableBlocks::open_by_scan`).
        let (table, walked) = match TableBlocks::open(&path) {
            Ok(table) => (table, None),
            Err(e) => {
                t.size = std::fs::metadata(&path).ok().map(|m| m.len());
                let unread = unread_table(e, t.size);
                let walk = (unread.what != "file")
                    .then(|| TableBlocks::open_by_scan(&path).ok())
                    .flatten()
                    .filter(|table| !table.index().is_empty());
                match walk {
                    Some(table) => (table, Some(unread)),
                    None => {
                        t.unreadable = Some(unread);
                        self.pending.push(Lost::unknown(t.keys.clone()));
                        self.report.tables.push(t);
                        return Ok(());
                    }
                }
            }
        };
        t.size = Some(table.file_size());
        t.data_blocks = table.index().len() as u64;
        let mut largest_seq = None;
        let mut policy_name = None;
        match table.properties() {
            Ok(p) => {
                let mismatch = meta.and_then(|m| manifest_mismatch(m, table.file_size(), &p));
                if let Some(why) = mismatch {
                    // Another table under this one's name: reading it would
                    // return its keys as this table's. Lost, as if missing.
                    t.unreadable = Some(UnreadTable {
                        what: "file".into(),
                        offset: None,
                        detail: why,
                    });
                    self.pending.push(Lost::unknown(t.keys.clone()));
                    self.report.tables.push(t);
                    return Ok(());
                }
                if p.keyspace != self.report.keyspace {
                    // Only the manifest lists a table in a keyspace its
                    // property does not name: the manifest is followed.
                    t.notes.push(format!(
                        "its property siftdb.keyspace says keyspace {}, but the manifest \
                         lists it in keyspace {} (kvctl verify reports it): read as the \
                         manifest says",
                        p.keyspace, self.report.keyspace
                    ));
                }
                if let Some(c) = &p.compression {
                    let codec = c.codec.parse::<Compression>();
                    if let Ok(codec) = codec {
                        if !codec.is_available() && c.compressed_blocks > 0 {
                            return Err(Error::InvalidArgument(format!(
                                "{}: {} data blocks stored with {codec}: {NO_ZSTD}",
                                path.display(),
                                c.compressed_blocks,
                            )));
                        }
                    }
                }
                largest_seq = Some(p.largest_seq.0);
                policy_name = Some(p.filter_policy.clone());
                if meta.is_none() {
                    t.keys = KeyRange {
                        first: Some(p.smallest_user_key),
                        last: Some(p.largest_user_key),
                    };
                }
            }
            Err(e) => t.notes.push(format!(
                "properties block damaged ({e}): not needed to read entries; nothing lost"
            )),
        }
        // The table's largest key as the manifest or the properties give it
        // (not the index, which a walk made up).
        let known_last = t.keys.last.clone();
        let filter_policy = match table.filter() {
            Ok(Some(_)) => policy_name.as_deref().and_then(policy_for_name),
            Ok(None) => None,
            Err(e) => {
                t.notes.push(format!(
                    "filter block damaged ({e}): not needed to read entries; nothing lost"
                ));
                None
            }
        };
        if meta.is_none() && largest_seq.is_none() {
            // Without the manifest or the properties, the first block's
            // lower bound is unknown.
            t.keys = KeyRange {
                first: None,
                last: table
                    .index()
                    .last()
                    .map(|e| user_key_of(&e.last_key).to_vec()),
            };
        }
        if let Some(unread) = walked {
            self.walked_table(&mut t, &table, &unread, known_last, largest_seq);
        }
        self.sources.push(Source::Table(Box::new(TableCursor {
            table,
            report: self.report.tables.len(),
            next_block: 0,
            buffered: Vec::new().into_iter(),
            last_key: None,
            largest_seq,
            filter_policy,
            filter: None,
        })));
        self.report.tables.push(t);
        Ok(())
    }

    /// Reports table `t`, whose `unread` footer or index made the salvage
    /// find its data blocks by walking the file. The walk ends after the
    /// last data block or at damage; unless the last key it found is the
    /// table's largest user key (`known_last`, from the manifest or the
    /// properties), the rest of the data, from that key on, is lost.
    fn walked_table(
        &mut self,
        t: &mut TableSalvage,
        table: &TableBlocks,
        unread: &UnreadTable,
        known_last: Option<Vec<u8>>,
        largest_seq: Option<u64>,
    ) {
        let found = table.index();
        let Some(last) = found.last() else { return };
        let last_key = ParsedInternalKey::parse(&last.last_key)
            .map(|p| (p.user_key.to_vec(), p.seq.0))
            .unwrap_or_default();
        let complete = known_last.as_deref() == Some(last_key.0.as_slice());
        let at = unread
            .offset
            .map_or_else(String::new, |o| format!(" at offset {o}"));
        t.notes.push(format!(
            "{} damaged{at} ({}): {} data blocks found by walking the file{}",
            unread.what,
            unread.detail,
            found.len(),
            if complete {
                ", up to the table's largest key: nothing lost"
            } else {
                ""
            }
        ));
        if complete {
            return;
        }
        let stop = last.handle.offset + last.handle.size + BLOCK_TRAILER_LEN as u64;
        let keys = KeyRange {
            first: Some(last_key.0.clone()),
            last: known_last.clone(),
        };
        t.skipped_blocks.push(SkippedBlock {
            block: found.len() as u64,
            handle: BlockHandle {
                offset: stop,
                size: table.data_end().saturating_sub(stop),
            },
            keys: keys.clone(),
            detail: if known_last.is_some() {
                "no data block found from here by walking the file, short of the table's \
                 largest key: the rest of its data is lost"
            } else {
                "no data block found from here by walking the file, and the table's largest \
                 key is unknown: the rest of its data may be lost"
            }
            .into(),
        });
        self.pending.push(Lost {
            keys,
            max_seq: largest_seq,
            older_than: Some(last_key),
            filter: None,
        });
    }
}

impl TableCursor {
    /// The table's next entry, reading (and checking) the next data block
    /// when the current one is used up; damaged blocks are recorded in
    /// `report` and their key ranges added to `lost`, except those whose
    /// every key the range deletions in `hidden_by` hide (a note).
    pub(super) fn next_entry(
        &mut self,
        report: &mut SalvageReport,
        lost: &mut Vec<Lost>,
        hidden_by: &FragmentedRangeTombstones,
    ) -> Option<Entry> {
        loop {
            if let Some(e) = self.buffered.next() {
                return Some(e);
            }
            let i = self.next_block;
            let entry = self.table.index().get(i)?.clone();
            self.next_block += 1;
            let read = self.read_block(i);
            let t = &mut report.tables[self.report];
            match read {
                Ok(entries) => {
                    t.blocks_read += 1;
                    t.entries += entries.len() as u64;
                    self.last_key = entries.last().map(|e| e.0.clone()).or(self.last_key.take());
                    self.buffered = entries.into_iter();
                }
                Err(e) => {
                    let prev = i
                        .checked_sub(1)
                        .and_then(|p| ParsedInternalKey::parse(&self.table.index()[p].last_key))
                        .map(|p| (p.user_key.to_vec(), p.seq.0));
                    let first = match &prev {
                        Some((k, _)) => Some(k.clone()),
                        None => t.keys.first.clone(),
                    };
                    let keys = KeyRange {
                        first,
                        last: Some(user_key_of(&entry.last_key).to_vec()),
                    };
                    let detail = match e {
                        Error::Corruption { detail, .. } => detail,
                        e => e.to_string(),
                    };
                    if let Some(seq) = self.largest_seq {
                        if hides_all(hidden_by, &keys, seq) {
                            t.notes.push(format!(
                                "data block {i} damaged ({detail}): every key it may hold is \
                                 hidden by a newer range deletion, so nothing visible was lost"
                            ));
                            continue;
                        }
                    }
                    t.skipped_blocks.push(SkippedBlock {
                        block: i as u64,
                        handle: entry.handle,
                        keys: keys.clone(),
                        detail,
                    });
                    lost.push(Lost {
                        keys,
                        max_seq: self.largest_seq,
                        older_than: prev,
                        filter: self.filter(),
                    });
                }
            }
        }
    }

    /// The table's filter, if usable (copied once, on first use).
    fn filter(&mut self) -> Option<Arc<TableFilter>> {
        if self.filter.is_none() {
            let policy = self.filter_policy.clone()?;
            let bytes = self.table.filter().ok().flatten()?.to_vec();
            self.filter = Some(Arc::new(TableFilter { policy, bytes }));
        }
        self.filter.clone()
    }

    /// Every entry of data block `i`, checked: well-formed internal keys in
    /// strictly increasing order, continuing from the previous block.
    fn read_block(&self, i: usize) -> Result<Vec<Entry>> {
        let handle = self.table.index()[i].handle;
        let contents = self.table.read_block(handle)?;
        let block = crate::sstable::Block::new(&contents, self.table.path(), handle.offset)?;
        checked_data_entries(
            &block,
            self.last_key.as_deref(),
            self.table.path(),
            handle.offset,
        )
    }
}

/// True if range deletions in `index` newer than `seq` cover every user
/// key of `keys` (`first` `None`: from the smallest key): a block whose
/// table's entries are all at or below `seq` then holds nothing a reader
/// could see, nor anything that hides an older visible version (every
/// older version is older than the deletions too).
fn hides_all(index: &FragmentedRangeTombstones, keys: &KeyRange, seq: u64) -> bool {
    let Some(last) = keys.last.as_deref() else {
        return false;
    };
    let mut key = keys.first.clone().unwrap_or_default();
    // Each step moves past one fragment or gap, so this ends.
    loop {
        let (covering, _, end) = index.covering_span(&key, SequenceNumber(u64::MAX));
        if covering.0 <= seq {
            return false;
        }
        match end {
            None => return true,
            Some(end) if end > last => return true,
            Some(end) => key = end.to_vec(),
        }
    }
}

/// Why [`TableBlocks::open`] failed, as an [`UnreadTable`]; `size` is the
/// file's size if known.
fn unread_table(e: Error, size: Option<u64>) -> UnreadTable {
    match e {
        Error::Corruption { offset, detail, .. } => {
            let in_footer =
                size.is_none_or(|s| s < FOOTER_LEN as u64 || offset >= s - FOOTER_LEN as u64);
            UnreadTable {
                what: if in_footer { "footer" } else { "index block" }.into(),
                offset: Some(offset),
                detail,
            }
        }
        e @ Error::UnsupportedVersion { .. } => UnreadTable {
            what: "footer".into(),
            offset: size.and_then(|s| s.checked_sub(FOOTER_LEN as u64)),
            detail: e.to_string(),
        },
        e => UnreadTable {
            what: "file".into(),
            offset: None,
            detail: e.to_string(),
        },
    }
}
