//! Deciding a task: the model is asked which tool to call with which arguments, and its answer is
//! recorded before anything acts on it (CONTRACT.md §12-3).
//!
//! The model answers differently every time it is asked. So the decision is written down first,
//! in its own transaction, and every attempt, lookup and incarnation after that acts on the
//! recorded decision, never on a new answer: a crash between the model's answer and the record
//! loses only an answer nothing acted on, and asking again is then safe.

use std::time::Instant;

use anyhow::Result;

use super::Shared;
use crate::backoff::Task;
use crate::model::{AuditEvent, Operation};

impl Shared {
    /// Asks the model and records its decision for the task `operation`. `false`: no decision
    /// yet (the model could not answer); the operation waits and is asked about again later.
    pub(super) async fn decide(&self, operation: &mut Operation) -> Result<bool> {
        let id = operation.id.clone();
        let Some(task) = operation.task.clone() else { return Ok(true) };
        let answer = match &self.model {
            Some(model) => model.decide(&task).await,
            None => Err("KILLPOINT_MODEL_URL is not set: no model can decide this task".to_owned()),
        };
        match answer {
            Ok(decision) => {
                self.store.record_decision(&id, &decision)?;
                eprintln!("{id} decided {}: {} {}", decision.id, decision.tool.name, decision.arguments);
                operation.tool = Some(decision.tool);
                operation.arguments = decision.arguments;
                operation.decision = Some(decision.id);
                Ok(true)
            }
            Err(why) => {
                self.store.record_audit(&id, AuditEvent::ModelFailed, &why)?;
                let delay = self.backoff().failed(Task::Operation(id.clone()), Instant::now());
                eprintln!("{id} no decision: {why}; asking again in {delay:?}");
                Ok(false)
            }
        }
    }
}
