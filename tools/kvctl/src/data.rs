//! `kvctl import`, and what the data commands share: opening a database
//! (read-only, existing, or created; waiting for the lock), the import
//! line format.
//!
//! Keys and values cross the command line and text files in escaped form
//! (see [`siftdb::inspect::escape`]): what `scan` and `export` print, `import` and
//! the `KEY`/`VALUE` arguments accept.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufRead, BufReader, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use flate2::read::MultiGzDecoder;
use indicatif::{ProgressBar, ProgressStyle};
use siftdb::inspect::DbSnapshot;
use siftdb::{Db, DbBuilder, Keyspace, Options, WriteBatch};

use crate::error::{write_failed, CliError};
use crate::format::{count, human_bytes, parse_size, TORN_WRITE};
use crate::wait::{retry_locked, Wait, WaitArg};

/// A key and its value, as the database iterators yield them.
pub type Pair = (siftdb::Slice, siftdb::Slice);

/// A decoded import line: key and value, borrowed when nothing was unescaped.
pub type Decoded<'a> = (Cow<'a, [u8]>, Cow<'a, [u8]>);

/// Updates per `WriteBatch` during import.
pub const IMPORT_BATCH: usize = 1000;

/// Encoded bytes a `WriteBatch` may reach during import before it is
/// written: large values make batches of fewer than [`IMPORT_BATCH`]
/// lines, so that memory stays bounded and no batch nears the 4 GiB limit
/// of one (`siftdb::inspect::write_batch::MAX_BATCH_LEN`). A longer line is a batch
/// of its own.
pub const IMPORT_BATCH_BYTES: usize = 16 << 20;

/// Opens an existing database with the options `builder` sets over the
/// stored ones (never creating one), waiting for the lock as `wait` says
/// ([`crate::wait::retry_locked`]).
pub fn open_existing_waiting(
    path: &Path,
    builder: DbBuilder,
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
    let b = builder.create_if_missing(false);
    warn_dropped(retry_locked(wait, || b.clone().open())?)
}

/// The per-keyspace settings a writing command's flags give (`import`,
/// `compact`; only the ones given: the others keep the stored settings):
/// for the default keyspace they go to the database's builder (and are
/// stored in `OPTIONS`); for another keyspace (`--keyspace`), to that
/// keyspace's settings, stored in the manifest (a new-user trial found
/// them changing the default keyspace instead).
#[derive(Default)]
pub struct LayoutFlags<'a> {
    pub bits_per_key: Option<u32>,
    pub filters: Option<&'a crate::filter_spec::FilterSpec>,
    pub filter_budget: Option<f64>,
    pub prefix_len: Option<u16>,
    pub compression: Option<&'a siftdb::CompressionPolicy>,
    pub write_buffer_size: Option<usize>,
    pub target_file_size: Option<u64>,
}

/// `$target` (a [`DbBuilder`] or a [`siftdb::KeyspaceOptions`], whose
/// setters share their names) with the flags of `$flags` set: the one list
/// of what [`LayoutFlags`] sets, for both.
macro_rules! with_layout_flags {
    ($flags:expr, $target:expr) => {{
        let f: &LayoutFlags = $flags;
        let mut t = $target;
        if let Some(b) = f.bits_per_key {
            t = t.bits_per_key(b);
        }
        if let Some(spec) = f.filters {
            t = t.filters(spec.0.clone());
        }
        if let Some(b) = f.filter_budget {
            t = t.filter_budget(siftdb::filter::FilterBudget::bits_per_key(b));
        }
        if let Some(n) = f.prefix_len {
            t = t.prefix_extractor(std::sync::Arc::new(siftdb::filter::FixedPrefix::new(
                usize::from(n),
            )));
        }
        if let Some(c) = f.compression {
            t = t.compression(c.clone());
        }
        if let Some(w) = f.write_buffer_size {
            t = t.write_buffer_size(w);
        }
        if let Some(size) = f.target_file_size {
            t = t.target_file_size(size);
        }
        t
    }};
}

