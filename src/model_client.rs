//! The model's client (CONTRACT.md section 12): asks `POST {KILLPOINT_MODEL_URL}/chat/completions`
//! which tool a task calls, with which arguments.
//!
//! The answer is only a proposal until the worker records it: the model answers differently each
//! time it is asked, so an answer that was not recorded before anything acted on it is lost with
//! the process, and asking again gives another decision.

use reqwest::{Client, Url};
use serde_json::{Value, json};

use crate::http::{describe_error, describe_failure, endpoint, send};
use crate::model::{Decision, Task};

pub struct ModelClient {
    http: Client,
    base: Url,
}

impl ModelClient {
    pub fn new(http: Client, base: Url) -> ModelClient {
        ModelClient { http, base }
    }

    /// Asks the model to decide `task`: the prompt as the user's message, unchanged, and every
    /// tool of the task offered as a function. `Err`: no decision (the model could not be
    /// reached, failed, answered something unreadable, or chose no offered tool); ask again later.
    pub async fn decide(&self, task: &Task) -> Result<Decision, String> {
        let url = endpoint(&self.base, &["chat", "completions"]);
        let tools: Vec<Value> = task
            .tools
            .iter()
            .map(|t| {
                json!({ "type": "function", "function": {
                "name": t.name,
                "description": format!("{} ({})", t.name, t.kind.as_str()),
                "parameters": { "type": "object", "additionalProperties": true },
            } })
            })
            .collect();
        let body = json!({
            "model": "killpoint",
            "messages": [{ "role": "user", "content": task.prompt }],
            "tools": tools,
        });
        let response = send(self.http.post(url.clone()).json(&body))
            .await
            .map_err(|e| format!("{url}: {}", describe_error(&e)))?;
        if !response.status().is_success() {
            return Err(format!("{url}: {}", describe_failure(response).await));
        }
        let answer: Value = response.json().await.map_err(|e| format!("{url}: an answer that is not JSON: {e}"))?;
        read_decision(task, &answer).map_err(|why| format!("{url}: {why}"))
    }
}

/// The one tool call of a completion, as a decision on a tool the task offered.
fn read_decision(task: &Task, answer: &Value) -> Result<Decision, String> {
    let call = answer
        .pointer("/choices/0/message/tool_calls/0")
        .ok_or_else(|| format!("expected a tool call in choices[0].message.tool_calls, found {answer}"))?;
    let field = |pointer: &str| {
        call.pointer(pointer)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("expected `{pointer}` in the tool call {call}"))
    };
    let (id, name, arguments) = (field("/id")?, field("/function/name")?, field("/function/arguments")?);
    let tool = task
        .tools
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| format!("the model chose `{name}`, which the task does not offer"))?;
    let arguments: Value = serde_json::from_str(arguments)
        .map_err(|e| format!("the tool call's arguments are not JSON ({e}): {arguments}"))?;
    if !arguments.is_object() {
        return Err(format!("expected the tool call's arguments to be a JSON object, found {arguments}"));
    }
    Ok(Decision { id: id.to_owned(), tool: tool.clone(), arguments })
}
