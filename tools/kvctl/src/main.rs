//! kvctl: the command-line tool of siftdb.
//!
//! Each subcommand lives in a module next to its clap arguments
//! (`data`: import, `export`, `point`: get/put/delete, `scan`, `stats`,
//! `distinct`, `compact`, `checkpoint`, `bench`, `demo`, `hot`, `keyspace`,
//! `options`, and
//! `inspect/`: info, sst, verify, manifest, wal, explain, filters); this
//! file only parses the command line, dispatches, and turns errors into the
//! exit codes listed in [`error`].

mod bench;
mod checkpoint;
mod compact;
mod data;
mod demo;
mod distinct;
mod error;
mod export;
mod filter_spec;
mod format;
mod hot;
mod inspect;
mod interrupt;
mod keyspace;
mod options;
mod point;
mod scan;
mod stats;
mod wait;

use std::io::Write;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::error::CliError;

#[derive(Debug, Parser)]
#[command(
    name = "kvctl",
    version,
    about = "Import, read, write and inspect siftdb databases",
    after_help = "Keys and values are printed escaped (\\\\, \\xNN for non-printable bytes) and \
accepted in the same form.\n\
Exit codes: 0 ok, 1 key not found, 2 usage or bad input, 3 corruption, 4 I/O or lock error, \
130 interrupted by Ctrl-C (import and compact say what was kept).\n\
A file you name that cannot be used as given (missing, a directory, no permission, or a file of \
another kind, such as a WAL given to `sst dump`) is bad input (2); a read or write that fails on \
a usable file (a full disk, a device error) is I/O (4).\n\n\
Examples:\n  kvctl demo\n  kvctl import ./db data.tsv\n  kvctl get ./db mykey\n  \
kvctl scan ./db --prefix user: --limit 10"
)]
struct Cli {
    /// The keyspace (column family) to read or write (default: `default`):
    /// `import` and `put` create it if missing, other commands need it
    /// (`kvctl keyspace list DB`); `options` shows its stored settings;
    /// commands that cover the whole database refuse it
    #[arg(long, global = true, value_name = "NAME")]
    keyspace: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Load KEY<TAB>VALUE lines (raw, or escaped after export's header line; optionally gzipped) into a database
    Import(data::ImportArgs),
    /// Write every pair as a header line and escaped KEY<TAB>VALUE lines (import reads them back exactly); --salvage: from a damaged database
    Export(export::ExportArgs),
    /// Print the value of a key (exit 1 if absent)
    Get(point::GetArgs),
    /// Set a key to a value (from the command line, standard input or a file)
    Put(point::PutArgs),
    /// Delete a key
    Delete(point::DeleteArgs),
    /// Delete every key of a range (--prefix, --from, --to, or --all) with one range tombstone
    DeleteRange(point::DeleteRangeArgs),
    /// Print KEY<TAB>VALUE lines in key order (or keys, a count, JSON)
    Scan(scan::ScanArgs),
    /// Show SSTables per level: files, bytes, entries, tombstones, filter bits
    Stats(stats::StatsArgs),
    /// Estimated distinct keys per table, per level and in all, and the keys levels share (from the tables' HyperLogLogs)
    Distinct(distinct::DistinctArgs),
    /// Compact the whole database (or a key range) down to its deepest level
    Compact(compact::CompactArgs),
    /// Make a consistent copy of a database in a new directory (SSTables hard-linked), one that opens as an ordinary database
    Checkpoint(checkpoint::CheckpointArgs),
    /// Run benchmarks: `bench readamp` (reads per lookup against the model), `bench filters` (each filter kind's rate, space and speed), `bench monkey` (one filter budget over the levels against uniform bits)
    Bench(bench::BenchArgs),
    /// Build a database from built-in real data and measure what Bloom filters save
    Demo(demo::DemoArgs),
    /// Format version, last sequence, manifest, WALs, options the files reveal, levels
    Info(inspect::info::InfoArgs),
    /// List the live SSTables, or decode one .sst file
    Sst(inspect::sst::SstArgs),
    /// Check every checksum and invariant of a database or one file (exit 3 on damage)
    Verify(inspect::verify::VerifyArgs),
    /// Decode the manifest's version edits
    Manifest(inspect::logs::ManifestArgs),
    /// Decode write-ahead log records
    Wal(inspect::logs::WalArgs),
    /// Show the path of one point lookup: memtables, SSTables, filters, blocks
    Explain(inspect::explain::ExplainArgs),
    /// Per-SSTable filter health (implied vs design false-positive rate), then per level: filter memory, bits per key in force and optimal, expected false positives
    Filters(inspect::filters::FiltersArgs),
    /// The heaviest keys of the read sketch's last window (saved on close with Options::hot_keys): lookups found and absent, with the error bound
    Hot(hot::HotArgs),
    /// The keyspaces (column families): `keyspace list` (ids, names, tables, bytes, log numbers), `create`, `drop`
    Keyspace(keyspace::KeyspaceArgs),
    /// Show the settings stored in the OPTIONS file; --reset replaces it with the defaults (the way out when it is damaged: it holds no data)
    Options(options::OptionsArgs),
    /// Print a shell completion script: bash, zsh, fish, elvish or powershell
    Completions(CompletionsArgs),
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  \
kvctl completions bash > ~/.local/share/bash-completion/completions/kvctl\n  \
kvctl completions zsh > ~/.zfunc/_kvctl   # with fpath+=~/.zfunc before compinit\n  \
kvctl completions fish > ~/.config/fish/completions/kvctl.fish")]
struct CompletionsArgs {
    /// The shell to complete for
    shell: clap_complete::Shell,
}

/// Writes the completion script for `shell` to stdout.
fn completions(a: &CompletionsArgs) -> Result<(), CliError> {
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut Cli::command(), "kvctl", &mut script);
    inspect::emit(&String::from_utf8_lossy(&script))
}

/// Why `--keyspace` cannot apply to `command` (`None` where it picks the
/// keyspace the command reads or writes): the command covers the whole
/// database, one file whatever its keyspace, or no database at all. Such
/// a command refuses the flag (exit 2) rather than ignore it.
fn whole_database(command: &Command) -> Option<&'static str> {
    use inspect::sst::SstCommand;
    Some(match command {
        Command::Verify(_) => "verify checks the whole database (every keyspace) or one file",
        Command::Manifest(_) => "manifest dump shows the whole manifest (every keyspace)",
        Command::Wal(_) => {
            "wal dump shows whole WAL records, each op naming its keyspace (every keyspace)"
        }
        Command::Checkpoint(_) => "checkpoint copies the whole database (every keyspace)",
        Command::Keyspace(_) => "keyspace list, create and drop cover the whole database",
        Command::Sst(a) if matches!(a.command, SstCommand::Dump(_)) => {
            "sst dump decodes one file, whatever its keyspace (its siftdb.keyspace property)"
        }
        Command::Hot(_) => {
            "hot: the read sketch counts the lookups of every keyspace together, without \
             their keyspace"
        }
        Command::Bench(_) => "bench builds and reads databases of its own",
        Command::Demo(_) => "demo builds databases of its own",
        Command::Completions(_) => "completions reads no database",
        _ => return None,
    })
}

