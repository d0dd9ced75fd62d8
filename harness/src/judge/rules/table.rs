//! The coverage table, as data: every numbered rule of the contract and how it is checked. Which
//! broken variants prove that a check can fail is `caught.rs`; the contract parser and the
//! document generator are beside it.

use crate::model::invariant::Invariant;

/// How a rule is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Judged in every run from the ledgers by these invariants: those whose checks, failing, can
    /// name the rule (`breach.rs` refuses any other).
    Invariants(&'static [Invariant]),
    /// Enforced by the harness while it starts or talks to the runtime: a runtime that breaks it
    /// cannot get a verdict at all. The text says how.
    Harness(&'static str),
    /// Not checked yet; the text says why.
    NotChecked(&'static str),
}

/// One rule of the contract and its check.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// `§4-3`, as tagged in the contract.
    pub id: &'static str,
    pub check: Check,
}

use Invariant::*;

/// Rules only a traced run judges (the tracer sees the runtime's files and connections): a
/// verdict of a run without it says nothing of them. `--crash machine` always traces.
pub const TRACED_RULES: &[&str] = &["§2-2", "§2-5"];

/// Rules of a runtime's server (CONTRACT.md §2, "Services"), and what a run must have done to
/// judge each: §2-9 to §2-11 a run whose `[[service_fault]]` fired, §2-12 a run with services
/// whose worker was frozen, §2-13 one with services whose worker was killed or frozen. No other
/// run verifies them, and in such a run a violation of an invariant that checks one of them names
/// it (`services.rs`): a runtime without services is not certified for them by its other passes.
pub const SERVICE_RULES: &[(&str, ServiceRun)] = &[
    ("§2-9", ServiceRun::ServiceFault),
    ("§2-10", ServiceRun::ServiceFault),
    ("§2-11", ServiceRun::ServiceFault),
    ("§2-12", ServiceRun::WorkerFrozen),
    ("§2-13", ServiceRun::WorkerKilledOrFrozen),
];

/// What a run with services did, for [`SERVICE_RULES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceRun {
    /// A `[[service_fault]]` fired.
    ServiceFault,
    /// The worker was frozen (a `[[fault]]` with `action = "freeze"`) while its server lived.
    WorkerFrozen,
    /// The worker was killed or frozen while its server lived.
    WorkerKilledOrFrozen,
}

/// Tests that prove a service rule's check can fail, with a runtime of the tests' own (the
/// reference runtime has no server to break it with).
pub const SERVICE_PROOFS: &[(&str, &str)] = &[
    ("§2-9", "tests/services.rs: journal_worker.py --blind → service_frozen, service_unreachable"),
    ("§2-10", "tests/services.rs: journal_worker.py --drop-on-server-error → service_frozen, service_unreachable"),
    ("§2-12", "tests/services.rs: journal_worker.py --ignore-fence → zombie_worker, with its server"),
    ("§2-13", "tests/frameworks.rs: examples/temporal/naive.py → after_dispatch (the server retries the activity)"),
];

/// Rules a process kill cannot show held, since it keeps the page cache: only verdicts of
/// machine-crash runs (`--crash machine`) verify or violate them.
pub const MACHINE_CRASH_RULES: &[&str] = &["§7-6", "§7-7"];

/// Rules of a runtime rebuilt from a backup (CONTRACT.md section 13): only verdicts of restore
/// runs (`--crash restore`) verify or violate them, and in such a run a violation of an invariant
/// that checks one of them names it (`judge/restore.rs`).
pub const RESTORE_RULES: &[&str] = &["§13-1", "§13-3", "§13-4", "§13-5"];

const fn by(invariants: &'static [Invariant]) -> Check {
    Check::Invariants(invariants)
}

/// Invariants proven by a test of their own rather than by a broken variant of the reference
/// runtime: no runtime bug is needed to show that they can fail. The coverage document names the
/// test as the proof of a rule they check alone.
pub const PROVEN_ELSEWHERE: [(Invariant, &str); 3] = [
    (Ready, "tests/hostile.rs: a runtime that never becomes ready, four ways"),
    (Settled, "tests/hostile.rs: a runtime stuck after a boundary"),
    (FaultsReached, "tests/checker_proofs.rs: a fault at an occurrence the workload never reaches"),
];

