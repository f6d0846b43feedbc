//! `kvctl export --salvage`: a damaged database that no longer exports is
//! salvaged, the salvage imports into a fresh database, and `get` returns
//! every surviving value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod common;

use common::{code, files_where, files_with_ext, kvctl, ok, p, stderr, stdout};
use serde_json::Value;

fn key(i: usize) -> String {
    format!("key{i:05}")
}

fn value(i: usize) -> String {
    format!("value-{i}-{}", "v".repeat(60))
}

/// A database of 3,000 keys over several tables, then a put of `extra`
/// (flushed by the next open) and a delete of `key00005` (left in the
/// WAL). Returns the temp dir, the database and the expected contents.
fn build() -> (tempfile::TempDir, PathBuf, BTreeMap<String, String>) {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in.tsv");
    let text: String = (0..3000)
        .map(|i| format!("{}\t{}\n", key(i), value(i)))
        .collect();
    std::fs::write(&input, text).unwrap();
    let db = tmp.path().join("db");
    ok(kvctl(&[
        "import",
        p(&db),
        p(&input),
        "--write-buffer-size",
        "64K",
        "--quiet",
    ]));
    ok(kvctl(&["put", p(&db), "extra", "x\\ty"]));
    ok(kvctl(&["delete", p(&db), &key(5)]));
    let mut model: BTreeMap<String, String> = (0..3000).map(|i| (key(i), value(i))).collect();
    // A tab is exported as \x09.
    model.insert("extra".into(), "x\\x09y".into());
    model.remove(&key(5));
    (tmp, db, model)
}

