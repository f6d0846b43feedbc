//! Ctrl-C during `import`: a message saying what was kept, exit 130.

use std::process::{Command, Stdio};

mod common;

use common::{code, kvctl, ok, p, stderr, stdout, KVCTL};

/// Found by a new-user trial: Ctrl-C during `import` exited 130 with no
/// message. It now says how many pairs were imported, and exactly those
/// are in the database.
#[test]
fn an_interrupted_import_says_how_many_pairs_it_kept() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let mut child = Command::new(KVCTL)
        .args(["import", p(&db), "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Two whole batches of 1,000 lines and half a third; stdin stays open,
    // so the import waits for more with the half batch unwritten.
    let lines: String = (0..2500).map(|i| format!("k{i:05}\tv{i}\n")).collect();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(lines.as_bytes()).unwrap();
    stdin.flush().unwrap();
    // Wait until the database's WAL holds the two batches (each about
    // 12 KB), then interrupt.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let wal_bytes: u64 = if db.exists() {
            common::files_with_ext(&db, "log")
                .iter()
                .map(|w| std::fs::metadata(w).map_or(0, |m| m.len()))
                .sum()
        } else {
            0
        };
        if wal_bytes > 20_000 || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(code(&o), 130, "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "kvctl: interrupted: the first 2,000 pairs of <stdin> were imported and are kept, the \
         rest were not; import again to finish (re-importing a key overwrites it)\n"
    );
    assert_eq!(stdout(&ok(kvctl(&["scan", p(&db), "--count"]))), "2000\n");
    assert_eq!(stdout(&ok(kvctl(&["get", p(&db), "k01999"]))), "v1999\n");
}
