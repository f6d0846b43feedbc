//! [`WriteBatch`]: a group of puts and deletes applied atomically, and its
//! encoding, which is exactly the payload of one WAL record.
//!
//! ```text
//! +-----------+------------+---------------------------------------------+
//! | seq: u64  | count: u32 | count records                               |
//! | LE        | LE         |                                             |
//! +-----------+------------+---------------------------------------------+
//! record, put:    0x01 | varint key_len | key | varint value_len | value
//! record, delete: 0x00 | varint key_len | key
//! record, delete_range:
//!                 0x02 | varint start_len | start | varint end_len | end
//! in a keyspace other than the default (id 0):
//!   delete:       0x10 | varint keyspace | varint key_len | key
//!   put:          0x11 | varint keyspace | varint key_len | key | varint value_len | value
//!   delete_range: 0x12 | varint keyspace | varint start_len | start | varint end_len | end
//! ```
//!
//! `seq` is the sequence number of the first record; record `i` gets
//! `seq + i`. The tag byte is the [`ValueType`] discriminant for the
//! default keyspace, and `0x10 |` that discriminant for an op in another
//! keyspace, whose varint id follows the tag: 1 to `u32::MAX`, never 0, so
//! that every op has one encoding (DESIGN.md 12.3). Any other tag is
//! corruption ("unknown record type"). Recovery applies an op to its
//! keyspace if the WAL is not older than that keyspace's log number, and
//! treats an op naming a keyspace that is not live as corruption
//! (DESIGN.md 8). A range
//! deletion covers `start <= key < end`; an empty `end` means no upper
//! bound (a real end is never empty, since it must exceed `start`). Its
//! start and end may be one byte longer than a key ([`MAX_KEY_LEN`] + 1),
//! since the range `..=k` ends at `k` followed by a zero byte.

use crate::key::{SequenceNumber, ValueType, MAX_KEY_LEN, MAX_VALUE_LEN};
use crate::key_range::KeyRange;
use crate::range_tombstone::half_open;
use crate::util::coding::{put_length_prefixed, put_varint, varint_len, Decoder};
use crate::{Error, Result};

/// Bytes of the batch header: sequence (8) + count (4).
pub const HEADER_LEN: usize = 12;

/// Largest encoded batch, header included, in bytes (4 GiB − 1): a batch
/// is the payload of one WAL record, whose length field is 32 bits
/// (DESIGN.md 12.2, 12.3). One put of the longest key and value
/// ([`MAX_KEY_LEN`], [`MAX_VALUE_LEN`]) always fits; several large ones
/// may not.
pub const MAX_BATCH_LEN: u64 = u32::MAX as u64;

/// Set in an op's tag when a varint keyspace id follows it (frozen on disk:
/// tags `0x10 | value type`, DESIGN.md 12.3). Without it, the op is the
/// default keyspace's (id 0).
const KEYSPACE_TAG_BIT: u8 = 0x10;

/// The tag and keyspace id of an op: `value_type`'s discriminant for the
/// default keyspace, which has no id on disk; else `0x10 |` it, then the
/// id as a varint.
fn put_tag(rep: &mut Vec<u8>, keyspace: u32, value_type: ValueType) {
    if keyspace == 0 {
        rep.push(value_type as u8);
    } else {
        rep.push(KEYSPACE_TAG_BIT | value_type as u8);
        put_varint(rep, u64::from(keyspace));
    }
}

/// Bytes the keyspace id adds to an op: none for the default keyspace.
fn keyspace_len(keyspace: u32) -> usize {
    if keyspace == 0 {
        0
    } else {
        varint_len(u64::from(keyspace))
    }
}

/// A set of updates applied atomically by [`crate::Db::write`]: after a crash
/// either all of them are visible or none is, and readers never see part of
/// a batch. Later updates to the same key win over earlier ones.
///
/// # Example
/// ```
/// let dir = tempfile::tempdir()?;
/// let db = siftdb::Db::open(dir.path())?;
/// let mut batch = siftdb::WriteBatch::new();
/// batch.put("from", "0")?;
/// batch.put("to", "100")?;
/// batch.delete("pending")?;
/// db.write(batch)?; // all three, or none after a crash
/// assert_eq!(db.get("to")?.as_deref(), Some(&b"100"[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
    /// The keyspaces other than the default the batch writes to, sorted,
    /// each once: what a commit checks and may rotate.
    keyspaces: Vec<u32>,
    /// The database instance of the keyspace handles it was given (0:
    /// none), so that a batch cannot mix two databases' keyspaces.
    instance: u64,
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "WriteBatch({} ops, {} bytes)",
            self.count,
            self.rep.len()
        )
    }
}

