//! [`Table`]: a finished SSTable opened for reading over a memory map, with
//! point lookups ([`Table::get`]) and double-ended range iteration
//! ([`Table::iter`], in `iter`).

mod blocks;
mod iter;

pub use blocks::{checked_data_entries, scan_data_blocks, TableBlocks};
pub use iter::TableIter;

use std::cmp::Ordering;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use memmap2::{Advice, Mmap, UncheckedAdvice};

use crate::util::aligned::AlignedBytes;
use crate::util::file::open_regular;

use crate::error::{Error, IoContext, Result};
use crate::filter::{policy_for_name, FilterPolicy, KeyHash};
use crate::key::{
    compare_internal_keys, compare_to_seek, user_key_of, user_key_prefix, ParsedInternalKey,
    SequenceNumber, ValueType,
};
use crate::sketch::hyperloglog::HyperLogLog;
use crate::sstable::block::{touch_lines, touch_range, Block};
use crate::sstable::block_cache::{BlockCache, BlockKey};
use crate::sstable::compression::{decode_data_block, BlockContents};
use crate::sstable::format::{
    check_block_handle, read_block_contents, verify_block, BlockHandle, Footer, BLOCK_TRAILER_LEN,
    FOOTER_LEN,
};
use crate::sstable::properties::TableProperties;
use crate::sstable::residency::ColdHint;
use crate::sstable::restart_summary::{RestartSummaries, ScanStart};
use crate::util::coding::Decoder;
use crate::Slice;

/// One index entry: a data block and the last internal key in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// The encoded internal key of the block's last entry.
    pub last_key: Vec<u8>,
    /// Where the block is.
    pub handle: BlockHandle,
}

/// What an open [`Table`] holds in memory that siftdb allocated (the
/// mapped file is the kernel's page cache, not counted here), in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableMemory {
    /// The filter and prefix filter blocks, copied out of the map at open
    /// (cache-line padding included).
    pub filters: u64,
    /// The decoded index: its entries with their keys' heap bytes, the
    /// index-key prefixes with the blocks' handles, the blocks' restart
    /// summaries (64 bytes a block) and the verified-block bitmap.
    pub index: u64,
}

/// The outcome of [`Table::get`], telling the caller both the answer and
/// how much work the table did (for read statistics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableGet {
    /// The user key is outside `[smallest_user_key, largest_user_key]`;
    /// nothing was read.
    OutOfRange,
    /// The filter proved the user key absent; nothing was read.
    FilterNegative,
    /// The index was searched.
    Searched {
        /// The data block read, or `None` if the seek key sorts after the
        /// table's last key (no block read).
        block: Option<BlockHandle>,
        /// The newest version of the user key with sequence `<= seq`, if
        /// any: its sequence number, type and value (empty for a
        /// [`ValueType::Deletion`]).
        /// A value of at least [`Slice::SHARE_MIN`] bytes shares the
        /// table's map, or the cached or decompressed block, instead of
        /// being copied.
        entry: Option<(SequenceNumber, ValueType, Slice)>,
    },
}

/// What [`Table::screen`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// Outside the table's key range.
    OutOfRange,
    /// The filter proved the key absent.
    FilterNegative,
    /// The table may hold the key: search it.
    Maybe,
}

