//! fjall 3 behind [`Engine`].
//!
//! Durability as configured here (read from fjall 3.1.13's source): each
//! `Keyspace::insert` appends to the journal's 8 KiB `BufWriter` and then,
//! because `manual_journal_persist` is false (fjall's default, kept), calls
//! `persist(PersistMode::Buffer)`, which flushes that buffer with a `write`
//! before `insert` returns. So every acknowledged write has reached the
//! operating system and survives a process crash, not a power loss: the
//! same guarantee as siftdb with `Options::sync = false`. A synced write is
//! `insert` followed by `Database::persist(PersistMode::SyncData)`
//! (`fdatasync`, as siftdb's `Options::sync`).

use std::path::Path;
use std::time::{Duration, Instant};

use fjall::config::{
    BlockSizePolicy, BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry,
    RestartIntervalPolicy,
};
use fjall::{
    AbstractTree, CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode,
};

use crate::engine::{
    Engine, EngineConfig, OpenMode, Result, BITS_PER_KEY, BLOCK_SIZE, MEMTABLE_BYTES,
    RESTART_INTERVAL,
};

/// The one keyspace every sample writes to.
const KEYSPACE: &str = "bench";

/// How long [`FjallEngine::flush_and_settle`] waits for fjall's background
/// to go quiet before giving up with an error.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(600);

/// A fjall database and its one keyspace, opened with the shared settings.
pub struct FjallEngine {
    // Field order: the keyspace handle is dropped before the database.
    ks: Keyspace,
    db: Database,
}

/// The keyspace options every fjall sample uses: 64 MiB memtable, 10 bits
/// per key Bloom filters on every level (fjall's default is a 0.01% false
/// positive rate on level 0), 4 KiB blocks, no compression of data or
/// index blocks, restart interval 16, journal flushed to the OS by every
/// write.
pub fn keyspace_options() -> KeyspaceCreateOptions {
    KeyspaceCreateOptions::default()
        .max_memtable_size(MEMTABLE_BYTES as u64)
        .data_block_size_policy(BlockSizePolicy::all(BLOCK_SIZE as u32))
        .filter_policy(FilterPolicy::all(FilterPolicyEntry::Bloom(
            BloomConstructionPolicy::BitsPerKey(BITS_PER_KEY as f32),
        )))
        .data_block_compression_policy(CompressionPolicy::disabled())
        .index_block_compression_policy(CompressionPolicy::disabled())
        .data_block_restart_interval_policy(RestartIntervalPolicy::all(RESTART_INTERVAL as u8))
        .manual_journal_persist(false)
}

impl FjallEngine {
    /// Opens (or creates, for [`OpenMode::Fresh`]) the database in `dir`
    /// with a block cache of `cfg.fjall_cache_mib` MiB (`cfg.cache_bytes`
    /// bytes in a capped sample).
    pub fn open(dir: &Path, mode: OpenMode, cfg: &EngineConfig) -> Result<FjallEngine> {
        let holds_files = dir.exists() && std::fs::read_dir(dir)?.next().is_some();
        match mode {
            OpenMode::Fresh if holds_files => {
                return Err(format!("fjall: {} is not empty", dir.display()).into())
            }
            OpenMode::Existing if !holds_files => {
                return Err(format!("fjall: no database in {}", dir.display()).into())
            }
            _ => {}
        }
        let mut builder = Database::builder(dir)
            .cache_size(cfg.cache_bytes.unwrap_or(cfg.fjall_cache_mib << 20))
            .journal_compression(CompressionType::None)
            .manual_journal_persist(false);
        if let Some(n) = cfg.fjall_worker_threads {
            builder = builder.worker_threads(n);
        }
        let db = builder.open()?;
        let ks = db.keyspace(KEYSPACE, keyspace_options)?;
        Ok(FjallEngine { ks, db })
    }
}

impl Engine for FjallEngine {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.ks.insert(key, value)?)
    }

    fn put_sync(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.ks.insert(key, value)?;
        Ok(self.db.persist(PersistMode::SyncData)?)
    }

    fn get(&self, key: &[u8], on_value: &mut dyn FnMut(&[u8])) -> Result<bool> {
        match self.ks.get(key)? {
            Some(v) => {
                on_value(&v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn seek_and_next(
        &self,
        key: &[u8],
        n: usize,
        on_entry: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<usize> {
        let mut read = 0;
        for guard in self.ks.range(key..).take(n + 1) {
            let (k, v) = guard.into_inner()?;
            on_entry(&k, &v);
            read += 1;
        }
        Ok(read)
    }

    /// Rotates the memtable and waits for its flush (fjall's
    /// `rotate_memtable_and_wait`), then waits until fjall's background is
    /// quiet: no queued flush, no sealed memtable, no compaction running,
    /// and no compaction finished, for 200 ms. fjall has no public "wait
    /// for compactions": its workers run one compaction step per message,
    /// and messages are sent after each flush, so this is as settled as
    /// fjall gets on its own.
    fn flush_and_settle(&self) -> Result<()> {
        self.ks.rotate_memtable_and_wait()?;
        let start = Instant::now();
        let mut quiet_polls = 0;
        let mut last_completed = self.db.compactions_completed();
        while quiet_polls < 4 {
            std::thread::sleep(Duration::from_millis(50));
            let completed = self.db.compactions_completed();
            let idle = self.db.outstanding_flushes() == 0
                && self.ks.sealed_memtable_count() == 0
                && self.db.active_compactions() == 0
                && completed == last_completed;
            last_completed = completed;
            quiet_polls = if idle { quiet_polls + 1 } else { 0 };
            if start.elapsed() > SETTLE_TIMEOUT {
                return Err("fjall: background did not go quiet within 10 minutes".into());
            }
        }
        Ok(())
    }

    fn describe_tree(&self) -> String {
        let tree = &self.ks.tree;
        let levels: Vec<String> = (0..7)
            .filter_map(|i| tree.level_table_count(i).map(|n| (i, n)))
            .filter(|&(_, n)| n > 0)
            .map(|(i, n)| format!("L{i}:{n}"))
            .collect();
        format!("{} tables ({})", self.ks.table_count(), levels.join(" "))
    }
}
