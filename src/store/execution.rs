//! Submission and the execution state machine: every transition of an operation, the success
//! with its outbox, and the writes only the broken variants make.

use std::time::SystemTime;

use anyhow::{Context, Result, bail};
use rusqlite::{Connection, OptionalExtension, params};

use super::delivery::write_deliveries;
use super::sql::{NOW, append_audit};
use super::{Store, Submitted};
use crate::model::{AuditEvent, Decision, Effect, ExecutionState, Operation, Outrun, Submission, ToolKind, Work};

/// How a submission's tool call or task is stored: a task has no tool until it is decided.
struct Columns<'a> {
    tool_name: Option<&'a str>,
    tool_kind: Option<ToolKind>,
    arguments: String,
    task: Option<String>,
    /// For the audit trail: "tool charge_card", "a task".
    what: String,
}

impl<'a> Columns<'a> {
    fn of(submission: &'a Submission) -> Result<Columns<'a>> {
        Ok(match submission.work().map_err(anyhow::Error::msg)? {
            Work::Call { tool, arguments } => Columns {
                tool_name: Some(&tool.name),
                tool_kind: Some(tool.kind),
                arguments: serde_json::to_string(arguments)?,
                task: None,
                what: format!("tool {}", tool.name),
            },
            Work::Task(task) => Columns {
                tool_name: None,
                tool_kind: None,
                arguments: "null".to_owned(),
                task: Some(serde_json::to_string(task)?),
                what: "a task for the model".to_owned(),
            },
        })
    }
}

impl Store {
    /// Records a new operation as `INTENT_RECORDED`, durable when this returns; or says how an
    /// earlier submission of the same id compares.
    pub fn submit(&self, submission: &Submission, request_hash: &str) -> Result<Submitted> {
        self.write(|tx| {
            let existing: Option<(String, ExecutionState)> = tx
                .prepare_cached(
                    "SELECT request_hash, execution_state FROM agent_operations
                     WHERE operation_id = ?1",
                )?
                .query_row([&submission.operation_id], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?;
            match existing {
                Some((hash, state)) if hash == request_hash => {
                    return Ok(Submitted::AlreadyKnown(state));
                }
                Some(_) => return Ok(Submitted::Conflict),
                None => {}
            }

            let work = Columns::of(submission)?;
            tx.prepare_cached(&format!(
                "INSERT INTO agent_operations (operation_id, tenant, actor, tool_name,
                         tool_kind, arguments_json, task_json, destinations_json, request_hash,
                         execution_state, idempotency_key, maybe_sent, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, {NOW}, {NOW})"
            ))?
            .execute(params![
                submission.operation_id,
                submission.tenant,
                submission.actor,
                work.tool_name,
                work.tool_kind,
                work.arguments,
                work.task,
                serde_json::to_string(&submission.destinations)?,
                request_hash,
                ExecutionState::IntentRecorded,
                self.provider_key(submission.idempotency_key()),
                // Accepted after a restore, it may be one the lost host sent (CONTRACT.md §13).
                match self.is_restored() {
                    true => Outrun::Resubmitted.column(),
                    false => Outrun::No.column(),
                },
            ])?;
            append_audit(
                tx,
                &submission.operation_id,
                AuditEvent::IntentRecorded,
                &format!("{} for {}/{}", work.what, submission.tenant, submission.actor),
            )?;
            Ok(Submitted::Created)
        })
    }
    /// Records the model's decision for a task, durable when this returns and before anything
    /// acts on it: from here on every attempt, lookup and incarnation acts on this decision only
    /// (CONTRACT.md §12-3). Refused if a decision is already recorded.
    pub fn record_decision(&self, id: &str, decision: &Decision) -> Result<()> {
        self.write(|tx| {
            let changed = tx
                .prepare_cached(
                    "UPDATE agent_operations SET tool_name = ?2, tool_kind = ?3, arguments_json = ?4, decision_id = ?5
                 WHERE operation_id = ?1 AND task_json IS NOT NULL AND decision_id IS NULL",
                )?
                .execute(params![
                    id,
                    decision.tool.name,
                    decision.tool.kind,
                    serde_json::to_string(&decision.arguments)?,
                    decision.id
                ])?;
            if changed != 1 {
                bail!("{id}: expected an undecided task to record a decision for, found none");
            }
            append_audit(
                tx,
                id,
                AuditEvent::Decided,
                &format!("{}: {} {}", decision.id, decision.tool.name, decision.arguments),
            )
        })
    }

