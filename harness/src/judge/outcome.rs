//! Settling and outcomes: every operation settles within its deadline (from its submission or the
//! last restart's ready line, extended by that start-up), and ends as its scenario expects.

use super::ledger::Found;
use super::verdict::Violation;
use crate::model::invariant::Invariant;
use crate::run::client::{ExecutionState, OperationReport};
use crate::run::driver::{Hit, Run};
use crate::scenario::{Operation, Outcome, Scenario};

/// `settled`: a run that stopped early, and each operation that did not settle by the deadline.
pub(super) fn settled(scenario: &Scenario, run: &Run, violations: &mut Vec<Violation>) {
    if let Some(reason) = &run.aborted {
        violations.push(Violation {
            invariant: Invariant::Settled,
            operation: None,
            message: format!("the run stopped early: {reason}"),
            evidence: Vec::new(),
        });
    }
    for (id, last_seen) in &run.unsettled {
        violations.push(Violation {
            invariant: Invariant::Settled,
            operation: Some(id.clone()),
            message: format!(
                "`{id}` did not settle within {:?} of its submission or the last restart's ready line (extended by that start-up's length); last seen: {last_seen}",
                scenario.deadline
            ),
            evidence: Vec::new(),
        });
    }
}

/// An expectation assumes every fault of the operation landed where the file says. One that needs
/// the probe (absent) or landed only approximately leaves the right outcome open: the invariants
/// still hold it to account, the expectation cannot.
pub(super) fn expectation_uncertain(scenario: &Scenario, run: &Run, op: &Operation) -> bool {
    scenario
        .faults
        .iter()
        .zip(&run.hits)
        .any(|(f, hit)| f.operation == op.id && matches!(hit, Hit::NeedsProbe | Hit::Approximate))
}

pub(super) fn expected_outcome(op: &Operation, report: Option<&OperationReport>, found: &mut Found) {
    let Some(report) = report else { return };
    let actual = match (report.execution, &report.failure) {
        (ExecutionState::Succeeded, _) => Some(Outcome::Succeeded),
        (ExecutionState::Failed, Some(f)) if f.reason.starts_with("policy:") => Some(Outcome::Refused),
        (ExecutionState::Failed, _) => Some(Outcome::Failed),
        (ExecutionState::Unknown, _) if report.paused => Some(Outcome::Paused),
        _ => None,
    };
    // Giving up is judged by kind: only a kind with lookup can know that nothing happened.
    let gave_up = if op.tool.supports_lookup() { Outcome::Failed } else { Outcome::Paused };
    let as_expected = match op.expect {
        Outcome::SucceededOrGaveUp => actual == Some(Outcome::Succeeded) || actual == Some(gave_up),
        Outcome::SucceededOrPaused => actual == Some(Outcome::Succeeded) || actual == Some(Outcome::Paused),
        expect => actual == Some(expect),
    };
    if !as_expected {
        let meaning = match op.expect {
            Outcome::SucceededOrGaveUp => format!(
                " (SUCCEEDED, or {} at the attempt bound: {} {})",
                if gave_up == Outcome::Failed { "FAILED" } else { "paused" },
                op.tool.tool_name(),
                if op.tool.supports_lookup() { "has a lookup" } else { "has no lookup" }
            ),
            Outcome::SucceededOrPaused => {
                " (SUCCEEDED, or paused if a kill beside it may have cut its request off)".to_owned()
            }
            _ => String::new(),
        };
        found(
            Invariant::ExpectedOutcome,
            format!("`{}` was expected to end {}{meaning}, but ended {}", op.id, op.expect, report.summary()),
            Vec::new(),
        );
    }
}
