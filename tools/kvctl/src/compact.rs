//! `kvctl compact`: compact a whole database, or a key range, by hand.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use siftdb::Options;

use crate::data::open_existing_waiting;
use crate::error::{write_failed, CliError};
use crate::format::{count, escaped_arg, group, human_bytes, Bytes};
use crate::stats::{levels_table, write_amplification_line};

#[derive(Debug, Args)]
#[command(
    after_help = "The range is [--from, --to): --to itself is not in it, as for scan and \
export.\n\nExample:\n  kvctl compact ./db --from lib --to libz\n  kvctl compact ./db --bits-per-key 6   (a database imported with --bits-per-key 6)"
)]
pub struct CompactArgs {
    /// Database directory
    pub db: PathBuf,
    /// First key of the range to compact (escaped); needs --to
    #[arg(long, value_name = "K", value_parser = escaped_arg, requires = "to")]
    pub from: Option<Bytes>,
    /// End of the range to compact, exclusive, as for `scan --to` and
    /// `export --to` (escaped); needs --from
    #[arg(long, value_name = "K", value_parser = escaped_arg, requires = "from")]
    pub to: Option<Bytes>,
    /// Bloom filter bits per key for the SSTables compaction writes (0 = no
    /// filters; default: the database's stored setting, else 10). Refused
    /// when the database stores a --filters spec or a --filter-budget,
    /// which take precedence: give --filters bloom:N then
    #[arg(
        long,
        value_name = "N",
        conflicts_with = "filters",
        value_parser = clap::value_parser!(u32).range(0..=64)
    )]
    pub bits_per_key: Option<u32>,
    /// Filter of each level's rewritten SSTables, as `import --filters`
    /// takes it (default: the database's stored setting), e.g.
    /// blocked-bloom:10,ribbon:1%
    #[arg(long, value_name = "SPEC", value_parser = crate::filter_spec::parse_spec)]
    pub filters: Option<crate::filter_spec::FilterSpec>,
    /// One filter memory budget for the whole tree, in bits per key on
    /// average, spread over the levels so that absent keys meet the
    /// fewest false positives (Monkey; DESIGN.md 3.2); `--filters` then
    /// gives only each level's kind (default: the database's stored setting)
    #[arg(long, value_name = "BITS", conflicts_with = "bits_per_key")]
    pub filter_budget: Option<f64>,
    /// Codec of each level's data blocks, level 0 first, the last serving
    /// deeper levels: none, lz4 or zstd (zstd needs kvctl built with
    /// --features zstd), e.g. none,none,lz4 (default: the database's stored
    /// setting, else none). Stored (OPTIONS)
    #[arg(long, value_name = "SPEC", value_parser = crate::data::parse_compression)]
    pub compression: Option<siftdb::CompressionPolicy>,
    /// Rewrite only the SSTables whose filter differs from what the options
    /// above would build, each in place with every entry copied
    /// (`Db::rebuild_filters`), instead of compacting
    #[arg(long, conflicts_with_all = ["from", "to"])]
    pub filters_only: bool,
    /// Also build prefix filters over the first N bytes of keys, so that
    /// scans of a prefix of N bytes or more skip tables without it
    /// (default: the database's stored setting)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub prefix_len: Option<u16>,
    /// No progress spinner
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub wait: crate::wait::WaitArg,
}

/// What a compaction under `options` would change in the filters of
/// keyspace `ks`'s live tables, one line per kind of change, so that
/// tables built with other filter settings are not silently re-laid out
/// (a database from before siftdb stored its options does not know them).
/// Under a filter budget, sizes differ by design and only kinds are
/// compared.
fn layout_changes(ks: &siftdb::Keyspace, options: &Options) -> Vec<String> {
    let files = ks.live_files();
    let deepest = files.iter().map(|f| f.level).max().unwrap_or(0);
    let mut filters = std::collections::BTreeMap::<(String, String), u64>::new();
    let mut lost_prefix = 0u64;
    for f in &files {
        let p = &f.properties;
        let t = siftdb::inspect::sstable::TableOptions::for_level(
            options,
            f.level,
            f.level == deepest && f.level > 0,
        );
        let (name, bits) = match &t.filter_policy {
            Some(policy) => (
                policy.name().to_string(),
                policy.shape(&policy.create_filter(&[])).bits_per_key,
            ),
            None => (String::new(), 0),
        };
        let same = name == p.filter_policy
            && (options.filter_budget.is_some() || bits == p.filter_bits_per_key);
        if !same {
            let show = |n: &str, b: u32| match n {
                "" => "no filter".to_string(),
                n if n == siftdb::filter::RIBBON_POLICY_NAME => format!("{n} (r = {b})"),
                n => format!("{n} ({b} bits/key)"),
            };
            *filters
                .entry((
                    show(&p.filter_policy, p.filter_bits_per_key),
                    show(&name, bits),
                ))
                .or_default() += 1;
        }
        if p.prefix_filter.is_some() && options.prefix_extractor.is_none() {
            lost_prefix += 1;
        }
    }
    // Whose stored settings the flags go over; only the database's can
    // predate siftdb storing them (keyspaces came later).
    let over = if ks.id() == 0 {
        "the database's stored settings; a database from before siftdb stored them does not \
         know what it was built with: give the flags --bits-per-key, --filters, \
         --filter-budget to keep its filters"
            .to_string()
    } else {
        format!("keyspace {}'s stored settings", ks.name())
    };
    let mut out: Vec<String> = filters
        .into_iter()
        .map(|((from, to), n)| {
            format!(
                "{} with {from} will be rewritten with {to} (the options in use: the \
                 flags given, over {over})",
                count(n, "SSTable")
            )
        })
        .collect();
    if lost_prefix > 0 {
        out.push(format!(
            "{} with prefix filters will be rewritten without them: give --prefix-len \
             to keep them",
            count(lost_prefix, "SSTable")
        ));
    }
    out
}

