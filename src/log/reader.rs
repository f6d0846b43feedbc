//! [`LogReader`] and what it finds: records, torn tails, damage (the
//! rules of the module docs of [`crate::log`]).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::HEADER_LEN;
use crate::error::{Error, IoContext, Result};
use crate::util::crc::crc32;

/// One complete record read from a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// Offset of the record's header, in bytes from the start of the file.
    pub offset: u64,
    /// The payload, checksum verified.
    pub payload: Vec<u8>,
}

/// What cuts a log's last record short, as messages about a [`TornTail`]
/// say it: the crash the format was built for, and a write that failed
/// halfway, as one on a full disk can.
pub const TORN_WRITE: &str = "a write cut short by a crash or by a write error such as a full disk";

/// Where and why reading stopped at an incomplete final record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// Offset of the torn record's header, in bytes; equals
    /// [`LogContents::valid_len`].
    pub offset: u64,
    /// Which rule applied, for logs and kvctl.
    pub reason: String,
}

/// Everything [`read_log`] found in a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogContents {
    /// Every complete record, in file order.
    pub records: Vec<LogRecord>,
    /// Set if the log ends in an incomplete record.
    pub torn_tail: Option<TornTail>,
    /// Bytes of complete records: the torn record's offset, or where a
    /// zero-filled tail starts, or the file length.
    pub valid_len: u64,
    /// Bytes of the whole log as read, torn tail included.
    pub file_len: u64,
}

/// Reads a log and returns all its complete records (held in memory at
/// once, for tools and tests; recovery streams with [`LogReader`]),
/// applying the torn-tail rules of the module docs.
///
/// # Errors
/// [`Error::Io`] if the file cannot be read; [`Error::Corruption`] (naming
/// `path` and the bad record's offset) for damage before the end of the log.
pub fn read_log(path: &Path) -> Result<LogContents> {
    LogReader::open(path)?.read_all()
}

/// Reads records one at a time from a log, streaming it: memory holds one
/// record's payload and a 64 KiB buffer, whatever the size of the file.
///
/// The log is the first [`LogReader::file_len`] bytes of its source (a
/// file's length when the reader was made): bytes a writer appends later
/// are not read. [`LogReader::next_record`] returns `Ok(None)` at the end
/// of the log or at a torn tail ([`LogReader::torn_tail`] tells which),
/// and after it has returned an error. The iterator form yields the same
/// records and stops after the first error.
pub struct LogReader {
    path: PathBuf,
    src: Box<dyn Read + Send>,
    /// Bytes of the log.
    len: u64,
    /// Start of the next record; never exceeds `len`.
    pos: u64,
    torn_tail: Option<TornTail>,
    done: bool,
}

impl std::fmt::Debug for LogReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogReader")
            .field("path", &self.path)
            .field("len", &self.len)
            .field("pos", &self.pos)
            .field("torn_tail", &self.torn_tail)
            .finish_non_exhaustive()
    }
}

/// Bytes a [`LogReader`] reads from its file at a time.
const READ_BUFFER: usize = 64 << 10;

impl LogReader {
    /// Opens the log at `path` (a regular file: see
    /// [`crate::util::file::open_regular`]) and positions the reader at its
    /// first record.
    ///
    /// # Errors
    /// [`Error::Io`] if the file cannot be opened or is not a regular file.
    pub fn open(path: &Path) -> Result<LogReader> {
        let file = crate::util::file::open_regular(path)
            .context(|| format!("read log {}", path.display()))?;
        LogReader::from_file(file, path)
    }

    /// As [`LogReader::open`], reading from `file` (already open, at its
    /// start); `path` names it in errors.
    ///
    /// # Errors
    /// [`Error::Io`] if the file's length cannot be read.
    pub fn from_file(file: File, path: &Path) -> Result<LogReader> {
        let len = file
            .metadata()
            .context(|| format!("read log {}", path.display()))?
            .len();
        Ok(LogReader::from_file_prefix(file, path, len))
    }

