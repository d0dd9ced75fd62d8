//! The PostgreSQL cluster the `frameworks::dbos_postgres` trials copy (`postgres.sh --template`):
//! made by `postgres.sh --initdb` once per test binary, by the first trial that needs it, in a temp
//! dir of the binary's own, removed when the binary ends. `initdb` costs 0.85 s of CPU; a synced
//! copy of its cluster 0.2 s (on a 2-core machine at a load of 12, a run's server is ready after
//! 3.8 s instead of 5.8 s).
//!
//! Why it stays honest: a server never runs on the template (postgres.sh copies it, then starts
//! the copy, and refuses a template a server has run on, `postmaster.pid` or `postmaster.opts`
//! present: `template_refused_once_started`), so every run still starts on a cluster fresh from
//! `initdb`, its own, and nothing of one run reaches another.

use super::installed::within;
use libtest_mimic::Failed;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// The template, made at most once.
pub struct Template {
    dir: Result<tempfile::TempDir, String>,
    made: OnceLock<Result<PathBuf, String>>,
}

impl Template {
    pub fn new() -> Template {
        let dir = tempfile::Builder::new()
            .prefix("killpoint-pg-template-")
            .tempdir()
            .map_err(|e| format!("expected a temp dir for the PostgreSQL template, found: {e}"));
        Template { dir, made: OnceLock::new() }
    }

    /// The template's cluster, made by `script` (postgres.sh) the first time it is asked for.
    pub fn cluster(&self, script: &Path) -> Result<PathBuf, String> {
        self.made
            .get_or_init(|| {
                let cluster = self.dir.as_ref().map_err(String::clone)?.path().join("cluster");
                let mut initdb = Command::new("sh");
                initdb.arg(script).arg("--initdb").arg(&cluster);
                // A bound, not a wait: initdb takes 1 s idle, 6 s at a load of 12.
                within(Duration::from_secs(60), &mut initdb, "postgres.sh --initdb")
                    .map_err(|e| e.message().unwrap_or("failed").to_owned())?;
                Ok(cluster)
            })
            .clone()
    }
}

/// postgres.sh refuses, naming it, a template a server has run on; and takes a fresh one.
pub fn template_refused_once_started(root: &Path) -> Result<(), Failed> {
    let script = root.join("examples/dbos/postgres.sh");
    let scratch = tempfile::tempdir()?;
    let (template, data) = (scratch.path().join("template"), scratch.path().join("data"));
    std::fs::create_dir_all(&template)?;
    std::fs::create_dir_all(&data)?;
    std::fs::write(template.join("PG_VERSION"), "15\n")?;
    std::fs::write(template.join("postmaster.opts"), "postgres -D template\n")?;
    let mut server = Command::new("sh");
    server.arg(&script).arg("--template").arg(&template).env("KILLPOINT_SERVICE_DATA_DIR", &data);
    server.env("KILLPOINT_SERVICE_PORT", "1");
    let refused = within(Duration::from_secs(20), &mut server, "postgres.sh --template (started)");
    let said = refused.as_ref().err().and_then(|e| e.message()).unwrap_or_default().to_owned();
    let expected = "expected in";
    if refused.is_ok() || !said.contains(expected) || !said.contains("postmaster.opts") || data.join("cluster").exists()
    {
        return Err(format!(
            "expected postgres.sh to refuse a template with postmaster.opts, naming it, and copy nothing; found: {said}"
        )
        .into());
    }
    Ok(())
}
