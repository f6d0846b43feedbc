//! Inspection subcommands: `info`, `sst list|dump`, `verify`,
//! `manifest dump`, `wal dump`, `explain`, `filters`.
//!
//! Decoding and checking live in [`siftdb::inspect`]; these modules only
//! turn its results into aligned tables or JSON. Nothing here writes to
//! the database, and none of it takes the database's lock.

pub mod explain;
pub mod explain_prefix;
pub mod filters;
pub mod info;
pub mod kind;
pub mod logs;
pub mod sst;
pub mod verify;

use std::io::{self, Write};
use std::path::Path;

use serde_json::{json, Value};
use siftdb::inspect::escape::{escape_bytes, hex};
use siftdb::inspect::sstable::BlockHandle;
use siftdb::inspect::DbSnapshot;

use crate::error::{write_failed, CliError};

/// Values longer than this are cut in human output (JSON prints them
/// whole).
pub const VALUE_PREVIEW: usize = 48;

/// How keys and values are printed: escaped (the default, as `scan`
/// prints them) or as hex (`--hex`).
#[derive(Debug, Clone, Copy)]
pub struct Show {
    pub hex: bool,
}

impl Show {
    /// The whole byte string.
    pub fn bytes(self, b: &[u8]) -> String {
        if self.hex {
            hex(b)
        } else {
            escape_bytes(b)
        }
    }

    /// At most `max` characters, ending in `…` when cut.
    pub fn short(self, b: &[u8], max: usize) -> String {
        let s = self.bytes(b);
        if s.chars().count() <= max {
            s
        } else {
            let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
            t.push('…');
            t
        }
    }

    /// A value for human output.
    pub fn value(self, b: &[u8]) -> String {
        self.short(b, VALUE_PREVIEW)
    }
}

/// Opens a read-only snapshot of the database at `dir`, refusing one
/// without the keyspace `--keyspace` names (exit 2).
pub fn snapshot(dir: &Path) -> Result<DbSnapshot, CliError> {
    let snap = DbSnapshot::open(dir)?;
    crate::keyspace::tree(&snap)?;
    Ok(snap)
}

/// Writes `text` to stdout.
pub fn emit(text: &str) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(write_failed)
}

/// Writes `v` as pretty JSON and a newline.
pub fn emit_json(v: &Value) -> Result<(), CliError> {
    emit(&format!("{v:#}\n"))
}

/// `{"offset": .., "size": ..}`
pub fn handle_json(h: BlockHandle) -> Value {
    json!({ "offset": h.offset, "size": h.size })
}

/// A rate as a percentage with enough digits to compare small rates.
pub fn percent(x: f64) -> String {
    let p = x * 100.0;
    if p == 0.0 {
        "0%".into()
    } else if p >= 10.0 {
        format!("{p:.1}%")
    } else if p >= 0.01 {
        format!("{p:.2}%")
    } else {
        format!("{p:.2e}%")
    }
}

/// `1 entry`, `1,234 entries`.
pub fn entries_text(n: u64) -> String {
    if n == 1 {
        "1 entry".into()
    } else {
        format!("{} entries", crate::format::group(n))
    }
}

/// `NNNNNN.sst`
pub fn table_name(number: u64) -> String {
    format!("{number:06}.sst")
}

/// A torn log tail as JSON (`{"offset", "reason"}`), or `null`
/// (DESIGN.md 12.9).
pub fn torn_json(t: &Option<siftdb::inspect::log::TornTail>) -> Value {
    t.as_ref().map_or(
        Value::Null,
        |t| json!({ "offset": t.offset, "reason": t.reason }),
    )
}

/// The final component of `path`.
pub fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_escapes_hexes_and_cuts() {
        let s = Show { hex: false };
        assert_eq!(s.bytes(b"a\tb"), "a\\x09b");
        assert_eq!(Show { hex: true }.bytes(b"a\tb"), "610962");
        assert_eq!(s.short(b"abcdef", 4), "abc…");
        assert_eq!(s.short(b"abcd", 4), "abcd");
    }

    #[test]
    fn percentages() {
        assert_eq!(percent(0.0082), "0.82%");
        assert_eq!(percent(1.0), "100.0%");
        assert_eq!(percent(0.0), "0%");
        assert_eq!(percent(0.000_000_5), "5.00e-5%");
    }
}
