//! A helper program a test runs to its end under a deadline: in a process group of its own that
//! dies with the test (PR_SET_PDEATHSIG) and is killed whole past the deadline, then reaped.

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

/// Runs `command` (stdin closed, stdout and stderr captured) to its end within `deadline`.
pub fn output_within(command: &mut Command, deadline: Duration) -> Result<Output, NotFinished> {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(std::io::Error::from)
        });
    }
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
        assert!(matches!(
            output_within(&mut Command::new("/nonexistent"), Duration::from_secs(1)),
            Err(NotFinished::Start(_))
        ));
    }
}
