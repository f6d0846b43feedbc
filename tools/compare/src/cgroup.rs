//! A memory cgroup for the capped mode (`--capped`): the parent makes one
//! per sample, the child process joins it before it allocates anything,
//! and sets its limit once the database is filled, so that the fill runs
//! free and the timed reads run under the cap. Both cgroup versions are
//! handled: v1's `memory.limit_in_bytes` and v2's `memory.max`.

use std::path::{Path, PathBuf};

use crate::engine::Result;

/// Which cgroup hierarchy holds the memory controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// A memory cgroup made by this tool ([`MemoryCgroup::remove`] removes it
/// once every process in it has exited).
#[derive(Debug)]
pub struct MemoryCgroup {
    dir: PathBuf,
    version: Version,
}

/// Where the memory controller is mounted, and its version; `None` if
/// neither hierarchy has it, or this process may not make a cgroup there.
fn controller() -> Option<(PathBuf, Version)> {
    let v1 = Path::new("/sys/fs/cgroup/memory");
    if v1.join("memory.limit_in_bytes").exists() {
        return Some((v1.to_path_buf(), Version::V1));
    }
    let v2 = Path::new("/sys/fs/cgroup");
    let controllers = std::fs::read_to_string(v2.join("cgroup.controllers")).ok()?;
    controllers
        .split_whitespace()
        .any(|c| c == "memory")
        .then(|| (v2.to_path_buf(), Version::V2))
}

impl MemoryCgroup {
    /// Makes the cgroup `name` (with no limit yet).
    ///
    /// # Errors
    /// A message saying why capped runs cannot happen here: no memory
    /// controller, or no permission to make a cgroup (run as root).
    pub fn create(name: &str) -> Result<MemoryCgroup> {
        let (root, version) = controller().ok_or(
            "--capped needs a memory cgroup controller (v1 /sys/fs/cgroup/memory or v2 \
             /sys/fs/cgroup with `memory` in cgroup.controllers); none was found",
        )?;
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).map_err(|e| {
            format!(
                "--capped: cannot make the cgroup {} ({e}); capped runs need root",
                dir.display()
            )
        })?;
        Ok(MemoryCgroup { dir, version })
    }

    /// The cgroup at `dir`, made by [`MemoryCgroup::create`] in another
    /// process.
    ///
    /// # Errors
    /// `dir` holds no memory controller's limit file.
    pub fn existing(dir: &Path) -> Result<MemoryCgroup> {
        let version = if dir.join("memory.limit_in_bytes").exists() {
            Version::V1
        } else if dir.join("memory.max").exists() {
            Version::V2
        } else {
            return Err(format!("{} is not a memory cgroup", dir.display()).into());
        };
        Ok(MemoryCgroup {
            dir: dir.to_path_buf(),
            version,
        })
    }

    /// The cgroup's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Moves the calling process (every thread) into the cgroup. Memory it
    /// touches from then on is charged there.
    ///
    /// # Errors
    /// The write to `cgroup.procs` failed.
    pub fn join_self(&self) -> Result<()> {
        let pid = std::process::id().to_string();
        std::fs::write(self.dir.join("cgroup.procs"), pid)
            .map_err(|e| format!("joining {}: {e}", self.dir.display()))?;
        Ok(())
    }

    /// Sets the limit to `bytes`: the kernel first reclaims the cgroup's
    /// page cache down to it.
    ///
    /// # Errors
    /// The write failed, for example because the cgroup's unreclaimable
    /// memory (anonymous, with no swap) is already above `bytes`.
    pub fn set_limit(&self, bytes: u64) -> Result<()> {
        let file = match self.version {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        };
        std::fs::write(self.dir.join(file), bytes.to_string())
            .map_err(|e| format!("setting {} of {} to {bytes}: {e}", file, self.dir.display()))?;
        Ok(())
    }

    /// Bytes the cgroup is charged for now (anonymous memory and page cache).
    ///
    /// # Errors
    /// The read failed or did not hold a number.
    pub fn usage(&self) -> Result<u64> {
        let file = match self.version {
            Version::V1 => "memory.usage_in_bytes",
            Version::V2 => "memory.current",
        };
        let text = std::fs::read_to_string(self.dir.join(file))?;
        Ok(text.trim().parse()?)
    }

    /// Removes the cgroup (every process in it must have exited).
    pub fn remove(self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Bytes this process has caused to be read from storage so far
/// (`read_bytes` of `/proc/self/io`: page faults on mapped files and
/// `pread`s that missed the page cache alike).
///
/// # Errors
/// `/proc/self/io` is missing or has no `read_bytes` line.
pub fn disk_read_bytes() -> Result<u64> {
    let text = std::fs::read_to_string("/proc/self/io")?;
    text.lines()
        .find_map(|l| l.strip_prefix("read_bytes:"))
        .ok_or_else(|| "/proc/self/io has no read_bytes line".into())
        .and_then(|v| Ok(v.trim().parse()?))
}

/// This process's resident memory (`VmRSS` of `/proc/self/status`), in
/// bytes: its heap and every mapped file page it has touched that the
/// kernel has not reclaimed.
///
/// # Errors
/// `/proc/self/status` is missing or has no `VmRSS` line.
pub fn resident_bytes() -> Result<u64> {
    status_kib("VmRSS:").map(|k| k * 1024)
}

/// The anonymous part of [`resident_bytes`] (`RssAnon`): heap and stacks,
/// without the file pages of memory maps (page cache the kernel may
/// reclaim), in bytes.
///
/// # Errors
/// `/proc/self/status` is missing or has no `RssAnon` line.
pub fn resident_anon_bytes() -> Result<u64> {
    status_kib("RssAnon:").map(|k| k * 1024)
}

fn status_kib(field: &str) -> Result<u64> {
    let text = std::fs::read_to_string("/proc/self/status")?;
    let kib = text
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .ok_or_else(|| format!("/proc/self/status has no {field} line"))?;
    Ok(kib.trim().parse::<u64>()?)
}

/// Total size of the regular files under `dir`, in bytes.
///
/// # Errors
/// A directory could not be listed.
pub fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_dir() {
            total += dir_bytes(&entry.path())?;
        } else if meta.is_file() {
            total += meta.len();
        }
    }
    Ok(total)
}
