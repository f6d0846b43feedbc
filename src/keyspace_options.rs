//! [`KeyspaceOptions`]: the settings each keyspace has for itself, given
//! to [`Db::keyspace_with`](crate::Db::keyspace_with).

use crate::options::Options;

/// The settings of one keyspace: how its memtables fill, how its tables
/// are built (filters, blocks, compression, prefix extractor, key
/// sketches) and how it compacts. Each setter sets the [`Options`] field
/// of its name (see there for units, defaults and limits). The settings
/// of the whole database (`sync`, `table_reads`, `hot_keys`,
/// `file_system`, `max_manifest_file_size`, `max_total_wal_size`, ...)
/// are not here: they stay the database's.
///
/// [`KeyspaceOptions::default`] holds the default of every setting;
/// [`KeyspaceOptions::from_options`] takes a database's (what
/// [`Db::keyspace`](crate::Db::keyspace) gives a new keyspace). A
/// keyspace other than the default stores its settings in the manifest
/// (DESIGN.md 12.8, 12.13), so a reopen keeps them whatever the
/// database's options say. Only a built-in prefix extractor
/// ([`crate::filter::prefix`]) can be stored that way: a custom one is
/// refused ([`crate::Error::InvalidArgument`]).
#[derive(Debug, Clone)]
#[must_use]
pub struct KeyspaceOptions {
    /// A database's options; only the per-keyspace fields are read.
    options: Options,
}

impl Default for KeyspaceOptions {
    fn default() -> Self {
        KeyspaceOptions::from_options(&Options::default())
    }
}

/// Calls macro `$mac` with the per-keyspace fields of [`Options`]
/// (`plain { name: type, .. } some { name / no_name: type, .. }`, the
/// `some` ones `Option`s), followed by the extra fields given: the one list
/// of per-keyspace settings, which [`KeyspaceOptions`]'s setters and
/// [`crate::DbBuilder`]'s (with the database-wide fields) both expand.
macro_rules! keyspace_fields {
    ($mac:ident plain { $($plain:tt)* } some { $($some:tt)* }) => {
        $mac! {
            plain {
                write_buffer_size: usize,
                bits_per_key: u32,
                filters: Vec<crate::filter::LevelFilter>,
                skip_filters_on_last_level: bool,
                block_size: usize,
                block_restart_interval: usize,
                compression: crate::sstable::CompressionPolicy,
                key_sketch_precision: Option<u8>,
                max_immutable_memtables: usize,
                compaction_style: crate::options::CompactionStyle,
                compaction_priority: crate::options::CompactionPriority,
                level0_compaction_trigger: usize,
                level0_slowdown_trigger: usize,
                level0_stop_trigger: usize,
                max_bytes_for_level_base: u64,
                level_size_multiplier: u32,
                target_file_size: u64,
                $($plain)*
            }
            some {
                bloom_hashes / no_bloom_hashes: u32,
                filter_budget / no_filter_budget: crate::filter::FilterBudget,
                prefix_extractor / no_prefix_extractor:
                    std::sync::Arc<dyn crate::filter::PrefixExtractor>,
                $($some)*
            }
        }
    };
}
pub(crate) use keyspace_fields;

/// The setters, one per per-keyspace field (`plain`: the field's type;
/// `some`: an `Option` field set to `Some(value)`, with a second setter
/// that sets it to `None`), and [`KeyspaceOptions::over`], which copies
/// exactly those fields: one list, so the two cannot drift apart.
macro_rules! keyspace_setters {
    (plain { $($name:ident: $ty:ty),* $(,)? } some { $($sname:ident / $none:ident: $sty:ty),* $(,)? }) => {
        $(
            #[doc = concat!("Sets [`Options::", stringify!($name), "`] for the keyspace.")]
            pub fn $name(mut self, value: $ty) -> Self {
                self.options.$name = value;
                self
            }
        )*
        $(
            #[doc = concat!("Sets [`Options::", stringify!($sname), "`] to `Some(value)` for the keyspace.")]
            pub fn $sname(mut self, value: $sty) -> Self {
                self.options.$sname = Some(value);
                self
            }

            #[doc = concat!("Sets [`Options::", stringify!($sname), "`] to `None` for the keyspace.")]
            pub fn $none(mut self) -> Self {
                self.options.$sname = None;
                self
            }
        )*

        /// `db` (a database's options) with this keyspace's settings over
        /// them: the options the keyspace runs with.
        pub(crate) fn over(&self, db: &Options) -> Options {
            let mut o = db.clone();
            $(o.$name = self.options.$name.clone();)*
            $(o.$sname = self.options.$sname.clone();)*
            o
        }
    };
}

impl KeyspaceOptions {
    /// The per-keyspace settings of `o` (a database's options).
    pub fn from_options(o: &Options) -> KeyspaceOptions {
        KeyspaceOptions { options: o.clone() }
    }

    keyspace_fields! { keyspace_setters plain {} some {} }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_takes_the_keyspace_settings_and_keeps_the_databases() {
        let db = Options {
            sync: true,
            max_manifest_file_size: 1 << 20,
            block_size: 8192,
            ..Default::default()
        };
        let o = KeyspaceOptions::default()
            .block_size(16384)
            .bloom_hashes(3)
            .over(&db);
        assert_eq!(o.block_size, 16384);
        assert_eq!(o.bloom_hashes, Some(3));
        assert!(o.sync);
        assert_eq!(o.max_manifest_file_size, 1 << 20);
        // The database's own per-keyspace settings, taken whole.
        let o = KeyspaceOptions::from_options(&db).over(&Options::default());
        assert_eq!(o.block_size, 8192);
        assert!(!o.sync);
    }
}
