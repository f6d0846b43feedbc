//! `PowerFs`: a [`FileSystem`] over `std::fs` that remembers what a power
//! cut would keep, for the power-loss campaign (tests/power_loss.rs,
//! tests/power_loss_writers.rs, tests/power_loss_checkpoint.rs).
//!
//! Every operation goes to the real files at once (the engine reads them
//! back with `std::fs`), and is also recorded in a model of what is
//! *durable*, strictly as POSIX promises it (not ext4's extra kindness):
//!
//! - A file is an identity, not a name: a rename moves the identity. Per
//!   identity the model keeps every byte written (files are append-only)
//!   and the synced length, which `sync_data` and `sync_all` raise to the
//!   current length.
//! - Per directory it keeps the *current* name → file map, which `create`,
//!   `create_new`, `rename` and `remove_file` change, and the *durable*
//!   map, which becomes a copy of the current one at `sync_dir` and
//!   changes at no other time. So a new file's name survives only once its
//!   directory is synced, an unsynced rename reverts and an unsynced
//!   removal is undone (the model still holds the removed file's bytes).
//!
//! [`PowerFs::cut_power_at`] kills the disk at counted operation `n`: that
//! operation and every later one fail with `EIO` and change nothing, on
//! disk or in the model. Once the engine is dropped,
//! [`PowerFs::crash_image`] (or [`PowerFs::image`] with
//! [`write_image`]) rebuilds a directory a real disk could be left with:
//! exactly the durable names, each holding its file's synced bytes plus a
//! prefix (empty, partial or whole) of the bytes written after its last
//! sync.
//!
//! Counted operations, numbered from 0 in the order they start, as
//! `FaultFs` counts them: creating a file, each write, each sync, rename,
//! remove, directory sync and directory creation. Listing a directory is
//! passed through uncounted (the engine only reads with it).
//!
//! Directories are identities too. A directory made by `create_dir` (a
//! checkpoint's temporary directory) or renamed (the checkpoint's publish)
//! is durable at its new path only once its parent is synced, and one
//! removed by `remove_dir_all` comes back, with its durable names, until
//! then; the image puts each directory where its entry was last made
//! durable. A hard link adds a name to the same identity, durable at its
//! directory's next sync.
//!
//! Not modelled: the durability of the entry of a directory made by
//! `create_dir_all` (the database directory, and a checkpoint's parent,
//! are taken as durable once created); `create` of
//! an existing name is modelled as a new file replacing the name (the
//! engine only ever `create`s fresh names); files the engine does not write
//! through the seam (`LOCK`) are left alone by the image; a file found on
//! disk when its directory is first touched counts as durable, whole. Lost
//! writes are lost as a suffix: a disk that keeps a later page of a file
//! but not an earlier one, or leaves zeros, is not modelled.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use siftdb::fs::{FileSystem, StdFs, WritableFile};

use super::fault_fs::{Op, OpKind, EIO};
use super::Rng;

/// Identity of a file in the model.
type FileId = u64;

/// What the model knows of one file.
#[derive(Debug, Default)]
struct FileData {
    /// Every byte written, in order.
    data: Vec<u8>,
    /// Length made durable by the last `sync_data` or `sync_all`.
    synced: usize,
}

/// The name maps of one directory.
#[derive(Debug, Default, Clone)]
struct DirState {
    /// Names as the running system sees them.
    current: BTreeMap<OsString, FileId>,
    /// Names as of the last directory sync: what a power cut keeps.
    durable: BTreeMap<OsString, FileId>,
    /// Where a power cut leaves the directory: the path at which its entry
    /// in its parent was last made durable (`None`: nowhere yet).
    durable_path: Option<PathBuf>,
}

/// An operation to hold before it runs, see [`PowerFs::hold_next`].
#[derive(Debug, Clone, Copy)]
struct Hold {
    kind: OpKind,
    file_kind: &'static str,
    /// Set once a matching operation is waiting.
    waiting: bool,
}

#[derive(Debug, Default)]
struct State {
    ops: Vec<Op>,
    /// Number of the first operation to fail.
    cut_at: Option<u64>,
    files: HashMap<FileId, FileData>,
    next_id: FileId,
    /// Directories by current path.
    dirs: BTreeMap<PathBuf, DirState>,
    /// Directories removed whose removal is not durable yet (their parent
    /// was not synced since): a cut brings them back.
    removed_dirs: Vec<DirState>,
    hold: Option<Hold>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    /// Signalled when a held operation starts waiting or is released.
    held: Condvar,
}

