//! The `HOTKEYS` file: the read sketch's last window, written by
//! [`crate::Db::close`] (and by dropping the `Db`) when
//! [`crate::Options::hot_keys`] is on, and read by `kvctl hot`.
//!
//! Layout (all integers little-endian; DESIGN.md 12.12):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `siftHOTK` |
//! | 8 | 4 | format version, 1 |
//! | 12 | 4 | width `w` |
//! | 16 | 4 | depth `d` |
//! | 20 | 4 | entry count `n` |
//! | 24 | 8 | `ε` (IEEE 754 binary64 bits) |
//! | 32 | 8 | `δ` (binary64 bits) |
//! | 40 | 8 | window (lookups) |
//! | 48 | 8 | halvings |
//! | 56 | 8 | found lookups `N_found` |
//! | 64 | 8 | absent lookups `N_absent` |
//! | 72 | … | `n` entries: key length (u32), key, found (u64), absent (u64) |
//! | end − 4 | 4 | CRC-32 (IEEE, `crc32fast`) of every byte before it |
//!
//! The file is written to a temporary file, synced, renamed over
//! `HOTKEYS`, and the directory synced, so a crash leaves the old file or
//! the new one.

use std::path::Path;

use crate::filename::hot_keys_path;
use crate::fs::FileSystem;
use crate::{Error, Result};

use super::read_sketch::{HotKey, HotKeys};

/// The file's first 8 bytes.
pub const MAGIC: [u8; 8] = *b"siftHOTK";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
const HEADER_LEN: usize = 72;

