//! Reading WALs: the salvaged keyspace's writes in every WAL read, up to a
//! torn tail or the first damaged record.

use std::path::Path;

use super::merge::{Lost, Source};
use super::{Entry, KeyRange, Salvage, WalDamage, WalSalvage};
use crate::filename;
use crate::inspect::read_wal;
use crate::key::{compare_internal_keys, InternalKey, ValueType};
use crate::range_tombstone::RangeTombstone;
use crate::{Error, Result};

impl Salvage {
    /// Reads the salvaged keyspace's writes in the WALs numbered `numbers`
    /// into one sorted source, noting every keyspace their ops name.
    /// Damage is recorded, never an error.
    pub(super) fn read_wals(&mut self, dir: &Path, numbers: &[u64]) -> Result<()> {
        let mut entries: Vec<Entry> = Vec::new();
        for &number in numbers {
            let path = filename::wal_path(dir, number);
            let mut w = WalSalvage {
                path: path.clone(),
                number,
                size: 0,
                records: 0,
                entries: 0,
                torn_tail: None,
                damage: None,
            };
            match read_wal(&path) {
                Ok(contents) => {
                    w.size = contents.size;
                    w.records = contents.records.len() as u64;
                    w.torn_tail = contents.torn_tail;
                    w.damage = contents.corruption.map(|e| damage_of(e, contents.size));
                    let ops = contents.records.into_iter().flat_map(|r| r.ops);
                    for op in ops {
                        self.wal_keyspaces.insert(op.keyspace);
                        if op.keyspace != self.report.keyspace {
                            continue;
                        }
                        w.entries += 1;
                        if op.value_type == ValueType::RangeDeletion {
                            self.range_tombstones.push(RangeTombstone {
                                end: (!op.value.is_empty()).then(|| op.value.to_vec()),
                                start: op.key.clone(),
                                seq: op.seq,
                            });
                            continue;
                        }
                        let key = InternalKey::new(&op.key, op.seq, op.value_type);
                        entries.push((key.into_encoded(), op.value));
                    }
                }
                Err(e) => {
                    w.damage = Some(WalDamage {
                        offset: 0,
                        detail: e.to_string(),
                    })
                }
            }
            if w.damage.is_some() {
                // Records after the damage are newer than everything else
                // in this WAL, and may touch any key.
                self.active.push(Lost::unknown(KeyRange::everything()));
            }
            self.report.wals.push(w);
        }
        if !entries.is_empty() {
            entries.sort_by(|a, b| compare_internal_keys(&a.0, &b.0));
            self.sources.push(Source::Wal(entries.into_iter()));
        }
        Ok(())
    }
}

/// The damage a WAL read stopped at (`size` bytes long).
fn damage_of(e: Error, size: u64) -> WalDamage {
    match e {
        Error::Corruption { offset, detail, .. } => WalDamage {
            offset: offset.min(size),
            detail,
        },
        e => WalDamage {
            offset: 0,
            detail: e.to_string(),
        },
    }
}
