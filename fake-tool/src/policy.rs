//! The fake policy service: everything is allowed until the harness revokes it.
//!
//! A revocation names a tenant, optionally an actor (none: every actor of the tenant), and a tool,
//! a destination, or one operation (a cancellation: its tool checks are refused). It stays in
//! force for the rest of the scenario.

use crate::ledger::{Event, Ledger, PolicyAnswer, Subject};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// A withdrawn permission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revocation {
    pub tenant: String,
    /// `None` revokes for every actor of the tenant.
    pub actor: Option<String>,
    pub subject: Subject,
}

impl Revocation {
    fn covers(&self, tenant: &str, actor: &str, operation: Option<&str>, subject: &Subject) -> bool {
        // A cancelled operation may not be attempted; its deliveries are not this revocation's.
        let cancelled = matches!(
            (&self.subject, subject, operation),
            (Subject::Operation(o), Subject::Tool(_), Some(op)) if o == op
        );
        self.tenant == tenant
            && self.actor.as_deref().is_none_or(|a| a == actor)
            && (&self.subject == subject || cancelled)
    }
}

#[derive(Clone)]
pub(crate) struct Policy {
    pub(crate) ledger: Arc<Ledger>,
    revocations: Arc<Mutex<Vec<Revocation>>>,
}

impl Policy {
    pub(crate) fn new(ledger: Arc<Ledger>) -> Self {
        Policy { ledger, revocations: Arc::default() }
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
    Json(request): Json<CheckRequest>,
) -> (StatusCode, Json<Value>) {
    let subject = match (request.tool, request.destination) {
        (Some(tool), None) => Subject::Tool(tool),
        (None, Some(destination)) => Subject::Destination(destination),
        _ => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({ "error": "expected exactly one of \"tool\" or \"destination\"" })),
            );
        }
    };
    let revocations = policy.revocations.lock().expect("policy lock");
    let operation = request.operation_id.as_deref();
    let refused = revocations.iter().find(|r| r.covers(&request.tenant, &request.actor, operation, &subject)).cloned();
    policy.ledger.record(Event::PolicyCheck {
        tenant: request.tenant.clone(),
        actor: request.actor.clone(),
        operation: request.operation_id.clone(),
        subject: subject.clone(),
        answer: if refused.is_none() { PolicyAnswer::Allowed } else { PolicyAnswer::Refused },
    });
    drop(revocations);
    if let Some(revocation) = refused {
        let reason = format!("{} revoked for {}/{}", revocation.subject, request.tenant, request.actor);
        (StatusCode::OK, Json(json!({ "allowed": false, "reason": reason })))
    } else {
        (StatusCode::OK, Json(json!({ "allowed": true })))
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
