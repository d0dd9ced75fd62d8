//! Where a run keeps the runtime's data dir and logs: a private temp dir, removed when the run
//! passes, kept (and its path printed) when it fails — and, while it exists, known to the CLI's
//! interrupt handler, so a Ctrl-C says where the unfinished run's evidence is.
//!
//! The probe's and the tracer's Unix sockets live apart, in a short private directory of the
//! system's temp dir removed with the run: a socket's path is limited to 108 bytes (`sun_path`),
//! and a CI workspace's `--artifacts-dir` is often longer than that leaves.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::scratch::Scratch;

/// Every artifact directory of this process, under one lock: an interrupt must see each one
/// exactly where it is — in progress, or kept — never between the two, and never made but not
/// yet listed, or listed no more but not yet removed (issue 32: an interrupted explore left a run
/// directory the interrupt did not name, 1 run in 4 under load).
static DIRS: Mutex<Dirs> = Mutex::new(Dirs { live: Vec::new(), kept: Vec::new(), kept_bytes: 0 });

struct Dirs {
    /// The runs in progress.
    live: Vec<PathBuf>,
    /// The runs this process kept (failing ones), for an interrupt to name: the report that
    /// would have said where they are is never printed.
    kept: Vec<PathBuf>,
    /// What the kept runs take on disk, for [`KEEP_LIMIT`].
    kept_bytes: u64,
}

/// The most the run directories one process keeps may take on disk (`--keep-limit`, in bytes):
/// past it, a kept run keeps its evidence but not its data dir (issue 32: one explore of a naive
/// runtime kept 13 GB).
static KEEP_LIMIT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(DEFAULT_KEEP_LIMIT);

/// 1 GiB: a few hundred failing cases of a runtime with a small store, a handful of one whose
/// engine preallocates its files.
pub const DEFAULT_KEEP_LIMIT: u64 = 1 << 30;

/// Sets [`KEEP_LIMIT`] for this process.
pub fn set_keep_limit(bytes: u64) {
    KEEP_LIMIT.store(bytes, std::sync::atomic::Ordering::Relaxed);
}

fn dirs() -> std::sync::MutexGuard<'static, Dirs> {
    DIRS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The most bytes a Unix socket's path may have: `sun_path` is 108 bytes, with its NUL.
pub const SOCKET_PATH_MAX: usize = 107;

/// The sockets' directory's prefix, and the longest socket name in it (`probe.sock`,
/// `trace.sock`): what [`sockets_fit`] measures.
const SOCKETS_PREFIX: &str = "killpoint-sock-";
const LONGEST_SOCKET: &str = "trace.sock";

#[derive(Debug)]
pub struct Artifacts {
    dir: Option<tempfile::TempDir>,
    /// The sockets' own short directory; gone when the run is kept or dropped.
    sockets: Option<Scratch>,
}

impl Artifacts {
    /// A new `killpoint-<name>-XXXXXX` directory in the temp dir, owner only: the runtime's data and
    /// logs are the harness user's alone (tempfile's own default follows the umask, often 0755).
    pub fn create(name: &str) -> std::io::Result<Artifacts> {
        Artifacts::create_in(None, name)
    }

    /// The same, in `root` (`None`: the system's temp dir).
    pub fn create_in(root: Option<&Path>, name: &str) -> std::io::Result<Artifacts> {
        // Long names (explored cases) are cut, the random suffix keeps them apart.
        let short: String = name.chars().take(40).collect();
        let prefix = format!("killpoint-{short}-");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).permissions(std::fs::Permissions::from_mode(0o700));
        let sockets = Scratch::new(SOCKETS_PREFIX)
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot make the sockets' directory: {e}")))?;
        // Made and listed under the lock: there is no instant at which it exists unlisted.
        let mut dirs = dirs();
        let dir = match root {
            Some(root) => builder.tempdir_in(root)?,
            None => builder.tempdir()?,
        };
        dirs.live.push(dir.path().to_owned());
        Ok(Artifacts { dir: Some(dir), sockets: Some(sockets) })
    }

    /// Where the run's socket `name` goes: in the sockets' short directory, not the run's.
    pub fn socket(&self, name: &str) -> PathBuf {
        self.sockets.as_ref().expect("present until kept or dropped").path().join(name)
    }

    pub fn path(&self) -> &Path {
        self.dir.as_ref().expect("present until kept or dropped").path()
    }

    /// Keeps the directory on disk (moved out of memory into the system's temp dir if it was
    /// there; left where it is if it cannot be); returns where.
    pub fn keep(mut self) -> PathBuf {
        let dir = self.dir.take().expect("present until kept or dropped");
        // The run is over: its sockets are of no use to anyone.
        drop(self.sockets.take());
        // Moved from one list to the other in one step.
        let mut dirs = dirs();
        let in_memory = dir.keep();
        dirs.live.retain(|p| *p != in_memory);
        let kept = match crate::run::ram::holds(&in_memory) {
            true => crate::run::ram::move_out(&in_memory, &std::env::temp_dir()).unwrap_or(in_memory),
            false => in_memory,
        };
        let limit = KEEP_LIMIT.load(std::sync::atomic::Ordering::Relaxed);
        let mut size = crate::run::sparse::allocated(&kept);
        if dirs.kept_bytes + size > limit {
            size = leave_data_out(&kept, dirs.kept_bytes, limit);
        }
        dirs.kept_bytes += size;
        dirs.kept.push(kept.clone());
        kept
    }
}

