//! The harness's client of the runtime's API (`CONTRACT.md`, section 3): submit an operation,
//! read back what the runtime reports about it.

use crate::scenario::Operation;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;

/// Execution state, as the runtime reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExecutionState {
    IntentRecorded,
    Dispatched,
    Succeeded,
    Failed,
    Unknown,
}

/// Delivery state of one destination, as the runtime reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DeliveryState {
    Pending,
    Sent,
    Acked,
    DeadLettered,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliveryReport {
    pub destination: String,
    pub state: DeliveryState,
    pub attempts: u32,
    #[serde(default)]
    pub idempotency_key: Option<String>,
    #[serde(default)]
    pub last_error: Option<String>,
}

/// `GET /operations/{id}`; unknown fields are allowed (runtimes may report more).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OperationReport {
    pub operation_id: String,
    pub execution: ExecutionState,
    #[serde(default)]
    pub paused: bool,
    pub attempts: u32,
    #[serde(default)]
    pub idempotency_key: Option<String>,
    #[serde(default)]
    pub provider_ref: Option<String>,
    #[serde(default)]
    pub result: Option<Value>,
    #[serde(default)]
    pub failure: Option<Failure>,
    #[serde(default)]
    pub deliveries: Vec<DeliveryReport>,
    #[serde(default)]
    pub audit: Vec<Value>,
}

impl OperationReport {
    /// The contract's "settled": nothing more will happen without a person. A success is settled
    /// only when every one of the operation's `destinations` has a finished delivery: a runtime
    /// that reports SUCCEEDED with no delivery records has not delivered, it has forgotten to.
    pub fn is_settled(&self, destinations: &[String]) -> bool {
        match self.execution {
            ExecutionState::Succeeded => destinations.iter().all(|destination| {
                self.deliveries.iter().any(|d| {
                    d.destination == *destination
                        && matches!(d.state, DeliveryState::Acked | DeliveryState::DeadLettered)
                })
            }),
            ExecutionState::Failed => true,
            ExecutionState::Unknown => self.paused,
            ExecutionState::IntentRecorded | ExecutionState::Dispatched => false,
        }
    }

    /// A one-line summary for messages: `SUCCEEDED, ledger ACKED, mailer PENDING`.
    pub fn summary(&self) -> String {
        let mut s =
            serde_json::to_value(self.execution).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        if self.paused {
            s.push_str(" (paused)");
        }
        for d in &self.deliveries {
            let state =
                serde_json::to_value(d.state).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
            s.push_str(&format!(", {} {state}", d.destination));
        }
        s
    }
}

/// A client bound to one incarnation's API address.
pub struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    pub fn new(base: &str) -> Client {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .no_proxy()
            .build()
            .expect("a plain HTTP client builds");
        Client { http, base: base.to_owned() }
    }

    /// The body the harness submits, with the operation's identity planted in the arguments.
    pub fn submission(op: &Operation) -> Value {
        json!({
            "operation_id": op.id,
            "tenant": op.tenant,
            "actor": op.actor,
            "tool": { "name": op.tool.tool_name(), "kind": op.tool.as_str() },
            "arguments": { "note": format!("killpoint workload {}", op.id), "_killpoint": { "operation": op.id } },
            "destinations": op.destinations,
        })
    }

    pub async fn submit(&self, op: &Operation) -> Result<(), String> {
        let url = format!("{}/operations", self.base);
        let response = self
            .http
            .post(&url)
            .json(&Client::submission(op))
            .send()
            .await
            .map_err(|e| format!("POST {url} for `{}` failed: {e}", op.id))?;
        let status = response.status();
        if status.as_u16() == 202 || status.as_u16() == 200 {
            Ok(())
        } else {
            let body = response.text().await.unwrap_or_default();
            Err(format!("POST {url} for `{}`: expected 202 Accepted, got {status}: {body}", op.id))
        }
    }

    pub async fn read(&self, id: &str) -> Result<OperationReport, String> {
        let url = format!("{}/operations/{id}", self.base);
        let response = self.http.get(&url).send().await.map_err(|e| format!("GET {url} failed: {e}"))?;
        let status = response.status();
        let body = response.text().await.map_err(|e| format!("GET {url}: reading the body failed: {e}"))?;
        if !status.is_success() {
            return Err(format!("GET {url}: expected 200, got {status}: {body}"));
        }
        serde_json::from_str(&body)
            .map_err(|e| format!("GET {url}: the body does not match CONTRACT.md section 3 ({e}): {body}"))
    }
}
