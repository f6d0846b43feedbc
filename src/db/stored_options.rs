//! The `OPTIONS` file: the options that shape a database's files, stored
//! beside them so that a reopen (and kvctl) keeps the layout the database
//! was built with (DESIGN.md 12.13).
//!
//! Text, one setting per line, `NAME VALUE`, names in the order of
//! [`encode`]; the first line is `siftdb-options 1` and the last is
//! `crc32 XXXXXXXX`, the CRC-32 (IEEE, as `crc32fast`) of every byte
//! before that line, in lowercase hex. Options of one process's handle
//! (`sync`, `create_if_missing`, `error_if_exists`, `table_reads`,
//! `hot_keys`, the file system) are not stored. A name this build does
//! not know is ignored (a newer build may add settings); a known name with
//! a bad value, a bad checksum or a missing header is corruption.

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::filename;
use crate::filter::spec::{format_filters, parse_filters};
use crate::filter::FilterBudget;
use crate::fs::FileSystem;
use crate::options::{CompactionPriority, CompactionStyle, Options};

const HEADER: &str = "siftdb-options 1";

/// Why a stored prefix extractor that is not built in fails an open that
/// does not pass it.
const UNRESTORABLE: &str = "the database was built with this prefix extractor, which is not \
built in, so it cannot be restored from its name: pass it (Db::builder(..).prefix_extractor(..) \
or Options::prefix_extractor), or open with Db::open_with to build new tables without it";

/// The stored settings, as `(name, value)` lines in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredOptions(Vec<(String, String)>);

/// The `(name, value)` lines `o` is stored as.
fn lines(o: &Options) -> Vec<(&'static str, String)> {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "none".to_string());
    vec![
        ("bits_per_key", o.bits_per_key.to_string()),
        (
            "block_restart_interval",
            o.block_restart_interval.to_string(),
        ),
        ("block_size", o.block_size.to_string()),
        ("bloom_hashes", opt(o.bloom_hashes.map(|k| k.to_string()))),
        (
            "compaction_priority",
            match o.compaction_priority {
                CompactionPriority::RoundRobin => "round-robin",
                CompactionPriority::MostDuplicates => "most-duplicates",
            }
            .to_string(),
        ),
        (
            "compaction_style",
            match o.compaction_style {
                CompactionStyle::Leveled => "leveled",
                CompactionStyle::Tiered => "tiered",
                CompactionStyle::None => "none",
            }
            .to_string(),
        ),
        ("compression", o.compression.to_string()),
        (
            "filter_budget",
            opt(o.filter_budget.as_ref().map(|b| match b.max_bytes {
                Some(cap) => format!("{} {cap}", b.bits_per_key),
                None => b.bits_per_key.to_string(),
            })),
        ),
        (
            "filters",
            if o.filters.is_empty() {
                "default".to_string()
            } else {
                format_filters(&o.filters)
            },
        ),
        (
            "key_sketch_precision",
            opt(o.key_sketch_precision.map(|p| p.to_string())),
        ),
        (
            "level0_compaction_trigger",
            o.level0_compaction_trigger.to_string(),
        ),
        (
            "level0_slowdown_trigger",
            o.level0_slowdown_trigger.to_string(),
        ),
        ("level0_stop_trigger", o.level0_stop_trigger.to_string()),
        ("level_size_multiplier", o.level_size_multiplier.to_string()),
        (
            "max_bytes_for_level_base",
            o.max_bytes_for_level_base.to_string(),
        ),
        (
            "max_immutable_memtables",
            o.max_immutable_memtables.to_string(),
        ),
        (
            "max_manifest_file_size",
            o.max_manifest_file_size.to_string(),
        ),
        (
            "prefix_extractor",
            opt(o.prefix_extractor.as_ref().map(|e| e.name().to_string())),
        ),
        (
            "skip_filters_on_last_level",
            o.skip_filters_on_last_level.to_string(),
        ),
        ("target_file_size", o.target_file_size.to_string()),
        ("write_buffer_size", o.write_buffer_size.to_string()),
    ]
}

