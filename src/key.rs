//! Keys as the engine stores them: [`SequenceNumber`], [`ValueType`] and
//! [`InternalKey`].
//!
//! An internal key is the caller's *user key* followed by an 8-byte
//! little-endian trailer `(sequence << 8) | value_type`:
//!
//! ```text
//! +----------------------+----------------------------------------+
//! | user key (0..=65535) | trailer: u64 LE = seq << 8 | value type |
//! +----------------------+----------------------------------------+
//! ```
//!
//! Internal keys sort by user key ascending (bytewise), then by trailer
//! descending, so that the newest version of a user key comes first. This is
//! the order of the memtable, of every SSTable block and of the index.

use std::cmp::Ordering;

/// Longest user key accepted, in bytes.
pub const MAX_KEY_LEN: usize = 65_535;
/// Longest value accepted, in bytes: 4 GiB − 128 KiB (4,294,836,224). With
/// a key of up to [`MAX_KEY_LEN`] bytes, one entry and its framing fit
/// both in a WAL record (a batch of that one put, DESIGN.md 12.3) and in
/// a data block, whose lengths and restart offsets are 32-bit (12.5), so
/// every accepted put can be flushed.
pub const MAX_VALUE_LEN: u64 = (u32::MAX as u64 + 1) - (128 << 10);
/// Bytes of the trailer appended to every user key.
pub const TRAILER_LEN: usize = 8;

/// The commit order of a write: every put or delete gets the next number.
/// Only the low 56 bits are usable, because the trailer packs the
/// [`ValueType`] into the low 8 bits of a `u64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SequenceNumber(pub u64);

impl SequenceNumber {
    /// The largest sequence number, 2^56 − 1.
    pub const MAX: SequenceNumber = SequenceNumber((1 << 56) - 1);
    /// Sequence number 0, which no write ever gets (the first write is 1).
    pub const ZERO: SequenceNumber = SequenceNumber(0);

    /// The raw value.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for SequenceNumber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// What an entry means. The discriminants are stored on disk: never
/// reassign them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ValueType {
    /// A tombstone: the key was deleted at this sequence number.
    Deletion = 0,
    /// A value was stored.
    Value = 1,
    /// A range deletion, in a [`crate::WriteBatch`] only: its key is the
    /// range's start and its value the range's exclusive end (empty: no
    /// end). Never the type of an entry in a memtable's skiplist or an
    /// SSTable, whose parsers reject it (DESIGN.md 3.7).
    RangeDeletion = 2,
}

impl ValueType {
    /// The type used when seeking: the highest tag, so that a seek key
    /// `(k, s)` sorts before every entry of `k` with sequence `<= s`.
    pub const FOR_SEEK: ValueType = ValueType::Value;

    /// `"put"` or `"delete"`, as kvctl prints them.
    pub fn name(self) -> &'static str {
        match self {
            ValueType::Deletion => "delete",
            ValueType::Value => "put",
            ValueType::RangeDeletion => "delete_range",
        }
    }
}

impl TryFrom<u8> for ValueType {
    type Error = u8;
    /// Returns the unknown byte as the error.
    fn try_from(b: u8) -> Result<Self, u8> {
        match b {
            0 => Ok(ValueType::Deletion),
            1 => Ok(ValueType::Value),
            2 => Ok(ValueType::RangeDeletion),
            other => Err(other),
        }
    }
}

/// Packs a sequence number and type into the 8-byte trailer value.
pub fn pack_trailer(seq: SequenceNumber, vt: ValueType) -> u64 {
    debug_assert!(seq <= SequenceNumber::MAX);
    (seq.0 << 8) | vt as u64
}

/// An owned encoded internal key (user key + 8-byte trailer).
///
/// `Ord` is the internal-key order described in the module docs, so
/// `InternalKey` can key a sorted map directly.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct InternalKey(Vec<u8>);

impl InternalKey {
    /// Encodes `user_key`, `seq` and `vt`.
    pub fn new(user_key: &[u8], seq: SequenceNumber, vt: ValueType) -> Self {
        let mut v = Vec::with_capacity(user_key.len() + TRAILER_LEN);
        v.extend_from_slice(user_key);
        v.extend_from_slice(&pack_trailer(seq, vt).to_le_bytes());
        InternalKey(v)
    }

