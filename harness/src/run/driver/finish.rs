//! The end of a run: the harness's own ground checked, and the evidence — with the runtime's
//! last word on every operation (`tail`, read before it is stopped) — gathered into the [`Run`]
//! the checker judges.

use super::abort::Abort;
use super::evidence::Run;
use super::record::{Hit, Mark};
use super::state::Driver;
use super::tail::LastWord;
use crate::model::boundary::Boundary;
use crate::model::crash::Crash;
use crate::run::artifacts::Artifacts;
use crate::scenario::{Action, Scenario};
use fake_tool::Entry;
use std::collections::BTreeMap;

impl Driver<'_> {
    /// The record of a run that got going, once its workload is done (`word`, the runtime's last)
    /// or `aborted` says why it stopped early. The driver keeps the rest of its state, to be
    /// dropped with it.
    pub(super) async fn record(
        &mut self,
        artifacts: Artifacts,
        probe: bool,
        aborted: Option<Abort>,
        mut unsettled: Vec<(String, String)>,
        word: Option<LastWord>,
    ) -> Run {
        let LastWord { reports, metrics } = word.unwrap_or_default();
        // What an unsettled operation was last seen as: the latest answer read, the final read's
        // included, not the one it had when its deadline passed.
        for (id, seen) in &mut unsettled {
            *seen = self.seen(id);
        }
        // Before anything is held against the runtime: was the harness's own ground intact?
        let harness_failure = intact(&artifacts).err();
        // A service's window still open ends with the run, marked so, before anything is stopped.
        self.close_windows();
        self.incarnation.kill().await;
        // The worker is dead: now its services, whose own exit may be why the run stopped.
        let aborted = self.stop_services(aborted).await;
        let incarnations = self.incarnation.number;
        let ledger = self.world.entries();
        let hits = provider_saw(self.scenario, self.hits.clone(), &ledger);
        let tracer_reaches = self.traced.is_some() && !probe && aborted.is_none();
        let hits = super::arming::out_of_tracer_reach(self.scenario, hits, tracer_reaches);
        let (syscall_points, syscall_hits) = match &self.traced {
            Some(traced) => (traced.points(), traced.hits()),
            None => (Vec::new(), Vec::new()),
        };
        Run {
            ledger,
            timeline: std::mem::take(&mut self.timeline),
            reports,
            unsettled,
            probe,
            crash: self.crash,
            hits,
            killed: std::mem::take(&mut self.killed),
            aborted,
            harness_failure,
            incarnations,
            restarts: std::mem::take(&mut self.restarts),
            recoveries: std::mem::take(&mut self.recoveries),
            fingerprints: std::mem::take(&mut self.fingerprints),
            syscall_points,
            syscall_hits,
            after_kill: self.after_kill.take(),
            service_hits: std::mem::take(&mut self.service_hits),
            metrics,
            artifacts,
        }
    }
}

/// Provider faults without a kill count as reached when the provider saw their call.
fn provider_saw(scenario: &Scenario, mut hits: Vec<Hit>, ledger: &[Entry]) -> Vec<Hit> {
    for (i, fault) in scenario.faults.iter().enumerate() {
        if fault.at == Boundary::AfterDispatch
            && fault.action != Action::Kill
            && ledger.iter().any(|e| {
                matches!(&e.event, fake_tool::Event::ProviderCall { operation: Some(op), call, .. }
                    if *op == fault.operation && *call == fault.occurrence)
            })
        {
            hits[i] = Hit::Exact;
        }
    }
    hits
}

/// The record of a run whose first incarnation did not start (`aborted` says why).
pub(super) fn unstarted(
    scenario: &Scenario,
    crash: Crash,
    timeline: Vec<Mark>,
    aborted: Abort,
    artifacts: Artifacts,
) -> Run {
    Run {
        crash,
        ledger: Vec::new(),
        timeline,
        reports: BTreeMap::new(),
        unsettled: Vec::new(),
        probe: false,
        hits: vec![Hit::NotReached; scenario.faults.len()],
        killed: vec![None; scenario.faults.len()],
        harness_failure: intact(&artifacts).err(),
        aborted: Some(aborted),
        incarnations: 1,
        restarts: Vec::new(),
        recoveries: Vec::new(),
        fingerprints: Vec::new(),
        syscall_points: Vec::new(),
        syscall_hits: vec![false; scenario.syscall_faults.len()],
        after_kill: None,
        service_hits: vec![false; scenario.service_faults.len()],
        metrics: None,
        artifacts,
    }
}

/// Whether the run directory the harness made is still there and usable: a data dir or log
/// directory removed under the harness is the harness's failure, not the runtime's.
fn intact(artifacts: &Artifacts) -> Result<(), String> {
    let root = artifacts.path();
    for dir in [root.to_owned(), root.join("data"), root.join("logs")] {
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(format!("the harness's run directory {} is no longer a directory", dir.display())),
            Err(e) => {
                return Err(format!(
                    "the harness's run directory {} vanished or became unusable during the run ({e}); the runtime is not judged on an incomplete record",
                    dir.display()
                ));
            }
        }
    }
    Ok(())
}
