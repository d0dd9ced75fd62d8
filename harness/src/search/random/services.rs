//! Service faults drawn when the runtime declares services (`--services`): a declared service (or
//! every one, `*`) killed, restarted, frozen or cut off from the worker at a boundary one operation
//! is bound to reach the first time, whatever the worker's own drawn faults do to it.
//!
//! What a correct runtime owes through a fault of its server is what it owes without one
//! (CONTRACT.md §2-9 to §2-11): the operation's expected outcome does not change, so a service
//! fault is placed after the schedule is read, and moves nothing of it. Without services no gene
//! is drawn at all, and a seed draws what it drew before services existed.

use super::genes::{DESTINATIONS, ServiceGene};
use crate::model::boundary::Boundary;
use crate::scenario::{EVERY_SERVICE, Fault, Operation, Outcome, ServiceFault, ServiceFaultAction};

/// How long a drawn freeze or cut lasts: well inside a drawn case's 5 s deadline, long past the
/// half-second a client waits for one answer.
pub(super) const WINDOW_SECONDS: f64 = 1.0;

const ACTIONS: [ServiceFaultAction; 4] = [
    ServiceFaultAction::Kill,
    ServiceFaultAction::Restart,
    ServiceFaultAction::Freeze,
    ServiceFaultAction::Unreachable,
];

/// The service faults of `genes` on `operations` (with the worker's `faults`), acting on the
/// declared `services`. A gene lands on the operation it picks, at one of the boundaries that
/// operation reaches the first time if it succeeds (its first `before_dispatch`, its first
/// success, its first send to each destination); without the probe, at the provider's answer to
/// its first call, which the harness sees itself. A gene lands nowhere when
/// the operation is not expected to succeed, or a worker fault is at that place already: it never
/// moves elsewhere, so dropping a worker fault leaves a service fault where it was.
pub(super) fn place(
    genes: &[ServiceGene],
    operations: &[Operation],
    faults: &[Fault],
    probe: bool,
    services: &[String],
) -> Vec<ServiceFault> {
    if services.is_empty() || operations.is_empty() {
        return Vec::new();
    }
    let mut placed: Vec<ServiceFault> = Vec::new();
    for gene in genes {
        let op = &operations[gene.operation % operations.len()];
        if op.expect != Outcome::Succeeded {
            continue;
        }
        let points = points(op, probe);
        let (at, destination) = points[gene.point % points.len()].clone();
        let taken = faults.iter().any(|f| clashes(f, op, at, destination.as_deref()));
        let twice = placed.iter().any(|p| p.operation == op.id && p.at == at && p.destination == destination);
        if taken || twice {
            continue;
        }
        let action = ACTIONS[gene.action % ACTIONS.len()];
        let service = services.get(gene.service % (services.len() + 1)).cloned();
        placed.push(ServiceFault {
            service: service.unwrap_or_else(|| EVERY_SERVICE.to_owned()),
            at,
            operation: op.id.clone(),
            occurrence: 1,
            destination,
            action,
            seconds: action.is_window().then_some(WINDOW_SECONDS),
            until: None,
        });
    }
    placed
}

/// The first-time boundaries of a succeeding `op`, in its order. With the probe, only the probe's:
/// there the worker waits for the harness, which takes a service down and up again, or opens a
/// window, before answering it, so a case runs the same way each time. Without the probe, at the
/// provider's answer, which the provider holds until the harness has acted: the same holds.
fn points(op: &Operation, probe: bool) -> Vec<(Boundary, Option<String>)> {
    if !probe {
        return vec![(Boundary::AfterDispatch, None)];
    }
    let mut points = vec![(Boundary::BeforeDispatch, None), (Boundary::AfterProviderSuccess, None)];
    // In the order DESTINATIONS lists them, as the operation's own are a subsequence of it.
    for d in DESTINATIONS.iter().filter(|d| op.destinations.iter().any(|x| x == *d)) {
        points.push((Boundary::AfterDeliverySend, Some((*d).to_owned())));
    }
    points
}

/// Whether worker fault `f` is where a service fault at the first `at` of `op` would be, or takes
/// the provider's answer a service fault at `after_dispatch` would take (scenarios/README.md).
fn clashes(f: &Fault, op: &Operation, at: Boundary, destination: Option<&str>) -> bool {
    if f.operation != op.id || f.occurrence != 1 {
        return false;
    }
    let same = f.at == at && f.destination.as_deref() == destination;
    let answer = at == Boundary::AfterDispatch && f.at == Boundary::AfterProviderSuccess;
    same || answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::boundary::Boundary;
    use fake_tool::ToolKind;

    fn operation(id: &str, expect: Outcome) -> Operation {
        Operation {
            id: id.to_owned(),
            tool: ToolKind::NonIdempotentWithLookup,
            task: false,
            destinations: vec!["ledger".to_owned()],
            tenant: "acme".to_owned(),
            actor: "agent-7".to_owned(),
            expect,
            wave: None,
        }
    }

    fn gene(operation: usize, point: usize, action: usize, service: usize) -> ServiceGene {
        ServiceGene { operation, point, action, service }
    }

    #[test]
    fn a_gene_lands_where_a_succeeding_operation_surely_passes_and_nowhere_else() {
        let ops = [operation("op1", Outcome::Paused), operation("op2", Outcome::Succeeded)];
        let kv = ["kv".to_owned()];
        // op1 is not expected to succeed: nothing.
        assert!(place(&[gene(0, 0, 0, 0)], &ops, &[], true, &kv).is_empty());
        let placed = place(&[gene(1, 2, 2, 1)], &ops, &[], true, &kv);
        let fault = &placed[0];
        assert_eq!((fault.at, fault.destination.as_deref()), (Boundary::AfterDeliverySend, Some("ledger")));
        assert_eq!((fault.action, fault.seconds, fault.service.as_str()), (ServiceFaultAction::Freeze, Some(1.0), "*"));
        // Without the probe: the provider's answer only.
        let blind = place(&[gene(1, 2, 0, 0)], &ops, &[], false, &kv);
        assert_eq!((blind[0].at, blind[0].service.as_str()), (Boundary::AfterDispatch, "kv"));
        // No services declared: nothing, whatever the genes.
        assert!(place(&[gene(1, 0, 0, 0)], &ops, &[], true, &[]).is_empty());
    }

    #[test]
    fn a_gene_at_a_worker_faults_place_lands_nowhere() {
        let ops = [operation("op1", Outcome::Succeeded)];
        let kill = |at| Fault {
            at,
            operation: "op1".to_owned(),
            occurrence: 1,
            attempt: None,
            destination: None,
            effect: true,
            action: crate::scenario::Action::Kill,
            delay_ms: 0,
            status: None,
            revoke: Vec::new(),
        };
        let kv = ["kv".to_owned()];
        assert!(place(&[gene(0, 0, 0, 0)], &ops, &[kill(Boundary::BeforeDispatch)], true, &kv).is_empty());
        assert!(place(&[gene(0, 1, 0, 0)], &ops, &[kill(Boundary::AfterProviderSuccess)], true, &kv).is_empty());
        // The provider's answer (without the probe) is the worker fault's at after_provider_success too.
        assert!(place(&[gene(0, 0, 0, 0)], &ops, &[kill(Boundary::AfterProviderSuccess)], false, &kv).is_empty());
        assert_eq!(place(&[gene(0, 2, 0, 0)], &ops, &[kill(Boundary::BeforeDispatch)], true, &kv).len(), 1);
    }
}
