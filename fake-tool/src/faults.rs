//! Fault knobs: what the fake world does wrong, on purpose, for one request.
//!
//! The harness arms a fault before the runtime reaches it. A provider fault addresses a call by
//! the planted operation identity and its call number, so "the second call for op-1" is
//! expressible; it fires once. A consumer hold addresses the n-th receipt of one operation at one
//! destination, likewise once. A consumer fault fails a destination's next `times` receipts.
//! Faults that are kill points carry the harness's `tag`, echoed in the [`crate::kill_point::KillPoint`]
//! the world sends when it reaches them.

use crate::ledger::{Injected, Subject};
use crate::revocation::Revocation;
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Mutex;

/// What the provider answers to a faulted call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultResponse {
    /// Hold the answer: the harness is told, and kills the runtime before it arrives.
    Hold,
    /// Answer with this status code (e.g. 503) instead of the real answer.
    Status(u16),
    /// Refuse the call with this `4xx` status and `{"error": …}`; never an effect, whatever the
    /// fault's `effect` says (a refusal that acted would be a lie).
    Reject(u16),
    /// Break the connection before a complete answer head: the runtime reads no status at all.
    Drop,
    /// A complete `200` head with the `Content-Length` of the full body, half of the body, then
    /// the connection closes.
    Cut,
    /// A complete `200` whose body is not JSON.
    Garbage,
    /// A complete `200` whose JSON body has the `result` but no `provider_ref`.
    NoRef,
    /// Answer normally, this many milliseconds late.
    Delay(u64),
    /// Answer normally and tell the harness at the same moment, so it kills the runtime as soon as
    /// it can: the closest an outsider gets to "after the provider's success, before the result
    /// is written". The runtime may or may not have written the result by then.
    AnswerAndSignal,
    /// Tell the harness, and answer once it releases the tag (`World::release`, in `world.rs`): what
    /// the harness does meanwhile (a service taken down and started again) is done before the
    /// runtime reads a byte of the answer. Released by the world's shutdown too.
    SignalThenAnswer,
}

/// A fault on one provider call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderFault {
    /// The planted operation identity (`_killpoint.operation`).
    pub operation: String,
    /// Which call for that operation, 1-based.
    pub call: u32,
    /// Whether the side effect happens before the fault (the dangerous case).
    pub effect: bool,
    pub response: FaultResponse,
    /// Echoed in the kill point signal (`Hold`, `AnswerAndSignal`, `SignalThenAnswer`).
    pub tag: u64,
    /// Put in force when the provider receives the call, before it answers.
    #[serde(default)]
    pub revocations: Vec<Revocation>,
}

/// A fault on the first `times` lookups the provider attributes to one operation (by the key its
/// calls used, or by the reference of its effect); later lookups answer truthfully.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LookupFault {
    pub operation: String,
    pub times: u32,
    pub response: Injected,
}

/// A fault on the first `times` questions the model is asked about one task operation's decision
/// (questions after the tool's result is in the conversation are not counted); later ones are
/// answered truly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelFault {
    pub operation: String,
    pub times: u32,
    pub response: Injected,
}

/// Which policy checks a policy fault spoils.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicySubject {
    /// Checks before an attempt.
    Tool,
    /// Checks before a delivery send.
    Destination,
}

impl PolicySubject {
    /// Whether a check about `subject` is of this kind.
    pub fn matches(self, subject: &Subject) -> bool {
        match self {
            PolicySubject::Tool => matches!(subject, Subject::Tool(_)),
            PolicySubject::Destination => matches!(subject, Subject::Destination(_)),
        }
    }
}

/// A fault on the policy service: the next `times` checks it matches get `response` instead of
/// a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyFault {
    /// `None`: every matching check, for ever (a dead service).
    pub times: Option<u32>,
    /// Only checks naming this `operation_id`; `None`: any.
    pub operation: Option<String>,
    /// Only checks of this kind; `None`: both.
    pub subject: Option<PolicySubject>,
    pub response: Injected,
}

/// A kill point at a consumer: it applies the n-th receipt of one operation and holds its `202`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerHold {
    pub operation: String,
    pub destination: String,
    /// Which receipt of that operation at that destination, 1-based.
    pub receipt: u32,
    pub tag: u64,
}

/// A fault on a destination's receipts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerFault {
    pub destination: String,
    /// Only receipts for these operations (by the event's `operation_id`); `None`: any. The
    /// harness turns a scenario's `operation` or `tenant` scope into this list.
    pub operations: Option<Vec<String>>,
    /// How many receipts fail; `None` fails every one (a dead consumer).
    pub times: Option<u32>,
    /// Whether the consumer applies the event before failing the answer.
    pub apply: bool,
    /// The status it answers, e.g. 503.
    pub status: u16,
}

