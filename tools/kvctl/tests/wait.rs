//! `--wait[=SECS]` on the writers: concurrent `kvctl put` processes wait
//! for each other instead of failing with exit 4.

use std::process::{Command, Stdio};

mod common;

use common::{code, kvctl, kvctl_stdin, ok, p, stderr, stdout, KVCTL};

/// Found by a new-user trial: 16 of 20 concurrent `kvctl put` calls
/// failed with exit 4. With --wait every one gets its turn, even while
/// another handle holds the lock for longer than the engine's own 200 ms
/// retry when they start.
#[test]
fn twenty_concurrent_puts_with_wait_all_succeed() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    ok(kvctl(&["put", p(&db), "start", "0"]));
    let held = siftdb::Db::open(&db).unwrap();
    let spawn = |i: usize, wait: bool| {
        let mut args = vec!["put".to_string()];
        if wait {
            args.push("--wait".into());
        }
        args.extend([p(&db).to_string(), format!("k{i:02}"), format!("v{i}")]);
        Command::new(KVCTL)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // Without --wait, a put fails while the lock stays held.
    let o = spawn(99, false).wait_with_output().unwrap();
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let children: Vec<_> = (0..20).map(|i| spawn(i, true)).collect();
    std::thread::sleep(std::time::Duration::from_millis(400));
    drop(held);
    for (i, c) in children.into_iter().enumerate() {
        let o = c.wait_with_output().unwrap();
        assert_eq!(code(&o), 0, "put {i}: {}", stderr(&o));
    }
    let keys = stdout(&ok(kvctl(&[
        "scan",
        p(&db),
        "--keys-only",
        "--prefix",
        "k",
    ])));
    let want: String = (0..20).map(|i| format!("k{i:02}\n")).collect();
    assert_eq!(keys, want);
    assert_eq!(stdout(&ok(kvctl(&["get", p(&db), "k07"]))), "v7\n");
}

/// With a bound, a writer waits that long for a lock another handle keeps,
/// then fails with exit 4 saying so; without --wait it fails at once and
/// the hint names --wait. Once the lock is let go, import, put and delete
/// with --wait go through.
#[test]
fn wait_gives_up_after_its_bound_and_each_writer_takes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    ok(kvctl(&["put", p(&db), "a", "1"]));
    let held = siftdb::Db::open(&db).unwrap();
    let o = kvctl(&["put", p(&db), "b", "2"]);
    assert_eq!(code(&o), 4);
    assert!(
        stderr(&o).contains("pass --wait to wait for it"),
        "{}",
        stderr(&o)
    );
    let o = kvctl(&["delete", "--wait=0.3", p(&db), "a"]);
    assert_eq!(code(&o), 4);
    assert!(
        stderr(&o).contains("another process kept the database open for the 0.3 s --wait allowed"),
        "{}",
        stderr(&o)
    );
    assert_eq!(code(&kvctl(&["put", "--wait=soon", p(&db), "b", "2"])), 2);

    // A writer waiting without a bound goes through once the lock is let
    // go.
    let waiting = Command::new(KVCTL)
        .args(["put", "--wait", p(&db), "b", "2"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(held);
    let o = waiting.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    ok(kvctl(&["delete", "--wait=5", p(&db), "a"]));
    ok(kvctl_stdin(
        &["import", "--wait=5", p(&db), "-", "-q"],
        b"c\t3\n",
    ));
    assert_eq!(stdout(&ok(kvctl(&["scan", p(&db)]))), "b\t2\nc\t3\n");
}
