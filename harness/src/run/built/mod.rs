//! Crash states built, not re-run: from one traced record run, the state a SIGKILL at any
//! system-call crash point leaves, so that a case runs only the recovery from there.
//!
//! Without it, `killpoint explore --points syscalls` re-runs the whole workload prefix for every
//! crash point: each case costs two runtime starts or more. With it, the record run stops at each
//! point anyway (the tracer holds the runtime there until the harness answers), and while it is
//! held the harness takes the [`BuiltState`] there ([`capture`]); a case then starts a world from
//! the snapshot and the recovery incarnation on a copy of the data dir, and plays the rest of the
//! workload (`run_built` in the driver).
//!
//! **What a built state holds, and why the judge needs no more.** The judge reads a run's ledger,
//! timeline, reports, unsettled operations, hits and system-call points (and the runtime's logs).
//! A built state holds, at the instant of the point:
//! - the data dir, as the next incarnation would find it ([`DiskImage`]): for a process crash,
//!   every byte handed to the kernel, so the whole dir as it is. The tracer holds every thread at
//!   its next traced call while one is held, so no write to the dir (nor send to the world) can
//!   happen during the copy. For a machine crash (power loss), only what was synced: the image
//!   the power-loss model (`crate::run::power_loss`) keeps at the point, the same bytes its
//!   restore writes after a re-run's kill there (`DiskImage::PowerLost`); the rest is the same;
//! - the fake world (`fake_tool::WorldSnapshot`): ledger, clock, effects, receipts,
//!   revocations, armed faults with what they have left, fence. Taken once the world has recorded
//!   every request the tracer saw completely sent ([`crate::run::traced::HeldPoint::requests_sent`]):
//!   a request sent before a kill reaches the world whatever happens next;
//! - the harness's progress: its timeline up to the point (submissions made and answered,
//!   boundaries announced, what the runtime forgot), the faults that fired before it (a depth-2
//!   case's first kill at a boundary: [`Fired`]), from which the driver knows which operations
//!   were accepted and where the workload was; and the tracer's (points passed, boundaries reached,
//!   counted across incarnations, so a recovery's points are numbered as in a re-run).
//!
//! **What it cannot capture, and how that is handled.**
//! - The runtime's memory: lost by design, it is what a crash loses.
//! - Answers in flight in the world (a held, delayed or late answer): they were for the killed
//!   incarnation's connections, which nobody reads again; the snapshot keeps what the world
//!   recorded, which is all a later request is answered from.
//! - A request the world never records (one it refuses before its ledger, e.g. malformed JSON)
//!   makes the wait for the world's record time out: that point is [`Built::Unbuilt`], and its
//!   case is re-run. Explore's summary counts the cases re-run so, by reason.
//! - The harness's own submission in flight at the point: the tracer does not see the runtime's
//!   answers to the harness, so a `202` may be on its way (a re-run's client would still read it).
//!   The capture waits for its mark ([`marks`]) until the kernel's TCP table shows no byte on its
//!   way from the API to the harness ([`quiet`]): then none was sent, and the state is built with
//!   the submission unanswered, to be made again to the recovery. One that neither shows nor can
//!   be ruled out by the deadline makes the point [`Built::Unbuilt`] and its case is re-run. Other requests of the harness (reads)
//!   change nothing the recovery depends on: the driver makes them again.
//! - Timing: a re-run's kill lands a moment after the point (the tracer's task kills at once, the
//!   driver notices later), in which the world may record what was sent; a built state waits for
//!   exactly that. Wall-clock deadlines count from the recovery's start, as after any restart.
//! - Log lines: writes to the logs are not traced, so a thread not held may write one during the
//!   copy; each log is cut after its last complete line.
//! - Points before an incarnation's ready line are never crash points (as in a re-run).
//!
//! - What the power-loss model cannot see (writes through `mmap`, `io_uring`; see its module) is
//!   missing from a machine crash's image exactly as from a re-run's restore.
//!
//! Process and machine crashes are built here, at depth 1 and 2: a run that builds states
//! (`driver::Recording`) takes them at the points of one incarnation, the first in a record run,
//! the recovery (the second) in a depth-1 case's run, whether that run went on from a built
//! state or was re-run.
//!
//! A failing case's state is kept on disk beside the file it is written to ([`kept`]), so that
//! `killpoint run` of the file starts from it too; a case that was re-run keeps the state its
//! last kill left, taken right after the kill ([`after_kill`]).
//!
//! A run from a built state traces its recovery only when it builds states there: every kill of
//! its case has happened, and untraced the runtime recovers as it would in production (and
//! faster: a traced Python recovery took 1.4 times as long). Its `syscall_hits` say the case's
//! kills were hit; its `syscall_points` are empty, as in any untraced run.

