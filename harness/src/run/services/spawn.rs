//! Starting one service: its data dir and port, its process (a group of its own, dying with the
//! harness, carrying a token the watchdog sweeps), its log, and the wait for its readiness check.

use super::traced::Traced;
use super::{Ports, Ready, Service, ServiceName};
use crate::run::incarnation::{TOKEN_VARIABLE, describe_status, kill_group_and_token, new_token};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::process::Child;
use tokio::time::Instant;

/// How often a readiness check is tried again. There is no event for "a server now accepts
/// connections": the check is polled, always under the service's deadline. A port is tried every
/// [`POLL`]; a command starts a process each time (`pg_isready` every 20 ms was 6 % of the
/// framework trials' CPU), so it waits twice as long after each failed try, up to [`COMMAND_POLL`].
const POLL: Duration = Duration::from_millis(20);
const COMMAND_POLL: Duration = Duration::from_millis(160);

/// A service whose process is running and whose readiness check passed.
pub(super) struct Spawned {
    pub(super) name: ServiceName,
    pub(super) ports: Ports,
    pub(super) pgid: Pid,
    pub(super) token: String,
    pub(super) child: Child,
    pub(super) log: PathBuf,
    /// From its spawn to its check passing.
    pub(super) waited: Duration,
}

/// Starts `service` with its data dir under `run_dir/services/` and its log in `logs`, and waits
/// for it to be ready. On an error nothing of it is left running: the message says what was
/// waited for and shows its last lines.
///
/// The harness's ports are free when picked but let go before the service binds them, and a
/// server that picks more ports of its own (Temporal's dev server: its HTTP API, its internal
/// services) can be handed one of ours in between. So a first start that exits saying an address
/// was in use is tried again on fresh ports, [`PORT_TRIES`] times in all; the log keeps each try.
pub(super) async fn spawn(
    service: &Service,
    run_dir: &Path,
    logs: &Path,
    traced: Option<&Traced>,
) -> Result<Spawned, String> {
    let log = logs.join(format!("service-{}.log", service.name));
    let mut tries = 1;
    loop {
        let ports = Ports::pick(&service.ports).map_err(|e| format!("no free ports on 127.0.0.1 for it: {e}"))?;
        let logged = std::fs::metadata(&log).map_or(0, |m| m.len());
        match spawn_on(service, run_dir, logs, ports, traced).await {
            Err(_) if tries < PORT_TRIES && port_taken(&log, logged) => tries += 1,
            Err(e) if tries > 1 => return Err(format!("{e}  (started {tries} times, each on fresh ports)\n")),
            done => return done,
        }
    }
}

/// How many times a first start is tried when its ports were taken under it ([`spawn`]).
const PORT_TRIES: u32 = 3;

/// Whether what `log` gained past `from` says a bind found its address in use: Go's and Python's
/// "address already in use", Node's `EADDRINUSE`.
fn port_taken(log: &Path, from: u64) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(log) else { return false };
    let mut text = Vec::new();
    if file.seek(SeekFrom::Start(from)).is_err() || file.take(1 << 20).read_to_end(&mut text).is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&text).to_ascii_lowercase();
    text.contains("address already in use") || text.contains("eaddrinuse")
}

/// The service's data dir in the run's directory, made if it is not there yet.
pub(super) fn data_dir(run_dir: &Path, name: &ServiceName) -> Result<PathBuf, String> {
    let data = run_dir.join("services").join(name.as_str());
    std::fs::create_dir_all(&data).map_err(|e| format!("cannot make its data dir {}: {e}", data.display()))?;
    Ok(data)
}

