//! The harness end of `killpoint-tracer` (`syscalls.rs`): system-call crash points.
//!
//! When a run traces, every incarnation is started as `killpoint-tracer -- RUNTIME ARGS…`. The
//! tracer connects to a Unix socket of the run and announces each crash point (a durable write, a
//! sync, a request to or answer from the fake world) before or after the call, and waits for
//! `{"action":"resume"}` — the probe's protocol. A task per incarnation answers them, counts and
//! records them, and when one is the crash point a `[[syscall_fault]]` names, leaves it unanswered
//! and tells the driver, which kills the process group there: exactly at that call.
//!
//! Points are counted from the incarnation's ready line: what the runtime does before it (opening
//! its store) is resumed at once and never addressed, so a kill can never leave an incarnation that
//! never got ready.

use crate::scenario::SyscallFault;
use crate::syscalls::{Point, PointKind, When};
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// The variable that tells the tracer where to announce its points.
pub const SOCKET_VARIABLE: &str = "KILLPOINT_TRACE_SOCKET";

/// `killpoint-tracer` beside the running executable (or `KILLPOINT_TRACER`), if it is there.
pub fn tracer_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KILLPOINT_TRACER") {
        return Some(PathBuf::from(path));
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join("killpoint-tracer"), dir.parent()?.join("killpoint-tracer")].into_iter().find(|p| p.is_file())
}

/// One crash point a run passed, after its incarnation's ready line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyscallPoint {
    pub incarnation: u32,
    pub kind: PointKind,
    pub when: When,
    /// The n-th point of this kind and `when` in this incarnation, from its ready line.
    pub occurrence: u32,
    /// The call and what it touched, for people: `fsync runtime.sqlite3-wal`, `sendto provider`.
    pub what: String,
}

impl SyscallPoint {
    /// A kill here, as a scenario's `[[syscall_fault]]`.
    pub fn fault(&self) -> SyscallFault {
        SyscallFault { kind: self.kind, occurrence: self.occurrence, when: self.when, incarnation: self.incarnation }
    }
}

/// A point a fault addressed was reached: which fault, and what the call was.
#[derive(Debug)]
pub struct Reached {
    pub fault: usize,
    pub point: SyscallPoint,
}

/// Tracing for one run: the socket, the faults, and what every incarnation's task saw.
pub struct Tracing {
    listener: Arc<UnixListener>,
    faults: Arc<Vec<SyscallFault>>,
    hits: Arc<Mutex<Vec<bool>>>,
    seen: Arc<Mutex<Vec<SyscallPoint>>>,
    reached: UnboundedSender<Reached>,
    /// The current incarnation's task and its ready flag.
    task: Option<(tokio::task::JoinHandle<()>, Arc<AtomicBool>)>,
}

impl Tracing {
    pub fn new(socket: &Path, faults: Vec<SyscallFault>) -> std::io::Result<(Tracing, UnboundedReceiver<Reached>)> {
        let listener = Arc::new(UnixListener::bind(socket)?);
        let (reached, receiver) = unbounded_channel();
        let hits = Arc::new(Mutex::new(vec![false; faults.len()]));
        let tracing = Tracing { listener, faults: Arc::new(faults), hits, seen: Arc::default(), reached, task: None };
        Ok((tracing, receiver))
    }

    /// Before incarnation `number` starts: a task that accepts its tracer's connection and answers
    /// it. The previous incarnation's task, if it still waits, is stopped: its tracer is dead.
    pub fn watch(&mut self, number: u32) {
        if let Some((task, _)) = self.task.take() {
            task.abort();
        }
        let ready = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(answer(
            self.listener.clone(),
            number,
            ready.clone(),
            self.faults.clone(),
            self.hits.clone(),
            self.seen.clone(),
            self.reached.clone(),
        ));
        self.task = Some((task, ready));
    }

    /// The incarnation printed its ready line: its points count from now on.
    pub fn ready(&self) {
        if let Some((_, ready)) = &self.task {
            ready.store(true, Ordering::SeqCst);
        }
    }

    pub fn hits(&self) -> Vec<bool> {
        self.hits.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn points(&self) -> Vec<SyscallPoint> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Drop for Tracing {
    fn drop(&mut self) {
        if let Some((task, _)) = self.task.take() {
            task.abort();
        }
    }
}

/// Answers one tracer: every point resumed, except the one a fault addresses.
async fn answer(
    listener: Arc<UnixListener>,
    incarnation: u32,
    ready: Arc<AtomicBool>,
    faults: Arc<Vec<SyscallFault>>,
    hits: Arc<Mutex<Vec<bool>>>,
    seen: Arc<Mutex<Vec<SyscallPoint>>>,
    reached: UnboundedSender<Reached>,
) {
    let Ok((stream, _)) = listener.accept().await else { return };
    // The tracer leads the incarnation's process group (the runtime is its child, in its group).
    let group = stream.peer_cred().ok().and_then(|c| c.pid());
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    let mut counts: HashMap<(PointKind, When), u32> = HashMap::new();
    // A line that is not a point, or a closed socket, ends the task: the tracer exits on its own
    // (its runtime dies with it) and the driver sees the exit.
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(point) = serde_json::from_str::<Point>(&line) else { return };
        if ready.load(Ordering::SeqCst) {
            let count = counts.entry((point.kind, point.when)).or_default();
            *count += 1;
            let seen_point = SyscallPoint {
                incarnation,
                kind: point.kind,
                when: point.when,
                occurrence: *count,
                what: describe(&point),
            };
            seen.lock().unwrap_or_else(|p| p.into_inner()).push(seen_point.clone());
            let fault = {
                let mut hits = hits.lock().unwrap_or_else(|p| p.into_inner());
                let index = faults.iter().enumerate().position(|(i, f)| !hits[i] && *f == seen_point.fault());
                if let Some(i) = index {
                    hits[i] = true;
                }
                index
            };
            if let Some(fault) = fault {
                // Never answered: killed right here, while the call is held. At once, not when the
                // driver next looks: the stopped thread may hold a lock the runtime's API needs,
                // and the harness's requests would wait on it.
                if let Some(group) = group {
                    let _ =
                        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(group), nix::sys::signal::Signal::SIGKILL);
                }
                let _ = reached.send(Reached { fault, point: seen_point });
                return;
            }
        }
        if write.write_all(b"{\"action\":\"resume\"}\n").await.is_err() {
            return;
        }
    }
}

/// `pwrite64 runtime.sqlite3-wal`, `sendto provider`.
fn describe(point: &Point) -> String {
    let place = match (&point.path, &point.peer) {
        (Some(path), _) => Path::new(path).file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
        (None, Some(peer)) => peer.name().to_owned(),
        (None, None) => String::new(),
    };
    format!("{} {place}", point.call).trim_end().to_owned()
}
