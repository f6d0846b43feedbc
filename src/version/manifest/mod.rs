//! The manifest (`MANIFEST-NNNNNN`), the log of [`VersionEdit`]s that
//! describes which files make up the database, and `CURRENT`, which names
//! the live manifest.
//!
//! # Format
//!
//! A manifest is a log in the framing of [`crate::inspect::log`] (12-byte header:
//! `len`, `crc32(len)`, `crc32(payload)`, then the payload). Each record's
//! payload is one encoded [`VersionEdit`] ([`crate::version::edit`]). The
//! first record is a snapshot of the whole state and always carries
//! `format_version` (currently [`FORMAT_VERSION`]); each later record is
//! an edit applied on top of the ones before.
//!
//! Format version 2 added tag 9 (a compaction's key prediction). A
//! version-1 manifest is still read, and a tag 9 in it is corruption;
//! since every writable open writes a fresh manifest, opening a version-1
//! database writable upgrades it (a read-only open leaves it at 1).
//! Format version 3 added tags 10 and 11 (range tombstones), with the same
//! rules: in a version-1 or -2 manifest they are corruption, a writable
//! open upgrades such a manifest, and a build that reads at most version 2
//! refuses a version-3 one with `UnsupportedVersion` instead of opening it
//! without the range deletions (which would bring deleted keys back).
//! Format version 4 added tags 12 to 16 (keyspaces), with the same rules
//! again: in a version-3 or older manifest they are corruption, and a
//! writable open upgrades such a manifest to 4. An edit that touches only
//! the default keyspace encodes exactly as at version 3;
//! [`ManifestContents::replay_all`] gives every keyspace's state.
//!
//! Worked example (pinned by the `golden_manifest_bytes` test): a manifest
//! whose snapshot is `{ format_version: 4, log_number: 5, next_file_number:
//! 7 }` is the 18 bytes
//!
//! ```text
//! 06 00 00 00   c0 80 2f 04   c6 18 95 96   01 04 02 05 03 07
//! len = 6       crc32(len)    crc32(payload) payload: tags 1, 2, 3
//! ```
//!
//! `CURRENT` holds exactly the manifest's file name and a newline, e.g.
//! `MANIFEST-000012\n` (16 bytes for a six-digit number); anything else is
//! corruption.
//!
//! # Durability
//!
//! [`Manifest::create`] writes and syncs the new manifest, syncs the
//! directory, writes `CURRENT`'s new content to `NNNNNN.tmp` and syncs it,
//! renames it over `CURRENT`, and syncs the directory again. A crash at any
//! point leaves `CURRENT` naming either the old manifest or the new,
//! complete one. [`Manifest::log_edit`] returns only once the edit is
//! synced, so a caller may then delete the files the edit obsoletes.
//!
//! On replay, a torn final record is an edit whose `log_edit` never
//! returned, so nothing depended on it: [`replay`] drops it and reports it.
//! Damage anywhere else is [`Error::Corruption`]. [`read_manifest`] is the
//! one reader of a manifest file: [`replay`] (at open) and
//! [`crate::inspect`] (for tools) both use it, and it keeps each edit's
//! record offset.
//!
//! # Reading while another process writes
//!
//! A reader that takes no lock (`Db::open_read_only`, `crate::inspect`)
//! may find a file the manifest names already deleted by a writer's flush
//! or compaction. `retry_while_manifest_changes` runs such a read again
//! when the manifest's identity (the number `CURRENT` names and that
//! manifest's length) changed meanwhile.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::filename::manifest_path;
use crate::fs::FileSystem;
use crate::log::{LogReader, LogWriter, TornTail};
use crate::version::edit::VersionEdit;
use crate::version::set::ReplayedState;

pub use crate::log::sync_dir;

mod current;
mod retry;
#[cfg(test)]
mod testutil;

pub(crate) use current::dangling_current;
pub use current::read_current;
use current::set_current;
#[cfg(test)]
pub(crate) use retry::identity;
pub(crate) use retry::retry_while_manifest_changes;

/// The on-disk format version this build writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 4;

/// An open manifest that edits are appended to.
///
/// Not internally synchronized: the engine serializes edits.
#[derive(Debug)]
pub struct Manifest {
    number: u64,
    writer: LogWriter,
}

