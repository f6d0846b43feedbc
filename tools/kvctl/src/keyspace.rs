//! `kvctl keyspace list|create|drop`: the keyspaces (column families) of a
//! database (DESIGN.md 2).
//!
//! Also the global `--keyspace NAME` every command that reads or writes
//! keys honours (and `options`, which shows the keyspace's settings):
//! [`select`] records it once the command line is parsed, and the
//! commands reach the keyspace through [`existing`], [`creating`]
//! (`import`, `put`) or, reading the files, [`tree`]. The commands that
//! cover the whole database refuse it (`main::whole_database`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clap::{Args, Subcommand};
use serde_json::json;
use siftdb::inspect::{DbSnapshot, KeyspaceSelector, KeyspaceTree};
use siftdb::{Db, Keyspace, KeyspaceStats, LevelStats};

use crate::error::CliError;
use crate::format::{group, human_bytes, Align, Table};
use crate::inspect::{emit, emit_json};
use crate::wait::WaitArg;

/// The name of the default keyspace, `--keyspace`'s default.
pub const DEFAULT: &str = siftdb::inspect::version::edit::DEFAULT_KEYSPACE_NAME;

/// The keyspace `--keyspace` names, set once by [`select`].
static SELECTED: OnceLock<String> = OnceLock::new();

/// Records the keyspace `--keyspace` names, `default` if not given
/// (called once, by `main`).
pub fn select(name: Option<&str>) {
    let _ = SELECTED.set(name.unwrap_or(DEFAULT).to_string());
}

/// The keyspace `--keyspace` names (`default` if not given).
pub fn selected() -> &'static str {
    SELECTED.get().map_or(DEFAULT, String::as_str)
}

/// `--keyspace` as an inspection selector.
pub fn selector() -> KeyspaceSelector {
    match selected() {
        DEFAULT => KeyspaceSelector::Default,
        name => KeyspaceSelector::Name(name.to_string()),
    }
}

/// The error for a database at `db` without the keyspace `name`: exit 2,
/// pointing at `kvctl keyspace list`.
pub fn missing(db: &Path, name: &str) -> CliError {
    CliError::usage(format!(
        "no keyspace {name} (kvctl keyspace list {})",
        db.display()
    ))
}

/// `e`, with [`siftdb::Error::NoSuchKeyspace`] said as [`missing`] says it.
pub fn keyspace_error(db: &Path, e: siftdb::Error) -> CliError {
    match e {
        siftdb::Error::NoSuchKeyspace(name) => missing(db, &name),
        e => e.into(),
    }
}

/// The keyspace `--keyspace` names in `db`, which must hold it.
///
/// # Errors
/// Exit 2 ([`missing`]) if `db` has no live keyspace of that name.
pub fn existing(db: &Db) -> Result<Keyspace, CliError> {
    db.existing_keyspace(selected())
        .map_err(|e| keyspace_error(db.path(), e))
}

/// The keyspace `--keyspace` names in `db`, created if missing (`import`
/// and `put`, which create a missing database too).
///
/// # Errors
/// A bad name (exit 2), or the manifest write failing.
pub fn creating(db: &Db) -> Result<Keyspace, CliError> {
    Ok(db.keyspace(selected())?)
}

/// The tree of the keyspace `--keyspace` names in a snapshot of the files.
///
/// # Errors
/// Exit 2 ([`missing`]) if the snapshot holds no live keyspace of that name.
pub fn tree(snap: &DbSnapshot) -> Result<&KeyspaceTree, CliError> {
    snap.tree(&selector())
        .map_err(|e| keyspace_error(&snap.dir, e))
}

