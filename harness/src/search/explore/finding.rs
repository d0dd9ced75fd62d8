//! One case run and judged: a finding, and how it ended.

use super::case::{Case, Workload};
use crate::judge::{Status, Verdict};
use crate::run::driver::{Run, RunOptions};
use crate::run::incarnation::Target;
use crate::scenario::Scenario;

/// One case that ran, and how it ended.
#[derive(Debug)]
pub struct Finding {
    pub case: Case,
    pub scenario: Scenario,
    pub verdict: Verdict,
    /// Kept for a failing case: its data dir and logs.
    pub artifacts: Option<std::path::PathBuf>,
    pub story: Option<String>,
    /// Every kill and crash point the case added was reached. A case whose only complaint is a
    /// kept world fault left unspoilt (a lookup fault with no unknown outcome left to look up)
    /// still tested its own kill and the recovery after it: it passed, it is not "not reached".
    pub own_faults_reached: bool,
    /// It ran from a crash state built in the record run (only the recovery), not re-run.
    pub built: bool,
    /// How long the case took, from its start (or its built state's) to its verdict.
    pub took: std::time::Duration,
}

/// How one explored case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseStatus {
    Pass,
    Partial,
    /// The only complaint is that the case's own kill (or crash point) was not reached.
    NotReached,
    Fail,
}

impl Finding {
    pub fn status(&self) -> CaseStatus {
        match case_status(&self.verdict) {
            CaseStatus::NotReached if self.own_faults_reached => CaseStatus::Pass,
            status => status,
        }
    }

    pub(super) fn clone_without_run(&self) -> Finding {
        Finding {
            case: self.case.clone(),
            scenario: self.scenario.clone(),
            verdict: self.verdict.clone(),
            artifacts: self.artifacts.clone(),
            story: self.story.clone(),
            own_faults_reached: self.own_faults_reached,
            built: self.built,
            took: self.took,
        }
    }
}

pub(super) fn case_status(verdict: &Verdict) -> CaseStatus {
    match verdict.status() {
        Status::Pass => CaseStatus::Pass,
        Status::Partial => CaseStatus::Partial,
        // The case's crash point does not recur in this run (a concurrent workload's threads met
        // in another order than in the record run): not reached, as a kill the run never passed.
        Status::Error if !verdict.unreachable.is_empty() && verdict.violations.is_empty() => CaseStatus::NotReached,
        Status::Error => CaseStatus::Fail,
        Status::Fail
            if verdict.violations.iter().all(|v| v.invariant == crate::model::invariant::Invariant::FaultsReached) =>
        {
            CaseStatus::NotReached
        }
        Status::Fail => CaseStatus::Fail,
    }
}

/// Runs one case; the run is returned for depth 2.
pub fn run_case(
    workload: &Workload,
    case: &Case,
    target: &Target,
    options: &RunOptions,
) -> std::io::Result<(Finding, Run)> {
    let scenario = case.scenario(workload);
    let (verdict, run) = crate::judge::run_scenario(&scenario, target, options)?;
    Ok(finding_of(workload, case, scenario, verdict, run))
}

/// The finding of `case`, run (from the start or from a built state) as `scenario`.
pub(super) fn finding_of(
    workload: &Workload,
    case: &Case,
    scenario: Scenario,
    verdict: Verdict,
    run: Run,
) -> (Finding, Run) {
    let failed = case_status(&verdict) == CaseStatus::Fail;
    let story = failed.then(|| crate::report::story::story(&scenario, &verdict, &run));
    let own_faults_reached = own_faults_reached(workload, &run);
    let built = false;
    let took = std::time::Duration::ZERO;
    (Finding { case: case.clone(), scenario, verdict, artifacts: None, story, own_faults_reached, built, took }, run)
}

/// Whether the run reached every fault the case added to the workload: its kills follow the
/// workload's kept faults in the scenario, and every `[[syscall_fault]]` is the case's.
fn own_faults_reached(workload: &Workload, run: &Run) -> bool {
    let kept = workload.base.faults.len();
    run.hits.iter().skip(kept).all(|hit| *hit != crate::run::driver::Hit::NotReached)
        && run.syscall_hits.iter().all(|hit| *hit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::Violation;
    use crate::judge::rules::breach::breach;

    fn verdict(unreachable: Vec<usize>, violations: Vec<Violation>) -> Verdict {
        Verdict {
            scenario: "concurrent_wave.syscall.after_result_write.charge.1.sync.2.before".into(),
            probe: false,
            crash: crate::model::crash::Crash::Machine,
            violations,
            exercises: Vec::new(),
            coverage: Vec::new(),
            error: (!unreachable.is_empty()).then(|| "[[syscall_fault]] 1 cannot be reached in this run".into()),
            unreachable,
            reasked: Vec::new(),
            restore_risks: Vec::new(),
            needs_probe_services: Vec::new(),
        }
    }

    /// A re-run whose threads met in another order than the record run's need not pass the
    /// case's crash point: not reached, like a kill never passed — not a failure with nothing
    /// violated (CI saw `concurrent_wave` re-runs "fail" so, and disagree with their built states).
    #[test]
    fn a_crash_point_the_run_could_not_have_is_not_reached_unless_something_else_broke() {
        assert_eq!(case_status(&verdict(vec![0], Vec::new())), CaseStatus::NotReached);
        let twice = Violation::new(breach!(AtMostOnce, "§5-1"), Some("charge".into()), "twice".into(), Vec::new());
        assert_eq!(case_status(&verdict(vec![0], vec![twice])), CaseStatus::Fail);
        assert_eq!(case_status(&verdict(Vec::new(), Vec::new())), CaseStatus::Pass);
    }
}
