//! End-to-end tests of the kvctl binary against temporary databases.

use std::path::PathBuf;

mod common;

use common::{code, files_with_ext, kvctl, kvctl_stdin, ok, p, stderr, stdout, CORRUPTION_HINT};

/// Writes `dir/many.tsv`: 3,000 lines `keyNNNNN<TAB>` + 100 `v`s, about
/// 330 KB (three import batches); returns its path.
fn many_tsv(dir: &std::path::Path) -> PathBuf {
    let input = dir.join("many.tsv");
    let text: String = (0..3000)
        .map(|i| format!("key{i:05}\t{}\n", "v".repeat(100)))
        .collect();
    std::fs::write(&input, text).unwrap();
    input
}

/// A database in a fresh temp dir holding [`many_tsv`]'s 3,000 keys,
/// imported with a 64 KiB write buffer, so in several level-0 tables.
fn many_db() -> (tempfile::TempDir, PathBuf) {
    many_db_with(&["--write-buffer-size", "64K"])
}

/// As [`many_db`], imported with the import options `args` instead.
fn many_db_with(args: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let input = many_tsv(tmp.path());
    let db = tmp.path().join("db");
    let import = [&["import", p(&db), p(&input)], args].concat();
    ok(kvctl(&import));
    (tmp, db)
}

/// Escaped TSV: a key with an escaped tab, a value with an escaped byte.
const SMALL_TSV: &str = "apple\tred\n\
apricot\torange\n\
banana\tyellow\n\
blue\\tberry\tblue\n\
cherry\tdark\\x20red\n\
\n\
date\tbrown\r\n";

/// A database in a fresh temp dir, filled with [`SMALL_TSV`].
fn small_db() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("small.tsv");
    std::fs::write(&input, SMALL_TSV).unwrap();
    let db = tmp.path().join("db");
    let o = ok(kvctl(&["import", p(&db), p(&input), "--escaped"]));
    let out = stdout(&o);
    assert!(out.contains("imported 6 pairs"), "{out}");
    assert!(out.contains("1 SSTable flushed, 0 compactions"), "{out}");
    (tmp, db)
}

/// `-q` used to hide only the progress bar; the summaries still came.
#[test]
fn quiet_import_and_export_print_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("small.tsv");
    std::fs::write(&input, SMALL_TSV).unwrap();
    let db = tmp.path().join("db");
    let out = tmp.path().join("out.tsv");
    for args in [
        vec!["import", p(&db), p(&input), "-q", "--escaped"],
        vec!["export", p(&db), p(&out), "-q"],
    ] {
        let o = ok(kvctl(&args));
        assert_eq!(
            (stdout(&o), stderr(&o)),
            (String::new(), String::new()),
            "{args:?}"
        );
    }
    // The header line, then the 6 pairs.
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 7);
}

#[test]
fn get_found_and_absent() {
    let (_tmp, db) = small_db();
    let o = ok(kvctl(&["get", p(&db), "apple"]));
    assert_eq!(stdout(&o), "red\n");
    let o = ok(kvctl(&["get", p(&db), "cherry"]));
    assert_eq!(stdout(&o), "dark red\n");
    // The escaped key was imported with a real tab; the argument is unescaped too.
    let o = ok(kvctl(&["get", p(&db), "blue\\tberry"]));
    assert_eq!(stdout(&o), "blue\n");
    // A CRLF line ending is not part of the value.
    let o = ok(kvctl(&["get", p(&db), "date", "--raw"]));
    assert_eq!(o.stdout, b"brown");

    let o = kvctl(&["get", p(&db), "grape"]);
    assert_eq!(code(&o), 1);
    assert!(o.stdout.is_empty());
    assert!(stderr(&o).contains("not found"), "{}", stderr(&o));
}

#[test]
fn values_are_escaped_unless_raw() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    ok(kvctl(&["put", p(&db), "k", "a\\tb\\x00\\xff\\\\"]));
    let o = ok(kvctl(&["get", p(&db), "k"]));
    assert_eq!(stdout(&o), "a\\x09b\\x00\\xff\\\\\n");
    let o = ok(kvctl(&["get", p(&db), "k", "--raw"]));
    assert_eq!(o.stdout, b"a\tb\x00\xff\\");
}

#[test]
fn put_delete_then_get() {
    let (_tmp, db) = small_db();
    ok(kvctl(&["put", p(&db), "fig", "purple"]));
    assert_eq!(stdout(&ok(kvctl(&["get", p(&db), "fig"]))), "purple\n");
    ok(kvctl(&["put", p(&db), "apple", "green"]));
    assert_eq!(stdout(&ok(kvctl(&["get", p(&db), "apple"]))), "green\n");
    ok(kvctl(&["delete", p(&db), "apple"]));
    assert_eq!(code(&kvctl(&["get", p(&db), "apple"])), 1);
    // Deleting an absent key is fine.
    ok(kvctl(&["delete", p(&db), "nothing-here"]));
}

#[test]
fn scan_prefix_from_limit_reverse() {
    let (_tmp, db) = small_db();
    let scan = |extra: &[&str]| {
        let mut args = vec!["scan", p(&db)];
        args.extend_from_slice(extra);
        stdout(&ok(kvctl(&args)))
    };
    assert_eq!(
        scan(&[]),
        "apple\tred\napricot\torange\nbanana\tyellow\nblue\\x09berry\tblue\ncherry\tdark red\ndate\tbrown\n"
    );
    assert_eq!(scan(&["--prefix", "ap"]), "apple\tred\napricot\torange\n");
    assert_eq!(
        scan(&["--prefix", "b", "--reverse"]),
        "blue\\x09berry\tblue\nbanana\tyellow\n"
    );
    assert_eq!(
        scan(&["--from", "b", "--limit", "2"]),
        "banana\tyellow\nblue\\x09berry\tblue\n"
    );
    assert_eq!(
        scan(&["--from", "bb", "--reverse", "--limit", "2"]),
        "banana\tyellow\napricot\torange\n"
    );
    assert_eq!(
        scan(&["--prefix", "a", "--from", "apr"]),
        "apricot\torange\n"
    );
    assert_eq!(scan(&["--prefix", "a", "--from", "b"]), "");
    assert_eq!(scan(&["--reverse", "--limit", "1"]), "date\tbrown\n");
}

#[test]
fn export_import_round_trip_with_gzip_and_stdin() {
    let (tmp, db) = small_db();
    ok(kvctl(&["put", p(&db), "bin\\x00key", "\\xfe\\xff"]));
    let before = stdout(&ok(kvctl(&["scan", p(&db)])));

    let gz = tmp.path().join("dump.tsv.gz");
    ok(kvctl(&["export", p(&db), p(&gz)]));
    assert_eq!(&std::fs::read(&gz).unwrap()[..2], &[0x1f, 0x8b]);
    let copy = tmp.path().join("copy");
    ok(kvctl(&["import", p(&copy), p(&gz), "--quiet"]));
    assert_eq!(stdout(&ok(kvctl(&["scan", p(&copy)]))), before);

    let exported = ok(kvctl(&["export", p(&db)])).stdout;
    assert_eq!(
        String::from_utf8(exported.clone()).unwrap(),
        format!("#kvctl-export escaped v1\n{before}")
    );
    let copy2 = tmp.path().join("copy2");
    let o = kvctl_stdin(&["import", p(&copy2), "-"], &exported);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&ok(kvctl(&["scan", p(&copy2)]))), before);
}

/// Found by a new-user trial: a plain TSV of JSON values stopped at its
/// first `\"`; it is now imported raw without a flag.
#[test]
fn raw_import_keeps_backslashes() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("raw.tsv");
    std::fs::write(&input, "abe\t{\"d\":\"named \\\"Abe\\\"\"}\n").unwrap();
    let db = tmp.path().join("db");
    // --escaped rejects `\"`, naming the line and saying how to take it raw.
    let o = kvctl(&["import", p(&db), p(&input), "--escaped"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("raw.tsv:1"), "{}", stderr(&o));
    assert!(stderr(&o).contains("without --escaped"), "{}", stderr(&o));
    for args in [&[][..], &["--raw"][..]] {
        ok(kvctl(&[&["import", p(&db), p(&input)][..], args].concat()));
        let o = ok(kvctl(&["get", p(&db), "abe", "--raw"]));
        assert_eq!(o.stdout, b"{\"d\":\"named \\\"Abe\\\"\"}");
    }
}

#[test]
fn stats_json_counts_files_and_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let input = many_tsv(tmp.path());
    let db = tmp.path().join("db");
    let o = ok(kvctl(&[
        "import",
        p(&db),
        p(&input),
        "--write-buffer-size",
        "64K",
        "--bits-per-key",
        "8",
    ]));
    // Progress goes nowhere when stdout is not a terminal.
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    // Import writes batches of 1000 lines (~113 KB here); the memtable is
    // swapped before a write once it holds 64 KiB, so each batch becomes
    // its own SSTable.
    assert!(stdout(&o).contains("3 SSTables flushed"), "{}", stdout(&o));

    let o = ok(kvctl(&["stats", p(&db), "--json"]));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("valid JSON");
    let total = &v["total"];
    let files = total["files"].as_u64().unwrap();
    assert_eq!(files, 3, "{v}");
    assert_eq!(total["entries"].as_u64(), Some(3000));
    assert_eq!(total["distinct_keys"].as_u64(), Some(3000));
    assert_eq!(total["tombstones"].as_u64(), Some(0));
    let bpk = total["filter_bits_per_key"].as_f64().unwrap();
    assert!((7.9..9.0).contains(&bpk), "{bpk}");
    let levels = v["levels"].as_array().unwrap();
    assert_eq!(levels[0]["level"].as_u64(), Some(0));
    let sum: u64 = levels.iter().map(|l| l["files"].as_u64().unwrap()).sum();
    assert_eq!(sum, files);
    for key in [
        "bytes",
        "entries",
        "distinct_keys",
        "tombstones",
        "filter_bits",
    ] {
        assert!(levels[0][key].is_u64(), "{key} missing: {v}");
    }

    // What the filters cost and buy, as `filters --json` has it.
    let m = &v["filter_memory"];
    assert_eq!(m["keys"], 3000, "{v}");
    let fp = m["expected_false_positives"].as_f64().unwrap();
    assert!(fp > 0.0 && fp < 0.1, "{v}");

    // The memory held: 3,000 keys at ~8 bits each in three tables' filters
    // (each copy padded by at most 63 bytes), some index, and the parts
    // add up.
    let mem = &v["memory"];
    let part = |k: &str| mem[k].as_u64().unwrap_or_else(|| panic!("{k}: {v}"));
    let filters = part("pinned_filters");
    assert!((3000..=3000 + 3 * 64 + 64).contains(&filters), "{v}");
    assert!(part("pinned_indexes") > 0, "{v}");
    assert_eq!(
        part("total"),
        filters + part("pinned_indexes") + part("memtables"),
        "{v}"
    );

    // The text table shows the same numbers.
    let table = stdout(&ok(kvctl(&["stats", p(&db)])));
    assert!(table.starts_with("level"), "{table}");
    let line = table.lines().find(|l| l.starts_with("filters ")).unwrap();
    assert!(line.contains("for 3,000 keys"), "{line}");
    assert!(
        line.contains(&format!("{fp:.5} expected false positives")),
        "{line}"
    );
    let line = table.lines().find(|l| l.starts_with("memory ")).unwrap();
    assert!(line.contains("pinned filters"), "{line}");
    let total_row = table.lines().find(|l| l.starts_with("total")).unwrap();
    assert!(
        total_row.contains(&files.to_string()) && total_row.contains("3,000"),
        "{table}"
    );
}