/// The settings keyspace `tree` stores: the database's `OPTIONS` for the
/// default keyspace (`None` without the file), the manifest's (tags 13,
/// 15) for another.
pub fn stored_settings(
    s: &DbSnapshot,
    tree: &KeyspaceTree,
) -> siftdb::Result<Option<Vec<(String, String)>>> {
    if tree.id == 0 {
        return siftdb::Db::stored_options(&s.dir);
    }
    let text = s
        .state
        .keyspaces
        .get(&tree.id)
        .map_or("", |k| k.options_text.as_str());
    Ok(Some(
        text.lines()
            .map(|line| {
                let (k, v) = line.split_once(' ').unwrap_or((line, ""));
                (k.to_string(), v.to_string())
            })
            .collect(),
    ))
}

/// The keyspaces of `stats` as JSON (DESIGN.md 12.9), the default first.
pub fn keyspaces_json(stats: &[KeyspaceStats]) -> serde_json::Value {
    stats.iter().map(keyspace_json).collect()
}

/// The keyspaces of `stats` as a text table, the default first.
pub fn keyspaces_table(stats: &[KeyspaceStats]) -> String {
    let mut t = Table::new(&[
        ("id", Align::Right),
        ("name", Align::Left),
        ("tables", Align::Right),
        ("bytes", Align::Right),
        ("entries", Align::Right),
        ("memtable", Align::Right),
        ("log", Align::Right),
    ]);
    for k in stats {
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
    t.render("")
}

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
    /// Create a keyspace (with the database's settings) in an existing database
    #[command(
        after_help = "Names are 1 to 64 ASCII letters, digits, `_`, `-` and `.`, not \
starting with `.` or `-`. `import` and `put` with --keyspace NAME also create a missing one.\n\n\
Example:\n  kvctl keyspace create ./db users"
    )]
    Create(CreateArgs),
    /// Drop a keyspace and every key in it (needs --yes); its tables and the WALs it alone kept are deleted
    #[command(
        after_help = "The default keyspace cannot be dropped. A keyspace created again \
under the same name starts empty, with a new id.\n\nExample:\n  kvctl keyspace drop ./db users --yes"
    )]
    Drop(DropArgs),
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Database directory (an existing database)
    pub db: PathBuf,
    /// The new keyspace's name
    pub name: String,
    #[command(flatten)]
    pub wait: WaitArg,
}

#[derive(Debug, Args)]
pub struct DropArgs {
    /// Database directory
    pub db: PathBuf,
    /// The keyspace to drop
    pub name: String,
    /// Confirm: every key of the keyspace is deleted
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub wait: WaitArg,
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
        KeyspaceCommand::Create(a) => create(a),
        KeyspaceCommand::Drop(a) => drop_keyspace(a),
    }
}

fn create(args: &CreateArgs) -> Result<(), CliError> {
    let db = crate::data::open_existing_waiting(&args.db, Db::builder(&args.db), args.wait.wait)?;
    if db.keyspaces().contains(&args.name) {
        return Err(CliError::usage(format!(
            "keyspace {} exists already in {}",
            args.name,
            args.db.display()
        )));
    }
    let id = db.keyspace(&args.name)?.id();
    db.close()?;
    emit(&format!("created keyspace {} (id {id})\n", args.name))
}

fn drop_keyspace(args: &DropArgs) -> Result<(), CliError> {
    if !args.yes {
        return Err(CliError::usage(format!(
            "keyspace drop deletes every key of keyspace {}: add --yes to confirm",
            args.name
        ))
        .with_hint(format!(
            "kvctl export {} --keyspace {} FILE first keeps a copy",
            args.db.display(),
            args.name
        )));
    }
    let db = crate::data::open_existing_waiting(&args.db, Db::builder(&args.db), args.wait.wait)?;
    db.drop_keyspace(&args.name)
        .map_err(|e| keyspace_error(&args.db, e))?;
    db.close()?;
    emit(&format!("dropped keyspace {}\n", args.name))
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
        return emit_json(&json!({ "keyspaces": keyspaces_json(&stats.keyspaces) }));
    }
    emit(&keyspaces_table(&stats.keyspaces))
}
