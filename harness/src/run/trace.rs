//! The trace: the harness's timeline and the fake world's ledger merged on their shared clock,
//! one readable line per event. Failure reports quote it; snapshots pin it.

use crate::run::driver::{Happening, Mark, Run};
use fake_tool::{Effect, Entry, Event, Injected, PolicyAnswer, Response};

/// One line of the trace, with its sequence number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub seq: u64,
    pub text: String,
}

/// Every event of the run, in clock order.
pub fn lines(run: &Run) -> Vec<Line> {
    let mut lines: Vec<Line> = run
        .ledger
        .iter()
        .map(|e| Line { seq: e.seq, text: describe_entry(e) })
        .chain(run.timeline.iter().map(|m| Line { seq: m.seq, text: describe_mark(m) }))
        .collect();
    lines.sort_by_key(|l| l.seq);
    lines
}

/// The trace as snapshots pin it: no sequence numbers (they shift with unrelated events), and no
/// `submit` lines. The harness submits the next operation as soon as the last one reads as
/// settled, and a runtime may still announce a boundary after that (`after_policy_revocation`
/// follows the refusal's commit), so where a submit falls among those lines is a race; everything
/// else in the trace is ordered by the runtime's own single loop.
///
/// Resubmissions after a restart (`harness   submit … again`) are left out for the same reason:
/// the new incarnation works while they are answered. And after an `after_submit` kill, the killed
/// incarnation may or may not have asked the policy service before the SIGKILL landed (its worker
/// starts as soon as the intent is recorded), and that request may reach the fake world after the
/// restart: a policy line repeated before the new incarnation's first announcement is kept once.
pub fn normalised(run: &Run) -> Vec<String> {
    let submitted = |l: &Line| l.text.starts_with("harness   submit ");
    let mut out: Vec<String> = Vec::new();
    let mut after_submit_kill = false;
    for line in lines(run).into_iter().filter(|l| !submitted(l)) {
        if line.text.starts_with("client ") {
            after_submit_kill = true;
        } else if line.text.starts_with("runtime ") {
            after_submit_kill = false;
        } else if after_submit_kill
            && line.text.starts_with("policy ")
            && let Some(earlier) = out.iter().rposition(|l| *l == line.text)
        {
            out.remove(earlier);
        }
        out.push(line.text);
    }
    out
}

pub fn describe_mark(mark: &Mark) -> String {
    match &mark.happening {
        Happening::Started { incarnation } => format!("harness   start incarnation {incarnation}"),
        Happening::Submitted { operation } => format!("harness   submit {operation}"),
        Happening::Answered { operation, status } => format!("harness   submit {operation}: answered {status}"),
        Happening::Resubmitted { operation, incarnation, submission, answer, read_after } => {
            let id = operation.as_deref().or(submission.malformed_id()).unwrap_or("(no id)");
            let read = read_after.as_ref().map(|r| format!("; then read: {}", r.describe())).unwrap_or_default();
            format!(
                "harness   submit {id} again to incarnation {incarnation}, {}: answered {}{read}",
                submission.describe(),
                answer.describe()
            )
        }
        Happening::Forgotten { operation, incarnation, answer } => {
            format!("runtime   incarnation {incarnation} does not know {operation}: {answer}")
        }
        Happening::Boundary { message, killed } => {
            let destination = message.destination.as_deref().map(|d| format!(" -> {d}")).unwrap_or_default();
            format!(
                "runtime   {} {} attempt {}{destination}: {}",
                message.boundary,
                message.operation_id,
                message.attempt,
                if *killed { "KILL" } else { "resume" }
            )
        }
        Happening::KillPoint { what, .. } => {
            // `what` starts with who saw it ("provider holds …"): align it like the ledger lines.
            let (who, rest) = what.split_once(' ').unwrap_or(("", what));
            format!("{who:<9} {rest}: KILL")
        }
        Happening::Killed { incarnation } => format!("harness   SIGKILL incarnation {incarnation}"),
        Happening::SyscallKill { incarnation, point } => {
            let from = point.since.as_ref().map(|a| format!(" since {a}")).unwrap_or_default();
            let boundaries: Vec<String> = point.boundaries.iter().map(|b| format!(" = {b}")).collect();
            format!(
                "runtime   incarnation {incarnation} {} {} #{}{from} ({}){}: KILL",
                point.when.name(),
                point.kind.name(),
                point.occurrence,
                point.what,
                boundaries.concat()
            )
        }
        Happening::Exited { incarnation, status } => {
            format!("runtime   incarnation {incarnation} exited on its own ({status})")
        }
        Happening::Frozen { incarnation, message } => {
            format!("runtime   {}: FREEZE (SIGSTOP incarnation {incarnation})", announcement(message))
        }
        Happening::Resumed { incarnation, message } => {
            format!("harness   SIGCONT incarnation {incarnation}, answer {}: resume", announcement(message))
        }
        Happening::ZombieAnnounced { incarnation, message } => {
            format!("runtime   incarnation {incarnation} (outlived) {}: resume", announcement(message))
        }
        Happening::ZombieExited { incarnation, status } => {
            format!("runtime   incarnation {incarnation} (outlived) exited ({status})")
        }
        Happening::ZombieOutlived { incarnation, waited } => {
            format!("harness   incarnation {incarnation} (outlived) still running after {waited:.1?}: SIGKILL")
        }
    }
}

