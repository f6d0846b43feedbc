//! kvctl and keyspaces (DESIGN.md 2): the global `--keyspace NAME` of every
//! command that reads or writes keys, `options --keyspace NAME` (the
//! keyspace's stored settings), the commands that cover the whole database
//! refusing it, a missing keyspace (exit 2),
//! `keyspace list|create|drop`, the JSON `keyspaces` of `stats` and `info`,
//! keyspace names in `wal dump`, and export from one keyspace into
//! another.

use std::path::{Path, PathBuf};

mod common;

use common::{code, files_where, files_with_ext, kvctl, kvctl_stdin, ok, p, stderr, stdout};
use serde_json::Value;

/// A temporary directory, and in it a database whose default keyspace
/// holds `k` (one table) and whose keyspace `logs` (id 1) holds `k`,
/// `l1`, `l2` and `m` (one table).
fn two_keyspaces() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = siftdb::Db::open(&dir).unwrap();
    db.put("k", "in default").unwrap();
    db.flush().unwrap();
    let logs = db.keyspace("logs").unwrap();
    for (k, v) in [("k", "in logs"), ("l1", "1"), ("l2", "2"), ("m", "3")] {
        logs.put(k, v).unwrap();
    }
    logs.flush().unwrap();
    drop(logs);
    db.close().unwrap();
    (tmp, dir)
}

fn json(o: std::process::Output) -> Value {
    serde_json::from_str(&stdout(&ok(o))).unwrap()
}

