//! Waiting until a killed process group is gone, not merely its first process reaped.
//!
//! The harness reaps the process it started. Under `killpoint-tracer` that is the tracer, and the
//! program it traces is its child: SIGKILLed with it, but still tearing down for a moment after
//! the tracer was reaped. The kernel frees an address space before it closes a dying process's
//! files, so a large server (Restate's, with its stores mapped) holds its listening sockets for
//! milliseconds after the harness thought it gone. A server started again on the same ports in
//! that moment cannot bind them, and a readiness check that connects is answered by the dying one.
//! So a service taken down is waited for until every process of its group, and every process
//! carrying its token, has exited (a zombie whose threads have all exited has closed its files),
//! each through a pidfd.

use super::incarnation::carries_token;
use nix::unistd::Pid;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

/// Waits until no process of group `pgid` and none carrying `token` in its environment
/// (`incarnation::carries_token`) is alive, up to `deadline`; past it, says which are left.
pub(crate) async fn gone_within(pgid: Pid, token: &str, deadline: Duration) -> Result<(), String> {
    let until = Instant::now() + deadline;
    loop {
        let alive = living(pgid, token);
        if alive.is_empty() {
            return Ok(());
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let left: Vec<i32> = alive.iter().map(|p| p.as_raw()).collect();
            return Err(format!("processes {left:?} of group {pgid} were still alive {deadline:?} after its SIGKILL"));
        }
        // Each exit makes its pidfd readable; one that cannot be opened has exited since the scan,
        // or cannot be waited on: then the next scan comes soon, not at the deadline.
        let count = alive.len();
        let pidfds: Vec<OwnedFd> = alive.into_iter().filter_map(pidfd).collect();
        let within = if pidfds.len() < count { left.min(Duration::from_millis(5)) } else { left };
        let _ = tokio::task::spawn_blocking(move || any_exits(&pidfds, within)).await;
    }
}

/// Blocks until one of `pidfds` is readable (its process exited) or `within` has passed.
fn any_exits(pidfds: &[OwnedFd], within: Duration) {
    let mut polled: Vec<libc::pollfd> =
        pidfds.iter().map(|fd| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let millis = within.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: `polled` is a live array of `polled.len()` pollfds, whose descriptors `pidfds` owns.
    unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, millis) };
}

/// The processes of group `pgid`, or carrying `token`, that have not exited (not zombies): read
/// from `/proc`.
fn living(pgid: Pid, token: &str) -> Vec<Pid> {
    let Ok(processes) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut alive = Vec::new();
    for entry in processes.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        // Gone since the listing, or unreadable: nothing to wait for.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // `pid (comm) state ppid pgrp …`; the name may hold spaces and parentheses.
        let fields: Vec<&str> =
            stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
        let (Some(state), Some(group)) = (fields.first(), fields.get(2)) else { continue };
        if (*state == "Z" || *state == "X") && !threads_left(&entry.path(), pid) {
            continue;
        }
        let ours = group.parse::<i32>().ok() == Some(pgid.as_raw()) || carries_token(&entry.path(), token);
        if ours {
            alive.push(Pid::from_raw(pid));
        }
    }
    alive
}

/// Whether a zombie's other threads are still exiting. A SIGKILLed multi-threaded process shows
/// its first thread a zombie as soon as that thread has exited, while the others tear down: the
/// files they share (a server's listening sockets) close only when the last one has. Its pidfd
/// turns readable only then (the whole thread group gone), so it is waited for like a live one.
fn threads_left(process: &Path, pid: i32) -> bool {
    let Ok(tasks) = std::fs::read_dir(process.join("task")) else { return false };
    let leader = pid.to_string();
    tasks.flatten().any(|task| task.file_name().to_str() != Some(leader.as_str()))
}

/// A pidfd of `pid`, readable once it exits; `None` when it has exited already.
fn pidfd(pid: Pid) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) } as i32;
    // SAFETY: a descriptor pidfd_open just opened is owned by nothing else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// Kills the test's group on every way out, a failed assertion's too: no orphan `sleep`.
    struct Group(Pid);
    impl Drop for Group {
        fn drop(&mut self) {
            let _ = nix::sys::signal::killpg(self.0, nix::sys::signal::Signal::SIGKILL);
        }
    }

    /// A grandchild outlives the child the test reaps; the wait ends only once it is SIGKILLed
    /// too, and not before.
    #[tokio::test]
    async fn waits_for_every_process_of_the_group_not_only_the_reaped_one() {
        let mut command = std::process::Command::new("sh");
        command.args(["-c", "sleep 30 >/dev/null 2>&1 & echo $!"]).process_group(0);
        let output = command.stdout(std::process::Stdio::piped()).output().expect("sh runs");
        let grandchild = String::from_utf8_lossy(&output.stdout).trim().parse::<i32>().expect("a pid");
        let group = Group(nix::unistd::getpgid(Some(Pid::from_raw(grandchild))).expect("its group"));
        let early = gone_within(group.0, "no-such-token", Duration::from_millis(200)).await;
        assert!(early.is_err(), "expected the sleeping grandchild to be found alive");
        nix::sys::signal::killpg(group.0, nix::sys::signal::Signal::SIGKILL).expect("kill the group");
        gone_within(group.0, "no-such-token", Duration::from_secs(5)).await.expect("gone within 5 s of its SIGKILL");
    }
}
