//! [`VersionEdit`]: one change to the shape of the tree, as the manifest
//! records it, and [`FileMetaData`], what the manifest knows about one
//! SSTable.
//!
//! # Format
//!
//! An encoded edit is a sequence of fields, each a varint tag followed by
//! that tag's values. Varints are unsigned LEB128 and length-prefixed byte
//! strings are a varint length then the bytes ([`crate::util::coding`]).
//! There is no count and no terminator: the edit ends where its log record
//! ends.
//!
//! | tag | field | values after the tag | occurs |
//! |---|---|---|---|
//! | 0 | reserved, never written | (zero bytes must not decode) | never |
//! | 1 | `format_version` | varint, fits `u32` | at most once; written first |
//! | 2 | `log_number` | varint | at most once |
//! | 3 | `next_file_number` | varint | at most once |
//! | 4 | `last_sequence` | varint, at most 2^56 − 1 | at most once |
//! | 5 | deleted file | varint level (< 64), varint file number | any number |
//! | 6 | new file | varint level (< 64), varint file number, varint file size in bytes, length-prefixed smallest internal key, length-prefixed largest internal key, varint entry count, varint tombstone count | any number |
//! | 7 | `user_bytes_flushed` | varint: total key + value bytes flushed from memtables since the database was created | at most once |
//! | 8 | `table_bytes_written` | varint: total bytes of SSTables written by flushes and compactions since creation | at most once |
//! | 9 | key prediction (format version 2) | varint output level (< 64), varint input tables, varint input entries, varint summed distinct keys, u64 LE bits of the predicted distinct keys (an `f64`), u64 LE bits of the relative standard error (an `f64`), varint distinct input keys, varint distinct output keys, varint finish time in Unix seconds | any number |
//! | 10 | new range tombstone | varint sequence number (1 to 2^56 − 1), length-prefixed start key, length-prefixed end key (empty: no end; else it sorts after the start; each at most 65,536 bytes), varint count of tables, then that many varint file numbers: the tables that may hold a version it hides | any number |
//! | 11 | range tombstone table | varint sequence number of a tombstone, varint file number: one more table that may hold a version it hides | any number |
//!
//! | 12 | keyspace section (format version 4) | varint keyspace id ≥ 1: the scoped fields after it, up to the next 12, are that keyspace's | any number, ids ascending |
//! | 13 | add keyspace (scoped) | length-prefixed name, length-prefixed options text (UTF-8) | at most once per section |
//! | 14 | drop keyspace (scoped) | none | alone in its section |
//! | 15 | keyspace options (scoped) | length-prefixed options text (UTF-8): replaces the stored one | at most once per section |
//! | 16 | `next_keyspace_id` | varint, fits `u32`: the id the next keyspace gets; never decreases | at most once |
//!
//! Tags 10 and 11 came with range deletions: a build without them refuses
//! a manifest holding one ("unknown tag 10") rather than resurrect the keys
//! it deleted.
//!
//! Tags 2, 5, 6, 9, 10 and 11 are *scoped*: they belong to the current
//! keyspace, which is the default (id 0) until the first tag 12 and then
//! the keyspace that tag names ([`VersionEdit::keyspaces`]); so do 13, 14
//! and 15, which only a section may hold. Tags 1, 3, 4, 7, 8 and 16 are
//! global wherever they appear. An edit without tag 12 or 16 is exactly a
//! format-version-3 edit. A name is 1 to 64 bytes of ASCII letters,
//! digits, `_`, `-` and `.`, not starting with `.` or `-`, and not
//! `default`.
//!
//! Tags are frozen on disk: a retired tag is never reused, and a new field
//! gets the next unused number. A reader rejects an unknown tag, so a newer
//! field must come with a newer `format_version`.
//!
//! [`VersionEdit::encode`] writes tags 1–4, 7, 8 and 16 (those present) in
//! that order, then every deleted file, then every new file, then every key
//! prediction, range tombstone (10) and tombstone table (11), each list in
//! its `Vec` order; then one section per keyspace in ascending id, each
//! ordered 12, 13, 15, 2, 5, 6, 9, 10, 11, 14. [`VersionEdit::decode`]
//! accepts the fields of a keyspace in any order, but rejects a section
//! id 0, repeated or out of order; a tag 13, 14 or 15 outside a section; a
//! tag 2, 13 or 15 twice in one keyspace; a tag 14 with any other field of
//! its section; a name that breaks the rules above or text that is not
//! UTF-8; a repeated tag 1–4, 7, 8 or 16, a level of 64 or more, a key that is not an
//! internal key, a smallest key that sorts after the largest, a tombstone
//! count above the entry count, a sequence number beyond
//! [`SequenceNumber::MAX`], and a key prediction whose two `f64`s are not
//! finite and non-negative.
//!
//! Worked example (pinned by the `golden_bytes` test): the edit
//! `{ format_version: 1, log_number: 5, next_file_number: 7, last_sequence:
//! 300, deleted (level 1, file 4), new (level 0, file 6, 1000 bytes, "a"@1
//! put ..= "b"@2 delete, 2 entries, 1 tombstone) }` encodes as
//!
//! ```text
//! 01 01                 format_version 1
//! 02 05                 log_number 5
//! 03 07                 next_file_number 7
//! 04 ac 02              last_sequence 300
//! 05 01 04              deleted file: level 1, number 4
//! 06 00 06 e8 07        new file: level 0, number 6, size 1000
//!    09 61 01 01 00 00 00 00 00 00   smallest "a"@1 put   (trailer 0x101)
//!    09 62 00 02 00 00 00 00 00 00   largest  "b"@2 delete (trailer 0x200)
//!    02 01              2 entries, 1 tombstone
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::key::{InternalKey, SequenceNumber, MAX_KEY_LEN};
use crate::range_tombstone::RangeTombstone;
use crate::stats::KeyPrediction;
use crate::util::coding::{put_length_prefixed, put_u64, put_varint, DecodeError, Decoder};

