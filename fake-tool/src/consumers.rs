//! Fake downstream consumers: `POST /consumers/{destination}/events`, deduplicating by key.
//!
//! Like a well-built consumer, each one persists the key before applying the event (here: inserts
//! it into a set under the same lock), and records receipts and applications separately so the
//! checker can tell "received twice" (fine) from "applied twice" (a duplicate).

use crate::faults::Faults;
use crate::fence::Fence;
use crate::kill_point::KillPoint;
use crate::ledger::{Event, Ledger, Service};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, watch};

#[derive(Clone)]
pub(crate) struct Consumers {
    pub(crate) ledger: Arc<Ledger>,
    pub(crate) faults: Arc<Faults>,
    points: mpsc::UnboundedSender<KillPoint>,
    shutdown: watch::Receiver<bool>,
    fence: Arc<Fence>,
    /// Shared with the world's snapshot handle (`WorldState`, in `snapshot.rs`).
    pub(crate) state: Arc<Mutex<Receipts>>,
}

#[derive(Default, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Receipts {
    /// (destination, key) pairs already applied.
    seen: HashSet<(String, String)>,
    /// Receipts per (operation, destination), to number them.
    #[serde(with = "crate::pairs")]
    receipts: HashMap<(String, String), u32>,
}

impl Consumers {
    pub(crate) fn new(
        ledger: Arc<Ledger>,
        faults: Arc<Faults>,
        points: mpsc::UnboundedSender<KillPoint>,
        shutdown: watch::Receiver<bool>,
        fence: Arc<Fence>,
    ) -> Self {
        Consumers { ledger, faults, points, shutdown, fence, state: Arc::default() }
    }
}

/// `POST /consumers/{destination}/events`
pub(crate) async fn receive(
    State(consumers): State<Consumers>,
    Path(destination): Path<String>,
    headers: HeaderMap,
    Json(payload): Json<Value>,
) -> axum::response::Response {
    let key = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let operation = payload.get("operation_id").and_then(Value::as_str).map(str::to_owned);
    // Before any fault or hold is consumed: a fenced receipt is no receipt.
    let incarnation = match consumers.fence.admit(&headers) {
        Ok(incarnation) => incarnation,
        Err(stale) => {
            let what = format!("deliver to {destination}");
            return stale.refuse(&consumers.ledger, Service::Consumer, operation, Some(destination), what);
        }
    };
    let fault = consumers.faults.consume_consumer(&destination, operation.as_deref());
    let apply = fault.as_ref().is_none_or(|f| f.apply);
    let status = fault.as_ref().and_then(|f| StatusCode::from_u16(f.status).ok()).unwrap_or(StatusCode::ACCEPTED);

    // In a block of its own: the lock guard must be gone before the hold awaits.
    let (seq, hold) = {
        let mut state = consumers.state.lock().expect("consumer lock");
        let hold = operation.as_ref().and_then(|op| {
            let n = state.receipts.entry((op.clone(), destination.clone())).or_default();
            *n += 1;
            consumers.faults.take_consumer_hold(op, &destination, *n)
        });
        // A receipt without a key cannot be deduplicated; it is applied every time, as a naive
        // consumer would, so the checker sees the duplicate.
        let applied = apply
            && match &key {
                Some(k) => state.seen.insert((destination.clone(), k.clone())),
                None => true,
            };
        let seq = consumers.ledger.record_from(
            Event::ConsumerReceipt {
                destination: destination.clone(),
                operation: operation.clone(),
                idempotency_key: key,
                applied,
                status: status.as_u16(),
                payload,
            },
            incarnation,
        );
        (seq, hold)
    };

    if let Some(hold) = hold {
        let what = format!("consumer {destination} holds its answer to receipt {} of {}", hold.receipt, hold.operation);
        let _ = consumers.points.send(KillPoint { seq, tag: hold.tag, what });
        // Held until the world shuts down: the runtime is killed before it learns of the 202.
        let mut shutdown = consumers.shutdown.clone();
        let _ = shutdown.wait_for(|down| *down).await;
        return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "error": "the fake world shut down while holding" })))
            .into_response();
    }
    if status.is_success() {
        (status, Json(json!({ "operation_id": operation, "delivery": "accepted" }))).into_response()
    } else {
        (status, Json(json!({ "error": "consumer unavailable (injected fault)" }))).into_response()
    }
}