/// The settings of `o` a keyspace other than the default stores in the
/// manifest (tags 13 and 15, DESIGN.md 12.8): the `NAME VALUE` lines of
/// `OPTIONS` for the settings that are per keyspace (every stored one but
/// `max_manifest_file_size`), in the same order, with no header or
/// checksum (the manifest record carries one).
pub(crate) fn keyspace_text(o: &Options) -> String {
    lines(o)
        .into_iter()
        .filter(|(name, _)| *name != "max_manifest_file_size")
        .map(|(name, value)| format!("{name} {value}\n"))
        .collect()
}

/// The options a keyspace other than the default runs with: `db` (the
/// database's options) with each setting of its stored text `text` (tag 13
/// or 15, [`keyspace_text`]) over them, checked.
///
/// # Errors
/// [`Error::Corruption`] naming `manifest` for a line that is not `NAME
/// VALUE` or a value that does not parse (a custom prefix extractor
/// included: keyspaces store only built-in ones); as [`Options::validate`]
/// for a setting this build cannot run with (zstd without the feature).
pub(crate) fn keyspace_options(db: &Options, text: &str, manifest: &Path) -> Result<Options> {
    let stored = parse_keyspace_text(text)
        .map_err(|why| Error::corruption(manifest, 0, format!("keyspace options: {why}")))?;
    let mut o = db.clone();
    for (name, value) in &stored.0 {
        set(&mut o, name, value).map_err(|why| {
            let why = if why == UNRESTORABLE {
                // Keyspaces other than the default store only built-in
                // extractors, so the caller has no way to pass it.
                "a prefix extractor that is not built in, which no keyspace but the default \
                 can be reopened with"
                    .to_string()
            } else {
                why
            };
            Error::corruption(
                manifest,
                0,
                format!("keyspace options: setting {name} {value:?}: {why}"),
            )
        })?;
    }
    o.validate()?;
    Ok(o)
}

/// The `NAME VALUE` lines of a keyspace's stored options text.
fn parse_keyspace_text(text: &str) -> std::result::Result<StoredOptions, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let (name, value) = line
            .split_once(' ')
            .ok_or_else(|| format!("line {line:?} is not `NAME VALUE`"))?;
        if out.iter().any(|(n, _)| n == name) {
            return Err(format!("{name} is set twice"));
        }
        out.push((name.to_string(), value.to_string()));
    }
    Ok(StoredOptions(out))
}

/// One line per setting of the keyspace text `stored` that `now` (the
/// options a keyspace is to run with) sets otherwise, as
/// [`StoredOptions::differences`] words them: `"block_size: 4096 stored,
/// 16384 used"`. A text that does not parse differs in every setting.
pub(crate) fn keyspace_differences(stored: &str, now: &Options) -> Vec<String> {
    match parse_keyspace_text(stored) {
        Ok(s) => s.differences(now),
        Err(why) => vec![format!("stored options unreadable ({why})")],
    }
}

/// Whether `e` can be stored by name and rebuilt from it: a built-in
/// prefix extractor ([`crate::filter::prefix::builtin_extractor`]).
pub(crate) fn restorable(e: &dyn crate::filter::PrefixExtractor) -> bool {
    crate::filter::prefix::builtin_extractor(e.name()).is_some()
}

/// The file's bytes for options `o`.
pub(crate) fn encode(o: &Options) -> Vec<u8> {
    let mut text = format!("{HEADER}\n");
    for (name, value) in lines(o) {
        text.push_str(&format!("{name} {value}\n"));
    }
    let crc = crc32fast::hash(text.as_bytes());
    text.push_str(&format!("crc32 {crc:08x}\n"));
    text.into_bytes()
}

