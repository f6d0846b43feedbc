//! Per-block compression of data blocks: the codecs ([`Compression`]),
//! the per-level policy ([`CompressionPolicy`], `Options::compression`),
//! and the codec byte of a format-2 data block (DESIGN.md 12.5.1).
//!
//! # Stored data block, format 2
//!
//! A table whose data blocks may be compressed has format version 2. Each
//! of its data blocks is stored as
//!
//! ```text
//! +-------------------------------+-------+--------------------------+
//! | payload                       | codec | crc32(payload ‖ codec)   |
//! +-------------------------------+-------+--------------------------+
//!   handle.size − 1 bytes           u8      u32 LE (the usual trailer)
//!
//! codec 0 (none): payload = the block (entries + restart array) as is
//! codec 1 (lz4):  payload = varint raw_len | LZ4 block-format bytes,
//!                 which decompress to exactly raw_len bytes: the block
//! ```
//!
//! The block's handle covers the payload and the codec byte, so the
//! 4-byte CRC trailer covers the codec byte too and every bounds and
//! checksum rule of format 1 is unchanged. Codec 2 is reserved for zstd.
//! Format-1 data blocks have no codec byte: their contents are the block.
//! Filter, prefix filter, key sketch, properties and index blocks are
//! never compressed and carry no codec byte in either version.
//!
//! A writer stores a block compressed only when that saves at least an
//! eighth of its size (LevelDB's and RocksDB's rule), so a table written
//! with LZ4 mixes codecs 0 and 1. A table written with no compression is
//! format 1, byte for byte what earlier builds wrote.
//!
//! Worked example (the `golden_bytes_of_stored_blocks` test): the
//! 12-byte block `00 00 00 00 01 00 00 00 00 00 00 00` stored with
//! codec 0 is those 12 bytes, then `00`, then the trailer
//! `crc32(…00) = c1 52 0f 18`.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::sstable::format::BlockHandle;
use crate::util::coding::{put_varint, Decoder};

/// The table format version whose data blocks carry a codec byte.
pub const COMPRESSED_FORMAT_VERSION: u32 = 2;

/// Largest uncompressed size a compressed block may claim: a block is cut
/// near `block_size`, which [`crate::Options::validate`] caps at 64 MiB,
/// plus its last entry; a claim past this is corruption, checked before
/// anything is allocated.
const MAX_RAW_LEN: u64 = 1 << 32;

/// How a data block's bytes are stored: its codec. The discriminants are
/// the codec byte on disk and never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Stored as is (codec byte 0).
    #[default]
    None = 0,
    /// LZ4 block format (codec byte 1), by the `lz4_flex` crate: fast to
    /// decode (several GB/s), about 2x on text-like values.
    Lz4 = 1,
}

impl Compression {
    /// Every codec this build knows, in codec-byte order.
    pub const ALL: [Compression; 2] = [Compression::None, Compression::Lz4];

    /// The codec's name in options, `OPTIONS` and kvctl: `none`, `lz4`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
        }
    }

    /// The codec byte stored after a format-2 data block's payload.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The codec of codec byte `code`, `None` if this build does not know
    /// it (2 is zstd, reserved).
    pub fn from_code(code: u8) -> Option<Compression> {
        Compression::ALL.into_iter().find(|c| c.code() == code)
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Compression {
    type Err = String;

    /// Parses a codec name: `none` or `lz4`.
    fn from_str(s: &str) -> std::result::Result<Compression, String> {
        Compression::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| format!("unknown compression {s:?} (expected none or lz4)"))
    }
}

/// The codec of each level's new tables, level 0 first; the last entry
/// serves every deeper level, as fjall's compression policy does. Flushes
/// write level 0's codec and a compaction its output level's; tables
/// already written keep theirs (a table holds blocks of any codec side by
/// side).
///
/// Kept normalized, so that equal policies compare and print equal:
/// trailing repeats are dropped and a policy of `none` alone is empty.
/// Prints and parses as the comma-separated codec names (`none,none,lz4`:
/// levels 0 and 1 uncompressed, LZ4 below), `none` when empty.
///
/// ```
/// use siftdb::{Compression, CompressionPolicy};
///
/// let p: CompressionPolicy = "none,none,lz4".parse().unwrap();
/// assert_eq!(p.for_level(1), Compression::None);
/// assert_eq!(p.for_level(5), Compression::Lz4);
/// assert_eq!(p, CompressionPolicy::new([Compression::None, Compression::None, Compression::Lz4, Compression::Lz4]));
/// assert_eq!(CompressionPolicy::default().to_string(), "none");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash)]
pub struct CompressionPolicy(Vec<Compression>);

