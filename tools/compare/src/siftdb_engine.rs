//! siftdb behind [`Engine`].

use std::path::Path;

use siftdb::{Db, Options, TableReads, WriteBatch, WriteOptions};

use crate::engine::{
    Engine, EngineConfig, OpenMode, Result, BITS_PER_KEY, BLOCK_SIZE, MEMTABLE_BYTES,
    RESTART_INTERVAL,
};

/// A siftdb database opened with the shared settings.
pub struct SiftdbEngine {
    db: Db,
}

/// The options every siftdb sample uses: 64 MiB memtable, 10 bits per key,
/// 4 KiB blocks, WAL without fsync unless `sync` (siftdb writes no
/// compressed blocks at all); point lookups through the memory maps, or
/// with `cfg.siftdb_block_cache` through a block cache of fjall's size.
pub fn options(mode: OpenMode, sync: bool, cfg: &EngineConfig) -> Options {
    let mut o = Options::default();
    o.write_buffer_size = MEMTABLE_BYTES;
    o.bits_per_key = BITS_PER_KEY;
    o.block_size = BLOCK_SIZE;
    o.block_restart_interval = RESTART_INTERVAL;
    o.sync = sync;
    if let Some(spec) = &cfg.siftdb_filters {
        // Checked when the flag was parsed.
        o.filters = siftdb::filter::spec::parse_filters(spec).unwrap_or_default();
    }
    if cfg.siftdb_block_cache {
        let bytes = cfg.cache_bytes.unwrap_or(cfg.fjall_cache_mib << 20);
        o.table_reads = TableReads::Cached {
            capacity: usize::try_from(bytes).unwrap_or(usize::MAX).max(64 << 10),
        };
    }
    match mode {
        OpenMode::Fresh => {
            o.create_if_missing = true;
            o.error_if_exists = true;
        }
        OpenMode::Existing => {
            o.create_if_missing = false;
            o.error_if_exists = false;
        }
    }
    o
}

impl SiftdbEngine {
    /// Opens (or creates, for [`OpenMode::Fresh`]) the database in `dir`.
    /// With `sync`, every write `fdatasync`s the WAL (`Options::sync`);
    /// `put_sync` syncs its own write either way (`WriteOptions`).
    pub fn open(
        dir: &Path,
        mode: OpenMode,
        sync: bool,
        cfg: &EngineConfig,
    ) -> Result<SiftdbEngine> {
        let db = Db::open_with(dir, options(mode, sync, cfg))?;
        Ok(SiftdbEngine { db })
    }
}

impl Engine for SiftdbEngine {
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put(key, value)?)
    }

    fn put_sync(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put(key, value)?;
        Ok(self.db.write_with(batch, &WriteOptions { sync: true })?)
    }

    fn get(&self, key: &[u8], on_value: &mut dyn FnMut(&[u8])) -> Result<bool> {
        match self.db.get(key)? {
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
        for item in self.db.range(key..).take(n + 1) {
            let (k, v) = item?;
            on_entry(&k, &v);
            read += 1;
        }
        Ok(read)
    }

    fn flush_and_settle(&self) -> Result<()> {
        self.db.flush()?;
        self.db.wait_for_compactions()?;
        Ok(())
    }

    fn describe_tree(&self) -> String {
        let stats = self.db.stats();
        let levels: Vec<String> = stats
            .levels
            .iter()
            .filter(|l| l.files > 0)
            .map(|l| format!("L{}:{}", l.level, l.files))
            .collect();
        let total: usize = stats.levels.iter().map(|l| l.files).sum();
        format!("{total} tables ({})", levels.join(" "))
    }

    fn accounted_memory(&self) -> Option<u64> {
        Some(self.db.stats().memory.total())
    }
}
