//! One operation's flow: where it is (the next boundary it reaches), where a blow there sends it
//! (the recovery the contract owes), and the walk of its fault genes into faults and the outcome a
//! correct runtime reaches.

use super::genes::{Blow, FaultGene, OperationGene, POINTS};
use crate::model::boundary::Boundary;
use crate::scenario::{Action, Fault, Outcome, Revoke};
use fake_tool::ToolKind;
use std::collections::BTreeMap;

/// How late a `delay` provider fault answers: far below any runtime's timeout.
const DELAY_MS: u64 = 30;

/// Where an operation is in its flow: the next boundary it reaches, or how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Submit,
    /// The next attempt; `unknown`: an earlier attempt's outcome is still unknown.
    Dispatch {
        unknown: bool,
    },
    Call,
    Success,
    Write,
    /// Deliveries still to be acknowledged, in the order the walk takes them.
    Deliver(Vec<String>),
    Ended(Outcome),
}

impl Phase {
    fn boundary(&self) -> Option<(Boundary, Option<String>)> {
        Some(match self {
            Phase::Submit => (Boundary::AfterSubmit, None),
            Phase::Dispatch { .. } => (Boundary::BeforeDispatch, None),
            Phase::Call => (Boundary::AfterDispatch, None),
            Phase::Success => (Boundary::AfterProviderSuccess, None),
            Phase::Write => (Boundary::AfterResultWrite, None),
            Phase::Deliver(left) => (Boundary::AfterDeliverySend, Some(left[0].clone())),
            Phase::Ended(_) => return None,
        })
    }

    /// Where the operation goes when nothing happens here.
    fn passed(&self, destinations: &[String]) -> Phase {
        let delivering = |left: &[String]| {
            if left.is_empty() { Phase::Ended(Outcome::Succeeded) } else { Phase::Deliver(left.to_vec()) }
        };
        match self {
            Phase::Submit => Phase::Dispatch { unknown: false },
            Phase::Dispatch { .. } => Phase::Call,
            Phase::Call => Phase::Success,
            Phase::Success => Phase::Write,
            Phase::Write => delivering(destinations),
            Phase::Deliver(left) => delivering(&left[1..]),
            Phase::Ended(o) => Phase::Ended(*o),
        }
    }
}

/// Where an operation of `kind` goes after the blow at `phase` — the recovery the contract owes
/// (CONTRACT.md section 4), and so the outcome a correct runtime reaches. `revoked`: the tool was
/// withdrawn for the operation's tenant as the kill landed.
fn after_blow(kind: ToolKind, phase: &Phase, blow: Blow, revoked: bool, destinations: &[String]) -> Phase {
    // The outcome of the call is unknown (§4-8, §4-10): a lookup finds the effect (every drawn
    // call applies it); a tool without lookup is paused (§4-13); a repeatable one is attempted
    // again, which needs the policy: refused with the outcome unknown, it is paused (§4-3).
    let unknown = || match kind {
        ToolKind::IdempotentByKey | ToolKind::NonIdempotentWithLookup => Phase::Success,
        ToolKind::NonIdempotentNoLookup => Phase::Ended(Outcome::Paused),
        ToolKind::SafelyRepeatable if revoked => Phase::Ended(Outcome::Paused),
        ToolKind::SafelyRepeatable => Phase::Dispatch { unknown: true },
    };
    match phase {
        // The next attempt asks the policy again (§4-1): a revocation refuses it (§4-2), or
        // pauses it when an earlier attempt's outcome is unknown (§4-3).
        Phase::Submit | Phase::Dispatch { unknown: false } if revoked => Phase::Ended(Outcome::Refused),
        Phase::Dispatch { unknown: true } if revoked => Phase::Ended(Outcome::Paused),
        // Killed before the call: the attempt is made again, from the start.
        Phase::Submit => Phase::Dispatch { unknown: false },
        Phase::Dispatch { unknown } => Phase::Dispatch { unknown: *unknown },
        Phase::Call if blow == Blow::Delay => Phase::Success,
        Phase::Call | Phase::Success => unknown(),
        // The success and its outbox are written: only the deliveries are left (§4-6), and a
        // delivery killed after its send is sent again (§6).
        Phase::Write => phase.passed(destinations),
        Phase::Deliver(left) => Phase::Deliver(left.clone()),
        Phase::Ended(o) => Phase::Ended(*o),
    }
}

