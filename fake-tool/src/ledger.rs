//! The ledger: the fake world's append-only record of everything the runtime did to it.
//!
//! The ledger is the ground truth the checker reads. Every entry carries a sequence number from
//! one clock shared by the provider, the consumers, the policy service and the harness (which
//! stamps its own kills and restarts with [`Clock::tick`]), so one timeline orders them all.
//! Entries also carry the time they were recorded, for the invariants about how long a runtime
//! waits (delivery backoff); the trace never shows it, so snapshots stay free of times.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One logical clock for the whole scenario: the fake world and the harness both tick it. It also
/// keeps the instant the scenario's world started, so every clone measures time from the same
/// origin.
#[derive(Debug, Clone)]
pub struct Clock {
    ticks: Arc<AtomicU64>,
    started: Instant,
}

impl Default for Clock {
    fn default() -> Self {
        Clock { ticks: Arc::default(), started: Instant::now() }
    }
}

impl Clock {
    /// The next sequence number; strictly increasing, starting at 1.
    pub fn tick(&self) -> u64 {
        self.ticks.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// A clock that goes on from `ticks` and `micros`: a world restored from a snapshot
    /// (`WorldSnapshot`, in `snapshot.rs`) numbers its entries after the snapshot's, and measures
    /// time as if it had been running since the snapshot's world started.
    pub fn resumed(ticks: u64, micros: u64) -> Clock {
        let now = Instant::now();
        let started = now.checked_sub(std::time::Duration::from_micros(micros)).unwrap_or(now);
        Clock { ticks: Arc::new(AtomicU64::new(ticks)), started }
    }

    /// The last sequence number given out (0: none yet).
    pub fn now(&self) -> u64 {
        self.ticks.load(Ordering::SeqCst)
    }

    /// Microseconds since the clock was made (monotonic: never goes back).
    pub fn micros(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX)
    }
}

/// The four tool semantics of the contract; each demands a different recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// A repeated key replays the first answer; supports lookup.
    IdempotentByKey,
    /// Every request is a new effect whatever the key; supports lookup.
    NonIdempotentWithLookup,
    /// Every request is a new effect; no lookup: an unknown outcome can only be paused.
    NonIdempotentNoLookup,
    /// Repeating is harmless (a PUT); no lookup needed.
    SafelyRepeatable,
}

impl ToolKind {
    pub const ALL: [ToolKind; 4] = [
        ToolKind::IdempotentByKey,
        ToolKind::NonIdempotentWithLookup,
        ToolKind::NonIdempotentNoLookup,
        ToolKind::SafelyRepeatable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::IdempotentByKey => "idempotent_by_key",
            ToolKind::NonIdempotentWithLookup => "non_idempotent_with_lookup",
            ToolKind::NonIdempotentNoLookup => "non_idempotent_no_lookup",
            ToolKind::SafelyRepeatable => "safely_repeatable",
        }
    }

    pub fn supports_lookup(self) -> bool {
        matches!(self, ToolKind::IdempotentByKey | ToolKind::NonIdempotentWithLookup)
    }

    /// Whether a second effect for one operation is a harmful duplicate.
    pub fn duplicate_is_harmful(self) -> bool {
        !matches!(self, ToolKind::SafelyRepeatable)
    }

    /// The provider's tool of this kind (the fake provider serves one tool per kind).
    pub fn tool_name(self) -> &'static str {
        match self {
            ToolKind::IdempotentByKey => "create_ticket",
            ToolKind::NonIdempotentWithLookup => "charge_card",
            ToolKind::NonIdempotentNoLookup => "send_sms",
            ToolKind::SafelyRepeatable => "set_status",
        }
    }

    pub fn for_tool(name: &str) -> Option<ToolKind> {
        ToolKind::ALL.into_iter().find(|k| k.tool_name() == name)
    }
}

/// What the provider did with the effect of one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "effect", content = "provider_ref")]
pub enum Effect {
    /// A new side effect happened.
    Applied(String),
    /// The key was seen before: the first answer was replayed, no new effect.
    Replayed(String),
    /// A fault failed the call before any effect.
    NotApplied,
    /// A keyed tool's key was first used by the effect named here, with other arguments: the
    /// call is refused `409` (`"code": "idempotency_key_reused"`, as Stripe refuses it) and
    /// applies nothing. The earlier effect stands.
    KeyReused(String),
}

/// What became of the provider's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "response", content = "status")]
pub enum Response {
    /// The answer was sent with this status.
    Sent(u16),
    /// The answer is held so the harness can kill the runtime before it arrives.
    Held,
    /// The connection was broken before a complete answer head: the runtime read no status.
    Dropped,
    /// A complete `200` head with the `Content-Length` of the full body, then only part of the
    /// body, then the connection closed: a success the runtime cannot read.
    Cut,
    /// A complete `200` whose body is not JSON.
    Garbage,
    /// A complete `200` with a JSON body that lacks `provider_ref`.
    NoRef,
}

