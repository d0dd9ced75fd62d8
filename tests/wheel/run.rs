//! A child of tests/wheel.rs under a deadline, in a process group of its own that dies with the
//! test (PR_SET_PDEATHSIG) and is killed whole past the deadline.

use std::process::{Command, Output};
use std::time::Duration;

/// What a child printed, stdout then stderr.
pub fn said(output: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// Runs `command` to its end within `deadline`; past it, kills its group, reaps it and fails,
/// saying what it waited for.
pub fn output_within(mut command: Command, deadline: Duration, what: &str) -> Output {
    use killpoint::trials::child::NotFinished;
    let started = std::time::Instant::now();
    match killpoint::trials::child::output_within(&mut command, deadline) {
        Ok(output) => {
            // What each step costs, for whoever weighs this test against the suite's time.
            eprintln!("{what}: {:.1} s", started.elapsed().as_secs_f64());
            output
        }
        Err(NotFinished::Start(e)) => panic!("{what}: cannot start: {e}"),
        Err(NotFinished::Late(output)) => panic!(
            "{what}: expected it to finish within {deadline:?}, found it still running (its group killed):\n{}",
            said(&output)
        ),
    }
}
