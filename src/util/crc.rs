//! CRC-32 (IEEE 802.3 polynomial, as computed by `crc32fast`) over stored
//! bytes. Every WAL record, manifest record and SSTable block carries one.

/// CRC-32 of `data`.
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

/// CRC-32 of the concatenation of `parts`, without copying them together.
pub fn crc32_parts(parts: &[&[u8]]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    for p in parts {
        h.update(p);
    }
    h.finalize()
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_value_and_parts_agree() {
        // The standard CRC-32 check value.
        assert_eq!(super::crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(super::crc32_parts(&[b"1234", b"56789"]), 0xcbf4_3926);
    }
}
