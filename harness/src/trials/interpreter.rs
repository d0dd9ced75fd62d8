//! The Python interpreter a test's runtime scripts start: the one `python3` resolves to, put
//! first on the test process's PATH, so that a script's `#!/usr/bin/env python3` starts it
//! directly rather than through a version manager's shim. pyenv's `python3` is a bash script that
//! runs `pyenv exec` and its hooks: three processes and about 65 ms of CPU before the interpreter
//! (35 ms alone), at every start of every incarnation. It was 7.5 % of the `explore` binary's CPU.
//! The interpreter is the same one the shim would have started.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Puts the directory of the interpreter `python3` starts first on PATH, unless the first
/// `python3` on PATH is already there. Nothing changes where python3 is missing or does not say
/// where it is (the trials that need it say so themselves).
///
/// Call it first thing in a test binary's `main`, before any thread is started: it sets an
/// environment variable.
pub fn python3_first_on_path() {
    let Some(interpreter) = interpreter() else { return };
    let Some(dir) = interpreter.parent() else { return };
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    if first_with(&dirs, "python3").is_some_and(|first| first == dir) {
        return;
    }
    dirs.insert(0, dir.to_owned());
    if let Ok(joined) = std::env::join_paths(dirs) {
        // SAFETY: called before the test binary starts any thread (see above); the helper child
        // that asked python3 was reaped and its waiting thread joined.
        unsafe { std::env::set_var("PATH", joined) };
    }
}

/// `sys.executable` of the interpreter `python3` starts, within 10 s.
fn interpreter() -> Option<PathBuf> {
    let mut ask = Command::new("python3");
    ask.args(["-c", "import sys; print(sys.executable)"]);
    let output = super::child::output_within(&mut ask, Duration::from_secs(10)).ok()?;
    let said = String::from_utf8(output.stdout).ok()?;
    let interpreter = PathBuf::from(said.trim());
    (output.status.success() && interpreter.is_absolute() && interpreter.is_file()).then_some(interpreter)
}

/// The first of `dirs` holding a file `name`.
fn first_with<'a>(dirs: &'a [PathBuf], name: &str) -> Option<&'a Path> {
    dirs.iter().find(|dir| dir.join(name).is_file()).map(PathBuf::as_path)
}
