//! The manifest (`MANIFEST-NNNNNN`), the log of [`VersionEdit`]s that
//! describes which files make up the database, and `CURRENT`, which names
//! the live manifest.
//!
//! [`Manifest`], which creates a manifest and appends edits to it, and
//! [`FORMAT_VERSION`] are here. Beside them: `current`, the `CURRENT` file
//! (pointing it at a new manifest, reading it, and the error when it names
//! one that does not exist); `read`, reading a manifest back
//! ([`read_manifest`], [`replay`], [`ManifestContents`]) and the error for
//! a live file that is missing; `retry`, running a read again while
//! another process changes the manifest; `testutil`, the fixtures their
//! tests share.
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

use std::path::Path;

use crate::error::{Error, Result};
use crate::filename::manifest_path;
use crate::fs::FileSystem;
use crate::log::LogWriter;
use crate::version::edit::VersionEdit;

pub use crate::log::sync_dir;

mod current;
mod read;
mod retry;
#[cfg(test)]
mod testutil;

pub(crate) use current::dangling_current;
pub use current::read_current;
use current::set_current;
pub(crate) use read::missing_live_file;
pub use read::{read_manifest, replay, ManifestContents, ManifestRecord};
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

#[cfg(test)]
mod tests {
    use super::testutil::{edits, later_edits, snapshot};
    use super::*;
    use crate::fs::StdFs;

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
