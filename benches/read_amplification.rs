//! Read amplification of point lookups over overlapping runs and over the
//! levels of a tree built by leveled compaction, with and without Bloom
//! filters: measured with the engine's counters, next to the model (see
//! `siftdb_bench::readamp`).
//!
//! `cargo bench --bench read_amplification` writes the tables to stdout,
//! progress to stderr, and `target/readamp/readamp.csv` plus four SVG
//! plots. It exits with status 1 if a point disagrees with the model
//! beyond tolerance, and 2 on an error (including an engine counter that
//! disagrees with the files' filters).

use std::io::Write;

use siftdb_bench::readamp::{self, describe, Config};

fn main() {
    // `cargo bench` passes `--bench` (and any filter); this benchmark takes
    // no arguments and always runs the default configuration.
    let cfg = Config::default();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = readamp::run_and_report_with(&cfg, &mut out, &mut |p| {
        eprintln!(
            "[{:>2}/{}] {:6.1} s  {}",
            p.done,
            p.total,
            p.elapsed.as_secs_f64(),
            describe(p.point)
        );
    });
    let _ = out.flush();
    match result {
        Ok(s) if s.misses.is_empty() => {}
        Ok(s) => {
            eprintln!(
                "read_amplification: {} checks outside tolerance (see above)",
                s.misses.len()
            );
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("read_amplification: {e}");
            std::process::exit(2);
        }
    }
}
