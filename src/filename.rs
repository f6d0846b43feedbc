//! The only place that builds and parses the names of a database's files.
//!
//! | file | name | role |
//! |---|---|---|
//! | write-ahead log | `NNNNNN.log` | one per memtable; replayed on open |
//! | SSTable | `NNNNNN.sst` | immutable sorted table |
//! | manifest | `MANIFEST-NNNNNN` | log of `VersionEdit`s |
//! | current pointer | `CURRENT` | names the live manifest, newline-terminated |
//! | lock | `LOCK` | held with an exclusive `flock` while a `Db` is open |
//! | temporary | `NNNNNN.tmp` | being written; removed on open |
//! | read sketch | `HOTKEYS` | the last window of hot keys, written on close (DESIGN.md 3.4) |
//!
//! `NNNNNN` is a decimal file number, zero-padded to at least 6 digits. File
//! numbers come from one counter per database and are never reused.

use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};
use crate::fs::FileSystem;

/// The kind of a database file, with its number where it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileType {
    /// `NNNNNN.log`
    Wal(u64),
    /// `NNNNNN.sst`
    Table(u64),
    /// `MANIFEST-NNNNNN`
    Manifest(u64),
    /// `CURRENT`
    Current,
    /// `LOCK`
    Lock,
    /// `NNNNNN.tmp`
    Temp(u64),
    /// `HOTKEYS`
    HotKeys,
    /// `OPTIONS`
    Options,
}

impl FileType {
    /// The file number, for the kinds that have one.
    pub fn number(self) -> Option<u64> {
        match self {
            FileType::Wal(n) | FileType::Table(n) | FileType::Manifest(n) | FileType::Temp(n) => {
                Some(n)
            }
            FileType::Current | FileType::Lock | FileType::HotKeys | FileType::Options => None,
        }
    }
}

/// `dir/NNNNNN.log`
pub fn wal_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.log"))
}

/// `dir/NNNNNN.sst`
pub fn table_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.sst"))
}

/// `dir/MANIFEST-NNNNNN`
pub fn manifest_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(manifest_name(number))
}

/// `MANIFEST-NNNNNN`, the name written into `CURRENT`.
pub fn manifest_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

/// `dir/CURRENT`
pub fn current_path(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}

/// `dir/LOCK`
pub fn lock_path(dir: &Path) -> PathBuf {
    dir.join("LOCK")
}

/// `dir/HOTKEYS`: the read sketch's last window ([`crate::sketch::hot_file`]).
pub fn hot_keys_path(dir: &Path) -> PathBuf {
    dir.join("HOTKEYS")
}

/// `dir/OPTIONS`: the options that shape the database's files (DESIGN.md
/// 12.13).
pub fn options_path(dir: &Path) -> PathBuf {
    dir.join("OPTIONS")
}

/// `dir/NNNNNN.tmp`
pub fn temp_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.tmp"))
}

/// Classifies a file name (not a path); `None` for names siftdb never
/// writes.
pub fn parse_file_name(name: &str) -> Option<FileType> {
    fn number(s: &str) -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    }
    match name {
        "CURRENT" => return Some(FileType::Current),
        "LOCK" => return Some(FileType::Lock),
        "HOTKEYS" => return Some(FileType::HotKeys),
        "OPTIONS" => return Some(FileType::Options),
        _ => {}
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return number(n).map(FileType::Manifest);
    }
    let (stem, ext) = name.rsplit_once('.')?;
    let n = number(stem)?;
    match ext {
        "log" => Some(FileType::Wal(n)),
        "sst" => Some(FileType::Table(n)),
        "tmp" => Some(FileType::Temp(n)),
        _ => None,
    }
}

/// The siftdb files in `dir` (listed through `fs`), classified; other
/// names are left out. In no particular order.
///
/// # Errors
/// [`Error::Io`](crate::Error::Io) if `dir` cannot be listed.
pub fn list_dir(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<(FileType, PathBuf)>> {
    let names = fs
        .list_dir(dir)
        .context(|| format!("list {}", dir.display()))?;
    Ok(names
        .into_iter()
        .filter_map(|name| {
            let t = name.to_str().and_then(parse_file_name)?;
            Some((t, dir.join(name)))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let d = Path::new("/db");
        for (p, t) in [
            (wal_path(d, 7), FileType::Wal(7)),
            (table_path(d, 1_234_567), FileType::Table(1_234_567)),
            (manifest_path(d, 3), FileType::Manifest(3)),
            (current_path(d), FileType::Current),
            (lock_path(d), FileType::Lock),
            (temp_path(d, 9), FileType::Temp(9)),
            (hot_keys_path(d), FileType::HotKeys),
            (options_path(d), FileType::Options),
        ] {
            let name = p.file_name().unwrap().to_str().unwrap();
            assert_eq!(parse_file_name(name), Some(t), "{name}");
        }
        assert_eq!(
            wal_path(d, 7).to_str().unwrap(),
            "/db/000007.log",
            "six-digit padding"
        );
        for bad in [
            "x.log",
            "12.txt",
            "MANIFEST-",
            "MANIFEST-1a",
            ".sst",
            "+1.sst",
        ] {
            assert_eq!(parse_file_name(bad), None, "{bad}");
        }
    }
}
