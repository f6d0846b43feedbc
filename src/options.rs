//! Tuning knobs: [`Options`] for a database, fixed at open.

use std::sync::Arc;

use crate::filter::{FilterBudget, LevelFilter, PrefixExtractor};
use crate::fs::{FileSystem, StdFs};
use crate::sync_point::SyncPoints;

/// How background compaction shapes the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CompactionStyle {
    /// Level 0 holds overlapping files; levels 1.. hold disjoint files, each
    /// level about `level_size_multiplier` times the previous (LevelDB,
    /// O'Neil et al. 1996). Reads probe at most one file per level below 0.
    #[default]
    Leveled,
    /// Runs of similar size are merged together (RocksDB's universal
    /// style): less write amplification, more runs for reads to probe.
    /// Each run is one SSTable, however large: `target_file_size` does not
    /// apply to its merges.
    Tiered,
    /// No automatic compaction: every flush adds a run to level 0. Used to
    /// lay out an exact number of overlapping runs (the read-amplification
    /// benchmark) or to compact only by hand.
    None,
}

/// How a database is opened and how it lays out data. Outside this crate
/// set them by name with [`Db::builder`](crate::Db::builder) (the struct
/// is `#[non_exhaustive]`, so a literal with `..Default::default()` does
/// not compile there), or change the fields of a default:
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let db = siftdb::Db::builder(dir.path()).bits_per_key(12).open()?;
/// // The same, by fields:
/// let mut o = siftdb::Options::default();
/// o.write_buffer_size = 1 << 20;
/// o.bits_per_key = 12;
/// # drop(db);
/// # let _ = siftdb::Db::open_with(dir.path(), o)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// Bytes of keys and values (plus per-entry overhead) a memtable holds
    /// before it is frozen and flushed to a level-0 SSTable. Larger means
    /// fewer, bigger SSTables and more memory. Defaults to 64 MiB.
    pub write_buffer_size: usize,
    /// Bloom filter bits per distinct user key in each SSTable, when
    /// [`Options::filters`] is empty; the filter's
    /// false-positive rate is about `0.6185^bits_per_key` with the best
    /// number of hashes (Bloom 1970; Kirsch and Mitzenmacher 2006). 0 builds
    /// no filters: every lookup that passes a file's key-range check reads
    /// one of its data blocks. Defaults to 10 (about 0.82%).
    pub bits_per_key: u32,
    /// Number of hash probes per key; `None` uses `round(bits_per_key ·
    /// ln 2)` clamped to 1..=30, which minimises the false-positive rate.
    /// Set only to study the k trade-off. Defaults to `None`.
    pub bloom_hashes: Option<u32>,
    /// The filter of each level's tables, level 0 first; the last entry
    /// serves every deeper level (so one entry sets all levels). Empty (the
    /// default): a classic Bloom filter at `bits_per_key` on every level.
    /// Flushes build level 0's filter and a compaction builds its output
    /// level's; tables already written keep theirs, and every kind stays
    /// readable side by side. Tiered compaction writes every run to level
    /// 0. At most 7 entries (the number of levels).
    pub filters: Vec<LevelFilter>,
    /// Build no filter for tables a compaction writes to the deepest level
    /// holding data (RocksDB's `optimize_filters_for_hits`): that level
    /// holds most keys and so most filter memory, and a lookup of a key
    /// that exists stops there anyway, so a workload whose lookups almost
    /// always hit saves the memory for little cost. Absent keys then read
    /// one of its data blocks. Defaults to false.
    pub skip_filters_on_last_level: bool,
    /// One filter memory budget for the whole tree, spread over its sorted
    /// runs so that an absent-key lookup meets the fewest false positives
    /// (Monkey, SIGMOD 2017: each run's rate proportional to its keys;
    /// [`crate::filter::budget`]). Every new table (flush or compaction
    /// output) is built at the rate its run gets in the tree's shape once
    /// the table is in place; `filters` then gives only each level's kind
    /// (its sizes, `bits_per_key` and `bloom_hashes` are not used), and
    /// `skip_filters_on_last_level` still applies. Tables written earlier
    /// keep their filters until a compaction rewrites them; when the
    /// shape's drift leaves the tree's filter memory more than 1% above the
    /// budget, the background rewrites the table furthest above its run's
    /// setting, one at a time ([`crate::Stats::filter_rebuilds`]), and
    /// [`crate::Db::rebuild_filters`] brings every table to its setting at
    /// once. [`crate::Stats::filter_memory`] shows what the filters cost
    /// and buy. Defaults to `None`: every level at its `filters` setting.
    pub filter_budget: Option<FilterBudget>,
    /// Build a prefix filter in every table too, over the prefixes this
    /// extractor takes from its keys (by the table's own filter policy), so
    /// that [`crate::Db::prefix`] and a [`crate::Db::range`] whose bounds
    /// share one prefix skip every table that cannot hold it
    /// ([`crate::filter::prefix`] states the contract an extractor must
    /// keep). Tables written without it, or with an extractor of another
    /// name, are simply scanned. Defaults to `None`.
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// Target uncompressed size of an SSTable data block, in bytes. Smaller
    /// blocks cost less to read per lookup but make the index bigger.
    /// Defaults to 4 KiB.
    pub block_size: usize,
    /// Entries between restart points in a data block. Defaults to 16.
    pub block_restart_interval: usize,
    /// The codec of each level's data blocks, level 0 first, the last
    /// entry serving deeper levels (fjall's policy: for example
    /// `none,none,lz4` leaves levels 0 and 1, which are rewritten soon,
    /// uncompressed and compresses the rest with LZ4). Flushes use level
    /// 0's codec and compactions their output level's; a block that does
    /// not shrink by an eighth is stored uncompressed. Filters, indexes
    /// and properties are never compressed. A compressed block is
    /// decompressed on every mapped read, and once per cache fill with a
    /// block cache, which holds it decompressed (DESIGN.md 3.5). Tables
    /// written with a codec are format 2, which builds before this one
    /// cannot read. Defaults to none on every level (format 1 tables).
    ///
    /// zstd ([`crate::Compression::Zstd`]: smaller tables than LZ4, slower
    /// reads; DESIGN.md 13) needs siftdb's `zstd` cargo feature; without
    /// it [`Options::validate`], and so every open, refuses a policy naming
    /// zstd with [`crate::Error::InvalidArgument`] ("this build has no zstd
    /// support; rebuild with --features zstd"), also when the policy comes
    /// from a database's stored `OPTIONS`.
    pub compression: crate::sstable::CompressionPolicy,
    /// How point lookups read SSTable data blocks: through each table's
    /// memory map, or with `pread` into a bounded block cache (DESIGN.md
    /// 3.3 measures both). Scans read through the maps either way.
    /// Defaults to [`TableReads::Mapped`].
    pub table_reads: TableReads,
    /// Precision `p` of the HyperLogLog of distinct user keys each new
    /// SSTable stores (`2^p` registers, relative standard error
    /// `1.04/√(2^p)`; see [`crate::sketch::hyperloglog`]), or `None` for
    /// no sketch. Compaction predicts its output from the sketches, and
    /// [`Db::approximate_len`](crate::Db::approximate_len) sums them.
    /// Defaults to `Some(12)` (1.6%; up to 4 KiB per table, about 2 bytes
    /// per key below 1,500 keys). Must be in 4..=18.
    pub key_sketch_precision: Option<u8>,
    /// If true, [`Db::write`](crate::Db::write), [`Db::put`](crate::Db::put)
    /// and [`Db::delete`](crate::Db::delete) wait for `fdatasync` of the
    /// WAL, so the write survives power loss; if false, a write is handed
    /// to the operating system before it returns, so it survives a process
    /// crash but not a machine crash.
    /// [`Db::write_with`](crate::Db::write_with) chooses per write, whatever
    /// this says, and [`Db::persist`](crate::Db::persist) syncs on demand. Concurrent sync
    /// writes share one `fdatasync` per group commit. Defaults to false.
    pub sync: bool,
    /// A sync write queued behind a group commit yields the CPU, watching
    /// for its turn, before it sleeps: for up to twice the recent average
    /// wait of sync writes, and not at all when that is over 500 µs (a
    /// slow disk). This is RocksDB's `enable_write_thread_adaptive_yield`,
    /// kept to sync writes (whose wait is an `fdatasync`, when the CPUs
    /// are otherwise idle). On the 2-core test machine it raised 8
    /// threads' sync puts by about 20% (to 5× one thread), at the price of
    /// CPU: waiting writers then keep both cores busy (1.85 CPUs against
    /// 0.6; DESIGN.md 13). One writer alone never waits, so it is
    /// unaffected. Not stored in `OPTIONS` (a setting of the handle, like
    /// `sync`). Defaults to true.
    pub adaptive_write_yield: bool,
    /// Create the database if the directory holds none. Defaults to true.
    pub create_if_missing: bool,
    /// Refuse to open a database that already exists, with
    /// [`Error::AlreadyExists`](crate::Error::AlreadyExists). Defaults to false.
    pub error_if_exists: bool,
    /// Frozen memtables allowed to wait for flushing before writers block.
    /// Defaults to 2.
    pub max_immutable_memtables: usize,
    /// How background compaction shapes the tree. Defaults to
    /// [`CompactionStyle::Leveled`].
    pub compaction_style: CompactionStyle,
    /// Which file of a level over its budget a leveled compaction takes
    /// (levels 1 and deeper). Defaults to [`CompactionPriority::RoundRobin`].
    pub compaction_priority: CompactionPriority,
    /// Level-0 files (leveled) or sorted runs (tiered) that trigger a
    /// compaction. Defaults to 4.
    pub level0_compaction_trigger: usize,
    /// Level-0 files at which each write is delayed by 1 ms, to let
    /// compaction catch up. Defaults to 20.
    pub level0_slowdown_trigger: usize,
    /// Level-0 files at which writes stop until compaction brings the count
    /// down. Bounds memory and the files a read may probe. Defaults to 36.
    pub level0_stop_trigger: usize,
    /// Byte budget of level 1 under leveled compaction. Defaults to 256 MiB.
    pub max_bytes_for_level_base: u64,
    /// Each level's budget is this many times the previous level's.
    /// Defaults to 10.
    pub level_size_multiplier: u32,
    /// Size at which a compaction output file is cut, in bytes (outputs are
    /// cut only between user keys, so may be a little larger). Defaults to
    /// 64 MiB. Not applied to tiered merges, whose output is one run.
    pub target_file_size: u64,
    /// Size in bytes past which the manifest, a log that gains a record at
    /// every flush and compaction, is replaced by a new one holding a
    /// snapshot of the state (crash-safely: DESIGN.md 9), so that it does
    /// not grow without bound while the database stays open. A manifest
    /// whose snapshot is itself larger rolls over at twice the snapshot's
    /// size instead. Defaults to 4 MiB (replayed in milliseconds at open;
    /// about 40,000 flush edits).
    pub max_manifest_file_size: u64,
    /// Bytes of live WAL files (the one new writes go to and those older
    /// ones some keyspace still needs) past which a memtable rotation also
    /// freezes every keyspace whose memtable holds writes in the oldest
    /// live WAL, so that their flushes free it (RocksDB's
    /// `max_total_wal_size`). Matters only with keyspaces: a keyspace that
    /// takes a few writes and then stays idle would otherwise keep its
    /// oldest WAL, and every later one, until it fills its own write
    /// buffer. WAL bytes then stay near this bound plus one write buffer.
    /// 0: no bound. Not stored in `OPTIONS` (a setting of the handle, like
    /// `sync`). Defaults to 256 MiB: four default write buffers, RocksDB's
    /// rule of thumb for its own default, and well above what one
    /// keyspace's rotations keep live (one WAL, a write buffer's worth).
    pub max_total_wal_size: u64,
    /// The file system every file the database creates, writes, syncs,
    /// renames or removes goes through (reads go to `std::fs`; see
    /// [`crate::fs`]). Tests wrap it to inject I/O failures. Defaults to
    /// [`StdFs`].
    pub file_system: Arc<dyn FileSystem>,
    /// Count every point lookup ([`crate::Db::get`],
    /// [`crate::Snapshot::get`], and the read of the old value inside
    /// [`crate::Db::update`], so a read-modify-write counts once) in a
    /// Count-Min sketch of found and absent
    /// lookups with a top-K of the heaviest keys, read with
    /// [`crate::Db::hot_keys`] and saved to the `HOTKEYS` file on close
    /// (`kvctl hot`; DESIGN.md 3.4). Defaults to `None`: no sketch, no
    /// cost.
    pub hot_keys: Option<HotKeyOptions>,
    /// A callback the engine calls at each [`SyncPoint`](crate::sync_point::SyncPoint)
    /// it reaches, so that a test can pause a thread inside a race window
    /// (see [`crate::sync_point`]). Defaults to `None`: no callback, and a
    /// point costs one branch.
    pub sync_points: Option<SyncPoints>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            write_buffer_size: 64 << 20,
            bits_per_key: 10,
            bloom_hashes: None,
            filters: Vec::new(),
            skip_filters_on_last_level: false,
            filter_budget: None,
            prefix_extractor: None,
            block_size: 4 << 10,
            block_restart_interval: 16,
            compression: crate::sstable::CompressionPolicy::default(),
            table_reads: TableReads::Mapped,
            key_sketch_precision: Some(crate::sketch::hyperloglog::HyperLogLog::DEFAULT_PRECISION),
            sync: false,
            adaptive_write_yield: true,
            create_if_missing: true,
            error_if_exists: false,
            max_immutable_memtables: 2,
            compaction_style: CompactionStyle::Leveled,
            compaction_priority: CompactionPriority::RoundRobin,
            level0_compaction_trigger: 4,
            level0_slowdown_trigger: 20,
            level0_stop_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            level_size_multiplier: 10,
            target_file_size: 64 << 20,
            max_manifest_file_size: 4 << 20,
            max_total_wal_size: 256 << 20,
            file_system: Arc::new(StdFs),
            hot_keys: None,
            sync_points: None,
        }
    }
}

