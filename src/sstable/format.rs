//! The SSTable file format (format versions 1 and 2): [`BlockHandle`],
//! [`Footer`], the block trailer and checksum verification. Version 2
//! differs only in its data blocks, which end in a codec byte (see
//! [`crate::sstable::compression`]); a table written without compression
//! is version 1.
//!
//! All fixed-width integers are little-endian; varints are unsigned LEB128
//! (see [`crate::util::coding`]). Checksums are CRC-32 (IEEE, `crc32fast`).
//!
//! # File layout
//!
//! ```text
//! offset 0
//! +----------------------+---------+
//! | data block 0         | trailer |   entries in internal-key order
//! +----------------------+---------+
//! | ...                  |         |
//! +----------------------+---------+
//! | data block N-1       | trailer |
//! +----------------------+---------+
//! | filter block         | trailer |   omitted when the table has no filter
//! +----------------------+---------+
//! | properties block     | trailer |
//! +----------------------+---------+
//! | index block          | trailer |
//! +----------------------+---------+
//! | footer (64 bytes)              |   at file_size - 64
//! +--------------------------------+
//! ```
//!
//! # Block trailer (4 bytes)
//!
//! Every block is followed by `crc32(block contents)` as a `u32` LE. A
//! [`BlockHandle`] `{ offset, size }` points at the contents: `size` excludes
//! the trailer, so the block occupies `offset .. offset + size + 4`.
//! Inside blocks a handle is two varints (`offset`, then `size`; 2 to 20
//! bytes); in the footer it is two fixed `u64` LE (16 bytes).
//!
//! # Footer (64 bytes)
//!
//! ```text
//! 0        8        16       24       32       40       48     52     56              64
//! +--------+--------+--------+--------+--------+--------+------+------+---------------+
//! | index handle    | filter handle   | props handle    | ver  | crc  | magic         |
//! | off u64| size   | off    | size   | off    | size   | u32  | u32  | u64           |
//! +--------+--------+--------+--------+--------+--------+------+------+---------------+
//! ```
//!
//! * `ver`: the format version, 1 or 2 (data blocks with a codec byte). A
//!   reader refuses a larger version with
//!   [`Error::UnsupportedVersion`]; 0 is corruption.
//! * `crc`: `crc32` of footer bytes `0..52`.
//! * `magic`: [`TABLE_MAGIC`] `= 0x5453_5354_4649_5389`, stored LE as the
//!   bytes `89 53 49 46 54 53 53 54`, i.e. `\x89SIFTSST`. Like the PNG
//!   signature, the first byte has its high bit set (so 7-bit-clean
//!   transfers and text files are caught) and the rest reads as ASCII in a
//!   hex dump.
//! * The filter handle is `{0, 0}` when the table has no filter block.
//!
//! A file shorter than 64 bytes, a wrong magic, a bad footer CRC or a
//! handle reaching past the footer is [`Error::Corruption`].
//!
//! Worked example (the `footer_golden_bytes` test): index `{1000, 200}`,
//! filter `{0, 0}`, properties `{700, 296}`, version 1 encode to
//!
//! ```text
//! e8 03 00 00 00 00 00 00  c8 00 00 00 00 00 00 00   index {1000, 200}
//! 00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00   filter {0, 0}
//! bc 02 00 00 00 00 00 00  28 01 00 00 00 00 00 00   properties {700, 296}
//! 01 00 00 00  80 dd c2 5b                           version 1, crc 0x5bc2dd80
//! 89 53 49 46 54 53 53 54                            magic
//! ```
//!
//! At version 2 the same footer differs only in `02 00 00 00` and crc
//! `6e 72 77 49` (`footer_golden_bytes_at_version_2`).
//!
//! # Data block
//!
//! A sequence of entries, then the restart array:
//!
//! ```text
//! +---------+-----+-----------+------------+-----+--------------+------------------+
//! | entry 0 | ... | entry n-1 | restart[0] | ... | restart[r-1] | num_restarts = r |
//! +---------+-----+-----------+------------+-----+--------------+------------------+
//!                               u32 LE each                      u32 LE
//!
//! entry: varint shared | varint unshared | varint value_len | key[shared..] | value
//! ```
//!
//! Keys are encoded internal keys ([`crate::inspect::key`]) in strictly increasing
//! internal-key order. Each key stores only the bytes after the prefix it
//! shares with the previous key (`shared` bytes are taken from the previous
//! key). Every `restart_interval`-th entry is a *restart point*: it stores
//! `shared = 0` and its offset (from the block start) is listed in the
//! restart array, so a reader binary-searches the restart points and then
//! scans at most `restart_interval` entries. `restart[0] = 0`, the offsets
//! strictly increase, and an empty block is just `num_restarts = 0`.
//!
//! Worked example (the `golden_three_entries` test in `block_builder`),
//! restart interval 2, entries `"apple"@3 put → "x"`, `"apply"@2 put →
//! "yy"`, `"b"@1 delete → ""` (55 bytes):
//!
//! ```text
//! 00 0d 01  61 70 70 6c 65 01 03 00 00 00 00 00 00  78      entry at 0 (restart)
//! 04 09 02  79 01 02 00 00 00 00 00 00  79 79               entry at 17: shares "appl"
//! 00 09 00  62 00 01 00 00 00 00 00 00                      entry at 31 (restart)
//! 00 00 00 00  1f 00 00 00  02 00 00 00                     restarts [0, 31], count 2
//! ```
//!
//! # Index block
//!
//! The data-block format with restart interval 1 (no prefix sharing), one
//! entry per data block in file order: key = the last internal key of that
//! data block, value = its [`BlockHandle`] as two varints. A point lookup
//! binary-searches it for the first block whose last key is ≥ the seek key.
//!
//! # Filter block
//!
//! The bytes produced by the table's [`crate::filter::FilterPolicy`] over
//! the hashes of the table's distinct user keys, stored whole (one filter
//! per table). Its policy name is the `siftdb.filter.policy` property.
//!
//! # Properties block
//!
//! The data-block format whose keys are property names in bytewise sorted
//! order and whose values are varints (counts, sequence numbers) or raw
//! bytes (user keys, the policy name). See
//! [`crate::sstable::properties`] for the list. Readers ignore unknown names
//! and report missing ones as corruption.