impl Manifest {
    /// Creates `dir/MANIFEST-<number>` holding `snapshot` as its first
    /// record, then points `CURRENT` at it, in the crash-safe order of the
    /// module docs. Every file operation goes through `fs`.
    ///
    /// The snapshot is written with `format_version` set to
    /// [`FORMAT_VERSION`] (filled in if it is `None`).
    ///
    /// If this fails, `CURRENT` names either the old manifest or, if only
    /// the final directory sync failed, possibly the new one; a leftover
    /// `MANIFEST-<number>` or `<number>.tmp` is garbage for the caller to
    /// remove.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `snapshot` fails
    /// [`VersionEdit::validate`] or carries a format version other than
    /// [`FORMAT_VERSION`]; [`Error::Io`] if the manifest already exists or
    /// any write, sync or rename fails.
    pub fn create(
        fs: &dyn FileSystem,
        dir: &Path,
        number: u64,
        snapshot: &VersionEdit,
    ) -> Result<Manifest> {
        match snapshot.format_version {
            None | Some(FORMAT_VERSION) => {}
            Some(v) => {
                return Err(Error::InvalidArgument(format!(
                    "cannot write format version {v}; this build writes {FORMAT_VERSION}"
                )))
            }
        }
        snapshot.validate()?;
        let mut first = snapshot.clone();
        first.format_version = Some(FORMAT_VERSION);

        // LogWriter::create also syncs `dir`, so the manifest's directory
        // entry is durable before CURRENT can name it.
        let mut writer = LogWriter::create(fs, &manifest_path(dir, number))?;
        writer.append(&first.encode())?;
        writer.sync()?;
        set_current(fs, dir, number)?;
        Ok(Manifest { number, writer })
    }

    /// Appends `edit` and syncs it before returning, so the caller may then
    /// delete files the edit removes.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `edit` fails [`VersionEdit::validate`]
    /// or carries a format version other than [`FORMAT_VERSION`] (nothing is
    /// written); [`Error::Io`] if the write or sync fails. After an I/O
    /// error the manifest refuses further edits and the caller must treat
    /// the edit as possibly applied (stop writing, reopen to recover).
    pub fn log_edit(&mut self, edit: &VersionEdit) -> Result<()> {
        if let Some(v) = edit.format_version {
            if v != FORMAT_VERSION {
                return Err(Error::InvalidArgument(format!(
                    "cannot write format version {v}; this build writes {FORMAT_VERSION}"
                )));
            }
        }
        edit.validate()?;
        self.writer.append(&edit.encode())?;
        self.writer.sync()
    }

    /// The manifest's file number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The manifest's path.
    pub fn path(&self) -> &Path {
        self.writer.path()
    }

