//! The service faults that last a while (CONTRACT.md section 2, "Services"): a `freeze` (the
//! service's process group SIGSTOPped) or an `unreachable` (the worker's proxy to it cut) opens a
//! window where it fires, and the worker goes on at once to meet it. A task of its own ends the
//! window when its `seconds` are up, whatever the driver is doing then (waiting for a restart's
//! ready line, say), and marks the end on the run's clock; a window still open when the run ends
//! is ended then, marked as ended early. The worker's own faults go on meanwhile.

use super::record::{Happening, Release};
use super::state::Driver;
use super::windows::{Ending, Window};
use crate::run::services::Hold;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Driver<'_> {
    /// Service fault `index`'s window on `services`: each held and marked, then left to its task
    /// to end after `seconds`.
    pub(super) fn open_window(&mut self, index: usize, services: &[String], seconds: Duration) -> Result<(), String> {
        let action = self.scenario.service_faults[index].action;
        let mut holds = Vec::new();
        for service in services {
            let hold = self.services.hold(service, action);
            let hold = hold.inspect_err(|_| self.end_holds(&holds))?;
            self.mark(Happening::ServiceHeld {
                fault: index,
                service: service.clone(),
                action: action.name().to_owned(),
                seconds,
            });
            holds.push((service.clone(), hold));
        }
        let end = Ending { fault: index, action: action.name(), holds, opened: Instant::now(), done: Arc::default() };
        let (ending, clock, ends) = (end.clone(), self.clock.clone(), self.windows.ends.clone());
        let task = tokio::spawn(async move {
            tokio::time::sleep(seconds).await;
            for mark in ending.end(&clock, Release::TimeUp) {
                let _ = ends.send(mark);
            }
        });
        let until = self.scenario.service_faults[index].until.clone();
        self.windows.open.push(Window { end, task, until });
        Ok(())
    }

    /// Holds taken before one that failed: ended at once (the run stops on the failure).
    fn end_holds(&self, holds: &[(String, Hold)]) {
        for (_, hold) in holds {
            hold.end();
        }
    }

    /// The marks of windows that ended on their own since last asked, in their places on the
    /// clock: called before every new mark, and at the run's end.
    pub(super) fn take_window_ends(&mut self) {
        while let Ok(mark) = self.windows.ended.try_recv() {
            let at = self.timeline.partition_point(|m| m.seq < mark.seq);
            self.timeline.insert(at, mark);
        }
    }

    /// At the run's end: every window still open ended now, marked as ended early, before the
    /// services are stopped.
    pub(super) fn close_windows(&mut self) {
        self.take_window_ends();
        for window in std::mem::take(&mut self.windows.open) {
            window.task.abort();
            for mark in window.end.end(&self.clock, Release::RunOver) {
                self.timeline.push(mark);
            }
        }
    }

    /// The windows whose `until` is this announcement (`boundary` of `operation`, its `count`-th
    /// in the run): ended now, before the runtime is answered.
    pub(super) fn windows_until(&mut self, boundary: crate::model::boundary::Boundary, operation: &str, count: u32) {
        self.take_window_ends();
        let (due, open): (Vec<Window>, Vec<Window>) =
            std::mem::take(&mut self.windows.open).into_iter().partition(|w| {
                w.until
                    .as_ref()
                    .is_some_and(|a| a.boundary == boundary && a.operation == operation && a.occurrence == count)
            });
        self.windows.open = open;
        for window in due {
            window.task.abort();
            let event = window.until.as_ref().map(|a| a.to_string()).unwrap_or_default();
            for mark in window.end.end(&self.clock, Release::Until { event }) {
                self.timeline.push(mark);
            }
        }
    }
}
