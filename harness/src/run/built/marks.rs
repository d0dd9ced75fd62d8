//! The driver's marks as it makes them, shared with the capture of a record run: the harness's
//! side of a crash state is the marks up to the world's clock at the point.
//!
//! A submission whose answer had not been marked at the point is in flight. Its runtime may have
//! sent the answer already (the tracer sees the runtime's exchanges with the world, not with the
//! harness): a re-run's client, killed there, would still read it and count the operation as
//! accepted, while a built state would submit it again to the recovery — and a runtime that lost
//! the intent would pass there where the re-run fails. So the capture waits for the answer's
//! mark, with a deadline; an answer that does not show is not guessed at: the point's case is
//! re-run.

use crate::run::driver::record::{Happening, Mark};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;

/// How long an answer the runtime may have sent is waited for. The driver's task runs on the
/// capture's thread while it waits, so an answer already in the harness's socket shows in well
/// under this; a deadline passed costs a re-run, never a verdict.
pub const ANSWER_SHOWS: Duration = Duration::from_millis(100);

/// The marks, and a notice each time one is added.
#[derive(Debug, Default)]
pub struct SharedMarks {
    marks: Mutex<Vec<Mark>>,
    added: Notify,
}

impl SharedMarks {
    pub fn new(marks: Vec<Mark>) -> SharedMarks {
        SharedMarks { marks: Mutex::new(marks), added: Notify::new() }
    }

    /// The marks, locked: the driver ticks the clock and pushes under this lock, so a capture
    /// that reads the world's clock under it finds every mark numbered up to then.
    pub fn lock(&self) -> MutexGuard<'_, Vec<Mark>> {
        self.marks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Called once a mark was pushed (the lock released).
    pub fn added(&self) {
        self.added.notify_waiters();
    }

    /// The first submission marked but not answered, if any.
    fn in_flight(&self) -> Option<String> {
        let marks = self.lock();
        let submitted = marks.iter().filter_map(|m| match &m.happening {
            Happening::Submitted { operation } => Some(operation),
            _ => None,
        });
        let answered = |op: &String| {
            marks.iter().any(|m| matches!(&m.happening, Happening::Answered { operation, .. } if operation == op))
        };
        submitted.into_iter().find(|op| !answered(op)).cloned()
    }

    /// Waits until no submission is in flight; `Err` names the one still in flight at the
    /// deadline.
    pub async fn settled_submissions(&self, deadline: tokio::time::Instant) -> Result<(), String> {
        loop {
            let notified = self.added.notified();
            let Some(op) = self.in_flight() else { return Ok(()) };
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Err(op);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn mark(seq: u64, happening: Happening) -> Mark {
        Mark { seq, at_micros: seq, happening }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_submission_in_flight_is_waited_for_and_named_at_the_deadline() {
        let submitted = || mark(1, Happening::Submitted { operation: "charge".to_owned() });
        let marks = Arc::new(SharedMarks::new(vec![submitted()]));
        let soon = tokio::time::Instant::now() + Duration::from_millis(20);
        assert_eq!(marks.settled_submissions(soon).await, Err("charge".to_owned()));

        // Answered while the capture waits (the driver's task, on the same thread): it shows.
        let driver = marks.clone();
        let answer = tokio::spawn(async move {
            driver.lock().push(mark(2, Happening::Answered { operation: "charge".to_owned(), status: 202 }));
            driver.added();
        });
        let later = tokio::time::Instant::now() + Duration::from_secs(5);
        assert_eq!(marks.settled_submissions(later).await, Ok(()));
        answer.await.expect("the answer task ran");
    }
}
