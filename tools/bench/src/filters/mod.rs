//! Filter measurements.
//!
//! [`timing`] holds the timing primitives of filter probes: synthetic
//! probe keys, filter copies far larger than the caches, an `lfence`
//! between probes, a random cycle for the dependent-load baseline, and
//! interleaved rounds.

pub mod timing;