impl StoredOptions {
    /// Decodes the file's bytes, read from `path` (for errors).
    ///
    /// # Errors
    /// [`Error::Corruption`] for a missing header, a line that is not
    /// `NAME VALUE`, or a bad or missing checksum;
    /// [`Error::UnsupportedVersion`] for a newer header.
    pub(crate) fn decode(bytes: &[u8], path: &Path) -> Result<StoredOptions> {
        let corrupt = |offset: usize, d: String| Error::corruption(path, offset as u64, d);
        let text =
            std::str::from_utf8(bytes).map_err(|e| corrupt(e.valid_up_to(), "not UTF-8".into()))?;
        let Some(body_end) = text.trim_end_matches('\n').rfind('\n').map(|i| i + 1) else {
            return Err(corrupt(0, "no checksum line".into()));
        };
        let (body, last) = text.split_at(body_end);
        let want = last
            .strip_prefix("crc32 ")
            .and_then(|h| h.strip_suffix('\n'))
            .filter(|h| h.len() == 8 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| corrupt(body_end, "the last line is not `crc32 XXXXXXXX`".into()))?;
        let got = crc32fast::hash(body.as_bytes());
        if got != want {
            return Err(corrupt(
                body_end,
                format!("checksum mismatch: stored {want:08x}, computed {got:08x}"),
            ));
        }
        let mut it = body.lines();
        match it.next() {
            Some(HEADER) => {}
            Some(h) if h.starts_with("siftdb-options ") => {
                let found = h["siftdb-options ".len()..].parse().unwrap_or(u32::MAX);
                return Err(Error::UnsupportedVersion {
                    file: path.to_path_buf(),
                    found,
                    supported: 1,
                });
            }
            _ => return Err(corrupt(0, format!("the first line is not `{HEADER}`"))),
        }
        let mut out: Vec<(String, String)> = Vec::new();
        let mut offset = HEADER.len() + 1;
        for line in it {
            let (name, value) = line
                .split_once(' ')
                .ok_or_else(|| corrupt(offset, format!("line {line:?} is not `NAME VALUE`")))?;
            if out.iter().any(|(n, _)| n == name) {
                return Err(corrupt(offset, format!("{name} is set twice")));
            }
            out.push((name.to_string(), value.to_string()));
            offset += line.len() + 1;
        }
        Ok(StoredOptions(out))
    }

    /// Sets the fields of `o` the file stores, except those named in
    /// `skip` (the caller sets them; names this build does not know are
    /// skipped too).
    ///
    /// # Errors
    /// [`Error::Corruption`] (naming `path`) for a value that does not
    /// parse; [`Error::InvalidArgument`] for a stored prefix extractor
    /// that is not built in (it cannot be rebuilt from its name, and a
    /// silent drop would build new tables without its prefix filters).
    pub(crate) fn apply(&self, o: &mut Options, path: &Path, skip: &[&str]) -> Result<()> {
        for (name, value) in self.0.iter().filter(|(n, _)| !skip.contains(&n.as_str())) {
            set(o, name, value).map_err(|why| {
                if why == UNRESTORABLE {
                    Error::InvalidArgument(format!(
                        "{}: prefix extractor {value}: {why}",
                        path.display()
                    ))
                } else {
                    Error::corruption(path, 0, format!("setting {name} {value:?}: {why}"))
                }
            })?;
        }
        Ok(())
    }

    /// The stored `(name, value)` lines, in file order.
    pub(crate) fn settings(&self) -> &[(String, String)] {
        &self.0
    }

    /// One line per stored setting that `o` sets otherwise:
    /// `"bits_per_key: 12 stored, 10 used"`.
    pub(crate) fn differences(&self, o: &Options) -> Vec<String> {
        let used = lines(o);
        self.0
            .iter()
            .filter_map(|(name, stored)| {
                let (_, now) = used.iter().find(|(n, _)| n == name)?;
                (now != stored).then(|| format!("{name}: {stored} stored, {now} used"))
            })
            .collect()
    }
}

fn num<T: std::str::FromStr>(v: &str) -> std::result::Result<T, String> {
    v.parse().map_err(|_| "not a number".to_string())
}

fn opt_num<T: std::str::FromStr>(v: &str) -> std::result::Result<Option<T>, String> {
    if v == "none" {
        Ok(None)
    } else {
        num(v).map(Some)
    }
}