use std::path::Path;

use crate::error::{Error, Result};
use crate::sstable::compression::Compression;
use crate::util::coding::{put_u32, put_u64, put_varint, DecodeError, Decoder};
use crate::util::crc::crc32;

/// The table magic number: the bytes `\x89SIFTSST` read as a `u64` LE.
pub const TABLE_MAGIC: u64 = 0x5453_5354_4649_5389;

/// The newest format version this build reads and writes: 2, whose data
/// blocks carry a codec byte ([`crate::sstable::compression`]). A table
/// written without compression is version 1 ([`format_version_for`]).
pub const FORMAT_VERSION: u32 = 2;

/// The format version of a table whose data blocks are written with
/// `codec`: 1 (no codec bytes, readable by every build) for
/// [`Compression::None`], else 2.
pub fn format_version_for(codec: Compression) -> u32 {
    if codec == Compression::None {
        1
    } else {
        crate::sstable::compression::COMPRESSED_FORMAT_VERSION
    }
}

/// Bytes of the footer at the end of every table.
pub const FOOTER_LEN: usize = 64;

/// Bytes of the CRC-32 trailer after every block.
pub const BLOCK_TRAILER_LEN: usize = 4;

/// Most bytes a varint-encoded [`BlockHandle`] takes (two 10-byte varints).
pub const MAX_ENCODED_HANDLE_LEN: usize = 20;

/// Bytes of the footer covered by its CRC.
const FOOTER_CRC_COVERED: usize = 52;

/// Where a block's contents lie in a table file, in bytes. `size` excludes
/// the 4-byte trailer that follows the contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct BlockHandle {
    /// Offset of the first byte of the block contents.
    pub offset: u64,
    /// Length of the contents, trailer excluded.
    pub size: u64,
}

impl BlockHandle {
    /// The handle `{offset, size}`.
    pub fn new(offset: u64, size: u64) -> Self {
        BlockHandle { offset, size }
    }

    /// True for `{0, 0}`, which marks an absent block in the footer.
    pub fn is_null(&self) -> bool {
        self.offset == 0 && self.size == 0
    }

