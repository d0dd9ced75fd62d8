//! Reads: for the worker's scheduling, the API's views and the monitoring signals. None writes,
//! so none goes through the fence.

use anyhow::Result;
use rusqlite::{Connection, OptionalExtension, params};

use super::sql::{DELIVERY_COLUMNS, OPERATION_COLUMNS, delivery_from_row, operation_from_row};
use super::{MonitoringFacts, Snapshot, Store};
use crate::model::{AuditEntry, AuditEvent, Delivery, ExecutionState, Operation};

impl Store {
    pub fn operation(&self, id: &str) -> Result<Option<Operation>> {
        read_operation(&self.conn(), id)
    }

    /// An operation with its deliveries and audit trail, read under one lock so that the three
    /// agree with each other.
    pub fn snapshot(&self, id: &str) -> Result<Option<Snapshot>> {
        let conn = self.conn();
        let Some(operation) = read_operation(&conn, id)? else {
            return Ok(None);
        };
        Ok(Some(Snapshot { deliveries: read_deliveries(&conn, id)?, audit: read_audit(&conn, id)?, operation }))
    }

    pub fn has_audit_event(&self, id: &str, event: AuditEvent) -> Result<bool> {
        let conn = self.conn();
        let found = conn
            .prepare_cached("SELECT 1 FROM audit WHERE operation_id = ?1 AND event = ?2 LIMIT 1")?
            .query_row(params![id, event.as_str()], |_| Ok(()))
            .optional()?;
        Ok(found.is_some())
    }

    /// The operations in `state` that the worker should act on (paused ones excepted), oldest
    /// first.
    pub fn operations_to_work(&self, state: ExecutionState) -> Result<Vec<Operation>> {
        let conn = self.conn();
        // rowid is insertion order: operations are never deleted, so it only grows.
        let mut statement = conn.prepare_cached(&format!(
            "SELECT {OPERATION_COLUMNS} FROM agent_operations
             WHERE execution_state = ?1 AND paused = 0 ORDER BY rowid"
        ))?;
        let operations = statement.query_map([state], operation_from_row)?.collect::<rusqlite::Result<_>>()?;
        Ok(operations)
    }

    pub fn monitoring_facts(&self) -> Result<MonitoringFacts> {
        let conn = self.conn();
        let now = conn.prepare_cached("SELECT julianday('now') * 86400.0")?.query_row([], |r| r.get(0))?;
        let operations = conn
            .prepare_cached("SELECT execution_state, paused, julianday(updated_at) * 86400.0 FROM agent_operations")?
            .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? != 0, r.get(2)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let deliveries = conn
            .prepare_cached("SELECT operation_id, destination, state FROM deliveries")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let audit = conn
            .prepare_cached("SELECT operation_id, event, detail, julianday(at) * 86400.0 FROM audit ORDER BY id")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut destinations: Vec<String> = conn
            .prepare_cached("SELECT destinations_json FROM agent_operations")?
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?
            .iter()
            .flat_map(|json| serde_json::from_str::<Vec<String>>(json).unwrap_or_default())
            .collect();
        destinations.sort();
        destinations.dedup();
        Ok(MonitoringFacts { now, operations, deliveries, audit, destinations })
    }
}

fn read_operation(conn: &Connection, id: &str) -> Result<Option<Operation>> {
    let operation = conn
        .prepare_cached(&format!("SELECT {OPERATION_COLUMNS} FROM agent_operations WHERE operation_id = ?1"))?
        .query_row([id], operation_from_row)
        .optional()?;
    Ok(operation)
}

/// An operation's deliveries, by destination.
fn read_deliveries(conn: &Connection, id: &str) -> Result<Vec<Delivery>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {DELIVERY_COLUMNS} FROM deliveries WHERE operation_id = ?1 ORDER BY destination"
    ))?;
    let deliveries = statement.query_map([id], delivery_from_row)?.collect::<rusqlite::Result<_>>()?;
    Ok(deliveries)
}

/// An operation's audit trail, oldest first.
fn read_audit(conn: &Connection, id: &str) -> Result<Vec<AuditEntry>> {
    let mut statement = conn.prepare_cached("SELECT event, detail FROM audit WHERE operation_id = ?1 ORDER BY id")?;
    let entries = statement
        .query_map([id], |row| Ok(AuditEntry { event: row.get(0)?, detail: row.get(1)? }))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(entries)
}