// `Bytes`, not `Vec<u8>`: clap's derive reads a literal `Vec` as "many
// values" and panics at run time when the parser yields one `Vec<u8>`.

/// Flushes, compacts (everything, or files overlapping `--from .. --to`)
/// down to the deepest level holding data, and prints the levels before
/// and after, plus a line saying so when no SSTable needed rewriting.
pub fn run(args: &CompactArgs) -> Result<(), CliError> {
    // Both bounds or neither (clap requires it): no bounds compact all.
    let range = match (&args.from, &args.to) {
        (Some(lo), Some(hi)) => {
            crate::scan::checked_key_range("compact", None, Some(lo), Some(hi), false, false)?
        }
        _ => None,
    };
    crate::data::refuse_bits_per_key_under_stored_filters(&args.db, args.bits_per_key)?;
    let layout = crate::data::LayoutFlags {
        bits_per_key: args.bits_per_key,
        filters: args.filters.as_ref(),
        filter_budget: args.filter_budget,
        prefix_len: args.prefix_len,
        compression: args.compression.as_ref(),
        ..Default::default()
    };
    let builder = layout.builder(siftdb::Db::builder(&args.db));
    if args.filters_only && crate::keyspace::selected() != crate::keyspace::DEFAULT {
        return Err(CliError::usage(
            "compact --filters-only rebuilds the default keyspace's filters only; leave out \
             --keyspace, or compact the keyspace without --filters-only",
        ));
    }
    let db = open_existing_waiting(&args.db, builder, args.wait.wait)?;
    let ks = layout.keyspace(&db, crate::keyspace::existing(&db)?)?;
    for w in layout_changes(&ks, &ks.options()) {
        let _ = writeln!(io::stderr(), "kvctl: warning: {w}");
    }
    crate::interrupt::on_interrupt(crate::interrupt::Task::Compact);
    let before = ks.stats();
    let spinner = if args.quiet || !io::stdout().is_terminal() {
        ProgressBar::hidden()
    } else {
        let pb = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}") {
            pb.set_style(style);
        }
        pb.set_message("compacting");
        pb.enable_steady_tick(Duration::from_millis(120));
        pb
    };
    let start = Instant::now();
    if args.filters_only {
        let rebuilt = db.rebuild_filters();
        spinner.finish_and_clear();
        let rebuilt = rebuilt?;
        let after = db.stats();
        let f = &after.filter_memory;
        let s = format!(
            "rebuilt the filters of {} in {:.2} s, writing {}; expected false positives per absent-key lookup {:.5} (optimal for the shape at that memory {:.5}), {} bytes of filters\n",
            count(rebuilt as u64, "SSTable"),
            start.elapsed().as_secs_f64(),
            human_bytes(after.filter_rebuild_bytes_written),
            f.expected_false_positives,
            f.optimal_false_positives,
            group(f.filter_bytes)
        );
        db.close()?;
        return io::stdout()
            .lock()
            .write_all(s.as_bytes())
            .map_err(write_failed);
    }
    let result = match range {
        Some(r) => ks.compact_range(r),
        None => ks.compact(),
    };
    spinner.finish_and_clear();
    result?;
    let after = ks.stats();
    drop(ks);
    db.close()?;
    let mut s = String::new();
    s.push_str("before\n");
    s.push_str(&levels_table(&before.levels, false).render("  "));
    s.push_str("after\n");
    s.push_str(&levels_table(&after.levels, false).render("  "));
    s.push_str(&format!(
        "compactions {}, read {}, wrote {}, dropped {}, {} and {}, in {:.2} s\n",
        after.compactions,
        human_bytes(after.compaction_bytes_read),
        human_bytes(after.compaction_bytes_written),
        count(after.versions_dropped, "shadowed version"),
        count(after.tombstones_dropped, "tombstone"),
        count(after.range_deleted_dropped, "range-deleted version"),
        start.elapsed().as_secs_f64()
    ));
    // The library skips bottom-level files a rewrite cannot change; when
    // no compaction read a single input, say so rather than leave a reader
    // to infer it from "read 0 B".
    if after.compaction_bytes_read == before.compaction_bytes_read {
        s.push_str(
            "nothing needed rewriting: no tombstones, shadowed versions, range-deleted \
             keys, stale filters or oversized files\n",
        );
    }
    s.push_str(&write_amplification_line(&after));
    io::stdout()
        .lock()
        .write_all(s.as_bytes())
        .map_err(write_failed)
}
