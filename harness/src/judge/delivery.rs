//! The delivery family: every success applied exactly once by every permitted destination, a
//! retried delivery backs off, and a dead letter was sent exactly `DELIVERY_MAX_ATTEMPTS` times.

use super::in_flight::{InFlight, lines};
use super::ledger::{Found, OperationLedger, evidence, revocations, show_effects};
use super::rules::breach::breach;
use crate::run::client::{DeliveryReport, DeliveryState, ExecutionState, OperationReport};
use crate::run::driver::{Happening, Run};
use crate::run::trace::describe_entry;
use crate::scenario::{Operation, Scenario};
use fake_tool::{Entry, Event, Subject};
use serde_json::Value;
use std::collections::HashSet;

pub(super) fn delivered_once(
    scenario: &Scenario,
    op: &Operation,
    ledger: &OperationLedger,
    run: &Run,
    in_flight: &InFlight,
    report: Option<&OperationReport>,
    found: &mut Found,
) {
    // Confirmed success is the runtime's own word: a success it lost in a crash and could not
    // recover (a tool without lookup) cannot be delivered, and is not claimed.
    if report.is_none_or(|r| r.execution != ExecutionState::Succeeded) {
        return;
    }
    let effects = ledger.effects();
    if effects.is_empty() {
        return;
    }
    let revoked: HashSet<&str> = revocations(run, op)
        .into_iter()
        .filter_map(|(_, s)| match s {
            Subject::Destination(d) => Some(d.as_str()),
            Subject::Tool(_) | Subject::Operation(_) => None,
        })
        .collect();
    for destination in &op.destinations {
        // A consumer the scenario kills for good cannot be delivered to; truthful_status checks
        // the runtime says so (DEAD_LETTERED).
        let dead =
            scenario.consumer_faults.iter().any(|c| c.destination == *destination && c.times.is_none() && c.covers(op));
        if revoked.contains(destination.as_str()) || dead {
            continue;
        }
        let applied: Vec<&Entry> = ledger
            .receipts
            .iter()
            .copied()
            .filter(|e| matches!(&e.event, Event::ConsumerReceipt { destination: d, applied: true, .. } if d == destination))
            .collect();
        match applied.len() {
            0 if given_up_at_the_bound(scenario, op, destination, ledger, in_flight, report) => {}
            0 => found(
                breach!(DeliveredOnce, "§6-3"),
                format!("`{}` succeeded at the provider but `{destination}` never applied it", op.id),
                evidence(ledger.calls.iter().copied().chain(ledger.receipts.iter().copied())),
            ),
            1 => {
                if let Event::ConsumerReceipt { payload, .. } = &applied[0].event
                    && !effects.iter().any(|(provider_ref, result)| {
                        payload.get("result") == Some(result)
                            && payload.get("provider_ref").and_then(Value::as_str) == Some(provider_ref.as_str())
                    })
                {
                    found(
                        breach!(DeliveredOnce, "§6-1"),
                        format!(
                            "`{destination}` applied `{}` with a payload that is not the provider's result ({}): {payload}",
                            op.id,
                            show_effects(&effects)
                        ),
                        evidence(applied),
                    );
                }
            }
            n => found(
                breach!(DeliveredOnce, "§6-3"),
                format!("`{destination}` applied `{}` {n} times; exactly once is required", op.id),
                evidence(applied),
            ),
        }
    }
}

/// Whether the runtime gave `destination` up as the contract lets it once its counted sends
/// reached `DELIVERY_MAX_ATTEMPTS`, one of them cut off by a kill between its durable `SENT` and
/// its request (CONTRACT.md §6-5, "Counts across a kill"). A consumer that recovers only after
/// that many failures may then never apply the event: the kill spent one send of the bound, and
/// the contract counts it. Giving up sooner is `dead_letter_bound`'s to report, and is not excused.
fn given_up_at_the_bound(
    scenario: &Scenario,
    op: &Operation,
    destination: &str,
    ledger: &OperationLedger,
    in_flight: &InFlight,
    report: Option<&OperationReport>,
) -> bool {
    let cut = in_flight.sends(&op.id, destination);
    dead_lettered(report, destination).is_some()
        && !cut.is_empty()
        && counted_sends(ledger.receipts_at(destination).len(), cut) >= scenario.runtime.delivery_max_attempts
}

/// `destination`'s delivery, if the runtime reports it `DEAD_LETTERED` other than by policy.
fn dead_lettered<'r>(report: Option<&'r OperationReport>, destination: &str) -> Option<&'r DeliveryReport> {
    let delivery = report?.deliveries.iter().find(|d| d.destination == destination)?;
    let by_policy = delivery.last_error.as_deref().is_some_and(|e| e.starts_with("policy:"));
    (delivery.state == DeliveryState::DeadLettered && !by_policy).then_some(delivery)
}

/// The sends the runtime counted: those the consumer `received`, and those a kill may have cut
/// off between their durable `SENT` and their request (`cut`, from `in_flight`).
fn counted_sends(received: usize, cut: &[u64]) -> u32 {
    u32::try_from(received.saturating_add(cut.len())).unwrap_or(u32::MAX)
}

/// The least wait the contract allows after the n-th failed send, in microseconds: the exact
/// backoff and the bound judged, with a tolerance of 10% and 1 ms. The ledger's gap is measured
/// from the consumer taking the failed send (before the runtime had the answer it waits from) to
/// the consumer taking the next, so it can only be longer than the runtime's own wait; what the
/// tolerance forgives is the runtime's clock. A runtime keeps due times in its own units (the
/// reference: whole wall-clock milliseconds in its store, so a retry may fire up to 1 ms before
/// the exact instant) and on its own clock, which NTP may slew against the harness's monotonic
/// one. A runtime that does not wait, or waits the base where the doubling is due, still fails.
fn least_backoff_micros(base_ms: u64, failed_sends: u32) -> (u64, u64) {
    let exact = base_ms.saturating_mul(1000).saturating_mul(1 << failed_sends.saturating_sub(1).min(20));
    let tolerated = exact.saturating_sub(exact / 10).saturating_sub(1000);
    (exact, tolerated)
}

