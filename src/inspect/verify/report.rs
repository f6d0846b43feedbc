//! What a verification finds and how it collects it: each [`Problem`],
//! the [`VerifyReport`] that holds them with the counts of what was
//! checked, the `Checker` that records them and says when to stop, and
//! how a problem's detail shows an internal key.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::escape::escape_bytes;
use crate::key::ParsedInternalKey;
use crate::{Error, Result};

/// One problem [`verify_db`](super::verify_db) or
/// [`verify_file`](super::verify_file) found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The damaged file (for manifest-level problems, the manifest).
    pub file: PathBuf,
    /// Which part: `"data block 3"`, `"index block"`, `"filter block"`,
    /// `"properties block"`, `"footer"`, `"manifest record"`, ...
    pub what: String,
    /// Byte offset of the bad block, record or field, when known.
    pub offset: Option<u64>,
    /// What is wrong.
    pub detail: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.what)?;
        if let Some(o) = self.offset {
            write!(f, " at offset {o}")?;
        }
        write!(f, ": {}", self.detail)
    }
}

/// What a verification checked and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Problems, in the order found. Empty means the files are sound.
    pub problems: Vec<Problem>,
    /// Observations that are not damage (a torn tail, an unknown filter
    /// policy, files the manifest does not reference).
    pub notes: Vec<String>,
    /// Manifest edits replayed.
    pub manifest_edits: u64,
    /// Tables checked.
    pub tables: u64,
    /// Bytes of tables checked.
    pub table_bytes: u64,
    /// Data blocks read.
    pub data_blocks: u64,
    /// Entries decoded.
    pub entries: u64,
    /// Keys probed in filters.
    pub filter_probes: u64,
    /// WALs read.
    pub wals: u64,
    /// WAL records decoded.
    pub wal_records: u64,
}

impl VerifyReport {
    /// True when nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Collects problems; stops the checks after the first unless `all`.
pub(super) struct Checker<'p> {
    pub(super) report: VerifyReport,
    all: bool,
    pub(super) progress: &'p mut dyn FnMut(u64, u64),
    done_bytes: u64,
    pub(super) total_bytes: u64,
}

impl<'p> Checker<'p> {
    /// A checker with nothing found yet, that reports progress against
    /// `total_bytes`.
    pub(super) fn new(all: bool, progress: &'p mut dyn FnMut(u64, u64), total_bytes: u64) -> Self {
        Checker {
            report: VerifyReport::default(),
            all,
            progress,
            done_bytes: 0,
            total_bytes,
        }
    }

    /// Records a problem; true if checking must stop.
    pub(super) fn problem(
        &mut self,
        file: &Path,
        what: impl Into<String>,
        offset: Option<u64>,
        detail: impl Into<String>,
    ) -> bool {
        self.report.problems.push(Problem {
            file: file.to_path_buf(),
            what: what.into(),
            offset,
            detail: detail.into(),
        });
        self.stop()
    }

    /// Records a [`Error::Corruption`] as a problem in `what`; returns any
    /// other error.
    pub(super) fn corruption(&mut self, e: Error, what: impl Into<String>) -> Result<bool> {
        match e {
            Error::Corruption {
                file,
                offset,
                detail,
            } => Ok(self.problem(&file, what, Some(offset), detail)),
            e => Err(e),
        }
    }

    pub(super) fn stop(&self) -> bool {
        !self.all && !self.report.problems.is_empty()
    }

    pub(super) fn advance(&mut self, bytes: u64) {
        self.done_bytes += bytes;
        (self.progress)(self.done_bytes, self.total_bytes);
    }
}

/// `"key"@seq type` for an encoded internal key.
pub(super) fn show_internal(key: &[u8]) -> String {
    match ParsedInternalKey::parse(key) {
        Some(p) => format!(
            "\"{}\"@{} {}",
            escape_bytes(p.user_key),
            p.seq,
            p.value_type.name()
        ),
        None => format!("\"{}\" (malformed)", escape_bytes(key)),
    }
}