    /// Wraps already-encoded bytes, checking that they parse.
    ///
    /// Returns `None` if `encoded` is shorter than the trailer or carries an
    /// unknown value type.
    pub fn from_encoded(encoded: Vec<u8>) -> Option<Self> {
        ParsedInternalKey::parse(&encoded)?;
        Some(InternalKey(encoded))
    }

    /// The encoded bytes.
    pub fn encoded(&self) -> &[u8] {
        &self.0
    }

    /// Consumes the key, returning the encoded bytes.
    pub fn into_encoded(self) -> Vec<u8> {
        self.0
    }

    /// The user key part.
    pub fn user_key(&self) -> &[u8] {
        &self.0[..self.0.len() - TRAILER_LEN]
    }

    /// The decoded parts. Infallible: construction checked them.
    pub fn parsed(&self) -> ParsedInternalKey<'_> {
        let (user_key, trailer) = split_trailer(&self.0);
        ParsedInternalKey {
            user_key,
            seq: SequenceNumber(trailer >> 8),
            // Construction guarantees a valid tag.
            value_type: if trailer & 0xff == 0 {
                ValueType::Deletion
            } else {
                ValueType::Value
            },
        }
    }
}

impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_internal_keys(&self.0, &other.0)
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Debug for InternalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = self.parsed();
        write!(
            f,
            "{}@{}:{}",
            crate::escape::escape_bytes(p.user_key),
            p.seq,
            p.value_type.name()
        )
    }
}

/// A borrowed, decoded internal key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedInternalKey<'a> {
    /// The caller's key.
    pub user_key: &'a [u8],
    /// When it was written.
    pub seq: SequenceNumber,
    /// Value or tombstone.
    pub value_type: ValueType,
}

impl<'a> ParsedInternalKey<'a> {
    /// Decodes an encoded internal key; `None` if it is shorter than 8 bytes
    /// or its type byte is not that of an entry (a put or a point
    /// deletion: [`ValueType::RangeDeletion`] only occurs in batches).
    pub fn parse(encoded: &'a [u8]) -> Option<Self> {
        if encoded.len() < TRAILER_LEN {
            return None;
        }
        let (user_key, trailer) = split_trailer(encoded);
        let value_type = ValueType::try_from((trailer & 0xff) as u8)
            .ok()
            .filter(|vt| *vt != ValueType::RangeDeletion)?;
        Some(ParsedInternalKey {
            user_key,
            seq: SequenceNumber(trailer >> 8),
            value_type,
        })
    }
}

/// Splits an encoded key (at least 8 bytes) into user key and trailer.
fn split_trailer(encoded: &[u8]) -> (&[u8], u64) {
    let cut = encoded.len() - TRAILER_LEN;
    let mut t = [0u8; 8];
    t.copy_from_slice(&encoded[cut..]);
    (&encoded[..cut], u64::from_le_bytes(t))
}

/// The first 16 bytes of `user_key` as a big-endian number, zero padded.
///
/// Where two keys' prefixes differ, they order the keys as their bytes do
/// (a padding byte only ever meets a real byte where the shorter key has
/// ended, and the shorter key sorts first then too); where they tie, keys
/// of at most 16 bytes are ordered by length, longer ones by their bytes.
/// The memtable and the SSTable index keep it beside each key so that
/// searches compare numbers, not pointers to bytes. Sixteen, not eight:
/// keys often share a long prefix (a table name, the zeros of a fixed-width
/// number).
pub fn user_key_prefix(user_key: &[u8]) -> u128 {
    let mut p = [0u8; 16];
    let n = user_key.len().min(16);
    p[..n].copy_from_slice(&user_key[..n]);
    u128::from_be_bytes(p)
}

/// The user key of an encoded internal key, or the whole slice if it is
/// shorter than a trailer (callers validate keys before relying on this).
pub fn user_key_of(encoded: &[u8]) -> &[u8] {
    &encoded[..encoded.len().saturating_sub(TRAILER_LEN)]
}

