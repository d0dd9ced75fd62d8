//! The checker: judges a run against every invariant, separately, from the evidence.
//!
//! The ledgers are the ground truth; the runtime's reports are claims checked against them. Each
//! violation names the invariant, the operation and the ledger lines that prove it.

pub mod rules;

use crate::model::boundary::Boundary;
use crate::model::invariant::Invariant;
use crate::run::client::Resubmission;
use crate::run::client::{DeliveryState, ExecutionState, OperationReport};
use crate::run::driver::{Happening, Hit, Run};
use crate::run::trace::{describe_entry, describe_mark};
use crate::scenario::{Operation, Outcome, Scenario};
use fake_tool::{Effect, Entry, Event, PolicyAnswer, Response, Subject, ToolKind};
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
    /// The harness failed during the run (what failed): nothing was judged.
    pub error: Option<String>,
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
    /// The harness itself failed (its run directory vanished, a log could not be written…): the
    /// runtime was not judged, neither passed nor failed.
    Error,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.violations.is_empty() && self.error.is_none()
    }

    pub fn status(&self) -> Status {
        if self.error.is_some() {
            Status::Error
        } else if !self.violations.is_empty() {
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

    /// Every receipt of this operation at `destination`, in ledger order.
    fn receipts_at(&self, destination: &str) -> Vec<&'a Entry> {
        self.receipts
            .iter()
            .copied()
            .filter(|e| matches!(&e.event, Event::ConsumerReceipt { destination: d, .. } if d == destination))
            .collect()
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
    let coverage = coverage(scenario, run);
    if let Some(failure) = &run.harness_failure {
        // The record is incomplete for a reason that is not the runtime's: blaming it for an
        // abort or an unsettled operation would be a lie, and so would a pass.
        let error = Some(failure.clone());
        return Verdict { scenario: scenario.name.clone(), probe: run.probe, violations, coverage, error };
    }
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
    // After a run that stopped early, every fault not yet reached is a knock-on of that one
    // cause: one line says so, the faults are its evidence.
    let mut knock_on = Vec::new();
    for (i, (f, hit)) in scenario.faults.iter().zip(&run.hits).enumerate() {
        if *hit != Hit::NotReached || gave_up_before(scenario, f, run) {
            continue;
        }
        let destination = f.destination.as_deref().map(|d| format!(" -> {d}")).unwrap_or_default();
        let attempt = f.attempt.map(|a| format!(", attempt {a}")).unwrap_or_default();
        if run.aborted.is_some() {
            knock_on.push(format!(
                "fault {} (`{}` of `{}`{destination}, occurrence {}{attempt})",
                i + 1,
                f.at,
                f.operation,
                f.occurrence
            ));
            continue;
        }
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
    if !knock_on.is_empty() {
        violations.push(Violation {
            invariant: Invariant::FaultsReached,
            operation: None,
            message: format!(
                "{} fault(s) never reached because the run stopped early (see `settled`), so their boundaries were not exercised",
                knock_on.len()
            ),
            evidence: knock_on,
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
        policy_checked(op, &ledger, run, &mut found);
        delivery_backoff(scenario, op, &ledger, run, &mut found);
        dead_letter_bound(scenario, op, &ledger, run, report, &mut found);
        if run.aborted.is_none() {
            // An approximate kill lands wherever the runtime happens to be, possibly between a
            // write-ahead and its request: each may leave one count the ledger cannot show.
            let slack = u32::try_from(run.hits.iter().filter(|h| **h == Hit::Approximate).count())
                .unwrap_or(u32::MAX)
                .saturating_add(kills_beside(scenario, run, op))
                // A system-call kill can land exactly between a write-ahead and its request.
                .saturating_add(u32::try_from(run.syscall_hits.iter().filter(|h| **h).count()).unwrap_or(u32::MAX));
            truthful_status(op, &ledger, report, slack, &mut found);
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
    intent_durable(run, &mut violations);
    metrics_agree(scenario, run, &mut violations);
    idempotent_submission(run, &mut violations);
    fenced(run, &mut violations);
    if run.aborted.is_none() {
        world_faults_reached(scenario, run, &mut violations);
        syscall_faults_reached(scenario, run, &mut violations);
    }
    violations.sort_by(|a, b| a.invariant.cmp(&b.invariant).then(a.operation.cmp(&b.operation)));
    Verdict { scenario: scenario.name.clone(), probe: run.probe, violations, coverage, error: None }
}

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
        Event::Revocation { .. } => None,
    }
}

/// Contract §9. Judged only on what the evidence proves: a request without the header; a request
/// of an outlived incarnation, after it was resumed, in the flow it was frozen in (the boundary
/// it was frozen at is followed by a commit, which its fenced store refuses, before any request
/// of that flow); a request in a flow after that flow was answered `409 fenced`; a resumed
/// incarnation still running at the deadline.
fn fenced(run: &Run, violations: &mut Vec<Violation>) {
    let unmarked: Vec<&Entry> = run.ledger.iter().filter(|e| flow(e).is_some() && e.incarnation.is_none()).collect();
    if let Some(first) = unmarked.first() {
        violations.push(Violation {
            invariant: Invariant::Fenced,
            operation: first.event.operation().map(str::to_owned),
            message: format!(
                "{} request(s) to the fake world carried no `Killpoint-Incarnation` header (the first at #{}); every request must carry the incarnation's number, the fencing token that lets the world refuse an outlived incarnation",
                unmarked.len(),
                first.seq
            ),
            evidence: evidence(unmarked.iter().copied().take(5)),
        });
    }
    for mark in &run.timeline {
        match &mark.happening {
            Happening::Resumed { incarnation, message } => {
                let frozen_flow = (Some(message.operation_id.as_str()), message.destination.as_deref());
                let late: Vec<&Entry> = run
                    .ledger
                    .iter()
                    .filter(|e| e.seq > mark.seq && e.incarnation == Some(*incarnation))
                    .filter(|e| flow(e).is_some_and(|f| f.0 == frozen_flow.0 && (f.1 == frozen_flow.1 || message.destination.is_none())))
                    .collect();
                if !late.is_empty() {
                    violations.push(Violation {
                        invariant: Invariant::Fenced,
                        operation: Some(message.operation_id.clone()),
                        message: format!(
                            "incarnation {incarnation}, frozen at `{}` of `{}` and outlived by incarnation {}, sent {} request(s) for it after it was resumed: a commit had to come first, and a newer incarnation had fenced its store; it must have exited instead",
                            message.boundary,
                            message.operation_id,
                            incarnation + 1,
                            late.len()
                        ),
                        evidence: evidence(late),
                    });
                }
            }
            Happening::ZombieOutlived { incarnation, waited } => violations.push(Violation {
                invariant: Invariant::Fenced,
                operation: None,
                message: format!(
                    "incarnation {incarnation}, outlived by a newer one and then resumed, was still running {:.1} s later; a fenced incarnation must exit at once (the harness SIGKILLed it)",
                    waited.as_secs_f64()
                ),
                evidence: Vec::new(),
            }),
            _ => {}
        }
    }
    for refusal in run.ledger.iter().filter(|e| matches!(e.event, Event::Fenced { .. })) {
        let refused_flow = flow(refusal);
        let after: Vec<&Entry> = run
            .ledger
            .iter()
            .filter(|e| e.seq > refusal.seq && e.incarnation == refusal.incarnation && flow(e) == refused_flow)
            .collect();
        if !after.is_empty() {
            let incarnation = refusal.incarnation.map_or("?".to_owned(), |n| n.to_string());
            violations.push(Violation {
                invariant: Invariant::Fenced,
                operation: refusal.event.operation().map(str::to_owned),
                message: format!(
                    "incarnation {incarnation} was answered `409 fenced` at #{} and went on with {} more request(s) of the same work; a fenced incarnation must exit at once",
                    refusal.seq,
                    after.len()
                ),
                evidence: evidence(std::iter::once(refusal).chain(after)),
            });
            // One proof is enough: later refusals only repeat it.
            break;
        }
    }
}

fn coverage(scenario: &Scenario, run: &Run) -> Vec<Coverage> {
    scenario
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
        .collect()
}

/// A provider fault on a call the runtime never made because it gave up first, as an operation
/// expected `succeeded_or_gave_up` may: a runtime's attempt bound is its own choice (CONTRACT.md
/// §4 step 11), so a lower one than the scenario's faults assume leaves them unreached
/// without any fault of the runtime's.
fn gave_up_before(scenario: &Scenario, fault: &crate::scenario::Fault, run: &Run) -> bool {
    let Some(op) = scenario.operation(&fault.operation) else { return false };
    let calls = OperationLedger::of(&run.ledger, &op.id).calls.len();
    let gave_up = run.reports.get(&op.id).is_some_and(|r| {
        (r.execution == ExecutionState::Failed && r.failure.as_ref().is_some_and(|f| !f.reason.starts_with("policy:")))
            || (r.execution == ExecutionState::Unknown && r.paused)
    });
    fault.at == Boundary::AfterDispatch
        && fault.action != crate::scenario::Action::Kill
        && op.expect == Outcome::SucceededOrGaveUp
        && gave_up
        && calls < fault.occurrence as usize
}

/// A `[[syscall_fault]]` whose point the runtime never passed: that crash point was not exercised.
fn syscall_faults_reached(scenario: &Scenario, run: &Run, violations: &mut Vec<Violation>) {
    for (i, fault) in scenario.syscall_faults.iter().enumerate() {
        if run.syscall_hits.get(i) != Some(&true) {
            violations.push(Violation {
                invariant: Invariant::FaultsReached,
                operation: None,
                message: format!(
                    "syscall fault {} ({}) was never reached, so that crash point was not exercised",
                    i + 1,
                    fault.describe()
                ),
                evidence: Vec::new(),
            });
        }
    }
}

/// Lookup and policy faults count as reached only when the fake world spoilt as many answers as
/// the file says (a dead policy service: at least one). A runtime that stopped asking before then
/// — e.g. one that took a failed lookup for "not found" and retried — left the fault, and the
/// rule it tests, unexercised.
fn world_faults_reached(scenario: &Scenario, run: &Run, violations: &mut Vec<Violation>) {
    for fault in &scenario.lookup_faults {
        let spoilt = run
            .ledger
            .iter()
            .filter(|e| {
                matches!(&e.event, Event::ProviderLookup { operation: Some(o), injected: Some(_), .. } if *o == fault.operation)
            })
            .count();
        if spoilt < fault.times as usize {
            violations.push(Violation {
                invariant: Invariant::FaultsReached,
                operation: Some(fault.operation.clone()),
                message: format!(
                    "the lookup fault on `{}` was to spoil {} lookup(s), but the runtime made only {spoilt} while it was armed: the rule it tests (a lookup that does not answer is no answer) was not exercised",
                    fault.operation, fault.times
                ),
                evidence: evidence(run.ledger.iter().filter(|e| {
                    matches!(&e.event, Event::ProviderLookup { operation: Some(o), .. } if *o == fault.operation)
                })),
            });
        }
    }
    for fault in &scenario.policy_faults {
        let matches = |e: &&Entry| match &e.event {
            Event::PolicyCheck { operation, subject, injected: Some(_), .. } => {
                fault.operation.as_ref().is_none_or(|o| operation.as_ref() == Some(o))
                    && fault.subject.is_none_or(|s| s.matches(subject))
            }
            _ => false,
        };
        let spoilt = run.ledger.iter().filter(matches).count();
        let wanted = fault.times.unwrap_or(1) as usize;
        if spoilt < wanted {
            let whose = fault.operation.as_deref().map(|o| format!(" for `{o}`")).unwrap_or_default();
            violations.push(Violation {
                invariant: Invariant::FaultsReached,
                operation: fault.operation.clone(),
                message: format!(
                    "the policy fault{whose} was to spoil {wanted} check(s), but only {spoilt} were asked while it was armed: the rule it tests (no decision is no permission) was not exercised"
                ),
                evidence: Vec::new(),
            });
        }
    }
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

/// "`charge_card-000001` with result {…}, …", or "none" when the provider applied nothing.
fn show_effects(effects: &[(String, Value)]) -> String {
    if effects.is_empty() {
        return "none: the provider applied nothing for it".to_owned();
    }
    effects.iter().map(|(r, result)| format!("`{r}` with result {result}")).collect::<Vec<_>>().join(", ")
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
                            "`{destination}` applied `{}` with a payload that is not the provider's result ({}): {payload}",
                            op.id,
                            show_effects(&effects)
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

/// Every use of the provider or of a consumer must follow a fresh `Allowed` answer. Reading the
/// ledger this way catches a runtime that reuses an earlier answer (a cache, a flag on the
/// operation): today's revocations always come with a kill, which empties any in-memory cache,
/// so `policy_respected` alone would not see it.
fn policy_checked(op: &Operation, ledger: &OperationLedger, run: &Run, found: &mut Found) {
    // A check counts for this operation only if it names it, for the operation's own tenant and
    // actor: permission asked for someone else permits nothing here.
    let checks = |subject: &Subject, after: u64, before: u64| -> Vec<&Entry> {
        run.ledger
            .iter()
            .filter(|e| {
                e.seq > after
                    && e.seq < before
                    && matches!(&e.event, Event::PolicyCheck { tenant, actor, operation: Some(o), subject: s, .. }
                        if *o == op.id && *tenant == op.tenant && *actor == op.actor && s == subject)
            })
            .collect()
    };
    let allowed = |checks: &[&Entry]| {
        checks.iter().any(|e| matches!(&e.event, Event::PolicyCheck { answer: PolicyAnswer::Allowed, .. }))
    };

    let mut uses: Vec<(Subject, &str, Vec<&Entry>)> =
        vec![(Subject::Tool(op.tool.tool_name().to_owned()), "reached the provider", ledger.calls.clone())];
    for destination in &op.destinations {
        uses.push((Subject::Destination(destination.clone()), "was sent to", ledger.receipts_at(destination)));
    }
    for (subject, verb, entries) in uses {
        let mut unchecked = Vec::new();
        let mut proof = Vec::new();
        let mut previous: Option<&Entry> = None;
        for entry in entries {
            // An answer given to an incarnation that was killed since authorises nothing in the
            // next one (CONTRACT.md §8-3): the window starts at the last kill, too.
            let last_kill = run
                .timeline
                .iter()
                .filter(|m| matches!(m.happening, Happening::Killed { .. }) && m.seq < entry.seq)
                .map(|m| m.seq)
                .max()
                .unwrap_or(0);
            let window = checks(&subject, previous.map_or(0, |p| p.seq).max(last_kill), entry.seq);
            if !allowed(&window) {
                unchecked.push(entry.seq);
                proof.extend(previous);
                proof.extend(window);
                proof.push(entry);
            }
            previous = Some(entry);
        }
        if unchecked.is_empty() {
            continue;
        }
        proof.dedup_by_key(|e| e.seq);
        let whom = match &subject {
            Subject::Destination(d) => format!(" `{d}`"),
            Subject::Tool(_) | Subject::Operation(_) => String::new(),
        };
        let seqs: Vec<String> = unchecked.iter().map(|s| format!("#{s}")).collect();
        found(
            Invariant::PolicyChecked,
            format!(
                "`{}` {verb}{whom} {} time(s) ({}) without an allowed policy check of {subject} for it since the previous one; the policy must be asked before every attempt and every send (CONTRACT.md section 8)",
                op.id,
                unchecked.len(),
                seqs.join(", ")
            ),
            evidence(proof),
        );
    }
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

fn delivery_backoff(scenario: &Scenario, op: &Operation, ledger: &OperationLedger, run: &Run, found: &mut Found) {
    // A restart between two sends resets nothing the contract promises about spacing (a new
    // incarnation sends a SENT delivery again at once), so such pairs are not judged.
    let kills: Vec<u64> =
        run.timeline.iter().filter(|m| matches!(m.happening, Happening::Killed { .. })).map(|m| m.seq).collect();
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
            let send = u32::try_from(i + 1).unwrap_or(u32::MAX);
            let (exact, tolerated) = least_backoff_micros(scenario.runtime.retry_base_ms, send);
            let gap = later.at_micros.saturating_sub(earlier.at_micros);
            if gap < tolerated {
                found(
                    Invariant::DeliveryBackoff,
                    format!(
                        "`{}` was sent to `{destination}` again {:.1} ms after send {send} was answered {status}; the contract's backoff after send {send} is RETRY_BASE_MS {} × 2^{} = {:.1} ms (at least {:.1} ms with the tolerance)",
                        op.id,
                        gap as f64 / 1000.0,
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

fn dead_letter_bound(
    scenario: &Scenario,
    op: &Operation,
    ledger: &OperationLedger,
    run: &Run,
    report: Option<&OperationReport>,
    found: &mut Found,
) {
    let max = scenario.runtime.delivery_max_attempts;
    for destination in &op.destinations {
        let receipts = ledger.receipts_at(destination);
        let received = u32::try_from(receipts.len()).unwrap_or(u32::MAX);
        // A kill after a consumer accepted a send, before the runtime recorded it, leaves the
        // delivery SENT; the next incarnation sends it again even past the bound, since that
        // send's answer was lost, not refused (CONTRACT.md §6-5).
        let lost_answers = scenario
            .faults
            .iter()
            .zip(&run.hits)
            .filter(|(f, hit)| {
                f.at == Boundary::AfterDeliverySend
                    && f.operation == op.id
                    && f.destination.as_ref() == Some(destination)
                    && matches!(hit, Hit::Exact | Hit::AtSyscall | Hit::Approximate)
            })
            .count();
        let allowed = max.saturating_add(u32::try_from(lost_answers).unwrap_or(u32::MAX));
        if received > allowed {
            let resent = if lost_answers > 0 {
                format!(" (plus {lost_answers} resend(s) of a send whose answer a kill lost)")
            } else {
                String::new()
            };
            found(
                Invariant::DeadLetterBound,
                format!(
                    "`{destination}` received `{}` {received} times; DELIVERY_MAX_ATTEMPTS is {max}{resent}, and a delivery is never sent more often",
                    op.id
                ),
                evidence(receipts.iter().copied()),
            );
            continue;
        }
        let Some(delivery) = report.and_then(|r| r.deliveries.iter().find(|d| d.destination == *destination)) else {
            continue;
        };
        let by_policy = delivery.last_error.as_deref().is_some_and(|e| e.starts_with("policy:"));
        // Never fewer: every counted send reaches the consumer at today's kill points (see
        // `truthful_status`), so a delivery given up after fewer sends was given up early.
        if delivery.state == DeliveryState::DeadLettered && !by_policy && received < max {
            found(
                Invariant::DeadLetterBound,
                format!(
                    "`{}` -> `{destination}` is reported DEAD_LETTERED ({}) after the consumer received it {received} time(s); DELIVERY_MAX_ATTEMPTS is {max}: it must be sent {max} times before it is given up",
                    op.id,
                    delivery.last_error.as_deref().unwrap_or("no last_error")
                ),
                evidence(receipts.iter().copied()),
            );
        }
    }
}

/// Kills at another operation's boundary while `op` was in flight beside it (the same wave). Such
/// a kill lands wherever `op` happens to be, possibly between its write-ahead and its request,
/// like an approximate kill: one count of slack each.
fn kills_beside(scenario: &Scenario, run: &Run, op: &Operation) -> u32 {
    let Some(wave) = scenario.waves().into_iter().find(|wave| wave.iter().any(|o| o.id == op.id)) else {
        return 0;
    };
    let killed = scenario.faults.iter().zip(&run.hits).filter(|(fault, hit)| {
        fault.action == crate::scenario::Action::Kill
            && matches!(hit, Hit::Exact | Hit::AtSyscall | Hit::Approximate)
            && fault.operation != op.id
            && wave.iter().any(|o| o.id == fault.operation)
    });
    u32::try_from(killed.count()).unwrap_or(u32::MAX)
}

fn truthful_status(
    op: &Operation,
    ledger: &OperationLedger,
    report: Option<&OperationReport>,
    slack: u32,
    found: &mut Found,
) {
    let Some(report) = report else {
        found(
            Invariant::TruthfulStatus,
            format!("the runtime could not report `{}` (GET /operations/{})", op.id, op.id),
            Vec::new(),
        );
        return;
    };
    // Counts are exact except for `slack`: a kill between a runtime's write-ahead of an attempt
    // (or a send) and the request reaching the provider (or the consumer) leaves one count the
    // ledger cannot show. No exact kill point lands there: the probe's boundaries all lie outside
    // that window (`before_dispatch` comes before DISPATCHED is written, every other one after
    // the answer), and the provider's and consumers' holds come after the request arrived. Only
    // an approximate kill (black-box `after_provider_success`), or a kill at the boundary of
    // another operation in flight beside this one, may, hence one count of slack each. A request received but not counted is always a miscount.
    let calls = u32::try_from(ledger.calls.len()).unwrap_or(u32::MAX);
    if report.attempts < calls || report.attempts > calls.saturating_add(slack) {
        let why = if report.attempts < calls {
            "an attempt was made that the runtime did not record"
        } else {
            "the runtime counts attempts that never reached the provider"
        };
        found(
            Invariant::TruthfulStatus,
            format!("`{}` reports {} attempt(s) but the provider saw {calls} call(s): {why}", op.id, report.attempts),
            evidence(ledger.calls.iter().copied()),
        );
    }
    for delivery in &report.deliveries {
        let receipts = ledger.receipts_at(&delivery.destination);
        let received = u32::try_from(receipts.len()).unwrap_or(u32::MAX);
        if delivery.attempts < received || delivery.attempts > received.saturating_add(slack) {
            found(
                Invariant::TruthfulStatus,
                format!(
                    "`{}` reports {} send(s) to `{}` but that consumer received {received}",
                    op.id, delivery.attempts, delivery.destination
                ),
                evidence(receipts),
            );
        }
    }
    let effects = ledger.effects();
    match report.execution {
        ExecutionState::Succeeded => {
            match effects.iter().find(|(r, _)| Some(r) == report.provider_ref.as_ref()) {
                None => found(
                    Invariant::TruthfulStatus,
                    format!(
                        "`{}` reports SUCCEEDED with provider_ref {}; the provider's effects for it: {}",
                        op.id,
                        report.provider_ref.as_deref().map_or("null".to_owned(), |r| format!("`{r}`")),
                        show_effects(&effects)
                    ),
                    evidence(ledger.calls.iter().copied()),
                ),
                Some((_, result)) if report.result.as_ref() != Some(result) => found(
                    Invariant::TruthfulStatus,
                    format!(
                        "`{}` reports result {}; the provider returned {result}",
                        op.id,
                        report.result.as_ref().map_or("null".to_owned(), Value::to_string)
                    ),
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
            } else {
                failed_with_reason(op, ledger, report, found);
            }
        }
        ExecutionState::IntentRecorded | ExecutionState::Dispatched | ExecutionState::Unknown => {}
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
                Invariant::TruthfulStatus,
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
        Invariant::TruthfulStatus,
        format!(
            "`{}` reports FAILED ({}) {what}",
            op.id,
            report.failure.as_ref().map_or("no reason", |f| f.reason.as_str())
        ),
        proof(),
    );
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
    // Giving up is judged by kind: only a kind with lookup can know that nothing happened.
    let gave_up = if op.tool.supports_lookup() { Outcome::Failed } else { Outcome::Paused };
    let as_expected = match op.expect {
        Outcome::SucceededOrGaveUp => actual == Some(Outcome::Succeeded) || actual == Some(gave_up),
        Outcome::SucceededOrPaused => actual == Some(Outcome::Succeeded) || actual == Some(Outcome::Paused),
        expect => actual == Some(expect),
    };
    if !as_expected {
        let meaning = match op.expect {
            Outcome::SucceededOrGaveUp => format!(
                " (SUCCEEDED, or {} at the attempt bound: {} {})",
                if gave_up == Outcome::Failed { "FAILED" } else { "paused" },
                op.tool.tool_name(),
                if op.tool.supports_lookup() { "has a lookup" } else { "has no lookup" }
            ),
            Outcome::SucceededOrPaused => {
                " (SUCCEEDED, or paused if a kill beside it may have cut its request off)".to_owned()
            }
            _ => String::new(),
        };
        found(
            Invariant::ExpectedOutcome,
            format!("`{}` was expected to end {}{meaning}, but ended {}", op.id, op.expect, report.summary()),
            Vec::new(),
        );
    }
}

fn marked(mark: &crate::run::driver::Mark) -> String {
    format!("#{} {}", mark.seq, describe_mark(mark))
}

/// `intent_durable`: every `404` for an operation the runtime had accepted, one violation per
/// operation, with the acceptance and each time it was not known as evidence.
fn intent_durable(run: &Run, violations: &mut Vec<Violation>) {
    let mut reported: BTreeSet<&str> = BTreeSet::new();
    for mark in &run.timeline {
        let Happening::Forgotten { operation, incarnation, .. } = &mark.happening else { continue };
        if !reported.insert(operation.as_str()) {
            continue;
        }
        let proof = run.timeline.iter().filter(|m| match &m.happening {
            Happening::Answered { operation: o, .. } | Happening::Forgotten { operation: o, .. } => o == operation,
            Happening::KillPoint { operation: o, .. } => o == operation,
            Happening::Killed { .. } | Happening::Started { .. } => true,
            _ => false,
        });
        violations.push(Violation {
            invariant: Invariant::IntentDurable,
            operation: Some(operation.clone()),
            message: format!(
                "`{operation}` was accepted, but incarnation {incarnation} answered 404 for it: an accepted intent must be durable before the answer (CONTRACT.md section 3)"
            ),
            evidence: proof.map(marked).collect(),
        });
    }
}

/// `idempotent_submission`: each resubmission and malformed submission got the answer the
/// contract requires.
fn idempotent_submission(run: &Run, violations: &mut Vec<Violation>) {
    for mark in &run.timeline {
        let Happening::Resubmitted { operation, submission, answer, read_after, .. } = &mark.happening else {
            continue;
        };
        // A runtime that died meanwhile is reported by the abort; its silence proves nothing more.
        if answer.status.is_none() && run.aborted.is_some() {
            continue;
        }
        let id = operation.as_deref().or(submission.malformed_id());
        let named = id.map(|id| format!("`{id}`")).unwrap_or_else(|| "a submission".to_owned());
        let expected = submission.expected_status();
        let problem = match answer.status {
            None => Some(format!("expected {expected}, got {}", answer.body)),
            Some(status) if status != expected => Some(format!("expected {expected}, got {}", answer.describe())),
            Some(_) => match (expected, serde_json::from_str::<Value>(&answer.body)) {
                (200, Ok(body))
                    if body.get("operation_id").and_then(Value::as_str) == id
                        && body
                            .get("execution")
                            .is_some_and(|e| serde_json::from_value::<ExecutionState>(e.clone()).is_ok()) =>
                {
                    None
                }
                (200, _) => Some(format!(
                    "expected 200 with {{\"operation_id\": \"{}\", \"execution\": <state>}}, got {}",
                    id.unwrap_or_default(),
                    answer.describe()
                )),
                (_, Ok(body)) if body.get("error").is_some_and(Value::is_string) => None,
                _ => Some(format!("expected {expected} with {{\"error\": \"…\"}}, got {}", answer.describe())),
            },
        };
        let created = read_after.as_ref().filter(|r| r.status != Some(404)).map(|r| {
            format!(
                "; afterwards `{}` reads as {} instead of 404: the refused submission created it",
                id.unwrap_or_default(),
                r.describe()
            )
        });
        if problem.is_none() && created.is_none() {
            continue;
        }
        let why = match submission {
            Resubmission::Same | Resubmission::Equivalent => {
                "a submission is idempotent by operation id: the same body (destinations are a set, unknown fields ignored) gets 200 and changes nothing"
            }
            Resubmission::Different => {
                "the same operation_id with a different body is a conflict, 409, and changes nothing"
            }
            _ => "a malformed submission is refused with 400 and creates nothing",
        };
        violations.push(Violation {
            invariant: Invariant::IdempotentSubmission,
            operation: operation.clone(),
            message: format!(
                "{named} submitted with {}: {}{} ({why}; CONTRACT.md section 3)",
                submission.describe(),
                problem.unwrap_or_else(|| "answered as expected".to_owned()),
                created.unwrap_or_default()
            ),
            evidence: vec![marked(mark)],
        });
    }
}

/// A runtime that serves the monitoring signals (ready line `"metrics": true`) is held to them at
/// the end of the scenario: a signal that disagrees with the ledgers is a false status report.
///
/// - Dead letters, per destination and in all: exactly the deliveries the ledger shows given up —
///   no send accepted, and either `delivery_max_attempts` failed sends or a destination check the
///   policy refused.
/// - Reconciliations (lookups, any outcome) and policy refusals of attempts: no more than the
///   provider's lookups and the policy's refusals of a tool or operation, and no fewer than those
///   less one per kill (a kill can land after the request and before the runtime wrote it down).
fn metrics_agree(scenario: &Scenario, run: &Run, violations: &mut Vec<Violation>) {
    let Some(metrics) = &run.metrics else { return };
    let mut report = |message: String, evidence: Vec<String>| {
        violations.push(Violation { invariant: Invariant::TruthfulStatus, operation: None, message, evidence });
    };
    let text = match metrics {
        Ok(text) => text,
        Err(e) => {
            return report(
                format!("the ready line declared \"metrics\": true, but GET /metrics could not be read: {e}"),
                Vec::new(),
            );
        }
    };
    let samples = prometheus_samples(text);
    // A family with no series yet (no delivery, no destination) is served by its `# TYPE` line;
    // a counter's is declared without `_total`.
    let declared = |name: &str| {
        text.lines().any(|l| {
            l.strip_prefix("# TYPE ")
                .and_then(|rest| rest.split_whitespace().next())
                .is_some_and(|n| n == name || n == name.trim_end_matches("_total"))
        })
    };
    let sum = |name: &str, label: Option<(&str, &str)>| -> Option<f64> {
        if !declared(name) && !samples.iter().any(|s| s.name == name) {
            return None;
        }
        let matching = samples.iter().filter(|s| s.name == name);
        Some(
            matching
                .filter(|s| label.is_none_or(|(k, v)| s.labels.iter().any(|(lk, lv)| lk == k && lv == v)))
                .map(|s| s.value)
                .sum(),
        )
    };

    let destinations: BTreeSet<&String> = scenario.operations.iter().flat_map(|o| &o.destinations).collect();
    // A labelled family has no series until it has a label value: no `killpoint_dead_letters`
    // line for a destination (or none at all, before any delivery) is the runtime saying zero.
    for destination in destinations {
        let claimed = sum("killpoint_dead_letters", Some(("destination", destination))).unwrap_or(0.0);
        let (shown, proof) = given_up(scenario, run, destination);
        if claimed != shown as f64 {
            report(
                format!(
                    "GET /metrics says {claimed} dead letter(s) for `{destination}`; the ledgers show {shown} delivery(ies) to it given up"
                ),
                proof,
            );
        }
    }

    let kills = run
        .timeline
        .iter()
        .filter(|m| {
            matches!(m.happening, Happening::Killed { .. } | Happening::SyscallKill { .. } | Happening::Frozen { .. })
        })
        .count() as f64;
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
    for (name, label, what, entries) in [
        ("killpoint_reconciliations_total", None, "reconciliation(s)", &lookups),
        ("killpoint_refusals_total", Some(("reason", "policy")), "policy refusal(s)", &refusals),
    ] {
        let Some(claimed) = sum(name, label) else {
            report(format!("GET /metrics serves no `{name}`"), Vec::new());
            continue;
        };
        let seen = entries.len() as f64;
        if claimed > seen || claimed < seen - kills {
            let bound = if kills > 0.0 {
                format!("between {} and {seen} (one per kill may go unrecorded)", (seen - kills).max(0.0))
            } else {
                format!("{seen}")
            };
            report(
                format!("GET /metrics says {claimed} {what}; the ledgers show {seen}, so it must say {bound}"),
                evidence(entries.iter().copied()),
            );
        }
    }
}

/// Deliveries to `destination` the ledger shows given up (see [`metrics_agree`]), and the
/// ledger lines that show it.
fn given_up(scenario: &Scenario, run: &Run, destination: &str) -> (usize, Vec<String>) {
    let max = scenario.runtime.delivery_max_attempts as usize;
    let (mut count, mut proof) = (0, Vec::new());
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
        }
    }
    (count, proof)
}

/// One sample of the Prometheus text format: `name{label="value",…} value`.
#[derive(Debug, PartialEq)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

/// The samples of a Prometheus text exposition; comments and lines that do not parse are skipped
/// (a missing signal is reported by name where it is needed).
fn prometheus_samples(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else { continue };
        let Ok(value) = value.parse::<f64>() else { continue };
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => {
                let inner = rest.trim_end_matches('}');
                let labels = inner
                    .split(',')
                    .filter_map(|pair| {
                        let (k, v) = pair.split_once('=')?;
                        Some((k.trim().to_owned(), v.trim().trim_matches('"').to_owned()))
                    })
                    .collect();
                (name, labels)
            }
            None => (series, Vec::new()),
        };
        samples.push(Sample { name: name.to_owned(), labels, value });
    }
    samples
}

/// Runs one scenario to a verdict on a fresh single-threaded tokio runtime.
///
/// The runtime is built on the calling thread, so the runtime process is spawned from it: keep the
/// thread alive for the whole call (it is: this blocks), or PDEATHSIG would fire early.
pub fn run_scenario(
    scenario: &Scenario,
    target: &crate::run::incarnation::Target,
    options: &crate::run::driver::RunOptions,
) -> std::io::Result<(Verdict, Run)> {
    let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let run = tokio.block_on(crate::run::driver::run(scenario, target, options))?;
    let verdict = check(scenario, &run);
    Ok((verdict, run))
}

#[cfg(test)]
mod metrics_tests {
    use super::*;

    #[test]
    fn prometheus_text_is_read_sample_by_sample() {
        let text = "# HELP killpoint_dead_letters Deliveries dead-lettered.\n# TYPE killpoint_dead_letters gauge\nkillpoint_dead_letters{destination=\"mailer\"} 1\nkillpoint_reconciliations_total{outcome=\"found\"} 2\nnot a sample\n# EOF\n";
        let samples = prometheus_samples(text);
        assert_eq!(
            samples,
            vec![
                Sample {
                    name: "killpoint_dead_letters".into(),
                    labels: vec![("destination".into(), "mailer".into())],
                    value: 1.0
                },
                Sample {
                    name: "killpoint_reconciliations_total".into(),
                    labels: vec![("outcome".into(), "found".into())],
                    value: 2.0
                },
            ]
        );
    }
}