/// Checks a key and value length against the limits ([`MAX_KEY_LEN`] bytes
/// of key, [`MAX_VALUE_LEN`] bytes of value). Takes lengths so that the
/// limits can be tested without allocating 4 GiB.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the limit exceeded.
pub fn check_lengths(key_len: usize, value_len: u64) -> Result<()> {
    if key_len > MAX_KEY_LEN {
        return Err(Error::InvalidArgument(format!(
            "key of {key_len} bytes exceeds the limit of {MAX_KEY_LEN} bytes"
        )));
    }
    if value_len > MAX_VALUE_LEN {
        return Err(Error::InvalidArgument(format!(
            "value of {value_len} bytes exceeds the limit of {MAX_VALUE_LEN} bytes"
        )));
    }
    Ok(())
}

/// Checks that a batch of `batch_len` encoded bytes can take one more
/// record: a put of a `key_len`-byte key and a `value_len`-byte value, or a
/// delete if `value_len` is `None`, without passing [`MAX_BATCH_LEN`].
/// Takes lengths so that the limit can be tested without allocating 4 GiB.
///
/// # Errors
/// [`Error::InvalidArgument`] giving the size the batch would reach.
pub fn check_batch_room(batch_len: usize, key_len: usize, value_len: Option<u64>) -> Result<()> {
    let key = (1 + varint_len(key_len as u64) + key_len) as u64;
    let value = value_len.map_or(0, |v| varint_len(v) as u64 + v);
    let total = batch_len as u64 + key + value;
    if total > MAX_BATCH_LEN {
        return Err(Error::InvalidArgument(format!(
            "the write batch would be {total} bytes encoded, over the limit of \
             {MAX_BATCH_LEN} bytes (one WAL record); write the updates in smaller batches"
        )));
    }
    Ok(())
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch::with_capacity(0)
    }

    /// An empty batch with room for `bytes` bytes of updates before it
    /// reallocates (each put takes its key and value plus up to 21 bytes of
    /// framing).
    pub fn with_capacity(bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(HEADER_LEN + bytes);
        rep.resize(HEADER_LEN, 0);
        WriteBatch {
            rep,
            count: 0,
            keyspaces: Vec::new(),
            instance: 0,
        }
    }

    /// Adds `key = value`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the key exceeds [`MAX_KEY_LEN`] bytes,
    /// the value [`MAX_VALUE_LEN`] bytes, or the batch would pass [`MAX_BATCH_LEN`]
    /// encoded bytes; the batch is left unchanged.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_to(0, key.as_ref(), value.as_ref())
    }

    /// Adds `key = value` in keyspace `ks`. A batch may hold writes to
    /// any keyspaces of one database; the database's `write` applies them
    /// all atomically, in one WAL record.
    ///
    /// # Errors
    /// As [`WriteBatch::put`], the keyspace id's bytes counted in the
    /// batch's size; [`Error::InvalidArgument`] if the batch already
    /// holds writes to a keyspace of another database.
    pub fn put_in(
        &mut self,
        ks: &crate::Keyspace,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.check_instance(ks)?;
        self.put_to(ks.id(), key.as_ref(), value.as_ref())
    }

    /// Adds a deletion of `key` in keyspace `ks`; see
    /// [`WriteBatch::put_in`].
    ///
    /// # Errors
    /// As [`WriteBatch::delete`] and [`WriteBatch::put_in`].
    pub fn delete_in(&mut self, ks: &crate::Keyspace, key: impl AsRef<[u8]>) -> Result<()> {
        self.check_instance(ks)?;
        self.delete_to(ks.id(), key.as_ref())
    }

    /// Adds a deletion of every key of `range` in keyspace `ks`; see
    /// [`WriteBatch::put_in`].
    ///
    /// # Errors
    /// As [`WriteBatch::delete_range`] and [`WriteBatch::put_in`].
    pub fn delete_range_in(&mut self, ks: &crate::Keyspace, range: impl KeyRange) -> Result<()> {
        self.check_instance(ks)?;
        self.delete_range_to(ks.id(), range)
    }

    /// Refuses a keyspace of another database than the batch's others.
    fn check_instance(&mut self, ks: &crate::Keyspace) -> Result<()> {
        match self.instance {
            0 => {
                self.instance = ks.instance();
                Ok(())
            }
            i if i == ks.instance() => Ok(()),
            _ => Err(Error::InvalidArgument(format!(
                "keyspace \"{}\" belongs to another database than the batch's other writes",
                ks.name()
            ))),
        }
    }

    /// The database instance of the keyspaces the batch was given (0 if
    /// none: the batch writes only to the default keyspace, of any
    /// database).
    pub(crate) fn instance(&self) -> u64 {
        self.instance
    }

    /// The keyspaces other than the default the batch writes to, sorted.
    pub(crate) fn keyspaces(&self) -> &[u32] {
        &self.keyspaces
    }

    /// Notes that the batch writes to keyspace `keyspace`.
    fn touch(&mut self, keyspace: u32) {
        if keyspace != 0 {
            if let Err(i) = self.keyspaces.binary_search(&keyspace) {
                self.keyspaces.insert(i, keyspace);
            }
        }
    }

    /// Adds `key = value` in keyspace `keyspace` (0: the default, as
    /// [`WriteBatch::put`]). The id is not checked against any database:
    /// the `Keyspace` handle of [`WriteBatch::put_in`] is.
    ///
    /// # Errors
    /// As [`WriteBatch::put`], the id's bytes counted in the batch's size.
    pub(crate) fn put_to(&mut self, keyspace: u32, key: &[u8], value: &[u8]) -> Result<()> {
        check_lengths(key.len(), value.len() as u64)?;
        check_batch_room(
            self.rep.len() + keyspace_len(keyspace),
            key.len(),
            Some(value.len() as u64),
        )?;
        // One reallocation for the whole update, not one per doubling.
        self.rep
            .reserve(1 + 3 * 10 + keyspace_len(keyspace) + key.len() + value.len());
        put_tag(&mut self.rep, keyspace, ValueType::Value);
        put_length_prefixed(&mut self.rep, key);
        put_length_prefixed(&mut self.rep, value);
        self.count += 1;
        self.touch(keyspace);
        Ok(())
    }

    /// Adds a deletion of `key` (a tombstone; deleting an absent key is not
    /// an error).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the key exceeds 65,535 bytes or the
    /// batch would pass [`MAX_BATCH_LEN`] encoded bytes; the batch is left
    /// unchanged.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_to(0, key.as_ref())
    }

    /// Adds a deletion of `key` in keyspace `keyspace` (0: the default, as
    /// [`WriteBatch::delete`]); see [`WriteBatch::put_to`].
    ///
    /// # Errors
    /// As [`WriteBatch::delete`].
    pub(crate) fn delete_to(&mut self, keyspace: u32, key: &[u8]) -> Result<()> {
        check_lengths(key.len(), 0)?;
        check_batch_room(self.rep.len() + keyspace_len(keyspace), key.len(), None)?;
        put_tag(&mut self.rep, keyspace, ValueType::Deletion);
        put_length_prefixed(&mut self.rep, key);
        self.count += 1;
        self.touch(keyspace);
        Ok(())
    }

    /// Adds a deletion of every key in `range` (a range tombstone): after
    /// the batch, no key of the range has a value until it is written
    /// again, later in this batch or after it. An empty range (`"b".."b"`)
    /// adds nothing. Deleting a range costs one record whatever it holds;
    /// compaction removes the covered data later (DESIGN.md 3.7).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if a bound is longer than [`MAX_KEY_LEN`]
    /// bytes, the range is inverted (start after end), or the batch would
    /// pass [`MAX_BATCH_LEN`] encoded bytes; the batch is left unchanged.
    ///
    /// # Example
    /// ```
    /// let dir = tempfile::tempdir()?;
    /// let db = siftdb::Db::open(dir.path())?;
    /// for k in ["a", "b", "c", "d"] {
    ///     db.put(k, "v")?;
    /// }
    /// let mut batch = siftdb::WriteBatch::new();
    /// batch.delete_range("b"..="c")?;
    /// batch.put("c", "again")?; // later in the batch: survives
    /// db.write(batch)?;
    /// let keys: Vec<siftdb::Slice> = db.iter().keys().collect::<Result<_, _>>()?;
    /// assert_eq!(keys, ["a", "c", "d"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delete_range(&mut self, range: impl KeyRange) -> Result<()> {
        self.delete_range_to(0, range)
    }

    /// Adds a deletion of every key in `range` in keyspace `keyspace` (0:
    /// the default, as [`WriteBatch::delete_range`]); see
    /// [`WriteBatch::put_to`].
    ///
    /// # Errors
    /// As [`WriteBatch::delete_range`].
    pub(crate) fn delete_range_to(&mut self, keyspace: u32, range: impl KeyRange) -> Result<()> {
        let (lo, hi) = range.into_bounds();
        for b in [&lo, &hi] {
            if let std::ops::Bound::Included(k) | std::ops::Bound::Excluded(k) = b {
                check_lengths(k.len(), 0)?;
            }
        }
        if crate::key_range::inverted(&lo, &hi) {
            return Err(Error::InvalidArgument(
                "delete_range: the range starts after it ends".into(),
            ));
        }
        let Some((start, end)) = half_open(lo, hi) else {
            return Ok(()); // empty: nothing to delete
        };
        let end = end.unwrap_or_default();
        check_batch_room(
            self.rep.len() + keyspace_len(keyspace),
            start.len(),
            Some(end.len() as u64),
        )?;
        put_tag(&mut self.rep, keyspace, ValueType::RangeDeletion);
        put_length_prefixed(&mut self.rep, &start);
        put_length_prefixed(&mut self.rep, &end);
        self.count += 1;
        self.touch(keyspace);
        Ok(())
    }

    /// Number of updates in the batch.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// True if the batch holds no update.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Removes every update.
    pub fn clear(&mut self) {
        self.rep.truncate(HEADER_LEN);
        self.count = 0;
        self.keyspaces.clear();
        self.instance = 0;
    }

    /// Encoded size in bytes, header included.
    pub fn encoded_len(&self) -> usize {
        self.rep.len()
    }

    /// Writes `first_seq` and the count into the header, for
    /// [`WriteBatch::encoded`].
    pub(crate) fn stamp(&mut self, first_seq: SequenceNumber) {
        self.rep[..8].copy_from_slice(&first_seq.0.to_le_bytes());
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
    }

    /// The WAL payload as last stamped.
    pub(crate) fn encoded(&self) -> &[u8] {
        &self.rep
    }

    /// Iterates the updates in order.
    pub fn iter(&self) -> impl Iterator<Item = BatchOp<'_>> {
        let mut d = Decoder::new(&self.rep[HEADER_LEN..]);
        // The batch was built by put/delete/delete_range, in memory, so it
        // always decodes: a failure is a bug in those, never bad input.
        // Not skipped (`filter_map(.. .ok())` once did): an op lost here
        // would be a write silently lost.
        (0..self.count).map(move |_| match decode_op(&mut d) {
            Ok(op) => op,
            Err(e) => unreachable!("a write batch built in memory fails to decode: {e}"),
        })
    }
}

