//! `kvctl keyspace list`: the keyspaces (column families) of a database
//! (docs/keyspaces-plan.md 7). `create` and `drop` come once a keyspace
//! can be dropped (increment 5): until then no release lets a user create
//! one it cannot drop.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;
use siftdb::inspect::DbSnapshot;
use siftdb::{KeyspaceStats, LevelStats};

use crate::error::CliError;
use crate::format::{group, human_bytes, Align, Table};
use crate::inspect::{emit, emit_json};

#[derive(Debug, Args)]
pub struct KeyspaceArgs {
    #[command(subcommand)]
    pub command: KeyspaceCommand,
}

#[derive(Debug, Subcommand)]
pub enum KeyspaceCommand {
    /// List the keyspaces, the default first: id, name, tables, bytes, memtable bytes (the live WALs replayed), log number
    #[command(
        after_help = "Reads the files only (no lock): works while another process has the \
database open.\n\nExample:\n  kvctl keyspace list ./db --json"
    )]
    List(ListArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Database directory
    pub db: PathBuf,
    /// Print JSON (schema in DESIGN.md 12.9)
    #[arg(long)]
    pub json: bool,
}

/// Runs `kvctl keyspace ...`.
pub fn run(args: &KeyspaceArgs) -> Result<(), CliError> {
    match &args.command {
        KeyspaceCommand::List(a) => list(a),
    }
}

/// One keyspace's line of `keyspace list --json` (DESIGN.md 12.9).
fn keyspace_json(k: &KeyspaceStats) -> serde_json::Value {
    let all = LevelStats::sum(&k.levels);
    json!({
        "id": k.id,
        "name": k.name,
        "tables": all.files,
        "bytes": all.bytes,
        "entries": all.entries,
        "memtable_bytes": k.memtable_bytes,
        "log_number": k.log_number,
    })
}

fn list(args: &ListArgs) -> Result<(), CliError> {
    let stats = DbSnapshot::open(&args.db)?.stats();
    if args.json {
        let all: Vec<serde_json::Value> = stats.keyspaces.iter().map(keyspace_json).collect();
        return emit_json(&json!({ "keyspaces": all }));
    }
    let mut t = Table::new(&[
        ("id", Align::Right),
        ("name", Align::Left),
        ("tables", Align::Right),
        ("bytes", Align::Right),
        ("entries", Align::Right),
        ("memtable", Align::Right),
        ("log", Align::Right),
    ]);
    for k in &stats.keyspaces {
        let all = LevelStats::sum(&k.levels);
        t.row(vec![
            k.id.to_string(),
            k.name.clone(),
            group(all.files as u64),
            human_bytes(all.bytes),
            group(all.entries),
            human_bytes(k.memtable_bytes),
            k.log_number.to_string(),
        ]);
    }
    emit(&t.render(""))
}
