//! [`Compaction`]: which files to merge (the pickers for each
//! [`CompactionStyle`]) and the merge itself, which drops dead versions and
//! tombstones and writes new SSTables whose filters are built from the keys
//! they actually hold.
//!
//! # Rules for dropping an entry
//!
//! Let `S` be the oldest sequence number any reader may still use: the
//! oldest live [`crate::Snapshot`], or the newest visible sequence if there
//! is none. Entries are merged in internal-key order (each user key's
//! versions newest first). An entry is dropped when
//!
//! 1. a newer version of the same user key with sequence `<= S` was already
//!    seen: every reader sees that newer version instead (a *dead version*);
//!    or
//! 2. it is a tombstone with sequence `<= S` and no file outside the
//!    compaction that is *older* than its inputs may hold the key (the
//!    output is the bottommost data for that key): the tombstone hides
//!    nothing any more, and every reader would see "absent" without it.
//!
//! 3. a range tombstone of the version over its key has a sequence number
//!    above the entry's and `<= S`: every reader sees the range deletion,
//!    which hides the entry (DESIGN.md 3.7).
//!
//! Everything else is kept, so a snapshot taken before a delete keeps
//! reading the old value, and a tombstone is never dropped while an older
//! value sits in a deeper level (it would come back). This is LevelDB's rule
//! (`db/db_impl.cc`, `DoCompactionWork`).

use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::sync::Arc;

use crate::fs::FileSystem;
use crate::iter::{MergingIterator, Source};
use crate::key::{ParsedInternalKey, SequenceNumber, ValueType};
use crate::options::{CompactionPriority, CompactionStyle, Options};
use crate::range_tombstone::FragmentedRangeTombstones;
use crate::sketch::hyperloglog::HyperLogLog;
use crate::sstable::format::format_version_for;
use crate::sstable::Compression;
use crate::sstable::{Table, TableBuilder, TableOptions, TableProperties};
use crate::version::edit::{FileMetaData, VersionEdit};
use crate::version::set::{TableFile, Version, NUM_LEVELS};
use crate::{filename, Error, Result};

/// A planned merge: input files, where the output goes, and which other
/// files are older than the inputs (for the tombstone rule).
#[derive(Debug)]
pub(crate) struct Compaction {
    /// `(level, file)` for every input.
    pub inputs: Vec<(usize, Arc<TableFile>)>,
    /// Level the outputs are written to.
    pub output_level: usize,
    /// Files outside the compaction that hold older data than the inputs.
    pub older: Vec<Arc<TableFile>>,
    /// A single input with nothing to merge: the file is moved to
    /// `output_level` by a manifest edit, not rewritten.
    pub trivial_move: bool,
    /// A filter rebuild ([`crate::Db::rebuild_filters`]): every entry is
    /// copied as it is, no version or tombstone dropped, so the outputs
    /// hold exactly what the inputs held (and a level-0 table keeps its
    /// place in the newest-first order).
    pub copy_every_entry: bool,
}

/// Counters of one compaction run.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CompactionCounts {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub tombstones_dropped: u64,
    pub versions_dropped: u64,
    /// Entries dropped because a range tombstone hides them (rule 3).
    pub range_deleted_dropped: u64,
    /// Distinct user keys among the inputs' entries.
    pub distinct_input_keys: u64,
}

/// The distinct user keys of `c`'s inputs, predicted from their merged
/// key sketches before the merge runs (DESIGN.md 6.8), with the sketch's
/// relative standard error; `None` if an input has no sketch or its
/// sketch does not decode (the merge itself will then read and report any
/// damage).
pub(crate) fn predict_distinct_keys(c: &Compaction) -> Option<(f64, f64)> {
    let mut merged: Option<HyperLogLog> = None;
    for (_, f) in &c.inputs {
        let sketch = f.table.key_sketch().ok()??;
        match &mut merged {
            None => merged = Some(sketch),
            Some(m) => m.merge(&sketch),
        }
    }
    merged.map(|m| (m.estimate(), m.relative_std_error()))
}

