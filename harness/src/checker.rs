//! The checker: judges a run against every invariant, separately, from the evidence.
//!
//! The ledgers are the ground truth; the runtime's reports are claims checked against them. Each
//! violation names the invariant, the operation and the ledger lines that prove it.

use crate::boundary::Boundary;
use crate::client::{DeliveryState, ExecutionState, OperationReport};
use crate::driver::{Happening, Hit, Run};
use crate::invariant::Invariant;
use crate::scenario::{Operation, Outcome, Scenario};
use crate::trace::describe_entry;
use fake_tool::{Effect, Entry, Event, Subject, ToolKind};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeSet, HashSet};

/// One broken promise, with its proof.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Violation {
    pub invariant: Invariant,
    pub operation: Option<String>,
    pub message: String,
    /// Ledger lines (`#seq text`) that show it.
    pub evidence: Vec<String>,
}

/// How one fault of the scenario was exercised.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    pub boundary: Boundary,
    pub operation: String,
    pub tool_kind: ToolKind,
    pub hit: Hit,
}

/// The checker's judgement of one run.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub scenario: String,
    /// Whether the runtime implemented the probe in this run.
    pub probe: bool,
    pub violations: Vec<Violation>,
    /// One entry per fault of the scenario, in file order.
    pub coverage: Vec<Coverage>,
}

/// A scenario's outcome in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every invariant held and every fault was exercised.
    Pass,
    /// Every invariant held, but some faults need the probe this runtime lacks: those boundaries
    /// are not certified.
    Partial,
    Fail,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.violations.is_empty()
    }

    pub fn status(&self) -> Status {
        if !self.violations.is_empty() {
            Status::Fail
        } else if self.coverage.iter().any(|c| c.hit == Hit::NeedsProbe) {
            Status::Partial
        } else {
            Status::Pass
        }
    }

    pub fn failed_invariants(&self) -> BTreeSet<Invariant> {
        self.violations.iter().map(|v| v.invariant).collect()
    }
}

fn evidence<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Vec<String> {
    entries.into_iter().map(|e| format!("#{} {}", e.seq, describe_entry(e))).collect()
}

/// What the ledger says about one operation.
struct OperationLedger<'a> {
    calls: Vec<&'a Entry>,
    lookups: Vec<&'a Entry>,
    receipts: Vec<&'a Entry>,
}

impl<'a> OperationLedger<'a> {
    fn of(ledger: &'a [Entry], id: &str) -> Self {
        let mine = |e: &&Entry| e.event.operation() == Some(id);
        OperationLedger {
            calls: ledger.iter().filter(mine).filter(|e| matches!(e.event, Event::ProviderCall { .. })).collect(),
            lookups: ledger.iter().filter(mine).filter(|e| matches!(e.event, Event::ProviderLookup { .. })).collect(),
            receipts: ledger.iter().filter(mine).filter(|e| matches!(e.event, Event::ConsumerReceipt { .. })).collect(),
        }
    }

