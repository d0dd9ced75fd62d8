//! Building the data dir a power loss would leave: everything in it removed (the dead runtime's
//! files, synced or not), then the durable tree written back.

use super::shadow::Tree;
use std::path::Path;

/// `root` (kept itself: the runtime is given its path) holds exactly `tree`.
/// What a power loss took from a data dir: a line per file that lost bytes or vanished, and per
/// directory that vanished, relative to the data dir (`runtime.sqlite3-wal: 4120 of 8272 bytes
/// lost`, `tmp-123: vanished (its name never synced)`).
pub(super) fn lost(dir: &Path, tree: &Tree, prefix: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut said = Vec::new();
    for entry in entries.flatten() {
        let (name, path) = (entry.file_name(), entry.path());
        let shown = prefix.join(&name).display().to_string();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        match (is_dir, tree.files.get(&name), tree.dirs.get(&name)) {
            (true, _, Some(sub)) => said.extend(lost(&path, sub, &prefix.join(&name))),
            (true, _, None) => said.push(format!("{shown}/: vanished (its name never synced)")),
            (false, Some(kept), _) => {
                let now = std::fs::read(&path).unwrap_or_default();
                if now != *kept {
                    said.push(format!("{shown}: back to its last sync ({} of {} bytes kept)", kept.len(), now.len()));
                }
            }
            (false, None, _) => said.push(format!("{shown}: vanished (its name never synced)")),
        }
    }
    said.sort();
    said
}

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
