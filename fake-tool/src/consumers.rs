//! Fake downstream consumers: `POST /consumers/{destination}/events`, deduplicating by key.
//!
//! Like a well-built consumer, each one persists the key before applying the event (here: inserts
//! it into a set under the same lock), and records receipts and applications separately so the
//! checker can tell "received twice" (fine) from "applied twice" (a duplicate).

use crate::faults::Faults;
use crate::ledger::{Event, Ledger};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

#[derive(Clone)]
pub(crate) struct Consumers {
    pub(crate) ledger: Arc<Ledger>,
    pub(crate) faults: Arc<Faults>,
    /// (destination, key) pairs already applied.
    seen: Arc<Mutex<HashSet<(String, String)>>>,
}

impl Consumers {
    pub(crate) fn new(ledger: Arc<Ledger>, faults: Arc<Faults>) -> Self {
        Consumers { ledger, faults, seen: Arc::default() }
    }
}

/// `POST /consumers/{destination}/events`
pub(crate) async fn receive(
    State(consumers): State<Consumers>,
    Path(destination): Path<String>,
    headers: HeaderMap,
    Json(payload): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let key = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let operation = payload.get("operation_id").and_then(Value::as_str).map(str::to_owned);
    let fault = consumers.faults.consume_consumer(&destination);
    let apply = fault.as_ref().is_none_or(|f| f.apply);
    let status = fault.as_ref().and_then(|f| StatusCode::from_u16(f.status).ok()).unwrap_or(StatusCode::ACCEPTED);

    let mut seen = consumers.seen.lock().expect("consumer lock");
    // A receipt without a key cannot be deduplicated; it is applied every time, as a naive
    // consumer would, so the checker sees the duplicate.
    let applied = apply
        && match &key {
            Some(k) => seen.insert((destination.clone(), k.clone())),
            None => true,
        };
    consumers.ledger.record(Event::ConsumerReceipt {
        destination: destination.clone(),
        operation: operation.clone(),
        idempotency_key: key,
        applied,
        status: status.as_u16(),
        payload,
    });
    drop(seen);

    if status.is_success() {
        (status, Json(json!({ "operation_id": operation, "delivery": "accepted" })))
    } else {
        (status, Json(json!({ "error": "consumer unavailable (injected fault)" })))
    }
}
