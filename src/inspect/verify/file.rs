//! [`verify_file`]: one file checked by its kind (a table, a WAL or a
//! manifest), and [`has_table_magic`], which tells a table by its last
//! bytes.

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::report::{Checker, VerifyReport};
use super::table::{check_table, locate_in_table};
use super::wal::check_wal;
use crate::filename::{self, FileType};
use crate::inspect::{file_name, open_table, read_manifest, read_wal};
use crate::sstable::format::TABLE_MAGIC;
use crate::{Error, Result};

/// Checks one file by its kind: an `NNNNNN.sst` table (also any file ending
/// in the table magic), an `NNNNNN.log` WAL, or a `MANIFEST-NNNNNN`.
///
/// # Errors
/// [`Error::InvalidArgument`] if the kind cannot be told; [`Error::Io`] if
/// the file cannot be read.
pub fn verify_file(
    path: &Path,
    all: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<VerifyReport> {
    let size = fs::metadata(path)
        .map_err(|e| Error::io(format!("stat {}", path.display()), e))?
        .len();
    let mut c = Checker::new(all, progress, size);
    let kind = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(filename::parse_file_name);
    match kind {
        Some(FileType::Wal(_)) => {
            let wal = read_wal(path)?;
            check_wal(&mut c, wal, None)?;
        }
        Some(FileType::Manifest(_)) => match read_manifest(path) {
            Ok(m) => {
                c.report.manifest_edits = m.records.len() as u64;
                if let Err(e) = m.replay_all() {
                    c.corruption(e, "manifest")?;
                }
                if let Some(t) = m.torn_tail {
                    c.report.notes.push(format!(
                        "{}: torn final record at offset {} ({})",
                        file_name(path),
                        t.offset,
                        t.reason
                    ));
                }
            }
            Err(e) => {
                c.corruption(e, "manifest record")?;
            }
        },
        Some(FileType::Table(_)) => verify_table_path(&mut c, path)?,
        _ if has_table_magic(path) => verify_table_path(&mut c, path)?,
        _ => {
            return Err(Error::InvalidArgument(format!(
                "{}: not a database directory, SSTable, WAL or manifest (name it NNNNNN.sst, NNNNNN.log or MANIFEST-NNNNNN)",
                path.display()
            )))
        }
    }
    Ok(c.report)
}

fn verify_table_path(c: &mut Checker<'_>, path: &Path) -> Result<()> {
    (c.progress)(0, c.total_bytes);
    match open_table(path) {
        Ok(table) => {
            check_table(c, &table)?;
        }
        Err(e) => {
            let what = locate_in_table(path, &e);
            c.report.tables += 1;
            c.corruption(e, what)?;
        }
    }
    Ok(())
}

/// True if the file at `path` ends in the SSTable magic number
/// (DESIGN.md 12.7); false if it does not, or cannot be read.
pub fn has_table_magic(path: &Path) -> bool {
    (|| -> std::io::Result<bool> {
        let mut f = crate::util::file::open_regular(path)?;
        let len = f.metadata()?.len();
        if len < 8 {
            return Ok(false);
        }
        f.seek(SeekFrom::Start(len - 8))?;
        let mut b = [0u8; 8];
        f.read_exact(&mut b)?;
        Ok(u64::from_le_bytes(b) == TABLE_MAGIC)
    })()
    .unwrap_or(false)
}
