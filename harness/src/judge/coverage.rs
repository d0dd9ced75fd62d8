//! Fault coverage: how each fault of the scenario was exercised, and `faults_reached` — a fault
//! the run never reached left its boundary unexercised, so it is not passed.

use super::ledger::{OperationLedger, evidence};
use super::rules::breach::breach;
use super::verdict::{Coverage, Violation};
use crate::model::boundary::Boundary;
use crate::model::invariant::Invariant;
use crate::run::client::ExecutionState;
use crate::run::driver::{Abort, Hit, Run};
use crate::scenario::{Fault, Outcome, Scenario, ServiceFaultAction};
use fake_tool::{Effect, Entry, Event, PolicyAnswer, Subject};

/// One entry per fault of the scenario, in file order, at the boundary it was really killed at.
pub(super) fn coverage(scenario: &Scenario, run: &Run) -> Vec<Coverage> {
    scenario
        .faults
        .iter()
        .zip(&run.hits)
        .map(|(f, hit)| {
            let (boundary, hit) = landed(scenario, run, f, *hit);
            Coverage {
                boundary,
                operation: f.operation.clone(),
                tool_kind: scenario
                    .operation(&f.operation)
                    .expect("faults name operations of their scenario (checked when read)")
                    .tool,
                hit,
                violations: Vec::new(),
            }
        })
        .collect()
}

/// Where a kill the tracer took for a commit at a sync (`Hit::Approximate` at `after_result_write`
/// or `after_policy_revocation`) really landed, from what the runtime did next. A runtime that had
/// not committed asks the world again for the operation — calls or looks up the provider, checks
/// the policy again — or pauses a tool with no lookup (only an unrecorded result leaves it
/// unknown). The kill then came before the commit: a result write's is reported at
/// `after_provider_success` (what the case tested, and where a duplicate it finds began), a
/// refusal's stays approximate. A runtime that acts as committed was killed at its commit: exact.
fn landed(scenario: &Scenario, run: &Run, fault: &Fault, hit: Hit) -> (Boundary, Hit) {
    let commit = matches!(fault.at, Boundary::AfterResultWrite | Boundary::AfterPolicyRevocation);
    if hit != Hit::Approximate || !commit {
        return (fault.at, hit);
    }
    let asked_again = if fault.at == Boundary::AfterResultWrite {
        let ledger = OperationLedger::of(&run.ledger, &fault.operation);
        let effect = ledger.calls.iter().position(|e| {
            matches!(&e.event, Event::ProviderCall { effect: Effect::Applied(_) | Effect::Replayed(_), .. })
        });
        let after = effect.and_then(|i| ledger.calls.get(i)).map(|e| e.seq);
        let later = |e: &&Entry| after.is_some_and(|seq| e.seq > seq);
        let paused = run.reports.get(&fault.operation).is_some_and(|r| r.paused);
        let no_lookup = scenario.operation(&fault.operation).is_some_and(|op| !op.tool.supports_lookup());
        ledger.calls.iter().chain(&ledger.lookups).any(later) || (paused && no_lookup)
    } else {
        let checks: Vec<&Entry> = run
            .ledger
            .iter()
            .filter(|e| {
                matches!(&e.event, Event::PolicyCheck { operation: Some(op), subject: Subject::Tool(_), .. }
                    if *op == fault.operation)
            })
            .collect();
        let refused = |e: &&&Entry| matches!(&e.event, Event::PolicyCheck { answer: PolicyAnswer::Refused, .. });
        let refusal = checks.iter().filter(refused).nth(fault.occurrence.saturating_sub(1) as usize);
        refusal.is_some_and(|r| checks.iter().any(|e| e.seq > r.seq))
    };
    match (asked_again, fault.at) {
        (true, Boundary::AfterResultWrite) => (Boundary::AfterProviderSuccess, Hit::Approximate),
        (true, _) => (fault.at, Hit::Approximate),
        (false, _) => (fault.at, Hit::AtSyscall),
    }
}

