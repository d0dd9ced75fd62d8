//! Status truthfulness: what the runtime reports after its recoveries agrees with the ledgers —
//! the counts, a success's effect and result, a delivery's ACK, and a FAILED it could know.

use super::in_flight::{InFlight, lines};
use super::ledger::{Found, OperationLedger, evidence, show_effects};
use super::rules::breach::breach;
use crate::run::client::{DeliveryState, ExecutionState, OperationReport};
use crate::scenario::Operation;
use fake_tool::{Effect, Event, Response};
use serde_json::Value;

pub(super) fn truthful_status(
    op: &Operation,
    ledger: &OperationLedger,
    report: Option<&OperationReport>,
    in_flight: &InFlight,
    counts: bool,
    found: &mut Found,
) {
    let Some(report) = report else {
        // An accepted operation the runtime cannot report is one it lost (§3-9).
        found(
            breach!(TruthfulStatus, "§3-9"),
            format!("the runtime could not report `{}` (GET /operations/{})", op.id, op.id),
            Vec::new(),
        );
        return;
    };
    if counts {
        counts_agree(op, ledger, report, in_flight, found);
    }
    match report.execution {
        ExecutionState::Succeeded => {
            success_agrees(op, ledger, report, found);
            deliveries_agree(op, ledger, report, found);
        }
        ExecutionState::Failed => {
            let applied = ledger.applied();
            if !applied.is_empty() {
                // Not by policy, FAILED also needed a reason the runtime could know (§4-15).
                let by_policy = report.failure.as_ref().is_some_and(|f| f.reason.starts_with("policy:"));
                found(
                    match (by_policy, ended_on_reused_key(ledger)) {
                        (true, _) => breach!(TruthfulStatus, "§3-8"),
                        // The keyed tool's 409 said an earlier request under the key applied.
                        (false, true) => breach!(TruthfulStatus, "§3-8", "§12-4"),
                        (false, false) => breach!(TruthfulStatus, "§3-8", "§4-15"),
                    },
                    format!("`{}` reports FAILED but the provider applied its effect", op.id),
                    evidence(applied),
                );
            } else {
                failed_with_reason(op, ledger, report, found);
            }
        }
        ExecutionState::IntentRecorded | ExecutionState::Dispatched | ExecutionState::Unknown => {}
    }
}

/// Whether the operation's last call was refused `409 idempotency_key_reused` (CONTRACT.md §12-4).
pub(super) fn ended_on_reused_key(ledger: &OperationLedger) -> bool {
    ledger.calls.last().is_some_and(|c| matches!(&c.event, Event::ProviderCall { effect: Effect::KeyReused(_), .. }))
}

/// The attempts and sends the runtime counts against the calls and receipts the ledgers show.
fn counts_agree(
    op: &Operation,
    ledger: &OperationLedger,
    report: &OperationReport,
    in_flight: &InFlight,
    found: &mut Found,
) {
    // Counts are exact but for what a kill cut off: an attempt (a send) whose write-ahead may be
    // durable and whose request never left, one per kill at most, and only where the ledger shows
    // the step begun — its allowed policy check the last thing the killed incarnation did for it
    // (`in_flight`). A request received but not counted is always a miscount.
    let calls = u32::try_from(ledger.calls.len()).unwrap_or(u32::MAX);
    let cut = in_flight.attempts(&op.id);
    if let Some(slack) = miscount(report.attempts, calls, cut) {
        // An attempt the runtime never counted was sent before its `DISPATCHED` was written (§4-4).
        let (why, breach) = if report.attempts < calls {
            ("an attempt was made that the runtime did not record".to_owned(), breach!(TruthfulStatus, "§3-6", "§4-4"))
        } else {
            (
                format!("the runtime counts attempts that never reached the provider ({slack})"),
                breach!(TruthfulStatus, "§3-6"),
            )
        };
        found(
            breach,
            format!("`{}` reports {} attempt(s) but the provider saw {calls} call(s): {why}", op.id, report.attempts),
            evidence(ledger.calls.iter().copied()),
        );
    }
    for delivery in &report.deliveries {
        let receipts = ledger.receipts_at(&delivery.destination);
        let received = u32::try_from(receipts.len()).unwrap_or(u32::MAX);
        let cut = in_flight.sends(&op.id, &delivery.destination);
        if let Some(slack) = miscount(delivery.attempts, received, cut) {
            let why = if delivery.attempts < received {
                "a send arrived that the runtime did not count".to_owned()
            } else {
                format!("it counts sends that never reached the consumer ({slack})")
            };
            found(
                breach!(TruthfulStatus, "§3-8"),
                format!(
                    "`{}` reports {} send(s) to `{}` but that consumer received {received}: {why}",
                    op.id, delivery.attempts, delivery.destination
                ),
                evidence(receipts),
            );
        }
    }
}

/// `None` when `counted` is `seen` plus at most one per step a kill cut off (`cut`); otherwise
/// what slack there was, for the message.
fn miscount(counted: u32, seen: u32, cut: &[u64]) -> Option<String> {
    let slack = u32::try_from(cut.len()).unwrap_or(u32::MAX);
    if counted >= seen && counted <= seen.saturating_add(slack) {
        return None;
    }
    Some(if cut.is_empty() {
        "no kill cut one off between its policy check and its request".to_owned()
    } else {
        format!("at most {slack} more, one per kill that cut one off after its policy check: {}", lines(cut))
    })
}

