//! The invariants: what the checker proves about a run. This is the one list.
//!
//! Each is checked and reported on its own, and each has a deliberately broken variant of the
//! reference runtime that violates it, in the project's own tests (`catches` in the scenarios).

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Invariant {
    /// At most one side effect per operation for every kind but `safely_repeatable`, counted by
    /// the provider from the planted operation identity. Seed: "one logical operation produces
    /// at most one non-idempotent change".
    AtMostOnce,
    /// One idempotency key per operation at the provider. Seed: "every side-effecting operation
    /// has a stable idempotency key".
    StableProviderKey,
    /// One idempotency key per operation and destination at each consumer. Seed: "the consumer
    /// can deduplicate the same event".
    StableDeliveryKey,
    /// After an attempt whose answer the runtime did not get, a lookup precedes any new attempt;
    /// a kind without lookup is never attempted again. Seed: "UNKNOWN … is not permission to
    /// retry blindly".
    NoBlindRetry,
    /// Nothing reaches the provider for an operation whose success was confirmed (a lookup found
    /// it, the runtime announced the result written, or a delivery went out). Seed: "retry
    /// delivery, not execution".
    NoExecutionForDelivery,
    /// Every success is applied exactly once by every permitted destination, with the provider's
    /// real result. Seed: "transactional outbox creates delivery"; "replay with consumer
    /// deduplication".
    DeliveredOnce,
    /// No attempt or delivery that a revocation in force forbids; a refused operation is
    /// `FAILED` with a `policy:` reason and keeps its audit trail. Seed: "refuse new execution;
    /// preserve the audit trail".
    PolicyRespected,
    /// Every provider call of an operation follows an `Allowed` check of its tool for that
    /// operation, made since its previous call; every consumer receipt follows an `Allowed` check
    /// of that destination for that operation, made since the previous receipt there. An answer
    /// is never reused: a permission can be withdrawn between two attempts or two sends without a
    /// crash to empty a cache. Lookups need no check. Seed: "policy re-check on every new
    /// execution attempt"; CONTRACT.md section 8.
    PolicyChecked,
    /// A delivery retried after a non-2xx answer waits at least `RETRY_BASE_MS × 2^(n−1)` after
    /// its n-th send (judged only where no restart came between the two sends). CONTRACT.md
    /// section 6: a consumer in trouble is not hammered.
    DeliveryBackoff,
    /// A delivery dead-lettered for failed sends (not by policy) was received by its consumer
    /// exactly `DELIVERY_MAX_ATTEMPTS` times, and no delivery is received more often. CONTRACT.md
    /// section 6: "after DELIVERY_MAX_ATTEMPTS sends it is DEAD_LETTERED".
    DeadLetterBound,
    /// Every incarnation becomes ready: it prints a ready line of this contract by the ready
    /// deadline, and connects the probe that line declares. CONTRACT.md §2-6: a runtime that never
    /// got ready is reported for that, not for operations that could not settle.
    Ready,
    /// After the last restart every operation settles within the deadline.
    Settled,
    /// What the runtime reports agrees with the ledgers: a success names one of the provider's
    /// effects and its result; an operation's `attempts` equals the provider calls the ledger
    /// shows for it, a delivery's `attempts` the receipts at its destination; `FAILED` (not by
    /// policy) only when the runtime could know nothing happened (the last call was answered
    /// 4xx, or a lookup after it found nothing) and never while a call's outcome is unknown to a
    /// kind without lookup; `ACKED` only if the consumer accepted a send.
    TruthfulStatus,
    /// Each operation ends as its scenario expects (`expect = …`).
    ExpectedOutcome,
    /// Every fault of the scenario was reached: a boundary not exercised is not passed.
    FaultsReached,
    /// An operation the runtime accepted (`202` or `200`) is never unknown to it afterwards (a
    /// `404` on any later read, in any incarnation). Contract §3: "the intent MUST be durable
    /// before this answer is sent".
    IntentDurable,
    /// Submission is idempotent by operation id: the same body again (destinations in any order,
    /// unknown fields ignored) is `200` with the operation's id and state, another body `409`, a
    /// malformed one `400` and creates nothing. Contract §3, `POST /operations`.
    IdempotentSubmission,
    /// Overlapping incarnations are fenced: every request to the fake world carries
    /// `Killpoint-Incarnation`; an incarnation resumed after being outlived sends nothing more
    /// for the flow it was frozen in (a commit had to come first, and its store is fenced); one
    /// answered `409 fenced` sends nothing more in that flow; and a resumed incarnation exits
    /// within the scenario's deadline. CONTRACT.md §9: the incarnation number is the fencing
    /// token.
    Fenced,
    /// Every call the provider saw carries its operation's arguments as submitted (JSON-equal),
    /// the planted `_killpoint` identity included. CONTRACT.md §3-1: the provider counts effects
    /// by that identity, and executes what it is given.
    ArgumentsUnchanged,
    /// Every effect of a task operation acted on one and the same answer of the model: once a
    /// call made on a decision may have reached the provider, no call acts on another. CONTRACT.md
    /// §12-3; the seed: "the model may decide what to do, but the control plane must decide what
    /// is safe to repeat".
    OneDecision,
    /// The runtime writes only in its data dir and contacts only the fake world and its declared
    /// services: every file it creates or opens to write, and every address it connects to, seen
    /// by the tracer (judged only in traced runs: `--points syscalls`, `--crash machine`).
    /// CONTRACT.md §2-2 and §2-5.
    Sandboxed,
}

