//! Fencing (CONTRACT.md, "Overlapping incarnations"): the harness is the lease service, and the
//! incarnation number is the fencing token.
//!
//! Every request to the fake world should carry `Killpoint-Incarnation: <n>`. When the harness
//! starts incarnation N it tells the world that N is current (`World::fence`); from then
//! on a request carrying a lower number comes from an incarnation that was outlived (frozen, then
//! resumed). It is answered `409 {"error":"fenced"}`, recorded as [`crate::ledger::Event::Fenced`], and
//! applied nowhere: no effect, no receipt, no policy decision, no fault consumed. A request
//! without the header is served, and its ledger entry shows no incarnation.

use crate::ledger::{Event, Ledger, Service};
use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::sync::atomic::{AtomicU32, Ordering};

/// The request header that carries the fencing token.
pub const HEADER: &str = "killpoint-incarnation";

/// The current incarnation, as the harness last declared it (0: none declared yet).
#[derive(Debug, Default)]
pub(crate) struct Fence {
    current: AtomicU32,
}

/// A request from an incarnation older than the current one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stale {
    pub(crate) incarnation: u32,
    pub(crate) current: u32,
}

impl Fence {
    /// Declares `incarnation` current. Never goes back: a lower number cannot unfence a zombie.
    pub(crate) fn raise(&self, incarnation: u32) {
        self.current.fetch_max(incarnation, Ordering::SeqCst);
    }

    /// The incarnation declared current (0: none yet).
    pub(crate) fn current(&self) -> u32 {
        self.current.load(Ordering::SeqCst)
    }

    /// The request's incarnation (`None`: no readable header), or why it is refused.
    pub(crate) fn admit(&self, headers: &HeaderMap) -> Result<Option<u32>, Stale> {
        let incarnation = headers.get(HEADER).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u32>().ok());
        let current = self.current.load(Ordering::SeqCst);
        match incarnation {
            Some(n) if n < current => Err(Stale { incarnation: n, current }),
            other => Ok(other),
        }
    }
}

impl Stale {
    /// Records the refusal and answers it. `what` says what was asked ("call charge_card");
    /// `destination` names the delivery a consumer receipt or a destination check was for.
    pub(crate) fn refuse(
        self,
        ledger: &Ledger,
        service: Service,
        operation: Option<String>,
        destination: Option<String>,
        what: String,
    ) -> Response {
        let event = Event::Fenced { service, operation, destination, what, current: self.current };
        ledger.record_from(event, Some(self.incarnation));
        (StatusCode::CONFLICT, Json(json!({ "error": "fenced" }))).into_response()
    }
}
