//! Per-keyspace options (DESIGN.md 2): a keyspace builds its tables with
//! its own settings, keeps them across reopens (manifest tags 13 and 15),
//! reports what `keyspace_with` changed, and refuses a prefix extractor it
//! cannot store.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::UpToDash;
use siftdb::filter::{FilterKind, FixedPrefix, LevelFilter, PrefixExtractor};
use siftdb::{Db, Error, Keyspace, KeyspaceOptions, Options};

/// Compressible values (LZ4 shrinks each block by far more than an
/// eighth), 200 bytes each.
fn fill(put: impl Fn(String, Vec<u8>)) {
    for i in 0..2_000u32 {
        let mut v = format!("value {i:05} ").into_bytes();
        v.resize(200, b'x');
        put(format!("key{i:05}"), v);
    }
}

fn logs_options() -> KeyspaceOptions {
    KeyspaceOptions::default()
        .compression("lz4".parse().unwrap())
        .block_size(16 << 10)
        .filters(vec![LevelFilter::BitsPerKey(FilterKind::Ribbon, 10.0)])
}

/// Average uncompressed data bytes per data block over `ks`'s tables.
fn bytes_per_block(ks: &Keyspace) -> u64 {
    let files = ks.live_files();
    assert!(!files.is_empty(), "{} has no table", ks.name());
    let raw: u64 = files
        .iter()
        .map(|f| f.properties.raw_key_bytes + f.properties.raw_value_bytes)
        .sum();
    let blocks: u64 = files.iter().map(|f| f.properties.num_data_blocks).sum();
    raw / blocks
}

/// Each table of "logs" is LZ4-compressed, in blocks of about 16 KiB, with a
/// Ribbon filter; each table of the default has none of the three.
fn check_tables(default: &Keyspace, logs: &Keyspace) {
    for f in logs.live_files() {
        let p = &f.properties;
        let c = p.compression.as_ref().expect("logs tables are compressed");
        assert_eq!(c.codec, "lz4");
        assert!(c.compressed_blocks > 0);
        assert!(p.filter_policy.contains("ribbon"), "{}", p.filter_policy);
        assert_eq!(p.keyspace, logs.id());
    }
    assert!(
        bytes_per_block(logs) > 12 << 10,
        "{}",
        bytes_per_block(logs)
    );
    for f in default.live_files() {
        let p = &f.properties;
        assert!(p.compression.is_none());
        assert!(p.filter_policy.contains("bloom"), "{}", p.filter_policy);
    }
    assert!(
        bytes_per_block(default) < 5 << 10,
        "{}",
        bytes_per_block(default)
    );
}

#[test]
fn a_keyspace_builds_its_tables_with_its_own_options_also_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let (logs, changes) = db.keyspace_with("logs", logs_options()).unwrap();
    assert!(changes.is_empty());
    let default = db.existing_keyspace("default").unwrap();
    fill(|k, v| logs.put(&k, &v).unwrap());
    fill(|k, v| default.put(&k, &v).unwrap());
    db.flush().unwrap();
    check_tables(&default, &logs);
    db.close().unwrap();

    // Reopened with the database's defaults: "logs" keeps its settings
    // (stored in the manifest), and builds its next tables with them.
    let db = Db::open_with(dir.path(), Options::default()).unwrap();
    let logs = db.existing_keyspace("logs").unwrap();
    assert_eq!(logs.options().block_size, 16 << 10);
    assert_eq!(logs.options().compression.to_string(), "lz4");
    assert_eq!(db.options().block_size, 4 << 10);
    let default = db.existing_keyspace("default").unwrap();
    fill(|k, v| logs.put(format!("again {k}"), &v).unwrap());
    fill(|k, v| default.put(format!("again {k}"), &v).unwrap());
    db.flush().unwrap();
    assert!(logs.live_files().len() >= 2);
    check_tables(&default, &logs);
    assert_eq!(logs.len().unwrap(), 4_000);
}

/// The options text the manifest holds for keyspace `id`.
fn stored_text(dir: &Path, id: u32) -> String {
    use siftdb::inspect::version::manifest::{read_current, read_manifest};
    let number = read_current(dir).unwrap().expect("CURRENT");
    let path = siftdb::inspect::filename::manifest_path(dir, number);
    let state = read_manifest(&path).unwrap().replay_all().unwrap();
    state.keyspaces[&id].options_text.clone()
}

fn manifest_size(dir: &Path) -> u64 {
    let number = siftdb::inspect::version::manifest::read_current(dir)
        .unwrap()
        .unwrap();
    std::fs::metadata(siftdb::inspect::filename::manifest_path(dir, number))
        .unwrap()
        .len()
}

