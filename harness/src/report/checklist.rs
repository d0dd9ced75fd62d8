//! The seed's acceptance checklist, answered for the certified runtime: each of its eight
//! questions gets `yes`, `no` or `not shown`, with the scenarios and invariants that say so.
//!
//! A question is answered `no` as soon as one scenario broke one of its rules (a violation of one
//! of its invariants that names one of the question's contract rules: an invariant's failure for
//! another rule's sake says nothing about this question), `yes` only
//! when one of its scenarios ran in full (no boundary left to the probe) and none broke them, and
//! `not shown` otherwise (its scenarios were filtered out, or ran only partly). Durability is
//! answered `yes` only from machine-crash runs: a process kill keeps the page cache, so surviving
//! it shows nothing about what was on disk. Two questions are
//! answered from other evidence: the logs (every retry the ledgers show has a structured log line
//! saying what it was) and the matrix (every boundary exercised and passed).
//!
//! A ninth answer is the seed's hosting advice ("verify … backups … and rebuild steps"): a
//! runtime rebuilt from a backup that lags must repeat nothing the world saw (CONTRACT.md section
//! 13). It is answered `yes` only from restore runs (`--crash restore`), the one crash that
//! rebuilds the runtime from a backup.

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
    /// Rebuilding: only a restore (`--crash restore`) starts the runtime from a backup.
    Restore,
}

impl Needs {
    fn survived(self, crash: Option<Crash>) -> bool {
        match self {
            Needs::AnyCrash => true,
            Needs::MachineCrash => crash == Some(Crash::Machine),
            Needs::Restore => crash == Some(Crash::Restore),
        }
    }

    /// Why a pass under `crash` does not answer, and the crash that would.
    fn not_shown(self, passed: &str, crash: Option<Crash>) -> String {
        let under = match (self, crash) {
            (_, Some(Crash::Restore)) => "restores only, whose backups lag what was synced",
            (Needs::Restore, Some(Crash::Machine)) => "machine crashes only, which restart the runtime where it synced",
            (Needs::Restore, _) => "process crashes only, which restart the runtime where it stopped",
            _ => "process crashes only, which keep the page cache",
        };
        let shown_by = match self {
            Needs::Restore => "rebuilding is shown by a restore (--crash restore)",
            _ => "durability is shown by a machine crash (--crash machine)",
        };
        format!("{passed} passed under {under}: {shown_by}")
    }
}

/// One question answered by invariants.
struct Question {
    question: &'static str,
    invariants: &'static [Invariant],
    /// The contract's rules it asks about: a violation of its invariants answers `no` only if it
    /// names one of these.
    rules: &'static [&'static str],
    /// The scenarios whose full pass answers `yes`.
    scenarios: &'static [&'static str],
    /// The crash that `yes` must have survived.
    needs: Needs,
}

/// The six questions answered by invariants.
const BY_INVARIANTS: [Question; 6] = [
    Question {
        question: "Can I distinguish execution success from delivery acknowledgement?",
        invariants: &[Invariant::NoExecutionForDelivery, Invariant::DeliveredOnce, Invariant::TruthfulStatus],
        rules: &["§4-6", "§4-14", "§6-1", "§6-3", "§6-6"],
        scenarios: &["after_result_write", "after_delivery_send", "delivery_dead_letter"],
        needs: Needs::AnyCrash,
    },
    Question {
        question: "Can I reconcile an interrupted tool call without guessing?",
        invariants: &[Invariant::NoBlindRetry, Invariant::AtMostOnce],
        rules: &["§4-8", "§4-10", "§4-11", "§4-12", "§4-13", "§5-1"],
        scenarios: &["after_dispatch", "kill_while_reconciling", "lookup_unavailable", "unreadable_success"],
        needs: Needs::AnyCrash,
    },
    Question {
        question: "Does every side-effecting operation have a stable idempotency key?",
        invariants: &[Invariant::StableProviderKey],
        rules: &["§4-5"],
        scenarios: &["after_dispatch", "after_provider_success"],
        needs: Needs::AnyCrash,
    },
    Question {
        question: "Can the consumer deduplicate the same event?",
        invariants: &[Invariant::StableDeliveryKey, Invariant::DeliveredOnce],
        rules: &["§6-2", "§6-3"],
        scenarios: &["after_delivery_send", "delivery_dead_letter"],
        needs: Needs::AnyCrash,
    },
    Question {
        question: "Are result records durable before a worker acknowledges the job?",
        invariants: &[Invariant::IntentDurable, Invariant::DeliveredOnce, Invariant::TruthfulStatus],
        rules: &["§3-2", "§3-9", "§4-4", "§4-6", "§7-6", "§7-7"],
        scenarios: &["after_submit", "after_result_write"],
        needs: Needs::MachineCrash,
    },
    Question {
        question: "Does reconciliation recheck current authorization?",
        invariants: &[Invariant::PolicyChecked, Invariant::PolicyRespected],
        rules: &["§4-1", "§8-2", "§8-3", "§8-5"],
        scenarios: &["after_policy_revocation", "revoke_without_kill"],
        needs: Needs::AnyCrash,
    },
];

