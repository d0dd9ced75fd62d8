//! The execution family: at most one side effect per operation, one idempotency key per operation
//! (at the provider, and per destination at each consumer), no blind retry after an unknown
//! outcome, and no execution once a success is confirmed.

use super::ledger::{Found, OperationLedger, evidence};
use crate::model::boundary::Boundary;
use crate::model::invariant::Invariant;
use crate::run::driver::{Happening, Run};
use crate::scenario::Operation;
use fake_tool::{Entry, Event, ToolKind};
use std::collections::BTreeSet;

pub(super) fn at_most_once(op: &Operation, ledger: &OperationLedger, found: &mut Found) {
    let applied = ledger.applied();
    if op.tool.duplicate_is_harmful() && applied.len() > 1 {
        found(
            Invariant::AtMostOnce,
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
            Invariant::StableProviderKey,
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
                Invariant::StableDeliveryKey,
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

pub(super) fn no_blind_retry(op: &Operation, ledger: &OperationLedger, found: &mut Found) {
    if op.tool == ToolKind::SafelyRepeatable {
        return;
    }
    for pair in ledger.calls.windows(2) {
        let (before, after) = (pair[0], pair[1]);
        if !op.tool.supports_lookup() {
            found(
                Invariant::NoBlindRetry,
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
        found(Invariant::NoBlindRetry, message, evidence(std::iter::once(before).chain(between).chain([after])));
    }
}

pub(super) fn no_execution_for_delivery(op: &Operation, ledger: &OperationLedger, run: &Run, found: &mut Found) {
    let found_by_lookup =
        ledger.lookups.iter().filter(|e| matches!(e.event, Event::ProviderLookup { found: true, .. })).map(|e| e.seq);
    let first_delivery = ledger.receipts.iter().map(|e| e.seq);
    let result_written = run.timeline.iter().filter_map(|m| match &m.happening {
        Happening::Boundary { message, .. }
            if message.boundary == Boundary::AfterResultWrite && message.operation_id == op.id =>
        {
            Some(m.seq)
        }
        _ => None,
    });
    let Some(confirmed) = found_by_lookup.chain(first_delivery).chain(result_written).min() else {
        return;
    };
    let late: Vec<&Entry> = ledger.calls.iter().copied().filter(|e| e.seq > confirmed).collect();
    if !late.is_empty() {
        found(
            Invariant::NoExecutionForDelivery,
            format!(
                "`{}` reached the provider {} more time(s) after its success was confirmed at #{confirmed}",
                op.id,
                late.len()
            ),
            evidence(late),
        );
    }
}
