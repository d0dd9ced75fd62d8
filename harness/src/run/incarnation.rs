//! One incarnation: one life of the runtime process, from spawn to SIGKILL.
//!
//! Every runtime runs in a process group of its own, so a kill takes its children too, and with
//! `PR_SET_PDEATHSIG` so it dies if the harness dies (`crate::run::tether`). Its stdout is read by the harness (for the
//! ready line) and copied to a log file; its stderr goes straight to a log file. Nothing here
//! sleeps: it waits for the ready line, the probe connection or the process's exit, each with a
//! deadline that names what it was waiting for.

use crate::run::probe::ProbeConnection;
use crate::tracer::tether::cannot_start;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::process::Child;
use tokio::sync::oneshot;

/// The contract version this harness gives a runtime unless told otherwise (`--contract`).
pub const CONTRACT: &str = crate::model::contract::Version::CURRENT.name();

/// How long after its ready line a runtime that declared the probe has for its connection to be
/// taken: it connected before printing the line, so this only covers the harness's own turn.
const PROBE_CONNECT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

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
    /// The ready line declared `"metrics": true`: `GET /metrics` serves the monitoring signals
    /// (CONTRACT.md, optional section), and the checker holds them against the ledgers.
    pub metrics: bool,
    /// When its ready line arrived, and how long it took from spawn to get there: the settle
    /// deadlines count from the one and are extended by the other (`run::driver::deadline`).
    pub ready_at: tokio::time::Instant,
    pub start_up: Duration,
    pgid: Pid,
    /// This incarnation's `KILLPOINT_INCARNATION_TOKEN`, to find its processes outside its group.
    token: String,
    killed: bool,
}

/// The variable every process of an incarnation inherits (CONTRACT.md section 2).
pub(crate) const TOKEN_VARIABLE: &str = "KILLPOINT_INCARNATION_TOKEN";

