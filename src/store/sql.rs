//! What every file of the store shares: SQLite's clock, the column lists and how a row becomes a
//! model type, the audit append, and the wall-clock times kept as integers.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use rusqlite::{Connection, Row, params};

use crate::model::{AuditEvent, Delivery, DeliveryState, ExecutionState, Operation, Tool, ToolKind};

/// SQLite's clock, for the human-readable timestamps.
pub(super) const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/// The columns `operation_from_row` reads, in its order.
pub(super) const OPERATION_COLUMNS: &str = "operation_id, tenant, actor, tool_name, tool_kind, \
     arguments_json, destinations_json, execution_state, paused, attempts, idempotency_key, \
     provider_ref, result_json, failure_reason, task_json, decision_id, maybe_sent";

/// The columns `delivery_from_row` reads, in its order.
pub(super) const DELIVERY_COLUMNS: &str = "operation_id, destination, state, attempts, idempotency_key, last_error";

pub(super) fn append_audit(tx: &Connection, id: &str, event: AuditEvent, detail: &str) -> Result<()> {
    tx.prepare_cached(&format!("INSERT INTO audit (operation_id, event, detail, at) VALUES (?1, ?2, ?3, {NOW})"))?
        .execute(params![id, event.as_str(), detail])?;
    Ok(())
}

pub(super) fn operation_from_row(row: &Row<'_>) -> rusqlite::Result<Operation> {
    Ok(Operation {
        id: row.get(0)?,
        tenant: row.get(1)?,
        actor: row.get(2)?,
        tool: match (row.get::<_, Option<String>>(3)?, row.get::<_, Option<ToolKind>>(4)?) {
            (Some(name), Some(kind)) => Some(Tool { name, kind }),
            _ => None,
        },
        arguments: json_column(row, 5)?,
        task: row.get::<_, Option<String>>(14)?.map(|text| parse_json(14, &text)).transpose()?,
        decision: row.get(15)?,
        destinations: json_column(row, 6)?,
        execution: row.get(7)?,
        paused: row.get(8)?,
        attempts: row.get(9)?,
        idempotency_key: row.get(10)?,
        provider_ref: row.get(11)?,
        result: row.get::<_, Option<String>>(12)?.map(|text| parse_json(12, &text)).transpose()?,
        failure_reason: row.get(13)?,
        outrun: crate::model::Outrun::of_column(row.get(16)?),
    })
}

pub(super) fn delivery_from_row(row: &Row<'_>) -> rusqlite::Result<Delivery> {
    Ok(Delivery {
        operation_id: row.get(0)?,
        destination: row.get(1)?,
        state: row.get(2)?,
        attempts: row.get(3)?,
        idempotency_key: row.get(4)?,
        last_error: row.get(5)?,
    })
}

fn json_column<T: serde::de::DeserializeOwned>(row: &Row<'_>, index: usize) -> rusqlite::Result<T> {
    parse_json(index, &row.get::<_, String>(index)?)
}

fn parse_json<T: serde::de::DeserializeOwned>(index: usize, text: &str) -> rusqlite::Result<T> {
    serde_json::from_str(text)
        .map_err(|error| rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(error)))
}

/// The states are stored as the contract spells them, so the file reads well in `sqlite3`.
macro_rules! text_column {
    ($type:ty) => {
        impl ToSql for $type {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::from(self.as_str()))
            }
        }

        impl FromSql for $type {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                let name = value.as_str()?;
                <$type>::from_name(name)
                    .ok_or_else(|| FromSqlError::Other(format!("unknown {} {name:?}", stringify!($type)).into()))
            }
        }
    };
}

text_column!(ExecutionState);
text_column!(DeliveryState);
text_column!(ToolKind);

pub(super) fn epoch_millis(time: SystemTime) -> i64 {
    let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX)
}

pub(super) fn from_epoch_millis(millis: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}
