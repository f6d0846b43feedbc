//! The files a user names on kvctl's command line: a file of the wrong
//! kind, a missing file, a directory, no permission, a symbolic link.

use std::path::{Path, PathBuf};

mod common;

use common::{code, files_with_ext, kvctl, ok, p, stderr, stdout};

/// A database with one flushed SSTable and a live WAL holding one more
/// put, in a fresh temp dir.
fn db_with_files() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in.tsv");
    std::fs::write(&input, "a\t1\nb\t2\n").unwrap();
    let db = tmp.path().join("db");
    ok(kvctl(&["import", p(&db), p(&input), "-q"]));
    ok(kvctl(&["put", p(&db), "c", "3"]));
    (tmp, db)
}

fn manifest_of(db: &Path) -> PathBuf {
    common::files_where(db, |n| n.starts_with("MANIFEST-"))
        .pop()
        .unwrap()
}

/// Runs `args`, asserts exit 2 and that stderr contains each of `says`.
fn usage_error(args: &[&str], says: &[&str]) {
    let o = kvctl(args);
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "{args:?}: {err}");
    for s in says {
        assert!(err.contains(s), "{args:?}: expected {s:?} in {err}");
    }
    assert!(!err.contains("damaged"), "{args:?}: {err}");
}

/// Found by a new-user trial: each of these said "your database is
/// damaged" (exit 3).
#[test]
fn a_file_of_the_wrong_kind_is_a_usage_error_naming_the_right_command() {
    let (_tmp, db) = db_with_files();
    let sst = files_with_ext(&db, "sst").pop().unwrap();
    let log = files_with_ext(&db, "log").pop().unwrap();
    let manifest = manifest_of(&db);
    let current = db.join("CURRENT");

    usage_error(
        &["sst", "dump", p(&current)],
        &[
            "is the CURRENT file",
            "not what `kvctl sst dump` reads",
            &format!("`kvctl manifest dump {}` reads it", db.display()),
        ],
    );
    usage_error(
        &["sst", "dump", p(&log)],
        &[
            "is a write-ahead log (WAL)",
            &format!("`kvctl wal dump {}` reads it", log.display()),
        ],
    );
    usage_error(
        &["wal", "dump", p(&sst)],
        &[
            "is an SSTable, not what `kvctl wal dump` reads",
            &format!("`kvctl sst dump {}` reads it", sst.display()),
        ],
    );
    usage_error(
        &["manifest", "dump", p(&sst)],
        &["is an SSTable, not what `kvctl manifest dump` reads"],
    );
    usage_error(
        &["manifest", "dump", p(&log)],
        &["is a write-ahead log (WAL)"],
    );
    usage_error(
        &["wal", "dump", p(&manifest)],
        &["is a manifest", "`kvctl manifest dump"],
    );
    usage_error(
        &["verify", p(&current)],
        &[&format!(
            "`kvctl verify {}` checks the whole database",
            db.display()
        )],
    );
    // A stray file outside any database: no directory to suggest (a
    // new-user trial's `verify /etc/passwd` was pointed at /etc).
    let stray = db.parent().unwrap().join("notes.txt");
    std::fs::write(&stray, "not a database file").unwrap();
    let o = kvctl(&["verify", p(&stray)]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("`kvctl verify` takes a database directory"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("checks the whole database"));

    // A renamed copy of a table is still known by its magic number; a
    // file that is neither is refused by `sst dump`.
    let copy = db.parent().unwrap().join("copy.bin");
    std::fs::copy(&sst, &copy).unwrap();
    let o = ok(kvctl(&["sst", "dump", p(&copy), "--json"]));
    assert!(
        stdout(&o).contains("\"siftdb.num_entries\": 2"),
        "{}",
        stdout(&o)
    );
    let text = db.parent().unwrap().join("notes.txt");
    std::fs::write(&text, "hello\n").unwrap();
    usage_error(&["sst", "dump", p(&text)], &["is not a siftdb file"]);

    // The right kinds still work.
    ok(kvctl(&["sst", "dump", p(&sst)]));
    let o = ok(kvctl(&["wal", "dump", p(&log)]));
    assert!(stdout(&o).contains("put"), "{}", stdout(&o));
    ok(kvctl(&["manifest", "dump", p(&manifest)]));
}

/// Found by a new-user trial: a missing input file exited 2, a directory
/// and a file without permission 4.
#[test]
fn a_missing_file_or_a_directory_as_input_is_exit_2() {
    let (tmp, db) = db_with_files();
    let missing = tmp.path().join("missing.tsv");
    usage_error(
        &["import", p(&db), p(&missing)],
        &[&format!(
            "open {}: No such file or directory",
            missing.display()
        )],
    );
    let dir = tmp.path().join("a-directory");
    std::fs::create_dir(&dir).unwrap();
    usage_error(
        &["import", p(&db), p(&dir)],
        &[&format!("{}: is a directory, not a file", dir.display())],
    );
    usage_error(&["sst", "dump", p(&dir)], &["not a file"]);
    usage_error(&["export", p(&db), p(&dir)], &["is a directory"]);
    // Nothing was imported by the failed imports.
    assert_eq!(stdout(&ok(kvctl(&["scan", p(&db)]))), "a\t1\nb\t2\nc\t3\n");
}

/// Permission denied on an input file is bad input (2). Root reads any
/// file whatever its mode, so the check runs only for another user (the
/// mapping itself is unit-tested in src/error.rs).
#[test]
fn an_unreadable_input_file_is_exit_2_unless_root() {
    let (tmp, db) = db_with_files();
    let locked = tmp.path().join("locked.tsv");
    std::fs::write(&locked, "k\tv\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(&locked).is_ok() {
        eprintln!("running as root: permissions are not enforced, skipped");
        return;
    }
    usage_error(&["import", p(&db), p(&locked)], &["Permission denied"]);
}

/// Found by a new-user trial: a failed export named the hidden partial
/// file (`.x.tsv.kvctl-partial`) instead of the output asked for.
#[test]
fn an_export_error_names_the_users_path_not_the_partial_file() {
    let (tmp, db) = db_with_files();
    let out = tmp.path().join("no-such-dir").join("x.tsv");
    let o = kvctl(&["export", p(&db), p(&out)]);
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "{err}");
    assert_eq!(
        err,
        format!(
            "kvctl: create {}: No such file or directory (os error 2)\n",
            out.display()
        )
    );
}

