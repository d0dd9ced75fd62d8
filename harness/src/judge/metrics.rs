//! The metrics cross-check: a runtime that serves the monitoring signals is held to what the
//! ledgers show (CONTRACT.md section 11), as part of `truthful_status`.

use super::in_flight::{InFlight, lines};
use super::ledger::evidence;
use super::prometheus::Exposition;
use super::rules::breach::breach;
use super::verdict::Violation;
use crate::run::client::DeliveryState;
use crate::run::driver::Run;
use crate::scenario::Scenario;
use fake_tool::{Entry, Event, PolicyAnswer, Subject};
use std::collections::BTreeSet;

/// A runtime that serves the monitoring signals (ready line `"metrics": true`) is held to them at
/// the end of the scenario: a signal that disagrees with the ledgers is a false status report.
///
/// - Dead letters, per destination and in all: exactly the deliveries the ledger shows given up —
///   no send accepted, and either `delivery_max_attempts` failed sends or a destination check the
///   policy refused.
/// - Reconciliations (lookups, any outcome) and policy refusals of attempts: no more than the
///   provider's lookups and the policy's refusals of a tool or operation, and no fewer than those
///   less the ones a kill may have cut off before the runtime wrote them down: a lookup or a
///   refusal that was the last thing a killed incarnation did for its operation (`in_flight`).
pub(super) fn metrics_agree(scenario: &Scenario, run: &Run, in_flight: &InFlight, violations: &mut Vec<Violation>) {
    let Some(metrics) = &run.metrics else { return };
    let text = match metrics {
        Ok(text) => text,
        Err(e) => {
            violations.push(false_report(
                format!("the ready line declared \"metrics\": true, but GET /metrics could not be read: {e}"),
                Vec::new(),
            ));
            return;
        }
    };
    let exposition = Exposition::read(text);
    dead_letters_agree(scenario, run, in_flight, &exposition, violations);
    counters_agree(run, in_flight, &exposition, violations);
}

/// A signal that disagrees with the ledgers: a false status report about the whole run.
fn false_report(message: String, evidence: Vec<String>) -> Violation {
    Violation::new(breach!(TruthfulStatus, "§11-2"), None, message, evidence)
}

/// Dead letters, per destination: exactly the deliveries the ledger shows given up, or that may be
/// (a send a kill cut off counts toward the bound).
fn dead_letters_agree(
    scenario: &Scenario,
    run: &Run,
    in_flight: &InFlight,
    exposition: &Exposition,
    violations: &mut Vec<Violation>,
) {
    let destinations: BTreeSet<&String> = scenario.operations.iter().flat_map(|o| &o.destinations).collect();
    // A labelled family has no series until it has a label value: no `killpoint_dead_letters`
    // line for a destination (or none at all, before any delivery) is the runtime saying zero.
    for destination in destinations {
        let claimed = exposition.sum("killpoint_dead_letters", Some(("destination", destination))).unwrap_or(0.0);
        let (shown, maybe, proof) = given_up(scenario, run, in_flight, destination);
        if claimed < shown as f64 || claimed > (shown + maybe) as f64 {
            let more = if maybe > 0 {
                format!(
                    " (and {maybe} more that may be, a send of it cut off by a kill having counted toward the bound)"
                )
            } else {
                String::new()
            };
            violations.push(false_report(
                format!(
                    "GET /metrics says {claimed} dead letter(s) for `{destination}`; the ledgers show {shown} delivery(ies) to it given up{more}"
                ),
                proof,
            ));
        }
    }
}

