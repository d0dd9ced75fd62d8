//! The execution family: at most one side effect per operation, one idempotency key per operation
//! (at the provider, and per destination at each consumer), no blind retry after an unknown
//! outcome, and no execution once a success is confirmed.

use super::ledger::{Found, OperationLedger, evidence};
use super::rules::breach::{Breach, breach};
use crate::model::boundary::Boundary;
use crate::run::driver::{Happening, Run};
use crate::scenario::Operation;
use fake_tool::{Entry, Event, Response, ToolKind};
use std::collections::BTreeSet;

pub(super) fn at_most_once(op: &Operation, ledger: &OperationLedger, found: &mut Found) {
    let applied = ledger.applied();
    if op.tool.duplicate_is_harmful() && applied.len() > 1 {
        found(
            breach!(AtMostOnce, "§5-1"),
            format!(
                "`{}` ({}) caused {} side effects at the provider; at most 1 is allowed",
                op.id,
                op.tool.as_str(),
                applied.len()
            ),
            evidence(applied),
        );
    }
}

pub(super) fn stable_keys(op: &Operation, ledger: &OperationLedger, found: &mut Found) {
    let keys: BTreeSet<Option<&str>> = ledger
        .calls
        .iter()
        .filter_map(|e| match &e.event {
            Event::ProviderCall { idempotency_key, .. } => Some(idempotency_key.as_deref()),
            _ => None,
        })
        .collect();
    if keys.len() > 1 || keys.contains(&None) {
        found(
            breach!(StableProviderKey, "§4-5"),
            format!(
                "`{}` reached the provider with {} different idempotency keys ({}); one stable key is required",
                op.id,
                keys.len(),
                show_keys(&keys)
            ),
            evidence(ledger.calls.iter().copied()),
        );
    }
    for destination in &op.destinations {
        let receipts = ledger.receipts_at(destination);
        let keys: BTreeSet<Option<&str>> = receipts
            .iter()
            .filter_map(|e| match &e.event {
                Event::ConsumerReceipt { idempotency_key, .. } => Some(idempotency_key.as_deref()),
                _ => None,
            })
            .collect();
        if keys.len() > 1 || keys.contains(&None) {
            found(
                breach!(StableDeliveryKey, "§6-2"),
                format!(
                    "`{}` reached `{destination}` with {} different idempotency keys ({}); one stable key per destination is required",
                    op.id,
                    keys.len(),
                    show_keys(&keys)
                ),
                evidence(receipts),
            );
        }
    }
}

fn show_keys(keys: &BTreeSet<Option<&str>>) -> String {
    keys.iter().map(|k| k.map_or("<none>".to_owned(), |k| format!("`{k}`"))).collect::<Vec<_>>().join(", ")
}

pub(super) fn no_blind_retry(op: &Operation, ledger: &OperationLedger, run: &Run, found: &mut Found) {
    if op.tool == ToolKind::SafelyRepeatable {
        return;
    }
    let recorded = recorded_at(op, ledger, run);
    for pair in ledger.calls.windows(2) {
        let (before, after) = (pair[0], pair[1]);
        if !op.tool.supports_lookup() {
            found(
                breach!(NoBlindRetry, "§4-13"),
                format!(
                    "`{}` uses {} ({}), which has no lookup: after an unknown outcome it must be paused, but it was attempted again",
                    op.id,
                    op.tool.tool_name(),
                    op.tool.as_str()
                ),
                evidence([before, after]),
            );
            continue;
        }
        // Only a lookup that answered "not found" about the previous attempt permits another: a
        // 5xx, a dropped connection or an unreadable body said nothing (CONTRACT.md §4 step 9).
        let key_of = |e: &Entry| match &e.event {
            Event::ProviderCall { idempotency_key, .. } => idempotency_key.clone(),
            _ => None,
        };
        let attempted_key = key_of(before);
        let between: Vec<&Entry> =
            ledger.lookups.iter().copied().filter(|l| l.seq > before.seq && l.seq < after.seq).collect();
        let about_that_attempt = |l: &Entry| match &l.event {
            Event::ProviderLookup { by_ref: Some(_), .. } => true,
            Event::ProviderLookup { by_key, .. } => by_key.is_some() && *by_key == attempted_key,
            _ => false,
        };
        if between.iter().any(|l| l.event.is_lookup_not_found() && about_that_attempt(l)) {
            continue;
        }
        let not_found_elsewhere: BTreeSet<&str> = between
            .iter()
            .filter(|l| l.event.is_lookup_not_found())
            .filter_map(|l| match &l.event {
                Event::ProviderLookup { by_key: Some(k), .. } => Some(k.as_str()),
                _ => None,
            })
            .collect();
        let attempted = attempted_key.as_deref().map_or("no key".to_owned(), |k| format!("key `{k}`"));
        let breach = if recorded.is_some_and(|c| c < after.seq) {
            // Not a retry of an unknown outcome: an execution after a recorded success (§4-14).
            breach!(NoBlindRetry, "§4-14")
        } else if between.is_empty() {
            retried_unlooked(before, after)
        } else if !not_found_elsewhere.is_empty() {
            // The lookup that permits a new attempt is of the last attempt, by its key (§4-11).
            breach!(NoBlindRetry, "§4-11")
        } else {
            // Lookups were made, and one that did not answer was acted on.
            breach!(NoBlindRetry, "§4-12")
        };
        let message = if between.is_empty() {
            format!("`{}` was attempted again without a provider lookup after the previous attempt", op.id)
        } else if !not_found_elsewhere.is_empty() {
            format!(
                "`{}` was attempted again after lookups under {} answered \"not found\", but the previous attempt was sent with {attempted}: nothing said that attempt had no effect",
                op.id,
                not_found_elsewhere.iter().map(|k| format!("key `{k}`")).collect::<Vec<_>>().join(", ")
            )
        } else {
            format!(
                "`{}` was attempted again although no lookup since the previous attempt answered \"not found\" (404); {} lookup(s) were made, and an answer that is not a 404 (an error, a dropped connection, an unreadable body) is no answer",
                op.id,
                between.len()
            )
        };
        found(breach, message, evidence(std::iter::once(before).chain(between).chain([after])));
    }
}

