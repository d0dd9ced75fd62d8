//! Where the named boundaries fall among a traced runtime's system calls (CONTRACT.md section 7,
//! "Boundaries at system calls"): read from its exchanges with the fake world and its syncs.

use crate::model::boundary::Boundary;
use crate::scenario::Anchor;
use crate::tracer::{HttpAnswer, HttpRequest, Peer, Point, PointKind, When};
use std::collections::{BTreeMap, HashMap};

/// What the fake world's exchanges have told so far, for the boundaries they mark (CONTRACT.md
/// section 7, "Boundaries at system calls"). One per run: occurrences count across incarnations.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Boundaries {
    #[serde(with = "fake_tool::pairs")]
    reached: HashMap<(Boundary, String), u32>,
    /// Delivery attempts answered, by (operation, destination).
    #[serde(with = "fake_tool::pairs")]
    attempts: HashMap<(String, String), u32>,
    /// Idempotency key → operation, from the calls (a lookup by key names no operation).
    keys: HashMap<String, String>,
    /// `provider_ref` → operation, from the answers (a lookup by reference names none either).
    refs: HashMap<String, String>,
    /// Operations whose success (or refusal) arrived in this incarnation and whose commit is
    /// still to come: `after_result_write` (`after_policy_revocation`) is reached at it.
    result_due: BTreeMap<String, Due>,
    refusal_due: BTreeMap<String, Due>,
    /// Boundaries reached at a sync taken for their commit (not at the operation's next request).
    pub(super) inferred: Vec<Anchor>,
}

/// Where a commit that an answer calls for is seen. A runtime commits what an answer tells it
/// before it acts on the answer (write-ahead, outbox): the first sync after the answer is that
/// commit — unless another answer arrived in between, whose commit that sync may be. Then only
/// the operation's next request shows its commit done.
///
/// Even the first sync is only taken for the commit: a runtime on an engine with more than one
/// writer in the data dir (a rollback journal synced before the database, the engine's own write
/// for another operation) may sync before it commits. A kill there is `Hit::Approximate`, judged
/// by what a kill just before the commit may legitimately lead to; at the next request it is exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Due {
    /// No other answer since: the next sync is taken for this commit.
    NextSync,
    /// Another answer since: the next request for the operation.
    NextRequest,
}

impl Boundaries {
    /// A new incarnation: what the last one was about to do, it will not.
    pub(super) fn restart(&mut self) {
        self.result_due.clear();
        self.refusal_due.clear();
    }

    /// The boundaries reached exactly at `point`.
    pub(super) fn observe(&mut self, point: &Point) -> Vec<Anchor> {
        match (point.kind, point.when) {
            (PointKind::Request, When::Before) => self.requesting(point),
            (PointKind::Answer, When::After) => self.answered(point),
            (PointKind::Sync, When::After) => self.synced(),
            _ => Vec::new(),
        }
    }

    /// A request to the world is about to be sent: the commit due for its operation is done.
    fn requesting(&mut self, point: &Point) -> Vec<Anchor> {
        let mut reached = Vec::new();
        let request = point.request.as_ref();
        if let Some(request) = request
            && let Some(op) = operation_of(request)
        {
            if let Some(key) = &request.key {
                self.keys.entry(key.clone()).or_insert_with(|| op.clone());
            }
            if self.result_due.remove(&op).is_some() {
                reached.push(self.reach(Boundary::AfterResultWrite, op.clone()));
            }
            if self.refusal_due.remove(&op).is_some() {
                reached.push(self.reach(Boundary::AfterPolicyRevocation, op));
            }
        }
        reached
    }

    /// An answer from the world arrived: a policy check's or the provider's may be a boundary,
    /// or call for a commit.
    fn answered(&mut self, point: &Point) -> Vec<Anchor> {
        let request = point.request.as_ref();
        let (Some(request), Some(answer)) = (request, point.answer.as_ref()) else { return Vec::new() };
        for due in self.result_due.values_mut().chain(self.refusal_due.values_mut()) {
            *due = Due::NextRequest;
        }
        match point.peer {
            Some(Peer::Policy) => self.policy_answered(request, answer).into_iter().collect(),
            Some(Peer::Provider) if (200..300).contains(&answer.status) => {
                self.provider_answered(request, answer).into_iter().collect()
            }
            Some(Peer::Consumers) => self.delivery_answered(request).into_iter().collect(),
            _ => Vec::new(),
        }
    }