/// Sets field `name` of `o` from its stored text.
fn set(o: &mut Options, name: &str, v: &str) -> std::result::Result<(), String> {
    match name {
        "bits_per_key" => o.bits_per_key = num(v)?,
        "block_restart_interval" => o.block_restart_interval = num(v)?,
        "block_size" => o.block_size = num(v)?,
        "bloom_hashes" => o.bloom_hashes = opt_num(v)?,
        "compaction_priority" => {
            o.compaction_priority = match v {
                "round-robin" => CompactionPriority::RoundRobin,
                "most-duplicates" => CompactionPriority::MostDuplicates,
                _ => return Err("unknown priority".into()),
            }
        }
        "compaction_style" => {
            o.compaction_style = match v {
                "leveled" => CompactionStyle::Leveled,
                "tiered" => CompactionStyle::Tiered,
                "none" => CompactionStyle::None,
                _ => return Err("unknown style".into()),
            }
        }
        "compression" => o.compression = v.parse()?,
        "filter_budget" => {
            o.filter_budget = match v {
                "none" => None,
                v => {
                    let mut parts = v.split(' ');
                    let bits = num(parts.next().unwrap_or(""))?;
                    let max_bytes = parts.next().map(num).transpose()?;
                    Some(FilterBudget {
                        bits_per_key: bits,
                        max_bytes,
                    })
                }
            }
        }
        "filters" => {
            o.filters = match v {
                "default" => Vec::new(),
                v => parse_filters(v)?,
            }
        }
        "key_sketch_precision" => o.key_sketch_precision = opt_num(v)?,
        "level0_compaction_trigger" => o.level0_compaction_trigger = num(v)?,
        "level0_slowdown_trigger" => o.level0_slowdown_trigger = num(v)?,
        "level0_stop_trigger" => o.level0_stop_trigger = num(v)?,
        "level_size_multiplier" => o.level_size_multiplier = num(v)?,
        "max_bytes_for_level_base" => o.max_bytes_for_level_base = num(v)?,
        "max_immutable_memtables" => o.max_immutable_memtables = num(v)?,
        "max_manifest_file_size" => o.max_manifest_file_size = num(v)?,
        "prefix_extractor" => {
            if v == "none" {
                o.prefix_extractor = None;
            } else if let Some(e) = crate::filter::prefix::builtin_extractor(v) {
                o.prefix_extractor = Some(Arc::new(e));
            } else {
                // A custom extractor cannot be rebuilt from its name; the
                // caller must pass it (`Db::builder`, which then skips it).
                return Err(UNRESTORABLE.to_string());
            }
        }
        "skip_filters_on_last_level" => o.skip_filters_on_last_level = num(v)?,
        "target_file_size" => o.target_file_size = num(v)?,
        "write_buffer_size" => o.write_buffer_size = num(v)?,
        _ => {} // A setting of a newer build.
    }
    Ok(())
}

/// Reads `dir/OPTIONS`: `Ok(None)` if there is none (a database created
/// before the file existed, or not yet opened for writing).
///
/// # Errors
/// As [`StoredOptions::decode`]; [`Error::Io`] if it exists but cannot be
/// read.
pub(crate) fn read(dir: &Path) -> Result<Option<(Vec<u8>, StoredOptions)>> {
    let path = filename::options_path(dir);
    match crate::util::file::read_regular(&path) {
        Ok(bytes) => StoredOptions::decode(&bytes, &path).map(|s| Some((bytes, s))),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(Error::io(format!("read {}", path.display()), e)),
    }
}

/// `defaults` with the stored options of `dir` applied, except the fields
/// named in `skip` (unchanged when it has none).
///
/// # Errors
/// As [`read`] and [`StoredOptions::apply`].
pub(crate) fn with_stored(dir: &Path, mut defaults: Options, skip: &[&str]) -> Result<Options> {
    if let Some((_, s)) = read(dir)? {
        s.apply(&mut defaults, &filename::options_path(dir), skip)?;
    }
    Ok(defaults)
}

