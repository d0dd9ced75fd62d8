//! Deliberately broken variants of the runtime, so that killpoint can show that it catches each
//! classic recovery bug. Selected only by `--broken <name>` on the command line; the reference
//! runtime never runs with any of them.
//!
//! Each variant is one small deviation at one spot in `worker.rs`, `provider.rs` or `policy.rs`,
//! marked `BROKEN:` there.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broken {
    /// An `UNKNOWN` outcome is dispatched again at once, without a lookup, whatever the tool kind.
    BlindRetry,
    /// Every attempt sends a new provider key, `{operation_id}#{attempt}`.
    FreshKey,
    /// The provider is called before `DISPATCHED` is written: a crash mid-call leaves
    /// `INTENT_RECORDED`, and the next incarnation dispatches again as if nothing had been sent.
    NoWriteAhead,
    /// The success and its deliveries are written in two transactions, with `after_result_write`
    /// announced between them: a crash there leaves a success that is never delivered.
    SplitOutbox,
    /// A delivery retry calls the tool again "to refresh the result", and sends that result.
    RerunOnDelivery,
    /// Every delivery send carries a new key, `{operation_id}#{send}`.
    FreshDeliveryKey,
    /// The first time the policy allows the tool for an operation, that decision is kept and reused
    /// for every later attempt, reconciliation and restart.
    NoPolicyRecheck,
    /// A provider's `4xx` is taken for an unknown outcome: looked up, then attempted again.
    RetryOn4xx,
    /// Any `2xx` is a success; what cannot be read from its body is filled in with defaults (an
    /// empty `provider_ref`, a `null` result).
    Trust2xx,
    /// A lookup that did not answer `200` or `404` (an error, a dropped connection, an unreadable
    /// body) is taken as "not found", so a new attempt follows.
    LookupErrorAsMiss,
    /// A policy service that cannot be reached or answers something unreadable is taken as
    /// allowing everything.
    PolicyFailOpen,
}

impl Broken {
    pub const ALL: [Broken; 11] = [
        Self::BlindRetry,
        Self::FreshKey,
        Self::NoWriteAhead,
        Self::SplitOutbox,
        Self::RerunOnDelivery,
        Self::FreshDeliveryKey,
        Self::NoPolicyRecheck,
        Self::RetryOn4xx,
        Self::Trust2xx,
        Self::LookupErrorAsMiss,
        Self::PolicyFailOpen,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::BlindRetry => "blind-retry",
            Self::FreshKey => "fresh-key",
            Self::NoWriteAhead => "no-write-ahead",
            Self::SplitOutbox => "split-outbox",
            Self::RerunOnDelivery => "rerun-on-delivery",
            Self::FreshDeliveryKey => "fresh-delivery-key",
            Self::NoPolicyRecheck => "no-policy-recheck",
            Self::RetryOn4xx => "retry-on-4xx",
            Self::Trust2xx => "trust-2xx",
            Self::LookupErrorAsMiss => "lookup-error-as-miss",
            Self::PolicyFailOpen => "policy-fail-open",
        }
    }

    /// One line for `--help` and for the warning printed at start.
    pub fn description(self) -> &'static str {
        match self {
            Self::BlindRetry => "re-dispatches an UNKNOWN outcome at once, without a lookup",
            Self::FreshKey => "sends a new provider idempotency key on every attempt",
            Self::NoWriteAhead => "calls the provider before DISPATCHED is durable",
            Self::SplitOutbox => "writes the success and its deliveries in two transactions",
            Self::RerunOnDelivery => "calls the tool again before retrying a delivery",
            Self::FreshDeliveryKey => "sends a new delivery idempotency key on every send",
            Self::NoPolicyRecheck => "reuses the first policy approval instead of asking again",
            Self::RetryOn4xx => "takes a provider 4xx for an unknown outcome and attempts again",
            Self::Trust2xx => "takes any 2xx for a success, filling an unreadable body with defaults",
            Self::LookupErrorAsMiss => "takes a lookup that did not answer for \"not found\"",
            Self::PolicyFailOpen => "takes an unreachable or unreadable policy service for permission",
        }
    }

    pub fn from_name(name: &str) -> Option<Broken> {
        Self::ALL.into_iter().find(|broken| broken.name() == name)
    }
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
