//! The crash state a kill left, taken right after it in the run that made it: what `explore`
//! keeps for a failing case it re-ran (a kill at a boundary the world or the client holds) and
//! for a failing seed of `explore --schedules`, where no record run built the state (`capture`)
//! beforehand; and, with the probe at depth 2, where each depth-1 case's depth-2 cases start.
//!
//! After the SIGKILL the runtime is gone, so its data dir is exactly what the next incarnation
//! finds (a process crash; machine crashes and restores rebuild the dir after this and are not
//! kept). The world is snapshotted once it has recorded every request the tracer saw completely
//! sent: those reach it whatever happens next. The harness's marks so far are the timeline, the
//! kill's own included, and the faults fired so far are [`Fired`](super::Fired). Nothing of the
//! harness is in flight: the driver submits one operation at a time, and kills only between
//! submissions.

use super::capture::{fired_before, logs_of};
use super::{At, BuiltState, DiskImage};
use crate::run::driver::record::{Hit, Mark};
use crate::run::scratch::Scratch;
use crate::run::traced::Tracing;
use fake_tool::WorldState;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long the tracer's last lines and the world's records of what was sent may take to land.
pub const LANDS: Duration = Duration::from_secs(2);

/// A crash state taken after a kill, with the directory its data dir is kept in.
pub struct AfterKill {
    pub state: BuiltState,
    _store: Scratch,
}

impl std::fmt::Debug for AfterKill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AfterKill {{ {} }}", self.state.told())
    }
}

/// The state a run's last kill left, as `kept::keep_among` takes it:
/// `Err` says why it could not be taken; `None`, that none was (an untraced run).
pub fn state_of(taken: Option<&Result<AfterKill, String>>) -> Option<Result<&BuiltState, &str>> {
    taken.map(|taken| taken.as_ref().map(|a| &a.state).map_err(String::as_str))
}

/// What the run around a kill knows, for [`take`].
pub struct Around<'a> {
    pub data: &'a Path,
    pub logs: &'a Path,
    pub world: WorldState,
    pub timeline: &'a [Mark],
    pub hits: &'a [Hit],
    pub killed: &'a [Option<u64>],
    /// The incarnation the kill ended.
    pub incarnation: u32,
}

/// The state the kill of `around.incarnation` left; `Err` says why it could not be taken.
/// `lands`: how long the tracer's last lines and the world's records may take ([`LANDS`] unless
/// the caller can do without the state sooner).
pub async fn take(around: Around<'_>, tracing: &mut Tracing, lands: Duration) -> Result<AfterKill, String> {
    let deadline = tokio::time::Instant::now() + lands;
    if !tracing.drained(deadline).await {
        return Err(format!("the tracer's last points had not been read within {lands:?} of the kill"));
    }
    let sent = tracing.requests_sent();
    if !around.world.recorded_at_least(sent, deadline).await {
        let recorded = around.world.requests_recorded();
        return Err(format!(
            "the fake world recorded {recorded} requests within {lands:?}, the tracer saw {sent} sent"
        ));
    }
    let world = around.world.snapshot();
    let timeline = around.timeline.to_vec();
    let store = Scratch::new("killpoint-after-kill-").map_err(|e| format!("no scratch dir: {e}"))?;
    let disk = DiskImage::as_killed(around.data, store.path().join("data"))
        .map_err(|e| format!("the data dir could not be imaged: {e}"))?;
    let state = BuiltState {
        at: At::Killed { incarnation: around.incarnation, syscall_hits: tracing.hits() },
        disk: Arc::new(disk),
        world,
        timeline,
        trace: tracing.progress(),
        logs: logs_of(around.logs),
        fired: fired_before(around.hits, around.killed, u64::MAX),
    };
    Ok(AfterKill { state, _store: store })
}
