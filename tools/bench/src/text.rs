//! Plain-text tables and number formats shared by the harnesses' reports.

use std::io::{self, Write};

/// A number in 4 significant digits (fixed notation down to 0.0001).
pub(crate) fn sig(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if !v.is_finite() {
        return v.to_string();
    }
    let mag = v.abs().log10().floor() as i32;
    if !(-5..=5).contains(&mag) {
        return format!("{v:.3e}");
    }
    let decimals = (3 - mag).max(0) as usize;
    format!("{v:.decimals$}")
}

/// `m / t` to three decimals; `1.000` for `0 / 0` and `-` for `m / 0`.
pub(crate) fn ratio(m: f64, t: f64) -> String {
    if t == 0.0 {
        if m == 0.0 {
            "1.000".into()
        } else {
            "-".into()
        }
    } else {
        format!("{:.3}", m / t)
    }
}

/// `200000` as `200,000`.
pub(crate) fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Renders rows of cells with right-aligned columns separated by two
/// spaces, and `|` before the columns listed in `bars`. The first column
/// is left-aligned.
pub(crate) fn render(out: &mut dyn Write, rows: &[Vec<String>], bars: &[usize]) -> io::Result<()> {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c > 0 {
                line.push_str(if bars.contains(&c) { " | " } else { "  " });
            }
            let pad = widths[c] - cell.chars().count();
            if c == 0 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// The two header rows of a table: `groups` puts a label above the column
/// at each index (the first of the columns it spans), `columns` names every
/// column.
pub(crate) fn header(groups: &[(usize, String)], columns: &[&str]) -> Vec<Vec<String>> {
    let mut top = vec![String::new(); columns.len()];
    for (at, label) in groups {
        top[*at] = label.clone();
    }
    vec![top, columns.iter().map(|c| c.to_string()).collect()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits() {
        assert_eq!(sig(5.9), "5.900");
        assert_eq!(sig(0.6434), "0.6434");
        assert_eq!(sig(0.008194), "0.008194");
        assert_eq!(sig(32.0), "32.00");
        assert_eq!(sig(0.0), "0");
        assert_eq!(sig(3.1e-6), "3.100e-6");
        assert_eq!(ratio(0.0, 0.0), "1.000");
        assert_eq!(ratio(1.1, 1.0), "1.100");
        assert_eq!(ratio(1.0, 0.0), "-");
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(200_000), "200,000");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }

    #[test]
    fn table_columns_line_up() {
        let mut buf = Vec::new();
        render(
            &mut buf,
            &[
                vec!["a".into(), "1".into(), "22".into()],
                vec!["bbb".into(), "333".into(), "4".into()],
            ],
            &[2],
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "a      1 | 22\nbbb  333 |  4\n"
        );
        let h = header(&[(1, "group".into())], &["a", "b", "c"]);
        assert_eq!(h, [vec!["", "group", ""], vec!["a", "b", "c"]]);
    }
}
