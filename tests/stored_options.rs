//! The `OPTIONS` file: a reopen keeps the options a database was built
//! with unless the caller sets others (found by new users: a database
//! built at 12 bits per key and 2 MiB files came back, after `kvctl
//! compact`, at 10 and 64 MiB).

mod common;

use std::sync::Arc;

use common::UpToDash;
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
    // verify reports it (the new user's `kvctl verify` said OK).
    let report = siftdb::inspect::verify_db(dir.path(), true, &mut |_, _| {}).unwrap();
    assert!(
        report.problems.iter().any(|p| p.what == "OPTIONS file"),
        "{:?}",
        report.problems
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
    // Said, so that a tool can warn: the settings stored before are gone
    // (a new-user trial deleted the file and lost its filters and
    // compression without a word).
    assert!(db.recovery().options_file_missing);
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(db.options().block_size, 8192);
    assert!(!db.recovery().options_file_missing);
    db.close().unwrap();
    // A read-only open writes nothing.
    std::fs::remove_file(dir.path().join("OPTIONS")).unwrap();
    let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert!(!ro.recovery().options_file_missing);
    assert!(!dir.path().join("OPTIONS").exists());
}

/// A new database has no `OPTIONS` file to miss.
#[test]
fn a_new_database_does_not_report_a_missing_options_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path().join("db")).unwrap();
    assert!(!db.recovery().options_file_missing);
}

/// Found by a new-user trial: a plain `Db::open` of a database built with a
/// custom prefix extractor dropped it silently (new tables lost their
/// prefix filters). It cannot be rebuilt from its name, so the open now
/// asks for it; passing it through the builder works.
#[test]
fn a_custom_prefix_extractor_must_be_passed_again() {
    let dir = tempfile::tempdir().unwrap();
    let ex: Arc<dyn siftdb::filter::PrefixExtractor> = Arc::new(UpToDash);
    Db::builder(dir.path())
        .prefix_extractor(Arc::clone(&ex))
        .open()
        .unwrap()
        .close()
        .unwrap();
    let err = Db::open(dir.path()).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("test.up_to_dash")),
        "{err:?}"
    );
    let db = Db::builder(dir.path()).prefix_extractor(ex).open().unwrap();
    assert!(db.recovery().options_changes.is_empty());
    assert_eq!(
        db.options()
            .prefix_extractor
            .as_ref()
            .map(|e| e.name().to_string())
            .as_deref(),
        Some("test.up_to_dash")
    );
}

#[test]
fn a_setting_stored_twice_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    Db::open(dir.path()).unwrap().close().unwrap();
    let body = "siftdb-options 1\nblock_size 4096\nblock_size 8192\n";
    let text = format!("{body}crc32 {:08x}\n", crc32fast_hash(body.as_bytes()));
    std::fs::write(dir.path().join("OPTIONS"), text).unwrap();
    let err = Db::open(dir.path()).unwrap_err();
    assert!(err.to_string().contains("block_size is set twice"), "{err}");
}

/// CRC-32 (IEEE), bit by bit: the checksum the file carries.
fn crc32fast_hash(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
