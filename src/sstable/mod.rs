//! Sorted String Tables: immutable files of internal entries in key order.
//!
//! * [`format`](mod@format): the file format (byte diagrams), [`BlockHandle`],
//!   [`Footer`] and checksum verification.
//! * [`block_builder`] / [`block`]: the prefix-compressed block format used
//!   for data, index and properties blocks.
//! * [`properties`]: [`TableProperties`], the per-table statistics block.
//! * [`table_builder`]: [`TableBuilder`] writes a table.
//! * [`table`]: [`Table`] reads one over a memory map: point lookups
//!   (key-range check → filter → index → one data block) and double-ended
//!   range iteration; [`TableBlocks`] reads just the footer, index and data
//!   blocks, to salvage a table whose filter or properties are damaged.
//!
//! Filters are built over user keys by a [`crate::filter::FilterPolicy`].

pub mod block;
pub mod block_builder;
pub mod format;
pub mod properties;
pub mod table;
pub mod table_builder;

pub use block::{Block, BlockIter};
pub use block_builder::BlockBuilder;
pub use format::{BlockHandle, Footer};
pub use properties::{PrefixFilterProperties, TableProperties};
pub use table::{IndexEntry, MappedTable, Table, TableBlocks, TableGet, TableIter};
pub use table_builder::{TableBuilder, TableOptions, TableSummary};
