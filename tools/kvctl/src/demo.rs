//! `kvctl demo`: imports a real dataset built into the binary, reads every
//! key back, looks up 100k absent keys, and reports what the Bloom filters
//! saved, measured with [`siftdb::Db::stats`] before and after each phase.
//!
//! Data: Debian package names with a JSON summary each (63,681 lines of
//! `NAME<TAB>JSON`, sorted), and an English word list (104,334 words, 849
//! of them also package names). The words that are not package names are
//! the absent keys.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{self, Cursor, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use flate2::read::MultiGzDecoder;
use indicatif::ProgressBar;
use siftdb::filter::bloom::{theoretical_fpr, BloomFilterPolicy};
use siftdb::{Db, Options, Stats};

use crate::data::{import_lines, split_line, LineFormat};
use crate::error::{write_failed, CliError, EXIT_CORRUPTION, EXIT_IO};
use crate::format::{count, group, human_bytes, ratio, Align, Table};
use crate::stats::levels_table;

static PACKAGES_GZ: &[u8] = include_bytes!("../../../tests/data/debian-packages.tsv.gz");
static WORDS_GZ: &[u8] = include_bytes!("../../../tests/data/english-words.txt.gz");

/// Memtable size: small, so the 12 MB dataset spans many SSTables.
const WRITE_BUFFER_SIZE: usize = 512 << 10;
/// Bloom filter bits per key of the main run.
const BITS_PER_KEY: u32 = 10;
/// The report is only meaningful if lookups have several files to skip.
const MIN_TABLES: u64 = 8;

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  kvctl demo\n\n\
Builds two databases (Bloom filters with 10 bits per key, and none) from a\n\
built-in dataset of Debian packages, reads every value back, looks up\n\
103,485 English words that are not package names, and reports data-block\n\
reads, files skipped and the measured false-positive rate. Exits 3 if any\n\
value read back differs or any absent key is found.")]
pub struct DemoArgs {
    /// Build the databases in DIR/bloom-10 and DIR/no-filter (kept) instead of a temporary directory
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Keep the temporary directory and print its path
    #[arg(long)]
    pub keep: bool,
    /// Skip the comparison run without Bloom filters
    #[arg(long)]
    pub no_compare: bool,
}

/// Lookup counters between two [`Stats`] snapshots.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    gets: u64,
    memtable_hits: u64,
    range_skips: u64,
    filter_probes: u64,
    filter_negatives: u64,
    filter_false_positives: u64,
    data_block_reads: u64,
}

impl Counts {
    fn between(a: &Stats, b: &Stats) -> Counts {
        Counts {
            gets: b.gets - a.gets,
            memtable_hits: b.memtable_hits - a.memtable_hits,
            range_skips: b.range_skips - a.range_skips,
            filter_probes: b.filter_probes - a.filter_probes,
            filter_negatives: b.filter_negatives - a.filter_negatives,
            filter_false_positives: b.filter_false_positives - a.filter_false_positives,
            data_block_reads: b.data_block_reads - a.data_block_reads,
        }
    }

    /// Filter probes whose key was not in the file: each is either a
    /// negative or a false positive.
    fn probes_not_hits(&self) -> u64 {
        self.filter_negatives + self.filter_false_positives
    }

    fn per_lookup(&self, n: u64) -> f64 {
        ratio(n, self.gets)
    }
}

/// One lookup phase.
#[derive(Debug, Default, Clone, Copy)]
struct Phase {
    lookups: u64,
    found: u64,
    /// Present keys whose value differs from the input or is missing.
    mismatched: u64,
    counts: Counts,
    elapsed: Duration,
}

impl Phase {
    fn micros_per_lookup(&self) -> f64 {
        if self.lookups == 0 {
            0.0
        } else {
            self.elapsed.as_secs_f64() * 1e6 / self.lookups as f64
        }
    }
}

/// One database built and measured.
struct Run {
    bits_per_key: u32,
    path: PathBuf,
    import_keys: u64,
    import_bytes: u64,
    import_time: Duration,
    compactions: u64,
    tables: u64,
    stats_after_reopen: Stats,
    present: Phase,
    absent: Phase,
}

