//! Building the data dir a power loss would leave: everything in it removed (the dead runtime's
//! files, synced or not), then the durable tree written back.

use super::shadow::Tree;
use std::path::Path;

/// `root` (kept itself: the runtime is given its path) holds exactly `tree`.
pub(super) fn rebuild(root: &Path, tree: &Tree) -> std::io::Result<()> {
    for entry in std::fs::read_dir(root).map_err(|e| at(root, "list", e))? {
        let path = entry.map_err(|e| at(root, "list", e))?.path();
        let removed = match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        removed.map_err(|e| at(&path, "remove", e))?;
    }
    write(root, tree)
}

pub(super) fn write(dir: &Path, tree: &Tree) -> std::io::Result<()> {
    for (name, bytes) in &tree.files {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| at(&path, "write", e))?;
    }
    for (name, sub) in &tree.dirs {
        let path = dir.join(name);
        std::fs::create_dir(&path).map_err(|e| at(&path, "make", e))?;
        write(&path, sub)?;
    }
    Ok(())
}

fn at(path: &Path, what: &str, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("power loss: cannot {what} {}: {e}", path.display()))
}
