//! The wait loop under a controlled schedule: take every stop there is, see whether the runtime
//! has settled (the folder's comment says when), ask the harness for its turn, and let one held
//! call go.

use super::choice::Candidate;
use super::events::Events;
use super::threads::{Activity, activity, is_unix, receiving, socket_inode};
use super::{Awaited, Scheduler, PEER_WAIT, SETTLE_LIMIT, TICK};
use crate::tracer::error::TracerError;
use crate::tracer::point::When;
use crate::tracer::state::{Pending, Tracer};
use std::io::{BufRead, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// What the loop does next.
enum Next {
    /// Wait for a stop, at most this long, then look again.
    Wait(Duration),
    Settled,
}

/// How long the loop sleeps between looks when the runtime is idle and the harness was told.
const IDLE_LOOK: Duration = Duration::from_millis(50);

impl Tracer {
    pub(in crate::tracer) fn scheduler(&mut self) -> &mut Scheduler {
        self.schedule.as_mut().expect("a scheduled trace has a scheduler")
    }

    /// `trace` under a controlled schedule; returns the status to exit with.
    pub(in crate::tracer) fn trace_scheduled(&mut self, child: i32, report: i32, shown: &str) -> Result<i32, TracerError> {
        let events = Events::new()?;
        self.scheduler().threads.root(child);
        loop {
            while let Some((tid, status)) = events.take()? {
                if let Some(code) = self.on_event(child, tid, status, report, shown)? {
                    return Ok(code);
                }
            }
            match self.settled(child) {
                Next::Wait(within) => events.wait(within)?,
                Next::Settled => self.turn()?,
            }
        }
    }

    /// A receive that is no crash point: on a socket that is neither the world's nor a Unix one,
    /// it reads a request of the harness's (counted for the harness's turn).
    pub(in crate::tracer) fn heard(&mut self, tid: i32, fd: i64) {
        let Some(inode) = socket_inode(tid, fd) else { return };
        if self.sockets.get(&inode).is_some_and(Option::is_some) {
            return;
        }
        let pid = tid;
        let s = self.scheduler();
        if !*s.unix.entry(inode).or_insert_with(|| is_unix(pid, inode)) {
            s.heard += 1;
        }
    }

    /// Whether every thread not held is asleep with no answer on its way (or the limit passed).
    fn settled(&mut self, child: i32) -> Next {
        let world: Vec<u64> = self.sockets.iter().filter(|(_, a)| a.is_some()).map(|(i, _)| *i).collect();
        let exchanges: Vec<u64> = self.exchanges.iter().filter(|(_, e)| e.awaiting_answer()).map(|(i, _)| *i).collect();
        let s = self.scheduler();
        if s.held.is_empty() && s.idle_told {
            return Next::Wait(IDLE_LOOK);
        }
        if let Some(tid) = s.running {
            match activity(tid) {
                // Blocked inside its call (a receive the world has not answered): its `after`
                // comes when it comes; the others may go meanwhile.
                Activity::Asleep { .. } | Activity::Gone => s.running = None,
                Activity::Running | Activity::Stopped => return Next::Wait(TICK),
            }
        }
        let mut busy = false;
        let mut waiting: Vec<Awaited> = exchanges.into_iter().map(|inode| Awaited::Exchange { inode }).collect();
        let live: Vec<i32> = s.threads.live().filter(|t| !s.held.contains_key(t)).collect();
        for tid in live {
            match activity(tid) {
                Activity::Running => busy = true,
                Activity::Asleep { call, fd } if receiving(call) => {
                    let Some(inode) = socket_inode(tid, fd) else { continue };
                    let unix = *s.unix.entry(inode).or_insert_with(|| is_unix(child, inode));
                    if unix || world.contains(&inode) {
                        waiting.push(Awaited::Receive { tid, inode });
                    }
                }
                _ => {}
            }
        }
        let now = Instant::now();
        s.awaited.retain(|a, _| waiting.contains(a));
        let answer_due = waiting.iter().any(|a| now.duration_since(*s.awaited.entry(*a).or_insert(now)) < PEER_WAIT);
        if !busy && !answer_due {
            s.settling_since = None;
            return Next::Settled;
        }
        if s.held.is_empty() {
            return Next::Wait(TICK);
        }
        let since = *s.settling_since.get_or_insert(now);
        if now.duration_since(since) >= SETTLE_LIMIT {
            s.unsettled += 1;
            s.settling_since = None;
            return Next::Settled;
        }
        Next::Wait(TICK)
    }

    /// The harness's turn, then one held call goes (when one is held and the harness says so).
    fn turn(&mut self) -> Result<(), TracerError> {
        let (step, held, heard) = {
            let s = self.scheduler();
            (s.step, s.held.len(), s.heard)
        };
        if !self.harness_says_decide(step, held, heard)? {
            return Ok(());
        }
        let s = self.scheduler();
        if s.held.is_empty() {
            s.idle_told = true;
            return Ok(());
        }
        let candidates: Vec<Candidate> = s
            .held
            .iter()
            .map(|(tid, pending)| Candidate { key: key(pending), label: s.threads.label(*tid), tid: *tid })
            .collect();
        s.step += 1;
        let step = s.step;
        let tid = candidates[s.priorities.choose(step, &candidates)].tid;
        let pending = s.held.remove(&tid).expect("the chosen call is held");
        s.running = Some(tid);
        self.announce(tid, When::Before, &pending, None, None)?;
        self.pending.insert(tid, pending);
        self.resume(tid, 0);
        Ok(())
    }

    /// Tells the harness the runtime settled; `true` on `decide`, `false` on `settle` (look again).
    /// Without a harness (the tracer run alone) it is always `decide`.
    fn harness_says_decide(&mut self, step: u64, held: usize, heard: u64) -> Result<bool, TracerError> {
        let path = self.config.socket.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        let Some(channel) = &mut self.channel else { return Ok(true) };
        let socket = |source| TracerError::Socket { path: path.clone(), source };
        let line = format!("{{\"settled\":{{\"step\":{step},\"held\":{held},\"heard\":{heard}}}}}\n");
        channel.writer.write_all(line.as_bytes()).map_err(socket)?;
        let mut answer = String::new();
        if channel.reader.read_line(&mut answer).map_err(socket)? == 0 {
            return Err(TracerError::Turn { found: "the connection closed".to_owned() });
        }
        match serde_json::from_str::<serde_json::Value>(answer.trim()) {
            Ok(value) if value == serde_json::json!({"action": "decide"}) => Ok(true),
            Ok(value) if value == serde_json::json!({"action": "settle"}) => Ok(false),
            _ => Err(TracerError::Turn { found: answer.trim().to_owned() }),
        }
    }
}

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