/// Parses an export (its header line, then escaped KEY<TAB>VALUE lines).
fn lines(text: &str) -> BTreeMap<String, String> {
    let body = text
        .strip_prefix("#kvctl-export escaped v1\n")
        .unwrap_or_else(|| panic!("no export header: {text:.80}"));
    body.lines()
        .map(|l| {
            let (k, v) = l.split_once('\t').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

/// The database's tables, by number.
fn tables(db: &Path) -> Vec<PathBuf> {
    files_with_ext(db, "sst")
}

#[test]
fn salvage_of_a_damaged_block_imports_into_a_fresh_database() {
    let (tmp, db, model) = build();
    // The largest table, block 2: its keys run from block 1's last key
    // (exclusive: one version per key here) to its own.
    let sst = tables(&db)
        .into_iter()
        .max_by_key(|t| std::fs::metadata(t).unwrap().len())
        .unwrap();
    let dump = json(&ok(kvctl(&["sst", "dump", p(&sst), "--index", "--json"])));
    let index = dump["index"].as_array().unwrap();
    assert!(index.len() > 3, "{dump}");
    let (offset, size) = (
        index[2]["offset"].as_u64().unwrap(),
        index[2]["size"].as_u64().unwrap(),
    );
    let after = index[1]["last_key"].as_str().unwrap().to_string();
    let last = index[2]["last_key"].as_str().unwrap().to_string();
    let lost: Vec<String> = model
        .keys()
        .filter(|k| **k > after && **k <= last)
        .cloned()
        .collect();
    assert!(!lost.is_empty());
    let mut bytes = std::fs::read(&sst).unwrap();
    bytes[(offset + size / 3) as usize] ^= 0x04;
    std::fs::write(&sst, bytes).unwrap();

    // A plain export stops at the damage and points at --salvage.
    let out = tmp.path().join("out.tsv");
    let o = kvctl(&["export", p(&db), p(&out), "--quiet"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(stderr(&o).contains("export --salvage"), "{}", stderr(&o));
    assert!(!out.exists());

    // The salvage writes everything else, and exits 3 saying what it lost.
    let before: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&db)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    let o = kvctl(&["export", "--salvage", p(&db), p(&out), "--quiet"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let err = stderr(&o);
    let name = sst.file_name().unwrap().to_str().unwrap();
    let list = json(&ok(kvctl(&["sst", "list", p(&db), "--json"])));
    let level = list["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap()["level"]
        .as_u64()
        .unwrap();
    let want = format!(
        "LOST: {name} (L{level}): data block 2 of {}, bytes {offset}..{}: ",
        index.len(),
        offset + size + 4
    );
    assert!(err.contains(&want), "{want}\n{err}");
    assert!(err.contains(&format!("keys [{after} .. {last}]")), "{err}");
    assert!(err.contains("export --salvage: 1 data block lost"), "{err}");
    assert!(err.contains("kvctl import NEW"), "{err}");
    let mut expected = model.clone();
    for k in &lost {
        expected.remove(k);
    }
    let salvaged = lines(&std::fs::read_to_string(&out).unwrap());
    assert_eq!(salvaged, expected);
    // Between 1,000 and 999,999 keys: one thousands separator.
    let n = expected.len();
    assert!((1000..1_000_000).contains(&n), "{n}");
    assert!(
        err.contains(&format!("salvaged {},{:03} keys to", n / 1000, n % 1000)),
        "{err}"
    );
    // The database directory is untouched.
    for (path, bytes) in &before {
        assert_eq!(&std::fs::read(path).unwrap(), bytes, "{}", path.display());
    }

    // --json: the same facts, on stdout.
    let out2 = tmp.path().join("out2.tsv.gz");
    let o = kvctl(&["export", "--salvage", "--json", p(&db), p(&out2)]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["complete"], false);
    assert_eq!(r["exported"], expected.len() as u64);
    assert_eq!(r["lost"]["data_blocks"], 1);
    assert_eq!(r["lost"]["tables"], 0);
    assert_eq!(r["file_set"]["source"], "manifest");
    let damaged: Vec<&Value> = r["tables"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| !t["skipped_blocks"].as_array().unwrap().is_empty())
        .collect();
    assert_eq!(damaged.len(), 1, "{r}");
    assert_eq!(damaged[0]["file"], name);
    let b = &damaged[0]["skipped_blocks"][0];
    assert_eq!(b["block"], 2);
    assert_eq!(b["handle"]["offset"], offset);
    assert_eq!(b["handle"]["size"], size);
    assert_eq!(b["first_key"], after.as_str());
    assert_eq!(b["last_key"], last.as_str());
    assert!(b["detail"].as_str().unwrap().contains("checksum mismatch"));
    assert_eq!(damaged[0]["blocks_read"], index.len() as u64 - 1);
    // The WAL held the delete; nothing was lost there.
    assert!(r["wals"][0]["damage"].is_null());
    assert_eq!(r["deleted"], 1);

    // Into a fresh database: get returns every surviving value.
    let fresh = tmp.path().join("fresh");
    ok(kvctl(&["import", p(&fresh), p(&out2), "--quiet"]));
    let o = ok(kvctl(&["export", p(&fresh)]));
    assert_eq!(lines(&stdout(&o)), expected);
    assert_eq!(
        stdout(&ok(kvctl(&["get", p(&fresh), "extra"]))),
        "x\\x09y\n"
    );
    assert_eq!(
        stdout(&ok(kvctl(&["get", p(&fresh), &key(6)]))),
        format!("{}\n", value(6))
    );
    // Deleted before the damage: still deleted. In the lost block: absent.
    assert_eq!(code(&kvctl(&["get", p(&fresh), &key(5)])), 1);
    assert_eq!(code(&kvctl(&["get", p(&fresh), &lost[0]])), 1);
}

#[test]
fn salvage_of_a_sound_database_is_the_export_and_exits_0() {
    let (tmp, db, model) = build();
    let plain = stdout(&ok(kvctl(&["export", p(&db)])));
    assert_eq!(lines(&plain), model);
    // To stdout: the same bytes; the report on stderr.
    let o = ok(kvctl(&["export", "--salvage", p(&db)]));
    assert_eq!(stdout(&o), plain);
    let err = stderr(&o);
    assert!(
        err.contains("salvage: read the live set of MANIFEST-"),
        "{err}"
    );
    assert!(err.contains("to standard output"), "{err}");
    assert!(!err.contains("LOST") && !err.contains("warning"), "{err}");
    // With a prefix, as export does.
    let out = tmp.path().join("k1.tsv");
    ok(kvctl(&[
        "export",
        "--salvage",
        p(&db),
        p(&out),
        "--prefix",
        "key01",
        "-q",
    ]));
    let got = lines(&std::fs::read_to_string(&out).unwrap());
    assert_eq!(got.len(), 1000);
    assert!(got.keys().all(|k| k.starts_with("key01")));

    // A damaged manifest: every table is read, nothing is lost, exit 3
    // (the live set is unknown).
    let manifest = files_where(&db, |n| n.starts_with("MANIFEST-")).remove(0);
    let mut bytes = std::fs::read(&manifest).unwrap();
    bytes[13] ^= 0x01;
    std::fs::write(&manifest, bytes).unwrap();
    let out = tmp.path().join("all.tsv");
    let o = kvctl(&["export", "--salvage", "--json", p(&db), p(&out)]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(r["file_set"]["source"], "directory");
    assert!(r["file_set"]["reason"]
        .as_str()
        .unwrap()
        .contains("cannot be read"));
    assert_eq!(r["lost"]["data_blocks"], 0);
    assert!(
        stderr(&o).contains("every table and WAL was read"),
        "{}",
        stderr(&o)
    );
    // Nothing lost: the hint says the export holds every entry found,
    // not "every other entry" (a new-user trial read that as a loss).
    assert!(
        stderr(&o).contains("holds every entry found in the directory's files"),
        "{}",
        stderr(&o)
    );
    assert_eq!(lines(&std::fs::read_to_string(&out).unwrap()), model);
}

#[test]
fn salvage_usage_errors_are_exit_2() {
    let (tmp, db, _) = build();
    // --json needs a file for the entries.
    let o = kvctl(&["export", "--salvage", "--json", p(&db)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("give an output FILE"), "{}", stderr(&o));
    // --json belongs to --salvage.
    assert_eq!(code(&kvctl(&["export", "--json", p(&db), "x.tsv"])), 2);
    // Never inside the database directory.
    let inside = db.join("out.tsv");
    let o = kvctl(&["export", "--salvage", p(&db), p(&inside)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("inside the database directory"),
        "{}",
        stderr(&o)
    );
    assert!(!inside.exists());
    assert!(!db.join(".out.tsv.kvctl-partial").exists());
    // Not a database.
    let o = kvctl(&["export", "--salvage", p(&tmp.path().join("nope")), "-"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

/// `--stale-keys FILE` lists exactly the keys the salvage flags: here the
/// keys whose newer value sat in a lost block of the newer table, and that
/// came back with their older value.
#[test]
fn stale_keys_lists_the_keys_that_came_back_older() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let old: String = (0..3000)
        .map(|i| format!("{}\told-{i}\n", key(i)))
        .collect();
    let new: String = (0..3000)
        .step_by(3)
        .map(|i| format!("{}\tnew-{i}\n", key(i)))
        .collect();
    for (name, text) in [("old.tsv", old), ("new.tsv", new)] {
        let input = tmp.path().join(name);
        std::fs::write(&input, text).unwrap();
        ok(kvctl(&["import", p(&db), p(&input), "-q"]));
    }
    let good = lines(&stdout(&ok(kvctl(&["export", p(&db)]))));
    // The newer table is the smaller one: damage a block in its middle.
    let sst = tables(&db)
        .into_iter()
        .min_by_key(|t| std::fs::metadata(t).unwrap().len())
        .unwrap();
    let dump = json(&ok(kvctl(&["sst", "dump", p(&sst), "--index", "--json"])));
    let index = dump["index"].as_array().unwrap();
    let b = &index[index.len() / 2];
    let mut bytes = std::fs::read(&sst).unwrap();
    bytes[(b["offset"].as_u64().unwrap() + 5) as usize] ^= 0x08;
    std::fs::write(&sst, bytes).unwrap();

    let out = tmp.path().join("out.tsv");
    let listed = tmp.path().join("stale.txt");
    let o = kvctl(&[
        "export",
        "--salvage",
        p(&db),
        p(&out),
        "--stale-keys",
        p(&listed),
    ]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("listed in {}", listed.display())),
        "{}",
        stderr(&o)
    );
    let salvaged = lines(&std::fs::read_to_string(&out).unwrap());
    let reverted: Vec<&String> = good
        .iter()
        .filter(|(k, v)| salvaged.get(*k) != Some(*v))
        .map(|(k, _)| k)
        .collect();
    assert!(reverted.len() > 5, "{reverted:?}");
    let stale: Vec<String> = std::fs::read_to_string(&listed)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    // Every key that came back older is listed; listed keys lie in the
    // lost block's range (its old versions, not rewritten, are listed too:
    // the salvage cannot tell them apart).
    for k in &reverted {
        assert!(stale.contains(k), "{k} not listed");
    }
    let first = stale.first().unwrap();
    let last = stale.last().unwrap();
    assert!(stale.iter().all(|k| k >= first && k <= last));
    assert!(
        stale.len() < 3 * reverted.len() + 3,
        "{} listed",
        stale.len()
    );
    // Without the option, the warning says how to get the list.
    let o = kvctl(&["export", "--salvage", p(&db), p(&out), "--force"]);
    assert!(
        stderr(&o).contains("--stale-keys FILE lists them"),
        "{}",
        stderr(&o)
    );
}

/// Found by a new-user trial: the warning printed when no manifest can be
/// used did not say what happens to range deletions. Those already
/// flushed live only in the manifest, so their keys come back; those
/// still in a WAL are applied.
#[test]
fn salvage_without_a_manifest_says_flushed_range_deletions_are_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let first = tmp.path().join("first.tsv");
    std::fs::write(&first, "a\t1\nb1\t2\nc1\t3\n").unwrap();
    ok(kvctl(&["import", p(&db), p(&first), "-q"]));
    // Flushed with the next import's table: kept in the manifest.
    ok(kvctl(&["delete-range", p(&db), "--prefix", "b"]));
    let second = tmp.path().join("second.tsv");
    std::fs::write(&second, "d\t4\n").unwrap();
    ok(kvctl(&["import", p(&db), p(&second), "-q"]));
    // Left in the WAL.
    ok(kvctl(&["delete-range", p(&db), "--prefix", "c"]));
    assert_eq!(
        stdout(&ok(kvctl(&["scan", p(&db), "--keys-only"]))),
        "a\nd\n"
    );
    for m in files_where(&db, |n| n.starts_with("MANIFEST-")) {
        std::fs::remove_file(m).unwrap();
    }
    let out = tmp.path().join("out.tsv");
    let o = kvctl(&["export", "--salvage", p(&db), p(&out)]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let got = lines(&std::fs::read_to_string(&out).unwrap());
    let keys: Vec<&str> = got.keys().map(String::as_str).collect();
    assert_eq!(keys, ["a", "b1", "d"]);
    let err = stderr(&o);
    assert!(
        err.contains(
            "warning: without the manifest, range deletions already flushed (the manifest keeps \
             them, not the tables) are lost, so keys they deleted may come back; range deletions \
             still in a WAL were applied"
        ),
        "{err}"
    );
}
