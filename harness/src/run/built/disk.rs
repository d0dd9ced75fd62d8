//! The data dir a crash leaves, as the next incarnation finds it: one image per crash model.

use crate::run::power_loss::DurableImage;
use std::path::{Path, PathBuf};

/// The data dir at a crash point, kept until the cases built from it have run.
#[derive(Debug)]
pub enum DiskImage {
    /// A process crash (SIGKILL): everything the runtime handed the kernel is there, synced or
    /// not, so the image is a copy of the whole dir, kept on disk.
    AsKilled(PathBuf),
    /// A machine crash (power loss): only what was synced, as the power-loss model keeps it
    /// (`crate::run::power_loss`), the same bytes its restore leaves after a re-run's kill.
    PowerLost(DurableImage),
}

impl DiskImage {
    /// Copies `data` (the runtime held stopped) into `into`, a directory that must not exist.
    pub fn as_killed(data: &Path, into: PathBuf) -> std::io::Result<DiskImage> {
        copy_dir(data, &into)?;
        Ok(DiskImage::AsKilled(into))
    }

    /// Writes the image as the data dir `dest` (which must not exist).
    pub fn write_to(&self, dest: &Path) -> std::io::Result<()> {
        match self {
            DiskImage::AsKilled(copy) => copy_dir(copy, dest),
            DiskImage::PowerLost(image) => image.write_to(dest),
        }
    }
}

/// A recursive copy of regular files and directories; anything else (a socket, a symlink) is
/// refused by name: a runtime's state the harness cannot copy faithfully must not be guessed.
pub(super) fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir(to).map_err(|e| named("create", to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| named("read", from, e))? {
        let entry = entry.map_err(|e| named("read", from, e))?;
        let kind = entry.file_type().map_err(|e| named("stat", &entry.path(), e))?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if kind.is_file() {
            crate::run::sparse::copy_file(&entry.path(), &target).map_err(|e| named("copy", &entry.path(), e))?;
        } else {
            return Err(std::io::Error::other(format!(
                "cannot copy {} out of the data dir: expected a regular file or a directory, found {kind:?}",
                entry.path().display()
            )));
        }
    }
    Ok(())
}

fn named(what: &str, path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("cannot {what} {}: {e}", path.display()))
}
