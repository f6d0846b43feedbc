//! [`TableBuilder`]: writes a sorted run of internal entries to a new
//! SSTable file (format in [`crate::sstable::format`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, IoContext, Result};
use crate::escape::escape_bytes;
use crate::filter::{
    hash_key, BloomFilterPolicy, FilterKind, FilterPolicy, KeyHash, LevelFilter, PrefixExtractor,
};
use crate::fs::{FileSystem, StdFs, WritableFile};
use crate::key::{
    compare_internal_keys, user_key_of, InternalKey, ParsedInternalKey, SequenceNumber, ValueType,
    MAX_KEY_LEN, MAX_VALUE_LEN,
};
use crate::sketch::hyperloglog::HyperLogLog;
use crate::sstable::block_builder::{BlockBuilder, MAX_BLOCK_LEN};
use crate::sstable::compression::{encode_data_block, Compression};
use crate::sstable::format::{
    block_trailer, format_version_for, BlockHandle, Footer, MAX_ENCODED_HANDLE_LEN,
};
use crate::sstable::properties::{CompressionProperties, PrefixFilterProperties, TableProperties};

/// Size of the write buffer in front of the file, in bytes.
const WRITE_BUFFER_LEN: usize = 64 << 10;

/// How a table is laid out.
#[derive(Debug, Clone)]
pub struct TableOptions {
    /// Target size of a data block's contents, in bytes: a block is cut as
    /// soon as its encoded size reaches this, so blocks are at most one
    /// entry larger. Smaller blocks make point reads cheaper and the index
    /// larger. Must be at least 1.
    pub block_size: usize,
    /// Entries between restart points in data blocks; must be at least 1.
    pub restart_interval: usize,
    /// The filter built over the table's distinct user keys, or `None` for
    /// no filter block.
    pub filter_policy: Option<Arc<dyn FilterPolicy>>,
    /// With a filter policy: also build a prefix filter, by the same policy,
    /// over the distinct prefixes this extractor takes from the keys.
    pub prefix_extractor: Option<Arc<dyn PrefixExtractor>>,
    /// Precision of the key-sketch block (a HyperLogLog of the distinct
    /// user keys), or `None` for no sketch; 4..=18.
    pub key_sketch_precision: Option<u8>,
    /// The codec of the data blocks. [`Compression::None`] writes format
    /// 1; any other writes format 2, each data block with its codec byte
    /// (stored uncompressed when the codec saves less than an eighth).
    pub compression: Compression,
    /// The keyspace the table belongs to, recorded as the table's
    /// `siftdb.keyspace` property when not 0 (the default keyspace's
    /// tables carry none, so they stay byte-identical to older builds').
    pub keyspace: u32,
}

impl TableOptions {
    /// The layout of a table written to level 0 (by a flush) under database
    /// options `o`: as [`TableOptions::for_level`] with level 0.
    pub fn from_db_options(o: &crate::Options) -> Self {
        Self::for_level(o, 0, false)
    }

    /// The layout of a table written to `level` under database options
    /// `o`: `block_size`, `block_restart_interval`, and the filter
    /// [`crate::Options::filters`] gives the level (the last entry serving
    /// every deeper level). With `filters` empty, a [`BloomFilterPolicy`]
    /// at `bits_per_key` (with `bloom_hashes` if set), or none when
    /// `bits_per_key` is 0. `last_level` says the table goes to the
    /// deepest level holding data; with
    /// [`crate::Options::skip_filters_on_last_level`] it then gets no
    /// filter. Under a [`crate::Options::filter_budget`], the level's kind
    /// at the budget's average bits per key: the engine sizes the filters
    /// of the tables it writes by the tree's shape instead
    /// ([`TableOptions::with_filter`]). The codec is the level's
    /// [`crate::Options::compression`].
    pub fn for_level(o: &crate::Options, level: usize, last_level: bool) -> Self {
        if let Some(b) = &o.filter_budget {
            let filter = match level_kind(o, level, last_level) {
                Some(kind) => LevelFilter::BitsPerKey(kind, b.bits_per_key),
                None => LevelFilter::None,
            };
            return TableOptions {
                compression: o.compression.for_level(level),
                ..Self::with_filter(o, &filter)
            };
        }
        let filter_policy: Option<Arc<dyn FilterPolicy>> =
            if last_level && o.skip_filters_on_last_level {
                None
            } else if let Some(f) = o.filters.get(level).or(o.filters.last()) {
                f.policy()
            } else {
                match (o.bits_per_key, o.bloom_hashes) {
                    (0, _) => None,
                    (b, None) => Some(Arc::new(BloomFilterPolicy::new(b))),
                    (b, Some(k)) => Some(Arc::new(BloomFilterPolicy::with_hashes(b, k))),
                }
            };
        TableOptions {
            block_size: o.block_size,
            restart_interval: o.block_restart_interval,
            filter_policy,
            prefix_extractor: o.prefix_extractor.clone(),
            key_sketch_precision: o.key_sketch_precision,
            compression: o.compression.for_level(level),
            keyspace: 0,
        }
    }