#[test]
fn malformed_import_line_is_exit_2_with_line_number() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("bad.tsv");
    std::fs::write(&input, "a\t1\nb\t2\nno tab here\nd\t4\n").unwrap();
    let o = kvctl(&["import", p(&tmp.path().join("db")), p(&input)]);
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(err.starts_with("kvctl: "), "{err}");
    assert!(err.contains("bad.tsv:3"), "{err}");
    assert!(err.contains("no tab"), "{err}");
}

/// 3,000 lines gzip-compressed: three import batches.
fn gzipped_lines() -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for i in 0..3000 {
        writeln!(enc, "key{i:05}\tvalue{i}").unwrap();
    }
    enc.finish().unwrap()
}

/// Found by a new-user trial: a path that is a pipe (`/dev/stdin`, a
/// FIFO, `<(cat f)`) was opened twice, once to look for gzip's magic
/// number, so the import lost its first two bytes ("key00000" went in as
/// "y00000") and reported success. It is now read once, like `-`.
#[test]
fn import_from_a_pipe_path_keeps_every_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let lines: String = (0..3000)
        .map(|i| format!("key{i:05}\tvalue{i}\n"))
        .collect();
    for (name, bytes) in [("plain", lines.into_bytes()), ("gzip", gzipped_lines())] {
        let db = tmp.path().join(name);
        let o = kvctl_stdin(&["import", p(&db), "/dev/stdin"], &bytes);
        assert_eq!(code(&o), 0, "{name}: {}", stderr(&o));
        assert!(
            stdout(&o).contains("imported 3,000 pairs"),
            "{}",
            stdout(&o)
        );
        let o = ok(kvctl(&["get", p(&db), "key00000"]));
        assert_eq!(stdout(&o), "value0\n", "{name}");
        let keys = stdout(&ok(kvctl(&["scan", p(&db), "--keys-only", "--limit", "1"])));
        assert_eq!(keys, "key00000\n", "{name}");
    }
}

#[test]
fn damaged_gzip_file_is_exit_2_and_imports_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let gz = gzipped_lines();
    let n = gz.len();
    // A flipped trailer CRC: every line decodes, only the end is wrong.
    let mut bad_crc = gz.clone();
    bad_crc[n - 8] ^= 0x01;
    for (name, bytes) in [("truncated", gz[..n / 2].to_vec()), ("bad-crc", bad_crc)] {
        let input = tmp.path().join(format!("{name}.tsv.gz"));
        std::fs::write(&input, bytes).unwrap();
        let db = tmp.path().join(format!("db-{name}"));
        let o = kvctl(&["import", p(&db), p(&input), "--quiet"]);
        let err = stderr(&o);
        assert_eq!(code(&o), 2, "{name}: {err}");
        assert!(err.contains(&format!("{name}.tsv.gz")), "{name}: {err}");
        assert!(
            err.contains("gzip") || err.contains("deflate"),
            "{name}: {err}"
        );
        assert!(err.contains("nothing was imported"), "{name}: {err}");
        // The whole stream is checked before the database is touched.
        assert!(!db.exists(), "{name}: the database was created");
    }
}

#[test]
fn damaged_gzip_on_stdin_is_exit_2_and_says_what_was_imported() {
    let tmp = tempfile::tempdir().unwrap();
    let gz = gzipped_lines();
    let db = tmp.path().join("db");
    // Cut after the first two batches' worth of compressed bytes.
    let o = kvctl_stdin(&["import", p(&db), "-"], &gz[..gz.len() * 3 / 4]);
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "{err}");
    assert!(err.contains("<stdin>"), "{err}");
    let imported = stdout(&ok(kvctl(&["scan", p(&db)]))).lines().count();
    assert!(imported > 0 && imported < 3000, "{imported}");
    // Whole batches of 1,000 lines went in before the damage.
    assert_eq!(imported % 1000, 0, "{imported}");
    assert!(
        err.contains(&format!(
            "the {},000 keys before it were imported; repair the input",
            imported / 1000
        )),
        "{imported}: {err}"
    );
}

#[test]
fn failed_export_leaves_no_output_file() {
    let tmp = tempfile::tempdir().unwrap();
    let input = many_tsv(tmp.path());
    let db = tmp.path().join("db");
    ok(kvctl(&["import", p(&db), p(&input), "--quiet"]));
    // Damage a data block: the export reads part of the keys, then fails.
    let sst = files_with_ext(&db, "sst").remove(0);
    let mut bytes = std::fs::read(&sst).unwrap();
    bytes[100] ^= 0x40;
    std::fs::write(&sst, bytes).unwrap();
    for name in ["out.tsv", "out.tsv.gz"] {
        let out = tmp.path().join(name);
        let o = kvctl(&["export", p(&db), p(&out), "--quiet"]);
        assert_eq!(code(&o), 3, "{name}: {}", stderr(&o));
        // The hint says how to see the damage and how to get the rest out.
        assert!(
            stderr(&o).ends_with(&format!("\nhint: {CORRUPTION_HINT}\n")),
            "{name}: {}",
            stderr(&o)
        );
        assert!(!out.exists(), "{name}: a partial export was left behind");
        // An interrupted export's leftover is replaced, then removed.
        std::fs::write(tmp.path().join(format!(".{name}.kvctl-partial")), "old").unwrap();
        let o = kvctl(&["export", p(&db), p(&out), "--quiet"]);
        assert_eq!(code(&o), 3, "{name}: {}", stderr(&o));
        // Nor a temporary file beside it.
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.contains("out"))
            .collect();
        assert!(left.is_empty(), "{name}: {left:?}");
    }
}

#[test]
fn a_closed_stderr_is_not_a_panic() {
    use std::process::{Command, Stdio};
    let (_tmp, db) = small_db();
    let out = db.parent().unwrap().join("x.tsv");
    for args in [
        vec!["get", p(&db), "absent"],
        vec!["export", p(&db), p(&out)],
    ] {
        let mut child = Command::new(common::KVCTL)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stderr.take()); // the reading end closes at once
        let status = child.wait().unwrap();
        let want = if args[0] == "get" { 1 } else { 0 };
        assert_eq!(status.code(), Some(want), "{args:?}");
    }
    assert!(out.exists());
}

/// A database written by `put a 1` and `put b 2`, the last byte of its WAL
/// flipped: the WAL, kept by each open, holds `a`'s record (29 bytes: a
/// 12-byte record header, a 12-byte batch header, type, lengths, key and
/// value), then `b`'s, now a torn tail at offset 29. Returns the temp dir,
/// the database, the WAL and its damaged bytes.
fn torn_tail_db() -> (tempfile::TempDir, PathBuf, PathBuf, Vec<u8>) {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    ok(kvctl(&["put", p(&db), "a", "1"]));
    ok(kvctl(&["put", p(&db), "b", "2"]));
    let wal = files_with_ext(&db, "log").remove(0);
    let mut bytes = std::fs::read(&wal).unwrap();
    *bytes.last_mut().unwrap() ^= 0x01;
    std::fs::write(&wal, &bytes).unwrap();
    (tmp, db, wal, bytes)
}

#[test]
fn a_write_command_warns_when_its_open_drops_a_torn_wal_tail() {
    let (_tmp, db, wal, _) = torn_tail_db();
    let o = ok(kvctl(&["put", p(&db), "c", "3"]));
    // A failed write (a full disk) leaves a torn record too: the warning
    // names both causes.
    assert_eq!(
        stderr(&o),
        format!(
            "kvctl: warning: {} ends in a torn record at offset 29 (last record's payload \
             checksum mismatch (stored 0x15eb4463, computed 0x62ec74f5): write cut off); its 29 \
             bytes were dropped (a write cut short by a crash or by a write error such as a full \
             disk, or damage to the last record)\n",
            wal.display()
        )
    );
    // And the next open, after a clean close, has nothing to say.
    let o = ok(kvctl(&["put", p(&db), "d", "4"]));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    assert_eq!(code(&kvctl(&["get", p(&db), "b"])), 1);
}

/// A backslash at the end of an argument or an import field was "an
/// unknown escape".
#[test]
fn a_trailing_backslash_is_named_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let o = kvctl(&["put", p(&db), "kk", "trail\\"]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        "error: invalid value 'trail\\' for '[VALUE]': a trailing backslash at offset 5; \
         write \\\\ for a literal backslash\n\nFor more information, try '--help'.\n"
    );
    assert!(!db.exists());
    let input = tmp.path().join("bad.tsv");
    std::fs::write(&input, "a\t1\nb\tx\\\n").unwrap();
    let o = kvctl(&["import", p(&db), p(&input), "--escaped"]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        stderr(&o),
        format!(
            "kvctl: {}:2: value: a trailing backslash at offset 1; write \\\\ for a literal \
             backslash (or import without --escaped to take bytes verbatim)\n\
             hint: nothing was imported; fix the line and import again\n",
            input.display()
        )
    );
    // The import created the database; stopping before its first write, it
    // leaves none behind (a second trial found an empty one). An existing
    // database is left alone.
    assert!(!db.exists(), "an empty database was left behind");
    ok(kvctl(&["put", p(&db), "kept", "1"]));
    assert_eq!(code(&kvctl(&["import", p(&db), p(&input), "--escaped"])), 2);
    assert_eq!(stdout(&ok(kvctl(&["get", p(&db), "kept"]))), "1\n");
}