/// What the fake world sent, on purpose, instead of a service's truthful answer (a lookup or a
/// policy check). None of these is an answer the runtime may act on, except `Late`, which is the
/// truthful answer sent late.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "sent", content = "value")]
pub enum Injected {
    /// A complete error answer with this status, e.g. 503.
    Failed(u16),
    /// The connection was broken before a complete answer head.
    Dropped,
    /// A complete `200` whose body is not JSON.
    Garbage,
    /// The truthful answer, this many milliseconds late.
    Late(u64),
}

impl Injected {
    /// Whether the runtime received the truthful answer (late or not).
    pub fn is_truthful(self) -> bool {
        matches!(self, Injected::Late(_))
    }
}

/// What a policy check or a revocation is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    Tool(String),
    Destination(String),
    /// One operation, cancelled: no new attempt of it is allowed (its deliveries are unaffected).
    Operation(String),
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Subject::Tool(t) => write!(f, "tool {t}"),
            Subject::Destination(d) => write!(f, "destination {d}"),
            Subject::Operation(o) => write!(f, "operation {o}"),
        }
    }
}

/// What the policy service answered one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyAnswer {
    /// `200 {"allowed": true}`: the only answer that permits anything.
    Allowed,
    /// `200 {"allowed": false, …}`.
    Refused,
    /// No decision: an injected fault made the service fail, answer garbage or drop the
    /// connection. The contract says a runtime MUST NOT go ahead on it.
    NoDecision,
}

/// One thing that happened in the fake world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Event {
    /// The runtime asked the provider to execute a tool.
    ProviderCall {
        tool: String,
        /// The operation identity the harness planted in the arguments (`_killpoint.operation`);
        /// counted from there so a runtime that changes its key is still caught.
        operation: Option<String>,
        idempotency_key: Option<String>,
        /// The `arguments` of the request body as the provider received them (`None`: the body
        /// had none), for CONTRACT.md §3-1: passed to the provider unchanged.
        #[serde(default)]
        arguments: Option<serde_json::Value>,
        /// The n-th call the provider saw for this operation (1-based).
        call: u32,
        #[serde(flatten)]
        effect: Effect,
        #[serde(flatten)]
        response: Response,
        result: Option<serde_json::Value>,
    },
    /// The runtime asked the provider whether an effect happened.
    ProviderLookup {
        tool: String,
        /// The operation whose effect was found or whose key was asked about, when known.
        operation: Option<String>,
        by_key: Option<String>,
        by_ref: Option<String>,
        /// The answer the runtime received said "found". False for an injected failure, whatever
        /// the truth.
        found: bool,
        /// The status of the truthful answer (200, 404, 501), or of the injected one (`Failed`,
        /// `Garbage`); for `Dropped` the one that was begun and never completed.
        status: u16,
        /// What was sent instead of (or, for `Late`, as) the truthful answer; absent: the truth,
        /// at once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        injected: Option<Injected>,
    },
    /// A consumer received a delivery.
    ConsumerReceipt {
        destination: String,
        operation: Option<String>,
        idempotency_key: Option<String>,
        /// True the first time this key was seen: the consumer applied the event.
        applied: bool,
        status: u16,
        payload: serde_json::Value,
    },
    /// The runtime asked the policy service.
    PolicyCheck {
        tenant: String,
        actor: String,
        /// The `operation_id` the runtime named in its check, if any.
        operation: Option<String>,
        subject: Subject,
        answer: PolicyAnswer,
        /// What the service sent instead of (or, for `Late`, as) its decision; absent: the
        /// decision, at once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        injected: Option<Injected>,
    },
    /// The runtime asked the model (`POST …/chat/completions`) about a task operation.
    ModelCall {
        /// The operation the conversation's task marker names (`[killpoint:<id>]`), when it
        /// names one.
        operation: Option<String>,
        /// The n-th question about this operation (1-based), whatever was answered.
        ask: u32,
        /// A fingerprint of the conversation asked about (its messages), so that the same
        /// question asked again shows as the same value.
        conversation: String,
        /// Whether the answer was asked for as server-sent events (`"stream": true`).
        stream: bool,
        #[serde(flatten)]
        answer: ModelAnswer,
        /// A truthful answer sent this many milliseconds late (an injected fault); absent: at once.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        late_ms: Option<u64>,
    },
    /// The harness withdrew a permission.
    Revocation { tenant: String, actor: Option<String>, subject: Subject },
    /// A request from an outlived incarnation (its `Killpoint-Incarnation` is below the current
    /// one) was answered `409 {"error":"fenced"}` and applied nowhere. The entry's `incarnation`
    /// is the stale one.
    Fenced {
        service: Service,
        /// The operation the request named, when it named one.
        operation: Option<String>,
        /// The delivery's destination, for a consumer receipt or a destination check.
        destination: Option<String>,
        /// What was asked, for the trace: "call charge_card", "check destination ledger".
        what: String,
        /// The incarnation the harness had declared current.
        current: u32,
    },
}