/// A success names one of the provider's effects, and its result.
fn success_agrees(op: &Operation, ledger: &OperationLedger, report: &OperationReport, found: &mut Found) {
    let effects = ledger.effects();
    // A success named from an answer that could not be read was no success to take (§4-8).
    let unreadable = ledger.calls.iter().any(|c| {
        matches!(&c.event, Event::ProviderCall { response: Response::Cut | Response::Garbage | Response::NoRef, .. })
    });
    let breach = match unreadable {
        true => breach!(TruthfulStatus, "§3-8", "§4-8"),
        false => breach!(TruthfulStatus, "§3-8"),
    };
    match effects.iter().find(|(r, _)| Some(r) == report.provider_ref.as_ref()) {
        None => found(
            breach,
            format!(
                "`{}` reports SUCCEEDED with provider_ref {}; the provider's effects for it: {}",
                op.id,
                report.provider_ref.as_deref().map_or("null".to_owned(), |r| format!("`{r}`")),
                show_effects(&effects)
            ),
            evidence(ledger.calls.iter().copied()),
        ),
        Some((_, result)) if report.result.as_ref() != Some(result) => found(
            breach,
            format!(
                "`{}` reports result {}; the provider returned {result}",
                op.id,
                report.result.as_ref().map_or("null".to_owned(), Value::to_string)
            ),
            evidence(ledger.calls.iter().copied()),
        ),
        Some(_) => {}
    }
}

/// A success has a delivery record for every destination, and one reported ACKED was accepted.
fn deliveries_agree(op: &Operation, ledger: &OperationLedger, report: &OperationReport, found: &mut Found) {
    for destination in &op.destinations {
        match report.deliveries.iter().find(|d| d.destination == *destination) {
            None => found(
                breach!(TruthfulStatus, "§4-6"),
                format!("`{}` reports SUCCEEDED but has no delivery record for `{destination}`", op.id),
                Vec::new(),
            ),
            Some(d) if d.state == DeliveryState::Acked => {
                let received = ledger.receipts.iter().any(|e| {
                        matches!(&e.event, Event::ConsumerReceipt { destination: x, status, .. } if x == destination && (200..300).contains(status))
                    });
                if !received {
                    found(
                        breach!(TruthfulStatus, "§3-8"),
                        format!("`{}` reports `{destination}` ACKED but that consumer never accepted it", op.id),
                        evidence(ledger.receipts.iter().copied()),
                    );
                }
            }
            Some(_) => {}
        }
    }
}

/// `FAILED` says "nothing happened", so the runtime must have known it (CONTRACT.md section 4,
/// steps 6 and 11): the provider refused the last call (4xx), or a lookup after the last call
/// found nothing. A kind without lookup whose last call went unanswered can never know it: such an
/// operation is paused, never FAILED — not even by a policy refusal (section 4, step 2).
fn failed_with_reason(op: &Operation, ledger: &OperationLedger, report: &OperationReport, found: &mut Found) {
    let last = ledger.calls.last().copied();
    let refused_by_provider = last.is_some_and(|c| {
        matches!(&c.event, Event::ProviderCall { response: Response::Sent(status), .. } if (400..500).contains(status))
    });
    let looked_up_nothing = last.is_some_and(|c| {
        ledger
            .lookups
            .iter()
            .any(|l| l.seq > c.seq && matches!(&l.event, Event::ProviderLookup { found: false, status: 404, .. }))
    });
    let by_policy = report.failure.as_ref().is_some_and(|f| f.reason.starts_with("policy:"));
    let proof = || evidence(ledger.calls.iter().chain(&ledger.lookups).copied());
    if by_policy {
        // Before any call, or after a definitive answer, a refusal may end the operation.
        if let Some(last) = last
            && !op.tool.supports_lookup()
            && !refused_by_provider
        {
            found(
                breach!(TruthfulStatus, "§4-3"),
                format!(
                    "`{}` reports FAILED by policy, but its last call (#{}) went unanswered and {} ({}) has no lookup: it may have taken effect, so the operation must be paused, not FAILED",
                    op.id,
                    last.seq,
                    op.tool.tool_name(),
                    op.tool.as_str()
                ),
                proof(),
            );
        }
        return;
    }
    if refused_by_provider || looked_up_nothing {
        return;
    }
    let what = match (last, op.tool.supports_lookup()) {
        (None, _) => "but never called the provider".to_owned(),
        (Some(c), true) => format!(
            "but the provider did not refuse its last call (#{}) and no lookup after it found nothing: the runtime could not know that nothing happened",
            c.seq
        ),
        (Some(c), false) => format!(
            "but its last call (#{}) went unanswered and {} ({}) has no lookup: the outcome is unknown, so the operation must be paused, not FAILED",
            c.seq,
            op.tool.tool_name(),
            op.tool.as_str()
        ),
    };
    found(
        breach!(TruthfulStatus, "§4-15"),
        format!(
            "`{}` reports FAILED ({}) {what}",
            op.id,
            report.failure.as_ref().map_or("no reason", |f| f.reason.as_str())
        ),
        proof(),
    );
}
