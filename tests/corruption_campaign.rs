//! Corruption campaign: damage one file of a small database at a time, in
//! one region (WAL, SSTable data / index / filter / properties block or
//! footer, MANIFEST, CURRENT), by a seeded-random byte flip or truncation;
//! then open the copy, `get` every key ever written and scan everything,
//! and classify what happened:
//!
//! - (a) a clean [`Error::Corruption`] naming the damaged file, at open or
//!   on a read (or `UnsupportedVersion` naming it; or, for `CURRENT`,
//!   `NotADatabase`); a failed open leaves every file as it was;
//! - (b) the database opened and lost exactly a suffix of the WAL's
//!   batches (a torn WAL tail; WAL damage only);
//! - (c) every answer correct;
//! - (d) every answer correct, the damage confined to a data block no read
//!   needs (every entry in it hidden by a range deletion, which a scan
//!   seeks past: DESIGN.md 3.7), and `verify_file` reports it in that
//!   file.
//!
//! Anything else fails: a panic (each case runs under `catch_unwind`), a
//! wrong answer returned as if correct, an error of another kind or naming
//! another file, or an allocation above 1 GiB (the global allocator of this
//! test binary refuses it, which aborts the run with a message naming the
//! case). Damage to SSTable bytes must always be detected: every byte of a
//! table is covered by a block trailer CRC or the footer CRC, and the scan
//! reads every block but those a range deletion hides, which `verify`
//! reads.
//!
//! Levels 1 and deeper hold LZ4-compressed tables (format 2), level 0
//! uncompressed ones (format 1). The history holds range deletions, so the
//! manifest records live range tombstones (tags 10 and 11) and the WAL
//! range-deletion records (type 2); half the WAL and manifest cases aim at
//! a record holding one.
//!
//! `SIFTDB_CORRUPTION_MUTATIONS` (default 2,400) sets the number of cases,
//! spread evenly over the eight regions; `SIFTDB_CORRUPTION_SEED` the seed.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use common::campaign::{self, apply, write_batch, Update};
use common::{copy_dir, dir_contents, env_u64, scratch_dir, Rng};
use siftdb::inspect::log::read_log;
use siftdb::inspect::read_manifest;
use siftdb::inspect::sstable::{BlockHandle, Table};
use siftdb::inspect::write_batch::decode_batch;
use siftdb::{CompactionStyle, Db, Error, Options};

// ---------------------------------------------------------------------------
// A global allocator that refuses any single allocation above 1 GiB.

/// The largest single allocation a decoder may make in this campaign.
const ALLOC_LIMIT: usize = 1 << 30;
/// Number of the case being run, for the refusal message.
static CURRENT_CASE: AtomicU64 = AtomicU64::new(u64::MAX);
/// Largest allocation seen while a case ran.
static LARGEST_IN_CASE: AtomicUsize = AtomicUsize::new(0);

struct LimitedAlloc;

impl LimitedAlloc {
    fn check(size: usize) -> bool {
        if CURRENT_CASE.load(Ordering::Relaxed) != u64::MAX {
            LARGEST_IN_CASE.fetch_max(size, Ordering::Relaxed);
        }
        if size <= ALLOC_LIMIT {
            return true;
        }
        // Report without allocating: format into a stack buffer.
        let mut buf = [0u8; 160];
        let mut cur = std::io::Cursor::new(&mut buf[..]);
        let _ = write!(
            cur,
            "\ncorruption campaign: refused an allocation of {size} bytes (limit {ALLOC_LIMIT}) \
             in case #{}\n",
            CURRENT_CASE.load(Ordering::Relaxed)
        );
        let n = cur.position() as usize;
        let _ = std::io::stderr().write_all(&buf[..n]);
        false
    }
}

