//! [`DbBuilder`]: opening a database with options set by name, the one
//! way that compiles outside the crate whatever fields `Options` gains.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::fs::FileSystem;
use crate::options::{HotKeyOptions, Options, TableReads};
use crate::{Db, Result};

/// Options set one by one, then [`open`](DbBuilder::open): made by
/// [`Db::builder`]. Each setter sets the [`Options`] field of its name
/// (see there for units and defaults). A field left unset takes the value
/// the database stored when it was last opened for writing (its `OPTIONS`
/// file, DESIGN.md 12.13), else the default: so a reopen keeps the layout
/// a database was built with, and only what is set here changes it.
/// [`Db::recovery`]'s `options_changes` lists what did. Values are
/// checked when the database opens.
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
    /// The fields a setter set, by name.
    set: Vec<&'static str>,
}

/// The setters, one per field (`plain`: the field's type; `some`: an
/// `Option` field set to `Some(value)`, with a second setter that sets it
/// to `None`), and [`DbBuilder::copy_field`],
/// which copies a set field by the name its setter recorded: one list, so
/// the two cannot drift apart.
macro_rules! option_setters {
    (plain { $($name:ident: $ty:ty),* $(,)? } some { $($sname:ident / $none:ident: $sty:ty),* $(,)? }) => {
        $(
            #[doc = concat!("Sets [`Options::", stringify!($name), "`].")]
            pub fn $name(mut self, value: $ty) -> Self {
                self.options.$name = value;
                self.set.push(stringify!($name));
                self
            }
        )*
        $(
            #[doc = concat!("Sets [`Options::", stringify!($sname), "`] to `Some(value)`.")]
            pub fn $sname(mut self, value: $sty) -> Self {
                self.options.$sname = Some(value);
                self.set.push(stringify!($sname));
                self
            }

            #[doc = concat!("Sets [`Options::", stringify!($sname), "`] to `None`, whatever the database stored.")]
            pub fn $none(mut self) -> Self {
                self.options.$sname = None;
                self.set.push(stringify!($sname));
                self
            }
        )*

        /// Copies field `name` (a name a setter recorded) of `from` into `to`.
        fn copy_field(name: &str, from: &Options, to: &mut Options) {
            match name {
                $(stringify!($name) => to.$name = from.$name.clone(),)*
                $(stringify!($sname) => to.$sname = from.$sname.clone(),)*
                _ => {}
            }
        }
    };
}

impl DbBuilder {
    pub(crate) fn new(path: PathBuf) -> DbBuilder {
        DbBuilder {
            path,
            options: Options::default(),
            set: Vec::new(),
        }
    }

    /// The options to open with: the stored ones (or the defaults), with
    /// the fields set here on top.
    fn resolved(&self) -> Result<Options> {
        let mut o = super::stored_options::with_stored(&self.path, Options::default(), &self.set)?;
        for name in &self.set {
            Self::copy_field(name, &self.options, &mut o);
        }
        Ok(o)
    }

    crate::keyspace_options::keyspace_fields! {
        option_setters
        plain {
            table_reads: TableReads,
            sync: bool,
            adaptive_write_yield: bool,
            create_if_missing: bool,
            error_if_exists: bool,
            max_manifest_file_size: u64,
            max_total_wal_size: u64,
            file_system: Arc<dyn FileSystem>,
            hot_keys: Option<HotKeyOptions>,
        }
        some {}
    }

    /// The database directory this builder opens.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The options set so far over the defaults (the stored options are
    /// read only at `open`).
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Opens (or creates) the database: [`Db::open_with`] with the stored
    /// options and, over them, the ones set here.
    ///
    /// # Errors
    /// As [`Db::open_with`] ([`crate::Error::InvalidArgument`] for a value
    /// an option cannot take); [`crate::Error::Corruption`] if the
    /// `OPTIONS` file is damaged (open with [`Db::open_with`] to replace
    /// it with options given in full).
    pub fn open(self) -> Result<Db> {
        let options = self.resolved()?;
        Db::open_with(self.path, options)
    }

    /// Opens the database read-only: [`Db::open_read_only`] with the
    /// stored options and, over them, the ones set here.
    ///
    /// # Errors
    /// As [`Db::open_read_only`] and [`open`](Self::open).
    pub fn open_read_only(self) -> Result<Db> {
        let options = self.resolved()?;
        Db::open_read_only(self.path, options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::FilterBudget;
    use crate::options::CompactionPriority;

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

    /// A stored `Some` could not be cleared through the builder (its
    /// setters only set `Some`); the `no_` setters do.
    #[test]
    fn a_stored_some_is_cleared_by_its_no_setter() {
        let dir = tempfile::tempdir().unwrap();
        let budget = FilterBudget::bits_per_key(8.0);
        let db = Db::builder(dir.path())
            .bloom_hashes(5)
            .filter_budget(budget)
            .prefix_extractor(Arc::new(crate::filter::FixedPrefix::new(2)))
            .open()
            .unwrap();
        db.close().unwrap();
        // Kept when not set.
        let db = Db::builder(dir.path()).open().unwrap();
        assert_eq!(db.options().bloom_hashes, Some(5));
        assert!(db.options().filter_budget.is_some());
        assert!(db.options().prefix_extractor.is_some());
        db.close().unwrap();
        let db = Db::builder(dir.path())
            .no_bloom_hashes()
            .no_filter_budget()
            .no_prefix_extractor()
            .open()
            .unwrap();
        let o = db.options();
        assert_eq!(o.bloom_hashes, None);
        assert!(o.filter_budget.is_none());
        assert!(o.prefix_extractor.is_none());
        db.close().unwrap();
        // And stored so: the next open keeps them cleared.
        let db = Db::builder(dir.path()).open().unwrap();
        assert_eq!(db.options().bloom_hashes, None);
        assert!(db.options().filter_budget.is_none());
        assert!(db.options().prefix_extractor.is_none());
    }
}