impl LayoutFlags<'_> {
    /// `builder` with the flags set, if `--keyspace` selects the default
    /// keyspace; unchanged otherwise ([`LayoutFlags::keyspace`] applies
    /// them).
    pub fn builder(&self, builder: DbBuilder) -> DbBuilder {
        if crate::keyspace::selected() != crate::keyspace::DEFAULT {
            return builder;
        }
        with_layout_flags!(self, builder)
    }

    /// `ks` (the keyspace `--keyspace` names) with the flags stored as its
    /// settings over its current ones ([`Db::keyspace_with`], which writes
    /// nothing when they change nothing); `ks` itself for the default
    /// keyspace. Each changed setting is printed as a note on standard
    /// error.
    ///
    /// # Errors
    /// Settings the engine refuses (exit 2), or the manifest write failing.
    pub fn keyspace(&self, db: &Db, ks: Keyspace) -> Result<Keyspace, CliError> {
        let name = crate::keyspace::selected();
        if name == crate::keyspace::DEFAULT {
            return Ok(ks);
        }
        let wanted = with_layout_flags!(self, siftdb::KeyspaceOptions::from_options(&ks.options()));
        drop(ks);
        let (ks, changes) = db.keyspace_with(name, wanted)?;
        for c in changes {
            let _ = writeln!(io::stderr(), "kvctl: keyspace {name:?}: {c}");
        }
        Ok(ks)
    }
}

/// Parses `--compression`: comma-separated codecs, level 0 first, each
/// one this build has (zstd only with kvctl's `zstd` feature, which
/// enables siftdb's).
pub fn parse_compression(s: &str) -> Result<siftdb::CompressionPolicy, String> {
    let policy: siftdb::CompressionPolicy = s.parse()?;
    policy.check_available()?;
    Ok(policy)
}