pub mod after_kill;
pub mod capture;
mod disk;
pub mod kept;
pub mod marks;
mod quiet;
pub(crate) use quiet::request_waiting;

pub use capture::{BuiltStates, Capture};
pub use disk::DiskImage;

use crate::run::driver::record::{Hit, Mark};
use crate::run::traced::{SyscallPoint, TraceProgress};
use fake_tool::WorldSnapshot;
use std::sync::Arc;

/// The crash state a SIGKILL at one point leaves, and the harness's progress there.
pub struct BuiltState {
    pub at: At,
    /// Shared by consecutive points that changed nothing under the data dir.
    pub disk: Arc<DiskImage>,
    pub world: WorldSnapshot,
    /// The harness's marks up to the point (every one numbered at or before `world.ticks()`).
    pub timeline: Vec<Mark>,
    pub trace: TraceProgress,
    /// The runtime's logs so far (`stderr.log`, `stdout.log`), each cut after its last complete
    /// line: the judge reads incarnation 1's retry lines from them (CONTRACT.md §11).
    pub logs: Vec<(String, Vec<u8>)>,
    /// The scenario's faults that fired before the point in the run that built it (a depth-2
    /// state's first kill, at a boundary): a run going on from here has hit them, as that run did.
    pub fired: Vec<Fired>,
}

/// Where a crash state stands.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum At {
    /// At a point of a record run, the runtime held there: a kill there is still to be marked.
    Point(Box<SyscallPoint>),
    /// Just after a kill of `incarnation` in the run that kept it ([`after_kill`]): its timeline
    /// holds the kill; `syscall_hits` says which `[[syscall_fault]]`s that run had hit.
    Killed { incarnation: u32, syscall_hits: Vec<bool> },
}

impl BuiltState {
    /// The point it was built at, for a state of a record run.
    pub fn point(&self) -> Option<&SyscallPoint> {
        match &self.at {
            At::Point(point) => Some(point.as_ref()),
            At::Killed { .. } => None,
        }
    }

    /// The incarnation the crash ended.
    pub fn incarnation(&self) -> u32 {
        match &self.at {
            At::Point(point) => point.incarnation,
            At::Killed { incarnation, .. } => *incarnation,
        }
    }

    /// Where it stands, in words: `at fsync runtime.sqlite3-wal`, `after the kill of incarnation 1`.
    pub fn told(&self) -> String {
        match &self.at {
            At::Point(point) => format!("at {}", point.what),
            At::Killed { incarnation, .. } => format!("right after the kill of incarnation {incarnation}"),
        }
    }
}

/// A fault of the scenario that fired before a built state's point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fired {
    /// Its index in `scenario.faults`.
    pub fault: usize,
    pub hit: Hit,
    /// Where its kill came on the run's clock (`Run::killed`).
    pub at: u64,
}

/// A point's crash state, or why it could not be built.
pub enum Built {
    Ready(Box<BuiltState>),
    /// Its case is re-run: `reason` says which kind (for the summary's count), `why` in full.
    Unbuilt {
        point: Box<SyscallPoint>,
        reason: &'static str,
        why: String,
    },
}

impl Built {
    pub fn point(&self) -> &SyscallPoint {
        match self {
            Built::Ready(state) => state.point().expect("a record run's states are built at its points"),
            Built::Unbuilt { point, .. } => point,
        }
    }
}
