//! The small read calls on `Db` and `Snapshot` (`contains_key`,
//! `first_key_value`, `last_key_value`, `is_empty`, `len`) and the `keys`
//! and `values` adapters, against a `BTreeMap` model, across a flush, a
//! delete and a snapshot.

use std::collections::BTreeMap;

use siftdb::{Db, Error, Slice};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn check(db_view: &impl View, model: &Model) {
    assert_eq!(db_view.len().unwrap(), model.len() as u64);
    assert_eq!(db_view.is_empty().unwrap(), model.is_empty());
    assert_eq!(
        db_view
            .first_key_value()
            .unwrap()
            .map(|(k, v)| (k.into_vec(), v.into_vec())),
        model.iter().next().map(|(k, v)| (k.clone(), v.clone()))
    );
    assert_eq!(
        db_view
            .last_key_value()
            .unwrap()
            .map(|(k, v)| (k.into_vec(), v.into_vec())),
        model
            .iter()
            .next_back()
            .map(|(k, v)| (k.clone(), v.clone()))
    );
    for k in [&b"a"[..], b"k05", b"k10", b"zz"] {
        assert_eq!(
            db_view.contains_key(k).unwrap(),
            model.contains_key(k),
            "{k:?}"
        );
    }
    let keys: Vec<Slice> = db_view.iter().keys().collect::<Result<_, Error>>().unwrap();
    assert_eq!(keys, model.keys().cloned().collect::<Vec<_>>());
    let values_rev: Vec<Slice> = db_view
        .iter()
        .values()
        .rev()
        .collect::<Result<_, Error>>()
        .unwrap();
    assert_eq!(
        values_rev,
        model.values().rev().cloned().collect::<Vec<_>>()
    );
}

/// The calls shared by `Db` and `Snapshot`, so one check serves both.
trait View {
    fn len(&self) -> siftdb::Result<u64>;
    fn is_empty(&self) -> siftdb::Result<bool>;
    fn first_key_value(&self) -> siftdb::Result<Option<(Slice, Slice)>>;
    fn last_key_value(&self) -> siftdb::Result<Option<(Slice, Slice)>>;
    fn contains_key(&self, k: &[u8]) -> siftdb::Result<bool>;
    fn iter(&self) -> siftdb::DbIterator;
}

macro_rules! view {
    ($t:ty) => {
        impl View for $t {
            fn len(&self) -> siftdb::Result<u64> {
                <$t>::len(self)
            }
            fn is_empty(&self) -> siftdb::Result<bool> {
                <$t>::is_empty(self)
            }
            fn first_key_value(&self) -> siftdb::Result<Option<(Slice, Slice)>> {
                <$t>::first_key_value(self)
            }
            fn last_key_value(&self) -> siftdb::Result<Option<(Slice, Slice)>> {
                <$t>::last_key_value(self)
            }
            fn contains_key(&self, k: &[u8]) -> siftdb::Result<bool> {
                <$t>::contains_key(self, k)
            }
            fn iter(&self) -> siftdb::DbIterator {
                <$t>::iter(self)
            }
        }
    };
}
view!(Db);
view!(siftdb::Snapshot);

#[test]
fn conveniences_agree_with_a_model_in_memtables_tables_and_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::builder(dir.path())
        .write_buffer_size(4096)
        .open()
        .unwrap();
    let mut model = Model::new();
    check(&db, &model);
    for i in 0..20u32 {
        let (k, v) = (
            format!("k{i:02}").into_bytes(),
            format!("v{i}").into_bytes(),
        );
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    check(&db, &model);
    db.flush().unwrap();
    let snap = db.snapshot();
    let at_snap = model.clone();
    // Delete the first and last keys and one in the middle.
    for k in ["k00", "k10", "k19"] {
        db.delete(k).unwrap();
        model.remove(k.as_bytes());
    }
    db.put("k05", "new").unwrap();
    model.insert(b"k05".to_vec(), b"new".to_vec());
    check(&db, &model);
    check(&snap, &at_snap);
    db.compact().unwrap();
    check(&db, &model);
    check(&snap, &at_snap);
    // Everything deleted: empty, though tombstones remain in the tree.
    for k in model.keys() {
        db.delete(k).unwrap();
    }
    model.clear();
    check(&db, &model);
    assert_eq!(snap.len().unwrap(), 20);
}

/// Found by a new-user trial: a `Snapshot` kept past `Db::close` held the
/// database's lock, so the next open said it was locked by another
/// process. Close now lets the lock go; the snapshot still reads.
#[test]
fn a_snapshot_kept_past_close_does_not_lock_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.put("k", "old").unwrap();
    db.flush().unwrap();
    let snap = db.snapshot();
    let mut iter = db.iter();
    db.close().unwrap();
    let db = Db::open(dir.path()).expect("the lock was let go at close");
    db.put("k", "new").unwrap();
    db.compact().unwrap();
    assert_eq!(snap.get("k").unwrap().as_deref(), Some(&b"old"[..]));
    assert_eq!(iter.next().unwrap().unwrap().1, b"old");
    drop((snap, iter));
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"new"[..]));
    // The lock is still exclusive between open handles.
    assert!(matches!(Db::open(dir.path()), Err(Error::Locked(_))));
    drop(db);
    assert_eq!(
        Db::open(dir.path()).unwrap().get("k").unwrap().as_deref(),
        Some(&b"new"[..])
    );
}

/// What an application names lives at the crate root: a batch's ops and
/// their type, the recovery report's torn tail, and every part of a live
/// file's properties; the empty path is a clear error.
#[test]
fn the_stable_surface_names_what_its_calls_return() {
    let mut batch = siftdb::WriteBatch::new();
    batch.put("a", "1").unwrap();
    batch.delete("b").unwrap();
    let ops: Vec<(siftdb::ValueType, &[u8])> = batch
        .iter()
        .map(|op: siftdb::BatchOp<'_>| (op.value_type, op.key))
        .collect();
    assert_eq!(
        ops,
        [
            (siftdb::ValueType::Value, &b"a"[..]),
            (siftdb::ValueType::Deletion, &b"b"[..])
        ]
    );
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.put("k", "v").unwrap();
    db.flush().unwrap();
    let torn: Option<&siftdb::TornTail> = db.recovery().manifest_torn_tail.as_ref();
    assert!(torn.is_none());
    let props: &siftdb::TableProperties = &db.live_files()[0].properties;
    let sketch: Option<siftdb::BlockHandle> = props.key_sketch;
    let prefix: Option<&siftdb::PrefixFilterProperties> = props.prefix_filter.as_ref();
    assert!(sketch.is_some() && prefix.is_none());
    for open in [
        Db::open(""),
        Db::open_read_only("", siftdb::Options::default()),
    ] {
        match open {
            Err(Error::InvalidArgument(m)) => assert!(m.contains("path is empty"), "{m}"),
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }
}
