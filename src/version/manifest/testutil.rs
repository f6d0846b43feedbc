//! Helpers shared by the tests of the manifest modules: a snapshot and
//! two later edits to write, and the parts of a corruption error.

use std::path::PathBuf;

use super::ManifestContents;
use super::FORMAT_VERSION;
use crate::error::Error;
use crate::key::{InternalKey, SequenceNumber, ValueType};
use crate::version::edit::{FileMetaData, VersionEdit};

fn file(number: u64, lo: &str, hi: &str) -> FileMetaData {
    FileMetaData {
        number,
        file_size: 4096,
        smallest: InternalKey::new(lo.as_bytes(), SequenceNumber(1), ValueType::Value),
        largest: InternalKey::new(hi.as_bytes(), SequenceNumber(2), ValueType::Value),
        num_entries: 10,
        num_tombstones: 1,
    }
}

pub(super) fn snapshot() -> VersionEdit {
    VersionEdit {
        format_version: Some(FORMAT_VERSION),
        log_number: Some(3),
        next_file_number: Some(5),
        last_sequence: Some(SequenceNumber(100)),
        deleted_files: vec![],
        new_files: vec![(0, file(4, "a", "m"))],
        ..VersionEdit::default()
    }
}

pub(super) fn later_edits() -> Vec<VersionEdit> {
    vec![
        VersionEdit {
            log_number: Some(6),
            next_file_number: Some(8),
            last_sequence: Some(SequenceNumber(250)),
            new_files: vec![(0, file(7, "c", "z"))],
            ..VersionEdit::default()
        },
        VersionEdit {
            next_file_number: Some(10),
            deleted_files: vec![(0, 4), (0, 7)],
            new_files: vec![(1, file(8, "a", "k")), (1, file(9, "l", "z"))],
            ..VersionEdit::default()
        },
    ]
}

pub(super) fn edits(c: &ManifestContents) -> Vec<VersionEdit> {
    c.edits().cloned().collect()
}

pub(super) fn corruption(e: Error) -> (PathBuf, u64, String) {
    match e {
        Error::Corruption {
            file,
            offset,
            detail,
        } => (file, offset, detail),
        other => panic!("expected corruption, got {other:?}"),
    }
}