    /// As [`LogReader::from_file`], through a duplicate of `file`'s
    /// descriptor rewound to the start (the two share a position): a log
    /// kept open can be read again, whole as long as it is by then.
    ///
    /// # Errors
    /// [`Error::Io`] if the descriptor cannot be duplicated, or the file
    /// cannot be rewound or its length read.
    pub fn from_start(file: &File, path: &Path) -> Result<LogReader> {
        let context = || format!("read log {}", path.display());
        let mut file = file.try_clone().context(context)?;
        std::io::Seek::rewind(&mut file).context(context)?;
        LogReader::from_file(file, path)
    }

    /// A reader of the first `len` bytes of `file` (open, at its start):
    /// a log read once already, read again up to where the first reading
    /// ended, whatever was appended since.
    pub fn from_file_prefix(file: File, path: &Path, len: u64) -> LogReader {
        let src = std::io::BufReader::with_capacity(READ_BUFFER, file.take(len));
        LogReader::from_source(path.to_path_buf(), Box::new(src), len)
    }

    /// A reader over log bytes already in memory; `path` only names the file
    /// in errors.
    pub fn from_bytes(path: PathBuf, data: Vec<u8>) -> LogReader {
        let len = data.len() as u64;
        LogReader::from_source(path, Box::new(std::io::Cursor::new(data)), len)
    }

    fn from_source(path: PathBuf, src: Box<dyn Read + Send>, len: u64) -> LogReader {
        LogReader {
            path,
            src,
            len,
            pos: 0,
            torn_tail: None,
            done: false,
        }
    }

    /// The next complete record, or `None` at the end of the log or at a
    /// torn tail.
    ///
    /// # Errors
    /// [`Error::Corruption`] at the offset of a damaged record that is not a
    /// torn tail (rules 2 and 4 of the module docs); [`Error::Io`] if
    /// reading fails, or the file ends inside a record although its length
    /// said more (it was truncated while being read). A file that ends
    /// early exactly where a record would start, or inside a zero-filled
    /// tail, has lost only that tail (a mapped WAL cuts it off when it is
    /// closed): the log ends there.
    pub fn next_record(&mut self) -> Result<Option<LogRecord>> {
        if self.done {
            return Ok(None);
        }
        let start = self.pos;
        let rest = self.len - start;
        if rest == 0 {
            self.done = true;
            return Ok(None);
        }
        // Rule 1: a header cut off.
        if rest < HEADER_LEN as u64 {
            return Ok(self.torn(format!(
                "header cut off: {rest} of {HEADER_LEN} bytes present"
            )));
        }
        let mut header = [0u8; HEADER_LEN];
        if !self.read_header(&mut header)? {
            // The file was cut back to here while being read: a mapped WAL
            // closed by its writer loses its zero-filled tail, and its
            // records end where the cut is.
            self.done = true;
            return Ok(None);
        }
        let len_bytes = [header[0], header[1], header[2], header[3]];
        let len = u32::from_le_bytes(len_bytes);
        let len_crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        let payload_crc = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);

        // Rule 2: a length that fails its checksum.
        let actual = crc32(&len_bytes);
        if actual != len_crc {
            if header.iter().all(|&b| b == 0) {
                if self.rest_is_zero(rest - HEADER_LEN as u64)? {
                    // Nothing but zeros: space never written. The log
                    // ends here, and no record is torn.
                    self.done = true;
                    return Ok(None);
                }
            } else if len != 0 && len_crc == 0 {
                return Ok(self.torn(
                    "a record header whose length checksum is not yet written: a group \
                     commit cut short, or still being copied"
                        .to_string(),
                ));
            }
            return Err(self.corrupt(
                start,
                format!(
                    "length checksum mismatch: stored {len_crc:#010x}, computed {actual:#010x}"
                ),
            ));
        }

        // Rule 3: a record cut off. Checked against the bytes present
        // before anything is allocated.
        let body = rest - HEADER_LEN as u64;
        if u64::from(len) > body {
            return Ok(self.torn(format!(
                "record cut off: {len} payload bytes declared, {body} present"
            )));
        }
        let mut payload = vec![0u8; len as usize];
        self.read_exact(&mut payload)?;

