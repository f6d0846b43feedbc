//! Data subcommands: `import`, `export` (and `export --salvage`), `get`,
//! `put`, `delete`, `scan`.
//!
//! Keys and values cross the command line and text files in escaped form
//! (see [`siftdb::escape`]): what `scan` and `export` print, `import` and
//! the `KEY`/`VALUE` arguments accept.

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use siftdb::escape::escape_bytes;
use siftdb::inspect::{FileSet, Salvage, SalvageReport};
use siftdb::{Db, Options, WriteBatch};

use crate::error::{write_failed, CliError, EXIT_CORRUPTION};
use crate::format::{count, escaped_arg, human_bytes, parse_size, Bytes, TORN_WRITE};
use crate::inspect::{emit_json, entries_text, file_name, torn_json};
use crate::wait::{retry_locked, Wait, WaitArg};

/// A key and its value, as the database iterators yield them.
pub type Pair = (Vec<u8>, Vec<u8>);

/// A decoded import line: key and value, borrowed when nothing was unescaped.
pub type Decoded<'a> = (Cow<'a, [u8]>, Cow<'a, [u8]>);

/// Updates per `WriteBatch` during import.
pub const IMPORT_BATCH: usize = 1000;

/// Encoded bytes a `WriteBatch` may reach during import before it is
/// written: large values make batches of fewer than [`IMPORT_BATCH`]
/// lines, so that memory stays bounded and no batch nears the 4 GiB limit
/// of one (`siftdb::write_batch::MAX_BATCH_LEN`). A longer line is a batch
/// of its own.
pub const IMPORT_BATCH_BYTES: usize = 16 << 20;

/// Opens an existing database with `options` (never creating one).
pub fn open_existing(path: &Path, options: Options) -> Result<Db, CliError> {
    open_existing_waiting(path, options, None)
}

/// [`open_existing`], waiting for the lock as `wait` says
/// ([`crate::wait::retry_locked`]).
pub fn open_existing_waiting(
    path: &Path,
    options: Options,
    wait: Option<Wait>,
) -> Result<Db, CliError> {
    if !path.exists() {
        // Said plainly, rather than as the library's option name.
        return Err(siftdb::Error::NotADatabase {
            path: path.to_path_buf(),
            detail: "does not exist".into(),
        }
        .into());
    }
    let mut o = options;
    o.create_if_missing = false;
    warn_dropped(retry_locked(wait, || Db::open_with(path, o.clone()))?)
}

/// Says on stderr if the open dropped a torn WAL tail (a write cut short
/// by a crash or a write error, or damage to a log's last record), which
/// a writing open makes permanent; returns `db`.
fn warn_dropped(db: Db) -> Result<Db, CliError> {
    for w in torn_tail_warnings(&db) {
        let _ = writeln!(io::stderr(), "{w}");
    }
    Ok(db)
}

/// [`warn_dropped`]'s warnings, one per WAL whose torn tail the open of
/// `db` dropped.
fn torn_tail_warnings(db: &Db) -> Vec<String> {
    db.recovery()
        .wals
        .iter()
        .filter_map(|w| {
            let t = w.torn_tail.as_ref()?;
            Some(format!(
                "kvctl: warning: {} ends in a torn record at offset {} ({}); its {} were \
                 dropped ({TORN_WRITE}, or damage to the last record)",
                w.path.display(),
                t.offset,
                t.reason,
                count(w.size - t.offset, "byte")
            ))
        })
        .collect()
}

/// Opens an existing database for reading: nothing on disk changes, and it
/// works while another process has the database open. Warns, as a write
/// command's open does, about a torn WAL tail the open dropped, unless a
/// process has the database open for writing: its tail may then be a
/// record being written at this moment.
pub fn open_read_only(path: &Path) -> Result<Db, CliError> {
    let db = Db::open_read_only(path, Options::default())?;
    // When it cannot be told whether a writer is running, say nothing.
    if !db.recovery().wals.iter().any(|w| w.torn_tail.is_some())
        || Db::held_by_a_writer(path) != Some(false)
    {
        return Ok(db);
    }
    warn_dropped(db)
}

/// Opens a database, creating it if missing, waiting for the lock as
/// `wait` says ([`crate::wait::retry_locked`]; `None`: not at all).
pub fn open_or_create_waiting(
    path: &Path,
    options: Options,
    wait: Option<Wait>,
) -> Result<Db, CliError> {
    warn_dropped(retry_locked(wait, || Db::open_with(path, options.clone()))?)
}

// ---------------------------------------------------------------- import

#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  kvctl import ./db tests/data/debian-packages.tsv.gz --write-buffer-size 512K\n\n\
Lines are taken as raw bytes (a plain TSV, such as JSON values with their own backslashes, \
imports as it is), unless the input starts with the header line `export` writes \
(`#kvctl-export escaped v1`): then keys and values are unescaped, so that `kvctl export DB | \
kvctl import NEW -` copies every byte exactly, tabs, newlines and non-UTF-8 bytes included. \
--escaped unescapes input without the header (what `scan` prints, or an export by an older \
kvctl); --raw refuses the header (DESIGN.md 12.10).\n\
A gzip file is checked whole before the first line is imported. A bad line, or a failed \
write (a full disk), stops the import there: lines are written in batches of 1,000 (fewer \
where they pass 16 MiB), and the whole batches before it stay imported (the error says how \
many keys)."
)]
pub struct ImportArgs {
    /// Database directory (created if missing)
    pub db: PathBuf,
    /// Input: lines of KEY<TAB>VALUE; gzip is detected and decoded; `-` reads stdin
    pub file: PathBuf,
    /// Memtable size before a flush to a new SSTable, e.g. 4M or 512K
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub write_buffer_size: Option<usize>,
    /// Bloom filter bits per key for new SSTables (0 = no filters)
    #[arg(long, value_name = "N", conflicts_with = "filters")]
    pub bits_per_key: Option<u32>,
    /// Filter of each level's SSTables, level 0 first, the last serving
    /// deeper levels: none, or bloom, blocked-bloom or ribbon with bits per
    /// key or a rate, e.g. blocked-bloom:10,ribbon:1%
    #[arg(long, value_name = "SPEC", value_parser = crate::filter_spec::parse_spec)]
    pub filters: Option<crate::filter_spec::FilterSpec>,
    /// One filter memory budget for the whole tree, in bits per key on
    /// average, spread over the levels so that absent keys meet the
    /// fewest false positives (Monkey; DESIGN.md 3.2); `--filters` then
    /// gives only each level's kind. Not stored: give it again to `compact`
    #[arg(long, value_name = "BITS", conflicts_with = "bits_per_key")]
    pub filter_budget: Option<f64>,
    /// Also build prefix filters over the first N bytes of keys, so that
    /// scans of a prefix of N bytes or more skip tables without it (give
    /// it again to `compact`: it is not stored)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub prefix_len: Option<u16>,
    /// Take keys and values verbatim (the default for input without
    /// export's header line; the `\r` of a CRLF line ending is still
    /// removed), and refuse the header
    #[arg(long, conflicts_with = "escaped")]
    pub raw: bool,
    /// Unescape keys and values (`\t`, `\n`, `\\`, `\xNN`) even without
    /// export's header line, e.g. for what `scan` prints
    #[arg(long)]
    pub escaped: bool,
    /// No progress bar and no summary (errors still go to stderr)
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub wait: WaitArg,
}

