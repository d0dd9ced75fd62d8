//! Taking the crash state at each explored point of a record run, while the tracer holds the
//! runtime there (`crate::run::traced::PointHook`).

use super::marks::{ANSWER_SHOWS, SharedMarks};
use super::{Built, BuiltState, DiskImage, Fired};
use crate::run::driver::record::{Hit, Mark};
use crate::run::power_loss::PowerLoss;
use crate::run::scratch::Scratch;
use crate::run::traced::{CrashState, HeldPoint, PointHook, SyscallPoint};
use crate::scenario::SyscallFault;
use fake_tool::WorldState;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the world may take to record what the tracer saw sent: it is in-process and records
/// each request as soon as its body is read, so this bounds a request it never records.
const WORLD_RECORDS: Duration = Duration::from_secs(2);

/// The built states of one record run, with the directory their data dirs are kept in.
pub struct BuiltStates {
    pub states: Vec<Built>,
    /// What taking them cost: the data-dir copies, and everything (world wait, snapshot, copy).
    pub copying: Duration,
    pub capturing: Duration,
    /// How many data-dir copies were made (points that changed nothing under it share one).
    pub copies: usize,
    _store: Scratch,
}

impl std::fmt::Debug for BuiltStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ready = self.states.iter().filter(|b| matches!(b, Built::Ready(_))).count();
        write!(f, "BuiltStates {{ ready: {ready}, unbuilt: {}, copies: {} }}", self.states.len() - ready, self.copies)
    }
}

impl BuiltStates {
    /// The built state for a case whose one kill is `fault`.
    pub fn at(&self, fault: &SyscallFault) -> Option<&Built> {
        self.states.iter().find(|b| &b.point().fault() == fault)
    }

    /// The state a case whose last kill is `fault` runs from, when it could be built.
    pub fn ready_at(&self, fault: &SyscallFault) -> Option<&BuiltState> {
        match self.at(fault)? {
            Built::Ready(state) => Some(state),
            Built::Unbuilt { .. } => None,
        }
    }
}

/// The hook that takes them.
pub struct Capture {
    data: PathBuf,
    logs: PathBuf,
    world: WorldState,
    /// The driver's marks as it makes them (`Driver::mark` ticks the clock under this lock).
    timeline: Arc<SharedMarks>,
    /// The incarnation whose points are taken (a record run's first; a depth-1 case's recovery).
    incarnation: u32,
    taken: Mutex<Taken>,
    /// Where the copies are kept; handed to the [`BuiltStates`] at the end.
    store: Mutex<Option<Scratch>>,
    root: PathBuf,
}

#[derive(Default)]
struct Taken {
    states: Vec<Built>,
    /// The last image, by the count of changes it was taken after (durable changes for a
    /// process crash, syncs for a machine crash).
    last: Option<(u32, Arc<DiskImage>)>,
    copies: usize,
    copying: Duration,
    capturing: Duration,
}

impl Capture {
    /// A capture of `data` and `world` at each explored point (`PointKind::explored`: the tracer
    /// holds the runtime at those) of `incarnation`, with the driver's `timeline`.
    pub fn new(
        data: PathBuf,
        logs: PathBuf,
        world: WorldState,
        timeline: Arc<SharedMarks>,
        incarnation: u32,
    ) -> std::io::Result<Capture> {
        let store = Scratch::new("killpoint-built-")?;
        let root = store.path().to_owned();
        let taken = Mutex::new(Taken::default());
        Ok(Capture { data, logs, world, timeline, incarnation, taken, store: Mutex::new(Some(store)), root })
    }

    /// Everything taken (once the run is over, its faults' `hits` and `killed` known: each state
    /// keeps those that fired before it); the copies live as long as the result.
    pub fn finish(&self, hits: &[Hit], killed: &[Option<u64>]) -> std::io::Result<BuiltStates> {
        let mut taken = std::mem::take(&mut *self.taken.lock().unwrap_or_else(|p| p.into_inner()));
        for state in taken.states.iter_mut().filter_map(|b| match b {
            Built::Ready(state) => Some(state),
            Built::Unbuilt { .. } => None,
        }) {
            state.fired = fired_before(hits, killed, state.timeline.last().map_or(0, |m| m.seq));
        }
        let store = self.store.lock().unwrap_or_else(|p| p.into_inner()).take();
        let store = store.ok_or_else(|| std::io::Error::other("the built states were already handed over"))?;
        Ok(BuiltStates {
            states: taken.states,
            copying: taken.copying,
            capturing: taken.capturing,
            copies: taken.copies,
            _store: store,
        })
    }

