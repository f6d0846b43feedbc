//! `kvctl checkpoint DB DIR`: the copy holds exactly the writes made
//! before the command, verifies, and opens for reading and writing; an
//! existing DIR is bad input (2), a held lock I/O (4) unless `--wait`.

mod common;

use common::{code, kvctl, kvctl_stdin, ok, p, stderr, stdout};

#[test]
fn a_checkpoint_is_a_whole_database_of_the_writes_before_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, cp) = (tmp.path().join("db"), tmp.path().join("backups/cp"));
    let lines: String = (0..2000)
        .map(|i| format!("key{i:05}\tvalue {i}\n"))
        .collect();
    ok(kvctl_stdin(&["import", p(&db), "-"], lines.as_bytes()));
    ok(kvctl(&["put", p(&db), "memtable-key", "in the WAL"]));
    let before = stdout(&ok(kvctl(&["scan", p(&db)])));

    let o = ok(kvctl(&["checkpoint", "--json", p(&db), p(&cp)]));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["path"], p(&cp));
    assert_eq!(j["sequence"], 2001);
    assert!(j["tables_linked"].as_u64().unwrap() >= 1, "{j}");
    assert_eq!(j["tables_copied"], 0);
    assert_eq!(j["stale_temp_removed"], false);
    assert!(j["wal_bytes"].as_u64().unwrap() > 0, "{j}");
    assert!(j["seconds"].as_f64().is_some());

    ok(kvctl(&["put", p(&db), "after", "not in the checkpoint"]));
    ok(kvctl(&["verify", p(&cp)]));
    assert_eq!(stdout(&ok(kvctl(&["scan", p(&cp)]))), before);
    assert_eq!(code(&kvctl(&["get", p(&cp), "after"])), 1);
    assert_eq!(
        stdout(&ok(kvctl(&["get", p(&cp), "memtable-key"]))),
        "in the WAL\n"
    );
    // An ordinary database: writable, and its own.
    ok(kvctl(&["put", p(&cp), "only-in-the-copy", "x"]));
    assert_eq!(code(&kvctl(&["get", p(&db), "only-in-the-copy"])), 1);

    // Text output.
    let again = tmp.path().join("cp2");
    let text = stdout(&ok(kvctl(&["checkpoint", p(&db), p(&again)])));
    assert!(
        text.starts_with(&format!(
            "checkpoint of {} at sequence 2,002 in {}",
            p(&db),
            p(&again)
        )),
        "{text}"
    );
    assert!(text.contains("linked, 0 copied"), "{text}");

    // An existing target is bad input, and nothing changes.
    let o = kvctl(&["checkpoint", p(&db), p(&cp)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
    assert!(!tmp.path().join("backups/cp.checkpoint-tmp").exists());
    ok(kvctl(&["verify", p(&cp)]));

    // A missing database is bad input too.
    let o = kvctl(&[
        "checkpoint",
        p(&tmp.path().join("nothing")),
        p(&tmp.path().join("cp3")),
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

#[test]
fn a_held_database_waits_with_wait_and_fails_without() {
    let tmp = tempfile::tempdir().unwrap();
    let (db, cp) = (tmp.path().join("db"), tmp.path().join("cp"));
    ok(kvctl(&["put", p(&db), "k", "v"]));
    let held = siftdb::Db::open(&db).unwrap();
    let o = kvctl(&["checkpoint", p(&db), p(&cp)]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    assert!(stderr(&o).contains("--wait"), "{}", stderr(&o));
    assert!(!cp.exists());
    let waiter = std::thread::spawn({
        let (db, cp) = (db.clone(), cp.clone());
        move || kvctl(&["checkpoint", "--wait=30", p(&db), p(&cp)])
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    held.close().unwrap();
    ok(waiter.join().unwrap());
    assert_eq!(stdout(&ok(kvctl(&["get", p(&cp), "k"]))), "v\n");
}
