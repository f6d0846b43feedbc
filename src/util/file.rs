//! Opening the database's own files for reading.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// Opens `path` for reading if it is a regular file (a symlink to one
/// counts), as every file siftdb reads must be. Anything else found under
/// a siftdb name is refused before `open(2)`, which on a FIFO would block
/// until some process opened it for writing (an open of a database whose
/// `CURRENT` or WAL was a FIFO hung forever).
///
/// # Errors
/// What `stat` or `open` return (kind `NotFound` for a missing file); kind
/// `InvalidInput` naming the file type (`"not a regular file but a
/// FIFO"`) for anything but a regular file.
pub fn open_regular(path: &Path) -> io::Result<File> {
    check_regular(&std::fs::metadata(path)?)?;
    let file = File::open(path)?;
    // The name may have been replaced between the two calls.
    check_regular(&file.metadata()?)?;
    Ok(file)
}

/// Reads the whole regular file at `path` (see [`open_regular`]).
///
/// # Errors
/// As [`open_regular`], and what reading returns.
pub fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    let mut data = Vec::new();
    io::Read::read_to_end(&mut open_regular(path)?, &mut data)?;
    Ok(data)
}

/// `Ok` if `m` describes a regular file.
///
/// # Errors
/// Kind `InvalidInput` naming the file type otherwise.
pub fn check_regular(m: &std::fs::Metadata) -> io::Result<()> {
    let t = m.file_type();
    if t.is_file() {
        return Ok(());
    }
    let kind = if t.is_fifo() {
        "FIFO"
    } else if t.is_dir() {
        "directory"
    } else if t.is_socket() {
        "socket"
    } else if t.is_block_device() || t.is_char_device() {
        "device"
    } else {
        "special file"
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file but a {kind}"),
    ))
}

/// Replaces `dst` (a file in `dir`) with `bytes` so that a crash leaves the
/// old file or the new one, never a mix: writes the temporary file
/// `dir/NNNNNN.tmp` (`temp_number`), syncs it, renames it over `dst`, then
/// syncs `dir`.
///
/// # Errors
/// [`crate::Error::Io`] if a step fails; the temporary file is removed.
pub fn write_replacing(
    fs: &dyn crate::fs::FileSystem,
    dir: &Path,
    temp_number: u64,
    dst: &Path,
    bytes: &[u8],
) -> crate::Result<()> {
    use crate::error::IoContext;
    let tmp = crate::filename::temp_path(dir, temp_number);
    let written = fs
        .create(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .context(|| format!("write {}", tmp.display()));
    if let Err(e) = written {
        let _ = fs.remove_file(&tmp);
        return Err(e);
    }
    if let Err(e) = fs.rename(&tmp, dst) {
        let _ = fs.remove_file(&tmp);
        return Err(crate::Error::io(
            format!("rename {} to {}", tmp.display(), dst.display()),
            e,
        ));
    }
    crate::log::sync_dir(fs, dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_open_and_others_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"abc").unwrap();
        assert_eq!(read_regular(&file).unwrap(), b"abc");
        let fifo = dir.path().join("p");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let e = open_regular(&fifo).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(e.to_string(), "not a regular file but a FIFO");
        let e = open_regular(dir.path()).unwrap_err();
        assert_eq!(e.to_string(), "not a regular file but a directory");
        let e = open_regular(&dir.path().join("missing")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
