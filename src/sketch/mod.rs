//! Probabilistic sketches the engine keeps about its keys.
//!
//! - [`hyperloglog`]: distinct user keys per SSTable, merged for unions.

pub mod hyperloglog;