/// See the module docs. Cheap to clone; clones share the model and the
/// operation counter.
#[derive(Debug, Clone, Default)]
pub struct PowerFs {
    shared: Arc<Shared>,
}

/// What to do with the bytes a file gained after its last sync when an
/// image is built.
pub enum Unsynced<'a> {
    /// Drop them all: the image holds only synced bytes.
    Drop,
    /// Keep them all (as if the cut came just after a full writeback).
    Keep,
    /// Per file, independently: none of them (one file in three), all of
    /// them (one in three) or a uniformly random prefix.
    Random(&'a mut Rng),
    /// Per file: `f(name, synced_len, len)` returns how many of the
    /// unsynced bytes to keep (clamped to `len - synced_len`).
    With(&'a mut dyn FnMut(&OsStr, usize, usize) -> usize),
}

impl Unsynced<'_> {
    fn keep(&mut self, name: &OsStr, synced: usize, len: usize) -> usize {
        let unsynced = len - synced;
        if unsynced == 0 {
            return 0;
        }
        match self {
            Unsynced::Drop => 0,
            Unsynced::Keep => unsynced,
            Unsynced::Random(rng) => match rng.below(3) {
                0 => 0,
                1 => unsynced,
                _ => rng.below(unsynced as u64 + 1) as usize,
            },
            Unsynced::With(f) => f(name, synced, len).min(unsynced),
        }
    }
}

/// What an image lost, compared with the files as the running system saw
/// them at the cut.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Loss {
    /// Current names absent from the image (created, or renamed to, since
    /// the last directory sync).
    pub names_dropped: u64,
    /// Names in the image that were no longer current (removed, or renamed
    /// away, since the last directory sync).
    pub names_revived: u64,
    /// Names in the image whose file differs from the current one (a
    /// rename over them reverted).
    pub names_reverted: u64,
    /// Files in the image that lost some of their bytes.
    pub files_cut: u64,
    /// Bytes written but not in the image.
    pub bytes_dropped: u64,
}

impl Loss {
    /// Whether the image differs at all from the files as they were.
    pub fn any(&self) -> bool {
        *self != Loss::default()
    }
}

/// The files a directory holds after the cut, by name.
pub type DirImage = BTreeMap<OsString, Vec<u8>>;

impl PowerFs {
    /// A file system whose disk never dies (until
    /// [`PowerFs::cut_power_at`]).
    pub fn new() -> PowerFs {
        PowerFs::default()
    }

    /// As a `file_system` option.
    pub fn arc(&self) -> Arc<dyn FileSystem> {
        Arc::new(self.clone())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap()
    }

    /// The disk dies at operation `n`: it and every later operation fail
    /// with `EIO` and change nothing.
    pub fn cut_power_at(&self, n: u64) {
        self.lock().cut_at = Some(n);
    }

    /// The disk dies now: every operation not yet started fails.
    pub fn cut_power_now(&self) {
        let mut s = self.lock();
        s.cut_at = Some(s.ops.len() as u64);
    }

    /// Whether the power has been cut (some operation was refused).
    pub fn is_dead(&self) -> bool {
        let s = self.lock();
        s.cut_at.is_some_and(|c| (s.ops.len() as u64) > c)
    }

    /// Every counted operation so far, in order (those refused after the
    /// cut included).
    pub fn ops(&self) -> Vec<Op> {
        self.lock().ops.clone()
    }

    /// Number of counted operations so far.
    pub fn count(&self) -> u64 {
        self.lock().ops.len() as u64
    }

    /// Makes the next operation of `kind` on a file of `file_kind` (as
    /// [`Op::file_kind`] names it) wait, before it is counted, until
    /// [`PowerFs::release`]: a way to stop a background job at a chosen
    /// step and cut the power while it waits.
    pub fn hold_next(&self, kind: OpKind, file_kind: &'static str) {
        self.lock().hold = Some(Hold {
            kind,
            file_kind,
            waiting: false,
        });
    }

