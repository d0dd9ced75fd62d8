//! Firing `[[service_fault]]`s (CONTRACT.md section 2, "Services"): a declared service taken down
//! and started again on the same data dir and port while the worker lives on, or held for a while
//! (frozen, or cut off from the worker: `service_windows.rs`). At a probe's boundary the worker
//! waits for the harness's answer while a service goes down and comes back; at `after_dispatch`
//! the fake provider applies the call, signals, and holds its answer until the fault has acted
//! (the service back, or its window opened; armed here, tagged past the worker faults' indices),
//! so the worker reads the answer after the fault however late the driver comes to the signal.
//! A service the harness took down is no service that "exited on its own": the run goes on.
//! `service = "*"` acts on every declared service, in the order declared.

use super::record::Happening;
use super::state::Driver;
use crate::model::boundary::Boundary;
use crate::run::probe::ProbeMessage;
use crate::run::services::Services;
use crate::scenario::Scenario;
use fake_tool::{FaultResponse, ProviderFault, World};

/// Kill point tags from here on are service faults' (`SERVICE_TAG + index`); below, worker faults'.
pub(super) const SERVICE_TAG: u64 = 1 << 32;

/// Arms the provider for the service faults at `after_dispatch`: it applies the call, signals,
/// and answers once released (`service_kill_point`).
pub(super) fn arm(world: &World, scenario: &Scenario) {
    for (i, fault) in scenario.service_faults.iter().enumerate().filter(|(_, f)| f.at == Boundary::AfterDispatch) {
        world.arm_provider(ProviderFault {
            operation: fault.operation.clone(),
            call: fault.occurrence,
            effect: true,
            response: FaultResponse::SignalThenAnswer,
            tag: SERVICE_TAG + i as u64,
            revocations: Vec::new(),
        });
    }
}

/// Why the scenario cannot run with these services: it needs services and none are declared, or
/// a `[[service_fault]]` names one the services file does not declare.
pub(super) fn undeclared(scenario: &Scenario, services: &Services) -> Option<String> {
    if scenario.needs_services() && services.is_empty() {
        return Some(format!(
            "{}: not run: no services declared (it acts on the runtime's server beside the worker: --services FILE)",
            scenario.path.display()
        ));
    }
    let names: Vec<&str> = services.list.iter().map(|s| s.name.as_str()).collect();
    let fault = scenario
        .service_faults
        .iter()
        .find(|f| f.service != crate::scenario::EVERY_SERVICE && !names.contains(&f.service.as_str()))?;
    let file = services.file.as_ref().map(|f| format!(" in {}", f.display())).unwrap_or_default();
    Some(format!(
        "{}: a [[service_fault]] names service `{}`, but the services declared{file} are {names:?} (--services FILE)",
        scenario.path.display(),
        fault.service
    ))
}

impl Driver<'_> {
    /// Fires the service faults due at this announcement, counted as the worker's faults count it
    /// (`fault_for` has counted it already): before the worker is answered or killed.
    pub(super) async fn service_faults_at(&mut self, message: &ProbeMessage) -> Result<(), String> {
        let key = (message.boundary, message.operation_id.clone(), message.destination.clone());
        let count = self.seen.get(&key).copied().unwrap_or(0);
        if message.destination.is_none() {
            self.windows_until(message.boundary, &message.operation_id, count);
        }
        let due: Vec<usize> = (0..self.scenario.service_faults.len())
            .filter(|&i| {
                let f = &self.scenario.service_faults[i];
                !self.service_hits[i]
                    && f.at == message.boundary
                    && f.operation == message.operation_id
                    && f.destination == message.destination
                    && f.occurrence == count
            })
            .collect();
        for i in due {
            self.fire_service(i).await?;
        }
        Ok(())
    }

    /// The provider signalled kill point `tag`: a service fault's (true: fired, and the provider's
    /// held answer released) or not (false).
    pub(super) async fn service_kill_point(&mut self, tag: u64) -> Result<bool, String> {
        let Some(index) = tag.checked_sub(SERVICE_TAG) else { return Ok(false) };
        if self.service_hits.get(index as usize) == Some(&false) {
            self.fire_service(index as usize).await?;
        }
        self.world.release(tag);
        Ok(true)
    }

    /// Service fault `index` on each service it names: a window opened on them, or each taken
    /// down, marked, started again, marked. An error (it would not die, or not come back, or not
    /// stop) stops the run, said as such.
    async fn fire_service(&mut self, index: usize) -> Result<(), String> {
        let fault = &self.scenario.service_faults[index];
        self.service_hits[index] = true;
        let names = self.services.names();
        let targets: Vec<String> = fault
            .targets(&names.iter().map(String::as_str).collect::<Vec<_>>())
            .into_iter()
            .map(str::to_owned)
            .collect();
        if let Some(seconds) = fault.window() {
            return self.open_window(index, &targets, seconds);
        }
        for service in targets {
            let down = self.services.take_down(&service, fault.action).await?;
            self.mark(Happening::ServiceKilled {
                fault: index,
                service: service.clone(),
                action: fault.action.name().to_owned(),
                status: down.status.clone(),
            });
            let start = self.services.start_again(&down).await?;
            self.mark(Happening::ServiceRestarted { service: start.name, port: start.port, waited: start.waited });
        }
        Ok(())
    }
}
