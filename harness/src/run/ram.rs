//! Run directories in memory. A case's cost on a quiet machine was half the runtime's syncs (issue
//! 36: `perf` put 51 % of the CPU in the runtime, most of it `fsync` through the virtual disk), and
//! a sync buys a run nothing: a process kill leaves the page cache to the next incarnation whether
//! or not it was synced, and a machine crash is the power-loss model's (`crate::run::power_loss`),
//! built from the syncs the tracer saw, not from what the disk did. So when the user has not
//! chosen where temporary files go (`TMPDIR` unset), runs, sockets and built crash states go in
//! `/dev/shm` if it is a tmpfs with room; a failing run that is kept is moved out to the system's
//! temp dir, where the report says it is, so nothing kept lives only in memory.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The least free space `/dev/shm` must have to be used: a few runs of a runtime with a large
/// store (a Postgres data dir is about 40 MB) at a time, with room to spare.
const LEAST_FREE: u64 = 2 << 30;

const SHM: &str = "/dev/shm";

/// Where run directories go when no root is asked for: `/dev/shm` when `TMPDIR` is unset and it is
/// a writable tmpfs with [`LEAST_FREE`] bytes free; `None`: the system's temp dir.
pub fn root() -> Option<&'static Path> {
    static ROOT: OnceLock<Option<PathBuf>> = OnceLock::new();
    ROOT.get_or_init(|| {
        if std::env::var_os("TMPDIR").is_some_and(|t| !t.is_empty()) {
            return None;
        }
        shm_usable().then(|| PathBuf::from(SHM))
    })
    .as_deref()
}

/// Whether `/dev/shm` could hold run directories, whatever `TMPDIR` says (`.ci/run` chooses its
/// temp dir by the same rule).
pub fn shm_usable() -> bool {
    usable(Path::new(SHM))
}

/// Whether `dir` is a tmpfs this user can make directories in, with room.
fn usable(dir: &Path) -> bool {
    let Ok(fs) = nix::sys::statfs::statfs(dir) else { return false };
    let free = fs.blocks_available().saturating_mul(u64::try_from(fs.block_size()).unwrap_or(0));
    fs.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC
        && free >= LEAST_FREE
        && tempfile::Builder::new().prefix("killpoint-probe-").tempdir_in(dir).is_ok()
}

/// Whether `path` lies in the memory root.
pub fn holds(path: &Path) -> bool {
    root().is_some_and(|root| path.starts_with(root))
}

/// Moves the directory `dir` (in memory) into `to` under the same name; returns its new path. A
/// rename when both are one file system; otherwise a copy (sparse; symlinks as symlinks; a socket
/// or a pipe, of no use once the run is over, left out), then the original removed.
pub fn move_out(dir: &Path, to: &Path) -> std::io::Result<PathBuf> {
    let name = dir.file_name().ok_or_else(|| std::io::Error::other(format!("{} has no name", dir.display())))?;
    let dest = to.join(name);
    if std::fs::rename(dir, &dest).is_ok() {
        return Ok(dest);
    }
    if let Err(e) = copy_tree(dir, &dest) {
        let _ = std::fs::remove_dir_all(&dest);
        return Err(e);
    }
    std::fs::remove_dir_all(dir)?;
    Ok(dest)
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir(to)?;
    std::fs::set_permissions(to, std::fs::metadata(from)?.permissions())?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (kind, target) = (entry.file_type()?, to.join(entry.file_name()));
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            crate::run::sparse::copy_file(&entry.path(), &target)?;
            let mode = entry.metadata()?.permissions().mode();
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode))?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_moved_out_of_a_file_system_keeps_its_files_links_and_modes() {
        use std::os::unix::fs::PermissionsExt;
        let (from, to) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let run = from.path().join("killpoint-case-abc");
        std::fs::create_dir_all(run.join("data/sub")).unwrap();
        std::fs::write(run.join("data/sub/store"), b"rows").unwrap();
        std::fs::write(run.join("rerun.sh"), b"exec true\n").unwrap();
        std::fs::set_permissions(run.join("rerun.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("sub/store", run.join("data/current")).unwrap();
        // Copied, as across file systems (a rename would not show the copy).
        let dest = to.path().join("killpoint-case-abc");
        copy_tree(&run, &dest).unwrap();
        assert_eq!(std::fs::read(dest.join("data/current")).unwrap(), b"rows");
        assert!(std::fs::symlink_metadata(dest.join("data/current")).unwrap().file_type().is_symlink());
        let mode = std::fs::metadata(dest.join("rerun.sh")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
        // And moved: the original gone, the copy where it is said to be.
        std::fs::remove_dir_all(&dest).unwrap();
        let moved = move_out(&run, to.path()).unwrap();
        assert_eq!(moved, dest);
        assert!(!run.exists() && moved.join("data/sub/store").is_file());
    }
}