/// Refuses `--bits-per-key N` (exit 2) when the stored settings of the
/// keyspace `--keyspace` names have a per-level filter spec or a filter
/// budget: either one takes precedence over `bits_per_key`, so N would
/// change no filter yet be stored. Those settings are the database's
/// OPTIONS for the default keyspace, and for a keyspace not yet created
/// (`import` creates it with them); the manifest's for another
/// ([`crate::keyspace::stored_settings`]). Checked before the open, which
/// would store N. A spec or budget given on the same command line is
/// refused by clap already.
///
/// # Errors
/// Exit 2 naming the stored setting and the flag that changes it; a
/// damaged OPTIONS file as [`Db::stored_options`] reports it, a damaged
/// database (with `--keyspace`) as [`DbSnapshot::open`] does.
pub fn refuse_bits_per_key_under_stored_filters(
    path: &Path,
    bits_per_key: Option<u32>,
) -> Result<(), CliError> {
    let Some(n) = bits_per_key else {
        return Ok(());
    };
    if !siftdb::inspect::filename::current_path(path).exists() {
        return Ok(());
    }
    let name = crate::keyspace::selected();
    // A keyspace not yet created has none of its own: `import` creates it
    // with the database's (and `compact`'s open refuses it as missing).
    let own = match name {
        crate::keyspace::DEFAULT => None,
        _ => {
            let snap = DbSnapshot::open(path)?;
            match crate::keyspace::tree(&snap) {
                Ok(tree) => Some(crate::keyspace::stored_settings(&snap, tree)?),
                Err(_) => None,
            }
        }
    };
    let (stored, holder, shown_by) = match own {
        Some(stored) => (
            stored,
            format!("keyspace {name}"),
            format!("kvctl options DB --keyspace {name}"),
        ),
        None => (
            Db::stored_options(path)?,
            "the database".to_string(),
            "kvctl options DB".to_string(),
        ),
    };
    let stored = stored.unwrap_or_default();
    let value = |name: &str| {
        stored
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    // The spec that does what the flag meant (`bloom:0` does not parse).
    let instead = if n == 0 {
        "none for no filter on any level".to_string()
    } else {
        format!("bloom:{n} for a classic Bloom filter at {n} bits per key on every level")
    };
    if let Some(f) = value("filters").filter(|v| *v != "default") {
        return Err(CliError::usage(format!(
            "--bits-per-key {n} would change no filter: {holder} stores the per-level \
             filter spec `{f}` (set by --filters), which takes precedence"
        ))
        .with_hint(format!(
            "give --filters instead, e.g. --filters {instead} (`{shown_by}` shows the stored \
             settings)",
        )));
    }
    if let Some(b) = value("filter_budget").filter(|v| *v != "none") {
        return Err(CliError::usage(format!(
            "--bits-per-key {n} would change no filter: {holder} stores the filter budget \
             `{b}` (set by --filter-budget), which sizes every filter"
        ))
        .with_hint(format!(
            "give --filter-budget BITS to change the budget (`{shown_by}` shows the stored \
             settings)",
        )));
    }
    Ok(())
}

/// Says on stderr if the open dropped a torn WAL tail (a write cut short
/// by a crash or a write error, or damage to a log's last record), which
/// a writing open makes permanent, and if it found the `OPTIONS` file of
/// an existing database missing (its stored settings are then gone);
/// returns `db`.
fn warn_dropped(db: Db) -> Result<Db, CliError> {
    for w in torn_tail_warnings(&db) {
        let _ = writeln!(io::stderr(), "{w}");
    }
    if db.recovery().options_file_missing {
        let _ = writeln!(
            io::stderr(),
            "kvctl: warning: {} had no OPTIONS file (deleted?): the settings new files are \
             built with (filters, compression, block and file sizes) are now the defaults \
             and this command's flags, and are stored; `kvctl options {}` shows them",
            db.path().display(),
            db.path().display()
        );
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

/// Opens a database with the options `builder` sets over the stored ones,
/// creating it if missing, waiting for the lock as `wait` says
/// ([`crate::wait::retry_locked`]; `None`: not at all).
///
/// # Errors
/// Exit 2 if the database directory is missing and so is its parent:
/// kvctl creates the database's own directory, not a path of them (a
/// mistyped path would otherwise become a new database, silently).
pub fn open_or_create_waiting(builder: DbBuilder, wait: Option<Wait>) -> Result<Db, CliError> {
    let dir = builder.path();
    let missing_parent = dir
        .parent()
        .filter(|p| !dir.exists() && !p.as_os_str().is_empty() && !p.exists());
    if let Some(parent) = missing_parent {
        return Err(CliError::usage(format!(
            "{} does not exist, and kvctl creates only the database's own directory in an \
             existing one: check the path, or create {} first",
            parent.display(),
            parent.display()
        )));
    }
    warn_dropped(retry_locked(wait, || builder.clone().open())?)
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
kvctl); --raw refuses the header (DESIGN.md 12.11).\n\
A gzip file is checked whole before the first line is imported. A bad line, or a failed \
write (a full disk), stops the import there: lines are written in batches of 1,000 (fewer \
where they pass 16 MiB), and the whole batches before it stay imported (the error says how \
many keys).\n\n\
The summary counts the pairs written: a key on several lines counts each time (its last value \
wins); `kvctl scan DB --count` counts the keys. Ctrl-C stops the import and says how many \
pairs were imported (exit 130)."
)]
pub struct ImportArgs {
    /// Database directory (created if missing)
    pub db: PathBuf,
    /// Input: lines of KEY<TAB>VALUE; gzip is detected and decoded; `-` reads stdin
    pub file: PathBuf,
    /// Memtable size before a flush to a new SSTable, e.g. 4M or 512K
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub write_buffer_size: Option<usize>,
    /// Size at which a compaction starts a new SSTable in levels >= 1,
    /// e.g. 2M (default: the database's stored setting, else 64M; at least
    /// 1K). Stored in the database's OPTIONS file, so later opens keep it
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub target_file_size: Option<usize>,
    /// Bloom filter bits per key for new SSTables (0 = no filters).
    /// Refused for a database that stores a --filters spec or a
    /// --filter-budget, which take precedence: give --filters bloom:N then
    #[arg(
        long,
        value_name = "N",
        conflicts_with = "filters",
        value_parser = clap::value_parser!(u32).range(0..=64)
    )]
    pub bits_per_key: Option<u32>,
    /// Filter of each level's SSTables, level 0 first, the last serving
    /// deeper levels: none, or bloom, blocked-bloom or ribbon with bits per
    /// key or a rate, e.g. blocked-bloom:10,ribbon:1%
    #[arg(long, value_name = "SPEC", value_parser = crate::filter_spec::parse_spec)]
    pub filters: Option<crate::filter_spec::FilterSpec>,
    /// One filter memory budget for the whole tree, in bits per key on
    /// average, spread over the levels so that absent keys meet the
    /// fewest false positives (Monkey; DESIGN.md 3.2); `--filters` then
    /// gives only each level's kind. Stored (OPTIONS), as every setting here
    #[arg(long, value_name = "BITS", conflicts_with = "bits_per_key")]
    pub filter_budget: Option<f64>,
    /// Codec of each level's data blocks, level 0 first, the last serving
    /// deeper levels: none, lz4 or zstd (zstd needs kvctl built with
    /// --features zstd), e.g. none,none,lz4 (default: the database's stored
    /// setting, else none). Stored (OPTIONS)
    #[arg(long, value_name = "SPEC", value_parser = parse_compression)]
    pub compression: Option<siftdb::CompressionPolicy>,
    /// Also build prefix filters over the first N bytes of keys, so that
    /// scans of a prefix of N bytes or more skip tables without it (stored:
    /// later opens keep it)
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
/// DESIGN.md 12.11.
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
                siftdb::inspect::escape::unescape(s).map_err(|e| {
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
    ks: &Keyspace,
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
        // Counted under the interrupt handler's lock: Ctrl-C during the
        // write reports the batch once it is in (crate::interrupt).
        crate::interrupt::write_batch(keys, || db.write(std::mem::take(batch)))
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
                return Err(stopped(e, written, "leave out --raw"));
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
            .put_in(ks, &key, &value)
            .map_err(|e| bad_line(CliError::from(e).context(at()), written))?;
        sum.keys += 1;
        sum.bytes += (key.len() + value.len()) as u64;
        if batch.len() >= IMPORT_BATCH {
            write(&mut batch, sum.keys, &mut written)?;
        }
    }
    crate::interrupt::write_batch(sum.keys, || db.write(batch))
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

/// Whether the regular file `f` starts with gzip's magic number, read at
/// offset 0 without moving its cursor.
fn is_gzip(f: &File, path: &Path) -> Result<bool, CliError> {
    use std::os::unix::fs::FileExt;
    let mut magic = [0u8; 2];
    let n = f
        .read_at(&mut magic, 0)
        .map_err(|e| CliError::from_io(format!("reading {}", path.display()), &e))?;
    Ok(n == 2 && magic == [0x1f, 0x8b])
}

/// Decompresses the gzip file at `path` into nothing, so that a damaged
/// stream (bad deflate data, a truncated file, a wrong trailer CRC, which
/// gzip only checks at the end of each member) is found before a single
/// line reaches the database. Only for a regular file: it is opened again.
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

/// A reader over `file` (`None`: standard input) counting into
/// `progress`, decoding gzip when the first bytes are its magic number.
/// The file is read once, from its start: a pipe, a FIFO or a process
/// substitution cannot be read twice.
fn open_input(
    file: Option<File>,
    path: &Path,
    progress: &ProgressBar,
) -> Result<Box<dyn BufRead>, CliError> {
    let raw: Box<dyn Read> = match file {
        None => Box::new(progress.wrap_read(io::stdin())),
        Some(f) => {
            if let Ok(m) = f.metadata() {
                if m.is_file() {
                    progress.set_length(m.len());
                }
            }
            Box::new(progress.wrap_read(f))
        }
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

fn total_files(ks: &Keyspace) -> (u64, u64) {
    let s = ks.stats();
    let files = s.levels.iter().map(|l| l.files as u64).sum();
    let bytes = s.levels.iter().map(|l| l.bytes).sum();
    (files, bytes)
}

pub fn import(args: &ImportArgs) -> Result<(), CliError> {
    let layout = LayoutFlags {
        bits_per_key: args.bits_per_key,
        filters: args.filters.as_ref(),
        filter_budget: args.filter_budget,
        prefix_len: args.prefix_len,
        compression: args.compression.as_ref(),
        write_buffer_size: args.write_buffer_size,
        target_file_size: args.target_file_size.map(|t| t as u64),
    };
    let builder = layout.builder(Db::builder(&args.db));
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

    // The input is opened once. A regular gzip file is checked whole
    // first: its CRC is only at the end, and lines decoded from a damaged
    // stream must not be imported. Standard input, a pipe or a FIFO cannot
    // be read twice (reading its first bytes to look for gzip lost them:
    // found by a new-user trial); a bad stream there stops the import with
    // a hint saying how many keys went in before it.
    let file = if stdin {
        None
    } else {
        Some(open_input_file(&args.file)?)
    };
    let regular = file
        .as_ref()
        .is_some_and(|f| f.metadata().is_ok_and(|m| m.is_file()));
    if let (Some(f), true) = (&file, regular) {
        if is_gzip(f, &args.file)? {
            check_gzip(&args.file)?;
        }
    }
    refuse_bits_per_key_under_stored_filters(&args.db, args.bits_per_key)?;
    let progress = progress_bar(args.quiet, stdin || !regular);
    let input = open_input(file, &args.file, &progress)?;
    let new_database = !args.db.exists();
    let db = open_or_create_waiting(builder, args.wait.wait)?;
    let new_keyspace = db.existing_keyspace(crate::keyspace::selected()).is_err();
    let ks = layout.keyspace(&db, crate::keyspace::creating(&db)?)?;
    let before = ks.stats();
    crate::interrupt::on_interrupt(crate::interrupt::Task::Import {
        source: source.clone(),
    });
    let started = Instant::now();
    let result = import_lines(&db, &ks, input, format, &source, &progress);
    progress.finish_and_clear();
    let sum = match result {
        Ok(sum) => sum,
        Err(e) => {
            if ks.iter().next().is_none() {
                // The import created the database (or the keyspace) and
                // stopped before its first write: leave no empty one
                // behind (a new-user trial found an empty keyspace after
                // "nothing was imported"). Best effort: the error is what
                // matters.
                drop(ks);
                if new_database {
                    drop(db);
                    let _ = std::fs::remove_dir_all(&args.db);
                } else if new_keyspace {
                    let _ = db.drop_keyspace(crate::keyspace::selected());
                }
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
    let after = ks.stats();
    let created = tables_flushed(&before, &after);
    let compactions = after.compactions - before.compactions;
    let (files, bytes) = total_files(&ks);
    // The counts are the imported keyspace's: the database's only if it
    // has no other.
    let holder = match db.keyspaces().len() {
        1 => "the database".to_string(),
        _ => format!("keyspace {:?}", crate::keyspace::selected()),
    };
    drop(ks);
    db.close()?;
    // The time the keys took to be on disk in tables, not just in the log.
    let elapsed = started.elapsed();
    if args.quiet {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "imported {} ({} of keys and values) from {} in {:.2} s, the final flush included",
        count(sum.keys, "pair"),
        human_bytes(sum.bytes),
        source,
        elapsed.as_secs_f64()
    )
    .and_then(|_| {
        writeln!(
            out,
            "{} flushed, {}; {holder} now has {}, {}",
            count(created, "SSTable"),
            count(compactions, "compaction"),
            count(files, "SSTable"),
            human_bytes(bytes)
        )
    })
    .map_err(write_failed)
}

/// The SSTables the flushes between two `stats` wrote. A flush writes one
/// table, except that of a memtable holding only range deletions, which
/// writes none (they go to the manifest). No byte of SSTable from flushes
/// (flushes' and compactions' bytes less compactions') means no table;
/// otherwise every flush is counted as one. That is exact unless the
/// memtable the import began with held only range deletions and was full
/// enough to rotate at its first put (its flush wrote no table, and is
/// counted); the engine has no per-flush table counter to tell.
fn tables_flushed(before: &siftdb::Stats, after: &siftdb::Stats) -> u64 {
    let flush_bytes = |s: &siftdb::Stats| s.table_bytes_written - s.compaction_bytes_written;
    if flush_bytes(after) == flush_bytes(before) {
        0
    } else {
        after.flushes - before.flushes
    }
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
            &db.keyspace("default").unwrap(),
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
            &db.keyspace("default").unwrap(),
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
        let records = siftdb::inspect::log::read_log(&wals[0]).unwrap().records;
        let sizes: Vec<usize> = records
            .iter()
            .map(|r| {
                siftdb::inspect::write_batch::decode_batch(&r.payload)
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
        let db = open_or_create_waiting(Db::builder(&dir), None).unwrap();
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
        let db = open_or_create_waiting(Db::builder(&dir), None).unwrap();
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
