//! kvctl's exit codes and its one error type.
//!
//! | code | meaning |
//! |------|---------|
//! | 0 | success |
//! | 1 | `get`: the key is absent |
//! | 2 | usage or bad input (bad flag, malformed import line, invalid argument; an input or output file that is missing, a directory, of the wrong kind, or not permitted; a database using zstd in a kvctl built without it) |
//! | 3 | corruption: bytes on disk (or answers read back) are not what was written; for `export --salvage`, something could not be read (the output holds the rest) |
//! | 4 | I/O error (reading or writing a usable file, a full disk), database locked, or any other engine failure |
//! | 130 | interrupted by Ctrl-C (SIGINT); `import` and `compact` first say what was kept ([`crate::interrupt`]) |

use std::fmt;

/// Success.
pub const EXIT_OK: u8 = 0;
/// `get` found no value for the key.
pub const EXIT_NOT_FOUND: u8 = 1;
/// Bad command line or bad input data (clap also exits 2 on usage errors).
pub const EXIT_USAGE: u8 = 2;
/// The database is damaged, or returned data different from what was
/// written.
pub const EXIT_CORRUPTION: u8 = 3;
/// I/O failure, lock held by another process, or another engine error.
pub const EXIT_IO: u8 = 4;

/// How to get the data out of a damaged database, for hints.
pub const SALVAGE_ADVICE: &str = "`kvctl export --salvage DB FILE` writes out every entry that \
can still be read, and lists what cannot";

/// What to do about a damaged `OPTIONS` file, for hints: it holds
/// settings only.
pub const OPTIONS_ADVICE: &str = "the OPTIONS file holds settings only, no keys or values: \
`kvctl options DB --reset` replaces it with the defaults";

/// What to do when the database uses zstd and this kvctl lacks it, for
/// hints: the data is fine, the build is not.
pub const NO_ZSTD_ADVICE: &str = "this kvctl was built without the zstd feature, which this \
database uses; the data is not damaged: rebuild kvctl with `--features zstd` (cargo install \
--path tools/kvctl --features zstd)";

/// True if `message` is the engine's refusal of zstd in a build without
/// it (a policy or stored options naming it, or a zstd block met).
pub fn is_no_zstd(message: &str) -> bool {
    message.contains(siftdb::inspect::sstable::compression::NO_ZSTD)
}

/// True if `file` is a database's `OPTIONS` file.
pub fn is_options_file(file: &std::path::Path) -> bool {
    file.file_name() == Some("OPTIONS".as_ref())
}

/// The hint for a damaged database: what not to do, how to see the
/// damage, and [`SALVAGE_ADVICE`].
pub fn corruption_hint() -> String {
    format!(
        "the database files are damaged; keep a copy of the directory and do not write to it. \
         `kvctl verify DB` shows what is damaged; {SALVAGE_ADVICE}"
    )
}

/// An error as kvctl reports it: `kvctl: <message>`, then an optional
/// `hint: ...` line, and the process exits with `code`.
#[derive(Debug)]
pub struct CliError {
    pub code: u8,
    pub message: String,
    pub hint: Option<String>,
}

impl CliError {
    pub fn new(code: u8, message: impl Into<String>) -> CliError {
        CliError {
            code,
            message: message.into(),
            hint: None,
        }
    }

    /// Bad input or arguments (exit 2).
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError::new(EXIT_USAGE, message)
    }

    /// Replaces the hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> CliError {
        self.hint = Some(hint.into());
        self
    }

    /// Prefixes the message with where it happened, e.g. `data.tsv:12`.
    pub fn context(mut self, what: impl fmt::Display) -> CliError {
        self.message = format!("{what}: {}", self.message);
        self
    }

    /// An I/O error on a file kvctl itself reads or writes (not the
    /// database), by the rule the help states: a path that cannot be used
    /// as given (missing, a directory where a file is needed or a file
    /// where a directory is, no permission) or undecodable input
    /// (`InvalidData`, e.g. a bad gzip stream, or `UnexpectedEof`, a
    /// truncated one) is bad input (2); a failure reading or writing a
    /// usable file (a full disk, `EIO`) is I/O (4).
    pub fn from_io(what: impl fmt::Display, e: &std::io::Error) -> CliError {
        use std::io::ErrorKind as K;
        let code = match e.kind() {
            K::InvalidData
            | K::InvalidInput
            | K::UnexpectedEof
            | K::NotFound
            | K::PermissionDenied
            | K::IsADirectory
            | K::NotADirectory => EXIT_USAGE,
            _ => EXIT_IO,
        };
        CliError::new(code, format!("{what}: {e}"))
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kvctl: {}", self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\nhint: {h}")?;
        }
        Ok(())
    }
}

