//! The shape of the tree over time.
//!
//! - [`edit`]: [`edit::VersionEdit`], one change to the tree (files added
//!   and removed, counters advanced), and its tagged on-disk encoding;
//!   [`edit::FileMetaData`] describes one SSTable.
//! - [`manifest`]: the `MANIFEST-NNNNNN` log of edits (framed by
//!   [`crate::log`]) and the `CURRENT` file that names the live manifest.
//! - [`filter_memory`]: [`filter_memory::FilterMemory`], what a version's
//!   filters cost and buy per level, against the same memory spread
//!   uniformly or optimally.
//! - [`range_tombstones`]: [`range_tombstones::RangeTombstoneSet`], the
//!   range deletions a version holds and the tables each still waits on.
//! - [`set`]: [`set::Version`], the files of the tree at one moment, and
//!   how replaying edits rebuilds it.

pub mod edit;
pub mod filter_memory;
pub mod manifest;
pub mod range_tombstones;
pub mod set;