/// Byte budget of level `level >= 1` under leveled compaction:
/// `max_bytes_for_level_base · level_size_multiplier^(level−1)`.
pub(crate) fn level_max_bytes(o: &Options, level: usize) -> f64 {
    o.max_bytes_for_level_base as f64 * (o.level_size_multiplier as f64).powi(level as i32 - 1)
}

fn total_bytes(files: &[Arc<TableFile>]) -> u64 {
    files.iter().map(|f| f.meta.file_size).sum()
}

/// The user-key range `[smallest, largest]` spanned by `files`.
fn key_range(files: &[&Arc<TableFile>]) -> Option<(Vec<u8>, Vec<u8>)> {
    let smallest = files.iter().map(|f| f.smallest_user_key()).min()?;
    let largest = files.iter().map(|f| f.largest_user_key()).max()?;
    Some((smallest.to_vec(), largest.to_vec()))
}

fn overlaps(f: &TableFile, lo: &[u8], hi: &[u8]) -> bool {
    f.largest_user_key() >= lo && f.smallest_user_key() <= hi
}

/// Files of `level` overlapping `[lo, hi]`.
fn overlapping(v: &Version, level: usize, lo: &[u8], hi: &[u8]) -> Vec<Arc<TableFile>> {
    v.levels[level]
        .iter()
        .filter(|f| overlaps(f, lo, hi))
        .cloned()
        .collect()
}

/// Level-0 files overlapping `[lo, hi]`, widened until closed: a level-0
/// file is only ever compacted together with every other level-0 file that
/// overlaps it, so that no older overlapping version is left above the
/// output (it would shadow newer data once the output sits below it).
fn level0_closure(v: &Version, lo: &[u8], hi: &[u8]) -> Vec<Arc<TableFile>> {
    let (mut lo, mut hi) = (lo.to_vec(), hi.to_vec());
    loop {
        let picked = overlapping(v, 0, &lo, &hi);
        let refs: Vec<&Arc<TableFile>> = picked.iter().collect();
        match key_range(&refs) {
            Some((l, h)) if l < lo || h > hi => {
                lo = l.min(lo);
                hi = h.max(hi);
            }
            _ => return picked,
        }
    }
}

/// Builds a compaction of `upper` (files of `level`) into `level + 1`.
fn leveled_compaction(v: &Version, level: usize, upper: Vec<Arc<TableFile>>) -> Option<Compaction> {
    if upper.is_empty() || level + 1 >= NUM_LEVELS {
        return None;
    }
    let refs: Vec<&Arc<TableFile>> = upper.iter().collect();
    let (lo, hi) = key_range(&refs)?;
    let lower = overlapping(v, level + 1, &lo, &hi);
    let trivial_move = upper.len() == 1 && lower.is_empty();
    let mut inputs: Vec<(usize, Arc<TableFile>)> = upper.into_iter().map(|f| (level, f)).collect();
    inputs.extend(lower.into_iter().map(|f| (level + 1, f)));
    let older = v.levels[level + 2..].iter().flatten().cloned().collect();
    Some(Compaction {
        inputs,
        output_level: level + 1,
        older,
        trivial_move,
        copy_every_entry: false,
    })
}

/// Leveled picker: level 0 when it holds `level0_compaction_trigger` files
/// (score = files / trigger), else the level whose bytes most exceed its
/// budget (score = bytes / budget); nothing if every score is below 1. For
/// level 0 every file is an input; for deeper levels the file after
/// `pointer[level]` in key order (round robin, as LevelDB's compact
/// pointer), plus every overlapping file one level down.
pub(crate) fn pick_leveled(
    v: &Version,
    o: &Options,
    pointer: &mut [Vec<u8>],
) -> Option<Compaction> {
    let mut best: Option<(f64, usize)> = None;
    let l0_score = v.levels[0].len() as f64 / o.level0_compaction_trigger as f64;
    if l0_score >= 1.0 {
        best = Some((l0_score, 0));
    }
    for level in 1..NUM_LEVELS - 1 {
        let score = total_bytes(&v.levels[level]) as f64 / level_max_bytes(o, level);
        if score >= 1.0 && best.is_none_or(|(b, _)| score > b) {
            best = Some((score, level));
        }
    }
    let (_, level) = best?;
    if level == 0 {
        return leveled_compaction(v, 0, v.levels[0].clone());
    }
    let files = &v.levels[level];
    let next = files
        .iter()
        .position(|f| f.largest_user_key() > pointer[level].as_slice())
        .unwrap_or(0);
    let next = match o.compaction_priority {
        CompactionPriority::RoundRobin => next,
        CompactionPriority::MostDuplicates => most_duplicates(v, level, next),
    };
    let f = Arc::clone(&files[next]);
    pointer[level] = f.largest_user_key().to_vec();
    leveled_compaction(v, level, vec![f])
}