    /// Appends the handle as two varints (offset, size).
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint(dst, self.offset);
        put_varint(dst, self.size);
    }

    /// Decodes a varint-encoded handle from `d`.
    ///
    /// # Errors
    /// [`DecodeError`] if either varint is truncated or overlong.
    pub fn decode_from(d: &mut Decoder<'_>) -> Result<Self, DecodeError> {
        let offset = d.varint()?;
        let size = d.varint()?;
        Ok(BlockHandle { offset, size })
    }

    /// The offset one past the block's trailer, or `None` on overflow.
    pub fn end_with_trailer(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }
}

impl std::fmt::Display for BlockHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{{offset {}, size {}}}", self.offset, self.size)
    }
}

/// The fixed 64-byte tail of a table: where the index, filter and
/// properties blocks are, and the format version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The index block.
    pub index: BlockHandle,
    /// The filter block, `{0, 0}` if the table has none.
    pub filter: BlockHandle,
    /// The properties block.
    pub properties: BlockHandle,
    /// The format version, [`FORMAT_VERSION`] for tables this build writes.
    pub format_version: u32,
}

impl Footer {
    /// Encodes the footer as described in the module docs.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut v = Vec::with_capacity(FOOTER_LEN);
        for h in [self.index, self.filter, self.properties] {
            put_u64(&mut v, h.offset);
            put_u64(&mut v, h.size);
        }
        put_u32(&mut v, self.format_version);
        let crc = crc32(&v);
        put_u32(&mut v, crc);
        put_u64(&mut v, TABLE_MAGIC);
        let mut out = [0u8; FOOTER_LEN];
        out.copy_from_slice(&v);
        out
    }

    /// Decodes the footer from the last 64 bytes of `file_bytes` (the whole
    /// table), checking length, magic, CRC and version, in that order.
    /// Handles are not checked against the file here; see
    /// [`check_block_handle`].
    ///
    /// # Errors
    /// [`Error::Corruption`] (naming `path`) if the file is shorter than 64
    /// bytes, the magic or CRC is wrong, or the version is 0;
    /// [`Error::UnsupportedVersion`] if the version is newer than
    /// [`FORMAT_VERSION`].
    pub fn decode(file_bytes: &[u8], path: &Path) -> Result<Footer> {
        let Some(start) = file_bytes.len().checked_sub(FOOTER_LEN) else {
            return Err(Error::corruption(
                path,
                0,
                format!(
                    "file is {} bytes, shorter than the {FOOTER_LEN}-byte table footer",
                    file_bytes.len()
                ),
            ));
        };
        let footer = &file_bytes[start..];
        let at = |pos: usize| start as u64 + pos as u64;
        let bad = |pos: usize, e: DecodeError| Error::corruption(path, at(pos), e.to_string());
        let mut d = Decoder::new(footer);
        let mut handles = [BlockHandle::default(); 3];
        for h in &mut handles {
            let offset = d.u64().map_err(|e| bad(e.offset, e))?;
            let size = d.u64().map_err(|e| bad(e.offset, e))?;
            *h = BlockHandle { offset, size };
        }
        let format_version = d.u32().map_err(|e| bad(e.offset, e))?;
        let stored_crc = d.u32().map_err(|e| bad(e.offset, e))?;
        let magic = d.u64().map_err(|e| bad(e.offset, e))?;
        if magic != TABLE_MAGIC {
            return Err(Error::corruption(
                path,
                at(56),
                format!("bad table magic {magic:#018x}, expected {TABLE_MAGIC:#018x}"),
            ));
        }
        let actual_crc = crc32(&footer[..FOOTER_CRC_COVERED]);
        if actual_crc != stored_crc {
            return Err(Error::corruption(
                path,
                at(0),
                format!("footer checksum mismatch: stored {stored_crc:#010x}, computed {actual_crc:#010x}"),
            ));
        }
        if format_version == 0 {
            return Err(Error::corruption(path, at(48), "format version 0"));
        }
        if format_version > FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                file: path.to_path_buf(),
                found: format_version,
                supported: FORMAT_VERSION,
            });
        }
        let [index, filter, properties] = handles;
        Ok(Footer {
            index,
            filter,
            properties,
            format_version,
        })
    }
}

