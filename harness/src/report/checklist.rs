//! The seed's acceptance checklist, answered for the certified runtime: each of its eight
//! questions gets `yes`, `no` or `not shown`, with the scenarios and invariants that say so.
//!
//! A question is answered `no` as soon as one scenario broke one of its invariants, `yes` only
//! when one of its scenarios ran in full (no boundary left to the probe) and none broke them, and
//! `not shown` otherwise (its scenarios were filtered out, or ran only partly). Durability is
//! answered `yes` only from machine-crash runs: a process kill keeps the page cache, so surviving
//! it shows nothing about what was on disk. Two questions are
//! answered from other evidence: the logs (every retry the ledgers show has a structured log line
//! saying what it was) and the matrix (every boundary exercised and passed).

use crate::model::boundary::Boundary;
use crate::model::crash::Crash;
use crate::model::invariant::Invariant;
use crate::report::outcome::{MatrixCell, ScenarioEntry, ScenarioOutcome, ScenarioStatus};
use crate::report::story::Cell;
use crate::report::timeline::Kind;
use serde::Serialize;
use std::fmt::Write as _;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Yes,
    No,
    NotShown,
}

impl Answer {
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Yes => "yes",
            Answer::No => "no",
            Answer::NotShown => "not shown",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Item {
    pub question: &'static str,
    pub answer: Answer,
    /// What the answer rests on, one line each: `scenario: invariants held` or broken, …
    pub evidence: Vec<String>,
}

/// What kind of crash a question's `yes` must have survived.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Needs {
    AnyCrash,
    /// Durability: a process kill keeps the page cache, so only a machine crash (`--crash
    /// machine`) shows that what was acknowledged was on disk.
    MachineCrash,
}

/// The six questions answered by invariants: the question, its invariants, its scenarios, and
/// the crash their `yes` needs.
const BY_INVARIANTS: [(&str, &[Invariant], &[&str], Needs); 6] = [
    (
        "Can I distinguish execution success from delivery acknowledgement?",
        &[Invariant::NoExecutionForDelivery, Invariant::DeliveredOnce, Invariant::TruthfulStatus],
        &["after_result_write", "after_delivery_send", "delivery_dead_letter"],
        Needs::AnyCrash,
    ),
    (
        "Can I reconcile an interrupted tool call without guessing?",
        &[Invariant::NoBlindRetry, Invariant::AtMostOnce],
        &["after_dispatch", "kill_while_reconciling", "lookup_unavailable", "unreadable_success"],
        Needs::AnyCrash,
    ),
    (
        "Does every side-effecting operation have a stable idempotency key?",
        &[Invariant::StableProviderKey],
        &["after_dispatch", "after_provider_success"],
        Needs::AnyCrash,
    ),
    (
        "Can the consumer deduplicate the same event?",
        &[Invariant::StableDeliveryKey, Invariant::DeliveredOnce],
        &["after_delivery_send", "delivery_dead_letter"],
        Needs::AnyCrash,
    ),
    (
        "Are result records durable before a worker acknowledges the job?",
        &[Invariant::IntentDurable, Invariant::DeliveredOnce, Invariant::TruthfulStatus],
        &["after_submit", "after_result_write"],
        Needs::MachineCrash,
    ),
    (
        "Does reconciliation recheck current authorization?",
        &[Invariant::PolicyChecked, Invariant::PolicyRespected],
        &["after_policy_revocation", "revoke_without_kill"],
        Needs::AnyCrash,
    ),
];

const LOGS: &str = "Can I prove, from logs, whether a retry was execution or delivery?";
const KILLED: &str = "Have I killed the worker at every boundary in the table above?";

/// The eight answers, in the seed's order.
pub fn answer(entries: &[ScenarioEntry], outcomes: &[ScenarioOutcome], matrix: &[MatrixCell]) -> Vec<Item> {
    let mut items: Vec<Item> =
        BY_INVARIANTS.iter().map(|(q, inv, sc, needs)| by_invariants(q, inv, sc, *needs, entries)).collect();
    items.insert(6, logs(outcomes));
    items.push(killed(matrix, entries));
    items
}

fn names(invariants: &[Invariant]) -> String {
    invariants.iter().map(|i| i.as_str()).collect::<Vec<_>>().join(", ")
}

fn by_invariants(
    question: &'static str,
    invariants: &[Invariant],
    scenarios: &[&str],
    needs: Needs,
    entries: &[ScenarioEntry],
) -> Item {
    let mut broken = Vec::new();
    for entry in entries {
        let mut violated: Vec<&str> = entry
            .violations
            .iter()
            .filter(|v| invariants.contains(&v.invariant))
            .map(|v| v.invariant.as_str())
            .collect();
        violated.dedup();
        if !violated.is_empty() {
            broken.push(format!("{}: violated {}", entry.name, violated.join(", ")));
        }
    }
    if !broken.is_empty() {
        return Item { question, answer: Answer::No, evidence: broken };
    }
    let passed = |e: &&ScenarioEntry| scenarios.contains(&e.name.as_str()) && e.status == ScenarioStatus::Pass;
    let survived = |e: &&ScenarioEntry| needs == Needs::AnyCrash || e.crash == Some(Crash::Machine);
    let held: Vec<String> = entries
        .iter()
        .filter(passed)
        .filter(survived)
        .map(|e| format!("{}: {} held", e.name, names(invariants)))
        .collect();
    let process_only: Vec<&str> = entries.iter().filter(passed).map(|e| e.name.as_str()).collect();
    if held.is_empty() && !process_only.is_empty() {
        let evidence = vec![format!(
            "{} passed under process crashes only, which keep the page cache: durability is shown by a machine crash (--crash machine)",
            process_only.join(", ")
        )];
        return Item { question, answer: Answer::NotShown, evidence };
    }
    if held.is_empty() {
        let evidence = vec![format!("none of {} ran in full", scenarios.join(", "))];
        return Item { question, answer: Answer::NotShown, evidence };
    }
    Item { question, answer: Answer::Yes, evidence: held }
}

