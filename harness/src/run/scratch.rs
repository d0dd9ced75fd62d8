//! Directories that hold nothing worth keeping (the sockets' short directory, the copies of built
//! crash states): removed when dropped, and all at once by the CLI's interrupt handler, which
//! exits without running destructors. A run's own directory is evidence, not scratch: an
//! interrupt keeps it and says where (the artifacts module keeps its own list).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The scratch directories that exist right now in this process.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// One scratch directory in the system's temp dir (in memory where `crate::run::ram` says so),
/// owner only.
#[derive(Debug)]
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    /// A new `<prefix>XXXXXX` directory, known to [`remove_all`] from the moment it exists.
    pub fn new(prefix: &str) -> std::io::Result<Scratch> {
        let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        let mut builder = tempfile::Builder::new();
        builder.prefix(prefix).permissions(std::fs::Permissions::from_mode(0o700));
        let dir = match crate::run::ram::root() {
            Some(root) => builder.tempdir_in(root)?,
            None => builder.tempdir()?,
        };
        live.push(dir.path().to_owned());
        Ok(Scratch { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Removed while still listed, then unlisted: an interrupt in between removes it again.
        let path = self.dir.path().to_owned();
        let _ = std::fs::remove_dir_all(&path);
        LIVE.lock().unwrap_or_else(|p| p.into_inner()).retain(|p| *p != path);
    }
}

/// Removes every scratch directory of this process, for a process about to exit: none can be
/// made after (the registry stays locked), so none is left behind by a thread still running.
pub fn remove_all() {
    let live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    for path in live.iter() {
        let _ = std::fs::remove_dir_all(path);
    }
    std::mem::forget(live);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_dir_is_known_while_it_exists_and_gone_when_dropped() {
        let scratch = Scratch::new("killpoint-scratch-test-").expect("a scratch dir");
        let path = scratch.path().to_owned();
        assert!(LIVE.lock().unwrap().contains(&path));
        drop(scratch);
        assert!(!path.exists());
        assert!(!LIVE.lock().unwrap().contains(&path));
    }
}
