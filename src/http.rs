//! Outbound HTTP, shared by the provider, consumer and policy clients: one client with timeouts,
//! URLs built under the base URLs the harness gives, and readable descriptions of failed answers.
//!
//! Every request carries the incarnation's fencing token (`Killpoint-Incarnation`), and every
//! answer passes through [`send`], which stops the process on `409 {"error":"fenced"}`: a newer
//! incarnation owns the data dir, and this one must not send or commit anything more
//! (CONTRACT.md §9, "Overlapping incarnations").

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Client, RequestBuilder, Response, StatusCode, Url};

/// Long enough for a loopback peer that is merely slow, short enough that a peer that stopped
/// answering turns into an `UNKNOWN` outcome (and a lookup) instead of a stuck worker.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The client every outbound request goes through; `incarnation` is sent as the fencing token
/// on each (`None` only for the deliberately broken `no-fence-header` variant).
pub fn client(incarnation: Option<u32>) -> Client {
    let mut headers = HeaderMap::new();
    if let Some(incarnation) = incarnation {
        headers.insert("Killpoint-Incarnation", HeaderValue::from(incarnation));
    }
    Client::builder()
        .default_headers(headers)
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(REQUEST_TIMEOUT)
        // All traffic stays on loopback (CONTRACT.md §2). Without this, an `http_proxy` variable in
        // the environment would route requests through another address.
        .no_proxy()
        .build()
        .expect("a client with plain HTTP and timeouts always builds")
}

/// Sends `request`. An answer `409 {"error":"fenced"}` ends the process here: the harness started a
/// newer incarnation on this data dir while this one was frozen, and nothing this one does from
/// now on may reach the world or the store. Any other answer is returned as it came.
pub async fn send(request: RequestBuilder) -> reqwest::Result<Response> {
    let resend = crate::fence::RESEND.load(std::sync::atomic::Ordering::Relaxed);
    let spare = if resend { request.try_clone() } else { None };
    let response = request.send().await?;
    if response.status() != StatusCode::CONFLICT {
        return Ok(response);
    }
    let url = response.url().clone();
    let body = response.bytes().await?;
    let fenced = serde_json::from_slice::<serde_json::Value>(&body)
        .is_ok_and(|json| json.get("error").and_then(|e| e.as_str()) == Some("fenced"));
    if fenced {
        if let Some(spare) = spare {
            // BROKEN: the 409 is taken for a passing conflict, and the request sent once more.
            eprintln!("killpoint-runtime: {url} answered 409; sending it once more");
            let _ = spare.send().await;
        }
        crate::fence::exit(&format!("{url} answered 409 fenced"));
    }
    // A 409 that is not the fence: rebuilt for the caller, which judges it like any other answer.
    let rebuilt = axum::http::Response::builder()
        .status(StatusCode::CONFLICT)
        .body(body)
        .expect("a status and a body always make a response");
    Ok(Response::from(rebuilt))
}

/// `base` with `segments` appended as path segments, each percent-encoded as needed: a tool name or
/// a key with a `/` or `#` in it stays one segment.
pub fn endpoint(base: &Url, segments: &[&str]) -> Url {
    let mut url = base.clone();
    url.path_segments_mut().expect("base URLs are checked to be http URLs at start").pop_if_empty().extend(segments);
    url
}

/// "HTTP 503: <the error the peer gave>", for logs, audit entries and failure reasons.
pub async fn describe_failure(response: Response) -> String {
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    // The contract's error shape is {"error": "..."}; show just the message when that is what came.
    let message = serde_json::from_str::<serde_json::Value>(&body)
        .ok()
        .and_then(|json| json.get("error").and_then(|error| error.as_str()).map(str::to_owned))
        .unwrap_or(body);
    let message: String = message.trim().chars().take(300).collect();
    if message.is_empty() {
        format!("HTTP {}", status.as_u16())
    } else {
        format!("HTTP {}: {message}", status.as_u16())
    }
}

/// A transport error (refused, dropped, timed out) in one line.
pub fn describe_error(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        "timed out".to_owned()
    } else if error.is_connect() {
        "could not connect".to_owned()
    } else {
        // reqwest's Display is terse; the source says what actually happened.
        match std::error::Error::source(error) {
            Some(source) => format!("{error}: {source}"),
            None => error.to_string(),
        }
    }
}
