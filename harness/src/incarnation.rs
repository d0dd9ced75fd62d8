//! One incarnation: one life of the runtime process, from spawn to SIGKILL.
//!
//! Every runtime runs in a process group of its own, so a kill takes its children too, and with
//! `PR_SET_PDEATHSIG` so it dies if the harness dies. Its stdout is read by the harness (for the
//! ready line) and copied to a log file; its stderr goes straight to a log file. Nothing here
//! sleeps: it waits for the ready line, the probe connection or the process's exit, each with a
//! deadline that names what it was waiting for.

use crate::probe::ProbeConnection;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::process::{Child, Command};
use tokio::sync::oneshot;

/// The contract version this harness speaks.
pub const CONTRACT: &str = "killpoint-contract/1";

/// How to run the runtime under test.
#[derive(Debug, Clone)]
pub struct Target {
    pub program: PathBuf,
    pub args: Vec<String>,
}

/// Everything an incarnation needs that stays the same across restarts.
pub struct Launch<'a> {
    pub target: &'a Target,
    pub env: Vec<(String, String)>,
    pub logs: &'a Path,
    pub probe: Option<&'a UnixListener>,
    pub ready_timeout: Duration,
}

/// A running runtime process.
pub struct Incarnation {
    pub number: u32,
    pub api: String,
    pub child: Child,
    pub probe: Option<ProbeConnection>,
    pgid: Pid,
    killed: bool,
}

/// The runtime could not be started or did not become ready.
#[derive(Debug, thiserror::Error)]
#[error("incarnation {number} of {program}: {message}")]
pub struct StartError {
    pub number: u32,
    pub program: String,
    pub message: String,
}

impl Incarnation {
    /// Spawns the runtime and waits until it has connected the probe (when there is one) and
    /// printed its ready line.
    pub async fn start(launch: &Launch<'_>, number: u32) -> Result<Incarnation, StartError> {
        let fail =
            |message: String| StartError { number, program: launch.target.program.display().to_string(), message };
        let stderr_path = launch.logs.join("stderr.log");
        let stdout_path = launch.logs.join("stdout.log");
        let mut stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&stderr_path)
            .map_err(|e| fail(format!("cannot open {}: {e}", stderr_path.display())))?;
        // Mark where each incarnation's output starts, so a report can show the last life's.
        use std::io::Write as _;
        let _ = writeln!(stderr, "--- killpoint: incarnation {number} ---");

        let mut command = Command::new(&launch.target.program);
        command
            .args(&launch.target.args)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .env("KILLPOINT_INCARNATION", number.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            // A group of its own: killpg reaches every process the runtime forks.
            .process_group(0)
            .kill_on_drop(true);
        // SAFETY: the closure only calls async-signal-safe functions (prctl, getppid, _exit).
        unsafe {
            command.pre_exec(|| {
                // Die with the harness. PDEATHSIG fires when the thread that spawned us exits, so
                // the harness spawns from the thread that drives the scenario to its end.
                nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)?;
                // The harness may already have died between fork and prctl.
                if nix::unistd::getppid() == Pid::from_raw(1) {
                    nix::libc::_exit(1);
                }
                Ok(())
            });
        }
        let child = command.spawn().map_err(|e| fail(format!("cannot start: {e}")))?;
        let pid = child.id().ok_or_else(|| fail("exited before it could be watched".into()))?;
        let pgid = Pid::from_raw(pid as i32);
        let mut incarnation = Incarnation { number, api: String::new(), child, probe: None, pgid, killed: false };

        let (ready_tx, mut ready_rx) = oneshot::channel::<String>();
        let stdout = incarnation.child.stdout.take().expect("stdout is piped");
        tokio::spawn(copy_stdout(stdout, stdout_path, number, ready_tx));

        let deadline = tokio::time::Instant::now() + launch.ready_timeout;
        let last_words = |what: &str| format!("{what}\n{}", tail_of_logs(launch.logs, 15));

