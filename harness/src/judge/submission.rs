//! The submission family, judged from the timeline rather than the ledgers: an accepted intent is
//! never forgotten, and submission is idempotent by operation id (CONTRACT.md section 3).

use super::verdict::Violation;
use crate::model::invariant::Invariant;
use crate::run::client::{ExecutionState, Resubmission};
use crate::run::driver::{Happening, Mark, Run};
use crate::run::trace::describe_mark;
use serde_json::Value;
use std::collections::BTreeSet;

fn marked(mark: &Mark) -> String {
    format!("#{} {}", mark.seq, describe_mark(mark))
}

/// `intent_durable`: every `404` for an operation the runtime had accepted, one violation per
/// operation, with the acceptance and each time it was not known as evidence.
pub(super) fn intent_durable(run: &Run, violations: &mut Vec<Violation>) {
    let mut reported: BTreeSet<&str> = BTreeSet::new();
    for mark in &run.timeline {
        let Happening::Forgotten { operation, incarnation, .. } = &mark.happening else { continue };
        if !reported.insert(operation.as_str()) {
            continue;
        }
        let proof = run.timeline.iter().filter(|m| match &m.happening {
            Happening::Answered { operation: o, .. } | Happening::Forgotten { operation: o, .. } => o == operation,
            Happening::KillPoint { operation: o, .. } => o == operation,
            Happening::Killed { .. } | Happening::Started { .. } => true,
            _ => false,
        });
        violations.push(Violation {
            invariant: Invariant::IntentDurable,
            operation: Some(operation.clone()),
            message: format!(
                "`{operation}` was accepted, but incarnation {incarnation} answered 404 for it: an accepted intent must be durable before the answer (CONTRACT.md section 3)"
            ),
            evidence: proof.map(marked).collect(),
        });
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
        let why = match submission {
            Resubmission::Same | Resubmission::Equivalent => {
                "a submission is idempotent by operation id: the same body (destinations are a set, unknown fields ignored) gets 200 and changes nothing"
            }
            Resubmission::Different => {
                "the same operation_id with a different body is a conflict, 409, and changes nothing"
            }
            _ => "a malformed submission is refused with 400 and creates nothing",
        };
        violations.push(Violation {
            invariant: Invariant::IdempotentSubmission,
            operation: operation.clone(),
            message: format!(
                "{named} submitted with {}: {}{} ({why}; CONTRACT.md section 3)",
                submission.describe(),
                problem.unwrap_or_else(|| "answered as expected".to_owned()),
                created.unwrap_or_default()
            ),
            evidence: vec![marked(mark)],
        });
    }
}
