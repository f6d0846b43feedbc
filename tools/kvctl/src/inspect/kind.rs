//! What kind of siftdb file a path is, told from its name and then its
//! magic number, so that a command given a file of the wrong kind says so
//! (exit 2, naming the command that reads it) instead of decoding it and
//! reporting "corruption" (exit 3).
//!
//! Used by `sst dump`, `wal dump`, `manifest dump` and `verify FILE`.

use std::path::Path;

use siftdb::inspect::filename::{parse_file_name, FileType};

use crate::error::CliError;

/// The kind of a file, as far as its name and its bytes tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// `NNNNNN.sst`, or any file ending in the table magic number.
    Table,
    /// `NNNNNN.log`, a write-ahead log.
    Wal,
    /// `MANIFEST-NNNNNN`.
    Manifest,
    /// `CURRENT`, the name of the live manifest.
    Current,
    /// `LOCK`, the lock file.
    Lock,
    /// `HOTKEYS`, the read sketch's last window (`Options::hot_keys`).
    HotKeys,
    /// `OPTIONS`, the stored options (text).
    Options,
    /// `NNNNNN.tmp`, a file siftdb is writing (a table or manifest not yet
    /// renamed into place).
    Temp,
    /// None of these: a name siftdb never writes and no table magic. A log
    /// (WAL or manifest) has no magic number, so a renamed copy of one is
    /// `Unknown`.
    Unknown,
}

impl FileKind {
    /// What the kind is, in words: `"a write-ahead log (WAL)"`.
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::Table => "an SSTable",
            FileKind::Wal => "a write-ahead log (WAL)",
            FileKind::Manifest => "a manifest",
            FileKind::Current => "the CURRENT file (it names the live manifest)",
            FileKind::Lock => "the database's LOCK file",
            FileKind::HotKeys => "the read sketch's HOTKEYS file",
            FileKind::Options => "the OPTIONS file (text: the stored options)",
            FileKind::Temp => "a temporary file siftdb was writing",
            FileKind::Unknown => "not a siftdb file",
        }
    }

    /// The command that reads this kind of file, if any.
    pub fn reader(self) -> Option<&'static str> {
        match self {
            FileKind::Table => Some("sst dump"),
            FileKind::Wal => Some("wal dump"),
            FileKind::Manifest => Some("manifest dump"),
            FileKind::Current => Some("manifest dump DB"),
            FileKind::HotKeys => Some("hot DB"),
            FileKind::Options => Some("info DB"),
            FileKind::Lock | FileKind::Temp | FileKind::Unknown => None,
        }
    }
}

/// The kind of the file at `path`: by its name first (as the engine names
/// its files), then by the SSTable magic number in its last 8 bytes. A
/// file that cannot be read counts as [`FileKind::Unknown`] (the command
/// then reports the read error itself).
pub fn file_kind(path: &Path) -> FileKind {
    let by_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_file_name);
    match by_name {
        Some(FileType::Table(_)) => FileKind::Table,
        Some(FileType::Wal(_)) => FileKind::Wal,
        Some(FileType::Manifest(_)) => FileKind::Manifest,
        Some(FileType::Current) => FileKind::Current,
        Some(FileType::Lock) => FileKind::Lock,
        Some(FileType::HotKeys) => FileKind::HotKeys,
        Some(FileType::Options) => FileKind::Options,
        Some(FileType::Temp(_)) => FileKind::Temp,
        None if siftdb::inspect::has_table_magic(path) => FileKind::Table,
        None => FileKind::Unknown,
    }
}

/// Checks that `path` is a file `command` (e.g. `"wal dump"`) can read,
/// whose kind is `wanted`. A file of another known kind is a usage error
/// (exit 2) saying what it is and which command reads it. An
/// [`FileKind::Unknown`] file is accepted when `accept_unknown` (a log has
/// no magic number, so a renamed WAL or manifest copy is still read; its
/// records decide) and refused otherwise.
pub fn expect_kind(
    path: &Path,
    wanted: FileKind,
    command: &str,
    accept_unknown: bool,
) -> Result<(), CliError> {
    let kind = file_kind(path);
    if kind == wanted || (kind == FileKind::Unknown && accept_unknown) {
        return Ok(());
    }
    Err(wrong_kind(path, kind, command))
}

/// The usage error for a file of `kind` given to `command`.
pub fn wrong_kind(path: &Path, kind: FileKind, command: &str) -> CliError {
    let what = match kind {
        FileKind::Unknown => {
            "is not a siftdb file: its name is not NNNNNN.sst, NNNNNN.log or MANIFEST-NNNNNN \
             and it does not end in the SSTable magic number"
                .to_string()
        }
        k => format!("is {}", k.describe()),
    };
    let e = CliError::usage(format!(
        "{}: {what}, not what `kvctl {command}` reads",
        path.display()
    ));
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.display().to_string(),
        _ => ".".into(),
    };
    let hint = match kind.reader() {
        // `verify` takes the database directory for everything else.
        // Only a directory that holds a database is worth naming (found
        // by a new-user trial: `verify /etc/passwd` suggested `/etc`).
        _ if command == "verify" && Path::new(&dir).join("CURRENT").is_file() => {
            format!("`kvctl verify {dir}` checks the whole database it belongs to")
        }
        _ if command == "verify" => {
            "`kvctl verify` takes a database directory, or one of its SSTables, WALs or \
             manifests"
                .to_string()
        }
        Some(reader) => match reader.strip_suffix(" DB") {
            Some(r) => format!("`kvctl {r} {dir}` reads it"),
            None => format!("`kvctl {reader} {}` reads it", path.display()),
        },
        None => return e,
    };
    e.with_hint(hint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_names_and_magic() {
        let dir = tempfile::tempdir().unwrap();
        let w = |name: &str, bytes: &[u8]| {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            p
        };
        assert_eq!(file_kind(&w("000003.log", b"x")), FileKind::Wal);
        assert_eq!(file_kind(&w("000004.sst", b"")), FileKind::Table);
        assert_eq!(file_kind(&w("MANIFEST-000002", b"")), FileKind::Manifest);
        assert_eq!(file_kind(&w("CURRENT", b"MANIFEST-2\n")), FileKind::Current);
        assert_eq!(file_kind(&w("LOCK", b"")), FileKind::Lock);
        assert_eq!(file_kind(&w("000009.tmp", b"")), FileKind::Temp);
        let mut table = vec![0u8; 60];
        table.extend_from_slice(&siftdb::inspect::sstable::format::TABLE_MAGIC.to_le_bytes());
        assert_eq!(file_kind(&w("copy.bin", &table)), FileKind::Table);
        assert_eq!(
            file_kind(&w("notes.txt", b"hello world")),
            FileKind::Unknown
        );
        assert_eq!(file_kind(&dir.path().join("missing")), FileKind::Unknown);
    }

    #[test]
    fn a_wrong_kind_names_the_command_that_reads_it() {
        let e = wrong_kind(Path::new("db/000003.log"), FileKind::Wal, "sst dump");
        assert_eq!(e.code, crate::error::EXIT_USAGE);
        assert_eq!(
            e.to_string(),
            "kvctl: db/000003.log: is a write-ahead log (WAL), not what `kvctl sst dump` \
             reads\nhint: `kvctl wal dump db/000003.log` reads it"
        );
        let e = wrong_kind(Path::new("db/CURRENT"), FileKind::Current, "sst dump");
        assert_eq!(
            e.to_string(),
            "kvctl: db/CURRENT: is the CURRENT file (it names the live manifest), not what \
             `kvctl sst dump` reads\nhint: `kvctl manifest dump db` reads it"
        );
    }
}
