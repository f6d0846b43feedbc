//! The text form of per-level filter settings, one grammar for `kvctl
//! --filters` and the stored `OPTIONS` file (DESIGN.md 12.13).
//!
//! A spec is one entry per level, level 0 first, separated by commas; the
//! last entry serves every deeper level ([`crate::Options::filters`]). An
//! entry is `none`, or a kind (`bloom`, `blocked-bloom`, `ribbon`) with a
//! size after a colon: bits per key (`10`, `9.5`) or a false-positive rate
//! in percent (`1%`, `0.1%`). Example: `blocked-bloom:10,ribbon:1%`. The
//! empty spec is the empty list.

use super::{FilterKind, LevelFilter};

/// Parses a spec (see the module docs).
///
/// # Errors
/// A message naming the entry that does not parse, or more than 7
/// entries (a tree has 7 levels).
pub fn parse_filters(spec: &str) -> Result<Vec<LevelFilter>, String> {
    if spec.is_empty() {
        return Ok(Vec::new());
    }
    let filters = spec
        .split(',')
        .map(|entry| parse_entry(entry.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    if filters.len() > crate::version::set::NUM_LEVELS {
        return Err(format!(
            "{} entries, but a tree has 7 levels",
            filters.len()
        ));
    }
    Ok(filters)
}

/// The spec of `filters`, which [`parse_filters`] reads back to the same
/// settings (sizes printed in Rust's shortest round-trip form).
pub fn format_filters(filters: &[LevelFilter]) -> String {
    let entry = |f: &LevelFilter| match f {
        LevelFilter::None => "none".to_string(),
        LevelFilter::BitsPerKey(k, b) => format!("{}:{b}", k.label()),
        LevelFilter::FalsePositiveRate(k, p) => format!("{}:{}%", k.label(), p * 100.0),
    };
    filters.iter().map(entry).collect::<Vec<_>>().join(",")
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
    fn specs_parse_to_per_level_filters_and_back() {
        let f = parse_filters("blocked-bloom:10, none,ribbon:1%").unwrap();
        assert_eq!(
            f,
            vec![
                LevelFilter::BitsPerKey(FilterKind::BlockedBloom, 10.0),
                LevelFilter::None,
                LevelFilter::FalsePositiveRate(FilterKind::Ribbon, 0.01),
            ]
        );
        assert_eq!(format_filters(&f), "blocked-bloom:10,none,ribbon:1%");
        assert_eq!(parse_filters(&format_filters(&f)).unwrap(), f);
        assert_eq!(
            parse_filters("bloom:9.5").unwrap(),
            vec![LevelFilter::BitsPerKey(FilterKind::Bloom, 9.5)]
        );
        assert_eq!(parse_filters("").unwrap(), vec![]);
        assert_eq!(format_filters(&[]), "");
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
