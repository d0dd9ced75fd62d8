//! A controlled schedule (`$KILLPOINT_SCHEDULE`, see [`Schedule`]): the tracer decides which of
//! the runtime's threads makes its next durable write, sync or exchange with the world, from a
//! seed, so that the order of those calls is a function of (seed, scenario, runtime) and a
//! failure found under one order replays under it.
//!
//! How it goes. A thread that reaches a traced call that is a crash point (every kind but a
//! receive, whose bytes are the world's) is held at the call's entry, not announced. The tracer
//! then waits until the runtime is *settled*: every other thread is held, stopped, or asleep in the
//! kernel waiting for something no traced thread is about to do. Then it asks the harness (a
//! `{"settled":…}` line: the harness may have a request of its own to deliver first, see
//! `run::traced::turn` in the harness), and on `{"action":"decide"}` picks one held call by the
//! schedule's priorities (`choice`), announces it as a point as before, and lets that one thread
//! run its call to the end (its `after` point) before it settles again: one traced call at a time.
//! While the harness has said `{"action":"free"}` (it expects nothing of the runtime; `ask` ends
//! it), a settled runtime holding a call and owing no probe answer is not reported: the call goes
//! at once (`channel`). Those reports were a third of the schedule's cost and all answered
//! `decide`.
//!
//! How a blocked thread is recognised (`threads`): `/proc/<tid>/stat`'s state.
//! - Running (`R`, or `D`, a disk write it finishes by itself): not settled; waited for.
//! - Stopped (`t`) and neither held nor frozen by the harness: a stop of it is on its way to the
//!   tracer (a new thread, a clone, a call's exit): not settled; taken first.
//! - Asleep (`S`): in a futex, a poll/epoll/select, a timer, an accept or a receive: blocked on
//!   another thread, on time or on a peer: settled, unless an answer is on its way to it. Such a
//!   thread is woken only by a thread that runs (and that thread's next traced call is held), by
//!   its timer, or by a peer.
//! - An answer is on its way when a world exchange has its request sent whole (its last send ran,
//!   not merely reached: a held send has reached no one) and nothing of its answer in the socket
//!   yet, neither a byte nor the world's close (`poll` on a copy of the runtime's descriptor), or
//!   when the runtime sent on a Unix socket (the probe's: a boundary announced) and no receive on
//!   it returned bytes since. Where it lands in the order would be the peer's timing, so it is
//!   waited for. A world answer is waited for up to [`PEER_WAIT`], after which it is taken as
//!   held (a world fault that holds an answer and no kill came) and not waited for again. A probe
//!   answer comes from the harness, which knows whether it is giving one: the tracer tells it
//!   how many are outstanding (`asked` in its settled report) and the harness says whether to
//!   wait (`run::traced::turn` in the harness: a driver busy submitting answers no probe, and
//!   waiting for it there held every such submission for the whole wait). Bytes that landed
//!   while every thread that could read them is held (tokio's workers read sockets between
//!   tasks) are read when one goes.
//! - A thread that will not settle (it spins) does not stall the run: past [`SETTLE_LIMIT`] the
//!   tracer decides among the held calls anyway and counts the decision as unsettled.
//!
//! So it never deadlocks: a held call is held only while some other thread runs or an answer is
//! awaited within its deadline; when everything else sleeps, one held call always goes.
//!
//! Calls that commute go together: held `connect`s to the world that look the same (their order
//! would be the thread pool's, since only their threads tell them apart) go at one decision.
//!
//! What is controlled: the order in which the runtime's traced calls run, across all its threads
//! and processes, and (through the harness's turn) where the harness's own requests arrive in it.
//! What is not: what threads do between traced calls. Threads that talk through memory (a lock,
//! a channel, a queue) do so in the order the held calls leave them, so the same order of calls
//! gives the same handovers; but when one call's thread wakes two others, those two run side by
//! side until their next traced calls, and which of them takes a lock first is the kernel's.
//! Timers (a backoff, a poll interval) fire on the clock; a runtime whose steps are driven by
//! time rather than by its own calls is controlled only as far as its calls are. Measured
//! (issue 33): two Python threads racing, one blocked on an event, come out the same for the
//! same seed every time (`harness/tests/schedule.rs`); the reference runtime (tokio) under one
//! seed agreed between runs for its first 76 to 132 decisions of about 550, then parted where
//! two held calls looked the same or a woken task ran on another worker: not yet a replay.

pub(super) mod choice;
mod events;
mod run;
mod threads;

pub use choice::Schedule;

use super::pending::Pending;
use choice::Priorities;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};
use threads::Threads;

/// How long a world answer on its way is waited for before the runtime is taken as settled
/// without it. The fake world answers in milliseconds on loopback, but on a loaded machine its
/// answer can take hundreds (at 200 ms, two runs of one seed parted at load ~8 where an answer
/// came late). Waiting long costs nothing where an answer is held on purpose: the world holds one
/// only at a kill point, and the kill that follows ends the wait.
pub const PEER_WAIT: Duration = Duration::from_secs(2);