/// Starts, once per harness process, the watchdog that outlives it: PDEATHSIG kills the runtime
/// when the harness dies (even by SIGKILL), but not what the runtime started. The watchdog is a
/// shell reading a pipe only the harness holds; the kernel closes it when the harness dies, and
/// the watchdog then kills every process carrying one of this harness's incarnation tokens, and
/// exits. On a normal exit it finds nothing left and exits too. Its own process group, so a
/// Ctrl-C at the terminal does not take it before it has swept.
pub(crate) fn watchdog() {
    use std::os::unix::process::CommandExt;
    use std::sync::{Mutex, OnceLock};
    static PIPE: OnceLock<Mutex<Option<std::process::ChildStdin>>> = OnceLock::new();
    PIPE.get_or_init(|| {
        // One grep over every environment (`-z`: its entries are NUL-separated, so `^` anchors at
        // each variable), not a `tr | grep` pair per process: on a busy machine that was some
        // 600 processes started at every harness exit, a second of CPU each time.
        const SWEEP: &str = r#"cat >/dev/null
for f in $(grep -lsz "^KILLPOINT_INCARNATION_TOKEN=$1\." /proc/[0-9]*/environ); do
  p=${f#/proc/}
  kill -9 "${p%/environ}" 2>/dev/null
done"#;
        let spawned = std::process::Command::new("/bin/sh")
            .args(["-c", SWEEP, "killpoint-watchdog", &std::process::id().to_string()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .env_remove(TOKEN_VARIABLE)
            .process_group(0)
            .spawn();
        // Without /bin/sh there is no watchdog; the process group and PDEATHSIG still apply.
        Mutex::new(spawned.ok().and_then(|mut child| child.stdin.take()))
    });
}

/// Numbers incarnations (and services) within this harness process, for unique tokens.
static NEXT_TOKEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A token no other process of this harness carries: `<harness pid>.<kind><n>`, the form the
/// watchdog sweeps (`kind` is empty for an incarnation, `service-<name>-` for a service).
pub(crate) fn new_token(kind: &str) -> String {
    let n = NEXT_TOKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}.{kind}{n}", std::process::id())
}

/// The runtime could not be started or did not become ready.
#[derive(Debug, thiserror::Error)]
#[error("incarnation {number} of {program}: {message}")]
pub struct StartError {
    pub number: u32,
    pub program: String,
    pub message: String,
}

/// The runtime a person started, for messages: under `killpoint-tracer -- PROGRAM ARGS…` it is
/// PROGRAM, not the tracer (issue 32: a runtime that exited before its ready line was reported as
/// the tracer's failure).
fn runtime_name(target: &Target) -> String {
    let traced = target.program.file_name().is_some_and(|n| n == "killpoint-tracer");
    match target.args.iter().position(|a| a == "--").filter(|_| traced) {
        Some(i) => target.args.get(i + 1).cloned().unwrap_or_else(|| target.program.display().to_string()),
        None => target.program.display().to_string(),
    }
}

impl Incarnation {
    /// Spawns the runtime and waits until it has connected the probe (when there is one) and
    /// printed its ready line.
    pub async fn start(launch: &Launch<'_>, number: u32) -> Result<Incarnation, StartError> {
        let fail = |message: String| StartError { number, program: runtime_name(launch.target), message };
        let stderr_path = launch.logs.join("stderr.log");
        let mut stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&stderr_path)
            .map_err(|e| fail(format!("cannot open {}: {e}", stderr_path.display())))?;
        // Mark where each incarnation's output starts, so a report can show the last life's.
        use std::io::Write as _;
        let _ = writeln!(stderr, "--- killpoint: incarnation {number} ---");

        watchdog();
        let token = new_token("");
        let program = &launch.target.program;
        let mut command = crate::run::tether::command(program).map_err(|e| fail(cannot_start(program, &e)))?;
        command
            .args(&launch.target.args)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .env("KILLPOINT_INCARNATION", number.to_string())
            // Inherited by everything the runtime starts, even what leaves its process group.
            .env(TOKEN_VARIABLE, &token)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            // A group of its own: killpg reaches every process the runtime forks.
            .process_group(0)
            .kill_on_drop(true);
        let spawned = tokio::time::Instant::now();
        let child = command.spawn().map_err(|e| fail(cannot_start(program, &e)))?;
        let pid = child.id().ok_or_else(|| fail("exited before it could be watched".into()))?;
        let pgid = Pid::from_raw(pid as i32);
        let mut incarnation = Incarnation {
            number,
            api: String::new(),
            child,
            probe: None,
            metrics: false,
            ready_at: spawned,
            start_up: Duration::ZERO,
            pgid,
            token,
            killed: false,
        };
        match incarnation.become_ready(launch).await {
            Ok(()) => {
                incarnation.ready_at = tokio::time::Instant::now();
                incarnation.start_up = incarnation.ready_at - spawned;
                Ok(incarnation)
            }
            Err(message) => {
                // Kill the group and reap the runtime before saying it failed: dropping the
                // incarnation would only signal it, and a caller checking that nothing is left
                // running would race the kill.
                incarnation.kill().await;
                Err(fail(message))
            }
        }
    }

    /// Waits for the ready line (and the probe connection it promises); the error says what was
    /// expected and what was seen.
    async fn become_ready(&mut self, launch: &Launch<'_>) -> Result<(), String> {
        let number = self.number;
        let stdout_path = launch.logs.join("stdout.log");

        let (ready_tx, ready_rx) = oneshot::channel::<String>();
        let stdout = self.child.stdout.take().expect("stdout is piped");
        tokio::spawn(copy_stdout(stdout, stdout_path, number, ready_tx));

        let deadline = tokio::time::Instant::now() + launch.ready_timeout;
        let line = self.ready_line(launch, deadline, ready_rx).await?;
        let given = launch
            .env
            .iter()
            .find(|(name, _)| name == "KILLPOINT_CONTRACT")
            .and_then(|(_, v)| crate::model::contract::Version::from_name(v))
            .unwrap_or(crate::model::contract::Version::CURRENT);
        let declares_probe = self.read_ready_line(&line, given)?;
        // Not the ready deadline: a runtime connects before it prints the ready line, so its
        // connection is queued by now, and what is left of the start-up's allowance says nothing
        // of how long to look for it (under load, the line can come just before that deadline).
        let connected_by = tokio::time::Instant::now() + PROBE_CONNECT_GRACE;
        self.connect_probe(launch, connected_by, declares_probe, &line).await
    }

    /// The ready line's JSON, as the copy of stdout passes it on; or how the runtime failed to
    /// print one before `deadline`.
    async fn ready_line(
        &mut self,
        launch: &Launch<'_>,
        deadline: tokio::time::Instant,
        mut ready_rx: oneshot::Receiver<String>,
    ) -> Result<String, String> {
        tokio::select! {
            line = &mut ready_rx => match line {
                Ok(line) => Ok(line),
                Err(_) => {
                    // Stdout closed. Usually the process is exiting: wait for its status (within
                    // the same deadline) so the message says how it ended.
                    let status = tokio::time::timeout_at(deadline, self.child.wait()).await;
                    let what = match status {
                        Ok(status) => format!(
                            "exited ({}) before printing `KILLPOINT_READY {{…}}` on stdout",
                            describe_status(status.ok())
                        ),
                        Err(_) => "closed its stdout without printing `KILLPOINT_READY {…}`".to_owned(),
                    };
                    Err(last_words(launch.logs, &what))
                }
            },
            status = self.child.wait() => {
                // It may have printed its ready line just before exiting, and the copy of stdout
                // not have passed it on yet: the copy knows once stdout ends. The incarnation has
                // failed either way, so kill what is left of the group (children holding stdout)
                // to end it now; the deadline covers any holder the group kill cannot reach.
                let status = describe_status(status.ok());
                let _ = killpg(self.pgid, Signal::SIGKILL);
                let what = match tokio::time::timeout_at(deadline, &mut ready_rx).await {
                    Ok(Ok(_)) => format!("exited ({status}) right after printing its ready line"),
                    _ => format!("exited ({status}) before printing `KILLPOINT_READY {{…}}` on stdout"),
                };
                Err(last_words(launch.logs, &what))
            }
            _ = tokio::time::sleep_until(deadline) => {
                Err(last_words(launch.logs, &format!(
                    "did not print `KILLPOINT_READY {{…}}` on stdout within {:?}", launch.ready_timeout
                )))
            }
        }
    }

    /// Reads the ready line: the contract it speaks, its API address and whether it serves
    /// metrics are kept; returns whether it declares the probe.
    fn read_ready_line(&mut self, line: &str, given: crate::model::contract::Version) -> Result<bool, String> {
        let ready: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| format!("expected `KILLPOINT_READY <json>`, found `KILLPOINT_READY {line}`: {e}"))?;
        match ready.get("contract").and_then(|c| c.as_str()) {
            Some(declared) => {
                crate::model::contract::judge_declared(declared, given)?;
            }
            None => {
                return Err(format!("expected \"contract\": \"{given}\" in the ready line, found no contract: {line}"));
            }
        }
        self.api = ready
            .get("api")
            .and_then(|a| a.as_str())
            .filter(|a| a.starts_with("http://127.0.0.1:"))
            .ok_or_else(|| format!("expected \"api\": \"http://127.0.0.1:PORT\" in the ready line, found {line}"))?
            .trim_end_matches('/')
            .to_owned();
        // The ready line says whether the runtime implements the probe; one that does has
        // connected before printing it, so the connection is already queued: the deadline only
        // guards against a runtime that promised and did not connect.
        let declares_probe = ready.get("probe").and_then(|p| p.as_bool()).unwrap_or(false);
        self.metrics = ready.get("metrics").and_then(|m| m.as_bool()).unwrap_or(false);
        Ok(declares_probe)
    }

    /// Takes the probe connection a runtime that declares the probe has made (`line`, its ready
    /// line, for the error).
    async fn connect_probe(
        &mut self,
        launch: &Launch<'_>,
        deadline: tokio::time::Instant,
        declares_probe: bool,
        line: &str,
    ) -> Result<(), String> {
        match (launch.probe, declares_probe) {
            (Some(listener), true) => {
                tokio::select! {
                    // A queued connection wins over a deadline that passed at the same time.
                    biased;
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => self.probe = Some(ProbeConnection::new(stream)),
                        Err(e) => return Err(format!("probe socket accept failed: {e}")),
                    },
                    _ = tokio::time::sleep_until(deadline) => {
                        return Err(last_words(launch.logs,
                            "declared \"probe\": true in its ready line but never connected to KILLPOINT_PROBE_SOCKET (CONTRACT.md section 2: connect before printing the ready line)"
                        ));
                    }
                }
            }
            (None, true) => {
                return Err(format!("declared \"probe\": true although no KILLPOINT_PROBE_SOCKET was given: {line}"));
            }
            (_, false) => {}
        }
        Ok(())
    }

    /// SIGSTOPs the whole process group: the runtime stays alive, with everything it had in memory
    /// and its probe announcement unanswered, like a worker in a long GC pause or on a suspended
    /// VM. A stopped process still dies of SIGKILL, so [`Incarnation::kill`] and the drop still
    /// reap it on every path.
    pub fn freeze(&self) {
        let _ = killpg(self.pgid, Signal::SIGSTOP);
    }

    /// SIGCONTs the process group: the frozen runtime carries on where it stopped.
    pub fn thaw(&self) {
        let _ = killpg(self.pgid, Signal::SIGCONT);
    }

    /// SIGKILLs the whole process group and reaps the runtime.
    pub async fn kill(&mut self) -> Option<ExitStatus> {
        self.killed = true;
        self.kill_everything();
        self.child.wait().await.ok()
    }

    /// SIGKILLs the process group, then every process that still carries this incarnation's
    /// token: a descendant that called `setsid` has left the group, not the environment it
    /// inherited. (Deliberately clearing the environment as well escapes this; a PID namespace
    /// would not be escapable, but needs privileges the harness may not have.)
    fn kill_everything(&self) {
        kill_group_and_token(self.pgid, &self.token);
    }
}

