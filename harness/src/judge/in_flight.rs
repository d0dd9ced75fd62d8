//! What a kill (or a freeze) may legitimately leave unrecorded: the exchanges each ended
//! incarnation had in flight at that instant, read from the ledger (CONTRACT.md §10, "Counts
//! across a kill").
//!
//! The contract orders every count-bearing step so that the world sees its start: an attempt is
//! preceded by an allowed tool check (§4-1) and a send by an allowed destination check (§6-7),
//! each in the incarnation that makes it (§8-3); a lookup and a refusal are answers the world
//! gave. So for each incarnation that was killed or frozen, the last exchange it had with the
//! world about one attempt or one delivery says what its death may have cut off:
//!
//! - an allowed tool check with no call after it: the attempt's `DISPATCHED` may be written and
//!   its request never sent — one attempt counted that the provider did not see;
//! - an allowed destination check with no receipt after it: the send's `SENT` may be written and
//!   its request never sent — one send counted that the consumer did not see;
//! - a receipt: its answer may never have been read — the next incarnation sends once more,
//!   past `DELIVERY_MAX_ATTEMPTS` if need be (§6-5);
//! - a lookup, or a refused tool check: answered, perhaps not written down — one reconciliation or
//!   refusal the runtime's counters (§11) may not show.
//!
//! Each is at most one per operation (or delivery) per kill, and only where the ledger shows that
//! step begun and not followed by the next: a run with no kill, or whose kills interrupted
//! nothing, has none, and its counts are held exact.

use crate::model::boundary::Boundary;
use crate::run::client::OperationReport;
use crate::run::driver::{Happening, Mark};
use crate::run::probe::ProbeMessage;
use fake_tool::{Effect, Entry, Event, Injected, PolicyAnswer, Response, Subject};
use std::collections::BTreeMap;

/// The steps in flight at the kills of one run, each by the `seq` of the ledger line that began it.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    /// Attempts that may be counted and never sent, by operation.
    attempts: BTreeMap<String, Vec<u64>>,
    /// Sends that may be counted and never sent, by (operation, destination).
    sends: BTreeMap<(String, String), Vec<u64>>,
    /// Sends whose answer may have been lost, by (operation, destination).
    answers: BTreeMap<(String, String), Vec<u64>>,
    /// Lookups and refusals whose record may have been lost, in all.
    lookups: Vec<u64>,
    refusals: Vec<u64>,
    /// Operations the provider rejected (a 4xx, nothing applied) as the last step of a killed
    /// incarnation: the runtime may never have read or recorded that definitive answer.
    rejections: std::collections::BTreeSet<String>,
}

/// The last step an incarnation took for one attempt or one delivery.
#[derive(Clone, Copy)]
enum Last {
    Allowed(u64),
    Rejected,
    Refused(u64),
    Lookup(u64),
    Receipt(u64),
    Other,
}

impl InFlight {
    /// Reads every killed or frozen incarnation of `timeline` against `ledger`; `reports` name the
    /// keys a lookup may carry for an operation the provider never saw a call of.
    pub(super) fn of(ledger: &[Entry], timeline: &[Mark], reports: &BTreeMap<String, OperationReport>) -> InFlight {
        let owner = owners(ledger, reports);
        let mut found = InFlight::default();
        for (incarnation, start, end, held) in ended(timeline) {
            // The world stamps each request with the incarnation that sent it (§9-1); a request
            // without the header is placed by the clock.
            let theirs = ledger.iter().filter(|e| match e.incarnation {
                Some(i) => i == incarnation,
                None => e.seq > start && e.seq < end,
            });
            let mut execution: BTreeMap<String, Last> = BTreeMap::new();
            let mut deliveries: BTreeMap<(String, String), Last> = BTreeMap::new();
            for entry in theirs {
                step(entry, &owner, &mut execution, &mut deliveries);
            }
            // The operation the probe held when the incarnation died was stopped exactly at its
            // boundary: at `before_dispatch` nothing of the attempt is written (CONTRACT.md §7),
            // so its allowed check cut nothing off.
            if let Some(message) = held.filter(|m| m.boundary == Boundary::BeforeDispatch) {
                execution.remove(&message.operation_id);
            }
            found.add(execution, deliveries);
        }
        found
    }

    fn add(&mut self, execution: BTreeMap<String, Last>, deliveries: BTreeMap<(String, String), Last>) {
        for (op, last) in execution {
            match last {
                Last::Allowed(seq) => self.attempts.entry(op).or_default().push(seq),
                Last::Lookup(seq) => self.lookups.push(seq),
                Last::Refused(seq) => self.refusals.push(seq),
                Last::Rejected => {
                    self.rejections.insert(op);
                }
                Last::Receipt(_) | Last::Other => {}
            }
        }
        for (delivery, last) in deliveries {
            match last {
                Last::Allowed(seq) => self.sends.entry(delivery).or_default().push(seq),
                Last::Receipt(seq) => self.answers.entry(delivery).or_default().push(seq),
                Last::Refused(_) | Last::Rejected | Last::Lookup(_) | Last::Other => {}
            }
        }
    }

    /// Attempts of `op` the runtime may count that the provider never saw.
    pub(super) fn attempts(&self, op: &str) -> &[u64] {
        self.attempts.get(op).map_or(&[], Vec::as_slice)
    }