/// Reconciliations and policy refusals of attempts: what the ledgers show, less at most those a
/// kill may have cut off before they were written down.
fn counters_agree(run: &Run, in_flight: &InFlight, exposition: &Exposition, violations: &mut Vec<Violation>) {
    // Every lookup and refusal in this scenario's world is the runtime's, whether or not the
    // request named an operation the world knows (a lookup by a key never sent names none).
    let lookups: Vec<&Entry> = run.ledger.iter().filter(|e| matches!(e.event, Event::ProviderLookup { .. })).collect();
    let refusals: Vec<&Entry> = run
        .ledger
        .iter()
        .filter(|e| {
            matches!(&e.event, Event::PolicyCheck { answer: PolicyAnswer::Refused, subject, .. } if !matches!(subject, Subject::Destination(_)))
        })
        .collect();
    for (name, label, what, entries, cut) in [
        ("killpoint_reconciliations_total", None, "reconciliation(s)", &lookups, in_flight.lookups()),
        ("killpoint_refusals_total", Some(("reason", "policy")), "policy refusal(s)", &refusals, in_flight.refusals()),
    ] {
        let Some(claimed) = exposition.sum(name, label) else {
            violations.push(false_report(format!("GET /metrics serves no `{name}`"), Vec::new()));
            continue;
        };
        let seen = entries.len() as f64;
        let least = (seen - cut.len() as f64).max(0.0);
        if claimed > seen || claimed < least {
            let bound = if cut.is_empty() {
                format!("{seen} (no kill cut one off before it was written down)")
            } else {
                format!(
                    "between {least} and {seen} (the last exchange of its operation in a killed incarnation, its record may be lost: {})",
                    lines(cut)
                )
            };
            violations.push(false_report(
                format!("GET /metrics says {claimed} {what}; the ledgers show {seen}, so it must say {bound}"),
                evidence(entries.iter().copied()),
            ));
        }
    }
}

/// Deliveries to `destination` the ledger shows given up (see [`metrics_agree`]); those that may
/// be, with sends a kill cut off counted toward the bound; and the ledger lines that show it.
fn given_up(scenario: &Scenario, run: &Run, in_flight: &InFlight, destination: &str) -> (usize, usize, Vec<String>) {
    let max = scenario.runtime.delivery_max_attempts as usize;
    let (mut count, mut maybe, mut proof) = (0, 0, Vec::new());
    for op in scenario.operations.iter().filter(|op| op.destinations.iter().any(|d| d == destination)) {
        let receipts: Vec<&Entry> = run
            .ledger
            .iter()
            .filter(|e| matches!(&e.event, Event::ConsumerReceipt { destination: d, operation: Some(o), .. } if d == destination && *o == op.id))
            .collect();
        let accepted = receipts
            .iter()
            .any(|e| matches!(&e.event, Event::ConsumerReceipt { status, .. } if (200..300).contains(status)));
        let refused: Vec<&Entry> = run
            .ledger
            .iter()
            .filter(|e| matches!(&e.event, Event::PolicyCheck { subject: Subject::Destination(d), operation: Some(o), answer: PolicyAnswer::Refused, .. } if d == destination && *o == op.id))
            .collect();
        // A refusal dead-letters the delivery even after a send the consumer accepted, when the
        // runtime was killed before it recorded the acknowledgement: only an accepted send after
        // the last refusal means it was delivered.
        let last_refusal = refused.last().map(|e| e.seq);
        let accepted_after_refusal = last_refusal.is_some_and(|r| {
            receipts.iter().any(|e| {
                e.seq > r && matches!(&e.event, Event::ConsumerReceipt { status, .. } if (200..300).contains(status))
            })
        });
        if last_refusal.is_some() && !accepted_after_refusal {
            count += 1;
            proof.extend(evidence(refused));
        } else if !accepted && receipts.len() >= max {
            count += 1;
            proof.extend(evidence(receipts));
        } else if !accepted && receipts.len() + in_flight.sends(&op.id, destination).len() >= max {
            maybe += 1;
            proof.extend(evidence(receipts));
        } else if !accepted && dead_lettered_early(run, &op.id, destination) {
            // Given up too soon: `dead_letter_bound` reports that (§6-5). A gauge that counts it
            // describes the runtime's state truly, and is not blamed for the same mistake.
            maybe += 1;
            proof.extend(evidence(receipts));
        }
    }
    (count, maybe, proof)
}

/// Whether the runtime reports `operation`'s delivery to `destination` `DEAD_LETTERED` other than
/// by policy (the ledgers, having seen fewer than the bound's sends, do not count it given up).
fn dead_lettered_early(run: &Run, operation: &str, destination: &str) -> bool {
    run.reports.get(operation).is_some_and(|r| {
        r.deliveries.iter().any(|d| {
            d.destination == destination
                && d.state == DeliveryState::DeadLettered
                && !d.last_error.as_deref().is_some_and(|e| e.starts_with("policy:"))
        })
    })
}
