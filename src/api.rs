//! The HTTP API the harness calls (CONTRACT.md §3): submit an operation, read it back.
//!
//! Submitting only records the intent, durably, and wakes the worker; all execution happens in the
//! worker. Every error is `{"error": "…"}` saying what was expected and what was found.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::Notify;

use crate::broken::Broken;
use crate::config::CONTRACT;
use crate::model::{AuditEntry, DeliveryState, ExecutionState, Submission, Tool, Work};
use crate::request_hash::request_hash;
use crate::store::{Snapshot, Store, Submitted};

/// Submissions are small; anything bigger is a mistake, refused before it is buffered.
const MAX_BODY_BYTES: usize = 64 * 1024;

/// How often the broken `ack-before-durable` variant writes the intents it has acknowledged.
const GROUP_COMMIT_EVERY: Duration = Duration::from_millis(100);

#[derive(Clone)]
struct AppState {
    store: Arc<Store>,
    /// Wakes the worker when there is new work.
    wake: Arc<Notify>,
    broken: Option<Broken>,
    /// `ack-before-durable` only: intents acknowledged but not yet written.
    unwritten: Arc<Mutex<Vec<(Submission, String)>>>,
    /// When this incarnation started, on the store's clock (for `GET /metrics`).
    started: f64,
}

/// The API; `broken` only for a deliberately broken variant of the API's own.
pub fn router(store: Arc<Store>, wake: Arc<Notify>, broken: Option<Broken>) -> Router {
    let started = store.monitoring_facts().map(|f| f.now).unwrap_or_default();
    let state = AppState { store, wake, broken, unwritten: Arc::default(), started };
    if broken == Some(Broken::AckBeforeDurable) {
        tokio::spawn(group_commit(state.clone()));
    }
    Router::new()
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/operations", post(submit))
        .route("/operations/{operation_id}", get(read))
        .method_not_allowed_fallback(wrong_method)
        .fallback(unknown_route)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// `ack-before-durable`: writes the acknowledged intents in one batch per tick, the throughput
/// "optimisation" that loses every intent acknowledged since the last tick when the process dies.
async fn group_commit(state: AppState) {
    loop {
        tokio::time::sleep(GROUP_COMMIT_EVERY).await;
        let batch: Vec<_> = std::mem::take(&mut *state.unwritten.lock().unwrap_or_else(|p| p.into_inner()));
        for (submission, hash) in &batch {
            if let Err(error) = state.store.submit(submission, hash) {
                eprintln!("api: group commit of {} failed: {error:#}", submission.operation_id);
            }
        }
        if !batch.is_empty() {
            state.wake.notify_one();
        }
    }
}

// ---- handlers -------------------------------------------------------------------------------

/// The monitoring signals (`metrics.rs`), in the Prometheus text format.
async fn metrics(State(state): State<AppState>) -> Response {
    match crate::metrics::render(&state.store, state.started, state.broken) {
        Ok(text) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text).into_response(),
        Err(error) => {
            (StatusCode::INTERNAL_SERVER_ERROR, format!("cannot read the store for the metrics: {error:#}\n"))
                .into_response()
        }
    }
}

async fn health() -> Json<Value> {
    Json(serde_json::json!({ "contract": CONTRACT }))
}

#[derive(Serialize)]
struct Accepted<'a> {
    operation_id: &'a str,
    execution: ExecutionState,
}