impl Options {
    /// Checks the fields for values the engine cannot run with.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] naming the field (also for a
    /// `compression` naming zstd in a build without the `zstd` feature).
    pub fn validate(&self) -> crate::Result<()> {
        let bad = |m: &str| Err(crate::Error::InvalidArgument(m.to_string()));
        if self.write_buffer_size < 1024 {
            return bad("write_buffer_size must be at least 1024 bytes");
        }
        if self.block_size < 64 || self.block_size > (64 << 20) {
            return bad("block_size must be between 64 bytes and 64 MiB");
        }
        if self.block_restart_interval == 0 {
            return bad("block_restart_interval must be at least 1");
        }
        if let TableReads::Cached { capacity } = self.table_reads {
            if capacity < 64 << 10 {
                return bad("table_reads: a block cache needs at least 64 KiB");
            }
        }
        if let Some(p) = self.key_sketch_precision {
            crate::sketch::hyperloglog::HyperLogLog::new(p).map_err(|_| {
                crate::Error::InvalidArgument(
                    "key_sketch_precision must be between 4 and 18".to_string(),
                )
            })?;
        }
        if self.bits_per_key > 64 {
            return bad("bits_per_key must be at most 64");
        }
        if self.filters.len() > crate::version::set::NUM_LEVELS {
            return bad("filters takes at most one entry per level (7)");
        }
        for f in &self.filters {
            f.validate().map_err(crate::Error::InvalidArgument)?;
        }
        if self.compression.levels().len() > crate::version::set::NUM_LEVELS {
            return bad("compression takes at most one entry per level (7)");
        }
        self.compression
            .check_available()
            .map_err(crate::Error::InvalidArgument)?;
        if let Some(b) = &self.filter_budget {
            b.validate().map_err(crate::Error::InvalidArgument)?;
        }
        if let Some(k) = self.bloom_hashes {
            if !(1..=30).contains(&k) {
                return bad("bloom_hashes must be between 1 and 30");
            }
        }
        if self.level0_compaction_trigger < 2
            || self.level0_slowdown_trigger < self.level0_compaction_trigger
            || self.level0_stop_trigger < self.level0_slowdown_trigger
        {
            return bad("level-0 triggers must satisfy 2 <= compaction <= slowdown <= stop");
        }
        if self.level_size_multiplier < 2 {
            return bad("level_size_multiplier must be at least 2");
        }
        if self.max_bytes_for_level_base < 1024 || self.target_file_size < 1024 {
            return bad(
                "max_bytes_for_level_base and target_file_size must be at least 1024 bytes",
            );
        }
        if self.max_manifest_file_size < 1024 {
            return bad("max_manifest_file_size must be at least 1024 bytes");
        }
        if let Some(h) = &self.hot_keys {
            h.validate()?;
        }
        if self.max_immutable_memtables == 0 {
            return bad("max_immutable_memtables must be at least 1");
        }
        Ok(())
    }
}

