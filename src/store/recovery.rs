//! Recovery on start: what the previous incarnation left in flight.

use std::time::SystemTime;

use anyhow::Result;
use rusqlite::params;

use super::execution::transition;
use super::sql::{append_audit, epoch_millis};
use super::{Recovered, Store};
use crate::model::{AuditEvent, DeliveryState, ExecutionState};

impl Store {
    /// Run once at start, before anything else touches the store. The previous incarnation may have
    /// died with an attempt in flight (`DISPATCHED`) or a delivery being sent (`SENT`), without
    /// learning how either ended.
    pub fn recover_interrupted(&self, now: SystemTime) -> Result<Recovered> {
        self.write(|tx| {
            let dispatched: Vec<(String, u32)> = tx
                .prepare_cached(
                    "SELECT operation_id, attempts FROM agent_operations
                     WHERE execution_state = ?1 ORDER BY rowid",
                )?
                .query_map([ExecutionState::Dispatched], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            for (id, attempt) in &dispatched {
                transition(tx, id, &[ExecutionState::Dispatched], ExecutionState::Unknown)?;
                append_audit(
                    tx,
                    id,
                    AuditEvent::Unknown,
                    &format!("attempt {attempt} was in flight when the runtime stopped"),
                )?;
            }

            let resend: Vec<(String, String)> = tx
                .prepare_cached(
                    "SELECT d.operation_id, d.destination
                     FROM deliveries d JOIN agent_operations o USING (operation_id)
                     WHERE d.state = ?1 ORDER BY o.rowid, d.destination",
                )?
                .query_map([DeliveryState::Sent], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            tx.prepare_cached("UPDATE deliveries SET next_attempt_at = ?1 WHERE state = ?2")?
                .execute(params![epoch_millis(now), DeliveryState::Sent])?;

            Ok(Recovered { unknown: dispatched.into_iter().map(|(id, _)| id).collect(), resend })
        })
    }
}
