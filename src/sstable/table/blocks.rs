//! [`TableBlocks`]: a table's data blocks read with only its footer and
//! index trusted, or found by walking the file when those are damaged,
//! for the tools that check and salvage tables (`inspect`).

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

#[cfg(any(doc, test))]
use super::Table;
use super::{data_limit, read_index, read_properties, IndexEntry, MappedTable};
use crate::error::{Error, Result};
use crate::key::{compare_internal_keys, ParsedInternalKey};
use crate::sstable::block::Block;
use crate::sstable::compression::{decode_data_block, BlockContents};
use crate::sstable::format::{
    read_block_contents, BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN,
};
use crate::sstable::properties::TableProperties;

/// A table opened with only its footer and index checked: enough to read
/// every data block, for salvaging entries from a table whose filter or
/// properties block is damaged (which [`Table::open`] refuses). Used by
/// [`crate::inspect::Salvage`].
///
/// The file is memory-mapped as by [`Table::open`], with the same
/// requirement: it must not be modified or truncated while this is alive.
pub struct TableBlocks {
    path: PathBuf,
    mmap: Mmap,
    /// `None` when [`TableBlocks::open_by_scan`] could not decode it.
    footer: Option<Footer>,
    /// The footer's format version, or without one the version whose data
    /// blocks the scan found (so whether they end in a codec byte).
    format_version: u32,
    index: Vec<IndexEntry>,
}

impl std::fmt::Debug for TableBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableBlocks")
            .field("path", &self.path)
            .field("file_size", &self.mmap.len())
            .field("footer", &self.footer)
            .field("index_entries", &self.index.len())
            .finish_non_exhaustive()
    }
}

impl TableBlocks {
    /// Opens the table at `path`: maps it, verifies the footer, and reads,
    /// checksums and validates the index block, exactly as [`Table::open`]
    /// does; the filter and properties blocks are not read (see
    /// [`TableBlocks::properties`] and [`TableBlocks::filter`]).
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be opened or mapped;
    /// [`Error::Corruption`] if it is shorter than a footer, the footer is
    /// bad, or the index block fails its checksum or does not decode;
    /// [`Error::UnsupportedVersion`] for a newer format.
    pub fn open(path: &Path) -> Result<TableBlocks> {
        let MappedTable { mmap, .. } = MappedTable::open(path)?;
        let footer = Footer::decode(&mmap, path)?;
        let index = read_index(&mmap, &footer, path)?;
        Ok(TableBlocks {
            path: path.to_path_buf(),
            mmap,
            format_version: footer.format_version,
            footer: Some(footer),
            index,
        })
    }

    /// Opens the table at `path` without trusting its index or footer, for
    /// a table [`TableBlocks::open`] refuses: the data blocks are found by
    /// walking the file from offset 0 (see [`scan_data_blocks`]), and the
    /// index returned lists them. The footer is kept if it decodes: it then
    /// bounds the walk (data blocks precede the metadata blocks) and finds
    /// the filter and properties blocks.
    ///
    /// The walk stops at the first place where no data block begins: after
    /// the last one (the filter, properties or index block follows), or at
    /// a damaged one. Which of the two is for the caller to judge, e.g. by
    /// comparing the last key found with the table's largest key as the
    /// manifest records it. Without a footer the format version is not
    /// known, so the walk is made for both (format 1 blocks, and format 2
    /// blocks ending in a codec byte) and the one finding more blocks is
    /// kept.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be opened or mapped;
    /// [`Error::Corruption`] if it is shorter than a footer.
    pub fn open_by_scan(path: &Path) -> Result<TableBlocks> {
        let MappedTable { mmap, .. } = MappedTable::open(path)?;
        let footer = Footer::decode(&mmap, path).ok();
        let mut table = TableBlocks {
            path: path.to_path_buf(),
            mmap,
            format_version: footer.map_or(1, |f| f.format_version),
            footer,
            index: Vec::new(),
        };
        // A footer that decodes bounds the data blocks; without one the
        // walk must tell the metadata blocks from data by itself.
        let bytes = &table.mmap[..table.data_end() as usize];
        if footer.is_some() {
            table.index = scan_data_blocks(bytes, path, table.format_version);
        } else {
            let v1 = scan_data_blocks(bytes, path, 1);
            let v2 = scan_data_blocks(bytes, path, 2);
            (table.index, table.format_version) = if v2.len() > v1.len() {
                (v2, 2)
            } else {
                (v1, 1)
            };
        }
        Ok(table)
    }

