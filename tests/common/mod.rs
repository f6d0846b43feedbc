//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod campaign;
pub mod fault_fs;
pub mod pause;
pub mod power_fs;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use siftdb::{Db, Options, Slice};

/// Options with a small write buffer so tests produce several SSTables.
pub fn small_options() -> Options {
    let mut o = Options::default();
    o.write_buffer_size = 64 << 10;
    o.block_size = 1024;
    o
}

/// Opens `dir` with `opts`, panicking with the error on failure.
pub fn open(dir: &Path, opts: &Options) -> Db {
    Db::open_with(dir, opts.clone()).unwrap_or_else(|e| panic!("open {}: {e}", dir.display()))
}

/// Collects a range iterator into UTF-8 keys, panicking on errors.
pub fn keys<I: Iterator<Item = siftdb::Result<(Slice, Slice)>>>(it: I) -> Vec<String> {
    it.map(|r| String::from_utf8(r.unwrap().0.into_vec()).unwrap())
        .collect()
}

/// An iterator's item as owned bytes, panicking on an error: for
/// comparing scans with a `BTreeMap<Vec<u8>, Vec<u8>>` model.
pub fn owned(r: siftdb::Result<(Slice, Slice)>) -> (Vec<u8>, Vec<u8>) {
    let (k, v) = r.unwrap();
    (k.into_vec(), v.into_vec())
}

/// Reads a gzipped file from tests/data line by line.
pub fn gz_lines(name: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let f = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut s = String::new();
    flate2::read::GzDecoder::new(f)
        .read_to_string(&mut s)
        .unwrap();
    BufReader::new(s.as_bytes())
        .lines()
        .map(|l| l.unwrap())
        .collect()
}

/// Makes a FIFO at `path` (with `mkfifo`), panicking if that fails.
pub fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Runs `f` on a thread named `name` (a pause can select a thread by
/// name: [`pause::PauseOnce::for_thread`]).
pub fn spawn_named<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .unwrap()
}

/// A small deterministic generator (SplitMix64), so tests need no rand crate.
pub struct Rng(pub u64);

impl Rng {
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// A fresh scratch directory for a test, on tmpfs (`/dev/shm`) when the
/// machine has one, so that campaigns running thousands of opens are not
/// bound by `fsync` latency; otherwise in the system temp directory. The
/// durability being tested (against process crashes and corrupted bytes)
/// does not depend on the file system.
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::Builder::new().prefix("siftdb-").tempdir_in(shm) {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

/// CRC-32 (IEEE, reflected, as `crc32fast` and DESIGN.md section 12 use),
/// computed bit by bit so that tests can write on-disk structures by hand
/// without borrowing the engine's code.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xedb8_8320 & mask);
        }
    }
    !crc
}

/// Frames `payload` as one log record (DESIGN.md 12.2): `len`, `crc32(len)`,
/// `crc32(payload)`, payload.
pub fn log_record(payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_le_bytes();
    let mut v = len.to_vec();
    v.extend_from_slice(&crc32(&len).to_le_bytes());
    v.extend_from_slice(&crc32(payload).to_le_bytes());
    v.extend_from_slice(payload);
    v
}

/// Every regular file directly in `dir`, by name, with its full contents.
/// Tests compare two of these to prove that a failed open changed nothing.
pub fn dir_contents(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            let name = entry.file_name().into_string().unwrap();
            out.insert(name, std::fs::read(entry.path()).unwrap());
        }
    }
    out
}

/// Copies every regular file directly in `src` into `dst` (created if
/// missing).
pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), dst.join(entry.file_name())).unwrap();
        }
    }
}

/// The paths of the files directly in `dir` whose names `keep` accepts,
/// sorted.
pub fn files_where(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(&keep))
        .collect();
    v.sort();
    v
}

/// The files directly in `dir` named `*.{ext}` (`"sst"`, `"log"`), sorted.
pub fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let suffix = format!(".{ext}");
    files_where(dir, |n| n.ends_with(&suffix))
}

/// The numbers of the `*.log` files in `dir`, ascending.
pub fn wal_numbers(dir: &Path) -> Vec<u64> {
    let mut v: Vec<u64> = files_with_ext(dir, "log")
        .iter()
        .map(|p| p.file_stem().unwrap().to_str().unwrap().parse().unwrap())
        .collect();
    v.sort_unstable();
    v
}

/// The one file directly in `dir` whose name `keep` accepts; panics if
/// there is none or more than one.
pub fn only_file(dir: &Path, keep: impl Fn(&str) -> bool) -> PathBuf {
    let mut v = files_where(dir, keep);
    assert_eq!(
        v.len(),
        1,
        "expected one matching file in {}: {v:?}",
        dir.display()
    );
    v.pop().unwrap()
}

/// The names of the files directly in `dir`, sorted.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// A command that runs one test of the current test binary, alone and
/// with its output uncaptured: how a test starts a child process that is a
/// copy of itself (the child test checks an environment variable to know
/// it is the child).
pub fn child_test_command(test_name: &str) -> std::process::Command {
    let exe = std::env::current_exe().unwrap();
    let mut c = std::process::Command::new(exe);
    c.args(["--exact", test_name, "--nocapture", "--test-threads=1"]);
    c
}

/// Reads a `u64` from environment variable `name`, or `default` if unset.
pub fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={s:?} is not a number")),
        Err(_) => default,
    }
}

/// A custom prefix extractor (not built in): the key up to its first `-`.
#[derive(Debug)]
pub struct UpToDash;

impl siftdb::filter::PrefixExtractor for UpToDash {
    fn name(&self) -> &str {
        "test.up_to_dash"
    }
    fn prefix<'a>(&self, key: &'a [u8]) -> Option<&'a [u8]> {
        key.iter().position(|&b| b == b'-').map(|i| &key[..i])
    }
}
