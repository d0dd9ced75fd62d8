//! A traced incarnation frozen at a system call (`traced/`): its tracer's point is left
//! unanswered, which holds the runtime as SIGSTOP holds a probed one, until the driver resumes it.
//!
//! The tracer answers one point at a time, so while this one waits, every other thread of the
//! runtime that reaches a durable write, a sync or an exchange with the world waits with it: the
//! frozen incarnation changes nothing anyone can see. It is not SIGSTOPped: a stopped tracer
//! would leave its tracees in signal stops it must sort out on SIGCONT, and holding is enough.
//!
//! Once resumed, the outlived incarnation's points are answered at once, but each `409 fenced`
//! it *reads* is told to the driver first (CONTRACT.md §9-3 is owed from the answer a runtime
//! read, not from one the world sent after the runtime's own timer gave up on the request).

use crate::tracer::{HttpRequest, Point, PointKind, When};
use tokio::io::{AsyncWriteExt, BufReader, Lines};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::oneshot;

const RESUME: &[u8] = b"{\"action\":\"resume\"}\n";

/// The driver's handle on a held point: [`Held::resume`] answers it. Dropped unanswered (a run
/// that stopped early), the tracer's socket closes and the tracer ends its runtime.
#[derive(Debug)]
pub struct Held {
    resume: oneshot::Sender<()>,
    reads: UnboundedReceiver<FencedRead>,
}

/// A `409 fenced` the resumed incarnation read to its last byte: the receive that completed it,
/// held until the driver recorded it ([`FencedRead::recorded`]), so that the record comes before
/// anything the runtime does next.
#[derive(Debug)]
pub struct FencedRead {
    /// The request it answers, as the tracer read it.
    pub request: Option<HttpRequest>,
    pub peer: Option<crate::tracer::Peer>,
    recorded: oneshot::Sender<()>,
}

impl FencedRead {
    /// Lets the runtime go on from the receive.
    pub fn recorded(self) {
        let _ = self.recorded.send(());
    }
}

impl Held {
    /// Answers the held point `resume`; every later point of the incarnation is answered at once,
    /// but for the `409 fenced` answers it reads, which come through the returned receiver.
    pub fn resume(self) -> UnboundedReceiver<FencedRead> {
        let _ = self.resume.send(());
        self.reads
    }
}

/// Holds a tracer's connection at the point just read: a task of its own, so that it outlives
/// the task that answered the incarnation until now (the next incarnation's start stops that
/// one). After the resume, the outlived incarnation's points are answered and not counted: it is
/// no one's crash point, and its exchanges say nothing of the boundaries the current one reaches.
pub fn hold(lines: Lines<BufReader<OwnedReadHalf>>, write: OwnedWriteHalf) -> Held {
    let (resume, resumed) = oneshot::channel();
    let (tell, reads) = unbounded_channel();
    tokio::spawn(answer_after(resumed, tell, lines, write));
    Held { resume, reads }
}

async fn answer_after(
    resumed: oneshot::Receiver<()>,
    tell: UnboundedSender<FencedRead>,
    mut lines: Lines<BufReader<OwnedReadHalf>>,
    mut write: OwnedWriteHalf,
) {
    if resumed.await.is_err() {
        return;
    }
    // Ends when the tracer closes its end: the incarnation exited or was killed.
    while write.write_all(RESUME).await.is_ok() {
        match lines.next_line().await {
            Ok(Some(line)) => {
                if let Some((request, peer)) = fenced_answer(&line) {
                    let (recorded, done) = oneshot::channel();
                    // A driver that stopped listening killed the incarnation: nothing to wait for.
                    if tell.send(FencedRead { request, peer, recorded }).is_ok() {
                        let _ = done.await;
                    }
                }
            }
            Ok(None) | Err(_) => return,
        }
    }
}

/// The request a point's completed answer was, when that answer is `409 fenced`.
fn fenced_answer(line: &str) -> Option<(Option<HttpRequest>, Option<crate::tracer::Peer>)> {
    let point: Point = serde_json::from_str(line).ok()?;
    let fenced = point.kind == PointKind::Answer
        && point.when == When::After
        && point.answer.as_ref().is_some_and(|a| a.is_fenced());
    fenced.then_some((point.request, point.peer))
}