    /// The decoded index: one entry per data block, in key order.
    pub fn index(&self) -> &[IndexEntry] {
        &self.index
    }

    /// The decoded footer; `None` for a table opened by scanning whose
    /// footer does not decode.
    pub fn footer(&self) -> Option<&Footer> {
        self.footer.as_ref()
    }

    /// The path given to [`TableBlocks::open`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Size of the file, in bytes.
    pub fn file_size(&self) -> u64 {
        self.mmap.len() as u64
    }

    /// The offset before which every data block lies: the first metadata
    /// block if the footer decodes, else the end of the file.
    pub fn data_end(&self) -> u64 {
        self.footer.as_ref().map_or(self.file_size(), data_limit)
    }

    /// The contents of data block `handle` as [`Table::data_block`] gives
    /// them: bounds and CRC checked, codec byte decoded (decompressed if
    /// need be). Decode them with [`Block::new`].
    ///
    /// # Errors
    /// [`Error::Corruption`] at `handle.offset` if any check fails.
    pub fn read_block(&self, handle: BlockHandle) -> Result<BlockContents<'_>> {
        let stored = read_block_contents(&self.mmap, handle, self.data_end(), &self.path, "data")?;
        decode_data_block(stored, self.format_version, handle, &self.path)
    }

    /// The table's format version (see `open_by_scan` for a table
    /// without a footer).
    pub fn format_version(&self) -> u32 {
        self.format_version
    }

    /// Reads, checksums and decodes the properties block.
    ///
    /// # Errors
    /// [`Error::Corruption`] if it is out of bounds, fails its checksum or
    /// does not decode.
    pub fn properties(&self) -> Result<TableProperties> {
        read_properties(&self.mmap, self.require_footer()?.properties, &self.path)
    }

    /// The filter block's contents after checking its bounds and checksum;
    /// `None` for a table without a filter. Its policy is named by the
    /// properties ([`TableProperties::filter_policy`]).
    ///
    /// # Errors
    /// [`Error::Corruption`] at the filter's offset if a check fails.
    pub fn filter(&self) -> Result<Option<&[u8]>> {
        let filter = self.require_footer()?.filter;
        if filter.is_null() {
            return Ok(None);
        }
        let limit = self.file_size() - FOOTER_LEN as u64;
        read_block_contents(&self.mmap, filter, limit, &self.path, "filter").map(Some)
    }

    /// The footer, or why there is none.
    fn require_footer(&self) -> Result<&Footer> {
        self.footer.as_ref().ok_or_else(|| {
            Error::corruption(
                &self.path,
                self.file_size() - FOOTER_LEN as u64,
                "the footer does not decode, so the metadata blocks cannot be found",
            )
        })
    }
}