/// "imported 1 keys", "exported 1 keys".
#[test]
fn one_key_is_counted_in_the_singular() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("one.tsv");
    std::fs::write(&input, "a\t1\n").unwrap();
    let db = tmp.path().join("db");
    let out = stdout(&ok(kvctl(&["import", p(&db), p(&input)])));
    assert!(
        out.starts_with(&format!(
            "imported 1 pair (2 B of keys and values) from {} in ",
            input.display()
        )),
        "{out}"
    );
    let exported = tmp.path().join("out.tsv");
    let o = ok(kvctl(&["export", p(&db), p(&exported)]));
    assert_eq!(
        stderr(&o),
        format!("exported 1 key to {}\n", exported.display())
    );
}

#[test]
fn usage_errors_are_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    // Missing argument (clap).
    assert_eq!(code(&kvctl(&["get"])), 2);
    // Bad escape in a key argument.
    assert_eq!(code(&kvctl(&["get", p(tmp.path()), "a\\q"])), 2);
    // Reading commands never create a database.
    let missing = tmp.path().join("missing");
    let o = kvctl(&["get", p(&missing), "k"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(!missing.exists());
    // Writing commands create the database's directory, not its missing
    // parents (a new-user trial's typo `put /nonexistent/db` made both).
    let deep = missing.join("db");
    for args in [
        vec!["put", p(&deep), "k", "v"],
        vec!["import", p(&deep), "-"],
    ] {
        let o = kvctl(&args);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(
            stderr(&o).contains("kvctl creates only the database's own directory"),
            "{}",
            stderr(&o)
        );
    }
    assert!(!missing.exists());
    // A range error names the real limit (a new-user trial was told
    // `0..=4294967295` for --bits-per-key, whose limit is 64).
    for cmd in ["import", "compact"] {
        let mut args = vec![cmd, p(&missing)];
        if cmd == "import" {
            args.push("-");
        }
        args.extend(["--bits-per-key", "65"]);
        let o = kvctl(&args);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(stderr(&o).contains("0..=64"), "{cmd}: {}", stderr(&o));
    }
    assert!(!missing.exists());
}

#[test]
fn locked_database_is_exit_4_for_writes_and_salvage_but_readable() {
    let (tmp, db) = small_db();
    let held = siftdb::Db::open(&db).unwrap();
    // Reads open the database read-only and ignore the lock.
    assert_eq!(stdout(&ok(kvctl(&["get", p(&db), "apple"]))), "red\n");
    let o = kvctl(&["put", p(&db), "apple", "green"]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("locked"), "{err}");
    assert!(
        err.contains("another process has the database open"),
        "{err}"
    );
    // A salvage is refused too: the writer could delete files under it.
    let out = tmp.path().join("rescued.tsv");
    let o = kvctl(&["export", "--salvage", p(&db), p(&out)]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    assert!(stderr(&o).contains("another process has the database open"));
    assert!(!out.exists());
    drop(held);
    assert_eq!(stdout(&ok(kvctl(&["get", p(&db), "apple"]))), "red\n");
    ok(kvctl(&["export", "--salvage", p(&db), p(&out)]));
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("apple\tred"));
}

#[test]
fn help_carries_examples() {
    // Found by a new-user trial: the examples used `cargo run`; an
    // installed kvctl shows `kvctl ...`.
    let top = stdout(&ok(kvctl(&["--help"])));
    assert!(
        top.contains("Examples:\n  kvctl demo\n  kvctl import ./db data.tsv\n"),
        "{top}"
    );
    assert!(!top.contains("cargo run"), "{top}");
    for cmd in [
        &["import"][..],
        &["export"],
        &["get"],
        &["put"],
        &["delete"],
        &["scan"],
        &["stats"],
        &["demo"],
        &["completions"],
        &["bench", "readamp"],
        &["bench", "filters"],
        &["bench", "monkey"],
    ] {
        let h = stdout(&ok(kvctl(&[cmd, &["--help"]].concat())));
        assert!(h.contains("Example:\n  kvctl "), "{cmd:?}: {h}");
        assert!(!h.contains("cargo run"), "{cmd:?}: {h}");
    }
}

/// Found by new-user trials: `demo --dir` and `bench readamp --out` naming
/// a file said only "create FILE: File exists".
#[test]
fn demo_or_bench_output_into_a_file_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("afile");
    std::fs::write(&file, "x").unwrap();
    let o = kvctl(&["demo", "--dir", p(&file)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "kvctl: --dir {}: exists and is not a directory\n",
            file.display()
        )
    );
    assert_eq!(stdout(&o), "");
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
    // The same for `bench readamp --out`, which said "File exists".
    let o = kvctl(&["bench", "readamp", "--out", p(&file)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "kvctl: --out {}: exists and is not a directory\n",
            file.display()
        )
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

/// Found by a new-user trial: `demo --dir DB` built its two databases
/// inside an existing database's directory.
#[test]
fn demo_into_a_database_directory_is_a_usage_error() {
    let (_tmp, db) = small_db();
    let before = files_with_ext(&db, "sst");
    let o = kvctl(&["demo", "--dir", p(&db)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("holds a database"), "{}", stderr(&o));
    assert!(!db.join("bloom-10").exists());
    assert_eq!(files_with_ext(&db, "sst"), before);
}

#[test]
fn demo_reports_and_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let o = ok(kvctl(&["demo", "--dir", p(&dir)]));
    let out = stdout(&o);
    for needle in [
        "63,681 keys",
        "104,334 words; 849 are also package names, leaving 103,485 absent keys",
        "data-block reads per lookup",
        "SSTables skipped by key range per lookup",
        "SSTables skipped by filter per lookup",
        "filter false positives",
        "theory    (1 - e^(-7/10))^7 = 0.82%",
        "data-block reads per absent lookup",
        "OK: all 63,681 values read back exactly, none of 103,485 absent keys found",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
    let tables: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("SSTables      "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .expect("SSTables line");
    assert!(tables >= 8, "{out}");
    let lookups = out
        .lines()
        .find(|l| l.trim_start().starts_with("found"))
        .unwrap();
    assert!(
        lookups.trim_end().ends_with(" 0"),
        "absent keys found: {lookups}"
    );
    assert!(dir.join("bloom-10").join("CURRENT").exists());
    assert!(dir.join("no-filter").join("CURRENT").exists());

    // The databases are real: kvctl reads them back.
    let db = dir.join("bloom-10");
    let v = stdout(&ok(kvctl(&["get", p(&db), "0ad"])));
    assert!(v.starts_with("{\"version\":"), "{v}");

    // A second run refuses to reuse them.
    let o = kvctl(&["demo", "--dir", p(&dir), "--no-compare"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("fresh directory"), "{}", stderr(&o));
}

#[test]
fn compact_merges_files_drops_deletes_and_reports_write_amplification() {
    let (_tmp, db) = many_db();
    for k in ["key00000", "key01500", "key02999"] {
        ok(kvctl(&["delete", p(&db), k]));
    }
    // --from and --to go together.
    let o = kvctl(&["compact", p(&db), "--from", "key0"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));

    // A range compaction (both bounds given) runs and leaves the data.
    let o = ok(kvctl(&[
        "compact",
        p(&db),
        "--from",
        "key00100",
        "--to",
        "key00200",
    ]));
    let out = stdout(&o);
    assert!(out.contains("after\n"), "{out}");
    // The three deletes are still in the memtable (each `kvctl delete`
    // reopened the database, and an open keeps a WAL whose writes fit in
    // the memtable). The compaction's flush writes them into one level-0
    // table spanning key00000..key02999, which overlaps every other
    // level-0 table (level 0 is compacted as a closure): all three
    // tombstones and their puts go.
    assert!(
        out.contains("dropped 3 shadowed versions, 3 tombstones and 0 range-deleted versions, in "),
        "{out}"
    );

    let o = ok(kvctl(&["compact", p(&db)]));
    let out = stdout(&o);
    assert!(out.contains("before\n") && out.contains("after\n"), "{out}");
    assert!(out.contains(" range-deleted versions, in "), "{out}");
    assert!(out.contains("write amplification "), "{out}");

    let o = ok(kvctl(&["stats", p(&db), "--json"]));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["total"]["entries"], 2997);
    assert_eq!(v["total"]["tombstones"], 0);
    let non_empty: Vec<&serde_json::Value> = v["levels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["files"].as_u64().unwrap() > 0)
        .collect();
    assert_eq!(non_empty.len(), 1, "one level after a full compaction: {v}");
    assert_eq!(non_empty[0]["level"], 1);
    let wa = v["write_amplification"].as_f64().unwrap();
    assert!(wa > 1.0 && wa < 5.0, "write amplification {wa}");
    assert_eq!(code(&kvctl(&["get", p(&db), "key01500"])), 1, "deleted");
    assert_eq!(
        stdout(&ok(kvctl(&["get", p(&db), "key01499"]))),
        format!("{}\n", "v".repeat(100))
    );
}

#[test]
fn bench_readamp_runs_a_small_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("readamp");
    let o = ok(kvctl(&[
        "bench",
        "readamp",
        "--keys",
        "4000",
        "--files",
        "1,4",
        "--bits-per-key",
        "0,10",
        "--hashes",
        "7",
        "--no-debian",
        "--no-leveled",
        "--no-plots",
        "--out",
        p(&out_dir),
    ]));
    // Named once (a new-user trial found it printed twice).
    assert_eq!(
        stdout(&o).matches("readamp.csv").count(),
        1,
        "{}",
        stdout(&o)
    );
    let csv = std::fs::read_to_string(out_dir.join("readamp.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert!(
        rows[0].starts_with("files,bits_per_key,hashes,"),
        "{}",
        rows[0]
    );
    assert_eq!(
        rows.len(),
        1 + 4 + 1,
        "header, 2 × 2 sweep points, one k point"
    );
    assert!(
        rows[1..]
            .iter()
            .all(|r| r.ends_with("true") || r.contains(",true,")),
        "{csv}"
    );
    // 4,000 keys are too few for every check to hold at 5 sigmas: said.
    assert!(
        stderr(&o).contains(
            "warning: --keys 4,000 is below 122,500, the keys a 5-sigma check of a \
             false-positive rate needs"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bench_filters_runs_a_tiny_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("filters");
    let o = ok(kvctl(&[
        "bench",
        "filters",
        "--keys",
        "2000",
        "--cached-keys",
        "500",
        "--absent",
        "200000",
        "--bits-per-key",
        "10,14",
        "--uncached-mib",
        "1",
        "--rounds",
        "3",
        "--out",
        p(&out_dir),
    ]));
    let out = stdout(&o);
    for needle in [
        "Filters over 2,000 random 16-byte keys",
        "FPR: the false-positive rate over 200,000 absent keys",
        "All 6 false-positive rates agree with their kind's theory",
        "filters.csv",
        "filters-fpr-vs-bits-per-key.svg",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
    // A row per kind and setting, each with its check.
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| {
            l.starts_with("bloom ") || l.starts_with("blocked-bloom ") || l.starts_with("ribbon ")
        })
        .collect();
    assert_eq!(rows.len(), 6, "{out}");
    assert!(rows.iter().all(|r| r.contains(" yes |")), "{out}");
    // The 1 MiB of copies fits a cache, and kvctl says so.
    assert!(
        stderr(&o).contains("warning: --uncached-mib 1 is below 64"),
        "{}",
        stderr(&o)
    );

    let csv = std::fs::read_to_string(out_dir.join("filters.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].starts_with(
            "kind,bits_per_key,measured_fpr,theory_fpr,stored_bits_per_key,probe_ns_cached,\
             probe_ns_uncached,build_ns_per_key,load_ns_dependent,"
        ),
        "{}",
        lines[0]
    );
    assert_eq!(lines.len(), 1 + 6, "{csv}");
    let width = lines[0].split(',').count();
    let keys: Vec<(String, String)> = lines[1..]
        .iter()
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), width, "{l}");
            assert_eq!(cells[width - 1], "true", "{l}");
            // Measured and theoretical rates, stored bits and times are
            // numbers; the rate is a fraction.
            let fpr: f64 = cells[2].parse().unwrap();
            assert!(fpr > 0.0 && fpr < 0.02, "{l}");
            for c in &cells[3..9] {
                assert!(c.parse::<f64>().unwrap() > 0.0, "{l}");
            }
            (cells[0].to_string(), cells[1].to_string())
        })
        .collect();
    let want: Vec<(String, String)> = ["10", "14"]
        .iter()
        .flat_map(|b| ["bloom", "blocked-bloom", "ribbon"].map(|k| (k.to_string(), b.to_string())))
        .collect();
    assert_eq!(keys, want);

    let svg = std::fs::read_to_string(out_dir.join("filters-fpr-vs-bits-per-key.svg")).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
    assert!(svg.contains("information bound"));
}

/// A rate outside tolerance exits 1, after the CSV, the plot and the
/// table are written. Ten absent keys can only give rates of 0, 10%, 20%,
/// ..., none within 10% of the classic filter's 14.69% at 4 bits per key.
#[test]
fn bench_filters_exits_1_when_a_rate_misses_its_theory() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("filters");
    let o = kvctl(&[
        "bench",
        "filters",
        "--keys",
        "2000",
        "--absent",
        "10",
        "--bits-per-key",
        "4",
        "--kinds",
        "bloom",
        "--uncached-mib",
        "1",
        "--rounds",
        "1",
        "--quiet",
        "--out",
        p(&out_dir),
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("kvctl: 1 false-positive rate outside tolerance (see the table above)"),
        "{err}"
    );
    assert!(
        err.contains(
            "hint: rerun with --absent 122,500 or more before reading the misses as a fault"
        ),
        "{err}"
    );
    let out = stdout(&o);
    assert!(
        out.contains("1 of 1 false-positive rates disagree with their kind's theory"),
        "{out}"
    );
    let row = out.lines().find(|l| l.starts_with("bloom ")).unwrap();
    assert!(row.contains(" NO |"), "{row}");
    let csv = std::fs::read_to_string(out_dir.join("filters.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(csv.lines().nth(1).unwrap().ends_with(",false"), "{csv}");
    assert!(out_dir.join("filters-fpr-vs-bits-per-key.svg").exists());
}

#[test]
fn bench_filters_usage_errors_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("afile");
    std::fs::write(&file, "x").unwrap();
    let cases: [(Vec<&str>, String); 5] = [
        (
            vec!["--kinds", "bloom,cuckoo"],
            "unknown kind \"cuckoo\"; expected bloom, blocked-bloom or ribbon".into(),
        ),
        (
            vec!["--out", p(&file)],
            format!(
                "kvctl: --out {}: exists and is not a directory\n",
                file.display()
            ),
        ),
        (
            vec!["--bits-per-key", "8,0"],
            "kvctl: invalid configuration: bits per key 0: it must be above 0 and at most 64\n"
                .into(),
        ),
        (
            vec!["--kinds", "ribbon,ribbon"],
            "kvctl: invalid configuration: the ribbon kind is listed twice\n".into(),
        ),
        (
            vec!["--uncached-mib", "0"],
            "kvctl: --uncached-mib 0: it must be in 1..=2048\n".into(),
        ),
    ];
    for (args, want) in cases {
        let all = [&["bench", "filters", "--quiet"], &args[..]].concat();
        let o = kvctl(&all);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(&want), "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{args:?}");
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
    let h = stdout(&ok(kvctl(&["bench", "filters", "--help"])));
    assert!(h.contains("Example:\n  kvctl bench filters"), "{h}");
    for flag in [
        "--keys",
        "--bits-per-key",
        "--kinds",
        "--out",
        "--seed",
        "--quiet",
    ] {
        assert!(h.contains(flag), "{flag}: {h}");
    }
}

/// Found by a new-user trial: too few keys for the leveled layout exited
/// 4 (the I/O code) with no hint. It is a usage error that says what to
/// change.
#[test]
fn bench_readamp_with_too_few_keys_for_the_layout_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let o = kvctl(&[
        "bench",
        "readamp",
        "--keys",
        "2000",
        "--files",
        "1",
        "--bits-per-key",
        "0",
        "--hashes",
        "7",
        "--no-debian",
        "--no-plots",
        "--quiet",
        "--out",
        p(&tmp.path().join("readamp")),
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("level 1 covers too little of the key space"),
        "{err}"
    );
    assert!(
        err.contains("hint: the layout needs more keys: raise --keys (default 200,000)"),
        "{err}"
    );
}

/// The numbers of the live SSTables, from `sst list --json`.
fn table_numbers(db: &std::path::Path) -> Vec<u64> {
    let o = ok(kvctl(&["sst", "list", p(db), "--json"]));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["number"].as_u64().unwrap())
        .collect()
}

#[test]
fn compacting_a_compacted_database_says_nothing_needed_rewriting() {
    let (_tmp, db) = many_db();
    let first = stdout(&ok(kvctl(&["compact", p(&db)])));
    assert!(!first.contains("nothing needed rewriting"), "{first}");
    let tables = table_numbers(&db);
    assert!(!tables.is_empty());

    let again = stdout(&ok(kvctl(&["compact", p(&db)])));
    assert!(
        again.contains(
            "compactions 0, read 0 B, wrote 0 B, dropped 0 shadowed versions, 0 tombstones and 0 range-deleted versions, in "
        ),
        "{again}"
    );
    assert!(
        again.contains(
            "nothing needed rewriting: no tombstones, shadowed versions, range-deleted \
             keys, stale filters or oversized files\n"
        ),
        "{again}"
    );
    assert_eq!(table_numbers(&db), tables, "no file was rewritten");

    // A delete leaves a tombstone and a shadowed put to drop.
    ok(kvctl(&["delete", p(&db), "key01500"]));
    let third = stdout(&ok(kvctl(&["compact", p(&db)])));
    assert!(
        third.contains("dropped 1 shadowed version, 1 tombstone and 0 range-deleted versions, in "),
        "{third}"
    );
    assert!(!third.contains("nothing needed rewriting"), "{third}");
    assert_eq!(code(&kvctl(&["get", p(&db), "key01500"])), 1, "deleted");
}

/// The total filter bits per key of `db`, from `stats --json`.
fn filter_bits_per_key(db: &std::path::Path) -> f64 {
    let o = ok(kvctl(&["stats", p(db), "--json"]));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["total"]["filter_bits_per_key"].as_f64().unwrap()
}

/// Found by a new-user trial: options are not stored in the database, so
/// `compact` rebuilt the filters of a database imported with
/// `--bits-per-key 4` at the default 10, with no way to say otherwise.
/// `compact --bits-per-key` keeps them (and rewrites nothing).
#[test]
fn compact_keeps_the_filter_setting_it_is_given() {
    let (_tmp, db) = many_db_with(&["--bits-per-key", "4", "-q"]);
    ok(kvctl(&["compact", p(&db), "--bits-per-key", "4"]));
    assert_eq!(filter_bits_per_key(&db), 4.0);
    let again = stdout(&ok(kvctl(&["compact", p(&db), "--bits-per-key", "4"])));
    assert!(again.contains("nothing needed rewriting"), "{again}");
    // Without the flag the stored setting applies (OPTIONS): still 4.
    let kept = stdout(&ok(kvctl(&["compact", p(&db)])));
    assert_eq!(filter_bits_per_key(&db), 4.0);
    assert!(kept.contains("nothing needed rewriting"), "{kept}");
    // A new value is used, and stored for the next open.
    ok(kvctl(&["compact", p(&db), "--bits-per-key", "10"]));
    assert_eq!(filter_bits_per_key(&db), 10.0);
    let again = stdout(&ok(kvctl(&["compact", p(&db)])));
    assert!(again.contains("nothing needed rewriting"), "{again}");
}

/// `import --filters` and `compact --filters` build each level's kind;
/// `filters`, `sst dump` and `explain` name it.
#[test]
fn filters_of_every_kind_are_built_per_level_and_shown_by_kind() {
    let spec = "blocked-bloom:10,ribbon:1%";
    let (_tmp, db) = many_db_with(&["--write-buffer-size", "64K", "--filters", spec, "-q"]);
    let kinds = |db: &std::path::Path| -> Vec<(u64, String)> {
        let v: serde_json::Value =
            serde_json::from_str(&stdout(&ok(kvctl(&["filters", p(db), "--json"])))).unwrap();
        v["filters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["level"].as_u64().unwrap(),
                    f["kind"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    // Flushed tables carry level 0's filter.
    let before = kinds(&db);
    assert!(
        before.iter().any(|(l, k)| *l == 0 && k == "blocked-bloom"),
        "{before:?}"
    );
    ok(kvctl(&["compact", p(&db), "--filters", spec, "-q"]));
    let after = kinds(&db);
    assert!(
        !after.is_empty() && after.iter().all(|(l, k)| *l >= 1 && k == "ribbon"),
        "{after:?}"
    );
    let text = stdout(&ok(kvctl(&["filters", p(&db)])));
    assert!(text.contains(" ribbon ") && text.contains("r=7"), "{text}");
    let sst = files_with_ext(&db, "sst").remove(0);
    let dump = stdout(&ok(kvctl(&["sst", "dump", p(&sst), "--filter"])));
    assert!(dump.contains("  kind         ribbon"), "{dump}");
    assert!(dump.contains("  parameters   r = 7"), "{dump}");
    assert!(dump.contains("design FPR   0.78%  = 2^-r"), "{dump}");
    let explain = stdout(&ok(kvctl(&["explain", p(&db), "key00042x"])));
    assert!(
        explain.contains("skipped by ribbon filter (says absent)")
            || explain.contains("ribbon filter: maybe"),
        "{explain}"
    );
    // A bad spec is a usage error naming the entry.
    let e = kvctl(&["compact", p(&db), "--filters", "cuckoo:10"]);
    assert_eq!(code(&e), 2);
    assert!(
        stderr(&e).contains("unknown kind \"cuckoo\""),
        "{}",
        stderr(&e)
    );
}

/// `import --prefix-len` builds prefix filters; `explain --prefix` shows
/// which tables a prefix scan reads and which its prefix filters skip.
#[test]
fn explain_prefix_shows_the_tables_a_prefix_scan_skips() {
    // Keys key00000 .. key02999, imported in order into level-0 tables of
    // disjoint key ranges; a 6-byte prefix ("key001") holds 100 keys.
    let (_tmp, db) = many_db_with(&["--write-buffer-size", "64K", "--prefix-len", "6", "-q"]);
    let out = stdout(&ok(kvctl(&["explain", p(&db), "--prefix", "key001"])));
    assert!(
        out.starts_with("prefix scan of key001 at sequence 3,000\n"),
        "{out}"
    );
    assert!(
        out.contains("bloom prefix filter: maybe; 4 data blocks, 100 versions"),
        "{out}"
    );
    assert!(out.contains("skipped by key range"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&stdout(&ok(kvctl(&[
        "explain",
        p(&db),
        "--prefix",
        "key001",
        "--json",
    ]))))
    .unwrap();
    let entries: u64 = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["prefix_entries"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(entries, 100, "{v}");
    // A prefix inside a table's key range that no key has (only even
    // prefixes are written): its prefix filter leaves it out, nothing is
    // read.
    let input = _tmp.path().join("even.tsv");
    let text: String = (0..200)
        .step_by(2)
        .flat_map(|i| (0..5).map(move |j| format!("p{i:03}/{j}\tv\n")))
        .collect();
    std::fs::write(&input, text).unwrap();
    let even = _tmp.path().join("even");
    ok(kvctl(&[
        "import",
        p(&even),
        p(&input),
        "--prefix-len",
        "4",
        "-q",
    ]));
    ok(kvctl(&["compact", p(&even), "--prefix-len", "4", "-q"]));
    let v: serde_json::Value = serde_json::from_str(&stdout(&ok(kvctl(&[
        "explain",
        p(&even),
        "--prefix",
        "p101",
        "--json",
    ]))))
    .unwrap();
    assert_eq!(v["data_block_reads"], 0, "{v}");
    assert_eq!(v["prefix_negatives"], 1, "{v}");
    let out = stdout(&ok(kvctl(&["explain", p(&even), "--prefix", "p101"])));
    assert!(
        out.contains("skipped by bloom prefix filter (says absent)"),
        "{out}"
    );
    // Too short for the extractor: tables are read, and say why.
    let out = stdout(&ok(kvctl(&["explain", p(&db), "--prefix", "key"])));
    assert!(out.contains("the prefix is outside its domain"), "{out}");
    assert_eq!(code(&kvctl(&["explain", p(&db)])), 2);
}

/// Sixty single `put`s, each its own process and open, write no SSTable:
/// an open keeps a WAL whose writes fit in the memtable instead of
/// flushing it (they wrote 59 tables before, and `stats` reported a write
/// amplification of 37 for 690 bytes of data).
#[test]
fn a_put_loop_makes_no_sstable_and_stats_say_nothing_was_flushed() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    for i in 0..60 {
        ok(kvctl(&[
            "put",
            p(&db),
            &format!("key{i:02}"),
            &format!("v{i}"),
        ]));
    }
    let tables = files_with_ext(&db, "sst").len();
    assert_eq!(tables, 0);
    assert_eq!(stdout(&ok(kvctl(&["get", p(&db), "key37"]))), "v37\n");
    let out = stdout(&ok(kvctl(&["stats", p(&db)])));
    assert!(
        out.contains("write amplification none yet (nothing flushed since creation"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&ok(kvctl(&["info", p(&db), "--json"])))).unwrap();
    assert_eq!(v["wals"][0]["records"], 60, "{v}");
}

/// A read command warns about a torn WAL tail its open dropped (a damaged
/// last record loses an acknowledged write; only write commands said so),
/// unless a writer has the database open: its tail may be a record being
/// written, and is not worth a warning.
#[test]
fn a_read_command_warns_about_a_torn_tail_unless_a_writer_is_at_work() {
    let (_tmp, db, wal, bytes) = torn_tail_db();
    let o = ok(kvctl(&["get", p(&db), "a"]));
    assert_eq!(stdout(&o), "1\n");
    let err = stderr(&o);
    assert!(
        err.starts_with("kvctl: warning: ") && err.contains("torn record at offset 29"),
        "{err}"
    );
    assert_eq!(
        code(&kvctl(&["get", p(&db), "b"])),
        1,
        "the damaged record is dropped"
    );
    // Reading changed nothing: the tail is still there.
    assert_eq!(std::fs::read(&wal).unwrap(), bytes);

    // A writer holds the database (its open cut that tail); a record
    // written behind its back as a group being copied into its mapped WAL
    // looks (its length, not yet its length checksum: DESIGN.md 12.2)
    // reads as a write in progress.
    let writer = siftdb::Db::open(&db).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&wal).unwrap();
    let in_progress = [10, 0, 0, 0, 0, 0, 0, 0, 0x5a, 0x5a, 0x5a, 0x5a];
    std::os::unix::fs::FileExt::write_all_at(&f, &in_progress, 29).unwrap();
    drop(f);
    let o = ok(kvctl(&["get", p(&db), "a"]));
    assert_eq!((stdout(&o), stderr(&o)), ("1\n".into(), String::new()));
    drop(writer);
}

/// An export to a FIFO (or a device such as /dev/null) writes into it:
/// it used to write a temporary file beside it and rename that over it,
/// which, run as root on /dev/null, replaced the device with a regular
/// file (and later readers of /dev/null, cargo's own probes among them,
/// read back what others had thrown away).
#[cfg(unix)]
#[test]
fn export_into_a_fifo_writes_into_it_and_leaves_it_a_fifo() {
    use std::os::unix::fs::FileTypeExt;
    let (tmp, db) = small_db();
    let fifo = tmp.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // The reader waits at most 20 s: with the old rename the FIFO never
    // got a writer and the read blocked for ever.
    let (tx, rx) = std::sync::mpsc::channel();
    {
        let fifo = fifo.clone();
        std::thread::spawn(move || tx.send(std::fs::read_to_string(fifo).unwrap()));
    }
    let o = ok(kvctl(&["export", p(&db), p(&fifo), "-q"]));
    assert_eq!(stderr(&o), "");
    let text = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("nothing was written into the FIFO");
    assert_eq!(text.lines().count(), 7, "{text}");
    assert!(
        text.starts_with("#kvctl-export escaped v1\napple\tred\n"),
        "{text}"
    );
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(!tmp.path().join(".pipe.kvctl-partial").exists());

    // A directory is refused.
    let o = kvctl(&["export", p(&db), p(tmp.path())]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
}

/// Found by a new-user trial: a bad budget was refused only after the
/// tree was loaded, with exit 4 (the I/O code), and a sweep that could
/// not bracket the reference ran to the end first. Both are usage errors
/// found before anything is loaded.
#[test]
fn bench_monkey_refuses_a_bad_sweep_before_loading() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().to_str().unwrap();
    for (args, want) in [
        (
            vec!["--budgets", "0,10,12"],
            "budget 0: every budget must be above 0 and at most 40 bits per key",
        ),
        (
            vec!["--budgets", "4,10,50"],
            "budget 50: every budget must be above 0 and at most 40 bits per key",
        ),
        (
            vec!["--budgets", "10"],
            "the budgets need one below and one above the reference, 10",
        ),
        (
            vec!["--budgets", "4,8", "--reference", "6"],
            "the reference, 6, is not among the budgets",
        ),
        (
            vec!["--keys", "10"],
            "keys is 10; it must be at least 1,000",
        ),
    ] {
        let all = [
            &["bench", "monkey", "--quiet", "--work-dir", work],
            &args[..],
        ]
        .concat();
        let o = kvctl(&all);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{args:?}");
    }
    // Nothing was built.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn import_with_a_filter_budget_and_compact_filters_only() {
    let (_tmp, db) = many_db_with(&["--write-buffer-size", "16K", "--filter-budget", "12"]);
    let json = |args: &[&str]| -> serde_json::Value {
        serde_json::from_str(&stdout(&ok(kvctl(args)))).unwrap()
    };
    let m = json(&["filters", p(&db), "--json"])["memory"].clone();
    let bits = |m: &serde_json::Value| {
        8.0 * m["filter_bytes"].as_f64().unwrap() / m["keys"].as_f64().unwrap()
    };
    assert!((11.0..=12.0).contains(&bits(&m)), "{m:#}");
    // Half the budget, filters only: every table rewritten in place, the
    // same keys, half the memory.
    let rebuild = || {
        stdout(&ok(kvctl(&[
            "compact",
            p(&db),
            "--filters-only",
            "--filter-budget",
            "6",
            "-q",
        ])))
    };
    let out = rebuild();
    assert!(out.starts_with("rebuilt the filters of "), "{out}");
    let after = json(&["filters", p(&db), "--json"])["memory"].clone();
    assert_eq!(after["keys"], m["keys"]);
    assert!((5.5..=6.0).contains(&bits(&after)), "{after:#}");
    assert!(
        after["expected_false_positives"].as_f64() > m["expected_false_positives"].as_f64(),
        "{after:#}"
    );
    // Again: nothing differs any more.
    let out = rebuild();
    assert!(
        out.starts_with("rebuilt the filters of 0 SSTables"),
        "{out}"
    );
    let o = kvctl(&["get", p(&db), "key01234"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = kvctl(&["compact", p(&db), "--filter-budget", "0"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("filter_budget: bits per key must be above 0 and at most 40, not 0"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn distinct_estimates_tables_levels_and_overlaps_from_the_sketches() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    {
        // Two level-0 tables sharing keys 1,000..2,000, left uncompacted.
        let mut o = siftdb::Options::default();
        o.level0_compaction_trigger = 8;
        o.level0_slowdown_trigger = 8;
        o.level0_stop_trigger = 8;
        let d = siftdb::Db::open_with(&db, o).unwrap();
        for (lo, hi) in [(0u32, 2_000u32), (1_000, 3_000)] {
            for i in lo..hi {
                d.put(format!("key{i:05}"), "v").unwrap();
            }
            d.flush().unwrap();
        }
        d.close().unwrap();
    }
    let o = ok(kvctl(&["distinct", p(&db), "--json"]));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("valid JSON");
    let tables = v["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 2, "{v}");
    for t in tables {
        // 2,000 keys per table, dense at p = 12: within 3 standard errors.
        assert_eq!(t["distinct_keys"].as_u64(), Some(2_000), "{t}");
        let est = t["estimate"].as_f64().unwrap();
        assert!((est - 2_000.0).abs() <= 3.0 * 0.01625 * 2_000.0, "{t}");
        assert_eq!(t["precision"].as_u64(), Some(12));
        assert_eq!(t["level"].as_u64(), Some(0));
    }
    let levels = v["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 1, "{v}");
    assert_eq!(levels[0]["distinct_keys_summed"].as_u64(), Some(4_000));
    let total = &v["total"];
    let n = total["estimate"].as_f64().unwrap();
    assert!((n - 3_000.0).abs() <= 3.0 * 0.01625 * 3_000.0, "{v}");
    assert_eq!(total["relative_std_error"].as_f64(), Some(1.04 / 64.0));
    assert_eq!(total["unsketched_tables"].as_u64(), Some(0));
    let pairs = v["level0_overlaps"].as_array().unwrap();
    assert_eq!(pairs.len(), 1, "{v}");
    let shared = pairs[0]["estimate"].as_f64().unwrap();
    // |A| + |B| − |A ∪ B|: its error is that of the 3,000-key union.
    assert!((shared - 1_000.0).abs() <= 3.0 * 0.01625 * 3_000.0, "{v}");

    let text = stdout(&ok(kvctl(&["distinct", p(&db)])));
    assert!(text.contains("(L0) share about"), "{text}");
    assert!(text.contains("relative standard error 1.62%"), "{text}");
}

/// Found by a new-user trial: after `delete-range`, `distinct` went on
/// estimating the hidden keys without a word. It now says so, until a
/// compaction drops them.
#[test]
fn distinct_notes_range_deletions_that_hide_counted_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let input = many_tsv(tmp.path());
    let db = tmp.path().join("db");
    ok(kvctl(&["import", p(&db), p(&input)]));
    let note = "1 range deletion live: the estimates still count the keys they hide";
    let text = stdout(&ok(kvctl(&["distinct", p(&db)])));
    assert!(!text.contains("range deletion"), "{text}");
    ok(kvctl(&["delete-range", p(&db), "--all"]));
    let text = stdout(&ok(kvctl(&["distinct", p(&db)])));
    assert!(text.contains(note), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&ok(kvctl(&["distinct", p(&db), "--json"])))).unwrap();
    assert!(v["notes"][0].as_str().unwrap().starts_with(note), "{v}");
    ok(kvctl(&["compact", p(&db)]));
    let text = stdout(&ok(kvctl(&["distinct", p(&db)])));
    assert!(!text.contains("range deletion"), "{text}");
}

/// The compaction's prediction is in the manifest (tag 9), so a later
/// kvctl process shows it.
#[test]
fn distinct_lists_the_compactions_predictions_from_the_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    {
        let d = siftdb::Db::open(&db).unwrap();
        for (lo, hi) in [(0u32, 2_000u32), (1_000, 3_000)] {
            for i in lo..hi {
                d.put(format!("key{i:05}"), "v").unwrap();
            }
            d.flush().unwrap();
        }
        d.compact().unwrap();
        d.close().unwrap();
    }
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&ok(kvctl(&["distinct", p(&db), "--json"])))).unwrap();
    let c = v["compactions"].as_array().unwrap();
    assert_eq!(c.len(), 1, "{v}");
    let c = &c[0];
    assert_eq!(c["input_tables"].as_u64(), Some(2), "{c}");
    assert_eq!(c["input_entries"].as_u64(), Some(4_000), "{c}");
    assert_eq!(c["summed_distinct_keys"].as_u64(), Some(4_000), "{c}");
    assert_eq!(c["distinct_input_keys"].as_u64(), Some(3_000), "{c}");
    assert_eq!(c["distinct_output_keys"].as_u64(), Some(3_000), "{c}");
    let predicted = c["predicted_distinct_keys"].as_f64().unwrap();
    assert!(
        (predicted - 3_000.0).abs() <= 3.0 * 0.01625 * 3_000.0,
        "{c}"
    );
    let err = c["relative_error"].as_f64().unwrap();
    assert!((err - (predicted / 3_000.0 - 1.0)).abs() < 1e-12, "{c}");
    assert!(
        c["finished_at_unix_secs"].as_u64().unwrap() > 1_700_000_000,
        "{c}"
    );

    let text = stdout(&ok(kvctl(&["distinct", p(&db)])));
    assert!(
        text.contains("last 1 compaction, predicted distinct keys against found"),
        "{text}"
    );
    assert!(
        text.contains(" <- 2 tables  4,000 entries  predicted "),
        "{text}"
    );
    // Found by a new-user trial: the time was raw Unix seconds. It is UTC
    // ISO 8601 now, the same second the JSON gives.
    let secs = c["finished_at_unix_secs"].as_u64().unwrap();
    let line = text.lines().find(|l| l.contains(" <- 2 tables")).unwrap();
    let at = line.rsplit("  at ").next().unwrap();
    assert_eq!(at.len(), "2026-12-03T10:50:19Z".len(), "{line}");
    assert!(at.ends_with('Z') && at.as_bytes()[10] == b'T', "{line}");
    let (h, m, s) = (secs % 86_400 / 3600, secs % 3600 / 60, secs % 60);
    assert!(
        at.ends_with(&format!("T{h:02}:{m:02}:{s:02}Z")),
        "{line} {secs}"
    );
    assert!(at.starts_with("20"), "{line}");
    let dump = stdout(&ok(kvctl(&["manifest", "dump", p(&db), "--json"])));
    assert!(dump.contains("\"key_prediction\""), "{dump}");
}

/// Found by a new-user trial: two lines with one key said "imported 2
/// keys", and the time left out the final flush. The summary now counts
/// pairs (and says the flush is in its time); `scan --count` counts keys.
#[test]
fn import_counts_pairs_not_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("twice.tsv");
    std::fs::write(&input, "k\t1\nk\t2\n").unwrap();
    let db = tmp.path().join("db");
    let out = stdout(&ok(kvctl(&["import", p(&db), p(&input)])));
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with(&format!(
            "imported 2 pairs (4 B of keys and values) from {} in ",
            input.display()
        )) && first.ends_with(" s, the final flush included"),
        "{out}"
    );
    assert_eq!(stdout(&ok(kvctl(&["scan", p(&db), "--count"]))), "1\n");
    assert_eq!(stdout(&ok(kvctl(&["get", p(&db), "k"]))), "2\n");
}

/// Found by a new-user trial: `bench readamp --keys 0` warned about too
/// few keys, then failed with "1 files need at least 1 keys".
#[test]
fn bench_readamp_refuses_bad_parameters_before_any_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let out = p(&tmp.path().join("readamp")).to_string();
    let o = kvctl(&["bench", "readamp", "--keys", "0", "--out", &out]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "kvctl: --keys 0: the benchmark needs at least one key per file\n"
    );
    let o = kvctl(&[
        "bench", "readamp", "--keys", "3", "--files", "4", "--out", &out,
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("4 files need at least 4 keys"),
        "{}",
        stderr(&o)
    );
}

/// `--target-file-size` splits compaction output: the Debian data in
/// files of at most about 1 MiB in level 1 (the README's `explain`
/// example needs it to be reproducible).
#[test]
fn import_target_file_size_splits_level_1() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let debian = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/debian-packages.tsv.gz"
    );
    let args = [
        "import",
        p(&db),
        debian,
        "--write-buffer-size",
        "512K",
        "--target-file-size",
        "1M",
        "-q",
    ];
    ok(kvctl(&args));
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&ok(kvctl(&["sst", "list", p(&db), "--json"])))).unwrap();
    let l1: Vec<u64> = v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["level"] == 1)
        .map(|t| t["size"].as_u64().unwrap())
        .collect();
    assert!(l1.len() >= 5, "{l1:?}");
    // A file ends once it passes the target, by at most one block.
    assert!(l1.iter().all(|&s| s < (1 << 20) + (64 << 10)), "{l1:?}");
    assert_eq!(
        code(&kvctl(&[
            "import",
            p(&db),
            debian,
            "--target-file-size",
            "1.5M"
        ])),
        2
    );
}

/// Found by a new-user trial: `compact` silently re-laid out a database
/// built with other filter settings. The settings are stored now, so it
/// keeps them; for a database from before (no `OPTIONS` file) it says,
/// before it compacts, what it would change, and is quiet when given them.
#[test]
fn compact_keeps_stored_filters_and_warns_without_them() {
    let (_tmp, db) = many_db_with(&[
        "--write-buffer-size",
        "64K",
        "--bits-per-key",
        "6",
        "--prefix-len",
        "3",
    ]);
    let o = ok(kvctl(&["compact", p(&db)]));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    assert_eq!(filter_bits_per_key(&db), 6.0);
    // As a database from before the OPTIONS file.
    std::fs::remove_file(db.join("OPTIONS")).unwrap();
    let o = ok(kvctl(&[
        "compact",
        p(&db),
        "--bits-per-key",
        "6",
        "--prefix-len",
        "3",
    ]));
    assert!(!stderr(&o).contains("will be rewritten"), "{}", stderr(&o));
    std::fs::remove_file(db.join("OPTIONS")).unwrap();
    let o = ok(kvctl(&["compact", p(&db)]));
    let e = stderr(&o);
    assert!(
        e.contains("with siftdb.bloom.xxh3.v1 (6 bits/key) will be rewritten with siftdb.bloom.xxh3.v1 (10 bits/key)"),
        "{e}"
    );
    assert!(
        e.contains("with prefix filters will be rewritten without them"),
        "{e}"
    );
}

/// Found by a new-user trial: `rm DB/OPTIONS; kvctl put DB k v` exited 0
/// without a word, and the database's compression and filter settings
/// were the defaults from then on. A writing command now says so.
#[test]
fn a_missing_options_file_is_warned_about() {
    let (_tmp, db) = many_db_with(&["--bits-per-key", "6"]);
    let o = ok(kvctl(&["put", p(&db), "k", "v"]));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    std::fs::remove_file(db.join("OPTIONS")).unwrap();
    let o = ok(kvctl(&["put", p(&db), "k2", "v"]));
    let e = stderr(&o);
    assert!(
        e.starts_with("kvctl: warning: ") && e.contains("had no OPTIONS file (deleted?)"),
        "{e}"
    );
    // Stored again: the next command is quiet.
    let o = ok(kvctl(&["put", p(&db), "k3", "v"]));
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

/// A damaged OPTIONS file made every writing command fail with the hint
/// for damaged data, and nothing in kvctl could replace it. It holds
/// settings only: the hint now says so, and `options --reset` replaces it.
#[test]
fn a_damaged_options_file_is_reset_without_losing_data() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    ok(kvctl(&["put", p(&db), "a", "1"]));
    ok(kvctl(&["compact", p(&db), "--bits-per-key", "12"]));
    let listed = stdout(&ok(kvctl(&["options", p(&db)])));
    assert!(listed.contains("\n  bits_per_key 12\n"), "{listed}");

    let path = db.join("OPTIONS");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("bits_per_key 12", "bits_per_key 13")).unwrap();
    let o = kvctl(&["put", p(&db), "b", "2"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("hint: the OPTIONS file holds settings only, no keys or values"),
        "{}",
        stderr(&o)
    );

    let reset = stdout(&ok(kvctl(&["options", p(&db), "--reset", "--json"])));
    let v: serde_json::Value = serde_json::from_str(&reset).unwrap();
    let changes = v["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{v}");
    assert!(
        changes[0]
            .as_str()
            .unwrap()
            .starts_with("the OPTIONS file was unreadable"),
        "{v}"
    );
    let stored = v["stored"].as_array().unwrap();
    assert!(
        stored.contains(&serde_json::json!(["bits_per_key", "10"])),
        "{v}"
    );

    ok(kvctl(&["put", p(&db), "b", "2"]));
    assert_eq!(stdout(&ok(kvctl(&["get", p(&db), "a"]))), "1\n");
    assert_eq!(stdout(&ok(kvctl(&["get", p(&db), "b"]))), "2\n");
    // A second reset finds the defaults already.
    let again = stdout(&ok(kvctl(&["options", p(&db), "--reset"])));
    assert!(
        again.starts_with("reset: the stored settings were the defaults already\n"),
        "{again}"
    );
    // A missing database is bad input, and none is created.
    let missing = tmp.path().join("missing");
    for args in [
        &["options", p(&missing)][..],
        &["options", p(&missing), "--reset"],
    ] {
        let o = kvctl(args);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(stderr(&o).contains("holds no database"), "{}", stderr(&o));
    }
    assert!(!missing.exists());
}

/// Found by a new-user trial: `compact --bits-per-key N` on a database
/// imported with `--filters` changed no filter (the stored spec takes
/// precedence) yet stored N. It is now refused before the open, with the
/// flag that does change the filters; so is `import --bits-per-key`, and
/// both under a stored filter budget.
#[test]
fn bits_per_key_is_refused_where_a_stored_filter_spec_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in.tsv");
    let lines: String = (0..200).map(|i| format!("k{i:04}\tv\n")).collect();
    std::fs::write(&input, lines).unwrap();
    let db = tmp.path().join("db");
    ok(kvctl(&[
        "import",
        p(&db),
        p(&input),
        "-q",
        "--filters",
        "blocked-bloom:10,ribbon:1%",
    ]));
    let options_before = std::fs::read(db.join("OPTIONS")).unwrap();
    for cmd in [
        &["compact", p(&db), "--bits-per-key", "6"][..],
        &["import", p(&db), p(&input), "--bits-per-key", "6"],
    ] {
        let o = kvctl(cmd);
        assert_eq!(code(&o), 2, "{cmd:?}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            "kvctl: --bits-per-key 6 would change no filter: the database stores the per-level \
             filter spec `blocked-bloom:10,ribbon:1%` (set by --filters), which takes \
             precedence\n\
             hint: give --filters instead, e.g. --filters bloom:6 for a classic Bloom filter at \
             6 bits per key on every level (`kvctl options DB` shows the stored settings)\n"
        );
        // Nothing stored, nothing changed.
        assert_eq!(std::fs::read(db.join("OPTIONS")).unwrap(), options_before);
    }
    let listed = stdout(&ok(kvctl(&["options", p(&db)])));
    assert!(listed.contains("\n  bits_per_key 10\n"), "{listed}");
    // `--bits-per-key 0` (no filter) is refused likewise, and its hint
    // names the spec for no filter, which the parser takes.
    let o = kvctl(&["compact", p(&db), "--bits-per-key", "0"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).ends_with(
            "hint: give --filters instead, e.g. --filters none for no filter on any level \
             (`kvctl options DB` shows the stored settings)\n"
        ),
        "{}",
        stderr(&o)
    );
    let copy = tmp.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for e in std::fs::read_dir(&db).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
    }
    ok(kvctl(&["compact", p(&copy), "--filters", "none", "-q"]));
    let listed = stdout(&ok(kvctl(&["options", p(&copy)])));
    assert!(listed.contains("\n  filters none\n"), "{listed}");
    // The flag the hint names works.
    ok(kvctl(&["compact", p(&db), "--filters", "bloom:6", "-q"]));
    let listed = stdout(&ok(kvctl(&["options", p(&db)])));
    assert!(listed.contains("\n  filters bloom:6\n"), "{listed}");
    let f = stdout(&ok(kvctl(&["filters", p(&db)])));
    assert!(f.contains(" bloom ") && !f.contains("ribbon"), "{f}");

    // Under a stored budget, likewise.
    let budget = tmp.path().join("budget");
    ok(kvctl(&[
        "import",
        p(&budget),
        p(&input),
        "-q",
        "--filter-budget",
        "8",
    ]));
    let o = kvctl(&["compact", p(&budget), "--bits-per-key", "0"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with(
            "kvctl: --bits-per-key 0 would change no filter: the database stores the filter \
             budget `8` (set by --filter-budget)"
        ),
        "{}",
        stderr(&o)
    );
    // Without a stored spec the flag applies, as before.
    let plain = tmp.path().join("plain");
    ok(kvctl(&["import", p(&plain), p(&input), "-q"]));
    ok(kvctl(&["compact", p(&plain), "--bits-per-key", "6", "-q"]));
    let listed = stdout(&ok(kvctl(&["options", p(&plain)])));
    assert!(listed.contains("\n  bits_per_key 6\n"), "{listed}");
}

