//! [`Stats`]: counters a database keeps from the moment it is opened.
//!
//! The read counters are exact (each `get` adds its own counts once, at the
//! end), because the read-amplification benchmark divides them by the
//! number of lookups.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::sstable::TableProperties;
use crate::version::filter_memory::FilterMemory;
use crate::version::set::Version;

/// A snapshot of a database's counters and shape. Counters count events
/// since `Db::open`; the per-level figures describe the current version.
///
/// # Example
/// ```
/// let dir = tempfile::tempdir()?;
/// let db = siftdb::Db::open(dir.path())?;
/// db.put("a", "1")?;
/// db.put("c", "3")?;
/// db.flush()?;
/// db.get("b")?; // within the table's key range, but absent
/// let s = db.stats();
/// assert_eq!((s.gets, s.flushes), (1, 1));
/// // The table's filter proved "b" absent: no data block read.
/// assert_eq!((s.filter_negatives, s.data_block_reads), (1, 0));
/// assert_eq!(s.levels[0].files, 1);
/// assert!(s.memory.pinned_filters > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Point lookups (`get`) served.
    pub gets: u64,
    /// Lookups answered by a memtable (active or immutable), value or
    /// tombstone, without touching an SSTable.
    pub memtable_hits: u64,
    /// SSTables skipped because the key lies outside their key range. In
    /// levels 1 and deeper, where a binary search finds the one candidate
    /// file, a level whose candidate does not cover the key counts once.
    pub range_skips: u64,
    /// SSTable Bloom filters consulted.
    pub filter_probes: u64,
    /// Filter answers "definitely absent": SSTables skipped without any
    /// block read.
    pub filter_negatives: u64,
    /// Filter answers "maybe" for a file that holds no version of the key
    /// visible to the read (a false positive, which cost a data-block read).
    pub filter_false_positives: u64,
    /// SSTable data blocks read by point lookups (each is a checksum-verified
    /// read of one block from the mapped file).
    pub data_block_reads: u64,
    /// Memtables flushed to level-0 SSTables.
    pub flushes: u64,
    /// Bytes written by users since open (keys plus values of every put
    /// and delete).
    pub user_bytes_written: u64,
    /// Bytes of SSTables written by flushes and compactions since open.
    pub table_bytes_written: u64,
    /// Key and value bytes flushed from memtables into SSTables since the
    /// database was created (kept in the manifest).
    pub total_user_bytes_flushed: u64,
    /// Bytes of SSTables written by flushes and compactions since the
    /// database was created (kept in the manifest).
    pub total_table_bytes_written: u64,
    /// Compactions run (trivial moves included).
    pub compactions: u64,
    /// Bytes of input SSTables read by compactions.
    pub compaction_bytes_read: u64,
    /// Bytes of SSTables written by compactions.
    pub compaction_bytes_written: u64,
    /// Tombstones compaction removed because nothing older remained below.
    pub tombstones_dropped: u64,
    /// Shadowed versions compaction removed.
    pub versions_dropped: u64,
    /// Versions compaction removed because a range deletion hid them.
    pub range_deleted_dropped: u64,
    /// Range tombstones live now: in the memtables, and flushed ones still
    /// waiting on a table that may hold a version they hide (DESIGN.md
    /// 3.7). Each costs every point read a lookup, `O(log n)` once flushed.
    pub range_tombstones: u64,
    /// Data blocks read by iterators (`iter`, `range`, `prefix`, and their
    /// snapshot forms); point lookups count theirs in `data_block_reads`.
    pub scan_block_reads: u64,
    /// Tables whose prefix filter a scan over one prefix consulted
    /// ([`crate::Options::prefix_extractor`]).
    pub prefix_probes: u64,
    /// Of those, tables the prefix filter proved free of the prefix: the
    /// scan skipped them without reading a block.
    pub prefix_negatives: u64,
    /// Tables rewritten only to rebuild their filters: by
    /// [`crate::Db::rebuild_filters`], or in the background when the tree's
    /// filter memory drifted above [`crate::Options::filter_budget`]
    /// (their bytes count in `compaction_bytes_written` too).
    pub filter_rebuilds: u64,
    /// Bytes of SSTables those rebuilds wrote.
    pub filter_rebuild_bytes_written: u64,
    /// Times the manifest reached [`crate::Options::max_manifest_file_size`]
    /// and was replaced by a new one holding a snapshot of the state.
    pub manifest_rollovers: u64,
    /// One entry per level, level 0 first.
    pub levels: Vec<LevelStats>,
    /// What the filters of the current version cost and buy, per level,
    /// and the expected false positives of an absent-key lookup against
    /// the same memory spread uniformly or optimally.
    pub filter_memory: FilterMemory,
    /// Memory the database holds now, by part.
    pub memory: MemoryUsage,
    /// The distinct-key predictions of the last compactions that merged
    /// tables (at most [`KEY_PREDICTIONS_KEPT`], oldest first), each next
    /// to what the merge found. The manifest records them (tag 9, DESIGN.md
    /// 12.8), so they survive reopens.
    pub key_predictions: Vec<KeyPrediction>,
    /// One entry per live keyspace, the default first, then by id
    /// ([`crate::Keyspace::stats`] lists only its own).
    pub keyspaces: Vec<KeyspaceStats>,
}