/// `faults_reached` for the faults at boundaries: each one the run never reached is a violation,
/// unless the runtime gave up before the call it names.
pub(super) fn faults_reached(scenario: &Scenario, run: &Run, violations: &mut Vec<Violation>) {
    // After a run that stopped early, every fault not yet reached is a knock-on of that one
    // cause: one line says so, the faults are its evidence.
    let mut knock_on = Vec::new();
    for (i, (f, hit)) in scenario.faults.iter().zip(&run.hits).enumerate() {
        if *hit != Hit::NotReached || gave_up_before(scenario, f, run) || super::restore::renumbered(run, f) {
            continue;
        }
        let destination = f.destination.as_deref().map(|d| format!(" -> {d}")).unwrap_or_default();
        let attempt = f.attempt.map(|a| format!(", attempt {a}")).unwrap_or_default();
        if run.aborted.is_some() {
            knock_on.push(format!(
                "fault {} (`{}` of `{}`{destination}, occurrence {}{attempt})",
                i + 1,
                f.at,
                f.operation,
                f.occurrence
            ));
            continue;
        }
        violations.push(Violation::new(
            breach!(FaultsReached),
            Some(f.operation.clone()),
            format!(
                "fault {} (`{}` of `{}`{destination}, occurrence {}{attempt}) was never reached, so this boundary was not exercised",
                i + 1,
                f.at,
                f.operation,
                f.occurrence
            ),
            Vec::new(),
        ));
    }
    if !knock_on.is_empty() {
        // The one cause, under the invariant it is reported as.
        let cause = match &run.aborted {
            Some(Abort::NotReady(_)) => Invariant::Ready,
            _ => Invariant::Settled,
        };
        violations.push(Violation::new(
            breach!(FaultsReached),
            None,
            format!(
                "{} fault(s) never reached because the run stopped early (see `{cause}`), so their boundaries were not exercised",
                knock_on.len()
            ),
            knock_on,
        ));
    }
}

/// A provider fault on a call the runtime never made because it gave up first, as an operation
/// expected `succeeded_or_gave_up` may: a runtime's attempt bound is its own choice (CONTRACT.md
/// §4 step 11), so a lower one than the scenario's faults assume leaves them unreached
/// without any fault of the runtime's.
fn gave_up_before(scenario: &Scenario, fault: &Fault, run: &Run) -> bool {
    let Some(op) = scenario.operation(&fault.operation) else { return false };
    let calls = OperationLedger::of(&run.ledger, &op.id).calls.len();
    let gave_up = run.reports.get(&op.id).is_some_and(|r| {
        (r.execution == ExecutionState::Failed && r.failure.as_ref().is_some_and(|f| !f.reason.starts_with("policy:")))
            || (r.execution == ExecutionState::Unknown && r.paused)
    });
    fault.at == Boundary::AfterDispatch
        && fault.action != crate::scenario::Action::Kill
        && op.expect == Outcome::SucceededOrGaveUp
        && gave_up
        && calls < fault.occurrence as usize
}

/// A `[[syscall_fault]]` whose point the runtime never passed: that crash point was not exercised.
pub(super) fn syscall_faults_reached(scenario: &Scenario, run: &Run, skip: &[usize], violations: &mut Vec<Violation>) {
    for (i, fault) in scenario.syscall_faults.iter().enumerate() {
        if run.syscall_hits.get(i) != Some(&true) && !skip.contains(&i) {
            violations.push(Violation::new(
                breach!(FaultsReached),
                None,
                format!(
                    "syscall fault {} ({}) was never reached, so that crash point was not exercised",
                    i + 1,
                    fault.describe()
                ),
                Vec::new(),
            ));
        }
    }
}