/// [`spawn`] on `ports`: the first start's, or those it had before a `[[service_fault]]` or a
/// power loss took it down (the worker's variables name them; its data dir is the same whatever
/// the ports). Under `traced`'s tracer in machine-crash mode.
pub(super) async fn spawn_on(
    service: &Service,
    run_dir: &Path,
    logs: &Path,
    ports: Ports,
    traced: Option<&Traced>,
) -> Result<Spawned, String> {
    let name = &service.name;
    let port = ports.main;
    let data = data_dir(run_dir, name)?;
    let log = logs.join(format!("service-{name}.log"));
    let env = environment(name, &data, &ports);
    let (out, err) = log_files(&log, &format!("--- killpoint: service {name} started on port {port} ---"))?;

    crate::run::incarnation::watchdog();
    let token = new_token(&format!("service-{name}-"));
    let program = in_dir(&service.dir, &service.program);
    let (program, args, socket) = match traced {
        Some(traced) => {
            let (tracer, args, socket) = traced.wrap(&program, &service.args);
            (tracer, args, Some(socket))
        }
        None => (program, service.args.clone(), None),
    };
    let mut command = crate::run::tether::command(&program)
        .map_err(|e| format!("cannot start `{}`: {e}", service.program.display()))?;
    if let Some(socket) = socket {
        // A service's tracer reports no escapes (`sandboxed` binds the worker, CONTRACT.md
        // section 2), even from a harness that was itself given the variable.
        command.env(socket.0, socket.1).env_remove(crate::tracer::ESCAPES_VARIABLE);
    }
    command
        .args(&args)
        .current_dir(&service.dir)
        .envs(env.iter().map(|(k, v)| (k, v)))
        // Swept by the watchdog if the harness dies, with everything the service starts.
        .env(TOKEN_VARIABLE, &token)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        // Outside the worker's group: no kill of the worker reaches it.
        .process_group(0)
        .kill_on_drop(true);
    let spawned_at = Instant::now();
    let child = command.spawn().map_err(|e| format!("cannot start `{}`: {e}", service.program.display()))?;
    let pgid = Pid::from_raw(child.id().map_or(0, |pid| pid as i32));
    let mut spawned = Spawned { name: name.clone(), ports, pgid, token, child, log, waited: Duration::ZERO };
    match wait_ready(&mut spawned.child, service, port, &env, &spawned.log).await {
        Ok(()) => {
            spawned.waited = spawned_at.elapsed();
            Ok(spawned)
        }
        Err(what) => {
            // Killed and reaped before the error is told: a caller checking that nothing is left
            // running would race the kill.
            kill_group_and_token(spawned.pgid, &spawned.token);
            let _ = spawned.child.wait().await;
            Err(format!("{what}\n{}", last_lines(&spawned.log, 15)))
        }
    }
}

/// The service's own variables (CONTRACT.md section 2, "Services"), besides the harness's
/// environment it inherits: one `KILLPOINT_SERVICE_PORT_<NAME>` per port it declared.
fn environment(name: &ServiceName, data: &Path, ports: &Ports) -> Vec<(String, String)> {
    let port = ports.main;
    let mut env = vec![
        ("KILLPOINT_SERVICE_NAME".to_owned(), name.to_string()),
        ("KILLPOINT_SERVICE_DATA_DIR".to_owned(), data.display().to_string()),
        ("KILLPOINT_SERVICE_PORT".to_owned(), port.to_string()),
        ("KILLPOINT_SERVICE_LISTEN".to_owned(), format!("127.0.0.1:{port}")),
    ];
    for (named, port) in &ports.named {
        env.push((format!("KILLPOINT_SERVICE_PORT_{}", named.upper()), port.to_string()));
    }
    env
}

/// `program` as the service's directory has it: a relative path with a `/` is the file's
/// neighbour; a bare name is looked up on PATH.
fn in_dir(dir: &Path, program: &Path) -> PathBuf {
    match program.is_relative() && program.components().count() > 1 {
        true => dir.join(program),
        false => program.to_owned(),
    }
}

