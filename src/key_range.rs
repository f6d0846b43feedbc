//! [`KeyRange`]: the ranges of user keys [`crate::Db::range`] and
//! [`crate::Snapshot::range`] take.

use std::ops::{Bound, Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// A range of user keys: any `std::ops` range whose ends are byte-string
/// like (`&str`, `&[u8]`, `Vec<u8>`, `String`, arrays...), the full range
/// `..`, or a pair of [`Bound`]s. Keys compare bytewise.
///
/// # Example
/// ```
/// use std::ops::Bound;
///
/// let dir = tempfile::tempdir()?;
/// let db = siftdb::Db::open(dir.path())?;
/// for k in ["a", "b", "c"] {
///     db.put(k, "v")?;
/// }
/// assert_eq!(db.range(..).count(), 3); // no type to name for `..`
/// assert_eq!(db.range("b"..).count(), 2);
/// assert_eq!(db.range(..="b").count(), 2);
/// let (lo, hi) = (Bound::Excluded(&b"a"[..]), Bound::Unbounded);
/// assert_eq!(db.range((lo, hi)).count(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait KeyRange {
    /// The range's lower and upper bounds, as owned keys.
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>);
}

fn owned<K: AsRef<[u8]>>(b: Bound<K>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl KeyRange for RangeFull {
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (Bound::Unbounded, Bound::Unbounded)
    }
}

impl<K: AsRef<[u8]>> KeyRange for Range<K> {
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (
            owned(Bound::Included(self.start)),
            owned(Bound::Excluded(self.end)),
        )
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeInclusive<K> {
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        let (lo, hi) = self.into_inner();
        (owned(Bound::Included(lo)), owned(Bound::Included(hi)))
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeFrom<K> {
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (owned(Bound::Included(self.start)), Bound::Unbounded)
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeTo<K> {
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (Bound::Unbounded, owned(Bound::Excluded(self.end)))
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeToInclusive<K> {
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (Bound::Unbounded, owned(Bound::Included(self.end)))
    }
}

impl<K: AsRef<[u8]>> KeyRange for (Bound<K>, Bound<K>) {
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (owned(self.0), owned(self.1))
    }
}

/// True if a file spanning user keys `[smallest, largest]` may hold a key
/// within `(lo, hi)`.
pub fn overlaps(smallest: &[u8], largest: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let above_lo = match lo {
        Bound::Included(k) => largest >= k.as_slice(),
        Bound::Excluded(k) => largest > k.as_slice(),
        Bound::Unbounded => true,
    };
    let below_hi = match hi {
        Bound::Included(k) => smallest <= k.as_slice(),
        Bound::Excluded(k) => smallest < k.as_slice(),
        Bound::Unbounded => true,
    };
    above_lo && below_hi
}

/// True if `(lo, hi)` holds no key because its bounds are in the wrong
/// order: both are keys and `lo` sorts after `hi` (an empty range such as
/// `a..a` is not inverted).
pub fn inverted(lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    match (lo, hi) {
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => a > b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    #[test]
    fn every_range_form_gives_its_bounds() {
        use Bound::{Excluded as E, Included as I, Unbounded as U};
        assert_eq!((..).into_bounds(), (U, U));
        assert_eq!(("a".."c").into_bounds(), (I(b("a")), E(b("c"))));
        assert_eq!(("a"..="c").into_bounds(), (I(b("a")), I(b("c"))));
        assert_eq!((b("a")..).into_bounds(), (I(b("a")), U));
        assert_eq!((..&b"c"[..]).into_bounds(), (U, E(b("c"))));
        assert_eq!((..=String::from("c")).into_bounds(), (U, I(b("c"))));
        assert_eq!((E("a"), U::<&str>).into_bounds(), (E(b("a")), U));
    }

    #[test]
    fn overlap_cases() {
        let inc = |s: &str| Bound::Included(s.as_bytes().to_vec());
        let exc = |s: &str| Bound::Excluded(s.as_bytes().to_vec());
        assert!(overlaps(b"b", b"d", &inc("d"), &Bound::Unbounded));
        assert!(!overlaps(b"b", b"d", &exc("d"), &Bound::Unbounded));
        assert!(!overlaps(b"b", b"d", &Bound::Unbounded, &exc("b")));
        assert!(overlaps(b"b", b"d", &Bound::Unbounded, &inc("b")));
        assert!(inverted(&inc("b"), &exc("a")));
        assert!(!inverted(&inc("a"), &exc("a")));
        assert!(!inverted(&Bound::Unbounded, &exc("a")));
    }
}