/// The rules a second attempt with no lookup since `before` breaks, by what the runtime knew of
/// `before`: across a restart, an attempt an earlier incarnation may have sent (§4-10); in one
/// incarnation, an answer that said nothing (§4-8), a refusal (§4-7) or a success (§4-14).
fn retried_unlooked(before: &Entry, after: &Entry) -> Breach {
    let answer = match &before.event {
        Event::ProviderCall { response, .. } => Some(response),
        _ => None,
    };
    if before.incarnation != after.incarnation || before.incarnation.is_none() {
        return breach!(NoBlindRetry, "§4-10", "§4-11");
    }
    match answer {
        Some(Response::Sent(status)) if (400..500).contains(status) => breach!(NoBlindRetry, "§4-7"),
        Some(Response::Sent(status)) if (200..300).contains(status) => breach!(NoBlindRetry, "§4-14"),
        _ => breach!(NoBlindRetry, "§4-8", "§4-11"),
    }
}

pub(super) fn no_execution_for_delivery(op: &Operation, ledger: &OperationLedger, run: &Run, found: &mut Found) {
    let Some(confirmed) = confirmed_at(op, ledger, run) else {
        return;
    };
    let late: Vec<&Entry> = ledger.calls.iter().copied().filter(|e| e.seq > confirmed).collect();
    if late.is_empty() {
        return;
    }
    // After a delivery went out, a call is a delivery retry's or a recovery's after one (§6-6);
    // after a success the runtime recorded, a call it must not make (§4-14); after one only a
    // lookup found, and a kill took before it was recorded, a reconciliation that did not
    // reconcile: step 9 makes a found effect SUCCEEDED, and looks it up again after a restart (§4-11).
    let after_delivery = ledger.receipts.first().is_some_and(|r| late.iter().any(|c| c.seq > r.seq));
    let after_record = recorded_at(op, ledger, run).is_some_and(|r| late.iter().any(|c| c.seq > r));
    let breach = match (after_delivery, after_record) {
        (true, _) => breach!(NoExecutionForDelivery, "§4-14", "§6-6"),
        (false, true) => breach!(NoExecutionForDelivery, "§4-14"),
        (false, false) => breach!(NoExecutionForDelivery, "§4-11"),
    };
    found(
        breach,
        format!(
            "`{}` reached the provider {} more time(s) after its success was confirmed at #{confirmed}",
            op.id,
            late.len()
        ),
        evidence(late),
    );
}

/// Where `op`'s success was first confirmed: a lookup found it, or the runtime recorded it.
fn confirmed_at(op: &Operation, ledger: &OperationLedger, run: &Run) -> Option<u64> {
    let found_by_lookup =
        ledger.lookups.iter().filter(|e| matches!(e.event, Event::ProviderLookup { found: true, .. })).map(|e| e.seq);
    found_by_lookup.chain(recorded_at(op, ledger, run)).min()
}

/// Where `op`'s success was first on the runtime's record: a delivery went out, or it announced
/// its result written.
fn recorded_at(op: &Operation, ledger: &OperationLedger, run: &Run) -> Option<u64> {
    let first_delivery = ledger.receipts.iter().map(|e| e.seq);
    let result_written = run.timeline.iter().filter_map(|m| match &m.happening {
        Happening::Boundary { message, .. }
            if message.boundary == Boundary::AfterResultWrite && message.operation_id == op.id =>
        {
            Some(m.seq)
        }
        _ => None,
    });
    first_delivery.chain(result_written).min()
}