/// How an import line's key and value are decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineFormat {
    /// kvctl's escapes (what `export` writes).
    Escaped,
    /// Bytes as they are (the line ending excepted).
    Raw,
    /// [`LineFormat::Escaped`] if the first line is [`EXPORT_HEADER`]
    /// (which is then skipped), [`LineFormat::Raw`] otherwise.
    Auto,
}

/// The first line `export` writes (without its `\n`): it says the lines
/// after it are escaped, so that `import` unescapes them and a round trip
/// is exact, while a plain TSV (no header) is imported raw. It holds no
/// tab, so it can never be a `KEY<TAB>VALUE` line of a raw file.
/// DESIGN.md 12.10.
pub const EXPORT_HEADER: &str = "#kvctl-export escaped v1";

/// Splits one line (without its line ending) at its first tab into key and
/// value, as raw bytes.
pub fn split_line(line: &[u8]) -> Result<(&[u8], &[u8]), &'static str> {
    let tab = line
        .iter()
        .position(|&b| b == b'\t')
        .ok_or("no tab between key and value (expected KEY<TAB>VALUE)")?;
    Ok((&line[..tab], &line[tab + 1..]))
}

/// Splits one line (without its line ending) at the first tab and decodes
/// both halves.
pub fn parse_line(line: &[u8], format: LineFormat) -> Result<Decoded<'_>, String> {
    let (key, value) = split_line(line)?;
    match format {
        LineFormat::Raw | LineFormat::Auto => Ok((Cow::Borrowed(key), Cow::Borrowed(value))),
        LineFormat::Escaped => {
            let text = |what: &str, b: &[u8]| -> Result<Vec<u8>, String> {
                let s = std::str::from_utf8(b).map_err(|_| {
                    format!("{what} is not valid UTF-8 (escape bytes as \\xNN, or import without --escaped)")
                })?;
                siftdb::escape::unescape(s).map_err(|e| {
                    format!("{what}: {e} (or import without --escaped to take bytes verbatim)")
                })
            };
            Ok((
                Cow::Owned(text("key", key)?),
                Cow::Owned(text("value", value)?),
            ))
        }
    }
}

/// What an import wrote.
#[derive(Debug, Default, Clone, Copy)]
pub struct ImportSummary {
    /// Pairs written (a key repeated in the input counts each time).
    pub keys: u64,
    /// Bytes of keys plus values written.
    pub bytes: u64,
    /// Lines read, blank ones included.
    pub lines: u64,
    pub elapsed: Duration,
}

/// Reads `KEY<TAB>VALUE` lines from `input` and writes them to `db` in
/// batches of [`IMPORT_BATCH`] lines, or fewer where they would pass
/// [`IMPORT_BATCH_BYTES`]. Blank lines are skipped; `\n` and `\r\n`
/// both end a line. A first line equal to [`EXPORT_HEADER`] is skipped
/// and, with [`LineFormat::Auto`], makes the rest escaped; with
/// [`LineFormat::Raw`] it is an error (exit 2). Does not flush. `source` names the input in errors;
/// `progress` gets a message per batch.
pub fn import_lines(
    db: &Db,
    mut input: impl BufRead,
    mut format: LineFormat,
    source: &str,
    progress: &ProgressBar,
) -> Result<ImportSummary, CliError> {
    let start = Instant::now();
    let mut sum = ImportSummary::default();
    let mut batch = WriteBatch::new();
    let mut line = Vec::new();
    // Keys in batches already written: a bad line or a failed write stops
    // the import there.
    let mut written = 0u64;
    let bad_line = |e: CliError, written: u64| stopped(e, written, "fix the line");
    // Writes `batch`, after which the first `keys` keys are in.
    let write = |batch: &mut WriteBatch, keys: u64, written: &mut u64| {
        db.write(std::mem::take(batch))
            .map_err(|e| import_write_failed(e, *written))?;
        *written = keys;
        progress.set_message(count(keys, "key"));
        Ok::<(), CliError>(())
    };
    loop {
        line.clear();
        let n = input.read_until(b'\n', &mut line).map_err(|e| {
            let e = CliError::from_io(format!("reading {source}"), &e);
            stopped(e, written, "repair the input")
        })?;
        if n == 0 {
            break;
        }
        sum.lines += 1;
        let at = || format!("{source}:{}", sum.lines);
        let mut body = line.as_slice();
        if let Some(b) = body.strip_suffix(b"\n") {
            body = b.strip_suffix(b"\r").unwrap_or(b);
        }
        if sum.lines == 1 && body == EXPORT_HEADER.as_bytes() {
            if format == LineFormat::Raw {
                let e = CliError::usage(format!(
                    "{}: the input starts with export's header `{EXPORT_HEADER}`: its lines \
                     are escaped, and --raw would keep the escapes as bytes",
                    at()
                ));
                return Err(stopped(e, written, "import without --raw"));
            }
            format = LineFormat::Escaped;
            continue;
        }
        if body.is_empty() {
            continue;
        }
        let (key, value) = parse_line(body, format)
            .map_err(|m| bad_line(CliError::usage(m).context(at()), written))?;
        if !batch.is_empty() && batch.encoded_len() + key.len() + value.len() > IMPORT_BATCH_BYTES {
            write(&mut batch, sum.keys, &mut written)?;
        }
        batch
            .put(&key, &value)
            .map_err(|e| bad_line(CliError::from(e).context(at()), written))?;
        sum.keys += 1;
        sum.bytes += (key.len() + value.len()) as u64;
        if batch.len() >= IMPORT_BATCH {
            write(&mut batch, sum.keys, &mut written)?;
        }
    }
    db.write(batch)
        .map_err(|e| import_write_failed(e, written))?;
    sum.elapsed = start.elapsed();
    Ok(sum)
}

