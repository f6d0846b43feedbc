//! siftdb: an embedded LSM-tree key-value store.
//!
//! See DESIGN.md for the architecture and every on-disk format.

#![deny(missing_docs)]

mod compaction;
mod db;
pub mod error;
pub mod escape;
pub mod filename;
pub mod filter;
mod iter;
pub mod key;
pub mod log;
pub mod memtable;
pub mod options;
pub mod sstable;
mod stats;
pub mod util;
pub mod version;
pub mod write_batch;

pub use db::{Db, LiveFile, Snapshot};
pub use error::{Error, Result};
pub use iter::DbIterator;
pub use key::{InternalKey, SequenceNumber, ValueType};
pub use options::{CompactionStyle, Options};
pub use stats::{LevelStats, Stats};
pub use write_batch::WriteBatch;