/// Levels in an edit must be below this. The tree itself may use fewer; the
/// version set checks its own limit.
pub const MAX_LEVELS: u32 = 64;

// Field tags. Frozen on disk: never renumber or reuse one. 0 is reserved.
const TAG_FORMAT_VERSION: u64 = 1;
const TAG_LOG_NUMBER: u64 = 2;
const TAG_NEXT_FILE_NUMBER: u64 = 3;
const TAG_LAST_SEQUENCE: u64 = 4;
const TAG_DELETED_FILE: u64 = 5;
const TAG_NEW_FILE: u64 = 6;
const TAG_USER_BYTES_FLUSHED: u64 = 7;
const TAG_TABLE_BYTES_WRITTEN: u64 = 8;
const TAG_KEY_PREDICTION: u64 = 9;
const TAG_NEW_RANGE_TOMBSTONE: u64 = 10;
const TAG_RANGE_TOMBSTONE_FILE: u64 = 11;
const TAG_KEYSPACE_SECTION: u64 = 12;
const TAG_ADD_KEYSPACE: u64 = 13;
const TAG_DROP_KEYSPACE: u64 = 14;
const TAG_KEYSPACE_OPTIONS: u64 = 15;
const TAG_NEXT_KEYSPACE_ID: u64 = 16;

/// Longest keyspace name, in bytes.
pub const MAX_KEYSPACE_NAME_LEN: usize = 64;

/// The name of keyspace 0, which is never added, dropped or renamed.
pub const DEFAULT_KEYSPACE_NAME: &str = "default";

/// What the manifest records about one SSTable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMetaData {
    /// File number: the table lives in `NNNNNN.sst`.
    pub number: u64,
    /// Size of the table file, in bytes.
    pub file_size: u64,
    /// Smallest internal key in the table.
    pub smallest: InternalKey,
    /// Largest internal key in the table; never sorts before `smallest`.
    pub largest: InternalKey,
    /// Entries in the table, tombstones included.
    pub num_entries: u64,
    /// Tombstones among `num_entries`.
    pub num_tombstones: u64,
}

