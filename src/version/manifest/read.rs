//! Reading a manifest back: [`read_manifest`], the one reader of a
//! manifest file, decodes it record by record into [`ManifestContents`];
//! [`replay`] reads the one `CURRENT` names. Beside them, the error for a
//! file the manifest lists as live but that is missing.

use std::path::{Path, PathBuf};

use super::{dangling_current, FORMAT_VERSION};
use crate::error::{Error, Result};
use crate::filename::manifest_path;
use crate::log::{LogReader, TornTail};
use crate::version::edit::VersionEdit;
use crate::version::set::ReplayedState;

/// One record of a manifest: where it is and the edit it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestRecord {
    /// Offset of the record's header, in bytes from the start of the file.
    pub offset: u64,
    /// Payload bytes (the encoded edit), header excluded.
    pub payload_len: u64,
    /// The decoded edit.
    pub edit: VersionEdit,
}

/// A manifest file as [`read_manifest`] (or [`replay`]) read it.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestContents {
    /// The file read.
    pub path: PathBuf,
    /// Its size in bytes, as read.
    pub size: u64,
    /// Every complete record in file order (at least one); the first is the
    /// snapshot and carries the format version.
    pub records: Vec<ManifestRecord>,
    /// Set if the manifest ends in an incomplete record, which was dropped
    /// (as at open).
    pub torn_tail: Option<TornTail>,
}

impl ManifestContents {
    /// The format version carried by the first edit.
    pub fn format_version(&self) -> u32 {
        self.records
            .first()
            .and_then(|r| r.edit.format_version)
            .unwrap_or(0)
    }

    /// The edits, in file order.
    pub fn edits(&self) -> impl Iterator<Item = &VersionEdit> {
        self.records.iter().map(|r| &r.edit)
    }

    /// The state the edits replay to: every live keyspace's files per
    /// level and log number, and the counters.
    ///
    /// # Errors
    /// [`Error::Corruption`] naming this manifest and the offset of the
    /// record whose edit breaks a rule of [`ReplayedState::apply`]
    /// (deletes a file that is not live, names a level beyond the tree, a
    /// keyspace that is not live, ...).
    pub fn replay_all(&self) -> Result<ReplayedState> {
        let mut state = ReplayedState::new();
        for r in &self.records {
            state
                .apply(&r.edit)
                .map_err(|detail| Error::corruption(&self.path, r.offset, detail))?;
        }
        Ok(state)
    }
}

/// Reads and decodes every edit of the manifest at `path`, record by
/// record with [`LogReader`], stopping at the first problem in file order.
/// A torn final record is dropped and reported in
/// [`ManifestContents::torn_tail`], not an error.
///
/// # Errors
/// - [`Error::Corruption`] naming `path` and the record's offset if a
///   record other than a torn final one is damaged, an edit fails to
///   decode, carries format version 0, or the first edit carries no format
///   version; at offset 0 if the file holds no complete record.
/// - [`Error::UnsupportedVersion`] if an edit carries a format version
///   above [`FORMAT_VERSION`] (checked before decoding, since a newer
///   format may bring tags this build does not know).
/// - [`Error::Io`] if the file cannot be read (kind `NotFound` if it does
///   not exist).
pub fn read_manifest(path: &Path) -> Result<ManifestContents> {
    let mut reader = LogReader::open(path)?;
    let mut records: Vec<ManifestRecord> = Vec::new();
    for record in reader.by_ref() {
        let record = record?;
        if let Some(v) = VersionEdit::peek_format_version(&record.payload) {
            check_version(path, record.offset, v)?;
        }
        let edit = VersionEdit::decode(&record.payload, path, record.offset)?;
        if records.is_empty() && edit.format_version.is_none() {
            return Err(Error::corruption(
                path,
                record.offset,
                "first manifest record carries no format version",
            ));
        }
        // Tag 9 came with format version 2: a version-1 manifest never
        // held one, so one there is damage, not a newer writer.
        let version = records
            .first()
            .map_or(edit.format_version, |r| r.edit.format_version);
        if version < Some(2) && !edit.key_predictions.is_empty() {
            return Err(Error::corruption(
                path,
                record.offset,
                "a key prediction (tag 9) in a format-version-1 manifest",
            ));
        }
        // Tags 10 and 11 came with format version 3 (range deletions).
        let has_range_tombstones =
            !edit.new_range_tombstones.is_empty() || !edit.range_tombstone_files.is_empty();
        if version < Some(3) && has_range_tombstones {
            return Err(Error::corruption(
                path,
                record.offset,
                format!(
                    "a range tombstone (tag 10 or 11) in a format-version-{} manifest",
                    version.unwrap_or(0)
                ),
            ));
        }
        // Tags 12 to 16 came with format version 4 (keyspaces).
        if version < Some(4) && (edit.next_keyspace_id.is_some() || !edit.keyspaces.is_empty()) {
            return Err(Error::corruption(
                path,
                record.offset,
                format!(
                    "a keyspace field (tags 12 to 16) in a format-version-{} manifest",
                    version.unwrap_or(0)
                ),
            ));
        }
        records.push(ManifestRecord {
            offset: record.offset,
            payload_len: record.payload.len() as u64,
            edit,
        });
    }
    if records.is_empty() {
        return Err(Error::corruption(
            path,
            0,
            match reader.torn_tail() {
                // A manifest is complete once CURRENT names it, so its
                // first record cannot be a write still in flight.
                Some(t) => format!(
                    "manifest holds no complete record: its first record is damaged or cut \
                     short ({})",
                    t.reason
                ),
                None => "manifest holds no complete record (empty file)".into(),
            },
        ));
    }
    Ok(ManifestContents {
        path: path.to_path_buf(),
        size: reader.file_len(),
        records,
        torn_tail: reader.torn_tail().cloned(),
    })
}