/// The index of the file of `level` whose merge into `level + 1` drops
/// the most duplicate user keys per byte written (see
/// [`CompactionPriority::MostDuplicates`]); ties, and a level without
/// sketches, go to the round-robin choice `next` (scanning from it).
fn most_duplicates(v: &Version, level: usize, next: usize) -> usize {
    let files = &v.levels[level];
    let mut best = (0.0f64, next);
    for step in 0..files.len() {
        let i = (next + step) % files.len();
        let f = &files[i];
        let lower = overlapping(v, level + 1, f.smallest_user_key(), f.largest_user_key());
        let Some(upper) = f.table.key_sketch().ok().flatten() else {
            continue;
        };
        let mut union = upper;
        let mut lower_keys = 0u64;
        let mut complete = true;
        for g in &lower {
            match g.table.key_sketch().ok().flatten() {
                Some(s) => union.merge(&s),
                None => complete = false,
            }
            lower_keys += g.table.properties().num_distinct_keys;
        }
        if !complete || lower.is_empty() {
            continue;
        }
        let shared =
            (f.table.properties().num_distinct_keys + lower_keys) as f64 - union.estimate();
        let bytes = (f.meta.file_size + lower.iter().map(|g| g.meta.file_size).sum::<u64>()) as f64;
        let score = shared.max(0.0) / bytes;
        if score > best.0 {
            best = (score, i);
        }
    }
    best.1
}

/// Size ratio for the tiered picker: a run joins the merge while its size
/// is at most this multiple of the runs already picked.
const TIERED_SIZE_RATIO: f64 = 2.0;

/// Tiered picker (after RocksDB's universal compaction): level 0 holds
/// sorted runs, newest first. When there are at least
/// `level0_compaction_trigger` runs, merge the longest sequence of
/// consecutive runs, starting at the newest, in which each next run is at
/// most [`TIERED_SIZE_RATIO`] times the size of those before it (at least
/// two runs). If sizes grow too fast for that, merge the two newest once
/// the run count reaches `level0_slowdown_trigger`, so the count stays
/// bounded. Only consecutive runs are merged, so the output keeps its place
/// in the newest-first order.
pub(crate) fn pick_tiered(v: &Version, o: &Options) -> Option<Compaction> {
    let runs = &v.levels[0];
    if runs.len() < o.level0_compaction_trigger.max(2) {
        return None;
    }
    let mut take = 1;
    let mut sum = runs[0].meta.file_size as f64;
    while take < runs.len() && runs[take].meta.file_size as f64 <= TIERED_SIZE_RATIO * sum {
        sum += runs[take].meta.file_size as f64;
        take += 1;
    }
    if take < 2 {
        if runs.len() < o.level0_slowdown_trigger {
            return None;
        }
        take = 2;
    }
    Some(tiered_compaction(v, take))
}

/// Merges the `take` newest level-0 runs into one level-0 run.
fn tiered_compaction(v: &Version, take: usize) -> Compaction {
    let runs = &v.levels[0];
    let inputs = runs[..take].iter().map(|f| (0, Arc::clone(f))).collect();
    let older = runs[take..]
        .iter()
        .chain(v.levels[1..].iter().flatten())
        .cloned()
        .collect();
    Compaction {
        inputs,
        output_level: 0,
        older,
        trivial_move: false,
        copy_every_entry: false,
    }
}

/// A manual compaction's range of user keys, as `(lo, hi)` bounds.
pub(crate) type KeyBounds = (std::ops::Bound<Vec<u8>>, std::ops::Bound<Vec<u8>>);

