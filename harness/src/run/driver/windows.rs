//! The open windows of the service faults that last a while (a `freeze`, an `unreachable`): what
//! each holds and what ends it, once — its task when its time is up, or the run's end before
//! (`service_windows.rs` opens and closes them).

use super::record::{Happening, Mark, Release};
use crate::run::services::Hold;
use crate::scenario::Anchor;
use fake_tool::Clock;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;

/// The open windows of a run, and the marks of those that ended on their own.
pub(super) struct Windows {
    pub(super) open: Vec<Window>,
    pub(super) ends: UnboundedSender<Mark>,
    pub(super) ended: UnboundedReceiver<Mark>,
}

impl Default for Windows {
    fn default() -> Windows {
        let (ends, ended) = unbounded_channel();
        Windows { open: Vec::new(), ends, ended }
    }
}

/// One window: what it holds, and who ends it — its task at its time, or the run's end before.
pub(super) struct Window {
    pub(super) end: Ending,
    pub(super) task: JoinHandle<()>,
    /// The world event that ends it before its time, if any.
    pub(super) until: Option<Anchor>,
}

/// What ends a window, once: whichever of its task and the run's end comes first.
#[derive(Clone)]
pub(super) struct Ending {
    pub(super) fault: usize,
    pub(super) action: &'static str,
    pub(super) holds: Vec<(String, Hold)>,
    pub(super) opened: Instant,
    pub(super) done: Arc<AtomicBool>,
}

impl Ending {
    /// Ends the holds and says why, unless the window was ended already.
    pub(super) fn end(&self, clock: &Clock, why: Release) -> Vec<Mark> {
        if self.done.swap(true, Ordering::SeqCst) {
            return Vec::new();
        }
        let after = self.opened.elapsed();
        let mut marks = Vec::new();
        for (service, hold) in &self.holds {
            hold.end();
            let happening = Happening::ServiceReleased {
                fault: self.fault,
                service: service.clone(),
                action: self.action.to_owned(),
                after,
                why: why.clone(),
            };
            marks.push(Mark { seq: clock.tick(), at_micros: clock.micros(), happening });
        }
        marks
    }
}
