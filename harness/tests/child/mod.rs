//! Running a child of a test under a deadline, for the test files that start `killpoint` as a
//! user would (`cli.rs`, `replay.rs`).

use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A child's stdout and stderr as text.
pub fn text(output: &Output) -> (String, String) {
    (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
}

/// Runs `command` (in a process group of its own; the stdout and stderr it was given, piped ones
/// read) to its end within `deadline`; past it, kills the whole group, reaps it and fails, saying
/// what it waited for.
pub fn output_within(mut command: Command, deadline: Duration, what: &str) -> Output {
    use std::os::unix::process::CommandExt;
    let child = command.process_group(0).stdin(Stdio::null()).spawn();
    let child = child.unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let pgid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(deadline) {
        Ok(output) => {
            waiter.join().unwrap().ok();
            output.unwrap()
        }
        Err(_) => {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL);
            let output = rx.recv().unwrap().unwrap();
            let (stdout, stderr) = text(&output);
            panic!("{what} did not finish within {deadline:?} (its group killed):\n{stdout}\n{stderr}");
        }
    }
}
