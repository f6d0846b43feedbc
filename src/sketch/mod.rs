//! Probabilistic sketches the engine keeps of its keys and its traffic.
//!
//! - [`hyperloglog`]: distinct user keys per SSTable, merged for unions;
//! - [`count_min`]: the Count-Min sketch (Cormode and Muthukrishnan 2005),
//!   frequencies that never undercount;
//! - [`top_k`]: the heaviest keys a Count-Min sketch has seen;
//! - [`read_sketch`]: both put to work on point lookups
//!   ([`crate::Options::hot_keys`], [`crate::Db::hot_keys`]);
//! - [`hot_file`]: the `HOTKEYS` file holding the last window.

pub mod count_min;
pub mod hot_file;
pub mod hyperloglog;
pub mod read_sketch;
pub mod top_k;
