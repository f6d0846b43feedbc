//! `kvctl export` (and `export --salvage`): every pair, or a key range,
//! as export's header line and escaped `KEY<TAB>VALUE` lines (DESIGN.md
//! 12.11), written to a file only once complete.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use flate2::write::GzEncoder;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use siftdb::inspect::escape::escape_bytes;
use siftdb::inspect::{FileSet, KeyspaceSelector, Salvage, SalvageReport};

use crate::data::{open_read_only, Pair, EXPORT_HEADER};
use crate::error::{write_failed, CliError, EXIT_CORRUPTION};
use crate::format::{count, escaped_arg, Bytes, TORN_WRITE};
use crate::inspect::{emit_json, entries_text, file_name, torn_json};

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  kvctl export ./db backup.tsv.gz\n  \
kvctl export ./db part.tsv --from user:1000 --to user:2000\n  \
kvctl export --salvage ./damaged-db rescued.tsv.gz\n\n\
The first line is the header `#kvctl-export escaped v1`; each pair follows as an escaped \
KEY<TAB>VALUE line, so `import` reads it back exactly (DESIGN.md 12.11).\n\n\
An existing FILE is refused unless --force is given. The output appears only when complete: the export writes .NAME.kvctl-partial beside it and \
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
    /// With --salvage: the keyspace to salvage by its id (`kvctl keyspace
    /// list`), for a database whose manifest is gone: the tables name their
    /// keyspace by id only
    #[arg(long, value_name = "N", requires = "salvage", conflicts_with_all = ["from", "to"])]
    pub keyspace_id: Option<u32>,
    /// With --salvage: print the report as JSON on stdout (needs an output FILE)
    #[arg(long, requires = "salvage", conflicts_with_all = ["from", "to"])]
    pub json: bool,
    /// With --salvage: write the keys flagged as possibly stale to this file,
    /// escaped, one per line
    #[arg(long, value_name = "FILE", requires = "salvage", conflicts_with_all = ["from", "to"])]
    pub stale_keys: Option<PathBuf>,
    /// No progress bar and no "exported N keys" line (errors, and what a
    /// salvage lost, still go to stderr)
    #[arg(long, short)]
    pub quiet: bool,
    /// Replace FILE if it exists (without it, an existing file is refused,
    /// so that an export cannot overwrite, say, the file it was imported
    /// from)
    #[arg(long, short)]
    pub force: bool,
}

pub fn export(args: &ExportArgs) -> Result<(), CliError> {
    if args.salvage {
        return export_salvage(args);
    }
    let bounded = args.from.is_some() || args.to.is_some();
    let range = if bounded {
        crate::scan::checked_key_range(
            "export",
            args.prefix.as_deref(),
            args.from.as_deref(),
            args.to.as_deref(),
            false,
            false,
        )?
    } else {
        None
    };
    // Damage met here is `Corruption`, whose hint points at `--salvage`.
    let db = open_read_only(&args.db)?;
    let ks = crate::keyspace::existing(&db)?;
    let iter: Box<dyn Iterator<Item = siftdb::Result<Pair>>> = match (&args.prefix, range) {
        (_, Some(range)) => Box::new(ks.range(range)),
        // The bounds leave no key (`--prefix b --to a`): an empty export.
        (_, None) if bounded => Box::new(std::iter::empty()),
        // A prefix alone scans with the prefix filters' help.
        (Some(p), None) => Box::new(ks.prefix(p)),
        (None, None) => Box::new(ks.iter()),
    };
    // The bar counts keys against the entries in SSTables, an upper bound
    // (old versions and tombstones are not exported).
    let progress = if args.quiet || args.file == Path::new("-") || !io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        let entries: u64 = ks.stats().levels.iter().map(|l| l.entries).sum();
        let pb = ProgressBar::new(entries);
        if let Ok(style) =
            ProgressStyle::with_template("[{elapsed_precise}] {wide_bar} {pos} keys  {msg}")
        {
            pb.set_style(style);
        }
        pb
    };
    let n = write_output(&args.file, args.force, iter, &progress)?;
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
/// how many pairs. An existing regular file (through any symbolic links)
/// is replaced only if `force`; otherwise it is exit 2.
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
    force: bool,
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
        Ok(_) if !force => {
            return Err(CliError::usage(format!(
                "{what} exists; pass --force to replace it"
            )));
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

/// Refuses an output file inside the database directory, also by way of
/// a symbolic link: a salvage never writes there (not even its partial
/// file).
fn refuse_output_inside(db: &Path, file: &Path) -> Result<(), CliError> {
    if file == Path::new("-") {
        return Ok(());
    }
    // Where the output really goes: through any symbolic links.
    let target = resolve_links(file)?;
    let parent = match target.parent() {
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
    let selector = match args.keyspace_id {
        Some(_) if crate::keyspace::selected() != crate::keyspace::DEFAULT => {
            return Err(CliError::usage(
                "export --salvage takes --keyspace NAME or --keyspace-id N, not both",
            ))
        }
        Some(id) => KeyspaceSelector::Id(id),
        None => crate::keyspace::selector(),
    };
    let mut salvage = Salvage::open(&args.db, &selector)
        .map_err(|e| crate::keyspace::keyspace_error(&args.db, e))?;
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
            Ok((e.key.into(), e.value.into()))
        });
    let exported = write_output(&args.file, args.force, pairs, &progress)?;
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
    // With nothing lost, the damage was the manifest alone: the export
    // holds every entry the files hold, not "every other" (a new-user
    // trial read that as a loss).
    let holds = if outcome.lost_nothing() {
        "holds every entry found in the directory's files"
    } else {
        "holds every other entry"
    };
    Err(CliError::new(
        EXIT_CORRUPTION,
        format!("export --salvage: {}", outcome.lost_summary()),
    )
    .with_hint(format!(
        "{} {holds}; load it into a fresh database with `kvctl import NEW {}`, and keep a copy \
         of the damaged directory",
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
    /// True if no data block, table or WAL record was lost (the salvage
    /// may still be incomplete: the manifest unusable).
    fn lost_nothing(&self) -> bool {
        let r = self.report;
        r.lost_blocks() == 0 && r.unread_tables() == 0 && r.damaged_wals() == 0
    }

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
        let mut s = if self.lost_nothing() {
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
                 keys\n\
                 warning: without the manifest, range deletions already flushed (the manifest \
                 keeps them, not the tables) are lost, so keys they deleted may come back; \
                 range deletions still in a WAL were applied\n"
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
            "keyspace": { "id": r.keyspace, "name": r.keyspace_name },
            "keyspaces": r.keyspaces,
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
