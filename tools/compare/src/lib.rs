//! siftdb-compare: db_bench-style workloads run on siftdb and on fjall 3
//! with identical settings (README.md lists them).
//!
//! - [`engine`]: the [`engine::Engine`] trait each engine sits behind, and
//!   the settings both share; [`siftdb_engine`] and [`fjall_engine`]
//!   implement it.
//! - [`workloads`]: the workloads, and [`workloads::run_one`] /
//!   [`workloads::run_group`], plain functions that run one sample on one
//!   engine and return a serialisable [`workloads::SampleResult`].
//! - [`capped`]: the capped mode (`--capped`): each sample's fill and reads
//!   in child processes inside a memory cgroup ([`cgroup`]).
//! - [`report`]: medians, ratios, the text table and the JSON document.

#![warn(missing_docs)]

pub mod capped;
pub mod cgroup;
pub mod engine;
pub mod fjall_engine;
pub mod report;
pub mod siftdb_engine;
pub mod workloads;
