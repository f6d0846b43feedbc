//! A WAL's checks: its damage, its torn tail, and writes to a keyspace the
//! manifest never created.

use super::report::Checker;
use crate::inspect::{file_name, WalContents};
use crate::Result;

/// Records a WAL's damage and torn tail, and a write to a keyspace the
/// manifest never created (an id at or above its `next_keyspace_id`,
/// when known: an open refuses such a write as corruption); true to stop.
pub(super) fn check_wal(
    c: &mut Checker<'_>,
    wal: WalContents,
    next_keyspace_id: Option<u32>,
) -> Result<bool> {
    c.report.wals += 1;
    c.report.wal_records += wal.records.len() as u64;
    for r in &wal.records {
        let unknown = r
            .ops
            .iter()
            .find(|o| next_keyspace_id.is_some_and(|n| o.keyspace >= n));
        if let Some(op) = unknown {
            let detail = format!(
                "a write to keyspace {}, which the manifest does not hold",
                op.keyspace
            );
            if c.problem(&wal.path, "WAL record", Some(r.offset), detail) {
                return Ok(true);
            }
        }
    }
    if let Some(t) = &wal.torn_tail {
        c.report.notes.push(format!(
            "{}: torn tail at offset {} ({}); recovery drops it ({}, or damage to the last \
             record, which looks the same)",
            file_name(&wal.path),
            t.offset,
            t.reason,
            crate::log::TORN_WRITE
        ));
    }
    match wal.corruption {
        Some(e) => c.corruption(e, "WAL record"),
        None => Ok(false),
    }
}
