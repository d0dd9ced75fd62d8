//! The retry line's label (CONTRACT.md §11-3), under `truthful_status`: a retry the runtime logs
//! as an execution retry is a new provider attempt, one it logs as a delivery retry a resend to
//! a consumer, and the ledgers say which each was.
//!
//! Judged only where the evidence is certain: lines of the last incarnation (never killed, so a
//! retry it logged reached the world unless the policy refused it), in a run where no outlived
//! incarnation was resumed (its lines would land in the last one's section of the log). A label
//! is wrong when the request it names is not in the ledger and the other kind's is: the provider
//! call with the line's attempt number, or the consumer's receipt with that send number.

use super::in_flight::InFlight;
use super::ledger::evidence;
use super::rules::breach::breach;
use super::verdict::Violation;
use crate::run::driver::{Happening, Run};
use crate::run::retry_log::{RetryKind, RetryLine, by_incarnation, stderr_of};
use fake_tool::{Entry, Event, PolicyAnswer, Subject};

/// The provider's call number `attempt` of `op`, if the incarnation `by` sent it.
fn call<'a>(run: &'a Run, op: &str, attempt: u64, by: u32) -> Option<&'a Entry> {
    run.ledger.iter().find(|e| {
        e.incarnation == Some(by)
            && matches!(&e.event, Event::ProviderCall { operation: Some(o), call, .. } if o == op && u64::from(*call) == attempt)
    })
}

/// The consumer receipt that was send number `attempt` of `op` at a destination (`destination`,
/// or any), if the incarnation `by` sent it.
fn receipt<'a>(run: &'a Run, op: &str, destination: Option<&str>, attempt: u64, by: u32) -> Option<&'a Entry> {
    let mut destinations: Vec<&str> = run
        .ledger
        .iter()
        .filter_map(|e| match &e.event {
            Event::ConsumerReceipt { destination: d, operation: Some(o), .. } if o == op => Some(d.as_str()),
            _ => None,
        })
        .filter(|d| destination.is_none_or(|wanted| wanted == *d))
        .collect();
    destinations.dedup();
    destinations.into_iter().find_map(|d| {
        let nth = usize::try_from(attempt).ok()?.checked_sub(1)?;
        run.ledger
            .iter()
            .filter(|e| matches!(&e.event, Event::ConsumerReceipt { destination: x, operation: Some(o), .. } if x == d && o == op))
            .nth(nth)
            .filter(|e| e.incarnation == Some(by))
    })
}

/// Whether the incarnation `by` was refused (or given no decision) a send of `op` to
/// `destination`: a delivery retry it logged may then never have been sent.
fn send_refused(run: &Run, op: &str, destination: Option<&str>, by: u32) -> bool {
    run.ledger.iter().any(|e| {
        e.incarnation == Some(by)
            && matches!(&e.event, Event::PolicyCheck { operation: Some(o), subject: Subject::Destination(d), answer, .. }
                if o == op && destination.is_none_or(|x| x == d) && *answer != PolicyAnswer::Allowed)
    })
}

/// Whether `found` holds for number `n` or, where kills cut off `cut` counted requests before they
/// were sent (CONTRACT.md section 10, "Counts across a kill"), for one of the `cut` numbers below
/// it: the runtime's attempt 2 is then the provider's call 1.
fn numbered_within(n: u64, cut: usize, found: impl Fn(u64) -> bool) -> bool {
    (0..=cut as u64).any(|k| n > k && found(n - k))
}

/// What is wrong with `line`'s label, and the request that shows it, if anything.
fn mislabelled<'a>(run: &'a Run, in_flight: &InFlight, line: &RetryLine, by: u32) -> Option<(String, &'a Entry)> {
    let (op, n, destination) = (line.operation_id.as_str(), line.attempt, line.destination.as_deref());
    let cut_attempts = in_flight.attempts(op).len();
    let cut_sends = destination.map_or(0, |d| in_flight.sends(op, d).len());
    match line.retry {
        RetryKind::Execution if !numbered_within(n, cut_attempts, |m| call(run, op, m, by).is_some()) => {
            let sent = receipt(run, op, destination, n, by)?;
            let to = match &sent.event {
                Event::ConsumerReceipt { destination, .. } => destination.clone(),
                _ => return None,
            };
            Some((
                format!(
                    "incarnation {by} logged an execution retry of `{op}` (attempt {n}), but the provider saw no call {n} of it from that incarnation, and consumer `{to}` received its send {n} (#{}): that was a delivery retry — a resend of the recorded result, not a new attempt",
                    sent.seq
                ),
                sent,
            ))
        }
        RetryKind::Delivery
            if !numbered_within(n, cut_sends, |m| receipt(run, op, destination, m, by).is_some())
                && !send_refused(run, op, destination, by) =>
        {
            let called = call(run, op, n, by)?;
            Some((
                format!(
                    "incarnation {by} logged a delivery retry of `{op}`{} (send {n}), but no consumer received send {n} of it from that incarnation, and the provider saw its call {n} (#{}): that was an execution retry — a new provider attempt, not a resend",
                    destination.map(|d| format!(" -> {d}")).unwrap_or_default(),
                    called.seq
                ),
                called,
            ))
        }
        _ => None,
    }
}

/// §11-3 for every retry line the last incarnation logged.
pub(super) fn retry_labels(run: &Run, in_flight: &InFlight, violations: &mut Vec<Violation>) {
    if run.timeline.iter().any(|m| matches!(m.happening, Happening::Resumed { .. })) {
        return;
    }
    let last = run.incarnations;
    for (by, line) in by_incarnation(&stderr_of(run)) {
        if by != last {
            continue;
        }
        if let Some((message, proof)) = mislabelled(run, in_flight, &line, by) {
            violations.push(Violation::new(
                breach!(TruthfulStatus, "§11-3"),
                Some(line.operation_id.clone()),
                message,
                evidence([proof]),
            ));
            // One line proves the label untrue; the rest repeat it.
            return;
        }
    }
}
