//! Checks made once, before any scenario runs: a runtime that cannot start would otherwise fail
//! every scenario with the same error (and each fault with a knock-on "never reached"), as if the
//! runtime's recovery were at fault.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `program` can be started: it is a file, executable, and its `#!` interpreter (if any) exists;
/// a `--broken NAME` among `args` names a variant the runtime has (when it lists them). `Err` is
/// the one message to show; `Ok(Some(note))` a check that could not be made, to say once.
pub fn runtime(program: &Path, args: &[String]) -> Result<Option<String>, String> {
    runtime_within(program, args, crate::model::variants::LIST_DEADLINE)
}

/// [`runtime`], its `--list-broken` given `list_deadline`.
fn runtime_within(program: &Path, args: &[String], list_deadline: Duration) -> Result<Option<String>, String> {
    let shown = program.display();
    let meta = std::fs::metadata(program).map_err(|e| format!("the runtime `{shown}` cannot be used: {e}"))?;
    if !meta.is_file() {
        return Err(format!("the runtime `{shown}` is not a file: expected an executable file"));
    }
    let mode = meta.permissions().mode();
    if mode & 0o111 == 0 {
        return Err(format!(
            "the runtime `{shown}` is not executable (mode {:o}): expected the executable bit (`chmod +x {shown}`)",
            mode & 0o7777
        ));
    }
    if let Some(line) = shebang(program)? {
        interpreter(program, &line)?;
    }
    script(program, args)?;
    broken_variant(program, args, list_deadline)
}

/// Interpreters whose first argument that is not an option is the program they run.
const INTERPRETERS: [&str; 8] = ["python", "node", "ruby", "perl", "bash", "sh", "deno", "bun"];

/// For an interpreter (`python3`, a virtualenv's `bin/python`, `node`…): its script, the first
/// argument that is not an option, exists. Otherwise every scenario would fail to start, each
/// leaving its run directory (issue 32: `-- no_such.py` failed 24 scenarios).
fn script(program: &Path, args: &[String]) -> Result<(), String> {
    let name = program.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let interpreter = INTERPRETERS
        .iter()
        .any(|i| name.strip_prefix(i).is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.')));
    // `python3 -m module`, `-c code`, `node -e code`: no script file to look for.
    let options = args.iter().take_while(|a| a.starts_with('-'));
    if options.clone().any(|a| ["-m", "-c", "-e", "--eval", "-"].contains(&a.as_str())) {
        return Ok(());
    }
    let Some(script) = args.iter().find(|a| !a.starts_with('-')).filter(|_| interpreter) else {
        return Ok(());
    };
    if Path::new(script).is_file() {
        return Ok(());
    }
    let here = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_else(|_| "?".into());
    Err(format!(
        "the runtime `{} {script}` cannot start: `{script}` is not a file (looked for from {here}); expected the path of the runtime's script",
        program.display()
    ))
}

/// The `#!` line of `program` without its `#!`, if it has one.
fn shebang(program: &Path) -> Result<Option<String>, String> {
    let line = crate::tracer::tether::shebang_line(program)
        .map_err(|e| format!("the runtime `{}` cannot be read: {e}", program.display()))?;
    Ok(line.map(|line| line[2..].trim().to_owned()))
}

/// The interpreter named on the `#!` line exists (for `/usr/bin/env NAME`: NAME is on `PATH`).
fn interpreter(program: &Path, line: &str) -> Result<(), String> {
    let mut words = line.split_whitespace();
    let Some(first) = words.next() else {
        return Err(format!("the runtime `{}` starts with an empty `#!` line", program.display()));
    };
    let missing = |what: String| {
        format!("the runtime `{}` starts with `#!{line}`, but {what}: it cannot start", program.display())
    };
    if !Path::new(first).is_file() {
        return Err(missing(format!("`{first}` does not exist")));
    }
    // `env -S …` and options: only a plain `env NAME` is looked up.
    if Path::new(first).file_name().is_some_and(|n| n == "env")
        && let Some(name) = words.next().filter(|w| !w.starts_with('-'))
        && on_path(name).is_none()
    {
        return Err(missing(format!("`{name}` is not on PATH")));
    }
    Ok(())
}

fn on_path(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Path::new(name).is_file().then(|| PathBuf::from(name));
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(name)).find(|p| p.is_file())
}

