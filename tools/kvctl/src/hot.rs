//! `kvctl hot`: the read sketch's last window, as the database saved it in
//! its `HOTKEYS` file on close (`Options::hot_keys`; DESIGN.md 3.4).

use std::io::{self, Write};
use std::path::PathBuf;

use clap::Args;
use serde_json::json;
use siftdb::inspect::escape::escape_bytes;
use siftdb::HotKeys;

use crate::error::{write_failed, CliError};
use crate::format::{group, Align, Table};

#[derive(Debug, Args)]
#[command(after_help = "Example:\n  kvctl hot ./db --json")]
pub struct HotArgs {
    /// Database directory
    pub db: PathBuf,
    /// Print JSON (schema in DESIGN.md 12.9)
    #[arg(long)]
    pub json: bool,
}

/// Characters of a key the text table shows (escaped, then cut with `…`;
/// `--json` has every key whole): one long key would otherwise widen
/// every row to its length.
const KEY_SHOWN: usize = 64;

/// The JSON document `hot --json` prints.
pub fn hot_json(h: &HotKeys) -> serde_json::Value {
    let keys: Vec<serde_json::Value> = h
        .keys
        .iter()
        .map(|k| {
            json!({
                "key": escape_bytes(&k.key),
                "total": k.total(),
                "found": k.found,
                "absent": k.absent,
            })
        })
        .collect();
    json!({
        "format_version": siftdb::inspect::sketch::hot_file::FORMAT_VERSION,
        "epsilon": h.epsilon,
        "delta": h.delta,
        "width": h.width,
        "depth": h.depth,
        "window": h.window,
        "halvings": h.halvings,
        "reads": h.reads(),
        "found_reads": h.found_reads,
        "absent_reads": h.absent_reads,
        "error_bound": h.error_bound(),
        "keys": keys,
    })
}

fn text(h: &HotKeys) -> String {
    let mut s = format!(
        "last window: {} lookups ({} found, {} absent), {} halvings (all counts halve when the lookups reach {})\n",
        group(h.reads()),
        group(h.found_reads),
        group(h.absent_reads),
        group(h.halvings),
        group(h.window),
    );
    s.push_str(&format!(
        "Count-Min {} x {} (epsilon {}, delta {}): each estimate exceeds the true count by at \
         most {:.1} with probability {}\n",
        group(u64::from(h.width)),
        h.depth,
        h.epsilon,
        h.delta,
        h.error_bound(),
        1.0 - h.delta,
    ));
    if h.keys.is_empty() {
        s.push_str("(no lookups in the window)\n");
        return s;
    }
    let mut t = Table::new(&[
        ("rank", Align::Right),
        ("key", Align::Left),
        ("lookups", Align::Right),
        ("found", Align::Right),
        ("absent", Align::Right),
    ]);
    for (i, k) in h.keys.iter().enumerate() {
        t.row(vec![
            (i + 1).to_string(),
            crate::inspect::Show { hex: false }.short(&k.key, KEY_SHOWN),
            group(k.total()),
            group(k.found),
            group(k.absent),
        ]);
    }
    s.push_str(&t.render(""));
    s
}

/// Runs `kvctl hot` (which `main` refuses with `--keyspace`: the read
/// sketch does not know keyspaces).
pub fn run(args: &HotArgs) -> Result<(), CliError> {
    if !siftdb::inspect::filename::current_path(&args.db).exists() {
        return Err(siftdb::Error::NotADatabase {
            path: args.db.clone(),
            detail: "holds no database".into(),
        }
        .into());
    }
    let Some(h) = siftdb::inspect::sketch::hot_file::read(&args.db)? else {
        return Err(CliError::usage(format!(
            "{}: no HOTKEYS file (the read sketch was off, or the database was not closed since it was turned on)",
            args.db.display()
        ))
        .with_hint("open the database with Options::hot_keys set; close writes the file"));
    };
    let out = if args.json {
        format!("{:#}\n", hot_json(&h))
    } else {
        text(&h)
    };
    io::stdout()
        .lock()
        .write_all(out.as_bytes())
        .map_err(write_failed)
}
