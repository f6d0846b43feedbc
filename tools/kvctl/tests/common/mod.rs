//! Running the kvctl binary from the integration tests: spawn it, read its
//! exit code and output.

// Each test binary uses its own subset of these helpers.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The kvctl binary Cargo built for these tests.
pub const KVCTL: &str = env!("CARGO_BIN_EXE_kvctl");

/// The hint kvctl gives with every corruption error
/// (tools/kvctl/src/error.rs).
pub const CORRUPTION_HINT: &str = "the database files are damaged; keep a copy of the \
directory and do not write to it. `kvctl verify DB` shows what is damaged; `kvctl export \
--salvage DB FILE` writes out every entry that can still be read, and lists what cannot";

/// Runs kvctl with `args` and no stdin.
pub fn kvctl(args: &[&str]) -> Output {
    Command::new(KVCTL)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run kvctl")
}

/// Runs kvctl feeding `input` on stdin.
pub fn kvctl_stdin(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(KVCTL)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kvctl");
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// The exit code; panics if kvctl was killed by a signal.
pub fn code(o: &Output) -> i32 {
    o.status.code().expect("kvctl exited by signal")
}

/// Standard output, which must be UTF-8.
pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

/// Standard error, lossily decoded.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts exit 0, showing stderr otherwise.
pub fn ok(o: Output) -> Output {
    assert_eq!(code(&o), 0, "stderr: {}", stderr(&o));
    o
}

/// A UTF-8 path as a command-line argument.
pub fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The files directly in `dir` whose names `keep` accepts, sorted.
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

/// Bytes of the records in the WALs of `dir` (not the files' lengths: a
/// WAL being written is longer, by its preallocated tail); a WAL that
/// cannot be read now counts nothing.
pub fn wal_record_bytes(dir: &Path) -> u64 {
    files_with_ext(dir, "log")
        .iter()
        .filter_map(|w| siftdb::inspect::read_wal(w).ok())
        .filter_map(|w| w.records.last().map(|r| r.offset + 12 + r.batch_len))
        .sum()
}