/// Every numbered rule of `CONTRACT.md`, in the contract's order.
pub const RULES: &[Rule] = &[
    Rule {
        id: "§2-1",
        check: Check::NotChecked(
            "the harness refuses a runtime that declares another version (a harness-side check); it never starts a runtime with a version it does not speak",
        ),
    },
    Rule { id: "§2-2", check: by(&[Sandboxed]) },
    Rule {
        id: "§2-3",
        check: Check::Harness(
            "every kill also sweeps processes carrying the token (tests/hostile.rs); a runtime that drops it from a child's environment leaves an orphan the sweep misses",
        ),
    },
    Rule { id: "§2-4", check: by(&[IntentDurable]) },
    Rule { id: "§2-5", check: by(&[Sandboxed]) },
    Rule { id: "§2-6", check: by(&[Ready]) },
    Rule {
        id: "§2-7",
        check: Check::Harness(
            "a runtime that declares the probe and has not connected by the ready deadline stops the run with an error saying so (tests/hostile.rs)",
        ),
    },
    Rule {
        id: "§2-8",
        check: Check::NotChecked(
            "the harness reads the probe only after the ready line, so an early announcement only delays the runtime itself",
        ),
    },
    Rule { id: "§2-9", check: by(&[AtMostOnce, NoBlindRetry, NoExecutionForDelivery]) },
    Rule { id: "§2-10", check: by(&[IntentDurable, DeliveredOnce, ExpectedOutcome]) },
    Rule { id: "§2-11", check: by(&[Settled]) },
    Rule { id: "§2-12", check: by(&[Fenced]) },
    Rule { id: "§2-13", check: by(&[AtMostOnce, NoBlindRetry, StableProviderKey]) },
    Rule { id: "§3-1", check: by(&[ArgumentsUnchanged]) },
    Rule { id: "§3-2", check: by(&[IntentDurable]) },
    Rule { id: "§3-3", check: by(&[IdempotentSubmission]) },
    Rule { id: "§3-4", check: by(&[IdempotentSubmission]) },
    Rule { id: "§3-5", check: by(&[IdempotentSubmission]) },
    Rule { id: "§3-6", check: by(&[TruthfulStatus]) },
    Rule { id: "§3-7", check: by(&[PolicyRespected]) },
    Rule { id: "§3-8", check: by(&[TruthfulStatus]) },
    Rule { id: "§3-9", check: by(&[IntentDurable, TruthfulStatus]) },
    Rule { id: "§3-10", check: by(&[Settled]) },
    Rule { id: "§4-1", check: by(&[PolicyChecked]) },
    Rule { id: "§4-2", check: by(&[ExpectedOutcome, PolicyRespected]) },
    Rule { id: "§4-3", check: by(&[ExpectedOutcome, TruthfulStatus]) },
    Rule { id: "§4-4", check: by(&[TruthfulStatus]) },
    Rule { id: "§4-5", check: by(&[StableProviderKey]) },
    Rule { id: "§4-6", check: by(&[TruthfulStatus]) },
    Rule { id: "§4-7", check: by(&[NoBlindRetry, ExpectedOutcome]) },
    Rule { id: "§4-8", check: by(&[NoBlindRetry, TruthfulStatus]) },
    Rule { id: "§4-9", check: Check::NotChecked("the fake provider never answers with a redirect") },
    Rule { id: "§4-10", check: by(&[NoBlindRetry]) },
    Rule { id: "§4-11", check: by(&[NoBlindRetry, NoExecutionForDelivery, ExpectedOutcome]) },
    Rule { id: "§4-12", check: by(&[NoBlindRetry]) },
    Rule { id: "§4-13", check: by(&[NoBlindRetry, ExpectedOutcome]) },
    Rule { id: "§4-14", check: by(&[NoBlindRetry, NoExecutionForDelivery]) },
    Rule { id: "§4-15", check: by(&[ExpectedOutcome, TruthfulStatus]) },
    Rule { id: "§5-1", check: by(&[AtMostOnce]) },
    Rule { id: "§6-1", check: by(&[DeliveredOnce]) },
    Rule { id: "§6-2", check: by(&[StableDeliveryKey]) },
    Rule { id: "§6-3", check: by(&[DeliveredOnce]) },
    Rule { id: "§6-4", check: by(&[DeliveryBackoff]) },
    Rule { id: "§6-5", check: by(&[DeadLetterBound]) },
    Rule { id: "§6-6", check: by(&[NoExecutionForDelivery]) },
    Rule { id: "§6-7", check: by(&[PolicyRespected, PolicyChecked]) },
    Rule {
        id: "§7-1",
        check: Check::Harness(
            "the harness answers each announcement before reading the next, and kills at the announcement; a runtime that does not block is killed a little later than announced, which the syscall-level points will expose",
        ),
    },
    Rule {
        id: "§7-2",
        check: Check::Harness(
            "an interleaved or malformed probe line stops the run with the line quoted (tests/hostile.rs)",
        ),
    },
    Rule {
        id: "§7-3",
        check: Check::NotChecked(
            "the harness closes the probe only when it kills the runtime, so a runtime that ignores a closed probe is killed anyway",
        ),
    },
    Rule {
        id: "§7-4",
        check: Check::NotChecked(
            "the harness trusts where the runtime says it is; syscall-level crash points (`--points syscalls`) will cross-check announcements against durable writes and requests",
        ),
    },
    Rule {
        id: "§7-5",
        check: Check::NotChecked(
            "a runtime that refuses tracing fails to start under the tracer, which the report shows as its start failing; no invariant judges it",
        ),
    },
    Rule { id: "§7-6", check: by(&[IntentDurable]) },
    // The reference runtime creates no file of its own (SQLite syncs the directory of the journal
    // and log it creates), so no variant of it skips a directory sync; the power-loss model's unit
    // tests (run/power_loss) show a name lost without one.
    Rule { id: "§7-7", check: by(&[IntentDurable, AtMostOnce, DeliveredOnce, TruthfulStatus]) },
    Rule { id: "§8-1", check: by(&[PolicyChecked]) },
    Rule { id: "§8-2", check: by(&[PolicyChecked]) },
    Rule { id: "§8-3", check: by(&[PolicyChecked]) },
    Rule { id: "§8-4", check: by(&[PolicyChecked]) },
    Rule { id: "§8-5", check: by(&[PolicyRespected]) },
    Rule { id: "§9-1", check: by(&[Fenced]) },
    Rule {
        id: "§9-2",
        // The outlived incarnation's next step at a freezable boundary is a commit: a request of
        // that operation after its resume proves the commit landed (or was skipped). What it
        // wrote also shows in the final reads (`delivered_once`, `expected_outcome`, …), but
        // those invariants judge other rules too, so they do not speak for this one.
        check: by(&[Fenced]),
    },
    // Checked (a request of the same work after a `409 fenced` the runtime read; no exit by the
    // deadline), with the probe and black-box under the tracer alike (`zombie_worker` freezes where
    // the tracer reaches its boundaries; `frozen_before_a_request`, traced in every mode, just
    // before a request, where `ignores-fence` asks again after its refusal).
    Rule { id: "§9-3", check: by(&[Fenced]) },
    Rule {
        id: "§11-1",
        check: Check::NotChecked(
            "that every family is served is not checked: a missing series counts as 0, and only dead letters, reconciliations and policy refusals are held against the ledgers (§11-2)",
        ),
    },
    Rule { id: "§11-2", check: by(&[TruthfulStatus]) },
    Rule { id: "§11-3", check: by(&[TruthfulStatus]) },
    Rule {
        id: "§12-1",
        check: Check::Harness(
            "the world's model answers 400 to a conversation without the task's marker or without the task's tool offered: the task is never decided, and its operation never settles (`settled`)",
        ),
    },
    Rule { id: "§12-2", check: by(&[ArgumentsUnchanged]) },
    Rule { id: "§12-3", check: by(&[OneDecision]) },
    Rule { id: "§12-4", check: by(&[TruthfulStatus, ExpectedOutcome]) },
    // A key drawn anew after a restore: a second key at the provider or a consumer, and the
    // effect or the delivery it lets through twice.
    Rule { id: "§13-1", check: by(&[StableProviderKey, StableDeliveryKey, AtMostOnce, DeliveredOnce]) },
    Rule {
        id: "§13-2",
        check: Check::NotChecked(
            "a mark not recorded before the ready line shows only when a second restore or crash comes before the lookup; the effect it then repeats is reported under §13-3",
        ),
    },
    Rule { id: "§13-3", check: by(&[AtMostOnce, NoBlindRetry, NoExecutionForDelivery]) },
    Rule { id: "§13-4", check: by(&[AtMostOnce, NoBlindRetry, ExpectedOutcome]) },
    Rule { id: "§13-5", check: by(&[PolicyChecked, PolicyRespected]) },
];