/// One update of a batch, borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOp<'a> {
    /// The keyspace the update is in: 0 for the default keyspace (tags
    /// 0–2), else the id after a tag 0x10–0x12 (DESIGN.md 12.3).
    pub keyspace: u32,
    /// Put, delete or range deletion.
    pub value_type: ValueType,
    /// The user key; for a range deletion, the range's first key.
    pub key: &'a [u8],
    /// The value; empty for a delete; for a range deletion, the range's
    /// exclusive end, empty if the range has none.
    pub value: &'a [u8],
}

fn decode_op<'a>(d: &mut Decoder<'a>) -> std::result::Result<BatchOp<'a>, &'static str> {
    let tag = d.u8().map_err(|e| e.reason)?;
    let (keyspace, value_type) = if tag & !0x03 == KEYSPACE_TAG_BIT {
        let value_type = ValueType::try_from(tag & 0x03).map_err(|_| "unknown record type")?;
        let id = d.varint().map_err(|e| e.reason)?;
        if id == 0 {
            return Err("keyspace op naming keyspace 0 (the default keyspace's ops use tags 0-2)");
        }
        let id = u32::try_from(id).map_err(|_| "keyspace id above 4294967295")?;
        (id, value_type)
    } else {
        let value_type = ValueType::try_from(tag).map_err(|_| "unknown record type")?;
        (0, value_type)
    };
    let key = d.length_prefixed().map_err(|e| e.reason)?;
    let key_limit = match value_type {
        ValueType::RangeDeletion => MAX_KEY_LEN + 1,
        _ => MAX_KEY_LEN,
    };
    if key.len() > key_limit {
        return Err("key longer than 65535 bytes");
    }
    let value = match value_type {
        ValueType::Value => d.length_prefixed().map_err(|e| e.reason)?,
        ValueType::Deletion => &[],
        ValueType::RangeDeletion => {
            let end = d.length_prefixed().map_err(|e| e.reason)?;
            if end.len() > MAX_KEY_LEN + 1 {
                return Err("range deletion end longer than 65536 bytes");
            }
            if !end.is_empty() && end <= key {
                return Err("range deletion whose end does not follow its start");
            }
            end
        }
    };
    Ok(BatchOp {
        keyspace,
        value_type,
        key,
        value,
    })
}