/// One change to the tree: files added and removed and counters advanced.
/// The first edit of a manifest is a snapshot of the whole state; each later
/// one applies on top of the ones before it.
///
/// `None` and empty lists mean "unchanged".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VersionEdit {
    /// On-disk format version of the database (the manifest's first record
    /// carries it).
    pub format_version: Option<u32>,
    /// WALs numbered at least this are live; older ones are fully flushed
    /// and may be deleted.
    pub log_number: Option<u64>,
    /// The next file number to hand out; every file number in use is below
    /// it.
    pub next_file_number: Option<u64>,
    /// The largest sequence number any write in the tree may carry.
    pub last_sequence: Option<SequenceNumber>,
    /// Files removed, as `(level, file number)`.
    pub deleted_files: Vec<(u32, u64)>,
    /// Files added, as `(level, metadata)`.
    pub new_files: Vec<(u32, FileMetaData)>,
    /// Running total, since the database was created, of key and value
    /// bytes that flushes moved from memtables into SSTables.
    pub user_bytes_flushed: Option<u64>,
    /// Running total, since the database was created, of SSTable bytes
    /// written by flushes and compactions. Divided by `user_bytes_flushed`
    /// it is the write amplification.
    pub table_bytes_written: Option<u64>,
    /// Compactions' distinct-key predictions (tag 9): a compaction edit
    /// carries its own, a manifest's first record the last
    /// [`crate::KEY_PREDICTIONS_KEPT`] before it, oldest first.
    pub key_predictions: Vec<KeyPrediction>,
    /// Range tombstones a flush moves out of its memtable (tag 10), each
    /// with the file numbers of the tables that may hold a version it
    /// hides; a manifest's first record lists every live one.
    pub new_range_tombstones: Vec<(RangeTombstone, Vec<u64>)>,
    /// `(tombstone sequence, file number)` (tag 11): a table this edit adds
    /// that may hold a version the tombstone hides.
    pub range_tombstone_files: Vec<(SequenceNumber, u64)>,
    /// The id the next keyspace created gets (tag 16, format version 4):
    /// global, and never decreasing. Keyspace ids are never reused.
    pub next_keyspace_id: Option<u32>,
    /// The fields of keyspaces other than the default, by id (each at
    /// least 1), in sections that follow the global and default fields
    /// (tag 12, format version 4). The fields above that are scoped (tags
    /// 2, 5, 6, 9, 10 and 11) are the default keyspace's.
    pub keyspaces: BTreeMap<u32, KeyspaceEdit>,
}

/// One keyspace's section of a [`VersionEdit`] (tag 12 and the scoped
/// fields after it, format version 4). `None` and empty lists mean
/// "unchanged", as in [`VersionEdit`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyspaceEdit {
    /// The keyspace is created by this edit (tag 13).
    pub add: Option<KeyspaceAdd>,
    /// The keyspace's stored options text replaces the one before (tag 15).
    pub options: Option<String>,
    /// The keyspace's WALs numbered at least this are live (tag 2).
    pub log_number: Option<u64>,
    /// Files removed from the keyspace's tree (tag 5).
    pub deleted_files: Vec<(u32, u64)>,
    /// Files added to the keyspace's tree (tag 6).
    pub new_files: Vec<(u32, FileMetaData)>,
    /// Its compactions' distinct-key predictions (tag 9).
    pub key_predictions: Vec<KeyPrediction>,
    /// Range tombstones a flush of the keyspace moves out of its memtable
    /// (tag 10), with the keyspace's tables each waits on.
    pub new_range_tombstones: Vec<(RangeTombstone, Vec<u64>)>,
    /// `(tombstone sequence, file number)` of the keyspace (tag 11).
    pub range_tombstone_files: Vec<(SequenceNumber, u64)>,
    /// The keyspace is dropped (tag 14): alone in its section.
    pub drop: bool,
}

/// A keyspace created by an edit (tag 13).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyspaceAdd {
    /// Its name: 1 to [`MAX_KEYSPACE_NAME_LEN`] bytes of ASCII letters,
    /// digits, `_`, `-` and `.`, not starting with `.` or `-`, and never
    /// [`DEFAULT_KEYSPACE_NAME`].
    pub name: String,
    /// Its stored options, as `NAME VALUE` lines (DESIGN.md 12.8).
    pub options: String,
}

impl KeyspaceEdit {
    /// True if the section carries a field other than tag 14.
    fn has_fields(&self) -> bool {
        self.add.is_some()
            || self.options.is_some()
            || self.log_number.is_some()
            || !self.deleted_files.is_empty()
            || !self.new_files.is_empty()
            || !self.key_predictions.is_empty()
            || !self.new_range_tombstones.is_empty()
            || !self.range_tombstone_files.is_empty()
    }

    /// The section's tree fields (tags 2, 5, 6, 9, 10, 11) as an edit of
    /// their own, the shape [`crate::version::set::ReplayedState`] folds
    /// (and kvctl's `manifest dump` shows).
    pub fn tree_edit(&self) -> VersionEdit {
        VersionEdit {
            log_number: self.log_number,
            deleted_files: self.deleted_files.clone(),
            new_files: self.new_files.clone(),
            key_predictions: self.key_predictions.clone(),
            new_range_tombstones: self.new_range_tombstones.clone(),
            range_tombstone_files: self.range_tombstone_files.clone(),
            ..VersionEdit::default()
        }
    }
}