    /// The layout of a table under database options `o` with the filter
    /// `filter` (block size, restart interval and prefix extractor from
    /// `o`; the codec of level 0: set `compression` for another level).
    pub fn with_filter(o: &crate::Options, filter: &LevelFilter) -> Self {
        TableOptions {
            block_size: o.block_size,
            restart_interval: o.block_restart_interval,
            filter_policy: filter.policy(),
            prefix_extractor: o.prefix_extractor.clone(),
            key_sketch_precision: o.key_sketch_precision,
            compression: o.compression.for_level(0),
            keyspace: 0,
        }
    }
}

/// The filter kind the tables of `level` get under `o` (`None`: no
/// filter), whatever their size: the kind of the level's
/// [`crate::Options::filters`] entry (the last entry serving deeper
/// levels), the classic Bloom filter when `filters` is empty; none for the
/// deepest level (`last_level`) with
/// [`crate::Options::skip_filters_on_last_level`].
pub fn level_kind(o: &crate::Options, level: usize, last_level: bool) -> Option<FilterKind> {
    if last_level && o.skip_filters_on_last_level {
        return None;
    }
    match o.filters.get(level).or(o.filters.last()) {
        Some(f) => f.kind(),
        None => Some(FilterKind::Bloom),
    }
}

impl Default for TableOptions {
    /// As [`TableOptions::from_db_options`] with default
    /// [`crate::Options`]: 4 KiB blocks, restart interval 16, a 10
    /// bits/key Bloom filter.
    fn default() -> Self {
        Self::from_db_options(&crate::Options::default())
    }
}

/// What [`TableBuilder::finish`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSummary {
    /// Size of the finished file, in bytes.
    pub file_size: u64,
    /// The first internal key added.
    pub smallest: InternalKey,
    /// The last internal key added.
    pub largest: InternalKey,
    /// The properties written to the table.
    pub properties: TableProperties,
}

/// Writes one SSTable.
///
/// Call [`add`](Self::add) for every entry in internal-key order, then
/// [`finish`](Self::finish). [`abandon`](Self::abandon) (or dropping the
/// builder unfinished) deletes the partial file.
///
/// Durability: `finish` syncs the file's contents; making the new file's
/// directory entry durable (fsync of the directory) before recording the
/// table in the manifest is the caller's job.
pub struct TableBuilder {
    out: Output,
    opts: TableOptions,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    /// The last internal key added, and its parsed trailer.
    last_key: Vec<u8>,
    last_trailer: (SequenceNumber, ValueType),
    smallest: Option<InternalKey>,
    /// One hash per distinct user key, collected only with a filter policy.
    hashes: Vec<KeyHash>,
    /// One hash per distinct prefix, collected only with a filter policy
    /// and a prefix extractor, and the last prefix hashed.
    prefix_hashes: Vec<KeyHash>,
    last_prefix: Option<Vec<u8>>,
    /// The HyperLogLog of the distinct user keys, with a sketch precision.
    sketch: Option<HyperLogLog>,
    props: TableProperties,
    /// A format-2 data block's stored form (payload and codec byte), reused.
    stored: Vec<u8>,
    /// Set once `finish` succeeded; otherwise `Drop` deletes the file.
    finished: bool,
}

