//! The consumers (CONTRACT.md §6): each destination receives the operation's result once, made
//! safe to resend by a stable idempotency key that the consumer deduplicates on.

use reqwest::{Client, Url};
use serde::Serialize;
use serde_json::Value;

use crate::http::{describe_error, describe_failure, endpoint, send};

/// The body of `POST …/{destination}/events`.
#[derive(Debug, Serialize)]
pub struct Event<'a> {
    pub operation_id: &'a str,
    pub destination: &'a str,
    pub provider_ref: &'a str,
    pub result: &'a Value,
}

pub struct Consumers {
    http: Client,
    base: Url,
}

impl Consumers {
    pub fn new(http: Client, base: Url) -> Consumers {
        Consumers { http, base }
    }

    /// Sends one event. `Ok` means the consumer acknowledged receipt (`2xx`), not that it acted;
    /// `Err` says why the send did not count.
    pub async fn send(&self, idempotency_key: &str, event: &Event<'_>) -> Result<(), String> {
        let url = endpoint(&self.base, &[event.destination, "events"]);
        let sent = send(self.http.post(url).header("Idempotency-Key", idempotency_key).json(event)).await;
        match sent {
            Ok(response) if response.status().is_success() => Ok(()),
            Ok(response) => Err(describe_failure(response).await),
            Err(error) => Err(describe_error(&error)),
        }
    }
}