/// The shape of one keyspace's tree now ([`Stats::keyspaces`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyspaceStats {
    /// Its id: 0 for the default keyspace.
    pub id: u32,
    /// Its name (`"default"` for id 0).
    pub name: String,
    /// One entry per level of its current version, level 0 first: files,
    /// bytes, entries, ...
    pub levels: Vec<LevelStats>,
    /// Bytes of its active and frozen memtables, as their approximate
    /// sizes count them.
    pub memtable_bytes: u64,
    /// Its frozen memtables waiting for a flush.
    pub immutable_memtables: usize,
    /// The log number the manifest holds for it: its writes in WALs
    /// numbered below it are in its tables (DESIGN.md 5).
    pub log_number: u64,
    /// Its live range tombstones, in memtables and flushed (as
    /// `Stats::range_tombstones`).
    pub range_tombstones: u64,
    /// Its memtables flushed since open.
    pub flushes: u64,
    /// Its compactions since open (trivial moves included).
    pub compactions: u64,
}

/// How many compactions' [`KeyPrediction`]s `Stats` keeps.
pub const KEY_PREDICTIONS_KEPT: usize = 64;

/// One compaction's prediction of its distinct user keys, made before it
/// ran from the merged key sketches (HyperLogLogs) of its inputs, next to
/// the exact counts the merge found. Compactions with an input that has
/// no sketch (tables written before sketches existed, or with
/// `Options::key_sketch_precision = None`) predict nothing and are not
/// listed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyPrediction {
    /// The level the compaction wrote.
    pub output_level: usize,
    /// Input tables.
    pub input_tables: usize,
    /// Internal entries of the inputs (every version and tombstone).
    pub input_entries: u64,
    /// Sum of the inputs' distinct user keys: the estimate a compaction
    /// without sketches would make (no key in two inputs).
    pub summed_distinct_keys: u64,
    /// The prediction: the merged sketch's estimate of the distinct user
    /// keys of the inputs' union.
    pub predicted_distinct_keys: f64,
    /// The sketch's relative standard error, `1.04/√m`.
    pub relative_std_error: f64,
    /// Distinct user keys the merge found in its inputs (exact).
    pub distinct_input_keys: u64,
    /// Distinct user keys it wrote: fewer than it found by the keys whose
    /// tombstones it dropped with nothing older left.
    pub distinct_output_keys: u64,
    /// When the compaction finished, in seconds since the Unix epoch (0 if
    /// the clock was before it).
    pub finished_at_unix_secs: u64,
}

impl KeyPrediction {
    /// Appends `p` to `kept`, dropping the oldest beyond
    /// [`KEY_PREDICTIONS_KEPT`].
    pub(crate) fn keep(kept: &mut std::collections::VecDeque<KeyPrediction>, p: KeyPrediction) {
        if kept.len() == KEY_PREDICTIONS_KEPT {
            kept.pop_front();
        }
        kept.push_back(p);
    }

    /// The prediction's relative error against the distinct keys the
    /// merge found, `(predicted − found) / found` (0 when it found none).
    pub fn relative_error(&self) -> f64 {
        if self.distinct_input_keys == 0 {
            0.0
        } else {
            self.predicted_distinct_keys / self.distinct_input_keys as f64 - 1.0
        }
    }
}

