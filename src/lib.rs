//! siftdb: an embedded LSM-tree key-value store whose point reads skip
//! SSTables by their Bloom filters.
//!
//! Open a [`Db`] on a directory, then `put`, `get`, `delete`,
//! `delete_range`, `write` a [`WriteBatch`], iterate with `range` and
//! `prefix`, take a [`Snapshot`], and read the engine's counters with
//! `stats`.
//!
//! - **Limits:** keys up to 65,535 bytes (the empty key is allowed), values
//!   up to [`MAX_VALUE_LEN`] (4 GiB − 128 KiB), a [`WriteBatch`] up to
//!   [`MAX_BATCH_LEN`] (4 GiB − 1) encoded bytes; larger is
//!   [`Error::InvalidArgument`] and nothing is written.
//! - **Durability:** a write that returned survives a process crash; with
//!   [`Options::sync`] it survives a power loss. A [`WriteBatch`] is
//!   atomic.
//! - **Errors:** one [`Error`] enum; [`Error::Corruption`] names the file
//!   and offset of bad bytes. Bad bytes never cause a panic.
//! - **Keyspaces** (column families): [`Db::keyspace`] opens or creates
//!   a named [`Keyspace`] with its own tables and options; a
//!   [`WriteBatch`] is atomic across keyspaces and a [`Snapshot`] sees
//!   them all at one sequence number.
//! - **Not provided:** transactions across batches, a custom comparator
//!   (keys sort bytewise), snapshots that survive a reopen.
//!
//! DESIGN.md describes the architecture and every on-disk format.
//!
//! # Cargo features
//!
//! - `zstd` (off by default): the zstd codec for data blocks
//!   ([`Compression::Zstd`] in [`Options::compression`]), by the `zstd`
//!   crate, which builds the C library. Without it LZ4 is the only codec,
//!   and a policy or a database's stored options naming zstd, or a zstd
//!   data block read, is [`Error::InvalidArgument`] ("this build has no
//!   zstd support; rebuild with --features zstd"), not corruption.
//!
//! # Stability
//!
//! The stable API is what the crate root exports, plus [`filter`] (the
//! filter policies, budget and prefix extractors [`Options`] takes) and
//! [`fs`] (the [`fs::FileSystem`] trait, for fault injection).
//! [`sync_point`] and [`Options::sync_points`] are test hooks: stable to
//! call, but their points may change. [`inspect`] is for tools and tests
//! (kvctl, the benchmarks): it and the engine internals it re-exports may
//! change in any release.
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

// The stable surface is what this file re-exports, plus three modules:
// `filter` (the filter policies, budget and prefix extractors that
// `Options` takes), `fs` (the `FileSystem` trait, for fault injection)
// and `sync_point` (test-only pause points). `inspect` holds the tools'
// readers and re-exports the engine's internals, with no semver promise.
mod compaction;
mod db;
mod error;
mod escape;
mod filename;
pub mod filter;
pub mod fs;
pub mod inspect;
mod iter;
mod key;
mod key_range;
mod keyspace_options;
mod log;
mod memtable;
mod options;
mod range_tombstone;
mod sketch;
mod slice;
mod sstable;
mod stats;
pub mod sync_point;
mod util;
mod version;
mod write_batch;

pub use db::{
    checkpoint_temp_dir, CheckpointReport, Db, DbBuilder, LiveFile, RecoveryReport, Snapshot,
    WalReplay, CHECKPOINT_TEMP_SUFFIX,
};
pub use db::{Keyspace, KeyspaceSnapshot};
pub use error::{Error, Result};
pub use iter::{DbIterator, Keys, Values};
pub use key::{SequenceNumber, ValueType, MAX_KEY_LEN, MAX_VALUE_LEN};
pub use key_range::KeyRange;
pub use keyspace_options::KeyspaceOptions;
pub use log::TornTail;
pub use options::{
    CompactionPriority, CompactionStyle, HotKeyOptions, Options, TableReads, WriteOptions,
};
pub use sketch::read_sketch::{HotKey, HotKeys};
pub use slice::Slice;
pub use sstable::{
    BlockHandle, Compression, CompressionPolicy, PrefixFilterProperties, TableProperties,
};
pub use stats::{
    KeyPrediction, KeyspaceStats, LevelStats, MemoryUsage, Stats, KEY_PREDICTIONS_KEPT,
};
pub use version::filter_memory::{FilterMemory, LevelFilterMemory};
pub use write_batch::{BatchOp, WriteBatch, MAX_BATCH_LEN};

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
