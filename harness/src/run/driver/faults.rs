//! Firing faults: which fault a probe announcement calls for, the permissions it withdraws, and
//! the kill and restart — at a boundary or at a syscall fault's point.

use super::arming::revocations;
use super::record::{Happening, Hit};
use super::state::Driver;
use super::state::Frozen;
use crate::model::boundary::Site;
use crate::run::incarnation::Launch;
use crate::run::probe::ProbeMessage;
use crate::run::traced::{Reached, Target};

impl Driver<'_> {
    /// The fault (index) to fire at this probe announcement, if any.
    pub(super) fn fault_for(&mut self, message: &ProbeMessage) -> Option<usize> {
        let key = (message.boundary, message.operation_id.clone(), message.destination.clone());
        let count = self.seen.entry(key.clone()).or_default();
        *count += 1;
        let count = *count;
        let for_attempt = self.seen_attempt.entry((key.0, key.1, key.2, message.attempt)).or_default();
        *for_attempt += 1;
        let for_attempt = *for_attempt;
        self.scenario.faults.iter().enumerate().position(|(i, f)| {
            let nth = match f.attempt {
                None => count,
                Some(a) if a == message.attempt => for_attempt,
                Some(_) => return false,
            };
            self.hits[i] == Hit::NotReached
                && f.at.site() == Site::Probe
                && f.at == message.boundary
                && f.operation == message.operation_id
                && f.destination == message.destination
                && f.occurrence == nth
        })
    }

    fn revoke(&self, fault_index: usize) {
        for revocation in revocations(self.scenario, &self.scenario.faults[fault_index]) {
            self.world.revoke(revocation);
        }
    }

    /// Fires fault `fault_index`: its revocations, SIGKILL, a restart on the same data dir, and
    /// the checks every restart owes the client's side of the contract.
    pub(super) async fn fire(&mut self, fault_index: usize, launch: &Launch<'_>) -> Result<(), String> {
        self.revoke(fault_index);
        // The mark just made for it (the announcement or the held answer) is the kill's moment.
        self.killed[fault_index] = self.timeline.last().map(|m| m.seq);
        self.kill_and_restart(launch).await?;
        self.after_restart().await;
        Ok(())
    }

    /// The runtime was killed at a syscall fault's point: mark it, restart on the same data dir,
    /// and run the restart's checks. Or it is held there by a freeze: outlived, as at a probe's.
    pub(super) async fn syscall_restart(&mut self, mut reached: Reached, launch: &Launch<'_>) -> Result<(), String> {
        let incarnation = self.incarnation.number;
        match (reached.target, reached.held.take()) {
            // A freeze: the tracer holds the runtime at the boundary's call, alive.
            (Target::Boundary(i), Some(held)) => {
                self.hits[i] = Hit::AtSyscall;
                let fault = &self.scenario.faults[i];
                // As the probe would have announced it; the tracer counts occurrences, not attempts.
                let message = ProbeMessage {
                    boundary: fault.at,
                    operation_id: fault.operation.clone(),
                    attempt: fault.occurrence,
                    destination: fault.destination.clone(),
                };
                return self.freeze(Frozen::Boundary(message), Some(held), launch).await;
            }
            (Target::Syscall(_), Some(held)) => {
                return self.freeze(Frozen::Syscall(Box::new(reached.point)), Some(held), launch).await;
            }
            (_, None) => {}
        }
        if let Target::Boundary(i) = reached.target {
            // The runtime is dead already (the tracer's task killed it): a revocation in force
            // before the restart is one in force at the kill.
            self.hits[i] = if reached.inferred { Hit::Approximate } else { Hit::AtSyscall };
            self.revoke(i);
        }
        self.mark(Happening::SyscallKill { incarnation, point: reached.point });
        if let Target::Boundary(i) = reached.target {
            self.killed[i] = self.timeline.last().map(|m| m.seq);
        }
        self.kill_and_restart(launch).await?;
        self.after_restart().await;
        Ok(())
    }
}
