//! Settling and outcomes: every operation settles within its deadline (from its submission or the
//! last restart's ready line, extended by that start-up), and ends as its scenario expects.

use super::in_flight::InFlight;
use super::ledger::{Found, OperationLedger};
use super::rules::breach::{Breach, breach};
use super::verdict::Violation;
use crate::model::boundary::Boundary;
use crate::run::client::{ExecutionState, OperationReport};
use crate::run::driver::{Abort, Hit, Run};
use crate::scenario::{Operation, Outcome, Scenario};
use fake_tool::{Event, Response, ToolKind};

/// `settled`: a run that stopped early (but for an incarnation that never became ready: that is
/// `ready`'s), and each operation that did not settle by the deadline.
pub(super) fn settled(scenario: &Scenario, run: &Run, violations: &mut Vec<Violation>) {
    if let Some(Abort::Stopped(reason)) = &run.aborted {
        violations.push(Violation::new(
            breach!(Settled, "§3-10"),
            None,
            format!("the run stopped early: {reason}"),
            Vec::new(),
        ));
    }
    let traced = match run.syscall_points.is_empty() {
        true => String::new(),
        false => format!(", and {}× under the tracer", crate::run::driver::deadline::TRACED_FACTOR),
    };
    for (id, last_seen) in &run.unsettled {
        violations.push(Violation::new(
            breach!(Settled, "§3-10"),
            Some(id.clone()),
            format!(
                "`{id}` did not settle within {:?} of its submission or the last restart's ready line (extended by that start-up's length{traced}); last seen: {last_seen}",
                scenario.deadline
            ),
            Vec::new(),
        ));
    }
}

/// What the operation may be held to. An expectation assumes every fault of the operation landed
/// where the file says. One that needs the probe (absent), or a kill seen from outside after the
/// provider's success (the runtime may have moved on), leaves the right outcome open: `None`, the
/// invariants still hold it to account, the expectation cannot. A kill the tracer took for a
/// commit at a sync may have come just before that commit (CONTRACT.md section 7, "Boundaries at
/// system calls"): the operation is held to what a kill just after the provider's answer allows,
/// the weaker expectation the harness can prove — a tool with no lookup may pause. So is one a
/// power loss took before the runtime synced its commit (`synced`).
pub(super) fn expectation(scenario: &Scenario, run: &Run, op: &Operation, in_flight: &InFlight) -> Option<Outcome> {
    // A kill just after the provider's rejection (a 4xx, nothing applied) may take the runtime's
    // only knowledge of it: its next incarnation rightly finds nothing, and attempts again, which
    // the provider may accept. Either ending is then correct; `truthful_status` still holds the
    // one it reports against the ledgers. (Found at system-call points: `provider_rejects` killed
    // at `answer.1.after` failed the reference on `expected_outcome`.)
    if op.expect == Outcome::Failed && in_flight.rejection_lost(&op.id) {
        return None;
    }
    // A restore may take the rejection with the backup just as well (CONTRACT.md §13).
    if op.expect == Outcome::Failed && super::restore::restored(run) {
        return None;
    }
    let mine = || scenario.faults.iter().zip(&run.hits).filter(|(f, _)| f.operation == op.id);
    let open =
        mine().any(|(f, hit)| *hit == Hit::NeedsProbe || (*hit == Hit::Approximate && !before_commit_possible(f.at)));
    if open {
        return None;
    }
    // A power loss that took a commit not yet synced (§7-6 asks the sync only before the first
    // delivery's send) leaves what a kill just before the commit leaves.
    let unsynced = scenario
        .faults
        .iter()
        .enumerate()
        .any(|(i, f)| f.operation == op.id && super::synced::commit_unsynced(run, i, f));
    // A restore may have outrun any operation of a kind without lookup: it pauses (§13-4).
    let outrun = super::restore::restored(run) && op.tool == ToolKind::NonIdempotentNoLookup;
    // Forgotten and taken for new, a safely repeatable one refused meanwhile ends FAILED: the
    // runtime cannot know its first attempt (CONTRACT.md section 13, "What cannot be owed").
    // And one outrun by a restore is paused by a refusal, which another would fail (§4-3).
    if super::restore::restored(run)
        && op.tool == ToolKind::SafelyRepeatable
        && matches!(op.expect, Outcome::Paused | Outcome::Refused)
    {
        return None;
    }
    let weaker = unsynced || outrun || mine().any(|(f, hit)| *hit == Hit::Approximate && before_commit_possible(f.at));
    Some(match op.expect {
        // Forgotten by a restore and submitted again, a kind without lookup may run again (CONTRACT.md section 13, "What cannot be owed").
        Outcome::Paused if outrun => Outcome::SucceededOrPaused,
        // Held by the backup as maybe attempted, it is paused before the policy is asked (§13-4).
        Outcome::Refused if outrun => Outcome::RefusedOrPaused,
        Outcome::Succeeded if weaker && !op.tool.supports_lookup() => Outcome::SucceededOrPaused,
        expect => expect,
    })
}

