//! The `freeze` fault: an incarnation frozen at its boundary instead of killed — SIGSTOPped at its
//! probe announcement, or held by the tracer at the boundary's system call (`run::held`) —
//! outlived by the next one on the same data dir, then resumed once its operation has settled,
//! and watched until it exits, as a fenced incarnation must.

use super::record::Happening;
use super::restart::start;
use super::state::{Driver, Frozen, Zombie, next_probe};
use crate::run::held::{FencedRead, Held};
use crate::run::incarnation::{Launch, describe_status};
use crate::tracer::Peer;
use fake_tool::Service;
use std::time::Instant;
use tokio::sync::mpsc::UnboundedReceiver;

/// A frozen incarnation a newer one outlived: the announcement it was frozen at, and, when the
/// tracer holds it (not SIGSTOP), the held point to answer.
impl Driver<'_> {
    /// Fires a `freeze` fault: SIGSTOP instead of SIGKILL (or the tracer's `held` point), the
    /// world told that the next incarnation is current before it starts (its fencing token), and
    /// the frozen one kept aside with its unanswered announcement.
    pub(super) async fn freeze(
        &mut self,
        frozen: Frozen,
        held: Option<Held>,
        launch: &Launch<'_>,
    ) -> Result<(), String> {
        let frozen_at = Instant::now();
        self.last_kill = Some(frozen_at);
        let number = self.incarnation.number;
        let message = match frozen {
            Frozen::Boundary(message) => {
                self.mark(Happening::Frozen { incarnation: number, message: message.clone(), held: held.is_some() });
                Some(message)
            }
            Frozen::Syscall(point) => {
                self.mark(Happening::SyscallFrozen { incarnation: number, point: *point });
                None
            }
        };
        if held.is_none() {
            self.incarnation.freeze();
        }
        self.world.fence(number + 1);
        self.mark(Happening::Started { incarnation: number + 1 });
        // On failure the frozen one is still `self.incarnation`: `run` kills and reaps it.
        let moved = self.on_host(launch);
        let launch = moved.as_ref().unwrap_or(launch);
        let next = start(launch, number + 1, &mut self.traced).await.map_err(|e| self.not_ready(e))?;
        let frozen = std::mem::replace(&mut self.incarnation, next);
        self.zombies.push(Zombie { incarnation: frozen, message, held });
        self.connect();
        self.restarts.push(frozen_at.elapsed());
        self.after_restart().await;
        Ok(())
    }

    /// Resumes every frozen incarnation, one at a time: SIGCONT, `resume` to the announcement it
    /// was frozen at (and to any it makes after; the tracer's held point, for a traced one), then waits for it to exit — the event a fenced
    /// incarnation owes — until the scenario's deadline, when it is recorded as outliving its
    /// fence and SIGKILLed. Reaped either way.
    pub(super) async fn resume_zombies(&mut self) {
        for Zombie { incarnation: mut zombie, message, held } in std::mem::take(&mut self.zombies) {
            let number = zombie.number;
            let started = tokio::time::Instant::now();
            let deadline = started + self.scenario.deadline;
            self.mark(Happening::Resumed { incarnation: number, message, held: held.is_some() });
            let mut reads = match held {
                // The tracer answers the held point, then every later one.
                Some(held) => Some(held.resume()),
                None => {
                    zombie.thaw();
                    None
                }
            };
            let mut answer = zombie.probe.is_some();
            loop {
                // One answer per announcement: the one it was frozen at, then each it makes.
                if answer && let Some(probe) = zombie.probe.as_mut() {
                    // A failed write means it exited (the wait below sees it); a write that never
                    // ends means it stopped reading, and the deadline bounds it.
                    if tokio::time::timeout_at(deadline, probe.resume()).await.is_err() {
                        zombie.probe = None;
                    }
                }
                answer = false;
                tokio::select! {
                    biased;
                    status = zombie.child.wait() => {
                        let status = describe_status(status.ok());
                        self.mark(Happening::ZombieExited { incarnation: number, status });
                        break;
                    }
                    next = next_probe(&mut zombie.probe) => match next {
                        Ok(Some(message)) => {
                            self.mark(Happening::ZombieAnnounced { incarnation: number, message });
                            answer = true;
                        }
                        // Closed or unreadable: it is on its way out, or says nothing more.
                        Ok(None) | Err(_) => zombie.probe = None,
                    },
                    read = next_read(&mut reads) => match read {
                        Some(read) => {
                            self.mark(read_fenced(number, &read));
                            read.recorded();
                        }
                        // The tracer's end closed: it is on its way out.
                        None => reads = None,
                    },
                    _ = tokio::time::sleep_until(deadline) => {
                        self.mark(Happening::ZombieOutlived { incarnation: number, waited: started.elapsed() });
                        break;
                    }
                }
            }
            // Also sweeps what it started, and reaps it.
            zombie.kill().await;
        }
    }

    /// A run that stopped early may still hold frozen incarnations: none is left behind.
    pub(super) async fn kill_zombies(&mut self) {
        for Zombie { incarnation: mut zombie, .. } in std::mem::take(&mut self.zombies) {
            zombie.kill().await;
        }
    }
}

/// The next `409 fenced` a traced zombie read; never, for one that is not traced.
async fn next_read(reads: &mut Option<UnboundedReceiver<FencedRead>>) -> Option<FencedRead> {
    match reads {
        Some(reads) => reads.recv().await,
        None => std::future::pending().await,
    }
}

/// The mark of a `409 fenced` incarnation `number` read.
fn read_fenced(number: u32, read: &FencedRead) -> Happening {
    let request = read.request.as_ref();
    let service = read.peer.and_then(|peer| match peer {
        Peer::Provider => Some(Service::Provider),
        Peer::Consumers => Some(Service::Consumer),
        Peer::Policy => Some(Service::Policy),
        Peer::Model | Peer::World => None,
    });
    Happening::ZombieReadFenced {
        incarnation: number,
        service,
        operation: request.and_then(|r| r.operation()).map(str::to_owned),
        what: request.map_or_else(|| "a request".to_owned(), |r| format!("{} {}", r.method, r.path)),
    }
}
