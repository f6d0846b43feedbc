//! [`Slice`]: the byte string reads return, cheap to clone, that can share
//! the bytes of the table it was read from instead of copying them.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, Range};
use std::sync::Arc;

use memmap2::Mmap;

/// An immutable byte string: a key or a value returned by a read.
///
/// Dereferences to `[u8]`; compares, orders and hashes as its bytes do
/// (so it can key a `HashMap<Slice, _>` looked up by `&[u8]`); prints as
/// a byte-string literal.
///
/// A `Slice` holds its bytes in one of four ways (DESIGN.md 3.6):
///
/// - **inline**, up to [`Slice::INLINE_CAPACITY`] bytes inside the value
///   itself: short keys and values cost no allocation;
/// - **an owned buffer** (`Arc<Vec<u8>>`): what `From<Vec<u8>>` makes,
///   without copying;
/// - **a view into a shared buffer** (`Arc<[u8]>`): a cached or decompressed data block,
///   or bytes copied once out of a memtable or a block;
/// - **a view into a table's memory map**.
///
/// Clones share the bytes (a reference count, or a 30-byte copy when
/// inline). The two views keep their whole buffer alive: a value read
/// from a table stays valid after the table is compacted away and its file
/// deleted (the map keeps the file's pages, and the file's disk space is
/// freed when the last view is dropped), and after its block leaves the
/// block cache. Since a view pins a whole block or map, the engine makes
/// one only for values of at least [`Slice::SHARE_MIN`] bytes and copies
/// shorter ones.
///
/// # Example
/// ```
/// use siftdb::Slice;
///
/// let dir = tempfile::tempdir()?;
/// let db = siftdb::Db::open(dir.path())?;
/// db.put("k", vec![7u8; 4096])?;
/// let v: Slice = db.get("k")?.expect("just written");
/// let w = v.clone(); // shares the bytes
/// assert_eq!(w.len(), 4096);
/// assert_eq!(&v[..2], &[7, 7]);
/// assert_eq!(Slice::from("abc"), "abc");
/// assert_eq!(format!("{:?}", Slice::from(&b"a\"\x01"[..])), r#"b"a\"\x01""#);
/// let owned: Vec<u8> = v.into_vec();
/// assert_eq!(owned.len(), 4096);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Slice(Repr);

#[derive(Clone)]
enum Repr {
    Inline {
        len: u8,
        bytes: [u8; Slice::INLINE_CAPACITY],
    },
    Vec(Arc<Vec<u8>>),
    Shared {
        buf: Arc<[u8]>,
        start: usize,
        end: usize,
    },
    Mapped {
        map: Arc<Mmap>,
        start: usize,
        end: usize,
    },
}

impl Slice {
    /// The longest byte string held inside the `Slice` itself, with no
    /// allocation.
    pub const INLINE_CAPACITY: usize = 30;

    /// The shortest value, in bytes, that the engine shares with the block
    /// or map it was read from; shorter values are copied, so that a small
    /// value kept by the caller does not pin a whole block (4 KiB or more)
    /// or a table's map. Below this length a copy costs about as much as
    /// the reference count (DESIGN.md 3.6 has the measurements).
    pub const SHARE_MIN: usize = 1024;

    /// The empty byte string.
    pub const fn new() -> Slice {
        Slice(Repr::Inline {
            len: 0,
            bytes: [0; Slice::INLINE_CAPACITY],
        })
    }

    /// A copy of `bytes`: inline if it fits, else one allocation.
    pub fn copy_from_slice(bytes: &[u8]) -> Slice {
        match Slice::inline(bytes) {
            Some(s) => s,
            None => Slice(Repr::Shared {
                buf: Arc::from(bytes),
                start: 0,
                end: bytes.len(),
            }),
        }
    }

    fn inline(bytes: &[u8]) -> Option<Slice> {
        if bytes.len() > Slice::INLINE_CAPACITY {
            return None;
        }
        let mut buf = [0u8; Slice::INLINE_CAPACITY];
        buf[..bytes.len()].copy_from_slice(bytes);
        Some(Slice(Repr::Inline {
            // At most INLINE_CAPACITY (30).
            len: bytes.len() as u8,
            bytes: buf,
        }))
    }

    /// `part`, a subslice of `buf` (a cached block), shared with `buf` if
    /// it is at least [`Slice::SHARE_MIN`] long, else copied.
    ///
    /// # Panics
    /// If `part` does not lie within `buf` (an engine bug, checked here
    /// rather than at a later dereference).
    pub(crate) fn share_block(buf: &Arc<[u8]>, part: &[u8]) -> Slice {
        if part.len() < Slice::SHARE_MIN {
            return Slice::copy_from_slice(part);
        }
        let Range { start, end } = range_within(buf, part);
        Slice(Repr::Shared {
            buf: Arc::clone(buf),
            start,
            end,
        })
    }