impl Invariant {
    pub const ALL: [Invariant; 21] = [
        Invariant::AtMostOnce,
        Invariant::StableProviderKey,
        Invariant::StableDeliveryKey,
        Invariant::NoBlindRetry,
        Invariant::NoExecutionForDelivery,
        Invariant::DeliveredOnce,
        Invariant::PolicyRespected,
        Invariant::PolicyChecked,
        Invariant::DeliveryBackoff,
        Invariant::DeadLetterBound,
        Invariant::Ready,
        Invariant::Settled,
        Invariant::TruthfulStatus,
        Invariant::ExpectedOutcome,
        Invariant::FaultsReached,
        Invariant::IntentDurable,
        Invariant::IdempotentSubmission,
        Invariant::Fenced,
        Invariant::ArgumentsUnchanged,
        Invariant::OneDecision,
        Invariant::Sandboxed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Invariant::AtMostOnce => "at_most_once",
            Invariant::StableProviderKey => "stable_provider_key",
            Invariant::StableDeliveryKey => "stable_delivery_key",
            Invariant::NoBlindRetry => "no_blind_retry",
            Invariant::NoExecutionForDelivery => "no_execution_for_delivery",
            Invariant::DeliveredOnce => "delivered_once",
            Invariant::PolicyRespected => "policy_respected",
            Invariant::PolicyChecked => "policy_checked",
            Invariant::DeliveryBackoff => "delivery_backoff",
            Invariant::DeadLetterBound => "dead_letter_bound",
            Invariant::Ready => "ready",
            Invariant::Settled => "settled",
            Invariant::TruthfulStatus => "truthful_status",
            Invariant::ExpectedOutcome => "expected_outcome",
            Invariant::FaultsReached => "faults_reached",
            Invariant::IntentDurable => "intent_durable",
            Invariant::IdempotentSubmission => "idempotent_submission",
            Invariant::Fenced => "fenced",
            Invariant::ArgumentsUnchanged => "arguments_unchanged",
            Invariant::OneDecision => "one_decision",
            Invariant::Sandboxed => "sandboxed",
        }
    }

    /// One line: what the invariant proves (`killpoint list invariants`).
    pub fn summary(self) -> &'static str {
        match self {
            Invariant::AtMostOnce => "at most one side effect per operation (but for safely_repeatable tools)",
            Invariant::StableProviderKey => "one idempotency key per operation at the provider",
            Invariant::StableDeliveryKey => "one idempotency key per operation and destination at each consumer",
            Invariant::NoBlindRetry => {
                "after an unknown outcome, a lookup before any new attempt; none for a tool without lookup"
            }
            Invariant::NoExecutionForDelivery => {
                "nothing reaches the provider for an operation whose success was confirmed"
            }
            Invariant::DeliveredOnce => {
                "every success applied exactly once by every permitted destination, with the real result"
            }
            Invariant::PolicyRespected => {
                "no attempt or delivery a revocation in force forbids; refusals keep their audit trail"
            }
            Invariant::PolicyChecked => "every provider call and consumer receipt follows a fresh Allowed check",
            Invariant::DeliveryBackoff => "a retried delivery waits RETRY_BASE_MS x 2^(n-1) after its n-th send",
            Invariant::DeadLetterBound => "a dead-lettered delivery was received exactly DELIVERY_MAX_ATTEMPTS times",
            Invariant::Ready => "every incarnation prints its ready line, of this contract, by the ready deadline",
            Invariant::Settled => "every operation settles within the deadline after the last restart",
            Invariant::TruthfulStatus => "what the runtime reports agrees with the ledgers",
            Invariant::ExpectedOutcome => "each operation ends as its scenario expects",
            Invariant::FaultsReached => "every fault of the scenario was reached",
            Invariant::IntentDurable => "an accepted operation is never unknown to the runtime afterwards",
            Invariant::IdempotentSubmission => {
                "submission is idempotent by operation id (200 same body, 409 other, 400 malformed)"
            }
            Invariant::Fenced => "an outlived incarnation sends and commits nothing more, and exits",
            Invariant::ArgumentsUnchanged => {
                "every provider call carries its operation's submitted arguments (a task's: its model answer's) unchanged, `_killpoint` included"
            }
            Invariant::OneDecision => "every effect of a task acted on one and the same decision of the model",
            Invariant::Sandboxed => {
                "writes only in its data dir, contacts only the world and its services (traced runs)"
            }
        }
    }

    pub fn from_name(name: &str) -> Result<Invariant, String> {
        Invariant::ALL.into_iter().find(|i| i.as_str() == name).ok_or_else(|| {
            let names: Vec<&str> = Invariant::ALL.iter().map(|i| i.as_str()).collect();
            crate::model::boundary::unknown_word("invariant", name, &names)
        })
    }
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
