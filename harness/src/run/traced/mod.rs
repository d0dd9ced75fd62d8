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

mod boundaries;
mod counting;
mod go_on;
mod turn;

use super::held::{self, Held};
use crate::run::power_loss::PowerLoss;
use crate::scenario::{Anchor, SyscallFault};
use crate::tracer::{Point, PointKind, When};
use boundaries::Boundaries;
use counting::{Counted, Counting};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
pub use turn::{DELIVERY_GRACE, Settled, TURN_LIMIT, Turn, listening};

/// The variable that tells the tracer where to announce its points.
pub const SOCKET_VARIABLE: &str = "KILLPOINT_TRACE_SOCKET";

/// The file in a traced run's directory where every incarnation's tracer appends what the runtime
/// wrote outside its data dir or contacted outside the world (`tracer::Escape`); absent when it
/// did neither.
pub const ESCAPES_FILE: &str = "escapes.jsonl";

/// What the runtime of a run did outside its data dir and the world, every incarnation's (in
/// the order seen; one place once).
pub fn escapes(run_dir: &Path) -> Vec<crate::tracer::Escape> {
    let mut seen = Vec::new();
    for escape in crate::tracer::read_escapes(&run_dir.join(ESCAPES_FILE)) {
        if !seen.contains(&escape) {
            seen.push(escape);
        }
    }
    seen
}

/// `killpoint-tracer` beside the running executable (or `KILLPOINT_TRACER`), if it is there.
pub fn tracer_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KILLPOINT_TRACER") {
        return Some(PathBuf::from(path));
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join("killpoint-tracer"), dir.parent()?.join("killpoint-tracer")].into_iter().find(|p| p.is_file())
}

/// How long the one check that this machine lets the tracer trace may take.
const PERMITTED_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether this machine lets `killpoint-tracer` trace, checked once per process by tracing
/// `true`: `Err` with one line saying why not (no tracer built, or ptrace or seccomp refused, as in
/// some containers). Callers fall back to the probe or the black box and say so.
pub fn permitted() -> Result<(), String> {
    static CHECK: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    CHECK
        .get_or_init(|| {
            let Some(tracer) = tracer_binary() else {
                return Err("system-call crash points need `killpoint-tracer` beside this program (or KILLPOINT_TRACER); build it with `cargo build --workspace`".to_owned());
            };
            let mut check = std::process::Command::new(&tracer);
            check.args(["--", "true"]);
            let output = crate::run::one_off::output_within(&mut check, PERMITTED_DEADLINE)
                .map_err(|why| format!("{} tracing `true`: {}", tracer.display(), why.said(PERMITTED_DEADLINE)))?;
            match output.status.code() {
                Some(crate::tracer::NOT_PERMITTED_EXIT) => {
                    let said = String::from_utf8_lossy(&output.stderr);
                    Err(said.lines().next().unwrap_or("killpoint-tracer may not trace here").trim().to_owned())
                }
                Some(0) => Ok(()),
                _ => Err(format!(
                    "{} could not trace `true` ({}): {}",
                    tracer.display(),
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                )),
            }
        })
        .clone()
}

/// One crash point a run passed, after its incarnation's ready line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyscallPoint {
    pub incarnation: u32,
    pub kind: PointKind,
    pub when: When,
    /// The n-th point of this kind and `when` counted from `since` (in this incarnation), or from
    /// the incarnation's ready line when no boundary was reached in it yet.
    pub occurrence: u32,
    pub since: Option<Anchor>,
    /// The last delivery attempt answered since `since`, and this point's occurrence from it: a
    /// second address (a `[[syscall_fault]]` `since` a delivery attempt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since_delivery: Option<(Anchor, u32)>,
    /// The boundaries reached exactly at this point (CONTRACT.md section 7, "Boundaries at
    /// system calls"), each with its occurrence for its operation, counted across incarnations.
    pub boundaries: Vec<Anchor>,
    /// On an exchange whose request names an operation: that operation, and this point's
    /// occurrence among the exchange points of its kind and `when` for it in this incarnation (a
    /// third address, which operations in flight beside it do not move).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exchange: Option<(String, u32)>,
    /// What a kill here leaves behind, as far as the calls tell: see [`CrashState`].
    pub state: CrashState,
    /// The call and what it touched, for people: `fsync runtime.sqlite3-wal`, `sendto provider`.
    pub what: String,
    /// Under a controlled schedule: the thread that made the call (`main.2`, see
    /// `crate::tracer::Point::thread`) and the decision that let it go.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
}