    fn applied(&self) -> Vec<&'a Entry> {
        self.calls
            .iter()
            .copied()
            .filter(|e| matches!(&e.event, Event::ProviderCall { effect: Effect::Applied(_), .. }))
            .collect()
    }

    /// The provider's real outcomes: every effect's reference and result. Several only for a
    /// `safely_repeatable` tool (or a runtime that broke `at_most_once`).
    fn effects(&self) -> Vec<(String, Value)> {
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

/// Judges `run` of `scenario`.
pub fn check(scenario: &Scenario, run: &Run) -> Verdict {
    let mut violations = Vec::new();
    if let Some(reason) = &run.aborted {
        violations.push(Violation {
            invariant: Invariant::Settled,
            operation: None,
            message: format!("the run stopped early: {reason}"),
            evidence: Vec::new(),
        });
    }
    for (id, last_seen) in &run.unsettled {
        violations.push(Violation {
            invariant: Invariant::Settled,
            operation: Some(id.clone()),
            message: format!(
                "`{id}` did not settle within {:?} of the last restart; last seen: {last_seen}",
                scenario.deadline
            ),
            evidence: Vec::new(),
        });
    }
    for (i, (f, hit)) in scenario.faults.iter().zip(&run.hits).enumerate() {
        if *hit != Hit::NotReached {
            continue;
        }
        let destination = f.destination.as_deref().map(|d| format!(" -> {d}")).unwrap_or_default();
        let attempt = f.attempt.map(|a| format!(", attempt {a}")).unwrap_or_default();
        violations.push(Violation {
            invariant: Invariant::FaultsReached,
            operation: Some(f.operation.clone()),
            message: format!(
                "fault {} (`{}` of `{}`{destination}, occurrence {}{attempt}) was never reached, so this boundary was not exercised",
                i + 1,
                f.at,
                f.operation,
                f.occurrence
            ),
            evidence: Vec::new(),
        });
    }
    for op in &scenario.operations {
        let ledger = OperationLedger::of(&run.ledger, &op.id);
        let report = run.reports.get(&op.id);
        let mut found = |invariant, message: String, proof: Vec<String>| {
            violations.push(Violation { invariant, operation: Some(op.id.clone()), message, evidence: proof });
        };
        at_most_once(op, &ledger, &mut found);
        stable_keys(op, &ledger, &mut found);
        no_blind_retry(op, &ledger, &mut found);
        no_execution_for_delivery(op, &ledger, run, &mut found);
        delivered_once(scenario, op, &ledger, run, report, &mut found);
        policy_respected(op, &ledger, run, report, &mut found);
        if run.aborted.is_none() {
            truthful_status(op, &ledger, report, &mut found);
            // An expectation assumes every fault of the operation landed where the file says. One
            // that needs the probe (absent) or landed only approximately leaves the right outcome
            // open: the invariants still hold it to account, the expectation cannot.
            let uncertain = scenario
                .faults
                .iter()
                .zip(&run.hits)
                .any(|(f, hit)| f.operation == op.id && matches!(hit, Hit::NeedsProbe | Hit::Approximate));
            if !uncertain {
                expected_outcome(op, report, &mut found);
            }
        }
    }
    violations.sort_by(|a, b| a.invariant.cmp(&b.invariant).then(a.operation.cmp(&b.operation)));
    let coverage = scenario
        .faults
        .iter()
        .zip(&run.hits)
        .map(|(f, hit)| Coverage {
            boundary: f.at,
            operation: f.operation.clone(),
            tool_kind: scenario
                .operation(&f.operation)
                .expect("faults name operations of their scenario (checked when read)")
                .tool,
            hit: *hit,
        })
        .collect();
    Verdict { scenario: scenario.name.clone(), probe: run.probe, violations, coverage }
}

type Found<'f> = dyn FnMut(Invariant, String, Vec<String>) + 'f;

fn at_most_once(op: &Operation, ledger: &OperationLedger, found: &mut Found) {
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

fn stable_keys(op: &Operation, ledger: &OperationLedger, found: &mut Found) {
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
        let receipts: Vec<&Entry> = ledger
            .receipts
            .iter()
            .copied()
            .filter(|e| matches!(&e.event, Event::ConsumerReceipt { destination: d, .. } if d == destination))
            .collect();
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

fn no_blind_retry(op: &Operation, ledger: &OperationLedger, found: &mut Found) {
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

fn no_execution_for_delivery(op: &Operation, ledger: &OperationLedger, run: &Run, found: &mut Found) {
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

fn revocations<'a>(run: &'a Run, op: &Operation) -> Vec<(&'a Entry, &'a Subject)> {
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

fn delivered_once(
    scenario: &Scenario,
    op: &Operation,
    ledger: &OperationLedger,
    run: &Run,
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
        let dead = scenario.consumer_faults.iter().any(|c| c.destination == *destination && c.times.is_none());
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
            0 => found(
                Invariant::DeliveredOnce,
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
                        Invariant::DeliveredOnce,
                        format!(
                            "`{destination}` applied `{}` with a payload that is not the provider's result (one of {effects:?}): {payload}",
                            op.id
                        ),
                        evidence(applied),
                    );
                }
            }
            n => found(
                Invariant::DeliveredOnce,
                format!("`{destination}` applied `{}` {n} times; exactly once is required", op.id),
                evidence(applied),
            ),
        }
    }
}

fn policy_respected(
    op: &Operation,
    ledger: &OperationLedger,
    run: &Run,
    report: Option<&OperationReport>,
    found: &mut Found,
) {
    for (revocation, subject) in revocations(run, op) {
        let forbidden: Vec<&Entry> = match subject {
            Subject::Tool(t) if t == op.tool.tool_name() => {
                ledger.calls.iter().copied().filter(|e| e.seq > revocation.seq).collect()
            }
            Subject::Operation(o) if *o == op.id => {
                ledger.calls.iter().copied().filter(|e| e.seq > revocation.seq).collect()
            }
            Subject::Destination(d) => ledger
                .receipts
                .iter()
                .copied()
                .filter(|e| {
                    e.seq > revocation.seq
                        && matches!(&e.event, Event::ConsumerReceipt { destination, .. } if destination == d)
                })
                .collect(),
            Subject::Tool(_) | Subject::Operation(_) => Vec::new(),
        };
        if !forbidden.is_empty() {
            found(
                Invariant::PolicyRespected,
                format!("`{}`: {subject} was revoked at #{} but was used afterwards", op.id, revocation.seq),
                evidence(std::iter::once(revocation).chain(forbidden)),
            );
        }
    }
    if let Some(r) = report
        && let Some(failure) = &r.failure
        && failure.reason.starts_with("policy:")
        && r.audit.is_empty()
    {
        found(
            Invariant::PolicyRespected,
            format!("`{}` was refused by policy but its audit trail is empty; the history must be kept", op.id),
            Vec::new(),
        );
    }
}

fn truthful_status(op: &Operation, ledger: &OperationLedger, report: Option<&OperationReport>, found: &mut Found) {
    let Some(report) = report else {
        found(
            Invariant::TruthfulStatus,
            format!("the runtime could not report `{}` (GET /operations/{})", op.id, op.id),
            Vec::new(),
        );
        return;
    };
    let calls = ledger.calls.len() as u32;
    if report.attempts < calls {
        found(
            Invariant::TruthfulStatus,
            format!(
                "`{}` reports {} attempt(s) but the provider saw {calls} call(s): an attempt was made that the runtime did not record",
                op.id, report.attempts
            ),
            evidence(ledger.calls.iter().copied()),
        );
    }
    let effects = ledger.effects();
    match report.execution {
        ExecutionState::Succeeded => {
            match effects.iter().find(|(r, _)| Some(r) == report.provider_ref.as_ref()) {
                None => found(
                    Invariant::TruthfulStatus,
                    format!(
                        "`{}` reports SUCCEEDED with provider_ref {:?}; the provider's effects for it are {:?}",
                        op.id,
                        report.provider_ref,
                        effects.iter().map(|(r, _)| r).collect::<Vec<_>>()
                    ),
                    evidence(ledger.calls.iter().copied()),
                ),
                Some((_, result)) if report.result.as_ref() != Some(result) => found(
                    Invariant::TruthfulStatus,
                    format!("`{}` reports result {:?}; the provider returned {result}", op.id, report.result),
                    evidence(ledger.calls.iter().copied()),
                ),
                Some(_) => {}
            }
            for destination in &op.destinations {
                match report.deliveries.iter().find(|d| d.destination == *destination) {
                    None => found(
                        Invariant::TruthfulStatus,
                        format!("`{}` reports SUCCEEDED but has no delivery record for `{destination}`", op.id),
                        Vec::new(),
                    ),
                    Some(d) if d.state == DeliveryState::Acked => {
                        let received = ledger.receipts.iter().any(|e| {
                                matches!(&e.event, Event::ConsumerReceipt { destination: x, status, .. } if x == destination && (200..300).contains(status))
                            });
                        if !received {
                            found(
                                Invariant::TruthfulStatus,
                                format!(
                                    "`{}` reports `{destination}` ACKED but that consumer never accepted it",
                                    op.id
                                ),
                                evidence(ledger.receipts.iter().copied()),
                            );
                        }
                    }
                    Some(_) => {}
                }
            }
        }
        ExecutionState::Failed => {
            let applied = ledger.applied();
            if !applied.is_empty() {
                found(
                    Invariant::TruthfulStatus,
                    format!("`{}` reports FAILED but the provider applied its effect", op.id),
                    evidence(applied),
                );
            }
        }
        ExecutionState::IntentRecorded | ExecutionState::Dispatched | ExecutionState::Unknown => {}
    }
}

fn expected_outcome(op: &Operation, report: Option<&OperationReport>, found: &mut Found) {
    let Some(report) = report else { return };
    let actual = match (report.execution, &report.failure) {
        (ExecutionState::Succeeded, _) => Some(Outcome::Succeeded),
        (ExecutionState::Failed, Some(f)) if f.reason.starts_with("policy:") => Some(Outcome::Refused),
        (ExecutionState::Failed, _) => Some(Outcome::Failed),
        (ExecutionState::Unknown, _) if report.paused => Some(Outcome::Paused),
        _ => None,
    };
    if actual != Some(op.expect) {
        found(
            Invariant::ExpectedOutcome,
            format!("`{}` was expected to end {}, but ended {}", op.id, op.expect, report.summary()),
            Vec::new(),
        );
    }
}
