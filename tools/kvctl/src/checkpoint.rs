//! `kvctl checkpoint`: a consistent copy of a database in a new directory
//! ([`siftdb::Db::checkpoint`]).

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use serde_json::json;

use crate::data::open_existing_waiting;
use crate::error::{write_failed, CliError};
use crate::format::{count, group, human_bytes};

#[derive(Debug, Args)]
#[command(
    after_help = "The checkpoint holds every write acknowledged before the command, SSTables \
hard-linked (copied on a file system that cannot link), and opens as an ordinary database. It is \
built in DIR.checkpoint-tmp and renamed to DIR once complete: after a crash DIR is absent or whole, \
and the next checkpoint into DIR removes what the crash left.\n\n\
Example:\n  kvctl checkpoint ./db ./backups/db-monday\n  kvctl checkpoint --wait=10 --json ./db ./snap"
)]
pub struct CheckpointArgs {
    /// Database directory
    pub db: PathBuf,
    /// The checkpoint's directory: must not exist (its parent is created)
    pub dir: PathBuf,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub wait: crate::wait::WaitArg,
}

/// The JSON document `checkpoint --json` prints (DESIGN.md 12.9).
fn report_json(r: &siftdb::CheckpointReport, seconds: f64) -> serde_json::Value {
    json!({
        "bytes_copied": r.bytes_copied,
        "path": r.path.display().to_string(),
        "seconds": seconds,
        "sequence": r.sequence.0,
        "stale_temp_removed": r.stale_temp_removed,
        "table_bytes": r.table_bytes,
        "tables_copied": r.tables_copied,
        "tables_linked": r.tables_linked,
        "wal_bytes": r.wal_bytes,
        "wal_files": r.wal_files,
    })
}

/// Opens the database for writing (waiting for the lock as `--wait`
/// says), makes the checkpoint, closes, and prints what it made.
pub fn run(args: &CheckpointArgs) -> Result<(), CliError> {
    // A checkpoint copies every keyspace: nothing to refuse.
    let db = open_existing_waiting(&args.db, siftdb::Db::builder(&args.db), args.wait.wait)?;
    let start = Instant::now();
    let report = db.checkpoint(&args.dir)?;
    let seconds = start.elapsed().as_secs_f64();
    db.close()?;
    let text = if args.json {
        format!("{:#}\n", report_json(&report, seconds))
    } else {
        let mut s = format!(
            "checkpoint of {} at sequence {} in {}: {} ({}) linked, {} copied; {} ({}) copied; \
             {:.3} s\n",
            args.db.display(),
            group(report.sequence.0),
            report.path.display(),
            count(report.tables_linked, "SSTable"),
            human_bytes(report.table_bytes),
            report.tables_copied,
            count(report.wal_files, "WAL"),
            human_bytes(report.wal_bytes),
            seconds
        );
        if report.stale_temp_removed {
            s.push_str(&format!(
                "removed {} left by a checkpoint that did not finish\n",
                siftdb::checkpoint_temp_dir(&report.path)?.display()
            ));
        }
        s
    };
    io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(write_failed)
}
