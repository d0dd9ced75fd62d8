//! How a run opens: afresh (incarnation 1 is next), or going on from a crash state built at a
//! point of a record run (`crate::run::built`), where the prefix's marks are the run's, the kill
//! at the point is marked as a re-run marks it, and the recovery (incarnation 2) is next. A record
//! run's opening also hands the driver's marks to the capture, as it makes them.

use super::Recording;
use super::record::{Happening, Mark};
use super::setup::Ground;
use super::state::Driver;
use crate::run::built::marks::SharedMarks;
use crate::run::built::{BuiltState, Capture};
use crate::run::traced::Tracing;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// The start of a run's timeline, and the incarnation it starts first.
pub(super) struct Opening {
    pub(super) number: u32,
    pub(super) timeline: Vec<Mark>,
    /// With a capture: the timeline as the driver makes it, shared with the capture.
    pub(super) mirror: Option<Arc<SharedMarks>>,
    /// When the built state's runtime counts as killed (now: its case starts here).
    pub(super) killed_at: Instant,
}

impl Opening {
    /// `services`: the starts of the run's services, marked before anything else (a run from a
    /// built state has none: `super::play` refuses it).
    pub(super) fn new(ground: &Ground, from: Option<&BuiltState>, services: Vec<Happening>) -> Opening {
        let clock = &ground.clock;
        let mark = |happening| Mark { seq: clock.tick(), at_micros: clock.micros(), happening };
        match from {
            None => Opening {
                number: 1,
                timeline: services
                    .into_iter()
                    .chain(std::iter::once(Happening::Started { incarnation: 1 }))
                    .map(mark)
                    .collect(),
                mirror: None,
                killed_at: Instant::now(),
            },
            Some(state) => {
                let incarnation = state.incarnation();
                let mut timeline = state.timeline.clone();
                // A state kept after a kill has the kill's marks already.
                if let Some(point) = state.point() {
                    timeline.push(mark(Happening::SyscallKill { incarnation, point: point.clone() }));
                    timeline.push(mark(Happening::Killed { incarnation }));
                }
                timeline.push(mark(Happening::Started { incarnation: incarnation + 1 }));
                Opening { number: incarnation + 1, timeline, mirror: None, killed_at: Instant::now() }
            }
        }
    }

    /// The capture of a run that builds crash states: at each point `recording` says, while the
    /// tracer holds it.
    pub(super) fn capture(
        &mut self,
        ground: &Ground,
        tracing: &Tracing,
        recording: Recording,
    ) -> std::io::Result<Arc<Capture>> {
        let mirror = Arc::new(SharedMarks::new(self.timeline.clone()));
        self.mirror = Some(mirror.clone());
        let (data, logs) = (ground.data.clone(), ground.logs.clone());
        let capture = Capture::new(data, logs, ground.world.state(), mirror, recording.incarnation)?;
        let capture = Arc::new(capture);
        tracing.hold_with(capture.clone());
        Ok(capture)
    }
}

impl Driver<'_> {
    /// The recovery of a built state is up: what the prefix's marks say the harness knew (what
    /// was accepted, forgotten, announced), then the checks every restart owes.
    pub(super) async fn recovering(&mut self, killed_at: Instant) {
        let mut seen: HashMap<_, u32> = HashMap::new();
        let mut seen_attempt: HashMap<_, u32> = HashMap::new();
        for mark in &self.timeline {
            match &mark.happening {
                Happening::Answered { operation, .. } => self.accepted.push(operation.clone()),
                Happening::Forgotten { operation, .. } => {
                    self.forgotten.insert(operation.clone());
                }
                Happening::Boundary { message, .. } => {
                    let key = (message.boundary, message.operation_id.clone(), message.destination.clone());
                    *seen_attempt.entry((key.0, key.1.clone(), key.2.clone(), message.attempt)).or_default() += 1;
                    *seen.entry(key).or_default() += 1;
                }
                _ => {}
            }
        }
        self.seen = seen;
        self.seen_attempt = seen_attempt;
        let now = tokio::time::Instant::now();
        for id in &self.accepted {
            self.submitted.insert(id.clone(), now);
        }
        self.last_kill = Some(killed_at);
        self.restarts.push(killed_at.elapsed());
        self.after_restart().await;
    }
}