/// An open, immutable SSTable.
///
/// The file is memory-mapped; the index and properties are decoded at open,
/// the filter stays in the map. `Table` is `Send + Sync`: lookups take
/// `&self` and allocate nothing before reading their data block.
///
/// The file must not be modified or truncated while a `Table` (or a
/// [`Block`] or [`TableIter`] from it) is alive; siftdb never modifies a
/// finished table and deletes one only when nothing references it.
pub struct Table {
    path: PathBuf,
    file_number: u64,
    /// Shared with the long values reads return ([`Slice`] views), which
    /// keep the map, and so the file's contents, alive after the table is
    /// dropped and its file deleted.
    mmap: Arc<Mmap>,
    footer: Footer,
    index: Vec<IndexEntry>,
    /// Each index entry's user-key prefix ([`user_key_prefix`]) beside its
    /// block's handle, side by side: a lookup's binary search of the index
    /// reads this compact array and touches the keys themselves only where
    /// prefixes tie, instead of following a pointer (a cache miss) at
    /// every step; and the handle it then needs lies on a line the search
    /// has just read, not in `index` (another miss). DESIGN.md 3.3.
    index_prefixes: Vec<PrefixedHandle>,
    /// Each data block's restart points, recorded when a lookup first
    /// reads it, so that later lookups scan the right interval without
    /// searching the block ([`RestartSummaries`], DESIGN.md 3.3).
    restarts: RestartSummaries,
    /// One bit per data block, set once its checksum has been verified:
    /// the mapped bytes of a table siftdb never modifies, checked on first
    /// read, are trusted afterwards, as an engine with a block cache
    /// trusts the blocks it holds (DESIGN.md 3).
    verified: Box<[AtomicU64]>,
    properties: TableProperties,
    /// [`user_key_prefix`] of the smallest and largest user keys: a
    /// lookup's range check compares these and reads the keys only on a
    /// tie.
    key_range_prefixes: (u128, u128),
    /// The filter block's contents, copied out of the map at open: filter
    /// bytes live in memory siftdb owns and counts
    /// ([`Table::memory`]), so a lookup's filter probe never waits
    /// on the disk, however little of the map the page cache holds.
    filter: Option<AlignedBytes>,
    /// The policy that reads the filter (and the prefix filter), if its
    /// name is known.
    filter_policy: Option<Arc<dyn FilterPolicy>>,
    /// The prefix filter block's contents, copied as `filter` is.
    prefix_filter: Option<AlignedBytes>,
    /// Whether recent block reads waited on the disk, so that the next
    /// ones ask for their whole block in one request.
    cold: ColdHint,
    /// The file, opened by the first read through a block cache
    /// ([`Table::get_cached`]); mapped reads need no descriptor.
    file: OnceLock<File>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("path", &self.path)
            .field("file_number", &self.file_number)
            .field("file_size", &self.mmap.len())
            .field("footer", &self.footer)
            .field("index_entries", &self.index.len())
            .field("properties", &self.properties)
            .finish_non_exhaustive()
    }
}

impl Table {
    /// Opens the table at `path`: maps it, verifies the footer, reads and
    /// checksums the index and properties blocks, and checksums the filters
    /// once. `file_number` is recorded for the caller's bookkeeping. The
    /// key sketch is read (and checksummed) only by
    /// [`key_sketch`](Self::key_sketch): it shapes estimates, never an
    /// answer, so damage to it must not make the table unreadable.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be opened or mapped;
    /// [`Error::Corruption`] if it is shorter than a footer (including
    /// empty), the footer is bad (magic, CRC, handles outside the file), a
    /// block checksum fails, the index or properties do not decode, or they
    /// disagree with each other; [`Error::UnsupportedVersion`] for a newer
    /// format.
    pub fn open(path: &Path, file_number: u64) -> Result<Table> {
        Table::decode(MappedTable::open(path)?, file_number)
    }