/// The crash state a kill at a point leaves, counted in calls: the durable changes under the data
/// dir that completed (writes, truncations, renames, unlinks) and the sends to the fake world that
/// completed, in this incarnation. A process kill loses only the process: what `write` handed the
/// kernel is on disk for the next incarnation whether or not it was synced, and bytes handed to a
/// socket reach the world. Two points with the same counts leave the same disk and the same world,
/// so the next incarnation recovers from the same place: `killpoint explore` runs one of them.
/// A power loss (`--crash machine`) keeps only what was synced: there the completed syncs count too.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CrashState {
    pub durable: u32,
    pub sent: u32,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub synced: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl CrashState {
    /// The state once `point`'s call is done (`after` a change counts it; `before` does not);
    /// syncs count when `syncs_count` (machine crashes).
    fn passing(&mut self, point: &Point, syncs_count: bool) -> CrashState {
        let before = *self;
        let done = point.when == When::After && point.ret.is_none_or(|r| r >= 0);
        match point.kind {
            PointKind::Sync if done && syncs_count => self.synced += 1,
            PointKind::Durable if done && syncs_count && point.synced => {
                self.durable += 1;
                self.synced += 1;
            }
            PointKind::Durable | PointKind::Rename | PointKind::Unlink if done => self.durable += 1,
            PointKind::Request if done => self.sent += 1,
            _ => {}
        }
        if point.when == When::Before { before } else { *self }
    }
}

impl SyscallPoint {
    /// A kill here, as a scenario's `[[syscall_fault]]`: counted among its operation's exchanges
    /// where its request names one (other operations' exchanges may come between a boundary and
    /// this point in one run and not in the next), else from the last boundary or the ready line.
    pub fn fault(&self) -> SyscallFault {
        let kill = crate::scenario::SyscallAction::Kill;
        match &self.exchange {
            Some((operation, n)) => SyscallFault {
                kind: self.kind,
                occurrence: *n,
                when: self.when,
                incarnation: Some(self.incarnation),
                since: None,
                operation: Some(operation.clone()),
                action: kill,
            },
            None => SyscallFault {
                kind: self.kind,
                occurrence: self.occurrence,
                when: self.when,
                incarnation: self.since.is_none().then_some(self.incarnation),
                since: self.since.clone(),
                operation: None,
                action: kill,
            },
        }
    }
}

/// What a tracer's kill was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A `[[syscall_fault]]`, by index.
    Syscall(usize),
    /// A `[[fault]]` at a boundary reached at a system call, by index.
    Boundary(usize),
}

/// A point a fault addressed was reached: which fault, and what the call was.
#[derive(Debug)]
pub struct Reached {
    pub target: Target,
    pub point: SyscallPoint,
    /// For a boundary: the tracer took the first sync after the answer for the commit, and cannot
    /// tell it from a sync just before it (a journal's, another writer's): see [`Due::NextSync`].
    pub inferred: bool,
    /// A freeze: the incarnation is held at the point, alive, until this is resumed. `None` for
    /// a kill: the incarnation is dead already.
    pub held: Option<Held>,
}

/// A `[[fault]]` the tracer fires at a boundary reached at a system call: a kill, or a freeze.
#[derive(Debug, Clone)]
pub struct BoundaryFault {
    /// Its index in the scenario's faults.
    pub index: usize,
    pub at: Anchor,
    pub freeze: bool,
}

/// What every incarnation's task shares.
struct Shared {
    faults: Vec<SyscallFault>,
    state: Mutex<State>,
    /// In machine-crash mode: what a power loss would leave, kept from every point.
    power_loss: Option<PowerLoss>,
    reached: UnboundedSender<Reached>,
    /// Called at every explored point passed after the ready line while the runtime is held there.
    hook: std::sync::OnceLock<Arc<dyn PointHook>>,
    /// Under a controlled schedule: the harness's turn (`turn`).
    turn: Option<Arc<Turn>>,
    /// Requests to the fake world completely sent, by every incarnation so far.
    sent: std::sync::atomic::AtomicUsize,
}

/// Something the harness does at an explored point (`PointKind::explored`) while the tracer holds
/// the runtime stopped there (every traced call of every thread waits until it returns): explore
/// builds the crash state there (`run::built`). Not at a point a fault kills at, nor one told.
pub trait PointHook: Send + Sync {
    fn held<'a>(&'a self, at: HeldPoint<'a>) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>;
}