/// The 4-byte trailer written after `contents`: its CRC-32, LE.
pub fn block_trailer(contents: &[u8]) -> [u8; BLOCK_TRAILER_LEN] {
    crc32(contents).to_le_bytes()
}

/// Checks that the block `handle` (with its trailer) lies within the first
/// `limit` bytes of the file.
///
/// # Errors
/// [`Error::Corruption`] at `handle.offset` naming `what` otherwise.
pub fn check_block_handle(handle: BlockHandle, limit: u64, path: &Path, what: &str) -> Result<()> {
    match handle.end_with_trailer() {
        Some(end) if end <= limit => Ok(()),
        _ => Err(Error::corruption(
            path,
            handle.offset,
            format!("{what} block {handle} extends past byte {limit}"),
        )),
    }
}

/// Returns the contents of the block at `handle` in `file_bytes` after
/// checking that it and its trailer lie within the first `limit` bytes and
/// that its CRC matches.
///
/// # Errors
/// [`Error::Corruption`] at `handle.offset` if the block is out of bounds or
/// its checksum does not match.
pub fn read_block_contents<'a>(
    file_bytes: &'a [u8],
    handle: BlockHandle,
    limit: u64,
    path: &Path,
    what: &str,
) -> Result<&'a [u8]> {
    let limit = limit.min(file_bytes.len() as u64);
    check_block_handle(handle, limit, path, what)?;
    // Both fit in usize: they are bounded by `limit <= file_bytes.len()`.
    let start = handle.offset as usize;
    let end = start + handle.size as usize;
    verify_block(
        &file_bytes[start..end + BLOCK_TRAILER_LEN],
        handle,
        path,
        what,
    )
}