// SAFETY: every call is forwarded unchanged to `System`, except that
// oversized requests return null, which `GlobalAlloc` allows.
unsafe impl GlobalAlloc for LimitedAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !Self::check(layout.size()) {
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !Self::check(layout.size()) {
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !Self::check(new_size) {
            return std::ptr::null_mut();
        }
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOC: LimitedAlloc = LimitedAlloc;

// ---------------------------------------------------------------------------
// The base database.

const KEYS: u64 = 600;

fn base_options() -> Options {
    let mut o = Options::default();
    o.write_buffer_size = 64 << 10;
    o.block_size = 512;
    o.max_bytes_for_level_base = 8 << 10;
    o.level_size_multiplier = 2;
    o.target_file_size = 8 << 10;
    // Level 0 stays format 1; deeper levels are format 2 with LZ4 data
    // blocks (some stored uncompressed, with codec byte 0), so damage
    // meets both formats and both codecs.
    o.compression = "none,lz4".parse().unwrap();
    o
}

/// One batch. The last update always puts a value naming the batch, so
/// every batch changes the state and a lost suffix of batches is always
/// visible.
type Batch = Vec<Update>;

/// Key `i` of the key space.
fn key(i: u64) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

/// A batch of 1 to 5 puts and deletes; with `range`, a range deletion
/// before its last put too (`campaign::random_range_delete`, bounded).
fn random_batch(rng: &mut Rng, id: usize, range: bool) -> Batch {
    let n = 1 + rng.below(5);
    let mut b: Batch = (0..n)
        .map(|i| {
            let key = key(rng.below(KEYS));
            if i + 1 < n && rng.below(4) == 0 {
                Update::Delete(key)
            } else {
                let mut v = format!("v{id}.{i}.").into_bytes();
                let fill = rng.below(60) as usize;
                v.extend((0..fill).map(|j| b'a' + ((id + j) % 26) as u8));
                Update::Put(key, v)
            }
        })
        .collect();
    if range {
        let d = campaign::random_range_delete(rng, KEYS, key, false);
        let at = b.len() - 1;
        b.insert(at, d);
    }
    b
}

fn write(db: &Db, batch: &Batch) {
    db.write(write_batch(batch)).unwrap();
}

type Model = campaign::State;

/// The undamaged database and everything needed to judge a damaged copy.
struct Base {
    dir: PathBuf,
    /// `models[k]`: the contents with only the first `k` of the WAL's
    /// batches applied; the last is the full contents.
    models: Vec<Model>,
    /// Every key ever written.
    keys: Vec<Vec<u8>>,
    wal: String,
    /// `(offset, end)` of each WAL record.
    wal_records: Vec<(u64, u64)>,
    /// `(offset, end)` of each WAL record whose batch holds a range
    /// deletion (type 2, DESIGN.md 12.3).
    wal_range_records: Vec<(u64, u64)>,
    manifest: String,
    /// `(offset, end)` of each manifest record whose edit adds a range
    /// tombstone (tag 10) or a table to one's list (tag 11).
    manifest_range_records: Vec<(u64, u64)>,
    /// Tag 10 and tag 11 entries in the manifest, and range tombstones
    /// live at close (flushed ones and the WAL's), for the report.
    range_tags: (usize, usize, u64),
    tables: Vec<TableRegions>,
    /// Level -> number of SSTables, for the report.
    files_per_level: BTreeMap<usize, usize>,
}

/// Byte ranges of one SSTable's parts.
struct TableRegions {
    name: String,
    data: Vec<(u64, u64)>,
    index: (u64, u64),
    filter: (u64, u64),
    properties: (u64, u64),
    footer: (u64, u64),
}

/// The range a block and its 4-byte trailer occupy.
fn block_range(h: BlockHandle) -> (u64, u64) {
    (h.offset, h.offset + h.size + 4)
}

/// Builds the base database: SSTables in level 0 and at least two deeper
/// levels, written by flushes and compactions (so the manifest holds a
/// snapshot and many edits), then 40 batches left unflushed in the WAL.
/// One flushed batch in 20 holds a range deletion, and a snapshot held
/// over rounds 5 to 9 makes compactions keep versions the tombstones
/// hide, so the manifest holds tags 10 and 11, with tombstones still live
/// at the end; WAL batches 3, 11, 19, 27, 35 and the last hold one too.
fn build_base(root: &Path, rng: &mut Rng) -> Base {
    let dir = root.join("base");
    let mut history: Vec<Batch> = Vec::new();
    let db = Db::open_with(&dir, base_options()).unwrap();
    let next = |history: &mut Vec<Batch>, rng: &mut Rng, range: bool| {
        let range = range || rng.below(20) == 0;
        let b = random_batch(rng, history.len(), range);
        write(&db, &b);
        history.push(b);
    };
    // Flush by hand every 100 batches (the write buffer never fills on
    // its own) and let compaction settle each time, so that the layout,
    // and with it every case, depends only on the seed.
    let mut snapshot = None;
    for round in 0..15 {
        match round {
            5 => snapshot = Some(db.snapshot()),
            10 => snapshot = None,
            _ => {}
        }
        for _ in 0..100 {
            next(&mut history, rng, false);
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
    }
    drop(snapshot);
    // At least two level-0 files that stay (the compaction trigger is 4).
    let level0 = |db: &Db| db.live_files().iter().filter(|f| f.level == 0).count();
    while level0(&db) < 2 {
        for _ in 0..60 {
            next(&mut history, rng, false);
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
    }
    // The WAL's batches.
    let wal_batches = 40;
    for i in 0..wal_batches {
        next(&mut history, rng, i % 8 == 3 || i + 1 == wal_batches);
    }
    let live_range_tombstones = db.stats().range_tombstones;
    assert!(
        db.live_files().iter().any(|f| f
            .properties
            .compression
            .as_ref()
            .is_some_and(|c| c.compressed_blocks > 0)),
        "some data blocks are compressed"
    );
    let levels: BTreeSet<usize> = db.live_files().iter().map(|f| f.level).collect();
    let files_per_level: BTreeMap<usize, usize> =
        db.live_files().iter().fold(BTreeMap::new(), |mut m, f| {
            *m.entry(f.level).or_default() += 1;
            m
        });
    assert!(
        levels.contains(&0) && levels.len() >= 3,
        "base database should span level 0 and two deeper levels: {levels:?}"
    );
    db.close().unwrap();

    let names = common::file_names(&dir);
    let wals: Vec<&String> = names.iter().filter(|n| n.ends_with(".log")).collect();
    assert_eq!(wals.len(), 1, "{names:?}");
    let wal = wals[0].clone();
    let contents = read_log(&dir.join(&wal)).unwrap();
    assert_eq!(contents.records.len(), wal_batches, "WAL records");
    let wal_records: Vec<(u64, u64)> = contents
        .records
        .iter()
        .map(|r| (r.offset, r.offset + 12 + r.payload.len() as u64))
        .collect();
    let wal_range_records: Vec<(u64, u64)> = wal_records
        .iter()
        .zip(&history[history.len() - wal_batches..])
        .filter(|(_, b)| campaign::range_deletes(b) > 0)
        .map(|(r, _)| *r)
        .collect();
    for (rec, batch) in contents
        .records
        .iter()
        .zip(&history[history.len() - wal_batches..])
    {
        let d = decode_batch(&rec.payload).unwrap();
        assert_eq!(d.ops.len(), batch.len(), "WAL batch contents");
    }
    let manifest = std::fs::read_to_string(dir.join("CURRENT"))
        .unwrap()
        .trim_end()
        .to_string();
    let edits = read_manifest(&dir.join(&manifest)).unwrap();
    let (mut tag10, mut tag11) = (0, 0);
    let mut manifest_range_records = Vec::new();
    for r in &edits.records {
        let (a, b) = (
            r.edit.new_range_tombstones.len(),
            r.edit.range_tombstone_files.len(),
        );
        tag10 += a;
        tag11 += b;
        if a + b > 0 {
            manifest_range_records.push((r.offset, r.offset + 12 + r.payload_len));
        }
    }
    assert!(
        tag10 > 0 && tag11 > 0 && wal_range_records.len() >= 6,
        "the base should hold range tombstones in the manifest (tags 10 and 11: {tag10}, \
         {tag11}) and the WAL ({} records)",
        wal_range_records.len()
    );

    let mut model = Model::new();
    for b in &history[..history.len() - wal_batches] {
        apply(&mut model, b);
    }
    let mut models = vec![model.clone()];
    for b in &history[history.len() - wal_batches..] {
        apply(&mut model, b);
        models.push(model.clone());
    }
    let keys: BTreeSet<Vec<u8>> = history
        .iter()
        .flat_map(|b| b.iter().filter_map(|u| u.key().map(<[u8]>::to_vec)))
        .collect();

    let mut tables = Vec::new();
    for name in names.iter().filter(|n| n.ends_with(".sst")) {
        let t = Table::open(&dir.join(name), 0).unwrap();
        let f = t.footer();
        assert!(!f.filter.is_null(), "{name} has no filter");
        tables.push(TableRegions {
            name: name.clone(),
            data: t.index().iter().map(|e| block_range(e.handle)).collect(),
            index: block_range(f.index),
            filter: block_range(f.filter),
            properties: block_range(f.properties),
            footer: (t.file_size() - 64, t.file_size()),
        });
    }
    Base {
        dir,
        models,
        keys: keys.into_iter().collect(),
        wal,
        wal_records,
        wal_range_records,
        manifest,
        manifest_range_records,
        range_tags: (tag10, tag11, live_range_tombstones),
        tables,
        files_per_level,
    }
}

// ---------------------------------------------------------------------------
// Cases.

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Wal,
    Data,
    Index,
    Filter,
    Properties,
    Footer,
    Manifest,
    Current,
}

const KINDS: [Kind; 8] = [
    Kind::Wal,
    Kind::Data,
    Kind::Index,
    Kind::Filter,
    Kind::Properties,
    Kind::Footer,
    Kind::Manifest,
    Kind::Current,
];

impl Kind {
    fn is_table(self) -> bool {
        matches!(
            self,
            Kind::Data | Kind::Index | Kind::Filter | Kind::Properties | Kind::Footer
        )
    }
}

#[derive(Debug, Clone, Copy)]
enum Damage {
    /// XOR the byte at `offset` with `mask` (non-zero).
    Flip { offset: u64, mask: u8 },
    /// Cut the file to `len` bytes.
    Truncate { len: u64 },
}

#[derive(Debug)]
struct Case {
    number: u64,
    kind: Kind,
    file: String,
    damage: Damage,
    /// Aimed at a WAL or manifest record holding a range deletion.
    on_range_record: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// (a) `Corruption` (or `UnsupportedVersion`/`NotADatabase`) at open.
    ErrorAtOpen,
    /// (a) opened; reads touching the damage returned `Corruption`, every
    /// other answer was correct.
    ErrorOnRead,
    /// (b) opened; exactly a suffix of the WAL's batches is missing.
    LostWalTail,
    /// (c) every answer correct.
    AllCorrect,
    /// (d) every answer correct; the damage lies in a data block only
    /// versions a range deletion hides fill, which no read needs (a scan
    /// seeks past them), and `verify_file` reports it.
    FoundByVerify,
}

fn pick_case(base: &Base, kind: Kind, number: u64, rng: &mut Rng) -> Case {
    let in_range = |rng: &mut Rng, (lo, hi): (u64, u64)| lo + rng.below(hi - lo);
    // Half the WAL and manifest cases aim at a record holding a range
    // deletion (WAL type 2, manifest tags 10 and 11).
    let pick = |rng: &mut Rng, records: &[(u64, u64)]| {
        if rng.below(2) == 0 {
            Some(records[rng.below(records.len() as u64) as usize])
        } else {
            None
        }
    };
    let (file, region) = match kind {
        Kind::Wal => (base.wal.clone(), pick(rng, &base.wal_range_records)),
        Kind::Manifest => (
            base.manifest.clone(),
            pick(rng, &base.manifest_range_records),
        ),
        Kind::Current => ("CURRENT".to_string(), None),
        _ => {
            let t = &base.tables[rng.below(base.tables.len() as u64) as usize];
            let r = match kind {
                Kind::Data => t.data[rng.below(t.data.len() as u64) as usize],
                Kind::Index => t.index,
                Kind::Filter => t.filter,
                Kind::Properties => t.properties,
                _ => t.footer,
            };
            (t.name.clone(), Some(r))
        }
    };
    let len = std::fs::metadata(base.dir.join(&file)).unwrap().len();
    let on_range_record = !kind.is_table() && region.is_some();
    let region = region.unwrap_or((0, len));
    let damage = if rng.below(5) == 0 {
        Damage::Truncate {
            len: in_range(rng, region),
        }
    } else {
        let mask = if rng.below(2) == 0 {
            1 << rng.below(8)
        } else {
            1 + rng.below(255) as u8
        };
        Damage::Flip {
            offset: in_range(rng, region),
            mask,
        }
    };
    Case {
        number,
        kind,
        file,
        damage,
        on_range_record,
    }
}

fn apply_damage(dir: &Path, case: &Case) {
    let path = dir.join(&case.file);
    match case.damage {
        Damage::Flip { offset, mask } => {
            let mut bytes = std::fs::read(&path).unwrap();
            bytes[offset as usize] ^= mask;
            std::fs::write(&path, bytes).unwrap();
        }
        Damage::Truncate { len } => {
            let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            f.set_len(len).unwrap();
        }
    }
}

/// Checks that `e` is a clean report of damage to `case.file`.
fn check_error(case: &Case, e: &Error, when: &str) -> Result<(), String> {
    let names_file = |p: &Path| p.file_name().is_some_and(|n| *n == *case.file);
    let ok = match e {
        Error::Corruption { file, detail, .. } => {
            names_file(file) || (case.kind == Kind::Current && detail.contains("CURRENT"))
        }
        Error::UnsupportedVersion { file, .. } => names_file(file),
        Error::NotADatabase { .. } => case.kind == Kind::Current,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{when}: not a clean report of damage to {}: {e:?}",
            case.file
        ))
    }
}

/// The states (indexes into `base.models`) the database may show if it
/// opens. Only the WAL may lose writes, and only as the log format allows:
/// a WAL cut at byte `len` keeps exactly the records that end by `len`; a
/// flipped byte in the last record may make it a torn tail (its checksum
/// fails and nothing follows it); a flipped byte in any other record is
/// interior damage, which must be reported, never dropped with the
/// records after it.
fn allowed_states(base: &Base, case: &Case) -> Vec<usize> {
    let full = base.models.len() - 1;
    if case.kind != Kind::Wal {
        return vec![full];
    }
    match case.damage {
        Damage::Truncate { len } => {
            vec![base.wal_records.iter().filter(|r| r.1 <= len).count()]
        }
        Damage::Flip { offset, .. } => {
            let last = base.wal_records[full - 1];
            if offset >= last.0 {
                vec![full - 1]
            } else {
                Vec::new()
            }
        }
    }
}

/// Opens the damaged copy in `dir`, reads everything and classifies the
/// outcome, or says what was wrong.
fn evaluate(base: &Base, dir: &Path, case: &Case) -> Result<Outcome, String> {
    let before = dir_contents(dir);
    let mut opts = base_options();
    // No background compaction: it would only re-read what the scan reads.
    opts.compaction_style = CompactionStyle::None;
    let db = match Db::open_with(dir, opts) {
        Ok(db) => db,
        Err(e) => {
            check_error(case, &e, "open")?;
            if matches!(case.damage, Damage::Truncate { .. }) && case.kind == Kind::Wal {
                return Err(format!("a truncated WAL is a torn tail, not an error: {e}"));
            }
            let after = dir_contents(dir);
            if after != before {
                return Err(format!(
                    "failed open changed the files: before {:?}, after {:?}",
                    before.keys().collect::<Vec<_>>(),
                    after.keys().collect::<Vec<_>>()
                ));
            }
            return Ok(Outcome::ErrorAtOpen);
        }
    };

    // Which of the allowed states are consistent with every answer?
    let allowed = allowed_states(base, case);
    let mut consistent: BTreeSet<usize> = allowed.iter().copied().collect();
    let mut read_errors = 0;
    for key in &base.keys {
        match db.get(key) {
            Ok(v) => {
                consistent.retain(|&m| base.models[m].get(key).map(Vec::as_slice) == v.as_deref())
            }
            Err(e) => {
                check_error(case, &e, "get")?;
                read_errors += 1;
            }
        }
    }
    let mut scanned: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut scan_failed = false;
    for r in db.range(..) {
        match r {
            Ok((k, v)) => scanned.push((k.into_vec(), v.into_vec())),
            Err(e) => {
                check_error(case, &e, "scan")?;
                scan_failed = true;
                read_errors += 1;
                break;
            }
        }
    }
    consistent.retain(|&m| {
        let model = &base.models[m];
        // A scan that failed must have yielded a prefix of the model
        // before the error; one that finished, all of it.
        let len_ok = if scan_failed {
            scanned.len() <= model.len()
        } else {
            scanned.len() == model.len()
        };
        len_ok
            && scanned
                .iter()
                .zip(model.iter())
                .all(|(a, (k, v))| a.0 == *k && a.1 == *v)
    });
    drop(db);
    let full = base.models.len() - 1;
    let Some(&best) = consistent.iter().next_back() else {
        return Err(format!(
            "wrong answers: the contents match no allowed state ({} read errors)",
            read_errors
        ));
    };
    if consistent.len() > 1 {
        return Err(format!("ambiguous: states {consistent:?} all fit"));
    }
    if read_errors > 0 {
        return Ok(Outcome::ErrorOnRead);
    }
    if best == full {
        if case.kind == Kind::Data {
            return found_by_verify(dir, case);
        }
        if case.kind.is_table() {
            return Err("damage to checksummed SSTable bytes went undetected".into());
        }
        return Ok(Outcome::AllCorrect);
    }
    Ok(Outcome::LostWalTail)
}

/// For damage to a data block that every read answered around (its
/// entries all hidden by a range deletion, so a scan seeks past the block
/// unread): `verify_file`, which reads every block, must report it in the
/// damaged table.
fn found_by_verify(dir: &Path, case: &Case) -> Result<Outcome, String> {
    let path = dir.join(&case.file);
    let report = siftdb::inspect::verify_file(&path, true, &mut |_, _| {})
        .map_err(|e| format!("verify after undetected damage: {e}"))?;
    if report.problems.iter().any(|p| p.file.ends_with(&case.file)) {
        Ok(Outcome::FoundByVerify)
    } else {
        Err(format!(
            "damage to checksummed SSTable bytes went undetected, by reads and by verify: {:?}",
            report.problems
        ))
    }
}

#[test]
fn corruption_campaign() {
    let total = env_u64("SIFTDB_CORRUPTION_MUTATIONS", 2400);
    let seed = env_u64("SIFTDB_CORRUPTION_SEED", 0xc022_0b7e);
    let verbose = std::env::var_os("SIFTDB_CORRUPTION_VERBOSE").is_some();
    println!("corruption campaign: {total} mutations, SIFTDB_CORRUPTION_SEED={seed}");
    let started = std::time::Instant::now();
    let scratch = scratch_dir();
    let mut rng = Rng(seed);
    let base = build_base(scratch.path(), &mut rng);
    println!(
        "base: {} SSTables (level: files {:?}), WAL {} with {} batches ({} with a range \
         deletion), {} ({} records with range tombstones: {} tag 10, {} tag 11); {} range \
         tombstones live",
        base.tables.len(),
        base.files_per_level,
        base.wal,
        base.models.len() - 1,
        base.wal_range_records.len(),
        base.manifest,
        base.manifest_range_records.len(),
        base.range_tags.0,
        base.range_tags.1,
        base.range_tags.2
    );

    let mut counts: BTreeMap<(Kind, Outcome), u64> = BTreeMap::new();
    // The cases aimed at records holding range deletions, by outcome.
    let mut on_range: BTreeMap<(Kind, Outcome), u64> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    let mut largest_alloc = 0usize;
    let case_dir = scratch.path().join("case");
    for number in 0..total {
        let kind = KINDS[(number % KINDS.len() as u64) as usize];
        let case = pick_case(&base, kind, number, &mut rng);
        if verbose {
            eprintln!("case {case:?}");
        }
        let _ = std::fs::remove_dir_all(&case_dir);
        copy_dir(&base.dir, &case_dir);
        apply_damage(&case_dir, &case);
        LARGEST_IN_CASE.store(0, Ordering::Relaxed);
        CURRENT_CASE.store(number, Ordering::Relaxed);
        let result = catch_unwind(AssertUnwindSafe(|| evaluate(&base, &case_dir, &case)));
        CURRENT_CASE.store(u64::MAX, Ordering::Relaxed);
        largest_alloc = largest_alloc.max(LARGEST_IN_CASE.load(Ordering::Relaxed));
        match result {
            Ok(Ok(outcome)) => {
                *counts.entry((kind, outcome)).or_default() += 1;
                if case.on_range_record {
                    *on_range.entry((kind, outcome)).or_default() += 1;
                }
            }
            Ok(Err(why)) => failures.push(format!("#{} {case:?}: {why}", case.number)),
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!("#{} {case:?}: PANIC {msg}", case.number));
            }
        }
    }

    println!(
        "{:<11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "region", "err@open", "err@read", "lost-tail", "correct", "verify", "failed"
    );
    for kind in KINDS {
        let c = |o| counts.get(&(kind, o)).copied().unwrap_or(0);
        let failed = failures
            .iter()
            .filter(|f| f.contains(&format!("kind: {kind:?},")))
            .count();
        println!(
            "{:<11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
            format!("{kind:?}"),
            c(Outcome::ErrorAtOpen),
            c(Outcome::ErrorOnRead),
            c(Outcome::LostWalTail),
            c(Outcome::AllCorrect),
            c(Outcome::FoundByVerify),
            failed
        );
    }
    println!("of which aimed at range-deletion records: {on_range:?}");
    println!(
        "corruption campaign: {total} cases in {:.1} s, {} failures; largest single \
         allocation during a case: {largest_alloc} bytes",
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed; first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(25)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Every region must have produced cases, and table damage must always
    // have been detected.
    for kind in KINDS {
        let n: u64 = counts
            .iter()
            .filter(|((k, _), _)| *k == kind)
            .map(|(_, n)| n)
            .sum();
        assert!(n > 0 || total < KINDS.len() as u64, "no case for {kind:?}");
    }
}