        let line = tokio::select! {
            line = &mut ready_rx => match line {
                Ok(line) => line,
                Err(_) => {
                    // Stdout closed. Usually the process is exiting: wait for its status (within
                    // the same deadline) so the message says how it ended.
                    let status = tokio::time::timeout_at(deadline, incarnation.child.wait()).await;
                    let what = match status {
                        Ok(status) => format!(
                            "exited ({}) before printing `KILLPOINT_READY {{…}}` on stdout",
                            describe_status(status.ok())
                        ),
                        Err(_) => "closed its stdout without printing `KILLPOINT_READY {…}`".to_owned(),
                    };
                    return Err(fail(last_words(&what)));
                }
            },
            status = incarnation.child.wait() => {
                return Err(fail(last_words(&format!(
                    "exited ({}) before printing `KILLPOINT_READY {{…}}` on stdout",
                    describe_status(status.ok())
                ))));
            }
            _ = tokio::time::sleep_until(deadline) => {
                return Err(fail(last_words(&format!(
                    "did not print `KILLPOINT_READY {{…}}` on stdout within {:?}", launch.ready_timeout
                ))));
            }
        };
        let ready: serde_json::Value = serde_json::from_str(&line)
            .map_err(|e| fail(format!("expected `KILLPOINT_READY <json>`, found `KILLPOINT_READY {line}`: {e}")))?;
        match ready.get("contract").and_then(|c| c.as_str()) {
            Some(CONTRACT) => {}
            other => {
                return Err(fail(format!(
                    "speaks contract {other:?}; this harness speaks `{CONTRACT}` (see CONTRACT.md)"
                )));
            }
        }
        incarnation.api = ready
            .get("api")
            .and_then(|a| a.as_str())
            .filter(|a| a.starts_with("http://127.0.0.1:"))
            .ok_or_else(|| {
                fail(format!("expected \"api\": \"http://127.0.0.1:PORT\" in the ready line, found {line}"))
            })?
            .trim_end_matches('/')
            .to_owned();
        // The ready line says whether the runtime implements the probe; one that does has
        // connected before printing it, so the connection is already queued: the deadline only
        // guards against a runtime that promised and did not connect.
        let declares_probe = ready.get("probe").and_then(|p| p.as_bool()).unwrap_or(false);
        match (launch.probe, declares_probe) {
            (Some(listener), true) => {
                tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => incarnation.probe = Some(ProbeConnection::new(stream)),
                        Err(e) => return Err(fail(format!("probe socket accept failed: {e}"))),
                    },
                    _ = tokio::time::sleep_until(deadline) => {
                        return Err(fail(last_words(
                            "declared \"probe\": true in its ready line but never connected to KILLPOINT_PROBE_SOCKET (CONTRACT.md section 2: connect before printing the ready line)"
                        )));
                    }
                }
            }
            (None, true) => {
                return Err(fail(format!(
                    "declared \"probe\": true although no KILLPOINT_PROBE_SOCKET was given: {line}"
                )));
            }
            (_, false) => {}
        }
        Ok(incarnation)
    }

    /// SIGKILLs the whole process group and reaps the runtime.
    pub async fn kill(&mut self) -> Option<ExitStatus> {
        self.killed = true;
        // ESRCH (already gone) is fine: the group is dead either way.
        let _ = killpg(self.pgid, Signal::SIGKILL);
        self.child.wait().await.ok()
    }
}

impl Drop for Incarnation {
    fn drop(&mut self) {
        // On every path out (error, panic) the group dies; tokio reaps the child in the background.
        if !self.killed {
            let _ = killpg(self.pgid, Signal::SIGKILL);
        }
    }
}

async fn copy_stdout(stdout: tokio::process::ChildStdout, path: PathBuf, number: u32, ready: oneshot::Sender<String>) {
    let mut ready = Some(ready);
    let mut file = match tokio::fs::OpenOptions::new().create(true).append(true).open(&path).await {
        Ok(f) => f,
        Err(_) => return,
    };
    let _ = file.write_all(format!("--- killpoint: incarnation {number} ---\n").as_bytes()).await;
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(json) = line.strip_prefix("KILLPOINT_READY ")
            && let Some(tx) = ready.take()
        {
            let _ = tx.send(json.trim().to_owned());
        }
        let _ = file.write_all(line.as_bytes()).await;
        let _ = file.write_all(b"\n").await;
    }
}

pub fn describe_status(status: Option<ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) if s.code().is_some() => format!("exit code {}", s.code().unwrap_or_default()),
        Some(s) => format!("signal {}", s.signal().unwrap_or_default()),
        None => "status unknown".into(),
    }
}

/// The last lines of the runtime's stderr and stdout, for error messages and reports.
pub fn tail_of_logs(logs: &Path, lines: usize) -> String {
    let mut out = String::new();
    for name in ["stderr.log", "stdout.log"] {
        let text = std::fs::read_to_string(logs.join(name)).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        let start = all.len().saturating_sub(lines);
        out.push_str(&format!("  last lines of the runtime's {name}:\n"));
        if all.is_empty() {
            out.push_str("    (empty)\n");
        }
        for line in &all[start..] {
            out.push_str("    ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
