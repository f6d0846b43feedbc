//! The small interface each engine sits behind, and the settings both share.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::fjall_engine::FjallEngine;
use crate::siftdb_engine::SiftdbEngine;

/// The error type of everything in this tool: engines' errors and failed
/// checks alike, boxed.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Result with [`BoxError`].
pub type Result<T> = std::result::Result<T, BoxError>;

/// Key length in bytes, for every workload and both engines.
pub const KEY_LEN: usize = 16;
/// Value length in bytes (pseudo-random, incompressible).
pub const VALUE_LEN: usize = 100;
/// Bloom filter bits per key, on every level of both engines.
pub const BITS_PER_KEY: u32 = 10;
/// Target uncompressed data block size in bytes.
pub const BLOCK_SIZE: usize = 4 << 10;
/// Memtable size: siftdb `write_buffer_size`, fjall `max_memtable_size`.
pub const MEMTABLE_BYTES: usize = 64 << 20;
/// Entries between restart points in a data block (siftdb's default,
/// applied to fjall too, whose default is 10 on level 0 and 16 below).
pub const RESTART_INTERVAL: usize = 16;

/// Which engine a sample runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// siftdb, from this repository (`path = "../.."`).
    Siftdb,
    /// fjall 3, from crates.io.
    Fjall,
}

impl EngineKind {
    /// Both engines, in the order samples interleave them.
    pub const ALL: [EngineKind; 2] = [EngineKind::Siftdb, EngineKind::Fjall];

    /// The lowercase name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Siftdb => "siftdb",
            EngineKind::Fjall => "fjall",
        }
    }

    /// Parses a name given by [`EngineKind::name`].
    pub fn parse(s: &str) -> Option<EngineKind> {
        EngineKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// Whether [`open`] starts a new database or reopens one left on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// The directory must not hold a database yet; one is created.
    Fresh,
    /// The directory must hold a database written by the same engine.
    Existing,
}

/// Engine settings that may differ between runs of the tool; everything
/// else is one of the constants above.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineConfig {
    /// fjall's block cache capacity in MiB.
    pub fjall_cache_mib: u64,
    /// The block cache of a capped sample, in bytes, for every engine that
    /// has one (it replaces `fjall_cache_mib`); `None` when uncapped.
    pub cache_bytes: Option<u64>,
    /// siftdb reads point lookups through a block cache
    /// (`TableReads::Cached`) of the same size as fjall's, instead of
    /// through its memory maps.
    pub siftdb_block_cache: bool,
    /// siftdb's per-level filters as a spec (`siftdb::filter::spec`, e.g.
    /// `blocked-bloom:10`) instead of classic Bloom at [`BITS_PER_KEY`]
    /// on every level; `None`: the shared setting.
    #[serde(default)]
    pub siftdb_filters: Option<String>,
    /// fjall's background worker threads (`None`: fjall's default,
    /// min(cores, 4)).
    pub fjall_worker_threads: Option<usize>,
}

/// One open database. Both engines implement it; a workload sees only this.
///
/// Every method takes `&self` so that several threads can write at once
/// (the `fillsync` workloads).
pub trait Engine: Send + Sync {
    /// Writes `key` = `value`; the write has reached the operating system
    /// (not the disk) when this returns.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;

    /// Writes `key` = `value` and `fdatasync`s the log before returning.
    fn put_sync(&self, key: &[u8], value: &[u8]) -> Result<()>;

    /// Looks `key` up; calls `on_value` with the value if it is present and
    /// returns whether it was.
    fn get(&self, key: &[u8], on_value: &mut dyn FnMut(&[u8])) -> Result<bool>;

    /// Positions an iterator at the first key >= `key` and reads that entry
    /// and up to `n` more, calling `on_entry` with each (key, value);
    /// returns the number of entries read (at most `n + 1`).
    fn seek_and_next(
        &self,
        key: &[u8],
        n: usize,
        on_entry: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize>;

    /// Writes the memtable out to a table and waits until background
    /// compaction has nothing left to do (as far as the engine lets one
    /// tell).
    fn flush_and_settle(&self) -> Result<()>;

    /// A one-line description of the tree on disk (tables per level).
    fn describe_tree(&self) -> String;

    /// The memory the engine says it holds, in bytes, where it reports one
    /// (siftdb: `Stats::memory`; fjall: `None`).
    fn accounted_memory(&self) -> Option<u64> {
        None
    }
}

/// Opens an engine's database in `dir`. `sync` makes [`Engine::put`]
/// behave as [`Engine::put_sync`] where the engine only offers sync as an
/// open-time option (siftdb's `Options::sync`).
pub fn open(
    kind: EngineKind,
    dir: &Path,
    mode: OpenMode,
    sync: bool,
    cfg: &EngineConfig,
) -> Result<Box<dyn Engine>> {
    Ok(match kind {
        EngineKind::Siftdb => Box::new(SiftdbEngine::open(dir, mode, sync, cfg)?),
        EngineKind::Fjall => Box::new(FjallEngine::open(dir, mode, cfg)?),
    })
}