/// The file that stands for a kept run's data dir left out, and says why.
pub const LEFT_OUT: &str = "data.LEFT-OUT.txt";

/// Removes a kept run's data dir (its bulk: the runtime's store), leaving a note that says why;
/// returns what the run then takes on disk.
fn leave_data_out(run: &Path, kept_before: u64, limit: u64) -> u64 {
    let data = run.join("data");
    let bytes = crate::run::sparse::allocated(&data);
    if std::fs::remove_dir_all(&data).is_ok() {
        let note = format!(
            "data/ ({}) was left out: this process had kept {} of run directories, and its limit is {} (--keep-limit MB).\n\
             rerun.sh runs the case again, and makes its data dir anew.\n",
            megabytes(bytes),
            megabytes(kept_before),
            megabytes(limit)
        );
        let _ = std::fs::write(run.join(LEFT_OUT), note);
    }
    crate::run::sparse::allocated(run)
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_000_000.0)
}

impl Drop for Artifacts {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            // Removed while still listed: an interrupt meanwhile names what is left of it.
            let path = dir.path().to_owned();
            let _ = dir.close();
            dirs().live.retain(|p| *p != path);
        }
    }
}

/// Whether a socket's path in the sockets' directory can be bound: checked before anything runs,
/// so that a temp dir too long for one is one message naming it and the limit, not every
/// scenario's "could not run".
pub fn sockets_fit() -> Result<(), String> {
    let root = std::env::temp_dir();
    let example = root.join(format!("{SOCKETS_PREFIX}XXXXXX")).join(LONGEST_SOCKET);
    let len = example.as_os_str().len();
    if len <= SOCKET_PATH_MAX {
        return Ok(());
    }
    Err(format!(
        "the probe's and the tracer's Unix sockets go in the temp dir {}, where their paths ({}) would be {len} \
         bytes; a Unix socket's path must be shorter than 108 bytes: set TMPDIR to a shorter directory",
        root.display(),
        example.display()
    ))
}

/// How every report points at kept artifacts: where, what they take on disk, and what is there
/// (the data dir, or why it was left out).
pub fn kept_at(path: &Path) -> String {
    let size = megabytes(crate::run::sparse::allocated(path));
    let data = match path.join(LEFT_OUT).is_file() {
        true => format!("data/ left out over the limit of kept artifacts, see {LEFT_OUT}"),
        false => "data/ is the runtime's data dir".to_owned(),
    };
    format!(
        "artifacts kept at {} ({size}: report.html, rerun.sh; <scenario>.toml, trace.jsonl, ledger/*.jsonl; {data}, logs/ its output per incarnation)",
        path.display()
    )
}

/// The artifact directories of runs still in progress (for an interrupt handler to report).
pub fn live() -> Vec<PathBuf> {
    dirs().live.clone()
}

/// The artifact directories this process kept (failing runs), for an interrupt handler to report.
pub fn kept() -> Vec<PathBuf> {
    dirs().kept.clone()
}

/// For a process about to exit on an interrupt: the kept directories and those in progress, as
/// one consistent view that no thread changes afterwards (the lock is never released, so no run
/// makes, keeps or removes a directory between this answer and the exit).
pub fn frozen() -> (Vec<PathBuf>, Vec<PathBuf>) {
    let dirs = dirs();
    let view = (dirs.kept.clone(), dirs.live.clone());
    std::mem::forget(dirs);
    view
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run made where `crate::run::ram` says (in memory when `TMPDIR` is unset and `/dev/shm`
    /// serves) and kept is in the system's temp dir, whole, and no longer in memory.
    #[test]
    fn a_kept_run_is_in_the_temp_dir_whole_wherever_it_ran() {
        let run = Artifacts::create_in(crate::run::ram::root(), "keep-test").expect("a run dir");
        let made = run.path().to_owned();
        match crate::run::ram::root() {
            Some(ram) => assert!(made.starts_with(ram), "{} is not in {}", made.display(), ram.display()),
            None => assert!(made.starts_with(std::env::temp_dir()), "{}", made.display()),
        }
        std::fs::create_dir(made.join("data")).unwrap();
        std::fs::write(made.join("data/store"), b"rows").unwrap();
        let kept = run.keep();
        assert!(kept.starts_with(std::env::temp_dir()) && !crate::run::ram::holds(&kept), "{}", kept.display());
        assert_eq!(std::fs::read(kept.join("data/store")).unwrap(), b"rows");
        assert!(crate::run::ram::root().is_none() || !made.exists(), "the copy in memory is gone");
        std::fs::remove_dir_all(&kept).unwrap();
    }
}
