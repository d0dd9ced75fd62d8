//! `frameworks::installed_kit`: the Python kit as a user gets it. `pip install ./probe-kit/python`
//! into a fresh virtualenv in a temporary directory (the machine's pip, `--python`), a runtime of
//! 40 lines written there that uses only `killpoint_shell` with an in-memory "engine" of its own,
//! and `killpoint certify` on it. A kit that is not installable (a module left out of
//! pyproject.toml), or a shell whose `run` hook an engine cannot drive, fails here; the
//! repository's copy is never on the path.

use libtest_mimic::Failed;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

/// The user's runtime: an engine that journals each workflow's step outputs in memory (lost with
/// the process, as an engine whose records are not durable) and replays them, around the
/// shell's `execute`: 40 lines at most, as the issue asks.
const RUNTIME: &str = r#"#!/usr/bin/env python3
"""A runtime on the installed kit alone, with a toy engine of its own."""
import sys
import threading
import time

import killpoint_shell as ks

assert "probe-kit" not in ks.__file__, ks.__file__  # the installed copy, not the repository's


class Engine:
    """Runs a workflow as numbered steps, each step's output kept once it returns: a replay
    of the same workflow returns the kept output instead of running the step again."""

    def __init__(self):
        self.journal = {}
        self.lock = threading.Lock()

    def step(self, workflow_id, number, function, *args):
        key = (workflow_id, number)
        with self.lock:
            if key in self.journal:
                return self.journal[key]
        output = function(*args)
        with self.lock:
            self.journal[key] = output
        return output

    def run(self, workflow_id):
        number = 0
        while (pause := self.step(workflow_id, number, ks.execute, workflow_id)) is not None:
            time.sleep(pause)  # between rounds; the shell's state says where to go on from
            number += 1


if __name__ == "__main__":
    print("engine: in memory", file=sys.stderr)
    ks.serve(run=Engine().run)
"#;

pub fn installed_kit(root: &Path) -> Result<(), Failed> {
    let killpoint = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("killpoint")))
        .filter(|path| path.is_file())
        .ok_or("expected the `killpoint` binary beside this test's directory; run `cargo build --workspace` first")?;
    let tmp = tempfile::Builder::new().prefix("killpoint-installed-kit-").tempdir().map_err(|e| e.to_string())?;
    let venv = tmp.path().join("venv");
    let minutes = |n: u64| Duration::from_secs(60 * n);
    // Without pip of its own: the machine's pip installs into it (`pip --python`), as a user's pip
    // would from inside it. Making a virtualenv's own pip (ensurepip) was 4 s of this trial's 12.
    within(
        minutes(2),
        Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&venv),
        "python3 -m venv --without-pip",
    )?;
    let kit = root.join("probe-kit/python");
    // A copy, so that pip's build leaves nothing behind in the repository (build/, *.egg-info).
    let source = tmp.path().join("kit");
    within(minutes(1), Command::new("cp").arg("-r").arg(&kit).arg(&source), "cp -r probe-kit/python")?;
    within(
        minutes(5),
        Command::new("python3")
            .args(["-m", "pip", "--python"])
            .arg(venv.join("bin/python"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .arg(&source),
        "python3 -m pip --python VENV install ./probe-kit/python",
    )?;
    let runtime = tmp.path().join("runtime.py");
    std::fs::write(&runtime, RUNTIME.replace("/usr/bin/env python3", &venv.join("bin/python").display().to_string()))
        .map_err(|e| format!("{}: {e}", runtime.display()))?;
    std::fs::set_permissions(&runtime, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .map_err(|e| e.to_string())?;
    assert!(RUNTIME.lines().count() <= 40, "the user's runtime is at most 40 lines");
    let output = within(
        minutes(15),
        Command::new(killpoint)
            .arg("certify")
            .arg("--runtime")
            .arg(&runtime)
            .arg("--artifacts-dir")
            .arg(tmp.path().join("runs"))
            .current_dir(tmp.path()),
        "killpoint certify",
    )?;
    let report = String::from_utf8_lossy(&output.stdout);
    let summary = report.lines().find(|line| line.contains(" passed, ")).unwrap_or("no summary line").to_owned();
    eprintln!("installed kit, in-memory engine: {summary}");
    Ok(())
}

/// Runs `command` in its own process group to completion within `deadline` (killing the group
/// past it); an error unless it exits 0, with what it printed.
pub fn within(deadline: Duration, command: &mut Command, what: &str) -> Result<Output, Failed> {
    use killpoint::trials::child::{NotFinished, output_within};
    let output = match output_within(command, deadline) {
        Ok(output) => output,
        Err(NotFinished::Start(e)) => return Err(format!("{what}: cannot start: {e}").into()),
        Err(NotFinished::Late(_)) => {
            return Err(
                format!("{what}: expected it to finish within {deadline:?}, found it still running: killed").into()
            );
        }
    };
    if output.status.success() {
        return Ok(output);
    }
    Err(format!(
        "{what}: expected exit status 0, found {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
    .into())
}
