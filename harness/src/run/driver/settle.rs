//! Settling a wave: answering the probe and firing faults until every operation of the wave has
//! settled, waiting on events (a probe line, a kill point, a world entry, the process's exit) and
//! on the one poll the contract leaves, reading an operation's state.

use super::fingerprint::Fingerprint;
use super::record::{Happening, Hit};
use super::state::Frozen;
use super::state::{Driver, next_probe, next_syscall};
use crate::model::boundary::Boundary;
use crate::run::client::ReadError;
use crate::run::incarnation::{Launch, describe_status, tail_of_logs};
use crate::run::probe::ProbeMessage;
use crate::run::traced::{Reached, listening};
use crate::scenario::{Action, Operation};
use fake_tool::KillPoint;
use std::process::ExitStatus;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

/// Answers the probe and fires faults until every operation of `wave` has settled, or its own
/// deadline has passed (`super::deadline`: from its submission or the last ready line).
pub(super) async fn settle(
    driver: &mut Driver<'_>,
    launch: &Launch<'_>,
    points: &mut UnboundedReceiver<KillPoint>,
    wave: &[&Operation],
    unsettled: &mut Vec<(String, String)>,
) -> Result<(), String> {
    // Told that the driver listens for the probe, each time it waits for the next event.
    let turn = driver.turn().cloned();
    let mut wave = Settling::new(driver, launch, wave);
    let mut pace = Pace::new();
    // After a world entry, the runtime's last commit follows within a millisecond or two: read
    // again each millisecond, a few times, before falling back to the slow tick.
    let mut follow_ups = 0u32;
    // Read at once, not a tick from now: a wave may have settled before it is waited on. A
    // recovery from a built state often has nothing left to do but answer (its kill came after
    // the last commit), and no event says so: 95 of 120 cases of an `after_submit` exploration
    // waited out a whole tick for it, 6 of their 13 ms. (A first tick due now would come at the
    // timer's next millisecond.)
    if !wave.driver.syscall_killed() {
        wave.read().await;
    }
    loop {
        if wave.over() {
            return Ok(());
        }
        if wave.driver.syscall_killed()
            && let Some(reached) = wave.driver.reached_early.take()
        {
            wave.syscall_restart(reached).await?;
            continue;
        }
        // Checked here as well as in the last branch: `biased` polls that branch only when no
        // other is ready, and a runtime that floods the probe keeps the first one ready.
        if tokio::time::Instant::now() >= wave.earliest() {
            wave.expire(unsettled).await;
            continue;
        }
        let earliest = wave.earliest();
        let driver = &mut *wave.driver;
        let incarnation = &mut driver.incarnation;
        let services = &mut driver.services;
        let next_poll = pace.next();
        tokio::select! {
            biased;
            // Each marks activity once handled: a kill's restart takes a runtime's start-up, and
            // its recovery is read at the fast pace from its ready line on.
            message = listening(turn.clone(), next_probe(&mut incarnation.probe)) => {
                wave.announced(message).await?;
                pace.activity();
            }
            Some(reached) = next_syscall(&mut driver.syscall_reached) => {
                wave.syscall_restart(reached).await?;
                pace.activity();
            }
            Some(point) = points.recv() => {
                wave.kill_point(point).await?;
                pace.activity();
            }
            status = incarnation.child.wait() => return Err(wave.exited(status.ok())),
            exit = services.exited() => return Err(wave.driver.service_exited(exit)),
            // Settling shows in the fake world's ledger (a call, a receipt) a moment before the
            // runtime's last commit: read at each entry, and on a slow tick for what the world
            // cannot see (an ACK written after the consumer's answer).
            _ = driver.world.changed() => {
                pace.activity();
                wave.read().await;
                follow_ups = 4;
            }
            _ = tokio::time::sleep(Duration::from_millis(1)), if follow_ups > 0 => {
                follow_ups -= 1;
                wave.read().await;
            }
            _ = tokio::time::sleep_until(next_poll) => {
                if wave.read().await {
                    pace.activity();
                }
                pace.polled();
            }
            _ = tokio::time::sleep_until(earliest) => wave.expire(unsettled).await,
        }
    }
}

/// One wave being settled: what is still pending, each operation with its own deadline.
struct Settling<'s, 'a> {
    driver: &'s mut Driver<'a>,
    launch: &'s Launch<'s>,
    /// Whether the incarnation the wave began with has the probe.
    probe: bool,
    /// Still to settle.
    pending: Vec<&'s Operation>,
    /// Under a controlled schedule, once nothing is pending: the runtime's idle reports then,
    /// and when (`Turn::idle_since`).
    quiet: Option<(u64, std::time::Instant)>,
}

