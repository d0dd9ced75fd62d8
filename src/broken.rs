//! Deliberately broken variants of the runtime, so that killpoint can show that it catches each
//! classic recovery bug. Selected only by `--broken <name>` on the command line; the reference
//! runtime never runs with any of them.
//!
//! Each variant is one small deviation at one spot in `worker.rs`, `provider.rs`, `policy.rs`,
//! `api.rs` or `metrics.rs`, marked `BROKEN:` there.

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
    /// An `Allowed` answer is kept in memory per (operation, tool or destination) and reused for
    /// every later attempt and send in the same incarnation. A kill empties it, which is why a
    /// revocation (always followed by a kill in today's scenarios) does not show it.
    PolicyCache,
    /// A failed delivery is sent again at once, without the contract's backoff.
    NoBackoff,
    /// A delivery is dead-lettered after `DELIVERY_MAX_ATTEMPTS − 1` failed sends: one too few.
    DeadLetterEarly,
    /// An attempt refused by policy is counted as made (`attempts` goes up), though the provider
    /// never saw it.
    CountRefusedAttempt,
    /// At the attempt bound, a `safely_repeatable` operation whose outcome is still unknown is
    /// `FAILED` instead of paused — a claim that nothing happened, which nobody can know.
    FailAtBound,
    /// The API answers `202` while the intent is only queued in memory, and writes the queue every
    /// 100 ms (group commit): a crash right after the answer loses the operation.
    AckBeforeDurable,
    /// A repeated submission replaces the stored operation and starts it again (`INSERT OR
    /// REPLACE`), answering `202`, whatever the body.
    SubmitUpsert,
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
    /// On start, only the operation dispatched last (one "in flight" slot) is taken as in flight;
    /// any other `DISPATCHED` operation is taken for never dispatched and attempted as new. Alone
    /// in flight, an operation is always the last dispatched: only concurrent operations show it.
    OneDispatchSlot,
    /// On start, an `UNKNOWN` operation whose last lookup could not answer is taken for one whose
    /// attempt never reached the provider, and is attempted as new. Only a kill while a recovery
    /// waits to look up again shows it.
    RestartAfterFailedLookup,
    /// The store's fence is raised at start but never checked: an incarnation that was frozen and
    /// outlived commits its stale view when it wakes.
    NoStoreFence,
    /// Requests carry no `Killpoint-Incarnation` header: the world cannot fence an outlived
    /// incarnation.
    NoFenceHeader,
    /// An incarnation that finds itself fenced stops the work at hand but does not exit: the
    /// thread that noticed waits for ever, the process stays up (CONTRACT.md §9-3 says exit).
    FencedHangs,
    /// An answer `409 {"error":"fenced"}` is taken for a conflict that passes, as a generic HTTP
    /// retry layer takes any 409: the request is sent once more before the incarnation exits
    /// (CONTRACT.md §9-3 says exit without another request). Its store fence works, so only a
    /// freeze just before a request, where the world is first to refuse, shows it.
    IgnoresFence,
    /// The success and its outbox are written before the provider is called (a provisional
    /// result), the real result over it after: a crash between leaves a success nobody performed.
    ResultBeforeCall,
    /// A destination the policy refuses is delivered to anyway: the refusal is read as concerning
    /// new executions only, not the delivery of a result already obtained.
    DeliverRefused,
    /// `GET /metrics` counts dead letters in memory, from this incarnation's start: those of
    /// earlier incarnations are forgotten at every restart, so the signal under-reports.
    MiscountsDeadLetters,
    /// Fields of the arguments whose name starts with `_` are taken for the runtime's own metadata
    /// and stripped before the provider is called: the harness's planted `_killpoint` identity
    /// never reaches the provider (CONTRACT.md §3-1 says unchanged).
    StripPrivateArguments,
    /// Every string argument is cut to 16 characters on its way to the provider, as a fixed-width
    /// column would store it: the provider executes arguments nobody submitted.
    TruncateArguments,
    /// A delivery retry is logged as an execution retry (`"retry":"execution"`): the log says the
    /// tool ran again when only a result was resent (CONTRACT.md §11, the retry line).
    MislabelsDeliveryRetries,
    /// A missing `KILLPOINT_DATA_DIR` is created anew at start, as a first start would find it:
    /// the incarnation starts afresh and forgets every operation it accepted (CONTRACT.md §2-4
    /// says exit with an error naming the path).
    RecreateDataDir,
    /// The store runs with `synchronous=OFF` once open: SQLite never fsyncs its log again, so a
    /// commit is in the OS's page cache only. A process kill keeps it; a power loss does not.
    NoSync,
    /// On restart, every unfinished task forgets the decision it recorded and starts its agent
    /// loop again from the top: the model is asked again, answers otherwise, and the new answer is
    /// acted on, though a call on the first may have reached the provider (CONTRACT.md §12-3).
    ReaskOnRecovery,
    /// At every start, a "cache" directory is made beside the data dir (`<data dir>-cache/`),
    /// outside it, and a file written there: state the harness never hid nor restored, left behind
    /// as a workflow server left its directories in TMPDIR (CONTRACT.md §2-2). Beside the data
    /// dir, not in TMPDIR, so that the run's directory takes it away with it.
    CacheOutsideDataDir,
    /// At every start, a socket is connected to 192.0.2.1:80 (TEST-NET-1, RFC 5737), outside the
    /// world, as a runtime checking for updates would (CONTRACT.md §2-5). UDP: the connect only
    /// picks a route, nothing leaves the machine, and the tracer sees the attempt all the same.
    PhoneHome,
    /// The provider key is drawn at random when the intent is recorded, and persisted with it:
    /// stable across every crash, and a second key after a restore whose backup predates the
    /// intent (CONTRACT.md §13-1 says derive it from the operation).
    RandomKey,
    /// Each delivery's key is drawn at random when the outbox is written, and persisted with it:
    /// an outbox written again after a restore sends the same result under a new key (§13-1).
    RekeyedOutbox,
    /// On a restored backup, a policy approval the backup holds is taken as still in force for
    /// the operation's next attempt (§13-5 says ask again: the world revoked since).
    RestoredGrant,
}

