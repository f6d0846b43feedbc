//! Sorted String Tables: immutable files of internal entries in key order.
//!
//! * [`format`](mod@format): the file format (byte diagrams), [`BlockHandle`],
//!   [`Footer`] and checksum verification.
//! * [`block_builder`] / [`block`]: the prefix-compressed block format used
//!   for data, index and properties blocks.
//! * [`block_cache`]: [`BlockCache`](block_cache::BlockCache), the bounded
//!   cache of data blocks read with `pread` (`TableReads::Cached`).
//! * [`compression`]: [`Compression`](compression::Compression) codecs,
//!   the per-level [`CompressionPolicy`](compression::CompressionPolicy)
//!   and the codec byte of format-2 data blocks.
//! * [`properties`]: [`TableProperties`], the per-table statistics block.
//! * [`residency`]: how a table reads its map when the page cache does not
//!   hold it (random advice, whole-block requests while cold, scan
//!   readahead).
//! * [`table_builder`]: [`TableBuilder`] writes a table.
//! * [`table`]: [`Table`] reads one over a memory map: point lookups
//!   (key-range check → filter → index → one data block) and double-ended
//!   range iteration; [`TableBlocks`] reads just the footer, index and data
//!   blocks, to salvage a table whose filter or properties are damaged.
//!
//! Filters are built over user keys by a [`crate::filter::FilterPolicy`].

pub mod block;
pub mod block_builder;
pub mod block_cache;
pub mod compression;
pub mod format;
pub mod properties;
pub mod residency;
mod restart_summary;
pub mod table;
pub mod table_builder;

pub use block::{Block, BlockIter};
pub use block_builder::BlockBuilder;
pub use compression::{BlockContents, Compression, CompressionPolicy};
pub use format::{BlockHandle, Footer};
pub use properties::{PrefixFilterProperties, TableProperties};
pub use table::{
    IndexEntry, MappedTable, Screen, Table, TableBlocks, TableGet, TableIter, TableMemory,
};
pub use table_builder::{TableBuilder, TableOptions, TableSummary};
