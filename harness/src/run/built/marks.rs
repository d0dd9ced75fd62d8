//! The driver's marks as it makes them, shared with the capture of a record run: the harness's
//! side of a crash state is the marks up to the world's clock at the point.
//!
//! A submission whose answer had not been marked at the point is in flight. Its runtime may have
//! sent the answer already (the tracer sees the runtime's exchanges with the world, not with the
//! harness): a re-run's client, killed there, would still read it and count the operation as
//! accepted, while a built state would submit it again to the recovery — and a runtime that lost
//! the intent would pass there where the re-run fails. So the capture waits for the answer's
//! mark, with a deadline, until the kernel's TCP table shows no byte on its way from the API to
//! the harness ([`super::quiet`]) for a few of the driver's turns ([`QUIET_TURNS`]): then no
//! answer was sent, and the state is built unanswered (its recovery is submitted the operation
//! again, as a re-run's client does). An answer that neither shows nor can be ruled out is not
//! guessed at: the point's case is re-run.

use crate::run::driver::record::{Happening, Mark};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;

/// How many turns of the harness's scheduler nothing must be on its way, and no answer marked,
/// before a submission in flight is taken as unanswered. Once no byte waits in either side of
/// the connection, an answer sent was read by the client's connection task, and what is left is
/// in memory: that task hands the response to the request's future, whose task (the driver's)
/// reads the body from the same buffer and marks it, each a turn. A turn (`yield_now`) runs
/// every ready task and polls the I/O driver before the capture looks again; this thread is the
/// driver's (a current-thread runtime), so turns, not time, are what the driver needs. (A wait of
/// 2 ms stood for them: 80 % of a record run's capture time on the wave, and no proof under load,
/// where 2 ms of a descheduled thread are no turn at all.)
const QUIET_TURNS: u32 = 8;

/// How long an answer the runtime may have sent is waited for. The driver's task runs on the
/// capture's thread while it waits, so an answer already in the harness's socket shows in well
/// under this; a deadline passed costs a re-run, never a verdict.
pub const ANSWER_SHOWS: Duration = Duration::from_millis(100);

/// The marks, and a notice each time one is added.
#[derive(Debug, Default)]
pub struct SharedMarks {
    marks: Mutex<Vec<Mark>>,
    added: Notify,
    /// The port of the API the driver's client talks to (0: none yet).
    api: AtomicU16,
}

impl SharedMarks {
    pub fn new(marks: Vec<Mark>) -> SharedMarks {
        SharedMarks { marks: Mutex::new(marks), added: Notify::new(), api: AtomicU16::new(0) }
    }

    /// The driver's client now talks to the API at `base` (`http://127.0.0.1:PORT`).
    pub fn serving(&self, base: &str) {
        self.api.store(crate::run::incarnation::api_port(base), Ordering::SeqCst);
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

    /// Waits until no submission is in flight, or the one in flight is shown unanswered: nothing
    /// on its way from the API for [`QUIET_TURNS`] turns of the scheduler and still no answer
    /// marked. `Err` names the one still in flight at the deadline.
    pub async fn settled_submissions(&self, deadline: tokio::time::Instant) -> Result<(), String> {
        // Turns of this thread's scheduler are the driver's only on a current-thread runtime.
        debug_assert_eq!(
            tokio::runtime::Handle::current().runtime_flavor(),
            tokio::runtime::RuntimeFlavor::CurrentThread
        );
        let port = self.api.load(Ordering::SeqCst);
        let quiet = || port != 0 && super::quiet::nothing_on_the_way(port);
        let mut quiet_turns = 0;
        loop {
            let notified = self.added.notified();
            let Some(op) = self.in_flight() else { return Ok(()) };
            if quiet() {
                quiet_turns += 1;
                if quiet_turns > QUIET_TURNS {
                    return Ok(());
                }
                tokio::task::yield_now().await;
                continue;
            }
            quiet_turns = 0;
            // A mark wakes this at once; otherwise look at the table again shortly.
            let now = tokio::time::Instant::now();
            let next = (now + Duration::from_millis(1)).min(deadline);
            if tokio::time::timeout_at(next, notified).await.is_err() && next == deadline {
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

    /// The API's side of a connection with the harness's client, both on this machine.
    fn connection() -> (std::net::TcpStream, std::net::TcpStream, u16) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let client = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let (api, _) = listener.accept().expect("accept");
        (api, client, port)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_submission_with_nothing_on_its_way_is_taken_as_unanswered_at_once() {
        let (_api, _client, port) = connection();
        let marks = SharedMarks::new(vec![mark(1, Happening::Submitted { operation: "charge".to_owned() })]);
        marks.serving(&format!("http://127.0.0.1:{port}"));
        let later = tokio::time::Instant::now() + Duration::from_secs(5);
        assert_eq!(marks.settled_submissions(later).await, Ok(()), "no byte was on its way: no answer was sent");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_answer_the_harness_has_not_read_keeps_the_submission_in_flight() {
        use std::io::Write;
        let (mut api, _client, port) = connection();
        api.write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n").expect("the API answers");
        let marks = SharedMarks::new(vec![mark(1, Happening::Submitted { operation: "charge".to_owned() })]);
        marks.serving(&format!("http://127.0.0.1:{port}"));
        let soon = tokio::time::Instant::now() + Duration::from_millis(50);
        assert_eq!(marks.settled_submissions(soon).await, Err("charge".to_owned()), "the 202 may be read yet");
    }
}