/// A `[[service_fault]]` that never fired: the run never took that server down (froze it, cut the
/// worker off it) there, so what the fault asks of the runtime was not exercised. One at a
/// boundary only the probe announces, in a run without the probe, is no violation: returned, so
/// the scenario passes only in part, as a worker's fault there does.
pub(super) fn service_faults_reached(scenario: &Scenario, run: &Run, violations: &mut Vec<Violation>) -> Vec<usize> {
    let mut needs_probe = Vec::new();
    for (i, fault) in scenario.service_faults.iter().enumerate() {
        if run.service_hits.get(i) == Some(&true) {
            continue;
        }
        if !run.probe && fault.at != Boundary::AfterDispatch {
            needs_probe.push(i);
            continue;
        }
        let what = match fault.action {
            ServiceFaultAction::Kill | ServiceFaultAction::Restart => "a restart of that service",
            ServiceFaultAction::Freeze => "a freeze of that service",
            ServiceFaultAction::Unreachable => "a window with that service unreachable",
        };
        violations.push(Violation::new(
            breach!(FaultsReached),
            Some(fault.operation.clone()),
            format!(
                "service fault {} ({}) never fired, so {what} under the live worker was not exercised",
                i + 1,
                fault.describe()
            ),
            Vec::new(),
        ));
    }
    needs_probe
}

/// Lookup and policy faults count as reached only when the fake world spoilt as many answers as
/// the file says (a dead policy service: at least one). A runtime that stopped asking before then
/// — e.g. one that took a failed lookup for "not found" and retried — left the fault, and the
/// rule it tests, unexercised.
pub(super) fn world_faults_reached(scenario: &Scenario, run: &Run, violations: &mut Vec<Violation>) {
    for fault in &scenario.model_faults {
        let asked =
            |e: &&Entry| matches!(&e.event, Event::ModelCall { operation: Some(o), .. } if *o == fault.operation);
        let spoilt = run
            .ledger
            .iter()
            .filter(asked)
            .filter(|e| {
                matches!(&e.event, Event::ModelCall { answer: fake_tool::ModelAnswer::Injected { .. }, .. })
                    || matches!(&e.event, Event::ModelCall { late_ms: Some(_), .. })
            })
            .count();
        if spoilt < fault.times as usize {
            violations.push(Violation::new(
                breach!(FaultsReached),
                Some(fault.operation.clone()),
                format!(
                    "the model fault on `{}` was to spoil {} answer(s), but the runtime asked only {spoilt} time(s) while it was armed: the rule it tests (an answer that is not a decision is acted on by nothing) was not exercised",
                    fault.operation, fault.times
                ),
                evidence(run.ledger.iter().filter(asked)),
            ));
        }
    }
    for fault in &scenario.lookup_faults {
        let spoilt = run
            .ledger
            .iter()
            .filter(|e| {
                matches!(&e.event, Event::ProviderLookup { operation: Some(o), injected: Some(_), .. } if *o == fault.operation)
            })
            .count();
        if spoilt < fault.times as usize {
            violations.push(Violation::new(
                breach!(FaultsReached),
                Some(fault.operation.clone()),
                format!(
                    "the lookup fault on `{}` was to spoil {} lookup(s), but the runtime made only {spoilt} while it was armed: the rule it tests (a lookup that does not answer is no answer) was not exercised",
                    fault.operation, fault.times
                ),
                evidence(run.ledger.iter().filter(|e| {
                    matches!(&e.event, Event::ProviderLookup { operation: Some(o), .. } if *o == fault.operation)
                })),
            ));
        }
    }
    for fault in &scenario.policy_faults {
        let matches = |e: &&Entry| match &e.event {
            Event::PolicyCheck { operation, subject, injected: Some(_), .. } => {
                fault.operation.as_ref().is_none_or(|o| operation.as_ref() == Some(o))
                    && fault.subject.is_none_or(|s| s.matches(subject))
            }
            _ => false,
        };
        let spoilt = run.ledger.iter().filter(matches).count();
        let wanted = fault.times.unwrap_or(1) as usize;
        if spoilt < wanted {
            let whose = fault.operation.as_deref().map(|o| format!(" for `{o}`")).unwrap_or_default();
            violations.push(Violation::new(
                breach!(FaultsReached),
                fault.operation.clone(),
                format!(
                    "the policy fault{whose} was to spoil {wanted} check(s), but only {spoilt} were asked while it was armed: the rule it tests (no decision is no permission) was not exercised"
                ),
                Vec::new(),
            ));
        }
    }
}
