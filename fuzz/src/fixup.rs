//! Checksum fix-ups for [`crate::Mode::Fixed`]: recompute every CRC the
//! framing puts in front of a decoder, so that fuzzed bytes behind it are
//! decoded instead of being rejected by the checksum. Best effort: bytes
//! that do not locate a checksum are left alone.

use std::path::Path;

use siftdb::inspect::sstable::format::{BlockHandle, BLOCK_TRAILER_LEN, FOOTER_LEN, TABLE_MAGIC};
use siftdb::inspect::sstable::Block;
use siftdb::inspect::util::coding::Decoder;
use siftdb::inspect::util::crc::crc32;

/// Walks the records of a log (WAL or manifest, DESIGN.md 12.2) from offset
/// 0 and makes each one valid: a length reaching past the end is cut to the
/// bytes present, then both checksums are recomputed. A tail shorter than a
/// header is left as it is (a torn tail).
pub fn fix_log(bytes: &mut [u8]) {
    let mut pos = 0usize;
    while bytes.len() - pos >= 12 {
        let body = bytes.len() - pos - 12;
        let mut len = u32::from_le_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
        if len > body {
            len = body;
            bytes[pos..pos + 4].copy_from_slice(&(len as u32).to_le_bytes());
        }
        let len_crc = crc32(&bytes[pos..pos + 4]);
        bytes[pos + 4..pos + 8].copy_from_slice(&len_crc.to_le_bytes());
        let payload_crc = crc32(&bytes[pos + 12..pos + 12 + len]);
        bytes[pos + 8..pos + 12].copy_from_slice(&payload_crc.to_le_bytes());
        pos += 12 + len;
    }
}

/// The byte range of the block `h` (contents only) if it and its trailer
/// lie before `limit`.
fn block_range(h: BlockHandle, limit: usize) -> Option<std::ops::Range<usize>> {
    let end = h.end_with_trailer()?;
    if end > limit as u64 {
        return None;
    }
    let start = h.offset as usize;
    Some(start..start + h.size as usize)
}

/// Recomputes the trailer CRC of block `h`, if it lies before `limit`.
fn fix_block(bytes: &mut [u8], h: BlockHandle, limit: usize) {
    if let Some(r) = block_range(h, limit) {
        let crc = crc32(&bytes[r.clone()]);
        bytes[r.end..r.end + BLOCK_TRAILER_LEN].copy_from_slice(&crc.to_le_bytes());
    }
}

/// Makes an SSTable's checksums valid (DESIGN.md 12.4 to 12.7): the trailer
/// of every data block the index names, of the filter, properties and
/// index blocks, then the footer's CRC and magic. The footer's version and
/// handles, and every block's contents, are left as fuzzed.
pub fn fix_table(bytes: &mut [u8]) {
    let Some(footer_start) = bytes.len().checked_sub(FOOTER_LEN) else {
        return;
    };
    let handle = |bytes: &[u8], i: usize| {
        let at = footer_start + 16 * i;
        BlockHandle::new(
            u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()),
            u64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap()),
        )
    };
    let (index, filter, props) = (handle(bytes, 0), handle(bytes, 1), handle(bytes, 2));

    // Data blocks first: their trailers may overlap the metadata blocks,
    // whose checksums are then computed over the final bytes.
    let mut data = Vec::new();
    if let Some(r) = block_range(index, footer_start) {
        let contents = bytes[r].to_vec();
        if let Ok(block) = Block::new(&contents, Path::new("fixup.sst"), 0) {
            for entry in block.iter().take(4096) {
                let Ok((_, value)) = entry else { break };
                let mut d = Decoder::new(value);
                if let Ok(h) = BlockHandle::decode_from(&mut d) {
                    data.push(h);
                }
            }
        }
    }
    for h in data {
        fix_block(bytes, h, footer_start);
    }
    if !filter.is_null() {
        fix_block(bytes, filter, footer_start);
    }
    fix_block(bytes, props, footer_start);
    fix_block(bytes, index, footer_start);

    let footer = &mut bytes[footer_start..];
    let crc = crc32(&footer[..52]);
    footer[52..56].copy_from_slice(&crc.to_le_bytes());
    footer[56..64].copy_from_slice(&TABLE_MAGIC.to_le_bytes());
}