/// The data blocks of a table file of `format_version`, found without its
/// index: from offset 0, each block is the shortest run of bytes that is
/// followed by its own CRC-32 (the 4-byte trailer), ends in a well-formed
/// restart array (in format 2: in codec byte 0 after one, or in codec
/// byte 1 or 2 after a payload that decompresses), decodes, and holds internal
/// keys that continue the strictly increasing order of the blocks before
/// it. A block's checksum is extended one byte
/// at a time, so the walk costs one CRC pass over the data plus a check at
/// each place a restart array could end. It stops where no such block
/// begins: at the filter, properties or index block (whose keys are not
/// internal keys, or start below the last data key), or at damage. A false
/// match needs a random 32-bit checksum to agree on top of the structure
/// checks.
pub fn scan_data_blocks(bytes: &[u8], path: &Path, format_version: u32) -> Vec<IndexEntry> {
    let mut found: Vec<IndexEntry> = Vec::new();
    let mut start = 0usize;
    let u32_at =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    // Whether `start..end` could be a block (entries and restart array).
    let restarts_fit = |start: usize, end: usize| {
        let len = end - start;
        if len < 4 {
            return false;
        }
        let restarts = u32_at(end - 4) as usize;
        restarts != 0 && restarts <= (len - 4) / 4 && u32_at(end - 4 - 4 * restarts) == 0
    };
    let codec_byte = format_version >= crate::sstable::compression::COMPRESSED_FORMAT_VERSION;
    'blocks: while start + 4 + BLOCK_TRAILER_LEN <= bytes.len() {
        let mut crc = crc32fast::Hasher::new();
        crc.update(&bytes[start..start + 4]);
        // `end` is where a candidate block's contents end and its trailer
        // starts.
        for end in start + 4..=bytes.len() - BLOCK_TRAILER_LEN {
            if end > start + 4 {
                crc.update(&bytes[end - 1..end]);
            }
            let len = end - start;
            let plausible = match (codec_byte, bytes[end - 1]) {
                (false, _) => restarts_fit(start, end),
                (true, 0) => restarts_fit(start, end - 1),
                (true, 1 | 2) => true,
                _ => false,
            };
            if !plausible || crc.clone().finalize() != u32_at(end) {
                continue;
            }
            let handle = BlockHandle::new(start as u64, len as u64);
            let Ok(contents) = decode_data_block(&bytes[start..end], format_version, handle, path)
            else {
                continue;
            };
            let Ok(block) = Block::new(&contents, path, start as u64) else {
                continue;
            };
            let prev = found.last().map(|e| e.last_key.as_slice());
            let entries = checked_data_entries(&block, prev, path, start as u64);
            let Some((last_key, _)) = entries.ok().and_then(|mut e| e.pop()) else {
                continue;
            };
            found.push(IndexEntry { last_key, handle });
            start = end + BLOCK_TRAILER_LEN;
            continue 'blocks;
        }
        break;
    }
    found
}

/// The entries of data block `block` (at `offset` in `path`), checked as
/// the block following one whose last key is `prev`: every entry decodes,
/// every key is a well-formed internal key, and the keys strictly increase,
/// the first above `prev`. For readers that cannot trust the index's order
/// ([`TableBlocks`]: salvage and the walk of [`scan_data_blocks`]).
///
/// # Errors
/// [`Error::Corruption`] at `offset` for an entry that does not decode, a
/// malformed key, or keys out of order.
pub fn checked_data_entries(
    block: &Block<'_>,
    prev: Option<&[u8]>,
    path: &Path,
    offset: u64,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let corrupt = |detail: &str| Error::corruption(path, offset, detail);
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for entry in block.iter() {
        let (key, value) = entry?;
        if ParsedInternalKey::parse(&key).is_none() {
            return Err(corrupt("data block holds a malformed internal key"));
        }
        let last = out.last().map(|e| e.0.as_slice()).or(prev);
        if last.is_some_and(|l| compare_internal_keys(l, &key) != Ordering::Less) {
            return Err(corrupt("data block keys out of order"));
        }
        out.push((key, value.to_vec()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sstable::table::tests::{build, opts, two_thousand};

    /// Walking a table finds exactly the blocks its index lists, with or
    /// without the footer to bound the walk, and with or without a filter
    /// block after the data; a damaged block ends the walk before it.
    #[test]
    fn scan_finds_the_blocks_the_index_lists() {
        let dir = tempfile::tempdir().unwrap();
        for filter in [true, false] {
            let name = format!("scan-{filter}.sst");
            let path = build(dir.path(), &name, opts(256, 4, filter), &two_thousand());
            let table = Table::open(&path, 1).unwrap();
            let want = table.index().to_vec();
            assert!(want.len() > 50, "{}", want.len());
            let bytes = std::fs::read(&path).unwrap();
            let bounded = &bytes[..data_limit(table.footer()) as usize];
            assert_eq!(scan_data_blocks(bounded, &path, 1), want);
            assert_eq!(
                scan_data_blocks(&bytes, &path, 1),
                want,
                "unbounded, filter {filter}"
            );
            let walked = TableBlocks::open_by_scan(&path).unwrap();
            assert_eq!(walked.index(), &want[..]);

            let mut damaged = bytes.clone();
            damaged[want[7].handle.offset as usize + 3] ^= 0x10;
            assert_eq!(scan_data_blocks(&damaged, &path, 1), want[..7].to_vec());
        }
    }
}