/// Found by a new-user trial: export onto a symbolic link replaced the
/// link with a regular file, and the target kept its old content. (An
/// existing target also needs --force now.)
#[test]
fn export_onto_a_symlink_writes_through_it_and_keeps_the_link() {
    let (tmp, db) = db_with_files();
    let real_dir = tmp.path().join("real");
    std::fs::create_dir(&real_dir).unwrap();
    let target = real_dir.join("data.tsv");
    std::fs::write(&target, "old content\n").unwrap();
    // A relative link, resolved against the link's own directory.
    let link = tmp.path().join("link.tsv");
    std::os::unix::fs::symlink("real/data.tsv", &link).unwrap();
    // A link to the link.
    let link2 = tmp.path().join("link2.tsv");
    std::os::unix::fs::symlink(&link, &link2).unwrap();

    // The target exists: refused without --force, whose link it names.
    usage_error(
        &["export", p(&db), p(&link2)],
        &[&format!(
            "{} exists; pass --force to replace it",
            link2.display()
        )],
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "old content\n");
    ok(kvctl(&["export", p(&db), p(&link2), "-q", "--force"]));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::symlink_metadata(&link2)
        .unwrap()
        .file_type()
        .is_symlink());
    let exported = std::fs::read_to_string(&target).unwrap();
    assert!(exported.ends_with("a\t1\nb\t2\nc\t3\n"), "{exported}");
    // No partial file is left beside the link or the target.
    for d in [tmp.path(), real_dir.as_path()] {
        let partial: Vec<_> = common::files_where(d, |n| n.ends_with(".kvctl-partial"));
        assert!(partial.is_empty(), "{partial:?}");
    }

    // A dangling link: the file it names is created.
    let dangling = tmp.path().join("dangling.tsv");
    std::os::unix::fs::symlink("real/new.tsv", &dangling).unwrap();
    ok(kvctl(&["export", p(&db), p(&dangling), "-q"]));
    assert!(std::fs::symlink_metadata(&dangling)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read_to_string(real_dir.join("new.tsv")).unwrap(),
        exported
    );

    // A loop is a usage error.
    let a = tmp.path().join("loop-a");
    let b = tmp.path().join("loop-b");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    usage_error(
        &["export", p(&db), p(&a)],
        &["too many levels of symbolic links"],
    );
}

/// Found by a new-user trial: `export DB users.tsv` silently overwrote
/// the file the database was imported from. An existing file now needs
/// --force; a device is still written without it.
#[test]
fn export_refuses_to_overwrite_a_file_without_force() {
    let (tmp, db) = db_with_files();
    let input = tmp.path().join("in.tsv");
    usage_error(
        &["export", p(&db), p(&input)],
        &[&format!(
            "{} exists; pass --force to replace it",
            input.display()
        )],
    );
    assert_eq!(std::fs::read_to_string(&input).unwrap(), "a\t1\nb\t2\n");
    let out = tmp.path().join("rescued.tsv");
    std::fs::write(&out, "keep me\n").unwrap();
    usage_error(
        &["export", "--salvage", p(&db), p(&out)],
        &["exists; pass --force"],
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep me\n");
    ok(kvctl(&[
        "export",
        "--salvage",
        p(&db),
        p(&out),
        "--force",
        "-q",
    ]));
    ok(kvctl(&["export", p(&db), p(&input), "-f", "-q"]));
    assert_eq!(
        std::fs::read_to_string(&input).unwrap(),
        "#kvctl-export escaped v1\na\t1\nb\t2\nc\t3\n"
    );
    ok(kvctl(&["export", p(&db), "/dev/null"]));
}

/// A salvage never writes inside the database directory, not even
/// through a symbolic link that points there.
#[test]
fn salvage_refuses_a_link_into_the_database_directory() {
    let (tmp, db) = db_with_files();
    let link = tmp.path().join("out.tsv");
    std::os::unix::fs::symlink(db.join("rescued.tsv"), &link).unwrap();
    usage_error(
        &["export", "--salvage", p(&db), p(&link)],
        &["inside the database directory"],
    );
    assert!(!db.join("rescued.tsv").exists());
}
