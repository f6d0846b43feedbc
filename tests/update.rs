//! `Db::update`: an atomic read-modify-write. The race window between the
//! read and the write is widened by a closure that waits while another
//! thread writes, instead of hoping the scheduler finds it.

use std::sync::mpsc;
use std::time::Duration;

use siftdb::Db;

fn counter(v: Option<&[u8]>) -> u64 {
    v.map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()))
}

/// The case: four threads incrementing one counter by get-then-put
/// ended at 1,075–3,000 of 4,000; through `update` none is lost.
#[test]
fn concurrent_increments_are_never_lost() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::builder(dir.path())
        .write_buffer_size(16 << 10)
        .open()
        .unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..1_000 {
                    db.update("n", |v| Some((counter(v) + 1).to_le_bytes().to_vec()))
                        .unwrap();
                    // Unrelated writes keep the group queue and rotations busy.
                    db.put("other", "x").unwrap();
                }
            });
        }
    });
    assert_eq!(counter(db.get("n").unwrap().as_deref()), 4_000);
}

/// A plain put made while an update's closure runs waits for the update,
/// so the update cannot overwrite it with a value computed from older
/// data: had the put slipped between the read and the write, the update's
/// value would be last.
#[test]
fn a_plain_write_cannot_slip_between_the_read_and_the_write() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.put("k", "old").unwrap();
    let (tx, rx) = mpsc::channel();
    let seq_before = db.last_sequence();
    std::thread::scope(|s| {
        let db = &db;
        s.spawn(move || {
            // Wait until the update has read, then write.
            rx.recv().unwrap();
            db.put("k", "plain").unwrap();
        });
        let written = db
            .update("k", |v| {
                assert_eq!(v, Some(&b"old"[..]));
                tx.send(()).unwrap();
                // The window: the other thread's put is queued meanwhile.
                std::thread::sleep(Duration::from_millis(200));
                Some(b"updated".to_vec())
            })
            .unwrap();
        assert_eq!(written.as_deref(), Some(&b"updated"[..]));
    });
    // The put came second, and both wrote.
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"plain"[..]));
    assert_eq!(db.last_sequence().0, seq_before.0 + 2);
}

#[test]
fn none_deletes_and_a_missing_key_stays_missing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.put("k", "v").unwrap();
    db.flush().unwrap();
    assert_eq!(
        db.update("k", |v| {
            assert_eq!(v, Some(&b"v"[..]));
            None
        })
        .unwrap(),
        None
    );
    assert_eq!(db.get("k").unwrap(), None);
    let before = db.last_sequence();
    assert_eq!(
        db.update("absent", |v| {
            assert_eq!(v, None);
            None
        })
        .unwrap(),
        None
    );
    assert_eq!(
        db.last_sequence(),
        before,
        "nothing written for absent → absent"
    );
    assert!(db.update(vec![0u8; 70_000], |_| None).is_err());
}

#[test]
fn a_panicking_closure_writes_nothing_and_leaves_the_database_usable() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    db.put("k", "v").unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        db.update("k", |_| panic!("application bug"))
    }));
    let payload = r.expect_err("the panic reaches the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"application bug"));
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    db.put("k", "w").unwrap();
    assert_eq!(
        db.update("k", |v| v.map(|b| [b, b"!"].concat()))
            .unwrap()
            .as_deref(),
        Some(&b"w!"[..])
    );
    // And it survives a reopen.
    db.close().unwrap();
    let db = Db::open(dir.path()).unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"w!"[..]));
}

/// Found by a new-user trial: a write, `persist`, `flush` or `compact` of
/// the same database inside the closure waited for itself forever. Each is
/// now refused with `InvalidArgument`; reads work, and so do writes to
/// another database.
#[test]
fn write_path_calls_inside_the_closure_are_refused_not_deadlocked() {
    let dir = tempfile::tempdir().unwrap();
    let other_dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let other = Db::open(other_dir.path()).unwrap();
    db.put("k", "v").unwrap();
    let mut refused = Vec::new();
    db.update("k", |v| {
        assert_eq!(db.get("k").unwrap().as_deref(), v);
        for (what, r) in [
            ("put", db.put("x", "y")),
            ("persist", db.persist()),
            ("flush", db.flush()),
            ("compact", db.compact()),
            ("wait_for_compactions", db.wait_for_compactions()),
        ] {
            refused.push((what, matches!(r, Err(siftdb::Error::InvalidArgument(_)))));
        }
        other.put("elsewhere", "fine").unwrap();
        Some(b"w".to_vec())
    })
    .unwrap();
    assert!(refused.iter().all(|(_, r)| *r), "{refused:?}");
    assert_eq!(db.get("x").unwrap(), None);
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"w"[..]));
    // After the closure, the same calls work.
    db.put("x", "y").unwrap();
    db.flush().unwrap();
    assert_eq!(
        other.get("elsewhere").unwrap().as_deref(),
        Some(&b"fine"[..])
    );
}
