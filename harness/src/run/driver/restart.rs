//! Starting and restarting incarnations: a start that keeps the tracer in step, a SIGKILL and a
//! restart on the same data dir, and the checks every restart owes the client's side of the
//! contract.

use super::abort::Abort;
use super::record::{Happening, Hit};
use super::state::{Driver, unless_reached};
use crate::run::built::after_kill::{self, Around};
use crate::run::client::{ReadError, Resubmission};
use crate::run::incarnation::{Incarnation, Launch, StartError};
use crate::run::traced::Tracing;
use std::time::Instant;

/// Starts incarnation `number`; when the run traces, its tracer's points are answered from the
/// start and counted from its ready line.
pub(super) async fn start(
    launch: &Launch<'_>,
    number: u32,
    traced: &mut Option<Tracing>,
) -> Result<Incarnation, StartError> {
    if let Some(traced) = traced.as_mut() {
        traced.watch(number);
    }
    let incarnation = Incarnation::start(launch, number).await?;
    if let Some(traced) = traced {
        traced.ready();
    }
    Ok(incarnation)
}

impl Driver<'_> {
    pub(super) async fn kill_and_restart(&mut self, launch: &Launch<'_>) -> Result<(), String> {
        let killed_at = Instant::now();
        self.last_kill = Some(killed_at);
        // Machine-crash mode: the power goes for the services as for the worker, at once (only
        // traced services, which exist in that mode only, are touched).
        self.services.cut_power();
        self.incarnation.kill().await;
        let number = self.incarnation.number;
        self.mark(Happening::Killed { incarnation: number });
        // Taking the crash state is the harness's time, not the restart's: the clocks that measure
        // the restart and the recovery start after it.
        let taking = Instant::now();
        self.keep_after_kill(number).await;
        let killed_at = killed_at + taking.elapsed();
        self.last_kill = Some(killed_at);
        // Restore mode: the machine is lost, the runtime rebuilt elsewhere from a backup.
        if let Some((lag, root)) = self.restores.clone() {
            self.restore_from_backup(number, lag, &root)?;
        } else {
            self.lose_power(number).await?;
        }
        let moved = self.on_host(launch);
        let launch = moved.as_ref().unwrap_or(launch);
        // Taken out while it is used (the starts below borrow the driver), put back for the
        // restarts after this one.
        let plain = match self.every_kill_done() {
            true => self.untraced_target.take(),
            false => None,
        };
        let untraced = plain.as_ref().map(|target| untraced_launch(launch, target));
        let launch = untraced.as_ref().unwrap_or(launch);
        let mut next = number + 1;
        if self.hides_data_dir() {
            self.start_on_missing_dir(launch, next).await?;
            next += 1;
        }
        self.mark(Happening::Started { incarnation: next });
        let mut no_tracer = None;
        let tracing = if untraced.is_some() { &mut no_tracer } else { &mut self.traced };
        let started = start(launch, next, tracing).await;
        if plain.is_some() {
            self.untraced_target = plain;
        }
        self.incarnation = started.map_err(|e| self.not_ready(e))?;
        self.connect();
        self.restarts.push(killed_at.elapsed());
        Ok(())
    }

    /// Whether the tracer has nothing left to stop at: every kill and freeze of the scenario has
    /// happened (or cannot), and every `[[syscall_fault]]` was hit.
    fn every_kill_done(&self) -> bool {
        use crate::scenario::Action;
        let stops = |action: Action| matches!(action, Action::Kill | Action::Freeze);
        let pending =
            self.scenario.faults.iter().zip(&self.hits).any(|(f, hit)| stops(f.action) && *hit == Hit::NotReached);
        let syscalls_hit = self.traced.as_ref().is_some_and(|t| t.hits().iter().all(|hit| *hit));
        !pending && syscalls_hit
    }

    /// `RunOptions::keep_kills`: the crash state this kill left, in place of the last one's.
    async fn keep_after_kill(&mut self, incarnation: u32) {
        let (Some((data, logs, lands)), Some(tracing)) = (&self.keep_kills, self.traced.as_mut()) else { return };
        let around = Around {
            data,
            logs,
            world: self.world.state(),
            timeline: &self.timeline,
            hits: &self.hits,
            killed: &self.killed,
            incarnation,
        };
        self.after_kill = Some(after_kill::take(around, tracing, *lands).await);
    }

    /// Machine-crash mode: the kill was a power loss; the next incarnation finds only what was
    /// synced. A model that cannot rebuild the data dir is the harness's failure.
    async fn lose_power(&mut self, number: u32) -> Result<(), String> {
        match self.traced.as_ref().and_then(|t| t.lose_power()) {
            Some(Err(e)) => return Err(format!("killpoint could not build the data dir a power loss leaves: {e}")),
            Some(Ok(lost)) => {
                self.mark(Happening::PowerLoss { incarnation: number, lost });
                self.services_lose_power().await?;
            }
            None => {}
        }
        Ok(())
    }

    /// A restart that did not become ready: the run stops on it (the error returned), and what
    /// it broke is the ready line's rule, not any later one.
    pub(super) fn not_ready(&mut self, error: StartError) -> String {
        self.unready = true;
        error.to_string()
    }

    /// Why the run stopped, from the error it stopped on (`reason`).
    pub(super) fn abort(&self, reason: String) -> Abort {
        match self.unready {
            true => Abort::NotReady(reason),
            false => Abort::Stopped(reason),
        }
    }

    /// Whether the tracer's task killed the runtime at a syscall fault's point (the kill is its;
    /// the restart is the driver's).
    pub(super) fn syscall_killed(&mut self) -> bool {
        if self.reached_early.is_none()
            && let Some(receiver) = self.syscall_reached.as_mut()
        {
            self.reached_early = receiver.try_recv().ok();
        }
        self.reached_early.is_some()
    }

    /// After every restart: is every accepted operation still known (`intent_durable`), and does
    /// the runtime answer its resubmission as the contract says (`idempotent_submission`)?
    pub(super) async fn after_restart(&mut self) {
        self.check_after_restart().await;
        self.waiting_in_turn();
    }

    async fn check_after_restart(&mut self) {
        let incarnation = self.incarnation.number;
        for id in self.accepted.clone() {
            if self.forgotten.contains(&id) {
                continue;
            }
            let op = self.scenario.operation(&id).expect("accepted operations are the scenario's");
            let read = self.read(op).await;
            if self.syscall_killed() {
                return; // the next restart checks again
            }
            if let Err(ReadError::Unknown(answer)) = read {
                match self.restored() {
                    true => self.resubmit_forgotten(&id, answer).await,
                    false => self.forgot(&id, answer),
                }
                continue;
            }
            for submission in Resubmission::AGAIN {
                self.sending_in_turn().await;
                let request = self.client.resubmit(op, submission);
                let answer = unless_reached(&mut self.syscall_reached, &mut self.reached_early, request).await;
                self.answered_in_turn();
                let Some(answer) = answer.filter(|_| !self.syscall_killed()) else { return };
                let operation = Some(id.clone());
                self.mark(Happening::Resubmitted { operation, incarnation, submission, answer, read_after: None });
            }
        }
    }
}

/// `launch` with the runtime as the user gave it, not under the tracer, and without the tracer's
/// variables, which only the tracer reads.
fn untraced_launch<'l>(launch: &Launch<'l>, target: &'l crate::run::incarnation::Target) -> Launch<'l> {
    let tracer_only = [crate::run::traced::SOCKET_VARIABLE, crate::tracer::ESCAPES_VARIABLE];
    let env = launch.env.iter().filter(|(name, _)| !tracer_only.contains(&name.as_str())).cloned().collect();
    Launch { target, env, logs: launch.logs, probe: launch.probe, ready_timeout: launch.ready_timeout }
}
