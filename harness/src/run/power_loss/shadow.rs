//! What was synced: a copy of each file as of its last sync, and each directory's names as of its
//! last sync, taken from the tracer's points while the runtime is held at them.
//!
//! Files are told apart by inode while they have a name, so a rename keeps a file's copy and a
//! sync through any fd finds it. An inode whose last name was unlinked or renamed over is retired
//! (a later file may get the same number): its copy stays, under a [`FileId`] of its own, for the
//! directory listing that may still name it.

use crate::tracer::{Point, PointKind, When};
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// One file's identity for the model: an inode while it has a name, kept after.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct FileId(u64);

/// A name in a directory, as of the directory's last sync.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Entry {
    File(FileId),
    Dir,
}

/// What a power loss would leave of one directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Tree {
    pub(super) files: BTreeMap<OsString, Vec<u8>>,
    pub(super) dirs: BTreeMap<OsString, Tree>,
}

#[derive(Debug)]
pub(super) struct Shadow {
    /// The data dir as given and canonical: fds resolve to canonical paths, path arguments not.
    roots: Vec<PathBuf>,
    ids: HashMap<u64, FileId>,
    next: u64,
    /// Each file's bytes as of its last sync (or the baseline).
    contents: HashMap<FileId, Vec<u8>>,
    /// Each directory's names (relative to the root) as of its last sync (or the baseline).
    listings: HashMap<PathBuf, BTreeMap<OsString, Entry>>,
    /// An unlink or rename held at its `before` point, by thread: the inode it will retire.
    doomed: HashMap<i32, u64>,
    /// The first thing that could not be read, said at the restore.
    pub(super) trouble: Option<String>,
}

impl Shadow {
    /// Everything under `root` now, as durable.
    pub(super) fn scan(root: &Path) -> std::io::Result<Shadow> {
        let mut roots = vec![root.to_path_buf()];
        if let Ok(canonical) = root.canonicalize()
            && canonical != root
        {
            roots.push(canonical);
        }
        let mut shadow = Shadow {
            roots,
            ids: HashMap::new(),
            next: 0,
            contents: HashMap::new(),
            listings: HashMap::new(),
            doomed: HashMap::new(),
            trouble: None,
        };
        shadow.sync_all()?;
        Ok(shadow)
    }

    pub(super) fn root(&self) -> &Path {
        &self.roots[0]
    }

    pub(super) fn record(&mut self, point: &Point) {
        let done = point.when == When::After && point.ret.is_none_or(|r| r >= 0);
        let result = match (point.kind, point.when) {
            (PointKind::Sync, When::After) if done && matches!(point.call.as_str(), "sync" | "syncfs") => {
                self.sync_all()
            }
            (PointKind::Sync, When::After) if done => self.sync_path(point.path.as_deref()),
            (PointKind::Durable, When::After) if done && point.synced => self.sync_path(point.path.as_deref()),
            (PointKind::Unlink, When::Before) => {
                self.doom(point.tid, point.path.as_deref());
                Ok(())
            }
            (PointKind::Rename, When::Before) => {
                self.doom(point.tid, point.to.as_deref());
                Ok(())
            }
            (PointKind::Unlink | PointKind::Rename, When::After) => {
                let doomed = self.doomed.remove(&point.tid);
                if let (true, Some(inode)) = (done, doomed) {
                    self.ids.remove(&inode);
                }
                Ok(())
            }
            _ => Ok(()),
        };
        if let Err(e) = result {
            self.trouble
                .get_or_insert_with(|| format!("at `{} {}`: {e}", point.call, point.path.as_deref().unwrap_or("")));
        }
    }

    /// The file a name points to before it is unlinked or renamed over, to retire its inode once
    /// the call succeeded.
    fn doom(&mut self, tid: i32, path: Option<&str>) {
        let meta = path.and_then(|p| std::fs::symlink_metadata(p).ok()).filter(|m| m.is_file());
        match meta {
            Some(meta) => self.doomed.insert(tid, meta.ino()),
            None => self.doomed.remove(&tid),
        };
    }

    /// A sync of one file (its bytes) or directory (its names). A name gone by now (another thread
    /// renamed or unlinked it meanwhile) leaves the directories' listings to say what survives.
    fn sync_path(&mut self, path: Option<&str>) -> std::io::Result<()> {
        let Some(path) = path.map(Path::new) else { return Ok(()) };
        let meta = match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            other => other?,
        };
        if meta.is_dir() {
            let Some(relative) = self.relative(path) else { return Ok(()) };
            let listing = self.list(path)?;
            self.listings.insert(relative, listing);
        } else if meta.is_file() {
            let bytes = match std::fs::read(path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                other => other?,
            };
            let id = self.id(meta.ino());
            self.contents.insert(id, bytes);
        }
        Ok(())
    }

    /// Every file and directory under the root synced (the baseline, `sync`, `syncfs`).
    fn sync_all(&mut self) -> std::io::Result<()> {
        let mut pending = vec![self.root().to_path_buf()];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir)? {
                let path = entry?.path();
                if std::fs::symlink_metadata(&path)?.is_dir() {
                    pending.push(path);
                } else {
                    self.sync_path(path.to_str())?;
                }
            }
            self.sync_path(dir.to_str())?;
        }
        Ok(())
    }

    fn list(&mut self, dir: &Path) -> std::io::Result<BTreeMap<OsString, Entry>> {
        let mut listing = BTreeMap::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.is_dir() {
                listing.insert(entry.file_name(), Entry::Dir);
            } else if meta.is_file() {
                listing.insert(entry.file_name(), Entry::File(self.id(meta.ino())));
            }
        }
        Ok(listing)
    }

    fn id(&mut self, inode: u64) -> FileId {
        let next = &mut self.next;
        *self.ids.entry(inode).or_insert_with(|| {
            *next += 1;
            FileId(*next)
        })
    }

    fn relative(&self, path: &Path) -> Option<PathBuf> {
        self.roots.iter().find_map(|root| path.strip_prefix(root).ok()).map(Path::to_path_buf)
    }

    /// The root as a power loss now would leave it: the synced names, each with its synced bytes
    /// (none for a file whose name was synced but never its bytes).
    pub(super) fn durable_tree(&self) -> Tree {
        self.tree(Path::new(""))
    }

    fn tree(&self, relative: &Path) -> Tree {
        let mut tree = Tree::default();
        for (name, entry) in self.listings.get(relative).into_iter().flatten() {
            match entry {
                Entry::File(id) => {
                    tree.files.insert(name.clone(), self.contents.get(id).cloned().unwrap_or_default());
                }
                Entry::Dir => {
                    tree.dirs.insert(name.clone(), self.tree(&relative.join(name)));
                }
            }
        }
        tree
    }
}