/// The trailer of an encoded internal key, or 0 if it is too short.
fn trailer_of(encoded: &[u8]) -> u64 {
    if encoded.len() < TRAILER_LEN {
        return 0;
    }
    split_trailer(encoded).1
}

/// Orders two encoded internal keys: user key ascending, trailer
/// descending. Slices shorter than a trailer compare as user keys with
/// trailer 0 (they never occur in valid data).
pub fn compare_internal_keys(a: &[u8], b: &[u8]) -> Ordering {
    user_key_of(a)
        .cmp(user_key_of(b))
        .then_with(|| trailer_of(b).cmp(&trailer_of(a)))
}

/// Orders an encoded internal key against the seek key `(user_key, seq)`
/// without building it: `Less` means `encoded` sorts before the seek key.
pub fn compare_to_seek(encoded: &[u8], user_key: &[u8], seq: SequenceNumber) -> Ordering {
    user_key_of(encoded)
        .cmp(user_key)
        .then_with(|| pack_trailer(seq, ValueType::FOR_SEEK).cmp(&trailer_of(encoded)))
}

/// The smallest user key greater than every key that starts with `prefix`,
/// or `None` if there is none (`prefix` empty or all `0xff`). The keys
/// starting with `prefix` are exactly `prefix..successor`.
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut s = prefix.to_vec();
    while let Some(last) = s.pop() {
        if last < 0xff {
            s.push(last + 1);
            return Some(s);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ik(k: &str, s: u64, vt: ValueType) -> InternalKey {
        InternalKey::new(k.as_bytes(), SequenceNumber(s), vt)
    }

    #[test]
    fn golden_encoding() {
        let k = ik("ab", 0x0102, ValueType::Value);
        // trailer = 0x0102 << 8 | 1 = 0x010201, little-endian.
        assert_eq!(k.encoded(), &[b'a', b'b', 0x01, 0x02, 0x01, 0, 0, 0, 0, 0]);
        let p = k.parsed();
        assert_eq!(p.user_key, b"ab");
        assert_eq!(p.seq, SequenceNumber(0x0102));
        assert_eq!(p.value_type, ValueType::Value);
    }

    #[test]
    fn order_is_user_key_then_newest_first() {
        let mut keys = [
            ik("b", 1, ValueType::Value),
            ik("a", 1, ValueType::Value),
            ik("a", 5, ValueType::Deletion),
            ik("", 3, ValueType::Value),
            ik("a", 3, ValueType::Value),
            ik("ab", 9, ValueType::Value),
        ];
        keys.sort();
        let got: Vec<String> = keys.iter().map(|k| format!("{k:?}")).collect();
        assert_eq!(
            got,
            [
                "@3:put",
                "a@5:delete",
                "a@3:put",
                "a@1:put",
                "ab@9:put",
                "b@1:put"
            ]
        );
    }

    #[test]
    fn seek_key_sorts_before_every_visible_version() {
        let v3 = ik("a", 3, ValueType::Value);
        let d3 = ik("a", 3, ValueType::Deletion);
        let v4 = ik("a", 4, ValueType::Value);
        let s = SequenceNumber(3);
        assert_eq!(compare_to_seek(v3.encoded(), b"a", s), Ordering::Equal);
        assert_eq!(compare_to_seek(d3.encoded(), b"a", s), Ordering::Greater);
        assert_eq!(compare_to_seek(v4.encoded(), b"a", s), Ordering::Less);
        assert_eq!(compare_to_seek(v4.encoded(), b"b", s), Ordering::Less);
    }

    #[test]
    fn prefix_successor_cases() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
        assert_eq!(prefix_successor(b""), None);
    }

    #[test]
    fn parse_rejects_short_and_unknown_type() {
        assert!(ParsedInternalKey::parse(&[0; 7]).is_none());
        let mut bad = ik("x", 1, ValueType::Value).into_encoded();
        bad[1] = 7;
        assert!(ParsedInternalKey::parse(&bad).is_none());
        assert!(InternalKey::from_encoded(bad.clone()).is_none());
        assert_eq!(ValueType::try_from(3), Err(3));
        // A range deletion is a batch operation, never an entry's type.
        bad[1] = ValueType::RangeDeletion as u8;
        assert!(ParsedInternalKey::parse(&bad).is_none());
    }
}