/// Writes `dir/OPTIONS` for `o` through a temporary file numbered
/// `temp_number`, synced, renamed into place, and the directory synced.
///
/// # Errors
/// [`Error::Io`] if a step fails (the temporary file is removed).
pub(crate) fn write(fs: &dyn FileSystem, dir: &Path, temp_number: u64, o: &Options) -> Result<()> {
    crate::util::file::write_replacing(
        fs,
        dir,
        temp_number,
        &filename::options_path(dir),
        &encode(o),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::{FilterKind, FixedPrefix, LevelFilter};

    fn decode(b: &[u8]) -> Result<StoredOptions> {
        StoredOptions::decode(b, Path::new("OPTIONS"))
    }

    #[test]
    fn golden_bytes_of_the_defaults() {
        let text = String::from_utf8(encode(&Options::default())).unwrap();
        let want_body = "siftdb-options 1\n\
bits_per_key 10\n\
block_restart_interval 16\n\
block_size 4096\n\
bloom_hashes none\n\
compaction_priority round-robin\n\
compaction_style leveled\n\
compression none\n\
filter_budget none\n\
filters default\n\
key_sketch_precision 12\n\
level0_compaction_trigger 4\n\
level0_slowdown_trigger 20\n\
level0_stop_trigger 36\n\
level_size_multiplier 10\n\
max_bytes_for_level_base 268435456\n\
max_immutable_memtables 2\n\
max_manifest_file_size 4194304\n\
prefix_extractor none\n\
skip_filters_on_last_level false\n\
target_file_size 67108864\n\
write_buffer_size 67108864\n";
        assert_eq!(
            text,
            format!(
                "{want_body}crc32 {:08x}\n",
                crc32fast::hash(want_body.as_bytes())
            )
        );
    }

    #[test]
    fn every_stored_setting_round_trips() {
        let o = Options {
            bits_per_key: 12,
            bloom_hashes: Some(5),
            filters: vec![
                LevelFilter::BitsPerKey(FilterKind::BlockedBloom, 9.5),
                LevelFilter::FalsePositiveRate(FilterKind::Ribbon, 0.01),
            ],
            filter_budget: Some(FilterBudget {
                bits_per_key: 7.25,
                max_bytes: Some(1 << 20),
            }),
            prefix_extractor: Some(Arc::new(FixedPrefix::new(4))),
            key_sketch_precision: None,
            compaction_style: CompactionStyle::Tiered,
            compaction_priority: CompactionPriority::MostDuplicates,
            compression: "none,none,lz4".parse().unwrap(),
            target_file_size: 2 << 20,
            skip_filters_on_last_level: true,
            ..Default::default()
        };
        let stored = decode(&encode(&o)).unwrap();
        let mut back = Options::default();
        stored.apply(&mut back, Path::new("OPTIONS"), &[]).unwrap();
        assert_eq!(encode(&back), encode(&o));
        assert!(stored.differences(&back).is_empty());
        let d = stored.differences(&Options::default());
        assert!(
            d.contains(&"bits_per_key: 12 stored, 10 used".to_string()),
            "{d:?}"
        );
        assert!(
            d.contains(&"compression: none,none,lz4 stored, none used".to_string()),
            "{d:?}"
        );
        assert_eq!(d.len(), 11, "{d:?}");
    }

    /// The options text of a keyspace with LZ4, 16 KiB blocks and Ribbon
    /// filters (manifest tags 13 and 15, DESIGN.md 12.8): `OPTIONS`'s
    /// lines but `max_manifest_file_size`, no header, no checksum.
    #[test]
    fn golden_keyspace_options_text() {
        let ks = crate::KeyspaceOptions::default()
            .compression("lz4".parse().unwrap())
            .block_size(16 << 10)
            .filters(vec![LevelFilter::BitsPerKey(FilterKind::Ribbon, 10.0)]);
        let text = keyspace_text(&ks.over(&Options::default()));
        assert_eq!(
            text,
            "bits_per_key 10\n\
block_restart_interval 16\n\
block_size 16384\n\
bloom_hashes none\n\
compaction_priority round-robin\n\
compaction_style leveled\n\
compression lz4\n\
filter_budget none\n\
filters ribbon:10\n\
key_sketch_precision 12\n\
level0_compaction_trigger 4\n\
level0_slowdown_trigger 20\n\
level0_stop_trigger 36\n\
level_size_multiplier 10\n\
max_bytes_for_level_base 268435456\n\
max_immutable_memtables 2\n\
prefix_extractor none\n\
skip_filters_on_last_level false\n\
target_file_size 67108864\n\
write_buffer_size 67108864\n"
        );
        let back = keyspace_options(&Options::default(), &text, Path::new("M")).unwrap();
        assert_eq!(keyspace_text(&back), text);
        assert_eq!(
            keyspace_differences(&text, &Options::default()),
            [
                "block_size: 16384 stored, 4096 used",
                "compression: lz4 stored, none used",
                "filters: ribbon:10 stored, default used",
            ]
        );
    }

    /// `KeyspaceOptions` carries every setting a keyspace stores, and none
    /// of the database's: its `over` and `keyspace_text` cover the same
    /// fields.
    #[test]
    fn keyspace_options_cover_every_stored_keyspace_setting() {
        let o = Options {
            write_buffer_size: 1 << 20,
            bits_per_key: 12,
            bloom_hashes: Some(5),
            filters: vec![LevelFilter::FalsePositiveRate(FilterKind::Ribbon, 0.01)],
            skip_filters_on_last_level: true,
            filter_budget: Some(FilterBudget {
                bits_per_key: 7.25,
                max_bytes: None,
            }),
            prefix_extractor: Some(Arc::new(FixedPrefix::new(4))),
            block_size: 8192,
            block_restart_interval: 8,
            compression: "none,lz4".parse().unwrap(),
            key_sketch_precision: None,
            max_immutable_memtables: 3,
            compaction_style: CompactionStyle::Tiered,
            compaction_priority: CompactionPriority::MostDuplicates,
            level0_compaction_trigger: 3,
            level0_slowdown_trigger: 5,
            level0_stop_trigger: 7,
            max_bytes_for_level_base: 1 << 20,
            level_size_multiplier: 4,
            target_file_size: 1 << 20,
            max_manifest_file_size: 1 << 20,
            sync: true,
            ..Default::default()
        };
        let taken = crate::KeyspaceOptions::from_options(&o).over(&Options::default());
        assert_eq!(keyspace_text(&taken), keyspace_text(&o));
        let default_text = keyspace_text(&Options::default());
        let changed = keyspace_differences(&default_text, &o);
        assert_eq!(changed.len(), default_text.lines().count(), "{changed:?}");
        // The database's own settings stay the database's.
        assert_eq!(taken.max_manifest_file_size, 4 << 20);
        assert!(!taken.sync);
    }

    #[test]
    fn a_bad_keyspace_options_text_is_corruption() {
        let o = Options::default();
        for (text, why) in [
            ("block_size\n", "is not `NAME VALUE`"),
            ("block_size x\n", "setting block_size \"x\": not a number"),
            ("prefix_extractor test.custom\n", "not built in"),
            ("block_size 1\nblock_size 2\n", "set twice"),
        ] {
            let e = keyspace_options(&o, text, Path::new("MANIFEST-000001")).unwrap_err();
            assert!(
                matches!(&e, Error::Corruption { .. }) && e.to_string().contains(why),
                "{text:?}: {e}"
            );
        }
        // A value this build cannot run with is what `validate` says.
        let e = keyspace_options(&o, "block_size 1\n", Path::new("M")).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        // Names of a newer build are skipped.
        assert!(keyspace_options(&o, "some_new_setting 3\n", Path::new("M")).is_ok());
    }

    #[test]
    fn damage_is_corruption_and_newer_files_are_unsupported() {
        let good = encode(&Options::default());
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x01;
            assert!(decode(&bad).is_err(), "byte {i}");
        }
        for len in 0..good.len() - 1 {
            assert!(decode(&good[..len]).is_err(), "length {len}");
        }
        let body = "siftdb-options 2\nbits_per_key 10\n";
        let newer = format!("{body}crc32 {:08x}\n", crc32fast::hash(body.as_bytes()));
        assert!(matches!(
            decode(newer.as_bytes()),
            Err(Error::UnsupportedVersion { found: 2, .. })
        ));
        // An unknown name is skipped; a bad value of a known one is not.
        let body = "siftdb-options 1\nfuture_setting 7\nbits_per_key x\n";
        let f = format!("{body}crc32 {:08x}\n", crc32fast::hash(body.as_bytes()));
        let s = decode(f.as_bytes()).unwrap();
        let err = s
            .apply(&mut Options::default(), Path::new("OPTIONS"), &[])
            .unwrap_err();
        assert!(err.to_string().contains("bits_per_key"), "{err}");
    }
}
