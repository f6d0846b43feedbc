//! `kvctl options`: the settings a database stored in its `OPTIONS` file
//! (DESIGN.md 12.13), and `--reset`, which replaces that file with the
//! defaults: the way out when it is damaged, since it holds settings
//! only, never keys or values. With `--keyspace NAME` (not the default),
//! the settings keyspace NAME stores in the manifest instead (tags 13
//! and 15, DESIGN.md 12.8), which its opens use whatever `OPTIONS` says.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::json;
use siftdb::inspect::sstable::compression::NO_ZSTD;
use siftdb::inspect::DbSnapshot;
use siftdb::{Compression, CompressionPolicy, Db, Options};

use crate::error::{CliError, NO_ZSTD_ADVICE};
use crate::inspect::{emit, emit_json};
use crate::wait::{retry_locked, WaitArg};

#[derive(Debug, Args)]
#[command(
    after_help = "The OPTIONS file holds the settings that shape new files (filters, block and \
file sizes, compaction); later opens keep them. It holds no keys or values, so a damaged one \
costs no data: --reset replaces it with the defaults (import, put and compact then store any \
flag they are given, such as --bits-per-key). Tables already written keep their own filters \
and block sizes. With --keyspace NAME: the settings keyspace NAME keeps in the manifest (every \
keyspace but the default has its own; --reset does not change them).\n\nExamples:\n  \
kvctl options ./db --json\n  kvctl options ./db --keyspace logs\n  kvctl options ./db --reset"
)]
pub struct OptionsArgs {
    /// Database directory
    pub db: PathBuf,
    /// Replace the OPTIONS file with the default settings (opens the
    /// database for writing)
    #[arg(long)]
    pub reset: bool,
    /// Print JSON: `keyspace`, `stored` [[name, value]] or null, and with
    /// --reset `changes` [str]
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub wait: WaitArg,
}

/// In a build without zstd, refuses `--reset` over a database that uses
/// it: stored options naming zstd, or a live table written with zstd
/// blocks. The reset would store compression `none` (losing the setting)
/// and leave those tables as unreadable to this build as before.
fn refuse_reset_over_zstd(db: &Path) -> Result<(), CliError> {
    let refuse = |why: String| {
        Err(CliError::usage(format!(
            "options --reset: {why}, and {NO_ZSTD} (a reset would store compression none \
             without making zstd tables readable)"
        ))
        .with_hint(NO_ZSTD_ADVICE))
    };
    // A damaged OPTIONS file is what --reset is for: judge by the tables.
    if let Ok(Some(stored)) = Db::stored_options(db) {
        if let Some((_, spec)) = stored.iter().find(|(name, _)| name == "compression") {
            let zstd = spec
                .parse::<CompressionPolicy>()
                .is_ok_and(|p| p.levels().contains(&Compression::Zstd));
            if zstd {
                return refuse(format!("the stored options use zstd (compression {spec})"));
            }
        }
    }
    let snap = DbSnapshot::open(db)?;
    let zstd_tables = snap
        .tables()
        .iter()
        .filter(|t| {
            t.properties
                .compression
                .as_ref()
                .is_some_and(|c| c.codec == Compression::Zstd.name() && c.compressed_blocks > 0)
        })
        .count() as u64;
    if zstd_tables > 0 {
        let tables = match zstd_tables {
            1 => "1 table holds".to_string(),
            n => format!("{} tables hold", crate::format::group(n)),
        };
        return refuse(format!("{tables} zstd-compressed blocks"));
    }
    Ok(())
}

/// Runs `kvctl options`.
pub fn run(args: &OptionsArgs) -> Result<(), CliError> {
    if !siftdb::inspect::filename::current_path(&args.db).exists() {
        return Err(siftdb::Error::NotADatabase {
            path: args.db.clone(),
            detail: "holds no database (no CURRENT file)".into(),
        }
        .into());
    }
    let keyspace = crate::keyspace::selected();
    if keyspace != crate::keyspace::DEFAULT {
        return keyspace_settings(args, keyspace);
    }
    let mut changes = None;
    if args.reset && !Compression::Zstd.is_available() {
        refuse_reset_over_zstd(&args.db)?;
    }
    if args.reset {
        let mut o = Options::default();
        o.create_if_missing = false;
        // `open_with` takes its options whole and replaces the file,
        // damaged or not, with them.
        let db = retry_locked(args.wait.wait, || Db::open_with(&args.db, o.clone()))?;
        changes = Some(db.recovery().options_changes.clone());
        db.close()?;
    }
    let stored = Db::stored_options(&args.db)?;
    if args.json {
        return emit_json(&json!({
            "keyspace": keyspace,
            "stored": stored,
            "changes": changes,
        }));
    }
    let mut s = String::new();
    if let Some(changes) = &changes {
        if changes.is_empty() {
            s.push_str("reset: the stored settings were the defaults already\n");
        } else {
            s.push_str("reset to the defaults; changed:\n");
            for c in changes {
                s.push_str(&format!("  {c}\n"));
            }
        }
    }
    match stored {
        Some(settings) => {
            s.push_str("stored in OPTIONS:\n");
            for (name, value) in settings {
                s.push_str(&format!("  {name} {value}\n"));
            }
        }
        None => s.push_str(
            "no OPTIONS file (a database from before siftdb stored its settings, or never \
             opened for writing): opens use the defaults and the settings they are given\n",
        ),
    }
    emit(&s)
}

/// `kvctl options DB --keyspace NAME` for a keyspace other than the
/// default: the settings the manifest stores for it (tag 13, replaced by
/// tag 15), one `NAME VALUE` line each, as `OPTIONS` lists the database's.
///
/// # Errors
/// Exit 2 with `--reset` (it rewrites the database's `OPTIONS` only) or
/// when the database has no keyspace `name`.
fn keyspace_settings(args: &OptionsArgs, name: &str) -> Result<(), CliError> {
    if args.reset {
        return Err(CliError::usage(format!(
            "options --reset replaces the database's OPTIONS file (the default keyspace's \
             settings); keyspace {name} keeps its own in the manifest, which --reset does not \
             change: leave out --keyspace"
        )));
    }
    let snap = DbSnapshot::open(&args.db)?;
    let tree = crate::keyspace::tree(&snap)?;
    let stored = crate::keyspace::stored_settings(&snap, tree)?.unwrap_or_default();
    if args.json {
        return emit_json(&json!({
            "keyspace": name,
            "stored": stored,
            "changes": null,
        }));
    }
    let mut s = format!(
        "keyspace {name}: stored in the manifest (its opens use these, whatever OPTIONS says):\n"
    );
    for (setting, value) in stored {
        s.push_str(&format!("  {setting} {value}\n"));
    }
    emit(&s)
}
