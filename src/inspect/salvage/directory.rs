//! Without a usable manifest: which of the directory's tables belong to
//! the salvaged keyspace, by their `siftdb.keyspace` property.

use std::path::Path;

use super::merge::Lost;
#[cfg(doc)]
use super::SalvageReport;
use super::{KeyRange, Salvage, TableSalvage, UnreadTable};
use crate::filename::{self, FileType};
use crate::sstable::TableBlocks;
use crate::Result;

impl Salvage {
    /// Without a manifest: opens every table of `listing` whose
    /// `siftdb.keyspace` property names the salvaged keyspace (absent: the
    /// default), and notes every keyspace met in
    /// [`SalvageReport::keyspaces`]. A table whose properties cannot be
    /// read (nor found: a damaged footer or index) belongs to no keyspace
    /// it can be told of: it is read if the
    /// directory shows no keyspace but the salvaged one, and otherwise
    /// skipped whole, with every key flagged as possibly stale (its data
    /// may be this keyspace's).
    ///
    /// # Errors
    /// As [`Salvage::open_table`].
    pub(super) fn open_tables_by_property(
        &mut self,
        dir: &Path,
        listing: &[FileType],
    ) -> Result<()> {
        let mut numbers: Vec<u64> = listing
            .iter()
            .filter_map(|t| match *t {
                FileType::Table(n) => Some(n),
                _ => None,
            })
            .collect();
        numbers.sort_unstable();
        let owners: Vec<(u64, Option<u32>)> = numbers
            .into_iter()
            .map(|n| (n, table_keyspace(&filename::table_path(dir, n))))
            .collect();
        let mut seen = std::mem::take(&mut self.wal_keyspaces);
        seen.extend(owners.iter().filter_map(|&(_, k)| k));
        let only_this = seen.iter().all(|&k| k == self.report.keyspace);
        self.report.keyspaces = seen.into_iter().collect();
        for (number, owner) in owners {
            match owner {
                Some(k) if k == self.report.keyspace => self.open_table(dir, None, number, None)?,
                Some(_) => {}
                None if only_this => self.open_table(dir, None, number, None)?,
                None => self.unowned_table(dir, number),
            }
        }
        Ok(())
    }

    /// Reports table `number`, whose keyspace cannot be told, as skipped
    /// whole: every key may be stale.
    fn unowned_table(&mut self, dir: &Path, number: u64) {
        let path = filename::table_path(dir, number);
        let size = std::fs::metadata(&path).ok().map(|m| m.len());
        self.pending.push(Lost::unknown(KeyRange::everything()));
        self.report.tables.push(TableSalvage {
            path,
            number,
            level: None,
            size,
            keys: KeyRange::everything(),
            data_blocks: 0,
            blocks_read: 0,
            entries: 0,
            skipped_blocks: Vec::new(),
            unreadable: Some(UnreadTable {
                what: "properties block".into(),
                offset: None,
                detail: "the table's keyspace (property siftdb.keyspace) cannot be read \
                         (footer, index or properties block damaged), and the directory \
                         holds several keyspaces: not read"
                    .into(),
            }),
            notes: Vec::new(),
        });
    }
}

/// The keyspace the table at `path` belongs to, by its `siftdb.keyspace`
/// property (absent: the default), or `None` if its footer, index or
/// properties block cannot be read.
fn table_keyspace(path: &Path) -> Option<u32> {
    let table = TableBlocks::open(path).ok()?;
    table.properties().ok().map(|p| p.keyspace)
}