impl CompressionPolicy {
    /// The policy giving level `i` the `i`-th codec of `levels` (the last
    /// serving deeper levels; none at all if `levels` is empty).
    pub fn new(levels: impl IntoIterator<Item = Compression>) -> CompressionPolicy {
        let mut v: Vec<Compression> = levels.into_iter().collect();
        while v.len() > 1 && v[v.len() - 1] == v[v.len() - 2] {
            v.pop();
        }
        if v == [Compression::None] {
            v.clear();
        }
        CompressionPolicy(v)
    }

    /// The same codec on every level.
    pub fn all(codec: Compression) -> CompressionPolicy {
        CompressionPolicy::new([codec])
    }

    /// The codec of tables written to `level`.
    pub fn for_level(&self, level: usize) -> Compression {
        self.0
            .get(level)
            .or(self.0.last())
            .copied()
            .unwrap_or_default()
    }

    /// The normalized per-level codecs (empty: none everywhere).
    pub fn levels(&self) -> &[Compression] {
        &self.0
    }
}

impl fmt::Display for CompressionPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        for (i, c) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(c.name())?;
        }
        Ok(())
    }
}

impl FromStr for CompressionPolicy {
    type Err = String;

    /// Parses comma-separated codec names, level 0 first.
    fn from_str(s: &str) -> std::result::Result<CompressionPolicy, String> {
        let levels = s
            .split(',')
            .map(|c| c.trim().parse())
            .collect::<std::result::Result<Vec<Compression>, String>>()?;
        Ok(CompressionPolicy::new(levels))
    }
}

/// A data block's contents ready to decode: borrowed from the table (an
/// uncompressed block, read in place) or decompressed into a buffer of
/// its own (shareable, as the block cache holds it).
#[derive(Debug, Clone)]
pub enum BlockContents<'a> {
    /// Uncompressed: the bytes in the table's map or read buffer.
    Borrowed(&'a [u8]),
    /// Decompressed.
    Owned(Arc<[u8]>),
}

impl BlockContents<'_> {
    /// The decompressed buffer, `None` for a borrowed block.
    pub fn owned(&self) -> Option<&Arc<[u8]>> {
        match self {
            BlockContents::Borrowed(_) => None,
            BlockContents::Owned(a) => Some(a),
        }
    }

    /// The decompressed buffer, `None` for a borrowed block.
    pub fn into_owned(self) -> Option<Arc<[u8]>> {
        match self {
            BlockContents::Borrowed(_) => None,
            BlockContents::Owned(a) => Some(a),
        }
    }

    /// The contents as a buffer of their own (copying a borrowed block).
    pub fn into_shared(self) -> Arc<[u8]> {
        match self {
            BlockContents::Borrowed(b) => Arc::from(b),
            BlockContents::Owned(a) => a,
        }
    }
}

impl std::ops::Deref for BlockContents<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            BlockContents::Borrowed(b) => b,
            BlockContents::Owned(a) => a,
        }
    }
}

/// Appends the stored form of data block `raw` in a format-2 table to
/// `out` (payload then codec byte; the caller adds the CRC trailer) and
/// returns the codec it was stored with: `codec`, or
/// [`Compression::None`] if compressing saves less than an eighth of
/// `raw`.
pub fn encode_data_block(raw: &[u8], codec: Compression, out: &mut Vec<u8>) -> Compression {
    let start = out.len();
    if codec == Compression::Lz4 {
        put_varint(out, raw.len() as u64);
        let header = out.len();
        out.resize(
            header + lz4_flex::block::get_maximum_output_size(raw.len()),
            0,
        );
        match lz4_flex::block::compress_into(raw, &mut out[header..]) {
            Ok(n) if (header - start + n) < raw.len() - raw.len() / 8 => {
                out.truncate(header + n);
                out.push(Compression::Lz4.code());
                return Compression::Lz4;
            }
            _ => out.truncate(start),
        }
    }
    out.extend_from_slice(raw);
    out.push(Compression::None.code());
    Compression::None
}

