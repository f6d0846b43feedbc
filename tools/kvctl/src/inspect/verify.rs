//! `kvctl verify`: every checksum and invariant of a database or one file.

use std::io::{self, IsTerminal};
use std::path::PathBuf;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use siftdb::inspect::{verify_db, verify_file, VerifyReport};

use super::kind::{self, FileKind};
use super::{emit, emit_json, entries_text};
use crate::error::{is_options_file, CliError, EXIT_CORRUPTION, OPTIONS_ADVICE, SALVAGE_ADVICE};
use crate::format::{count, human_bytes};

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  kvctl verify ./db --all\n\n\
Checks every block checksum (data, index, filter, properties, footer), key order \
within and across blocks, each table's properties and manifest entry against its \
contents, that the filter answers \"maybe\" for every key the table holds, that \
the manifest replays, every live file exists and levels >= 1 do not overlap, and \
that live WALs read to their end. Exits 0 when clean, 3 on the first problem \
(every problem with --all).")]
pub struct VerifyArgs {
    /// Database directory, or one .sst, .log or MANIFEST-NNNNNN file
    pub path: PathBuf,
    /// Check everything and report every problem instead of stopping at the first
    #[arg(long)]
    pub all: bool,
    /// No progress bar
    #[arg(long, short)]
    pub quiet: bool,
    /// Print JSON (schema in DESIGN.md, "kvctl JSON output")
    #[arg(long)]
    pub json: bool,
}

/// The JSON document `verify --json` prints.
pub fn report_json(r: &VerifyReport) -> Value {
    json!({
        "ok": r.is_clean(),
        "problems": r.problems.iter().map(|p| json!({
            "file": p.file.display().to_string(),
            "what": p.what,
            "offset": p.offset,
            "detail": p.detail,
        })).collect::<Vec<_>>(),
        "notes": r.notes,
        "checked": {
            "manifest_edits": r.manifest_edits,
            "tables": r.tables,
            "table_bytes": r.table_bytes,
            "data_blocks": r.data_blocks,
            "entries": r.entries,
            "filter_probes": r.filter_probes,
            "wals": r.wals,
            "wal_records": r.wal_records,
        },
    })
}

/// One line saying what was checked.
pub fn summary(r: &VerifyReport) -> String {
    let mut parts = Vec::new();
    if r.manifest_edits > 0 {
        parts.push(format!("manifest ({})", count(r.manifest_edits, "edit")));
    }
    if r.tables > 0 {
        parts.push(format!(
            "{} ({}: {}, {}, {} probed in filters)",
            count(r.tables, "SSTable"),
            human_bytes(r.table_bytes),
            count(r.data_blocks, "data block"),
            entries_text(r.entries),
            count(r.filter_probes, "key"),
        ));
    }
    if r.wals > 0 {
        parts.push(format!(
            "{} ({})",
            count(r.wals, "WAL"),
            count(r.wal_records, "record")
        ));
    }
    if parts.is_empty() {
        "nothing".into()
    } else {
        parts.join(", ")
    }
}

fn progress_bar(quiet: bool) -> ProgressBar {
    if quiet || !io::stdout().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(0);
    if let Ok(style) = ProgressStyle::with_template(
        "[{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} verified",
    ) {
        pb.set_style(style);
    }
    pb
}

pub fn run(args: &VerifyArgs) -> Result<(), CliError> {
    let pb = progress_bar(args.quiet);
    let mut progress = |done: u64, total: u64| {
        pb.set_length(total);
        pb.set_position(done);
    };
    let result = if args.path.is_dir() {
        verify_db(&args.path, args.all, &mut progress)
    } else if args.path.exists() {
        match kind::file_kind(&args.path) {
            FileKind::Table | FileKind::Wal | FileKind::Manifest => {
                verify_file(&args.path, args.all, &mut progress)
            }
            other => return Err(kind::wrong_kind(&args.path, other, "verify")),
        }
    } else {
        return Err(CliError::usage(format!(
            "{}: does not exist (give a database directory or one of its files)",
            args.path.display()
        )));
    };
    pb.finish_and_clear();
    let r = result?;
    if args.json {
        emit_json(&report_json(&r))?;
    } else {
        let mut out = String::new();
        if args.all || r.is_clean() {
            for p in &r.problems {
                out.push_str(&format!("PROBLEM: {p}\n"));
            }
        }
        for n in &r.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        if r.is_clean() && !r.notes.is_empty() {
            // A note may be a torn WAL tail, which damage to the last
            // record looks the same as: not "no problems" alone.
            let which = if r.notes.len() == 1 {
                "the note"
            } else {
                "the notes"
            };
            out.push_str(&format!(
                "OK: checked {}; no damage, but see {which} above\n",
                summary(&r)
            ));
        } else if r.is_clean() {
            out.push_str(&format!("OK: checked {}; no problems\n", summary(&r)));
        } else if args.all {
            out.push_str(&format!(
                "checked {}; {} found\n",
                summary(&r),
                count(r.problems.len() as u64, "problem")
            ));
        }
        emit(&out)?;
    }
    // Damage to OPTIONS costs no data: its hint is the reset, not salvage.
    let advice = |problems: &[siftdb::inspect::Problem]| {
        let options = problems.iter().any(|p| is_options_file(&p.file));
        let data = problems.iter().any(|p| !is_options_file(&p.file));
        match (data, options) {
            (true, true) => format!(
                "keep a copy of the directory and do not write to it; {SALVAGE_ADVICE}; \
                 {OPTIONS_ADVICE}"
            ),
            (false, true) => OPTIONS_ADVICE.to_string(),
            _ => format!("keep a copy of the directory and do not write to it; {SALVAGE_ADVICE}"),
        }
    };
    match r.problems.first() {
        None => Ok(()),
        Some(first) if !args.all => Err(CliError::new(EXIT_CORRUPTION, format!("verify: {first}"))
            .with_hint(format!(
                "run `kvctl verify --all` to check everything and list every problem; {}",
                advice(std::slice::from_ref(first))
            ))),
        Some(_) => Err(CliError::new(
            EXIT_CORRUPTION,
            format!(
                "verify: {} found",
                count(r.problems.len() as u64, "problem")
            ),
        )
        .with_hint(advice(&r.problems))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_counts() {
        let r = VerifyReport {
            manifest_edits: 3,
            tables: 2,
            table_bytes: 2048,
            data_blocks: 5,
            entries: 1,
            filter_probes: 1,
            wals: 1,
            wal_records: 0,
            ..Default::default()
        };
        assert_eq!(
            summary(&r),
            "manifest (3 edits), 2 SSTables (2 KiB: 5 data blocks, 1 entry, 1 key probed in filters), 1 WAL (0 records)"
        );
    }
}
