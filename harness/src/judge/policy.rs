//! The policy family: nothing a revocation in force forbids (a use already allowed when it came was
//! in flight, not forbidden), refusals keep their audit trail, and
//! every attempt and send follows a fresh `Allowed` answer.

use super::authority::{Use, authorised};
use super::ledger::{Found, OperationLedger, evidence, revocations};
use super::rules::breach::{Breach, breach};
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
    let tool = Subject::Tool(op.tool.tool_name().to_owned());
    for (revocation, subject) in revocations(run, op) {
        let (checked, uses) = match subject {
            Subject::Tool(t) if t == op.tool.tool_name() => (&tool, ledger.calls.clone()),
            Subject::Operation(o) if *o == op.id => (&tool, ledger.calls.clone()),
            Subject::Destination(d) => (subject, ledger.receipts_at(d)),
            Subject::Tool(_) | Subject::Operation(_) => continue,
        };
        let held = held_at(run, revocation.seq);
        let forbidden: Vec<&Entry> = authorised(run, op, checked, &uses)
            .into_iter()
            .filter(|u| u.entry.seq > revocation.seq && !in_flight_at(u, revocation.seq, held, op, subject))
            .map(|u| u.entry)
            .collect();
        if !forbidden.is_empty() {
            // A destination's send after its revocation is also one the policy refused (§6-7).
            let breach = match subject {
                Subject::Destination(_) => breach!(PolicyRespected, "§6-7", "§8-5"),
                Subject::Tool(_) | Subject::Operation(_) => breach!(PolicyRespected, "§8-5"),
            };
            found(
                breach,
                format!(
                    "`{}`: {subject} was revoked at #{} but was used afterwards, not on an answer given before the revocation (CONTRACT.md §8-5)",
                    op.id, revocation.seq
                ),
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
            breach!(PolicyRespected, "§3-7", "§4-2"),
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
    // actor: permission asked for someone else permits nothing here. An answer given to an
    // incarnation that was killed since authorises nothing in the next one (CONTRACT.md §8-3):
    // `authorised` places each check with the incarnation it was answered to.
    let mut uses: Vec<(Subject, &str, Vec<&Entry>)> =
        vec![(Subject::Tool(op.tool.tool_name().to_owned()), "reached the provider", ledger.calls.clone())];
    for destination in &op.destinations {
        uses.push((Subject::Destination(destination.clone()), "was sent to", ledger.receipts_at(destination)));
    }
    for (subject, verb, entries) in uses {
        let mut unchecked = Vec::new();
        let mut proof = Vec::new();
        let (mut reused, mut undecided) = (false, false);
        for (i, one) in authorised(run, op, &subject, &entries).into_iter().enumerate() {
            if !one.allowed() {
                reused |= one.checks.is_empty() && allowed_before(run, op, &subject, one.entry.seq);
                undecided |= one
                    .checks
                    .iter()
                    .any(|c| matches!(&c.event, Event::PolicyCheck { answer: PolicyAnswer::NoDecision, .. }));
                unchecked.push(one.entry.seq);
                proof.extend(entries[..i].last());
                proof.extend(one.checks);
                proof.push(one.entry);
            }
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
            unchecked_breach(&subject, reused, undecided),
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

/// The rules a use without a fresh `Allowed` answer breaks: asking before every attempt (§4-1) or
/// send (§6-7), and before each (§8-2); and, where the ledger shows why, an earlier answer reused
/// (§8-3) or a non-answer taken for permission (§8-4).
fn unchecked_breach(subject: &Subject, reused: bool, undecided: bool) -> Breach {
    let send = matches!(subject, Subject::Destination(_));
    match (send, reused, undecided) {
        (false, false, false) => breach!(PolicyChecked, "§4-1", "§8-2"),
        (false, true, false) => breach!(PolicyChecked, "§4-1", "§8-2", "§8-3"),
        (false, false, true) => breach!(PolicyChecked, "§4-1", "§8-2", "§8-4"),
        (false, true, true) => breach!(PolicyChecked, "§4-1", "§8-2", "§8-3", "§8-4"),
        (true, false, false) => breach!(PolicyChecked, "§6-7", "§8-2"),
        (true, true, false) => breach!(PolicyChecked, "§6-7", "§8-2", "§8-3"),
        (true, false, true) => breach!(PolicyChecked, "§6-7", "§8-2", "§8-4"),
        (true, true, true) => breach!(PolicyChecked, "§6-7", "§8-2", "§8-3", "§8-4"),
    }
}

/// Whether the policy allowed `subject` for `op` before `seq`, in any incarnation: a use with no
/// check of its own since its previous one then went ahead on that earlier answer.
fn allowed_before(run: &Run, op: &Operation, subject: &Subject, seq: u64) -> bool {
    run.ledger.iter().take_while(|e| e.seq < seq).any(|e| {
        matches!(&e.event, Event::PolicyCheck { operation: Some(o), subject: s, answer: PolicyAnswer::Allowed, .. }
            if *o == op.id && s == subject)
    })
}

/// The work the runtime announced it was held at when the harness made the revocation at
/// `seq`: (operation, destination) of the probe announcement or world hold the fault fired at,
/// in the same incarnation.
fn held_at(run: &Run, seq: u64) -> Option<(&str, Option<&str>)> {
    for mark in run.timeline.iter().rev().filter(|m| m.seq < seq) {
        match &mark.happening {
            Happening::Boundary { message, killed: true } => {
                return Some((message.operation_id.as_str(), message.destination.as_deref()));
            }
            Happening::KillPoint { operation, .. } => return Some((operation.as_str(), None)),
            Happening::Started { .. } => return None,
            _ => {}
        }
    }
    None
}

/// Whether `one`, made after the revocation at `revoked`, was in flight when it came: allowed by
/// the last answer its incarnation had for it, given before the revocation. Never the work the
/// runtime was held at: §7-4 says where that stood (at `after_result_write`, none of the
/// operation's deliveries sent), so nothing of it was in flight.
fn in_flight_at(
    one: &Use,
    revoked: u64,
    held: Option<(&str, Option<&str>)>,
    op: &Operation,
    subject: &Subject,
) -> bool {
    let destination = match subject {
        Subject::Destination(d) => Some(d.as_str()),
        Subject::Tool(_) | Subject::Operation(_) => None,
    };
    let is_held = held.is_some_and(|(o, d)| o == op.id && (d.is_none() || d == destination));
    !is_held && one.allowed_by().is_some_and(|seq| seq < revoked)
}