    /// The second half of [`Table::open`]: decodes a table already mapped.
    ///
    /// # Errors
    /// As [`Table::open`], except that opening and mapping cannot fail.
    pub fn decode(mapped: MappedTable, file_number: u64) -> Result<Table> {
        let MappedTable { path, mmap } = mapped;
        let path = path.as_path();
        let bytes: &[u8] = &mmap;
        let footer = Footer::decode(bytes, path)?;
        let footer_start = (bytes.len() - FOOTER_LEN) as u64;
        let index = read_index(bytes, &footer, path)?;
        let properties = read_properties(bytes, footer.properties, path)?;
        let filter = if footer.filter.is_null() {
            None
        } else {
            let contents = read_block_contents(bytes, footer.filter, footer_start, path, "filter")?;
            Some(AlignedBytes::copy(contents, footer.filter.offset))
        };
        let prefix_filter = match &properties.prefix_filter {
            Some(pf) => {
                let contents =
                    read_block_contents(bytes, pf.handle, footer_start, path, "prefix filter")?;
                Some(AlignedBytes::copy(contents, pf.handle.offset))
            }
            None => None,
        };

        let corrupt = |detail: String| Error::corruption(path, footer.properties.offset, detail);
        if properties.num_data_blocks != index.len() as u64 {
            return Err(corrupt(format!(
                "properties list {} data blocks but the index has {}",
                properties.num_data_blocks,
                index.len()
            )));
        }
        if properties.format_version != footer.format_version {
            return Err(corrupt(format!(
                "properties format version {} differs from the footer's {}",
                properties.format_version, footer.format_version
            )));
        }
        // decode_index guarantees a non-empty index.
        let last = index.last().map_or(&[][..], |e| user_key_of(&e.last_key));
        if properties.largest_user_key != last
            || properties.smallest_user_key > properties.largest_user_key
        {
            return Err(corrupt(
                "properties key range disagrees with the index".to_string(),
            ));
        }

        let filter_policy = match filter {
            Some(_) => policy_for_name(&properties.filter_policy),
            None => None,
        };
        let index_prefixes = index_prefixes(&index);
        // Lookups read single blocks at random: a fault should read its
        // page, not a readahead window (DESIGN.md 3.3). Advice only.
        let _ = mmap.advise(Advice::Random);
        // Everything this function read through the map (footer, index,
        // properties, filters) now lives in owned copies, so its pages
        // need not stay in this process's page tables: dropping them keeps
        // resident memory to what `Stats::memory` counts (in the cached
        // mode, where no data block is read through the map). The pages
        // stay in the page cache. Advice only.
        // SAFETY: `mmap` is a read-only shared mapping of an immutable
        // file; MADV_DONTNEED on it only unmaps pages, and the next access
        // faults the same bytes in from the page cache or the file. No
        // private (copy-on-write) data exists that it could discard.
        let _ = unsafe { mmap.unchecked_advise(UncheckedAdvice::DontNeed) };
        let verified = (0..index.len().div_ceil(64))
            .map(|_| AtomicU64::new(0))
            .collect();
        Ok(Table {
            path: path.to_path_buf(),
            file_number,
            mmap: Arc::new(mmap),
            footer,
            index_prefixes,
            restarts: RestartSummaries::new(index.len()),
            verified,
            index,
            key_range_prefixes: (
                user_key_prefix(&properties.smallest_user_key),
                user_key_prefix(&properties.largest_user_key),
            ),
            properties,
            filter,
            filter_policy,
            prefix_filter,
            cold: ColdHint::default(),
            file: OnceLock::new(),
        })
    }

    /// Whether the table may hold a key whose prefix has hash `hash` under
    /// the extractor named `extractor`, by its prefix filter: `None` if it
    /// has no prefix filter built by that extractor, or its filter policy
    /// is unknown (the table must then be read).
    pub fn prefix_may_match(&self, extractor: &str, hash: KeyHash) -> Option<bool> {
        let pf = self.properties.prefix_filter.as_ref()?;
        if pf.extractor != extractor {
            return None;
        }
        let policy = self.filter_policy.as_ref()?;
        Some(policy.may_match(self.prefix_filter.as_ref()?.bytes(), hash))
    }

