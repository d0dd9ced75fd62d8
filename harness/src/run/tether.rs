//! Starting a child that dies with the harness, without forking the harness.
//!
//! A runtime or a service must die when the harness dies, even by SIGKILL (`PR_SET_PDEATHSIG`),
//! and only the child can arm that. Armed from a `pre_exec` closure, it made std fork the harness
//! for every start instead of `posix_spawn`ing it: a fork copies the harness's page tables and
//! then every page either side writes next faults for its copy, with TLB shootdowns across the
//! harness's threads. Measured (release, 2 cores): an explore of the wave at depth 2 with the
//! probe spent 17 % of its time there, and the root integration tests 7.7 % of their CPU in the
//! page-table copies alone.
//!
//! So a child is started as `killpoint-tracer --die-with PID --exec -- PROGRAM ARGS…`
//! (`crate::tracer::tether`), spawned without a `pre_exec` closure (std then uses
//! `posix_spawn`, a vfork), which arms the signal and becomes PROGRAM; a traced one as
//! `killpoint-tracer --die-with PID …`, which arms it and traces as before. Without a tracer that
//! takes `--die-with` (none built, or an older one beside this harness) the closure is used, as
//! before (`one_off::die_with_harness`).

use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// How long the one check that the tracer takes `--die-with` may take.
const CHECK_DEADLINE: Duration = Duration::from_secs(10);

/// A command for `program` whose process dies with this one, with no signal blocked. Its
/// arguments are the caller's to add; a program that exec would refuse (missing, not executable,
/// its `#!` interpreter missing) is refused here with exec's error, as a direct spawn would.
pub(crate) fn command(program: &Path) -> std::io::Result<Command> {
    let Some(tracer) = tracer() else {
        let mut command = std::process::Command::new(program);
        crate::run::one_off::die_with_harness(&mut command);
        return Ok(command.into());
    };
    let pid = std::process::id().to_string();
    if program == tracer {
        let mut command = Command::new(program);
        command.args(["--die-with", &pid]);
        return Ok(command);
    }
    if let Some(error) = crate::tracer::tether::would_fail(program) {
        return Err(error);
    }
    let mut command = Command::new(tracer);
    command.args(["--die-with", &pid, "--exec", "--"]).arg(program);
    Ok(command)
}

/// The tracer to start children through, once it has shown it takes `--die-with`.
fn tracer() -> Option<&'static Path> {
    static TRACER: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    TRACER.get_or_init(|| crate::run::traced::tracer_binary().filter(|tracer| takes_die_with(tracer))).as_deref()
}

/// Whether `tracer --die-with PID --exec -- true` runs `true`, within [`CHECK_DEADLINE`].
fn takes_die_with(tracer: &Path) -> bool {
    let mut check = std::process::Command::new(tracer);
    check.args(["--die-with", &std::process::id().to_string(), "--exec", "--", "true"]);
    crate::run::one_off::output_within(&mut check, CHECK_DEADLINE).is_ok_and(|output| output.status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Through the tracer when there is one: the child runs, its arguments reach it, and it is
    /// not the harness's fork (its parent is this process, its program the one asked for).
    #[tokio::test]
    async fn a_tethered_child_runs_its_program_with_its_arguments() {
        let output = command(Path::new("/bin/sh"))
            .expect("sh exists")
            .args(["-c", "echo \"$0 $1\"", "zero", "one"])
            .output()
            .await
            .expect("runs");
        assert!(output.status.success(), "{output:?}");
        assert_eq!(String::from_utf8_lossy(&output.stdout), "zero one\n");
    }
}