/// "before_dispatch charge attempt 1 -> ledger"
fn announcement(message: &crate::run::probe::ProbeMessage) -> String {
    let destination = message.destination.as_deref().map(|d| format!(" -> {d}")).unwrap_or_default();
    format!("{} {} attempt {}{destination}", message.boundary, message.operation_id, message.attempt)
}

pub fn describe_entry(entry: &Entry) -> String {
    let op = |o: &Option<String>| o.clone().unwrap_or_else(|| "<no operation>".into());
    let key = |k: &Option<String>| k.as_deref().map(|k| format!("key {k}")).unwrap_or_else(|| "NO KEY".into());
    match &entry.event {
        Event::ProviderCall { tool, operation, idempotency_key, call, effect, response, .. } => {
            let effect = match effect {
                Effect::Applied(r) => format!("applied {r}"),
                Effect::Replayed(r) => format!("replayed {r}"),
                Effect::NotApplied => "no effect".into(),
            };
            let response = match response {
                Response::Sent(s) => format!("answered {s}"),
                Response::Held => "answer held".into(),
                Response::Dropped => "connection dropped before a complete answer head".into(),
                Response::Cut => "answered 200 with a complete head, body cut short, connection closed".into(),
                Response::Garbage => "answered 200 with a body that is not JSON".into(),
                Response::NoRef => "answered 200 without provider_ref".into(),
            };
            format!(
                "provider  call {tool} for {} (call {call}, {}): {effect}, {response}",
                op(operation),
                key(idempotency_key)
            )
        }
        Event::ProviderLookup { tool, operation, by_key, by_ref, found, status, injected } => {
            let by = match (by_ref, by_key) {
                (Some(r), _) => format!("by ref {r}"),
                (None, Some(k)) => format!("by key {k}"),
                (None, None) => "by nothing".into(),
            };
            let outcome = match (found, status) {
                (true, _) => "found".to_owned(),
                (false, 404) => "not found".to_owned(),
                (false, s) => format!("answered {s}"),
            };
            let outcome = match injected {
                None => outcome,
                Some(Injected::Late(ms)) => format!("{outcome}, {ms} ms late (injected)"),
                Some(spoilt) => describe_injected(*spoilt),
            };
            format!("provider  lookup {tool} for {} {by}: {outcome}", op(operation))
        }
        Event::ConsumerReceipt { destination, operation, idempotency_key, applied, status, .. } => format!(
            "consumer  {destination} received {} ({}): {}, answered {status}",
            op(operation),
            key(idempotency_key),
            match (applied, (200..300).contains(status)) {
                (true, _) => "applied",
                // The fake consumer answers non-2xx only when a scenario's fault tells it to.
                (false, false) => "not applied (injected failure)",
                (false, true) => "duplicate, not applied",
            }
        ),
        Event::PolicyCheck { tenant, actor, operation, subject, answer, injected } => {
            let answer = match (answer, injected) {
                (_, Some(Injected::Late(ms))) => format!("{}, {ms} ms late (injected)", decision(*answer)),
                (_, Some(spoilt)) => format!("no decision, {}", describe_injected(*spoilt)),
                (answer, None) => decision(*answer).to_owned(),
            };
            let operation = operation.as_deref().map(|o| format!(" ({o})")).unwrap_or_default();
            format!("policy    {tenant}/{actor} {subject}{operation}: {answer}")
        }
        Event::Revocation { tenant, actor, subject } => {
            format!("harness   revoke {subject} for {tenant}/{}", actor.as_deref().unwrap_or("*"))
        }
        Event::Fenced { service, operation, what, current, .. } => {
            let stale = entry.incarnation.map_or("?".to_owned(), |n| n.to_string());
            let operation = operation.as_deref().map(|o| format!(" for {o}")).unwrap_or_default();
            format!(
                "{service:<9} {what}{operation} from incarnation {stale}: refused 409 fenced (incarnation {current} is current)"
            )
        }
    }
}

fn decision(answer: PolicyAnswer) -> &'static str {
    match answer {
        PolicyAnswer::Allowed => "allowed",
        PolicyAnswer::Refused => "refused",
        PolicyAnswer::NoDecision => "no decision",
    }
}

fn describe_injected(injected: Injected) -> String {
    match injected {
        Injected::Failed(status) => format!("answered {status} (injected)"),
        Injected::Dropped => "connection dropped before a complete answer head (injected)".into(),
        Injected::Garbage => "answered 200 with a body that is not JSON (injected)".into(),
        Injected::Late(ms) => format!("answered {ms} ms late (injected)"),
    }
}