/// Checks the CRC of a block read whole with its trailer (`bytes` is
/// `handle.size + 4` bytes long) and returns its contents.
///
/// # Errors
/// [`Error::Corruption`] at `handle.offset` if `bytes` has the wrong
/// length or the checksum does not match.
pub fn verify_block<'a>(
    bytes: &'a [u8],
    handle: BlockHandle,
    path: &Path,
    what: &str,
) -> Result<&'a [u8]> {
    let size = handle.size as usize;
    if bytes.len() != size + BLOCK_TRAILER_LEN {
        return Err(Error::corruption(
            path,
            handle.offset,
            format!(
                "{what} block {handle}: read {} bytes with its trailer",
                bytes.len()
            ),
        ));
    }
    let (contents, trailer) = bytes.split_at(size);
    let mut t = [0u8; BLOCK_TRAILER_LEN];
    t.copy_from_slice(trailer);
    let stored = u32::from_le_bytes(t);
    let actual = crc32(contents);
    if stored != actual {
        return Err(Error::corruption(
            path,
            handle.offset,
            format!("{what} block {handle} checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"),
        ));
    }
    Ok(contents)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("000007.sst")
    }

    fn example() -> Footer {
        Footer {
            index: BlockHandle::new(1000, 200),
            filter: BlockHandle::default(),
            properties: BlockHandle::new(700, 296),
            format_version: 1,
        }
    }

    #[test]
    fn magic_spells_sift_sst() {
        assert_eq!(&TABLE_MAGIC.to_le_bytes(), b"\x89SIFTSST");
    }

    #[test]
    fn footer_golden_bytes() {
        let enc = example().encode();
        #[rustfmt::skip]
        let want: [u8; 64] = [
            0xe8, 0x03, 0, 0, 0, 0, 0, 0, 0xc8, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0xbc, 0x02, 0, 0, 0, 0, 0, 0, 0x28, 0x01, 0, 0, 0, 0, 0, 0,
            0x01, 0, 0, 0, 0x80, 0xdd, 0xc2, 0x5b,
            0x89, 0x53, 0x49, 0x46, 0x54, 0x53, 0x53, 0x54,
        ];
        assert_eq!(enc, want);
        assert_eq!(crc32(&enc[..52]), 0x5bc2_dd80);
        assert_eq!(Footer::decode(&enc, p()).unwrap(), example());
    }

    /// The example at version 2 (a table with compressed data blocks):
    /// only the version and the CRC change.
    #[test]
    fn footer_golden_bytes_at_version_2() {
        let f = Footer {
            format_version: 2,
            ..example()
        };
        let enc = f.encode();
        assert_eq!(enc[..48], example().encode()[..48]);
        assert_eq!(enc[48..52], [0x02, 0, 0, 0]);
        assert_eq!(
            u32::from_le_bytes(enc[52..56].try_into().unwrap()),
            crc32(&enc[..52])
        );
        assert_eq!(enc[52..56], [0x6e, 0x72, 0x77, 0x49]);
        assert_eq!(enc[56..], TABLE_MAGIC.to_le_bytes());
        assert_eq!(Footer::decode(&enc, p()).unwrap(), f);
    }

    #[test]
    fn footer_decodes_from_the_file_tail() {
        let mut file = vec![0xaa; 10];
        file.extend_from_slice(&example().encode());
        assert_eq!(Footer::decode(&file, p()).unwrap(), example());
    }

    #[test]
    fn footer_errors() {
        let good = example().encode();
        // Too short.
        let e = Footer::decode(&good[1..], p()).unwrap_err();
        assert!(matches!(e, Error::Corruption { offset: 0, .. }), "{e}");
        assert!(Footer::decode(&[], p()).unwrap_err().is_corruption());
        // Bad magic.
        let mut b = good;
        b[63] ^= 1;
        let e = Footer::decode(&b, p()).unwrap_err();
        assert!(matches!(e, Error::Corruption { offset: 56, .. }), "{e}");
        // Bad crc: flip a handle byte.
        let mut b = good;
        b[3] ^= 0x40;
        let e = Footer::decode(&b, p()).unwrap_err();
        assert!(e.to_string().contains("footer checksum mismatch"), "{e}");
        // Newer version with a valid crc.
        let mut f = example();
        f.format_version = 3;
        let e = Footer::decode(&f.encode(), p()).unwrap_err();
        assert!(
            matches!(
                e,
                Error::UnsupportedVersion {
                    found: 3,
                    supported: 2,
                    ..
                }
            ),
            "{e}"
        );
        // Version 2 reads.
        f.format_version = 2;
        assert_eq!(Footer::decode(&f.encode(), p()).unwrap(), f);
        f.format_version = 0;
        assert!(Footer::decode(&f.encode(), p())
            .unwrap_err()
            .is_corruption());
    }

    #[test]
    fn handle_varint_round_trip_and_golden() {
        let mut v = Vec::new();
        BlockHandle::new(300, 5).encode_to(&mut v);
        assert_eq!(v, [0xac, 0x02, 0x05]);
        let mut d = Decoder::new(&v);
        assert_eq!(
            BlockHandle::decode_from(&mut d).unwrap(),
            BlockHandle::new(300, 5)
        );
        assert!(d.is_empty());
        let mut v = Vec::new();
        BlockHandle::new(u64::MAX, u64::MAX).encode_to(&mut v);
        assert_eq!(v.len(), MAX_ENCODED_HANDLE_LEN);
        assert!(BlockHandle::decode_from(&mut Decoder::new(&v[..19])).is_err());
    }

    #[test]
    fn block_reading_checks_bounds_and_crc() {
        let mut file = b"hello".to_vec();
        file.extend_from_slice(&block_trailer(b"hello"));
        assert_eq!(block_trailer(b"123456789"), 0xcbf4_3926u32.to_le_bytes());
        let h = BlockHandle::new(0, 5);
        assert_eq!(
            read_block_contents(&file, h, 9, p(), "data").unwrap(),
            b"hello"
        );
        // Trailer past the limit.
        let e = read_block_contents(&file, h, 8, p(), "data").unwrap_err();
        assert!(e.is_corruption());
        // Limit larger than the slice is clamped.
        assert!(read_block_contents(&file, BlockHandle::new(1, 5), 100, p(), "data").is_err());
        // Overflowing handle.
        assert!(read_block_contents(&file, BlockHandle::new(u64::MAX, 5), 9, p(), "data").is_err());
        // Bad crc.
        file[1] ^= 1;
        let e = read_block_contents(&file, h, 9, p(), "data").unwrap_err();
        assert!(matches!(e, Error::Corruption { offset: 0, .. }));
        assert!(e.to_string().contains("checksum mismatch"));
    }
}
