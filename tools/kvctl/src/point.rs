//! One key at a time: `kvctl get`, `put` and `delete`; and one range at a
//! time: `kvctl delete-range`.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use clap::Args;
use serde_json::{json, Value};
use siftdb::inspect::escape::escape_bytes;

use crate::data::{open_existing_waiting, open_input_file, open_or_create_waiting, open_read_only};
use crate::error::{write_failed, CliError, EXIT_NOT_FOUND};
use crate::format::{escaped_arg, Bytes};
use crate::scan::KeyBoundsArgs;
use crate::wait::WaitArg;

#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  kvctl get ./db 'user:42'\n  kvctl get ./db 'user:42' --json\n\n\
Exits 1 when the key is absent, printing nothing to stdout (`key not found` goes to stderr); \
with --json it prints {\"found\": false, \"key\": ..., \"value\": null} and exits 1 too \
(DESIGN.md 12.9)."
)]
pub struct GetArgs {
    /// Database directory
    pub db: PathBuf,
    /// Key (escapes such as \x00 and \t are decoded)
    #[arg(value_parser = escaped_arg)]
    pub key: Bytes,
    /// Print the value's bytes exactly, with no escaping and no newline
    #[arg(long, conflicts_with = "json")]
    pub raw: bool,
    /// Print JSON: {"found", "key", "value"}, key and value escaped
    #[arg(long)]
    pub json: bool,
}

/// `get --json`'s document (DESIGN.md 12.9).
fn get_json(key: &[u8], value: Option<&[u8]>) -> Value {
    json!({
        "found": value.is_some(),
        "key": escape_bytes(key),
        "value": value.map(escape_bytes),
    })
}

pub fn get(args: &GetArgs) -> Result<(), CliError> {
    let db = open_read_only(&args.db)?;
    let value = crate::keyspace::existing(&db)?.get(&args.key)?;
    db.close()?;
    let value: Option<&[u8]> = value.as_deref();
    let mut out = io::stdout().lock();
    if args.json {
        writeln!(out, "{:#}", get_json(&args.key, value))
            .and_then(|_| out.flush())
            .map_err(write_failed)?;
    }
    let Some(value) = value else {
        return Err(CliError::new(
            EXIT_NOT_FOUND,
            format!("key not found: {}", escape_bytes(&args.key)),
        ));
    };
    if args.json {
        return Ok(());
    }
    if args.raw {
        out.write_all(value)
    } else {
        writeln!(out, "{}", escape_bytes(value))
    }
    .and_then(|_| out.flush())
    .map_err(write_failed)
}

/// A `put` VALUE argument: `-` for standard input, anything else escaped
/// bytes (a value that is one `-` is written `\x2d`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueArg {
    Stdin,
    Bytes(Vec<u8>),
}

/// Parses a [`ValueArg`] (clap `value_parser`).
fn value_arg(s: &str) -> Result<ValueArg, String> {
    if s == "-" {
        Ok(ValueArg::Stdin)
    } else {
        escaped_arg(s).map(ValueArg::Bytes)
    }
}

#[derive(Debug, Args)]
#[command(
    override_usage = "kvctl put [OPTIONS] <DB> <KEY> <VALUE | --value-file F>",
    after_help = "Example:\n  kvctl put ./db 'user:42' '{\"name\":\"Ada\"}'\n  \
kvctl put ./db photo:1 --value-file photo.jpg\n  \
cat page.json | kvctl put ./db page:1 -\n  \
kvctl put --wait=10 ./db counter 7\n\n\
A VALUE of `-` reads the value from standard input, every byte as it is (for a value that is \
one `-`, write `\\x2d`); --value-file reads it from a file. Either way there is no escaping and \
no size limit short of the engine's (4 GiB - 128 KiB)."
)]
pub struct PutArgs {
    /// Database directory (created if missing)
    pub db: PathBuf,
    /// Key (escapes such as \x00 and \t are decoded)
    #[arg(value_parser = escaped_arg)]
    pub key: Bytes,
    /// Value (escapes are decoded); `-` reads it from standard input
    #[arg(
        value_parser = value_arg,
        required_unless_present = "value_file",
        conflicts_with = "value_file"
    )]
    pub value: Option<ValueArg>,
    /// Read the value from file F, byte for byte
    #[arg(long, value_name = "F")]
    pub value_file: Option<PathBuf>,
    #[command(flatten)]
    pub wait: WaitArg,
}

