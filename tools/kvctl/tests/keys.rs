//! `put` from a file or stdin, `get --json`, `scan --to/--keys-only/
//! --count/--json`, `export --from/--to`, and `completions`.

use std::path::PathBuf;

use serde_json::{json, Value};

mod common;

use common::{code, kvctl, kvctl_stdin, ok, p, stderr, stdout};

/// A database holding `a` .. `f` (values `1` .. `6`) and the key
/// `b\xff` (value a tab).
fn letters_db() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in.tsv");
    std::fs::write(&input, "a\t1\nb\t2\nc\t3\nd\t4\ne\t5\nf\t6\n").unwrap();
    let db = tmp.path().join("db");
    ok(kvctl(&["import", p(&db), p(&input), "-q"]));
    ok(kvctl(&["put", p(&db), "b\\xff", "\\t"]));
    (tmp, db)
}

fn json_of(o: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// Found by a new-user trial: a 1.3 MB value failed with "Argument list
/// too long".
#[test]
fn put_takes_a_large_value_from_a_file_or_stdin() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    // 1.3 MB of every byte value, newlines and tabs included.
    let value: Vec<u8> = (0..1_300_000u32).map(|i| (i * 7 % 256) as u8).collect();
    let file = tmp.path().join("value.bin");
    std::fs::write(&file, &value).unwrap();

    ok(kvctl(&[
        "put",
        p(&db),
        "from-file",
        "--value-file",
        p(&file),
    ]));
    ok(kvctl_stdin(&["put", p(&db), "from-stdin", "-"], &value));
    for key in ["from-file", "from-stdin"] {
        let got = ok(kvctl(&["get", p(&db), key, "--raw"])).stdout;
        assert_eq!(got.len(), value.len(), "{key}");
        assert!(got == value, "{key}: bytes differ");
    }
    // An empty stdin is an empty value; `\x2d` is a value of one `-`.
    ok(kvctl_stdin(&["put", p(&db), "empty", "-"], b""));
    assert_eq!(ok(kvctl(&["get", p(&db), "empty", "--raw"])).stdout, b"");
    ok(kvctl(&["put", p(&db), "dash", "\\x2d"]));
    assert_eq!(ok(kvctl(&["get", p(&db), "dash", "--raw"])).stdout, b"-");

    // Bad uses are usage errors.
    let o = kvctl(&["put", p(&db), "k"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let o = kvctl(&["put", p(&db), "k", "v", "--value-file", p(&file)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let missing = tmp.path().join("missing.bin");
    let o = kvctl(&["put", p(&db), "k", "--value-file", p(&missing)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("open {}", missing.display())),
        "{}",
        stderr(&o)
    );
    assert_eq!(code(&kvctl(&["get", p(&db), "k"])), 1);
}

#[test]
fn get_json_escapes_and_reports_an_absent_key() {
    let (_tmp, db) = letters_db();
    let o = ok(kvctl(&["get", p(&db), "b\\xff", "--json"]));
    assert_eq!(
        json_of(&o),
        json!({"found": true, "key": "b\\xff", "value": "\\x09"})
    );
    let o = kvctl(&["get", p(&db), "zz", "--json"]);
    assert_eq!(code(&o), 1);
    assert_eq!(
        json_of(&o),
        json!({"found": false, "key": "zz", "value": null})
    );
    assert_eq!(stderr(&o), "kvctl: key not found: zz\n");
}

#[test]
fn scan_to_keys_only_count_and_json() {
    let (_tmp, db) = letters_db();
    let scan = |args: &[&str]| stdout(&ok(kvctl(&[&["scan", p(&db)][..], args].concat())));
    assert_eq!(
        scan(&["--from", "b", "--to", "d"]),
        "b\t2\nb\\xff\t\\x09\nc\t3\n"
    );
    assert_eq!(scan(&["--to", "b"]), "a\t1\n");
    assert_eq!(scan(&["--to", "a"]), "");
    assert_eq!(
        scan(&["--reverse", "--from", "e", "--to", "b"]),
        "e\t5\nd\t4\nc\t3\nb\\xff\t\\x09\n"
    );
    assert_eq!(scan(&["--keys-only", "--prefix", "b"]), "b\nb\\xff\n");
    assert_eq!(scan(&["--count"]), "7\n");
    assert_eq!(scan(&["--count", "--from", "c", "--to", "f"]), "3\n");
    assert_eq!(scan(&["--count", "--limit", "2"]), "2\n");

    let o = ok(kvctl(&["scan", p(&db), "--prefix", "b", "--json"]));
    assert_eq!(
        json_of(&o),
        json!({"pairs": [{"key": "b", "value": "2"}, {"key": "b\\xff", "value": "\\x09"}],
               "total": 2})
    );
    let o = ok(kvctl(&[
        "scan",
        p(&db),
        "--to",
        "c",
        "--keys-only",
        "--json",
    ]));
    assert_eq!(
        json_of(&o),
        json!({"pairs": [{"key": "a"}, {"key": "b"}, {"key": "b\\xff"}], "total": 3})
    );
    let o = ok(kvctl(&["scan", p(&db), "--from", "x", "--json"]));
    assert_eq!(json_of(&o), json!({"pairs": [], "total": 0}));
    let o = ok(kvctl(&["scan", p(&db), "--count", "--json"]));
    assert_eq!(json_of(&o), json!({"total": 7}));
    // --count and --keys-only contradict each other.
    assert_eq!(code(&kvctl(&["scan", p(&db), "--count", "--keys-only"])), 2);
}

#[test]
fn export_from_to_exports_a_key_range() {
    let (tmp, db) = letters_db();
    let o = ok(kvctl(&["export", p(&db), "--from", "b\\x00", "--to", "e"]));
    assert_eq!(
        stdout(&o),
        "#kvctl-export escaped v1\nb\\xff\t\\x09\nc\t3\nd\t4\n"
    );
    let o = ok(kvctl(&[
        "export",
        p(&db),
        "--prefix",
        "b",
        "--to",
        "b\\x01",
    ]));
    assert_eq!(stdout(&o), "#kvctl-export escaped v1\nb\t2\n");
    // An inverted range is a usage error (empty_and_inverted_ranges_are_usage_errors).
    let o = kvctl(&["export", p(&db), "--from", "e", "--to", "c"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    // The range imports into a database of its own.
    let part = tmp.path().join("part.tsv");
    ok(kvctl(&["export", p(&db), p(&part), "--to", "c", "-q"]));
    let copy = tmp.path().join("copy");
    ok(kvctl(&["import", p(&copy), p(&part), "-q"]));
    assert_eq!(
        stdout(&ok(kvctl(&["scan", p(&copy)]))),
        "a\t1\nb\t2\nb\\xff\t\\x09\n"
    );
    // Not with --salvage.
    let o = kvctl(&["export", "--salvage", p(&db), p(&part), "--from", "a"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

#[test]
fn completions_for_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let o = ok(kvctl(&["completions", shell]));
        let script = stdout(&o);
        assert!(script.contains("kvctl"), "{shell}");
        assert!(script.contains("keys-only"), "{shell}");
    }
    // The bash script parses and registers a completion for kvctl.
    let bash = stdout(&ok(kvctl(&["completions", "bash"])));
    let o = std::process::Command::new("bash")
        .args(["-c", &format!("{bash}\ncomplete -p kvctl")])
        .output()
        .expect("run bash");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("kvctl"));
    assert_eq!(code(&kvctl(&["completions", "tcsh"])), 2);
}

#[test]
fn delete_range_deletes_a_range_and_explain_names_the_tombstone() {
    let (_tmp, db) = letters_db();
    ok(kvctl(&["delete-range", p(&db), "--from", "b", "--to", "d"]));
    let keys = stdout(&ok(kvctl(&["scan", p(&db), "--keys-only"])));
    assert_eq!(keys, "a\nd\ne\nf\n");
    let o = kvctl(&["get", p(&db), "c"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    // explain agrees with get, and says why.
    let e = json_of(&ok(kvctl(&["explain", p(&db), "c", "--json"])));
    assert_eq!(e["verdict"], "range_deleted");
    assert!(e["range_deletion_seq"].as_u64().unwrap() > 0);
    let text = stdout(&ok(kvctl(&["explain", p(&db), "b\\xff"])));
    assert!(text.contains("deleted by the range deletion"), "{text}");
    // The manifest shows it once flushed (compaction may drop it later).
    ok(kvctl(&["delete-range", p(&db), "--prefix", "e"]));
    assert_eq!(
        stdout(&ok(kvctl(&["scan", p(&db), "--keys-only"]))),
        "a\nd\nf\n"
    );
    // No bounds is a usage error; --all deletes everything.
    let o = kvctl(&["delete-range", p(&db)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--all"), "{}", stderr(&o));
    // An empty prefix (an unset shell variable) is not --all; an inverted
    // range is a usage error, not a silent no-op.
    let o = kvctl(&["delete-range", p(&db), "--prefix", ""]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let o = kvctl(&["delete-range", p(&db), "--from", "c", "--to", "a"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stdout(&ok(kvctl(&["scan", p(&db), "--count"]))), "3\n");
    ok(kvctl(&["delete-range", p(&db), "--all"]));
    assert_eq!(stdout(&ok(kvctl(&["scan", p(&db), "--count"]))), "0\n");
}

/// Runs kvctl expecting a usage error (exit 2, nothing on stdout) and
/// returns its stderr.
fn usage_error(args: &[&str]) -> String {
    let o = kvctl(args);
    assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
    assert_eq!(stdout(&o), "", "{args:?}");
    stderr(&o)
}

/// Found by a new-user trial: `scan --from z --to a` and `export` printed
/// nothing and exited 0 where `delete-range` refused; `delete-range
/// --prefix b --from c` wrote nothing and said nothing.
#[test]
fn empty_and_inverted_ranges_are_usage_errors() {
    let (tmp, db) = letters_db();
    let out = tmp.path().join("out.tsv");
    let inverted = "kvctl: scan: --from sorts after --to, so the range is inverted\n";
    assert_eq!(
        usage_error(&["scan", p(&db), "--from", "z", "--to", "a"]),
        inverted
    );
    assert_eq!(
        usage_error(&["scan", p(&db), "--from", "z", "--to", "a", "--count"]),
        inverted
    );
    assert_eq!(
        usage_error(&["export", p(&db), p(&out), "--from", "z", "--to", "a"]),
        "kvctl: export: --from sorts after --to, so the range is inverted\n"
    );
    assert!(!out.exists());
    assert_eq!(
        usage_error(&["delete-range", p(&db), "--from", "c", "--to", "a"]),
        "kvctl: delete-range: --from sorts after --to, so the range is inverted; nothing was \
         written\n"
    );
    // With --reverse, --from is the largest key: `--from z --to a` is the
    // keys <= z and > a, and `--from a --to z` is inverted.
    assert_eq!(
        stdout(&ok(kvctl(&[
            "scan",
            p(&db),
            "--reverse",
            "--from",
            "z",
            "--to",
            "a",
            "--keys-only"
        ]))),
        "f\ne\nd\nc\nb\\xff\nb\n"
    );
    assert_eq!(
        usage_error(&["scan", p(&db), "--reverse", "--from", "a", "--to", "z"]),
        "kvctl: scan: --from sorts before --to, so the range is inverted (with --reverse, \
         --from is the largest key)\n"
    );
    // Bounds that exclude each other.
    let disjoint = "the range holds no key (--prefix and --from/--to do not overlap)";
    assert_eq!(
        usage_error(&["delete-range", p(&db), "--prefix", "b", "--from", "c"]),
        format!("kvctl: delete-range: {disjoint}; nothing was written\n")
    );
    // A read over such bounds is an empty result, as a cursor past the
    // prefix gives: nothing to refuse.
    assert_eq!(
        stdout(&ok(kvctl(&[
            "scan",
            p(&db),
            "--prefix",
            "b",
            "--from",
            "c"
        ]))),
        ""
    );
    assert_eq!(
        stdout(&ok(kvctl(&[
            "scan",
            p(&db),
            "--prefix",
            "b",
            "--from",
            "a",
            "--reverse"
        ]))),
        ""
    );
    assert_eq!(
        stdout(&ok(kvctl(&[
            "export",
            p(&db),
            "--prefix",
            "b",
            "--to",
            "a"
        ]))),
        "#kvctl-export escaped v1\n"
    );
    // --from equal to --to: --to is exclusive.
    assert_eq!(
        usage_error(&["delete-range", p(&db), "--from", "c", "--to", "c"]),
        "kvctl: delete-range: the range holds no key (--from equals --to, which is \
         exclusive); nothing was written\n"
    );
    assert_eq!(
        usage_error(&["scan", p(&db), "--from", "c", "--to", "c"]),
        "kvctl: scan: the range holds no key (--from equals --to, which is exclusive)\n"
    );
    // Nothing was deleted; a range that holds keys still works.
    assert_eq!(stdout(&ok(kvctl(&["scan", p(&db), "--count"]))), "7\n");
    assert_eq!(
        stdout(&ok(kvctl(&[
            "scan",
            p(&db),
            "--prefix",
            "b",
            "--from",
            "b\\x01",
            "--keys-only"
        ]))),
        "b\\xff\n"
    );
}

/// Found by a new-user trial: an import flushing a memtable that held only
/// a range deletion said "1 SSTable flushed" where none was written.
#[test]
fn import_counts_only_the_sstables_a_flush_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let empty = tmp.path().join("empty.tsv");
    std::fs::write(&empty, "").unwrap();
    ok(kvctl(&["import", p(&db), p(&empty)]));
    ok(kvctl(&["delete-range", p(&db), "--from", "a", "--to", "b"]));
    let out = stdout(&ok(kvctl(&["import", p(&db), p(&empty)])));
    let second = out.lines().nth(1).unwrap_or_default();
    assert_eq!(
        second, "0 SSTables flushed, 0 compactions; the database now has 0 SSTables, 0 B",
        "{out}"
    );
    // A memtable holding a range deletion and a put writes one table.
    ok(kvctl(&["delete-range", p(&db), "--from", "c", "--to", "d"]));
    let one = tmp.path().join("one.tsv");
    std::fs::write(&one, "k\tv\n").unwrap();
    let out = stdout(&ok(kvctl(&["import", p(&db), p(&one)])));
    let second = out.lines().nth(1).unwrap_or_default();
    assert!(
        second.starts_with("1 SSTable flushed, 0 compactions; the database now has 1 SSTable, "),
        "{out}"
    );
}
