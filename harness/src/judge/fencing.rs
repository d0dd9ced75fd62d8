//! `fenced`: overlapping incarnations are fenced (CONTRACT.md §9), judged per flow of requests.

use super::ledger::evidence;
use super::rules::breach::breach;
use super::verdict::Violation;
use crate::run::driver::{Happening, Run};
use fake_tool::{Entry, Event, Subject};

/// The request a ledger entry records, as (operation, destination): its *flow*. One operation's
/// execution (tool checks, calls, lookups) is one sequence of requests, and each of its
/// deliveries another (destination checks, sends); a runtime may run flows concurrently, but
/// never two requests of one flow, so only within a flow does "after" prove "in spite of".
/// `None` for what the harness did (revocations).
fn flow(entry: &Entry) -> Option<(Option<&str>, Option<&str>)> {
    let operation = entry.event.operation();
    match &entry.event {
        Event::ProviderCall { .. } | Event::ProviderLookup { .. } => Some((operation, None)),
        Event::ConsumerReceipt { destination, .. } => Some((operation, Some(destination.as_str()))),
        Event::PolicyCheck { subject: Subject::Destination(d), .. } => Some((operation, Some(d.as_str()))),
        Event::PolicyCheck { .. } => Some((operation, None)),
        Event::Fenced { destination, .. } => Some((operation, destination.as_deref())),
        // The model has no side effect and is not fenced (CONTRACT.md section 12): what an
        // outlived incarnation does with its answer is fenced where it acts.
        Event::Revocation { .. } | Event::ModelCall { .. } => None,
    }
}

/// Contract §9. Judged only on what the evidence proves: a request without the header; a request
/// of an outlived incarnation, after it was resumed, in the flow it was frozen in (the boundary
/// it was frozen at is followed by a commit, which its fenced store refuses, before any request
/// of that flow); a request in a flow after that flow was answered `409 fenced`; a resumed
/// incarnation still running at the deadline.
pub(super) fn fenced(run: &Run, violations: &mut Vec<Violation>) {
    unmarked_requests(run, violations);
    outlived_and_resumed(run, violations);
    went_on_after_refusal(run, violations);
}

/// Requests that carried no incarnation number.
fn unmarked_requests(run: &Run, violations: &mut Vec<Violation>) {
    let unmarked: Vec<&Entry> = run.ledger.iter().filter(|e| flow(e).is_some() && e.incarnation.is_none()).collect();
    if let Some(first) = unmarked.first() {
        violations.push(Violation::new(
            breach!(Fenced, "§9-1"),
            first.event.operation().map(str::to_owned),
            format!(
                "{} request(s) to the fake world carried no `Killpoint-Incarnation` header (the first at #{}); every request must carry the incarnation's number, the fencing token that lets the world refuse an outlived incarnation",
                unmarked.len(),
                first.seq
            ),
            evidence(unmarked.iter().copied().take(5)),
        ));
    }
}

/// An outlived incarnation that, once resumed, went on with the flow it was frozen in, or did not
/// exit by the deadline.
fn outlived_and_resumed(run: &Run, violations: &mut Vec<Violation>) {
    for mark in &run.timeline {
        match &mark.happening {
            // Frozen at no boundary (a `[[syscall_fault]]` just before a request): its next act,
            // that request, is one a correct runtime makes; what follows its refusal is judged
            // by `went_on_after_refusal`.
            Happening::Resumed { incarnation, message: Some(message), .. } => {
                let frozen_flow = (Some(message.operation_id.as_str()), message.destination.as_deref());
                let late: Vec<&Entry> = run
                    .ledger
                    .iter()
                    .filter(|e| e.seq > mark.seq && e.incarnation == Some(*incarnation))
                    .filter(|e| {
                        flow(e).is_some_and(|f| {
                            f.0 == frozen_flow.0 && (f.1 == frozen_flow.1 || message.destination.is_none())
                        })
                    })
                    .collect();
                if !late.is_empty() {
                    violations.push(Violation::new(
                        breach!(Fenced, "§9-2"),
                        Some(message.operation_id.clone()),
                        format!(
                            "incarnation {incarnation}, frozen at `{}` of `{}` and outlived by incarnation {}, sent {} request(s) for it after it was resumed: a commit had to come first, and a newer incarnation had fenced its store; it must have exited instead",
                            message.boundary,
                            message.operation_id,
                            incarnation + 1,
                            late.len()
                        ),
                        evidence(late),
                    ));
                }
            }
            Happening::ZombieOutlived { incarnation, waited } => {
                violations.push(still_running(run, *incarnation, *waited))
            }
            _ => {}
        }
    }
}

