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
//!   zstd (data blocks compress with LZ4 only, per level:
//!   [`Options::compression`]), a custom comparator (keys sort bytewise),
//!   snapshots that survive a reopen.
//!
//! DESIGN.md describes the architecture and every on-disk format.
//!
//! # Example
//!
//! ```
//! use siftdb::{Db, WriteBatch};
//!
//! let dir = tempfile::tempdir()?;
//! let db = Db::builder(dir.path()).bits_per_key(12).open()?;
//! db.put("apple", "red")?;
//! let mut batch = WriteBatch::new();
//! batch.put("banana", "yellow")?;
//! batch.delete("apple")?;
//! db.write(batch)?; // atomic
//! assert_eq!(db.get("banana")?.as_deref(), Some(&b"yellow"[..]));
//! assert!(!db.contains_key("apple")?);
//! let snapshot = db.snapshot();
//! db.put("cherry", "dark red")?;
//! assert_eq!(snapshot.len()?, 1); // the snapshot does not see cherry
//! for pair in db.prefix("b") {
//!     let (key, value) = pair?;
//!     assert_eq!((key.as_slice(), value.as_slice()), (&b"banana"[..], &b"yellow"[..]));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

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
mod key_range;
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

pub use db::{
    checkpoint_temp_dir, CheckpointReport, Db, DbBuilder, LiveFile, RecoveryReport, Snapshot,
    WalReplay, CHECKPOINT_TEMP_SUFFIX,
};
pub use error::{Error, Result};
pub use iter::{DbIterator, Keys, Values};
pub use key::{InternalKey, SequenceNumber, ValueType};
pub use key_range::KeyRange;
pub use options::{
    CompactionPriority, CompactionStyle, HotKeyOptions, Options, TableReads, WriteOptions,
};
pub use sketch::read_sketch::{HotKey, HotKeys};
pub use sstable::{Compression, CompressionPolicy};
pub use stats::{KeyPrediction, LevelStats, MemoryUsage, Stats, KEY_PREDICTIONS_KEPT};
pub use version::filter_memory::{FilterMemory, LevelFilterMemory};
pub use write_batch::WriteBatch;

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