/// `e`, which stopped an import after its first `written` keys went in,
/// with a hint saying so and what to do: `fix` it (e.g. "fix the line"),
/// and import again.
fn stopped(e: CliError, written: u64, fix: &str) -> CliError {
    if written == 0 {
        e.with_hint(format!("nothing was imported; {fix} and import again"))
    } else {
        e.with_hint(format!(
            "the {} before it were imported; {fix} and import again \
             (re-importing a key overwrites it)",
            count(written, "key")
        ))
    }
}

/// The error for a write (or flush) that failed during an import after
/// the first `written` keys were acknowledged: for an I/O failure, as for
/// a bad line, the hint says how many went in and what to do, by the
/// cause (free space if the disk is full). Other errors keep their own
/// hint.
fn import_write_failed(e: siftdb::Error, written: u64) -> CliError {
    let fix = match &e {
        siftdb::Error::Io { source, .. }
            if matches!(
                source.kind(),
                io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
            ) =>
        {
            "free space on the disk"
        }
        siftdb::Error::Io { .. } => "fix the cause",
        // A background flush or compaction failed earlier; its message
        // names the cause, which may well be a full disk too.
        siftdb::Error::Background(_) => "fix the cause (free space if the disk is full)",
        _ => return CliError::from(e),
    };
    stopped(CliError::from(e), written, fix)
}

/// Opens an input file the user named, for reading. A directory is bad
/// input (exit 2) like a missing file or one without read permission
/// (Linux opens a directory for reading, and only the first read fails).
pub fn open_input_file(path: &Path) -> Result<File, CliError> {
    if path.is_dir() {
        return Err(CliError::usage(format!(
            "{}: is a directory, not a file",
            path.display()
        )));
    }
    File::open(path).map_err(|e| CliError::from_io(format!("open {}", path.display()), &e))
}

/// Whether `path` starts with gzip's magic number.
fn is_gzip(path: &Path) -> Result<bool, CliError> {
    let mut magic = [0u8; 2];
    let mut f = open_input_file(path)?;
    let n = f
        .read(&mut magic)
        .map_err(|e| CliError::from_io(format!("reading {}", path.display()), &e))?;
    Ok(n == 2 && magic == [0x1f, 0x8b])
}

/// Decompresses the gzip file at `path` into nothing, so that a damaged
/// stream (bad deflate data, a truncated file, a wrong trailer CRC, which
/// gzip only checks at the end of each member) is found before a single
/// line reaches the database.
///
/// # Errors
/// Exit 2 naming the file if the stream is damaged; 4 on other read errors.
fn check_gzip(path: &Path) -> Result<(), CliError> {
    let f = open_input_file(path)?;
    io::copy(
        &mut MultiGzDecoder::new(BufReader::with_capacity(1 << 16, f)),
        &mut io::sink(),
    )
    .map_err(|e| {
        CliError::from_io(format!("reading {}", path.display()), &e)
            .with_hint("the gzip stream is damaged; nothing was imported")
    })?;
    Ok(())
}

/// A reader counting into `progress`, decoding gzip when the first bytes
/// are its magic number.
fn open_input(path: &Path, progress: &ProgressBar) -> Result<Box<dyn BufRead>, CliError> {
    let raw: Box<dyn Read> = if path == Path::new("-") {
        Box::new(progress.wrap_read(io::stdin()))
    } else {
        let f = open_input_file(path)?;
        if let Ok(m) = f.metadata() {
            progress.set_length(m.len());
        }
        Box::new(progress.wrap_read(f))
    };
    let mut buffered = BufReader::with_capacity(1 << 16, raw);
    let head = buffered
        .fill_buf()
        .map_err(|e| CliError::from_io(format!("reading {}", path.display()), &e))?;
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(BufReader::with_capacity(
            1 << 16,
            MultiGzDecoder::new(buffered),
        )))
    } else {
        Ok(Box::new(buffered))
    }
}

fn progress_bar(quiet: bool, stdin: bool) -> ProgressBar {
    if quiet || !io::stdout().is_terminal() {
        return ProgressBar::hidden();
    }
    let (pb, template) = if stdin {
        (ProgressBar::new_spinner(), "{spinner} {bytes} read  {msg}")
    } else {
        (
            ProgressBar::new(0),
            "[{elapsed_precise}] {wide_bar} {bytes}/{total_bytes}  {msg}",
        )
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        pb.set_style(style);
    }
    pb
}

fn total_files(db: &Db) -> (u64, u64) {
    let s = db.stats();
    let files = s.levels.iter().map(|l| l.files as u64).sum();
    let bytes = s.levels.iter().map(|l| l.bytes).sum();
    (files, bytes)
}