fn run(cli: Cli) -> Result<(), CliError> {
    if let (Some(name), Some(why)) = (&cli.keyspace, whole_database(&cli.command)) {
        return Err(CliError::usage(format!(
            "{why}: --keyspace {name} does not apply; leave it out"
        )));
    }
    keyspace::select(cli.keyspace.as_deref());
    match &cli.command {
        Command::Import(a) => data::import(a),
        Command::Export(a) => export::export(a),
        Command::Get(a) => point::get(a),
        Command::Put(a) => point::put(a),
        Command::Delete(a) => point::delete(a),
        Command::DeleteRange(a) => point::delete_range(a),
        Command::Scan(a) => scan::scan(a),
        Command::Stats(a) => stats::run(a),
        Command::Distinct(a) => distinct::run(a),
        Command::Compact(a) => compact::run(a),
        Command::Checkpoint(a) => checkpoint::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Demo(a) => demo::run(a),
        Command::Info(a) => inspect::info::run(a),
        Command::Sst(a) => inspect::sst::run(a),
        Command::Verify(a) => inspect::verify::run(a),
        Command::Manifest(a) => inspect::logs::manifest(a),
        Command::Wal(a) => inspect::logs::wal(a),
        Command::Explain(a) => inspect::explain::run(a),
        Command::Filters(a) => inspect::filters::run(a),
        Command::Completions(a) => completions(a),
        Command::Hot(a) => hot::run(a),
        Command::Keyspace(a) => keyspace::run(a),
        Command::Options(a) => options::run(a),
    }
}

fn main() -> ExitCode {
    // Usage errors exit 2 (clap's default, matching EXIT_USAGE).
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if !e.message.is_empty() {
                // `eprintln!` panics if stderr is closed; the exit code
                // still tells what happened.
                let _ = writeln!(std::io::stderr(), "{e}");
            }
            ExitCode::from(e.code)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn completion_scripts_name_the_subcommands() {
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
        ] {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut super::Cli::command(), "kvctl", &mut script);
            let script = String::from_utf8(script).unwrap();
            for word in [
                "import",
                "export",
                "scan",
                "keys-only",
                "value-file",
                "wait",
            ] {
                assert!(script.contains(word), "{shell:?} lacks {word}");
            }
        }
    }

    /// `delete-range` and `scan` share their `--prefix`, `--from` and
    /// `--to` (`scan::KeyBoundsArgs`); scan's help adds what --reverse
    /// does to them.
    #[test]
    fn key_bounds_keep_each_commands_help() {
        let cli = super::Cli::command();
        let help = |cmd: &str, arg: &str| {
            let c = cli.find_subcommand(cmd).unwrap();
            let a = c.get_arguments().find(|a| a.get_id() == arg).unwrap();
            (
                a.get_long().map(String::from),
                a.get_value_names().map(|v| v[0].to_string()),
                a.get_help().map(|h| h.to_string()),
            )
        };
        let want = |long: &str, value: &str, text: &str| {
            (
                Some(long.to_string()),
                Some(value.to_string()),
                Some(text.to_string()),
            )
        };
        assert_eq!(
            help("scan", "prefix"),
            want("prefix", "P", "Only keys starting with P")
        );
        assert_eq!(
            help("scan", "from"),
            want(
                "from",
                "K",
                "Start at key K, inclusive (with --reverse: keys <= K)"
            )
        );
        assert_eq!(
            help("scan", "to"),
            want(
                "to",
                "K",
                "Stop before key K, exclusive (with --reverse: keys > K)"
            )
        );
        assert_eq!(
            help("delete-range", "prefix"),
            want("prefix", "P", "Only keys starting with P")
        );
        assert_eq!(
            help("delete-range", "from"),
            want("from", "K", "First key of the range, inclusive")
        );
        assert_eq!(
            help("delete-range", "to"),
            want("to", "K", "First key past the range, exclusive")
        );
    }

    #[test]
    fn cli_definition_is_valid() {
        super::Cli::command().debug_assert();
    }
}