    /// `part`, a subslice of `map` (a table's map), shared with the map if
    /// it is at least [`Slice::SHARE_MIN`] long, else copied.
    ///
    /// # Panics
    /// As [`Slice::share_block`].
    pub(crate) fn share_map(map: &Arc<Mmap>, part: &[u8]) -> Slice {
        if part.len() < Slice::SHARE_MIN {
            return Slice::copy_from_slice(part);
        }
        let Range { start, end } = range_within(map, part);
        Slice(Repr::Mapped {
            map: Arc::clone(map),
            start,
            end,
        })
    }

    /// Whether this `Slice` shares a block's or a map's bytes (what the
    /// engine's tests check sharing with).
    #[cfg(test)]
    pub(crate) fn is_view(&self) -> bool {
        match &self.0 {
            Repr::Mapped { .. } => true,
            Repr::Shared { buf, start, end } => *start != 0 || *end != buf.len(),
            _ => false,
        }
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..*len as usize],
            Repr::Vec(v) => v,
            Repr::Shared { buf, start, end } => &buf[*start..*end],
            Repr::Mapped { map, start, end } => &map[*start..*end],
        }
    }

    /// The bytes as text, if they are UTF-8.
    ///
    /// # Errors
    /// [`std::str::Utf8Error`] if they are not.
    pub fn to_str(&self) -> Result<&str, std::str::Utf8Error> {
        std::str::from_utf8(self.as_slice())
    }

    /// The bytes as text, each invalid UTF-8 sequence replaced by U+FFFD.
    pub fn to_string_lossy(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.as_slice())
    }

    /// A copy of the bytes in a new `Vec`.
    pub fn to_vec(&self) -> Vec<u8> {
        self.as_slice().to_vec()
    }

    /// The bytes as a `Vec`: without a copy if this `Slice` holds the only
    /// reference to a buffer made from a `Vec`, else copied.
    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Repr::Vec(v) => Arc::try_unwrap(v).unwrap_or_else(|v| v.as_ref().clone()),
            _ => self.to_vec(),
        }
    }
}

/// The range of `base` that `part` covers.
///
/// # Panics
/// If `part` does not lie within `base`.
fn range_within(base: &[u8], part: &[u8]) -> Range<usize> {
    let start = (part.as_ptr() as usize).wrapping_sub(base.as_ptr() as usize);
    let range = start..start.wrapping_add(part.len());
    assert!(
        range.start <= range.end && range.end <= base.len(),
        "Slice view outside its buffer"
    );
    range
}

impl Default for Slice {
    fn default() -> Slice {
        Slice::new()
    }
}