/// `--broken NAME` (or `--broken=NAME`) among the runtime's arguments names one of its variants.
/// Only the reference runtime has any, and it lists them (`--list-broken`): the check asks it, so
/// the list cannot drift. A runtime that lists none is left to take its own arguments; one that
/// did not answer in time is too, and the note says so.
fn broken_variant(program: &Path, args: &[String], list_deadline: Duration) -> Result<Option<String>, String> {
    let name = args.iter().enumerate().find_map(|(i, a)| match a.strip_prefix("--broken=") {
        Some(name) => Some(name.to_owned()),
        None => (a == "--broken").then(|| args.get(i + 1).cloned().unwrap_or_default()),
    });
    let Some(name) = name else { return Ok(None) };
    let known = match crate::model::variants::of_within(program, list_deadline) {
        Ok(known) => known,
        Err(e) if e.timed_out => {
            return Ok(Some(format!("the runtime argument `--broken {name}` is not checked: {e}")));
        }
        Err(_) => return Ok(None),
    };
    if known.iter().any(|v| v.name == name) {
        return Ok(None);
    }
    let names: Vec<&str> = known.iter().map(|v| v.name.as_str()).collect();
    Err(format!(
        "the runtime argument `--broken {name}`: {}",
        crate::model::boundary::unknown_word("broken variant", &name, &names)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn a_runtime_that_cannot_start_is_one_message() {
        let dir = tempfile::tempdir().unwrap();
        let missing = runtime(&dir.path().join("nope"), &[]).unwrap_err();
        assert!(missing.contains("cannot be used"), "{missing}");
        let plain = script(dir.path(), "plain", "#!/bin/sh\n", 0o644);
        let err = runtime(&plain, &[]).unwrap_err();
        assert!(err.contains("is not executable (mode 644)"), "{err}");
        let bad = script(dir.path(), "bad", "#!/no/such/python3\n", 0o755);
        let err = runtime(&bad, &[]).unwrap_err();
        assert!(err.contains("`/no/such/python3` does not exist"), "{err}");
        let env = script(dir.path(), "env", "#!/usr/bin/env no-such-interpreter-kp\n", 0o755);
        let err = runtime(&env, &[]).unwrap_err();
        assert!(err.contains("`no-such-interpreter-kp` is not on PATH"), "{err}");
        let good = script(dir.path(), "good", "#!/bin/sh\nexit 0\n", 0o755);
        assert_eq!(runtime(&good, &["--broken".into(), "x".into()]), Ok(None), "a runtime with no variant list");
    }

    /// A runtime that ignores `--list-broken` and serves is given the list's deadline, then killed
    /// (its whole group: the `sleep` it forked holds the pipe) and reaped; the check is skipped,
    /// and the note says why.
    #[test]
    fn a_runtime_that_does_not_answer_list_broken_is_a_note_after_the_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let silent = script(dir.path(), "silent", "#!/bin/sh\nsleep 600\n", 0o755);
        let started = std::time::Instant::now();
        // A second, not the five `runtime` gives: the same path, waited for less.
        let deadline = Duration::from_secs(1);
        let note = runtime_within(&silent, &["--broken".into(), "blind-retry".into()], deadline).unwrap();
        let waited = started.elapsed();
        assert!(waited >= deadline, "the check took {waited:?}, expected it to wait out {deadline:?}");
        assert!(waited < deadline * 4, "the check took {waited:?}, expected less than {:?}", deadline * 4);
        let note = note.expect("a note saying the check was not made");
        assert!(note.starts_with("the runtime argument `--broken blind-retry` is not checked: "), "{note}");
        assert!(note.contains("--list-broken` did not finish within 1 s"), "{note}");
        assert!(note.contains("its process group was killed (signal: 9"), "{note}");
    }

    #[test]
    fn only_an_interpreters_missing_script_is_refused() {
        use std::path::Path;
        let python = Path::new("/venv/bin/python3.11");
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(super::script(python, &args(&["no_such.py"])).is_err());
        assert!(super::script(python, &args(&["-u", "no_such.py"])).is_err());
        assert!(super::script(python, &args(&["-m", "my_runtime"])).is_ok(), "a module is no file");
        assert!(super::script(python, &args(&["-c", "print(1)"])).is_ok());
        assert!(super::script(Path::new("/usr/bin/node"), &args(&["-e", "x"])).is_ok());
        assert!(super::script(Path::new("/bin/my-runtime"), &args(&["no_such.py"])).is_ok(), "not an interpreter");
        assert!(super::script(Path::new("/usr/bin/pythonista"), &args(&["x"])).is_ok(), "not python");
        assert!(super::script(python, &args(&["Cargo.toml"])).is_ok() || !Path::new("Cargo.toml").is_file());
    }
}