/// Every retry the ledgers show (a provider call after the operation's first, a receipt after the
/// first at a destination) must have the runtime's structured retry line (`{"log":"retry",…}`)
/// led to it on the timeline.
fn logs(outcomes: &[ScenarioOutcome]) -> Item {
    let (mut shown, mut missing) = (Vec::new(), Vec::new());
    for outcome in outcomes {
        let Some(timeline) = &outcome.timeline else { continue };
        let logged: Vec<u64> =
            timeline.events.iter().filter(|e| e.kind == Kind::Retry).filter_map(|e| e.led_to).collect();
        let retried: Vec<u64> = timeline.retried.clone();
        if retried.is_empty() {
            continue;
        }
        let unlogged = retried.iter().filter(|seq| !logged.contains(seq)).count();
        if unlogged > 0 {
            missing.push(format!(
                "{}: {unlogged} of {} retried request(s) with no structured retry line in the logs",
                outcome.name,
                retried.len()
            ));
        } else {
            shown.push(format!("{}: {} retried request(s), each with its retry line", outcome.name, retried.len()));
        }
    }
    match (missing.is_empty(), shown.is_empty()) {
        (false, _) => Item { question: LOGS, answer: Answer::No, evidence: missing },
        (true, false) => Item { question: LOGS, answer: Answer::Yes, evidence: shown },
        (true, true) => Item {
            question: LOGS,
            answer: Answer::NotShown,
            evidence: vec!["no scenario made the runtime retry".into()],
        },
    }
}

fn killed(matrix: &[MatrixCell], entries: &[ScenarioEntry]) -> Item {
    // A runtime that never became ready was killed nowhere in those scenarios: their cells fail
    // for the ready line's rule, which the answer names rather than leave it to a boundary.
    let unready: Vec<&str> = entries
        .iter()
        .filter(|e| e.violations.iter().any(|v| v.invariant == Invariant::Ready))
        .map(|e| e.name.as_str())
        .collect();
    let mut failed: Vec<String> = match unready.is_empty() {
        true => Vec::new(),
        false => vec![format!(
            "the runtime never became ready in {} (`ready`, CONTRACT.md §2-6): no kill there was reached",
            unready.join(", ")
        )],
    };
    let mut unexercised = Vec::new();
    let mut passed = Vec::new();
    for boundary in Boundary::ALL {
        let cells: Vec<&MatrixCell> = matrix.iter().filter(|c| c.boundary == boundary).collect();
        if cells.iter().any(|c| c.cell == Cell::Fail) {
            failed.push(format!("{boundary}: failed"));
        } else if cells.iter().any(|c| matches!(c.cell, Cell::Pass | Cell::Approximate)) {
            let kinds: Vec<&str> = cells
                .iter()
                .filter(|c| matches!(c.cell, Cell::Pass | Cell::Approximate))
                .map(|c| c.tool_kind.as_str())
                .collect();
            passed.push(format!("{boundary}: killed and passed ({})", kinds.join(", ")));
        } else {
            unexercised.push(format!("{boundary}: not exercised"));
        }
    }
    let (answer, evidence) = if !failed.is_empty() {
        (Answer::No, failed)
    } else if !unexercised.is_empty() {
        (Answer::NotShown, unexercised)
    } else {
        (Answer::Yes, passed)
    };
    Item { question: KILLED, answer, evidence }
}

/// The checklist as text: one line per question, its evidence indented below.
pub fn table(items: &[Item]) -> String {
    let mut out = String::from("the seed's acceptance checklist:\n");
    for item in items {
        let _ = writeln!(out, "  {:<9}  {}", item.answer.as_str(), item.question);
        for e in &item.evidence {
            let _ = writeln!(out, "             {e}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passed(name: &str, crash: Crash) -> ScenarioEntry {
        ScenarioEntry {
            name: name.into(),
            file: format!("scenarios/{name}.toml"),
            sha256: None,
            status: ScenarioStatus::Pass,
            crash: Some(crash),
            error: None,
            duration_ms: 0,
            violations: Vec::new(),
            faults: Vec::new(),
            artifacts: None,
            story: None,
        }
    }

    fn durability(entries: &[ScenarioEntry]) -> Item {
        answer(entries, &[], &[]).into_iter().find(|i| i.question.contains("durable")).expect("the question")
    }

    /// A process kill keeps the page cache: surviving it says nothing about what was on disk.
    #[test]
    fn durability_is_shown_only_by_a_machine_crash() {
        let process = durability(&[passed("after_submit", Crash::Process)]);
        assert_eq!(process.answer, Answer::NotShown, "{:?}", process.evidence);
        assert!(process.evidence[0].contains("--crash machine"), "{:?}", process.evidence);
        let machine = durability(&[passed("after_submit", Crash::Machine)]);
        assert_eq!(machine.answer, Answer::Yes, "{:?}", machine.evidence);
        // Other questions do not need one.
        let keys = answer(&[passed("after_dispatch", Crash::Process)], &[], &[]);
        assert_eq!(keys.iter().find(|i| i.question.contains("stable idempotency key")).unwrap().answer, Answer::Yes);
    }
}