/// Which file of an over-full level (1 and deeper) a leveled compaction
/// merges into the level below (`Options::compaction_priority`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompactionPriority {
    /// The file after the last one compacted, in key order (LevelDB's
    /// compact pointer): every part of the key space takes its turn.
    #[default]
    RoundRobin,
    /// The file whose merge drops the most duplicate keys per byte it
    /// writes: estimated shared keys `|A| + |B| − |A ∪ B|` (from the key
    /// sketches; `|A|`, `|B|` exact) over the bytes of the file and the
    /// files it overlaps below. Files without sketches score 0; ties go
    /// round robin. DESIGN.md 6.8 measures it against `RoundRobin`.
    MostDuplicates,
}

/// The read sketch of [`Options::hot_keys`]: a Count-Min sketch of
/// `⌈e/ε⌉ × ⌈ln(1/δ)⌉` counters for found lookups and one for absent
/// lookups (Cormode and Muthukrishnan 2005), with the `k` heaviest keys.
/// The defaults give the 2,719 × 5 sketch (two of them: 106 KiB).
///
/// ```
/// let mut o = siftdb::Options::default();
/// o.hot_keys = Some(siftdb::HotKeyOptions { k: 20, ..Default::default() });
/// assert!(o.validate().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HotKeyOptions {
    /// Error per estimate as a fraction of the window's lookups `N`: an
    /// estimate exceeds the true count by at most `ε·N` with probability
    /// `1 − δ`. In `(0, 1)`, at least `e/2^24`. Defaults to 0.001.
    pub epsilon: f64,
    /// Probability the `ε·N` bound fails for one estimate, in `(0, 1)`,
    /// at least `e^−64` (≈ 1.6e−28; the sketch has `⌈ln(1/δ)⌉ ≤ 64`
    /// rows). Defaults to 0.01.
    pub delta: f64,
    /// Heaviest keys tracked (and saved), 1 to 65,536. Defaults to 100.
    pub k: usize,
    /// The window: when the sketch's lookup count `N` reaches it, every
    /// count (and `N`) is halved, so old heat fades by half per halving
    /// (the first after `window` lookups, each later one after about
    /// `window/2` more) and `N` stays below it. 1 to 2^30 (keeps the
    /// 32-bit counters below 2^31). Defaults to 2^24 (16,777,216).
    pub window: u64,
}

