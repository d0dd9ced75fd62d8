//! Which violations each fault can have caused: what the matrix's cell for the fault, and its
//! JUnit case, are judged by.
//!
//! A cell shows the verdict of the faults at that cell, not of every scenario that has a fault
//! there: a delivery key that changes on a consumer's retries is not the fault of a kill before
//! the provider was called. A fault happens at a moment of the run's clock (the ledger's `seq`):
//! a kill at its mark, a provider fault at the call it spoils. It can only have caused a
//! violation whose ledger lines it came between — one line at or before it, one after (a second
//! call after a restart, a delivery sent again). A violation of the whole run, one of the
//! fault's operation with fewer than two ledger lines, and every violation of a fault whose
//! moment is not known (it did not fire, or a `freeze`), stay with the fault: the attribution
//! only takes a violation away from a cell where the ledger proves the fault did not come
//! between its lines.

use super::ledger::seq_of;
use super::verdict::{Coverage, Violation};
use crate::model::boundary::Boundary;
use crate::run::driver::Run;
use crate::scenario::{Action, Fault, Scenario};
use fake_tool::Event;

/// Fills each fault's `violations` (indices into `violations`); `coverage` is in file order, as
/// the scenario's faults and `run.killed` are.
pub(super) fn attribute(scenario: &Scenario, coverage: &mut [Coverage], violations: &[Violation], run: &Run) {
    for (i, (fault, covered)) in scenario.faults.iter().zip(coverage.iter_mut()).enumerate() {
        let moment = run.killed.get(i).copied().flatten().or_else(|| spoiled_call(fault, run));
        covered.violations = violations
            .iter()
            .enumerate()
            .filter(|(_, v)| match &v.operation {
                None => true,
                Some(operation) => *operation == fault.operation && may_have_caused(moment, v),
            })
            .map(|(index, _)| index)
            .collect();
    }
}

/// The ledger `seq` of the provider call a fault that does not kill (`drop`, `fail`, a delay…)
/// spoils: the `occurrence`-th call of its operation.
fn spoiled_call(fault: &Fault, run: &Run) -> Option<u64> {
    if fault.at != Boundary::AfterDispatch || fault.action == Action::Kill {
        return None;
    }
    run.ledger.iter().find_map(|e| match &e.event {
        Event::ProviderCall { operation: Some(op), call, .. }
            if *op == fault.operation && *call == fault.occurrence =>
        {
            Some(e.seq)
        }
        _ => None,
    })
}

/// Whether a fault at `moment` can have caused `violation` of its operation.
fn may_have_caused(moment: Option<u64>, violation: &Violation) -> bool {
    let Some(moment) = moment else { return true };
    let lines: Vec<u64> = violation.evidence.iter().filter_map(|line| seq_of(line)).collect();
    let (Some(first), Some(last)) = (lines.iter().min(), lines.iter().max()) else { return true };
    lines.len() < 2 || (*first <= moment && moment < *last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::rules::breach::breach;

    fn violation(evidence: &[&str]) -> Violation {
        Violation::new(
            breach!(StableDeliveryKey, "§6-2"),
            Some("charge".into()),
            String::new(),
            evidence.iter().map(|e| e.to_string()).collect(),
        )
    }

    #[test]
    fn a_fault_causes_only_what_it_came_between() {
        // The fault came at seq 10.
        let across = violation(&["#6 provider call 1", "#15 provider call 2"]);
        let after = violation(&["#53 consumer ledger received", "#55 consumer ledger received"]);
        let before = violation(&["#3 consumer", "#4 consumer"]);
        let at_the_call = violation(&["#10 provider call 1 (dropped)", "#12 provider call 2"]);
        let one_line = violation(&["#53 consumer"]);
        let unplaced = violation(&["the runtime's report"]);
        assert!(may_have_caused(Some(10), &across), "a second call after the restart");
        assert!(may_have_caused(Some(10), &at_the_call), "the spoiled call itself, then another");
        assert!(!may_have_caused(Some(10), &after), "both sends after the fault");
        assert!(!may_have_caused(Some(10), &before), "both sends before the fault");
        assert!(may_have_caused(Some(10), &one_line), "one line cannot be placed either side");
        assert!(may_have_caused(Some(10), &unplaced), "no ledger line");
        assert!(may_have_caused(None, &after), "a fault whose moment is not known keeps everything");
    }
}