/// Reads and decodes every edit of `dir/MANIFEST-<number>`, the manifest
/// `CURRENT` names, as [`read_manifest`] does.
///
/// # Errors
/// As [`read_manifest`], except that a manifest that does not exist is
/// [`Error::Corruption`] naming `CURRENT` (see `dangling_current`).
pub fn replay(dir: &Path, number: u64) -> Result<ManifestContents> {
    let path = manifest_path(dir, number);
    read_manifest(&path).map_err(|e| match e {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            dangling_current(&path)
        }
        e => e,
    })
}

fn check_version(path: &Path, offset: u64, v: u32) -> Result<()> {
    if v == 0 {
        return Err(Error::corruption(
            path,
            offset,
            "format version 0 is invalid",
        ));
    }
    if v > FORMAT_VERSION {
        return Err(Error::UnsupportedVersion {
            file: path.to_path_buf(),
            found: v,
            supported: FORMAT_VERSION,
        });
    }
    Ok(())
}

/// The error for a file (`path`) that the manifest at `manifest` lists as
/// live but that does not exist: [`Error::Corruption`] naming the manifest
/// at `offset`, with `why` appended to the detail (without one, a word that
/// the file was deleted or moved, so the manifest is not taken for what is
/// damaged).
pub(crate) fn missing_live_file(manifest: &Path, offset: u64, path: &Path, why: &str) -> Error {
    Error::corruption(
        manifest,
        offset,
        format!(
            "{} is live according to the manifest but missing{}",
            path.file_name().unwrap_or_default().to_string_lossy(),
            if why.is_empty() {
                // Found by a new-user trial: "corruption in MANIFEST at
                // offset 0" alone read as damage to the manifest.
                " (deleted or moved: the manifest may well be intact)"
            } else {
                why
            }
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{corruption, edits, later_edits, snapshot};
    use super::super::Manifest;
    use super::*;
    use crate::filename::manifest_name;
    use crate::fs::StdFs;
    use crate::log::LogWriter;
    use std::fs::OpenOptions;

    /// A manifest with a snapshot and two edits; returns the record offsets.
    fn write_three(dir: &Path) -> Vec<u64> {
        let mut m = Manifest::create(&StdFs, dir, 2, &snapshot()).unwrap();
        let mut offsets = vec![0];
        for e in later_edits() {
            offsets.push(m.size());
            m.log_edit(&e).unwrap();
        }
        offsets
    }

    #[test]
    fn torn_tail_replays_the_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let offsets = write_three(dir.path());
        let path = dir.path().join("MANIFEST-000002");
        let len = std::fs::metadata(&path).unwrap().len();
        // Cut the last record in the middle of its payload.
        let cut = (offsets[2] + len) / 2;
        OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(cut)
            .unwrap();
        let r = replay(dir.path(), 2).unwrap();
        let mut expected = vec![snapshot()];
        expected.push(later_edits().remove(0));
        assert_eq!(edits(&r), expected);
        assert_eq!(r.torn_tail.unwrap().offset, offsets[2]);
    }

    #[test]
    fn flipped_byte_in_interior_record_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let offsets = write_three(dir.path());
        let path = dir.path().join("MANIFEST-000002");
        let mut b = std::fs::read(&path).unwrap();
        // A payload byte of the middle record.
        b[offsets[1] as usize + 14] ^= 0x04;
        std::fs::write(&path, &b).unwrap();
        let (file, offset, detail) = corruption(replay(dir.path(), 2).unwrap_err());
        assert_eq!(file, path);
        assert_eq!(offset, offsets[1]);
        assert!(detail.contains("payload checksum mismatch"), "{detail}");
    }

    #[test]
    fn undecodable_edit_is_corruption_at_its_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("MANIFEST-000003");
        let mut w = LogWriter::create(&StdFs, &path).unwrap();
        w.append(&snapshot().encode()).unwrap();
        let at = w.append(&[0x11, 0x01]).unwrap();
        w.sync().unwrap();
        let (_, offset, detail) = corruption(replay(dir.path(), 3).unwrap_err());
        assert_eq!(offset, at);
        assert!(detail.contains("unknown tag 17"), "{detail}");
    }

    #[test]
    fn a_field_older_than_the_manifest_format_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("MANIFEST-000006");
        // Version 2: a tag 9 is fine, a tag 11 (range tombstones came with
        // version 3) is damage.
        let mut w = LogWriter::create(&StdFs, &path).unwrap();
        w.append(&[0x01, 0x02, 0x02, 0x05]).unwrap();
        let at = w.append(&[0x0b, 0x07, 0x04]).unwrap();
        w.sync().unwrap();
        let (_, offset, detail) = corruption(replay(dir.path(), 6).unwrap_err());
        assert_eq!(offset, at);
        assert!(detail.contains("format-version-2 manifest"), "{detail}");
        // The same record in a version-3 manifest reads; it fails only to
        // apply, as it names a tombstone the state lacks.
        let path = dir.path().join("MANIFEST-000007");
        let mut w = LogWriter::create(&StdFs, &path).unwrap();
        w.append(&[0x01, 0x03, 0x02, 0x05]).unwrap();
        w.append(&[0x0b, 0x07, 0x04]).unwrap();
        w.sync().unwrap();
        let contents = replay(dir.path(), 7).unwrap();
        let detail = contents.replay_all().map(|_| ()).unwrap_err().to_string();
        assert!(detail.contains("tombstone 7, which is absent"), "{detail}");
    }

    #[test]
    fn a_keyspace_field_in_a_version_3_manifest_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        for (number, field) in [(6, &[0x0c, 0x01][..]), (7, &[0x10, 0x02][..])] {
            let path = dir.path().join(manifest_name(number));
            let mut w = LogWriter::create(&StdFs, &path).unwrap();
            w.append(&[0x01, 0x03, 0x02, 0x05]).unwrap();
            let at = w.append(field).unwrap();
            w.sync().unwrap();
            let (_, offset, detail) = corruption(replay(dir.path(), number).unwrap_err());
            assert_eq!(offset, at);
            assert_eq!(
                detail,
                "a keyspace field (tags 12 to 16) in a format-version-3 manifest"
            );
        }
        // In the first record too, and in a version-1 manifest.
        let path = dir.path().join(manifest_name(8));
        let mut w = LogWriter::create(&StdFs, &path).unwrap();
        w.append(&[0x01, 0x01, 0x10, 0x02]).unwrap();
        w.sync().unwrap();
        let (_, _, detail) = corruption(replay(dir.path(), 8).unwrap_err());
        assert!(detail.contains("format-version-1 manifest"), "{detail}");
        // The same records at version 4 read.
        let path = dir.path().join(manifest_name(9));
        let mut w = LogWriter::create(&StdFs, &path).unwrap();
        w.append(&[0x01, 0x04, 0x02, 0x05, 0x10, 0x02]).unwrap();
        w.append(&[0x0c, 0x01]).unwrap();
        w.sync().unwrap();
        assert_eq!(replay(dir.path(), 9).unwrap().records.len(), 2);
    }

    #[test]
    fn replay_all_returns_a_live_keyspace() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(manifest_name(3));
        let mut w = LogWriter::create(&StdFs, &path).unwrap();
        // Version 4, next keyspace id 2, keyspace 1 "logs" added.
        w.append(&[
            0x01, 0x04, 0x02, 0x05, 0x10, 0x02, 0x0c, 0x01, 0x0d, 0x04, b'l', b'o', b'g', b's',
            0x00,
        ])
        .unwrap();
        w.sync().unwrap();
        let contents = replay(dir.path(), 3).unwrap();
        let all = contents.replay_all().unwrap();
        assert_eq!(all.keyspaces[&1].name, "logs");
        assert_eq!(all.next_keyspace_id, 2);
    }

    #[test]
    fn newer_format_version_is_unsupported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("MANIFEST-000004");
        let mut w = LogWriter::create(&StdFs, &path).unwrap();
        // Format 5 with a tag this build does not know.
        w.append(&[0x01, 0x05, 0x63, 0x00]).unwrap();
        w.sync().unwrap();
        match replay(dir.path(), 4).unwrap_err() {
            Error::UnsupportedVersion {
                file,
                found,
                supported,
            } => {
                assert_eq!(file, path);
                assert_eq!((found, supported), (5, 4));
            }
            other => panic!("{other:?}"),
        }
        // And writing one is refused.
        let mut s = snapshot();
        s.format_version = Some(5);
        assert!(matches!(
            Manifest::create(&StdFs, dir.path(), 5, &s),
            Err(Error::InvalidArgument(_))
        ));
        assert!(!dir.path().join("MANIFEST-000005").exists());
    }

    #[test]
    fn first_record_must_carry_a_version() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = LogWriter::create(&StdFs, &dir.path().join("MANIFEST-000006")).unwrap();
        w.append(&later_edits()[0].encode()).unwrap();
        let (_, offset, detail) = corruption(replay(dir.path(), 6).unwrap_err());
        assert_eq!(offset, 0);
        assert!(detail.contains("no format version"), "{detail}");

        let mut w = LogWriter::create(&StdFs, &dir.path().join("MANIFEST-000007")).unwrap();
        w.append(&[0x01, 0x00]).unwrap();
        let (_, _, detail) = corruption(replay(dir.path(), 7).unwrap_err());
        assert!(detail.contains("version 0"), "{detail}");
    }

    #[test]
    fn empty_or_missing_manifest_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        // Missing: CURRENT named it, so CURRENT is what the error names.
        let (file, offset, detail) = corruption(replay(dir.path(), 9).unwrap_err());
        assert_eq!((file, offset), (dir.path().join("CURRENT"), 0));
        assert_eq!(
            detail,
            "CURRENT names MANIFEST-000009, which does not exist"
        );

        std::fs::write(dir.path().join("MANIFEST-000009"), b"").unwrap();
        let (_, _, detail) = corruption(replay(dir.path(), 9).unwrap_err());
        assert_eq!(detail, "manifest holds no complete record (empty file)");

        // Its only record damaged: said as damage, not as a write cut off
        // (a new-user trial read "write cut off" as a crash).
        let mut w = LogWriter::create(&StdFs, &dir.path().join("MANIFEST-000010")).unwrap();
        w.append(b"a snapshot edit").unwrap();
        drop(w);
        let path = dir.path().join("MANIFEST-000010");
        let mut bytes = std::fs::read(&path).unwrap();
        *bytes.last_mut().unwrap() ^= 0x01;
        std::fs::write(&path, bytes).unwrap();
        let (_, _, detail) = corruption(replay(dir.path(), 10).unwrap_err());
        assert!(
            detail.starts_with(
                "manifest holds no complete record: its first record is damaged or cut short ("
            ),
            "{detail}"
        );

        // Only a torn snapshot: CURRENT never named such a file, so this is
        // corruption rather than an empty database.
        std::fs::write(dir.path().join("MANIFEST-000009"), [6, 0, 0]).unwrap();
        let (_, _, detail) = corruption(replay(dir.path(), 9).unwrap_err());
        assert!(detail.contains("header cut off"), "{detail}");
    }
}