/// Checks a keyspace name against the rules of [`KeyspaceAdd::name`].
///
/// # Errors
/// What is wrong with it.
pub(crate) fn check_keyspace_name(name: &str) -> std::result::Result<(), String> {
    let ok_char = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.');
    let bytes = name.as_bytes();
    let why = if bytes.is_empty() {
        "is empty".to_string()
    } else if bytes.len() > MAX_KEYSPACE_NAME_LEN {
        format!("is longer than {MAX_KEYSPACE_NAME_LEN} bytes")
    } else if !bytes.iter().all(|&b| ok_char(b)) {
        "holds a byte other than ASCII letters, digits, `_`, `-` and `.`".to_string()
    } else if matches!(bytes[0], b'.' | b'-') {
        "starts with `.` or `-`".to_string()
    } else if name == DEFAULT_KEYSPACE_NAME {
        "is the default keyspace's".to_string()
    } else {
        return Ok(());
    };
    Err(format!(
        "keyspace name \"{}\" {why}",
        crate::escape::escape_bytes(&bytes[..bytes.len().min(80)])
    ))
}

impl VersionEdit {
    /// An edit that changes nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Encodes the edit as described in the module docs. An empty edit
    /// encodes to zero bytes.
    ///
    /// Does not check the edit: call [`VersionEdit::validate`] first, or
    /// the bytes may not decode.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(v) = self.format_version {
            put_varint(&mut out, TAG_FORMAT_VERSION);
            put_varint(&mut out, u64::from(v));
        }
        if let Some(n) = self.log_number {
            put_varint(&mut out, TAG_LOG_NUMBER);
            put_varint(&mut out, n);
        }
        if let Some(n) = self.next_file_number {
            put_varint(&mut out, TAG_NEXT_FILE_NUMBER);
            put_varint(&mut out, n);
        }
        if let Some(s) = self.last_sequence {
            put_varint(&mut out, TAG_LAST_SEQUENCE);
            put_varint(&mut out, s.get());
        }
        if let Some(n) = self.user_bytes_flushed {
            put_varint(&mut out, TAG_USER_BYTES_FLUSHED);
            put_varint(&mut out, n);
        }
        if let Some(n) = self.table_bytes_written {
            put_varint(&mut out, TAG_TABLE_BYTES_WRITTEN);
            put_varint(&mut out, n);
        }
        if let Some(n) = self.next_keyspace_id {
            put_varint(&mut out, TAG_NEXT_KEYSPACE_ID);
            put_varint(&mut out, u64::from(n));
        }
        encode_tree_fields(
            &mut out,
            &self.deleted_files,
            &self.new_files,
            &self.key_predictions,
            &self.new_range_tombstones,
            &self.range_tombstone_files,
        );
        for (&id, ks) in &self.keyspaces {
            put_varint(&mut out, TAG_KEYSPACE_SECTION);
            put_varint(&mut out, u64::from(id));
            if let Some(add) = &ks.add {
                put_varint(&mut out, TAG_ADD_KEYSPACE);
                put_length_prefixed(&mut out, add.name.as_bytes());
                put_length_prefixed(&mut out, add.options.as_bytes());
            }
            if let Some(options) = &ks.options {
                put_varint(&mut out, TAG_KEYSPACE_OPTIONS);
                put_length_prefixed(&mut out, options.as_bytes());
            }
            if let Some(n) = ks.log_number {
                put_varint(&mut out, TAG_LOG_NUMBER);
                put_varint(&mut out, n);
            }
            encode_tree_fields(
                &mut out,
                &ks.deleted_files,
                &ks.new_files,
                &ks.key_predictions,
                &ks.new_range_tombstones,
                &ks.range_tombstone_files,
            );
            if ks.drop {
                put_varint(&mut out, TAG_DROP_KEYSPACE);
            }
        }
        out
    }

    /// Checks what decoding would check (levels below [`MAX_LEVELS`],
    /// `last_sequence` at most [`SequenceNumber::MAX`], each new file's
    /// `smallest <= largest` and `num_tombstones <= num_entries`), so that
    /// an edit is never written that cannot be read back.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first problem.
    pub fn validate(&self) -> Result<()> {
        self.check()
            .map_err(|d| Error::InvalidArgument(format!("version edit: {d}")))
    }

    fn check(&self) -> std::result::Result<(), String> {
        if let Some(s) = self.last_sequence {
            check_sequence(s)?;
        }
        for &(level, _) in &self.deleted_files {
            check_level(level)?;
        }
        for (level, f) in &self.new_files {
            check_level(*level)?;
            check_file(f)?;
        }
        for p in &self.key_predictions {
            check_prediction(p)?;
        }
        for (t, _) in &self.new_range_tombstones {
            check_range_tombstone(t)?;
        }
        for &(seq, _) in &self.range_tombstone_files {
            check_tombstone_seq(seq)?;
        }
        for (&id, ks) in &self.keyspaces {
            if id == 0 {
                return Err("keyspace section 0: the default keyspace has no section".into());
            }
            if ks.drop && ks.has_fields() {
                return Err(format!(
                    "keyspace {id}: a drop (tag 14) with other fields in its section"
                ));
            }
            if let Some(add) = &ks.add {
                check_keyspace_name(&add.name).map_err(|e| format!("keyspace {id}: {e}"))?;
            }
            ks.tree_edit()
                .check()
                .map_err(|e| format!("keyspace {id}: {e}"))?;
        }
        Ok(())
    }

    /// Decodes an edit encoded as in the module docs. `file` and
    /// `record_offset` (the offset of the log record holding `bytes`) only
    /// locate errors.
    ///
    /// Never panics, and allocates only for keys present in `bytes`.
    ///
    /// # Errors
    /// [`Error::Corruption`] at `record_offset` in `file`, whose detail gives
    /// the byte offset within `bytes` and what was wrong: truncated or
    /// over-long fields, an unknown tag, a repeated tag 1–4, or a value that
    /// breaks a rule of the module docs.
    pub fn decode(bytes: &[u8], file: &Path, record_offset: u64) -> Result<VersionEdit> {
        decode_fields(bytes).map_err(|e| {
            Error::corruption(
                file,
                record_offset,
                format!("version edit, byte {}: {}", e.offset, e.detail),
            )
        })
    }

    /// The format version of an encoded edit whose first field is tag 1,
    /// read without decoding the rest. Lets a reader report a too-new
    /// format rather than the unknown tags that format may bring.
    pub fn peek_format_version(bytes: &[u8]) -> Option<u32> {
        let mut d = Decoder::new(bytes);
        match d.varint() {
            Ok(TAG_FORMAT_VERSION) => d.varint32().ok(),
            _ => None,
        }
    }
}