    /// Bytes written to the manifest so far, so the engine can decide when
    /// to start a new one.
    pub fn size(&self) -> u64 {
        self.writer.offset()
    }
}

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
    use super::testutil::{corruption, edits, later_edits, snapshot};
    use super::*;
    use crate::filename::manifest_name;
    use crate::fs::StdFs;
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
    fn create_log_and_replay() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_current(dir.path()).unwrap(), None);
        let mut m = Manifest::create(&StdFs, dir.path(), 2, &snapshot()).unwrap();
        assert_eq!(m.number(), 2);
        assert_eq!(m.path(), dir.path().join("MANIFEST-000002"));
        let after_snapshot = m.size();
        assert_eq!(after_snapshot, std::fs::metadata(m.path()).unwrap().len());
        for e in later_edits() {
            m.log_edit(&e).unwrap();
        }
        assert!(m.size() > after_snapshot);
        assert_eq!(m.size(), std::fs::metadata(m.path()).unwrap().len());

        assert_eq!(
            std::fs::read(dir.path().join("CURRENT")).unwrap(),
            b"MANIFEST-000002\n"
        );
        assert!(!dir.path().join("000002.tmp").exists());
        assert_eq!(read_current(dir.path()).unwrap(), Some(2));
        let r = replay(dir.path(), 2).unwrap();
        let mut expected = vec![snapshot()];
        expected.extend(later_edits());
        assert_eq!(edits(&r), expected);
        assert_eq!(r.torn_tail, None);
    }

    #[test]
    fn snapshot_gets_the_format_version() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = snapshot();
        s.format_version = None;
        Manifest::create(&StdFs, dir.path(), 1, &s).unwrap();
        let r = replay(dir.path(), 1).unwrap();
        assert_eq!(edits(&r), vec![snapshot()]);
    }

    #[test]
    fn golden_manifest_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let s = VersionEdit {
            log_number: Some(5),
            next_file_number: Some(7),
            ..VersionEdit::default()
        };
        Manifest::create(&StdFs, dir.path(), 1, &s).unwrap();
        #[rustfmt::skip]
        let expected: &[u8] = &[
            0x06, 0x00, 0x00, 0x00, // len
            0xc0, 0x80, 0x2f, 0x04, // crc32(len)
            0xc6, 0x18, 0x95, 0x96, // crc32(payload)
            0x01, 0x04, 0x02, 0x05, 0x03, 0x07,
        ];
        assert_eq!(
            std::fs::read(dir.path().join("MANIFEST-000001")).unwrap(),
            expected
        );
    }

    #[test]
    fn second_create_swaps_current() {
        let dir = tempfile::tempdir().unwrap();
        Manifest::create(&StdFs, dir.path(), 2, &snapshot()).unwrap();
        let mut s = snapshot();
        s.next_file_number = Some(12);
        let m = Manifest::create(&StdFs, dir.path(), 11, &s).unwrap();
        assert_eq!(read_current(dir.path()).unwrap(), Some(11));
        assert_eq!(m.number(), 11);
        assert_eq!(edits(&replay(dir.path(), 11).unwrap()), vec![s]);
        // The old manifest is untouched.
        assert_eq!(edits(&replay(dir.path(), 2).unwrap()), vec![snapshot()]);
    }

    #[test]
    fn create_refuses_an_existing_manifest() {
        let dir = tempfile::tempdir().unwrap();
        Manifest::create(&StdFs, dir.path(), 2, &snapshot()).unwrap();
        let before = std::fs::read(dir.path().join("MANIFEST-000002")).unwrap();
        assert!(matches!(
            Manifest::create(&StdFs, dir.path(), 2, &VersionEdit::new()),
            Err(Error::Io { .. })
        ));
        assert_eq!(
            std::fs::read(dir.path().join("MANIFEST-000002")).unwrap(),
            before
        );
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

    /// A version-4 manifest whose snapshot adds keyspace 1 and whose next
    /// record drops it, byte for byte (DESIGN.md 12.8).
    #[test]
    fn golden_keyspace_manifest_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = VersionEdit {
            log_number: Some(5),
            next_keyspace_id: Some(2),
            ..VersionEdit::default()
        };
        s.keyspaces.insert(
            1,
            crate::version::edit::KeyspaceEdit {
                add: Some(crate::version::edit::KeyspaceAdd {
                    name: "logs".into(),
                    options: String::new(),
                }),
                ..Default::default()
            },
        );
        let mut m = Manifest::create(&StdFs, dir.path(), 1, &s).unwrap();
        let mut drop = VersionEdit::default();
        drop.keyspaces.insert(
            1,
            crate::version::edit::KeyspaceEdit {
                drop: true,
                ..Default::default()
            },
        );
        m.log_edit(&drop).unwrap();
        #[rustfmt::skip]
        let expected: &[u8] = &[
            0x0f, 0x00, 0x00, 0x00, // len 15
            0x4a, 0xcf, 0x27, 0x79,
            0x6c, 0xdb, 0xad, 0x83,
            0x01, 0x04, 0x02, 0x05, 0x10, 0x02, // version 4, log 5, next keyspace id 2
            0x0c, 0x01, 0x0d, 0x04, b'l', b'o', b'g', b's', 0x00, // keyspace 1: add "logs"
            0x03, 0x00, 0x00, 0x00, // len 3
            0xf2, 0x70, 0xf1, 0x33,
            0x30, 0x3c, 0xf8, 0x08,
            0x0c, 0x01, 0x0e, // keyspace 1: drop
        ];
        assert_eq!(
            std::fs::read(dir.path().join("MANIFEST-000001")).unwrap(),
            expected
        );
        let r = replay(dir.path(), 1).unwrap();
        assert_eq!(edits(&r)[1], drop);
        // Every keyspace dropped: none live, the used id kept.
        assert!(r.replay_all().unwrap().keyspaces.is_empty());
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

    #[test]
    fn log_edit_rejects_invalid_edits_without_writing() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Manifest::create(&StdFs, dir.path(), 2, &snapshot()).unwrap();
        let size = m.size();
        let bad_level = VersionEdit {
            deleted_files: vec![(64, 1)],
            ..VersionEdit::default()
        };
        assert!(matches!(
            m.log_edit(&bad_level),
            Err(Error::InvalidArgument(_))
        ));
        let bad_version = VersionEdit {
            format_version: Some(5),
            ..VersionEdit::default()
        };
        assert!(matches!(
            m.log_edit(&bad_version),
            Err(Error::InvalidArgument(_))
        ));
        assert_eq!(m.size(), size);
        assert_eq!(edits(&replay(dir.path(), 2).unwrap()), vec![snapshot()]);
    }
}
