//! The fake tool provider: one tool per [`ToolKind`], every call and lookup on the ledger.
//!
//! It behaves like a real provider of each kind (Stripe-like replay for keyed tools, a new charge
//! per request for the rest), and it counts effects per *planted operation identity* rather than
//! per idempotency key, so a runtime that mints a new key per retry cannot hide a duplicate.

use crate::faults::{self, FaultResponse, Faults, ProviderFault};
use crate::fence::Fence;
use crate::kill_point::KillPoint;
use crate::ledger::{Effect, Event, Injected, Ledger, Response, Service, ToolKind};
use crate::policy::Policy;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, watch};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct StoredEffect {
    tool: String,
    provider_ref: String,
    key: Option<String>,
    operation: Option<String>,
    /// The arguments of the call that applied it: a keyed tool refuses its key with others.
    arguments: Option<Value>,
    result: Value,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(crate) struct Effects {
    all: Vec<StoredEffect>,
    /// Calls seen per planted operation, to number them.
    calls: HashMap<String, u32>,
    /// The operation that last used each (tool, key), effect or not: a lookup that finds nothing
    /// is still attributed to it.
    #[serde(with = "crate::pairs")]
    keys: HashMap<(String, String), String>,
}

#[derive(Clone)]
pub(crate) struct Provider {
    pub(crate) ledger: Arc<Ledger>,
    pub(crate) faults: Arc<Faults>,
    pub(crate) held: mpsc::UnboundedSender<KillPoint>,
    pub(crate) shutdown: watch::Receiver<bool>,
    /// The tags the harness released (`SignalThenAnswer`).
    pub(crate) released: watch::Receiver<BTreeSet<u64>>,
    /// Where a fault's revocations are put in force.
    policy: Policy,
    fence: Arc<Fence>,
    /// Shared with the world's snapshot handle (`WorldState`, in `snapshot.rs`).
    pub(crate) effects: Arc<Mutex<Effects>>,
}

impl Provider {
    pub(crate) fn new(
        ledger: Arc<Ledger>,
        faults: Arc<Faults>,
        held: mpsc::UnboundedSender<KillPoint>,
        shutdown: watch::Receiver<bool>,
        released: watch::Receiver<BTreeSet<u64>>,
        policy: Policy,
        fence: Arc<Fence>,
    ) -> Self {
        Provider { ledger, faults, held, shutdown, released, policy, fence, effects: Arc::default() }
    }
}

type Answer = (StatusCode, Json<Value>);

fn error(status: StatusCode, message: impl Into<String>) -> Answer {
    (status, Json(json!({ "error": message.into() })))
}

fn idempotency_key(headers: &HeaderMap) -> Option<String> {
    headers.get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// `POST /provider/tools/{tool}` — execute a tool.
pub(crate) async fn call(
    State(provider): State<Provider>,
    Path(tool): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> axum::response::Response {
    let Some(kind) = ToolKind::for_tool(&tool) else {
        return error(StatusCode::NOT_FOUND, format!("no tool named {tool:?}")).into_response();
    };
    let key = idempotency_key(&headers);
    let operation = body.pointer("/arguments/_killpoint/operation").and_then(Value::as_str).map(str::to_owned);
    // Before anything is counted or applied: a fenced call is no call.
    let incarnation = match provider.fence.admit(&headers) {
        Ok(incarnation) => incarnation,
        Err(stale) => {
            return stale.refuse(&provider.ledger, Service::Provider, operation, None, format!("call {tool}"));
        }
    };
    let arguments = body.get("arguments").cloned();
    let request = CallRequest { tool, kind, key, operation, arguments };
    let taken = provider.take_call(&request, incarnation);
    send_answer(&provider, taken).await
}

/// One admitted call to a known tool.
struct CallRequest {
    tool: String,
    kind: ToolKind,
    key: Option<String>,
    /// The planted operation identity (`_killpoint.operation`), when the call names one.
    operation: Option<String>,
    arguments: Option<Value>,
}

/// A provider fault that fired, on the call it was armed for.
struct Fired {
    fault: ProviderFault,
    call: u32,
}

/// A call as the provider took it: on the ledger, its effect decided, its answer not yet sent.
struct TakenCall {
    seq: u64,
    fired: Option<Fired>,
    status: StatusCode,
    answer: Value,
}

impl Provider {
    /// Numbers, applies (or replays) and records one call. All of it under the provider lock, and
    /// the lock is gone before the answer is sent (which may hold or sleep).
    fn take_call(&self, request: &CallRequest, incarnation: Option<u32>) -> TakenCall {
        let mut effects = self.effects.lock().expect("provider lock");
        let call = effects.number(request);
        if let Some(first) = effects.reused_key(request) {
            return self.refuse_reused_key(request, call, first, incarnation);
        }
        let fault = request.operation.as_deref().and_then(|op| self.faults.take_provider(op, call));
        // A refusal never acts: a 4xx that applied the effect would be a provider lying.
        let apply = fault.as_ref().is_none_or(|f| f.effect && !matches!(f.response, FaultResponse::Reject(_)));
        let (effect, stored) = effects.effect(request, apply);
        let (status, response) = sent(fault.as_ref().map(|f| f.response));
        let result = stored.as_ref().map(|s| s.result.clone());
        // Recorded under the provider lock so call numbers and ledger order agree.
        let seq = self.ledger.record_from(
            Event::ProviderCall {
                tool: request.tool.clone(),
                operation: request.operation.clone(),
                idempotency_key: request.key.clone(),
                arguments: request.arguments.clone(),
                call,
                effect,
                response,
                result: result.clone(),
            },
            incarnation,
        );
        // The fault's revocations take effect now: after the provider has the call, before the
        // runtime can know anything about its answer.
        for revocation in fault.iter().flat_map(|f| f.revocations.iter().cloned()) {
            self.policy.revoke(revocation);
        }
        let answer = answer_body(&request.tool, stored.as_ref(), status);
        TakenCall { seq, fired: fault.map(|fault| Fired { fault, call }), status, answer }
    }
}

impl Provider {
    /// A keyed call whose key an earlier effect used with other arguments: refused, nothing
    /// applied, no fault taken (a real provider refuses before it does anything else).
    fn refuse_reused_key(
        &self,
        request: &CallRequest,
        call: u32,
        first: String,
        incarnation: Option<u32>,
    ) -> TakenCall {
        let seq = self.ledger.record_from(
            Event::ProviderCall {
                tool: request.tool.clone(),
                operation: request.operation.clone(),
                idempotency_key: request.key.clone(),
                arguments: request.arguments.clone(),
                call,
                effect: Effect::KeyReused(first.clone()),
                response: Response::Sent(409),
                result: None,
            },
            incarnation,
        );
        let answer = json!({
            "error": format!("idempotency key {:?} was used by {first} with other arguments; nothing was applied", request.key.as_deref().unwrap_or_default()),
            "code": KEY_REUSED,
        });
        TakenCall { seq, fired: None, status: StatusCode::CONFLICT, answer }
    }
}

/// The `code` of a keyed tool's refusal of a key reused with other arguments.
pub const KEY_REUSED: &str = "idempotency_key_reused";

impl Effects {
    /// For a keyed tool: the effect that first used this call's key, when it was applied with
    /// other arguments (JSON-equal arguments are the same request).
    fn reused_key(&self, request: &CallRequest) -> Option<String> {
        let key = request.key.as_deref()?;
        if request.kind != ToolKind::IdempotentByKey {
            return None;
        }
        let first = self.all.iter().find(|e| e.tool == request.tool && e.key.as_deref() == Some(key))?;
        (first.arguments != request.arguments).then(|| first.provider_ref.clone())
    }

    /// The call's number among its operation's calls (0: it names no operation); also remembers
    /// the operation as the last user of the call's key.
    fn number(&mut self, request: &CallRequest) -> u32 {
        let call = match &request.operation {
            Some(op) => {
                let n = self.calls.entry(op.clone()).or_default();
                *n += 1;
                *n
            }
            None => 0,
        };
        if let (Some(op), Some(k)) = (&request.operation, &request.key) {
            self.keys.insert((request.tool.clone(), k.clone()), op.clone());
        }
        call
    }

    /// What the call does: replays the first effect of its key (a keyed tool), applies a new one,
    /// or, when a fault fails it first, nothing.
    fn effect(&mut self, request: &CallRequest, apply: bool) -> (Effect, Option<StoredEffect>) {
        let tool = &request.tool;
        let replay = match (request.kind, &request.key) {
            (ToolKind::IdempotentByKey, Some(k)) => {
                self.all.iter().find(|e| &e.tool == tool && e.key.as_deref() == Some(k.as_str())).cloned()
            }
            _ => None,
        };
        match (replay, apply) {
            (Some(first), _) => (Effect::Replayed(first.provider_ref.clone()), Some(first)),
            (None, false) => (Effect::NotApplied, None),
            (None, true) => {
                let number = self.all.iter().filter(|e| &e.tool == tool).count() + 1;
                let provider_ref = format!("{tool}-{number:06}");
                let result = json!({ "receipt": provider_ref, "tool": tool, "effect_number": number });
                let stored = StoredEffect {
                    tool: tool.clone(),
                    provider_ref: provider_ref.clone(),
                    key: request.key.clone(),
                    operation: request.operation.clone(),
                    arguments: request.arguments.clone(),
                    result,
                };
                self.all.push(stored.clone());
                (Effect::Applied(provider_ref), Some(stored))
            }
        }
    }
}

/// The status a call is answered with, and what the ledger says became of the answer.
fn sent(response: Option<FaultResponse>) -> (StatusCode, Response) {
    match response {
        Some(FaultResponse::Hold) => (StatusCode::OK, Response::Held),
        Some(FaultResponse::Drop) => (StatusCode::OK, Response::Dropped),
        Some(FaultResponse::Status(code)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            (status, Response::Sent(status.as_u16()))
        }
        Some(FaultResponse::Reject(code)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::UNPROCESSABLE_ENTITY);
            (status, Response::Sent(status.as_u16()))
        }
        Some(FaultResponse::Cut) => (StatusCode::OK, Response::Cut),
        Some(FaultResponse::Garbage) => (StatusCode::OK, Response::Garbage),
        Some(FaultResponse::NoRef) => (StatusCode::OK, Response::NoRef),
        Some(FaultResponse::Delay(_) | FaultResponse::AnswerAndSignal | FaultResponse::SignalThenAnswer) | None => {
            (StatusCode::OK, Response::Sent(200))
        }
    }
}

/// The JSON body of the answer to a call, before a fault spoils how it is sent.
fn answer_body(tool: &str, stored: Option<&StoredEffect>, status: StatusCode) -> Value {
    match (stored, status) {
        (Some(s), status) if status.is_success() => {
            json!({ "provider_ref": s.provider_ref, "result": s.result })
        }
        (_, status) if status.is_client_error() => {
            json!({ "error": format!("the provider refuses {tool} (injected fault, HTTP {})", status.as_u16()) })
        }
        (None, status) if status.is_success() => json!({ "result": null }),
        _ => json!({ "error": "provider unavailable (injected fault)" }),
    }
}

/// Sends a taken call's answer the way its fault says: held, broken, spoilt, late or as it is.
async fn send_answer(provider: &Provider, taken: TakenCall) -> axum::response::Response {
    let TakenCall { seq, fired, status, answer } = taken;
    match fired.map(|f| (f.fault.response, f.fault.operation, f.call, f.fault.tag)) {
        Some((FaultResponse::Hold, operation, call, tag)) => {
            let what = format!("provider holds the answer to call {call} of {operation}");
            let _ = provider.held.send(KillPoint { seq, tag, what });
            // Hold until the world shuts down; by then the runtime has been killed and nobody
            // reads the answer. Holding (rather than answering late) is what makes the kill exact.
            let mut shutdown = provider.shutdown.clone();
            let _ = shutdown.wait_for(|down| *down).await;
            error(StatusCode::SERVICE_UNAVAILABLE, "the fake world shut down while holding").into_response()
        }
        // Broken before a complete head: hyper never flushes the status line of a body that
        // fails at once (see `faults::dropped`), so the runtime sees the connection close.
        Some((FaultResponse::Drop, ..)) => faults::dropped(),
        Some((FaultResponse::Cut, ..)) => faults::cut(answer.to_string().into_bytes()),
        Some((FaultResponse::Garbage, ..)) => faults::garbage(),
        Some((FaultResponse::NoRef, ..)) => {
            let mut body = answer;
            if let Some(fields) = body.as_object_mut() {
                fields.remove("provider_ref");
            }
            (status, Json(body)).into_response()
        }
        Some((FaultResponse::Delay(ms), ..)) => {
            // The fault itself is lateness; this sleep is the fake provider being slow, not the
            // harness waiting for anything.
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            (status, Json(answer)).into_response()
        }
        Some((FaultResponse::AnswerAndSignal, operation, call, tag)) => {
            let what = format!("provider answers call {call} of {operation}");
            let _ = provider.held.send(KillPoint { seq, tag, what });
            (status, Json(answer)).into_response()
        }
        Some((FaultResponse::SignalThenAnswer, operation, call, tag)) => {
            let what = format!("provider answers call {call} of {operation} once the harness says so");
            let _ = provider.held.send(KillPoint { seq, tag, what });
            let (mut released, mut shutdown) = (provider.released.clone(), provider.shutdown.clone());
            tokio::select! {
                _ = released.wait_for(|tags| tags.contains(&tag)) => {}
                _ = shutdown.wait_for(|down| *down) => {}
            }
            (status, Json(answer)).into_response()
        }
        Some((FaultResponse::Status(_) | FaultResponse::Reject(_), ..)) | None => {
            (status, Json(answer)).into_response()
        }
    }
}

impl Provider {
    /// The operation a lookup is about, by the effect's reference or the key its calls used.
    fn attributed(&self, tool: &str, by_key: Option<&str>, by_ref: Option<&str>) -> Option<String> {
        let effects = self.effects.lock().expect("provider lock");
        let by_ref = by_ref.and_then(|r| effects.all.iter().find(|e| e.tool == tool && e.provider_ref == r));
        by_ref
            .and_then(|e| e.operation.clone())
            .or_else(|| by_key.and_then(|k| effects.keys.get(&(tool.to_owned(), k.to_owned())).cloned()))
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct LookupQuery {
    idempotency_key: Option<String>,
}

/// `GET /provider/tools/{tool}/effects?idempotency_key=K` — look an effect up by key.
pub(crate) async fn lookup_by_key(
    State(provider): State<Provider>,
    Path(tool): Path<String>,
    Query(query): Query<LookupQuery>,
    headers: HeaderMap,
) -> axum::response::Response {
    let Some(key) = query.idempotency_key else {
        return error(StatusCode::BAD_REQUEST, "expected ?idempotency_key=… or /effects/{provider_ref}")
            .into_response();
    };
    lookup(&provider, &tool, Some(key), None, &headers).await
}

/// `GET /provider/tools/{tool}/effects/{provider_ref}` — look an effect up by reference.
pub(crate) async fn lookup_by_ref(
    State(provider): State<Provider>,
    Path((tool, provider_ref)): Path<(String, String)>,
    headers: HeaderMap,
) -> axum::response::Response {
    lookup(&provider, &tool, None, Some(provider_ref), &headers).await
}

async fn lookup(
    provider: &Provider,
    tool: &str,
    by_key: Option<String>,
    by_ref: Option<String>,
    headers: &HeaderMap,
) -> axum::response::Response {
    let incarnation = match provider.fence.admit(headers) {
        Ok(incarnation) => incarnation,
        Err(stale) => {
            let operation = provider.attributed(tool, by_key.as_deref(), by_ref.as_deref());
            return stale.refuse(&provider.ledger, Service::Provider, operation, None, format!("lookup {tool}"));
        }
    };
    let (injected, answer) = look(provider, tool, by_key, by_ref, incarnation);
    match injected {
        Some(Injected::Late(ms)) => {
            // The fault itself is lateness: the fake provider being slow, not a wait for anything.
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            answer.into_response()
        }
        Some(spoilt) => faults::injected(spoilt).unwrap_or_else(|| answer.into_response()),
        None => answer.into_response(),
    }
}

/// The truthful answer to a lookup, recorded with what will be sent instead, if a lookup fault
/// spoils it.
fn look(
    provider: &Provider,
    tool: &str,
    by_key: Option<String>,
    by_ref: Option<String>,
    incarnation: Option<u32>,
) -> (Option<Injected>, Answer) {
    let Some(kind) = ToolKind::for_tool(tool) else {
        return (None, error(StatusCode::NOT_FOUND, format!("no tool named {tool:?}")));
    };
    let effects = provider.effects.lock().expect("provider lock");
    let (found, operation) = if kind.supports_lookup() {
        let found = effects
            .all
            .iter()
            .find(|e| {
                e.tool == tool
                    && (by_key.is_some() && e.key == by_key
                        || by_ref.is_some() && Some(&e.provider_ref) == by_ref.as_ref())
            })
            .cloned();
        // Attribute a miss to the operation that used this key, when one did, so the checker
        // can see "looked up before retrying" even when the effect never happened.
        let operation = found
            .as_ref()
            .and_then(|e| e.operation.clone())
            .or_else(|| by_key.as_ref().and_then(|k| effects.keys.get(&(tool.to_owned(), k.clone())).cloned()));
        (found, operation)
    } else {
        (None, None)
    };
    let status = match (&found, kind.supports_lookup()) {
        (_, false) => StatusCode::NOT_IMPLEMENTED,
        (Some(_), true) => StatusCode::OK,
        (None, true) => StatusCode::NOT_FOUND,
    };
    let injected = operation.as_deref().and_then(|op| provider.faults.consume_lookup(op));
    let (sent_found, sent_status) = match injected {
        None | Some(Injected::Late(_)) => (found.is_some(), status.as_u16()),
        Some(Injected::Failed(code)) => (false, code),
        Some(Injected::Garbage) => (false, 200),
        Some(Injected::Dropped) => (false, status.as_u16()),
    };
    provider.ledger.record_from(
        Event::ProviderLookup {
            tool: tool.to_owned(),
            operation,
            by_key,
            by_ref,
            found: sent_found,
            status: sent_status,
            injected,
        },
        incarnation,
    );
    let answer = match found {
        Some(e) => (status, Json(json!({ "provider_ref": e.provider_ref, "result": e.result }))),
        None if status == StatusCode::NOT_IMPLEMENTED => {
            error(status, format!("tool {tool} ({}) has no lookup", kind.as_str()))
        }
        None => error(status, "no such effect"),
    };
    (injected, answer)
}