impl<'s, 'a> Settling<'s, 'a> {
    fn new(driver: &'s mut Driver<'a>, launch: &'s Launch<'s>, wave: &[&'s Operation]) -> Settling<'s, 'a> {
        let probe = driver.incarnation.probe.is_some();
        Settling { driver, launch, probe, pending: wave.to_vec(), quiet: None }
    }

    /// Whether nothing is pending any more (under a controlled schedule: and the runtime has
    /// since been idle, so that where the wave ends is the schedule's, see `Turn::idle_since`).
    fn over(&mut self) -> bool {
        // A runtime that says it does not know an operation it accepted will not settle it:
        // reported as soon as seen, not at the deadline.
        let forgotten = &self.driver.forgotten;
        self.pending.retain(|op| !forgotten.contains(&op.id));
        if !self.pending.is_empty() {
            return false;
        }
        let Some(turn) = self.driver.turn() else { return true };
        let (mark, since) = *self.quiet.get_or_insert_with(|| (turn.idle_reports(), std::time::Instant::now()));
        turn.idle_since(mark, since)
    }

    /// The first deadline of the operations still pending (they move with every restart).
    fn earliest(&self) -> tokio::time::Instant {
        let far = tokio::time::Instant::now() + Duration::from_secs(86_400);
        self.pending.iter().map(|op| self.driver.deadline_of(&op.id)).min().unwrap_or(far)
    }

    /// The latest deadline of the operations still pending: how long the wave may still take.
    fn latest(&self) -> tokio::time::Instant {
        let now = tokio::time::Instant::now();
        self.pending.iter().map(|op| self.driver.deadline_of(&op.id)).max().unwrap_or(now)
    }

    /// A deadline passed: one more read (what settled by now has settled), then every operation
    /// whose deadline has passed is unsettled, with the last state the runtime answered.
    async fn expire(&mut self, unsettled: &mut Vec<(String, String)>) {
        self.read().await;
        // A read cut off by a syscall kill: the restart, next, moves every deadline.
        if self.driver.syscall_killed() {
            return;
        }
        let now = tokio::time::Instant::now();
        let driver = &*self.driver;
        let (late, pending): (Vec<&Operation>, Vec<&Operation>) =
            self.pending.iter().partition(|op| driver.deadline_of(&op.id) <= now);
        unsettled.extend(late.iter().map(|op| (op.id.clone(), driver.seen(&op.id))));
        self.pending = pending;
    }

    /// A probe announcement: the fault it calls for fires, or the runtime is answered `resume`.
    async fn announced(&mut self, message: Result<Option<ProbeMessage>, String>) -> Result<(), String> {
        let message = match message {
            Ok(Some(m)) => m,
            // The runtime closed the probe: it is exiting; the wait branch reports it.
            Ok(None) => {
                self.driver.incarnation.probe = None;
                return Ok(());
            }
            Err(e) => {
                return Err(format!(
                    "incarnation {}: {e}\n{}",
                    self.driver.incarnation.number,
                    tail_of_logs(self.launch.logs, 15)
                ));
            }
        };
        let scenario = self.driver.scenario;
        let fault = self.driver.fault_for(&message);
        // The worker waits at its boundary while its server goes down and comes back.
        self.driver.service_faults_at(&message).await?;
        match fault {
            Some(i) if scenario.faults[i].action == Action::Freeze => {
                self.driver.hits[i] = Hit::Exact;
                self.driver.freeze(Frozen::Boundary(message), None, self.launch).await?;
            }
            Some(i) => {
                self.driver.hits[i] = Hit::Exact;
                self.driver.mark(Happening::Boundary { message, killed: true });
                self.driver.fire(i, self.launch).await?;
            }
            None => self.resume(message).await?,
        }
        Ok(())
    }

    /// An announcement no fault is for: marked (with the crash state's fingerprint, when the run
    /// takes them) and answered `resume`.
    async fn resume(&mut self, message: ProbeMessage) -> Result<(), String> {
        let latest = self.latest();
        let driver = &mut *self.driver;
        let announced = format!("`{}` of `{}`", message.boundary, message.operation_id);
        driver.mark(Happening::Boundary { message, killed: false });
        if let Some(data) = &driver.fingerprint_data {
            let seq = driver.timeline.last().map_or(0, |m| m.seq);
            driver.fingerprints.push((seq, Fingerprint::take(data, driver.world, driver.scenario)));
        }
        if let Some(probe) = driver.incarnation.probe.as_mut() {
            // A failed write means the runtime died; the wait branch reports it.
            // A write that never ends means it stopped reading the answers (and
            // would block the harness for ever): the deadline bounds it.
            if tokio::time::timeout_at(latest, probe.resume()).await.is_err() {
                return Err(format!(
                    "incarnation {} stopped reading the probe: the harness's answer to {announced} could not be written before {}'s deadline ({:?} after its submission or the last ready line, plus the start-up) (CONTRACT.md section 7: one message, one answer, then the next)\n{}",
                    driver.incarnation.number,
                    waiting_for(&self.pending),
                    driver.scenario.deadline,
                    tail_of_logs(self.launch.logs, 15)
                ));
            }
        }
        Ok(())
    }

    /// The tracer's task killed the runtime at a syscall fault's point.
    async fn syscall_restart(&mut self, reached: Reached) -> Result<(), String> {
        self.driver.syscall_restart(reached, self.launch).await?;
        Ok(())
    }

    /// The world reached an armed kill point: its fault fires, unless it already has.
    async fn kill_point(&mut self, point: KillPoint) -> Result<(), String> {
        if self.driver.service_kill_point(point.tag).await? {
            return Ok(());
        }
        let scenario = self.driver.scenario;
        let i = point.tag as usize;
        if self.driver.hits.get(i) == Some(&Hit::NotReached) {
            let fault = &scenario.faults[i];
            // Without the probe, "after the provider's success" is the moment the
            // provider answered: the runtime may already be past it.
            self.driver.hits[i] =
                if fault.at == Boundary::AfterProviderSuccess && !self.probe { Hit::Approximate } else { Hit::Exact };
            self.driver.mark(Happening::KillPoint { operation: fault.operation.clone(), what: point.what });
            self.driver.fire(i, self.launch).await?;
        }
        Ok(())
    }

    /// The runtime exited on its own while the wave was pending: the run's end, in words.
    fn exited(&mut self, status: Option<ExitStatus>) -> String {
        let number = self.driver.incarnation.number;
        let status = describe_status(status);
        self.driver.mark(Happening::Exited { incarnation: number, status: status.clone() });
        let driver = &*self.driver;
        let states: Vec<String> =
            self.pending.iter().map(|op| format!("`{}` was {}", op.id, driver.seen(&op.id))).collect();
        format!(
            "incarnation {number} exited on its own ({status}) while {}\n{}",
            states.join(", "),
            tail_of_logs(self.launch.logs, 15)
        )
    }

    /// Reads every pending operation; whether any answered otherwise than last time.
    async fn read(&mut self) -> bool {
        let before: Vec<String> = self.pending.iter().map(|op| self.driver.seen(&op.id)).collect();
        let ids: Vec<&str> = self.pending.iter().map(|op| op.id.as_str()).collect();
        read_pending(self.driver, &mut self.pending).await;
        // An operation that settled was read otherwise; one still pending is compared.
        ids.len() != self.pending.len() || ids.iter().zip(&before).any(|(id, before)| self.driver.seen(id) != *before)
    }
}

/// The slow tick's pace: a read each 5 ms while the run is busy (an announcement, a kill, a world
/// entry, an operation answered otherwise than before), slowing to one each 50 ms once it has
/// been quiet for a while. Only what the world cannot see waits on it (an ACK written after the
/// consumer's answer), and that comes a moment after the last activity, when the pace is still
/// fast; a runtime that never settles is read ten times less over its deadline. Under the tracer
/// every read is several stops of the runtime: polled at 5 ms, a traced Python runtime spent most
/// of a failing run's deadline answering reads.
struct Pace {
    last_activity: tokio::time::Instant,
    next: tokio::time::Instant,
}

impl Pace {
    const FAST: Duration = Duration::from_millis(5);
    const SLOW: Duration = Duration::from_millis(50);

