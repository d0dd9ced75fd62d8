//! A child of tests/wheel.rs under a deadline, in a process group of its own that dies with the
//! test (PR_SET_PDEATHSIG) and is killed whole past the deadline.

use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// What a child printed, stdout then stderr.
pub fn said(output: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// Runs `command` to its end within `deadline`; past it, kills its group, reaps it and fails,
/// saying what it waited for.
pub fn output_within(mut command: Command, deadline: Duration, what: &str) -> Output {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(std::io::Error::from)
        });
    }
    let started = std::time::Instant::now();
    let child = command.spawn().unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(deadline) {
        Ok(output) => {
            waiter.join().unwrap().ok();
            // What each step costs, for whoever weighs this test against the suite's time.
            eprintln!("{what}: {:.1} s", started.elapsed().as_secs_f64());
            output.unwrap_or_else(|e| panic!("{what}: {e}"))
        }
        Err(_) => {
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
            let output = rx.recv().unwrap().unwrap();
            panic!(
                "{what}: expected it to finish within {deadline:?}, found it still running (its group killed):\n{}",
                said(&output)
            );
        }
    }
}