async fn submit(State(state): State<AppState>, body: Result<Bytes, BytesRejection>) -> Result<Response, ApiError> {
    let body = body.map_err(|rejection| ApiError {
        status: rejection.status(),
        message: format!("expected a JSON body of at most {MAX_BODY_BYTES} bytes; {}", rejection.body_text()),
    })?;
    let submission: Submission = serde_json::from_slice(&body).map_err(|error| {
        ApiError::bad_request(format!(
            "expected an operation submission (CONTRACT.md §3), found a body that does not match: {error}"
        ))
    })?;
    validate(&submission)?;

    let id = &submission.operation_id;
    let hash = request_hash(&submission);
    if state.broken == Some(Broken::AckBeforeDurable) && state.store.operation(id)?.is_none() {
        let mut unwritten = state.unwritten.lock().unwrap_or_else(|p| p.into_inner());
        let status = if unwritten.iter().any(|(queued, _)| queued.operation_id == *id) {
            StatusCode::OK
        } else {
            // BROKEN: ack-before-durable — the intent is only queued for the next group commit,
            // yet the answer says it is recorded.
            unwritten.push((submission.clone(), hash));
            StatusCode::ACCEPTED
        };
        return Ok(
            (status, Json(Accepted { operation_id: id, execution: ExecutionState::IntentRecorded })).into_response()
        );
    }
    // `submit` returns once the intent is committed: a crash right after the answer below cannot
    // lose the operation.
    let (status, execution) = match state.store.submit(&submission, &hash)? {
        // BROKEN: submit-upsert — a repeated submission replaces the stored operation and starts
        // it again, as `INSERT OR REPLACE` would.
        Submitted::AlreadyKnown(_) | Submitted::Conflict if state.broken == Some(Broken::SubmitUpsert) => {
            state.store.replace(&submission, &hash)?;
            state.wake.notify_one();
            (StatusCode::ACCEPTED, ExecutionState::IntentRecorded)
        }
        Submitted::Created => {
            match submission.work() {
                Ok(Work::Call { tool, .. }) => eprintln!("{id} intent recorded ({} {})", tool.name, tool.kind.as_str()),
                _ => eprintln!("{id} intent recorded (a task for the model)"),
            }
            state.wake.notify_one();
            (StatusCode::ACCEPTED, ExecutionState::IntentRecorded)
        }
        Submitted::AlreadyKnown(execution) => (StatusCode::OK, execution),
        Submitted::Conflict => {
            return Err(ApiError {
                status: StatusCode::CONFLICT,
                message: format!(
                    "expected a resubmission of {id} to repeat its first body exactly, \
                     found a different body; use a new operation_id for a different request"
                ),
            });
        }
    };
    Ok((status, Json(Accepted { operation_id: id, execution })).into_response())
}

async fn read(
    State(state): State<AppState>,
    Path(operation_id): Path<String>,
) -> Result<Json<OperationView>, ApiError> {
    if let Some(snapshot) = state.store.snapshot(&operation_id)? {
        return Ok(Json(OperationView::from(snapshot)));
    }
    // `ack-before-durable` reads its own unwritten intents, as a group-committing store would.
    let unwritten = state.unwritten.lock().unwrap_or_else(|p| p.into_inner());
    match unwritten.iter().find(|(queued, _)| queued.operation_id == operation_id) {
        Some((queued, _)) => Ok(Json(OperationView::unwritten(queued))),
        None => Err(ApiError {
            status: StatusCode::NOT_FOUND,
            message: format!("expected the id of a submitted operation, found {operation_id:?}"),
        }),
    }
}

async fn unknown_route(method: Method, uri: Uri) -> ApiError {
    off_the_map(StatusCode::NOT_FOUND, &method, &uri)
}

async fn wrong_method(method: Method, uri: Uri) -> ApiError {
    off_the_map(StatusCode::METHOD_NOT_ALLOWED, &method, &uri)
}

/// A request for something the API does not serve, answered with the list of what it does.
fn off_the_map(status: StatusCode, method: &Method, uri: &Uri) -> ApiError {
    ApiError {
        status,
        message: format!(
            "expected GET /health, POST /operations or GET /operations/{{operation_id}}, found {method} {}",
            uri.path()
        ),
    }
}

// ---- validation -----------------------------------------------------------------------------

fn validate(submission: &Submission) -> Result<(), ApiError> {
    let id = &submission.operation_id;
    if !is_name(id, 128, ":") {
        return Err(ApiError::bad_request(format!(
            "expected operation_id to be 1 to 128 characters from [A-Za-z0-9._:-], found {id:?}"
        )));
    }
    for (field, value) in [("tenant", &submission.tenant), ("actor", &submission.actor)] {
        if value.is_empty() || value.chars().count() > 128 {
            return Err(ApiError::bad_request(format!("expected {field} to be 1 to 128 characters, found {value:?}")));
        }
    }
    let tools = match submission.work().map_err(ApiError::bad_request)? {
        Work::Call { tool, .. } => vec![tool],
        Work::Task(task) if task.tools.is_empty() => {
            return Err(ApiError::bad_request("expected task.tools to offer at least one tool, found none".to_owned()));
        }
        Work::Task(task) => task.tools.iter().collect(),
    };
    for tool in tools.iter().map(|t| &t.name) {
        if tool.is_empty() || tool.chars().count() > 128 {
            return Err(ApiError::bad_request(format!("expected tool.name to be 1 to 128 characters, found {tool:?}")));
        }
    }
    let mut seen = HashSet::new();
    for destination in &submission.destinations {
        if !is_name(destination, 64, "") {
            return Err(ApiError::bad_request(format!(
                "expected each destination to be 1 to 64 characters from [A-Za-z0-9._-], \
                 found {destination:?}"
            )));
        }
        if !seen.insert(destination) {
            return Err(ApiError::bad_request(format!(
                "expected each destination once, found {destination:?} more than once"
            )));
        }
    }
    Ok(())
}