/// Tags 5, 6, 9, 10 and 11 of one keyspace (the default's or a
/// section's), in that order, each list in its `Vec` order.
fn encode_tree_fields(
    out: &mut Vec<u8>,
    deleted_files: &[(u32, u64)],
    new_files: &[(u32, FileMetaData)],
    key_predictions: &[KeyPrediction],
    new_range_tombstones: &[(RangeTombstone, Vec<u64>)],
    range_tombstone_files: &[(SequenceNumber, u64)],
) {
    for &(level, number) in deleted_files {
        put_varint(out, TAG_DELETED_FILE);
        put_varint(out, u64::from(level));
        put_varint(out, number);
    }
    for (level, f) in new_files {
        put_varint(out, TAG_NEW_FILE);
        put_varint(out, u64::from(*level));
        put_varint(out, f.number);
        put_varint(out, f.file_size);
        put_length_prefixed(out, f.smallest.encoded());
        put_length_prefixed(out, f.largest.encoded());
        put_varint(out, f.num_entries);
        put_varint(out, f.num_tombstones);
    }
    for p in key_predictions {
        put_varint(out, TAG_KEY_PREDICTION);
        put_varint(out, p.output_level as u64);
        put_varint(out, p.input_tables as u64);
        put_varint(out, p.input_entries);
        put_varint(out, p.summed_distinct_keys);
        put_u64(out, p.predicted_distinct_keys.to_bits());
        put_u64(out, p.relative_std_error.to_bits());
        put_varint(out, p.distinct_input_keys);
        put_varint(out, p.distinct_output_keys);
        put_varint(out, p.finished_at_unix_secs);
    }
    for (t, files) in new_range_tombstones {
        put_varint(out, TAG_NEW_RANGE_TOMBSTONE);
        put_varint(out, t.seq.get());
        put_length_prefixed(out, &t.start);
        put_length_prefixed(out, t.end.as_deref().unwrap_or_default());
        put_varint(out, files.len() as u64);
        for &n in files {
            put_varint(out, n);
        }
    }
    for &(seq, n) in range_tombstone_files {
        put_varint(out, TAG_RANGE_TOMBSTONE_FILE);
        put_varint(out, seq.get());
        put_varint(out, n);
    }
}

/// A decoding failure inside an edit.
struct EditError {
    offset: usize,
    detail: String,
}

impl From<DecodeError> for EditError {
    fn from(e: DecodeError) -> Self {
        EditError {
            offset: e.offset,
            detail: e.reason.to_string(),
        }
    }
}

