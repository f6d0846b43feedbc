//! Record framing shared by the write-ahead log and the manifest.
//!
//! # Format
//!
//! A log file is a sequence of records laid back to back from offset 0, with
//! no file header, no padding and no block structure. Each record is a
//! 12-byte header followed by its payload. All integers are little-endian;
//! the checksums are CRC-32 (IEEE, [`crate::util::crc::crc32`]).
//!
//! ```text
//! record offset
//! +0                +4                +8                    +12
//! +-----------------+-----------------+---------------------+----------------------+
//! | len: u32 LE     | len_crc: u32 LE | payload_crc: u32 LE | payload: len bytes   |
//! +-----------------+-----------------+---------------------+----------------------+
//!   len         = number of payload bytes (0 ..= u32::MAX)
//!   len_crc     = crc32 of the 4 `len` bytes exactly as stored
//!   payload_crc = crc32 of the payload
//! the next record starts at offset + 12 + len
//! ```
//!
//! The length carries its own checksum so that a reader never trusts a
//! damaged length: without it, one flipped bit in `len` would make the
//! reader skip or swallow good records and misreport where the damage is.
//!
//! Worked example (pinned by the `golden_record_bytes` test): the payload
//! `"abc"` is framed as the 15 bytes
//!
//! ```text
//! 03 00 00 00   f2 70 f1 33   c2 41 24 35   61 62 63
//! len = 3       crc32(03 00 00 00)          "abc"
//!                             crc32("abc") = 0x352441c2
//! ```
//!
//! # Writing and durability
//!
//! [`LogWriter::append`] hands header and payload to the kernel in one
//! `write_all` with no user-space buffer (a `write`, or for a write-ahead
//! log on Linux a copy into a shared memory map of the file, which puts the
//! bytes in the page cache just as a `write` does), so once it returns a
//! process crash cannot lose the record; [`LogWriter::sync`] (`fdatasync`) makes it
//! survive a power loss. [`LogWriter::create`] also syncs the parent
//! directory, so a log whose records were synced cannot vanish as a whole.
//! After a failed write or sync the writer refuses further use: the file may
//! end in a partial record, and the page-cache state after a failed
//! `fsync` is unknown.
//!
//! # Reading and torn tails
//!
//! A crash can leave the last record incomplete (a *torn tail*). The reader
//! tells a torn tail from damage in the interior of the log, which is
//! reported as [`Error::Corruption`], by applying these rules at the start
//! of each record, in order:
//!
//! 1. Fewer than 12 bytes left: torn tail (a header cut off by a crash).
//! 2. `len_crc` mismatch: if every byte from here to the end of the file
//!    is zero, the end of the log, with no torn tail (space preallocated
//!    and never written, or zero-filled by the file system after a power
//!    loss). Otherwise a torn tail if `len` is not zero and `len_crc` is:
//!    a checksum not yet written, as a group commit into a preallocated
//!    write-ahead log leaves it when cut short (it writes the first
//!    record's `len` first and its `len_crc` last:
//!    [`crate::fs::mapped_log`]); whatever follows it is not read.
//!    Otherwise corruption at this offset: among them a zeroed header with
//!    data after it (a group never leaves that, as no WAL record is
//!    empty), and a checksum with some bytes zeroed (one flip can do that;
//!    it cannot zero all four).
//! 3. `len` exceeds the bytes left after the header: torn tail (the write
//!    was cut off).
//! 4. `payload_crc` mismatch: torn tail if nothing but zero bytes follows
//!    the record (in particular, if it ends exactly at the end of the
//!    file); otherwise corruption at this offset.
//!
//! Reading stops at a torn tail. [`LogContents::valid_len`] is then the
//! offset of the torn record (the file length if there is none): the log
//! minus its torn tail is exactly its first `valid_len` bytes. A writer must
//! never append after a torn tail, or the records it appends become
//! unreachable on the next read: start a new log, or cut the tail off first
//! with [`LogWriter::open_truncated`].
//!
//! The rules judge the bytes as read. A log that another process is
//! appending to can be read while a record is being copied in, its header
//! before the copy and the bytes after it once copied: that reads as
//! corruption by rule 2, although no state of the file was. Readers of a
//! live database's WALs read again before they report it
//! ([`crate::fs::mapped_log`]); recovery holds the lock, so no writer is
//! live then, and the rules stand alone.

