//! Helpers shared by the reliability campaigns (RELIABILITY.md) that check
//! a database against a model of its contents: tests/crash_process.rs,
//! tests/io_faults.rs and tests/power_loss.rs. Each campaign keeps its own
//! workload (batch generator, key space, options, sizes) in its file; what
//! is here is what they do alike: bound a run, turn a batch into a model
//! change or a `WriteBatch`, read a database's whole contents, check the
//! directory after an open and show how a state differs from the model.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use siftdb::inspect::key_range::overlaps;
use siftdb::{Db, DbIterator, Error, Keyspace, WriteBatch};

use super::Rng;

/// The contents of a database, or of a model of one: key to value.
pub type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// One update of a batch, as the campaigns write it and as their models
/// apply it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// Put the key to the value.
    Put(Vec<u8>, Vec<u8>),
    /// Delete the key (a point tombstone).
    Delete(Vec<u8>),
    /// Delete every key between the bounds (a range tombstone,
    /// `WriteBatch::delete_range`); never empty or inverted.
    DeleteRange(Bound<Vec<u8>>, Bound<Vec<u8>>),
}

impl Update {
    /// The key a put or point delete writes; `None` for a range deletion.
    pub fn key(&self) -> Option<&[u8]> {
        match self {
            Update::Put(k, _) | Update::Delete(k) => Some(k),
            Update::DeleteRange(..) => None,
        }
    }

    /// True for a range deletion.
    pub fn is_range(&self) -> bool {
        matches!(self, Update::DeleteRange(..))
    }
}

/// `updates` as a `WriteBatch`, in order.
pub fn write_batch(updates: &[Update]) -> WriteBatch {
    let mut b = WriteBatch::new();
    for u in updates {
        match u {
            Update::Put(k, v) => b.put(k, v).unwrap(),
            Update::Delete(k) => b.delete(k).unwrap(),
            Update::DeleteRange(lo, hi) => b.delete_range((lo.clone(), hi.clone())).unwrap(),
        }
    }
    b
}

/// Adds `updates` to `batch` as writes into `ks`, in order.
pub fn add_in(batch: &mut WriteBatch, ks: &Keyspace, updates: &[Update]) {
    for u in updates {
        match u {
            Update::Put(k, v) => batch.put_in(ks, k, v).unwrap(),
            Update::Delete(k) => batch.delete_in(ks, k).unwrap(),
            Update::DeleteRange(lo, hi) => {
                batch.delete_range_in(ks, (lo.clone(), hi.clone())).unwrap()
            }
        }
    }
}

/// Applies `updates` to `model`, in order: a range deletion removes every
/// key of the model between its bounds, and a later update of the batch
/// writes over it.
pub fn apply(model: &mut State, updates: &[Update]) {
    for u in updates {
        match u {
            Update::Put(k, v) => {
                model.insert(k.clone(), v.clone());
            }
            Update::Delete(k) => {
                model.remove(k);
            }
            Update::DeleteRange(lo, hi) => model.retain(|k, _| !overlaps(k, k, lo, hi)),
        }
    }
}

/// Number of range deletions in `updates`.
pub fn range_deletes(updates: &[Update]) -> usize {
    updates.iter().filter(|u| u.is_range()).count()
}

/// A random range deletion over a key space whose key `i` is `key(i)`, for
/// `i` in `0..keys`, with keys sorting as their indexes do (zero-padded
/// numbers) and each ending in a digit. Four in five cover 1 to 4
/// consecutive indexes, the others up to a quarter of the space. Each bound
/// is a key included or excluded; one lower bound in eight is a key with
/// its last byte cut off (a prefix, which is no key: it reaches down to
/// the first key sharing it); with `unbounded`, one bound in ten is open
/// (so the range may reach past the key space: only for a campaign whose
/// database holds no other key). Never empty, never inverted, so
/// `WriteBatch::delete_range` accepts it and writes one record.
pub fn random_range_delete(
    rng: &mut Rng,
    keys: u64,
    key: impl Fn(u64) -> Vec<u8>,
    unbounded: bool,
) -> Update {
    let width = if rng.below(5) == 0 {
        1 + rng.below((keys / 4).max(1))
    } else {
        1 + rng.below(4)
    }
    .min(keys);
    let first = rng.below(keys - width + 1);
    let last = first + width - 1;
    let mut lo = if first == last || rng.below(2) == 0 {
        Bound::Included(key(first))
    } else {
        Bound::Excluded(key(first))
    };
    if rng.below(8) == 0 {
        let mut k = key(first);
        k.pop();
        lo = Bound::Included(k);
    }
    let hi = if first == last || rng.below(2) == 0 {
        Bound::Included(key(last))
    } else {
        Bound::Excluded(key(last))
    };
    if unbounded && rng.below(10) == 0 {
        lo = Bound::Unbounded;
    }
    let hi = if unbounded && rng.below(10) == 0 {
        Bound::Unbounded
    } else {
        hi
    };
    Update::DeleteRange(lo, hi)
}

