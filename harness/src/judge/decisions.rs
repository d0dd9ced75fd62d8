//! `one_decision`: the model decides, and the runtime acts on one decision per task operation
//! (CONTRACT.md §12-3).
//!
//! The model answers differently each time it is asked, and plants the id of each answer in its
//! arguments (`_killpoint.decision`); the provider records the arguments of every call. So the
//! ledger says which answer every effect acted on, whatever key the runtime used: two effects of
//! one operation from two answers are two decisions acted on — the divergence no idempotency key
//! can catch, since the two requests are honestly different. A call the provider did not apply
//! (refused, failed before the effect) acted on nothing. Asking the model again is no violation,
//! only a cost: [`reasked`] counts it for the report.

use super::ledger::evidence;
use super::rules::breach::breach;
use super::verdict::{Reasked, Violation};
use crate::run::driver::Run;
use crate::scenario::{Operation, Scenario};
use fake_tool::{Effect, Entry, Event, ModelAnswer};
use serde_json::Value;

/// The model's answer `id` for operation `op`: its ledger entry and the arguments it chose.
pub(super) fn answer<'a>(run: &'a Run, op: &str, id: &str) -> Option<(&'a Entry, &'a Value)> {
    run.ledger.iter().find_map(|e| match &e.event {
        Event::ModelCall { operation: Some(o), answer: ModelAnswer::ToolCall { id: i, arguments, .. }, .. }
            if o == op && i == id =>
        {
            Some((e, arguments))
        }
        _ => None,
    })
}

/// The arguments of every decision the model gave for operation `op`.
pub(super) fn answers<'a>(run: &'a Run, op: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    run.ledger.iter().filter_map(move |e| match &e.event {
        Event::ModelCall { operation: Some(o), answer: ModelAnswer::ToolCall { arguments, .. }, .. } if o == op => {
            Some(arguments)
        }
        _ => None,
    })
}

/// The decision a call's arguments name.
fn decision_of(entry: &Entry) -> Option<&str> {
    match &entry.event {
        Event::ProviderCall { arguments: Some(a), .. } => a.pointer("/_killpoint/decision").and_then(Value::as_str),
        _ => None,
    }
}

/// The calls of `op` the provider acted on (applied, or replayed an effect for), in ledger order.
fn acted_on<'a>(run: &'a Run, op: &Operation) -> Vec<&'a Entry> {
    run.ledger
        .iter()
        .filter(|e| match &e.event {
            Event::ProviderCall { operation: Some(o), effect, .. } => {
                *o == op.id && matches!(effect, Effect::Applied(_) | Effect::Replayed(_))
            }
            _ => false,
        })
        .collect()
}

/// §12-3 for every task of the scenario.
pub(super) fn one_decision(scenario: &Scenario, run: &Run, violations: &mut Vec<Violation>) {
    for op in scenario.operations.iter().filter(|op| op.task) {
        let calls = acted_on(run, op);
        let mut decisions: Vec<(&str, &Entry)> = Vec::new();
        for call in &calls {
            let id = decision_of(call).unwrap_or("(none)");
            if !decisions.iter().any(|(d, _)| *d == id) {
                decisions.push((id, call));
            }
        }
        if decisions.len() < 2 {
            continue;
        }
        let shown: Vec<String> = decisions.iter().map(|(id, call)| describe(run, op, id, call)).collect();
        let mut lines: Vec<&Entry> =
            decisions.iter().filter_map(|(id, _)| answer(run, &op.id, id).map(|(e, _)| e)).collect();
        lines.extend(calls.iter().copied());
        lines.sort_by_key(|e| e.seq);
        violations.push(Violation::new(
            breach!(OneDecision, "§12-3"),
            Some(op.id.clone()),
            format!(
                "the task `{}` acted on {} different decisions of the model: {}. Once a call made on a decision may have reached the provider, the runtime must act on that decision only: record it before acting and reuse it, or re-decide only after a lookup by a key that does not depend on the decision found no effect (CONTRACT.md §12-3)",
                op.id,
                decisions.len(),
                shown.join("; then "),
            ),
            evidence(lines),
        ));
    }
}

/// "`call_x_1` (charge_card {"amount_cents":4213,…}, asked at #7), acted on at #12 (applied charge_card-000001)"
fn describe(run: &Run, op: &Operation, id: &str, call: &Entry) -> String {
    let effect = match &call.event {
        Event::ProviderCall { effect: Effect::Applied(r), .. } => format!("applied {r}"),
        Event::ProviderCall { effect: Effect::Replayed(r), .. } => format!("replayed {r}"),
        _ => "acted on".to_owned(),
    };
    let asked = match answer(run, &op.id, id) {
        Some((entry, arguments)) => {
            let mut shown = arguments.clone();
            if let Some(fields) = shown.as_object_mut() {
                fields.remove("_killpoint");
            }
            format!("{shown}, answered at #{}", entry.seq)
        }
        None => "an answer the model never gave".to_owned(),
    };
    format!("`{id}` ({asked}) acted on at #{} ({effect})", call.seq)
}

/// Task operations whose model was asked for a decision more than once: a cost (each question
/// is paid for, and each answer is another decision that must not be acted on), not a violation.
pub(super) fn reasked(scenario: &Scenario, run: &Run) -> Vec<Reasked> {
    scenario
        .operations
        .iter()
        .filter(|op| op.task)
        .filter_map(|op| {
            let decisions = run
                .ledger
                .iter()
                .filter(|e| {
                    matches!(&e.event, Event::ModelCall { operation: Some(o), answer: ModelAnswer::ToolCall { .. }, .. } if *o == op.id)
                })
                .count();
            let decisions = u32::try_from(decisions).unwrap_or(u32::MAX);
            (decisions > 1).then(|| Reasked { operation: op.id.clone(), decisions })
        })
        .collect()
}
