//! `import` and `export`'s line format (DESIGN.md 12.11): a plain TSV is
//! imported raw, an export (header line, then escaped lines) is imported
//! back exactly.

use std::path::PathBuf;

mod common;

use common::{code, kvctl, kvctl_stdin, ok, p, stderr, stdout};

const DEBIAN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/data/debian-packages.tsv.gz"
);

/// The shipped Debian file's lines, decompressed.
fn debian_lines() -> Vec<Vec<u8>> {
    use std::io::Read;
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(DEBIAN).unwrap())
        .read_to_end(&mut text)
        .unwrap();
    text.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// Found by a new-user trial: the shipped Debian file, a plain TSV of
/// JSON values, stopped at line 48 (`\"` in a description) unless given
/// `--raw`. It now imports without a flag, every value byte for byte,
/// and an export of it imports back into the same pairs.
#[test]
fn the_debian_tsv_imports_raw_without_flags_and_round_trips_through_export() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let o = ok(kvctl(&["import", p(&db), DEBIAN]));
    assert!(
        stdout(&o).contains("imported 63,681 pairs"),
        "{}",
        stdout(&o)
    );
    let lines = debian_lines();
    assert_eq!(lines.len(), 63_681);
    let abe = &lines[47];
    assert!(abe.starts_with(b"abe\t"));
    assert!(abe.windows(2).any(|w| w == b"\\\""));
    let got = ok(kvctl(&["get", p(&db), "abe", "--raw"])).stdout;
    assert_eq!(got, &abe[4..]);

    // export | import: the same export again, hence the same pairs.
    let exported = ok(kvctl(&["export", p(&db)])).stdout;
    let copy = tmp.path().join("copy");
    ok(kvctl_stdin(&["import", p(&copy), "-", "-q"], &exported));
    assert_eq!(ok(kvctl(&["export", p(&copy)])).stdout, exported);
    assert_eq!(ok(kvctl(&["get", p(&copy), "abe", "--raw"])).stdout, got);
    // The export holds every line's pair, escaped.
    let body = exported
        .strip_prefix(b"#kvctl-export escaped v1\n".as_slice())
        .unwrap();
    assert_eq!(body.split(|&b| b == b'\n').count(), 63_681 + 1);
}

/// Keys and values with tabs, newlines, carriage returns, backslashes,
/// non-UTF-8 bytes, an empty key and an empty value survive export |
/// import exactly, gzipped or not.
#[test]
fn export_then_import_is_exact_for_any_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let pairs: &[(&str, &[u8])] = &[
        ("", b"empty key"),
        ("empty\\x00value", b""),
        ("tab\\tkey", b"a\tb"),
        ("nl\\nkey", b"line1\nline2\r\n"),
        ("back\\\\slash", b"{\"q\":\"\\\"\"}"),
        ("bin\\xff\\xfe", b"\xff\x00\x80\xc3"),
        (
            "#kvctl-export escaped v1",
            b"a key that looks like the header",
        ),
    ];
    for (k, v) in pairs {
        // The value travels as escapes on the command line.
        let escaped: String = v.iter().map(|b| format!("\\x{b:02x}")).collect();
        ok(kvctl(&["put", p(&db), k, &escaped]));
    }
    let exported = ok(kvctl(&["export", p(&db)])).stdout;
    for (name, file) in [("plain", "out.tsv"), ("gzip", "out.tsv.gz")] {
        let out = tmp.path().join(file);
        ok(kvctl(&["export", p(&db), p(&out), "-q"]));
        let copy = tmp.path().join(format!("copy-{name}"));
        ok(kvctl(&["import", p(&copy), p(&out), "-q"]));
        assert_eq!(ok(kvctl(&["export", p(&copy)])).stdout, exported, "{name}");
        for (k, v) in pairs {
            let got = ok(kvctl(&["get", p(&copy), k, "--raw"])).stdout;
            assert_eq!(&got, v, "{name}: {k}");
        }
    }
}

/// The exact bytes of an export (DESIGN.md 12.11).
#[test]
fn export_golden_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    ok(kvctl(&["put", p(&db), "k\\t1", "v\\\\\\xff\\n"]));
    ok(kvctl(&["put", p(&db), "k2", "caf\u{e9}"]));
    assert_eq!(
        ok(kvctl(&["export", p(&db)])).stdout,
        b"#kvctl-export escaped v1\nk\\x091\tv\\\\\\xff\\x0a\nk2\tcaf\xc3\xa9\n"
    );
}

/// `--escaped` reads header-less escaped lines (what `scan` prints);
/// `--raw` refuses an export, whose escapes it would keep as bytes.
#[test]
fn escaped_and_raw_flags_override_the_header_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let db: PathBuf = tmp.path().join("db");
    ok(kvctl(&["put", p(&db), "k", "a\\tb"]));
    let scanned = ok(kvctl(&["scan", p(&db)])).stdout;
    assert_eq!(scanned, b"k\ta\\x09b\n");
    let copy = tmp.path().join("copy");
    ok(kvctl_stdin(
        &["import", p(&copy), "-", "--escaped", "-q"],
        &scanned,
    ));
    assert_eq!(ok(kvctl(&["get", p(&copy), "k", "--raw"])).stdout, b"a\tb");
    // Without --escaped the same line is raw: the escape stays as text.
    let raw = tmp.path().join("raw");
    ok(kvctl_stdin(&["import", p(&raw), "-", "-q"], &scanned));
    assert_eq!(
        ok(kvctl(&["get", p(&raw), "k", "--raw"])).stdout,
        b"a\\x09b"
    );

    let exported = ok(kvctl(&["export", p(&db)])).stdout;
    let o = kvctl_stdin(
        &["import", p(&tmp.path().join("r2")), "-", "--raw"],
        &exported,
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "<stdin>:1: the input starts with export's header `#kvctl-export escaped v1`"
        ),
        "{}",
        stderr(&o)
    );
    assert!(!tmp.path().join("r2").exists());
    // The header only counts as the first line.
    let later = b"a\t1\n#kvctl-export escaped v1\n";
    let o = kvctl_stdin(&["import", p(&tmp.path().join("r3")), "-"], later);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("<stdin>:2: no tab"), "{}", stderr(&o));
}