/// The codec byte of stored data block `stored` (contents with their
/// codec byte, CRC already checked) of a table in `format_version`:
/// `Ok(None)` for format 1 (no codec byte).
///
/// # Errors
/// [`Error::Corruption`] at `handle.offset` for an empty format-2 block
/// or a codec byte this build does not know.
pub fn stored_codec(
    stored: &[u8],
    format_version: u32,
    handle: BlockHandle,
    path: &Path,
) -> Result<Option<Compression>> {
    if format_version < COMPRESSED_FORMAT_VERSION {
        return Ok(None);
    }
    let Some(&code) = stored.last() else {
        return Err(Error::corruption(
            path,
            handle.offset,
            format!("data block {handle} has no codec byte"),
        ));
    };
    match Compression::from_code(code) {
        Some(c) => Ok(Some(c)),
        None => Err(Error::corruption(
            path,
            handle.offset,
            format!(
                "data block {handle} has codec byte {code}{}, unknown to this build \
                 (it reads 0 = none and 1 = lz4)",
                if code == 2 { " (zstd)" } else { "" }
            ),
        )),
    }
}

/// The contents of stored data block `stored` (its bytes at `handle`,
/// CRC already checked) of a table in `format_version`: the bytes
/// themselves in format 1, the payload of an uncompressed format-2 block,
/// or a compressed one decompressed.
///
/// # Errors
/// [`Error::Corruption`] at `handle.offset` for an unknown codec byte, or
/// a compressed payload whose size header is malformed or implausible or
/// that does not decompress to exactly that size.
pub fn decode_data_block<'a>(
    stored: &'a [u8],
    format_version: u32,
    handle: BlockHandle,
    path: &Path,
) -> Result<BlockContents<'a>> {
    let Some(codec) = stored_codec(stored, format_version, handle, path)? else {
        return Ok(BlockContents::Borrowed(stored));
    };
    let payload = &stored[..stored.len() - 1];
    match codec {
        Compression::None => Ok(BlockContents::Borrowed(payload)),
        Compression::Lz4 => {
            let corrupt = |detail: String| {
                Error::corruption(
                    path,
                    handle.offset,
                    format!("lz4 data block {handle}: {detail}"),
                )
            };
            let mut d = Decoder::new(payload);
            let raw_len = d
                .varint()
                .map_err(|e| corrupt(format!("size header: {e}")))?;
            let body = &payload[payload.len() - d.remaining()..];
            // LZ4 expands at most about 255 times (a match length byte of
            // 255 per input byte); a larger claim cannot be genuine.
            if raw_len > MAX_RAW_LEN || raw_len > (body.len() as u64 + 1) * 256 {
                return Err(corrupt(format!(
                    "claims {raw_len} bytes from {} compressed",
                    body.len()
                )));
            }
            let raw_len = raw_len as usize;
            let mut buf = vec![0u8; raw_len];
            match lz4_flex::block::decompress_into(body, &mut buf) {
                Ok(n) if n == raw_len => Ok(BlockContents::Owned(Arc::from(buf))),
                Ok(n) => Err(corrupt(format!("decompressed to {n} bytes, not {raw_len}"))),
                Err(e) => Err(corrupt(format!("does not decompress: {e}"))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sstable::format::block_trailer;

    fn p() -> &'static Path {
        Path::new("000009.sst")
    }

    #[test]
    fn golden_bytes_of_stored_blocks() {
        // The empty-ish block of one restart point: restart[0] = 0, count 1.
        let raw = [0, 0, 0, 0, 1, 0, 0, 0];
        let mut out = Vec::new();
        assert_eq!(
            encode_data_block(&raw, Compression::Lz4, &mut out),
            Compression::None
        );
        assert_eq!(out, [0, 0, 0, 0, 1, 0, 0, 0, 0x00]);
        // 256 bytes of 'a' then a restart array compress to a short LZ4
        // payload: varint 264 (`88 02`), then the LZ4 sequences, codec 1.
        let mut raw = vec![b'a'; 256];
        raw.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
        let mut out = Vec::new();
        assert_eq!(
            encode_data_block(&raw, Compression::Lz4, &mut out),
            Compression::Lz4
        );
        assert_eq!(&out[..2], [0x88, 0x02]);
        assert_eq!(*out.last().unwrap(), 1);
        assert!(out.len() < 40, "{}", out.len());
        let h = BlockHandle::new(0, out.len() as u64);
        assert_eq!(&*decode_data_block(&out, 2, h, p()).unwrap(), &raw[..]);
        // The worked example of the module docs.
        let raw = [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
        let mut out = Vec::new();
        encode_data_block(&raw, Compression::None, &mut out);
        assert_eq!(out.len(), 13);
        assert_eq!(block_trailer(&out), [0xc1, 0x52, 0x0f, 0x18]);
    }

    #[test]
    fn codec_bytes_and_names_are_fixed() {
        assert_eq!(Compression::None.code(), 0);
        assert_eq!(Compression::Lz4.code(), 1);
        assert_eq!(Compression::from_code(2), None);
        assert_eq!("lz4".parse::<Compression>().unwrap(), Compression::Lz4);
        assert!("zstd".parse::<Compression>().is_err());
    }

    #[test]
    fn policies_normalize_print_and_parse() {
        use Compression::{Lz4, None as N};
        assert_eq!(
            CompressionPolicy::new([N, N, N]),
            CompressionPolicy::default()
        );
        assert_eq!(CompressionPolicy::new([N, Lz4, Lz4]).levels(), [N, Lz4]);
        let p = CompressionPolicy::new([N, N, Lz4]);
        assert_eq!(p.to_string(), "none,none,lz4");
        assert_eq!("none,none,lz4".parse::<CompressionPolicy>().unwrap(), p);
        assert_eq!(
            "none".parse::<CompressionPolicy>().unwrap(),
            CompressionPolicy::default()
        );
        assert_eq!(p.for_level(0), N);
        assert_eq!(p.for_level(2), Lz4);
        assert_eq!(p.for_level(6), Lz4);
        assert_eq!(CompressionPolicy::all(Lz4).to_string(), "lz4");
        assert!("none,brotli".parse::<CompressionPolicy>().is_err());
        assert!("".parse::<CompressionPolicy>().is_err());
    }

    #[test]
    fn format_1_blocks_are_their_bytes_and_format_2_strips_the_codec() {
        let h = BlockHandle::new(100, 3);
        assert_eq!(&*decode_data_block(b"abc", 1, h, p()).unwrap(), b"abc");
        assert_eq!(&*decode_data_block(b"ab\0", 2, h, p()).unwrap(), b"ab");
        assert!(matches!(
            decode_data_block(b"ab\0", 2, h, p()).unwrap(),
            BlockContents::Borrowed(_)
        ));
        let e = decode_data_block(b"ab\x02", 2, h, p()).unwrap_err();
        assert!(matches!(e, Error::Corruption { offset: 100, .. }), "{e}");
        assert!(e.to_string().contains("codec byte 2 (zstd)"), "{e}");
        assert!(decode_data_block(b"", 2, BlockHandle::new(0, 0), p()).is_err());
    }

    #[test]
    fn bad_lz4_payloads_are_corruption() {
        let h = BlockHandle::new(7, 0);
        // A claim of 4 GiB from 3 bytes is refused before allocating.
        let mut b = Vec::new();
        put_varint(&mut b, 1 << 32);
        b.extend_from_slice(&[0x10, b'x', 1]);
        let e = decode_data_block(&b, 2, h, p()).unwrap_err();
        assert!(e.to_string().contains("claims"), "{e}");
        // A size that does not match what the payload decodes to.
        let mut raw = vec![b'q'; 100];
        raw.extend_from_slice(&[0, 0, 0, 0, 1, 0, 0, 0]);
        let mut good = Vec::new();
        assert_eq!(
            encode_data_block(&raw, Compression::Lz4, &mut good),
            Compression::Lz4
        );
        let mut short = good.clone();
        short[0] -= 1;
        assert!(decode_data_block(&short, 2, h, p())
            .unwrap_err()
            .is_corruption());
        // Every truncation and byte flip is an error or a wrong-size
        // block, never a panic.
        for cut in 0..good.len() {
            let mut t = good[..cut].to_vec();
            t.push(1);
            let _ = decode_data_block(&t, 2, h, p());
        }
        for i in 0..good.len() - 1 {
            for bit in 0..8 {
                let mut f = good.clone();
                f[i] ^= 1 << bit;
                if let Ok(c) = decode_data_block(&f, 2, h, p()) {
                    assert!(c.len() <= 1 << 16);
                }
            }
        }
    }
}