struct Dataset<'a> {
    packages_raw: &'a [u8],
    pairs: Vec<(&'a [u8], &'a [u8])>,
    words: u64,
    absent: Vec<&'a [u8]>,
}

fn gunzip(data: &[u8], what: &str) -> Result<Vec<u8>, CliError> {
    let mut out = Vec::with_capacity(data.len() * 6);
    MultiGzDecoder::new(data)
        .read_to_end(&mut out)
        .map_err(|e| CliError::new(EXIT_IO, format!("decompressing built-in {what}: {e}")))?;
    Ok(out)
}

fn lines(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    data.split(|&b| b == b'\n').filter(|l| !l.is_empty())
}

fn load<'a>(packages: &'a [u8], words: &'a [u8]) -> Result<Dataset<'a>, CliError> {
    let mut pairs = Vec::with_capacity(64 << 10);
    for (i, line) in lines(packages).enumerate() {
        match split_line(line) {
            Ok(kv) => pairs.push(kv),
            Err(m) => {
                return Err(CliError::new(
                    EXIT_IO,
                    format!("built-in packages line {}: {m}", i + 1),
                ))
            }
        }
    }
    let names: HashSet<&[u8]> = pairs.iter().map(|(k, _)| *k).collect();
    let all_words: Vec<&[u8]> = lines(words).collect();
    let absent = all_words
        .iter()
        .copied()
        .filter(|w| !names.contains(w))
        .collect();
    Ok(Dataset {
        packages_raw: packages,
        pairs,
        words: all_words.len() as u64,
        absent,
    })
}

/// Default options (leveled compaction) scaled down to the dataset: small
/// memtables, and compaction outputs cut at the same size, so the tree has
/// many SSTables for lookups to skip.
fn options(bits_per_key: u32) -> Options {
    let mut o = Options::default();
    o.write_buffer_size = WRITE_BUFFER_SIZE;
    o.target_file_size = WRITE_BUFFER_SIZE as u64;
    o.bits_per_key = bits_per_key;
    o
}

/// Imports the packages into a fresh database at `path`, reopens it and
/// runs both lookup phases.
fn build_and_measure(path: &Path, bits_per_key: u32, data: &Dataset<'_>) -> Result<Run, CliError> {
    let mut create = options(bits_per_key);
    create.error_if_exists = true;
    let db = Db::open_with(path, create).map_err(|e| {
        CliError::from(e).with_hint(format!(
            "the demo needs a fresh directory; remove {} or choose another --dir",
            path.display()
        ))
    })?;
    let sum = import_lines(
        &db,
        &db.keyspace(crate::keyspace::DEFAULT)?,
        Cursor::new(data.packages_raw),
        LineFormat::Raw,
        "built-in packages",
        &ProgressBar::hidden(),
    )?;
    db.flush()?;
    db.wait_for_compactions()?;
    let import_time = sum.elapsed;
    let compactions = db.stats().compactions;
    db.close()?;

    let mut reopen = options(bits_per_key);
    reopen.create_if_missing = false;
    let db = Db::open_with(path, reopen)?;
    // Nothing should be pending, but lookups must not race a compaction.
    db.wait_for_compactions()?;
    let s0 = db.stats();
    let tables = s0.levels.iter().map(|l| l.files as u64).sum();

    let start = Instant::now();
    let mut present = Phase::default();
    for (k, v) in &data.pairs {
        present.lookups += 1;
        match db.get(k)? {
            Some(got) => {
                present.found += 1;
                if got != *v {
                    present.mismatched += 1;
                }
            }
            None => present.mismatched += 1,
        }
    }
    present.elapsed = start.elapsed();
    let s1 = db.stats();
    present.counts = Counts::between(&s0, &s1);

    let start = Instant::now();
    let mut absent = Phase::default();
    for w in &data.absent {
        absent.lookups += 1;
        if db.get(w)?.is_some() {
            absent.found += 1;
        }
    }
    absent.elapsed = start.elapsed();
    let s2 = db.stats();
    absent.counts = Counts::between(&s1, &s2);
    db.close()?;

    Ok(Run {
        bits_per_key,
        path: path.to_path_buf(),
        import_keys: sum.keys,
        import_bytes: sum.bytes,
        import_time,
        compactions,
        tables,
        stats_after_reopen: s0,
        present,
        absent,
    })
}

fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

fn emit(s: &str) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    out.write_all(s.as_bytes())
        .and_then(|_| out.flush())
        .map_err(write_failed)
}

fn import_section(r: &Run) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "database      {}", r.path.display());
    let _ = writeln!(
        s,
        "options       {} Bloom filter bits per key, leveled compaction,\n              \
         write buffer and target file size {}",
        r.bits_per_key,
        human_bytes(WRITE_BUFFER_SIZE as u64),
    );
    let _ = writeln!(
        s,
        "imported      {}, {} of keys and values, in {:.2} s (batches of {})",
        count(r.import_keys, "key"),
        human_bytes(r.import_bytes),
        r.import_time.as_secs_f64(),
        crate::data::IMPORT_BATCH
    );
    let levels_used = r
        .stats_after_reopen
        .levels
        .iter()
        .filter(|l| l.files > 0)
        .count();
    let _ = writeln!(
        s,
        "SSTables      {} in {} after {} (closed and reopened before the lookups)",
        group(r.tables),
        count(levels_used as u64, "level"),
        count(r.compactions, "compaction"),
    );
    s.push_str(&levels_table(&r.stats_after_reopen.levels, false).render("  "));
    s
}

fn lookup_section(r: &Run) -> String {
    let (p, a) = (&r.present, &r.absent);
    let mut t = Table::new(&[
        ("", Align::Left),
        ("present keys", Align::Right),
        ("absent keys", Align::Right),
    ]);
    let mut row = |name: &str, pv: String, av: String| t.row(vec![name.to_string(), pv, av]);
    row("lookups", group(p.lookups), group(a.lookups));
    row("found", group(p.found), group(a.found));
    row(
        "values differing from the input",
        group(p.mismatched),
        "-".into(),
    );
    let per = |ph: &Phase, n: u64| format!("{:.3}", ph.counts.per_lookup(n));
    row(
        "data-block reads per lookup",
        per(p, p.counts.data_block_reads),
        per(a, a.counts.data_block_reads),
    );
    row(
        "SSTables skipped by key range per lookup",
        per(p, p.counts.range_skips),
        per(a, a.counts.range_skips),
    );
    row(
        "SSTables skipped by filter per lookup",
        per(p, p.counts.filter_negatives),
        per(a, a.counts.filter_negatives),
    );
    row(
        "filter probes per lookup",
        per(p, p.counts.filter_probes),
        per(a, a.counts.filter_probes),
    );
    row(
        "filter false positives",
        group(p.counts.filter_false_positives),
        group(a.counts.filter_false_positives),
    );
    row(
        "memtable hits",
        group(p.counts.memtable_hits),
        group(a.counts.memtable_hits),
    );
    row(
        "time per lookup",
        format!("{:.2} µs", p.micros_per_lookup()),
        format!("{:.2} µs", a.micros_per_lookup()),
    );
    let mut s = t.render("  ");
    let levels = &r.stats_after_reopen.levels;
    let l0 = levels.first().map_or(0, |l| l.files);
    let deeper = levels.iter().skip(1).filter(|l| l.files > 0).count();
    let _ = writeln!(
        s,
        "A lookup checks every level-0 SSTable (key range, then filter) but only one SSTable\n\
         per deeper level, found by binary search over disjoint key ranges: here at most {}\n\
         of the {} per lookup. The filter then decides whether a data block is read.",
        l0 + deeper,
        r.tables
    );
    s
}