pub fn import(args: &ImportArgs) -> Result<(), CliError> {
    let mut options = Options::default();
    if let Some(w) = args.write_buffer_size {
        options.write_buffer_size = w;
    }
    if let Some(b) = args.bits_per_key {
        options.bits_per_key = b;
    }
    if let Some(f) = &args.filters {
        options.filters = f.0.clone();
    }
    options.filter_budget = args
        .filter_budget
        .map(siftdb::filter::FilterBudget::bits_per_key);
    if let Some(n) = args.prefix_len {
        options.prefix_extractor = Some(std::sync::Arc::new(siftdb::filter::FixedPrefix::new(
            usize::from(n),
        )));
    }
    let format = if args.raw {
        LineFormat::Raw
    } else if args.escaped {
        LineFormat::Escaped
    } else {
        LineFormat::Auto
    };
    let stdin = args.file == Path::new("-");
    let source = if stdin {
        "<stdin>".to_string()
    } else {
        args.file.display().to_string()
    };

    // A gzip file is checked whole first: its CRC is only at the end, and
    // lines decoded from a damaged stream must not be imported. (Standard
    // input cannot be read twice; a bad stream there stops the import with
    // a hint saying how many keys went in before it.)
    if !stdin && is_gzip(&args.file)? {
        check_gzip(&args.file)?;
    }
    let progress = progress_bar(args.quiet, stdin);
    let input = open_input(&args.file, &progress)?;
    let new_database = !args.db.exists();
    let db = open_or_create_waiting(&args.db, options, args.wait.wait)?;
    let before = db.stats();
    let (flushes_before, compactions_before) = (before.flushes, before.compactions);
    let result = import_lines(&db, input, format, &source, &progress);
    progress.finish_and_clear();
    let sum = match result {
        Ok(sum) => sum,
        Err(e) => {
            if new_database && db.iter().next().is_none() {
                // The import created the database and stopped before its
                // first write: leave no empty database behind. (Best
                // effort: the error is what matters.)
                drop(db);
                let _ = std::fs::remove_dir_all(&args.db);
            }
            return Err(e);
        }
    };
    // Every key is in the log by now; a flush failing (a full disk, say)
    // still says so.
    db.flush().map_err(|e| import_write_failed(e, sum.keys))?;
    // Leave a settled tree, so the next open starts no compaction work.
    db.wait_for_compactions()
        .map_err(|e| import_write_failed(e, sum.keys))?;
    let after = db.stats();
    let created = after.flushes - flushes_before;
    let compactions = after.compactions - compactions_before;
    let (files, bytes) = total_files(&db);
    db.close()?;
    if args.quiet {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "imported {} ({} of keys and values) from {} in {:.2} s",
        count(sum.keys, "key"),
        human_bytes(sum.bytes),
        source,
        sum.elapsed.as_secs_f64()
    )
    .and_then(|_| {
        writeln!(
            out,
            "{} flushed, {}; the database now has {}, {}",
            count(created, "SSTable"),
            count(compactions, "compaction"),
            count(files, "SSTable"),
            human_bytes(bytes)
        )
    })
    .map_err(write_failed)
}

// ---------------------------------------------------------------- export

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  kvctl export ./db backup.tsv.gz\n  \
kvctl export ./db part.tsv --from user:1000 --to user:2000\n  \
kvctl export --salvage ./damaged-db rescued.tsv.gz\n\n\
The first line is the header `#kvctl-export escaped v1`; each pair follows as an escaped \
KEY<TAB>VALUE line, so `import` reads it back exactly (DESIGN.md 12.10).\n\n\
The output appears only when complete: the export writes .NAME.kvctl-partial beside it and \
renames it (a device or FIFO, such as /dev/null, is written in place; a symbolic link is \
written through: its target gets the new content and the link stays). A failed export removes that file; an interrupted one may leave it, and the next \
export to NAME replaces it.\n\n\
--salvage reads a database that no longer opens (a damaged block, manifest or CURRENT) \
without writing to it, and refuses one a process has open for writing: every entry still readable is written, the newest readable version of \
each key, in the same format (import it into a fresh database), and stderr (or --json, on \
stdout) lists what could not be read: data blocks and their byte ranges, tables skipped whole, \
WAL damage. Exits 0 if nothing was lost, 3 if something was or the manifest could not be used \
(the output is still written). \
Keys in a lost block's key range may come back with an older value (DESIGN.md 11.1).")]
pub struct ExportArgs {
    /// Database directory
    pub db: PathBuf,
    /// Output file (`-` = stdout); a name ending in `.gz` is gzip-compressed
    #[arg(default_value = "-")]
    pub file: PathBuf,
    /// Only keys starting with this (escaped) prefix
    #[arg(long, value_name = "P", value_parser = escaped_arg)]
    pub prefix: Option<Bytes>,
    /// Only keys >= K (escaped)
    #[arg(long, value_name = "K", value_parser = escaped_arg, conflicts_with = "salvage")]
    pub from: Option<Bytes>,
    /// Only keys < K (escaped)
    #[arg(long, value_name = "K", value_parser = escaped_arg, conflicts_with = "salvage")]
    pub to: Option<Bytes>,
    /// Read a damaged database around the damage, read-only, and report what was lost
    #[arg(long)]
    pub salvage: bool,
    /// With --salvage: print the report as JSON on stdout (needs an output FILE)
    #[arg(long, requires = "salvage")]
    pub json: bool,
    /// With --salvage: write the keys flagged as possibly stale to this file,
    /// escaped, one per line
    #[arg(long, value_name = "FILE", requires = "salvage")]
    pub stale_keys: Option<PathBuf>,
    /// No progress bar and no "exported N keys" line (errors, and what a
    /// salvage lost, still go to stderr)
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn export(args: &ExportArgs) -> Result<(), CliError> {
    if args.salvage {
        return export_salvage(args);
    }
    // Damage met here is `Corruption`, whose hint points at `--salvage`.
    let db = open_read_only(&args.db)?;
    let iter: Box<dyn Iterator<Item = siftdb::Result<Pair>>> =
        match (&args.prefix, args.from.is_some() || args.to.is_some()) {
            // A prefix alone scans with the prefix filters' help.
            (Some(p), false) => Box::new(db.prefix(p)),
            (None, false) => Box::new(db.iter()),
            (p, true) => match crate::scan::key_range(
                p.as_deref(),
                args.from.as_deref(),
                args.to.as_deref(),
                false,
            ) {
                Some(range) => Box::new(db.range(range)),
                None => Box::new(std::iter::empty()),
            },
        };
    // The bar counts keys against the entries in SSTables, an upper bound
    // (old versions and tombstones are not exported).
    let progress = if args.quiet || args.file == Path::new("-") || !io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        let entries: u64 = db.stats().levels.iter().map(|l| l.entries).sum();
        let pb = ProgressBar::new(entries);
        if let Ok(style) =
            ProgressStyle::with_template("[{elapsed_precise}] {wide_bar} {pos} keys  {msg}")
        {
            pb.set_style(style);
        }
        pb
    };
    let n = write_output(&args.file, iter, &progress)?;
    if !args.quiet && args.file != Path::new("-") {
        // A closed stderr must not turn a finished export into a failure.
        let _ = writeln!(
            io::stderr(),
            "exported {} to {}",
            count(n, "key"),
            args.file.display()
        );
    }
    Ok(())
}