    /// `len` bytes of the file from `offset`, if they lie inside it (for
    /// tools that check what lies between blocks).
    pub fn map_bytes(&self, offset: u64, len: u64) -> Option<&[u8]> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        self.mmap.get(start..end)
    }

    /// Bytes of memory this open table holds beyond its map: its filter
    /// copies and its decoded index (see [`TableMemory`]).
    pub fn memory(&self) -> TableMemory {
        let copies = self.filter.iter().chain(&self.prefix_filter);
        let index = self.index.capacity() * std::mem::size_of::<IndexEntry>()
            + self
                .index
                .iter()
                .map(|e| e.last_key.capacity())
                .sum::<usize>()
            + self.index_prefixes.capacity() * std::mem::size_of::<PrefixedHandle>()
            + self.restarts.memory()
            + self.verified.len() * std::mem::size_of::<AtomicU64>();
        TableMemory {
            filters: copies.map(AlignedBytes::allocated).sum::<usize>() as u64,
            index: index as u64,
        }
    }

    /// The prefix filter block's bytes, if the table has one.
    pub fn prefix_filter_bytes(&self) -> Option<&[u8]> {
        self.prefix_filter.as_ref().map(AlignedBytes::bytes)
    }

    /// The HyperLogLog of the table's distinct user keys, read and decoded
    /// from its key-sketch block (through the map, a few KiB), or `None`
    /// for a table written without one (before sketches existed, or with
    /// `Options::key_sketch_precision = None`).
    ///
    /// # Errors
    /// [`Error::Corruption`] if the block's handle leaves the file, its
    /// checksum fails, or the sketch does not decode.
    pub fn key_sketch(&self) -> Result<Option<HyperLogLog>> {
        let Some(handle) = self.properties.key_sketch else {
            return Ok(None);
        };
        let footer_start = self.mmap.len().saturating_sub(FOOTER_LEN) as u64;
        let bytes =
            read_block_contents(&self.mmap, handle, footer_start, &self.path, "key sketch")?;
        HyperLogLog::decode(bytes, &self.path, handle.offset).map(Some)
    }

    /// The table's properties.
    pub fn properties(&self) -> &TableProperties {
        &self.properties
    }

    /// The decoded index: one entry per data block, in key order.
    pub fn index(&self) -> &[IndexEntry] {
        &self.index
    }

    /// The filter block's bytes, if the table has one (whether or not its
    /// policy is known to this build).
    pub fn filter_bytes(&self) -> Option<&[u8]> {
        self.filter.as_ref().map(AlignedBytes::bytes)
    }

    /// True if [`Table::get`] consults this table's filter: the table has a
    /// filter block and its policy name is one this build knows. When
    /// false, every lookup within the key range reads a data block.
    pub fn has_filter(&self) -> bool {
        self.filter_policy.is_some()
    }

    /// The file number given to [`Table::open`].
    pub fn file_number(&self) -> u64 {
        self.file_number
    }

    /// The path given to [`Table::open`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Size of the file, in bytes.
    pub fn file_size(&self) -> u64 {
        self.mmap.len() as u64
    }

    /// The decoded footer.
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// Reads the block at `handle`: checks that it lies before the footer
    /// and that its CRC matches, and validates its restart array. The block
    /// borrows the map; nothing is copied.
    ///
    /// # Errors
    /// [`Error::Corruption`] at `handle.offset` if any check fails.
    pub fn read_block(&self, handle: BlockHandle) -> Result<Block<'_>> {
        let limit = self.file_size() - FOOTER_LEN as u64;
        let contents = read_block_contents(&self.mmap, handle, limit, &self.path, "data")?;
        Block::new(contents, &self.path, handle.offset)
    }

    /// The contents of the data block at `handle`, bounds and CRC checked
    /// and, in a format-2 table, its codec byte decoded: borrowed from the
    /// map when stored uncompressed, decompressed otherwise. Decode them
    /// with [`Block::new`]. ([`Table::read_block`] reads any block as
    /// stored, codec byte included.)
    ///
    /// # Errors
    /// [`Error::Corruption`] at `handle.offset` if a check fails, the
    /// codec byte is unknown or the block does not decompress.
    pub fn data_block(&self, handle: BlockHandle) -> Result<BlockContents<'_>> {
        let limit = self.file_size() - FOOTER_LEN as u64;
        let stored = read_block_contents(&self.mmap, handle, limit, &self.path, "data")?;
        decode_data_block(stored, self.footer.format_version, handle, &self.path)
    }

    /// Looks up the newest version of `user_key` with sequence `<= seq`.
    /// `hash` must be [`crate::filter::hash_key`]`(user_key)`, computed once
    /// by the caller for all tables.
    ///
    /// Order: key-range check, then the filter (only if the table's filter
    /// policy is known), then a binary search of the index for the first
    /// block whose last key is `>=` the seek key, then one data-block read
    /// (CRC-checked) and a seek inside it. No heap allocation happens before
    /// the data-block read.
    ///
    /// # Errors
    /// [`Error::Corruption`] if the data block fails its checksum or does
    /// not decode.
    pub fn get(&self, user_key: &[u8], seq: SequenceNumber, hash: KeyHash) -> Result<TableGet> {
        self.get_cached(user_key, seq, hash, None)
    }

    /// As [`Table::get`], but with a `cache`, the data block comes from it,
    /// or on a miss is read with one `pread` (the file is opened on the
    /// first such read and kept), checksummed and inserted: a block that
    /// fails its checksum is never cached. Without, it is read through the
    /// map.
    ///
    /// # Errors
    /// As [`Table::get`]; [`Error::Io`] if the file cannot be opened or
    /// read.
    pub fn get_cached(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
        hash: KeyHash,
        cache: Option<&BlockCache>,
    ) -> Result<TableGet> {
        let prefix = user_key_prefix(user_key);
        match self.screen(user_key, prefix, hash) {
            Screen::OutOfRange => Ok(TableGet::OutOfRange),
            Screen::FilterNegative => Ok(TableGet::FilterNegative),
            Screen::Maybe => self.search(user_key, prefix, seq, cache),
        }
    }

    /// What the key range and the filter say about `user_key` before any
    /// block is read: the first half of [`Table::get_cached`]. `prefix` is
    /// [`user_key_prefix`]`(user_key)` and `hash` its
    /// [`crate::filter::hash_key`], both computed once per lookup for
    /// every table it screens.
    ///
    /// Small and inlined into a lookup's loop over the tables, so that a
    /// table which cannot hold the key costs a range check (two 16-byte
    /// integer comparisons; the keys themselves only when a prefix ties)
    /// and one filter probe, and no call that builds a [`TableGet`] in
    /// memory: behind that call an absent key's lookup over three tables
    /// took 190 ns instead of 145 (DESIGN.md 13).
    #[inline]
    pub fn screen(&self, user_key: &[u8], prefix: u128, hash: KeyHash) -> Screen {
        let (lo, hi) = self.key_range_prefixes;
        let p = &self.properties;
        if prefix < lo
            || prefix > hi
            || (prefix == lo && user_key < p.smallest_user_key.as_slice())
            || (prefix == hi && user_key > p.largest_user_key.as_slice())
        {
            return Screen::OutOfRange;
        }
        if let (Some(policy), Some(filter)) = (&self.filter_policy, &self.filter) {
            if !policy.may_match(filter.bytes(), hash) {
                return Screen::FilterNegative;
            }
        }
        Screen::Maybe
    }

    /// The index search and block read of [`Table::get_cached`], for a key
    /// [`Table::screen`] did not rule out. `target` is
    /// [`user_key_prefix`]`(user_key)`, for the index search and the
    /// restart summary.
    #[inline(never)]
    pub(crate) fn search(
        &self,
        user_key: &[u8],
        target: u128,
        seq: SequenceNumber,
        cache: Option<&BlockCache>,
    ) -> Result<TableGet> {
        let i = self.partition_index(target, |e| {
            compare_to_seek(&e.last_key, user_key, seq) == Ordering::Less
        });
        let Some(handle) = self.block_handle(i) else {
            return Ok(TableGet::Searched {
                block: None,
                entry: None,
            });
        };
        let contents = match cache {
            Some(cache) => BlockContents::Owned(self.cached_block(cache, handle)?),
            None => self.read_data_block(i)?,
        };
        // The buffer a long value is shared from: the cached or
        // decompressed block, or (`None`) the map.
        let owned = contents.owned();
        let start = self.restarts.scan_start(i, target, contents.len());
        match &start {
            ScanStart::At { touch, .. } => touch_range(&contents, touch.clone()),
            ScanStart::Unknown | ScanStart::Undecided => touch_lines(&contents),
        }
        let block = Block::new(&contents, &self.path, handle.offset)?;
        let sought = match start {
            ScanStart::At { restart, .. } => block.seek_from(restart, user_key, seq)?,
            ScanStart::Unknown => {
                self.restarts.record(i, &block);
                block.seek(user_key, seq)?
            }
            ScanStart::Undecided => block.seek(user_key, seq)?,
        };
        let found = match sought {
            Some((key, value)) if user_key_of(&key) == user_key => {
                let parsed = ParsedInternalKey::parse(&key).ok_or_else(|| {
                    Error::corruption(
                        &self.path,
                        handle.offset,
                        "data block holds a malformed internal key",
                    )
                })?;
                Some((parsed.seq, parsed.value_type, self.share(owned, value)))
            }
            _ => None,
        };
        Ok(TableGet::Searched {
            block: Some(handle),
            entry: found,
        })
    }

    /// The handle of data block `i`, or `None` past the last block.
    fn block_handle(&self, i: usize) -> Option<BlockHandle> {
        self.index_prefixes.get(i).map(|p| p.handle)
    }

    /// The index's partition point for `before`, a predicate on an entry's
    /// last key that holds for every entry whose user key sorts below a
    /// key and fails for every one above it (what it says for the key
    /// itself is its own business); `target` is that key's
    /// [`user_key_prefix`]. Entries whose prefix sorts below `target` have
    /// a smaller user key, and those above a larger one, so two bisections
    /// of the compact prefix array leave only the entries whose prefix
    /// ties, usually none or one, for `before` to decide.
    fn partition_index(&self, target: u128, before: impl Fn(&IndexEntry) -> bool) -> usize {
        let lo = self.index_prefixes.partition_point(|p| p.prefix < target);
        let tie = self.index_prefixes[lo..].partition_point(|p| p.prefix == target);
        lo + self.index[lo..lo + tie].partition_point(before)
    }

    /// The contents of data block `i` of the index, its checksum verified
    /// the first time this table reads it (see `verified`): borrowed from
    /// the map, or decompressed if it is stored compressed (every time:
    /// the block cache is what keeps decompressed blocks).
    ///
    /// # Errors
    /// [`Error::Corruption`] if the block fails its checksum or does not
    /// decompress.
    fn read_data_block(&self, i: usize) -> Result<BlockContents<'_>> {
        let handle = self.index_prefixes[i].handle;
        if self.cold.take() {
            self.will_need(handle.offset, handle.size + BLOCK_TRAILER_LEN as u64);
        }
        let started = ColdHint::should_time().then(Instant::now);
        let (word, bit) = (&self.verified[i / 64], 1u64 << (i % 64));
        let stored = if word.load(AtomicOrdering::Relaxed) & bit != 0 {
            // In bounds: checked by the read that set the bit.
            let start = handle.offset as usize;
            &self.mmap[start..start + handle.size as usize]
        } else {
            let limit = self.file_size() - FOOTER_LEN as u64;
            let stored = read_block_contents(&self.mmap, handle, limit, &self.path, "data")?;
            word.fetch_or(bit, AtomicOrdering::Relaxed);
            stored
        };
        let contents = decode_data_block(stored, self.footer.format_version, handle, &self.path);
        if let Some(started) = started {
            self.cold.record(started.elapsed());
        }
        contents
    }

    /// The data block at `handle` from `cache`, or read from the file with
    /// `pread`, checksummed and cached.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be opened or read;
    /// [`Error::Corruption`] if the block fails its checksum (it is then
    /// not cached).
    fn cached_block(&self, cache: &BlockCache, handle: BlockHandle) -> Result<Arc<[u8]>> {
        let key = BlockKey {
            file_number: self.file_number,
            offset: handle.offset,
        };
        if let Some(block) = cache.get(key) {
            return Ok(block);
        }
        let file = match self.file.get() {
            Some(f) => f,
            None => {
                let f =
                    open_regular(&self.path).context(|| format!("open {}", self.path.display()))?;
                self.file.get_or_init(|| f)
            }
        };
        // In range of the file: the index was checked against it at open.
        let mut buf = vec![0u8; handle.size as usize + BLOCK_TRAILER_LEN];
        file.read_exact_at(&mut buf, handle.offset)
            .context(|| format!("read {} at {}", self.path.display(), handle.offset))?;
        verify_block(&buf, handle, &self.path, "data")?;
        buf.truncate(handle.size as usize);
        // Cached decompressed.
        let block =
            decode_data_block(&buf, self.footer.format_version, handle, &self.path)?.into_shared();
        cache.insert(key, Arc::clone(&block));
        Ok(block)
    }

    /// Asks the kernel to read `len` bytes of the file from `offset` into
    /// the page cache now, in one request (`MADV_WILLNEED`; see
    /// [`residency`](super::residency)). Advice only: a failure is ignored.
    fn will_need(&self, offset: u64, len: u64) {
        let Ok(start) = usize::try_from(offset) else {
            return;
        };
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        let len = len.min(self.mmap.len().saturating_sub(start));
        if len > 0 {
            let _ = self.mmap.advise_range(Advice::WillNeed, start, len);
        }
    }

    /// `value`, read from a data block, as a [`Slice`] sharing the buffer
    /// it lies in: `owned` (a cached or decompressed block) or, if `None`,
    /// the table's map.
    fn share(&self, owned: Option<&Arc<[u8]>>, value: &[u8]) -> Slice {
        match owned {
            Some(block) => Slice::share_block(block, value),
            None => Slice::share_map(&self.mmap, value),
        }
    }
}

