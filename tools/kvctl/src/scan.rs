//! `kvctl scan`: pairs in key order, bounded by a prefix and by a start and
//! an end key; printed as escaped lines, keys only, a count, or JSON.
//! [`key_range`] also bounds `export --from/--to`.

use std::io::{self, BufWriter, Write};
use std::ops::Bound;
use std::path::PathBuf;

use clap::Args;
use indicatif::ProgressBar;
use serde_json::json;
use siftdb::inspect::escape::escape_bytes;

use crate::data::{open_read_only, Pair};
use crate::error::{write_failed, CliError};
use crate::export::write_pairs;
use crate::format::{escaped_arg, Bytes};

/// Lower and upper bound of a scan.
pub type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  kvctl scan ./db --prefix lib --from libc --limit 10\n  \
kvctl scan ./db --from a --to b --count\n  kvctl scan ./db --prefix user: --keys-only --json\n\n\
--from is where the scan starts (inclusive) and --to where it stops (exclusive), in the order \
of the scan: forward, keys in [FROM, TO); with --reverse, keys <= FROM and > TO, largest first. \
--json prints {\"pairs\": [{\"key\", \"value\"}, ...], \"total\": N}, one pair a line, keys and \
values escaped as in text (DESIGN.md 12.9)."
)]
#[command(
    mut_arg("from", |a| a.help("Start at key K, inclusive (with --reverse: keys <= K)")),
    mut_arg("to", |a| a.help("Stop before key K, exclusive (with --reverse: keys > K)"))
)]
pub struct ScanArgs {
    /// Database directory
    pub db: PathBuf,
    #[command(flatten)]
    pub bounds: KeyBoundsArgs,
    /// Print at most N pairs (with --count: count at most N)
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Descending key order
    #[arg(long)]
    pub reverse: bool,
    /// Print only the keys, one a line
    #[arg(long)]
    pub keys_only: bool,
    /// Print only how many pairs the scan covers
    #[arg(long, conflicts_with = "keys_only")]
    pub count: bool,
    /// Print JSON (schema in DESIGN.md, "kvctl JSON output")
    #[arg(long)]
    pub json: bool,
}

/// `--prefix`, `--from` and `--to`: the keys a command covers, as `scan`
/// and `delete-range` take them (escaped; `--from` inclusive, `--to`
/// exclusive).
#[derive(Debug, Args)]
pub struct KeyBoundsArgs {
    /// Only keys starting with P
    #[arg(long, value_name = "P", value_parser = escaped_arg)]
    pub prefix: Option<Bytes>,
    /// First key of the range, inclusive
    #[arg(long, value_name = "K", value_parser = escaped_arg)]
    pub from: Option<Bytes>,
    /// First key past the range, exclusive
    #[arg(long, value_name = "K", value_parser = escaped_arg)]
    pub to: Option<Bytes>,
}

impl KeyBoundsArgs {
    /// The keys in the bounds, in scan order ([`key_range`]), or a usage
    /// error naming `command` when they are inverted or empty
    /// ([`checked_key_range`]).
    pub fn checked_range(
        &self,
        command: &str,
        reverse: bool,
        writes: bool,
    ) -> Result<Option<KeyRange>, CliError> {
        checked_key_range(
            command,
            self.prefix.as_deref(),
            self.from.as_deref(),
            self.to.as_deref(),
            reverse,
            writes,
        )
    }
}

/// [`key_range`], or a usage error naming `command` when `--from` and
/// `--to` alone leave no key: inverted (in scan order) or equal. Bounds
/// that exclude each other (`--prefix b --from c`) are an error only with
/// `writes` (a command that would write nothing, whose message then says
/// so); a read gets `None`, an empty result, as a cursor past the prefix
/// does.
pub fn checked_key_range(
    command: &str,
    prefix: Option<&[u8]>,
    from: Option<&[u8]>,
    to: Option<&[u8]>,
    reverse: bool,
    writes: bool,
) -> Result<Option<KeyRange>, CliError> {
    let nothing = if writes { "; nothing was written" } else { "" };
    if let (Some(f), Some(t)) = (from, to) {
        if (!reverse && f > t) || (reverse && f < t) {
            let (order, note) = if reverse {
                ("before", " (with --reverse, --from is the largest key)")
            } else {
                ("after", "")
            };
            return Err(CliError::usage(format!(
                "{command}: --from sorts {order} --to, so the range is inverted{note}{nothing}"
            )));
        }
        if f == t {
            return Err(CliError::usage(format!(
                "{command}: the range holds no key (--from equals --to, which is \
                 exclusive){nothing}"
            )));
        }
    }
    match key_range(prefix, from, to, reverse) {
        None if writes => Err(CliError::usage(format!(
            "{command}: the range holds no key (--prefix and --from/--to do not \
             overlap){nothing}"
        ))),
        r => Ok(r),
    }
}