    async fn take(&self, at: HeldPoint<'_>) {
        let started = Instant::now();
        let point = at.point.clone();
        let deadline = tokio::time::Instant::now() + WORLD_RECORDS;
        let answers = tokio::time::Instant::now() + ANSWER_SHOWS;
        let built = if !self.world.recorded_at_least(at.requests_sent, deadline).await {
            let why = format!(
                "the fake world recorded {} requests within {WORLD_RECORDS:?}, the tracer saw {} sent",
                self.world.requests_recorded(),
                at.requests_sent
            );
            Built::Unbuilt { point: Box::new(point), reason: "the world had not recorded every request sent", why }
        } else if let Err(op) = self.timeline.settled_submissions(answers).await {
            let why = format!("the harness's submission of `{op}` had no answer within {ANSWER_SHOWS:?}");
            Built::Unbuilt {
                point: Box::new(point),
                reason: "a submission in flight (its answer may have been sent)",
                why,
            }
        } else {
            match self.build(point.clone(), at) {
                Ok(state) => Built::Ready(Box::new(state)),
                Err(why) => Built::Unbuilt { point: Box::new(point), reason: "the data dir could not be imaged", why },
            }
        };
        let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        taken.states.push(built);
        taken.capturing += started.elapsed();
    }

    /// The state now: the world and the harness's marks in one cut, then the data dir (copied
    /// again only when a durable change completed since the last copy).
    fn build(&self, point: SyscallPoint, at: HeldPoint<'_>) -> Result<BuiltState, String> {
        let (world, timeline) = {
            let marks = self.timeline.lock();
            let world = self.world.snapshot();
            let timeline: Vec<Mark> = marks.iter().filter(|m| m.seq <= world.ticks()).cloned().collect();
            (world, timeline)
        };
        let disk =
            self.disk(point.state, at.power_loss).map_err(|e| format!("the data dir could not be imaged: {e}"))?;
        let logs = logs_of(&self.logs);
        Ok(BuiltState {
            at: super::At::Point(Box::new(point)),
            disk,
            world,
            timeline,
            trace: at.progress,
            logs,
            fired: Vec::new(),
        })
    }

    /// The data dir's image at the point: a copy of the dir for a process crash, what the
    /// power-loss model says survives for a machine crash (`power_loss`).
    fn disk(&self, state: CrashState, power_loss: Option<&PowerLoss>) -> std::io::Result<Arc<DiskImage>> {
        // Only these change what the image holds (the model's tree changes only at a sync).
        let changes = if power_loss.is_some() { state.synced } else { state.durable };
        let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, image)) = &taken.last
            && *at == changes
        {
            return Ok(image.clone());
        }
        let started = Instant::now();
        let image = match power_loss {
            Some(model) => DiskImage::PowerLost(model.image()?),
            None => DiskImage::as_killed(&self.data, self.root.join(format!("data-{}", taken.copies)))?,
        };
        let image = Arc::new(image);
        taken.copies += 1;
        taken.copying += started.elapsed();
        taken.last = Some((changes, image.clone()));
        Ok(image)
    }
}

/// The runtime's logs in `dir` so far, each cut after its last complete line (a thread not held
/// may be writing one).
pub(super) fn logs_of(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    ["stderr.log", "stdout.log"]
        .into_iter()
        .filter_map(|name| {
            let mut bytes = std::fs::read(dir.join(name)).ok()?;
            bytes.truncate(bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1));
            Some((name.to_owned(), bytes))
        })
        .collect()
}

/// The faults whose kill came at or before `seq` on the run's clock.
pub(super) fn fired_before(hits: &[Hit], killed: &[Option<u64>], seq: u64) -> Vec<Fired> {
    let fired = hits.iter().zip(killed).enumerate();
    fired.filter_map(|(fault, (&hit, at))| at.filter(|&at| at <= seq).map(|at| Fired { fault, hit, at })).collect()
}

impl PointHook for Capture {
    fn held<'a>(&'a self, at: HeldPoint<'a>) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            // One incarnation's points: those of the depth the states are for. (Only explored
            // points are held for a hook: `run::traced`.)
            if at.point.incarnation == self.incarnation {
                self.take(at).await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_keeps_the_kills_that_came_at_or_before_its_point() {
        // Fault 0 killed at seq 7, fault 1 never killed (a world fault), fault 2 killed at 40.
        let hits = [Hit::Exact, Hit::NotReached, Hit::AtSyscall];
        let killed = [Some(7), None, Some(40)];
        assert_eq!(fired_before(&hits, &killed, 6), vec![]);
        assert_eq!(fired_before(&hits, &killed, 7), vec![Fired { fault: 0, hit: Hit::Exact, at: 7 }]);
        let both = vec![Fired { fault: 0, hit: Hit::Exact, at: 7 }, Fired { fault: 2, hit: Hit::AtSyscall, at: 40 }];
        assert_eq!(fired_before(&hits, &killed, 41), both);
    }
}