impl TableBuilder {
    /// Writes a filter block built by `policy`, padded first to the place
    /// the policy asks for.
    fn write_filter(&mut self, policy: &dyn FilterPolicy, filter: &[u8]) -> Result<BlockHandle> {
        if let Some((modulus, remainder)) = policy.placement() {
            // Zero padding, in no block: readers go by handles.
            let pad = (remainder + modulus - self.out.offset % modulus) % modulus;
            self.out.write_all(&vec![0; pad as usize])?;
        }
        self.out.write_block(filter)
    }
}

impl std::fmt::Debug for TableBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableBuilder")
            .field("path", &self.out.path)
            .field("offset", &self.out.offset)
            .field("num_entries", &self.props.num_entries)
            .field("poisoned", &self.out.poisoned)
            .finish_non_exhaustive()
    }
}

impl TableBuilder {
    /// Creates (or truncates) the file at `path` with `std::fs` and returns
    /// a builder writing to it: [`TableBuilder::with_fs`] with [`StdFs`].
    ///
    /// # Errors
    /// As [`TableBuilder::with_fs`].
    pub fn new(path: &Path, opts: TableOptions) -> Result<TableBuilder> {
        TableBuilder::with_fs(Arc::new(StdFs), path, opts)
    }

    /// Creates (or truncates) the file at `path` through `fs` and returns a
    /// builder writing to it. `fs` is also used to delete the partial file
    /// of an abandoned builder.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `block_size` or `restart_interval` is
    /// 0 or the key-sketch precision is outside 4..=18; [`Error::Io`] if
    /// the file cannot be created.
    pub fn with_fs(
        fs: Arc<dyn FileSystem>,
        path: &Path,
        opts: TableOptions,
    ) -> Result<TableBuilder> {
        if opts.block_size == 0 || opts.restart_interval == 0 {
            return Err(Error::InvalidArgument(
                "table block_size and restart_interval must be at least 1".into(),
            ));
        }
        let sketch = opts
            .key_sketch_precision
            .map(HyperLogLog::new)
            .transpose()?;
        let file = fs
            .create(path)
            .context(|| format!("create {}", path.display()))?;
        let codec = opts.compression;
        let keyspace = opts.keyspace;
        Ok(TableBuilder {
            out: Output {
                path: path.to_path_buf(),
                fs,
                file,
                buf: Vec::with_capacity(WRITE_BUFFER_LEN),
                offset: 0,
                poisoned: false,
            },
            data_block: BlockBuilder::new(opts.restart_interval),
            index_block: BlockBuilder::new(1),
            opts,
            last_key: Vec::new(),
            last_trailer: (SequenceNumber::ZERO, ValueType::Value),
            smallest: None,
            hashes: Vec::new(),
            prefix_hashes: Vec::new(),
            last_prefix: None,
            sketch,
            props: TableProperties {
                format_version: format_version_for(codec),
                keyspace,
                compression: (codec != Compression::None).then(|| CompressionProperties {
                    codec: codec.name().to_string(),
                    compressed_blocks: 0,
                    raw_bytes: 0,
                    stored_bytes: 0,
                }),
                ..TableProperties::default()
            },
            stored: Vec::new(),
            finished: false,
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.out.path
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Bytes of the file so far: blocks written (or buffered) plus the
    /// current unfinished data block. The final size adds the filter,
    /// properties, index and footer.
    pub fn estimated_size(&self) -> u64 {
        self.out.offset + self.data_block.estimated_size() as u64
    }

    /// Appends an entry. `internal_key` is an encoded [`InternalKey`]; a
    /// tombstone ([`ValueType::Deletion`]) must have an empty value and is
    /// stored like any other entry (its user key goes in the filter).
    ///
    /// REQUIRES: keys strictly increase in internal-key order (several
    /// versions of one user key come newest first).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`], with nothing written, if the key does
    /// not parse, is not greater than the previous key, or is too long, if
    /// the value is too long or a tombstone's value is not empty, or if
    /// the builder failed earlier. [`Error::Io`] if writing a finished
    /// block fails; the builder is then unusable.
    pub fn add(&mut self, internal_key: &[u8], value: &[u8]) -> Result<()> {
        self.check_usable()?;
        let Some(parsed) = ParsedInternalKey::parse(internal_key) else {
            return Err(Error::InvalidArgument(format!(
                "not an encoded internal key: {}",
                escape_bytes(internal_key)
            )));
        };
        if parsed.user_key.len() > MAX_KEY_LEN {
            return Err(Error::InvalidArgument(format!(
                "user key of {} bytes exceeds {MAX_KEY_LEN}",
                parsed.user_key.len()
            )));
        }
        if value.len() as u64 > MAX_VALUE_LEN {
            return Err(Error::InvalidArgument(format!(
                "value of {} bytes exceeds {MAX_VALUE_LEN}",
                value.len()
            )));
        }
        if parsed.value_type == ValueType::Deletion && !value.is_empty() {
            return Err(Error::InvalidArgument(
                "a tombstone must have an empty value".into(),
            ));
        }
        let first = self.props.num_entries == 0;
        if !first
            && compare_internal_keys(internal_key, &self.last_key) != std::cmp::Ordering::Greater
        {
            return Err(Error::InvalidArgument(format!(
                "table keys out of order: {:?} after {:?}",
                escape_bytes(internal_key),
                escape_bytes(&self.last_key)
            )));
        }
        // Upper bound on the bytes this entry adds: no shared prefix and a
        // new restart point.
        let entry_len = BlockBuilder::entry_len(0, internal_key.len(), value.len()) + 4;
        if entry_len + 8 > MAX_BLOCK_LEN {
            return Err(Error::InvalidArgument(format!(
                "entry of {entry_len} bytes does not fit in a block"
            )));
        }
        if !self.data_block.is_empty()
            && self.data_block.estimated_size() as u64 + entry_len > MAX_BLOCK_LEN
        {
            self.flush_data_block()?;
        }

        let new_user_key = first || user_key_of(&self.last_key) != parsed.user_key;
        if new_user_key {
            self.props.num_distinct_keys += 1;
            let hash = (self.opts.filter_policy.is_some() || self.sketch.is_some())
                .then(|| hash_key(parsed.user_key));
            if let (Some(sketch), Some(h)) = (&mut self.sketch, hash) {
                sketch.insert_hash(h);
            }
            if let (Some(_), Some(h)) = (&self.opts.filter_policy, hash) {
                self.hashes.push(h);
                // Keys with one prefix are adjacent (an extractor's prefixes
                // are closed under extension), so comparing with the last
                // prefix finds each distinct one once.
                if let Some(q) = self
                    .opts
                    .prefix_extractor
                    .as_ref()
                    .and_then(|e| e.prefix(parsed.user_key))
                {
                    if self.last_prefix.as_deref() != Some(q) {
                        self.prefix_hashes.push(hash_key(q));
                        self.last_prefix = Some(q.to_vec());
                    }
                }
            }
        }
        let p = &mut self.props;
        if first {
            self.smallest = Some(InternalKey::new(
                parsed.user_key,
                parsed.seq,
                parsed.value_type,
            ));
            p.smallest_user_key = parsed.user_key.to_vec();
            p.smallest_seq = parsed.seq;
            p.largest_seq = parsed.seq;
        }
        p.num_entries += 1;
        if parsed.value_type == ValueType::Deletion {
            p.num_tombstones += 1;
        }
        p.raw_key_bytes += internal_key.len() as u64;
        p.raw_value_bytes += value.len() as u64;
        p.smallest_seq = p.smallest_seq.min(parsed.seq);
        p.largest_seq = p.largest_seq.max(parsed.seq);
        self.last_trailer = (parsed.seq, parsed.value_type);
        self.last_key.clear();
        self.last_key.extend_from_slice(internal_key);

        self.data_block.add(internal_key, value);
        if self.data_block.estimated_size() >= self.opts.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Writes the filter, properties and index blocks and the footer, then
    /// syncs the file (`sync_all`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if no entry was added or the builder
    /// failed earlier; [`Error::Io`] if a write or the sync fails. On any
    /// error the partial file is deleted.
    pub fn finish(mut self) -> Result<TableSummary> {
        self.check_usable()?;
        if self.props.num_entries == 0 {
            return Err(Error::InvalidArgument(
                "cannot finish a table with no entries".into(),
            ));
        }
        if !self.data_block.is_empty() {
            self.flush_data_block()?;
        }

        let filter = match self.opts.filter_policy.clone() {
            Some(policy) => {
                let filter = policy.create_filter(&self.hashes);
                let shape = policy.shape(&filter);
                self.props.filter_policy = policy.name().to_string();
                self.props.filter_bits_per_key = shape.bits_per_key;
                self.props.filter_num_hashes = shape.num_hashes;
                self.props.filter_bits = shape.bits;
                let handle = self.write_filter(&*policy, &filter)?;
                if let Some(extractor) = self.opts.prefix_extractor.clone() {
                    let prefix_filter = policy.create_filter(&self.prefix_hashes);
                    let handle = self.write_filter(&*policy, &prefix_filter)?;
                    self.props.prefix_filter = Some(PrefixFilterProperties {
                        extractor: extractor.name().to_string(),
                        handle,
                        prefixes: self.prefix_hashes.len() as u64,
                    });
                }
                handle
            }
            None => BlockHandle::default(),
        };

        if let Some(sketch) = self.sketch.take() {
            self.props.key_sketch = Some(self.out.write_block(&sketch.encode())?);
        }
        self.props.largest_user_key = user_key_of(&self.last_key).to_vec();
        let properties = self.out.write_block(&self.props.encode())?;

        let index = self.out.write_block(self.index_block.finish())?;

        let footer = Footer {
            index,
            filter,
            properties,
            format_version: self.props.format_version,
        };
        self.out.write_all(&footer.encode())?;
        self.out.sync()?;
        self.finished = true;

        let (seq, vt) = self.last_trailer;
        Ok(TableSummary {
            file_size: self.out.offset,
            smallest: self
                .smallest
                .take()
                .unwrap_or_else(|| InternalKey::new(b"", SequenceNumber::ZERO, ValueType::Value)),
            largest: InternalKey::new(user_key_of(&self.last_key), seq, vt),
            properties: std::mem::take(&mut self.props),
        })
    }

    /// Stops building and deletes the partial file (best effort: a failure
    /// to delete is ignored, since the file is garbage either way).
    pub fn abandon(self) {
        drop(self);
    }

    fn check_usable(&self) -> Result<()> {
        if self.out.poisoned {
            return Err(Error::InvalidArgument(format!(
                "table builder for {} failed earlier and must be abandoned",
                self.out.path.display()
            )));
        }
        Ok(())
    }

    /// Writes the current data block (in format 2 compressed by the
    /// table's codec, if that pays, and with its codec byte), adds its
    /// index entry and resets it.
    fn flush_data_block(&mut self) -> Result<()> {
        let handle = match &mut self.props.compression {
            None => self.out.write_block(self.data_block.finish())?,
            Some(c) => {
                let raw = self.data_block.finish();
                self.stored.clear();
                if encode_data_block(raw, self.opts.compression, &mut self.stored)
                    != Compression::None
                {
                    c.compressed_blocks += 1;
                }
                c.raw_bytes += raw.len() as u64;
                c.stored_bytes += self.stored.len() as u64;
                self.out.write_block(&self.stored)?
            }
        };
        self.data_block.reset();
        let mut encoded = Vec::with_capacity(MAX_ENCODED_HANDLE_LEN);
        handle.encode_to(&mut encoded);
        self.index_block.add(&self.last_key, &encoded);
        self.props.num_data_blocks += 1;
        Ok(())
    }
}

/// The file being written and the write position.
struct Output {
    path: PathBuf,
    fs: Arc<dyn FileSystem>,
    file: Box<dyn WritableFile>,
    /// Bytes not yet handed to `file`; written out once they reach
    /// `WRITE_BUFFER_LEN`, and by `sync`.
    buf: Vec<u8>,
    /// Bytes added so far (written or buffered).
    offset: u64,
    /// Set once an I/O error leaves the file in an unknown state.
    poisoned: bool,
}

impl Output {
    /// Writes `contents` and its CRC trailer, returning its handle.
    fn write_block(&mut self, contents: &[u8]) -> Result<BlockHandle> {
        let handle = BlockHandle::new(self.offset, contents.len() as u64);
        self.write_all(contents)?;
        self.write_all(&block_trailer(contents))?;
        Ok(handle)
    }

    fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(bytes);
        self.offset += bytes.len() as u64;
        if self.buf.len() >= WRITE_BUFFER_LEN {
            self.write_buffered()?;
        }
        Ok(())
    }

    /// Hands the buffered bytes to the file.
    fn write_buffered(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let path = &self.path;
        let r = self
            .file
            .write_all(&self.buf)
            .context(|| format!("write {}", path.display()));
        self.poisoned |= r.is_err();
        self.buf.clear();
        r
    }

    /// Writes out the buffer and syncs data and metadata (`sync_all`).
    fn sync(&mut self) -> Result<()> {
        self.write_buffered()?;
        let path = &self.path;
        let r = self
            .file
            .sync_all()
            .context(|| format!("sync {}", path.display()));
        self.poisoned |= r.is_err();
        r
    }
}

impl Drop for TableBuilder {
    /// Deletes the file unless `finish` succeeded.
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.out.fs.remove_file(&self.out.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sstable::table::Table;

    fn ik(k: &str, s: u64, vt: ValueType) -> Vec<u8> {
        InternalKey::new(k.as_bytes(), SequenceNumber(s), vt).into_encoded()
    }

    /// Found by a new-user trial: a put of a 1-byte key and a value of
    /// `u32::MAX − 20` bytes fit its WAL record but not a data block, so
    /// it was acknowledged and then no flush (nor open) could succeed. The
    /// value limit now leaves room for the longest key in both; this is
    /// the block side, checked as `add` checks it.
    #[test]
    fn the_longest_key_and_value_fit_one_data_block() {
        let key = (MAX_KEY_LEN + crate::key::TRAILER_LEN) as u64;
        let fits = |value: u64| {
            let entry = BlockBuilder::entry_len(0, key as usize, value as usize) + 4;
            entry + 8 <= MAX_BLOCK_LEN
        };
        assert!(fits(MAX_VALUE_LEN));
        // The old limit did not fit.
        assert!(!fits(u32::MAX as u64));
    }

    fn opts(block_size: usize) -> TableOptions {
        TableOptions {
            block_size,
            restart_interval: 4,
            filter_policy: Some(Arc::new(BloomFilterPolicy::new(10))),
            prefix_extractor: None,
            key_sketch_precision: None,
            compression: Compression::None,
            keyspace: 0,
        }
    }

    #[test]
    fn rejects_bad_keys_without_writing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.sst");
        let mut b = TableBuilder::new(&path, opts(4096)).unwrap();
        b.add(&ik("b", 5, ValueType::Value), b"v").unwrap();
        let inv = |r: Result<()>| matches!(r, Err(Error::InvalidArgument(_)));
        // Equal key, smaller user key, older-then-newer version.
        assert!(inv(b.add(&ik("b", 5, ValueType::Value), b"v")));
        assert!(inv(b.add(&ik("a", 9, ValueType::Value), b"v")));
        assert!(inv(b.add(&ik("b", 6, ValueType::Value), b"v")));
        // A tombstone with a value, a key shorter than a trailer, an
        // over-long user key.
        assert!(inv(b.add(&ik("c", 1, ValueType::Deletion), b"not empty")));
        assert!(inv(b.add(b"short", b"v")));
        assert!(inv(b.add(
            &ik(&"x".repeat(MAX_KEY_LEN + 1), 1, ValueType::Value),
            b""
        )));
        // Same seq, Deletion sorts after Value (lower trailer): allowed.
        b.add(&ik("b", 5, ValueType::Deletion), b"").unwrap();
        b.add(&ik("c", 1, ValueType::Deletion), b"").unwrap();
        assert_eq!(b.num_entries(), 3);
        let s = b.finish().unwrap();
        assert_eq!(s.properties.num_entries, 3);
        assert_eq!(s.properties.num_distinct_keys, 2);
        assert_eq!(s.properties.num_tombstones, 2);
        assert_eq!(
            s.smallest,
            InternalKey::new(b"b", SequenceNumber(5), ValueType::Value)
        );
        assert_eq!(
            s.largest,
            InternalKey::new(b"c", SequenceNumber(1), ValueType::Deletion)
        );
        assert_eq!(s.file_size, std::fs::metadata(&path).unwrap().len());
    }

    #[test]
    fn options_are_validated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.sst");
        let mut o = opts(0);
        assert!(matches!(
            TableBuilder::new(&path, o.clone()),
            Err(Error::InvalidArgument(_))
        ));
        o.block_size = 10;
        o.restart_interval = 0;
        assert!(matches!(
            TableBuilder::new(&path, o),
            Err(Error::InvalidArgument(_))
        ));
        assert!(!path.exists());
    }

    #[test]
    fn empty_finish_is_invalid_and_abandon_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000002.sst");
        let b = TableBuilder::new(&path, opts(4096)).unwrap();
        assert!(path.exists());
        assert!(matches!(b.finish(), Err(Error::InvalidArgument(_))));
        assert!(!path.exists());

        let mut b = TableBuilder::new(&path, opts(64)).unwrap();
        for i in 0..100 {
            b.add(&ik(&format!("k{i:03}"), 1, ValueType::Value), &[1; 50])
                .unwrap();
        }
        assert!(b.estimated_size() > 100 * 50);
        b.abandon();
        assert!(!path.exists());
    }

    #[test]
    fn properties_and_layout() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000003.sst");
        let mut b = TableBuilder::new(&path, opts(256)).unwrap();
        let mut last_size = 0;
        for i in 0..100u64 {
            b.add(
                &ik(&format!("key{i:03}"), 1000 - i, ValueType::Value),
                &[i as u8; 20],
            )
            .unwrap();
            assert!(b.estimated_size() > last_size);
            last_size = b.estimated_size();
        }
        let s = b.finish().unwrap();
        let p = &s.properties;
        assert_eq!(p.num_entries, 100);
        assert_eq!(p.num_distinct_keys, 100);
        assert_eq!(p.num_tombstones, 0);
        assert_eq!(p.raw_key_bytes, 100 * (6 + 8));
        assert_eq!(p.raw_value_bytes, 100 * 20);
        assert_eq!(p.smallest_user_key, b"key000");
        assert_eq!(p.largest_user_key, b"key099");
        assert_eq!(p.smallest_seq, SequenceNumber(901));
        assert_eq!(p.largest_seq, SequenceNumber(1000));
        assert_eq!(p.filter_policy, "siftdb.bloom.xxh3.v1");
        assert_eq!(
            (p.filter_bits_per_key, p.filter_num_hashes, p.filter_bits),
            (10, 7, 1000)
        );
        assert_eq!(p.format_version, 1);
        // Each entry is ~3 + 14 + 20 bytes (less with sharing): a 256-byte
        // block holds 7-8 entries.
        assert!(
            (12..=16).contains(&p.num_data_blocks),
            "{}",
            p.num_data_blocks
        );

        let t = Table::open(&path, 3).unwrap();
        assert_eq!(t.properties(), p);
        assert_eq!(t.index().len() as u64, p.num_data_blocks);
        assert_eq!(t.file_size(), s.file_size);
        // Filter block: 1000 bits + k byte.
        assert_eq!(t.filter_bytes().unwrap().len(), 126);
        assert_eq!(t.footer().filter.size, 126);
    }

