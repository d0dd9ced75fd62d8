//! The fake policy service: everything is allowed until the harness revokes it.
//!
//! A revocation names a tenant, optionally an actor (none: every actor of the tenant), and a tool,
//! a destination, or one operation (a cancellation: its tool checks are refused). It stays in
//! force for the rest of the scenario.
//!
//! A policy fault ([`crate::faults::PolicyFault`]) makes the service fail, drop the connection, answer
//! garbage or answer late; a check it spoils is recorded as no decision (a late one with the
//! decision it finally gets).

use crate::faults::{self, Faults};
use crate::fence::Fence;
use crate::ledger::{Event, Injected, Ledger, PolicyAnswer, Service, Subject};
// Re-exported where it used to live, so `fake_tool::policy::Revocation` still names it.
pub use crate::revocation::Revocation;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

#[derive(Clone)]
pub(crate) struct Policy {
    pub(crate) ledger: Arc<Ledger>,
    faults: Arc<Faults>,
    fence: Arc<Fence>,
    /// Shared with the world's snapshot handle (`WorldState`, in `snapshot.rs`).
    pub(crate) revocations: Arc<Mutex<Vec<Revocation>>>,
}

impl Policy {
    pub(crate) fn new(ledger: Arc<Ledger>, faults: Arc<Faults>, fence: Arc<Fence>) -> Self {
        Policy { ledger, faults, fence, revocations: Arc::default() }
    }

    /// Puts `revocation` in force and records it; returns its sequence number.
    pub(crate) fn revoke(&self, revocation: Revocation) -> u64 {
        let mut revocations = self.revocations.lock().expect("policy lock");
        let seq = self.ledger.record(Event::Revocation {
            tenant: revocation.tenant.clone(),
            actor: revocation.actor.clone(),
            subject: revocation.subject.clone(),
        });
        revocations.push(revocation);
        seq
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct CheckRequest {
    tenant: String,
    actor: String,
    operation_id: Option<String>,
    tool: Option<String>,
    destination: Option<String>,
}

/// `POST /policy/check`
pub(crate) async fn check(
    State(policy): State<Policy>,
    headers: HeaderMap,
    Json(request): Json<CheckRequest>,
) -> Response {
    let subject = match (request.tool, request.destination) {
        (Some(tool), None) => Subject::Tool(tool),
        (None, Some(destination)) => Subject::Destination(destination),
        _ => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({ "error": "expected exactly one of \"tool\" or \"destination\"" })),
            )
                .into_response();
        }
    };
    // Before any decision or fault: a fenced check is no check.
    let incarnation = match policy.fence.admit(&headers) {
        Ok(incarnation) => incarnation,
        Err(stale) => {
            let destination = match &subject {
                Subject::Destination(d) => Some(d.clone()),
                Subject::Tool(_) | Subject::Operation(_) => None,
            };
            let what = format!("check {subject}");
            return stale.refuse(&policy.ledger, Service::Policy, request.operation_id, destination, what);
        }
    };
    // In a block of its own: the lock guard must be gone before a late answer awaits.
    let (refused, injected) = {
        let revocations = policy.revocations.lock().expect("policy lock");
        let operation = request.operation_id.as_deref();
        let refused =
            revocations.iter().find(|r| r.covers(&request.tenant, &request.actor, operation, &subject)).cloned();
        let injected = policy.faults.consume_policy(operation, &subject);
        let answer = match (injected, &refused) {
            (Some(Injected::Failed(_) | Injected::Dropped | Injected::Garbage), _) => PolicyAnswer::NoDecision,
            (None | Some(Injected::Late(_)), None) => PolicyAnswer::Allowed,
            (None | Some(Injected::Late(_)), Some(_)) => PolicyAnswer::Refused,
        };
        // Recorded under the revocations lock: a revocation and a check are ordered on the clock as
        // they were decided.
        policy.ledger.record_from(
            Event::PolicyCheck {
                tenant: request.tenant.clone(),
                actor: request.actor.clone(),
                operation: request.operation_id.clone(),
                subject: subject.clone(),
                answer,
                injected,
            },
            incarnation,
        );
        (refused, injected)
    };
    match injected {
        Some(Injected::Late(ms)) => {
            // The fault itself is lateness: the fake service being slow, not a wait for anything.
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
        Some(spoilt) => {
            if let Some(response) = faults::injected(spoilt) {
                return response;
            }
        }
        None => {}
    }
    if let Some(revocation) = refused {
        let reason = format!("{} revoked for {}/{}", revocation.subject, request.tenant, request.actor);
        (StatusCode::OK, Json(json!({ "allowed": false, "reason": reason }))).into_response()
    } else {
        (StatusCode::OK, Json(json!({ "allowed": true }))).into_response()
    }
}

/// `POST /policy/revocations` — withdraw a permission over HTTP (for the standalone binary).
pub(crate) async fn revoke(
    State(policy): State<Policy>,
    Json(revocation): Json<Revocation>,
) -> (StatusCode, Json<Value>) {
    let seq = policy.revoke(revocation);
    (StatusCode::CREATED, Json(json!({ "seq": seq })))
}
