//! The one error type of siftdb.
//!
//! Callers branch on the variant: [`Error::Corruption`] means bytes on disk
//! are not what siftdb wrote (never retry, run `kvctl verify`), [`Error::Io`]
//! means the operating system refused an operation (maybe retry), and
//! [`Error::InvalidArgument`] means the call itself was wrong and nothing was
//! written.

use std::path::PathBuf;

/// Every fallible siftdb call returns this.
///
/// # Example
/// ```
/// use siftdb::{Db, Error};
///
/// let dir = tempfile::tempdir()?;
/// let db = Db::open(dir.path())?;
/// // A second handle on the same directory is refused.
/// assert!(matches!(Db::open(dir.path()), Err(Error::Locked(_))));
/// // Keys are at most 65,535 bytes; nothing is written.
/// match db.put(vec![0u8; 70_000], "v") {
///     Err(Error::InvalidArgument(why)) => assert!(why.contains("key")),
///     other => panic!("{other:?}"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operating system failed a file operation. `context` names the
    /// operation and the file.
    #[error("I/O error: {context}: {source}")]
    Io {
        /// What siftdb was doing, e.g. `"sync 000012.log"`.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// Bytes in `file` at byte `offset` do not decode as the format says
    /// (bad checksum, impossible length, bad magic, keys out of order, ...).
    #[error("corruption in {} at offset {offset}: {detail}", file.display())]
    Corruption {
        /// The file holding the bad bytes.
        file: PathBuf,
        /// Byte offset in `file` of the block or record that failed.
        offset: u64,
        /// What was wrong.
        detail: String,
    },

    /// The call's arguments are invalid (over-long key or value, bad
    /// option). Nothing was written.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// Another `Db` (in this or another process) holds the database's
    /// `LOCK` file.
    #[error("database {} is locked by another process or handle", .0.display())]
    Locked(PathBuf),

    /// The path exists but is not a siftdb database (and `create_if_missing`
    /// could not or should not make it one), or the database does not exist
    /// and `create_if_missing` is false.
    #[error("{}: {detail}", path.display())]
    NotADatabase {
        /// The path given to `Db::open`.
        path: PathBuf,
        /// Why it was refused.
        detail: String,
    },

    /// A database already exists at the path and
    /// [`crate::Options::error_if_exists`] is set. Nothing was changed.
    #[error("{}: a database already exists (error_if_exists is set)", .0.display())]
    AlreadyExists(PathBuf),

    /// The target of [`crate::Db::checkpoint`] already exists (a file, or
    /// a directory, even an empty one): a checkpoint is made in a new
    /// directory, never over or into an existing one. Nothing was changed.
    #[error("{}: already exists; a checkpoint is made in a new directory", .0.display())]
    TargetExists(PathBuf),

    /// The database was written by a newer, incompatible siftdb format.
    #[error("{}: format version {found} is not supported (this build reads up to {supported})", file.display())]
    UnsupportedVersion {
        /// The file carrying the version.
        file: PathBuf,
        /// The version found on disk.
        found: u32,
        /// The newest version this build understands.
        supported: u32,
    },

    /// The database was opened with [`crate::Db::open_read_only`]: writes,
    /// flushes and compactions are refused.
    #[error("database is open read-only")]
    ReadOnly,

    /// A background flush or compaction failed earlier; the database is now
    /// read-only until reopened. The string is the original error.
    #[error("database is read-only after a background error: {0}")]
    Background(String),

    /// No keyspace has this name ([`crate::Db::existing_keyspace`],
    /// [`crate::Db::drop_keyspace`]), or the keyspace was dropped (a read,
    /// write, flush or compaction through a handle of it, or a batch
    /// naming it). The string is the name.
    #[error("no keyspace named \"{0}\"")]
    NoSuchKeyspace(String),
}

/// `std::result::Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps an I/O error with a description of the failed operation.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// Builds a [`Error::Corruption`].
    pub fn corruption(file: impl Into<PathBuf>, offset: u64, detail: impl Into<String>) -> Error {
        Error::Corruption {
            file: file.into(),
            offset,
            detail: detail.into(),
        }
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }
}

/// Adds a context string to `std::io::Result`s.
pub(crate) trait IoContext<T> {
    /// Maps an `io::Error` to [`Error::Io`] with the given context.
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::io(what(), e))
    }
}
