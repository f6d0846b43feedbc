//! [`DbBuilder`]: opening a database with options set by name, the one
//! way that compiles outside the crate whatever fields `Options` gains.

use std::path::PathBuf;
use std::sync::Arc;

use crate::filter::{FilterBudget, LevelFilter, PrefixExtractor};
use crate::fs::FileSystem;
use crate::options::{CompactionPriority, CompactionStyle, Options, TableReads};
use crate::{Db, Result};

/// Options set one by one, then [`open`](DbBuilder::open): made by
/// [`Db::builder`]. Each setter sets the [`Options`] field of its name
/// (see there for units and defaults); unset fields keep their defaults.
/// Values are checked when the database opens.
///
/// # Example
/// ```
/// let dir = tempfile::tempdir()?;
/// let db = siftdb::Db::builder(dir.path())
///     .bits_per_key(12)
///     .write_buffer_size(8 << 20)
///     .sync(true)
///     .open()?;
/// db.put("k", "v")?;
/// assert_eq!(db.options().bits_per_key, 12);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `open`"]
pub struct DbBuilder {
    path: PathBuf,
    options: Options,
}

/// Setters that store their argument in the field of their name.
macro_rules! setters {
    ($($name:ident: $ty:ty),* $(,)?) => {
        $(
            #[doc = concat!("Sets [`Options::", stringify!($name), "`].")]
            pub fn $name(mut self, value: $ty) -> Self {
                self.options.$name = value;
                self
            }
        )*
    };
}

/// Setters of `Option` fields that take the inner value (`Some`).
macro_rules! some_setters {
    ($($name:ident: $ty:ty),* $(,)?) => {
        $(
            #[doc = concat!("Sets [`Options::", stringify!($name), "`] to `Some(value)`.")]
            pub fn $name(mut self, value: $ty) -> Self {
                self.options.$name = Some(value);
                self
            }
        )*
    };
}

impl DbBuilder {
    pub(crate) fn new(path: PathBuf) -> DbBuilder {
        DbBuilder {
            path,
            options: Options::default(),
        }
    }

    setters! {
        write_buffer_size: usize,
        bits_per_key: u32,
        filters: Vec<LevelFilter>,
        skip_filters_on_last_level: bool,
        block_size: usize,
        block_restart_interval: usize,
        table_reads: TableReads,
        key_sketch_precision: Option<u8>,
        sync: bool,
        create_if_missing: bool,
        error_if_exists: bool,
        max_immutable_memtables: usize,
        compaction_style: CompactionStyle,
        compaction_priority: CompactionPriority,
        level0_compaction_trigger: usize,
        level0_slowdown_trigger: usize,
        level0_stop_trigger: usize,
        max_bytes_for_level_base: u64,
        level_size_multiplier: u32,
        target_file_size: u64,
        max_manifest_file_size: u64,
        file_system: Arc<dyn FileSystem>,
    }

    some_setters! {
        bloom_hashes: u32,
        filter_budget: FilterBudget,
        prefix_extractor: Arc<dyn PrefixExtractor>,
    }

    /// The options set so far.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Opens (or creates) the database: [`Db::open_with`] with these
    /// options.
    ///
    /// # Errors
    /// As [`Db::open_with`] ([`crate::Error::InvalidArgument`] for a value
    /// an option cannot take).
    pub fn open(self) -> Result<Db> {
        Db::open_with(self.path, self.options)
    }

    /// Opens the database read-only: [`Db::open_read_only`] with these
    /// options.
    ///
    /// # Errors
    /// As [`Db::open_read_only`].
    pub fn open_read_only(self) -> Result<Db> {
        Db::open_read_only(self.path, self.options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters_set_their_fields_and_open_checks_them() {
        let dir = tempfile::tempdir().unwrap();
        let b = Db::builder(dir.path())
            .bits_per_key(12)
            .bloom_hashes(5)
            .target_file_size(2 << 20)
            .compaction_priority(CompactionPriority::MostDuplicates)
            .key_sketch_precision(None);
        let o = b.options();
        assert_eq!(o.bits_per_key, 12);
        assert_eq!(o.bloom_hashes, Some(5));
        assert_eq!(o.target_file_size, 2 << 20);
        assert_eq!(o.compaction_priority, CompactionPriority::MostDuplicates);
        assert_eq!(o.key_sketch_precision, None);
        // Untouched fields keep their defaults.
        assert_eq!(o.block_size, Options::default().block_size);
        let db = b.open().unwrap();
        assert_eq!(db.options().bits_per_key, 12);
        db.close().unwrap();
        let err = Db::builder(dir.path()).block_size(1).open().unwrap_err();
        assert!(matches!(err, crate::Error::InvalidArgument(_)), "{err:?}");
        let ro = Db::builder(dir.path()).open_read_only().unwrap();
        assert!(ro.put("k", "v").is_err());
    }
}
