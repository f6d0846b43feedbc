//! The WALs an open reads: each opened (pinned) so that a writer deleting
//! it cannot take it away, the live ones picked out, and each checked,
//! record by record, before any is replayed.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::WalReplay;
use crate::error::IoContext;
use crate::filename::{list_dir, FileType};
use crate::fs::FileSystem;
use crate::log::{LogReader, TornTail};
use crate::util::file::open_regular;
use crate::write_batch::decode_batch;
use crate::{Error, Result};

/// A WAL opened for replay. An open file stays readable after a writer in
/// another process deletes its name.
pub(crate) struct OpenWal {
    /// The WAL's file number.
    pub number: u64,
    /// Its path.
    pub path: PathBuf,
    /// The open file, at its start.
    pub file: File,
}

impl OpenWal {
    /// A reader of the whole WAL ([`LogReader::from_start`]): it can be
    /// read again.
    ///
    /// # Errors
    /// As [`LogReader::from_start`].
    pub(crate) fn reader(&self) -> Result<LogReader> {
        LogReader::from_start(&self.file, &self.path)
    }

    /// A reader of the WAL's first `len` bytes, from its start.
    pub(super) fn reader_up_to(mut self, len: u64) -> Result<LogReader> {
        std::io::Seek::seek(&mut self.file, std::io::SeekFrom::Start(0))
            .context(|| format!("seek {}", self.path.display()))?;
        Ok(LogReader::from_file_prefix(self.file, &self.path, len))
    }
}

/// A WAL as a reader pinned it: open, or the error opening it gave. A WAL
/// the manifest turns out not to need may be anything (a FIFO, say)
/// without failing the open: [`live_wals`] reports only the errors of the
/// WALs it keeps.
pub(crate) struct PinnedWal {
    number: u64,
    path: PathBuf,
    file: std::io::Result<File>,
}

/// Opens every WAL among `on_disk`. One deleted since the listing is
/// skipped: only a flush deletes a WAL, once its edit has moved the log
/// number past it.
pub(super) fn pin_listed(on_disk: &[(FileType, PathBuf)]) -> Vec<PinnedWal> {
    on_disk
        .iter()
        .filter_map(|(t, path)| {
            let FileType::Wal(number) = *t else {
                return None;
            };
            match open_regular(path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                file => Some(PinnedWal {
                    number,
                    path: path.clone(),
                    file,
                }),
            }
        })
        .collect()
}

/// Opens every WAL in `dir`, for a reader that takes no lock
/// (`Db::open_read_only`, `inspect`) to pin before it reads the manifest: a
/// WAL the manifest then names stays readable whatever a writer deletes
/// meanwhile.
///
/// # Errors
/// [`Error::Io`] if the directory cannot be listed.
pub(crate) fn pin_wals(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<PinnedWal>> {
    Ok(pin_listed(&list_dir(fs, dir)?))
}

/// The pinned WALs numbered `from` or above (the live ones), in number
/// order.
///
/// # Errors
/// [`Error::Io`] naming the file for a live WAL that did not open (not a
/// regular file included).
pub(crate) fn live_wals(pinned: Vec<PinnedWal>, from: u64) -> Result<Vec<OpenWal>> {
    let mut wals = pinned
        .into_iter()
        .filter(|w| w.number >= from)
        .map(|w| match w.file {
            Ok(file) => Ok(OpenWal {
                number: w.number,
                path: w.path,
                file,
            }),
            Err(e) => Err(Error::io(format!("open {}", w.path.display()), e)),
        })
        .collect::<Result<Vec<_>>>()?;
    wals.sort_unstable_by_key(|w| w.number);
    Ok(wals)
}

/// Reads `wal` record by record and decodes every batch, keeping none:
/// what the replay will find, without replaying it.
///
/// `next_seq` is the sequence number the next batch must start at, at
/// most: it is checked and advanced record by record, across the WALs in
/// order, and set to `None` at a gap. Batches take consecutive sequence
/// numbers in WAL order, so a batch that starts later than the writes
/// before it end follows writes that a power loss took (the tail of an
/// older WAL, unsynced, while newer records reached the disk; DESIGN.md
/// 11). Replaying it would leave a hole in the acknowledged writes, so it
/// is cut there like a torn tail, and every later WAL is dropped whole
/// (a torn tail at offset 0): what survives is a prefix. A batch that
/// starts earlier than expected is accepted (databases written before the
/// manifest's last sequence was kept exact, 2026-12-02, may show that).
///
/// # Errors
/// [`Error::Corruption`] for a damaged record or a payload that is not a
/// batch; [`Error::Io`] if reading fails.
pub(super) fn check_wal(
    wal: &OpenWal,
    next_seq: &mut Option<u64>,
    live: &dyn Fn(u32) -> bool,
    next_keyspace_id: u32,
) -> Result<WalReplay> {
    let mut reader = wal.reader()?;
    let (mut batches, mut entries, mut skipped_entries) = (0, 0, 0);
    let mut gap = None;
    match *next_seq {
        None => {
            gap = Some(TornTail {
                offset: 0,
                reason: "follows a gap in sequence numbers in an older WAL (see that WAL's \
                         torn tail): dropped whole"
                    .to_string(),
            })
        }
        Some(mut expected) => {
            while let Some(rec) = reader.next_record()? {
                let batch = decode_batch(&rec.payload)
                    .map_err(|d| Error::corruption(&wal.path, rec.offset, d))?;
                // An add edit is durable before its keyspace takes a
                // write, and ids are never reused: an id below the next
                // one was created, and is live or dropped since (its ops
                // are skipped). One at or above it is damage (or, for a
                // read-only open, a keyspace created after the manifest
                // was read: it reads the manifest again).
                if let Some(op) = batch.ops.iter().find(|op| op.keyspace >= next_keyspace_id) {
                    return Err(Error::corruption(
                        &wal.path,
                        rec.offset,
                        format!(
                            "a write to keyspace {}, which the manifest does not hold",
                            op.keyspace
                        ),
                    ));
                }
                if batch.first_seq.0 > expected {
                    gap = Some(TornTail {
                        offset: rec.offset,
                        reason: format!(
                            "gap in sequence numbers: this batch starts at sequence {}, but \
                             the writes before it end at {} (a power loss kept newer WAL \
                             records and lost older ones); dropped from here, with every \
                             later WAL, so that what survives is a prefix",
                            batch.first_seq.0,
                            expected - 1
                        ),
                    });
                    break;
                }
                batches += 1;
                entries += batch.ops.len() as u64;
                skipped_entries += batch.ops.iter().filter(|op| !live(op.keyspace)).count() as u64;
                expected = expected.max(batch.first_seq.0 + batch.ops.len() as u64);
            }
            *next_seq = gap.is_none().then_some(expected);
        }
    }
    Ok(WalReplay {
        path: wal.path.clone(),
        size: reader.file_len(),
        end: reader.valid_len(),
        batches,
        entries,
        skipped_entries,
        torn_tail: gap.or_else(|| reader.torn_tail().cloned()),
    })
}