/// A batch decoded from a WAL record payload.
#[derive(Debug)]
pub struct DecodedBatch<'a> {
    /// Sequence number of the first update.
    pub first_seq: SequenceNumber,
    /// The updates, in order.
    pub ops: Vec<BatchOp<'a>>,
}

/// Decodes a WAL payload. Never panics.
///
/// # Errors
/// A static description of the first malformed field (the caller adds the
/// file and offset): short header, unknown tag, bad length, trailing bytes,
/// or a sequence range overflowing 56 bits.
pub fn decode_batch(payload: &[u8]) -> std::result::Result<DecodedBatch<'_>, &'static str> {
    let mut d = Decoder::new(payload);
    let seq = d.u64().map_err(|_| "batch header too short")?;
    let count = d.u32().map_err(|_| "batch header too short")?;
    if seq == 0 || seq.saturating_add(u64::from(count)) > SequenceNumber::MAX.0 + 1 {
        return Err("batch sequence number out of range");
    }
    // Each op takes at least 2 bytes, so a huge count fails fast below
    // without a huge allocation.
    let mut ops = Vec::with_capacity((count as usize).min(d.remaining() / 2));
    for _ in 0..count {
        ops.push(decode_op(&mut d)?);
    }
    if !d.is_empty() {
        return Err("trailing bytes after batch records");
    }
    Ok(DecodedBatch {
        first_seq: SequenceNumber(seq),
        ops,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn golden_encoding() {
        let mut b = WriteBatch::new();
        b.put("k", "v1").unwrap();
        b.delete("j").unwrap();
        b.stamp(SequenceNumber(5));
        let bytes = b.encoded().to_vec();
        assert_eq!(
            bytes,
            [
                5, 0, 0, 0, 0, 0, 0, 0, // seq
                2, 0, 0, 0, // count
                1, 1, b'k', 2, b'v', b'1', // put k=v1
                0, 1, b'j', // delete j
            ]
        );
        let d = decode_batch(&bytes).unwrap();
        assert_eq!(d.first_seq, SequenceNumber(5));
        assert_eq!(d.ops, b.iter().collect::<Vec<_>>());
        assert_eq!(d.ops[1].value_type, ValueType::Deletion);
    }

    #[test]
    fn golden_encoding_of_range_deletions() {
        let mut b = WriteBatch::new();
        b.delete_range("a".."c").unwrap();
        b.delete_range("x"..).unwrap();
        b.delete_range("m"..="m").unwrap();
        b.delete_range("q".."q").unwrap(); // empty: nothing
        assert_eq!(b.len(), 3);
        b.stamp(SequenceNumber(9));
        let bytes = b.encoded().to_vec();
        assert_eq!(
            bytes,
            [
                9, 0, 0, 0, 0, 0, 0, 0, // seq
                3, 0, 0, 0, // count
                2, 1, b'a', 1, b'c', // [a, c)
                2, 1, b'x', 0, // [x, no end)
                2, 1, b'm', 2, b'm', 0, // [m, m\0): m alone
            ]
        );
        let d = decode_batch(&bytes).unwrap();
        assert_eq!(d.ops, b.iter().collect::<Vec<_>>());
        assert_eq!(d.ops[1].value_type, ValueType::RangeDeletion);
        assert_eq!((d.ops[1].key, d.ops[1].value), (&b"x"[..], &b""[..]));
    }

    #[test]
    fn bad_range_deletions_are_refused() {
        let mut b = WriteBatch::new();
        assert!(matches!(
            b.delete_range("c".."a"),
            Err(Error::InvalidArgument(m)) if m.contains("starts after it ends")
        ));
        let long = vec![b'k'; MAX_KEY_LEN + 1];
        assert!(matches!(
            b.delete_range(&long[..]..),
            Err(Error::InvalidArgument(_))
        ));
        assert!(b.is_empty());
        // The longest key's inclusive end is one byte longer, and decodes.
        let longest = vec![b'k'; MAX_KEY_LEN];
        b.delete_range(..=&longest[..]).unwrap();
        b.stamp(SequenceNumber(1));
        assert_eq!(
            decode_batch(b.encoded()).unwrap().ops[0].value.len(),
            MAX_KEY_LEN + 1
        );
        // A payload whose end does not follow its start is malformed.
        let mut bad = vec![1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
        bad.extend_from_slice(&[2, 1, b'c', 1, b'a']);
        assert_eq!(
            decode_batch(&bad).unwrap_err(),
            "range deletion whose end does not follow its start"
        );
    }

    #[test]
    fn limits_are_checked_by_length() {
        assert!(check_lengths(MAX_KEY_LEN, MAX_VALUE_LEN).is_ok());
        assert!(matches!(
            check_lengths(MAX_KEY_LEN + 1, 0),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            check_lengths(0, MAX_VALUE_LEN + 1),
            Err(Error::InvalidArgument(_))
        ));
        let mut b = WriteBatch::new();
        assert!(b.put(vec![0u8; MAX_KEY_LEN + 1], "v").is_err());
        assert!(b.delete(vec![0u8; MAX_KEY_LEN + 1]).is_err());
        assert!(b.is_empty());
        assert_eq!(b.encoded_len(), HEADER_LEN);
        b.put(vec![7u8; MAX_KEY_LEN], "").unwrap();
        assert_eq!(b.len(), 1);
    }

    /// Found by a new-user trial: a put of a value under the value limit
    /// (then `u32::MAX`) made a batch too long for one WAL record, which
    /// `Db::write` found only when appending, and treated as a failed WAL
    /// write (read-only). Two large values still can.
    #[test]
    fn a_batch_is_bounded_by_one_wal_record() {
        let empty = HEADER_LEN;
        // One put of the longest key and value fits an empty batch.
        assert!(check_batch_room(empty, MAX_KEY_LEN, Some(MAX_VALUE_LEN)).is_ok());
        // A put: tag, 1-byte key length, 1-byte key, 5-byte value length.
        let fits = MAX_BATCH_LEN - (empty as u64 + 1 + 1 + 1 + 5);
        assert!(check_batch_room(empty, 1, Some(fits)).is_ok());
        let e = check_batch_room(empty, 1, Some(fits + 1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid argument: the write batch would be 4294967296 bytes encoded, over the \
             limit of 4294967295 bytes (one WAL record); write the updates in smaller batches"
        );
        // A delete: tag, 3-byte key length for 65,535 bytes, key.
        let full = MAX_BATCH_LEN as usize - (1 + 3 + MAX_KEY_LEN);
        assert!(check_batch_room(full, MAX_KEY_LEN, None).is_ok());
        assert!(check_batch_room(full + 1, MAX_KEY_LEN, None).is_err());
        // What put and delete count matches the encoding.
        let mut b = WriteBatch::new();
        b.put(vec![1u8; 300], vec![2u8; 200]).unwrap();
        b.delete(vec![3u8; 130]).unwrap();
        assert_eq!(
            b.encoded_len(),
            empty + (1 + 2 + 300 + 2 + 200) + (1 + 2 + 130)
        );
    }

    /// DESIGN.md 12.3: put k=v (default), put a=b in keyspace 3 and delete
    /// a in keyspace 3, at sequence 7.
    #[test]
    fn golden_encoding_of_keyspace_ops() {
        let mut b = WriteBatch::new();
        b.put("k", "v").unwrap();
        b.put_to(3, b"a", b"b").unwrap();
        b.delete_to(3, b"a").unwrap();
        b.stamp(SequenceNumber(7));
        #[rustfmt::skip]
        let expected = [
            0x07, 0, 0, 0, 0, 0, 0, 0, // seq
            0x03, 0, 0, 0, // count
            0x01, 0x01, b'k', 0x01, b'v', // put k=v, default keyspace
            0x11, 0x03, 0x01, b'a', 0x01, b'b', // put a=b in keyspace 3
            0x10, 0x03, 0x01, b'a', // delete a in keyspace 3
        ];
        assert_eq!(b.encoded(), expected);
        let d = decode_batch(&expected).unwrap();
        assert_eq!(d.ops, b.iter().collect::<Vec<_>>());
        let got: Vec<_> = d
            .ops
            .iter()
            .map(|o| (o.keyspace, o.value_type, o.key, o.value))
            .collect();
        assert_eq!(
            got,
            [
                (0, ValueType::Value, &b"k"[..], &b"v"[..]),
                (3, ValueType::Value, b"a", b"b"),
                (3, ValueType::Deletion, b"a", b""),
            ]
        );
        // A range deletion in keyspace 300 (a two-byte id); u32::MAX fits.
        let mut r = WriteBatch::new();
        r.delete_range_to(300, "a".."c").unwrap();
        r.put_to(u32::MAX, b"", b"").unwrap();
        r.stamp(SequenceNumber(1));
        assert_eq!(
            &r.encoded()[HEADER_LEN..],
            [
                0x12, 0xac, 0x02, 0x01, b'a', 0x01, b'c', // [a, c) in 300
                0x11, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x00, // "" = "" in u32::MAX
            ]
        );
        let d = decode_batch(r.encoded()).unwrap();
        assert_eq!(
            (d.ops[0].keyspace, d.ops[0].value_type, d.ops[0].value),
            (300, ValueType::RangeDeletion, &b"c"[..])
        );
        assert_eq!(d.ops[1].keyspace, u32::MAX);
    }

    #[test]
    fn the_default_keyspace_encodes_as_before() {
        // Keyspace 0 through the `_in` encoders is byte-identical to the
        // plain calls: tags 0-2, no id.
        let (mut plain, mut zero) = (WriteBatch::new(), WriteBatch::new());
        plain.put("k", "v1").unwrap();
        plain.delete("j").unwrap();
        plain.delete_range("a".."c").unwrap();
        zero.put_to(0, b"k", b"v1").unwrap();
        zero.delete_to(0, b"j").unwrap();
        zero.delete_range_to(0, "a".."c").unwrap();
        assert_eq!(plain, zero);
        assert!(plain.iter().all(|op| op.keyspace == 0));
    }

    #[test]
    fn the_keyspace_id_counts_toward_the_batch_limit() {
        let mut b = WriteBatch::new();
        b.put_to(300, b"a", b"b").unwrap();
        b.delete_to(u32::MAX, b"c").unwrap();
        assert_eq!(b.encoded_len(), HEADER_LEN + (1 + 2 + 2 + 2) + (1 + 5 + 2));
    }

    /// A batch header at sequence 1 holding `count` ops, then `ops`.
    fn payload(count: u32, ops: &[u8]) -> Vec<u8> {
        let mut p = vec![1, 0, 0, 0, 0, 0, 0, 0];
        p.extend_from_slice(&count.to_le_bytes());
        p.extend_from_slice(ops);
        p
    }

    #[test]
    fn a_keyspace_op_naming_keyspace_0_is_refused() {
        // Keyspace 0 has one encoding: tag 1, not 0x11 then id 0.
        let e = decode_batch(&payload(1, &[0x11, 0x00, 0x01, b'a', 0x01, b'b'])).unwrap_err();
        assert_eq!(
            e,
            "keyspace op naming keyspace 0 (the default keyspace's ops use tags 0-2)"
        );
        assert!(decode_batch(&payload(1, &[0x11, 0x01, 0x01, b'a', 0x01, b'b'])).is_ok());
    }

    #[test]
    fn a_keyspace_id_above_u32_is_refused() {
        // 2^32 as a varint.
        let e = decode_batch(&payload(
            1,
            &[0x10, 0x80, 0x80, 0x80, 0x80, 0x10, 0x01, b'a'],
        ))
        .unwrap_err();
        assert_eq!(e, "keyspace id above 4294967295");
        // u32::MAX itself is an id.
        let max = payload(1, &[0x10, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01, b'a']);
        assert_eq!(decode_batch(&max).unwrap().ops[0].keyspace, u32::MAX);
    }

    #[test]
    fn tags_beside_the_keyspace_ops_stay_unknown() {
        for tag in [0x03, 0x0f, 0x13, 0x14, 0x20, 0x30, 0x90, 0xff] {
            let e = decode_batch(&payload(1, &[tag, 0x01, 0x01, b'a'])).unwrap_err();
            assert_eq!(e, "unknown record type", "tag {tag:#x}");
        }
        // A keyspace op whose id or fields are cut off.
        assert!(decode_batch(&payload(1, &[0x10])).is_err());
        assert!(decode_batch(&payload(1, &[0x10, 0x80])).is_err());
        assert!(decode_batch(&payload(1, &[0x12, 0x02, 0x01, b'c', 0x01, b'a'])).is_err());
    }

    fn arb_ops() -> impl Strategy<Value = Vec<(u32, u8, Vec<u8>, Vec<u8>)>> {
        let keyspace = prop_oneof![Just(0u32), 1..4u32, Just(u32::MAX), any::<u32>()];
        proptest::collection::vec(
            (
                keyspace,
                0..3u8,
                proptest::collection::vec(any::<u8>(), 0..6),
                proptest::collection::vec(any::<u8>(), 0..6),
            ),
            0..8,
        )
    }

    fn build(ops: &[(u32, u8, Vec<u8>, Vec<u8>)]) -> WriteBatch {
        let mut b = WriteBatch::new();
        for (ks, kind, k, v) in ops {
            match kind {
                0 => b.delete_to(*ks, k).unwrap(),
                1 => b.put_to(*ks, k, v).unwrap(),
                _ => b.delete_range_to(*ks, &k[..]..=&v[..]).unwrap_or(()),
            }
        }
        b.stamp(SequenceNumber(42));
        b
    }

    proptest! {
        #[test]
        fn keyspace_ops_round_trip(ops in arb_ops()) {
            let b = build(&ops);
            let d = decode_batch(b.encoded()).unwrap();
            prop_assert_eq!(d.first_seq, SequenceNumber(42));
            prop_assert_eq!(&d.ops, &b.iter().collect::<Vec<_>>());
            // Each put and delete kept its keyspace, key and value.
            let simple: Vec<_> = ops.iter().filter(|o| o.1 < 2).collect();
            let decoded: Vec<_> = d.ops.iter().filter(|o| o.value_type != ValueType::RangeDeletion).collect();
            prop_assert_eq!(simple.len(), decoded.len());
            for (o, op) in simple.iter().zip(decoded) {
                prop_assert_eq!(op.keyspace, o.0);
                prop_assert_eq!(op.key, &o.2[..]);
                prop_assert_eq!(op.value, if o.1 == 1 { &o.3[..] } else { &[][..] });
            }
        }

        #[test]
        fn mutated_keyspace_batches_never_panic(
            ops in arb_ops(),
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
            cut in any::<usize>(),
        ) {
            let mut bytes = build(&ops).encoded().to_vec();
            for (i, x) in flips {
                let i = i % bytes.len();
                bytes[i] = x;
            }
            bytes.truncate(cut % (bytes.len() + 1));
            if let Ok(d) = decode_batch(&bytes) {
                // Whatever decodes is a batch the encoders can write again,
                // keyspaces included.
                let mut again = WriteBatch::new();
                for op in &d.ops {
                    match op.value_type {
                        ValueType::Deletion => again.delete_to(op.keyspace, op.key).unwrap(),
                        ValueType::Value => again.put_to(op.keyspace, op.key, op.value).unwrap(),
                        ValueType::RangeDeletion if op.value.is_empty() => {
                            again.delete_range_to(op.keyspace, op.key..).unwrap()
                        }
                        ValueType::RangeDeletion => {
                            again.delete_range_to(op.keyspace, op.key..op.value).unwrap()
                        }
                    }
                }
                again.stamp(d.first_seq);
                prop_assert_eq!(&decode_batch(again.encoded()).unwrap().ops, &d.ops);
            }
        }
    }

    #[test]
    fn malformed_payloads_are_errors() {
        assert!(decode_batch(&[1, 2, 3]).is_err());
        let mut b = WriteBatch::new();
        b.put("a", "b").unwrap();
        b.stamp(SequenceNumber(1));
        let good = b.encoded().to_vec();
        for cut in 0..good.len() {
            assert!(decode_batch(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut zero_seq = good.clone();
        zero_seq[..8].fill(0);
        assert!(decode_batch(&zero_seq).is_err());
        let mut huge_count = good.clone();
        huge_count[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_batch(&huge_count).is_err());
        let mut trailing = good;
        trailing.push(0);
        assert!(decode_batch(&trailing).is_err());
    }
}