    #[test]
    fn no_filter_policy_means_null_filter_handle() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000004.sst");
        let mut o = opts(4096);
        o.filter_policy = None;
        let mut b = TableBuilder::new(&path, o).unwrap();
        b.add(&ik("a", 1, ValueType::Value), b"1").unwrap();
        let s = b.finish().unwrap();
        assert_eq!(s.properties.filter_policy, "");
        assert_eq!(s.properties.filter_bits, 0);
        let t = Table::open(&path, 4).unwrap();
        assert!(t.footer().filter.is_null());
        assert!(t.filter_bytes().is_none());
    }

    #[test]
    fn from_db_options() {
        let mut o = crate::Options::default();
        let t = TableOptions::from_db_options(&o);
        assert_eq!((t.block_size, t.restart_interval), (4096, 16));
        let f = t.filter_policy.unwrap();
        assert_eq!(f.shape(&f.create_filter(&[])).num_hashes, 7);
        o.bloom_hashes = Some(3);
        let f = TableOptions::from_db_options(&o).filter_policy.unwrap();
        assert_eq!(f.shape(&f.create_filter(&[])).num_hashes, 3);
        o.bits_per_key = 0;
        assert!(TableOptions::from_db_options(&o).filter_policy.is_none());
    }

    #[test]
    fn a_blocked_bloom_filter_is_placed_so_that_its_blocks_start_on_cache_lines() {
        use crate::filter::{blocked_bloom, BlockedBloomPolicy};
        let dir = tempfile::tempdir().unwrap();
        for n in [1u64, 7, 300] {
            let path = dir.path().join(format!("{n:06}.sst"));
            let mut o = opts(256);
            o.filter_policy = Some(Arc::new(BlockedBloomPolicy::new(10.0)));
            let mut b = TableBuilder::new(&path, o).unwrap();
            for i in 0..n {
                b.add(&ik(&format!("key{i:05}"), 1, ValueType::Value), b"v")
                    .unwrap();
            }
            b.finish().unwrap();
            let t = Table::open(&path, n).unwrap();
            let at = t.footer().filter.offset;
            assert_eq!(at % 64, 64 - blocked_bloom::HEADER_LEN as u64, "{n} keys");
            // The map starts on a page, so the blocks sit on cache lines.
            let blocks = t.filter_bytes().unwrap()[blocked_bloom::HEADER_LEN..].as_ptr();
            assert_eq!(blocks as usize % 64, 0);
            for i in 0..n {
                let key = format!("key{i:05}");
                assert!(matches!(
                    t.get(key.as_bytes(), SequenceNumber(5), hash_key(key.as_bytes()))
                        .unwrap(),
                    crate::sstable::TableGet::Searched { entry: Some(_), .. }
                ));
            }
        }
    }

    #[test]
    fn each_level_gets_its_filter_the_last_repeating() {
        use crate::filter::{FilterKind, LevelFilter, BLOCKED_BLOOM_POLICY_NAME};
        use crate::filter::{BLOOM_POLICY_NAME, RIBBON_POLICY_NAME};
        let mut o = crate::Options::default();
        let name = |o: &crate::Options, level, last| {
            TableOptions::for_level(o, level, last)
                .filter_policy
                .map(|p| p.name())
        };
        // No list: the classic Bloom at bits_per_key everywhere.
        assert_eq!(name(&o, 0, false), Some(BLOOM_POLICY_NAME));
        assert_eq!(name(&o, 6, true), Some(BLOOM_POLICY_NAME));
        o.filters = vec![
            LevelFilter::BitsPerKey(FilterKind::BlockedBloom, 10.0),
            LevelFilter::None,
            LevelFilter::FalsePositiveRate(FilterKind::Ribbon, 0.01),
        ];
        assert_eq!(name(&o, 0, false), Some(BLOCKED_BLOOM_POLICY_NAME));
        assert_eq!(name(&o, 1, false), None);
        assert_eq!(name(&o, 2, false), Some(RIBBON_POLICY_NAME));
        assert_eq!(name(&o, 5, true), Some(RIBBON_POLICY_NAME));
        o.skip_filters_on_last_level = true;
        assert_eq!(name(&o, 5, true), None);
        assert_eq!(name(&o, 5, false), Some(RIBBON_POLICY_NAME));
    }
}
