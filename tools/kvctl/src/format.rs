//! Presentation helpers shared by every subcommand: escaped keys, grouped
//! numbers, human sizes and aligned text tables.

/// A key or value argument. An alias rather than `Vec<u8>`, so that clap
/// takes it as one value instead of a list of bytes.
pub type Bytes = Vec<u8>;

pub use siftdb::inspect::log::TORN_WRITE;

/// Parses a key or value given on the command line or in an import file.
/// Arguments use the same escapes kvctl prints (`\\`, `\xNN`, plus `\t`,
/// `\n`, `\r`, `\0`), so any byte string can be typed. Used as a clap
/// `value_parser`, so a bad escape is a usage error (exit 2); the message
/// says how to write a literal backslash.
pub fn escaped_arg(s: &str) -> Result<Vec<u8>, String> {
    siftdb::inspect::escape::unescape(s)
}

/// Parses a byte count: a plain number, or one with a `K`/`M`/`G` suffix
/// (powers of 1024; `KiB`, `KB` and `k` are accepted too).
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    if suffix.starts_with(['.', ',']) {
        return Err(format!(
            "`{s}` is not a whole number; give it in a smaller unit (e.g. 1536K, not 1.5M)"
        ));
    }
    let n: usize = digits
        .parse()
        .map_err(|_| format!("`{s}` is not a size (examples: 4096, 512K, 64M)"))?;
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(format!("`{s}` has an unknown unit (use K, M or G)")),
    };
    n.checked_mul(1usize << shift)
        .ok_or_else(|| format!("`{s}` is too large"))
}

/// `1234567` as `1,234,567`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Unix seconds as a UTC ISO-8601 time, `2026-12-03T10:50:19Z` (the
/// proleptic Gregorian calendar; leap seconds, as Unix time, not counted).
pub fn utc_iso8601(unix_secs: u64) -> String {
    let (days, secs) = (unix_secs / 86_400, unix_secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// The date (year, month 1..=12, day 1..=31) `days` after 1970-01-01, by
/// Howard Hinnant's `civil_from_days`: count in 400-year eras of 146,097
/// days, with years starting on 1 March so that a leap day ends its year.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468; // days since 0000-03-01
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era, 0..=146_096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // 0..=399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of year from 1 March
    let mp = (5 * doy + 2) / 153; // month from March, 0..=11
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `1 SSTable`, `3 SSTables`, with the count grouped.
pub fn count(n: u64, noun: &str) -> String {
    format!("{} {noun}{}", group(n), if n == 1 { "" } else { "s" })
}

/// A byte count in binary units: `512 B`, `12.3 KiB`, `4.0 MiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if n.is_multiple_of(1u64 << (10 * (unit + 1))) {
        format!("{v:.0} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// `a / b`, or 0 when `b` is 0.
pub fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Column alignment in a [`Table`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A plain-text table: one header row, columns padded to their widest cell,
/// separated by two spaces.
#[derive(Debug, Clone)]
pub struct Table {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these `(header, alignment)` columns.
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table {
            headers: columns.iter().map(|(h, _)| h.to_string()).collect(),
            align: columns.iter().map(|(_, a)| *a).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row; missing cells are blank, extra cells are dropped.
    pub fn row(&mut self, cells: Vec<String>) {
        let mut cells = cells;
        cells.resize(self.headers.len(), String::new());
        self.rows.push(cells);
    }

    /// The table as lines, each prefixed by `indent` and ending in `\n`.
    pub fn render(&self, indent: &str) -> String {
        let width = |i: usize| {
            std::iter::once(&self.headers[i])
                .chain(self.rows.iter().map(|r| &r[i]))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..self.headers.len()).map(width).collect();
        let mut out = String::new();
        for row in std::iter::once(&self.headers).chain(self.rows.iter()) {
            let mut line = String::from(indent);
            for (i, cell) in row.iter().enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                let pad = widths[i] - cell.chars().count();
                match self.align[i] {
                    Align::Left => {
                        line.push_str(cell);
                        line.extend(std::iter::repeat_n(' ', pad));
                    }
                    Align::Right => {
                        line.extend(std::iter::repeat_n(' ', pad));
                        line.push_str(cell);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn unix_seconds_print_as_utc_iso8601() {
        assert_eq!(super::utc_iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::utc_iso8601(951_782_400), "2000-02-29T00:00:00Z"); // leap day
        assert_eq!(super::utc_iso8601(1_709_251_199), "2024-02-29T23:59:59Z"); // leap day
        assert_eq!(super::utc_iso8601(1_709_251_200), "2024-03-01T00:00:00Z");
        assert_eq!(super::utc_iso8601(4_107_542_399), "2100-02-28T23:59:59Z");
        assert_eq!(super::utc_iso8601(4_107_542_400), "2100-03-01T00:00:00Z"); // no leap day
        assert_eq!(super::utc_iso8601(1_796_295_019), "2026-12-03T10:50:19Z");
        assert_eq!(super::utc_iso8601(1_800_000_000), "2027-01-15T08:00:00Z");
    }

    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("512K"), Ok(512 << 10));
        assert_eq!(parse_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_size("64m"), Ok(64 << 20));
        assert!(parse_size("").is_err());
        assert!(parse_size("12X").is_err());
        assert!(parse_size("K").is_err());
        // Found by a new-user trial: a decimal was "an unknown unit".
        assert_eq!(
            parse_size("1.5M"),
            Err(
                "`1.5M` is not a whole number; give it in a smaller unit (e.g. 1536K, not 1.5M)"
                    .into()
            )
        );
    }

    #[test]
    fn numbers_and_bytes() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(63_681), "63,681");
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(5 << 20), "5 MiB");
        assert_eq!(human_bytes(512 << 10), "512 KiB");
        assert_eq!(human_bytes((5 << 20) + 1), "5.0 MiB");
        assert_eq!(ratio(1, 0), 0.0);
        assert_eq!(count(1, "SSTable"), "1 SSTable");
        assert_eq!(count(1200, "key"), "1,200 keys");
    }

    #[test]
    fn table_aligns() {
        let mut t = Table::new(&[("name", Align::Left), ("n", Align::Right)]);
        t.row(vec!["a".into(), "100".into()]);
        t.row(vec!["long".into(), "2".into()]);
        assert_eq!(t.render(""), "name    n\na     100\nlong    2\n");
    }

    #[test]
    fn escaped_args() {
        assert_eq!(escaped_arg("a\\tb\\x00").unwrap(), b"a\tb\0");
        assert!(escaped_arg("a\\q").is_err());
    }
}