/// A resumed incarnation still running when its time to exit (the scenario's deadline) was up;
/// the world's `409 fenced` answers to it, if it had any, are what it should have exited on.
fn still_running(run: &Run, incarnation: u32, waited: std::time::Duration) -> Violation {
    let refusals: Vec<&Entry> = run
        .ledger
        .iter()
        .filter(|e| matches!(e.event, Event::Fenced { .. }) && e.incarnation == Some(incarnation))
        .collect();
    let answered = match refusals.first() {
        Some(first) => format!(" and answered `409 fenced` at #{}", first.seq),
        None => String::new(),
    };
    Violation::new(
        breach!(Fenced, "§9-3"),
        None,
        format!(
            "incarnation {incarnation}, outlived by a newer one, resumed{answered}, was still running {:.1} s later (the scenario's `deadline_seconds`, the time a resumed incarnation has to meet its fence and exit); a fenced incarnation must exit at once (the harness SIGKILLed it)",
            waited.as_secs_f64()
        ),
        evidence(refusals.into_iter().take(3)),
    )
}

/// A flow that went on after its incarnation read a `409 fenced` (for one the tracer held, which
/// sees the receive) or after the world answered it one (for one it did not: SIGSTOPped at a
/// probe's boundary, whose next act is a commit, not a request whose answer its timer may drop).
fn went_on_after_refusal(run: &Run, violations: &mut Vec<Violation>) {
    for (refusal, from) in refusals(run) {
        let refused_flow = flow(refusal);
        let after: Vec<&Entry> = run
            .ledger
            .iter()
            .filter(|e| e.seq > from && e.incarnation == refusal.incarnation && flow(e) == refused_flow)
            .collect();
        if !after.is_empty() {
            let incarnation = refusal.incarnation.map_or("?".to_owned(), |n| n.to_string());
            let read = if from == refusal.seq { String::new() } else { format!(" (read by it at #{from})") };
            violations.push(Violation::new(
                breach!(Fenced, "§9-3"),
                refusal.event.operation().map(str::to_owned),
                format!(
                    "incarnation {incarnation} was answered `409 fenced` at #{}{read} and went on with {} more request(s) of the same work; a fenced incarnation must exit at once",
                    refusal.seq,
                    after.len()
                ),
                evidence(std::iter::once(refusal).chain(after)),
            ));
            // One proof is enough: later refusals only repeat it.
            break;
        }
    }
}

/// Every `409 fenced` the runtime knew of, with where on the clock it knew: for an incarnation
/// the tracer held and saw read a refusal, each refusal it read (the latest refusal of its kind
/// to it before the read), from the read; for any other, each refusal, from when the world
/// answered it. A refusal a held incarnation never read (its own timer gave up on the request
/// first) told it nothing. One that read none at all is judged by the world's answers: its
/// exchanges may be ones the tracer cannot read (not plain HTTP/1), which say nothing of reads.
fn refusals(run: &Run) -> Vec<(&Entry, u64)> {
    let resumed_held = |n: u32| {
        run.timeline
            .iter()
            .any(|m| matches!(m.happening, Happening::Resumed { incarnation, held: true, .. } if incarnation == n))
    };
    let held: Vec<u32> = run
        .timeline
        .iter()
        .filter_map(|m| match m.happening {
            Happening::ZombieReadFenced { incarnation, .. } if resumed_held(incarnation) => Some(incarnation),
            _ => None,
        })
        .collect();
    let fenced = |e: &&Entry| matches!(e.event, Event::Fenced { .. });
    let unheld = run.ledger.iter().filter(fenced).filter(|e| e.incarnation.is_none_or(|n| !held.contains(&n)));
    let mut known: Vec<(&Entry, u64)> = unheld.map(|e| (e, e.seq)).collect();
    for mark in &run.timeline {
        let Happening::ZombieReadFenced { incarnation, service, operation, .. } = &mark.happening else { continue };
        let answered = run.ledger.iter().filter(fenced).rev().find(|e| {
            let Event::Fenced { service: refused, .. } = &e.event else { return false };
            e.seq < mark.seq
                && e.incarnation == Some(*incarnation)
                && service.is_none_or(|s| s == *refused)
                && operation.as_deref().is_none_or(|op| e.event.operation() == Some(op))
        });
        known.extend(answered.map(|e| (e, mark.seq)));
    }
    known.sort_by_key(|(_, from)| *from);
    known
}