impl Broken {
    pub const ALL: [Broken; 38] = [
        Self::BlindRetry,
        Self::FreshKey,
        Self::NoWriteAhead,
        Self::SplitOutbox,
        Self::RerunOnDelivery,
        Self::FreshDeliveryKey,
        Self::NoPolicyRecheck,
        Self::PolicyCache,
        Self::NoBackoff,
        Self::DeadLetterEarly,
        Self::CountRefusedAttempt,
        Self::FailAtBound,
        Self::AckBeforeDurable,
        Self::SubmitUpsert,
        Self::RetryOn4xx,
        Self::Trust2xx,
        Self::LookupErrorAsMiss,
        Self::PolicyFailOpen,
        Self::OneDispatchSlot,
        Self::RestartAfterFailedLookup,
        Self::NoStoreFence,
        Self::NoFenceHeader,
        Self::FencedHangs,
        Self::IgnoresFence,
        Self::ResultBeforeCall,
        Self::DeliverRefused,
        Self::MiscountsDeadLetters,
        Self::StripPrivateArguments,
        Self::TruncateArguments,
        Self::MislabelsDeliveryRetries,
        Self::RecreateDataDir,
        Self::NoSync,
        Self::ReaskOnRecovery,
        Self::CacheOutsideDataDir,
        Self::PhoneHome,
        Self::RandomKey,
        Self::RekeyedOutbox,
        Self::RestoredGrant,
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
            Self::PolicyCache => "policy-cache",
            Self::NoBackoff => "no-backoff",
            Self::DeadLetterEarly => "dead-letter-early",
            Self::CountRefusedAttempt => "count-refused-attempt",
            Self::FailAtBound => "fail-at-bound",
            Self::AckBeforeDurable => "ack-before-durable",
            Self::SubmitUpsert => "submit-upsert",
            Self::RetryOn4xx => "retry-on-4xx",
            Self::Trust2xx => "trust-2xx",
            Self::LookupErrorAsMiss => "lookup-error-as-miss",
            Self::PolicyFailOpen => "policy-fail-open",
            Self::OneDispatchSlot => "one-dispatch-slot",
            Self::RestartAfterFailedLookup => "restart-after-failed-lookup",
            Self::NoStoreFence => "no-store-fence",
            Self::NoFenceHeader => "no-fence-header",
            Self::FencedHangs => "fenced-hangs",
            Self::IgnoresFence => "ignores-fence",
            Self::ResultBeforeCall => "result-before-call",
            Self::DeliverRefused => "deliver-refused",
            Self::MiscountsDeadLetters => "miscounts-dead-letters",
            Self::StripPrivateArguments => "strip-private-arguments",
            Self::TruncateArguments => "truncate-arguments",
            Self::MislabelsDeliveryRetries => "mislabels-delivery-retries",
            Self::RecreateDataDir => "recreate-data-dir",
            Self::NoSync => "no-sync",
            Self::ReaskOnRecovery => "reask-on-recovery",
            Self::CacheOutsideDataDir => "cache-outside-data-dir",
            Self::PhoneHome => "phone-home",
            Self::RandomKey => "random-key",
            Self::RekeyedOutbox => "rekeyed-outbox",
            Self::RestoredGrant => "restored-grant",
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
            Self::PolicyCache => "keeps policy approvals in memory and reuses them until a restart",
            Self::NoBackoff => "retries a failed delivery at once, without backoff",
            Self::DeadLetterEarly => "dead-letters a delivery one send too early",
            Self::CountRefusedAttempt => "counts an attempt refused by policy as made",
            Self::FailAtBound => "fails a safely repeatable operation at the attempt bound instead of pausing it",
            Self::AckBeforeDurable => "answers 202 before the intent is written (group commit every 100 ms)",
            Self::SubmitUpsert => "a repeated submission replaces the operation and starts it again",
            Self::RetryOn4xx => "takes a provider 4xx for an unknown outcome and attempts again",
            Self::Trust2xx => "takes any 2xx for a success, filling an unreadable body with defaults",
            Self::LookupErrorAsMiss => "takes a lookup that did not answer for \"not found\"",
            Self::PolicyFailOpen => "takes an unreachable or unreadable policy service for permission",
            Self::OneDispatchSlot => "remembers only the last dispatched operation as in flight across a restart",
            Self::RestartAfterFailedLookup => {
                "on start, attempts again an operation whose last lookup failed, without a lookup"
            }
            Self::NoStoreFence => "never checks the store's fence: an outlived incarnation's writes land",
            Self::NoFenceHeader => "sends no Killpoint-Incarnation header, so the world cannot fence it",
            Self::FencedHangs => "stops working when fenced, but never exits",
            Self::IgnoresFence => "sends a request again after the world answered it 409 fenced",
            Self::ResultBeforeCall => "writes the success before calling the provider",
            Self::DeliverRefused => "delivers to a destination the policy refused",
            Self::MiscountsDeadLetters => {
                "counts dead letters in memory for /metrics, forgetting them at every restart"
            }
            Self::StripPrivateArguments => "strips arguments whose name starts with `_` (the planted `_killpoint`)",
            Self::TruncateArguments => "cuts every string argument to 16 characters before calling the provider",
            Self::MislabelsDeliveryRetries => "logs a delivery retry as an execution retry",
            Self::RecreateDataDir => "recreates a missing data dir and starts afresh, forgetting what it accepted",
            Self::NoSync => "runs its store with synchronous=OFF: commits are never fsynced",
            Self::ReaskOnRecovery => {
                "on restart, asks the model again for every unfinished task and acts on the new answer"
            }
            Self::CacheOutsideDataDir => "writes a start-up cache beside its data dir, outside it",
            Self::PhoneHome => "connects a UDP socket to 192.0.2.1:80, outside the world, at every start",
            Self::RandomKey => "draws its provider idempotency key at random and persists it with the intent",
            Self::RekeyedOutbox => "draws each delivery key at random when it writes the outbox",
            Self::RestoredGrant => "after a restore, takes the policy approval its backup holds as still in force",
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