    /// Waits until the operation chosen by [`PowerFs::hold_next`] is
    /// waiting; panics after `limit`.
    pub fn wait_until_held(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let mut s = self.lock();
        while !s.hold.is_some_and(|h| h.waiting) {
            let left = deadline
                .checked_duration_since(Instant::now())
                .unwrap_or_else(|| panic!("no operation reached the hold within {limit:?}"));
            s = self.shared.held.wait_timeout(s, left).unwrap().0;
        }
    }

    /// Lets the held operation (if any) go on.
    pub fn release(&self) {
        self.lock().hold = None;
        self.shared.held.notify_all();
    }

    /// Holds the operation if it matches the hold, then numbers it and
    /// decides whether it may run. On `Ok` the caller performs it while
    /// still holding the returned lock, so that the disk and the model
    /// change together.
    fn start(&self, kind: OpKind, path: &Path) -> io::Result<MutexGuard<'_, State>> {
        let op = Op {
            kind,
            path: path.to_path_buf(),
        };
        let mut s = self.lock();
        if let Some(h) = s.hold.as_mut() {
            if h.kind == kind && h.file_kind == op.file_kind() {
                h.waiting = true;
                self.shared.held.notify_all();
                while s.hold.is_some() {
                    s = self.shared.held.wait(s).unwrap();
                }
            }
        }
        let n = s.ops.len() as u64;
        s.ops.push(op);
        if s.cut_at.is_some_and(|c| n >= c) {
            return Err(io::Error::from_raw_os_error(EIO));
        }
        Ok(s)
    }

    /// The image of `dir` that a cut now would leave, and what it lost;
    /// `unsynced` decides, per file, how much of what was written after
    /// its last sync survives. Empty if the directory was never touched.
    pub fn image(&self, dir: &Path, mut unsynced: Unsynced<'_>) -> (DirImage, Loss) {
        let s = self.lock();
        let mut image = DirImage::new();
        let mut loss = Loss::default();
        let empty = BTreeMap::new();
        let found = s
            .dirs
            .iter()
            .map(|(p, d)| (Some(p), d))
            .chain(s.removed_dirs.iter().map(|d| (None, d)))
            .find(|(_, d)| d.durable_path.as_deref() == Some(dir));
        let Some((current_path, d)) = found else {
            return (image, loss);
        };
        // Names a cut would drop are measured against the directory now at
        // this path (none, if it was renamed away or removed).
        let current = if current_path.map(PathBuf::as_path) == Some(dir) {
            &d.current
        } else {
            &empty
        };
        for (name, id) in &d.durable {
            let f = &s.files[id];
            let keep = unsynced.keep(name, f.synced, f.data.len());
            let len = f.synced + keep;
            image.insert(name.clone(), f.data[..len].to_vec());
            match current.get(name) {
                None => loss.names_revived += 1,
                Some(cur) if cur != id => loss.names_reverted += 1,
                Some(_) => {}
            }
            if len < f.data.len() {
                loss.files_cut += 1;
                loss.bytes_dropped += (f.data.len() - len) as u64;
            }
        }
        for (name, id) in current {
            if !d.durable.contains_key(name) {
                loss.names_dropped += 1;
                loss.bytes_dropped += s.files[id].data.len() as u64;
            }
        }
        (image, loss)
    }

    /// Rewrites every directory the model knows to an image a real disk
    /// could hold after the cut, keeping a random part of each file's
    /// unsynced bytes ([`Unsynced::Random`]); returns what was lost. The
    /// database must be dropped first.
    pub fn crash_image(&self, rng: &mut Rng) -> Loss {
        self.crash_image_with(Unsynced::Random(rng))
    }

    /// As [`PowerFs::crash_image`], keeping no unsynced byte.
    pub fn crash_image_dropping_unsynced(&self) -> Loss {
        self.crash_image_with(Unsynced::Drop)
    }

    /// As [`PowerFs::crash_image`], with `unsynced` deciding what survives.
    pub fn crash_image_with(&self, mut unsynced: Unsynced<'_>) -> Loss {
        let (stray, durable): (Vec<PathBuf>, Vec<PathBuf>) = {
            let s = self.lock();
            // Directories now at a path where a cut does not leave them.
            let stray = s
                .dirs
                .iter()
                .filter(|(p, d)| d.durable_path.as_deref() != Some(p.as_path()))
                .map(|(p, _)| p.clone())
                .collect();
            let durable = s
                .dirs
                .values()
                .chain(&s.removed_dirs)
                .filter_map(|d| d.durable_path.clone())
                .collect();
            (stray, durable)
        };
        for p in &stray {
            if !durable.contains(p) {
                let _ = std::fs::remove_dir_all(p);
            }
        }
        let mut total = Loss::default();
        for dir in durable {
            let (image, loss) = self.image(&dir, reborrow(&mut unsynced));
            std::fs::create_dir_all(&dir).unwrap();
            for e in std::fs::read_dir(&dir).unwrap().flatten() {
                let is_file = e.file_type().is_ok_and(|t| t.is_file());
                // LOCK is written outside the seam: left alone.
                if is_file && !image.contains_key(&e.file_name()) && e.file_name() != "LOCK" {
                    std::fs::remove_file(e.path()).unwrap();
                }
            }
            write_image(&image, &dir);
            total.names_dropped += loss.names_dropped;
            total.names_revived += loss.names_revived;
            total.names_reverted += loss.names_reverted;
            total.files_cut += loss.files_cut;
            total.bytes_dropped += loss.bytes_dropped;
        }
        total
    }
}