/// The seed's hosting advice on backups and rebuild steps, answered by restores.
const REBUILD: Question = Question {
    question: "Can the runtime be rebuilt from a backup that lags without repeating what the world already saw?",
    invariants: &[
        Invariant::AtMostOnce,
        Invariant::StableProviderKey,
        Invariant::StableDeliveryKey,
        Invariant::DeliveredOnce,
        Invariant::PolicyRespected,
        Invariant::PolicyChecked,
    ],
    rules: &["§13-1", "§13-2", "§13-3", "§13-4", "§13-5"],
    scenarios: &["restore_before_the_intent", "restore_before_the_revocation", "after_delivery_send"],
    needs: Needs::Restore,
};

const LOGS: &str = "Can I prove, from logs, whether a retry was execution or delivery?";
const KILLED: &str = "Have I killed the worker at every boundary in the table above?";

/// The eight answers, in the seed's order, then the hosting answer on rebuilding.
pub fn answer(entries: &[ScenarioEntry], outcomes: &[ScenarioOutcome], matrix: &[MatrixCell]) -> Vec<Item> {
    let mut items: Vec<Item> = BY_INVARIANTS.iter().map(|q| by_invariants(q, entries)).collect();
    items.insert(6, logs(outcomes));
    items.push(killed(matrix, entries));
    items.push(by_invariants(&REBUILD, entries));
    items
}

fn names(invariants: &[Invariant]) -> String {
    invariants.iter().map(|i| i.as_str()).collect::<Vec<_>>().join(", ")
}

fn by_invariants(asked: &Question, entries: &[ScenarioEntry]) -> Item {
    let Question { question, invariants, rules, scenarios, needs } = *asked;
    let mut broken = Vec::new();
    for entry in entries {
        // Each invariant once, with the question's rules its violations here name.
        let mut violated: Vec<(Invariant, Vec<&str>)> = Vec::new();
        for v in entry.violations.iter().filter(|v| invariants.contains(&v.invariant)) {
            for rule in v.rules().iter().copied().filter(|r| rules.contains(r)) {
                match violated.iter_mut().find(|(i, _)| *i == v.invariant) {
                    Some((_, named)) if !named.contains(&rule) => named.push(rule),
                    Some(_) => {}
                    None => violated.push((v.invariant, vec![rule])),
                }
            }
        }
        if !violated.is_empty() {
            let said: Vec<String> = violated.iter().map(|(i, named)| format!("{i} ({})", named.join(", "))).collect();
            broken.push(format!("{}: violated {}", entry.name, said.join(", ")));
        }
    }
    if !broken.is_empty() {
        return Item { question, answer: Answer::No, evidence: broken };
    }
    let passed = |e: &&ScenarioEntry| scenarios.contains(&e.name.as_str()) && e.status == ScenarioStatus::Pass;
    let survived = |e: &&ScenarioEntry| needs.survived(e.crash);
    let held: Vec<String> = entries
        .iter()
        .filter(passed)
        .filter(survived)
        .map(|e| format!("{}: {} held", e.name, names(invariants)))
        .collect();
    let process_only: Vec<&str> = entries.iter().filter(passed).map(|e| e.name.as_str()).collect();
    if held.is_empty() && !process_only.is_empty() {
        let evidence = vec![needs.not_shown(&process_only.join(", "), entries.iter().find_map(|e| e.crash))];
        return Item { question, answer: Answer::NotShown, evidence };
    }
    if held.is_empty() {
        return Item { question, answer: Answer::NotShown, evidence: vec![why_not_shown(entries, scenarios)] };
    }
    Item { question, answer: Answer::Yes, evidence: held }
}