impl Deref for Slice {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for Slice {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Borrow<[u8]> for Slice {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl From<Vec<u8>> for Slice {
    /// Takes `v` without copying it (a short `v` is moved inline and its
    /// buffer freed).
    fn from(v: Vec<u8>) -> Slice {
        Slice::inline(&v).unwrap_or_else(|| Slice(Repr::Vec(Arc::new(v))))
    }
}

impl From<&[u8]> for Slice {
    fn from(bytes: &[u8]) -> Slice {
        Slice::copy_from_slice(bytes)
    }
}

impl<const N: usize> From<&[u8; N]> for Slice {
    fn from(bytes: &[u8; N]) -> Slice {
        Slice::copy_from_slice(bytes)
    }
}

impl From<&str> for Slice {
    fn from(s: &str) -> Slice {
        Slice::copy_from_slice(s.as_bytes())
    }
}

impl From<String> for Slice {
    fn from(s: String) -> Slice {
        Slice::from(s.into_bytes())
    }
}

impl From<Slice> for Vec<u8> {
    fn from(s: Slice) -> Vec<u8> {
        s.into_vec()
    }
}

impl PartialEq for Slice {
    fn eq(&self, other: &Slice) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Slice {}

impl PartialOrd for Slice {
    fn partial_cmp(&self, other: &Slice) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Slice {
    fn cmp(&self, other: &Slice) -> Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

impl Hash for Slice {
    /// Hashes as `[u8]` does, as [`Borrow<[u8]>`] requires.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

/// `Slice == other` and `other == Slice` for byte-like types, comparing
/// bytes.
macro_rules! eq_bytes {
    ($($t:ty),*) => {$(
        impl PartialEq<$t> for Slice {
            fn eq(&self, other: &$t) -> bool {
                self.as_slice() == AsRef::<[u8]>::as_ref(other)
            }
        }
        impl PartialEq<Slice> for $t {
            fn eq(&self, other: &Slice) -> bool {
                AsRef::<[u8]>::as_ref(self) == other.as_slice()
            }
        }
    )*};
}

eq_bytes!([u8], &[u8], Vec<u8>, &Vec<u8>, str, &str, String, &String);

impl<const N: usize> PartialEq<[u8; N]> for Slice {
    fn eq(&self, other: &[u8; N]) -> bool {
        self.as_slice() == other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for Slice {
    fn eq(&self, other: &&[u8; N]) -> bool {
        self.as_slice() == *other
    }
}

impl<const N: usize> PartialEq<Slice> for [u8; N] {
    fn eq(&self, other: &Slice) -> bool {
        self == other.as_slice()
    }
}

impl<const N: usize> PartialEq<Slice> for &[u8; N] {
    fn eq(&self, other: &Slice) -> bool {
        *self == other.as_slice()
    }
}

impl std::fmt::Debug for Slice {
    /// A byte-string literal: `b"text\xff"`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "b\"{}\"", self.as_slice().escape_ascii())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn short_bytes_are_inline_and_long_ones_are_not_copied_from_a_vec() {
        let s = Slice::from(&[1u8; 30][..]);
        assert!(matches!(s.0, Repr::Inline { len: 30, .. }));
        assert_eq!(s, [1u8; 30]);
        let v = vec![2u8; 31];
        let ptr = v.as_ptr();
        let s = Slice::from(v);
        assert_eq!(s.as_ptr(), ptr, "From<Vec> keeps the buffer");
        let back = s.into_vec();
        assert_eq!(back.as_ptr(), ptr, "into_vec gives it back");
        assert_eq!(Slice::new().len(), 0);
        assert_eq!(Slice::default(), b"");
        assert!(std::mem::size_of::<Slice>() <= 40);
    }

    #[test]
    fn clones_share_and_into_vec_copies_a_shared_buffer() {
        let s = Slice::from(vec![3u8; 100]);
        let t = s.clone();
        assert_eq!(s.as_ptr(), t.as_ptr());
        assert_eq!(t.into_vec(), vec![3u8; 100]);
        assert_eq!(s.to_vec(), vec![3u8; 100]);
    }

    #[test]
    fn views_share_long_ranges_and_copy_short_ones() {
        let buf: Arc<[u8]> = (0..4096u32).map(|i| i as u8).collect();
        let long = Slice::share_block(&buf, &buf[100..100 + Slice::SHARE_MIN]);
        assert!(long.is_view());
        assert_eq!(long.as_ptr(), buf[100..].as_ptr());
        assert_eq!(long[..], buf[100..100 + Slice::SHARE_MIN]);
        let short = Slice::share_block(&buf, &buf[100..100 + Slice::SHARE_MIN - 1]);
        assert!(!short.is_view());
        assert_eq!(short[..], buf[100..100 + Slice::SHARE_MIN - 1]);
        drop(buf);
        assert_eq!(long[1], 101, "the view keeps the buffer alive");
    }

    #[test]
    #[should_panic(expected = "outside its buffer")]
    fn a_view_outside_its_buffer_is_refused() {
        let buf: Arc<[u8]> = Arc::from(vec![0u8; 4096]);
        let other = vec![0u8; 2048];
        let _ = Slice::share_block(&buf, &other);
    }

    #[test]
    fn compares_hashes_and_prints_as_bytes() {
        let a = Slice::from("apple");
        assert_eq!(a, "apple");
        assert_eq!("apple", a);
        assert_eq!(a, b"apple");
        assert_eq!(a, &b"apple"[..]);
        assert_eq!(a, b"apple".to_vec());
        assert_eq!(b"apple".to_vec(), a);
        assert_eq!(a, String::from("apple"));
        let (x, y, z) = (
            Slice::from("a"),
            Slice::from("b"),
            Slice::from(vec![b'a'; 40]),
        );
        assert_eq!(
            (x.cmp(&y), x.cmp(&z), z.cmp(&y)),
            (Ordering::Less, Ordering::Less, Ordering::Less)
        );
        let long = Slice::from(vec![b'x'; 50]);
        assert_eq!(long, Slice::copy_from_slice(&[b'x'; 50]));
        let mut m: HashMap<Slice, u32> = HashMap::new();
        m.insert(a.clone(), 1);
        assert_eq!(m.get(&b"apple"[..]), Some(&1));
        assert_eq!(
            format!("{:?}", Slice::from(&b"a\\\n\xff"[..])),
            r#"b"a\\\n\xff""#
        );
        assert_eq!(b"apple", a);
        assert_eq!(*b"apple", a);
        assert_eq!(a, &String::from("apple"));
        assert_eq!(a.to_str(), Ok("apple"));
        let bad = Slice::from(&b"caf\xc3\xa9 \xff"[..]);
        assert!(bad.to_str().is_err());
        assert_eq!(bad.to_string_lossy(), "café \u{fffd}");
        assert_eq!(Vec::from(a), b"apple");
    }
}
