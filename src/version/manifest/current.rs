//! `CURRENT`, the file that names the live manifest: pointing it at a new
//! manifest atomically, reading it (only in its canonical form), and the
//! error for one that names a manifest that does not exist.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, IoContext, Result};
use crate::escape::escape_bytes;
use crate::filename::{current_path, manifest_name};
use crate::fs::FileSystem;
use crate::util::file::open_regular;

/// Longest `CURRENT` this build accepts: `MANIFEST-` plus 20 digits (the
/// digits of `u64::MAX`) plus the newline.
const MAX_CURRENT_LEN: u64 = 30;

/// Points `dir/CURRENT` at `MANIFEST-<number>` atomically: temp file,
/// sync, rename, directory sync.
pub(super) fn set_current(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<()> {
    let content = format!("{}\n", manifest_name(number));
    crate::util::file::write_replacing(fs, dir, number, &current_path(dir), content.as_bytes())
}

/// The manifest number named by `dir/CURRENT`, or `None` if `CURRENT` does
/// not exist (a new database).
///
/// # Errors
/// [`Error::Corruption`] naming `CURRENT` unless it holds exactly
/// `MANIFEST-NNNNNN\n` as [`manifest_name`] writes it (canonical zero
/// padding, one trailing newline); [`Error::Io`] if it cannot be read.
pub fn read_current(dir: &Path) -> Result<Option<u64>> {
    let path = current_path(dir);
    let file = match open_regular(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(format!("open {}", path.display()), e)),
    };
    let mut buf = Vec::new();
    file.take(MAX_CURRENT_LEN + 1)
        .read_to_end(&mut buf)
        .context(|| format!("read {}", path.display()))?;
    parse_current(&buf).map(Some).ok_or_else(|| {
        Error::corruption(
            &path,
            0,
            format!(
                "expected `MANIFEST-NNNNNN\\n`, found \"{}\"{}",
                escape_bytes(&buf[..buf.len().min(MAX_CURRENT_LEN as usize)]),
                if buf.len() as u64 > MAX_CURRENT_LEN {
                    "..."
                } else {
                    ""
                }
            ),
        )
    })
}

/// The number in a canonical `CURRENT` content, or `None`.
fn parse_current(content: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(content).ok()?;
    let digits = text.strip_prefix("MANIFEST-")?.strip_suffix('\n')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let number: u64 = digits.parse().ok()?;
    // Reject names that would not map back to this file (e.g. "MANIFEST-7").
    (manifest_name(number) == text[..text.len() - 1]).then_some(number)
}

/// The error for a `CURRENT` that names `manifest`, which does not exist:
/// [`Error::Corruption`] naming `CURRENT` (in the manifest's directory),
/// the file that exists and says something wrong. A flipped digit in it
/// names an older manifest, long deleted; blaming that file would send the
/// reader looking for the wrong damage.
pub(crate) fn dangling_current(manifest: &Path) -> Error {
    let dir = manifest.parent().unwrap_or(Path::new(""));
    Error::corruption(
        current_path(dir),
        0,
        format!(
            "CURRENT names {}, which does not exist",
            manifest.file_name().unwrap_or_default().to_string_lossy()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::testutil::corruption;
    use super::*;

    #[test]
    fn current_must_be_canonical() {
        let dir = tempfile::tempdir().unwrap();
        let current = dir.path().join("CURRENT");
        for good in [&b"MANIFEST-000001\n"[..], b"MANIFEST-1234567\n"] {
            std::fs::write(&current, good).unwrap();
            assert!(read_current(dir.path()).unwrap().is_some());
        }
        std::fs::write(&current, b"MANIFEST-18446744073709551615\n").unwrap();
        assert_eq!(read_current(dir.path()).unwrap(), Some(u64::MAX));

        for junk in [
            &b""[..],
            b"junk",
            b"MANIFEST-000001",
            b"MANIFEST-000001\n\n",
            b"MANIFEST-000001\r\n",
            b"MANIFEST-1\n",
            b"MANIFEST-0000001\n",
            b"MANIFEST-\n",
            b"MANIFEST-00000a\n",
            b"MANIFEST-+00001\n",
            b"manifest-000001\n",
            b"MANIFEST-18446744073709551616\n",
            b"\xffMANIFEST-000001\n",
            &[b'9'; 5000],
        ] {
            std::fs::write(&current, junk).unwrap();
            let (file, offset, detail) = corruption(read_current(dir.path()).unwrap_err());
            assert_eq!(file, current, "{junk:?}");
            assert_eq!(offset, 0);
            assert!(
                detail.starts_with("expected `MANIFEST-NNNNNN\\n`"),
                "{detail}"
            );
            assert!(detail.len() < 120, "{detail}");
        }
    }
}