/// A point as a [`PointHook`] sees it.
pub struct HeldPoint<'a> {
    pub point: &'a SyscallPoint,
    /// Requests to the fake world the incarnation completely sent so far (the body's last byte
    /// handed to the kernel): the world has them, or will record them, whatever happens next.
    pub requests_sent: usize,
    /// What the tracer's side of the run knows so far, to go on from ([`Tracing::resumed`]).
    pub progress: TraceProgress,
    /// In machine-crash mode, the power-loss model, this point recorded: what a power loss here
    /// would leave of the data dir.
    pub power_loss: Option<&'a PowerLoss>,
}

/// The tracer's side of a run at a point: the boundaries reached (occurrences count across
/// incarnations) and every point passed, this one included.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TraceProgress {
    boundaries: Boundaries,
    seen: Vec<SyscallPoint>,
}

impl TraceProgress {
    /// Every point passed up to this one, this one included.
    pub fn points(&self) -> &[SyscallPoint] {
        &self.seen
    }
}

struct State {
    hits: Vec<bool>,
    /// Armed once the first incarnation said whether it has a probe (without one, the tracer
    /// is what reaches these boundaries); each with whether it was hit.
    boundary_faults: Vec<(BoundaryFault, bool)>,
    seen: Vec<SyscallPoint>,
    boundaries: Boundaries,
    /// Every fault is armed where it fires (`go_on`).
    armed: bool,
}

/// Tracing for one run: the socket, the faults, and what every incarnation's task saw.
pub struct Tracing {
    listener: Arc<UnixListener>,
    shared: Arc<Shared>,
    /// The current incarnation's task and its ready flag.
    task: Option<(tokio::task::JoinHandle<()>, Arc<AtomicBool>)>,
}

impl Tracing {
    pub fn new(
        socket: &Path,
        faults: Vec<SyscallFault>,
        power_loss: Option<PowerLoss>,
    ) -> std::io::Result<(Tracing, UnboundedReceiver<Reached>)> {
        Tracing::scheduled(socket, faults, power_loss, None)
    }

    /// [`Tracing::new`], with the harness's turn when the tracer runs a controlled schedule.
    pub fn scheduled(
        socket: &Path,
        faults: Vec<SyscallFault>,
        power_loss: Option<PowerLoss>,
        turn: Option<Arc<Turn>>,
    ) -> std::io::Result<(Tracing, UnboundedReceiver<Reached>)> {
        let listener = Arc::new(UnixListener::bind(socket)?);
        let (reached, receiver) = unbounded_channel();
        let state = State {
            hits: vec![false; faults.len()],
            boundary_faults: Vec::new(),
            seen: Vec::new(),
            boundaries: Boundaries::default(),
            armed: false,
        };
        let hook = Default::default();
        let sent = Default::default();
        let shared = Arc::new(Shared { faults, state: Mutex::new(state), power_loss, reached, hook, turn, sent });
        Ok((Tracing { listener, shared, task: None }, receiver))
    }

    /// Tracing that goes on from `progress` (a crash state built at a point of a record run):
    /// the points passed and boundaries reached until then are this run's, and each of `faults`
    /// that `hit` says was hit there is spent.
    pub fn resumed(
        socket: &Path,
        faults: Vec<SyscallFault>,
        hit: Vec<bool>,
        progress: TraceProgress,
        power_loss: Option<PowerLoss>,
        turn: Option<Arc<Turn>>,
    ) -> std::io::Result<(Tracing, UnboundedReceiver<Reached>)> {
        let (tracing, receiver) = Tracing::scheduled(socket, faults, power_loss, turn)?;
        {
            let mut state = tracing.shared.lock();
            state.hits = hit;
            state.boundaries = progress.boundaries;
            state.seen = progress.seen;
        }
        Ok((tracing, receiver))
    }

    /// Calls `hook` at every point passed after a ready line (set once, before the first start).
    pub fn hold_with(&self, hook: Arc<dyn PointHook>) {
        let _ = self.shared.hook.set(hook);
    }