/// SIGKILLs the process group `pgid`, then every process that carries `token` in its environment.
pub(crate) fn kill_group_and_token(pgid: Pid, token: &str) {
    // ESRCH (already gone) is fine: the group is dead either way.
    let _ = killpg(pgid, Signal::SIGKILL);
    let Ok(processes) = std::fs::read_dir("/proc") else { return };
    for entry in processes.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        if carries_token(&entry.path(), token) {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// Whether the process whose `/proc` directory is `dir` carries `token` in its environment.
/// Unreadable (gone, a zombie, another user's): no, and not ours to kill or wait for anyway.
pub(crate) fn carries_token(dir: &Path, token: &str) -> bool {
    let wanted = format!("{TOKEN_VARIABLE}={token}");
    std::fs::read(dir.join("environ"))
        .is_ok_and(|environ| environ.split(|&b| b == 0).any(|variable| variable == wanted.as_bytes()))
}

impl Drop for Incarnation {
    fn drop(&mut self) {
        // On every path out (error, panic) the group dies; tokio reaps the child in the background.
        if !self.killed {
            self.kill_everything();
        }
    }
}

/// Longest stdout line looked at for `KILLPOINT_READY`; longer lines are copied to the log but not
/// kept in memory, so a runtime writing without newlines cannot grow the harness.
const MAX_READY_LINE: usize = 64 * 1024;

/// Copies the runtime's stdout to the log byte for byte and passes on the ready line. Bytes, not
/// text: a runtime may print anything, and a reader that stopped at the first byte that is not
/// UTF-8 would close the pipe on it (it then dies of EPIPE and is reported as having exited).
async fn copy_stdout(stdout: tokio::process::ChildStdout, path: PathBuf, number: u32, ready: oneshot::Sender<String>) {
    let mut ready = Some(ready);
    let mut file = match tokio::fs::OpenOptions::new().create(true).append(true).open(&path).await {
        Ok(f) => f,
        Err(_) => return,
    };
    let _ = file.write_all(format!("--- killpoint: incarnation {number} ---\n").as_bytes()).await;
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    // The current line, up to MAX_READY_LINE bytes; `too_long` once it went past.
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let chunk = match reader.fill_buf().await {
            Ok(chunk) if !chunk.is_empty() => chunk,
            _ => break,
        };
        let _ = file.write_all(chunk).await;
        for (i, piece) in chunk.split(|&b| b == b'\n').enumerate() {
            if i > 0 {
                // A newline ended the line before this piece.
                if !too_long
                    && let Some(json) = String::from_utf8_lossy(&line).strip_prefix("KILLPOINT_READY ")
                    && let Some(tx) = ready.take()
                {
                    let _ = tx.send(json.trim().to_owned());
                }
                line.clear();
                too_long = false;
            }
            if line.len() + piece.len() <= MAX_READY_LINE {
                line.extend_from_slice(piece);
            } else {
                too_long = true;
            }
        }
        let n = chunk.len();
        reader.consume(n);
    }
    // End the last line, so the next incarnation's marker starts a line of its own.
    if !line.is_empty() || too_long {
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

/// `what` went wrong, with the runtime's last lines.
fn last_words(logs: &Path, what: &str) -> String {
    let tail = tail_of_logs(logs, 15);
    match crate::model::contract::hint(&tail) {
        Some(hint) => format!("{what}; {hint}\n{tail}"),
        None => format!("{what}\n{tail}"),
    }
}

/// The last lines of the runtime's stderr and stdout, for error messages and reports. Reads only
/// the end of each log (a runtime may have written gigabytes), shows bytes that are not UTF-8 as
/// U+FFFD rather than hiding the whole log, and shortens each line to its end.
pub fn tail_of_logs(logs: &Path, lines: usize) -> String {
    const READ: u64 = 64 * 1024;
    const SHOWN: usize = 300;
    let mut out = String::new();
    for name in ["stderr.log", "stdout.log"] {
        let (bytes, cut) = read_end(&logs.join(name), READ);
        let text = String::from_utf8_lossy(&bytes);
        let mut all: Vec<&str> = text.lines().collect();
        if cut && all.len() > 1 {
            all.remove(0); // only the end of a line
        }
        let start = all.len().saturating_sub(lines);
        out.push_str(&format!("  last lines of the runtime's {name}:\n"));
        if all.is_empty() {
            out.push_str("    (empty)\n");
        }
        for line in &all[start..] {
            out.push_str("    ");
            let chars = line.chars().count();
            if chars > SHOWN {
                let end: String = line.chars().skip(chars - SHOWN).collect();
                out.push_str(&format!("[… {} characters] {end}", chars - SHOWN));
            } else {
                out.push_str(line);
            }
            out.push('\n');
        }
    }
    out
}

/// The last `n` bytes of a file (all of it if shorter), and whether anything was cut off.
pub(crate) fn read_end(path: &Path, n: u64) -> (Vec<u8>, bool) {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else { return (Vec::new(), false) };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let cut = len > n;
    if cut && file.seek(SeekFrom::Start(len - n)).is_err() {
        return (Vec::new(), false);
    }
    let mut bytes = Vec::new();
    let _ = file.take(n).read_to_end(&mut bytes);
    (bytes, cut)
}

/// The port of an API base address (`http://127.0.0.1:PORT`, an incarnation's `api`); 0 when it
/// has none.
pub(crate) fn api_port(base: &str) -> u16 {
    base.rsplit_once(':').and_then(|(_, port)| port.trim_end_matches('/').parse().ok()).unwrap_or(0)
}

/// The reference runtime built beside the running executable (`target/<profile>/killpoint-runtime`),
/// if it is there. Test executables live one level deeper, in `deps/`.
pub fn reference_runtime() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join("killpoint-runtime"), dir.parent()?.join("killpoint-runtime")].into_iter().find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::{Target, runtime_name};
    use std::path::PathBuf;

    #[test]
    fn a_traced_runtime_is_named_by_its_program_not_the_tracer() {
        let plain = Target { program: PathBuf::from("/x/my-runtime"), args: vec!["--flag".into()] };
        assert_eq!(runtime_name(&plain), "/x/my-runtime");
        let traced = Target {
            program: PathBuf::from("/t/killpoint-tracer"),
            args: vec!["--".into(), "/x/my-runtime".into(), "--flag".into()],
        };
        assert_eq!(runtime_name(&traced), "/x/my-runtime");
    }
}