fn fpr_section(r: &Run) -> String {
    let (p, a) = (&r.present.counts, &r.absent.counts);
    let fp = p.filter_false_positives + a.filter_false_positives;
    let not_hits = p.probes_not_hits() + a.probes_not_hits();
    let k = BloomFilterPolicy::new(r.bits_per_key).num_hashes();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "measured  {} false positives / {} filter probes of files without the key = {}",
        group(fp),
        group(not_hits),
        pct(ratio(fp, not_hits))
    );
    let _ = writeln!(
        s,
        "          (absent keys alone: {} / {} = {})",
        group(a.filter_false_positives),
        group(a.probes_not_hits()),
        pct(ratio(a.filter_false_positives, a.probes_not_hits()))
    );
    let _ = writeln!(
        s,
        "theory    (1 - e^(-{k}/{b}))^{k} = {}   ({b} bits per key, k = {k} hashes)",
        pct(theoretical_fpr(f64::from(r.bits_per_key), k)),
        b = r.bits_per_key
    );
    s
}

fn compare_section(with: &Run, without: &Run) -> String {
    let mut t = Table::new(&[
        ("", Align::Left),
        ("10 bits/key", Align::Right),
        ("no filters", Align::Right),
    ]);
    let reads = |ph: &Phase| format!("{:.3}", ph.counts.per_lookup(ph.counts.data_block_reads));
    let us = |ph: &Phase| format!("{:.2} µs", ph.micros_per_lookup());
    let filter_bytes = |r: &Run| {
        let bits: u64 = r
            .stats_after_reopen
            .levels
            .iter()
            .map(|l| l.filter_bits)
            .sum();
        human_bytes(bits / 8)
    };
    let disk = |r: &Run| human_bytes(r.stats_after_reopen.levels.iter().map(|l| l.bytes).sum());
    t.row(vec![
        "data-block reads per absent lookup".into(),
        reads(&with.absent),
        reads(&without.absent),
    ]);
    t.row(vec![
        "data-block reads per present lookup".into(),
        reads(&with.present),
        reads(&without.present),
    ]);
    t.row(vec![
        "time per absent lookup".into(),
        us(&with.absent),
        us(&without.absent),
    ]);
    t.row(vec![
        "time per present lookup".into(),
        us(&with.present),
        us(&without.present),
    ]);
    t.row(vec![
        "filters on disk".into(),
        filter_bytes(with),
        filter_bytes(without),
    ]);
    t.row(vec!["SSTables on disk".into(), disk(with), disk(without)]);
    let mut s = t.render("  ");
    let r_with = with.absent.counts.data_block_reads;
    let r_without = without.absent.counts.data_block_reads;
    if r_without > 0 {
        let _ = writeln!(
            s,
            "filters avoided {} of {} data-block reads for absent keys ({})",
            group(r_without.saturating_sub(r_with)),
            group(r_without),
            pct(1.0 - ratio(r_with, r_without))
        );
    }
    s
}

/// Problems with a run, empty if it is correct.
fn check(r: &Run, data: &Dataset<'_>) -> Vec<String> {
    let mut problems = Vec::new();
    let label = format!("{} bits per key", r.bits_per_key);
    if r.present.mismatched > 0 {
        problems.push(format!(
            "{label}: {} of {} values read back differ from the input or are missing",
            group(r.present.mismatched),
            group(r.present.lookups)
        ));
    }
    if r.absent.found > 0 {
        problems.push(format!(
            "{label}: {} of {} absent keys were found",
            group(r.absent.found),
            group(r.absent.lookups)
        ));
    }
    if r.import_keys != data.pairs.len() as u64 {
        problems.push(format!(
            "{label}: imported {}, expected {}",
            count(r.import_keys, "key"),
            group(data.pairs.len() as u64)
        ));
    }
    if r.tables < MIN_TABLES {
        problems.push(format!(
            "{label}: only {} SSTables (expected at least {MIN_TABLES} with a {} write buffer)",
            r.tables,
            human_bytes(WRITE_BUFFER_SIZE as u64)
        ));
    }
    problems
}

