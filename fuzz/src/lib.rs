//! Helpers shared by siftdb's cargo-fuzz targets (`fuzz_targets/`) and the
//! seed-corpus generator (`src/bin/seed.rs`). See `README.md` beside
//! `Cargo.toml` for how to run them.
//!
//! # Input modes
//!
//! The file-shaped targets (`sstable`, `wal`, `manifest`, `block`,
//! `write_batch`, `bloom`) read the first input byte as a [`Mode`] and the
//! rest as that mode's data:
//!
//! - [`Mode::Raw`]: the rest *is* the file (or block, or payload), decoded
//!   as it is. Checksums guard the framing, so most mutations stop there.
//! - [`Mode::Fixed`]: the rest is the file with every checksum the
//!   target can locate recomputed first ([`fixup`]), so mutations reach the
//!   decoders behind the CRCs (block entries, properties, index handles,
//!   batch and edit payloads).
//! - [`Mode::Built`]: the rest drives [`arbitrary`] to generate a model
//!   (entries, batches, edits: [`model`]); the engine's own writers encode
//!   it, the encoding must decode to exactly the model, then the model's
//!   [`Mutation`]s damage a copy, which is decoded again.
//!
//! What every mode asserts ([`check`]): each decoder returns `Ok` or
//! `Corruption` / `UnsupportedVersion`, never panics and never allocates
//! more than libFuzzer's `-malloc_limit_mb`; whatever decodes is
//! self-consistent (it re-encodes to something that decodes to the same
//! value; iteration forward, backward and interleaved agree; a seek finds
//! what a linear scan finds).

#![forbid(unsafe_code)]

pub mod check;
pub mod fixup;
pub mod model;

use std::path::{Path, PathBuf};

use arbitrary::{Arbitrary, Unstructured};
use siftdb::inspect::util::crc::crc32;
use siftdb::Error;

/// How a target reads the bytes after the mode byte (see the crate docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The bytes are the file.
    Raw,
    /// The bytes are the file, with checksums recomputed before decoding.
    Fixed,
    /// The bytes drive a generator; its output is encoded, then mutated.
    Built,
}

impl Mode {
    /// The mode byte that selects this mode (what seeds start with).
    pub fn byte(self) -> u8 {
        match self {
            Mode::Raw => 0,
            Mode::Fixed => 1,
            Mode::Built => 2,
        }
    }
}

/// Splits a fuzz input into its mode (first byte modulo 3) and data.
pub fn split_mode(data: &[u8]) -> Option<(Mode, &[u8])> {
    let (&first, rest) = data.split_first()?;
    let mode = match first % 3 {
        0 => Mode::Raw,
        1 => Mode::Fixed,
        _ => Mode::Built,
    };
    Some((mode, rest))
}

/// Panics unless `e` is one of the errors the docs promise for bad bytes.
pub fn assert_corruption(e: &Error, what: &str) {
    // Also a database with keyspaces other than the default, which this
    // build reads but does not serve (DESIGN.md 12.3, 12.8).
    let unsupported_keyspaces = matches!(
        e,
        Error::InvalidArgument(m) if m.contains("does not serve keyspaces yet")
    );
    assert!(
        unsupported_keyspaces
            || matches!(
                e,
                Error::Corruption { .. } | Error::UnsupportedVersion { .. }
            ),
        "{what}: expected Corruption or UnsupportedVersion, got {e:?}"
    );
}

/// A scratch directory for one fuzz iteration: `siftdb-fuzz-<pid>` under
/// `$SIFTDB_FUZZ_SCRATCH`, else `/dev/shm` when it exists, else the system
/// temporary directory. Created empty, removed on drop (a crash leaves it
/// behind, holding the files of the crashing input).
pub struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    /// A fresh, empty scratch directory.
    pub fn new() -> Scratch {
        let root = match std::env::var_os("SIFTDB_FUZZ_SCRATCH") {
            Some(p) => PathBuf::from(p),
            None if Path::new("/dev/shm").is_dir() => PathBuf::from("/dev/shm"),
            None => std::env::temp_dir(),
        };
        let dir = root.join(format!("siftdb-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("create scratch dir {}: {e}", dir.display()));
        Scratch { dir }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// `name` inside the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One change to a valid encoding; positions wrap around the length.
#[derive(Debug, Clone, Arbitrary)]
pub enum Mutation {
    /// XOR the byte at `at` with `mask`.
    Xor {
        /// Position (modulo the length).
        at: u32,
        /// Bits to flip.
        mask: u8,
    },
    /// Overwrite the byte at `at`.
    Set {
        /// Position (modulo the length).
        at: u32,
        /// New value.
        byte: u8,
    },
    /// Insert up to 16 bytes before `at`.
    Insert {
        /// Position (modulo the length + 1).
        at: u32,
        /// Bytes to insert (only the first 16 are used).
        bytes: Vec<u8>,
    },
    /// Cut the encoding to `at` bytes.
    Truncate {
        /// New length (modulo the length).
        at: u32,
    },
}

/// Up to 4 mutations taken from the rest of `u`.
pub fn mutations(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<Mutation>> {
    let mut ms = Vec::new();
    while ms.len() < 4 && !u.is_empty() {
        ms.push(Mutation::arbitrary(u)?);
    }
    Ok(ms)
}

/// Applies `ms` to `bytes`, in order.
pub fn apply(bytes: &mut Vec<u8>, ms: &[Mutation]) {
    for m in ms {
        if bytes.is_empty() {
            return;
        }
        let len = bytes.len();
        match m {
            Mutation::Xor { at, mask } => bytes[*at as usize % len] ^= mask,
            Mutation::Set { at, byte } => bytes[*at as usize % len] = *byte,
            Mutation::Insert { at, bytes: ins } => {
                let at = *at as usize % (len + 1);
                let ins = &ins[..ins.len().min(16)];
                bytes.splice(at..at, ins.iter().copied());
            }
            Mutation::Truncate { at } => bytes.truncate(*at as usize % len),
        }
    }
}

/// The position of the one byte in which `a` and `b` differ, if they have
/// the same length and differ in exactly one byte. Such damage is always
/// detected by a CRC-32, so targets hold it to the strictest oracle.
pub fn single_byte_change(a: &[u8], b: &[u8]) -> Option<usize> {
    if a.len() != b.len() {
        return None;
    }
    let mut diff = a.iter().zip(b).enumerate().filter(|(_, (x, y))| x != y);
    let (p, _) = diff.next()?;
    diff.next().is_none().then_some(p)
}

/// Frames `payload` as one log record (DESIGN.md 12.2), as
/// [`siftdb::inspect::log::LogWriter`] writes it.
pub fn frame(payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_le_bytes();
    let mut out = Vec::with_capacity(12 + payload.len());
    out.extend_from_slice(&len);
    out.extend_from_slice(&crc32(&len).to_le_bytes());
    out.extend_from_slice(&crc32(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}