/// The larger of two lower bounds.
fn max_lower(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    use Bound::*;
    match (a, b) {
        (Unbounded, x) | (x, Unbounded) => x,
        (Included(x), Included(y)) => Included(x.max(y)),
        (Excluded(x), Excluded(y)) => Excluded(x.max(y)),
        (Included(i), Excluded(e)) | (Excluded(e), Included(i)) => {
            if i > e {
                Included(i)
            } else {
                Excluded(e)
            }
        }
    }
}

/// The smaller of two upper bounds.
fn min_upper(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    use Bound::*;
    match (a, b) {
        (Unbounded, x) | (x, Unbounded) => x,
        (Included(x), Included(y)) => Included(x.min(y)),
        (Excluded(x), Excluded(y)) => Excluded(x.min(y)),
        (Included(i), Excluded(e)) | (Excluded(e), Included(i)) => {
            if i < e {
                Included(i)
            } else {
                Excluded(e)
            }
        }
    }
}

/// The keys with `prefix` (if any), from `from` (inclusive) to `to`
/// (exclusive) in scan order: ascending unless `reverse`, where `from`
/// bounds from above (keys <= from) and `to` from below (keys > to).
/// `None` if no key can be in it.
pub fn key_range(
    prefix: Option<&[u8]>,
    from: Option<&[u8]>,
    to: Option<&[u8]>,
    reverse: bool,
) -> Option<KeyRange> {
    let (mut lo, mut hi) = match prefix {
        Some(p) => (
            Bound::Included(p.to_vec()),
            siftdb::inspect::key::prefix_successor(p).map_or(Bound::Unbounded, Bound::Excluded),
        ),
        None => (Bound::Unbounded, Bound::Unbounded),
    };
    let (start, end) = (from.map(<[u8]>::to_vec), to.map(<[u8]>::to_vec));
    if reverse {
        if let Some(s) = start {
            hi = min_upper(hi, Bound::Included(s));
        }
        if let Some(e) = end {
            lo = max_lower(lo, Bound::Excluded(e));
        }
    } else {
        if let Some(s) = start {
            lo = max_lower(lo, Bound::Included(s));
        }
        if let Some(e) = end {
            hi = min_upper(hi, Bound::Excluded(e));
        }
    }
    let empty = match (&lo, &hi) {
        (Bound::Included(l), Bound::Included(h)) => l > h,
        (Bound::Included(l), Bound::Excluded(h))
        | (Bound::Excluded(l), Bound::Included(h))
        | (Bound::Excluded(l), Bound::Excluded(h)) => l >= h,
        _ => false,
    };
    (!empty).then_some((lo, hi))
}

/// One pair (or key) as a JSON array element.
fn pair_json(k: &[u8], v: Option<&[u8]>) -> String {
    match v {
        Some(v) => json!({ "key": escape_bytes(k), "value": escape_bytes(v) }),
        None => json!({ "key": escape_bytes(k) }),
    }
    .to_string()
}