/// Memory a database holds, in bytes, by part (`Stats::memory`: the sum
/// over every keyspace; `Keyspace::stats` counts one keyspace's tables
/// and memtables, and the shared block cache). Table
/// data read through memory maps (scans, and point lookups with
/// [`crate::TableReads::Mapped`]) is not here: it is the kernel's page
/// cache, which the kernel may reclaim at any time and which siftdb does
/// not own (DESIGN.md 3.3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryUsage {
    /// Filter and prefix filter blocks of the current version's tables,
    /// copied into memory when each table opened, so that a filter probe
    /// never waits on the disk ([`crate::sstable::TableMemory::filters`]).
    pub pinned_filters: u64,
    /// Decoded index blocks of the current version's tables
    /// ([`crate::sstable::TableMemory::index`]).
    pub pinned_indexes: u64,
    /// The active and immutable memtables, as their approximate sizes
    /// count them (keys, values and a per-entry overhead).
    pub memtables: u64,
    /// Bytes charged to the block cache now (contents plus a per-block
    /// overhead; at most `block_cache_capacity`); 0 without one.
    pub block_cache: u64,
    /// The block cache's capacity ([`crate::TableReads::Cached`]); 0
    /// without one.
    pub block_cache_capacity: u64,
}

impl MemoryUsage {
    /// What the tables of `v` hold (memtables 0).
    pub(crate) fn of_version(v: &Version) -> MemoryUsage {
        let mut m = MemoryUsage::default();
        for (_, f) in v.files() {
            let t = f.table.memory();
            m.pinned_filters += t.filters;
            m.pinned_indexes += t.index;
        }
        m
    }

    /// Adds the tables' part of another tree (`tables`, as
    /// [`MemoryUsage::of_version`] counts it) and its `memtables` bytes.
    pub(crate) fn add_tree(&mut self, tables: &MemoryUsage, memtables: u64) {
        self.pinned_filters += tables.pinned_filters;
        self.pinned_indexes += tables.pinned_indexes;
        self.memtables += memtables;
    }

    /// The sum of the parts held now (the block cache by what it holds,
    /// not its capacity).
    pub fn total(&self) -> u64 {
        self.pinned_filters + self.pinned_indexes + self.memtables + self.block_cache
    }
}

impl Stats {
    /// Write amplification over the database's life: SSTable bytes written
    /// by flushes and compactions per byte of keys and values flushed from
    /// memtables. Writes still in the memtable are not counted on either
    /// side. 0 before the first flush.
    pub fn write_amplification(&self) -> f64 {
        if self.total_user_bytes_flushed == 0 {
            0.0
        } else {
            self.total_table_bytes_written as f64 / self.total_user_bytes_flushed as f64
        }
    }
}

/// The shape of one level of the current version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LevelStats {
    /// Level number (0 = newest, overlapping files).
    pub level: usize,
    /// SSTables in the level.
    pub files: usize,
    /// Bytes of those SSTables on disk.
    pub bytes: u64,
    /// Entries (all versions, tombstones included).
    pub entries: u64,
    /// Distinct user keys, summed over files.
    pub distinct_keys: u64,
    /// Tombstone entries.
    pub tombstones: u64,
    /// Bloom filter bits, summed over files.
    pub filter_bits: u64,
    /// Bytes of filter blocks, summed over files: the memory the filters
    /// take once mapped in.
    pub filter_bytes: u64,
}

impl LevelStats {
    /// Adds one SSTable of `file_size` bytes with properties `props` and a
    /// filter block of `filter_bytes` bytes.
    pub fn add_table(&mut self, file_size: u64, props: &TableProperties, filter_bytes: u64) {
        self.files += 1;
        self.bytes += file_size;
        self.entries += props.num_entries;
        self.distinct_keys += props.num_distinct_keys;
        self.tombstones += props.num_tombstones;
        self.filter_bits += props.filter_bits;
        self.filter_bytes += filter_bytes;
    }

    /// One summary per level of `version`, level 0 first (empty levels
    /// included); sizes are the manifest's.
    pub(crate) fn of_version(version: &Version) -> Vec<LevelStats> {
        version
            .levels
            .iter()
            .enumerate()
            .map(|(level, files)| {
                let mut s = LevelStats {
                    level,
                    ..Default::default()
                };
                for f in files {
                    let filter_bytes = f.table.filter_bytes().map_or(0, |b| b.len() as u64);
                    s.add_table(f.meta.file_size, f.table.properties(), filter_bytes);
                }
                s
            })
            .collect()
    }

