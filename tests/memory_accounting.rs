//! `Stats::memory`: the bytes an open database holds, by part, equal the
//! sum over its live tables and memtables, through compaction's file
//! turnover; the pinned filters of the tables a compaction wrote answer
//! lookups (DESIGN.md 3.3).

mod common;

use siftdb::inspect::sstable::Table;
use siftdb::Db;

/// What the live tables hold, by the tables themselves: (filters, index).
fn table_parts(db: &Db) -> (u64, u64, usize) {
    let files = db.live_files();
    let mut parts = (0, 0, files.len());
    for f in &files {
        let m = Table::open(&f.path, f.number).unwrap().memory();
        parts.0 += m.filters;
        parts.1 += m.index;
    }
    parts
}

/// Filter bytes as the live tables' properties record them: the pinned
/// copies hold these plus at most 63 bytes of alignment padding each.
fn filter_block_bytes(db: &Db) -> u64 {
    db.live_files()
        .iter()
        .map(|f| {
            let t = Table::open(&f.path, f.number).unwrap();
            t.filter_bytes().map_or(0, |b| b.len() as u64)
        })
        .sum()
}

#[test]
fn memory_parts_add_up_through_compaction_turnover() {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = common::small_options();
    opts.target_file_size = 32 << 10;
    let db = common::open(tmp.path(), &opts);
    let n = 6000u32;
    for i in 0..n {
        db.put(format!("key{i:06}"), [b'v'; 40]).unwrap();
    }
    // Before any flush finishes, the memtables hold the writes.
    let s = db.stats();
    assert!(s.memory.memtables > 0, "{:?}", s.memory);
    assert_eq!(
        s.memory.total(),
        s.memory.pinned_filters + s.memory.pinned_indexes + s.memory.memtables
    );

    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let before = db.stats().memory;
    let (filters, index, tables) = table_parts(&db);
    assert!(tables >= 2, "{tables} tables");
    assert_eq!(
        (before.pinned_filters, before.pinned_indexes),
        (filters, index)
    );
    let blocks = filter_block_bytes(&db);
    assert!(blocks > u64::from(n), "~10 bits per key: {blocks}");
    assert!(
        (blocks..=blocks + 63 * tables as u64).contains(&before.pinned_filters),
        "{} pinned for {blocks} filter bytes in {tables} tables",
        before.pinned_filters
    );

    // Compaction replaces every table: the memory follows the new set, and
    // nothing of the old tables is counted.
    db.compact().unwrap();
    let after = db.stats();
    let (filters, index, tables_after) = table_parts(&db);
    assert_eq!(
        (after.memory.pinned_filters, after.memory.pinned_indexes),
        (filters, index)
    );
    assert!(
        db.live_files().iter().all(|f| f.level > 0),
        "everything compacted"
    );
    let blocks = filter_block_bytes(&db);
    assert!((blocks..=blocks + 63 * tables_after as u64).contains(&after.memory.pinned_filters));

    // The new tables' pinned filters answer: absent keys inside their key
    // ranges are turned away by filters, present keys are found.
    let negatives = after.filter_negatives;
    for i in 0..n {
        assert!(db.get(format!("key{i:06}x")).unwrap().is_none());
    }
    for i in (0..n).step_by(97) {
        assert_eq!(db.get(format!("key{i:06}")).unwrap().unwrap(), [b'v'; 40]);
    }
    let turned_away = db.stats().filter_negatives - negatives;
    assert!(
        turned_away > u64::from(n) * 9 / 10,
        "{turned_away} of {n} absent lookups turned away by filters"
    );
}

/// With `TableReads::Cached`, point lookups fill the block cache up to its
/// capacity and no further, concurrent readers get the right values, and
/// the cache is counted in the total.
#[test]
fn a_block_cache_stays_within_its_capacity_under_concurrent_readers() {
    let tmp = tempfile::tempdir().unwrap();
    let mut opts = common::small_options();
    opts.target_file_size = 32 << 10;
    let capacity = 96 << 10;
    opts.table_reads = siftdb::TableReads::Cached { capacity };
    let db = std::sync::Arc::new(common::open(tmp.path(), &opts));
    let n = 8000u32;
    for i in 0..n {
        db.put(format!("key{i:06}"), format!("value{i}")).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(db.stats().memory.block_cache, 0, "nothing read yet");
    let readers: Vec<_> = (0..4u32)
        .map(|t| {
            let db = std::sync::Arc::clone(&db);
            std::thread::spawn(move || {
                for i in (t..n).step_by(4) {
                    let v = db.get(format!("key{i:06}")).unwrap();
                    assert_eq!(v.unwrap(), format!("value{i}").into_bytes());
                    if i % 256 == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    for r in readers {
        r.join().unwrap();
    }
    let m = db.stats().memory;
    assert_eq!(m.block_cache_capacity, capacity as u64);
    // 8000 entries of ~20 bytes in 1 KiB blocks are ~200 KiB of blocks:
    // more than the cache holds, so it is full, and no fuller.
    assert!(m.block_cache <= m.block_cache_capacity, "{m:?}");
    assert!(m.block_cache > m.block_cache_capacity / 2, "{m:?}");
    assert_eq!(
        m.total(),
        m.pinned_filters + m.pinned_indexes + m.memtables + m.block_cache
    );
}