mod reader;
mod writer;

pub use reader::{read_log, LogContents, LogReader, LogRecord, TornTail, TORN_WRITE};
pub use writer::LogWriter;

use std::path::Path;

use crate::error::{Error, IoContext, Result};
use crate::fs::FileSystem;
use crate::util::crc::crc32;

/// Bytes of the header in front of every payload.
pub const HEADER_LEN: usize = 12;

/// Longest payload a record can carry, in bytes (`u32::MAX`).
pub const MAX_PAYLOAD_LEN: u64 = u32::MAX as u64;

/// Checks a payload length against the 32-bit length field.
fn payload_len(len: usize) -> Result<u32> {
    u32::try_from(len).map_err(|_| {
        Error::InvalidArgument(format!(
            "log record payload of {len} bytes exceeds the maximum of {MAX_PAYLOAD_LEN}"
        ))
    })
}

/// The 12-byte header for `payload`.
pub(crate) fn encode_header(payload: &[u8]) -> Result<[u8; HEADER_LEN]> {
    let len = payload_len(payload.len())?.to_le_bytes();
    let mut h = [0u8; HEADER_LEN];
    h[0..4].copy_from_slice(&len);
    h[4..8].copy_from_slice(&crc32(&len).to_le_bytes());
    h[8..12].copy_from_slice(&crc32(payload).to_le_bytes());
    Ok(h)
}

/// `fsync`s the directory `dir` through `fs`, making the creation, removal
/// and renaming of files in it durable.
///
/// # Errors
/// [`Error::Io`] if the directory cannot be opened or synced.
pub fn sync_dir(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    fs.sync_dir(dir)
        .context(|| format!("sync directory {}", dir.display()))
}

/// The directory holding `path` (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Framing helpers the reader's and the writer's tests share.
    use super::*;
    use std::path::PathBuf;

    pub(crate) fn frame(payload: &[u8]) -> Vec<u8> {
        let mut v = encode_header(payload).unwrap().to_vec();
        v.extend_from_slice(payload);
        v
    }

    pub(crate) fn parse(bytes: &[u8]) -> Result<LogContents> {
        LogReader::from_bytes(PathBuf::from("test.log"), bytes.to_vec()).read_all()
    }

    pub(crate) fn payloads(c: &LogContents) -> Vec<&[u8]> {
        c.records.iter().map(|r| r.payload.as_slice()).collect()
    }

    /// Three records, "abc" at 0, "" at 15, "hello" at 27; 44 bytes.
    pub(crate) fn three() -> Vec<u8> {
        [frame(b"abc"), frame(b""), frame(b"hello")].concat()
    }

    pub(crate) fn corruption_offset(e: Error) -> u64 {
        match e {
            Error::Corruption { offset, .. } => offset,
            other => panic!("expected corruption, got {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::frame;

    #[test]
    fn golden_record_bytes() {
        assert_eq!(
            frame(b"abc"),
            [
                0x03, 0x00, 0x00, 0x00, // len
                0xf2, 0x70, 0xf1, 0x33, // crc32(03 00 00 00)
                0xc2, 0x41, 0x24, 0x35, // crc32("abc")
                b'a', b'b', b'c',
            ]
        );
        // Empty payload: crc32("") = 0.
        assert_eq!(frame(b""), [0, 0, 0, 0, 0x1c, 0xdf, 0x44, 0x21, 0, 0, 0, 0]);
    }
}