/// The files of `level` a manual compaction takes: those overlapping
/// `range` (widened to a closure at level 0), or every file of the level
/// when the range is `None`. In levels 1 and deeper they are adjacent in
/// key order.
fn manual_inputs(v: &Version, level: usize, range: Option<&KeyBounds>) -> Vec<Arc<TableFile>> {
    let Some((lo, hi)) = range else {
        return v.levels[level].clone();
    };
    let hit = |f: &&Arc<TableFile>| {
        crate::key_range::overlaps(f.smallest_user_key(), f.largest_user_key(), lo, hi)
    };
    if level == 0 {
        let hits: Vec<&Arc<TableFile>> = v.levels[0].iter().filter(hit).collect();
        match key_range(&hits) {
            Some((l, h)) => level0_closure(v, &l, &h),
            None => Vec::new(),
        }
    } else {
        v.levels[level].iter().filter(hit).cloned().collect()
    }
}

/// A manual compaction of the files of `level` overlapping `range`
/// (every file of the level when the range is `None`) into `level + 1`.
pub(crate) fn pick_manual(
    v: &Version,
    level: usize,
    range: Option<&KeyBounds>,
) -> Option<Compaction> {
    leveled_compaction(v, level, manual_inputs(v, level, range))
}

/// The last step of a manual compaction: the files of `level >= 1`, the
/// deepest level holding data, overlapping the range, compacted into
/// `level` itself so that their dead versions and tombstones go too.
///
/// A file for which [`rewriting_changes_nothing`] is skipped. The others
/// form runs of files adjacent in key order, with one compaction per run:
/// a run's outputs hold only its own keys, so they stay inside its key
/// span and never overlap a skipped file (merging two runs across a
/// skipped file could cut an output spanning it). Empty when every file is
/// skipped.
pub(crate) fn pick_manual_bottommost(
    v: &Version,
    level: usize,
    range: Option<&KeyBounds>,
    table_options: &TableOptions,
    target_file_size: u64,
) -> Vec<Compaction> {
    debug_assert!(level >= 1, "level 0 is never compacted into itself");
    let files = manual_inputs(v, level, range);
    // A table that may hold versions a range tombstone hides is rewritten
    // to drop them (and let the tombstone go). The tables on some
    // tombstone's list, gathered once: asking every tombstone about every
    // table was quadratic (DESIGN.md 13).
    let on_a_list: HashSet<u64> = v
        .range_tombstones
        .iter()
        .flat_map(|t| t.pending.iter().copied())
        .collect();
    let skip = |f: &Arc<TableFile>| {
        if on_a_list.contains(&f.meta.number) {
            return false;
        }
        let last_block_offset = f.table.index().last().map_or(0, |e| e.handle.offset);
        rewriting_changes_nothing(
            f.table.properties(),
            last_block_offset,
            table_options,
            target_file_size,
        )
    };
    files
        .split(skip)
        .filter(|run| !run.is_empty())
        .map(|run| Compaction {
            inputs: run.iter().map(|f| (level, Arc::clone(f))).collect(),
            output_level: level,
            older: v.levels[level + 1..].iter().flatten().cloned().collect(),
            trivial_move: false,
            copy_every_entry: false,
        })
        .collect()
}