/// Inserts a range deletion from [`random_range_delete`] into `updates`
/// at a random position before its last update (which the campaigns keep
/// a put naming the batch), when `rng` draws one in `one_in`; the draw
/// comes from its own `rng`, so the batch's other updates are those it
/// had without range deletions. Deterministic in `rng`'s state.
pub fn mix_in_range_delete(
    updates: &mut Vec<Update>,
    mut rng: Rng,
    one_in: u64,
    keys: u64,
    key: impl Fn(u64) -> Vec<u8>,
    unbounded: bool,
) {
    if rng.below(one_in) != 0 {
        return;
    }
    let at = rng.below(updates.len().max(1) as u64) as usize;
    let d = random_range_delete(&mut rng, keys, key, unbounded);
    updates.insert(at.min(updates.len().saturating_sub(1)), d);
}

/// The shape of [`random_updates`]: how many updates, how long the values.
pub struct Shape {
    /// Keys `0..keys`, as `key(i)` names them (see [`random_range_delete`]).
    pub keys: u64,
    /// 1 to this many puts and deletes.
    pub max_updates: u64,
    /// Up to this many filler bytes after a value's name.
    pub max_fill: u64,
    /// One piece in this many holds a range deletion too.
    pub range_one_in: u64,
    /// Range deletions may be open-ended (only where the keyspace holds no
    /// other key).
    pub unbounded: bool,
}

/// Batch `id`'s updates in the keyspace named `tag`, for the campaigns
/// across keyspaces: puts (three in ten before the last are deletes) of
/// values naming the keyspace and the batch (`<tag>:b<id>.<i>.` and some
/// filler), so a value read in another keyspace shows; the last update a
/// put, so every piece changes its keyspace; a range deletion mixed in as
/// [`mix_in_range_delete`] does.
pub fn random_updates(
    rng: &mut Rng,
    id: u64,
    tag: &str,
    shape: &Shape,
    key: impl Fn(u64) -> Vec<u8> + Copy,
) -> Vec<Update> {
    let n = 1 + rng.below(shape.max_updates);
    let mut ops: Vec<Update> = (0..n)
        .map(|i| {
            let k = key(rng.below(shape.keys));
            if i + 1 < n && rng.below(10) < 3 {
                Update::Delete(k)
            } else {
                let mut v = format!("{tag}:b{id}.{i}.").into_bytes();
                v.resize(v.len() + rng.below(shape.max_fill + 1) as usize, b'v');
                Update::Put(k, v)
            }
        })
        .collect();
    let ranges = Rng(rng.next_u64());
    mix_in_range_delete(
        &mut ops,
        ranges,
        shape.range_one_in,
        shape.keys,
        key,
        shape.unbounded,
    );
    ops
}

/// Runs `f` on its own thread; a panic or a run longer than `timeout`
/// becomes an `Err` describing it (a hung worker is left behind).
pub fn bounded<T: Send + 'static>(
    timeout: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(timeout) {
        Ok(v) => {
            let _ = handle.join();
            Ok(v)
        }
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!("hung for {timeout:?}")),
        Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Err(p) => Err(format!(
                "panicked: {}",
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            )),
            Ok(()) => Err("worker ended without a result".into()),
        },
    }
}

/// What [`read_state`] reads: the default keyspace (`Db`) or another.
pub trait Tree {
    fn scan(&self) -> DbIterator;
    fn point(&self, key: &[u8]) -> siftdb::Result<Option<siftdb::Slice>>;
}

impl Tree for Db {
    fn scan(&self) -> DbIterator {
        self.iter()
    }
    fn point(&self, key: &[u8]) -> siftdb::Result<Option<siftdb::Slice>> {
        self.get(key)
    }
}

impl Tree for Keyspace {
    fn scan(&self) -> DbIterator {
        self.iter()
    }
    fn point(&self, key: &[u8]) -> siftdb::Result<Option<siftdb::Slice>> {
        self.get(key)
    }
}