impl From<siftdb::Error> for CliError {
    fn from(e: siftdb::Error) -> CliError {
        use siftdb::Error as E;
        let (code, hint) = match &e {
            E::Corruption { file, .. } if is_options_file(file) => {
                (EXIT_CORRUPTION, Some(OPTIONS_ADVICE.to_string()))
            }
            E::Corruption { .. } => (EXIT_CORRUPTION, Some(corruption_hint())),
            E::Locked(_) => (
                EXIT_IO,
                Some("another process has the database open; close it and retry".to_string()),
            ),
            E::Io { source, .. } => database_io(source.kind()),
            // Not damage: this build lacks the codec the database uses.
            E::InvalidArgument(m) if is_no_zstd(m) => {
                (EXIT_USAGE, Some(NO_ZSTD_ADVICE.to_string()))
            }
            E::InvalidArgument(_) => (EXIT_USAGE, None),
            E::NotADatabase { .. } => (
                EXIT_USAGE,
                Some("check the path; `import` and `put` create a database only in a missing or empty directory".to_string()),
            ),
            E::AlreadyExists(_) => (EXIT_USAGE, None),
            E::TargetExists(_) => (
                EXIT_USAGE,
                Some("name a directory that does not exist yet".to_string()),
            ),
            E::UnsupportedVersion { .. } => (
                EXIT_IO,
                Some("the database was written by a newer siftdb; use a matching kvctl".to_string()),
            ),
            E::Background(m) if is_no_zstd(m) => (EXIT_IO, Some(NO_ZSTD_ADVICE.to_string())),
            E::Background(_) => (EXIT_IO, None),
            _ => (EXIT_IO, None),
        };
        CliError {
            code,
            message: e.to_string(),
            hint,
        }
    }
}

/// Exit code and hint for an I/O error on the database directory or a
/// file in it. By the help's rule a path that cannot be used as given is
/// bad input (2), with what to check: no permission, or a read-only file
/// system (new-user trials got exit 4 and no hint for both). A full disk
/// stays a failure (4), but says what is needed.
fn database_io(kind: std::io::ErrorKind) -> (u8, Option<String>) {
    use std::io::ErrorKind as K;
    let (code, hint) = match kind {
        K::PermissionDenied => (
            EXIT_USAGE,
            "check the database directory's permissions: kvctl needs to read it and its files, \
             and to write them to change anything",
        ),
        K::ReadOnlyFilesystem => (
            EXIT_USAGE,
            "the database is on a read-only file system: the reading commands (get, scan, \
             export, info, stats, verify) work there, the writing ones do not",
        ),
        K::StorageFull => (
            EXIT_IO,
            "the disk is full: free some space (opening a database for writing preallocates \
             1 MiB of write-ahead log; a compaction writes its output before it deletes its \
             inputs)",
        ),
        _ => return (EXIT_IO, None),
    };
    (code, Some(hint.to_string()))
}

/// Output for stdout: a closed pipe (`kvctl scan db | head`) ends the
/// command quietly instead of failing.
pub fn write_failed(e: std::io::Error) -> CliError {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        CliError::new(EXIT_OK, String::new())
    } else {
        CliError::new(EXIT_IO, format!("writing output: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Error, ErrorKind as K};

    use super::*;

    /// Found by a new-user trial: a database directory without write
    /// permission gave exit 4 and no hint; by the help's rule it is bad
    /// input (2), and the hint says what to check. Other I/O stays 4.
    #[test]
    fn a_permission_error_in_the_database_is_bad_input_with_a_hint() {
        let denied = CliError::from(siftdb::Error::io(
            "open db/LOCK",
            Error::from(K::PermissionDenied),
        ));
        assert_eq!(denied.code, EXIT_USAGE);
        assert!(denied.hint.unwrap().contains("permissions"));
        let eio = CliError::from(siftdb::Error::io("sync db/000007.log", Error::other("EIO")));
        assert_eq!(eio.code, EXIT_IO);
        assert!(eio.hint.is_none());
    }

    /// Found by a new-user trial: a read-only file system and a full disk
    /// gave exit 4 with no hint.
    #[test]
    fn a_read_only_file_system_is_bad_input_and_a_full_disk_says_so() {
        let rofs = CliError::from(siftdb::Error::io(
            "open db/LOCK",
            Error::from(K::ReadOnlyFilesystem),
        ));
        assert_eq!(rofs.code, EXIT_USAGE);
        assert!(rofs.hint.unwrap().contains("read-only file system"));
        let full = CliError::from(siftdb::Error::io(
            "reopen log db/000006.log at 0",
            Error::from(K::StorageFull),
        ));
        assert_eq!(full.code, EXIT_IO);
        assert!(full.hint.unwrap().starts_with("the disk is full"));
    }

    /// The rule in the help: a path that cannot be used as given is bad
    /// input, a failing read or write is I/O.
    #[test]
    fn io_errors_map_to_bad_input_or_io() {
        for kind in [
            K::NotFound,
            K::PermissionDenied,
            K::IsADirectory,
            K::NotADirectory,
            K::InvalidData,
            K::UnexpectedEof,
        ] {
            let e = CliError::from_io("open x.tsv", &Error::from(kind));
            assert_eq!(e.code, EXIT_USAGE, "{kind:?}");
        }
        for kind in [K::StorageFull, K::Other, K::Interrupted] {
            assert_eq!(
                CliError::from_io("write x", &Error::from(kind)).code,
                EXIT_IO,
                "{kind:?}"
            );
        }
        let e = CliError::from_io("open x.tsv", &Error::from(K::PermissionDenied));
        assert_eq!(e.to_string(), "kvctl: open x.tsv: permission denied");
    }
}