/// One operation's faults and the outcome they lead to.
#[derive(Debug, Default)]
pub(super) struct Plan {
    pub(super) faults: Vec<Fault>,
    pub(super) outcome: Option<Outcome>,
    /// A fault of this plan withdraws the operation's tool for its tenant.
    pub(super) revokes: bool,
}

impl Plan {
    pub(super) fn kills(&self) -> bool {
        self.faults.iter().any(|f| f.action == Action::Kill)
    }
}

/// Walks the flow of operation `id` through its fault genes (at most `budget` of them): each gene
/// picks one of the boundary occurrences still ahead and strikes there; the walk then goes on as
/// the runtime must. Returns the faults and the outcome a correct runtime reaches: the
/// expectation, derived from the schedule.
pub(super) fn plan(id: &str, gene: &OperationGene, budget: usize, probe: bool) -> Plan {
    let destinations: Vec<String> = gene.destinations.iter().map(|d| (*d).to_owned()).collect();
    let mut seen: BTreeMap<(Boundary, Option<String>), u32> = BTreeMap::new();
    let mut phase = Phase::Submit;
    let mut plan = Plan::default();
    for g in &gene.faults {
        if plan.faults.len() == budget {
            break;
        }
        // The boundary occurrences ahead, each with the phase it is reached in.
        let mut ahead = Vec::new();
        let mut p = phase.clone();
        while let Some(point) = p.boundary() {
            let next = p.passed(&destinations);
            // Without deliveries the operation is settled the instant its success is written, and
            // the harness may read it so before the runtime announces `after_result_write`: a kill
            // there would race the harness moving on (scenarios/README.md, the last note).
            let outside = matches!(point.0, Boundary::AfterSubmit | Boundary::AfterDispatch);
            if !(point.0 == Boundary::AfterResultWrite && destinations.is_empty()) && (probe || outside) {
                ahead.push((point, p));
            }
            p = next;
        }
        if ahead.is_empty() {
            break;
        }
        let pick = g.point % ahead.len();
        for (point, _) in &ahead[..pick] {
            *seen.entry(point.clone()).or_default() += 1;
        }
        let ((at, destination), at_phase) = ahead.swap_remove(pick);
        let occurrence = {
            let n = seen.entry((at, destination.clone())).or_default();
            *n += 1;
            *n
        };
        let action = match (at, g.blow) {
            (Boundary::AfterDispatch, Blow::Fail) => Action::Fail,
            (Boundary::AfterDispatch, Blow::Drop) => Action::Drop,
            (Boundary::AfterDispatch, Blow::Delay) => Action::Delay,
            _ => Action::Kill,
        };
        let revoke = g.revoke && action == Action::Kill && !plan.revokes;
        plan.revokes |= revoke;
        let blow = if action == Action::Kill { Blow::Kill } else { g.blow };
        phase = after_blow(gene.kind, &at_phase, blow, revoke, &destinations);
        plan.faults.push(Fault {
            at,
            operation: id.to_owned(),
            occurrence,
            attempt: None,
            destination,
            effect: true,
            action,
            delay_ms: if action == Action::Delay { DELAY_MS } else { 0 },
            status: (action == Action::Fail).then_some(503),
            revoke: if revoke { vec![Revoke::Tool] } else { Vec::new() },
        });
    }
    plan.outcome = Some(match phase {
        Phase::Ended(o) => o,
        _ => Outcome::Succeeded,
    });
    plan
}