/// Every armed fault of one world.
#[derive(Debug, Default)]
pub struct Faults {
    provider: Mutex<HashMap<(String, u32), ProviderFault>>,
    /// In the order armed: a receipt counts down the first that matches it and has receipts left.
    consumer: Mutex<Vec<ConsumerFault>>,
    holds: Mutex<HashMap<(String, String, u32), ConsumerHold>>,
    /// Lookup faults by operation, with the lookups left to spoil.
    lookup: Mutex<HashMap<String, LookupFault>>,
    policy: Mutex<Vec<PolicyFault>>,
    /// Model faults by operation, with the questions left to spoil.
    model: Mutex<HashMap<String, ModelFault>>,
}

/// Every armed fault, as lists (each map's key is drawn from its fault, as `arm_*` draws it).
#[derive(Serialize, Deserialize)]
struct Armed {
    provider: Vec<ProviderFault>,
    consumer: Vec<ConsumerFault>,
    holds: Vec<ConsumerHold>,
    lookup: Vec<LookupFault>,
    policy: Vec<PolicyFault>,
    model: Vec<ModelFault>,
}

impl Serialize for Faults {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let armed = Armed {
            provider: self.provider.lock().expect("faults lock").values().cloned().collect(),
            consumer: self.consumer.lock().expect("faults lock").clone(),
            holds: self.holds.lock().expect("faults lock").values().cloned().collect(),
            lookup: self.lookup.lock().expect("faults lock").values().cloned().collect(),
            policy: self.policy.lock().expect("faults lock").clone(),
            model: self.model.lock().expect("faults lock").values().cloned().collect(),
        };
        armed.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Faults {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Faults, D::Error> {
        let armed = Armed::deserialize(deserializer)?;
        let faults = Faults::default();
        armed.provider.into_iter().for_each(|f| faults.arm_provider(f));
        armed.consumer.into_iter().for_each(|f| faults.arm_consumer(f));
        armed.holds.into_iter().for_each(|f| faults.arm_consumer_hold(f));
        armed.lookup.into_iter().for_each(|f| faults.arm_lookup(f));
        armed.policy.into_iter().for_each(|f| faults.arm_policy(f));
        armed.model.into_iter().for_each(|f| faults.arm_model(f));
        Ok(faults)
    }
}

impl Clone for Faults {
    fn clone(&self) -> Faults {
        self.copy()
    }
}

impl Faults {
    /// A copy of every fault still armed, with what each has left (the world's snapshot).
    pub(crate) fn copy(&self) -> Faults {
        Faults {
            provider: Mutex::new(self.provider.lock().expect("faults lock").clone()),
            consumer: Mutex::new(self.consumer.lock().expect("faults lock").clone()),
            holds: Mutex::new(self.holds.lock().expect("faults lock").clone()),
            lookup: Mutex::new(self.lookup.lock().expect("faults lock").clone()),
            policy: Mutex::new(self.policy.lock().expect("faults lock").clone()),
            model: Mutex::new(self.model.lock().expect("faults lock").clone()),
        }
    }

    pub fn arm_provider(&self, fault: ProviderFault) {
        let key = (fault.operation.clone(), fault.call);
        self.provider.lock().expect("faults lock").insert(key, fault);
    }

    pub fn arm_consumer(&self, fault: ConsumerFault) {
        self.consumer.lock().expect("faults lock").push(fault);
    }

    pub fn arm_consumer_hold(&self, hold: ConsumerHold) {
        let key = (hold.operation.clone(), hold.destination.clone(), hold.receipt);
        self.holds.lock().expect("faults lock").insert(key, hold);
    }

    pub fn arm_lookup(&self, fault: LookupFault) {
        self.lookup.lock().expect("faults lock").insert(fault.operation.clone(), fault);
    }

    pub fn arm_policy(&self, fault: PolicyFault) {
        self.policy.lock().expect("faults lock").push(fault);
    }

    pub fn arm_model(&self, fault: ModelFault) {
        self.model.lock().expect("faults lock").insert(fault.operation.clone(), fault);
    }

    /// What to send instead of a decision to this question about `operation`, counting it down.
    pub(crate) fn consume_model(&self, operation: &str) -> Option<Injected> {
        let mut faults = self.model.lock().expect("faults lock");
        let fault = faults.get_mut(operation).filter(|f| f.times > 0)?;
        fault.times -= 1;
        Some(fault.response)
    }

    /// What to send instead of the truth to this lookup for `operation`, counting it down.
    pub(crate) fn consume_lookup(&self, operation: &str) -> Option<Injected> {
        let mut faults = self.lookup.lock().expect("faults lock");
        let fault = faults.get_mut(operation).filter(|f| f.times > 0)?;
        fault.times -= 1;
        Some(fault.response)
    }