    /// Before incarnation `number` starts: a task that accepts its tracer's connection and answers
    /// it. The previous incarnation's task, if it still waits, is stopped: its tracer is dead.
    pub fn watch(&mut self, number: u32) {
        if let Some((task, _)) = self.task.take() {
            task.abort();
        }
        self.shared.lock().boundaries.restart();
        if let Some(turn) = &self.shared.turn {
            turn.starting();
        }
        let ready = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(answer(self.listener.clone(), number, ready.clone(), self.shared.clone()));
        self.task = Some((task, ready));
    }

    /// The incarnation printed its ready line: its points count from now on.
    pub fn ready(&self) {
        if let Some((_, ready)) = &self.task {
            ready.store(true, Ordering::SeqCst);
        }
    }

    /// Kills at these boundaries, where the tracer reaches them (a runtime without the probe).
    /// Armed before any operation is submitted: nothing reaches a boundary before that.
    pub fn arm_boundaries(&self, faults: Vec<BoundaryFault>) {
        self.shared.lock().boundary_faults = faults.into_iter().map(|f| (f, false)).collect();
    }

    /// The harness's turn, under a controlled schedule.
    pub fn turn(&self) -> Option<&Arc<Turn>> {
        self.shared.turn.as_ref()
    }

    pub fn hits(&self) -> Vec<bool> {
        self.shared.lock().hits.clone()
    }

    pub fn points(&self) -> Vec<SyscallPoint> {
        self.shared.lock().seen.clone()
    }

    /// After a kill: whether the incarnation's task read its tracer's last lines (it ends at the
    /// dead tracer's end of file) by `deadline`. Its points are the run's only once read.
    pub async fn drained(&mut self, deadline: tokio::time::Instant) -> bool {
        let Some((mut task, _)) = self.task.take() else { return true };
        let read = tokio::time::timeout_at(deadline, &mut task).await.is_ok();
        if !read {
            task.abort();
        }
        read
    }

    /// What the tracer's side of the run knows so far (after a kill: up to it), to go on from.
    pub fn progress(&self) -> TraceProgress {
        self.shared.progress()
    }

    /// Requests to the fake world completely sent so far, by every incarnation: after a kill, the
    /// world records that many whatever happens next.
    pub fn requests_sent(&self) -> usize {
        self.shared.sent.load(Ordering::SeqCst)
    }

    /// In machine-crash mode, after the kill and before the restart: the data dir becomes what a
    /// power loss would leave (`None`: process-crash mode, it stays as the kill left it).
    pub fn lose_power(&self) -> Option<std::io::Result<Vec<String>>> {
        self.shared.power_loss.as_ref().map(PowerLoss::restore)
    }

