//! Ctrl-C (SIGINT) during `import` or `compact`: clear the progress line,
//! say what was kept, and exit 130 (128 + SIGINT, as a shell reports a
//! process killed by it).
//!
//! Stopping there is safe: every batch an import wrote is in the WAL
//! (acknowledged writes survive a process crash, DESIGN.md 11), and a
//! compaction cut short leaves at most orphan files, which the next open
//! deletes (DESIGN.md 9). So the handler only reports, from a thread of
//! its own (the `ctrlc` crate), and exits.
//!
//! The count an import reports is never less than what is in the
//! database: the import holds [`IN_FLIGHT`] from before each batch's
//! write until its count is recorded ([`write_batch`]), and the handler
//! takes it before it reads the count, so that a batch being written when
//! Ctrl-C comes is finished and counted first. The handler keeps it until
//! the process exits, so no later batch starts. Should the write not
//! finish within [`IN_FLIGHT_WAIT`] (a write stalled behind compaction),
//! the handler exits anyway and says that the batch being written may be
//! kept too.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use crate::format::{count, group};

/// Exit code after an interrupt: 128 + SIGINT (2).
pub const EXIT_INTERRUPTED: i32 = 130;

/// How long the handler waits for a batch being written to finish.
pub const IN_FLIGHT_WAIT: Duration = Duration::from_secs(5);

/// Test hook: milliseconds [`write_batch`] sleeps after a batch is written
/// and before its count is recorded, widening the window in which Ctrl-C
/// finds a batch durable but not yet counted. Set only by kvctl's tests
/// (tests/interrupt.rs); it also says on stderr when a batch is in that
/// window.
pub const TEST_RECORD_DELAY_ENV: &str = "KVCTL_TEST_IMPORT_RECORD_DELAY_MS";

/// What is running when Ctrl-C comes.
#[derive(Debug, Clone)]
pub enum Task {
    /// An import from this source (a path or `<stdin>`).
    Import { source: String },
    /// A compaction (or filter rebuild).
    Compact,
}

/// Pairs the running import has written (whole batches).
static IMPORTED: AtomicU64 = AtomicU64::new(0);

/// Pairs there will be once the batch being written is ([`IMPORTED`] when
/// none is).
static PENDING: AtomicU64 = AtomicU64::new(0);

/// Held by the import from before a batch's write until its count is in
/// [`IMPORTED`], and by the handler from before it reads the count until
/// the process exits.
static IN_FLIGHT: Mutex<()> = Mutex::new(());

static TASK: OnceLock<Task> = OnceLock::new();

/// Runs `write`, which writes the batch after which the first `keys_after`
/// pairs of the running import are in the database, and records the count
/// if it succeeds, both under [`IN_FLIGHT`]: Ctrl-C during the write is
/// handled once the count is recorded (or [`IN_FLIGHT_WAIT`] has passed).
///
/// # Errors
/// What `write` returns; the count is then left as it was.
pub fn write_batch<E>(keys_after: u64, write: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
    let _in_flight = IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner);
    PENDING.store(keys_after, Ordering::SeqCst);
    let result = write();
    if result.is_ok() {
        test_record_delay(keys_after);
        IMPORTED.store(keys_after, Ordering::SeqCst);
    }
    PENDING.store(IMPORTED.load(Ordering::SeqCst), Ordering::SeqCst);
    result
}

/// The test hook of [`TEST_RECORD_DELAY_ENV`].
fn test_record_delay(keys_after: u64) {
    static DELAY: OnceLock<Option<u64>> = OnceLock::new();
    let delay = DELAY.get_or_init(|| {
        std::env::var(TEST_RECORD_DELAY_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
    });
    if let Some(ms) = *delay {
        let _ = writeln!(
            io::stderr(),
            "kvctl: test hook: {} written, recording them in {ms} ms",
            count(keys_after, "pair")
        );
        std::thread::sleep(Duration::from_millis(ms));
    }
}

/// The message for an interrupt of `task` after `imported` pairs, with
/// `in_flight` more in a batch whose write had not finished (it may or may
/// not be kept).
pub fn message(task: &Task, imported: u64, in_flight: u64) -> String {
    match task {
        Task::Import { source } if in_flight > 0 => format!(
            "kvctl: interrupted: the first {} of {source} were imported and are kept, and the \
             next {} (a batch still being written) may be kept too; the rest were not; import \
             again to finish (re-importing a key overwrites it)",
            count(imported, "pair"),
            group(in_flight)
        ),
        Task::Import { source } => format!(
            "kvctl: interrupted: the first {} of {source} were imported and are kept, the rest \
             were not; import again to finish (re-importing a key overwrites it)",
            count(imported, "pair")
        ),
        Task::Compact => "kvctl: interrupted: nothing is lost; the compactions that finished \
                          are kept, and the files of the one cut short are deleted at the next \
                          open; run compact again to finish"
            .to_string(),
    }
}

/// Takes [`IN_FLIGHT`], waiting up to [`IN_FLIGHT_WAIT`] for a batch being
/// written; `None` if it is still being written then.
fn wait_for_in_flight() -> Option<MutexGuard<'static, ()>> {
    let deadline = Instant::now() + IN_FLIGHT_WAIT;
    loop {
        match IN_FLIGHT.try_lock() {
            Ok(g) => return Some(g),
            Err(TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(TryLockError::WouldBlock) if Instant::now() >= deadline => return None,
            Err(TryLockError::WouldBlock) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// Installs the handler for `task` (once per process; a second call
/// keeps the first task). If it cannot be installed, Ctrl-C keeps its
/// default effect.
pub fn on_interrupt(task: Task) {
    if TASK.set(task).is_err() {
        return;
    }
    let _ = ctrlc::set_handler(|| {
        // Kept until the exit: no batch starts after the count is read.
        let in_flight = wait_for_in_flight();
        let imported = IMPORTED.load(Ordering::SeqCst);
        let pending = match in_flight {
            Some(_) => 0,
            None => PENDING.load(Ordering::SeqCst).saturating_sub(imported),
        };
        let mut err = io::stderr().lock();
        if err.is_terminal() {
            // Erase the progress line the bar left.
            let _ = err.write_all(b"\r\x1b[2K");
        }
        if let Some(task) = TASK.get() {
            let _ = writeln!(err, "{}", message(task, imported, pending));
        }
        let _ = err.flush();
        std::process::exit(EXIT_INTERRUPTED);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_was_kept() {
        let t = Task::Import {
            source: "in.tsv".into(),
        };
        assert_eq!(
            message(&t, 2000, 0),
            "kvctl: interrupted: the first 2,000 pairs of in.tsv were imported and are kept, \
             the rest were not; import again to finish (re-importing a key overwrites it)"
        );
        assert_eq!(
            message(&t, 2000, 1000),
            "kvctl: interrupted: the first 2,000 pairs of in.tsv were imported and are kept, \
             and the next 1,000 (a batch still being written) may be kept too; the rest were \
             not; import again to finish (re-importing a key overwrites it)"
        );
        assert!(message(&Task::Compact, 0, 0).contains("nothing is lost"));
    }
}