    /// What to send instead of a decision to this check, counting down the first fault (in the
    /// order armed) that matches it and has checks left.
    pub(crate) fn consume_policy(&self, operation: Option<&str>, subject: &Subject) -> Option<Injected> {
        let mut faults = self.policy.lock().expect("faults lock");
        let fault = faults.iter_mut().find(|f| {
            f.times != Some(0)
                && f.operation.as_deref().is_none_or(|o| Some(o) == operation)
                && f.subject.is_none_or(|s| s.matches(subject))
        })?;
        if let Some(n) = &mut fault.times {
            *n -= 1;
        }
        Some(fault.response)
    }

    /// Takes the hold armed for this receipt, if any.
    pub(crate) fn take_consumer_hold(&self, operation: &str, destination: &str, receipt: u32) -> Option<ConsumerHold> {
        self.holds.lock().expect("faults lock").remove(&(operation.to_owned(), destination.to_owned(), receipt))
    }

    /// Takes the fault armed for this call, if any: each provider fault fires once.
    pub(crate) fn take_provider(&self, operation: &str, call: u32) -> Option<ProviderFault> {
        self.provider.lock().expect("faults lock").remove(&(operation.to_owned(), call))
    }

    /// The consumer fault to apply to this receipt (for `operation`, as the event names it),
    /// counting it down.
    pub(crate) fn consume_consumer(&self, destination: &str, operation: Option<&str>) -> Option<ConsumerFault> {
        let mut faults = self.consumer.lock().expect("faults lock");
        let fault = faults.iter_mut().find(|f| {
            f.destination == destination
                && f.times != Some(0)
                && f.operations.as_ref().is_none_or(|ops| operation.is_some_and(|o| ops.iter().any(|x| x == o)))
        })?;
        if let Some(n) = &mut fault.times {
            *n -= 1;
        }
        Some(fault.clone())
    }
}

// ---- answers no well-behaved server sends ---------------------------------------------------
//
// hyper writes the head lazily, together with the first body bytes, and aborts the connection
// without flushing when the body fails. So a body that fails at once means no head reaches the
// runtime, and a body that fails later must first let hyper flush what it has.

/// The connection breaks before a complete answer head: the runtime reads no status at all.
pub(crate) fn dropped() -> Response {
    let broken = futures_util::stream::once(async {
        Err::<Bytes, _>(std::io::Error::other("connection dropped (injected fault)"))
    });
    (StatusCode::OK, Body::from_stream(broken)).into_response()
}

/// A complete `200` head announcing all of `body`, the first half of it, then the connection
/// closes.
pub(crate) fn cut(body: Vec<u8>) -> Response {
    let length = body.len();
    let half = Bytes::from(body[..length / 2].to_vec());
    let stream = futures_util::stream::iter([Ok::<_, std::io::Error>(half)]).chain(futures_util::stream::once(async {
        // Pending once: hyper's connection loop flushes the head and the half body before it
        // polls the body again and aborts on the error.
        tokio::task::yield_now().await;
        Err(std::io::Error::other("connection cut in the middle of the body (injected fault)"))
    }));
    let mut response = (StatusCode::OK, Body::from_stream(stream)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    headers.insert(header::CONTENT_LENGTH, header::HeaderValue::from(length));
    response
}

/// A complete `200` labelled JSON whose body is not JSON.
pub(crate) fn garbage() -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, "application/json")], "<html>502 Bad Gateway (injected garbage)</html>")
        .into_response()
}

/// The injected answer for a lookup or a policy check that does not answer truthfully
/// (`Late` is the caller's: it answers truthfully after a while).
pub(crate) fn injected(response: Injected) -> Option<Response> {
    match response {
        Injected::Failed(status) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            Some(
                (status, axum::Json(serde_json::json!({ "error": "service unavailable (injected fault)" })))
                    .into_response(),
            )
        }
        Injected::Dropped => Some(dropped()),
        Injected::Garbage => Some(garbage()),
        Injected::Late(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(operations: Option<&[&str]>, times: Option<u32>) -> ConsumerFault {
        ConsumerFault {
            destination: "mailer".into(),
            operations: operations.map(|ops| ops.iter().map(|o| o.to_string()).collect()),
            times,
            apply: false,
            status: 503,
        }
    }

    #[test]
    fn a_scoped_consumer_fault_is_not_used_up_by_another_operation() {
        let faults = Faults::default();
        faults.arm_consumer(fault(Some(&["charge"]), Some(1)));
        faults.arm_consumer(fault(None, Some(1)));
        assert_eq!(faults.consume_consumer("ledger", Some("ticket")), None, "another destination");
        // The ticket's receipt takes the unscoped fault; the charge's is still there for it.
        assert_eq!(faults.consume_consumer("mailer", Some("ticket")).unwrap().operations, None);
        assert!(faults.consume_consumer("mailer", Some("ticket")).is_none());
        assert!(faults.consume_consumer("mailer", Some("charge")).is_some());
        assert!(faults.consume_consumer("mailer", Some("charge")).is_none());
        // A receipt whose event names no operation matches no scoped fault.
        faults.arm_consumer(fault(Some(&["charge"]), None));
        assert!(faults.consume_consumer("mailer", None).is_none());
    }
}
