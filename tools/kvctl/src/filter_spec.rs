//! `--filters SPEC`: per-level filter policies on the command line.
//!
//! A spec is one entry per level, level 0 first, separated by commas; the
//! last entry serves every deeper level (`Options::filters`). An entry is
//! `none`, or a kind (`bloom`, `blocked-bloom`, `ribbon`) with a size after
//! a colon: bits per key (`10`, `9.5`) or a false-positive rate in percent
//! (`1%`, `0.1%`). Example: `blocked-bloom:10,ribbon:1%`.

use siftdb::filter::{FilterKind, LevelFilter};

/// A parsed spec. A newtype, not `Vec`: clap's derive reads a literal
/// `Vec` as "many values".
#[derive(Debug, Clone, PartialEq)]
pub struct FilterSpec(pub Vec<LevelFilter>);

/// Parses a spec (see the module docs) for clap.
///
/// # Errors
/// As [`parse_filters`].
pub fn parse_spec(spec: &str) -> Result<FilterSpec, String> {
    parse_filters(spec).map(FilterSpec)
}

/// Parses a spec (see the module docs).
///
/// # Errors
/// A message naming the entry that does not parse.
pub fn parse_filters(spec: &str) -> Result<Vec<LevelFilter>, String> {
    let filters = spec
        .split(',')
        .map(|entry| parse_entry(entry.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    if filters.len() > 7 {
        return Err(format!(
            "{} entries, but a tree has 7 levels",
            filters.len()
        ));
    }
    Ok(filters)
}

fn parse_entry(entry: &str) -> Result<LevelFilter, String> {
    if entry == "none" {
        return Ok(LevelFilter::None);
    }
    let expected = "expected none or KIND:BITS or KIND:RATE% with KIND one of bloom, \
                    blocked-bloom, ribbon (e.g. blocked-bloom:10 or ribbon:1%)";
    let Some((kind, size)) = entry.split_once(':') else {
        return Err(format!("{entry:?}: {expected}"));
    };
    let kind = FilterKind::ALL
        .into_iter()
        .find(|k| k.label() == kind)
        .ok_or_else(|| format!("{entry:?}: unknown kind {kind:?}; {expected}"))?;
    let filter = match size.strip_suffix('%') {
        Some(pct) => {
            let p: f64 = pct
                .parse()
                .map_err(|_| format!("{entry:?}: {pct:?} is not a percentage"))?;
            LevelFilter::FalsePositiveRate(kind, p / 100.0)
        }
        None => {
            let b: f64 = size
                .parse()
                .map_err(|_| format!("{entry:?}: {size:?} is not a number of bits per key"))?;
            LevelFilter::BitsPerKey(kind, b)
        }
    };
    filter.validate().map(|()| filter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_to_per_level_filters() {
        assert_eq!(
            parse_filters("blocked-bloom:10, none,ribbon:1%").unwrap(),
            vec![
                LevelFilter::BitsPerKey(FilterKind::BlockedBloom, 10.0),
                LevelFilter::None,
                LevelFilter::FalsePositiveRate(FilterKind::Ribbon, 0.01),
            ]
        );
        assert_eq!(
            parse_filters("bloom:9.5").unwrap(),
            vec![LevelFilter::BitsPerKey(FilterKind::Bloom, 9.5)]
        );
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let e = |s| parse_filters(s).unwrap_err();
        assert!(
            e("cuckoo:10").contains("unknown kind \"cuckoo\""),
            "{}",
            e("cuckoo:10")
        );
        assert!(e("bloom").contains("expected none or KIND:BITS"));
        assert!(e("ribbon:x%").contains("\"x\" is not a percentage"));
        assert!(e("bloom:ten").contains("not a number of bits per key"));
        assert_eq!(
            e("bloom:0"),
            "bloom filter: bits per key must be above 0 and at most 64, not 0"
        );
        assert!(e("ribbon:100%").contains("below 1"));
        assert!(e("none,none,none,none,none,none,none,none").contains("7 levels"));
    }
}
