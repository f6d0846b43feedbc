//! [`AlignedBytes`]: a copy of a byte string placed at a chosen address
//! modulo 64, so that a filter copied out of a table file keeps the
//! cache-line placement its builder gave it in the file
//! ([`crate::filter::FilterPolicy::placement`]).

/// Bytes of a cache line, the largest alignment a copy keeps.
pub const LINE: usize = 64;

/// An owned copy of a byte string whose first byte sits at an address
/// congruent to a chosen `offset` modulo [`LINE`]. The allocation is
/// `LINE - 1` bytes longer than the string, and the copy starts where the
/// address works out, so no `unsafe` is needed.
pub struct AlignedBytes {
    buf: Box<[u8]>,
    start: usize,
    len: usize,
}

impl AlignedBytes {
    /// Copies `bytes` so that the copy's first byte sits at an address
    /// congruent to `offset` modulo [`LINE`] (pass a block's offset in
    /// its file, since files are mapped at page boundaries).
    pub fn copy(bytes: &[u8], offset: u64) -> AlignedBytes {
        let mut buf = vec![0u8; bytes.len() + LINE - 1].into_boxed_slice();
        let want = (offset % LINE as u64) as usize;
        let at = buf.as_ptr() as usize % LINE;
        let start = (want + LINE - at) % LINE;
        buf[start..start + bytes.len()].copy_from_slice(bytes);
        AlignedBytes {
            buf,
            start,
            len: bytes.len(),
        }
    }

    /// The copied bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }

    /// Bytes of memory held, padding included.
    pub fn allocated(&self) -> usize {
        self.buf.len()
    }
}

impl std::fmt::Debug for AlignedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBytes")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_sits_at_the_requested_address_modulo_a_line() {
        let data: Vec<u8> = (0..200u8).collect();
        for offset in [0u64, 1, 56, 63, 64, 4096 + 56, 12_345] {
            let a = AlignedBytes::copy(&data, offset);
            assert_eq!(a.bytes(), &data[..]);
            assert_eq!(
                a.bytes().as_ptr() as usize % LINE,
                (offset % LINE as u64) as usize,
                "offset {offset}"
            );
            assert_eq!(a.allocated(), data.len() + LINE - 1);
        }
        assert_eq!(AlignedBytes::copy(&[], 7).bytes(), &[] as &[u8]);
    }
}