fn decode_fields(bytes: &[u8]) -> std::result::Result<VersionEdit, EditError> {
    let mut d = Decoder::new(bytes);
    let mut edit = VersionEdit::default();
    // The keyspace the scoped fields belong to: `None` for the default
    // (until the first tag 12), else the id of the last tag 12.
    let mut section: Option<u32> = None;
    while !d.is_empty() {
        let at = d.position();
        let fail = |detail: String| EditError { offset: at, detail };
        let tag = d.varint()?;
        // A section dropping its keyspace holds nothing else (tag 14 last,
        // as written, or any scoped field after it).
        if let Some(id) = section {
            let dropped = edit.keyspaces.get(&id).is_some_and(|k| k.drop);
            if dropped && is_scoped(tag) {
                return Err(fail(format!(
                    "keyspace {id}: a drop (tag 14) with other fields in its section"
                )));
            }
        }
        match tag {
            TAG_FORMAT_VERSION => {
                let v = d.varint32()?;
                set_once(&mut edit.format_version, v, "format_version").map_err(fail)?;
            }
            TAG_NEXT_FILE_NUMBER => {
                let n = d.varint()?;
                set_once(&mut edit.next_file_number, n, "next_file_number").map_err(fail)?;
            }
            TAG_LAST_SEQUENCE => {
                let s = SequenceNumber(d.varint()?);
                check_sequence(s).map_err(fail)?;
                set_once(&mut edit.last_sequence, s, "last_sequence").map_err(fail)?;
            }
            TAG_USER_BYTES_FLUSHED => {
                let n = d.varint()?;
                set_once(&mut edit.user_bytes_flushed, n, "user_bytes_flushed").map_err(fail)?;
            }
            TAG_TABLE_BYTES_WRITTEN => {
                let n = d.varint()?;
                set_once(&mut edit.table_bytes_written, n, "table_bytes_written").map_err(fail)?;
            }
            TAG_NEXT_KEYSPACE_ID => {
                let n = d.varint32()?;
                set_once(&mut edit.next_keyspace_id, n, "next_keyspace_id").map_err(fail)?;
            }
            TAG_KEYSPACE_SECTION => {
                let id = d.varint32()?;
                if id == 0 {
                    return Err(fail(
                        "keyspace section 0: the default keyspace has no section".into(),
                    ));
                }
                if let Some(last) = edit.keyspaces.keys().next_back() {
                    if id <= *last {
                        return Err(fail(format!(
                            "keyspace section {id} repeated or out of order (after section \
                             {last}; sections are in ascending id)"
                        )));
                    }
                }
                edit.keyspaces.insert(id, KeyspaceEdit::default());
                section = Some(id);
            }
            TAG_ADD_KEYSPACE | TAG_DROP_KEYSPACE | TAG_KEYSPACE_OPTIONS => {
                let Some(id) = section else {
                    return Err(fail(format!(
                        "{} (tag {tag}) outside a keyspace section",
                        keyspace_tag_name(tag)
                    )));
                };
                let ks = edit.keyspaces.entry(id).or_default();
                match tag {
                    TAG_ADD_KEYSPACE => {
                        let name = text(&mut d, "keyspace name")?;
                        check_keyspace_name(&name)
                            .map_err(|e| fail(format!("keyspace {id}: {e}")))?;
                        let options = text(&mut d, "keyspace options")?;
                        set_once(&mut ks.add, KeyspaceAdd { name, options }, "add keyspace")
                            .map_err(|e| fail(format!("keyspace {id}: {e}")))?;
                    }
                    TAG_KEYSPACE_OPTIONS => {
                        let options = text(&mut d, "keyspace options")?;
                        set_once(&mut ks.options, options, "keyspace options")
                            .map_err(|e| fail(format!("keyspace {id}: {e}")))?;
                    }
                    _ => {
                        if ks.drop || ks.has_fields() {
                            return Err(fail(format!(
                                "keyspace {id}: a drop (tag 14) with other fields in its section"
                            )));
                        }
                        ks.drop = true;
                    }
                }
            }
            _ => {
                let mut scope = match section {
                    None => Scope {
                        log_number: &mut edit.log_number,
                        deleted_files: &mut edit.deleted_files,
                        new_files: &mut edit.new_files,
                        key_predictions: &mut edit.key_predictions,
                        new_range_tombstones: &mut edit.new_range_tombstones,
                        range_tombstone_files: &mut edit.range_tombstone_files,
                    },
                    Some(id) => {
                        let ks = edit.keyspaces.entry(id).or_default();
                        Scope {
                            log_number: &mut ks.log_number,
                            deleted_files: &mut ks.deleted_files,
                            new_files: &mut ks.new_files,
                            key_predictions: &mut ks.key_predictions,
                            new_range_tombstones: &mut ks.new_range_tombstones,
                            range_tombstone_files: &mut ks.range_tombstone_files,
                        }
                    }
                };
                decode_scoped(&mut d, tag, &mut scope).map_err(|e| match (e, section) {
                    (ScopedError::Field(e), _) => e,
                    (ScopedError::Rule(detail), None) => fail(detail),
                    (ScopedError::Rule(detail), Some(id)) => {
                        fail(format!("keyspace {id}: {detail}"))
                    }
                })?;
            }
        }
    }
    Ok(edit)
}

