//! Prefix extractors: which part of a key a table's *prefix filter* holds,
//! so that a scan over one prefix skips every table that cannot hold it
//! without reading a data block (RocksDB's `prefix_extractor`; the
//! prefix-filter requests of lsm-tree #97).
//!
//! With [`crate::Options::prefix_extractor`] set, every table written also
//! gets a second filter, of the same kind and size as its key filter, over
//! the distinct prefixes of its keys. `Db::prefix(p)` and a `range` whose
//! bounds share one extracted prefix consult it (DESIGN.md 4.1).
//!
//! # The contract
//!
//! An extractor maps a key to `Some(q)`, a prefix of the key, or to `None`
//! (the key is outside its domain: it is in no prefix filter). It must be
//! *closed under extension*: if `prefix(k) = Some(q)`, then every key that
//! starts with `q` has prefix `q` too (for the fixed-length extractor:
//! every key of at least `n` bytes has its first `n` bytes as its prefix).
//! That is what makes a scan over `p` safe to answer from the filter of
//! `prefix(p)`: every key that starts with `p` starts with `q = prefix(p)`,
//! and so has prefix `q`. An extractor must also be a pure function, and
//! must keep its [`PrefixExtractor::name`] as long as it maps keys the same
//! way: a table's prefix filter is used only when the database's extractor
//! has the name the table recorded, so a changed extractor gets a new name
//! and old tables are simply scanned.

use std::fmt::Debug;

/// Maps a key to the prefix a prefix filter holds (see the module docs for
/// the contract every implementation must keep).
pub trait PrefixExtractor: Send + Sync + Debug {
    /// The name recorded in each table's properties; a table's prefix
    /// filter is used only while the extractor has the same name. Change it
    /// whenever the mapping changes.
    fn name(&self) -> &str;

    /// The prefix of `key`: a prefix of it, or `None` if `key` is outside
    /// the extractor's domain.
    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]>;
}

/// The first `len` bytes of every key of at least `len` bytes; shorter keys
/// are outside the domain. Named `siftdb.fixed_prefix.<len>`.
///
/// ```
/// use siftdb::filter::{FixedPrefix, PrefixExtractor};
/// let p = FixedPrefix::new(4);
/// assert_eq!(p.prefix(b"user:42"), Some(&b"user"[..]));
/// assert_eq!(p.prefix(b"abc"), None);
/// assert_eq!(p.name(), "siftdb.fixed_prefix.4");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedPrefix {
    len: usize,
    name: String,
}

impl FixedPrefix {
    /// The extractor of `len`-byte prefixes (`len` ≥ 1; 0 is taken as 1).
    pub fn new(len: usize) -> FixedPrefix {
        let len = len.max(1);
        FixedPrefix {
            len,
            name: format!("siftdb.fixed_prefix.{len}"),
        }
    }

    /// Prefix length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a prefix is at least one byte (for clippy's
    /// `len_without_is_empty`).
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl PrefixExtractor for FixedPrefix {
    fn name(&self) -> &str {
        &self.name
    }

    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        key.get(..self.len)
    }
}

/// The built-in extractor named `name`, if it is one (`siftdb.fixed_prefix.N`
/// in its canonical form): what tools use to apply a table's prefix filter
/// without the options the database was opened with.
pub fn builtin_extractor(name: &str) -> Option<FixedPrefix> {
    let n: usize = name.strip_prefix("siftdb.fixed_prefix.")?.parse().ok()?;
    let ex = FixedPrefix::new(n);
    (ex.name() == name).then_some(ex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_prefixes_are_closed_under_extension() {
        let p = FixedPrefix::new(3);
        assert_eq!(p.prefix(b"abcdef"), Some(&b"abc"[..]));
        assert_eq!(p.prefix(b"abc"), Some(&b"abc"[..]));
        assert_eq!(p.prefix(b"ab"), None);
        assert_eq!(p.prefix(b""), None);
        // Every key that starts with a prefix has that prefix.
        for k in [&b"abc"[..], b"abcx", b"abc\xff\x00"] {
            assert_eq!(p.prefix(k), Some(&b"abc"[..]));
        }
        assert_eq!(FixedPrefix::new(0).len(), 1);
        assert_eq!(FixedPrefix::new(12).name(), "siftdb.fixed_prefix.12");
    }

    #[test]
    fn built_in_extractors_are_found_by_their_canonical_names() {
        assert_eq!(
            builtin_extractor("siftdb.fixed_prefix.5"),
            Some(FixedPrefix::new(5))
        );
        for name in [
            "siftdb.fixed_prefix.05",
            "siftdb.fixed_prefix.0",
            "my.extractor",
            "",
        ] {
            assert_eq!(builtin_extractor(name), None, "{name}");
        }
    }
}
