//! The submission family, judged from the timeline rather than the ledgers: an accepted intent is
//! never forgotten, and submission is idempotent by operation id (CONTRACT.md section 3).

use super::rules::breach::breach;
use super::verdict::Violation;
use crate::model::crash::Crash;
use crate::run::client::{ExecutionState, Resubmission};
use crate::run::driver::{Happening, Mark, Run};
use crate::run::trace::describe_mark;
use serde_json::Value;
use std::collections::BTreeSet;

fn marked(mark: &Mark) -> String {
    format!("#{} {}", mark.seq, describe_mark(mark))
}

/// `intent_durable`: every `404` for an operation the runtime had accepted, one violation per
/// operation, with the acceptance and each time it was not known as evidence; and every restart on
/// a hidden data dir that did not end in an exit naming it.
pub(super) fn intent_durable(run: &Run, violations: &mut Vec<Violation>) {
    missing_data_dir(run, violations);
    // An intent lost in a power loss was acknowledged before it was synced (§7-6).
    let forgotten = match run.crash {
        Crash::Machine | Crash::Restore => breach!(IntentDurable, "§3-2", "§3-9", "§7-6"),
        Crash::Process => breach!(IntentDurable, "§3-2", "§3-9"),
    };
    let mut reported: BTreeSet<&str> = BTreeSet::new();
    for mark in &run.timeline {
        let Happening::Forgotten { operation, incarnation, .. } = &mark.happening else { continue };
        if !reported.insert(operation.as_str()) {
            continue;
        }
        let proof = run.timeline.iter().filter(|m| match &m.happening {
            Happening::Answered { operation: o, .. } | Happening::Forgotten { operation: o, .. } => o == operation,
            Happening::KillPoint { operation: o, .. } => o == operation,
            Happening::Killed { .. }
            | Happening::PowerLoss { .. }
            | Happening::Restored { .. }
            | Happening::ServicePowerLoss { .. }
            | Happening::Started { .. } => true,
            _ => false,
        });
        // Under a power loss the rule is that what was acknowledged was synced (§7-6).
        let rule = match run.crash {
            Crash::Machine | Crash::Restore => {
                "synced before the answer: a power loss keeps only what was synced (CONTRACT.md §3-2, §7-6)"
            }
            Crash::Process => "durable before the answer (CONTRACT.md §3-2)",
        };
        violations.push(Violation::new(
            forgotten,
            Some(operation.clone()),
            format!(
                "`{operation}` was accepted, but incarnation {incarnation} answered 404 for it: an accepted intent must be {rule}"
            ),
            proof.map(marked).collect(),
        ));
    }
}

/// A runtime started on a missing data dir (`missing_data_dir`) must exit with an error naming the
/// path (CONTRACT.md §2-4): one that starts afresh has forgotten everything it accepted.
fn missing_data_dir(run: &Run, violations: &mut Vec<Violation>) {
    use crate::run::driver::Refusal;
    for mark in &run.timeline {
        let Happening::MissingDataDir { incarnation, path, refusal } = &mark.happening else { continue };
        let did = match refusal {
            Refusal::Refused => continue,
            Refusal::StartedAfresh => {
                "printed its ready line: it started afresh with empty state, forgetting every operation it had accepted"
                    .to_owned()
            }
            Refusal::Hung => "neither exited nor printed its ready line within the ready deadline".to_owned(),
            Refusal::Unnamed { last_words } => {
                format!("exited, but its stderr does not name the path; its last words: {last_words:?}")
            }
        };
        let accepted: Vec<&str> = run
            .timeline
            .iter()
            .filter(|m| m.seq < mark.seq)
            .filter_map(|m| match &m.happening {
                Happening::Answered { operation, .. } => Some(operation.as_str()),
                _ => None,
            })
            .collect();
        violations.push(Violation::new(
            breach!(IntentDurable, "§2-4"),
            None,
            format!(
                "incarnation {incarnation} was started with its data dir `{path}` missing (the harness had hidden it) and {did}; expected it to exit with an error naming the path (CONTRACT.md §2-4). Accepted before: {}",
                if accepted.is_empty() { "nothing".to_owned() } else { accepted.join(", ") }
            ),
            run
                .timeline
                .iter()
                .filter(|m| m.seq <= mark.seq)
                .filter(|m| {
                    matches!(
                        m.happening,
                        Happening::Answered { .. }
                            | Happening::Killed { .. }
                            | Happening::Started { .. }
                            | Happening::MissingDataDir { .. }
                    )
                })
                .map(marked)
                .collect(),
        ));
    }
}

/// `idempotent_submission`: each resubmission and malformed submission got the answer the
/// contract requires.
pub(super) fn idempotent_submission(run: &Run, violations: &mut Vec<Violation>) {
    for mark in &run.timeline {
        let Happening::Resubmitted { operation, submission, answer, read_after, .. } = &mark.happening else {
            continue;
        };
        // A runtime that died meanwhile is reported by the abort; its silence proves nothing more.
        if answer.status.is_none() && run.aborted.is_some() {
            continue;
        }
        let id = operation.as_deref().or(submission.malformed_id());
        let named = id.map(|id| format!("`{id}`")).unwrap_or_else(|| "a submission".to_owned());
        let expected = submission.expected_status();
        let problem = match answer.status {
            None => Some(format!("expected {expected}, got {}", answer.body)),
            Some(status) if status != expected => Some(format!("expected {expected}, got {}", answer.describe())),
            Some(_) => match (expected, serde_json::from_str::<Value>(&answer.body)) {
                (200, Ok(body))
                    if body.get("operation_id").and_then(Value::as_str) == id
                        && body
                            .get("execution")
                            .is_some_and(|e| serde_json::from_value::<ExecutionState>(e.clone()).is_ok()) =>
                {
                    None
                }
                (200, _) => Some(format!(
                    "expected 200 with {{\"operation_id\": \"{}\", \"execution\": <state>}}, got {}",
                    id.unwrap_or_default(),
                    answer.describe()
                )),
                (_, Ok(body)) if body.get("error").is_some_and(Value::is_string) => None,
                _ => Some(format!("expected {expected} with {{\"error\": \"…\"}}, got {}", answer.describe())),
            },
        };
        let created = read_after.as_ref().filter(|r| r.status != Some(404)).map(|r| {
            format!(
                "; afterwards `{}` reads as {} instead of 404: the refused submission created it",
                id.unwrap_or_default(),
                r.describe()
            )
        });
        if problem.is_none() && created.is_none() {
            continue;
        }
        let resubmitted = match submission {
            Resubmission::Same | Resubmission::Equivalent => breach!(IdempotentSubmission, "§3-3"),
            Resubmission::Different => breach!(IdempotentSubmission, "§3-4"),
            _ => breach!(IdempotentSubmission, "§3-5"),
        };
        let why = match submission {
            Resubmission::Same | Resubmission::Equivalent => {
                "a submission is idempotent by operation id: the same body (destinations are a set, unknown fields ignored) gets 200 and changes nothing"
            }
            Resubmission::Different => {
                "the same operation_id with a different body is a conflict, 409, and changes nothing"
            }
            _ => "a malformed submission is refused with 400 and creates nothing",
        };
        violations.push(Violation::new(
            resubmitted,
            operation.clone(),
            format!(
                "{named} submitted with {}: {}{} ({why}; CONTRACT.md section 3)",
                submission.describe(),
                problem.unwrap_or_else(|| "answered as expected".to_owned()),
                created.unwrap_or_default()
            ),
            vec![marked(mark)],
        ));
    }
}
