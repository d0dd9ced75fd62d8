//! Requests to the fake world a traced incarnation sent completely, counted from the tracer's
//! points: what the world has, or will record, whatever happens to the runtime next. A crash state
//! built at a point (`built`) waits until the world recorded that many.

use crate::tracer::{Point, PointKind, When};
use std::collections::HashMap;

/// Requests to the world completely sent: a send whose request, with its bytes, was complete
/// (a body-less GET, or the last byte of the body its `Content-Length` promised), once the call
/// returned without error.
#[derive(Default)]
pub struct Requests {
    /// The calls in progress, by thread: whether each completes its request.
    completing: HashMap<i32, bool>,
    complete: usize,
}

impl Requests {
    /// How many requests were completely sent so far.
    pub fn complete(&self) -> usize {
        self.complete
    }

    /// Counts `point` (every point of the incarnation, from its start).
    pub fn passing(&mut self, point: &Point) {
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