#[test]
fn keyspace_with_reports_and_stores_changes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let small = KeyspaceOptions::default().block_size(1024);
    let (a, changes) = db.keyspace_with("a", small.clone()).unwrap();
    assert!(changes.is_empty());
    assert!(stored_text(dir.path(), a.id()).contains("block_size 1024\n"));

    // The same settings again: nothing changes, nothing is logged.
    let before = manifest_size(dir.path());
    let (_, changes) = db.keyspace_with("a", small).unwrap();
    assert!(changes.is_empty());
    assert_eq!(manifest_size(dir.path()), before);
    // `keyspace` never changes an existing keyspace's settings.
    assert_eq!(db.keyspace("a").unwrap().options().block_size, 1024);

    let (a, changes) = db.keyspace_with("a", logs_options()).unwrap();
    assert_eq!(
        changes,
        [
            "block_size: 1024 stored, 16384 used",
            "compression: none stored, lz4 used",
            "filters: default stored, ribbon:10 used",
        ]
    );
    assert!(manifest_size(dir.path()) > before);
    // At once, in the handle and in the manifest.
    assert_eq!(a.options().block_size, 16 << 10);
    let text = stored_text(dir.path(), a.id());
    assert!(text.contains("block_size 16384\n"), "{text}");
    assert!(text.contains("compression lz4\n"), "{text}");
    db.close().unwrap();

    let db = Db::open(dir.path()).unwrap();
    let a = db.existing_keyspace("a").unwrap();
    assert_eq!(a.options().block_size, 16 << 10);
    assert_eq!(a.options().compression.to_string(), "lz4");
    db.close().unwrap();

    // A read-only handle opens the keyspace with its settings, and refuses
    // to change them.
    let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
    let (a, changes) = ro.keyspace_with("a", logs_options()).unwrap();
    assert!(changes.is_empty());
    assert_eq!(a.options().block_size, 16 << 10);
    let other = KeyspaceOptions::default();
    assert!(matches!(ro.keyspace_with("a", other), Err(Error::ReadOnly)));
}

#[test]
fn the_default_keyspace_takes_only_the_databases_options() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::builder(dir.path()).block_size(8192).open().unwrap();
    let same = KeyspaceOptions::from_options(db.options());
    let (d, changes) = db.keyspace_with("default", same).unwrap();
    assert_eq!((d.id(), changes.len()), (0, 0));
    let other = KeyspaceOptions::from_options(db.options()).block_size(1024);
    let e = db.keyspace_with("default", other).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("database's options")),
        "{e}"
    );
    // Bad settings are refused before anything is logged.
    let bad = KeyspaceOptions::default().block_size(1);
    let e = db.keyspace_with("b", bad).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("block_size")),
        "{e}"
    );
    assert_eq!(db.keyspaces(), ["default"]);
}

#[test]
fn a_custom_prefix_extractor_is_refused_outside_the_default_keyspace() {
    let dir = tempfile::tempdir().unwrap();
    let custom: Arc<dyn PrefixExtractor> = Arc::new(UpToDash);
    let db = Db::builder(dir.path())
        .prefix_extractor(Arc::clone(&custom))
        .open()
        .unwrap();
    // A new keyspace would inherit it, and could not be reopened with it.
    let e = db.keyspace("logs").unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("test.up_to_dash") && m.contains("not built in")),
        "{e}"
    );
    let e = db
        .keyspace_with("logs", KeyspaceOptions::default().prefix_extractor(custom))
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    assert_eq!(db.keyspaces(), ["default"]);

    // A built-in one is stored by name and comes back at reopen.
    let fixed: Arc<dyn PrefixExtractor> = Arc::new(FixedPrefix::new(3));
    let (logs, _) = db
        .keyspace_with("logs", KeyspaceOptions::default().prefix_extractor(fixed))
        .unwrap();
    let (plain, _) = db
        .keyspace_with("plain", KeyspaceOptions::default().no_prefix_extractor())
        .unwrap();
    for k in ["abc-1", "abd-2", "xyz-3"] {
        logs.put(k, "v").unwrap();
    }
    logs.flush().unwrap();
    let props = &logs.live_files()[0].properties;
    let name = &props.prefix_filter.as_ref().unwrap().extractor;
    assert_eq!(name, "siftdb.fixed_prefix.3");
    drop((logs, plain));
    db.close().unwrap();

    let db = Db::builder(dir.path())
        .prefix_extractor(Arc::new(UpToDash))
        .open()
        .unwrap();
    let logs = db.existing_keyspace("logs").unwrap();
    let ex = logs.options().prefix_extractor.clone().unwrap();
    assert_eq!(ex.name(), "siftdb.fixed_prefix.3");
    assert!(db
        .existing_keyspace("plain")
        .unwrap()
        .options()
        .prefix_extractor
        .is_none());
    let found: Vec<_> = logs.prefix("abc").map(common::owned).collect();
    assert_eq!(found.len(), 1);
}

/// A keyspace's stats report its filters against its own budget, not the
/// database's (found when stats per keyspace met options per keyspace in
/// one merge).
#[test]
fn a_keyspaces_filter_report_uses_its_own_budget() {
    use siftdb::filter::FilterBudget;
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let budgeted = KeyspaceOptions::default().filter_budget(FilterBudget::bits_per_key(8.0));
    let (b, _) = db.keyspace_with("b", budgeted).unwrap();
    for i in 0..1000 {
        b.put(format!("k{i:04}"), "v").unwrap();
    }
    b.flush().unwrap();
    let stats = b.stats();
    assert_eq!(stats.filter_memory.keys, 1000);
    let budget = stats.filter_memory.budget_bytes.expect("b's budget");
    assert_eq!(budget, 1000); // 8 bits for each of 1,000 keys
    assert_eq!(db.stats().filter_memory.budget_bytes, None);
}