/// True if rewriting a bottom-level table into its own level can change
/// nothing, so a manual compaction may leave it alone. `props` are the
/// table's properties and `last_block_offset` is where its last data block
/// starts; `table_options` and `target_file_size` are what the rewrite
/// would use. That holds when the table has
///
/// 1. no tombstone (`num_tombstones == 0`): there is none to drop;
/// 2. one entry per user key (`num_entries == num_distinct_keys`): there
///    is no dead version to drop (a bottom-level table shares no user key
///    with another table of its level, so it is the only place to look);
/// 3. a filter built as `table_options` would build it: the same policy
///    name, bits per key and probes per key (or no filter, if none is
///    configured), and a prefix filter by the same extractor (or none), so
///    a changed `bits_per_key`, `bloom_hashes` or `prefix_extractor`
///    still rewrites it;
/// 4. the format version and codec the output would get (format 1 without
///    compression, format 2 with the level's codec), so a changed
///    `compression` rewrites it;
/// 5. no cut to make: its last data block starts below `target_file_size`.
///    The merge cuts an output before a new user key once the output has
///    reached the target, and every block but the last is written before
///    the last key comes, so a table whose last block starts at or past
///    the target would be split (a trivially moved level-0 table, say, or
///    one written under a larger target). A table the merge itself cut
///    passes, as its last key came while it was still below the target.
///
/// The merge would then copy every entry into one output, so the output
/// would hold the same entries and the same filter. A tombstone or an
/// older version that a live snapshot still needs makes the table be
/// rewritten anyway, uselessly but safely: the properties do not say which
/// sequence numbers those entries carry. Block size and restart interval
/// are not recorded, so a change of either alone does not cause a rewrite.
pub(crate) fn rewriting_changes_nothing(
    props: &TableProperties,
    last_block_offset: u64,
    table_options: &TableOptions,
    target_file_size: u64,
) -> bool {
    let filter_as_configured = match &table_options.filter_policy {
        None => props.filter_policy.is_empty(),
        Some(policy) => {
            // The parameters the policy records for any filter it builds.
            let shape = policy.shape(&policy.create_filter(&[]));
            let extractor = table_options.prefix_extractor.as_ref().map(|e| e.name());
            props.filter_policy == policy.name()
                && props.filter_bits_per_key == shape.bits_per_key
                && props.filter_num_hashes == shape.num_hashes
                && props.prefix_filter.as_ref().map(|p| p.extractor.as_str()) == extractor
        }
    };
    let codec_as_configured = match &props.compression {
        None => table_options.compression == Compression::None,
        Some(c) => c.codec == table_options.compression.name(),
    };
    props.num_tombstones == 0
        && props.num_entries == props.num_distinct_keys
        && filter_as_configured
        && props.format_version == format_version_for(table_options.compression)
        && codec_as_configured
        && last_block_offset < target_file_size
}

/// True if the style's picker would find work in `v`.
pub(crate) fn needs_compaction(v: &Version, o: &Options) -> bool {
    match o.compaction_style {
        CompactionStyle::Leveled => {
            v.levels[0].len() >= o.level0_compaction_trigger
                || (1..NUM_LEVELS - 1)
                    .any(|l| total_bytes(&v.levels[l]) as f64 >= level_max_bytes(o, l))
        }
        CompactionStyle::Tiered => pick_tiered(v, o).is_some(),
        CompactionStyle::None => false,
    }
}

/// The automatic compaction the style calls for, if any.
pub(crate) fn pick(v: &Version, o: &Options, pointer: &mut [Vec<u8>]) -> Option<Compaction> {
    match o.compaction_style {
        CompactionStyle::Leveled => pick_leveled(v, o, pointer),
        CompactionStyle::Tiered => pick_tiered(v, o),
        CompactionStyle::None => None,
    }
}

/// One output file of a compaction.
pub(crate) struct Output {
    pub meta: FileMetaData,
    pub table: Arc<Table>,
    /// Sequence numbers of the merge's range tombstones that hide an
    /// entry this output kept (for a snapshot, or a filter rebuild).
    pub range_tombstones_kept: BTreeSet<SequenceNumber>,
}

/// Where compaction gets what it needs from the database.
pub(crate) struct MergeContext<'a> {
    pub dir: &'a Path,
    /// Outputs are written (and, on failure, removed) through this.
    pub fs: &'a Arc<dyn FileSystem>,
    pub table_options: TableOptions,
    pub target_file_size: u64,
    /// Oldest sequence number a reader may use (`S` in the module docs).
    pub smallest_snapshot: SequenceNumber,
    /// The version's range tombstones when the merge started (rule 3).
    pub range_tombstones: Arc<FragmentedRangeTombstones>,
    /// Allocates a new file number.
    pub new_file_number: &'a dyn Fn() -> u64,
}

/// True if some file older than the compaction's inputs may hold
/// `user_key`.
fn older_may_hold(c: &Compaction, user_key: &[u8]) -> bool {
    c.older.iter().any(|f| overlaps(f, user_key, user_key))
}

