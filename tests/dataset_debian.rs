//! The real dataset end to end: 63,681 Debian package records imported with
//! a small write buffer (many SSTables), reopened, every name looked up
//! (exact value) and every English word that is not a package name looked
//! up (absent), with the filters' effect checked against theory.

mod common;

use std::collections::HashSet;

use common::gz_lines;
use siftdb::filter::theoretical_fpr;
use siftdb::{CompactionStyle, Db, Options, WriteBatch};

#[test]
fn debian_packages_round_trip_and_filters_skip_files() {
    let records: Vec<(String, String)> = gz_lines("debian-packages.tsv.gz")
        .into_iter()
        .map(|l| {
            let (k, v) = l.split_once('\t').expect("NAME<TAB>JSON");
            (k.to_string(), v.to_string())
        })
        .collect();
    assert_eq!(records.len(), 63_681);
    let names: HashSet<&str> = records.iter().map(|(k, _)| k.as_str()).collect();
    let absent: Vec<String> = gz_lines("english-words.txt.gz")
        .into_iter()
        .filter(|w| !names.contains(w.as_str()))
        .collect();
    assert_eq!(absent.len(), 104_334 - 849);

    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::default();
    opts.write_buffer_size = 512 << 10;
    // Flush-only, so every flushed file stays a level-0 run.
    opts.compaction_style = CompactionStyle::None;
    {
        let db = Db::open_with(dir.path(), opts.clone()).unwrap();
        for chunk in records.chunks(1000) {
            let mut b = WriteBatch::new();
            for (k, v) in chunk {
                b.put(k, v).unwrap();
            }
            db.write(b).unwrap();
        }
        db.close().unwrap();
    }
    let db = Db::open_with(dir.path(), opts).unwrap();
    let files: usize = db.stats().levels.iter().map(|l| l.files).sum();
    assert!(
        files >= 8,
        "the import spans {files} SSTables, want at least 8"
    );

    for (k, v) in &records {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_bytes()), "{k}");
    }
    let before = db.stats();
    for w in &absent {
        assert_eq!(db.get(w).unwrap(), None, "{w}");
    }
    let after = db.stats();
    let lookups = absent.len() as f64;
    let reads = (after.data_block_reads - before.data_block_reads) as f64 / lookups;
    let probes = (after.filter_probes - before.filter_probes) as f64 / lookups;
    let skipped = (after.filter_negatives - before.filter_negatives) as f64;
    let p = theoretical_fpr(10.0, 7);
    assert!(
        probes > 0.5,
        "absent words fall inside files' key ranges ({probes} probes per lookup)"
    );
    assert!(
        reads < 2.0 * probes * p,
        "absent reads per lookup {reads} should be below 2·L·p = {}",
        2.0 * probes * p
    );
    assert!(
        skipped > 0.95 * probes * lookups,
        "filters skip nearly every probed file"
    );
}
