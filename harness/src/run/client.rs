//! The harness's client of the runtime's API (`CONTRACT.md`, section 3): submit an operation,
//! read back what the runtime reports about it.

use crate::scenario::Operation;
use fake_tool::ToolKind;
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

    /// The body the harness submits: a fixed tool call with the operation's identity planted in
    /// the arguments, or a task for the model (CONTRACT.md section 12), whose prompt carries the
    /// marker that ties the model's conversation to the operation and which offers every tool.
    pub fn submission(op: &Operation) -> Value {
        let mut body = json!({
            "operation_id": op.id,
            "tenant": op.tenant,
            "actor": op.actor,
            "destinations": op.destinations,
        });
        if op.task {
            let tools: Vec<Value> =
                ToolKind::ALL.iter().map(|k| json!({ "name": k.tool_name(), "kind": k.as_str() })).collect();
            body["task"] = json!({ "prompt": Client::task_prompt(op), "tools": tools });
        } else {
            body["tool"] = json!({ "name": op.tool.tool_name(), "kind": op.tool.as_str() });
            body["arguments"] =
                json!({ "note": format!("killpoint workload {}", op.id), "_killpoint": { "operation": op.id } });
        }
        body
    }

    /// A task operation's prompt: what a user would ask, and the marker.
    pub fn task_prompt(op: &Operation) -> String {
        format!(
            "Settle order {} for {}/{}: call the one tool that does it. {}",
            op.id,
            op.tenant,
            op.actor,
            fake_tool::task_marker(&op.id)
        )
    }

    /// Submits `op`; returns the status of a `202` or `200` answer.
    pub async fn submit(&self, op: &Operation) -> Result<u16, String> {
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
            Ok(status.as_u16())
        } else {
            let body = response.text().await.unwrap_or_default();
            Err(format!("POST {url} for `{}`: expected 202 Accepted, got {status}: {body}", op.id))
        }
    }

    /// Sends one of the submissions that test the contract's submission rules; never fails: what
    /// came back (or that nothing did) is the answer, for the checker to judge.
    pub async fn resubmit(&self, op: &Operation, kind: Resubmission) -> Answer {
        let url = format!("{}/operations", self.base);
        let body = kind.body(op);
        let answer = self.http.post(&url).header("content-type", "application/json").body(body).send().await;
        Answer::of(answer).await
    }

    /// `GET /operations/{id}`, as a raw answer (for "this id must not exist").
    pub async fn read_answer(&self, id: &str) -> Answer {
        Answer::of(self.http.get(format!("{}/operations/{}", self.base, path_segment(id))).send().await).await
    }

    /// `GET /metrics`: the monitoring signals as Prometheus text, or what went wrong.
    pub async fn metrics(&self) -> Result<String, String> {
        let url = format!("{}/metrics", self.base);
        let response = self.http.get(&url).send().await.map_err(|e| format!("GET {url} failed: {e}"))?;
        let status = response.status();
        let body = response.text().await.map_err(|e| format!("GET {url}: reading the body failed: {e}"))?;
        if status.as_u16() != 200 {
            return Err(format!("GET {url}: expected 200, got {status}: {}", bounded(&body, 200)));
        }
        Ok(body)
    }

    pub async fn read(&self, id: &str) -> Result<OperationReport, ReadError> {
        let url = format!("{}/operations/{id}", self.base);
        let response =
            self.http.get(&url).send().await.map_err(|e| ReadError::Other(format!("GET {url} failed: {e}")))?;
        let status = response.status();
        let body =
            response.text().await.map_err(|e| ReadError::Other(format!("GET {url}: reading the body failed: {e}")))?;
        if status.as_u16() == 404 {
            return Err(ReadError::Unknown(format!("GET {url}: expected 200, got {status}: {}", bounded(&body, 200))));
        }
        if !status.is_success() {
            return Err(ReadError::Other(format!("GET {url}: expected 200, got {status}: {body}")));
        }
        serde_json::from_str(&body).map_err(|e| {
            ReadError::Other(format!("GET {url}: the body does not match CONTRACT.md section 3 ({e}): {body}"))
        })
    }
}

/// Why an operation could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// `404`: the runtime says it does not know the id.
    Unknown(String),
    /// Anything else: no answer, another status, a body off the contract.
    Other(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Unknown(m) | ReadError::Other(m) => f.write_str(m),
        }
    }
}

/// A submission the harness sends to test the contract's submission rules (CONTRACT.md
/// section 3), as a client retrying after a timeout would, or a careless one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resubmission {
    /// The body first submitted, again.
    Same,
    /// The same body as the contract compares it: destinations in another order (they are a set),
    /// an unknown field, `destinations` left out when it is empty.
    Equivalent,
    /// The same id with another body (a changed argument).
    Different,
    /// A malformed operation id.
    BadId,
    /// A tool kind the contract does not have.
    UnknownToolKind,
    /// No `tenant`.
    MissingField,
    /// A body that is not JSON.
    NotJson,
}

