//! `--filters SPEC`: per-level filter policies on the command line, in the
//! grammar of [`siftdb::filter::spec`] (the one the stored `OPTIONS` file
//! uses): one entry per level, level 0 first, separated by commas, the last
//! serving every deeper level; an entry is `none` or `KIND:BITS` or
//! `KIND:RATE%` with KIND one of `bloom`, `blocked-bloom`, `ribbon`.
//! Example: `blocked-bloom:10,ribbon:1%`.

use siftdb::filter::LevelFilter;

/// A parsed spec. A newtype, not `Vec`: clap's derive reads a literal
/// `Vec` as "many values".
#[derive(Debug, Clone, PartialEq)]
pub struct FilterSpec(pub Vec<LevelFilter>);

/// Parses a spec for clap.
///
/// # Errors
/// As [`siftdb::filter::spec::parse_filters`]; an empty spec too (give no
/// `--filters` for the default).
pub fn parse_spec(spec: &str) -> Result<FilterSpec, String> {
    if spec.trim().is_empty() {
        return Err("an empty filter spec: give at least one entry (e.g. bloom:10)".into());
    }
    siftdb::filter::spec::parse_filters(spec).map(FilterSpec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use siftdb::filter::FilterKind;

    #[test]
    fn specs_parse_with_the_engines_grammar() {
        assert_eq!(
            parse_spec("blocked-bloom:10, none").unwrap().0,
            vec![
                LevelFilter::BitsPerKey(FilterKind::BlockedBloom, 10.0),
                LevelFilter::None
            ]
        );
        assert!(parse_spec("").is_err());
        assert!(parse_spec("cuckoo:1").unwrap_err().contains("unknown kind"));
    }
}