/// The contents of each keyspace of `names` in `db` ([`read_state`] over
/// `key_space`), `None` for one that does not exist; an error names the
/// keyspace.
pub fn read_keyspaces(
    db: &Db,
    names: &[&str],
    key_space: impl Iterator<Item = Vec<u8>> + Clone,
) -> Result<Vec<Option<State>>, String> {
    names
        .iter()
        .map(|name| match db.existing_keyspace(name) {
            Ok(ks) => read_state(&ks, key_space.clone())
                .map(Some)
                .map_err(|e| format!("keyspace {name}: {e}")),
            Err(Error::NoSuchKeyspace(_)) => Ok(None),
            Err(e) => Err(format!("keyspace {name}: {e}")),
        })
        .collect()
}

/// The full contents of `db`, read three ways that must agree: a forward
/// scan (keys strictly ascending), a backward scan, and a `get` of every
/// key of `key_space` (the keys the workload touches; the scan must show no
/// other key). An error of the engine, or a disagreement, is an `Err`
/// saying which.
pub fn read_state(
    db: &impl Tree,
    key_space: impl IntoIterator<Item = Vec<u8>>,
) -> Result<State, String> {
    let forward: Vec<(Vec<u8>, Vec<u8>)> = db
        .scan()
        .map(|r| r.map(|(k, v)| (k.into_vec(), v.into_vec())))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("scan: {e}"))?;
    if let Some(w) = forward.windows(2).find(|w| w[0].0 >= w[1].0) {
        return Err(format!(
            "scan yielded keys out of order or twice: {} then {}",
            String::from_utf8_lossy(&w[0].0),
            String::from_utf8_lossy(&w[1].0)
        ));
    }
    let mut backward: Vec<(Vec<u8>, Vec<u8>)> = db
        .scan()
        .rev()
        .map(|r| r.map(|(k, v)| (k.into_vec(), v.into_vec())))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("reverse scan: {e}"))?;
    backward.reverse();
    if backward != forward {
        return Err(format!(
            "backward scan ({} keys) disagrees with forward scan ({} keys)",
            backward.len(),
            forward.len()
        ));
    }
    let state: State = forward.into_iter().collect();
    let key_space: BTreeSet<Vec<u8>> = key_space.into_iter().collect();
    for k in &key_space {
        let got = db.point(k).map_err(|e| format!("get: {e}"))?;
        if got.as_deref() != state.get(k).map(Vec::as_slice) {
            return Err(format!(
                "get disagrees with scan for {}",
                String::from_utf8_lossy(k)
            ));
        }
    }
    if let Some(k) = state.keys().find(|k| !key_space.contains(*k)) {
        return Err(format!(
            "scan shows {}, outside the key space",
            String::from_utf8_lossy(k)
        ));
    }
    Ok(state)
}