impl Default for HotKeyOptions {
    fn default() -> Self {
        HotKeyOptions {
            epsilon: 0.001,
            delta: 0.01,
            k: 100,
            window: 1 << 24,
        }
    }
}

impl HotKeyOptions {
    /// Checks the fields.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] naming the field (also for a
    /// `compression` naming zstd in a build without the `zstd` feature).
    pub fn validate(&self) -> crate::Result<()> {
        let bad = |m: &str| Err(crate::Error::InvalidArgument(m.to_string()));
        if crate::sketch::count_min::dimensions(self.epsilon, self.delta).is_none() {
            return bad(
                "hot_keys: epsilon must be in (0, 1) and at least e/2^24 (a row of at most 2^24 \
                 counters); delta in (0, 1) and at least e^-64 (at most 64 rows)",
            );
        }
        if !(1..=65_536).contains(&self.k) {
            return bad("hot_keys: k must be between 1 and 65536");
        }
        if !(1..=1 << 30).contains(&self.window) {
            return bad("hot_keys: window must be between 1 and 2^30 lookups");
        }
        Ok(())
    }
}

/// How point lookups read SSTable data blocks (`Options::table_reads`;
/// DESIGN.md 3.3).
///
/// ```
/// let mut o = siftdb::Options::default();
/// o.table_reads = siftdb::TableReads::Cached { capacity: 64 << 20 };
/// assert!(o.validate().is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableReads {
    /// Through each table's read-only memory map: blocks come from the
    /// kernel's page cache, which holds what memory allows and which the
    /// kernel reclaims under pressure; nothing is copied. A table needs no
    /// open file descriptor.
    Mapped,
    /// With one `pread` per block missing from a [`BlockCache`] of
    /// `capacity` bytes (contents plus about 96 bytes per block) that the
    /// database owns and counts (`Stats::memory`); a table keeps a file
    /// descriptor from its first cached read on.
    ///
    /// [`BlockCache`]: crate::sstable::block_cache::BlockCache
    Cached {
        /// Capacity in bytes; at least 64 KiB.
        capacity: usize,
    },
}

/// How one write is made durable, for [`Db::write_with`](crate::Db::write_with).
///
/// ```
/// let sync = siftdb::WriteOptions { sync: true };
/// assert!(!siftdb::WriteOptions::default().sync);
/// # let _ = sync;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Return only once the write, and every write acknowledged before it,
    /// is `fdatasync`ed in the WAL (survives a power loss). When false, the
    /// write survives a process crash but a power loss may drop it (and
    /// only a suffix of the acknowledged writes: never one with an older
    /// one missing). Defaults to false.
    pub sync: bool,
}
