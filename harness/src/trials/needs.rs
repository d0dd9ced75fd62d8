//! What a test of killpoint's own suite needs from the machine, said as a failure where it is
//! missing: a `#[test]` that returned early would be reported `ok` for what it never checked
//! (`harness = false` binaries mark such trials ignored instead, with the reason on stderr).

/// Fails the calling test, saying why, where this machine refuses killpoint-tracer (ptrace and
/// seccomp: some containers refuse them); `what` is what the test checks.
pub fn tracing(what: &str) {
    if let Err(why) = crate::run::traced::permitted() {
        panic!("{what} need killpoint-tracer, and {why}: not checked here (the test fails rather than pass unchecked)");
    }
}

/// Fails the calling test where `python3` does not run; `what` names the Python program it needs.
pub fn python3(what: &str) {
    let ran = std::process::Command::new("python3")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ran, "{what} needs python3 on PATH, and `python3 --version` did not run (the test fails rather than pass unchecked)");
}