/// The bytes of the `HOTKEYS` file for `hot`.
pub fn encode(hot: &HotKeys) -> Vec<u8> {
    let mut b = Vec::with_capacity(HEADER_LEN + 4 + hot.keys.len() * 32);
    b.extend_from_slice(&MAGIC);
    b.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    b.extend_from_slice(&hot.width.to_le_bytes());
    b.extend_from_slice(&hot.depth.to_le_bytes());
    b.extend_from_slice(&(hot.keys.len() as u32).to_le_bytes());
    for v in [
        hot.epsilon.to_bits(),
        hot.delta.to_bits(),
        hot.window,
        hot.halvings,
        hot.found_reads,
        hot.absent_reads,
    ] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for k in &hot.keys {
        b.extend_from_slice(&(k.key.len() as u32).to_le_bytes());
        b.extend_from_slice(&k.key);
        b.extend_from_slice(&k.found.to_le_bytes());
        b.extend_from_slice(&k.absent.to_le_bytes());
    }
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

/// Decodes the bytes of a `HOTKEYS` file; `file` names it in errors.
///
/// # Errors
/// [`Error::Corruption`] for a wrong magic, a checksum mismatch, a
/// truncated file or entries that overrun it (checked in that order, so a
/// damaged version field is corruption); [`Error::UnsupportedVersion`] for
/// an intact file of another format version.
pub fn decode(bytes: &[u8], file: &Path) -> Result<HotKeys> {
    let bad = |offset: usize, detail: &str| Error::corruption(file, offset as u64, detail);
    if bytes.len() < HEADER_LEN + 4 {
        return Err(bad(
            0,
            "HOTKEYS file is truncated (shorter than its header)",
        ));
    }
    if bytes[..8] != MAGIC {
        return Err(bad(0, "not a HOTKEYS file (bad magic)"));
    }
    let (body, tail) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes(tail.try_into().expect("4 bytes"));
    if crc32fast::hash(body) != stored {
        return Err(bad(body.len(), "HOTKEYS checksum mismatch"));
    }
    let u32_at = |o: usize| u32::from_le_bytes(body[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(body[o..o + 8].try_into().expect("8 bytes"));
    let version = u32_at(8);
    if version != FORMAT_VERSION {
        return Err(Error::UnsupportedVersion {
            file: file.to_path_buf(),
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    let n = u32_at(20) as usize;
    let mut keys = Vec::with_capacity(n.min(body.len() / 20));
    let mut o = HEADER_LEN;
    for _ in 0..n {
        if body.len() - o < 4 {
            return Err(bad(o, "HOTKEYS entry overruns the file"));
        }
        let len = u32_at(o) as usize;
        if body.len() - o - 4 < len + 16 {
            return Err(bad(o, "HOTKEYS entry overruns the file"));
        }
        let key = body[o + 4..o + 4 + len].to_vec();
        o += 4 + len;
        keys.push(HotKey {
            key,
            found: u64_at(o),
            absent: u64_at(o + 8),
        });
        o += 16;
    }
    if o != body.len() {
        return Err(bad(o, "HOTKEYS has bytes after its last entry"));
    }
    Ok(HotKeys {
        keys,
        width: u32_at(12),
        depth: u32_at(16),
        epsilon: f64::from_bits(u64_at(24)),
        delta: f64::from_bits(u64_at(32)),
        window: u64_at(40),
        halvings: u64_at(48),
        found_reads: u64_at(56),
        absent_reads: u64_at(64),
    })
}

/// Writes `hot` to `dir/HOTKEYS` through `fs`, by way of
/// `dir/<temp_number>.tmp`, crash-safely (temp file, sync, rename,
/// directory sync).
///
/// # Errors
/// [`Error::Io`] if a step fails (the temporary file is then removed).
pub fn write(fs: &dyn FileSystem, dir: &Path, temp_number: u64, hot: &HotKeys) -> Result<()> {
    crate::util::file::write_replacing(fs, dir, temp_number, &hot_keys_path(dir), &encode(hot))
}

/// Reads `dir/HOTKEYS`: `Ok(None)` if there is none (the sketch was off,
/// or the database was never closed with it on).
///
/// # Errors
/// As [`decode`]; [`Error::Io`] if the file exists but cannot be read.
pub fn read(dir: &Path) -> Result<Option<HotKeys>> {
    let path = hot_keys_path(dir);
    match std::fs::read(&path) {
        Ok(bytes) => decode(&bytes, &path).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(format!("read {}", path.display()), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> HotKeys {
        HotKeys {
            keys: vec![HotKey {
                key: b"k\x01".to_vec(),
                found: 7,
                absent: 2,
            }],
            found_reads: 10,
            absent_reads: 5,
            epsilon: 0.5,
            delta: 0.25,
            width: 6,
            depth: 2,
            window: 1000,
            halvings: 3,
        }
    }

    #[test]
    fn golden_bytes() {
        let b = encode(&sample());
        let mut want: Vec<u8> = Vec::new();
        want.extend_from_slice(b"siftHOTK");
        want.extend_from_slice(&[1, 0, 0, 0, 6, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0]);
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0xe0, 0x3f]); // 0.5
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0xd0, 0x3f]); // 0.25
        want.extend_from_slice(&[0xe8, 3, 0, 0, 0, 0, 0, 0]); // window 1000
        want.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0]);
        want.extend_from_slice(&[10, 0, 0, 0, 0, 0, 0, 0]);
        want.extend_from_slice(&[5, 0, 0, 0, 0, 0, 0, 0]);
        want.extend_from_slice(&[2, 0, 0, 0, b'k', 1]);
        want.extend_from_slice(&[7, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&b[..b.len() - 4], &want[..]);
        assert_eq!(b.len(), 72 + 22 + 4);
        let crc = u32::from_le_bytes(b[b.len() - 4..].try_into().unwrap());
        assert_eq!(crc, crc32fast::hash(&want));
        assert_eq!(decode(&b, Path::new("HOTKEYS")).unwrap(), sample());
    }

    #[test]
    fn damage_and_versions_are_clear_errors() {
        let good = encode(&sample());
        let p = Path::new("HOTKEYS");
        for i in 0..good.len() {
            let mut b = good.clone();
            b[i] ^= 0x10;
            let e = decode(&b, p).unwrap_err();
            assert!(e.is_corruption(), "byte {i}: {e}");
        }
        for len in 0..good.len() {
            assert!(decode(&good[..len], p).unwrap_err().is_corruption());
        }
        // An intact file of version 2.
        let mut b = good[..good.len() - 4].to_vec();
        b[8] = 2;
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        match decode(&b, p) {
            Err(Error::UnsupportedVersion {
                found: 2,
                supported: 1,
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
    }
}
