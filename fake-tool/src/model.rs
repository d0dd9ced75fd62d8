//! The fake model: an OpenAI-compatible `POST /model/v1/chat/completions` that decides for task
//! operations, so that an agent framework's own model client can be pointed at it.
//!
//! Its answers come from the scenario, armed per operation ([`ModelScript`]): asked about a
//! conversation whose task marker (`[killpoint:<operation>]`) names the operation, it answers one
//! tool call of the script's tool; asked again once a tool result (`role: "tool"`) is in the
//! conversation, a final text. Like a sampling model it answers *differently every time it is
//! asked the same question*: the n-th decision for an operation draws another `amount_cents` and
//! carries another tool-call id, planted in the arguments as `_killpoint.decision` (beside the
//! operation, as the harness plants it in fixed-tool submissions). The provider records the
//! arguments of every call, so the checker can tell which answer each effect acted on.
//!
//! Every question goes on the ledger as [`Event::ModelCall`]. The model has no side effect and is
//! not fenced: an outlived incarnation may ask it (what it then does with the answer is fenced at
//! the provider).

use crate::faults::{self, Faults};
use crate::ledger::{Event, Injected, Ledger, ModelAnswer};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What the model decides for one task operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelScript {
    pub operation: String,
    /// The tool it chooses (the provider's tool name); it must be among the tools offered.
    pub tool: String,
    /// Seeds the drawn values: the same seed draws the same sequence of answers.
    pub seed: u64,
}

/// The model's state: the scripts armed and the questions asked so far.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(crate) struct Minds {
    scripts: HashMap<String, ModelScript>,
    /// Questions asked per operation (every answer counts).
    asks: HashMap<String, u32>,
    /// Decisions given per operation: numbers the tool-call ids.
    decisions: HashMap<String, u32>,
}

#[derive(Clone)]
pub(crate) struct Model {
    ledger: Arc<Ledger>,
    faults: Arc<Faults>,
    /// Shared with the world's snapshot handle.
    pub(crate) minds: Arc<Mutex<Minds>>,
}

impl Model {
    pub(crate) fn new(ledger: Arc<Ledger>, faults: Arc<Faults>) -> Model {
        Model { ledger, faults, minds: Arc::default() }
    }

    pub(crate) fn arm(&self, script: ModelScript) {
        self.minds.lock().expect("model lock").scripts.insert(script.operation.clone(), script);
    }
}

/// The task marker a prompt carries: `[killpoint:<operation>]`.
pub fn task_marker(operation: &str) -> String {
    format!("[killpoint:{operation}]")
}

/// The operation named by the first task marker in any message of the conversation.
fn marked_operation(messages: &[Value]) -> Option<String> {
    messages.iter().flat_map(message_texts).find_map(|text| {
        let start = text.find("[killpoint:")? + "[killpoint:".len();
        let end = text[start..].find(']')? + start;
        let id = &text[start..end];
        (!id.is_empty()).then(|| id.to_owned())
    })
}

/// A message's text: its `content` as a string, or the `text` of each content part.
fn message_texts(message: &Value) -> Vec<String> {
    match message.get("content") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(parts)) => {
            parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str).map(str::to_owned)).collect()
        }
        _ => Vec::new(),
    }
}

/// FNV-1a over the conversation's JSON: the same messages, the same fingerprint.
fn fingerprint(messages: &[Value]) -> String {
    let bytes = serde_json::to_vec(messages).unwrap_or_default();
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3));
    format!("{hash:016x}")
}

/// The `amount_cents` of the n-th decision: distinct for every n below 9000, so that no two
/// answers to one operation are the same decision.
fn drawn_amount(seed: u64, operation: &str, decision: u32) -> u64 {
    let base =
        operation.bytes().fold(seed ^ 0x9e37_79b9_7f4a_7c15, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    1000 + (base % 9000 + u64::from(decision) * 977) % 9000
}

/// The tool-call id of the n-th decision for `operation` (OpenAI's are `call_…`).
fn call_id(operation: &str, decision: u32) -> String {
    let safe: String = operation.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    format!("call_{safe}_{decision}")
}

/// One question, read from the request body.
struct Question {
    messages: Vec<Value>,
    stream: bool,
    usage_chunk: bool,
    model: String,
    offered: Vec<String>,
}

impl Question {
    fn read(body: &Value) -> Result<Question, String> {
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .ok_or_else(|| "expected a JSON body with a `messages` array".to_owned())?;
        let offered = body
            .get("tools")
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Question {
            stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
            usage_chunk: body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false),
            model: body.get("model").and_then(Value::as_str).unwrap_or("killpoint").to_owned(),
            messages,
            offered,
        })
    }

    /// Whether a tool's result is already in the conversation: the decision was acted on.
    fn has_tool_result(&self) -> bool {
        self.messages.iter().any(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
    }
}

