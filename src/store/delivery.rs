//! The delivery state machine: which deliveries are due, and every transition of one.

use std::time::SystemTime;

use anyhow::{Context, Result, bail};
use rusqlite::{Connection, OptionalExtension, params};

use super::Store;
use super::sql::{append_audit, delivery_from_row, epoch_millis, from_epoch_millis};
use crate::model::{AuditEvent, Delivery, DeliveryState, Operation};

impl Store {
    /// Deliveries to send now: waiting ones whose time has come, and ones left `SENT` by a
    /// previous incarnation. Ordered by operation creation, then destination.
    pub fn due_deliveries(&self, now: SystemTime) -> Result<Vec<Delivery>> {
        let conn = self.conn();
        let mut statement = conn.prepare_cached(
            "SELECT d.operation_id, d.destination, d.state, d.attempts, d.idempotency_key,
                    d.last_error
             FROM deliveries d JOIN agent_operations o USING (operation_id)
             WHERE d.state IN (?1, ?2) AND d.next_attempt_at <= ?3
             ORDER BY o.rowid, d.destination",
        )?;
        let deliveries = statement
            .query_map(params![DeliveryState::Pending, DeliveryState::Sent, epoch_millis(now)], delivery_from_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(deliveries)
    }

    /// When each operation's earliest waiting delivery is due, for the operations that have one.
    pub fn delivery_schedule(&self) -> Result<Vec<(String, SystemTime)>> {
        let conn = self.conn();
        let mut statement = conn.prepare_cached(
            "SELECT operation_id, MIN(next_attempt_at) FROM deliveries
             WHERE state IN (?1, ?2) GROUP BY operation_id",
        )?;
        let schedule = statement
            .query_map(params![DeliveryState::Pending, DeliveryState::Sent], |row| {
                Ok((row.get(0)?, from_epoch_millis(row.get(1)?)))
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(schedule)
    }

    /// Durable before the send, so that a restart sends again (with the same key) instead of
    /// assuming the consumer got it.
    pub fn record_delivery_sent(&self, delivery: &Delivery, attempt: u32, idempotency_key: &str) -> Result<()> {
        self.write(|tx| {
            delivery_transition(tx, delivery, &[DeliveryState::Pending, DeliveryState::Sent], DeliveryState::Sent)?;
            tx.prepare_cached(
                "UPDATE deliveries SET attempts = ?3, idempotency_key = ?4
                 WHERE operation_id = ?1 AND destination = ?2",
            )?
            .execute(params![delivery.operation_id, delivery.destination, attempt, idempotency_key])?;
            append_audit(
                tx,
                &delivery.operation_id,
                AuditEvent::DeliverySent,
                &format!("{}: send {attempt}", delivery.destination),
            )
        })
    }

    pub fn record_delivery_acked(&self, delivery: &Delivery) -> Result<()> {
        self.write(|tx| {
            delivery_transition(tx, delivery, &[DeliveryState::Sent], DeliveryState::Acked)?;
            tx.prepare_cached(
                "UPDATE deliveries SET last_error = NULL
                 WHERE operation_id = ?1 AND destination = ?2",
            )?
            .execute(params![delivery.operation_id, delivery.destination])?;
            append_audit(tx, &delivery.operation_id, AuditEvent::DeliveryAcked, &delivery.destination)
        })
    }

    /// A send failed; the delivery waits until `at`.
    pub fn schedule_delivery_retry(&self, delivery: &Delivery, at: SystemTime, error: &str) -> Result<()> {
        self.write(|tx| {
            delivery_transition(tx, delivery, &[DeliveryState::Sent], DeliveryState::Pending)?;
            tx.prepare_cached(
                "UPDATE deliveries SET next_attempt_at = ?3, last_error = ?4
                 WHERE operation_id = ?1 AND destination = ?2",
            )?
            .execute(params![delivery.operation_id, delivery.destination, epoch_millis(at), error])?;
            append_audit(
                tx,
                &delivery.operation_id,
                AuditEvent::DeliveryRetry,
                &format!("{}: {error}", delivery.destination),
            )
        })
    }

    /// Moves a delivery's next send to `at` without counting a send: nothing was sent.
    pub fn postpone_delivery(&self, delivery: &Delivery, at: SystemTime) -> Result<()> {
        self.write(|tx| {
            tx.prepare_cached(
                "UPDATE deliveries SET next_attempt_at = ?3 WHERE operation_id = ?1 AND destination = ?2",
            )?
            .execute(params![delivery.operation_id, delivery.destination, epoch_millis(at)])?;
            Ok(())
        })
    }

    /// Gives up on a delivery: too many failed sends, or the policy forbids the destination.
    pub fn dead_letter(&self, delivery: &Delivery, error: &str) -> Result<()> {
        self.write(|tx| {
            delivery_transition(
                tx,
                delivery,
                &[DeliveryState::Pending, DeliveryState::Sent],
                DeliveryState::DeadLettered,
            )?;
            tx.prepare_cached("UPDATE deliveries SET last_error = ?3 WHERE operation_id = ?1 AND destination = ?2")?
                .execute(params![delivery.operation_id, delivery.destination, error])?;
            append_audit(
                tx,
                &delivery.operation_id,
                AuditEvent::DeliveryDeadLettered,
                &format!("{}: {error}", delivery.destination),
            )
        })
    }
}

/// Same as `transition`, for one delivery.
fn delivery_transition(tx: &Connection, delivery: &Delivery, from: &[DeliveryState], to: DeliveryState) -> Result<()> {
    let key = params![delivery.operation_id, delivery.destination];
    let current: DeliveryState = tx
        .prepare_cached("SELECT state FROM deliveries WHERE operation_id = ?1 AND destination = ?2")?
        .query_row(key, |row| row.get(0))
        .optional()?
        .with_context(|| format!("no delivery of {} to {}", delivery.operation_id, delivery.destination))?;
    if !from.contains(&current) {
        bail!(
            "delivery of {} to {} cannot become {}: it is {}",
            delivery.operation_id,
            delivery.destination,
            to.as_str(),
            current.as_str()
        );
    }
    tx.prepare_cached("UPDATE deliveries SET state = ?3 WHERE operation_id = ?1 AND destination = ?2")?
        .execute(params![delivery.operation_id, delivery.destination, to])?;
    Ok(())
}

/// One `PENDING` delivery per destination, due at once.
pub(super) fn write_deliveries(tx: &Connection, operation: &Operation, now: SystemTime, key: &str) -> Result<()> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO deliveries (operation_id, destination, state, attempts, next_attempt_at,
             idempotency_key)
         VALUES (?1, ?2, ?3, 0, ?4, ?5)",
    )?;
    for destination in &operation.destinations {
        insert.execute(params![operation.id, destination, DeliveryState::Pending, epoch_millis(now), key,])?;
    }
    Ok(())
}
