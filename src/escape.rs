//! Printable forms of arbitrary bytes, used by `Debug` output and kvctl.
//!
//! Printable ASCII stays as is, except `\` which is doubled; every other
//! byte, and any byte of non-UTF-8 input, becomes `\xNN`. Valid non-ASCII
//! UTF-8 characters are kept. [`unescape`] inverts [`escape_bytes`].

/// Escapes `bytes` for display: see the module docs.
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                ' '..='~' => out.push(c),
                c if !c.is_ascii() && !c.is_control() => out.push(c),
                c => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        out.push_str(&format!("\\x{b:02x}"));
                    }
                }
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Lower-case hex of `bytes`, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses the escapes [`escape_bytes`] writes (`\\`, `\xNN`) plus `\t`,
/// `\n`, `\r` and `\0`.
///
/// # Errors
/// A message naming the bad escape (or a trailing backslash) and its byte
/// offset, and saying how to write a literal backslash.
pub fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let bad = |what: String| format!("{what}; write \\\\ for a literal backslash");
    let mut out = Vec::with_capacity(s.len());
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            Some(b'\\') => out.push(b'\\'),
            Some(b't') => out.push(b'\t'),
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(b'0') => out.push(0),
            Some(b'x') => {
                let hexdigits = s
                    .get(i + 2..i + 4)
                    .ok_or_else(|| bad(format!("incomplete \\x escape at offset {i}")))?;
                let b = u8::from_str_radix(hexdigits, 16)
                    .map_err(|_| bad(format!("bad \\x escape at offset {i}")))?;
                out.push(b);
                i += 4;
                continue;
            }
            None => return Err(bad(format!("a trailing backslash at offset {i}"))),
            // Shown when it prints as itself.
            Some(&c) if c.is_ascii_graphic() => {
                return Err(bad(format!(
                    "unknown escape \\{} at offset {i}",
                    char::from(c)
                )))
            }
            Some(_) => return Err(bad(format!("unknown escape at offset {i}"))),
        }
        i += 2;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_round_trips() {
        let raw = b"a\\b\x00\xff\ncaf\xc3\xa9";
        let e = escape_bytes(raw);
        assert_eq!(e, "a\\\\b\\x00\\xff\\x0acaf\u{e9}");
        assert_eq!(unescape(&e).unwrap(), raw);
        assert!(unescape("\\x4").is_err());
        assert!(unescape("\\q").is_err());
        assert_eq!(hex(b"\x01\xab"), "01ab");
    }

    /// A backslash at the end starts no escape; it used to be reported as
    /// an "unknown escape".
    #[test]
    fn errors_say_what_is_wrong_and_how_to_write_a_backslash() {
        assert_eq!(
            unescape("trail\\").unwrap_err(),
            "a trailing backslash at offset 5; write \\\\ for a literal backslash"
        );
        assert_eq!(
            unescape("C:\\dir").unwrap_err(),
            "unknown escape \\d at offset 2; write \\\\ for a literal backslash"
        );
        assert_eq!(
            unescape("a\\\u{e9}").unwrap_err(),
            "unknown escape at offset 1; write \\\\ for a literal backslash"
        );
        assert_eq!(
            unescape("\\x4").unwrap_err(),
            "incomplete \\x escape at offset 0; write \\\\ for a literal backslash"
        );
        assert_eq!(
            unescape("\\xzz").unwrap_err(),
            "bad \\x escape at offset 0; write \\\\ for a literal backslash"
        );
        assert_eq!(unescape("ok\\\\").unwrap(), b"ok\\");
    }
}