/// The scoped fields of the keyspace being decoded (the default's or a
/// section's).
struct Scope<'a> {
    log_number: &'a mut Option<u64>,
    deleted_files: &'a mut Vec<(u32, u64)>,
    new_files: &'a mut Vec<(u32, FileMetaData)>,
    key_predictions: &'a mut Vec<KeyPrediction>,
    new_range_tombstones: &'a mut Vec<(RangeTombstone, Vec<u64>)>,
    range_tombstone_files: &'a mut Vec<(SequenceNumber, u64)>,
}

/// Why a scoped field failed: its bytes (located), or a rule (located at
/// the field's tag by the caller).
enum ScopedError {
    Field(EditError),
    Rule(String),
}

impl From<DecodeError> for ScopedError {
    fn from(e: DecodeError) -> Self {
        ScopedError::Field(e.into())
    }
}

impl From<EditError> for ScopedError {
    fn from(e: EditError) -> Self {
        ScopedError::Field(e)
    }
}

/// True for the tags that apply to the current keyspace (DESIGN.md 12.8).
fn is_scoped(tag: u64) -> bool {
    matches!(
        tag,
        TAG_LOG_NUMBER
            | TAG_DELETED_FILE
            | TAG_NEW_FILE
            | TAG_KEY_PREDICTION
            | TAG_NEW_RANGE_TOMBSTONE
            | TAG_RANGE_TOMBSTONE_FILE
            | TAG_ADD_KEYSPACE
            | TAG_DROP_KEYSPACE
            | TAG_KEYSPACE_OPTIONS
    )
}

fn keyspace_tag_name(tag: u64) -> &'static str {
    match tag {
        TAG_ADD_KEYSPACE => "add keyspace",
        TAG_DROP_KEYSPACE => "drop keyspace",
        _ => "keyspace options",
    }
}

/// A length-prefixed UTF-8 string.
fn text(d: &mut Decoder<'_>, what: &str) -> std::result::Result<String, EditError> {
    let at = d.position();
    let raw = d.length_prefixed()?;
    String::from_utf8(raw.to_vec()).map_err(|_| EditError {
        offset: at,
        detail: format!("{what} is not UTF-8"),
    })
}

/// Decodes the scoped field `tag` (2, 5, 6, 9, 10 or 11) into `scope`.
fn decode_scoped(
    d: &mut Decoder<'_>,
    tag: u64,
    scope: &mut Scope<'_>,
) -> std::result::Result<(), ScopedError> {
    match tag {
        TAG_LOG_NUMBER => {
            let n = d.varint()?;
            set_once(scope.log_number, n, "log_number").map_err(ScopedError::Rule)?;
        }
        TAG_DELETED_FILE => {
            let level = d.varint32()?;
            check_level(level).map_err(ScopedError::Rule)?;
            let number = d.varint()?;
            scope.deleted_files.push((level, number));
        }
        TAG_NEW_FILE => {
            let level = d.varint32()?;
            check_level(level).map_err(ScopedError::Rule)?;
            let number = d.varint()?;
            let file_size = d.varint()?;
            let smallest = internal_key(d, "smallest")?;
            let largest = internal_key(d, "largest")?;
            let num_entries = d.varint()?;
            let num_tombstones = d.varint()?;
            let f = FileMetaData {
                number,
                file_size,
                smallest,
                largest,
                num_entries,
                num_tombstones,
            };
            check_file(&f).map_err(ScopedError::Rule)?;
            scope.new_files.push((level, f));
        }
        TAG_KEY_PREDICTION => {
            let output_level = d.varint32()?;
            check_level(output_level).map_err(ScopedError::Rule)?;
            let input_tables = usize::try_from(d.varint()?).map_err(|_| {
                ScopedError::Rule("key prediction: input tables overflow usize".into())
            })?;
            let p = KeyPrediction {
                output_level: output_level as usize,
                input_tables,
                input_entries: d.varint()?,
                summed_distinct_keys: d.varint()?,
                predicted_distinct_keys: f64::from_bits(d.u64()?),
                relative_std_error: f64::from_bits(d.u64()?),
                distinct_input_keys: d.varint()?,
                distinct_output_keys: d.varint()?,
                finished_at_unix_secs: d.varint()?,
            };
            check_prediction(&p).map_err(ScopedError::Rule)?;
            scope.key_predictions.push(p);
        }
        TAG_NEW_RANGE_TOMBSTONE => {
            let seq = SequenceNumber(d.varint()?);
            let start = d.length_prefixed()?.to_vec();
            let end = d.length_prefixed()?;
            let t = RangeTombstone {
                start,
                end: (!end.is_empty()).then(|| end.to_vec()),
                seq,
            };
            check_range_tombstone(&t).map_err(ScopedError::Rule)?;
            let n = d.varint()?;
            // Each number takes at least a byte: a huge count fails
            // below without a huge allocation.
            let mut files = Vec::with_capacity((n as usize).min(d.remaining()));
            for _ in 0..n {
                files.push(d.varint()?);
            }
            scope.new_range_tombstones.push((t, files));
        }
        TAG_RANGE_TOMBSTONE_FILE => {
            let seq = SequenceNumber(d.varint()?);
            check_tombstone_seq(seq).map_err(ScopedError::Rule)?;
            let n = d.varint()?;
            scope.range_tombstone_files.push((seq, n));
        }
        other => return Err(ScopedError::Rule(format!("unknown tag {other}"))),
    }
    Ok(())
}

