//! A helper program run once, to its end, under a deadline: the harness's checks of
//! `killpoint-tracer` (that it may trace here, that it takes `--die-with`), made before any runtime
//! starts, and a test's helpers (trials/child.rs). In a process group of its own that dies
//! with its caller (PR_SET_PDEATHSIG) and is killed whole past the deadline, then reaped.

use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// Why a child did not finish.
#[derive(Debug)]
pub enum NotFinished {
    /// It could not be started.
    Start(std::io::Error),
    /// Still running at the deadline: its group was killed; what it printed until then.
    Late(Output),
}

impl NotFinished {
    /// In words, for a deadline of `deadline`.
    pub fn said(&self, deadline: Duration) -> String {
        match self {
            NotFinished::Start(e) => format!("cannot start: {e}"),
            NotFinished::Late(_) => format!("still running after {deadline:?}"),
        }
    }
}

/// Runs `command` (stdin closed, stdout and stderr captured) to its end within `deadline`.
pub fn output_within(command: &mut Command, deadline: Duration) -> Result<Output, NotFinished> {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    die_with_harness(command);
    let child = command.spawn().map_err(NotFinished::Start)?;
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let (sender, receiver) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || sender.send(child.wait_with_output()));
    let (output, late) = match receiver.recv_timeout(deadline) {
        Ok(output) => (output, false),
        Err(_) => {
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
            // The group is dead: the waiter reaps the child and sends what it printed.
            (receiver.recv().expect("the waiter sends once"), true)
        }
    };
    let _ = waiter.join();
    let output = output.map_err(NotFinished::Start)?;
    if late { Err(NotFinished::Late(output)) } else { Ok(output) }
}

/// Makes `command`'s process die with the harness (SIGKILL on the harness's death), with no
/// signal blocked, from a `pre_exec` closure: for a one-off helper, and `tether`'s fallback when
/// no tracer can start a child. PDEATHSIG fires when the thread that spawned the child exits, so
/// the harness spawns from the thread that drives the scenario to its end.
pub(crate) fn die_with_harness(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as i32;
    // SAFETY: `arm_death_signal` only calls async-signal-safe functions (sigprocmask, prctl,
    // getppid) and allocates nothing.
    unsafe {
        command.pre_exec(move || match crate::tracer::tether::arm_death_signal(parent) {
            Ok(()) => Ok(()),
            Err(crate::tracer::tether::Unarmed::Mask(e) | crate::tracer::tether::Unarmed::Signal(e)) => Err(e.into()),
            // The harness is gone: nothing is to run.
            Err(crate::tracer::tether::Unarmed::Orphaned) => nix::libc::_exit(1),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::{NotFinished, output_within};
    use std::process::Command;
    use std::time::{Duration, Instant};

    #[test]
    fn a_child_past_its_deadline_is_killed_and_reaped_not_waited_for() {
        let done = output_within(Command::new("echo").arg("hi"), Duration::from_secs(10)).expect("echo ends");
        assert_eq!(done.stdout, b"hi\n");
        let started = Instant::now();
        let late = output_within(Command::new("sleep").arg("30"), Duration::from_millis(100));
        assert!(matches!(late, Err(NotFinished::Late(_))), "{late:?}");
        assert!(started.elapsed() < Duration::from_secs(10), "the 30 s sleep was waited for");
        let said = late.expect_err("late").said(Duration::from_millis(100));
        assert!(said.contains("still running after 100ms"), "{said}");
        let missing = output_within(&mut Command::new("/nonexistent"), Duration::from_secs(1));
        assert!(matches!(missing, Err(NotFinished::Start(_))));
        assert!(missing.expect_err("no such program").said(Duration::from_secs(1)).starts_with("cannot start"));
    }
}