/// Checks the directory after a successful open: it holds exactly
/// `CURRENT`, `LOCK`, the manifest `CURRENT` names, one WAL and every live
/// SSTable of every keyspace of `db`, and nothing else (no temporary file,
/// no orphan, no table of a dropped keyspace). Waits for the background
/// first (a keyspace's stored options may compact even when the reopen's
/// do not), so the listing cannot change under the check.
pub fn check_directory(db: &Db, dir: &Path) -> Result<(), String> {
    db.wait_for_compactions()
        .map_err(|e| format!("wait_for_compactions after open: {e}"))?;
    let names = super::file_names(dir);
    let current =
        std::fs::read_to_string(dir.join("CURRENT")).map_err(|e| format!("read CURRENT: {e}"))?;
    let manifest = current.trim_end_matches('\n').to_string();
    let live: BTreeSet<String> = db
        .keyspaces()
        .iter()
        .flat_map(|name| db.existing_keyspace(name).unwrap().live_files())
        .map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut problems = Vec::new();
    for n in &names {
        if !(n == "CURRENT"
            || n == "LOCK"
            || n == "OPTIONS"
            || *n == manifest
            || live.contains(n)
            || n.ends_with(".log"))
        {
            problems.push(format!("unexpected file {n}"));
        }
    }
    let logs = names.iter().filter(|n| n.ends_with(".log")).count();
    if logs != 1 {
        problems.push(format!("{logs} WALs, not one"));
    }
    for f in live.iter().chain([&manifest]) {
        if !names.contains(f) {
            problems.push(format!("{f} missing"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "directory not clean after open: {}; files {names:?}, live {live:?}",
            problems.join(", ")
        ))
    }
}

/// The first few keys whose values differ between `expected` and `found`,
/// one line each, with the start of each value (the campaigns' values
/// begin with the number of the batch that wrote them); `None` where the
/// key is absent. For failure messages.
pub fn diff(expected: &State, found: &State) -> Vec<String> {
    let show = |v: Option<&Vec<u8>>| {
        v.map(|v| String::from_utf8_lossy(&v[..v.len().min(12)]).into_owned())
    };
    expected
        .keys()
        .chain(found.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .filter(|k| expected.get(*k) != found.get(*k))
        .take(10)
        .map(|k| {
            format!(
                "{}: expected {:?}, found {:?}",
                String::from_utf8_lossy(k),
                show(expected.get(k)),
                show(found.get(k))
            )
        })
        .collect()
}

/// Flushes and compactions `db` has run since it was opened, and the
/// deepest level holding a table (0 when none does): how far a workload
/// drove the tree.
pub fn shape(db: &Db) -> (u64, u64, usize) {
    let stats = db.stats();
    let deepest = stats.levels.iter().rposition(|l| l.files > 0);
    (stats.flushes, stats.compactions, deepest.unwrap_or(0))
}

/// The compression the campaigns run half their cases with: LZ4 on every
/// level, so flushes, compactions and recovery write compressed data
/// blocks (format-2 tables) and kills, power cuts and failed operations
/// land in those writes and their reads.
pub fn lz4_everywhere() -> siftdb::CompressionPolicy {
    "lz4".parse().unwrap()
}

/// How the live tables of `db`'s default keyspace were compressed: per
/// level (0, or 1 and deeper), the tables of each codec (`"none"` for a
/// format-1 table), and the data blocks stored compressed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Codecs {
    pub level0: BTreeMap<String, usize>,
    pub deeper: BTreeMap<String, usize>,
    pub compressed_blocks: u64,
}

/// The [`Codecs`] of `db`'s live tables.
pub fn codecs(db: &Db) -> Codecs {
    let mut c = Codecs::default();
    for f in db.live_files() {
        let codec = match &f.properties.compression {
            Some(p) => {
                c.compressed_blocks += p.compressed_blocks;
                p.codec.clone()
            }
            None => "none".to_string(),
        };
        let at = if f.level == 0 {
            &mut c.level0
        } else {
            &mut c.deeper
        };
        *at.entry(codec).or_default() += 1;
    }
    c
}

/// Checks that compactions wrote LZ4 tables in a database run with
/// [`lz4_everywhere`]: some table lies below level 0 (where only
/// compactions put tables), every such table is LZ4, and some data blocks
/// are stored compressed. Returns the codecs.
pub fn check_lz4_compactions(db: &Db) -> Result<Codecs, String> {
    let c = codecs(db);
    check_lz4_compactions_of(&c)?;
    Ok(c)
}

/// [`check_lz4_compactions`] of codecs read before.
pub fn check_lz4_compactions_of(c: &Codecs) -> Result<(), String> {
    let lz4 = c.deeper.get("lz4").copied().unwrap_or(0);
    if lz4 == 0 || lz4 != c.deeper.values().sum::<usize>() || c.compressed_blocks == 0 {
        return Err(format!(
            "compactions should have written LZ4 tables (every table below level 0 LZ4, \
             some blocks compressed): {c:?}"
        ));
    }
    Ok(())
}

/// Tiny buffers and budgets shared by the I/O-fault and power-loss
/// campaigns: a memtable rotation every few batches, leveled compactions
/// down to level 2 or 3; `sync` as given, the default file system.
pub fn tiny_options(sync: bool) -> siftdb::Options {
    let mut o = siftdb::Options::default();
    o.write_buffer_size = 1024;
    o.block_size = 256;
    o.level0_compaction_trigger = 2;
    o.level0_slowdown_trigger = 8;
    o.level0_stop_trigger = 12;
    o.max_bytes_for_level_base = 2048;
    o.level_size_multiplier = 2;
    o.target_file_size = 1024;
    // Roll the manifest over every few edits, so that the sweeps cut and
    // fail its rollovers too.
    o.max_manifest_file_size = 1024;
    o.sync = sync;
    o
}

/// The part of `state` whose keys start with `prefix` (one writer's keys,
/// in the campaigns with several writers).
pub fn with_prefix(state: &State, prefix: &[u8]) -> State {
    state
        .range(prefix.to_vec()..)
        .take_while(|(k, _)| k.starts_with(prefix))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