        // Rule 4: a payload that fails its checksum.
        let actual = crc32(&payload);
        if actual != payload_crc {
            if self.rest_is_zero(body - u64::from(len))? {
                return Ok(self.torn(format!(
                    "last record's payload checksum mismatch (stored {payload_crc:#010x}, \
                     computed {actual:#010x}): write cut off"
                )));
            }
            return Err(self.corrupt(
                start,
                format!(
                    "payload checksum mismatch in a {len}-byte record: stored \
                     {payload_crc:#010x}, computed {actual:#010x}"
                ),
            ));
        }
        self.pos = start + HEADER_LEN as u64 + u64::from(len);
        Ok(Some(LogRecord {
            offset: start,
            payload,
        }))
    }

    /// Reads exactly `buf.len()` bytes of the log.
    ///
    /// # Errors
    /// [`Error::Io`] if reading fails or the file ends first.
    fn read_exact(&mut self, buf: &mut [u8]) -> Result<()> {
        if self.read_full(buf)? < buf.len() {
            return Err(self.io_failure(std::io::ErrorKind::UnexpectedEof.into()));
        }
        Ok(())
    }

    /// Fills `buf` from the log, or as much of it as the file holds: the
    /// bytes read (fewer only at the end of the file).
    ///
    /// # Errors
    /// [`Error::Io`] if reading fails.
    fn read_full(&mut self, buf: &mut [u8]) -> Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            match self.src.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io_failure(e)),
            }
        }
        Ok(got)
    }

    /// Reads a record header; `false` if the file ends exactly where it
    /// should start (it was cut back to here while being read, as a
    /// closing mapped WAL cuts its zero-filled tail off).
    ///
    /// # Errors
    /// [`Error::Io`] if reading fails or the file ends inside the header.
    fn read_header(&mut self, header: &mut [u8; HEADER_LEN]) -> Result<bool> {
        match self.read_full(header)? {
            0 => Ok(false),
            HEADER_LEN => Ok(true),
            _ => Err(self.io_failure(std::io::ErrorKind::UnexpectedEof.into())),
        }
    }

    /// Whether the next `n` bytes are all zero; reads them in chunks, so a
    /// long zero-filled tail costs no memory. The file ending early counts
    /// as zeros: only a zero-filled tail is ever cut off a log being read.
    /// The reader is done after it.
    fn rest_is_zero(&mut self, mut n: u64) -> Result<bool> {
        let mut chunk = vec![0u8; READ_BUFFER.min(n as usize)];
        while n > 0 {
            let take = chunk.len().min(n as usize);
            let got = self.read_full(&mut chunk[..take])?;
            if !all_zero(&chunk[..got]) {
                return Ok(false);
            }
            if got < take {
                return Ok(true);
            }
            n -= got as u64;
        }
        Ok(true)
    }

    /// The error for a failed read of the log; the reader is done after it.
    fn io_failure(&mut self, e: std::io::Error) -> Error {
        self.done = true;
        Error::io(format!("read log {}", self.path.display()), e)
    }

    /// The torn tail, once [`LogReader::next_record`] has stopped at one.
    pub fn torn_tail(&self) -> Option<&TornTail> {
        self.torn_tail.as_ref()
    }

    /// Bytes of complete records read so far; after the reader has returned
    /// `None`, the offset of the torn tail or the file length.
    pub fn valid_len(&self) -> u64 {
        self.pos
    }

    /// Bytes of the whole log as read (the file's length when the reader
    /// was made), torn tail included.
    pub fn file_len(&self) -> u64 {
        self.len
    }

    /// Reads every remaining record, as [`read_log`] does.
    ///
    /// # Errors
    /// [`Error::Corruption`] (naming the file and the bad record's offset)
    /// for damage before the end of the log; [`Error::Io`] if reading
    /// fails.
    pub fn read_all(mut self) -> Result<LogContents> {
        let mut records = Vec::new();
        while let Some(r) = self.next_record()? {
            records.push(r);
        }
        Ok(LogContents {
            records,
            torn_tail: self.torn_tail().cloned(),
            valid_len: self.valid_len(),
            file_len: self.file_len(),
        })
    }

    /// The file the records come from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn torn(&mut self, reason: String) -> Option<LogRecord> {
        self.done = true;
        self.torn_tail = Some(TornTail {
            offset: self.pos,
            reason,
        });
        None
    }

    fn corrupt(&mut self, offset: u64, detail: String) -> Error {
        self.done = true;
        Error::corruption(&self.path, offset, detail)
    }
}