/// Writes `pairs` to `file` as [`EXPORT_HEADER`] and escaped
/// `KEY<TAB>VALUE` lines (gzip for a `.gz` name; stdout for `-`); returns
/// how many pairs.
///
/// A file is written as `.NAME.kvctl-partial` beside the output and
/// renamed into place once complete and synced, so that a failed or
/// interrupted export never leaves a truncated file under the name asked
/// for (which would import without complaint). On an error the partial
/// file is removed; an interrupt (SIGINT) can leave it, and the next
/// export to the same name replaces it, so at most one is ever left per
/// output.
fn write_output(
    file: &Path,
    pairs: impl Iterator<Item = siftdb::Result<Pair>>,
    progress: &ProgressBar,
) -> Result<u64, CliError> {
    if file == Path::new("-") {
        let mut out = BufWriter::new(io::stdout().lock());
        let n = write_export(pairs, &mut out, progress)?;
        out.flush().map_err(write_failed)?;
        return Ok(n);
    }
    let what = file.display();
    let failed = |e: io::Error| CliError::from_io(format!("write {what}"), &e);
    // Writes every pair to `f`, gzip-compressed for a `.gz` name; returns
    // the count and the file, flushed.
    let write_to = |f: File, pairs| -> Result<(u64, File), CliError> {
        if file.extension().is_some_and(|e| e == "gz") {
            let mut enc = GzEncoder::new(BufWriter::new(f), flate2::Compression::default());
            let n = write_export(pairs, &mut enc, progress)?;
            let f = enc
                .finish()
                .and_then(|w| w.into_inner().map_err(|e| e.into_error()))
                .map_err(failed)?;
            Ok((n, f))
        } else {
            let mut out = BufWriter::new(f);
            let n = write_export(pairs, &mut out, progress)?;
            let f = out.into_inner().map_err(|e| failed(e.into_error()))?;
            Ok((n, f))
        }
    };
    // A symbolic link is written through: the finished file replaces the
    // link's target, and the link stays.
    let target = resolve_links(file)?;
    // A device or a pipe (`/dev/null`, a FIFO) is written in place:
    // renaming a finished file onto it would replace it (as root, a
    // `kvctl export DB /dev/null` turned /dev/null into a regular file).
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => {
            return Err(CliError::usage(format!("{what} is a directory")));
        }
        Ok(m) if !m.is_file() => {
            let f = OpenOptions::new()
                .write(true)
                .open(&target)
                .map_err(|e| CliError::from_io(format!("open {what}"), &e))?;
            let written = write_to(f, pairs).map(|(n, _)| n);
            progress.finish_and_clear();
            return written;
        }
        _ => {}
    }
    let name = target
        .file_name()
        .ok_or_else(|| CliError::usage(format!("{what}: not a file name")))?;
    let mut partial_name = std::ffi::OsString::from(".");
    partial_name.push(name);
    partial_name.push(".kvctl-partial");
    let partial = target.with_file_name(partial_name);
    // Errors name the user's path, never the partial file.
    let written = (|| {
        let f =
            File::create(&partial).map_err(|e| CliError::from_io(format!("create {what}"), &e))?;
        let (n, f) = write_to(f, pairs)?;
        f.sync_all().map_err(failed)?;
        std::fs::rename(&partial, &target).map_err(failed)?;
        Ok(n)
    })();
    progress.finish_and_clear();
    written.inspect_err(|_| {
        let _ = std::fs::remove_file(&partial);
    })
}

/// The file `path` names once every symbolic link on the way is
/// followed (the last component included; a dangling link gives the path
/// it points at, which the export then creates).
///
/// # Errors
/// Exit 2 for a chain of more than 40 links (a loop).
fn resolve_links(path: &Path) -> Result<PathBuf, CliError> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p)
                    .map_err(|e| CliError::from_io(format!("read link {}", path.display()), &e))?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(CliError::usage(format!(
        "{}: too many levels of symbolic links",
        path.display()
    )))
}

// ---------------------------------------------------------------- export --salvage

/// Refuses an output file inside the database directory: a salvage never
/// writes there (not even its partial file).
fn refuse_output_inside(db: &Path, file: &Path) -> Result<(), CliError> {
    if file == Path::new("-") {
        return Ok(());
    }
    let parent = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let (Ok(db), Ok(parent)) = (db.canonicalize(), parent.canonicalize()) {
        if parent.starts_with(&db) {
            return Err(CliError::usage(format!(
                "{}: the output would be written inside the database directory, which a \
                 salvage never writes to; choose a file elsewhere",
                file.display()
            )));
        }
    }
    Ok(())
}

/// `export --salvage`: see [`ExportArgs`] and DESIGN.md 11.1.
fn export_salvage(args: &ExportArgs) -> Result<(), CliError> {
    let stdout = args.file == Path::new("-");
    if args.json && stdout {
        return Err(CliError::usage(
            "--json prints the report on stdout; give an output FILE for the entries",
        ));
    }
    refuse_output_inside(&args.db, &args.file)?;
    let start = Instant::now();
    let mut salvage = Salvage::open(&args.db)?;
    let progress = if args.quiet || stdout || !io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        let pb = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} {pos} keys salvaged") {
            pb.set_style(style);
        }
        pb
    };
    let mut stale = 0u64;
    let mut stale_keys: Vec<u8> = Vec::new();
    let prefix = args.prefix.as_deref();
    let pairs = salvage
        .by_ref()
        .filter(|e| prefix.is_none_or(|p| e.key.starts_with(p)))
        .map(|e| {
            if e.possibly_stale {
                stale += 1;
                if args.stale_keys.is_some() {
                    stale_keys.extend_from_slice(escape_bytes(&e.key).as_bytes());
                    stale_keys.push(b'\n');
                }
            }
            Ok((e.key, e.value))
        });
    let exported = write_output(&args.file, pairs, &progress)?;
    if let Some(path) = &args.stale_keys {
        std::fs::write(path, &stale_keys)
            .map_err(|e| CliError::from_io(format!("write {}", path.display()), &e))?;
    }
    let report = salvage.finish();
    let outcome = SalvageOutcome {
        report: &report,
        output: &args.file,
        exported,
        stale,
        stale_keys: args.stale_keys.as_deref(),
        seconds: start.elapsed().as_secs_f64(),
    };
    if args.json {
        emit_json(&outcome.json())?;
    } else {
        // A closed stderr must not turn a finished salvage into a failure.
        let _ = io::stderr().write_all(outcome.text().as_bytes());
    }
    if report.is_complete() {
        return Ok(());
    }
    Err(CliError::new(
        EXIT_CORRUPTION,
        format!("export --salvage: {}", outcome.lost_summary()),
    )
    .with_hint(format!(
        "{} holds every other entry; load it into a fresh database with `kvctl import NEW {}`, \
         and keep a copy of the damaged directory",
        args.file.display(),
        args.file.display()
    )))
}

