//! Benchmarks of siftdb that count the engine's work with its own
//! statistics and put each figure next to the model that predicts it.
//!
//! * [`readamp`]: data-block reads per point lookup over overlapping runs
//!   and over the levels of a tree built by leveled compaction, with and
//!   without Bloom filters (`cargo bench --bench read_amplification`).
//! * [`filters`]: each filter kind's false-positive rate against its
//!   theory, its stored bits per key, and its probe and build times, in
//!   cache and far out of it (`kvctl bench filters`); [`filters::timing`]
//!   holds the timing primitives the criterion filter benches share.
//! * [`monkey`]: one filter memory budget spread over a leveled tree's
//!   runs (Monkey) against the same memory as uniform bits per key, on one
//!   tree whose filters are rebuilt in place (`kvctl bench monkey`).

#![deny(missing_docs)]

mod chart;
pub mod filters;
pub mod monkey;
pub mod readamp;
mod rng;
mod text;
