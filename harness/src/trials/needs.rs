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
    assert!(
        python3_runs(),
        "{what} needs python3 on PATH, and `python3 --version` did not succeed within 10 s (the test fails rather than pass unchecked)"
    );
}

/// Whether `python3 --version` succeeds within 10 s (a hung interpreter is killed, not waited for).
pub fn python3_runs() -> bool {
    super::child::output_within(
        std::process::Command::new("python3").arg("--version"),
        std::time::Duration::from_secs(10),
    )
    .is_ok_and(|output| output.status.success())
}