/// A shorter-lived copy of `u`, so that one policy serves several
/// directories.
fn reborrow<'b>(u: &'b mut Unsynced<'_>) -> Unsynced<'b> {
    match u {
        Unsynced::Drop => Unsynced::Drop,
        Unsynced::Keep => Unsynced::Keep,
        Unsynced::Random(rng) => Unsynced::Random(rng),
        Unsynced::With(f) => Unsynced::With(*f),
    }
}

/// Writes every file of `image` into `dir` (created if missing),
/// replacing files of the same name and leaving other files alone.
pub fn write_image(image: &DirImage, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for (name, bytes) in image {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// Splits `path` into its directory and file name.
fn split(path: &Path) -> (PathBuf, OsString) {
    let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
    let name = path.file_name().expect("a file name").to_os_string();
    (dir, name)
}

impl State {
    /// The maps of `dir`, adopting the regular files it holds the first
    /// time it is seen: they were there before, so they count as durable,
    /// whole.
    fn dir(&mut self, dir: &Path) -> &mut DirState {
        if !self.dirs.contains_key(dir) {
            let mut d = DirState::default();
            if let Ok(entries) = std::fs::read_dir(dir) {
                for e in entries.flatten() {
                    if e.file_type().is_ok_and(|t| t.is_file()) {
                        let data = std::fs::read(e.path()).unwrap_or_default();
                        let id = self.new_file();
                        let f = self.files.get_mut(&id).unwrap();
                        f.synced = data.len();
                        f.data = data;
                        d.current.insert(e.file_name(), id);
                    }
                }
            }
            d.durable = d.current.clone();
            d.durable_path = Some(dir.to_path_buf());
            self.dirs.insert(dir.to_path_buf(), d);
        }
        self.dirs.get_mut(dir).unwrap()
    }

    fn new_file(&mut self) -> FileId {
        let id = self.next_id;
        self.next_id += 1;
        self.files.insert(id, FileData::default());
        id
    }

    /// Records a file just created at `path`.
    fn created(&mut self, path: &Path) -> FileId {
        let (dir, name) = split(path);
        self.dir(&dir);
        let id = self.new_file();
        self.dir(&dir).current.insert(name, id);
        id
    }
}

impl PowerFs {
    fn open(
        &self,
        path: &Path,
        make: impl FnOnce(&Path) -> io::Result<Box<dyn WritableFile>>,
    ) -> io::Result<Box<dyn WritableFile>> {
        let mut s = self.start(OpKind::Create, path)?;
        let (dir, _) = split(path);
        s.dir(&dir); // adopt what was there before the new file
        let inner = make(path)?;
        let id = s.created(path);
        Ok(Box::new(PowerFile {
            fs: self.clone(),
            id,
            path: path.to_path_buf(),
            inner,
        }))
    }
}

impl FileSystem for PowerFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.open(path, |p| StdFs.create(p))
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.open(path, |p| StdFs.create_new(p))
    }

    /// The model keeps only a prefix of each file durable, so it takes the
    /// cut as durable at once: before the next sync a real disk may still
    /// hold the longer file, whose old tail reads as the same torn tail.
    fn reopen_truncated(&self, path: &Path, len: u64) -> io::Result<Box<dyn WritableFile>> {
        let mut s = self.start(OpKind::Truncate, path)?;
        let (dir, name) = split(path);
        s.dir(&dir); // adopt the file before cutting it
        let inner = StdFs.reopen_truncated(path, len)?;
        let id = *s
            .dir(&dir)
            .current
            .get(&name)
            .ok_or(io::ErrorKind::NotFound)?;
        let f = s.files.get_mut(&id).unwrap();
        f.data.truncate(len as usize);
        f.synced = f.synced.min(f.data.len());
        Ok(Box::new(PowerFile {
            fs: self.clone(),
            id,
            path: path.to_path_buf(),
            inner,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.start(OpKind::Rename, from)?;
        let (from_dir, from_name) = split(from);
        let (to_dir, to_name) = split(to);
        s.dir(&from_dir);
        s.dir(&to_dir);
        let is_dir = from.is_dir();
        StdFs.rename(from, to)?;
        if is_dir {
            // The directory moves; where a cut leaves it does not, until
            // the new parent is synced.
            if let Some(d) = s.dirs.remove(from) {
                s.dirs.insert(to.to_path_buf(), d);
            }
        } else if let Some(id) = s.dir(&from_dir).current.remove(&from_name) {
            s.dir(&to_dir).current.insert(to_name, id);
        }
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut s = self.start(OpKind::Remove, path)?;
        let (dir, name) = split(path);
        s.dir(&dir);
        StdFs.remove_file(path)?;
        s.dir(&dir).current.remove(&name);
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.start(OpKind::SyncDir, dir)?;
        StdFs.sync_dir(dir)?;
        let d = s.dir(dir);
        d.durable = d.current.clone();
        // Its subdirectories' entries: made, renamed or removed.
        for (p, d) in s.dirs.iter_mut() {
            if p.parent() == Some(dir) {
                d.durable_path = Some(p.clone());
            }
        }
        s.removed_dirs
            .retain(|d| d.durable_path.as_deref().and_then(Path::parent) != Some(dir));
        Ok(())
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.start(OpKind::CreateDir, dir)?;
        StdFs.create_dir_all(dir)?;
        s.dir(dir);
        Ok(())
    }

    fn create_dir(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.start(OpKind::CreateDir, dir)?;
        StdFs.create_dir(dir)?;
        // New: durable once its parent is synced.
        s.dirs.insert(dir.to_path_buf(), DirState::default());
        Ok(())
    }

    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut s = self.start(OpKind::RemoveDir, dir)?;
        StdFs.remove_dir_all(dir)?;
        if let Some(mut d) = s.dirs.remove(dir) {
            if d.durable_path.is_some() {
                d.current.clear();
                s.removed_dirs.push(d);
            }
        }
        Ok(())
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = self.start(OpKind::Link, to)?;
        let (from_dir, from_name) = split(from);
        let (to_dir, to_name) = split(to);
        s.dir(&from_dir);
        s.dir(&to_dir);
        StdFs.hard_link(from, to)?;
        let id = *s
            .dir(&from_dir)
            .current
            .get(&from_name)
            .ok_or(io::ErrorKind::NotFound)?;
        s.dir(&to_dir).current.insert(to_name, id);
        Ok(())
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<OsString>> {
        StdFs.list_dir(dir)
    }
}

/// A file opened through a [`PowerFs`].
#[derive(Debug)]
struct PowerFile {
    fs: PowerFs,
    id: FileId,
    path: PathBuf,
    inner: Box<dyn WritableFile>,
}

impl WritableFile for PowerFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let mut s = self.fs.start(OpKind::Write, &self.path)?;
        self.inner.write_all(buf)?;
        s.files
            .get_mut(&self.id)
            .unwrap()
            .data
            .extend_from_slice(buf);
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let mut s = self.fs.start(OpKind::Sync, &self.path)?;
        self.inner.sync_data()?;
        let f = s.files.get_mut(&self.id).unwrap();
        f.synced = f.data.len();
        Ok(())
    }

    fn sync_all(&mut self) -> io::Result<()> {
        let mut s = self.fs.start(OpKind::Sync, &self.path)?;
        self.inner.sync_all()?;
        let f = s.files.get_mut(&self.id).unwrap();
        f.synced = f.data.len();
        Ok(())
    }
}