    /// Forgets a task's decision and starts it again from `INTENT_RECORDED`, as an agent loop
    /// re-run from the top on restart does. For the deliberately broken `reask-on-recovery`
    /// variant, and nothing else.
    pub fn forget_decision(&self, id: &str) -> Result<()> {
        self.write(|tx| {
            tx.prepare_cached(
                "UPDATE agent_operations SET tool_name = NULL, tool_kind = NULL, decision_id = NULL,
                     execution_state = ?2, provider_ref = NULL
                 WHERE operation_id = ?1",
            )?
            .execute(params![id, ExecutionState::IntentRecorded])?;
            append_audit(tx, id, AuditEvent::IntentRecorded, "the agent loop starts again")
        })
    }

    /// Appends to the audit trail without changing any state.
    pub fn record_audit(&self, id: &str, event: AuditEvent, detail: &str) -> Result<()> {
        self.write(|tx| append_audit(tx, id, event, detail))
    }

    /// Write-ahead: the attempt is durable before the provider sees it, so whatever happens next,
    /// the next incarnation knows a request may have been sent.
    pub fn record_dispatch(&self, id: &str, attempt: u32, idempotency_key: &str) -> Result<()> {
        self.write(|tx| {
            transition(tx, id, &[ExecutionState::IntentRecorded, ExecutionState::Unknown], ExecutionState::Dispatched)?;
            tx.prepare_cached(
                "UPDATE agent_operations SET attempts = ?2, idempotency_key = ?3
                 WHERE operation_id = ?1",
            )?
            .execute(params![id, attempt, idempotency_key])?;
            append_audit(tx, id, AuditEvent::Dispatched, &format!("attempt {attempt}"))
        })
    }

    /// The transactional outbox: `SUCCEEDED`, what the provider returned, and one `PENDING`
    /// delivery per destination, all or nothing. There is no instant at which the success is
    /// recorded and a delivery is not.
    pub fn record_success(&self, operation: &Operation, effect: &Effect, now: SystemTime) -> Result<()> {
        self.write(|tx| {
            write_success(tx, &operation.id, effect)?;
            write_deliveries(tx, operation, now, &self.delivery_key(operation))
        })
    }

    /// Replaces an operation with a new submission and starts it again from `INTENT_RECORDED`,
    /// its deliveries gone. For the deliberately broken `submit-upsert` variant, and nothing else:
    /// a submission must never change an operation that exists.
    pub fn replace(&self, submission: &Submission, request_hash: &str) -> Result<()> {
        self.write(|tx| {
            tx.prepare_cached("DELETE FROM deliveries WHERE operation_id = ?1")?.execute([&submission.operation_id])?;
            let work = Columns::of(submission)?;
            tx.prepare_cached(&format!(
                "UPDATE agent_operations SET tenant = ?2, actor = ?3, tool_name = ?4, tool_kind = ?5,
                         arguments_json = ?6, destinations_json = ?7, request_hash = ?8,
                         execution_state = ?9, paused = 0, attempts = 0, provider_ref = NULL,
                         result_json = NULL, failure_reason = NULL, task_json = ?10, decision_id = NULL,
                         updated_at = {NOW}
                     WHERE operation_id = ?1"
            ))?
            .execute(params![
                submission.operation_id,
                submission.tenant,
                submission.actor,
                work.tool_name,
                work.tool_kind,
                work.arguments,
                serde_json::to_string(&submission.destinations)?,
                request_hash,
                ExecutionState::IntentRecorded,
                work.task,
            ])?;
            append_audit(tx, &submission.operation_id, AuditEvent::IntentRecorded, "replaced by a resubmission")
        })
    }

    /// Only the first half of `record_success`. For the deliberately broken `split-outbox`
    /// variant, and nothing else.
    pub fn record_success_without_deliveries(&self, id: &str, effect: &Effect) -> Result<()> {
        self.write(|tx| write_success(tx, id, effect))
    }

    /// Replaces a recorded success's reference and result. For the deliberately broken
    /// `result-before-call` variant, and nothing else: it records a provisional success before the
    /// provider is called, and the real one over it after.
    pub fn overwrite_effect(&self, id: &str, effect: &Effect) -> Result<()> {
        self.write(|tx| {
            tx.prepare_cached(
                "UPDATE agent_operations SET provider_ref = ?2, result_json = ?3 WHERE operation_id = ?1",
            )?
            .execute(params![id, effect.provider_ref, serde_json::to_string(&effect.result)?])?;
            Ok(())
        })
    }

    /// Only the second half of `record_success`. For the deliberately broken `split-outbox`
    /// variant, and nothing else.
    pub fn enqueue_deliveries(&self, operation: &Operation, now: SystemTime) -> Result<()> {
        self.write(|tx| write_deliveries(tx, operation, now, &self.delivery_key(operation)))
    }