/// What the model answered one question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "answer")]
pub enum ModelAnswer {
    /// A decision: call `tool` with `arguments` (which carry `_killpoint.decision`, the `id`).
    ToolCall { id: String, tool: String, arguments: serde_json::Value },
    /// The final text, once the tool's result is in the conversation.
    Text { text: String },
    /// An injected fault instead of the answer (a late answer is recorded as itself, with
    /// `late_ms`).
    Injected { injected: Injected },
    /// The question could not be answered: `400` with this error (no task marker, no task armed
    /// for the operation, the task's tool not offered).
    Refused { error: String },
}

/// Which part of the fake world a request went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Service {
    Provider,
    Consumer,
    Policy,
}

impl std::fmt::Display for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Service::Provider => "provider",
            Service::Consumer => "consumer",
            Service::Policy => "policy",
        })
    }
}

impl Event {
    /// The operation this event concerns, when it names one.
    pub fn operation(&self) -> Option<&str> {
        match self {
            Event::ProviderCall { operation, .. }
            | Event::ProviderLookup { operation, .. }
            | Event::ConsumerReceipt { operation, .. }
            | Event::PolicyCheck { operation, .. }
            | Event::ModelCall { operation, .. }
            | Event::Fenced { operation, .. } => operation.as_deref(),
            Event::Revocation { .. } => None,
        }
    }
}

impl Event {
    /// A lookup whose answer the runtime received and which said "no such effect": a truthful
    /// `404`, the only lookup answer that permits a new attempt (CONTRACT.md section 4, step 9).
    pub fn is_lookup_not_found(&self) -> bool {
        matches!(
            self,
            Event::ProviderLookup { found: false, status: 404, injected, .. }
                if injected.is_none_or(Injected::is_truthful)
        )
    }
}

/// An event and its place on the scenario's clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub seq: u64,
    /// When it was recorded: microseconds since the scenario's world started ([`Clock::micros`]).
    pub at_micros: u64,
    /// The `Killpoint-Incarnation` the request carried (the fencing token); absent for a request
    /// without one, and for what the harness itself did (revocations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incarnation: Option<u32>,
    #[serde(flatten)]
    pub event: Event,
}

/// The shared, append-only list of entries.
#[derive(Debug)]
pub struct Ledger {
    clock: Clock,
    entries: Mutex<Vec<Entry>>,
    /// Woken on every entry: a harness waiting for the runtime to get somewhere waits on this
    /// rather than on a timer.
    changed: tokio::sync::Notify,
}

impl Ledger {
    pub fn new(clock: Clock) -> Self {
        Ledger::with_entries(clock, Vec::new())
    }

    /// A ledger that goes on from `entries` (a restored world's).
    pub fn with_entries(clock: Clock, entries: Vec<Entry>) -> Self {
        Ledger { clock, entries: Mutex::new(entries), changed: tokio::sync::Notify::new() }
    }

    /// The entries, with the lock held (for a consistent snapshot).
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().expect("ledger lock poisoned")
    }

    /// The clock the entries are stamped by.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Appends `event`, stamping it with the next tick, and returns the stamp.
    pub fn record(&self, event: Event) -> u64 {
        self.record_from(event, None)
    }

    /// Appends `event`, caused by a request that carried `incarnation`; returns its stamp.
    pub fn record_from(&self, event: Event, incarnation: Option<u32>) -> u64 {
        let mut entries = self.entries.lock().expect("ledger lock poisoned");
        // Tick under the lock so entries are in sequence order in the vector.
        let seq = self.clock.tick();
        entries.push(Entry { seq, at_micros: self.clock.micros(), incarnation, event });
        drop(entries);
        self.changed.notify_waiters();
        seq
    }

    /// Resolves at the next entry recorded after it is first polled.
    pub async fn changed(&self) {
        self.changed.notified().await
    }

    /// The next entry's notification, to be enabled before a count is read.
    pub(crate) fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// A copy of every entry so far, in sequence order.
    pub fn entries(&self) -> Vec<Entry> {
        self.entries.lock().expect("ledger lock poisoned").clone()
    }

    /// How many entries so far satisfy `matches`, without copying the ledger.
    pub fn count(&self, matches: impl Fn(&Entry) -> bool) -> usize {
        self.entries.lock().expect("ledger lock poisoned").iter().filter(|e| matches(e)).count()
    }
}
