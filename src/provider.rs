//! The tool provider (CONTRACT.md §5): execute a tool call, and look up whether an earlier call
//! had an effect.
//!
//! The answers are sorted by what the runtime may conclude from them, not by status code: a
//! `5xx`, a dropped connection and a timeout all mean the same thing — "we do not know".

use reqwest::{Client, StatusCode, Url};
use serde_json::{Value, json};

use crate::broken::Broken;
use crate::http::{describe_error, describe_failure, endpoint, send};
use crate::model::{Effect, Tool};

/// What one attempt established.
#[derive(Debug)]
pub enum Invocation {
    /// `2xx`: the effect happened, and this is what the provider said about it.
    Succeeded(Effect),
    /// `4xx`: the provider refused the request; it had no effect.
    Rejected(String),
    /// No usable answer: the effect may or may not have happened.
    Unknown(String),
}

/// What a lookup established.
#[derive(Debug)]
pub enum Lookup {
    Found(Effect),
    NotFound,
    /// The provider could not say; ask again later.
    Unknown(String),
}

/// How to find an earlier effect.
#[derive(Debug, Clone, Copy)]
pub enum LookupBy<'a> {
    ProviderRef(&'a str),
    IdempotencyKey(&'a str),
}

pub struct Provider {
    http: Client,
    base: Url,
    broken: Option<Broken>,
}

impl Provider {
    pub fn new(http: Client, base: Url) -> Provider {
        Provider { http, base, broken: None }
    }

    /// The provider client of a `--broken` runtime.
    pub fn with_broken(self, broken: Option<Broken>) -> Provider {
        Provider { broken, ..self }
    }

    /// `POST …/tools/{name}` with the operation's arguments, unchanged.
    pub async fn invoke(&self, tool: &Tool, idempotency_key: &str, arguments: &Value) -> Invocation {
        let url = endpoint(&self.base, &["tools", &tool.name]);
        let arguments = self.as_sent(arguments);
        let sent = send(
            self.http.post(url).header("Idempotency-Key", idempotency_key).json(&json!({ "arguments": arguments })),
        )
        .await;
        let response = match sent {
            Ok(response) => response,
            Err(error) => return Invocation::Unknown(describe_error(&error)),
        };
        let status = response.status();
        if status.is_success() && self.broken == Some(Broken::Trust2xx) {
            // BROKEN: "2xx means it worked"; what the body does not say is made up.
            let body: Value = response.json().await.unwrap_or(Value::Null);
            let provider_ref = body.get("provider_ref").and_then(Value::as_str).unwrap_or_default().to_owned();
            let result = body.get("result").cloned().unwrap_or(Value::Null);
            return Invocation::Succeeded(Effect { provider_ref, result });
        }
        if status.is_success() {
            match response.json::<Effect>().await {
                Ok(effect) => Invocation::Succeeded(effect),
                // The provider says it acted but we cannot read what it did: as good as no
                // answer. A lookup will tell.
                Err(error) => Invocation::Unknown(format!(
                    "HTTP {} with an unreadable body: {}",
                    status.as_u16(),
                    describe_error(&error)
                )),
            }
        } else if status.is_client_error() {
            Invocation::Rejected(describe_failure(response).await)
        } else {
            Invocation::Unknown(describe_failure(response).await)
        }
    }

    /// The arguments as they go to the provider: the submitted ones, but for two broken variants.
    fn as_sent(&self, arguments: &Value) -> Value {
        let mut sent = arguments.clone();
        match (self.broken, sent.as_object_mut()) {
            (Some(Broken::StripPrivateArguments), Some(fields)) => {
                // BROKEN: "underscore fields are ours", so the planted identity is dropped.
                fields.retain(|name, _| !name.starts_with('_'));
            }
            (Some(Broken::TruncateArguments), Some(fields)) => {
                // BROKEN: a fixed-width column: every string argument cut to 16 characters.
                for value in fields.values_mut() {
                    if let Value::String(text) = value {
                        *value = Value::String(text.chars().take(16).collect());
                    }
                }
            }
            _ => {}
        }
        sent
    }

    /// `GET …/tools/{name}/effects/{provider_ref}` or `…/effects?idempotency_key=…`.
    pub async fn look_up(&self, tool: &Tool, by: LookupBy<'_>) -> Lookup {
        let url = match by {
            LookupBy::ProviderRef(provider_ref) => {
                endpoint(&self.base, &["tools", &tool.name, "effects", provider_ref])
            }
            LookupBy::IdempotencyKey(key) => {
                let mut url = endpoint(&self.base, &["tools", &tool.name, "effects"]);
                url.query_pairs_mut().append_pair("idempotency_key", key);
                url
            }
        };
        let response = match send(self.http.get(url)).await {
            Ok(response) => response,
            Err(error) => return Lookup::Unknown(describe_error(&error)),
        };
        match response.status() {
            StatusCode::OK => match response.json::<Effect>().await {
                Ok(effect) => Lookup::Found(effect),
                Err(error) => Lookup::Unknown(format!("HTTP 200 with an unreadable body: {}", describe_error(&error))),
            },
            StatusCode::NOT_FOUND => Lookup::NotFound,
            _ => Lookup::Unknown(describe_failure(response).await),
        }
    }
}