    /// The sum of `levels` (its `level` is 0 and means nothing).
    pub fn sum(levels: &[LevelStats]) -> LevelStats {
        let mut t = LevelStats::default();
        for l in levels {
            t.files += l.files;
            t.bytes += l.bytes;
            t.entries += l.entries;
            t.distinct_keys += l.distinct_keys;
            t.tombstones += l.tombstones;
            t.filter_bits += l.filter_bits;
            t.filter_bytes += l.filter_bytes;
        }
        t
    }

    /// Filter bits per distinct key in this level (0 with no keys).
    pub fn bits_per_key(&self) -> f64 {
        if self.distinct_keys == 0 {
            0.0
        } else {
            self.filter_bits as f64 / self.distinct_keys as f64
        }
    }
}

/// The live atomic counters behind [`Stats`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub gets: AtomicU64,
    pub memtable_hits: AtomicU64,
    pub range_skips: AtomicU64,
    pub filter_probes: AtomicU64,
    pub filter_negatives: AtomicU64,
    pub filter_false_positives: AtomicU64,
    pub data_block_reads: AtomicU64,
    pub flushes: AtomicU64,
    pub user_bytes_written: AtomicU64,
    pub table_bytes_written: AtomicU64,
    pub compactions: AtomicU64,
    pub compaction_bytes_read: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
    pub tombstones_dropped: AtomicU64,
    pub versions_dropped: AtomicU64,
    pub range_deleted_dropped: AtomicU64,
    pub manifest_rollovers: AtomicU64,
    pub filter_rebuilds: AtomicU64,
    pub filter_rebuild_bytes_written: AtomicU64,
    /// Shared with every table iterator a scan opens.
    pub scan_block_reads: Arc<AtomicU64>,
    pub prefix_probes: AtomicU64,
    pub prefix_negatives: AtomicU64,
}

/// Counts of one lookup, added to [`Counters`] in one go.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct GetCounts {
    pub memtable_hit: bool,
    pub range_skips: u64,
    pub filter_probes: u64,
    pub filter_negatives: u64,
    pub filter_false_positives: u64,
    pub data_block_reads: u64,
}

impl Counters {
    pub(crate) fn add_get(&self, c: &GetCounts) {
        let r = Ordering::Relaxed;
        self.gets.fetch_add(1, r);
        if c.memtable_hit {
            self.memtable_hits.fetch_add(1, r);
        }
        for (counter, v) in [
            (&self.range_skips, c.range_skips),
            (&self.filter_probes, c.filter_probes),
            (&self.filter_negatives, c.filter_negatives),
            (&self.filter_false_positives, c.filter_false_positives),
            (&self.data_block_reads, c.data_block_reads),
        ] {
            if v != 0 {
                counter.fetch_add(v, r);
            }
        }
    }

    /// The counters plus the shape, the lifetime totals `(user bytes
    /// flushed, table bytes written)` and the memory held.
    pub(crate) fn snapshot(
        &self,
        levels: Vec<LevelStats>,
        filter_memory: FilterMemory,
        totals: (u64, u64),
        memory: MemoryUsage,
        key_predictions: Vec<KeyPrediction>,
    ) -> Stats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            gets: l(&self.gets),
            memtable_hits: l(&self.memtable_hits),
            range_skips: l(&self.range_skips),
            filter_probes: l(&self.filter_probes),
            filter_negatives: l(&self.filter_negatives),
            filter_false_positives: l(&self.filter_false_positives),
            data_block_reads: l(&self.data_block_reads),
            flushes: l(&self.flushes),
            user_bytes_written: l(&self.user_bytes_written),
            table_bytes_written: l(&self.table_bytes_written),
            total_user_bytes_flushed: totals.0,
            total_table_bytes_written: totals.1,
            compactions: l(&self.compactions),
            compaction_bytes_read: l(&self.compaction_bytes_read),
            compaction_bytes_written: l(&self.compaction_bytes_written),
            tombstones_dropped: l(&self.tombstones_dropped),
            versions_dropped: l(&self.versions_dropped),
            range_deleted_dropped: l(&self.range_deleted_dropped),
            range_tombstones: 0,
            manifest_rollovers: l(&self.manifest_rollovers),
            filter_rebuilds: l(&self.filter_rebuilds),
            filter_rebuild_bytes_written: l(&self.filter_rebuild_bytes_written),
            scan_block_reads: l(&self.scan_block_reads),
            prefix_probes: l(&self.prefix_probes),
            prefix_negatives: l(&self.prefix_negatives),
            levels,
            filter_memory,
            memory,
            key_predictions,
            keyspaces: Vec::new(),
        }
    }
}
