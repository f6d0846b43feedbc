//! The capped mode (`--capped`): reads of a database larger than the
//! memory the engine may use. One sample of one engine:
//!
//! 1. the parent makes a memory cgroup with no limit;
//! 2. a child process joins it and fills and settles the database, then
//!    exits, so its heap is gone and only the database's page cache is
//!    still charged to the cgroup;
//! 3. the parent limits the cgroup (the kernel reclaims its page cache
//!    down to the limit);
//! 4. a second child joins it, reopens the database with the capped block
//!    cache and runs the read workloads under the limit.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::cgroup::{dir_bytes, MemoryCgroup};
use crate::engine::{EngineKind, Result};
use crate::workloads::{self, FillOutcome, RunConfig, SampleResult, Workload};

/// How large the cap and the block cache are.
#[derive(Debug, Clone)]
pub struct CapSettings {
    /// The cap in bytes; `None`: `fraction` of the filled database's bytes.
    pub cap_bytes: Option<u64>,
    /// The cap as a fraction of the filled database's file bytes.
    pub fraction: f64,
    /// Each engine's block cache as a fraction of the cap.
    pub cache_fraction: f64,
}

/// One half of a capped sample, sent to a child process as JSON on stdin.
#[derive(Debug, Serialize, Deserialize)]
enum ChildJob {
    /// Fill and settle the database at `path`; answer a [`FillOutcome`].
    Fill {
        cgroup: PathBuf,
        kind: EngineKind,
        cfg: RunConfig,
        round: usize,
        path: PathBuf,
    },
    /// Run the read workloads on it; answer their [`SampleResult`]s.
    Read {
        cgroup: PathBuf,
        kind: EngineKind,
        workloads: Vec<Workload>,
        cfg: RunConfig,
        round: usize,
        path: PathBuf,
    },
}

/// The child's side (`--child`): reads its job, joins the cgroup before
/// anything else is allocated, runs the job and prints its answer.
///
/// # Errors
/// A malformed job, a failed cgroup join, or the workloads' errors.
pub fn run_child() -> Result<()> {
    let job: ChildJob = serde_json::from_reader(std::io::stdin().lock())?;
    let mut out = std::io::stdout().lock();
    match job {
        ChildJob::Fill {
            cgroup,
            kind,
            cfg,
            round,
            path,
        } => {
            MemoryCgroup::existing(&cgroup)?.join_self()?;
            let fill = workloads::fill_read_database(kind, &cfg, round, &path)?;
            serde_json::to_writer(&mut out, &fill)?;
        }
        ChildJob::Read {
            cgroup,
            kind,
            workloads,
            cfg,
            round,
            path,
        } => {
            MemoryCgroup::existing(&cgroup)?.join_self()?;
            let results = workloads::run_reads(kind, &workloads, &cfg, round, &path)?;
            serde_json::to_writer(&mut out, &results)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Runs `job` in a child process (this executable with `--child`) and
/// parses its answer.
fn spawn<T: DeserializeOwned>(job: &ChildJob) -> Result<T> {
    let mut child = Command::new(std::env::current_exe()?)
        .arg("--child")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let stdin = child.stdin.take().ok_or("the child has no stdin")?;
    serde_json::to_writer(stdin, job)?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(format!("a capped child process failed ({})", out.status).into());
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// One capped sample of `group` (read workloads) on engine `kind`, in the
/// steps of this module's documentation. Every result carries the
/// database's bytes, the cap and the block cache.
///
/// # Errors
/// No memory cgroup can be made (not root, no controller), a child failed,
/// or the limit could not be set.
pub fn run_group(
    kind: EngineKind,
    group: &[Workload],
    cfg: &RunConfig,
    round: usize,
    cap: &CapSettings,
) -> Result<Vec<SampleResult>> {
    let name = format!(
        "siftdb-compare-{}-{}-{round}",
        std::process::id(),
        kind.name()
    );
    let cg = MemoryCgroup::create(&name)?;
    let outcome = run_in(&cg, kind, group, cfg, round, cap);
    cg.remove();
    outcome
}

fn run_in(
    cg: &MemoryCgroup,
    kind: EngineKind,
    group: &[Workload],
    cfg: &RunConfig,
    round: usize,
    cap: &CapSettings,
) -> Result<Vec<SampleResult>> {
    let (_tmp, path) = workloads::sample_dir(cfg)?;
    let cgroup = cg.dir().to_path_buf();
    let fill: FillOutcome = spawn(&ChildJob::Fill {
        cgroup: cgroup.clone(),
        kind,
        cfg: cfg.clone(),
        round,
        path: path.clone(),
    })?;
    let db_bytes = dir_bytes(&path)?;
    let cap_bytes = cap
        .cap_bytes
        .unwrap_or((db_bytes as f64 * cap.fraction) as u64);
    let cache_bytes = (cap_bytes as f64 * cap.cache_fraction) as u64;
    cg.set_limit(cap_bytes)?;
    let mut read_cfg = cfg.clone();
    read_cfg.engine.cache_bytes = Some(cache_bytes);
    let mut results: Vec<SampleResult> = spawn(&ChildJob::Read {
        cgroup,
        kind,
        workloads: group.to_vec(),
        cfg: read_cfg,
        round,
        path: path.clone(),
    })?;
    for r in &mut results {
        r.tree = Some(fill.tree.clone());
        r.settle_secs = Some(fill.settle_secs);
        r.cap_bytes = Some(cap_bytes);
        r.cache_bytes = Some(cache_bytes);
        r.db_bytes = Some(db_bytes);
    }
    Ok(results)
}
