//! The policy family: nothing a revocation in force forbids, refusals keep their audit trail, and
//! every attempt and send follows a fresh `Allowed` answer.

use super::ledger::{Found, OperationLedger, evidence, revocations};
use crate::model::invariant::Invariant;
use crate::run::client::OperationReport;
use crate::run::driver::{Happening, Run};
use crate::scenario::Operation;
use fake_tool::{Entry, Event, PolicyAnswer, Subject};

pub(super) fn policy_respected(
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
pub(super) fn policy_checked(op: &Operation, ledger: &OperationLedger, run: &Run, found: &mut Found) {
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
