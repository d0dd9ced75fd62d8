//! A traced incarnation frozen at a system call (`traced/`): its tracer's point is left
//! unanswered, which holds the runtime as SIGSTOP holds a probed one, until the driver resumes it.
//!
//! The tracer answers one point at a time, so while this one waits, every other thread of the
//! runtime that reaches a durable write, a sync or an exchange with the world waits with it: the
//! frozen incarnation changes nothing anyone can see. It is not SIGSTOPped: a stopped tracer
//! would leave its tracees in signal stops it must sort out on SIGCONT, and holding is enough.

use tokio::io::{AsyncWriteExt, BufReader, Lines};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::oneshot;

const RESUME: &[u8] = b"{\"action\":\"resume\"}\n";

/// The driver's handle on a held point: [`Held::resume`] answers it. Dropped unanswered (a run
/// that stopped early), the tracer's socket closes and the tracer ends its runtime.
#[derive(Debug)]
pub struct Held(oneshot::Sender<()>);

impl Held {
    /// Answers the held point `resume`; every later point of the incarnation is answered at once.
    pub fn resume(self) {
        let _ = self.0.send(());
    }
}

/// Holds a tracer's connection at the point just read: a task of its own, so that it outlives
/// the task that answered the incarnation until now (the next incarnation's start stops that
/// one). After the resume, the outlived incarnation's points are answered and not counted: it is
/// no one's crash point, and its exchanges say nothing of the boundaries the current one reaches.
pub fn hold(lines: Lines<BufReader<OwnedReadHalf>>, write: OwnedWriteHalf) -> Held {
    let (held, resumed) = oneshot::channel();
    tokio::spawn(answer_after(resumed, lines, write));
    Held(held)
}

async fn answer_after(
    resumed: oneshot::Receiver<()>,
    mut lines: Lines<BufReader<OwnedReadHalf>>,
    mut write: OwnedWriteHalf,
) {
    if resumed.await.is_err() {
        return;
    }
    // Ends when the tracer closes its end: the incarnation exited or was killed.
    while write.write_all(RESUME).await.is_ok() {
        match lines.next_line().await {
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return,
        }
    }
}
