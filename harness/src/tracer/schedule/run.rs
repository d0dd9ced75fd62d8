//! The wait loop under a controlled schedule: take every stop there is, see whether the runtime
//! has settled (the folder's comment says when), ask the harness for its turn, and let one held
//! call go.

use super::choice::Candidate;
use super::events::Events;
use super::threads::{Activity, is_unix, readable, socket_inode, unread};
use super::{Awaited, PEER_WAIT, SETTLE_LIMIT, Scheduler};
use crate::tracer::error::TracerError;
use crate::tracer::pending::Pending;
use crate::tracer::point::When;
use crate::tracer::seccomp::Call;
use crate::tracer::state::Tracer;
use std::path::Path;
use std::time::{Duration, Instant};

/// What the loop does next.
enum Next {
    /// Wait for a stop, at most this long, then look again.
    Wait(Duration),
    Settled,
}

/// How often an idle runtime (nothing held) is reported again: the harness waits for a report
/// to send a request at a settled point (`run::traced::turn` in the harness).
const IDLE_LOOK: Duration = Duration::from_millis(10);

/// How long after the harness said `settle` (look again) the tracer looks again, unless a stop
/// comes first: the harness answers at once when what it waits for is the runtime's (a
/// submission it sent, not yet read), and the look would otherwise come at once too.
const SETTLE_AGAIN: Duration = Duration::from_micros(200);

impl Tracer {
    pub(in crate::tracer) fn scheduler(&mut self) -> &mut Scheduler {
        self.schedule.as_mut().expect("a scheduled trace has a scheduler")
    }

    /// `trace` under a controlled schedule; returns the status to exit with.
    pub(in crate::tracer) fn trace_scheduled(
        &mut self,
        child: i32,
        report: i32,
        shown: &str,
    ) -> Result<i32, TracerError> {
        let events = Events::new()?;
        self.scheduler().threads.root(child);
        loop {
            while let Some((tid, status)) = events.take()? {
                if let Some(code) = self.on_event(child, tid, status, report, shown)? {
                    return Ok(code);
                }
            }
            match self.settled() {
                Next::Wait(within) => {
                    events.wait(within, self.channel.as_ref().and_then(|c| c.fd()))?;
                    self.heard_the_harness()?;
                }
                Next::Settled => self.turn()?,
            }
        }
    }

    /// A send or receive that is no crash point, on a socket that is not the world's: on a Unix
    /// one (the probe's), a send asks and the next receive that returns bytes answers; on any
    /// other, a receive that returns bytes reads a request of the harness's and a send answers
    /// one (both counted for the harness's turn). Receives are watched to their exit.
    pub(in crate::tracer) fn unpointed(&mut self, tid: i32, call: Call, fd: i64) {
        let Some(inode) = socket_inode(tid, fd) else { return };
        if self.sockets.get(&inode).is_some_and(Option::is_some) {
            return;
        }
        let s = self.scheduler();
        let unix = *s.unix.entry(inode).or_insert_with(|| is_unix(tid, inode));
        if !unix && call.is_receive() {
            s.api.insert(inode, (tid, fd as i32));
        }
        match (unix, call.is_receive()) {
            (_, true) => {
                s.watched.insert(tid, (inode, unix));
            }
            (true, false) => {
                s.asks += 1;
                let serial = s.asks;
                s.asked.entry(inode).or_insert(serial);
            }
            (false, false) => s.said += 1,
        }
    }

    /// A watched receive returned `ret`: bytes on a Unix socket answer what was asked on it, on
    /// another a request of the harness's was read (a read that finds nothing is not one).
    pub(in crate::tracer) fn unpointed_exit(&mut self, tid: i32, ret: Option<i64>) {
        let s = self.scheduler();
        match s.watched.remove(&tid) {
            Some((inode, true)) if ret.is_some_and(|r| r > 0) => {
                s.asked.remove(&inode);
            }
            Some((_, false)) if ret.is_some_and(|r| r > 0) => s.heard += 1,
            _ => {}
        }
    }