/// 1 to `max_len` characters from `[A-Za-z0-9._-]` plus `extra`.
fn is_name(value: &str, max_len: usize, extra: &str) -> bool {
    (1..=max_len).contains(&value.len())
        && value.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c) || extra.contains(c))
}

// ---- response shapes ------------------------------------------------------------------------

/// `GET /operations/{id}`, field for field as in CONTRACT.md §3.
#[derive(Serialize)]
struct OperationView {
    operation_id: String,
    tenant: String,
    actor: String,
    /// `null` for a task the model has not decided yet (CONTRACT.md section 12).
    tool: Option<Tool>,
    execution: ExecutionState,
    paused: bool,
    attempts: u32,
    idempotency_key: String,
    provider_ref: Option<String>,
    result: Option<Value>,
    failure: Option<FailureView>,
    deliveries: Vec<DeliveryView>,
    audit: Vec<AuditEntry>,
}

#[derive(Serialize)]
struct FailureView {
    reason: String,
}

#[derive(Serialize)]
struct DeliveryView {
    destination: String,
    state: DeliveryState,
    attempts: u32,
    idempotency_key: String,
    last_error: Option<String>,
}

impl OperationView {
    /// An intent acknowledged but not yet written (`ack-before-durable` only).
    fn unwritten(submission: &Submission) -> OperationView {
        OperationView {
            operation_id: submission.operation_id.clone(),
            tenant: submission.tenant.clone(),
            actor: submission.actor.clone(),
            tool: submission.tool.clone(),
            execution: ExecutionState::IntentRecorded,
            paused: false,
            attempts: 0,
            idempotency_key: submission.idempotency_key().to_owned(),
            provider_ref: None,
            result: None,
            failure: None,
            deliveries: Vec::new(),
            audit: vec![AuditEntry { event: "intent_recorded".to_owned(), detail: "queued".to_owned() }],
        }
    }
}

impl From<Snapshot> for OperationView {
    fn from(Snapshot { operation, deliveries, audit }: Snapshot) -> Self {
        OperationView {
            failure: match operation.execution {
                ExecutionState::Failed => operation.failure_reason.map(|reason| FailureView { reason }),
                _ => None,
            },
            operation_id: operation.id,
            tenant: operation.tenant,
            actor: operation.actor,
            tool: operation.tool,
            execution: operation.execution,
            paused: operation.paused,
            attempts: operation.attempts,
            idempotency_key: operation.idempotency_key,
            provider_ref: operation.provider_ref,
            result: operation.result,
            deliveries: deliveries
                .into_iter()
                .map(|delivery| DeliveryView {
                    destination: delivery.destination,
                    state: delivery.state,
                    attempts: delivery.attempts,
                    idempotency_key: delivery.idempotency_key,
                    last_error: delivery.last_error,
                })
                .collect(),
            audit,
        }
    }
}

// ---- errors ---------------------------------------------------------------------------------

#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn bad_request(message: String) -> ApiError {
        ApiError { status: StatusCode::BAD_REQUEST, message }
    }
}

/// A store failure: the request cannot be answered truthfully.
impl From<anyhow::Error> for ApiError {
    fn from(error: anyhow::Error) -> ApiError {
        eprintln!("api: store error: {error:#}");
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: format!("expected the store to answer, found an error: {error:#}"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(serde_json::json!({ "error": self.message }))).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_contract() {
        assert!(is_name("op-1", 128, ":"));
        assert!(is_name("run:7.op_2", 128, ":"));
        assert!(!is_name("", 128, ":"));
        assert!(!is_name("op 1", 128, ":"));
        assert!(!is_name("op/1", 128, ":"));
        assert!(!is_name(&"x".repeat(129), 128, ":"));
        assert!(is_name(&"x".repeat(128), 128, ":"));
        assert!(is_name("ledger", 64, ""));
        assert!(!is_name("led:ger", 64, ""));
    }
}
