//! The `OPTIONS` file: a reopen keeps the options a database was built
//! with unless the caller sets others (found by new users: a database
//! built at 12 bits per key and 2 MiB files came back, after `kvctl
//! compact`, at 10 and 64 MiB).

use std::sync::Arc;

use siftdb::filter::FixedPrefix;
use siftdb::{Db, Error, Options};

#[test]
fn a_reopen_keeps_the_stored_options_and_only_set_ones_change_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::builder(dir.path())
        .bits_per_key(12)
        .target_file_size(2 << 20)
        .prefix_extractor(Arc::new(FixedPrefix::new(4)))
        .open()
        .unwrap();
    assert!(db.recovery().options_changes.is_empty());
    db.close().unwrap();
    assert!(dir.path().join("OPTIONS").is_file());

    let db = Db::open(dir.path()).unwrap();
    let o = db.options();
    assert_eq!((o.bits_per_key, o.target_file_size), (12, 2 << 20));
    assert_eq!(
        o.prefix_extractor
            .as_ref()
            .map(|e| e.name().to_string())
            .as_deref(),
        Some("siftdb.fixed_prefix.4")
    );
    assert!(db.recovery().options_changes.is_empty());
    db.close().unwrap();

    // Setting one changes that one and says so.
    let db = Db::builder(dir.path()).bits_per_key(8).open().unwrap();
    assert_eq!(db.options().bits_per_key, 8);
    assert_eq!(db.options().target_file_size, 2 << 20);
    assert_eq!(
        db.recovery().options_changes,
        ["bits_per_key: 12 stored, 8 used"]
    );
    db.close().unwrap();
    assert_eq!(Db::open(dir.path()).unwrap().options().bits_per_key, 8);

    // Options given in full are used in full, and stored.
    let db = Db::open_with(dir.path(), Options::default()).unwrap();
    let changes = &db.recovery().options_changes;
    assert!(
        changes.contains(&"target_file_size: 2097152 stored, 67108864 used".to_string()),
        "{changes:?}"
    );
    assert_eq!(db.options().target_file_size, 64 << 20);
    db.close().unwrap();
    assert_eq!(
        Db::open(dir.path()).unwrap().options().target_file_size,
        64 << 20
    );
}

#[test]
fn a_damaged_options_file_is_corruption_until_options_are_given_in_full() {
    let dir = tempfile::tempdir().unwrap();
    Db::builder(dir.path())
        .bits_per_key(12)
        .open()
        .unwrap()
        .close()
        .unwrap();
    let path = dir.path().join("OPTIONS");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[20] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let err = Db::open(dir.path()).unwrap_err();
    assert!(
        matches!(&err, Error::Corruption { file, .. } if file == &path),
        "{err:?}"
    );
    // Read-only tools open it too, from the builder.
    assert!(Db::builder(dir.path()).open_read_only().is_err());
    let db = Db::open_with(dir.path(), Options::default()).unwrap();
    assert!(
        db.recovery().options_changes[0].contains("unreadable"),
        "{:?}",
        db.recovery()
    );
    db.close().unwrap();
    assert_eq!(Db::open(dir.path()).unwrap().options().bits_per_key, 10);
}

#[test]
fn a_database_from_before_the_file_opens_with_defaults_and_gains_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.put("k", "v").unwrap();
    db.close().unwrap();
    std::fs::remove_file(dir.path().join("OPTIONS")).unwrap();
    let db = Db::builder(dir.path()).block_size(8192).open().unwrap();
    assert!(db.recovery().options_changes.is_empty());
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
    assert_eq!(Db::open(dir.path()).unwrap().options().block_size, 8192);
    // A read-only open writes nothing.
    std::fs::remove_file(dir.path().join("OPTIONS")).unwrap();
    Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert!(!dir.path().join("OPTIONS").exists());
}
