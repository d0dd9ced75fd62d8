//! What a restore (`--crash restore`) changes in the judging (CONTRACT.md section 13): what no
//! runtime can be owed once its state went back in time while the world's did not — counts of
//! what the lost host did, and an operation of a kind without lookup that the backup forgot and a
//! client submitted again — is reported as a risk of the tool kind, not as a violation. Every
//! other invariant holds in full: a repeated effect a lookup would have prevented, a second key,
//! a send a revocation forbade, are violations.

use super::verdict::{RestoreRisk, Violation};
use crate::model::crash::Crash;
use crate::model::invariant::Invariant;
use crate::run::driver::{Happening, Run};
use crate::scenario::{Operation, Scenario};
use fake_tool::ToolKind;

/// Whether the run's kills were restores.
pub(super) fn restored(run: &Run) -> bool {
    run.crash == Crash::Restore
}

/// The rule of section 13 a violation of each invariant breaks in a restore run: a second key
/// is one drawn, not derived (§13-1); an effect or attempt again is one not reconciled first
/// (§13-3); an outcome otherwise, a kind without lookup not paused (§13-4); a send or attempt
/// the policy did not allow, a decision the backup held (§13-5).
const NAMED: [(Invariant, &str); 9] = [
    (Invariant::StableProviderKey, "§13-1"),
    (Invariant::StableDeliveryKey, "§13-1"),
    (Invariant::DeliveredOnce, "§13-1"),
    (Invariant::AtMostOnce, "§13-3"),
    (Invariant::NoBlindRetry, "§13-3"),
    (Invariant::NoExecutionForDelivery, "§13-3"),
    (Invariant::ExpectedOutcome, "§13-4"),
    (Invariant::PolicyChecked, "§13-5"),
    (Invariant::PolicyRespected, "§13-5"),
];

/// In a restore run, a violation also breaks the rule of section 13 its invariant speaks for
/// ([`NAMED`]): the restore is what the runtime failed. An outcome otherwise speaks for §13-4 only
/// for a kind without lookup, the one that rule is about.
pub(super) fn name(scenario: &Scenario, run: &Run, violations: &mut [Violation]) {
    if !restored(run) {
        return;
    }
    let no_lookup = |op: Option<&str>| {
        op.and_then(|id| scenario.operation(id)).is_some_and(|op| op.tool == ToolKind::NonIdempotentNoLookup)
    };
    for violation in violations {
        let Some((_, rule)) = NAMED.iter().find(|(i, _)| *i == violation.invariant) else { continue };
        if violation.invariant != Invariant::ExpectedOutcome || no_lookup(violation.operation.as_deref()) {
            violation.also_breaks(rule);
        }
    }
}

/// Whether a fault narrowed to an `attempt` may go unreached for want of its number: after a
/// restore the runtime numbers attempts from its backup's count, behind the world's (CONTRACT.md section 13, "What cannot be owed").
pub(super) fn renumbered(run: &Run, fault: &crate::scenario::Fault) -> bool {
    restored(run) && fault.attempt.is_some()
}

/// Whether a restore's backup forgot `op` and a client submitted it again.
fn resubmitted(run: &Run, op: &str) -> bool {
    run.timeline
        .iter()
        .any(|m| matches!(&m.happening, Happening::ResubmittedAfterRestore { operation, .. } if operation == op))
}

/// Whether `op` may be executed again without a violation (CONTRACT.md section 13, "What cannot
/// be owed"): a kind without lookup that a restore forgot, which the runtime that takes it back
/// cannot tell from a new operation; or a safely repeatable one, whose success a backup may
/// predate with no lookup to find it (repeating it is harmless, §5-1).
fn excused(run: &Run, op: &Operation) -> bool {
    restored(run)
        && match op.tool {
            ToolKind::NonIdempotentNoLookup => resubmitted(run, &op.id),
            ToolKind::SafelyRepeatable => true,
            ToolKind::IdempotentByKey | ToolKind::NonIdempotentWithLookup => false,
        }
}

/// The invariants an excused operation's execution again breaks: none is held against the
/// runtime (the risk is reported instead). Every other invariant still holds it.
const FORGIVEN: [Invariant; 4] =
    [Invariant::AtMostOnce, Invariant::NoBlindRetry, Invariant::NoExecutionForDelivery, Invariant::OneDecision];

/// Drops the violations of [`FORGIVEN`] invariants by operations a restore excused.
pub(super) fn forgive(scenario: &Scenario, run: &Run, violations: &mut Vec<Violation>) {
    let excused: Vec<&str> =
        scenario.operations.iter().filter(|op| excused(run, op)).map(|op| op.id.as_str()).collect();
    violations.retain(|v| {
        !(FORGIVEN.contains(&v.invariant) && v.operation.as_deref().is_some_and(|op| excused.contains(&op)))
    });
}

/// The risks a restore showed: one per operation of a kind without lookup it forgot (whether or
/// not the provider applied it twice), and per safely repeatable one it did repeat; each with
/// the effects the provider applied for it.
pub(super) fn risks(scenario: &Scenario, run: &Run) -> Vec<RestoreRisk> {
    scenario
        .operations
        .iter()
        .filter(|op| excused(run, op))
        .map(|op| {
            let effects = super::ledger::OperationLedger::of(&run.ledger, &op.id).applied().len();
            RestoreRisk { operation: op.id.clone(), tool: op.tool.as_str().to_owned(), effects }
        })
        .filter(|risk| risk.effects > 1 || risk.tool != ToolKind::SafelyRepeatable.as_str())
        .collect()
}
