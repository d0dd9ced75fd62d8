//! Crash points over the named boundaries: every occurrence a run passed (probe announcements,
//! provider calls, `202`s, and without the probe the answers the fake world stops at), and the
//! depth-1 schedules at them.

use super::case::Case;
use super::point::{Point, Seen};
use crate::model::boundary::Boundary;
use crate::run::driver::{Fingerprint, Happening, Run};
use crate::scenario::{Outcome, Revoke, Scenario};
use fake_tool::{Event, Response};
use std::collections::{BTreeSet, HashMap};

/// The points of `run` in order: every occurrence of every boundary the run passed (with the
/// probe), or that the fake world saw (without). With `after`, only those after that timeline
/// `seq` whose operation is in `only`: the recovery of a kill.
pub(super) fn points(scenario: &Scenario, run: &Run, after: Option<(u64, &BTreeSet<String>)>) -> Vec<Seen> {
    let fingerprints: HashMap<u64, Fingerprint> = run.fingerprints.iter().copied().collect();
    let mut found: Vec<Seen> = Vec::new();
    let mut counts: HashMap<(Boundary, String, Option<String>), u32> = HashMap::new();
    let mut count = |at: Boundary, op: &str, destination: Option<String>| {
        let n = counts.entry((at, op.to_owned(), destination.clone())).or_default();
        *n += 1;
        Point { at, operation: op.to_owned(), occurrence: *n, destination }
    };
    for mark in &run.timeline {
        match &mark.happening {
            Happening::Boundary { message, .. } => {
                let point = count(message.boundary, &message.operation_id, message.destination.clone());
                found.push(Seen { point, seq: mark.seq, fingerprint: fingerprints.get(&mark.seq).copied() });
            }
            Happening::Answered { operation, status: 202 } => {
                let point = count(Boundary::AfterSubmit, operation, None);
                found.push(Seen { point, seq: mark.seq, fingerprint: None });
            }
            _ => {}
        }
    }
    for entry in &run.ledger {
        match &entry.event {
            Event::ProviderCall { operation: Some(op), call, response, .. } => {
                let point =
                    Point { at: Boundary::AfterDispatch, operation: op.clone(), occurrence: *call, destination: None };
                found.push(Seen { point, seq: entry.seq, fingerprint: None });
                // Without the probe, the provider's success answer is where an approximate
                // `after_provider_success` kill lands.
                if !run.probe && matches!(response, Response::Sent(200..=299)) {
                    let point = count(Boundary::AfterProviderSuccess, op, None);
                    found.push(Seen { point, seq: entry.seq, fingerprint: None });
                }
            }
            Event::ConsumerReceipt { operation: Some(op), destination, status, .. }
                if !run.probe && (200..300).contains(status) =>
            {
                let point = count(Boundary::AfterDeliverySend, op, Some(destination.clone()));
                found.push(Seen { point, seq: entry.seq, fingerprint: None });
            }
            _ => {}
        }
    }
    found.sort_by_key(|s| s.seq);
    found.retain(|s| scenario.operation(&s.point.operation).is_some());
    if let Some((after, only)) = after {
        found.retain(|s| s.seq > after && only.contains(&s.point.operation));
    }
    found
}

/// The schedules of depth 1 for `points`: a kill at each, a freeze where one is allowed, plus, where a withdrawn permission has a
/// certain outcome, the same kill with the operation cancelled (before its first call) or a
/// destination revoked (with the result written, nothing delivered).
pub(super) fn schedules(scenario: &Scenario, points: &[Point], probe: bool) -> Vec<Case> {
    let mut cases = Vec::new();
    for p in points {
        cases.push(Case { kills: vec![p.clone()], revoke: Vec::new(), freeze: false, syscalls: Vec::new() });
        // A freeze where the contract says a commit follows (§9): the outlived incarnation must
        // find itself fenced there. Only the probe can stop a runtime at these points, and only an
        // operation alone in its wave (scenario.rs says why).
        let alone = scenario.waves().iter().any(|w| w.len() == 1 && w[0].id == p.operation);
        if matches!(p.at, Boundary::BeforeDispatch | Boundary::AfterProviderSuccess | Boundary::AfterDeliverySend)
            && probe
            && alone
        {
            cases.push(Case { kills: vec![p.clone()], revoke: Vec::new(), freeze: true, syscalls: Vec::new() });
        }
        let op = scenario.operation(&p.operation).expect("points are the scenario's operations");
        let first_call = !scenario.faults.iter().any(|f| f.operation == p.operation);
        if p.at == Boundary::BeforeDispatch && p.occurrence == 1 && first_call && op.expect == Outcome::Succeeded {
            cases.push(Case {
                kills: vec![p.clone()],
                revoke: vec![Revoke::Operation],
                freeze: false,
                syscalls: Vec::new(),
            });
        }
        if p.at == Boundary::AfterResultWrite && p.occurrence == 1 && op.expect == Outcome::Succeeded {
            for d in &op.destinations {
                cases.push(Case {
                    kills: vec![p.clone()],
                    revoke: vec![Revoke::Destination(d.clone())],
                    freeze: false,
                    syscalls: Vec::new(),
                });
            }
        }
    }
    cases
}