/// `POST /model/v1/chat/completions`.
pub(crate) async fn chat(State(model): State<Model>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let incarnation =
        headers.get(crate::fence::HEADER).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u32>().ok());
    let question =
        match serde_json::from_slice::<Value>(&body).map_err(|e| e.to_string()).and_then(|b| Question::read(&b)) {
            Ok(q) => q,
            Err(why) => return refuse(&model, None, 0, String::new(), false, why, incarnation),
        };
    let operation = marked_operation(&question.messages);
    let conversation = fingerprint(&question.messages);
    let Some(op) = operation else {
        let why = "no task marker `[killpoint:<operation>]` in any message: the task's prompt must reach the model unchanged (CONTRACT.md section 12)".to_owned();
        return refuse(&model, None, 0, conversation, question.stream, why, incarnation);
    };
    let decided = model.ask(&op, &question, conversation, incarnation);
    let ask = decided.ask;
    match decided.outcome {
        Outcome::Refused(why) => invalid_request(why),
        Outcome::Injected(injected, late) => {
            match (injected, late) {
                (Injected::Late(ms), Some(answer)) => {
                    // The fault itself is lateness: the fake model being slow, not a wait for anything.
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                    reply(&question, &op, ask, &answer)
                }
                (spoilt, _) => {
                    faults::injected(spoilt).unwrap_or_else(|| StatusCode::SERVICE_UNAVAILABLE.into_response())
                }
            }
        }
        Outcome::Answer(answer) => reply(&question, &op, ask, &answer),
    }
}

/// What the model makes of one question.
enum Outcome {
    Answer(ModelAnswer),
    /// A fault: what is sent instead, and for a late answer the answer itself.
    Injected(Injected, Option<ModelAnswer>),
    Refused(String),
}

struct Decided {
    ask: u32,
    outcome: Outcome,
}

impl Model {
    /// Counts, decides and records one question about `op`, under the model's lock, so that a
    /// snapshot's counts and ledger agree.
    fn ask(&self, op: &str, question: &Question, conversation: String, incarnation: Option<u32>) -> Decided {
        let mut minds = self.minds.lock().expect("model lock");
        let decided = self.decide(&mut minds, op, question);
        let (answer, late_ms) = match &decided.outcome {
            Outcome::Refused(why) => (ModelAnswer::Refused { error: why.clone() }, None),
            // A late answer is the answer: the decision the runtime receives, and acts on.
            Outcome::Injected(Injected::Late(ms), Some(answer)) => (answer.clone(), Some(*ms)),
            Outcome::Injected(injected, _) => (ModelAnswer::Injected { injected: *injected }, None),
            Outcome::Answer(answer) => (answer.clone(), None),
        };
        let ask = decided.ask;
        let event = Event::ModelCall {
            operation: Some(op.to_owned()),
            ask,
            conversation,
            stream: question.stream,
            answer,
            late_ms,
        };
        self.ledger.record_from(event, incarnation);
        decided
    }

    /// Counts the question and decides its answer; the caller holds the model's lock.
    fn decide(&self, minds: &mut Minds, op: &str, question: &Question) -> Decided {
        let ask = {
            let n = minds.asks.entry(op.to_owned()).or_default();
            *n += 1;
            *n
        };
        let Some(script) = minds.scripts.get(op).cloned() else {
            let why = format!(
                "no task is armed for operation `{op}`: the harness arms the model for the task operations it submits"
            );
            return Decided { ask, outcome: Outcome::Refused(why) };
        };
        if question.has_tool_result() {
            let text = format!("Done: {} was called for {op}.", script.tool);
            return Decided { ask, outcome: Outcome::Answer(ModelAnswer::Text { text }) };
        }
        if !question.offered.contains(&script.tool) {
            let why = format!(
                "the task of `{op}` needs the tool `{}`, and the request offers {:?}: offer the task's tools as functions (CONTRACT.md section 12)",
                script.tool, question.offered
            );
            return Decided { ask, outcome: Outcome::Refused(why) };
        }
        let injected = self.faults.consume_model(op);
        if injected.is_some_and(|i| !i.is_truthful()) {
            return Decided { ask, outcome: Outcome::Injected(injected.expect("checked"), None) };
        }
        let decision = {
            let n = minds.decisions.entry(op.to_owned()).or_default();
            *n += 1;
            *n
        };
        let id = call_id(op, decision);
        let arguments = json!({
            "amount_cents": drawn_amount(script.seed, op, decision),
            "note": format!("killpoint task {op}"),
            "_killpoint": { "operation": op, "decision": id },
        });
        let answer = ModelAnswer::ToolCall { id, tool: script.tool, arguments };
        let outcome = match injected {
            Some(late) => Outcome::Injected(late, Some(answer)),
            None => Outcome::Answer(answer),
        };
        Decided { ask, outcome }
    }
}

