//! Ctrl-C (SIGINT) during `import` or `compact`: clear the progress line,
//! say what was kept, and exit 130 (128 + SIGINT, as a shell reports a
//! process killed by it).
//!
//! Stopping there is safe: every batch an import wrote is in the WAL
//! (acknowledged writes survive a process crash, DESIGN.md 11), and a
//! compaction cut short leaves at most orphan files, which the next open
//! deletes (DESIGN.md 9). So the handler only reports, from a thread of
//! its own (the `ctrlc` crate), and exits.

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::format::count;

/// Exit code after an interrupt: 128 + SIGINT (2).
pub const EXIT_INTERRUPTED: i32 = 130;

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

static TASK: OnceLock<Task> = OnceLock::new();

/// Records that the first `n` pairs of the running import are written.
pub fn imported(n: u64) {
    IMPORTED.store(n, Ordering::SeqCst);
}

/// The message for an interrupt of `task` after `imported` pairs.
pub fn message(task: &Task, imported: u64) -> String {
    match task {
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

/// Installs the handler for `task` (once per process; a second call
/// keeps the first task). If it cannot be installed, Ctrl-C keeps its
/// default effect.
pub fn on_interrupt(task: Task) {
    if TASK.set(task).is_err() {
        return;
    }
    let _ = ctrlc::set_handler(|| {
        let mut err = io::stderr().lock();
        if err.is_terminal() {
            // Erase the progress line the bar left.
            let _ = err.write_all(b"\r\x1b[2K");
        }
        if let Some(task) = TASK.get() {
            let _ = writeln!(err, "{}", message(task, IMPORTED.load(Ordering::SeqCst)));
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
            message(&t, 2000),
            "kvctl: interrupted: the first 2,000 pairs of in.tsv were imported and are kept, \
             the rest were not; import again to finish (re-importing a key overwrites it)"
        );
        assert!(message(&Task::Compact, 0).contains("nothing is lost"));
    }
}
