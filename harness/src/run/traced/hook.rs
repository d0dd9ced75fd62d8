//! What the harness may do at a crash point while the tracer holds the runtime stopped there:
//! `killpoint explore` builds the crash state at each one (`crate::run::built`). Every traced call
//! of every thread waits until the hook returns, so nothing the runtime does to its data dir or
//! the world can happen meanwhile.

use super::SyscallPoint;
use super::boundaries::Boundaries;
use crate::run::power_loss::PowerLoss;
use crate::tracer::{Point, PointKind, When};
use std::collections::HashMap;

/// Called at every point passed after the ready line. A point a fault kills at is not held for it.
pub trait PointHook: Send + Sync {
    fn held<'a>(&'a self, at: HeldPoint<'a>) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>;
}

/// A point as a [`PointHook`] sees it.
pub struct HeldPoint<'a> {
    pub point: &'a SyscallPoint,
    /// Requests to the fake world the incarnation completely sent so far (the body's last byte
    /// handed to the kernel): the world has them, or will record them, whatever happens next.
    pub requests_sent: usize,
    /// What the tracer's side of the run knows so far, to go on from (`Tracing::resumed`).
    pub progress: TraceProgress,
    /// In machine-crash mode, the power-loss model, this point recorded: what a power loss here
    /// would leave of the data dir.
    pub power_loss: Option<&'a PowerLoss>,
}

/// The tracer's side of a run at a point: the boundaries reached (occurrences count across
/// incarnations) and every point passed, this one included.
#[derive(Debug, Clone)]
pub struct TraceProgress {
    pub(super) boundaries: Boundaries,
    pub(super) seen: Vec<SyscallPoint>,
}

impl TraceProgress {
    /// Every point passed up to this one, this one included.
    pub fn points(&self) -> &[SyscallPoint] {
        &self.seen
    }
}

/// Requests to the world completely sent: a send whose request, with its bytes, was complete
/// (a body-less GET, or the last byte of the body its `Content-Length` promised), once the call
/// returned without error.
#[derive(Default)]
pub(super) struct Requests {
    /// The calls in progress, by thread: whether each completes its request.
    completing: HashMap<i32, bool>,
    pub(super) complete: usize,
}

impl Requests {
    pub(super) fn passing(&mut self, point: &Point) {
        if point.kind != PointKind::Request {
            return;
        }
        match point.when {
            When::Before => {
                let complete = point.request.as_ref().is_some_and(|r| r.body.is_some() || r.method == "GET");
                self.completing.insert(point.tid, complete);
            }
            When::After => {
                let completed = self.completing.remove(&point.tid).unwrap_or(false);
                if completed && point.ret.is_some_and(|r| r >= 0) {
                    self.complete += 1;
                }
            }
        }
    }
}