impl Resubmission {
    /// Sent for every submitted operation after every restart.
    pub const AGAIN: [Resubmission; 3] = [Resubmission::Same, Resubmission::Equivalent, Resubmission::Different];
    /// Sent once per run.
    pub const MALFORMED: [Resubmission; 4] =
        [Resubmission::BadId, Resubmission::UnknownToolKind, Resubmission::MissingField, Resubmission::NotJson];

    /// The status the contract requires.
    pub fn expected_status(self) -> u16 {
        match self {
            Resubmission::Same | Resubmission::Equivalent => 200,
            Resubmission::Different => 409,
            Resubmission::BadId
            | Resubmission::UnknownToolKind
            | Resubmission::MissingField
            | Resubmission::NotJson => 400,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Resubmission::Same => "the same body",
            Resubmission::Equivalent => "the same body with its destinations in another order and an unknown field",
            Resubmission::Different => "another body under the same id",
            Resubmission::BadId => "a malformed operation_id",
            Resubmission::UnknownToolKind => "an unknown tool kind",
            Resubmission::MissingField => "a body without `tenant`",
            Resubmission::NotJson => "a body that is not JSON",
        }
    }

    /// The id a malformed submission names: it must not exist afterwards. `None` when the body
    /// names no id (not JSON).
    pub fn malformed_id(self) -> Option<&'static str> {
        match self {
            Resubmission::BadId => Some("killpoint bad id"),
            Resubmission::UnknownToolKind => Some("killpoint.malformed.kind"),
            Resubmission::MissingField => Some("killpoint.malformed.tenant"),
            Resubmission::Same | Resubmission::Equivalent | Resubmission::Different | Resubmission::NotJson => None,
        }
    }

    fn body(self, op: &Operation) -> String {
        let mut body = Client::submission(op);
        match self {
            Resubmission::Same => {}
            Resubmission::Equivalent => {
                let destinations: Vec<&String> = op.destinations.iter().rev().collect();
                body["destinations"] = json!(destinations);
                if op.destinations.is_empty() {
                    body.as_object_mut().expect("an object").remove("destinations");
                }
                body["killpoint_unknown_field"] = json!({ "ignore": "me" });
            }
            Resubmission::Different if op.task => {
                body["task"]["prompt"] = json!(format!("{}, changed", Client::task_prompt(op)));
            }
            Resubmission::Different => {
                body["arguments"]["note"] = json!(format!("killpoint workload {}, changed", op.id));
            }
            Resubmission::BadId | Resubmission::UnknownToolKind | Resubmission::MissingField => {
                body["operation_id"] = json!(self.malformed_id());
                match self {
                    Resubmission::UnknownToolKind if op.task => body["task"]["tools"][0]["kind"] = json!("teleport"),
                    Resubmission::UnknownToolKind => body["tool"]["kind"] = json!("teleport"),
                    Resubmission::MissingField => {
                        body.as_object_mut().expect("an object").remove("tenant");
                    }
                    _ => {}
                }
            }
            Resubmission::NotJson => return "operation_id=killpoint.malformed.json".to_owned(),
        }
        body.to_string()
    }
}

/// What the runtime answered to a request: the status and the body (bounded), or no status and
/// why no answer came.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub status: Option<u16>,
    pub body: String,
}

impl Answer {
    async fn of(response: reqwest::Result<reqwest::Response>) -> Answer {
        match response {
            Ok(r) => {
                let status = r.status().as_u16();
                let body = r.text().await.unwrap_or_else(|e| format!("<body unreadable: {e}>"));
                Answer { status: Some(status), body: bounded(&body, 4096) }
            }
            Err(e) => Answer { status: None, body: format!("no answer: {e}") },
        }
    }

    /// `202`, `409 {"error":"…"}`, or `no answer: …`, for the trace: the body cut at 200
    /// characters.
    pub fn describe(&self) -> String {
        match self.status {
            Some(s) => format!("{s} {}", bounded(&self.body, 200)),
            None => self.body.clone(),
        }
    }
}

/// A body as kept: at most `limit` characters (a runtime's answer is not trusted to be small).
fn bounded(body: &str, limit: usize) -> String {
    let body = body.trim();
    match body.char_indices().nth(limit) {
        Some((end, _)) => format!("{}…", &body[..end]),
        None => body.to_owned(),
    }
}

/// An id as one URL path segment (the malformed id has a space in it).
fn path_segment(id: &str) -> String {
    id.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"._:-".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
