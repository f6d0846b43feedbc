//! siftdb: an embedded LSM-tree key-value store.
//!
//! See DESIGN.md for the architecture and every on-disk format.

#![deny(missing_docs)]

pub mod error;
pub mod escape;
pub mod filename;
pub mod key;
pub mod options;
pub mod util;

pub use error::{Error, Result};
pub use key::{InternalKey, SequenceNumber, ValueType};
pub use options::Options;