    /// A policy check's answer: `before_dispatch` when it allows the tool call; a refusal's
    /// commit is due.
    fn policy_answered(&mut self, request: &HttpRequest, answer: &HttpAnswer) -> Option<Anchor> {
        let asks_tool = request.body.as_ref().is_some_and(|b| b.get("tool").is_some());
        let allowed = answer.body.as_ref().and_then(|b| b.get("allowed")).and_then(|a| a.as_bool());
        if let (true, 200, Some(allowed), Some(op)) = (asks_tool, answer.status, allowed, operation_of(request)) {
            if allowed {
                return Some(self.reach(Boundary::BeforeDispatch, op));
            }
            self.refusal_due.insert(op, Due::NextSync);
        }
        None
    }

    /// The provider's success: `after_provider_success`, and the result's commit is due.
    fn provider_answered(&mut self, request: &HttpRequest, answer: &HttpAnswer) -> Option<Anchor> {
        // Readable as the contract says (section 4, step 7), or the runtime
        // takes it as unknown: a non-empty `provider_ref` and a `result`.
        let body = answer.body.as_ref();
        let reference = body.and_then(|b| b.get("provider_ref")).and_then(|r| r.as_str());
        let result = body.and_then(|b| b.get("result")).filter(|r| !r.is_null());
        let (Some(reference), Some(_)) = (reference.filter(|r| !r.is_empty()), result) else {
            return None;
        };
        let op = operation_of(request)
            .or_else(|| request.key.as_ref().and_then(|k| self.keys.get(k).cloned()))
            .or_else(|| lookup_key(&request.path).and_then(|k| self.keys.get(&k).cloned()))
            .or_else(|| self.refs.get(reference).cloned());
        let op = op?;
        self.refs.entry(reference.to_owned()).or_insert_with(|| op.clone());
        self.result_due.insert(op.clone(), Due::NextSync);
        Some(self.reach(Boundary::AfterProviderSuccess, op))
    }

    /// A sync completed: each commit due at the next sync is done.
    fn synced(&mut self) -> Vec<Anchor> {
        let mut reached = Vec::new();
        let mut committed = Vec::new();
        for (due, boundary) in [
            (&mut self.result_due, Boundary::AfterResultWrite),
            (&mut self.refusal_due, Boundary::AfterPolicyRevocation),
        ] {
            due.retain(|op, d| {
                let now = *d == Due::NextSync;
                if now {
                    committed.push((boundary, op.clone()));
                }
                !now
            });
        }
        for (boundary, op) in committed {
            let anchor = self.reach(boundary, op);
            self.inferred.push(anchor.clone());
            reached.push(anchor);
        }
        reached
    }

    fn reach(&mut self, boundary: Boundary, operation: String) -> Anchor {
        let count = self.reached.entry((boundary, operation.clone())).or_default();
        *count += 1;
        Anchor::at(boundary, operation, *count)
    }

    /// A consumer's answer to a delivery arrived: a delivery attempt's anchor (any status: a dead
    /// consumer's retries are attempts too).
    fn delivery_answered(&mut self, request: &HttpRequest) -> Option<Anchor> {
        let op = operation_of(request)?;
        let destination = destination_of(&request.path)?;
        let count = self.attempts.entry((op.clone(), destination.clone())).or_default();
        *count += 1;
        Some(Anchor { destination: Some(destination), ..Anchor::at(Boundary::AfterDeliverySend, op, *count) })
    }
}

/// The operation a request to the world is for ([`HttpRequest::operation`]), owned.
fn operation_of(request: &HttpRequest) -> Option<String> {
    request.operation().map(str::to_owned)
}

/// The destination a delivery is sent to: `…/consumers/<destination>/events` (CONTRACT.md §6).
fn destination_of(path: &str) -> Option<String> {
    let path = path.split('?').next()?;
    let rest = path.strip_suffix("/events")?;
    let (_, destination) = rest.rsplit_once('/')?;
    (!destination.is_empty()).then(|| percent_decode(destination))
}

/// The key a lookup asks about: `…/effects?idempotency_key=K`.
fn lookup_key(path: &str) -> Option<String> {
    let (_, query) = path.split_once('?')?;
    query.split('&').find_map(|pair| pair.strip_prefix("idempotency_key=")).map(percent_decode)
}

/// A query value, `%XX` and `+` decoded (keys are the runtime's choice of text).
fn percent_decode(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.as_bytes();
    while let Some((&first, rest)) = bytes.split_first() {
        let hex = rest.get(..2).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
        match (first, hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                bytes = &rest[2..];
                continue;
            }
            (b'+', _) => out.push(b' '),
            (byte, _) => out.push(byte),
        }
        bytes = rest;
    }
    String::from_utf8_lossy(&out).into_owned()
}
