//! What an open makes of the path it is given: a directory, nothing, or
//! something else; and whether a directory without `CURRENT` may become a
//! new database, or holds one whose `CURRENT` is gone.

use std::path::Path;

use crate::error::IoContext;
use crate::filename::{self, FileType};
use crate::{Error, Result};

/// Whether `dir` is a directory: `Ok(true)` if it is, `Ok(false)` if it
/// does not exist. The one place every opener (`Db::open_with`,
/// [`no_database`], salvage) turns a `stat` of the database path into an
/// error.
///
/// # Errors
/// [`Error::NotADatabase`] if `dir` is not a directory, or lies below a
/// regular file (`ENOTDIR`); [`Error::Io`] if `stat` fails otherwise.
pub(crate) fn is_directory(dir: &Path) -> Result<bool> {
    let not_db = |detail: &str| Error::NotADatabase {
        path: dir.to_path_buf(),
        detail: detail.into(),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(true),
        Ok(_) => Err(not_db("exists and is not a directory")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            Err(not_db("a component of the path is a file, not a directory"))
        }
        Err(e) => Err(Error::io(format!("stat {}", dir.display()), e)),
    }
}

/// Why there is no database to read at `dir` (which has no `CURRENT`), for
/// readers that never create one (`Db::open_read_only`, `inspect`):
/// [`Error::NotADatabase`] saying the path does not exist, is not a
/// directory (or lies below a file), or holds no database;
/// [`Error::Corruption`] if it holds SSTables or WAL data without
/// `CURRENT`; [`Error::Io`] if it cannot be listed.
pub(crate) fn no_database(dir: &Path) -> Error {
    let not_db = |detail: &str| Error::NotADatabase {
        path: dir.to_path_buf(),
        detail: detail.into(),
    };
    match is_directory(dir) {
        Err(e) => e,
        Ok(false) => not_db("does not exist"),
        Ok(true) => match check_fresh_directory(dir) {
            Err(e) => e,
            Ok(()) => not_db("holds no database (no CURRENT file)"),
        },
    }
}

/// A directory without `CURRENT` may become a new database only if it holds
/// nothing but what an interrupted creation leaves (`LOCK`, temporary
/// files, a manifest never made current, empty WALs).
pub(crate) fn check_fresh_directory(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).context(|| format!("list {}", dir.display()))? {
        let entry = entry.context(|| format!("list {}", dir.display()))?;
        let name = entry.file_name();
        let kind = name.to_str().and_then(filename::parse_file_name);
        let empty = entry.metadata().map(|m| m.len() == 0).unwrap_or(false);
        match kind {
            Some(
                FileType::Lock
                | FileType::Temp(_)
                | FileType::Manifest(_)
                | FileType::HotKeys
                | FileType::Options,
            ) => {}
            // Listed, yet it did not open: a symbolic link to nothing.
            Some(FileType::Current) => {
                return Err(Error::corruption(
                    filename::current_path(dir),
                    0,
                    "CURRENT cannot be read: it is a symbolic link to a missing file",
                ))
            }
            Some(FileType::Wal(_)) if empty => {}
            Some(FileType::Table(_) | FileType::Wal(_)) => {
                return Err(Error::corruption(
                    filename::current_path(dir),
                    0,
                    "CURRENT is missing but the directory holds SSTables or WAL data",
                ))
            }
            _ => {
                return Err(Error::NotADatabase {
                    path: dir.to_path_buf(),
                    detail: format!(
                        "directory is not empty and holds no siftdb database (found {:?})",
                        name
                    ),
                })
            }
        }
    }
    Ok(())
}