/// Runs the merge: reads every input, applies the dropping rules, and
/// writes outputs of about `target_file_size` bytes each, cut only between
/// user keys (so files of a level never share a user key). Outputs are
/// synced; the directory is not (the caller syncs it once).
///
/// # Errors
/// Corruption or I/O errors from reading inputs or writing outputs; on
/// error every output written so far is deleted.
pub(crate) fn merge(
    c: &Compaction,
    ctx: &MergeContext<'_>,
) -> Result<(Vec<Output>, CompactionCounts)> {
    let mut counts = CompactionCounts {
        bytes_read: c.inputs.iter().map(|(_, f)| f.meta.file_size).sum(),
        ..Default::default()
    };
    let sources: Vec<Source> = c
        .inputs
        .iter()
        .map(|(_, f)| Source {
            iter: Box::new(
                f.table
                    .iter(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded),
            ),
            newest: f.table.properties().largest_seq,
        })
        .collect();
    let mut merged = MergingIterator::new(sources);
    let mut outputs: Vec<Output> = Vec::new();
    let mut builder: Option<(u64, TableBuilder)> = None;
    // Range tombstones hiding an entry the current output kept.
    let mut kept = BTreeSet::new();
    let result = (|| -> Result<()> {
        let mut current_key: Option<Vec<u8>> = None;
        // Sequence of the previous entry of the current user key, or MAX.
        let mut last_seq_for_key = SequenceNumber::MAX;
        while let Some((ik, value)) = merged.next_front()? {
            let p = ParsedInternalKey::parse(&ik).ok_or_else(|| {
                Error::corruption(
                    ctx.dir,
                    0,
                    "compaction input holds a malformed internal key",
                )
            })?;
            let new_key = current_key.as_deref() != Some(p.user_key);
            if new_key {
                current_key = Some(p.user_key.to_vec());
                last_seq_for_key = SequenceNumber::MAX;
                counts.distinct_input_keys += 1;
            }
            let drop = if c.copy_every_entry {
                false
            } else if last_seq_for_key <= ctx.smallest_snapshot {
                counts.versions_dropped += 1;
                true
            } else if p.value_type == ValueType::Deletion
                && p.seq <= ctx.smallest_snapshot
                && !older_may_hold(c, p.user_key)
            {
                counts.tombstones_dropped += 1;
                true
            } else if ctx
                .range_tombstones
                .max_covering(p.user_key, ctx.smallest_snapshot)
                > p.seq
            {
                counts.range_deleted_dropped += 1;
                true
            } else {
                false
            };
            last_seq_for_key = p.seq;
            if drop {
                continue;
            }
            let hiding = ctx.range_tombstones.covering(p.user_key);
            let hiding = hiding.iter().rev().take_while(|&&s| s > p.seq).copied();
            // Cut a full output only at a user-key boundary.
            if new_key {
                if let Some((_, b)) = &builder {
                    if b.estimated_size() >= ctx.target_file_size {
                        let (number, b) = builder.take().expect("checked above");
                        let mut o = finish_output(ctx.dir, number, b)?;
                        o.range_tombstones_kept = std::mem::take(&mut kept);
                        outputs.push(o);
                    }
                }
            }
            if builder.is_none() {
                let number = (ctx.new_file_number)();
                let path = filename::table_path(ctx.dir, number);
                let b =
                    TableBuilder::with_fs(Arc::clone(ctx.fs), &path, ctx.table_options.clone())?;
                builder = Some((number, b));
            }
            if let Some((_, b)) = builder.as_mut() {
                b.add(&ik, &value)?;
            }
            kept.extend(hiding);
        }
        if let Some((number, b)) = builder.take() {
            let mut o = finish_output(ctx.dir, number, b)?;
            o.range_tombstones_kept = std::mem::take(&mut kept);
            outputs.push(o);
        }
        Ok(())
    })();
    if let Err(e) = result {
        drop(builder); // an unfinished builder deletes its file
        for o in &outputs {
            let _ = ctx.fs.remove_file(o.table.path());
        }
        return Err(e);
    }
    counts.bytes_written = outputs.iter().map(|o| o.meta.file_size).sum();
    Ok((outputs, counts))
}

