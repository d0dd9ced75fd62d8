//! The run's services (`RunOptions::services`, `crate::run::services`) as the driver sees them:
//! started before the first incarnation and marked on the timeline, a service's own exit turned
//! into the error the run stops on, and the stop at the end of the run, whose findings (a service
//! that died unseen, one that would not be reaped) are told as why the run stopped.

use super::abort::Abort;
use super::record::{Happening, Mark};
use super::setup::Ground;
use super::state::Driver;
use crate::run::artifacts::Artifacts;
use crate::run::services::{Machine, Running, ServiceExit, Services, Stop};

/// The run's services started, with the marks of their starts; or, when one did not become
/// ready, the timeline so far (starts and stops, the others killed) and why.
/// With `machine`, each under the tracer, for the power losses of `--crash machine`.
pub(super) async fn start(
    services: &Services,
    artifacts: &Artifacts,
    ground: &Ground,
    machine: Option<Machine>,
) -> Result<(Running, Vec<Happening>), (Vec<Mark>, String)> {
    let (mut running, started) = Running::start(services, artifacts.path(), &ground.logs, machine.as_ref()).await;
    let starts: Vec<Happening> = running
        .started()
        .into_iter()
        .map(|s| Happening::ServiceStarted { service: s.name, port: s.port, waited: s.waited })
        .collect();
    match started {
        Ok(()) => Ok((running, starts)),
        Err(why) => {
            let stop = running.stop().await;
            let clock = &ground.clock;
            let mark = |happening| Mark { seq: clock.tick(), at_micros: clock.micros(), happening };
            let timeline = starts.into_iter().chain(stop_marks(&stop)).map(mark).collect();
            Err((timeline, told(why, &stop)))
        }
    }
}

/// The marks of a stop: the services that had exited on their own, then those it stopped.
fn stop_marks(stop: &Stop) -> Vec<Happening> {
    let exited =
        stop.exits.iter().map(|e| Happening::ServiceExited { service: e.name.clone(), status: e.status.clone() });
    let stopped = stop.stopped.iter().map(|s| Happening::ServiceStopped { service: s.clone() });
    exited.chain(stopped).collect()
}

/// `why` a run stopped, with what the stop found besides.
fn told(why: String, stop: &Stop) -> String {
    let mut why = why;
    for exit in &stop.exits {
        why.push_str(&format!("\n{}", exited_message(exit)));
    }
    if let Some(unreaped) = &stop.unreaped {
        why.push_str(&format!("\nkillpoint: {unreaped}"));
    }
    why
}

fn exited_message(exit: &ServiceExit) -> String {
    format!(
        "service `{}` exited on its own ({}) while the run went on: the runtime's server is gone, nothing after it can be judged\n{}",
        exit.name, exit.status, exit.last_lines
    )
}

impl Driver<'_> {
    /// A service exited while the run went on: marked, and the error the run stops on.
    pub(super) fn service_exited(&mut self, exit: ServiceExit) -> String {
        self.mark(Happening::ServiceExited { service: exit.name.clone(), status: exit.status.clone() });
        exited_message(&exit)
    }

    /// Machine-crash mode, the worker killed and its data dir rebuilt: the power loss took every
    /// service too. Each is reaped and its data dir rebuilt to what it synced (marked), then each
    /// is started again before the worker (marked). An error (one that would not die, could not
    /// be rebuilt, or did not come back) stops the run, the power losses before it marked.
    pub(super) async fn services_lose_power(&mut self) -> Result<(), String> {
        let lost_power = self.services.lose_power().await?;
        for lost in &lost_power {
            self.mark(Happening::ServicePowerLoss {
                service: lost.name.clone(),
                status: lost.down.status.clone(),
                lost: lost.lost.lost.clone(),
                points: lost.lost.points,
                syncs: lost.lost.syncs,
            });
        }
        for lost in lost_power {
            let start = self.services.start_again(&lost.down).await?;
            self.mark(Happening::ServiceRestarted { service: start.name, port: start.port, waited: start.waited });
        }
        Ok(())
    }

    /// Stops the services at the end of the run (the worker is dead by now) and marks it; a
    /// service found dead, or one that would not be reaped, stops the run (`aborted`) or is
    /// added to why it stopped.
    pub(super) async fn stop_services(&mut self, aborted: Option<Abort>) -> Option<Abort> {
        let stop = self.services.stop().await;
        for happening in stop_marks(&stop) {
            self.mark(happening);
        }
        if stop.exits.is_empty() && stop.unreaped.is_none() {
            return aborted;
        }
        Some(match aborted {
            None => Abort::Stopped(told(String::new(), &stop).trim_start().to_owned()),
            Some(Abort::NotReady(why)) => Abort::NotReady(told(why, &stop)),
            Some(Abort::Stopped(why)) => Abort::Stopped(told(why, &stop)),
        })
    }
}

/// The first incarnation did not become ready (`why`): the services are stopped, and the
/// timeline so far gets their stop.
pub(super) async fn stopped(
    mut services: Running,
    mut timeline: Vec<Mark>,
    ground: &Ground,
    why: String,
) -> (Vec<Mark>, Abort) {
    let stop = services.stop().await;
    let clock = &ground.clock;
    timeline.extend(stop_marks(&stop).into_iter().map(|happening| Mark {
        seq: clock.tick(),
        at_micros: clock.micros(),
        happening,
    }));
    (timeline, Abort::NotReady(told(why, &stop)))
}