/// The fault genes that walk operation `id` to exactly `faults`, in order: each gene the point
/// ahead where its fault lands once the faults before it have struck. `None` when a fault can no
/// longer be reached (it followed from one that is gone, as a second call follows a failed first).
/// What a shrink uses to drop a fault and keep the others where they were: a gene's point counts
/// from where the faults before it left the operation, so the same genes without one would land
/// elsewhere.
pub(super) fn genes_for(id: &str, gene: &OperationGene, faults: &[Fault], probe: bool) -> Option<Vec<FaultGene>> {
    let mut walked = OperationGene { faults: Vec::new(), ..gene.clone() };
    for (n, fault) in faults.iter().enumerate() {
        let blow = match fault.action {
            Action::Fail => Blow::Fail,
            Action::Drop => Blow::Drop,
            Action::Delay => Blow::Delay,
            // Nothing else is drawn: a kill gene that does not land on it says `None` below.
            _ => Blow::Kill,
        };
        let revoke = !fault.revoke.is_empty();
        let lands = |point: usize| {
            let mut tried = OperationGene { faults: walked.faults.clone(), ..gene.clone() };
            tried.faults.push(FaultGene { point, blow, revoke });
            plan(id, &tried, n + 1, probe).faults.get(n) == Some(fault)
        };
        let point = (0..POINTS).find(|&p| lands(p))?;
        walked.faults.push(FaultGene { point, blow, revoke });
    }
    Some(walked.faults)
}

#[cfg(test)]
mod tests {
    use super::super::genes::FaultGene;
    use super::*;

    fn gene(kind: ToolKind, faults: Vec<FaultGene>) -> OperationGene {
        OperationGene { kind, destinations: vec!["ledger"], tenant: 0, join: false, faults }
    }

    fn strike(point: usize, blow: Blow, revoke: bool) -> FaultGene {
        FaultGene { point, blow, revoke }
    }

    #[test]
    fn the_expectation_follows_the_recovery_each_kind_owes() {
        // Point 2 from the submission is `after_dispatch`.
        let kill_after_dispatch = |kind, revoke| plan("op", &gene(kind, vec![strike(2, Blow::Kill, revoke)]), 4, true);
        assert_eq!(kill_after_dispatch(ToolKind::NonIdempotentWithLookup, false).outcome, Some(Outcome::Succeeded));
        assert_eq!(kill_after_dispatch(ToolKind::NonIdempotentNoLookup, false).outcome, Some(Outcome::Paused));
        assert_eq!(kill_after_dispatch(ToolKind::SafelyRepeatable, false).outcome, Some(Outcome::Succeeded));
        assert_eq!(kill_after_dispatch(ToolKind::SafelyRepeatable, true).outcome, Some(Outcome::Paused));
        assert_eq!(kill_after_dispatch(ToolKind::IdempotentByKey, true).outcome, Some(Outcome::Succeeded));
        // Killed and revoked before the first call: refused.
        let before = plan("op", &gene(ToolKind::SafelyRepeatable, vec![strike(1, Blow::Kill, true)]), 4, true);
        assert_eq!(before.outcome, Some(Outcome::Refused));
        // A second `before_dispatch` only after a kill at the first (then the first point ahead).
        let twice = plan(
            "op",
            &gene(ToolKind::IdempotentByKey, vec![strike(1, Blow::Kill, false), strike(0, Blow::Kill, false)]),
            4,
            true,
        );
        let occurrences: Vec<(Boundary, u32)> = twice.faults.iter().map(|f| (f.at, f.occurrence)).collect();
        assert_eq!(occurrences, [(Boundary::BeforeDispatch, 1), (Boundary::BeforeDispatch, 2)]);
        // A repeatable tool whose call failed is called again: its second call can be struck.
        let again = plan(
            "op",
            &gene(ToolKind::SafelyRepeatable, vec![strike(2, Blow::Fail, false), strike(1, Blow::Drop, false)]),
            4,
            true,
        );
        let calls: Vec<(Boundary, u32, Action)> = again.faults.iter().map(|f| (f.at, f.occurrence, f.action)).collect();
        assert_eq!(calls, [(Boundary::AfterDispatch, 1, Action::Fail), (Boundary::AfterDispatch, 2, Action::Drop)]);
        assert_eq!(again.outcome, Some(Outcome::Succeeded));
    }
}