/// The rule an operation that did not end as `expect` breaks: the one that says how such an
/// operation ends. A refusal ends it FAILED by policy (§4-2), a 4xx FAILED (§4-7); an outcome
/// nobody can know pauses a repeatable tool refused meanwhile (§4-3) and a tool without lookup
/// (§4-13); the attempt bound gives up only as §4-15 says; and an operation the provider can
/// complete ends SUCCEEDED once reconciled (§4-11).
///
/// A `failed` expectation rests on the provider's 4xx: where none came (a fault keyed on the
/// planted identity the runtime stripped), the operation breaks no rule of its own by ending
/// otherwise, and the violations that say why name theirs.
fn unexpected(expect: Outcome, tool: ToolKind, ledger: &OperationLedger) -> Breach {
    let refused = ledger.calls.iter().any(|c| {
        matches!(&c.event, Event::ProviderCall { response: Response::Sent(status), .. } if (400..500).contains(status))
    });
    // Every call stripped of the planted identity: no fault keyed on it could fire, so the kill
    // the expectation rests on never came; the violations that say why name their rules (§3-1).
    let anonymous = !ledger.calls.is_empty()
        && ledger.calls.iter().all(|c| matches!(&c.event, Event::ProviderCall { operation: None, .. }));
    if anonymous {
        return breach!(ExpectedOutcome);
    }
    match expect {
        // A 409 for a key reused with other arguments is no refusal of the operation (§12-4).
        Outcome::Succeeded if super::status::ended_on_reused_key(ledger) => breach!(ExpectedOutcome, "§12-4"),
        Outcome::Refused | Outcome::RefusedOrPaused => breach!(ExpectedOutcome, "§4-2"),
        Outcome::Failed if refused => breach!(ExpectedOutcome, "§4-7"),
        Outcome::Failed => breach!(ExpectedOutcome),
        Outcome::Paused if tool == ToolKind::SafelyRepeatable => breach!(ExpectedOutcome, "§4-3"),
        Outcome::Paused => breach!(ExpectedOutcome, "§4-13"),
        Outcome::SucceededOrGaveUp => breach!(ExpectedOutcome, "§4-15"),
        Outcome::Succeeded | Outcome::SucceededOrPaused => breach!(ExpectedOutcome, "§4-11"),
    }
}

/// The boundaries the tracer reaches at a sync it takes for their commit.
fn before_commit_possible(at: Boundary) -> bool {
    matches!(at, Boundary::AfterResultWrite | Boundary::AfterPolicyRevocation)
}

pub(super) fn expected_outcome(
    op: &Operation,
    expect: Outcome,
    ledger: &OperationLedger,
    report: Option<&OperationReport>,
    found: &mut Found,
) {
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
    let as_expected = match expect {
        Outcome::SucceededOrGaveUp => actual == Some(Outcome::Succeeded) || actual == Some(gave_up),
        Outcome::SucceededOrPaused => actual == Some(Outcome::Succeeded) || actual == Some(Outcome::Paused),
        Outcome::RefusedOrPaused => actual == Some(Outcome::Refused) || actual == Some(Outcome::Paused),
        expect => actual == Some(expect),
    };
    if !as_expected {
        let meaning = match expect {
            Outcome::SucceededOrGaveUp => format!(
                " (SUCCEEDED, or {} at the attempt bound: {} {})",
                if gave_up == Outcome::Failed { "FAILED" } else { "paused" },
                op.tool.tool_name(),
                if op.tool.supports_lookup() { "has a lookup" } else { "has no lookup" }
            ),
            Outcome::SucceededOrPaused if op.expect == Outcome::Succeeded => {
                " (SUCCEEDED, or paused if the kill came before its result was committed)".to_owned()
            }
            Outcome::SucceededOrPaused => {
                " (SUCCEEDED, or paused if a kill beside it may have cut its request off)".to_owned()
            }
            Outcome::RefusedOrPaused => {
                " (FAILED by policy, or paused: a restore's backup may hold it as attempted, §13-4)".to_owned()
            }
            _ => String::new(),
        };
        found(
            unexpected(expect, op.tool, ledger),
            format!("`{}` was expected to end {expect}{meaning}, but ended {}", op.id, report.summary()),
            Vec::new(),
        );
    }
}