/// A background compaction that meets a damaged data block stops there:
/// the database turns read-only with the corruption (naming the table) as
/// its background error, reads still answer from the intact versions, and
/// nothing is deleted, so a reopen without compaction reads the same.
#[test]
fn a_compaction_meeting_a_damaged_block_turns_the_database_read_only() {
    let scratch = scratch_dir();
    let dir = scratch.path().join("db");
    let mut o = Options::default();
    o.block_size = 512;
    o.compaction_style = CompactionStyle::None;
    let n = 500;
    {
        let db = Db::open_with(&dir, o.clone()).unwrap();
        for round in 0..2 {
            for i in 0..n {
                db.put(format!("k{i:04}"), format!("v{round}-{i}")).unwrap();
            }
            db.flush().unwrap();
        }
        db.close().unwrap();
    }
    // Two tables of the same keys; flip a byte inside the first data block
    // of the older one, whose every key the newer table shadows.
    let mut tables = common::files_with_ext(&dir, "sst");
    tables.sort();
    assert_eq!(tables.len(), 2, "{tables:?}");
    let older = &tables[0];
    let first_block = Table::open(older, 0).unwrap().index()[0].handle;
    let at = first_block.offset + first_block.size / 2;
    let mut bytes = std::fs::read(older).unwrap();
    bytes[at as usize] ^= 0x20;
    std::fs::write(older, &bytes).unwrap();
    let before = dir_contents(&dir);

    o.compaction_style = CompactionStyle::Leveled;
    o.level0_compaction_trigger = 2;
    let db = Db::open_with(&dir, o.clone()).unwrap();
    let name = older.file_name().unwrap().to_str().unwrap();
    match db.wait_for_compactions() {
        Err(Error::Background(m)) => {
            assert!(m.contains("compaction failed") && m.contains(name), "{m}")
        }
        other => panic!("expected Error::Background, got {other:?}"),
    }
    assert!(matches!(db.put("new", "x"), Err(Error::Background(_))));
    for i in 0..n {
        let want = format!("v1-{i}").into_bytes();
        assert_eq!(
            db.get(format!("k{i:04}")).unwrap().map(Vec::from),
            Some(want)
        );
    }
    drop(db);
    // The failed compaction's partial output, if any, is an orphan that
    // the next open removes; the two tables are as they were.
    o.compaction_style = CompactionStyle::None;
    let db = Db::open_with(&dir, o).unwrap();
    let mut after = common::files_with_ext(&dir, "sst");
    after.sort();
    assert_eq!(after, tables);
    for t in &tables {
        assert_eq!(
            std::fs::read(t).unwrap(),
            before[t.file_name().unwrap().to_str().unwrap()]
        );
    }
    for i in 0..n {
        let want = format!("v1-{i}").into_bytes();
        assert_eq!(
            db.get(format!("k{i:04}")).unwrap().map(Vec::from),
            Some(want)
        );
    }
    // A scan merges the older table too, so it meets the damage and says so.
    match db.range(..).find_map(|r| r.err()) {
        Some(Error::Corruption { file, .. }) => assert_eq!(&file, older),
        other => panic!("expected Corruption from the scan, got {other:?}"),
    }
}
