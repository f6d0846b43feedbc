//! Fixed-width little-endian integers and LEB128 varints.
//!
//! Every on-disk integer in siftdb is written by this module. Fixed-width
//! integers are little-endian; varints are unsigned LEB128 (7 bits a byte,
//! low group first, high bit set on every byte but the last), at most 5 bytes
//! for a `u32` and 10 for a `u64`.
//!
//! Decoding never panics: [`Decoder`] returns a [`DecodeError`] carrying the
//! offset of the failure for short input, over-long varints and lengths that
//! point past the end.

/// Appends `v` as 4 little-endian bytes.
pub fn put_u32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
pub fn put_u64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as an LEB128 varint (1 to 10 bytes).
pub fn put_varint(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Appends a varint length followed by `bytes`.
pub fn put_length_prefixed(dst: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(dst, bytes.len() as u64);
    dst.extend_from_slice(bytes);
}

/// Number of bytes [`put_varint`] writes for `v`.
pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// A decoding failure: what was wrong and where, as a byte offset into the
/// decoder's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Offset in the decoded slice where the bad field starts.
    pub offset: usize,
    /// What was wrong.
    pub reason: &'static str,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.offset)
    }
}

/// A cursor over a byte slice that decodes fields in order.
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    /// A decoder positioned at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Decoder { buf, pos: 0 }
    }

    /// Current offset into the input, in bytes.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// True when every byte has been consumed.
    pub fn is_empty(&self) -> bool {
        self.pos == self.buf.len()
    }

    fn err(&self, reason: &'static str) -> DecodeError {
        DecodeError {
            offset: self.pos,
            reason,
        }
    }

    /// Takes the next `n` bytes.
    ///
    /// # Errors
    /// `DecodeError` if fewer than `n` bytes remain.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(self.err("length past end of input"));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Decodes one byte.
    ///
    /// # Errors
    /// `DecodeError` at end of input.
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.bytes(1)?[0])
    }

    /// Decodes a 4-byte little-endian integer.
    ///
    /// # Errors
    /// `DecodeError` if fewer than 4 bytes remain.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.bytes(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Decodes an 8-byte little-endian integer.
    ///
    /// # Errors
    /// `DecodeError` if fewer than 8 bytes remain.
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        let b = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// Decodes an LEB128 varint of at most 10 bytes.
    ///
    /// # Errors
    /// `DecodeError` for truncated input or a varint longer than 10 bytes or
    /// overflowing 64 bits.
    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        let start = self.pos;
        let mut v: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                self.pos = start;
                return Err(self.err("truncated varint"));
            };
            self.pos += 1;
            if i == 9 && b > 1 {
                self.pos = start;
                return Err(self.err("varint overflows 64 bits"));
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        self.pos = start;
        Err(self.err("varint longer than 10 bytes"))
    }

    /// Decodes a varint that must fit in `u32`.
    ///
    /// # Errors
    /// As [`Decoder::varint`], or if the value exceeds `u32::MAX`.
    pub fn varint32(&mut self) -> Result<u32, DecodeError> {
        let start = self.pos;
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| DecodeError {
            offset: start,
            reason: "varint exceeds u32",
        })
    }

    /// Decodes a varint length and takes that many bytes.
    ///
    /// # Errors
    /// `DecodeError` if the length is bad or points past the end.
    pub fn length_prefixed(&mut self) -> Result<&'a [u8], DecodeError> {
        let start = self.pos;
        let n = self.varint()?;
        match usize::try_from(n) {
            Ok(n) if n <= self.remaining() => self.bytes(n),
            _ => {
                self.pos = start;
                Err(self.err("length-prefixed field runs past end of input"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trips_boundaries() {
        let values = [
            0u64,
            1,
            127,
            128,
            16_383,
            16_384,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut buf = Vec::new();
        for &v in &values {
            put_varint(&mut buf, v);
        }
        let mut d = Decoder::new(&buf);
        for &v in &values {
            assert_eq!(d.varint().unwrap(), v);
        }
        assert!(d.is_empty());
    }

    #[test]
    fn varint_golden_bytes() {
        let mut buf = Vec::new();
        put_varint(&mut buf, 300);
        assert_eq!(buf, [0xac, 0x02]);
        assert_eq!(varint_len(300), 2);
        assert_eq!(varint_len(u64::MAX), 10);
    }

    #[test]
    fn truncated_and_overlong_varints_are_errors() {
        assert_eq!(
            Decoder::new(&[0x80, 0x80]).varint().unwrap_err().reason,
            "truncated varint"
        );
        assert!(Decoder::new(&[0xff; 11]).varint().is_err());
        // 10th byte may only carry the top bit of a u64.
        let mut over = vec![0xff; 9];
        over.push(0x02);
        assert_eq!(
            Decoder::new(&over).varint().unwrap_err().reason,
            "varint overflows 64 bits"
        );
    }

    #[test]
    fn fixed_ints_are_little_endian() {
        let mut buf = Vec::new();
        put_u32(&mut buf, 0x0403_0201);
        put_u64(&mut buf, 0x0807_0605_0403_0201);
        assert_eq!(&buf[..4], &[1, 2, 3, 4]);
        let mut d = Decoder::new(&buf);
        assert_eq!(d.u32().unwrap(), 0x0403_0201);
        assert_eq!(d.u64().unwrap(), 0x0807_0605_0403_0201);
        assert!(d.u8().is_err());
    }

    #[test]
    fn length_prefixed_past_end_is_error_not_panic() {
        let mut buf = Vec::new();
        put_varint(&mut buf, u64::MAX);
        buf.push(1);
        let mut d = Decoder::new(&buf);
        assert!(d.length_prefixed().is_err());
        assert_eq!(d.position(), 0);
        let mut ok = Vec::new();
        put_length_prefixed(&mut ok, b"abc");
        assert_eq!(Decoder::new(&ok).length_prefixed().unwrap(), b"abc");
    }
}