/// The log file, opened for appending twice (stdout, stderr), after `header`.
fn log_files(log: &Path, header: &str) -> Result<(Stdio, Stdio), String> {
    use std::io::Write as _;
    let open = || std::fs::OpenOptions::new().create(true).append(true).open(log);
    let mut out = open().map_err(|e| format!("cannot open its log {}: {e}", log.display()))?;
    let _ = writeln!(out, "{header}");
    let err = out.try_clone().map_err(|e| format!("cannot open its log {}: {e}", log.display()))?;
    Ok((Stdio::from(out), Stdio::from(err)))
}

/// Tries the readiness check until it passes, the service exits, or its deadline passes.
async fn wait_ready(
    child: &mut Child,
    service: &Service,
    port: u16,
    env: &[(String, String)],
    log: &Path,
) -> Result<(), String> {
    let deadline = Instant::now() + service.ready_timeout;
    let waited_for = service.ready.describe(port);
    let mut last = String::new();
    let mut pause = POLL;
    let mut next = Instant::now();
    loop {
        tokio::select! {
            biased;
            status = child.wait() => {
                let status = describe_status(status.ok());
                return Err(format!("exited ({status}) before it was ready (waited for {waited_for})"));
            }
            _ = tokio::time::sleep_until(deadline) => {
                return Err(format!("was not ready within {:?}: waited for {waited_for}{last}", service.ready_timeout));
            }
            _ = tokio::time::sleep_until(next) => match check(&service.ready, service, port, env, log, deadline).await {
                Ok(()) => return Ok(()),
                Err(why) => {
                    last = format!("; the last try {why}");
                    next = Instant::now() + pause;
                    if matches!(service.ready, Ready::Command { .. }) {
                        pause = (pause * 2).min(COMMAND_POLL);
                    }
                }
            },
        }
    }
}

/// One try of the readiness check, within `deadline`.
async fn check(
    ready: &Ready,
    service: &Service,
    port: u16,
    env: &[(String, String)],
    log: &Path,
    deadline: Instant,
) -> Result<(), String> {
    match ready {
        Ready::Port => {
            match tokio::time::timeout_at(deadline, tokio::net::TcpStream::connect(("127.0.0.1", port))).await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(format!("was refused: {e}")),
                Err(_) => Err("did not connect before the deadline".into()),
            }
        }
        Ready::Command { program, args } => {
            let (out, err) =
                log_files(log, &format!("--- killpoint: readiness check of service {} ---", service.name))?;
            let mut command = crate::run::tether::command(&in_dir(&service.dir, Path::new(program)))
                .map_err(|e| format!("could not start: {e}"))?;
            command.args(args).current_dir(&service.dir).envs(env.iter().map(|(k, v)| (k, v)));
            command.stdin(Stdio::null()).stdout(out).stderr(err).process_group(0).kill_on_drop(true);
            let mut child = command.spawn().map_err(|e| format!("could not start: {e}"))?;
            let pgid = Pid::from_raw(child.id().map_or(0, |pid| pid as i32));
            match tokio::time::timeout_at(deadline, child.wait()).await {
                Ok(Ok(status)) if status.success() => Ok(()),
                Ok(status) => Err(format!("exited ({})", describe_status(status.ok()))),
                Err(_) => {
                    let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
                    let _ = child.wait().await;
                    Err("was still running at the deadline".into())
                }
            }
        }
    }
}

/// The last `n` lines of a service's log, for error messages.
pub(super) fn last_lines(log: &Path, n: usize) -> String {
    let (bytes, cut) = crate::run::incarnation::read_end(log, 16 * 1024);
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.lines().collect();
    if cut && lines.len() > 1 {
        lines.remove(0); // only the end of a line
    }
    let start = lines.len().saturating_sub(n);
    let mut out = format!("  last lines of {}:\n", log.display());
    if lines.is_empty() {
        out.push_str("    (empty)\n");
    }
    for line in &lines[start..] {
        out.push_str(&format!("    {line}\n"));
    }
    out
}