fn refuse(
    model: &Model,
    operation: Option<String>,
    ask: u32,
    conversation: String,
    stream: bool,
    why: String,
    incarnation: Option<u32>,
) -> Response {
    model.ledger.record_from(
        Event::ModelCall {
            operation,
            ask,
            conversation,
            stream,
            answer: ModelAnswer::Refused { error: why.clone() },
            late_ms: None,
        },
        incarnation,
    );
    invalid_request(why)
}

/// A question the model cannot answer, as OpenAI's API refuses one: `400` with its error shape.
fn invalid_request(why: String) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": { "message": why, "type": "invalid_request_error" } })))
        .into_response()
}

/// The answer as the client asked for it: one JSON completion, or server-sent event chunks.
fn reply(question: &Question, op: &str, ask: u32, answer: &ModelAnswer) -> Response {
    let id = format!("chatcmpl-{op}-{ask}");
    let usage = json!({ "prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20 });
    if question.stream {
        let chunks = chunks(&id, &question.model, answer, question.usage_chunk.then_some(usage));
        let body: String =
            chunks.iter().map(|c| format!("data: {c}\n\n")).chain(["data: [DONE]\n\n".to_owned()]).collect();
        return (StatusCode::OK, [(header::CONTENT_TYPE, "text/event-stream")], body).into_response();
    }
    let (message, finish) = match answer {
        ModelAnswer::ToolCall { id, tool, arguments } => (
            json!({ "role": "assistant", "content": null, "tool_calls": [
                { "id": id, "type": "function", "function": { "name": tool, "arguments": arguments.to_string() } }
            ] }),
            "tool_calls",
        ),
        ModelAnswer::Text { text } => (json!({ "role": "assistant", "content": text }), "stop"),
        ModelAnswer::Injected { .. } | ModelAnswer::Refused { .. } => {
            (json!({ "role": "assistant", "content": "" }), "stop")
        }
    };
    Json(json!({
        "id": id, "object": "chat.completion", "created": 0, "model": question.model,
        "choices": [{ "index": 0, "message": message, "finish_reason": finish, "logprobs": null }],
        "usage": usage,
    }))
    .into_response()
}

/// The streamed form of `answer`: a role chunk, the content or the tool call in two pieces (so a
/// client must put them together, as it must for a real model), the finish, and usage if asked.
fn chunks(id: &str, model: &str, answer: &ModelAnswer, usage: Option<Value>) -> Vec<Value> {
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({ "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [{ "index": 0, "delta": delta, "finish_reason": finish, "logprobs": null }] })
    };
    let mut out = Vec::new();
    match answer {
        ModelAnswer::ToolCall { id: call, tool, arguments } => {
            let text = arguments.to_string();
            let (first, second) = text.split_at(text.len() / 2);
            out.push(chunk(
                json!({ "role": "assistant", "content": null, "tool_calls": [
                    { "index": 0, "id": call, "type": "function", "function": { "name": tool, "arguments": first } }
                ] }),
                None,
            ));
            out.push(chunk(json!({ "tool_calls": [{ "index": 0, "function": { "arguments": second } }] }), None));
            out.push(chunk(json!({}), Some("tool_calls")));
        }
        other => {
            let text = match other {
                ModelAnswer::Text { text } => text.as_str(),
                _ => "",
            };
            let (first, second) = text.split_at(text.len() / 2);
            out.push(chunk(json!({ "role": "assistant", "content": first }), None));
            out.push(chunk(json!({ "content": second }), None));
            out.push(chunk(json!({}), Some("stop")));
        }
    }
    if let Some(usage) = usage {
        out.push(json!({ "id": id, "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [], "usage": usage }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_decision_draws_another_amount() {
        let amounts: std::collections::HashSet<u64> = (1..200).map(|n| drawn_amount(7, "charge", n)).collect();
        assert_eq!(amounts.len(), 199);
        assert!(amounts.iter().all(|a| (1000..10000).contains(a)));
        assert_eq!(drawn_amount(7, "charge", 3), drawn_amount(7, "charge", 3), "the same seed draws the same");
    }

    #[test]
    fn the_marker_is_found_in_string_and_part_contents() {
        let plain = vec![json!({ "role": "user", "content": "Charge it. [killpoint:op-1]" })];
        assert_eq!(marked_operation(&plain).as_deref(), Some("op-1"));
        let parts = vec![json!({ "role": "user", "content": [{ "type": "text", "text": "x [killpoint:op.2] y" }] })];
        assert_eq!(marked_operation(&parts).as_deref(), Some("op.2"));
        assert_eq!(marked_operation(&[json!({ "role": "user", "content": "no marker" })]), None);
    }
}