/// Finishes (and syncs) table `number` in `dir` and opens it. The caller
/// syncs the directory before logging the file in the manifest.
pub(crate) fn finish_output(dir: &Path, number: u64, b: TableBuilder) -> Result<Output> {
    let summary = b.finish()?;
    let path = filename::table_path(dir, number);
    let table = Arc::new(Table::open(&path, number)?);
    Ok(Output {
        meta: FileMetaData {
            number,
            file_size: summary.file_size,
            smallest: summary.smallest,
            largest: summary.largest,
            num_entries: summary.properties.num_entries,
            num_tombstones: summary.properties.num_tombstones,
        },
        table,
        range_tombstones_kept: BTreeSet::new(),
    })
}

/// The manifest edit that replaces the inputs of `c` by `outputs` (or, for
/// a trivial move, moves the single input).
pub(crate) fn edit_for(c: &Compaction, outputs: &[Output]) -> VersionEdit {
    let mut edit = VersionEdit::default();
    for (level, f) in &c.inputs {
        edit.deleted_files.push((*level as u32, f.meta.number));
    }
    if c.trivial_move {
        let (_, f) = &c.inputs[0];
        edit.new_files.push((c.output_level as u32, f.meta.clone()));
    }
    for o in outputs {
        edit.new_files.push((c.output_level as u32, o.meta.clone()));
    }
    edit
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::BloomFilterPolicy;

    const TARGET: u64 = 64 << 20;

    /// Properties of a clean table built with `TableOptions::default()`
    /// (10 bits per key, k = 7).
    fn clean() -> TableProperties {
        TableProperties {
            num_entries: 100,
            num_distinct_keys: 100,
            filter_policy: "siftdb.bloom.xxh3.v1".into(),
            filter_bits_per_key: 10,
            filter_num_hashes: 7,
            filter_bits: 1000,
            format_version: 1,
            ..Default::default()
        }
    }

    #[test]
    fn a_clean_table_needs_no_rewrite_and_each_reason_forces_one() {
        let opts = TableOptions::default();
        assert!(rewriting_changes_nothing(&clean(), 0, &opts, TARGET));

        type Change = (&'static str, fn(&mut TableProperties));
        let changed: [Change; 6] = [
            ("a tombstone", |p| p.num_tombstones = 1),
            ("a dead version", |p| p.num_entries = 101),
            ("another bits per key", |p| p.filter_bits_per_key = 8),
            ("another k", |p| p.filter_num_hashes = 6),
            ("another policy", |p| p.filter_policy = "other".into()),
            ("no filter", |p| p.filter_policy.clear()),
        ];
        for (why, change) in changed {
            let mut p = clean();
            change(&mut p);
            assert!(!rewriting_changes_nothing(&p, 0, &opts, TARGET), "{why}");
        }
        // Another codec or format version than the options would write.
        let mut newer = clean();
        newer.format_version = 2;
        assert!(!rewriting_changes_nothing(&newer, 0, &opts, TARGET));
        let lz4 = TableOptions {
            compression: Compression::Lz4,
            ..TableOptions::default()
        };
        assert!(!rewriting_changes_nothing(&clean(), 0, &lz4, TARGET));
        newer.compression = Some(crate::sstable::properties::CompressionProperties {
            codec: "lz4".into(),
            compressed_blocks: 1,
            raw_bytes: 100,
            stored_bytes: 50,
        });
        assert!(rewriting_changes_nothing(&newer, 0, &lz4, TARGET));
        assert!(!rewriting_changes_nothing(&newer, 0, &opts, TARGET));
        // A last block starting at the target: the merge would cut there.
        assert!(rewriting_changes_nothing(
            &clean(),
            TARGET - 1,
            &opts,
            TARGET
        ));
        assert!(!rewriting_changes_nothing(&clean(), TARGET, &opts, TARGET));
    }

    #[test]
    fn a_changed_prefix_extractor_rewrites_the_table() {
        use crate::filter::FixedPrefix;
        use crate::sstable::PrefixFilterProperties;
        let mut opts = TableOptions::default();
        let with_prefixes = |extractor: &str| {
            let mut p = clean();
            p.prefix_filter = Some(PrefixFilterProperties {
                extractor: extractor.into(),
                handle: crate::sstable::BlockHandle::new(0, 10),
                prefixes: 3,
            });
            p
        };
        // No extractor configured: a table with a prefix filter is rewritten.
        assert!(!rewriting_changes_nothing(
            &with_prefixes("siftdb.fixed_prefix.4"),
            0,
            &opts,
            TARGET
        ));
        opts.prefix_extractor = Some(Arc::new(FixedPrefix::new(4)));
        assert!(rewriting_changes_nothing(
            &with_prefixes("siftdb.fixed_prefix.4"),
            0,
            &opts,
            TARGET
        ));
        assert!(!rewriting_changes_nothing(
            &with_prefixes("siftdb.fixed_prefix.5"),
            0,
            &opts,
            TARGET
        ));
        assert!(!rewriting_changes_nothing(&clean(), 0, &opts, TARGET));
    }

    #[test]
    fn filters_are_compared_with_the_configured_policy() {
        let mut opts = TableOptions {
            filter_policy: Some(Arc::new(BloomFilterPolicy::with_hashes(10, 5))),
            ..Default::default()
        };
        assert!(
            !rewriting_changes_nothing(&clean(), 0, &opts, TARGET),
            "k 7 vs 5"
        );
        let mut p = clean();
        p.filter_num_hashes = 5;
        assert!(rewriting_changes_nothing(&p, 0, &opts, TARGET));

        opts.filter_policy = None;
        assert!(!rewriting_changes_nothing(&clean(), 0, &opts, TARGET));
        let mut unfiltered = clean();
        unfiltered.filter_policy.clear();
        (unfiltered.filter_bits_per_key, unfiltered.filter_num_hashes) = (0, 0);
        assert!(rewriting_changes_nothing(&unfiltered, 0, &opts, TARGET));
    }

    /// A table of `keys` (values "v") at `dir/<number>.sst`, as a level
    /// file.
    fn table_file(dir: &Path, number: u64, keys: impl Iterator<Item = u32>) -> Arc<TableFile> {
        let path = filename::table_path(dir, number);
        let mut b = TableBuilder::new(&path, TableOptions::default()).unwrap();
        for k in keys {
            let ik = crate::key::InternalKey::new(
                format!("k{k:05}").as_bytes(),
                SequenceNumber(u64::from(k) + 1),
                ValueType::Value,
            );
            b.add(ik.encoded(), b"v").unwrap();
        }
        let s = b.finish().unwrap();
        let meta = FileMetaData {
            number,
            file_size: s.file_size,
            smallest: s.smallest,
            largest: s.largest,
            num_entries: s.properties.num_entries,
            num_tombstones: 0,
        };
        Arc::new(TableFile::new(
            meta,
            Arc::new(Table::open(&path, number).unwrap()),
        ))
    }

    #[test]
    fn most_duplicates_picks_the_file_whose_merge_drops_the_most_keys() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut v = Version::empty();
        // L1: A (even keys below 2000), B (keys 2000..3000).
        v.levels[1] = vec![
            table_file(d, 1, (0..2000).step_by(2)),
            table_file(d, 2, 2000..3000),
        ];
        // L2: under A the odd keys (nothing shared), under B the same keys.
        v.levels[2] = vec![
            table_file(d, 3, (1..2000).step_by(2)),
            table_file(d, 4, 2000..3000),
        ];
        let mut o = Options {
            max_bytes_for_level_base: 1024, // L1 is over its budget
            ..Default::default()
        };
        let mut pointer = vec![Vec::new(); NUM_LEVELS];
        let c = pick_leveled(&v, &o, &mut pointer).unwrap();
        let numbers = |c: &Compaction| {
            c.inputs
                .iter()
                .map(|(_, f)| f.meta.number)
                .collect::<Vec<_>>()
        };
        assert_eq!(numbers(&c), [1, 3], "round robin takes the first file");
        o.compaction_priority = CompactionPriority::MostDuplicates;
        let mut pointer = vec![Vec::new(); NUM_LEVELS];
        let c = pick_leveled(&v, &o, &mut pointer).unwrap();
        assert_eq!(
            numbers(&c),
            [2, 4],
            "B shares its 1,000 keys with the file below"
        );
        assert_eq!(pointer[1], b"k02999");
    }
}
