//! What the families share: one operation's part of the ledger, the ledger lines given as
//! evidence, and how a family reports what it found.

use super::rules::breach::Breach;
use crate::run::driver::Run;
use crate::run::trace::describe_entry;
use crate::scenario::Operation;
use fake_tool::{Effect, Entry, Event, Subject};
use serde_json::Value;

pub(super) fn evidence<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Vec<String> {
    entries.into_iter().map(|e| format!("#{} {}", e.seq, describe_entry(e))).collect()
}

/// The ledger `seq` an [`evidence`] line names (`None` for a line that is not one of them).
pub(super) fn seq_of(line: &str) -> Option<u64> {
    line.strip_prefix('#')?.split(' ').next()?.parse().ok()
}

/// What the ledger says about one operation.
pub(super) struct OperationLedger<'a> {
    pub(super) calls: Vec<&'a Entry>,
    pub(super) lookups: Vec<&'a Entry>,
    pub(super) receipts: Vec<&'a Entry>,
}

impl<'a> OperationLedger<'a> {
    pub(super) fn of(ledger: &'a [Entry], id: &str) -> Self {
        let mine = |e: &&Entry| e.event.operation() == Some(id);
        OperationLedger {
            calls: ledger.iter().filter(mine).filter(|e| matches!(e.event, Event::ProviderCall { .. })).collect(),
            lookups: ledger.iter().filter(mine).filter(|e| matches!(e.event, Event::ProviderLookup { .. })).collect(),
            receipts: ledger.iter().filter(mine).filter(|e| matches!(e.event, Event::ConsumerReceipt { .. })).collect(),
        }
    }

    /// Every receipt of this operation at `destination`, in ledger order.
    pub(super) fn receipts_at(&self, destination: &str) -> Vec<&'a Entry> {
        self.receipts
            .iter()
            .copied()
            .filter(|e| matches!(&e.event, Event::ConsumerReceipt { destination: d, .. } if d == destination))
            .collect()
    }

    pub(super) fn applied(&self) -> Vec<&'a Entry> {
        self.calls
            .iter()
            .copied()
            .filter(|e| matches!(&e.event, Event::ProviderCall { effect: Effect::Applied(_), .. }))
            .collect()
    }

    /// The provider's real outcomes: every effect's reference and result. Several only for a
    /// `safely_repeatable` tool (or a runtime that broke `at_most_once`).
    pub(super) fn effects(&self) -> Vec<(String, Value)> {
        let mut effects: Vec<(String, Value)> = Vec::new();
        for e in &self.calls {
            if let Event::ProviderCall {
                effect: Effect::Applied(r) | Effect::Replayed(r), result: Some(result), ..
            } = &e.event
                && !effects.iter().any(|(known, _)| known == r)
            {
                effects.push((r.clone(), result.clone()));
            }
        }
        effects
    }
}

/// Where a family reports what it found about one operation: the invariant and the rules this
/// finding breaks, the message and the proof (the operation is the caller's).
pub(super) type Found<'f> = dyn FnMut(Breach, String, Vec<String>) + 'f;

/// "`charge_card-000001` with result {…}, …", or "none" when the provider applied nothing.
pub(super) fn show_effects(effects: &[(String, Value)]) -> String {
    if effects.is_empty() {
        return "none: the provider applied nothing for it".to_owned();
    }
    effects.iter().map(|(r, result)| format!("`{r}` with result {result}")).collect::<Vec<_>>().join(", ")
}

/// The revocations in the ledger that apply to `op`: its tenant, and its actor or every actor.
pub(super) fn revocations<'a>(run: &'a Run, op: &Operation) -> Vec<(&'a Entry, &'a Subject)> {
    run.ledger
        .iter()
        .filter_map(|e| match &e.event {
            Event::Revocation { tenant, actor, subject }
                if *tenant == op.tenant && actor.as_ref().is_none_or(|a| *a == op.actor) =>
            {
                Some((e, subject))
            }
            _ => None,
        })
        .collect()
}