pub fn run(args: &DemoArgs) -> Result<(), CliError> {
    let start = Instant::now();
    if let Some(d) = args.dir.as_ref().filter(|d| d.exists() && !d.is_dir()) {
        return Err(CliError::usage(format!(
            "--dir {}: exists and is not a directory",
            d.display()
        )));
    }
    // The demo's databases go in subdirectories: a database's own
    // directory would end up holding two foreign ones (a new-user trial
    // gave `--dir` an existing database).
    if let Some(d) = args.dir.as_ref() {
        if siftdb::inspect::filename::current_path(d).exists() {
            return Err(CliError::usage(format!(
                "--dir {}: holds a database; the demo builds its own two in DIR/bloom-10 and \
                 DIR/no-filter, so give it a new or empty directory",
                d.display()
            )));
        }
    }
    let packages = gunzip(PACKAGES_GZ, "packages")?;
    let words = gunzip(WORDS_GZ, "word list")?;
    let data = load(&packages, &words)?;

    let mut s = String::from("siftdb demo: how Bloom filters let point lookups skip SSTables\n\n");
    s.push_str("== dataset (built into kvctl) ==\n");
    let _ = writeln!(
        s,
        "Debian packages  {} (NAME -> JSON), {} of TSV",
        count(data.pairs.len() as u64, "key"),
        human_bytes(packages.len() as u64)
    );
    let _ = writeln!(
        s,
        "English words    {}; {} are also package names, leaving {}\n",
        count(data.words, "word"),
        group(data.words - data.absent.len() as u64),
        count(data.absent.len() as u64, "absent key")
    );
    emit(&s)?;

    let (root, temp) = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d)
                .map_err(|e| CliError::from_io(format!("create {}", d.display()), &e))?;
            (d.clone(), None)
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("kvctl-demo-")
                .tempdir()
                .map_err(|e| CliError::from_io("create a temporary directory", &e))?;
            (t.path().to_path_buf(), Some(t))
        }
    };

    let with = build_and_measure(&root.join("bloom-10"), BITS_PER_KEY, &data)?;
    let mut s = format!("== 1. import with Bloom filters ({BITS_PER_KEY} bits per key) ==\n");
    s.push_str(&import_section(&with));
    s.push_str("\n== 2. lookups (counters from db.stats() before and after each phase) ==\n");
    s.push_str(&lookup_section(&with));
    s.push_str("\n== 3. filter false-positive rate ==\n");
    s.push_str(&fpr_section(&with));
    s.push('\n');
    emit(&s)?;

    let mut problems = check(&with, &data);
    if !args.no_compare {
        let without = build_and_measure(&root.join("no-filter"), 0, &data)?;
        let mut s = String::from("== 4. the same data without filters (bits_per_key = 0) ==\n");
        s.push_str(&compare_section(&with, &without));
        s.push('\n');
        emit(&s)?;
        problems.extend(check(&without, &data));
    }

    let mut s = String::from("== result ==\n");
    match (temp, args.keep) {
        (Some(t), true) => {
            let kept = t.keep();
            let _ = writeln!(s, "databases kept in {}", kept.display());
        }
        (Some(_), false) => {
            s.push_str("temporary databases removed (use --keep or --dir to keep them)\n")
        }
        (None, _) => {
            let _ = writeln!(s, "databases kept in {}", root.display());
        }
    }
    if problems.is_empty() {
        let _ = writeln!(
            s,
            "OK: all {} values read back exactly, none of {} found ({:.1} s)",
            group(data.pairs.len() as u64),
            count(data.absent.len() as u64, "absent key"),
            start.elapsed().as_secs_f64()
        );
        emit(&s)
    } else {
        for p in &problems {
            let _ = writeln!(s, "FAILED: {p}");
        }
        emit(&s)?;
        Err(CliError::new(
            EXIT_CORRUPTION,
            format!("demo check failed: {}", problems.join("; ")),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn theory_matches_the_textbook_value() {
        assert_eq!(BloomFilterPolicy::new(10).num_hashes(), 7);
        let p = theoretical_fpr(10.0, 7);
        assert!((p - 0.00819).abs() < 0.00005, "{p}");
    }
}