/// A finished salvage export, for the report.
struct SalvageOutcome<'a> {
    report: &'a SalvageReport,
    output: &'a Path,
    /// Keys written.
    exported: u64,
    /// Of them, keys flagged possibly stale.
    stale: u64,
    /// Where they were listed (`--stale-keys`).
    stale_keys: Option<&'a Path>,
    seconds: f64,
}

/// A key range as text: `keys [a .. b]`, open ends said in words.
fn range_text(r: &siftdb::inspect::KeyRange) -> String {
    match (&r.first, &r.last) {
        (Some(a), Some(b)) => format!("keys [{} .. {}]", escape_bytes(a), escape_bytes(b)),
        (None, Some(b)) => format!("keys up to {}", escape_bytes(b)),
        (Some(a), None) => format!("keys from {}", escape_bytes(a)),
        (None, None) => "any key".into(),
    }
}

/// An escaped key, or JSON `null`.
fn key_json(k: &Option<Vec<u8>>) -> Value {
    k.as_deref()
        .map_or(Value::Null, |k| Value::from(escape_bytes(k)))
}

impl SalvageOutcome<'_> {
    /// What was lost, in one phrase: `1 data block and 1 WAL tail lost`.
    fn lost_summary(&self) -> String {
        let r = self.report;
        let mut parts = Vec::new();
        if r.lost_blocks() > 0 {
            parts.push(count(r.lost_blocks(), "data block"));
        }
        if r.unread_tables() > 0 {
            parts.push(count(r.unread_tables(), "whole SSTable"));
        }
        if r.damaged_wals() > 0 {
            parts.push(format!(
                "the rest of {}",
                count(r.damaged_wals(), "damaged WAL")
            ));
        }
        let mut s = if parts.is_empty() {
            "nothing lost".to_string()
        } else {
            format!("{} lost", parts.join(", "))
        };
        if r.file_set.is_directory() {
            s.push_str("; the manifest could not be used, so every table and WAL was read");
        }
        s
    }

    /// The report for stderr.
    fn text(&self) -> String {
        let r = self.report;
        let mut out = String::new();
        match &r.file_set {
            FileSet::Manifest {
                path,
                current_problem,
                edits,
                log_number,
                torn_tail,
            } => {
                let name = file_name(path);
                if let Some(why) = current_problem {
                    out.push_str(&format!(
                        "note: {why}; used {name}, the only manifest in the directory\n"
                    ));
                }
                out.push_str(&format!(
                    "salvage: read the live set of {name} ({}; WALs from {log_number:06}.log)\n",
                    count(*edits, "edit")
                ));
                if let Some(t) = torn_tail {
                    out.push_str(&format!(
                        "note: {name}: torn final record at offset {} ({}); ignored, as at open\n",
                        t.offset, t.reason
                    ));
                }
            }
            FileSet::Directory { reason } => out.push_str(&format!(
                "salvage: read every table and WAL in the directory: {reason}\n\
                 warning: without the manifest, any table or WAL a flush or compaction had \
                 already replaced was read too, and may bring back older values and deleted \
                 keys\n"
            )),
        }
        for t in &r.tables {
            let name = file_name(&t.path);
            let at = t.level.map_or(String::new(), |l| format!(" (L{l})"));
            for b in &t.skipped_blocks {
                let bytes = b.bytes();
                out.push_str(&format!(
                    "LOST: {name}{at}: data block {} of {}, bytes {}..{}: {}; {}\n",
                    b.block,
                    t.data_blocks,
                    bytes.start,
                    bytes.end,
                    b.detail,
                    range_text(&b.keys)
                ));
            }
            if let Some(u) = &t.unreadable {
                let offset = u
                    .offset
                    .map_or(String::new(), |o| format!(" at offset {o}"));
                out.push_str(&format!(
                    "LOST: {name}{at}: the whole table ({}{offset}: {}); {}\n",
                    u.what,
                    u.detail,
                    range_text(&t.keys)
                ));
            }
            for n in &t.notes {
                out.push_str(&format!("note: {name}: {n}\n"));
            }
        }
        for w in &r.wals {
            let name = file_name(&w.path);
            if let Some(d) = &w.damage {
                out.push_str(&format!(
                    "LOST: {name}: every record from offset {} on ({}): {}\n",
                    d.offset,
                    count(w.unread_bytes(), "byte"),
                    d.detail
                ));
            } else if let Some(t) = &w.torn_tail {
                out.push_str(&format!(
                    "note: {name}: torn final record at offset {} ({}; {}) dropped, as an open \
                     drops it ({TORN_WRITE}, never acknowledged unless synced)\n",
                    t.offset,
                    count(w.unread_bytes(), "byte"),
                    t.reason
                ));
            }
        }
        for n in &r.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        let deleted = if r.deleted > 0 {
            format!(", {} left out", count(r.deleted, "deleted key"))
        } else {
            String::new()
        };
        out.push_str(&format!(
            "salvaged {} to {} in {:.2} s: {} read from {} and {}{deleted}\n",
            count(self.exported, "key"),
            if self.output == Path::new("-") {
                "standard output".to_string()
            } else {
                self.output.display().to_string()
            },
            self.seconds,
            entries_text(r.entries_read),
            count(r.tables.len() as u64, "SSTable"),
            count(r.wals.len() as u64, "WAL"),
        ));
        if self.stale > 0 {
            out.push_str(&format!(
                "warning: {} {} in the key range of lost data that may have held a newer \
                 version: {} may be older than the database's (and keys deleted there may be \
                 back); {}\n",
                count(self.stale, "exported key"),
                if self.stale == 1 { "lies" } else { "lie" },
                if self.stale == 1 {
                    "its value"
                } else {
                    "their values"
                },
                match self.stale_keys {
                    Some(path) => format!("listed in {}", path.display()),
                    None => "--stale-keys FILE lists them".into(),
                },
            ));
        } else if !r.is_complete() && !r.file_set.is_directory() {
            out.push_str(
                "note: no exported key lies in the key range of lost data that could have held \
                 a newer version of it\n",
            );
        }
        out
    }

    /// The report for `--json` (DESIGN.md 11.1).
    fn json(&self) -> Value {
        let r = self.report;
        let file_set = match &r.file_set {
            FileSet::Manifest {
                path,
                current_problem,
                edits,
                log_number,
                torn_tail,
            } => json!({
                "source": "manifest",
                "manifest": file_name(path),
                "current_problem": current_problem,
                "edits": edits,
                "log_number": log_number,
                "torn_tail": torn_json(torn_tail),
            }),
            FileSet::Directory { reason } => json!({
                "source": "directory",
                "reason": reason,
            }),
        };
        let tables: Vec<Value> = r
            .tables
            .iter()
            .map(|t| {
                json!({
                    "file": file_name(&t.path),
                    "number": t.number,
                    "level": t.level,
                    "size": t.size,
                    "smallest_key": key_json(&t.keys.first),
                    "largest_key": key_json(&t.keys.last),
                    "data_blocks": t.data_blocks,
                    "blocks_read": t.blocks_read,
                    "entries": t.entries,
                    "skipped_blocks": t.skipped_blocks.iter().map(|b| json!({
                        "block": b.block,
                        "handle": { "offset": b.handle.offset, "size": b.handle.size },
                        "first_key": key_json(&b.keys.first),
                        "last_key": key_json(&b.keys.last),
                        "detail": b.detail,
                    })).collect::<Vec<_>>(),
                    "unreadable": t.unreadable.as_ref().map(|u| json!({
                        "what": u.what,
                        "offset": u.offset,
                        "detail": u.detail,
                    })),
                    "notes": t.notes,
                })
            })
            .collect();
        let wals: Vec<Value> = r
            .wals
            .iter()
            .map(|w| {
                json!({
                    "file": file_name(&w.path),
                    "number": w.number,
                    "size": w.size,
                    "records": w.records,
                    "entries": w.entries,
                    "torn_tail": torn_json(&w.torn_tail),
                    "damage": w.damage.as_ref().map(|d| json!({
                        "offset": d.offset,
                        "detail": d.detail,
                        "lost_bytes": w.unread_bytes(),
                    })),
                })
            })
            .collect();
        json!({
            "complete": r.is_complete(),
            "output": self.output.display().to_string(),
            "exported": self.exported,
            "possibly_stale": self.stale,
            "entries_read": r.entries_read,
            "deleted": r.deleted,
            "lost": {
                "data_blocks": r.lost_blocks(),
                "tables": r.unread_tables(),
                "wals": r.damaged_wals(),
            },
            "file_set": file_set,
            "tables": tables,
            "wals": wals,
            "notes": r.notes,
        })
    }
}

