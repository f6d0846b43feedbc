//! [`BlockBuilder`]: encodes sorted entries into the prefix-compressed block
//! format shared by data, index and properties blocks (see
//! [`crate::sstable::format`]).

use crate::util::coding::{put_u32, put_varint, varint_len};

/// Largest block contents accepted, in bytes: restart offsets are `u32`.
pub const MAX_BLOCK_LEN: u64 = u32::MAX as u64;

/// Builds one block. Typical use: [`add`](Self::add) entries, then
/// [`finish`](Self::finish) to get the bytes, then [`reset`](Self::reset) to
/// start the next block.
///
/// REQUIRES: keys are added in the block's sort order (internal-key order
/// for data and index blocks, bytewise for the properties block). The
/// builder does not check it; [`crate::sstable::TableBuilder`] does.
#[derive(Debug, Clone)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    /// Entries since the last restart point.
    counter: usize,
    last_key: Vec<u8>,
    num_entries: usize,
    finished: bool,
}

impl BlockBuilder {
    /// An empty builder that starts a restart point every
    /// `restart_interval` entries (values below 1 are treated as 1).
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: Vec::new(),
            restart_interval: restart_interval.max(1),
            counter: 0,
            last_key: Vec::new(),
            num_entries: 0,
            finished: false,
        }
    }

    /// Bytes [`add`](Self::add) would append for an entry of these lengths
    /// if it shared `shared` key bytes with its predecessor.
    pub fn entry_len(shared: usize, key_len: usize, value_len: usize) -> u64 {
        let unshared = key_len - shared.min(key_len);
        (varint_len(shared as u64) + varint_len(unshared as u64) + varint_len(value_len as u64))
            as u64
            + unshared as u64
            + value_len as u64
    }

    /// Appends an entry.
    ///
    /// # Panics
    /// If called after [`finish`](Self::finish) without
    /// [`reset`](Self::reset), or if the block would exceed
    /// [`MAX_BLOCK_LEN`] bytes (callers size-check first). Both are caller
    /// bugs, not data errors.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        assert!(!self.finished, "BlockBuilder::add after finish");
        let shared = if self.num_entries == 0 || self.counter >= self.restart_interval {
            let offset = u32::try_from(self.buf.len()).expect("block exceeds 4 GiB");
            self.restarts.push(offset);
            self.counter = 0;
            0
        } else {
            self.last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count()
        };
        assert!(
            self.estimated_size() as u64 + Self::entry_len(shared, key.len(), value.len())
                <= MAX_BLOCK_LEN,
            "block exceeds 4 GiB"
        );
        let unshared = &key[shared..];
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, unshared.len() as u64);
        put_varint(&mut self.buf, value.len() as u64);
        self.buf.extend_from_slice(unshared);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(unshared);
        self.counter += 1;
        self.num_entries += 1;
    }

    /// Size of the block if finished now, in bytes (entries + restart array
    /// + count).
    pub fn estimated_size(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// Entries added since the last reset.
    pub fn num_entries(&self) -> usize {
        self.num_entries
    }

    /// True if no entry was added since the last reset.
    pub fn is_empty(&self) -> bool {
        self.num_entries == 0
    }

    /// The last key added (empty if none).
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Appends the restart array and returns the finished block contents
    /// (without trailer). Calling it again returns the same bytes.
    pub fn finish(&mut self) -> &[u8] {
        if !self.finished {
            for &r in &self.restarts {
                put_u32(&mut self.buf, r);
            }
            put_u32(&mut self.buf, self.restarts.len() as u32);
            self.finished = true;
        }
        &self.buf
    }

    /// Clears the builder for the next block, keeping its allocations.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.counter = 0;
        self.last_key.clear();
        self.num_entries = 0;
        self.finished = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{InternalKey, SequenceNumber, ValueType};

    fn ik(k: &str, s: u64, vt: ValueType) -> Vec<u8> {
        InternalKey::new(k.as_bytes(), SequenceNumber(s), vt).into_encoded()
    }

    #[test]
    fn golden_three_entries() {
        let mut b = BlockBuilder::new(2);
        b.add(&ik("apple", 3, ValueType::Value), b"x");
        b.add(&ik("apply", 2, ValueType::Value), b"yy");
        b.add(&ik("b", 1, ValueType::Deletion), b"");
        assert_eq!(b.estimated_size(), 55);
        assert_eq!(b.num_entries(), 3);
        assert_eq!(b.last_key(), &ik("b", 1, ValueType::Deletion)[..]);
        #[rustfmt::skip]
        let want: &[u8] = &[
            0x00, 0x0d, 0x01, b'a', b'p', b'p', b'l', b'e', 0x01, 0x03, 0, 0, 0, 0, 0, 0, b'x',
            0x04, 0x09, 0x02, b'y', 0x01, 0x02, 0, 0, 0, 0, 0, 0, b'y', b'y',
            0x00, 0x09, 0x00, b'b', 0x00, 0x01, 0, 0, 0, 0, 0, 0,
            0x00, 0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
        ];
        assert_eq!(b.finish(), want);
        // finish is idempotent.
        assert_eq!(b.finish(), want);
        b.reset();
        assert!(b.is_empty());
        assert_eq!(b.finish(), &[0, 0, 0, 0]);
    }

    #[test]
    fn restart_interval_one_never_shares() {
        let mut b = BlockBuilder::new(1);
        b.add(b"abc", b"1");
        b.add(b"abd", b"2");
        assert_eq!(
            b.finish(),
            &[
                0, 3, 1, b'a', b'b', b'c', b'1', 0, 3, 1, b'a', b'b', b'd', b'2', 0, 0, 0, 0, 7, 0,
                0, 0, 2, 0, 0, 0
            ]
        );
        // Interval 0 behaves as 1.
        let mut z = BlockBuilder::new(0);
        z.add(b"abc", b"1");
        z.add(b"abd", b"2");
        assert_eq!(z.finish(), b.finish());
    }

    #[test]
    fn entry_len_matches_encoding() {
        let mut b = BlockBuilder::new(16);
        b.add(b"hello", &[7; 200]);
        let before = b.estimated_size();
        b.add(b"help", b"v");
        // shares "hel" (3): varints 1+1+1, 1 key byte, 1 value byte.
        assert_eq!(BlockBuilder::entry_len(3, 4, 1), 5);
        assert_eq!(b.estimated_size() - before, 5);
        assert_eq!(BlockBuilder::entry_len(0, 5, 200), 1 + 1 + 2 + 5 + 200);
    }

    #[test]
    #[should_panic(expected = "after finish")]
    fn add_after_finish_panics() {
        let mut b = BlockBuilder::new(4);
        b.add(b"a", b"");
        b.finish();
        b.add(b"b", b"");
    }
}