pub(super) fn delivery_backoff(
    scenario: &Scenario,
    op: &Operation,
    ledger: &OperationLedger,
    run: &Run,
    found: &mut Found,
) {
    // A restart between two sends resets nothing the contract promises about spacing (a new
    // incarnation sends a SENT delivery again at once), so such pairs are not judged.
    let kills: Vec<u64> =
        run.timeline.iter().filter(|m| matches!(m.happening, Happening::Killed { .. })).map(|m| m.seq).collect();
    // After a restore the runtime counts sends from its backup's count, which may lack the lost
    // host's (CONTRACT.md section 13, "What cannot be owed"): its sends since the restore are the
    // least it can know of, and the backoff owed is counted from them.
    let restores: Vec<u64> =
        run.timeline.iter().filter(|m| matches!(m.happening, Happening::Restored { .. })).map(|m| m.seq).collect();
    let timed = |e: &Entry| format!("#{} {} (at {:.1} ms)", e.seq, describe_entry(e), e.at_micros as f64 / 1000.0);
    for destination in &op.destinations {
        let receipts = ledger.receipts_at(destination);
        for (i, pair) in receipts.windows(2).enumerate() {
            let (earlier, later) = (pair[0], pair[1]);
            let Event::ConsumerReceipt { status, .. } = &earlier.event else { continue };
            if (200..300).contains(status) || kills.iter().any(|&k| k > earlier.seq && k < later.seq) {
                continue;
            }
            // Every send the runtime counts reaches the consumer and every receipt is a counted
            // send (`truthful_status` holds the runtime to that), so the earlier receipt is the
            // runtime's send number i + 1, restarts before it included (their resends count).
            let restored = restores.iter().copied().filter(|&r| r < earlier.seq).max();
            let known = match restored {
                Some(r) => receipts[..=i].iter().filter(|e| e.seq > r).count(),
                None => i + 1,
            };
            let send = u32::try_from(known).unwrap_or(u32::MAX);
            let (exact, tolerated) = least_backoff_micros(scenario.runtime.retry_base_ms, send);
            let gap = later.at_micros.saturating_sub(earlier.at_micros);
            if gap < tolerated {
                found(
                    breach!(DeliveryBackoff, "§6-4"),
                    format!(
                        "`{}` was sent to `{destination}` again {:.1} ms after send {send}{} was answered {status}; the contract's backoff after send {send} is RETRY_BASE_MS {} × 2^{} = {:.1} ms (at least {:.1} ms with the tolerance)",
                        op.id,
                        gap as f64 / 1000.0,
                        if restored.is_some() { " since the restore" } else { "" },
                        scenario.runtime.retry_base_ms,
                        send - 1,
                        exact as f64 / 1000.0,
                        tolerated as f64 / 1000.0
                    ),
                    vec![timed(earlier), timed(later)],
                );
            }
        }
    }
}

pub(super) fn dead_letter_bound(
    scenario: &Scenario,
    op: &Operation,
    ledger: &OperationLedger,
    in_flight: &InFlight,
    report: Option<&OperationReport>,
    found: &mut Found,
) {
    let max = scenario.runtime.delivery_max_attempts;
    for destination in &op.destinations {
        let receipts = ledger.receipts_at(destination);
        let received = u32::try_from(receipts.len()).unwrap_or(u32::MAX);
        // A kill after a consumer took a send, before the runtime read or recorded its answer,
        // leaves the delivery SENT; the next incarnation sends it again even past the bound, since
        // that send's answer was lost, not refused (CONTRACT.md §6-5). One per such kill.
        let lost = in_flight.lost_answers(&op.id, destination);
        let allowed = max.saturating_add(u32::try_from(lost.len()).unwrap_or(u32::MAX));
        if received > allowed {
            let resent = if lost.is_empty() {
                String::new()
            } else {
                format!(" (plus {} resend(s) of a send whose answer a kill may have lost: {})", lost.len(), lines(lost))
            };
            found(
                breach!(DeadLetterBound, "§6-5"),
                format!(
                    "`{destination}` received `{}` {received} times; DELIVERY_MAX_ATTEMPTS is {max}{resent}, and a delivery is never sent more often",
                    op.id
                ),
                evidence(receipts.iter().copied()),
            );
            continue;
        }
        let Some(delivery) = dead_lettered(report, destination) else {
            continue;
        };
        // Never fewer: every counted send reaches the consumer, but for one whose SENT a kill may
        // have cut off before its request (`in_flight`): the runtime counted it, and rightly gives
        // up once its count reaches the bound.
        let cut = in_flight.sends(&op.id, destination);
        if counted_sends(receipts.len(), cut) < max {
            let counted = if cut.is_empty() {
                String::new()
            } else {
                format!(" (and {} send(s) a kill may have cut off before its request: {})", cut.len(), lines(cut))
            };
            found(
                breach!(DeadLetterBound, "§6-5"),
                format!(
                    "`{}` -> `{destination}` is reported DEAD_LETTERED ({}) after the consumer received it {received} time(s){counted}; DELIVERY_MAX_ATTEMPTS is {max}: it must be sent {max} times before it is given up",
                    op.id,
                    delivery.last_error.as_deref().unwrap_or("no last_error")
                ),
                evidence(receipts.iter().copied()),
            );
        }
    }
}
