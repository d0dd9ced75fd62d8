//! A helper program the harness runs once, to its end, under a deadline: its checks of
//! `killpoint-tracer` (that it may trace here, that it takes `--die-with`), made before any
//! runtime starts. In a process group of its own, killed whole at the deadline and reaped.

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use std::time::Duration;

/// Runs `command` (stdin closed, stdout and stderr captured, in a process group of its own) to its
/// end within `deadline`; else why not: it could not start, or was still running then (its group
/// is then killed and it is reaped). For the harness's one-off checks of its helpers.
pub(crate) fn output_within(
    command: &mut std::process::Command,
    deadline: Duration,
) -> Result<std::process::Output, String> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let child = command.spawn().map_err(|e| format!("cannot start: {e}"))?;
    let group = Pid::from_raw(child.id() as i32);
    let (sender, receiver) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || sender.send(child.wait_with_output()));
    let output = match receiver.recv_timeout(deadline) {
        Ok(output) => output.map_err(|e| format!("cannot be waited for: {e}")),
        Err(_) => {
            let _ = nix::sys::signal::killpg(group, Signal::SIGKILL);
            Err(format!("still running after {deadline:?}"))
        }
    };
    let _ = waiter.join();
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helper_past_its_deadline_is_killed_and_said_late() {
        let mut echo = std::process::Command::new("echo");
        echo.arg("hi");
        let done = output_within(&mut echo, Duration::from_secs(10)).expect("echo ends");
        assert_eq!(done.stdout, b"hi\n");
        let started = std::time::Instant::now();
        let mut sleep = std::process::Command::new("sleep");
        sleep.arg("30");
        let late = output_within(&mut sleep, Duration::from_millis(100)).expect_err("sleep 30 is late");
        assert!(late.contains("still running after 100ms"), "{late}");
        assert!(started.elapsed() < Duration::from_secs(10), "killed at the deadline, not waited for");
        let missing = output_within(&mut std::process::Command::new("/nonexistent"), Duration::from_secs(1));
        assert!(missing.expect_err("no such program").starts_with("cannot start"));
    }
}