/// Found by a new-user trial: `compact --to` included its end key while
/// `scan --to` and `export --to` exclude it. All three exclude it now: a
/// level-0 table starting at exactly --to is left alone, the one before
/// it is compacted.
#[test]
fn compact_to_excludes_its_end_key_as_scan_and_export_do() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    {
        let mut o = siftdb::Options::default();
        o.level0_compaction_trigger = 8;
        o.level0_slowdown_trigger = 8;
        o.level0_stop_trigger = 8;
        let d = siftdb::Db::open_with(&db, o).unwrap();
        for keys in [["a", "b", "m"], ["n", "p", "z"]] {
            for k in keys {
                d.put(k, "v").unwrap();
            }
            d.flush().unwrap();
        }
        d.close().unwrap();
    }
    let tables = |db: &std::path::Path| -> Vec<(usize, String)> {
        let d = siftdb::Db::open_read_only(db, siftdb::Options::default()).unwrap();
        let mut v: Vec<(usize, String)> = d
            .live_files()
            .iter()
            .map(|f| {
                (
                    f.level,
                    String::from_utf8(f.properties.smallest_user_key.clone()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(tables(&db), [(0, "a".into()), (0, "n".into())]);
    // scan and export stop before "n".
    assert_eq!(
        stdout(&ok(kvctl(&[
            "scan",
            p(&db),
            "--from",
            "a",
            "--to",
            "n",
            "--keys-only"
        ]))),
        "a\nb\nm\n"
    );
    ok(kvctl(&[
        "compact",
        p(&db),
        "--from",
        "a",
        "--to",
        "n",
        "-q",
    ]));
    // Only the table of a..m went down; the one starting at "n" stays.
    assert_eq!(tables(&db), [(0, "n".into()), (1, "a".into())]);
    // An empty range is a usage error.
    let o = kvctl(&["compact", p(&db), "--from", "n", "--to", "n"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("compact: the range holds no key (--from equals --to"),
        "{}",
        stderr(&o)
    );
    // Including "n" takes the next key after it.
    ok(kvctl(&[
        "compact",
        p(&db),
        "--from",
        "a",
        "--to",
        "n\\x00",
        "-q",
    ]));
    assert_eq!(tables(&db), [(1, "a".into()), (1, "n".into())]);
    assert_eq!(stdout(&ok(kvctl(&["scan", p(&db), "--count"]))), "6\n");
}

/// `--compression zstd` needs kvctl's `zstd` feature: without it a usage
/// error naming the rebuild (exit 2, nothing created); with it the tables
/// are zstd-compressed and read back.
#[test]
fn compression_zstd_needs_the_feature() {
    let tmp = tempfile::tempdir().unwrap();
    let input = many_tsv(tmp.path());
    let db = tmp.path().join("db");
    let o = kvctl(&["import", p(&db), p(&input), "--compression", "none,zstd"]);
    if !cfg!(feature = "zstd") {
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert!(
            stderr(&o).contains("this build has no zstd support; rebuild with --features zstd"),
            "{}",
            stderr(&o)
        );
        assert!(!db.exists());
        return;
    }
    ok(o);
    ok(kvctl(&["compact", p(&db), "-q"]));
    let dumps: String = files_with_ext(&db, "sst")
        .iter()
        .map(|sst| stdout(&ok(kvctl(&["sst", "dump", p(sst)]))))
        .collect();
    assert!(dumps.contains("compression: zstd, "), "{dumps}");
    let got = stdout(&ok(kvctl(&["get", p(&db), "key02999"])));
    assert_eq!(got.trim_end(), "v".repeat(100));
}

/// The first data block of `sst` as `(offset, size)`, from `sst dump
/// --index --json`.
#[cfg(not(feature = "zstd"))]
fn first_data_block(sst: &std::path::Path) -> (usize, usize) {
    let o = ok(kvctl(&["sst", "dump", p(sst), "--index", "--json"]));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let b = &j["index"][0];
    (
        b["offset"].as_u64().unwrap() as usize,
        b["size"].as_u64().unwrap() as usize,
    )
}

/// Sets the codec byte of `sst`'s first data block (format 2: its last
/// byte) to `codec` and rewrites the block's CRC, as a build writing that
/// codec would have stored it. Returns the codec byte it replaced.
#[cfg(not(feature = "zstd"))]
fn set_first_block_codec(sst: &std::path::Path, codec: u8) -> u8 {
    let (offset, size) = first_data_block(sst);
    let mut b = std::fs::read(sst).unwrap();
    let old = std::mem::replace(&mut b[offset + size - 1], codec);
    let crc = siftdb::inspect::util::crc::crc32(&b[offset..offset + size]);
    b[offset + size..offset + size + 4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(sst, b).unwrap();
    old
}

/// Found by a new-user trial: a kvctl built without the `zstd` feature
/// called a database with zstd blocks damaged (exit 3, with the salvage
/// hint). The data is fine; the build lacks the codec: exit 2, naming the
/// cause and the rebuild. A codec byte no codec has is still damage.
#[cfg(not(feature = "zstd"))]
#[test]
fn a_zstd_block_in_a_build_without_zstd_is_not_damage() {
    let (_tmp, db) = many_db_with(&["--write-buffer-size", "64K", "--compression", "lz4"]);
    let sst = files_with_ext(&db, "sst").remove(0);
    let first_key = {
        let o = ok(kvctl(&[
            "sst",
            "dump",
            p(&sst),
            "--entries",
            "--limit",
            "1",
            "--json",
        ]));
        let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        j["entries"][0]["key"].as_str().unwrap().to_string()
    };
    // An LZ4 block relabelled zstd: this build never reads its payload.
    assert_eq!(set_first_block_codec(&sst, 2), 1);
    for args in [
        vec!["get", p(&db), &first_key],
        vec!["scan", p(&db), "--count"],
        vec!["verify", p(&db)],
    ] {
        let o = kvctl(&args);
        let err = stderr(&o);
        assert_eq!(code(&o), 2, "{args:?}: {err}");
        assert!(
            err.contains("zstd data block {offset 0, size ")
                && err.contains(
                    "(codec byte 2): this build has no zstd support; rebuild with --features zstd"
                ),
            "{args:?}: {err}"
        );
        assert!(
            err.contains(
                "hint: this kvctl was built without the zstd feature, which this database \
                 uses; the data is not damaged: rebuild kvctl with `--features zstd` (cargo \
                 install --path tools/kvctl --features zstd)"
            ),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains("damaged;") && !err.contains("corruption"),
            "{args:?}: {err}"
        );
    }
    // A codec byte no codec has is damage.
    set_first_block_codec(&sst, 3);
    let o = kvctl(&["get", p(&db), &first_key]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("has codec byte 3, which no codec has"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains(CORRUPTION_HINT), "{}", stderr(&o));
}

/// Rewrites `db`'s OPTIONS file with `compression` set to `spec` (and a
/// correct checksum), as a build with the `zstd` feature stores it.
fn store_compression(db: &std::path::Path, spec: &str) {
    let path = db.join("OPTIONS");
    let text = std::fs::read_to_string(&path).unwrap();
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with("crc32 "))
        .map(|l| match l.strip_prefix("compression ") {
            Some(_) => format!("compression {spec}\n"),
            None => format!("{l}\n"),
        })
        .collect();
    let crc = siftdb::inspect::util::crc::crc32(body.as_bytes());
    std::fs::write(&path, format!("{body}crc32 {crc:08x}\n")).unwrap();
}

/// `options --reset` in a build without zstd used to store compression
/// `none` over a database whose options (and tables) use zstd, losing the
/// setting without making the tables readable: it is refused, naming the
/// rebuild, and changes nothing.
#[cfg(not(feature = "zstd"))]
#[test]
fn options_reset_over_zstd_is_refused_in_a_build_without_zstd() {
    let (_tmp, db) = small_db();
    store_compression(&db, "none,zstd");
    let before = std::fs::read(db.join("OPTIONS")).unwrap();
    // Opening for writing is refused as before, with the hint.
    let o = kvctl(&["put", p(&db), "k", "v"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("hint: this kvctl was built without the zstd feature"),
        "{}",
        stderr(&o)
    );
    let o = kvctl(&["options", p(&db), "--reset"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "kvctl: options --reset: the stored options use zstd (compression none,zstd), and this \
         build has no zstd support; rebuild with --features zstd (a reset would store compression \
         none without making zstd tables readable)\n\
         hint: this kvctl was built without the zstd feature, which this database uses; the \
         data is not damaged: rebuild kvctl with `--features zstd` (cargo install --path \
         tools/kvctl --features zstd)\n"
    );
    assert_eq!(std::fs::read(db.join("OPTIONS")).unwrap(), before);
    // Without zstd in the stored options (and no zstd table), a reset runs.
    store_compression(&db, "lz4");
    ok(kvctl(&["options", p(&db), "--reset"]));
    let o = ok(kvctl(&["options", p(&db)]));
    assert!(
        stdout(&o).contains("  compression none\n"),
        "{}",
        stdout(&o)
    );
}

/// A copy of `tests/fixtures/zstd-db` (see its README) in a fresh temp
/// dir.
fn zstd_fixture() -> (tempfile::TempDir, PathBuf) {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/zstd-db");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    std::fs::create_dir(&db).unwrap();
    for f in std::fs::read_dir(&src).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), db.join(f.file_name())).unwrap();
    }
    (tmp, db)
}

/// A database written with zstd: a build with the feature reads it; one
/// without says this build cannot read it (exit 2, the rebuild in the
/// hint) from every command, never that it is damaged, and refuses to
/// reset its options or to salvage it.
#[test]
fn a_zstd_database_reads_or_names_the_missing_feature() {
    let (tmp, db) = zstd_fixture();
    let value = "zstd value 7 ".repeat(8);
    if cfg!(feature = "zstd") {
        assert_eq!(
            stdout(&ok(kvctl(&["get", p(&db), "key07"]))),
            format!("{value}\n")
        );
        ok(kvctl(&["verify", p(&db)]));
        return;
    }
    let no_zstd = "this build has no zstd support; rebuild with --features zstd";
    let out = tmp.path().join("out.tsv");
    for (args, says) in [
        (
            vec!["get", p(&db), "key07"],
            "000004.sst: zstd data block {offset 0, size ",
        ),
        (
            vec!["scan", p(&db), "--count"],
            "000004.sst: zstd data block {offset 0, size ",
        ),
        (
            vec!["verify", p(&db)],
            "000004.sst: zstd data block {offset 0, size ",
        ),
        (
            vec!["export", p(&db)],
            "000004.sst: zstd data block {offset 0, size ",
        ),
        (
            vec!["export", "--salvage", p(&db), p(&out)],
            "000004.sst: 2 data blocks stored with zstd",
        ),
        (
            vec!["options", p(&db), "--reset"],
            "options --reset: the stored options use zstd (compression zstd)",
        ),
        (vec!["put", p(&db), "k", "v"], "compression zstd"),
    ] {
        let o = kvctl(&args);
        let err = stderr(&o);
        assert_eq!(code(&o), 2, "{args:?}: {err}");
        assert!(
            err.contains(says) && err.contains(no_zstd),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("hint: this kvctl was built without the zstd feature"),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains("damaged;") && !err.contains("LOST"),
            "{args:?}: {err}"
        );
    }
    assert!(!out.exists());
    // With the stored setting gone (a hand edit, an older reset), the
    // tables still refuse the reset.
    store_compression(&db, "none");
    let o = kvctl(&["options", p(&db), "--reset"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with(&format!(
            "kvctl: options --reset: 1 table holds zstd-compressed blocks, and {no_zstd}"
        )),
        "{}",
        stderr(&o)
    );
}

/// `put` without a value named only `<VALUE>` in its usage line, not the
/// `--value-file` that also satisfies it.
#[test]
fn put_without_a_value_names_both_ways_to_give_one() {
    let tmp = tempfile::tempdir().unwrap();
    let o = kvctl(&["put", p(&tmp.path().join("db")), "k"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("Usage: kvctl put [OPTIONS] <DB> <KEY> <VALUE | --value-file F>"),
        "{}",
        stderr(&o)
    );
    assert!(!tmp.path().join("db").exists(), "nothing created");
}
