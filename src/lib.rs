//! siftdb: an embedded LSM-tree key-value store whose point reads skip
//! SSTables by their Bloom filters.
//!
//! Open a [`Db`] on a directory, then `put`, `get`, `delete`, `write` a
//! [`WriteBatch`], iterate with `range` and `prefix`, take a
//! [`Snapshot`], and read the engine's counters with `stats`.
//!
//! - **Limits:** keys up to 65,535 bytes (the empty key is allowed), values
//!   up to [`key::MAX_VALUE_LEN`] (4 GiB − 128 KiB), a [`WriteBatch`] up to
//!   [`write_batch::MAX_BATCH_LEN`] (4 GiB − 1) encoded bytes; larger is
//!   [`Error::InvalidArgument`] and nothing is written.
//! - **Durability:** a write that returned survives a process crash; with
//!   [`Options::sync`] it survives a power loss. A [`WriteBatch`] is
//!   atomic.
//! - **Errors:** one [`Error`] enum; [`Error::Corruption`] names the file
//!   and offset of bad bytes. Bad bytes never cause a panic.
//! - **Not provided:** transactions across batches, column families,
//!   compression, a custom comparator (keys sort bytewise), snapshots that
//!   survive a reopen.
//!
//! DESIGN.md describes the architecture and every on-disk format.

#![deny(missing_docs)]

mod compaction;
mod db;
pub mod error;
pub mod escape;
pub mod filename;
pub mod filter;
pub mod fs;
pub mod inspect;
mod iter;
pub mod key;
pub mod log;
pub mod memtable;
pub mod options;
pub mod sketch;
pub mod sstable;
mod stats;
pub mod sync_point;
pub mod util;
pub mod version;
pub mod write_batch;

pub use db::{Db, LiveFile, RecoveryReport, Snapshot, WalReplay};
pub use error::{Error, Result};
pub use iter::DbIterator;
pub use key::{InternalKey, SequenceNumber, ValueType};
pub use options::{CompactionStyle, HotKeyOptions, Options, TableReads, WriteOptions};
pub use sketch::read_sketch::{HotKey, HotKeys};
pub use stats::{LevelStats, MemoryUsage, Stats};
pub use version::filter_memory::{FilterMemory, LevelFilterMemory};
pub use write_batch::WriteBatch;

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