/// Why none of `scenarios` shows a question's answer: each one failed (for another question's
/// rules), passed only in part, or did not run (issue 32: "did not run in full" was said of
/// scenarios that ran and failed).
fn why_not_shown(entries: &[ScenarioEntry], scenarios: &[&str]) -> String {
    let with = |status: ScenarioStatus| -> Vec<&str> {
        entries
            .iter()
            .filter(|e| e.status == status && scenarios.contains(&e.name.as_str()))
            .map(|e| e.name.as_str())
            .collect()
    };
    let ran: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    let absent: Vec<&str> = scenarios.iter().copied().filter(|s| !ran.contains(s)).collect();
    let parts = [
        (with(ScenarioStatus::Fail), "failed on rules of other questions"),
        (with(ScenarioStatus::Partial), "passed only in part (boundaries left to the probe)"),
        (with(ScenarioStatus::Error), "could not be judged"),
        (absent, "did not run"),
    ];
    let said: Vec<String> = parts
        .iter()
        .filter(|(names, _)| !names.is_empty())
        .map(|(names, why)| format!("{} {why}", names.join(", ")))
        .collect();
    said.join("; ")
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
        let after_restore = match timeline.retried_after_restore.len() {
            0 => String::new(),
            n => format!(
                " ({n} more after a restore, whose backup may not hold the attempts they repeat: no line owed, CONTRACT.md section 13)"
            ),
        };
        if retried.is_empty() {
            if !after_restore.is_empty() {
                shown.push(format!("{}: no retried request before its restore{after_restore}", outcome.name));
            }
            continue;
        }
        let unlogged = retried.iter().filter(|seq| !logged.contains(seq)).count();
        if unlogged > 0 {
            missing.push(format!(
                "{}: {unlogged} of {} retried request(s) with no structured retry line in the logs{after_restore}",
                outcome.name,
                retried.len()
            ));
        } else {
            shown.push(format!(
                "{}: {} retried request(s), each with its retry line{after_restore}",
                outcome.name,
                retried.len()
            ));
        }
    }
    let retried_any = outcomes.iter().filter_map(|o| o.timeline.as_ref()).any(|t| !t.retried.is_empty());
    match (missing.is_empty(), retried_any) {
        (false, _) => Item { question: LOGS, answer: Answer::No, evidence: missing },
        (true, true) => Item { question: LOGS, answer: Answer::Yes, evidence: shown },
        (true, false) => {
            let said = match shown.is_empty() {
                true => "no scenario made the runtime retry",
                false => "no scenario made the runtime retry before a restore",
            };
            let mut evidence = vec![said.to_owned()];
            evidence.extend(shown);
            Item { question: LOGS, answer: Answer::NotShown, evidence }
        }
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
            reasked: Vec::new(),
            restore_risks: Vec::new(),
            faults: Vec::new(),
            artifacts: None,
            story: None,
            schedule: None,
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

    /// Issue 34: only a restore rebuilds the runtime from a backup; a §13 violation answers no.
    #[test]
    fn rebuilding_is_shown_only_by_a_restore() {
        let rebuild = |entries: &[ScenarioEntry]| answer(entries, &[], &[]).pop().expect("the ninth answer");
        let machine = rebuild(&[passed("restore_before_the_intent", Crash::Machine)]);
        assert_eq!(machine.answer, Answer::NotShown, "{:?}", machine.evidence);
        assert!(machine.evidence[0].contains("--crash restore"), "{:?}", machine.evidence);
        assert_eq!(rebuild(&[passed("restore_before_the_intent", Crash::Restore)]).answer, Answer::Yes);
        use crate::judge::Violation;
        use crate::judge::rules::breach::breach;
        let mut failed = passed("restore_before_the_intent", Crash::Restore);
        failed.status = ScenarioStatus::Fail;
        failed.violations = vec![Violation::new(breach!(AtMostOnce, "§13-1"), None, "two charges".into(), Vec::new())];
        let broken = rebuild(&[failed]);
        assert_eq!(broken.answer, Answer::No);
        assert_eq!(broken.evidence, ["restore_before_the_intent: violated at_most_once (§13-1)"]);
    }

    /// Issue 32: `blind-retry`'s FAILED over an applied effect is an untrue read (§3-8), not a
    /// success confused with a delivery's acknowledgement; a success recorded without its
    /// deliveries (§4-6) is. Both are `truthful_status`.
    #[test]
    fn a_question_is_answered_no_only_by_a_violation_of_its_rules() {
        use crate::judge::Violation;
        use crate::judge::rules::breach::breach;
        let distinguish = |violation: Violation| {
            let mut failed = passed("after_policy_revocation", Crash::Process);
            failed.status = ScenarioStatus::Fail;
            failed.violations = vec![violation];
            let entries = [failed, passed("after_result_write", Crash::Process)];
            answer(&entries, &[], &[]).into_iter().find(|i| i.question.contains("distinguish")).expect("the question")
        };
        let untrue = Violation::new(breach!(TruthfulStatus, "§3-8"), None, "FAILED, applied".into(), Vec::new());
        assert_eq!(distinguish(untrue).answer, Answer::Yes);
        let split = Violation::new(breach!(TruthfulStatus, "§4-6"), None, "no delivery record".into(), Vec::new());
        let item = distinguish(split);
        assert_eq!(item.answer, Answer::No);
        assert_eq!(item.evidence, ["after_policy_revocation: violated truthful_status (§4-6)"]);
    }
}