/// The pairs of keyspace `name` of the database at `dir`, read through
/// the library.
fn pairs(dir: &Path, name: &str) -> Vec<(String, String)> {
    let db = siftdb::Db::open_read_only(dir, siftdb::Options::default()).unwrap();
    let ks = db.existing_keyspace(name).unwrap();
    ks.iter()
        .map(|e| {
            let (k, v) = e.unwrap();
            (
                String::from_utf8(k.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            )
        })
        .collect()
}

fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The reading commands show the keyspace `--keyspace` names, before or
/// after the subcommand, and the default without it.
#[test]
fn reading_commands_honour_keyspace() {
    let (_tmp, dir) = two_keyspaces();
    let d = p(&dir);
    let get = |args: &[&str]| stdout(&ok(kvctl(args)));
    assert_eq!(get(&["get", d, "k"]), "in default\n");
    assert_eq!(get(&["get", d, "k", "--keyspace", "logs"]), "in logs\n");
    assert_eq!(get(&["--keyspace", "logs", "get", d, "k"]), "in logs\n");
    assert_eq!(code(&kvctl(&["get", d, "m"])), 1);
    assert_eq!(
        get(&["scan", d, "--keyspace", "logs", "--keys-only"]),
        "k\nl1\nl2\nm\n"
    );
    assert_eq!(get(&["scan", d, "--keys-only"]), "k\n");
    assert_eq!(
        get(&["export", d, "--keyspace", "logs", "--prefix", "l"]),
        "#kvctl-export escaped v1\nl1\t1\nl2\t2\n"
    );

    let stats = json(kvctl(&["stats", d, "--json", "--keyspace", "logs"]));
    assert_eq!(stats["keyspace"], "logs");
    assert_eq!(stats["total"]["entries"], 4);
    assert_eq!(stats["total"]["files"], 1);
    let stats = json(kvctl(&["stats", d, "--json"]));
    assert_eq!(stats["keyspace"], "default");
    assert_eq!(stats["total"]["entries"], 1);

    let info = json(kvctl(&["info", d, "--json", "--keyspace", "logs"]));
    assert_eq!(info["keyspace"], "logs");
    assert_eq!(info["total"]["entries"], 4);
    assert_eq!(json(kvctl(&["info", d, "--json"]))["total"]["entries"], 1);

    let distinct = json(kvctl(&["distinct", d, "--json", "--keyspace", "logs"]));
    assert_eq!(distinct["total"]["estimate"], 4);
    assert_eq!(distinct["tables"].as_array().unwrap().len(), 1);
    assert_eq!(distinct["tables"][0]["distinct_keys"], 4);
    assert_eq!(
        json(kvctl(&["distinct", d, "--json"]))["total"]["estimate"],
        1
    );

    let list = json(kvctl(&["sst", "list", d, "--json", "--keyspace", "logs"]));
    let tables = list["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 1);
    assert_eq!(tables[0]["entries"], 4);
    assert_eq!(tables[0]["largest_key"], "m");
    let list = json(kvctl(&["sst", "list", d, "--json"]));
    assert_eq!(list["tables"][0]["largest_key"], "k");
    assert_eq!(list["tables"].as_array().unwrap().len(), 1);

    let filters = json(kvctl(&["filters", d, "--json", "--keyspace", "logs"]));
    assert_eq!(filters["filters"].as_array().unwrap().len(), 1);
    assert_eq!(filters["memory"]["keys"], 4);
    assert_eq!(json(kvctl(&["filters", d, "--json"]))["memory"]["keys"], 1);

    let e = json(kvctl(&["explain", d, "k", "--json", "--keyspace", "logs"]));
    assert_eq!(e["verdict"], "value");
    assert_eq!(e["value"], "in logs");
    assert_eq!(
        json(kvctl(&["explain", d, "k", "--json"]))["value"],
        "in default"
    );
    let e = json(kvctl(&[
        "explain",
        d,
        "--prefix",
        "l",
        "--json",
        "--keyspace",
        "logs",
    ]));
    // After the (empty) memtable, the keyspace's one table.
    let table = |e: &Value| e["steps"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(table(&e)["outcome"], "read", "{e:#}");
    assert_eq!(table(&e)["prefix_entries"], 2, "{e:#}");
    assert_eq!(table(&e)["largest_key"], "m", "{e:#}");
    let e = json(kvctl(&["explain", d, "--prefix", "l", "--json"]));
    assert_eq!(table(&e)["outcome"], "out_of_range", "{e:#}");
    assert_eq!(table(&e)["largest_key"], "k", "{e:#}");

    // The read sketch does not know keyspaces: said, not guessed.
    let o = kvctl(&["hot", d, "--keyspace", "logs"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("every keyspace together"),
        "{}",
        stderr(&o)
    );
}

/// The writing commands change the keyspace `--keyspace` names and
/// nothing else; `put` and `import` create a missing one.
#[test]
fn writing_commands_honour_keyspace() {
    let (tmp, dir) = two_keyspaces();
    let d = p(&dir);
    ok(kvctl(&["put", d, "n", "new", "--keyspace", "logs"]));
    ok(kvctl(&["delete", d, "k", "--keyspace", "logs"]));
    ok(kvctl(&[
        "delete-range",
        d,
        "--prefix",
        "l",
        "--keyspace",
        "logs",
    ]));
    assert_eq!(pairs(&dir, "logs"), kv(&[("m", "3"), ("n", "new")]));
    assert_eq!(pairs(&dir, "default"), kv(&[("k", "in default")]));

    // put creates a missing keyspace (as it does a missing database).
    ok(kvctl(&["put", d, "a", "1", "--keyspace", "fresh"]));
    assert_eq!(pairs(&dir, "fresh"), kv(&[("a", "1")]));
    let o = kvctl_stdin(&["import", d, "-", "--keyspace", "bulk"], b"x\t1\ny\t2\n");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("imported 2 pairs"), "{}", stdout(&o));
    // Its summary counts that keyspace's tables, and says so (a new-user
    // trial read them as the whole database's).
    assert!(
        stdout(&o).contains("; keyspace \"bulk\" now has 1 SSTable, "),
        "{}",
        stdout(&o)
    );
    assert_eq!(pairs(&dir, "bulk"), kv(&[("x", "1"), ("y", "2")]));
    // import and put into a new database create it with the keyspace.
    let other = tmp.path().join("other");
    ok(kvctl(&["put", p(&other), "a", "1", "--keyspace", "logs"]));
    assert_eq!(pairs(&other, "logs"), kv(&[("a", "1")]));
    assert!(pairs(&other, "default").is_empty());

    // compact rewrites that keyspace's tables only.
    let before_default = files_in(&dir, "default");
    let o = kvctl(&["compact", d, "--keyspace", "logs", "-q"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let logs = files_in(&dir, "logs");
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert!(logs[0].0 > 0, "compacted below level 0: {logs:?}");
    assert_eq!(files_in(&dir, "default"), before_default);
    let o = kvctl(&[
        "compact",
        d,
        "--keyspace",
        "bulk",
        "--from",
        "a",
        "--to",
        "z",
        "-q",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(files_in(&dir, "bulk").iter().all(|(level, _)| *level > 0));
    assert_eq!(pairs(&dir, "bulk"), kv(&[("x", "1"), ("y", "2")]));
    let o = kvctl(&["compact", d, "--keyspace", "logs", "--filters-only"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

/// The (level, file number) of the live tables of keyspace `name`.
fn files_in(dir: &Path, name: &str) -> Vec<(usize, u64)> {
    let db = siftdb::Db::open_read_only(dir, siftdb::Options::default()).unwrap();
    let ks = db.existing_keyspace(name).unwrap();
    ks.live_files()
        .iter()
        .map(|f| (f.level, f.number))
        .collect()
}

/// Every command but `import` and `put` refuses a keyspace the database
/// lacks (exit 2), naming it and `kvctl keyspace list`, and creates
/// nothing.
#[test]
fn a_missing_keyspace_exits_2() {
    let (tmp, dir) = two_keyspaces();
    let d = p(&dir);
    let out = tmp.path().join("out.tsv");
    let commands: Vec<Vec<&str>> = vec![
        vec!["get", d, "k"],
        vec!["delete", d, "k"],
        vec!["delete-range", d, "--all"],
        vec!["scan", d],
        vec!["export", d],
        vec!["export", "--salvage", d, p(&out)],
        vec!["stats", d],
        vec!["info", d],
        vec!["distinct", d],
        vec!["compact", d],
        vec!["explain", d, "k"],
        vec!["explain", d, "--prefix", "k"],
        vec!["filters", d],
        vec!["sst", "list", d],
        vec!["options", d],
    ];
    let want = format!("kvctl: no keyspace nope (kvctl keyspace list {d})\n");
    for mut args in commands {
        args.extend(["--keyspace", "nope"]);
        let o = kvctl(&args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), want, "{args:?}");
    }
    let db = siftdb::Db::open_read_only(&dir, siftdb::Options::default()).unwrap();
    assert_eq!(db.keyspaces(), ["default", "logs"]);
    // A bad name is bad input too.
    let o = kvctl(&["put", d, "k", "v", "--keyspace", ".bad"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

/// `keyspace list` shows every keyspace with its tables, entries and log
/// number, in text and JSON.
#[test]
fn keyspace_list_shows_every_keyspace() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    {
        let db = siftdb::Db::open(&dir).unwrap();
        db.put("k", "v").unwrap();
        db.flush().unwrap();
        let logs = db.keyspace("logs").unwrap();
        logs.put("l", "1").unwrap();
        logs.put("m", "2").unwrap();
        logs.flush().unwrap();
    }
    let v = json(kvctl(&["keyspace", "list", p(&dir), "--json"]));
    assert_eq!(keyspace_rows(&v), [(0, "default", 1, 1), (1, "logs", 1, 2)]);
    // logs' flush moved its log number (and the empty default's) to the
    // WAL it rotated to, the newest.
    let newest = files_with_ext(&dir, "log")
        .iter()
        .map(|f| {
            f.file_stem()
                .unwrap()
                .to_str()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .max()
        .unwrap();
    for k in 0..2 {
        assert_eq!(v["keyspaces"][k]["log_number"].as_u64(), Some(newest));
    }
    let text = stdout(&kvctl(&["keyspace", "list", p(&dir)]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].contains("name") && lines[0].contains("tables"),
        "{text}"
    );
    assert!(lines[2].contains("logs"), "{text}");
    let missing = tmp.path().join("none");
    assert_eq!(code(&kvctl(&["keyspace", "list", p(&missing)])), 2);
}

/// (id, name, tables, entries) of each keyspace of a `keyspaces` array.
fn keyspace_rows(v: &Value) -> Vec<(u64, &str, u64, u64)> {
    v["keyspaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let n = |f: &str| k[f].as_u64().unwrap();
            (
                n("id"),
                k["name"].as_str().unwrap(),
                n("tables"),
                n("entries"),
            )
        })
        .collect()
}

/// `keyspace create` makes an empty keyspace (refusing one that exists),
/// `keyspace drop` needs --yes, then deletes it and its tables; the name
/// then starts over with a new id.
#[test]
fn keyspace_create_and_drop() {
    let (tmp, dir) = two_keyspaces();
    let d = p(&dir);
    let o = ok(kvctl(&["keyspace", "create", d, "users"]));
    assert_eq!(stdout(&o), "created keyspace users (id 2)\n");
    let o = kvctl(&["keyspace", "create", d, "users"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("exists already"), "{}", stderr(&o));
    let o = kvctl(&["keyspace", "create", d, "-bad"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let missing = tmp.path().join("none");
    assert_eq!(code(&kvctl(&["keyspace", "create", p(&missing), "x"])), 2);
    assert!(!missing.exists());
    let v = json(kvctl(&["keyspace", "list", d, "--json"]));
    assert_eq!(
        keyspace_rows(&v),
        [(0, "default", 1, 1), (1, "logs", 1, 4), (2, "users", 0, 0)]
    );

    let tables_before = files_with_ext(&dir, "sst").len();
    let o = kvctl(&["keyspace", "drop", d, "logs"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("--yes"), "{}", stderr(&o));
    assert_eq!(pairs(&dir, "logs").len(), 4);
    let o = ok(kvctl(&["keyspace", "drop", d, "logs", "--yes"]));
    assert_eq!(stdout(&o), "dropped keyspace logs\n");
    assert_eq!(files_with_ext(&dir, "sst").len(), tables_before - 1);
    let o = kvctl(&["keyspace", "drop", d, "logs", "--yes"]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        format!("kvctl: no keyspace logs (kvctl keyspace list {d})\n")
    );
    let o = kvctl(&["keyspace", "drop", d, "default", "--yes"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(code(&kvctl(&["get", d, "k", "--keyspace", "logs"])), 2);
    ok(kvctl(&["put", d, "k", "again", "--keyspace", "logs"]));
    let v = json(kvctl(&["keyspace", "list", d, "--json"]));
    assert_eq!(
        keyspace_rows(&v),
        [(0, "default", 1, 1), (2, "users", 0, 0), (3, "logs", 0, 0)]
    );
    assert_eq!(pairs(&dir, "logs"), kv(&[("k", "again")]));
}

/// `stats --json` and `info --json` list every keyspace (DESIGN.md 12.9),
/// whichever one they show; the text lists them when there is more than
/// the default.
#[test]
fn stats_and_info_list_the_keyspaces() {
    let (tmp, dir) = two_keyspaces();
    let d = p(&dir);
    let want = [(0, "default", 1, 1), (1, "logs", 1, 4)];
    for cmd in ["stats", "info"] {
        for ks in ["default", "logs"] {
            let v = json(kvctl(&[cmd, d, "--json", "--keyspace", ks]));
            assert_eq!(keyspace_rows(&v), want, "{cmd} {ks}");
            assert!(v["keyspaces"][1]["bytes"].as_u64().unwrap() > 0);
        }
        let text = stdout(&ok(kvctl(&[cmd, d, "--keyspace", "logs"])));
        assert!(text.contains("keyspace logs\n"), "{cmd}: {text}");
        let (_, list) = text.split_once("keyspaces\n").expect(&text);
        let names: Vec<&str> = list
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().nth(1).unwrap())
            .collect();
        assert_eq!(names, ["default", "logs"], "{cmd}: {text}");
    }
    // Write amplification is counted for the whole database, and a
    // keyspace's stats say so; the default has 1 key (singular).
    let text = stdout(&ok(kvctl(&["stats", d, "--keyspace", "logs"])));
    assert!(
        text.contains("\nwrite amplification of the whole database "),
        "{text}"
    );
    let text = stdout(&ok(kvctl(&["stats", d])));
    assert!(
        text.contains("\nwrite amplification ") && !text.contains("whole database"),
        "{text}"
    );
    assert!(text.contains(" for 1 key ("), "{text}");
    // A database with the default only: the text is as it was.
    let plain = tmp.path().join("plain");
    ok(kvctl(&["put", p(&plain), "a", "1"]));
    let text = stdout(&ok(kvctl(&["stats", p(&plain)])));
    assert!(!text.contains("keyspace"), "{text}");
    let v = json(kvctl(&["stats", p(&plain), "--json"]));
    assert_eq!(keyspace_rows(&v), [(0, "default", 0, 0)]);
}

/// `export --keyspace A | import --keyspace B` copies every byte, into
/// another database or another keyspace of the same one.
#[test]
fn export_from_one_keyspace_imports_into_another() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let odd: &[(&[u8], &[u8])] = &[
        (b"a\tb", b"line\nbreak"),
        (b"bin\xff\x00", b"\\x41"),
        (b"plain", b"value"),
    ];
    {
        let db = siftdb::Db::open(&dir).unwrap();
        db.put("default-only", "x").unwrap();
        let a = db.keyspace("a").unwrap();
        for (k, v) in odd {
            a.put(k, v).unwrap();
        }
    }
    let d = p(&dir);
    let exported = ok(kvctl(&["export", d, "--keyspace", "a"])).stdout;
    let o = kvctl_stdin(&["import", d, "-", "-q", "--keyspace", "b"], &exported);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let copy = tmp.path().join("copy");
    let o = kvctl_stdin(
        &["import", p(&copy), "-", "-q", "--keyspace", "b"],
        &exported,
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for target in [&dir, &copy] {
        let db = siftdb::Db::open_read_only(target, siftdb::Options::default()).unwrap();
        let b = db.existing_keyspace("b").unwrap();
        let got: Vec<(Vec<u8>, Vec<u8>)> = b
            .iter()
            .map(|e| {
                let (k, v) = e.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            odd.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
        assert_eq!(got, want, "{}", target.display());
    }
    // The source keyspace and the default are as they were.
    assert_eq!(pairs(&dir, "default"), kv(&[("default-only", "x")]));
    let exported_again = ok(kvctl(&["export", d, "--keyspace", "b"])).stdout;
    assert_eq!(exported_again, exported);
}

/// `export --salvage --keyspace NAME` salvages that keyspace; without the
/// manifest names are unknown, so `--keyspace-id N` selects it by the
/// tables' `siftdb.keyspace` property.
#[test]
fn salvage_exports_one_keyspace() {
    let (tmp, dir) = two_keyspaces();
    let d = p(&dir);
    let out = tmp.path().join("out.tsv");
    let salvage = |extra: &[&str]| {
        let mut args = vec!["export", "--salvage", d, p(&out), "--force"];
        args.extend(extra);
        let o = kvctl(&args);
        let text = std::fs::read_to_string(&out).unwrap_or_default();
        (code(&o), stderr(&o), text)
    };
    let logs = "#kvctl-export escaped v1\nk\tin logs\nl1\t1\nl2\t2\nm\t3\n";
    let (code0, err, text) = salvage(&["--keyspace", "logs"]);
    assert_eq!(code0, 0, "{err}");
    assert_eq!(text, logs);
    let (code2, err, _) = salvage(&["--keyspace", "logs", "--keyspace-id", "1"]);
    assert_eq!(code2, 2, "{err}");
    assert_eq!(code(&kvctl(&["export", d, "--keyspace-id", "1"])), 2);

    for m in files_where(&dir, |n| n.starts_with("MANIFEST-")) {
        std::fs::remove_file(m).unwrap();
    }
    // By name: the names were in the manifest.
    let (code2, err, _) = salvage(&["--keyspace", "logs"]);
    assert_eq!(code2, 2, "{err}");
    assert!(err.contains("by name"), "{err}");
    // By id, from the tables' property; exit 3: the manifest is lost.
    let (code3, err, text) = salvage(&["--keyspace-id", "1"]);
    assert_eq!(code3, 3, "{err}");
    assert_eq!(text, logs);
    let report = tmp.path().join("report.tsv");
    let o = kvctl(&[
        "export",
        "--salvage",
        d,
        p(&report),
        "--keyspace-id",
        "1",
        "--json",
    ]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["keyspace"], serde_json::json!({"id": 1, "name": null}));
    assert_eq!(v["keyspaces"], serde_json::json!([0, 1]));
    assert_eq!(v["exported"], 4);
    let (code3, err, text) = salvage(&[]);
    assert_eq!(code3, 3, "{err}");
    assert_eq!(text, "#kvctl-export escaped v1\nk\tin default\n");
}

/// `sst dump` shows the `siftdb.keyspace` property of a table outside the
/// default keyspace (the default's tables carry none).
#[test]
fn sst_dump_shows_the_keyspace_property() {
    let (_tmp, dir) = two_keyspaces();
    let number = |ks: &str| files_in(&dir, ks)[0].1;
    let path = |n: u64| dir.join(format!("{n:06}.sst"));
    let logs = json(kvctl(&["sst", "dump", p(&path(number("logs"))), "--json"]));
    assert_eq!(logs["properties"]["siftdb.keyspace"], 1, "{logs:#}");
    let default = json(kvctl(&[
        "sst",
        "dump",
        p(&path(number("default"))),
        "--json",
    ]));
    assert!(default["properties"].get("siftdb.keyspace").is_none());
    let text = stdout(&ok(kvctl(&["sst", "dump", p(&path(number("logs")))])));
    assert!(
        text.lines()
            .any(|l| l.contains("siftdb.keyspace") && l.trim_end().ends_with('1')),
        "{text}"
    );
}

/// `wal dump` of a database names each op's keyspace as the manifest
/// lists it; of a WAL file alone, by id only.
#[test]
fn wal_dump_names_the_keyspaces() {
    let (_tmp, dir) = two_keyspaces();
    {
        let db = siftdb::Db::open(&dir).unwrap();
        db.keyspace("logs").unwrap().put("w", "in the WAL").unwrap();
        db.close().unwrap();
    }
    let v = json(kvctl(&["wal", "dump", p(&dir), "--json"]));
    let op = &v["wals"][0]["records"][0]["ops"][0];
    assert_eq!(op["key"], "w", "{v:#}");
    assert_eq!(op["keyspace"], 1, "{v:#}");
    assert_eq!(op["keyspace_name"], "logs", "{v:#}");
    let text = stdout(&ok(kvctl(&["wal", "dump", p(&dir)])));
    assert!(text.contains("put ks=1 (logs)"), "{text}");
    let wal = files_with_ext(&dir, "log").pop().unwrap();
    let text = stdout(&ok(kvctl(&["wal", "dump", p(&wal)])));
    assert!(
        text.contains("put ks=1 ") && !text.contains("(logs)"),
        "{text}"
    );
}

/// `verify` checks, and `checkpoint` copies, every keyspace.
#[test]
fn verify_and_checkpoint_take_every_keyspace() {
    let (tmp, dir) = two_keyspaces();
    let copy = tmp.path().join("copy");
    let out = kvctl(&["verify", p(&dir)]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = kvctl(&["checkpoint", p(&dir), p(&copy)]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(pairs(&copy, "logs"), pairs(&dir, "logs"));
    assert_eq!(pairs(&copy, "default"), kv(&[("k", "in default")]));
}

/// The settings a keyspace stores in the manifest, as `options --json`
/// lists them: `(name, value)` pairs.
fn stored(v: &Value) -> Vec<(String, String)> {
    v["stored"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pair| {
            (
                pair[0].as_str().unwrap().to_string(),
                pair[1].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The value of `setting` in `stored`.
fn setting<'a>(stored: &'a [(String, String)], setting: &str) -> &'a str {
    &stored.iter().find(|(n, _)| n == setting).unwrap().1
}

/// `options --keyspace NAME` prints the settings keyspace NAME stores in
/// the manifest (tag 13, then tag 15 after a change), not the database's
/// `OPTIONS`; `--keyspace default` (or none) prints `OPTIONS`; a missing
/// keyspace is exit 2, and so is `--reset` with a keyspace (it rewrites
/// `OPTIONS` only), which then changes nothing.
#[test]
fn options_shows_the_keyspace_s_own_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    {
        let db = siftdb::Db::open(&dir).unwrap();
        let o = siftdb::KeyspaceOptions::default()
            .block_size(16 << 10)
            .compression("lz4".parse().unwrap());
        db.keyspace_with("logs", o).unwrap();
        db.close().unwrap();
    }
    let d = p(&dir);
    let database = json(kvctl(&["options", d, "--json"]));
    assert_eq!(database["keyspace"], "default");
    let database = stored(&database);
    assert_eq!(setting(&database, "block_size"), "4096");
    assert_eq!(setting(&database, "compression"), "none");
    let explicit = json(kvctl(&["options", d, "--json", "--keyspace", "default"]));
    assert_eq!(stored(&explicit), database);

    let logs = json(kvctl(&["options", d, "--json", "--keyspace", "logs"]));
    assert_eq!(logs["keyspace"], "logs");
    assert_eq!(logs["changes"], Value::Null);
    let logs = stored(&logs);
    assert_eq!(setting(&logs, "block_size"), "16384");
    assert_eq!(setting(&logs, "compression"), "lz4");
    // Every per-keyspace setting, in OPTIONS' order, without the
    // database-wide max_manifest_file_size.
    let names = |s: &[(String, String)]| s.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    let mut per_keyspace = names(&database);
    per_keyspace.retain(|n| n != "max_manifest_file_size");
    assert_eq!(names(&logs), per_keyspace);
    let text = stdout(&ok(kvctl(&["options", d, "--keyspace", "logs"])));
    assert!(
        text.starts_with("keyspace logs: stored in the manifest"),
        "{text}"
    );
    assert!(text.contains("\n  block_size 16384\n"), "{text}");

    // A change of the keyspace's settings (tag 15) shows.
    {
        let db = siftdb::Db::open(&dir).unwrap();
        let o = siftdb::KeyspaceOptions::default().block_size(8 << 10);
        let (_, changes) = db.keyspace_with("logs", o).unwrap();
        assert!(!changes.is_empty());
        db.close().unwrap();
    }
    let logs = stored(&json(kvctl(&[
        "options",
        d,
        "--json",
        "--keyspace",
        "logs",
    ])));
    assert_eq!(setting(&logs, "block_size"), "8192");
    assert_eq!(setting(&logs, "compression"), "none");

    let o = kvctl(&["options", d, "--keyspace", "nope"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("kvctl: no keyspace nope (kvctl keyspace list {d})\n")
    );
    let before = std::fs::read(dir.join("OPTIONS")).unwrap();
    let o = kvctl(&["options", d, "--reset", "--keyspace", "logs"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("leave out --keyspace"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert_eq!(std::fs::read(dir.join("OPTIONS")).unwrap(), before);
}

/// `info --keyspace NAME` shows the settings keyspace NAME stores (the
/// manifest's), not the database's `OPTIONS` (a new-user trial saw the
/// default's compression listed for a keyspace).
#[test]
fn info_shows_the_keyspace_s_own_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    {
        let db = siftdb::Db::open(&dir).unwrap();
        let o = siftdb::KeyspaceOptions::default().compression("lz4".parse().unwrap());
        let (logs, _) = db.keyspace_with("logs", o).unwrap();
        logs.put("k", "v").unwrap();
        db.close().unwrap();
    }
    let d = p(&dir);
    let logs = json(kvctl(&["info", d, "--json", "--keyspace", "logs"]));
    assert_eq!(logs["options"]["stored"]["compression"], "lz4", "{logs}");
    let default = json(kvctl(&["info", d, "--json"]));
    assert_eq!(default["options"]["stored"]["compression"], "none");
    let text = stdout(&ok(kvctl(&["info", d, "--keyspace", "logs"])));
    assert!(
        text.contains("keyspace logs: stored in the manifest"),
        "{text}"
    );
    assert!(text.contains("compression lz4"), "{text}");
}

/// An import into a new keyspace that stops before its first write (a
/// bad first line) leaves no empty keyspace behind, as an import into a
/// new database leaves no database; an existing keyspace stays.
#[test]
fn a_failed_import_leaves_no_new_keyspace() {
    let (_tmp, dir) = two_keyspaces();
    let d = p(&dir);
    let bad = dir.parent().unwrap().join("bad.txt");
    std::fs::write(&bad, "a line without a tab\n").unwrap();
    for name in ["fresh", "logs"] {
        let o = kvctl(&["import", d, p(&bad), "--keyspace", name]);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
    }
    let db = siftdb::Db::open_read_only(&dir, siftdb::Options::default()).unwrap();
    assert_eq!(db.keyspaces(), ["default", "logs"]);
    drop(db);
    assert_eq!(pairs(&dir, "logs").len(), 4);
}

/// The options of `export --salvage` alone are refused without it, also
/// beside `--from`/`--to` (`requires = "salvage"` is skipped beside flags
/// that conflict with `--salvage`, so they also conflict with those: a
/// new-user trial got
/// the default keyspace exported for `--keyspace-id 2`, TSV for `--json`,
/// and no `--stale-keys` file, all with exit 0).
#[test]
fn salvage_only_export_options_are_refused_without_salvage() {
    let (_tmp, dir) = two_keyspaces();
    let d = p(&dir);
    let out = dir.parent().unwrap().join("out.tsv");
    let stale = dir.parent().unwrap().join("stale.txt");
    for extra in [
        &["--keyspace-id", "1"][..],
        &["--json"],
        &["--stale-keys", p(&stale)],
    ] {
        let mut args = vec!["export", d, p(&out), "--from", "a", "--to", "z"];
        args.extend_from_slice(extra);
        let o = kvctl(&args);
        assert_eq!(code(&o), 2, "{extra:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("'{}", extra[0]))
                && stderr(&o).contains("cannot be used with"),
            "{}",
            stderr(&o)
        );
        assert!(!out.exists() && !stale.exists(), "{extra:?}");
    }
}

/// `compact` and `import` with layout flags and `--keyspace NAME` store
/// the flags as keyspace NAME's settings (and compact it with them), not
/// as the default keyspace's: a new-user trial found `compact
/// --compression none,lz4 --keyspace urls` changing the default's OPTIONS
/// and rewriting nothing, and `import --bits-per-key 4 --keyspace urls`
/// the same.
#[test]
fn layout_flags_with_keyspace_change_that_keyspace() {
    let (_tmp, dir) = two_keyspaces();
    let d = p(&dir);
    let options = |ks: &str| stored(&json(kvctl(&["options", d, "--json", "--keyspace", ks])));
    let database_before = std::fs::read(dir.join("OPTIONS")).unwrap();

    let o = ok(kvctl(&[
        "compact",
        d,
        "--compression",
        "lz4",
        "--keyspace",
        "logs",
    ]));
    assert!(stderr(&o).contains("compression"), "{}", stderr(&o));
    assert_eq!(setting(&options("logs"), "compression"), "lz4");
    assert_eq!(setting(&options("default"), "compression"), "none");
    assert_eq!(std::fs::read(dir.join("OPTIONS")).unwrap(), database_before);
    // The keyspace's table was rewritten with LZ4; its data kept.
    {
        let db = siftdb::Db::open_read_only(&dir, siftdb::Options::default()).unwrap();
        let files = db.existing_keyspace("logs").unwrap().live_files();
        assert!(!files.is_empty());
        for f in &files {
            let codec = f.properties.compression.as_ref().map(|c| c.codec.as_str());
            assert_eq!(codec, Some("lz4"), "{f:?}");
        }
    }
    assert_eq!(
        pairs(&dir, "logs"),
        kv(&[("k", "in logs"), ("l1", "1"), ("l2", "2"), ("m", "3")])
    );

    let input = dir.parent().unwrap().join("in.tsv");
    std::fs::write(&input, "n\t4\n").unwrap();
    ok(kvctl(&[
        "import",
        d,
        p(&input),
        "--bits-per-key",
        "4",
        "--keyspace",
        "logs",
    ]));
    assert_eq!(setting(&options("logs"), "bits_per_key"), "4");
    assert_eq!(setting(&options("logs"), "compression"), "lz4");
    assert_eq!(setting(&options("default"), "bits_per_key"), "10");
    assert_eq!(std::fs::read(dir.join("OPTIONS")).unwrap(), database_before);
    assert_eq!(pairs(&dir, "logs").len(), 5);
}

/// `--bits-per-key N` with `--keyspace NAME` is refused (exit 2, nothing
/// stored) when NAME's own settings (the manifest's) have a per-level
/// filter spec or a filter budget, which would take precedence over N.
/// It was checked against the database's `OPTIONS` only, so the flag was
/// accepted, stored as NAME's, and changed no filter.
#[test]
fn bits_per_key_is_refused_where_the_keyspace_s_own_filter_spec_rules() {
    let (_tmp, dir) = two_keyspaces();
    let d = p(&dir);
    let input = dir.parent().unwrap().join("in.tsv");
    std::fs::write(&input, "n\t4\n").unwrap();
    let options = |ks: &str| stored(&json(kvctl(&["options", d, "--json", "--keyspace", ks])));
    ok(kvctl(&[
        "compact",
        d,
        "-q",
        "--filters",
        "ribbon:1%",
        "--keyspace",
        "logs",
    ]));
    let logs_before = options("logs");
    for cmd in [
        &["compact", d, "--bits-per-key", "6", "--keyspace", "logs"][..],
        &[
            "import",
            d,
            p(&input),
            "--bits-per-key",
            "6",
            "--keyspace",
            "logs",
        ],
    ] {
        let o = kvctl(cmd);
        assert_eq!(code(&o), 2, "{cmd:?}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            "kvctl: --bits-per-key 6 would change no filter: keyspace logs stores the \
             per-level filter spec `ribbon:1%` (set by --filters), which takes precedence\n\
             hint: give --filters instead, e.g. --filters bloom:6 for a classic Bloom filter \
             at 6 bits per key on every level (`kvctl options DB --keyspace logs` shows the \
             stored settings)\n"
        );
        // Nothing stored, nothing imported.
        assert_eq!(options("logs"), logs_before);
        assert_eq!(pairs(&dir, "logs").len(), 4);
    }

    // Under a keyspace's own budget, likewise.
    ok(kvctl(&[
        "import",
        d,
        p(&input),
        "-q",
        "--filter-budget",
        "8",
        "--keyspace",
        "sized",
    ]));
    let o = kvctl(&["compact", d, "--bits-per-key", "0", "--keyspace", "sized"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with(
            "kvctl: --bits-per-key 0 would change no filter: keyspace sized stores the filter \
             budget `8` (set by --filter-budget)"
        ),
        "{}",
        stderr(&o)
    );
    assert_eq!(setting(&options("sized"), "bits_per_key"), "10");
}

/// `--bits-per-key N` with `--keyspace NAME` applies when NAME's own
/// settings have no filter spec, whatever the database's `OPTIONS` have
/// (it was refused for the default keyspace's spec). A keyspace `import`
/// creates takes the database's settings, so there the database's spec
/// still refuses it, and no keyspace is left behind.
#[test]
fn bits_per_key_applies_to_a_keyspace_without_a_filter_spec() {
    let (_tmp, dir) = two_keyspaces();
    let d = p(&dir);
    let input = dir.parent().unwrap().join("in.tsv");
    std::fs::write(&input, "n\t4\n").unwrap();
    let options = |ks: &str| stored(&json(kvctl(&["options", d, "--json", "--keyspace", ks])));
    ok(kvctl(&["compact", d, "-q", "--filters", "ribbon:1%"]));
    assert_eq!(setting(&options("logs"), "filters"), "default");
    let database_before = std::fs::read(dir.join("OPTIONS")).unwrap();

    let o = ok(kvctl(&[
        "compact",
        d,
        "-q",
        "--bits-per-key",
        "6",
        "--keyspace",
        "logs",
    ]));
    assert_eq!(setting(&options("logs"), "bits_per_key"), "6");
    // The warning about the rewrite names whose settings the flag went
    // over: the keyspace's.
    assert!(
        stderr(&o).contains(
            "will be rewritten with siftdb.bloom.xxh3.v1 (6 bits/key) (the options in use: \
             the flags given, over keyspace logs's stored settings)"
        ),
        "{}",
        stderr(&o)
    );
    ok(kvctl(&[
        "import",
        d,
        p(&input),
        "-q",
        "--bits-per-key",
        "7",
        "--keyspace",
        "logs",
    ]));
    assert_eq!(setting(&options("logs"), "bits_per_key"), "7");
    assert_eq!(pairs(&dir, "logs").len(), 5);
    assert_eq!(std::fs::read(dir.join("OPTIONS")).unwrap(), database_before);

    let o = kvctl(&[
        "import",
        d,
        p(&input),
        "--bits-per-key",
        "6",
        "--keyspace",
        "fresh",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with(
            "kvctl: --bits-per-key 6 would change no filter: the database stores the \
             per-level filter spec `ribbon:1%`"
        ),
        "{}",
        stderr(&o)
    );
    let db = siftdb::Db::open_read_only(&dir, siftdb::Options::default()).unwrap();
    assert_eq!(db.keyspaces(), ["default", "logs"]);
}

/// The commands that cover the whole database (or one file whatever its
/// keyspace, or no database) refuse `--keyspace`, an existing keyspace's
/// or a missing one's, even `default`: exit 2, one line saying so, and
/// nothing done.
#[test]
fn whole_database_commands_refuse_keyspace() {
    let (tmp, dir) = two_keyspaces();
    let d = p(&dir);
    let copy = tmp.path().join("copy");
    let demo = tmp.path().join("demo");
    let table = files_with_ext(&dir, "sst").pop().unwrap();
    let wal = files_with_ext(&dir, "log").pop().unwrap();
    let commands: Vec<(Vec<&str>, &str)> = vec![
        (vec!["verify", d], "verify checks the whole database"),
        (
            vec!["verify", p(&table)],
            "verify checks the whole database",
        ),
        (vec!["wal", "dump", d], "wal dump shows whole WAL records"),
        (
            vec!["wal", "dump", p(&wal)],
            "wal dump shows whole WAL records",
        ),
        (
            vec!["manifest", "dump", d],
            "manifest dump shows the whole manifest",
        ),
        (
            vec!["checkpoint", d, p(&copy)],
            "checkpoint copies the whole database",
        ),
        (
            vec!["keyspace", "list", d],
            "keyspace list, create and drop",
        ),
        (
            vec!["keyspace", "create", d, "x"],
            "keyspace list, create and drop",
        ),
        (
            vec!["keyspace", "drop", d, "logs", "--yes"],
            "keyspace list, create and drop",
        ),
        (vec!["sst", "dump", p(&table)], "sst dump decodes one file"),
        (vec!["hot", d], "every keyspace together"),
        (
            vec!["bench", "readamp"],
            "bench builds and reads databases of its own",
        ),
        (
            vec!["bench", "filters"],
            "bench builds and reads databases of its own",
        ),
        (
            vec!["demo", "--dir", p(&demo)],
            "demo builds databases of its own",
        ),
        (vec!["completions", "bash"], "completions reads no database"),
    ];
    for (args, why) in commands {
        for name in ["logs", "nosuch", "default"] {
            let mut args = args.clone();
            args.extend(["--keyspace", name]);
            let o = kvctl(&args);
            assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
            let err = stderr(&o);
            assert!(
                err.starts_with("kvctl: ") && err.contains(why),
                "{args:?}: {err}"
            );
            assert!(
                err.ends_with(&format!(
                    ": --keyspace {name} does not apply; leave it out\n"
                )),
                "{args:?}: {err}"
            );
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
        }
    }
    assert!(!copy.exists() && !demo.exists());
    let db = siftdb::Db::open_read_only(&dir, siftdb::Options::default()).unwrap();
    assert_eq!(db.keyspaces(), ["default", "logs"]);
    drop(db);
    // Without the flag they run as ever.
    ok(kvctl(&["verify", d]));
    ok(kvctl(&["keyspace", "list", d]));
    ok(kvctl(&["sst", "dump", p(&table)]));
}
