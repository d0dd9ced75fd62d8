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
//!
//! How a blocked thread is recognised (`threads`): `/proc/<tid>/stat`'s state, and for a sleeping
//! thread (`S`) `/proc/<tid>/syscall`, the call it sleeps in and its first argument.
//! - Running (`R`, or `D`, a disk write it finishes by itself): not settled; waited for.
//! - Asleep in a futex, a poll/epoll/select, a timer or an accept: blocked on another thread or on
//!   time: settled. Such a thread is woken only by a thread that runs (and that thread's next call
//!   is held) or by its timer.
//! - Asleep in a receive on a socket whose peer is the world or the harness's side (a Unix socket:
//!   the probe's), or any thread whose world exchange has its request sent and its answer not
//!   yet read: an answer is on its way, and where it lands in the order would be the world's
//!   timing, so it is waited for — up to [`PEER_WAIT`], after which the exchange is taken as held
//!   (a world fault that holds an answer, a frozen probe answer) and not waited for again.
//! - A thread that will not settle (it spins) does not stall the run: past [`SETTLE_LIMIT`] the
//!   tracer decides among the held calls anyway and counts the decision as unsettled.
//!
//! So it never deadlocks: a held call is held only while some other thread runs or an answer is
//! awaited within its deadline; when everything else sleeps, one held call always goes.
//!
//! What is controlled: the order in which the runtime's traced calls run, across all its threads
//! and processes, and (through the harness's turn) where the harness's own requests arrive in it.
//! What is not: what threads do between traced calls. Threads that talk through memory (a lock,
//! a channel, a queue) do so in the order the held calls leave them, so the same order of calls
//! gives the same handovers; but when one call's thread wakes two others, those two run side by
//! side until their next traced calls, and which of them takes a lock first is the kernel's.
//! Timers (a backoff, a poll interval) fire on the clock; a runtime whose steps are driven by
//! time rather than by its own calls is controlled only as far as its calls are.

mod choice;
mod events;
mod run;
mod threads;

pub use choice::Schedule;

use super::state::Pending;
use choice::Priorities;
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};
use threads::Threads;

/// How long an answer on its way (the world's, the probe's) is waited for before the runtime is
/// taken as settled without it. The fake world answers in well under this on loopback.
pub const PEER_WAIT: Duration = Duration::from_millis(200);

/// How long the tracer waits for a settled runtime before it decides anyway (a spinning thread).
pub const SETTLE_LIMIT: Duration = Duration::from_millis(500);

/// How often `/proc` is read again while something runs (the wait ends early on any stop).
const TICK: Duration = Duration::from_micros(200);

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
    /// The harness was told the runtime is settled with nothing held, and nothing happened since.
    idle_told: bool,
    /// Receives on sockets that are neither the world's nor Unix ones: the harness's requests
    /// read (see `run::traced::turn` in the harness).
    heard: u64,
    /// Socket inode → whether it is a Unix one.
    unix: HashMap<u64, bool>,
    /// Decisions taken without a settled runtime.
    pub(super) unsettled: u64,
}

/// An answer on its way: to a thread asleep in a receive, or on a world exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Awaited {
    Receive { tid: i32, inode: u64 },
    Exchange { inode: u64 },
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
            idle_told: false,
            heard: 0,
            unix: HashMap::new(),
            unsettled: 0,
        }
    }

    /// Holds `tid` at its call's entry.
    pub(super) fn hold(&mut self, tid: i32, pending: Pending) {
        self.held.insert(tid, pending);
        self.idle_told = false;
    }

    /// Something happened to `tid` (a stop): the runtime moved.
    pub(super) fn moved(&mut self, tid: i32) {
        self.idle_told = false;
        self.awaited.retain(|a, _| !matches!(a, Awaited::Receive { tid: t, .. } if *t == tid));
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
        self.moved(tid);
    }

    /// The step of the decision that let `tid` go, while its call runs.
    pub(super) fn step_of(&self, tid: i32) -> Option<u64> {
        (self.running == Some(tid)).then_some(self.step)
    }
}