fn set_once<T>(slot: &mut Option<T>, v: T, name: &str) -> std::result::Result<(), String> {
    if slot.is_some() {
        return Err(format!("{name} appears twice"));
    }
    *slot = Some(v);
    Ok(())
}

fn internal_key(d: &mut Decoder<'_>, which: &str) -> std::result::Result<InternalKey, EditError> {
    let at = d.position();
    let raw = d.length_prefixed()?;
    InternalKey::from_encoded(raw.to_vec()).ok_or_else(|| EditError {
        offset: at,
        detail: format!(
            "{which} key is not an internal key ({} bytes: shorter than the 8-byte trailer or \
             an unknown value type)",
            raw.len()
        ),
    })
}

fn check_level(level: u32) -> std::result::Result<(), String> {
    if level >= MAX_LEVELS {
        return Err(format!("level {level} is not below {MAX_LEVELS}"));
    }
    Ok(())
}

fn check_sequence(s: SequenceNumber) -> std::result::Result<(), String> {
    if s > SequenceNumber::MAX {
        return Err(format!("last_sequence {s} exceeds {}", SequenceNumber::MAX));
    }
    Ok(())
}

fn check_prediction(p: &KeyPrediction) -> std::result::Result<(), String> {
    check_level(u32::try_from(p.output_level).unwrap_or(u32::MAX))?;
    let fine = |x: f64| x.is_finite() && x >= 0.0;
    if !fine(p.predicted_distinct_keys) || !fine(p.relative_std_error) {
        return Err(format!(
            "key prediction: predicted {} and relative error {} must be finite and non-negative",
            p.predicted_distinct_keys, p.relative_std_error
        ));
    }
    Ok(())
}

fn check_tombstone_seq(s: SequenceNumber) -> std::result::Result<(), String> {
    if s == SequenceNumber::ZERO || s > SequenceNumber::MAX {
        return Err(format!(
            "range tombstone sequence {s} is not in 1..={}",
            SequenceNumber::MAX
        ));
    }
    Ok(())
}

fn check_range_tombstone(t: &RangeTombstone) -> std::result::Result<(), String> {
    check_tombstone_seq(t.seq)?;
    let longest = MAX_KEY_LEN + 1;
    if t.start.len() > longest || t.end.as_ref().is_some_and(|e| e.len() > longest) {
        return Err(format!(
            "range tombstone {}: a bound is longer than {longest} bytes",
            t.seq
        ));
    }
    if t.end.as_ref().is_some_and(|e| e <= &t.start) {
        return Err(format!(
            "range tombstone {}: its end does not sort after its start",
            t.seq
        ));
    }
    Ok(())
}

fn check_file(f: &FileMetaData) -> std::result::Result<(), String> {
    if f.smallest > f.largest {
        return Err(format!(
            "file {}: smallest key {:?} sorts after largest key {:?}",
            f.number, f.smallest, f.largest
        ));
    }
    if f.num_tombstones > f.num_entries {
        return Err(format!(
            "file {}: {} tombstones exceed {} entries",
            f.number, f.num_tombstones, f.num_entries
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