    /// Sends of `op` to `destination` the runtime may count that the consumer never saw.
    pub(super) fn sends(&self, op: &str, destination: &str) -> &[u64] {
        self.sends.get(&(op.to_owned(), destination.to_owned())).map_or(&[], Vec::as_slice)
    }

    /// Sends of `op` to `destination` whose answer a kill may have lost.
    pub(super) fn lost_answers(&self, op: &str, destination: &str) -> &[u64] {
        self.answers.get(&(op.to_owned(), destination.to_owned())).map_or(&[], Vec::as_slice)
    }

    pub(super) fn lookups(&self) -> &[u64] {
        &self.lookups
    }

    pub(super) fn refusals(&self) -> &[u64] {
        &self.refusals
    }

    /// Whether a kill may have lost the provider's rejection of `op` before the runtime read it.
    pub(super) fn rejection_lost(&self, op: &str) -> bool {
        self.rejections.contains(op)
    }
}

/// "#12, #40": the ledger lines of steps in flight, for a message.
pub(super) fn lines(seqs: &[u64]) -> String {
    seqs.iter().map(|s| format!("#{s}")).collect::<Vec<_>>().join(", ")
}

/// One exchange of the incarnation, as the last step of its attempt or delivery.
fn step(
    entry: &Entry,
    owner: &BTreeMap<String, String>,
    execution: &mut BTreeMap<String, Last>,
    deliveries: &mut BTreeMap<(String, String), Last>,
) {
    let seq = entry.seq;
    match &entry.event {
        Event::ProviderCall { operation: Some(op), effect, response, .. } => {
            let rejected = *effect == Effect::NotApplied && matches!(response, Response::Sent(400..=499));
            execution.insert(op.clone(), if rejected { Last::Rejected } else { Last::Other });
        }
        Event::ProviderLookup { operation, by_key, by_ref, .. } => {
            // A lookup by a key the provider never saw names no operation: the key's owner is the
            // operation that sent (or reports) it; failing that, the key itself stands for it.
            let unit = operation
                .clone()
                .or_else(|| by_key.iter().chain(by_ref).find_map(|k| owner.get(k).cloned()))
                .or_else(|| by_key.clone().or_else(|| by_ref.clone()));
            if let Some(unit) = unit {
                execution.insert(unit, Last::Lookup(seq));
            }
        }
        Event::PolicyCheck { operation: Some(op), subject, answer, injected, .. } => {
            let decided = injected.is_none_or(Injected::is_truthful);
            let last = match answer {
                PolicyAnswer::Allowed if decided => Last::Allowed(seq),
                PolicyAnswer::Refused if decided => Last::Refused(seq),
                _ => Last::Other,
            };
            match subject {
                Subject::Destination(d) => {
                    // A refused send is dead-lettered: nothing of it is counted.
                    let last = if matches!(last, Last::Refused(_)) { Last::Other } else { last };
                    deliveries.insert((op.clone(), d.clone()), last);
                }
                Subject::Tool(_) | Subject::Operation(_) => {
                    execution.insert(op.clone(), last);
                }
            }
        }
        Event::ConsumerReceipt { destination, operation: Some(op), .. } => {
            deliveries.insert((op.clone(), destination.clone()), Last::Receipt(seq));
        }
        _ => {}
    }
}

/// Every key and provider reference an operation's calls carried or its report names, to its
/// operation.
fn owners(ledger: &[Entry], reports: &BTreeMap<String, OperationReport>) -> BTreeMap<String, String> {
    let mut owner = BTreeMap::new();
    for e in ledger {
        if let Event::ProviderCall { operation: Some(op), idempotency_key, effect, .. } = &e.event {
            if let Some(key) = idempotency_key {
                owner.insert(key.clone(), op.clone());
            }
            if let Effect::Applied(r) | Effect::Replayed(r) = effect {
                owner.insert(r.clone(), op.clone());
            }
        }
    }
    for (op, report) in reports {
        for key in report.idempotency_key.iter().chain(&report.provider_ref) {
            owner.entry(key.clone()).or_insert_with(|| op.clone());
        }
    }
    owner
}

/// Every incarnation that was killed or frozen: its number, the `seq` of its start and of its end,
/// and the probe announcement it was held at when it died, if any.
fn ended(timeline: &[Mark]) -> Vec<(u32, u64, u64, Option<&ProbeMessage>)> {
    let started = |n: u32| {
        timeline
            .iter()
            .find(|m| matches!(m.happening, Happening::Started { incarnation } if incarnation == n))
            .map_or(0, |m| m.seq)
    };
    // The announcement a kill fired at is the last `Boundary { killed: true }` before the kill.
    let held_at = |end: u64| {
        timeline.iter().take_while(|m| m.seq < end).fold(None, |held, m| match &m.happening {
            Happening::Boundary { message, killed: true } => Some(message),
            Happening::Killed { .. } | Happening::Frozen { .. } | Happening::SyscallFrozen { .. } => None,
            _ => held,
        })
    };
    timeline
        .iter()
        .filter_map(|m| match &m.happening {
            Happening::Killed { incarnation } => Some((*incarnation, started(*incarnation), m.seq, held_at(m.seq))),
            Happening::Frozen { incarnation, message, .. } => {
                Some((*incarnation, started(*incarnation), m.seq, Some(message)))
            }
            Happening::SyscallFrozen { incarnation, .. } => Some((*incarnation, started(*incarnation), m.seq, None)),
            _ => None,
        })
        .collect()
}