/// How long the tracer waits for a settled runtime before it decides anyway (a spinning thread).
pub const SETTLE_LIMIT: Duration = Duration::from_millis(500);

/// How often `/proc` is read again while something runs (the wait ends early on any stop); each
/// look that finds nothing new waits twice as long, up to [`CALM_TICKS`] doublings: a thread
/// that falls asleep makes no stop, so only a look sees it, and a look costs a read of `/proc` per
/// thread (at a steady 0.5 ms, `tests/schedules.rs` spent twice its user CPU in the kernel).
const TICK: Duration = Duration::from_micros(500);

/// The most doublings of [`TICK`] (so at most 4 ms between looks).
const CALM_TICKS: u32 = 3;

/// What the tracer holds under a controlled schedule.
pub(super) struct Scheduler {
    priorities: Priorities,
    pub(in crate::tracer) threads: Threads,
    /// Threads held at the entry of a crash-point call, not yet announced.
    held: BTreeMap<i32, Pending>,
    /// The thread whose call went last, until its `after` point (or until it sleeps in the call).
    running: Option<i32>,
    /// Decisions made so far; the next is `step + 1`.
    step: u64,
    /// Answers awaited (see the file's comment), and since when.
    awaited: HashMap<Awaited, Instant>,
    /// Since when the tracer waits for the runtime to settle with a call held.
    settling_since: Option<Instant>,
    /// When the harness was told the runtime is settled with nothing held, if nothing happened
    /// since.
    idle_told: Option<Instant>,
    /// Receives that returned bytes on sockets that are neither the world's nor Unix ones: the
    /// harness's requests read (see `run::traced::turn` in the harness).
    heard: u64,
    /// Sends on such sockets: the runtime's answers to the harness.
    said: u64,
    /// Such sockets (inode → a thread and its descriptor there), asked for unread bytes.
    api: HashMap<u64, (i32, i32)>,
    /// Socket inode → whether it is a Unix one.
    unix: HashMap<u64, bool>,
    /// Unix sockets sent on and not answered since: inode → the send's serial.
    asked: HashMap<u64, u64>,
    asks: u64,
    /// Threads in a receive on a socket that is not the world's, resumed to its exit: tid →
    /// (inode, whether it is a Unix one).
    pub(super) watched: HashMap<i32, (u64, bool)>,
    /// Threads in a group-stop the harness made (a freeze), listened to: stopped, and no stop of
    /// theirs is coming. Any other stopped thread that is not held has a stop on its way.
    pub(super) frozen: std::collections::HashSet<i32>,
    /// Decisions taken without a settled runtime.
    pub(super) unsettled: u64,
    /// Looks since the last stop (see [`TICK`]).
    calm: u32,
    /// Whether the harness's last answer was `settle` (look again), not yet waited after.
    told_settle: bool,
}

/// A world answer on its way: the exchange's socket and its request's serial.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Awaited {
    inode: u64,
    serial: u64,
}

impl Scheduler {
    pub(super) fn new(schedule: Schedule) -> Scheduler {
        Scheduler {
            priorities: Priorities::new(schedule),
            threads: Threads::default(),
            held: BTreeMap::new(),
            running: None,
            step: 0,
            awaited: HashMap::new(),
            settling_since: None,
            idle_told: None,
            heard: 0,
            said: 0,
            api: HashMap::new(),
            unix: HashMap::new(),
            asked: HashMap::new(),
            asks: 0,
            watched: HashMap::new(),
            frozen: Default::default(),
            unsettled: 0,
            calm: 0,
            told_settle: false,
        }
    }

    /// Holds `tid` at its call's entry.
    pub(super) fn hold(&mut self, tid: i32, pending: Pending) {
        self.held.insert(tid, pending);
        self.idle_told = None;
    }

    /// Something happened to `tid` (a stop): the runtime moved.
    pub(super) fn moved(&mut self) {
        self.idle_told = None;
        self.calm = 0;
    }

    /// How long to wait before looking at `/proc` again (see [`TICK`]).
    pub(super) fn tick(&mut self) -> Duration {
        let tick = TICK * (1 << self.calm.min(CALM_TICKS));
        self.calm += 1;
        tick
    }

    /// `tid`'s call ended (its exit stop) or `tid` is gone.
    pub(super) fn finished(&mut self, tid: i32) {
        if self.running == Some(tid) {
            self.running = None;
        }
    }

    pub(super) fn gone(&mut self, tid: i32) {
        self.finished(tid);
        self.held.remove(&tid);
        self.threads.gone(tid);
        self.watched.remove(&tid);
        self.frozen.remove(&tid);
        self.moved();
    }

    /// The step of the decision that let `tid` go, while its call runs.
    pub(super) fn step_of(&self, tid: i32) -> Option<u64> {
        (self.running == Some(tid)).then_some(self.step)
    }
}
