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
/// `python3 --version` is given 10 s (a hung interpreter fails the test, it does not hang it).
pub fn python3(what: &str) {
    let ran = std::process::Command::new("python3")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok_and(|child| exits_within(child, std::time::Duration::from_secs(10)));
    assert!(ran, "{what} needs python3 on PATH, and `python3 --version` did not succeed within 10 s (the test fails rather than pass unchecked)");
}

/// Whether `child` exits successfully within `limit`; past it, it is killed and reaped.
fn exits_within(mut child: std::process::Child, limit: std::time::Duration) -> bool {
    let pid = child.id() as libc::pid_t;
    let (sender, exit) = std::sync::mpsc::channel();
    let reaper = std::thread::spawn(move || {
        let _ = sender.send(child.wait().is_ok_and(|s| s.success()));
    });
    let succeeded = exit.recv_timeout(limit).ok();
    if succeeded.is_none() {
        // SAFETY: the child is not reaped until the reaper's wait returns, so `pid` is still it.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let _ = reaper.join();
    succeeded.unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::exits_within;
    use std::process::Command;
    use std::time::{Duration, Instant};

    #[test]
    fn a_child_past_its_limit_is_killed_and_reaped_not_waited_for() {
        assert!(exits_within(Command::new("true").spawn().unwrap(), Duration::from_secs(10)));
        assert!(!exits_within(Command::new("false").spawn().unwrap(), Duration::from_secs(10)));
        let started = Instant::now();
        assert!(!exits_within(Command::new("sleep").arg("30").spawn().unwrap(), Duration::from_millis(100)));
        assert!(started.elapsed() < Duration::from_secs(10), "the 30 s sleep was waited for");
    }
}