impl Iterator for LogReader {
    type Item = Result<LogRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

fn all_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b == 0)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn empty_log_has_no_records_and_no_tail() {
        let c = parse(&[]).unwrap();
        assert!(c.records.is_empty());
        assert_eq!(c.torn_tail, None);
        assert_eq!(c.valid_len, 0);
    }

    #[test]
    fn every_truncation_keeps_the_complete_prefix() {
        let full = three();
        let boundaries = [0usize, 15, 27, 44];
        for cut in 0..=full.len() {
            let c = parse(&full[..cut]).unwrap();
            let complete = boundaries.iter().filter(|&&b| b <= cut).count() - 1;
            let last = boundaries[complete];
            assert_eq!(c.records.len(), complete, "cut {cut}");
            assert_eq!(c.valid_len, last as u64, "cut {cut}");
            match c.torn_tail {
                None => assert_eq!(cut, last, "cut {cut}"),
                Some(t) => {
                    assert_ne!(cut, last, "cut {cut}");
                    assert_eq!(t.offset, last as u64, "cut {cut}");
                }
            }
        }
    }

    #[test]
    fn rule1_short_header_is_torn() {
        let mut b = three();
        b.extend_from_slice(&frame(b"zz")[..11]);
        let c = parse(&b).unwrap();
        assert_eq!(payloads(&c), [&b"abc"[..], b"", b"hello"]);
        let t = c.torn_tail.unwrap();
        assert_eq!(t.offset, 44);
        assert!(
            t.reason.contains("header cut off: 11 of 12"),
            "{}",
            t.reason
        );
        assert_eq!(c.valid_len, 44);
    }

    #[test]
    fn rule2_a_zero_filled_tail_ends_the_log() {
        let mut b = three();
        b.extend_from_slice(&[0; 4096]);
        let c = parse(&b).unwrap();
        assert_eq!(c.records.len(), 3);
        assert_eq!(c.torn_tail, None);
        assert_eq!((c.valid_len, c.file_len), (44, 44 + 4096));
    }

    #[test]
    fn a_log_cut_back_while_being_read_ends_where_the_cut_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.log");
        // Read as if 4 KiB of zero-filled tail were still there.
        std::fs::write(&path, three()).unwrap();
        let file = File::open(&path).unwrap();
        let c = LogReader::from_file_prefix(file, &path, 44 + 4096)
            .read_all()
            .unwrap();
        assert_eq!(payloads(&c), [&b"abc"[..], b"", b"hello"]);
        assert_eq!((c.torn_tail, c.valid_len), (None, 44));
        // Cut inside the zero-filled tail itself.
        let mut b = three();
        b.extend_from_slice(&[0; 100]);
        std::fs::write(&path, &b).unwrap();
        let file = File::open(&path).unwrap();
        let c = LogReader::from_file_prefix(file, &path, 44 + 4096)
            .read_all()
            .unwrap();
        assert_eq!((c.records.len(), c.torn_tail, c.valid_len), (3, None, 44));
        // A cut inside a record is not a lost tail.
        std::fs::write(&path, &three()[..20]).unwrap();
        let file = File::open(&path).unwrap();
        let e = LogReader::from_file_prefix(file, &path, 44).read_all();
        assert!(matches!(e, Err(Error::Io { .. })), "{e:?}");
    }

    #[test]
    fn rule2_a_checksum_not_yet_written_is_a_torn_tail() {
        // A group of two records cut short before its first checksum was
        // written (src/fs/mapped_log.rs): the rest of the group, and zeros
        // after it, or not.
        let mut group = frame(b"first");
        group.extend_from_slice(&frame(b"second"));
        group[4..8].fill(0);
        for zeros_after in [100, 0] {
            let mut b = three();
            b.extend_from_slice(&group);
            b.resize(b.len() + zeros_after, 0);
            let c = parse(&b).unwrap();
            assert_eq!(payloads(&c), [&b"abc"[..], b"", b"hello"]);
            let t = c.torn_tail.unwrap();
            assert_eq!(t.offset, 44);
            assert!(t.reason.contains("not yet written"), "{}", t.reason);
        }
        // One byte of a checksum zeroed, as a single flip inside the log
        // can do, is damage (found by the keyspace corruption campaign
        // while a checksum zero in part also read as unwritten).
        for i in 4..8 {
            let mut b = three();
            let mut g = frame(b"first");
            g.extend_from_slice(&frame(b"second"));
            if g[i] == 0 {
                continue;
            }
            g[i] = 0;
            b.extend_from_slice(&g);
            assert_eq!(corruption_offset(parse(&b).unwrap_err()), 44, "byte {i}");
        }
    }

    #[test]
    fn a_group_read_across_its_copy_reads_as_damage_and_whole_once_copied() {
        // A writer copies a group into a preallocated WAL first length
        // first, checksum last (src/fs/mapped_log.rs): every state of the
        // file is the end of the log or a torn tail.
        let group = frame(b"group");
        let with = |g: &[u8]| {
            let mut b = three();
            b.extend_from_slice(g);
            b.resize(b.len() + 100, 0);
            parse(&b)
        };
        let not_begun = vec![0; group.len()];
        let mut no_checksum = group.clone();
        no_checksum[4..8].fill(0);
        for state in [&not_begun, &no_checksum] {
            let c = with(state).unwrap();
            assert_eq!(c.records.len(), 3);
        }
        // A read is no snapshot: one that reads the header before the
        // copy begins and the bytes after it once they are copied finds a
        // zeroed header followed by data (or, its copy cut inside the
        // header, a zero length beside a payload checksum): damage by
        // rule 2, with the message of a user's report.
        let mut header_before = group.clone();
        header_before[..12].fill(0);
        let mut length_before = group.clone();
        length_before[..8].fill(0);
        for caught in [&header_before, &length_before] {
            let e = with(caught).unwrap_err();
            assert!(
                e.to_string().contains(
                    "offset 44: length checksum mismatch: stored 0x00000000, computed 0x2144df1c"
                ),
                "{e}"
            );
        }
        // Read again once the copy is done: whole.
        let c = with(&group).unwrap();
        assert_eq!(payloads(&c)[3], b"group");
    }

    #[test]
    fn rule2_bad_length_followed_by_data_is_corruption() {
        // Flip a bit in the length of the interior record "" at 15.
        let mut b = three();
        b[15] ^= 0x01;
        assert_eq!(corruption_offset(parse(&b).unwrap_err()), 15);

        // A zeroed header with non-zero bytes after it is not a tail
        // either: a group cut short has written its first length.
        let mut b = three();
        b[15..27].fill(0);
        assert_eq!(corruption_offset(parse(&b).unwrap_err()), 15);
        let mut b = three();
        b[0..12].fill(0);
        assert_eq!(corruption_offset(parse(&b).unwrap_err()), 0);
        // So is a zeroed checksum under a zero length.
        let mut b = three();
        b[19..23].fill(0);
        assert_eq!(corruption_offset(parse(&b).unwrap_err()), 15);

        // Bad len_crc in the last record: its own bytes are not all zero.
        let mut b = three();
        b[27 + 5] ^= 0x80;
        let e = parse(&b).unwrap_err();
        assert_eq!(corruption_offset(e), 27);
    }

    #[test]
    fn rule3_length_past_end_is_torn() {
        let mut b = three();
        b.truncate(27 + 12 + 2);
        let c = parse(&b).unwrap();
        assert_eq!(c.records.len(), 2);
        let t = c.torn_tail.unwrap();
        assert_eq!(t.offset, 27);
        assert!(
            t.reason.contains("5 payload bytes declared, 2 present"),
            "{}",
            t.reason
        );
        assert_eq!(c.valid_len, 27);

        // A valid header declaring 4 GiB - 1 bytes in a tiny file: torn,
        // and nothing of that size is allocated.
        let mut h = vec![0u8; 12];
        let len = u32::MAX.to_le_bytes();
        h[0..4].copy_from_slice(&len);
        h[4..8].copy_from_slice(&crc32(&len).to_le_bytes());
        h.push(7);
        let c = parse(&h).unwrap();
        assert!(c.records.is_empty());
        assert_eq!(c.torn_tail.unwrap().offset, 0);
    }

    #[test]
    fn rule4_bad_payload_at_end_is_torn() {
        let mut b = three();
        let last = b.len() - 1;
        b[last] ^= 0x20;
        let c = parse(&b).unwrap();
        assert_eq!(payloads(&c), [&b"abc"[..], b""]);
        let t = c.torn_tail.unwrap();
        assert_eq!(t.offset, 27);
        assert!(t.reason.contains("payload checksum"), "{}", t.reason);
        assert_eq!(c.valid_len, 27);
    }

    #[test]
    fn rule4_bad_payload_followed_only_by_zeros_is_torn() {
        // Header reached the disk, payload pages and the space after them
        // came back zero-filled.
        let mut b = three();
        b[27 + 12..].fill(0);
        b.extend_from_slice(&[0; 100]);
        let c = parse(&b).unwrap();
        assert_eq!(c.records.len(), 2);
        assert_eq!(c.torn_tail.unwrap().offset, 27);
        assert_eq!(c.valid_len, 27);
    }

    #[test]
    fn rule4_bad_payload_in_interior_is_corruption() {
        let mut b = three();
        b[13] ^= 0x01; // "abc" -> "acc"
        let e = parse(&b).unwrap_err();
        assert!(e.to_string().contains("payload checksum mismatch"), "{e}");
        assert_eq!(corruption_offset(e), 0);

        // Bad payload of the last real record followed by garbage.
        let mut b = three();
        b[40] ^= 0x01;
        b.push(1);
        assert_eq!(corruption_offset(parse(&b).unwrap_err()), 27);
    }

    #[test]
    fn reader_stops_after_an_error() {
        let mut b = three();
        b[13] ^= 0x01;
        let mut r = LogReader::from_bytes(PathBuf::from("x.log"), b);
        assert!(r.next().unwrap().is_err());
        assert!(r.next().is_none());
        assert_eq!(r.valid_len(), 0);
        assert_eq!(r.path(), Path::new("x.log"));
    }

    #[test]
    fn corruption_names_file_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("7.log");
        let mut b = three();
        b[20] ^= 0xff;
        std::fs::write(&path, &b).unwrap();
        match read_log(&path).unwrap_err() {
            Error::Corruption { file, offset, .. } => {
                assert_eq!(file, path);
                assert_eq!(offset, 15);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_log_is_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_log(&dir.path().join("nope.log")).unwrap_err();
        assert!(matches!(err, Error::Io { ref source, .. }
            if source.kind() == std::io::ErrorKind::NotFound));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(c) = parse(&bytes) {
                prop_assert!(c.valid_len as usize <= bytes.len());
                let mut next = 0u64;
                for r in &c.records {
                    prop_assert_eq!(r.offset, next);
                    next += (HEADER_LEN + r.payload.len()) as u64;
                }
                prop_assert_eq!(next, c.valid_len);
                prop_assert_eq!(c.torn_tail.is_none(), c.valid_len as usize == bytes.len());
            }
        }

        #[test]
        fn framed_records_round_trip(
            recs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8),
        ) {
            let bytes: Vec<u8> = recs.iter().flat_map(|p| frame(p)).collect();
            let c = parse(&bytes).unwrap();
            prop_assert_eq!(c.records.iter().map(|r| r.payload.clone()).collect::<Vec<_>>(), recs);
            prop_assert_eq!(c.torn_tail, None);
            prop_assert_eq!(c.valid_len as usize, bytes.len());
        }
    }
}