/// The value `put` writes, from its argument, standard input or a file.
fn put_value(args: &PutArgs) -> Result<Vec<u8>, CliError> {
    if let Some(path) = &args.value_file {
        let mut v = Vec::new();
        open_input_file(path)?
            .read_to_end(&mut v)
            .map_err(|e| CliError::from_io(format!("reading {}", path.display()), &e))?;
        return Ok(v);
    }
    match &args.value {
        Some(ValueArg::Bytes(v)) => Ok(v.clone()),
        Some(ValueArg::Stdin) => {
            let mut v = Vec::new();
            io::stdin()
                .lock()
                .read_to_end(&mut v)
                .map_err(|e| CliError::from_io("reading standard input", &e))?;
            Ok(v)
        }
        // clap requires VALUE or --value-file.
        None => Err(CliError::usage("give a VALUE, `-` or --value-file F")),
    }
}

pub fn put(args: &PutArgs) -> Result<(), CliError> {
    // The value is read before the database is opened (and locked).
    let value = put_value(args)?;
    let db = open_or_create_waiting(siftdb::Db::builder(&args.db), args.wait.wait)?;
    crate::keyspace::creating(&db)?.put(&args.key, &value)?;
    Ok(db.close()?)
}

#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  kvctl delete ./db 'user:42'\n\nDeleting an absent key succeeds."
)]
pub struct DeleteArgs {
    /// Database directory
    pub db: PathBuf,
    /// Key (escapes such as \x00 and \t are decoded)
    #[arg(value_parser = escaped_arg)]
    pub key: Bytes,
    #[command(flatten)]
    pub wait: WaitArg,
}

pub fn delete(args: &DeleteArgs) -> Result<(), CliError> {
    let db = open_existing_waiting(&args.db, siftdb::Db::builder(&args.db), args.wait.wait)?;
    crate::keyspace::existing(&db)?.delete(&args.key)?;
    Ok(db.close()?)
}

#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  kvctl delete-range ./db --prefix 'session:'\n  \
kvctl delete-range ./db --from 2024-01 --to 2024-07\n  kvctl delete-range ./db --all\n\n\
Writes one range tombstone, whatever the range holds: the keys disappear at once, and \
compactions reclaim their space later (`kvctl compact` does it now). --from is inclusive and \
--to exclusive, as in scan; --prefix narrows both. Deleting every key needs --all."
)]
pub struct DeleteRangeArgs {
    /// Database directory
    pub db: PathBuf,
    #[command(flatten)]
    pub bounds: KeyBoundsArgs,
    /// Delete every key (required when no --prefix, --from or --to is given)
    #[arg(long, conflicts_with_all = ["prefix", "from", "to"])]
    pub all: bool,
    #[command(flatten)]
    pub wait: WaitArg,
}

pub fn delete_range(args: &DeleteRangeArgs) -> Result<(), CliError> {
    let b = &args.bounds;
    let bounded =
        b.prefix.as_ref().is_some_and(|p| !p.is_empty()) || b.from.is_some() || b.to.is_some();
    if !args.all && !bounded {
        return Err(CliError::usage(
            "delete-range needs --prefix (not empty), --from or --to (or --all to delete every key)",
        ));
    }
    let range = b.checked_range("delete-range", false, true)?;
    let db = open_existing_waiting(&args.db, siftdb::Db::builder(&args.db), args.wait.wait)?;
    let ks = crate::keyspace::existing(&db)?;
    if let Some(range) = range {
        ks.delete_range(range)?;
    }
    Ok(db.close()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dash_is_stdin_and_an_escaped_dash_a_value() {
        assert_eq!(value_arg("-"), Ok(ValueArg::Stdin));
        assert_eq!(value_arg("\\x2d"), Ok(ValueArg::Bytes(b"-".to_vec())));
        assert_eq!(value_arg("a\\tb"), Ok(ValueArg::Bytes(b"a\tb".to_vec())));
        assert!(value_arg("a\\q").is_err());
    }

    #[test]
    fn get_json_escapes_and_says_absent() {
        assert_eq!(
            get_json(b"k\xff", Some(b"v\t")),
            json!({"found": true, "key": "k\\xff", "value": "v\\x09"})
        );
        assert_eq!(
            get_json(b"k", None),
            json!({"found": false, "key": "k", "value": null})
        );
    }
}