/// A table file mapped into memory, not yet decoded: the first half of
/// [`Table::open`]. The map holds no file descriptor, and it keeps the
/// file's contents readable after its name is removed. So an open can pin
/// every table it needs (microseconds each) before decoding any, without a
/// writer in another process deleting one in between, and without holding
/// one descriptor per table (a database with more tables than the
/// open-file limit opens).
pub struct MappedTable {
    path: PathBuf,
    mmap: Mmap,
}

impl MappedTable {
    /// Opens the regular file at `path`, checks that it can hold a footer,
    /// maps it read-only and closes it.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be opened (not a regular file
    /// included), inspected or mapped; [`Error::Corruption`] if it is
    /// shorter than [`FOOTER_LEN`] bytes.
    pub fn open(path: &Path) -> Result<MappedTable> {
        let file = open_regular(path).context(|| format!("open {}", path.display()))?;
        let len = file
            .metadata()
            .context(|| format!("stat {}", path.display()))?
            .len();
        if len < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                path,
                0,
                format!("file is {len} bytes, shorter than the {FOOTER_LEN}-byte table footer"),
            ));
        }
        // SAFETY: the map is read-only and siftdb never writes, truncates or
        // deletes a finished table file while a `Table` (or `TableBlocks`)
        // for it exists (the version holds it by `Arc` until the last reader
        // is gone); deleting the name leaves the mapped pages valid. Another
        // process modifying the file would break this; that is outside
        // siftdb's contract, as it is for every mmap-based store.
        let mmap = unsafe { Mmap::map(&file) }.context(|| format!("mmap {}", path.display()))?;
        Ok(MappedTable {
            path: path.to_path_buf(),
            mmap,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::fmt::Debug for MappedTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedTable")
            .field("path", &self.path)
            .field("len", &self.mmap.len())
            .finish()
    }
}

