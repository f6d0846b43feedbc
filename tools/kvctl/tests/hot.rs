//! `kvctl hot`: the saved read-sketch window, as text and JSON, and its
//! errors.

mod common;

use common::{code, kvctl, ok, p, stderr, stdout, CORRUPTION_HINT};
use siftdb::{Db, HotKeyOptions, Options};

/// A database closed after 9 lookups of `hot\x00key` (found) and 4 of
/// `nope` (absent).
fn db_with_hot_keys() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut o = Options::default();
    o.hot_keys = Some(HotKeyOptions::default());
    let db = Db::open_with(&dir, o).unwrap();
    db.put(b"hot\x00key", "v").unwrap();
    for _ in 0..9 {
        db.get(b"hot\x00key").unwrap();
    }
    for _ in 0..4 {
        db.get("nope").unwrap();
    }
    db.close().unwrap();
    (tmp, dir)
}

#[test]
fn hot_prints_the_saved_window() {
    let (_t, db) = db_with_hot_keys();
    let out = stdout(&ok(kvctl(&["hot", p(&db)])));
    assert!(
        out.starts_with("last window: 13 lookups (9 found, 4 absent), 0 halvings"),
        "{out}"
    );
    assert!(
        out.contains("Count-Min 2,719 x 5 (epsilon 0.001, delta 0.01)"),
        "{out}"
    );
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("rank"))
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        vec![
            vec!["1", "hot\\x00key", "9", "9", "0"],
            vec!["2", "nope", "4", "0", "4"]
        ]
    );

    let json: serde_json::Value =
        serde_json::from_str(&stdout(&ok(kvctl(&["hot", p(&db), "--json"])))).unwrap();
    assert_eq!(json["reads"], 13);
    assert_eq!(json["found_reads"], 9);
    assert_eq!(json["absent_reads"], 4);
    assert_eq!(json["width"], 2719);
    assert_eq!(json["depth"], 5);
    assert_eq!(json["format_version"], 1);
    assert_eq!(json["keys"][0]["key"], "hot\\x00key");
    assert_eq!(json["keys"][0]["total"], 9);
    assert_eq!(json["keys"][1]["absent"], 4);
    assert!((json["error_bound"].as_f64().unwrap() - 0.013).abs() < 1e-9);
}

#[test]
fn hot_on_a_damaged_file_exits_3_and_without_one_exits_2() {
    let (_t, db) = db_with_hot_keys();
    let path = db.join("HOTKEYS");
    let mut b = std::fs::read(&path).unwrap();
    let last = b.len() - 10;
    b[last] ^= 0x40;
    std::fs::write(&path, &b).unwrap();
    let o = kvctl(&["hot", p(&db)]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("HOTKEYS checksum mismatch"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains(CORRUPTION_HINT), "{}", stderr(&o));

    std::fs::remove_file(&path).unwrap();
    let o = kvctl(&["hot", p(&db)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("no HOTKEYS file"), "{}", stderr(&o));

    let o = kvctl(&["hot", p(&db.join("missing"))]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

/// A long hot key is shortened in the text table (every row was padded
/// to its width, 65,565 characters for a 65,535-byte key); `--json` has
/// it whole.
#[test]
fn hot_shortens_long_keys_in_text_only() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut o = Options::default();
    o.hot_keys = Some(HotKeyOptions::default());
    let db = Db::open_with(&dir, o).unwrap();
    let long = vec![b'k'; 5_000];
    for _ in 0..3 {
        db.get(&long).unwrap();
        db.get("short").unwrap();
    }
    db.close().unwrap();
    let out = stdout(&ok(kvctl(&["hot", p(&dir)])));
    let widest = out.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(widest < 200, "a line of {widest} characters");
    assert!(out.contains("kkk…"), "{out}");
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&ok(kvctl(&["hot", p(&dir), "--json"])))).unwrap();
    let keys: Vec<usize> = json["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["key"].as_str().unwrap().len())
        .collect();
    assert!(keys.contains(&5_000), "{keys:?}");
}