/// Writes [`EXPORT_HEADER`], then each pair as an escaped
/// `KEY<TAB>VALUE` line; returns the count.
fn write_export(
    iter: impl Iterator<Item = siftdb::Result<Pair>>,
    out: &mut impl Write,
    progress: &ProgressBar,
) -> Result<u64, CliError> {
    writeln!(out, "{EXPORT_HEADER}").map_err(write_failed)?;
    write_pairs(iter, out, progress)
}

/// Writes each pair as an escaped `KEY<TAB>VALUE` line; returns the count.
pub fn write_pairs(
    iter: impl Iterator<Item = siftdb::Result<Pair>>,
    out: &mut impl Write,
    progress: &ProgressBar,
) -> Result<u64, CliError> {
    let mut n = 0;
    for item in iter {
        let (k, v) = item?;
        writeln!(out, "{}\t{}", escape_bytes(&k), escape_bytes(&v)).map_err(write_failed)?;
        n += 1;
        if n % 1024 == 0 {
            progress.set_position(n);
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    use siftdb::fs::{FileSystem, StdFs, WritableFile};

    use super::*;

    /// A file system whose writes to `*.{ext}` files fail with `ENOSPC`
    /// once `appends_left` runs out (`u64::MAX`: never), after writing half
    /// their bytes, as a write to a full disk can. It remembers the last
    /// failed write: the file and its length before it.
    #[derive(Debug)]
    struct FullDisk {
        ext: &'static str,
        appends_left: Arc<AtomicU64>,
        failed: Arc<Mutex<Option<(PathBuf, u64)>>>,
    }

    #[derive(Debug)]
    struct FullDiskFile {
        inner: Box<dyn WritableFile>,
        path: PathBuf,
        len: u64,
        full: bool,
        appends_left: Arc<AtomicU64>,
        failed: Arc<Mutex<Option<(PathBuf, u64)>>>,
    }

    /// Linux `ENOSPC`.
    const ENOSPC: i32 = 28;

    impl WritableFile for FullDiskFile {
        fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
            let left = self.appends_left.load(Ordering::SeqCst);
            if self.full && left == 0 {
                self.inner.write_all(&buf[..buf.len() / 2])?;
                *self.failed.lock().unwrap() = Some((self.path.clone(), self.len));
                return Err(io::Error::from_raw_os_error(ENOSPC));
            }
            if self.full && left != u64::MAX {
                self.appends_left.store(left - 1, Ordering::SeqCst);
            }
            self.len += buf.len() as u64;
            self.inner.write_all(buf)
        }

        fn sync_data(&mut self) -> io::Result<()> {
            self.inner.sync_data()
        }

        fn sync_all(&mut self) -> io::Result<()> {
            self.inner.sync_all()
        }
    }

    impl FullDisk {
        /// `inner`, open on `path`, which holds `len` bytes.
        fn wrap(
            &self,
            path: &Path,
            len: u64,
            inner: Box<dyn WritableFile>,
        ) -> Box<dyn WritableFile> {
            Box::new(FullDiskFile {
                inner,
                path: path.to_path_buf(),
                len,
                full: path.extension().is_some_and(|e| e == self.ext),
                appends_left: self.appends_left.clone(),
                failed: self.failed.clone(),
            })
        }
    }

    impl FileSystem for FullDisk {
        fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
            Ok(self.wrap(path, 0, StdFs.create(path)?))
        }

        fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
            Ok(self.wrap(path, 0, StdFs.create_new(path)?))
        }

        fn reopen_truncated(&self, path: &Path, len: u64) -> io::Result<Box<dyn WritableFile>> {
            Ok(self.wrap(path, len, StdFs.reopen_truncated(path, len)?))
        }

        fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
            StdFs.rename(from, to)
        }

        fn remove_file(&self, path: &Path) -> io::Result<()> {
            StdFs.remove_file(path)
        }

        fn sync_dir(&self, dir: &Path) -> io::Result<()> {
            StdFs.sync_dir(dir)
        }

        fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
            StdFs.create_dir_all(dir)
        }

        fn list_dir(&self, dir: &Path) -> io::Result<Vec<std::ffi::OsString>> {
            StdFs.list_dir(dir)
        }
    }

    /// The disk fills during an import: the error says how many keys went
    /// in before the failed write and what to do, as a bad line's does; the
    /// next open drops the half-written record, and its warning covers a
    /// failed write. (kvctl cannot be given a full disk from the command
    /// line, so this drives `import_lines` through the library's
    /// file-system seam.)
    /// Imports `n` lines `keyNNNNN<TAB>vN` into `db`, which must fail, then
    /// closes it; returns the error.
    fn import_failing(db: Db, n: usize) -> CliError {
        let input: String = (0..n).map(|i| format!("key{i:05}\tv{i}\n")).collect();
        let e = import_lines(
            &db,
            input.as_bytes(),
            LineFormat::Escaped,
            "in.tsv",
            &ProgressBar::hidden(),
        )
        .unwrap_err();
        drop(db);
        e
    }

    /// Found by a new-user trial: 1,000 lines of 4.4 MB values made one
    /// batch over the 4 GiB limit of a WAL record, and nothing could be
    /// imported. A batch now ends before it passes `IMPORT_BATCH_BYTES`.
    #[test]
    fn large_values_are_imported_in_smaller_batches() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("db");
        let db = Db::open_with(&dir, Options::default()).unwrap();
        let value = "v".repeat(1 << 20);
        let input: String = (0..40).map(|i| format!("k{i:02}\t{value}\n")).collect();
        let sum = import_lines(
            &db,
            input.as_bytes(),
            LineFormat::Raw,
            "in.tsv",
            &ProgressBar::hidden(),
        )
        .unwrap();
        assert_eq!(sum.keys, 40);
        // One WAL record per batch: 15 entries of just over 1 MiB fit in
        // 16 MiB, a 16th would not.
        let wals: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        assert_eq!(wals.len(), 1, "{wals:?}");
        let records = siftdb::log::read_log(&wals[0]).unwrap().records;
        let sizes: Vec<usize> = records
            .iter()
            .map(|r| {
                siftdb::write_batch::decode_batch(&r.payload)
                    .unwrap()
                    .ops
                    .len()
            })
            .collect();
        assert_eq!(sizes, [15, 15, 10]);
        assert!(records
            .iter()
            .all(|r| r.payload.len() <= IMPORT_BATCH_BYTES));
        assert_eq!(db.get("k39").unwrap().as_deref(), Some(value.as_bytes()));
    }

    #[test]
    fn a_write_failing_on_a_full_disk_says_how_many_keys_went_in() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("db");
        let appends_left = Arc::new(AtomicU64::new(u64::MAX));
        let failed = Arc::new(Mutex::new(None));
        let mut options = Options::default();
        options.file_system = Arc::new(FullDisk {
            ext: "log",
            appends_left: appends_left.clone(),
            failed: failed.clone(),
        });
        let db = Db::open_with(&dir, options).unwrap();
        // Two batches of 1,000 lines go in; the third append fails.
        appends_left.store(2, Ordering::SeqCst);
        let e = import_failing(db, 2500);
        let (wal, offset) = failed.lock().unwrap().clone().expect("an append failed");
        assert_eq!(e.code, crate::error::EXIT_IO);
        assert_eq!(
            e.to_string(),
            format!(
                "kvctl: I/O error: append to log {} at {offset}: No space left on device (os \
                 error 28)\n\
                 hint: the 2,000 keys before it were imported; free space on the disk and \
                 import again (re-importing a key overwrites it)",
                wal.display()
            )
        );

        // With space again, the next write command drops the torn record
        // and says so.
        // A batch of 1,000 lines `keyNNNNN<TAB>vNNNN` is 8,012 payload
        // bytes; half the record (12-byte header included) reached the disk.
        let db = open_or_create_waiting(&dir, Options::default(), None).unwrap();
        assert_eq!(
            torn_tail_warnings(&db),
            [format!(
                "kvctl: warning: {} ends in a torn record at offset {offset} (record cut off: \
                 8012 payload bytes declared, 4000 present); its 4,012 bytes were dropped (a \
                 write cut short by a crash or by a write error such as a full disk, or damage \
                 to the last record)",
                wal.display(),
            )]
        );
        assert_eq!(db.iter().count(), 2000);
    }

    /// The disk fills under a background flush: the write that finds the
    /// database read-only says how many keys went in, and that they are
    /// exactly those the database holds.
    #[test]
    fn a_failed_background_flush_during_an_import_says_how_many_keys_went_in() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("db");
        let failed = Arc::new(Mutex::new(None));
        let mut options = Options::default();
        // Every batch of 1,000 lines fills a memtable.
        options.write_buffer_size = 4096;
        options.file_system = Arc::new(FullDisk {
            ext: "sst",
            appends_left: Arc::new(AtomicU64::new(0)),
            failed: failed.clone(),
        });
        let db = Db::open_with(&dir, options).unwrap();
        let e = import_failing(db, 20_000);
        let (table, _) = failed
            .lock()
            .unwrap()
            .clone()
            .expect("a table write failed");
        let db = open_or_create_waiting(&dir, Options::default(), None).unwrap();
        let imported = db.iter().count() as u64;
        assert!(imported > 0 && imported < 20_000, "{imported}");
        assert_eq!(e.code, crate::error::EXIT_IO);
        assert_eq!(
            e.to_string(),
            format!(
                "kvctl: database is read-only after a background error: flush failed: I/O error: \
                 write {}: No space left on device (os error 28)\n\
                 hint: the {} before it were imported; fix the cause (free space if the disk is \
                 full) and import again (re-importing a key overwrites it)",
                table.display(),
                count(imported, "key")
            )
        );
    }

    #[test]
    fn lines_parse() {
        let (k, v) = parse_line(b"a\\tb\tx\\x00y", LineFormat::Escaped).unwrap();
        assert_eq!((&*k, &*v), (&b"a\tb"[..], &b"x\0y"[..]));
        let (k, v) = parse_line(b"a\\\"\t{\"q\":\"\\\"\"}", LineFormat::Raw).unwrap();
        assert_eq!((&*k, &*v), (&b"a\\\""[..], &b"{\"q\":\"\\\"\"}"[..]));
        assert!(parse_line(b"no tab", LineFormat::Raw).is_err());
        assert!(parse_line(b"k\tbad \\\" escape", LineFormat::Escaped).is_err());
    }
}