    fn new() -> Pace {
        let now = tokio::time::Instant::now();
        Pace { last_activity: now, next: now + Pace::FAST }
    }

    fn next(&self) -> tokio::time::Instant {
        self.next
    }

    /// Something happened: read soon again.
    fn activity(&mut self) {
        let now = tokio::time::Instant::now();
        self.last_activity = now;
        self.next = self.next.min(now + Pace::FAST);
    }

    /// A read was made: the next one a fifth of the quiet time later, between FAST and SLOW.
    fn polled(&mut self) {
        let now = tokio::time::Instant::now();
        self.next = now + interval(now - self.last_activity);
    }
}

/// How long after a read the next one comes, when the run has been quiet for `quiet`.
fn interval(quiet: Duration) -> Duration {
    (quiet / 5).clamp(Pace::FAST, Pace::SLOW)
}

fn waiting_for(pending: &[&Operation]) -> String {
    pending.iter().map(|op| format!("`{}`", op.id)).collect::<Vec<_>>().join(", ")
}

/// Reads every operation still pending and drops those that have settled.
async fn read_pending(driver: &mut Driver<'_>, pending: &mut Vec<&Operation>) {
    let mut index = 0;
    while index < pending.len() {
        let op = pending[index];
        match driver.read(op).await {
            Ok(report) if report.is_settled(&op.destinations) => {
                pending.remove(index);
                continue;
            }
            Err(ReadError::Unknown(answer)) => driver.forgot(&op.id, answer),
            Ok(_) | Err(ReadError::Other(_)) => {}
        }
        index += 1;
    }
    if pending.is_empty()
        && let Some(killed_at) = driver.last_kill.take()
    {
        driver.recoveries.push(killed_at.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use super::{Pace, interval};
    use std::time::Duration;

    #[test]
    fn the_poll_slows_only_once_the_run_has_been_quiet() {
        assert_eq!(interval(Duration::ZERO), Pace::FAST);
        assert_eq!(interval(Duration::from_millis(20)), Pace::FAST);
        assert_eq!(interval(Duration::from_millis(100)), Duration::from_millis(20));
        assert_eq!(interval(Duration::from_secs(20)), Pace::SLOW);
    }
}