/// Reads, checksums and validates the index block `footer` names in the
/// table file `bytes`.
fn read_index(bytes: &[u8], footer: &Footer, path: &Path) -> Result<Vec<IndexEntry>> {
    let footer_start = (bytes.len() - FOOTER_LEN) as u64;
    let contents = read_block_contents(bytes, footer.index, footer_start, path, "index")?;
    decode_index(
        &Block::new(contents, path, footer.index.offset)?,
        data_limit(footer),
        path,
    )
}

/// Reads, checksums and decodes the properties block at `handle` in the
/// table file `bytes`.
fn read_properties(bytes: &[u8], handle: BlockHandle, path: &Path) -> Result<TableProperties> {
    let footer_start = (bytes.len() - FOOTER_LEN) as u64;
    let contents = read_block_contents(bytes, handle, footer_start, path, "properties")?;
    TableProperties::decode(&Block::new(contents, path, handle.offset)?, path)
}

/// The offset before which every data block of a table with `footer` lies:
/// data blocks come before every metadata block.
fn data_limit(footer: &Footer) -> u64 {
    let limit = footer.index.offset.min(footer.properties.offset);
    if footer.filter.is_null() {
        limit
    } else {
        limit.min(footer.filter.offset)
    }
}

/// The [`user_key_prefix`] and handle of every index entry, in order.
fn index_prefixes(index: &[IndexEntry]) -> Vec<PrefixedHandle> {
    index
        .iter()
        .map(|e| PrefixedHandle {
            prefix: user_key_prefix(user_key_of(&e.last_key)),
            handle: e.handle,
        })
        .collect()
}

