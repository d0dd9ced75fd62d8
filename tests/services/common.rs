//! What the services trials share: the fixtures, the run options with a services file, and the
//! check that a run left nothing behind.

use killpoint::run::services::Services;
use killpoint::{Happening, Run, RunOptions, Scenario, Target};
use libtest_mimic::Failed;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures").join("services")
}

pub fn scenario(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(format!("{name}.toml"));
    Scenario::load(&path).expect("shipped scenarios parse")
}

/// kv_worker.py in front of the reference runtime.
pub fn worker() -> Target {
    let runtime = env!("CARGO_BIN_EXE_killpoint-runtime").to_owned();
    Target { program: fixtures().join("kv_worker.py"), args: vec![runtime] }
}

/// Run options with the services of `file` and run directories in `root`. The ready deadline is
/// for a Python start on a loaded 2-core machine (as tests/hostile.rs's).
pub fn options(file: &str, root: &Path) -> RunOptions {
    let services = Services::load(&fixtures().join(file)).expect("the fixture's services file parses");
    RunOptions {
        services,
        artifacts_root: Some(root.to_owned()),
        ready_timeout: Duration::from_secs(20),
        ..RunOptions::default()
    }
}

/// Live processes (zombies excluded) whose environment contains `needle`: every process of a run,
/// worker or service, carries its run directory there (KILLPOINT_DATA_DIR,
/// KILLPOINT_SERVICE_DATA_DIR).
pub fn running_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let dir = entry.path();
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else { continue };
        let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next());
        if matches!(state, Some('Z' | 'X') | None) {
            continue;
        }
        let environ = String::from_utf8_lossy(&std::fs::read(dir.join("environ")).unwrap_or_default()).into_owned();
        if environ.contains(needle) {
            let cmdline =
                String::from_utf8_lossy(&std::fs::read(dir.join("cmdline")).unwrap_or_default()).replace('\0', " ");
            found.push(format!("{}: {cmdline}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

/// Nothing of `run` is left once it is dropped: no process carrying its directory (the harness
/// reaped the worker and the services before returning the run), and no file in `root` nor its
/// sockets' directory after the drop.
pub fn nothing_left(run: Run, root: &Path) -> Result<(), Failed> {
    let dir = run.artifacts_path().display().to_string();
    let left = running_with(&dir);
    if !left.is_empty() {
        return Err(format!("still running after the run: {left:?}").into());
    }
    let sockets = run.artifacts.socket("probe.sock").parent().map(Path::to_owned);
    drop(run);
    let files: Vec<_> = std::fs::read_dir(root)?.flatten().map(|e| e.path()).collect();
    if !files.is_empty() {
        return Err(format!("left in the run's root {}: {files:?}", root.display()).into());
    }
    match sockets {
        Some(s) if s.exists() => Err(format!("the sockets' directory {} was left", s.display()).into()),
        _ => Ok(()),
    }
}

pub fn count(run: &Run, wanted: fn(&Happening) -> bool) -> usize {
    run.timeline.iter().filter(|m| wanted(&m.happening)).count()
}