    /// Whether every thread not held is asleep with no world answer on its way (or the limit
    /// passed); a probe answer on its way is the harness's to wait for (`asked` in the report).
    fn settled(&mut self) -> Next {
        // An answer already in the socket has landed (bytes, or the world's close): when a thread
        // reads it is the runtime's (tokio reads it once a worker is free, and every worker may be
        // held).
        let landed = |holder: Option<(i32, i32)>| holder.and_then(|(tid, fd)| readable(tid, fd)).is_none_or(|r| r);
        // A request whose send is held has not reached the world: no answer is on its way to it
        // (waiting for one held every request of a scheduled run for PEER_WAIT).
        let sending: Vec<u64> = self.scheduler().held.values().filter_map(|p| p.sending).collect();
        let exchanges: Vec<(u64, u64)> = self
            .exchanges
            .iter()
            .filter(|(inode, e)| e.awaiting_answer() && !landed(e.holder) && !sending.contains(inode))
            .map(|(i, e)| (*i, e.serial))
            .collect();
        let s = self.scheduler();
        if std::mem::take(&mut s.told_settle) {
            return Next::Wait(SETTLE_AGAIN);
        }
        if s.held.is_empty() && s.idle_told.is_some_and(|at| at.elapsed() < IDLE_LOOK) {
            return Next::Wait(IDLE_LOOK);
        }
        if let Some(tid) = s.running {
            match s.threads.activity(tid) {
                // Blocked inside its call (a receive the world has not answered): its `after`
                // comes when it comes; the others may go meanwhile.
                Activity::Asleep | Activity::Gone => s.running = None,
                Activity::Running | Activity::Stopped => return Next::Wait(s.tick()),
            }
        }
        let busy = s.threads.live().filter(|t| !s.held.contains_key(t)).any(|t| match s.threads.activity(t) {
            Activity::Running => true,
            Activity::Stopped => !s.frozen.contains(&t),
            Activity::Asleep | Activity::Gone => false,
        });
        let waiting: Vec<Awaited> = exchanges.into_iter().map(|(inode, serial)| Awaited { inode, serial }).collect();
        let now = Instant::now();
        s.awaited.retain(|a, _| waiting.contains(a));
        let due = waiting.iter().any(|a| now.duration_since(*s.awaited.entry(*a).or_insert(now)) < PEER_WAIT);
        if !busy && !due {
            s.settling_since = None;
            return Next::Settled;
        }
        if s.held.is_empty() {
            return Next::Wait(s.tick());
        }
        let since = *s.settling_since.get_or_insert(now);
        if now.duration_since(since) >= SETTLE_LIMIT {
            s.unsettled += 1;
            s.settling_since = None;
            return Next::Settled;
        }
        Next::Wait(s.tick())
    }

    /// Bytes waiting unread on the sockets the harness's requests were read from (a request in
    /// the runtime's socket that no free thread has read yet); sockets gone are forgotten.
    fn waiting_requests(&mut self) -> u64 {
        let s = self.scheduler();
        let mut waiting = 0;
        s.api.retain(|_, (tid, fd)| match unread(*tid, *fd) {
            Some(n) => {
                waiting += n;
                true
            }
            None => false,
        });
        waiting
    }