    /// Overwrites the attempt count alone. For the deliberately broken `count-refused-attempt`
    /// variant, and nothing else: the reference counts an attempt only in `record_dispatch`.
    pub fn set_attempts(&self, id: &str, attempts: u32) -> Result<()> {
        self.write(|tx| {
            tx.prepare_cached("UPDATE agent_operations SET attempts = ?2 WHERE operation_id = ?1")?
                .execute(params![id, attempts])?;
            Ok(())
        })
    }

    /// The operation whose attempt was dispatched last, of all operations, if any was. For the
    /// deliberately broken `one-dispatch-slot` variant, and nothing else.
    pub fn last_dispatched(&self) -> Result<Option<String>> {
        let conn = self.conn();
        let id = conn
            .prepare_cached("SELECT operation_id FROM audit WHERE event = ?1 ORDER BY id DESC LIMIT 1")?
            .query_row([AuditEvent::Dispatched.as_str()], |row| row.get(0))
            .optional()?;
        Ok(id)
    }

    /// Puts a `DISPATCHED` or `UNKNOWN` operation back to `INTENT_RECORDED`, as if no attempt had
    /// ever been sent (its attempt count stays). For the deliberately broken `one-dispatch-slot`
    /// and `restart-after-failed-lookup` variants, and nothing else: a request that may have been
    /// sent must be looked up, never forgotten.
    pub fn take_for_never_dispatched(&self, id: &str, why: &str) -> Result<()> {
        self.write(|tx| {
            transition(tx, id, &[ExecutionState::Dispatched, ExecutionState::Unknown], ExecutionState::IntentRecorded)?;
            append_audit(tx, id, AuditEvent::IntentRecorded, why)
        })
    }

    /// `FAILED` for good. `event` says who decided: the provider, the policy, or lookups that kept
    /// finding no effect.
    pub fn record_failure(&self, id: &str, event: AuditEvent, reason: &str) -> Result<()> {
        self.write(|tx| {
            transition(
                tx,
                id,
                &[ExecutionState::IntentRecorded, ExecutionState::Dispatched, ExecutionState::Unknown],
                ExecutionState::Failed,
            )?;
            tx.prepare_cached("UPDATE agent_operations SET failure_reason = ?2 WHERE operation_id = ?1")?
                .execute(params![id, reason])?;
            append_audit(tx, id, event, reason)
        })
    }

    /// The attempt went unanswered.
    pub fn record_unknown(&self, id: &str, reason: &str) -> Result<()> {
        self.write(|tx| {
            transition(tx, id, &[ExecutionState::Dispatched], ExecutionState::Unknown)?;
            append_audit(tx, id, AuditEvent::Unknown, reason)
        })
    }

    /// Stops all work on an `UNKNOWN` operation until a person steps in.
    pub fn pause(&self, id: &str, reason: &str) -> Result<()> {
        self.write(|tx| {
            transition(tx, id, &[ExecutionState::Unknown], ExecutionState::Unknown)?;
            tx.prepare_cached("UPDATE agent_operations SET paused = 1 WHERE operation_id = ?1")?.execute([id])?;
            append_audit(tx, id, AuditEvent::Paused, reason)
        })
    }
}

/// Moves an operation to `to`, refusing if it is not in one of `from`: the state machine, enforced
/// where the state is kept. A refusal is a bug in the caller, never something to work around.
pub(super) fn transition(tx: &Connection, id: &str, from: &[ExecutionState], to: ExecutionState) -> Result<()> {
    let current: ExecutionState = tx
        .prepare_cached("SELECT execution_state FROM agent_operations WHERE operation_id = ?1")?
        .query_row([id], |row| row.get(0))
        .optional()?
        .with_context(|| format!("operation {id} does not exist"))?;
    if !from.contains(&current) {
        bail!(
            "operation {id} cannot become {}: it is {}, not one of {}",
            to.as_str(),
            current.as_str(),
            from.iter().map(|state| state.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    tx.prepare_cached(&format!(
        "UPDATE agent_operations SET execution_state = ?2, updated_at = {NOW}
             WHERE operation_id = ?1"
    ))?
    .execute(params![id, to])?;
    Ok(())
}

fn write_success(tx: &Connection, id: &str, effect: &Effect) -> Result<()> {
    transition(tx, id, &[ExecutionState::Dispatched, ExecutionState::Unknown], ExecutionState::Succeeded)?;
    tx.prepare_cached("UPDATE agent_operations SET provider_ref = ?2, result_json = ?3 WHERE operation_id = ?1")?
        .execute(params![id, effect.provider_ref, serde_json::to_string(&effect.result)?])?;
    append_audit(tx, id, AuditEvent::Succeeded, &format!("provider_ref {}", effect.provider_ref))
}