pub fn scan(args: &ScanArgs) -> Result<(), CliError> {
    let bounds = args.bounds.checked_range("scan", args.reverse, false)?;
    let db = open_read_only(&args.db)?;
    let ks = crate::keyspace::existing(&db)?;
    let iter: Box<dyn Iterator<Item = siftdb::Result<Pair>>> = match bounds {
        None => Box::new(std::iter::empty()),
        Some(b) if args.reverse => Box::new(ks.range(b).rev()),
        Some(b) => Box::new(ks.range(b)),
    };
    let iter = iter.take(args.limit.unwrap_or(usize::MAX));
    let mut out = BufWriter::new(io::stdout().lock());
    if args.count {
        let mut n = 0u64;
        for item in iter {
            item?;
            n += 1;
        }
        if args.json {
            writeln!(out, "{:#}", json!({ "total": n }))
        } else {
            writeln!(out, "{n}")
        }
        .map_err(write_failed)?;
    } else if args.json {
        // Streamed, one pair a line, so that a large scan needs no memory.
        out.write_all(b"{\n  \"pairs\": [").map_err(write_failed)?;
        let mut n = 0u64;
        for item in iter {
            let (k, v) = item?;
            let sep = if n == 0 { "\n    " } else { ",\n    " };
            let v = (!args.keys_only).then_some(&v[..]);
            write!(out, "{sep}{}", pair_json(&k, v)).map_err(write_failed)?;
            n += 1;
        }
        let close = if n == 0 { "]" } else { "\n  ]" };
        writeln!(out, "{close},\n  \"total\": {n}\n}}").map_err(write_failed)?;
    } else if args.keys_only {
        for item in iter {
            let (k, _) = item?;
            writeln!(out, "{}", escape_bytes(&k)).map_err(write_failed)?;
        }
    } else {
        write_pairs(iter, &mut out, &ProgressBar::hidden())?;
    }
    out.flush().map_err(write_failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(p: Option<&str>, from: Option<&str>, to: Option<&str>, rev: bool) -> Option<KeyRange> {
        key_range(
            p.map(str::as_bytes),
            from.map(str::as_bytes),
            to.map(str::as_bytes),
            rev,
        )
    }

    fn inc(s: &str) -> Bound<Vec<u8>> {
        Bound::Included(s.as_bytes().to_vec())
    }

    fn exc(s: &str) -> Bound<Vec<u8>> {
        Bound::Excluded(s.as_bytes().to_vec())
    }

    #[test]
    fn bounds_combine_prefix_and_from() {
        assert_eq!(
            range(Some("ab"), None, None, false),
            Some((inc("ab"), exc("ac")))
        );
        assert_eq!(
            range(Some("ab"), Some("abc"), None, false),
            Some((inc("abc"), exc("ac")))
        );
        assert_eq!(
            range(Some("ab"), Some("a"), None, false),
            Some((inc("ab"), exc("ac")))
        );
        assert_eq!(
            range(Some("ab"), Some("abc"), None, true),
            Some((inc("ab"), inc("abc")))
        );
        assert_eq!(
            range(Some("ab"), Some("b"), None, true),
            Some((inc("ab"), exc("ac")))
        );
        assert_eq!(range(Some("ab"), Some("b"), None, false), None);
        assert_eq!(range(Some("ab"), Some("aa"), None, true), None);
        assert_eq!(
            range(None, Some("m"), None, true),
            Some((Bound::Unbounded, inc("m")))
        );
    }

    #[test]
    fn to_ends_the_scan_in_its_direction() {
        assert_eq!(
            range(None, Some("b"), Some("d"), false),
            Some((inc("b"), exc("d")))
        );
        assert_eq!(range(None, Some("d"), Some("d"), false), None);
        assert_eq!(range(None, Some("e"), Some("d"), false), None);
        assert_eq!(
            range(None, Some("d"), Some("b"), true),
            Some((exc("b"), inc("d")))
        );
        assert_eq!(range(None, Some("b"), Some("b"), true), None);
        assert_eq!(range(None, Some("b"), Some("d"), true), None);
        // The tighter of the prefix's end and --to wins.
        assert_eq!(
            range(Some("ab"), None, Some("abc"), false),
            Some((inc("ab"), exc("abc")))
        );
        assert_eq!(
            range(Some("ab"), None, Some("b"), false),
            Some((inc("ab"), exc("ac")))
        );
        assert_eq!(
            range(Some("ab"), None, Some("ab"), true),
            Some((exc("ab"), exc("ac")))
        );
        assert_eq!(
            range(Some("ab"), None, Some("a"), true),
            Some((inc("ab"), exc("ac")))
        );
        assert_eq!(
            range(None, None, Some("m"), false),
            Some((Bound::Unbounded, exc("m")))
        );
    }
}