    /// The power-loss model (machine crashes and restores), for a restore to take its backup.
    pub fn power_loss(&self) -> Option<&PowerLoss> {
        self.shared.power_loss.as_ref()
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn progress(&self) -> TraceProgress {
        let state = self.lock();
        TraceProgress { boundaries: state.boundaries.clone(), seen: state.seen.clone() }
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
async fn answer(listener: Arc<UnixListener>, incarnation: u32, ready: Arc<AtomicBool>, shared: Arc<Shared>) {
    let Ok((stream, _)) = listener.accept().await else { return };
    // The tracer leads the incarnation's process group (the runtime is its child, in its group).
    let group = stream.peer_cred().ok().and_then(|c| c.pid());
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    let mut counts = Counting::default();
    let mut state = CrashState::default();
    let mut requests = crate::run::sent::Requests::default();
    let sent_before = shared.sent.load(Ordering::SeqCst);
    // Under a controlled schedule: whether the tracer may decide without asking.
    let mut free = turn::Told::new(shared.turn.as_deref());
    let mut go_on = go_on::Told::default();
    // A line that is not a point, or a closed socket, ends the task: the tracer exits on its own
    // (its runtime dies with it) and the driver sees the exit.
    loop {
        if let Some(said) = free.news()
            && write.write_all(said).await.is_err()
        {
            return;
        }
        let line = tokio::select! {
            line = lines.next_line() => line,
            () = free.changed() => continue,
        };
        let Ok(Some(line)) = line else { return };
        if let (Some(turn), Ok(line)) = (&shared.turn, serde_json::from_str::<turn::SettledLine>(&line)) {
            if write.write_all(turn.reply(line.settled).await).await.is_err() {
                return;
            }
            continue;
        }
        let Ok(point) = serde_json::from_str::<Point>(&line) else { return };
        // Seen while the runtime is held here: a sync's copy is taken before its thread runs on.
        shared.power_loss.iter().for_each(|model| model.record(&point));
        // Counted from the start: what the incarnation did before its ready line is on disk too.
        let crash_state = state.passing(&point, shared.power_loss.is_some());
        requests.passing(&point);
        shared.sent.store(sent_before + requests.complete(), Ordering::SeqCst);
        let passed = ready.load(Ordering::SeqCst).then(|| shared.passed(incarnation, &point, crash_state, &mut counts));
        if let Some((seen, None)) = &passed
            && let Some(hook) = shared.hook.get().filter(|_| point.kind.explored(point.when) && go_on.asks(&point))
        {
            let progress = shared.progress();
            let power_loss = shared.power_loss.as_ref();
            let requests_sent = requests.complete();
            hook.held(HeldPoint { point: seen, requests_sent, progress, power_loss }).await;
        }
        if let Some((_, Some((mut reached, freeze)))) = passed {
            if freeze {
                // Held, not killed: answered when the driver resumes it, after its replacement ran.
                reached.held = Some(held::hold(lines, write));
                let _ = shared.reached.send(reached);
                return;
            }
            // Never answered: killed right here, while the call is held. At once, not when the
            // driver next looks: the stopped thread may hold a lock the runtime's API needs, and
            // the harness's requests would wait on it.
            if let Some(group) = group {
                let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(group), nix::sys::signal::Signal::SIGKILL);
            }
            let _ = shared.reached.send(reached);
            return;
        }
        if let Some(line) = go_on.resume_line(&shared, ready.load(Ordering::SeqCst), &point)
            && write.write_all(line).await.is_err()
        {
            return;
        }
    }
}

impl Shared {
    /// Records a point the incarnation passed after its ready line, and says which fault it is
    /// the crash point of, if any (that fault is hit), and whether that fault freezes; with the
    /// point as recorded.
    fn passed(
        &self,
        incarnation: u32,
        point: &Point,
        crash_state: CrashState,
        counts: &mut Counting,
    ) -> (SyscallPoint, Option<(Reached, bool)>) {
        let Counted { from_ready: from_ready_count, anchor, occurrence, delivery, exchange } = counts.count(point);
        let mut state = self.lock();
        let boundaries = state.boundaries.observe(point);
        let seen_point = SyscallPoint {
            incarnation,
            kind: point.kind,
            when: point.when,
            occurrence,
            since: anchor.clone(),
            since_delivery: delivery.clone(),
            boundaries: boundaries.clone(),
            exchange: exchange.clone(),
            state: crash_state,
            what: describe(point),
            thread: point.thread.clone(),
            step: point.step,
        };
        state.seen.push(seen_point.clone());
        // A fault counted from the ready line, or from the boundary this incarnation
        // last reached — the same count the record run gave the point.
        let matches = |f: &SyscallFault| {
            f.kind == point.kind
                && f.when == point.when
                && match &f.since {
                    None if f.operation.is_some() => {
                        f.incarnation() == incarnation
                            && exchange
                                .as_ref()
                                .is_some_and(|(op, n)| Some(op) == f.operation.as_ref() && *n == f.occurrence)
                    }
                    None => f.incarnation() == incarnation && f.occurrence == from_ready_count,
                    Some(a) if a.is_delivery() => delivery.as_ref() == Some(&(a.clone(), f.occurrence)),
                    Some(a) => anchor.as_ref() == Some(a) && f.occurrence == occurrence,
                }
        };
        let syscall = (0..self.faults.len()).find(|&i| !state.hits[i] && matches(&self.faults[i]));
        let boundary = state.boundary_faults.iter().position(|(f, hit)| !hit && boundaries.contains(&f.at));
        counts.reached(&boundaries);
        let reached = |target, inferred| Reached { target, point: seen_point.clone(), inferred, held: None };
        let fired = match (syscall, boundary) {
            (Some(i), _) => {
                state.hits[i] = true;
                let freeze = self.faults[i].action == crate::scenario::SyscallAction::Freeze;
                Some((reached(Target::Syscall(i), false), freeze))
            }
            (None, Some(i)) => {
                state.boundary_faults[i].1 = true;
                let (fault, _) = &state.boundary_faults[i];
                let inferred = state.boundaries.inferred.contains(&fault.at);
                Some((reached(Target::Boundary(fault.index), inferred), fault.freeze))
            }
            (None, None) => None,
        };
        (seen_point, fired)
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