    /// The harness's turn, then one held call goes (when one is held and the harness says so).
    /// While the harness has said `free` (nothing of its own to deliver), a call goes without
    /// asking it, unless a probe answer is outstanding (whether it is coming is the harness's to
    /// say) or nothing is held (the harness counts a runtime idle by those reports).
    fn turn(&mut self) -> Result<(), TracerError> {
        let (step, held, heard, said, asked) = {
            let s = self.scheduler();
            (s.step, s.held.len(), s.heard, s.said, s.asked.len())
        };
        if !(held > 0 && asked == 0 && self.harness_says_free()?) {
            let waiting = self.waiting_requests();
            if !self.harness_says_decide(step, (held, asked), (heard, said, waiting))? {
                self.scheduler().told_settle = true;
                return Ok(());
            }
        }
        let s = self.scheduler();
        if s.held.is_empty() {
            s.idle_told = Some(Instant::now());
            return Ok(());
        }
        let candidates: Vec<Candidate> = s
            .held
            .iter()
            .map(|(tid, pending)| Candidate { key: key(pending), label: s.threads.label(*tid), tid: *tid })
            .collect();
        s.step += 1;
        let step = s.step;
        let chosen = &candidates[s.priorities.choose(step, &candidates)];
        // Connects to the world commute: one that does the same as the chosen one goes with it
        // (told apart only by their threads, which a thread pool does not keep stable, their
        // order would be the pool's, and so would what each thread reaches next).
        let together: Vec<i32> = candidates
            .iter()
            .filter(|c| c.tid == chosen.tid || (c.key == chosen.key && c.key.starts_with(CONNECT)))
            .map(|c| c.tid)
            .collect();
        s.running = Some(chosen.tid);
        for tid in together {
            let pending = self.scheduler().held.remove(&tid).expect("a chosen call is held");
            self.announce(tid, When::Before, &pending, None, None)?;
            self.pending.insert(tid, pending);
            self.resume(tid, 0);
        }
        Ok(())
    }

    /// Reads what the harness said unasked; an `ask` (it has a request to send) is answered with a
    /// report at once, not at the idle runtime's next (`IDLE_LOOK`): the harness waits for one.
    fn heard_the_harness(&mut self) -> Result<(), TracerError> {
        let Some(channel) = &mut self.channel else { return Ok(()) };
        if channel.news()? {
            self.scheduler().idle_told = None;
        }
        Ok(())
    }

    /// Whether the harness's last word, unasked, was `free` (see `channel`). Without a harness
    /// (the tracer run alone) nothing is asked anyway.
    fn harness_says_free(&mut self) -> Result<bool, TracerError> {
        let Some(channel) = &mut self.channel else { return Ok(true) };
        channel.free()
    }

    /// Tells the harness the runtime settled; `true` on `decide`, `false` on `settle` (look again).
    /// Without a harness (the tracer run alone) it is always `decide`.
    fn harness_says_decide(
        &mut self,
        step: u64,
        (held, asked): (usize, usize),
        (heard, said, waiting): (u64, u64, u64),
    ) -> Result<bool, TracerError> {
        let Some(channel) = &mut self.channel else { return Ok(true) };
        let line = format!(
            "{{\"settled\":{{\"step\":{step},\"held\":{held},\"asked\":{asked},\"heard\":{heard},\"said\":{said},\"waiting\":{waiting}}}}}\n"
        );
        channel.send(&line)?;
        let Some(answer) = channel.answer()? else {
            return Err(TracerError::Turn { found: "the connection closed".to_owned() });
        };
        match serde_json::from_str::<serde_json::Value>(&answer) {
            Ok(value) if value == serde_json::json!({"action": "decide"}) => Ok(true),
            Ok(value) if value == serde_json::json!({"action": "settle"}) => Ok(false),
            _ => Err(TracerError::Turn { found: answer }),
        }
    }
}

/// How the key of a `connect` starts.
const CONNECT: &str = "connect ";

/// What a held call does, as the choice's priorities know it: not its thread, not its size (a
/// row's bytes vary with the clock), but its kind, call, file, peer and the request it carries.
fn key(pending: &Pending) -> String {
    let file = pending.path.as_deref().and_then(|p| Path::new(p).file_name()).map(|f| f.to_string_lossy());
    let request = pending.request.as_ref().map(|r| format!("{} {} {}", r.method, r.path, r.operation().unwrap_or("")));
    format!(
        "{} {} {} {} {}",
        pending.kind.name(),
        pending.call.name(),
        file.unwrap_or_default(),
        pending.peer.map(|p| p.name()).unwrap_or(""),
        request.unwrap_or_default()
    )
}
