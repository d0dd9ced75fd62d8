//! Where a run keeps the runtime's data dir and logs: a private temp dir, removed when the run
//! passes, kept (and its path printed) when it fails — and, while it exists, known to the CLI's
//! interrupt handler, so a Ctrl-C says where the unfinished run's evidence is.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The artifact directories that exist right now in this process.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

#[derive(Debug)]
pub struct Artifacts {
    dir: Option<tempfile::TempDir>,
}

impl Artifacts {
    /// A new `killpoint-<name>-XXXXXX` directory in the temp dir, owner only: the runtime's data and
    /// logs are the harness user's alone (tempfile's own default follows the umask, often 0755).
    pub fn create(name: &str) -> std::io::Result<Artifacts> {
        Artifacts::create_in(None, name)
    }

    /// The same, in `root` (`None`: the system's temp dir).
    pub fn create_in(root: Option<&Path>, name: &str) -> std::io::Result<Artifacts> {
        // A Unix socket path (the probe's, inside this dir) is limited to 107 bytes: long names
        // (explored cases) are cut, the random suffix keeps them apart.
        let short: String = name.chars().take(40).collect();
        let prefix = format!("killpoint-{short}-");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).permissions(std::fs::Permissions::from_mode(0o700));
        let dir = match root {
            Some(root) => builder.tempdir_in(root)?,
            None => builder.tempdir()?,
        };
        LIVE.lock().unwrap_or_else(|p| p.into_inner()).push(dir.path().to_owned());
        Ok(Artifacts { dir: Some(dir) })
    }

    pub fn path(&self) -> &Path {
        self.dir.as_ref().expect("present until kept or dropped").path()
    }

    /// Keeps the directory on disk; returns where.
    pub fn keep(mut self) -> PathBuf {
        let dir = self.dir.take().expect("present until kept or dropped");
        forget(dir.path());
        dir.keep()
    }
}

impl Drop for Artifacts {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            forget(dir.path());
        }
    }
}

fn forget(path: &Path) {
    LIVE.lock().unwrap_or_else(|p| p.into_inner()).retain(|p| p != path);
}

/// How every report points at kept artifacts.
pub fn kept_at(path: &Path) -> String {
    format!(
        "artifacts kept at {} (report.html, rerun.sh; <scenario>.toml, trace.jsonl, ledger/*.jsonl; data/ is the runtime's data dir, logs/ its output per incarnation)",
        path.display()
    )
}

/// The artifact directories of runs still in progress (for an interrupt handler to report).
pub fn live() -> Vec<PathBuf> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner()).clone()
}