/// One index entry as a point lookup's search reads it: the
/// [`user_key_prefix`] of the block's last user key and the block's
/// handle (32 bytes: two to a cache line).
#[derive(Debug, Clone, Copy)]
struct PrefixedHandle {
    prefix: u128,
    handle: BlockHandle,
}

/// Decodes and validates the index block: keys are well-formed, strictly
/// increasing internal keys; values are exactly one handle each, lying
/// before `data_limit`; and there is at least one entry.
fn decode_index(block: &Block<'_>, data_limit: u64, path: &Path) -> Result<Vec<IndexEntry>> {
    let at = block.file_offset();
    let corrupt = |detail: &str| Error::corruption(path, at, format!("index block: {detail}"));
    let mut index: Vec<IndexEntry> = Vec::new();
    for entry in block.iter() {
        let (last_key, value) = entry?;
        if ParsedInternalKey::parse(&last_key).is_none() {
            return Err(corrupt("malformed internal key"));
        }
        if let Some(prev) = index.last() {
            if compare_internal_keys(&prev.last_key, &last_key) != Ordering::Less {
                return Err(corrupt("keys out of order"));
            }
        }
        let mut d = Decoder::new(value);
        let handle = match BlockHandle::decode_from(&mut d) {
            Ok(h) if d.is_empty() => h,
            _ => return Err(corrupt("value is not a block handle")),
        };
        check_block_handle(handle, data_limit, path, "data")?;
        index.push(IndexEntry { last_key, handle });
    }
    if index.is_empty() {
        return Err(corrupt("no entries"));
    }
    Ok(index)
}

#[cfg(test)]
mod tests;
