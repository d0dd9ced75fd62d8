//! The durable state of the runtime: one SQLite file, `$KILLPOINT_DATA_DIR/runtime.sqlite3`.
//!
//! Everything the next incarnation needs is here and nowhere else: operations (the execution state
//! machine), deliveries (one delivery state machine per destination, which doubles as the
//! transactional outbox) and the audit trail. All SQL lives in this module; callers speak in
//! domain terms (`record_dispatch`, `record_success`, …).
//!
//! Every write is one `BEGIN IMMEDIATE` transaction that checks the state it starts from, so a
//! transition the state machine does not allow is an error instead of a silent overwrite. Every
//! change of state appends to the audit trail in the same transaction.
//!
//! The store is synchronous and behind one mutex. Its calls are short (one transaction, one fsync),
//! and a `std::sync::MutexGuard` cannot be held across an `.await`, so no task can sit on the store
//! while it waits for the network.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};

use crate::model::{
    AuditEntry, AuditEvent, Delivery, DeliveryState, Effect, ExecutionState, Operation, Submission, Tool, ToolKind,
};

/// Bumped whenever the schema changes; a store written by another version is refused rather than
/// misread.
const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE agent_operations (
    operation_id      TEXT PRIMARY KEY,
    tenant            TEXT NOT NULL,
    actor             TEXT NOT NULL,
    tool_name         TEXT NOT NULL,
    tool_kind         TEXT NOT NULL,
    arguments_json    TEXT NOT NULL,
    destinations_json TEXT NOT NULL,
    -- Fingerprint of the submitted body: a resubmission must match it (see request_hash.rs).
    request_hash      TEXT NOT NULL,
    execution_state   TEXT NOT NULL,
    paused            INTEGER NOT NULL DEFAULT 0,
    attempts          INTEGER NOT NULL DEFAULT 0,
    idempotency_key   TEXT NOT NULL,
    provider_ref      TEXT,
    -- The article keeps a result *reference* and no copies of the response in queue messages.
    -- The result is kept once, here; every delivery reads it from this row when it is sent.
    result_json       TEXT,
    failure_reason    TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL
);

CREATE TABLE deliveries (
    operation_id    TEXT NOT NULL REFERENCES agent_operations (operation_id),
    destination     TEXT NOT NULL,
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    -- Milliseconds since the Unix epoch. Wall-clock time, because the schedule must outlive the
    -- process that wrote it.
    next_attempt_at INTEGER NOT NULL,
    idempotency_key TEXT NOT NULL,
    last_error      TEXT,
    PRIMARY KEY (operation_id, destination)
);

CREATE INDEX deliveries_by_due_time ON deliveries (state, next_attempt_at);

CREATE TABLE audit (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    operation_id TEXT NOT NULL REFERENCES agent_operations (operation_id),
    event        TEXT NOT NULL,
    detail       TEXT NOT NULL,
    at           TEXT NOT NULL
);

CREATE INDEX audit_by_operation ON audit (operation_id, id);

-- The fence (CONTRACT.md §9): the newest incarnation that opened the store. Every write
-- transaction checks that it is still its own, so an outlived incarnation commits nothing.
CREATE TABLE fence (
    only        INTEGER PRIMARY KEY CHECK (only = 1),
    incarnation INTEGER NOT NULL
);
";

/// SQLite's clock, for the human-readable timestamps.
const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/// The columns `operation_from_row` reads, in its order.
const OPERATION_COLUMNS: &str = "operation_id, tenant, actor, tool_name, tool_kind, \
     arguments_json, destinations_json, execution_state, paused, attempts, idempotency_key, \
     provider_ref, result_json, failure_reason";

/// The columns `delivery_from_row` reads, in its order.
const DELIVERY_COLUMNS: &str = "operation_id, destination, state, attempts, idempotency_key, last_error";

/// What a submission did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitted {
    /// A new operation, now durable.
    Created,
    /// The same body was submitted before; nothing changed.
    AlreadyKnown(ExecutionState),
    /// The operation id is taken by a different body.
    Conflict,
}

/// What recovery found after the previous incarnation ended.
#[derive(Debug)]
pub struct Recovered {
    /// Operations that were `DISPATCHED` and are now `UNKNOWN`.
    pub unknown: Vec<String>,
    /// Deliveries that were `SENT` and are due again now, as (operation, destination).
    pub resend: Vec<(String, String)>,
}

/// Everything the API shows about one operation.
#[derive(Debug)]
pub struct Snapshot {
    pub operation: Operation,
    pub deliveries: Vec<Delivery>,
    pub audit: Vec<AuditEntry>,
}

pub struct Store {
    conn: Mutex<Connection>,
    /// This incarnation: the fence every write checks. `None` only for the deliberately broken
    /// `no-store-fence` variant.
    incarnation: Option<u32>,
}

impl Store {
    /// Opens (creating if needed) `runtime.sqlite3` in `data_dir` for `incarnation`, and raises the
    /// fence to it: from this commit on, an older incarnation's writes fail.
    pub fn open(data_dir: &Path, incarnation: u32) -> Result<Store> {
        std::fs::create_dir_all(data_dir).with_context(|| format!("creating data directory {}", data_dir.display()))?;
        let path = data_dir.join("runtime.sqlite3");
        let mut conn = Connection::open(&path).with_context(|| format!("opening {}", path.display()))?;

        // WAL: a commit is one append to the log. A SIGKILL never loses a committed WAL
        // transaction whatever `synchronous` says, because the written pages are already in the
        // OS's cache; `FULL` additionally fsyncs every commit, which is what survives a power cut.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // Another connection (an operator's sqlite3 shell, say) may hold the write lock briefly.
        conn.busy_timeout(Duration::from_secs(5))?;

        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
        match version {
            0 => {
                tx.execute_batch(SCHEMA)?;
                tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
            }
            SCHEMA_VERSION => {}
            other => {
                bail!("{} has schema version {other}; this runtime reads version {SCHEMA_VERSION}", path.display())
            }
        }
        let newest: Option<u32> = tx.query_row("SELECT incarnation FROM fence", [], |row| row.get(0)).optional()?;
        if let Some(newest) = newest.filter(|newest| *newest > incarnation) {
            crate::fence::exit(&format!(
                "incarnation {newest} has already opened {}; this is incarnation {incarnation}",
                path.display()
            ));
        }
        tx.execute(
            "INSERT INTO fence (only, incarnation) VALUES (1, ?1)
             ON CONFLICT (only) DO UPDATE SET incarnation = excluded.incarnation",
            [incarnation],
        )?;
        tx.commit()?;

        Ok(Store { conn: Mutex::new(conn), incarnation: Some(incarnation) })
    }

    /// The store without its fence check. For the deliberately broken `no-store-fence` variant,
    /// and nothing else: an outlived incarnation's writes then land.
    pub fn unfenced(self) -> Store {
        Store { incarnation: None, ..self }
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave half a transaction behind: an uncommitted
        // `Transaction` rolls back when dropped. So a poisoned lock still guards a consistent store.
        self.conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `work` in one `BEGIN IMMEDIATE` transaction and commits it. IMMEDIATE takes the write
    /// lock up front, so a transaction never fails halfway with "database is locked" after it has
    /// read the state it is about to change.
    ///
    /// The fence is checked inside the same transaction, under the write lock: a newer incarnation
    /// cannot raise it between the check and the commit.
    fn write<T>(&self, work: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let Some(incarnation) = self.incarnation {
            let newest: u32 = tx.query_row("SELECT incarnation FROM fence", [], |row| row.get(0))?;
            if newest != incarnation {
                crate::fence::exit(&format!(
                    "the store is fenced by incarnation {newest}; this is incarnation {incarnation}"
                ));
            }
        }
        let value = work(&tx)?;
        tx.commit()?;
        Ok(value)
    }

    // ---- submission and reading -----------------------------------------------------------

    /// Records a new operation as `INTENT_RECORDED`, durable when this returns; or says how an
    /// earlier submission of the same id compares.
    pub fn submit(&self, submission: &Submission, request_hash: &str) -> Result<Submitted> {
        self.write(|tx| {
            let existing: Option<(String, ExecutionState)> = tx
                .query_row(
                    "SELECT request_hash, execution_state FROM agent_operations
                     WHERE operation_id = ?1",
                    [&submission.operation_id],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()?;
            match existing {
                Some((hash, state)) if hash == request_hash => {
                    return Ok(Submitted::AlreadyKnown(state));
                }
                Some(_) => return Ok(Submitted::Conflict),
                None => {}
            }

            tx.execute(
                &format!(
                    "INSERT INTO agent_operations (operation_id, tenant, actor, tool_name,
                         tool_kind, arguments_json, destinations_json, request_hash,
                         execution_state, idempotency_key, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, {NOW}, {NOW})"
                ),
                params![
                    submission.operation_id,
                    submission.tenant,
                    submission.actor,
                    submission.tool.name,
                    submission.tool.kind,
                    serde_json::to_string(&submission.arguments)?,
                    serde_json::to_string(&submission.destinations)?,
                    request_hash,
                    ExecutionState::IntentRecorded,
                    submission.idempotency_key(),
                ],
            )?;
            append_audit(
                tx,
                &submission.operation_id,
                AuditEvent::IntentRecorded,
                &format!("tool {} for {}/{}", submission.tool.name, submission.tenant, submission.actor),
            )?;
            Ok(Submitted::Created)
        })
    }

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
            .query_row(
                "SELECT 1 FROM audit WHERE operation_id = ?1 AND event = ?2 LIMIT 1",
                params![id, event.as_str()],
                |_| Ok(()),
            )
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

    // ---- recovery -------------------------------------------------------------------------

    /// Run once at start, before anything else touches the store. The previous incarnation may have
    /// died with an attempt in flight (`DISPATCHED`) or a delivery being sent (`SENT`), without
    /// learning how either ended.
    pub fn recover_interrupted(&self, now: SystemTime) -> Result<Recovered> {
        self.write(|tx| {
            let dispatched: Vec<(String, u32)> = tx
                .prepare(
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
                .prepare(
                    "SELECT d.operation_id, d.destination
                     FROM deliveries d JOIN agent_operations o USING (operation_id)
                     WHERE d.state = ?1 ORDER BY o.rowid, d.destination",
                )?
                .query_map([DeliveryState::Sent], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            tx.execute(
                "UPDATE deliveries SET next_attempt_at = ?1 WHERE state = ?2",
                params![epoch_millis(now), DeliveryState::Sent],
            )?;

            Ok(Recovered { unknown: dispatched.into_iter().map(|(id, _)| id).collect(), resend })
        })
    }

    // ---- execution ------------------------------------------------------------------------

    /// Appends to the audit trail without changing any state.
    pub fn record_audit(&self, id: &str, event: AuditEvent, detail: &str) -> Result<()> {
        self.write(|tx| append_audit(tx, id, event, detail))
    }

    /// Write-ahead: the attempt is durable before the provider sees it, so whatever happens next,
    /// the next incarnation knows a request may have been sent.
    pub fn record_dispatch(&self, id: &str, attempt: u32, idempotency_key: &str) -> Result<()> {
        self.write(|tx| {
            transition(tx, id, &[ExecutionState::IntentRecorded, ExecutionState::Unknown], ExecutionState::Dispatched)?;
            tx.execute(
                "UPDATE agent_operations SET attempts = ?2, idempotency_key = ?3
                 WHERE operation_id = ?1",
                params![id, attempt, idempotency_key],
            )?;
            append_audit(tx, id, AuditEvent::Dispatched, &format!("attempt {attempt}"))
        })
    }

    /// The transactional outbox: `SUCCEEDED`, what the provider returned, and one `PENDING`
    /// delivery per destination, all or nothing. There is no instant at which the success is
    /// recorded and a delivery is not.
    pub fn record_success(&self, operation: &Operation, effect: &Effect, now: SystemTime) -> Result<()> {
        self.write(|tx| {
            write_success(tx, &operation.id, effect)?;
            write_deliveries(tx, operation, now)
        })
    }

    /// Replaces an operation with a new submission and starts it again from `INTENT_RECORDED`,
    /// its deliveries gone. For the deliberately broken `submit-upsert` variant, and nothing else:
    /// a submission must never change an operation that exists.
    pub fn replace(&self, submission: &Submission, request_hash: &str) -> Result<()> {
        self.write(|tx| {
            tx.execute("DELETE FROM deliveries WHERE operation_id = ?1", [&submission.operation_id])?;
            tx.execute(
                &format!(
                    "UPDATE agent_operations SET tenant = ?2, actor = ?3, tool_name = ?4, tool_kind = ?5,
                         arguments_json = ?6, destinations_json = ?7, request_hash = ?8,
                         execution_state = ?9, paused = 0, attempts = 0, provider_ref = NULL,
                         result_json = NULL, failure_reason = NULL, updated_at = {NOW}
                     WHERE operation_id = ?1"
                ),
                params![
                    submission.operation_id,
                    submission.tenant,
                    submission.actor,
                    submission.tool.name,
                    submission.tool.kind,
                    serde_json::to_string(&submission.arguments)?,
                    serde_json::to_string(&submission.destinations)?,
                    request_hash,
                    ExecutionState::IntentRecorded,
                ],
            )?;
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
            tx.execute(
                "UPDATE agent_operations SET provider_ref = ?2, result_json = ?3 WHERE operation_id = ?1",
                params![id, effect.provider_ref, serde_json::to_string(&effect.result)?],
            )?;
            Ok(())
        })
    }

    /// Only the second half of `record_success`. For the deliberately broken `split-outbox`
    /// variant, and nothing else.
    pub fn enqueue_deliveries(&self, operation: &Operation, now: SystemTime) -> Result<()> {
        self.write(|tx| write_deliveries(tx, operation, now))
    }

    /// Overwrites the attempt count alone. For the deliberately broken `count-refused-attempt`
    /// variant, and nothing else: the reference counts an attempt only in `record_dispatch`.
    pub fn set_attempts(&self, id: &str, attempts: u32) -> Result<()> {
        self.write(|tx| {
            tx.execute("UPDATE agent_operations SET attempts = ?2 WHERE operation_id = ?1", params![id, attempts])?;
            Ok(())
        })
    }

    /// The operation whose attempt was dispatched last, of all operations, if any was. For the
    /// deliberately broken `one-dispatch-slot` variant, and nothing else.
    pub fn last_dispatched(&self) -> Result<Option<String>> {
        let conn = self.conn();
        let id = conn
            .query_row(
                "SELECT operation_id FROM audit WHERE event = ?1 ORDER BY id DESC LIMIT 1",
                [AuditEvent::Dispatched.as_str()],
                |row| row.get(0),
            )
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
            tx.execute("UPDATE agent_operations SET failure_reason = ?2 WHERE operation_id = ?1", params![id, reason])?;
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
            tx.execute("UPDATE agent_operations SET paused = 1 WHERE operation_id = ?1", [id])?;
            append_audit(tx, id, AuditEvent::Paused, reason)
        })
    }

    // ---- delivery -------------------------------------------------------------------------

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
            tx.execute(
                "UPDATE deliveries SET attempts = ?3, idempotency_key = ?4
                 WHERE operation_id = ?1 AND destination = ?2",
                params![delivery.operation_id, delivery.destination, attempt, idempotency_key],
            )?;
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
            tx.execute(
                "UPDATE deliveries SET last_error = NULL
                 WHERE operation_id = ?1 AND destination = ?2",
                params![delivery.operation_id, delivery.destination],
            )?;
            append_audit(tx, &delivery.operation_id, AuditEvent::DeliveryAcked, &delivery.destination)
        })
    }

    /// A send failed; the delivery waits until `at`.
    pub fn schedule_delivery_retry(&self, delivery: &Delivery, at: SystemTime, error: &str) -> Result<()> {
        self.write(|tx| {
            delivery_transition(tx, delivery, &[DeliveryState::Sent], DeliveryState::Pending)?;
            tx.execute(
                "UPDATE deliveries SET next_attempt_at = ?3, last_error = ?4
                 WHERE operation_id = ?1 AND destination = ?2",
                params![delivery.operation_id, delivery.destination, epoch_millis(at), error],
            )?;
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
            tx.execute(
                "UPDATE deliveries SET next_attempt_at = ?3 WHERE operation_id = ?1 AND destination = ?2",
                params![delivery.operation_id, delivery.destination, epoch_millis(at)],
            )?;
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
            tx.execute(
                "UPDATE deliveries SET last_error = ?3 WHERE operation_id = ?1 AND destination = ?2",
                params![delivery.operation_id, delivery.destination, error],
            )?;
            append_audit(
                tx,
                &delivery.operation_id,
                AuditEvent::DeliveryDeadLettered,
                &format!("{}: {error}", delivery.destination),
            )
        })
    }
}

// ---- reads ----------------------------------------------------------------------------------

fn read_operation(conn: &Connection, id: &str) -> Result<Option<Operation>> {
    let operation = conn
        .query_row(
            &format!("SELECT {OPERATION_COLUMNS} FROM agent_operations WHERE operation_id = ?1"),
            [id],
            operation_from_row,
        )
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

// ---- statements shared by the transactions above ------------------------------------------

/// Moves an operation to `to`, refusing if it is not in one of `from`: the state machine, enforced
/// where the state is kept. A refusal is a bug in the caller, never something to work around.
fn transition(tx: &Connection, id: &str, from: &[ExecutionState], to: ExecutionState) -> Result<()> {
    let current: ExecutionState = tx
        .query_row("SELECT execution_state FROM agent_operations WHERE operation_id = ?1", [id], |row| row.get(0))
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
    tx.execute(
        &format!(
            "UPDATE agent_operations SET execution_state = ?2, updated_at = {NOW}
             WHERE operation_id = ?1"
        ),
        params![id, to],
    )?;
    Ok(())
}

/// Same as `transition`, for one delivery.
fn delivery_transition(tx: &Connection, delivery: &Delivery, from: &[DeliveryState], to: DeliveryState) -> Result<()> {
    let key = params![delivery.operation_id, delivery.destination];
    let current: DeliveryState = tx
        .query_row("SELECT state FROM deliveries WHERE operation_id = ?1 AND destination = ?2", key, |row| row.get(0))
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
    tx.execute(
        "UPDATE deliveries SET state = ?3 WHERE operation_id = ?1 AND destination = ?2",
        params![delivery.operation_id, delivery.destination, to],
    )?;
    Ok(())
}

fn write_success(tx: &Connection, id: &str, effect: &Effect) -> Result<()> {
    transition(tx, id, &[ExecutionState::Dispatched, ExecutionState::Unknown], ExecutionState::Succeeded)?;
    tx.execute(
        "UPDATE agent_operations SET provider_ref = ?2, result_json = ?3 WHERE operation_id = ?1",
        params![id, effect.provider_ref, serde_json::to_string(&effect.result)?],
    )?;
    append_audit(tx, id, AuditEvent::Succeeded, &format!("provider_ref {}", effect.provider_ref))
}

/// One `PENDING` delivery per destination, due at once.
fn write_deliveries(tx: &Connection, operation: &Operation, now: SystemTime) -> Result<()> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO deliveries (operation_id, destination, state, attempts, next_attempt_at,
             idempotency_key)
         VALUES (?1, ?2, ?3, 0, ?4, ?5)",
    )?;
    for destination in &operation.destinations {
        insert.execute(params![
            operation.id,
            destination,
            DeliveryState::Pending,
            epoch_millis(now),
            operation.delivery_key(),
        ])?;
    }
    Ok(())
}

fn append_audit(tx: &Connection, id: &str, event: AuditEvent, detail: &str) -> Result<()> {
    tx.execute(
        &format!("INSERT INTO audit (operation_id, event, detail, at) VALUES (?1, ?2, ?3, {NOW})"),
        params![id, event.as_str(), detail],
    )?;
    Ok(())
}

// ---- rows and columns -------------------------------------------------------------------------

fn operation_from_row(row: &Row<'_>) -> rusqlite::Result<Operation> {
    Ok(Operation {
        id: row.get(0)?,
        tenant: row.get(1)?,
        actor: row.get(2)?,
        tool: Tool { name: row.get(3)?, kind: row.get(4)? },
        arguments: json_column(row, 5)?,
        destinations: json_column(row, 6)?,
        execution: row.get(7)?,
        paused: row.get(8)?,
        attempts: row.get(9)?,
        idempotency_key: row.get(10)?,
        provider_ref: row.get(11)?,
        result: row.get::<_, Option<String>>(12)?.map(|text| parse_json(12, &text)).transpose()?,
        failure_reason: row.get(13)?,
    })
}

fn delivery_from_row(row: &Row<'_>) -> rusqlite::Result<Delivery> {
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

fn epoch_millis(time: SystemTime) -> i64 {
    let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX)
}

fn from_epoch_millis(millis: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn submission(id: &str, destinations: &[&str]) -> Submission {
        serde_json::from_value(json!({
            "operation_id": id,
            "tenant": "acme",
            "actor": "agent-7",
            "tool": { "name": "charge_card", "kind": "non_idempotent_with_lookup" },
            "arguments": { "amount_cents": 1200 },
            "destinations": destinations,
        }))
        .unwrap()
    }

    fn effect() -> Effect {
        Effect { provider_ref: "charge_card-000001".into(), result: json!({ "charge_id": 1 }) }
    }

    /// Submits and dispatches attempt 1, as the worker would.
    fn dispatched(store: &Store, id: &str, destinations: &[&str]) -> Operation {
        let submission = submission(id, destinations);
        store.submit(&submission, "hash").unwrap();
        store.record_dispatch(id, 1, submission.idempotency_key()).unwrap();
        store.operation(id).unwrap().unwrap()
    }

    fn deliveries(store: &Store, id: &str) -> Vec<Delivery> {
        store.snapshot(id).unwrap().unwrap().deliveries
    }

    fn events(store: &Store, id: &str) -> Vec<String> {
        store.snapshot(id).unwrap().unwrap().audit.into_iter().map(|entry| entry.event).collect()
    }

    #[test]
    fn resubmission_is_idempotent_and_a_different_body_conflicts() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1).unwrap();
        let op = submission("op-1", &["ledger"]);

        assert_eq!(store.submit(&op, "h1").unwrap(), Submitted::Created);
        assert_eq!(store.submit(&op, "h1").unwrap(), Submitted::AlreadyKnown(ExecutionState::IntentRecorded));
        assert_eq!(store.submit(&op, "h2").unwrap(), Submitted::Conflict);
        assert_eq!(events(&store, "op-1"), ["intent_recorded"]);
    }

    #[test]
    fn dispatched_becomes_unknown_in_the_next_incarnation() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path(), 1).unwrap();
            dispatched(&store, "op-1", &[]);
            // Dropped without any shutdown, as after a SIGKILL.
        }
        let store = Store::open(dir.path(), 1).unwrap();
        let recovered = store.recover_interrupted(SystemTime::now()).unwrap();

        assert_eq!(recovered.unknown, ["op-1"]);
        let op = store.operation("op-1").unwrap().unwrap();
        assert_eq!(op.execution, ExecutionState::Unknown);
        assert_eq!(op.attempts, 1, "the attempt number survives the restart");
        assert_eq!(op.idempotency_key, "op-1");
        assert_eq!(events(&store, "op-1"), ["intent_recorded", "dispatched", "unknown"]);
        assert!(store.operations_to_work(ExecutionState::Unknown).unwrap().len() == 1);
    }

    #[test]
    fn success_and_its_deliveries_are_written_together() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1).unwrap();
        let op = dispatched(&store, "op-1", &["mailer", "ledger"]);
        let now = SystemTime::now();

        store.record_success(&op, &effect(), now).unwrap();

        let snapshot = store.snapshot("op-1").unwrap().unwrap();
        assert_eq!(snapshot.operation.execution, ExecutionState::Succeeded);
        assert_eq!(snapshot.operation.provider_ref.as_deref(), Some("charge_card-000001"));
        assert_eq!(snapshot.operation.result, Some(json!({ "charge_id": 1 })));
        let deliveries: Vec<_> = snapshot
            .deliveries
            .iter()
            .map(|d| (d.destination.as_str(), d.state, d.attempts, d.idempotency_key.as_str()))
            .collect();
        assert_eq!(
            deliveries,
            [("ledger", DeliveryState::Pending, 0, "op-1"), ("mailer", DeliveryState::Pending, 0, "op-1"),]
        );
        assert_eq!(store.due_deliveries(now).unwrap().len(), 2);
    }

    #[test]
    fn a_failing_outbox_write_leaves_no_success_behind() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1).unwrap();
        // The API refuses duplicate destinations; here one makes the second outbox insert fail
        // after the success has been written inside the same transaction.
        let op = dispatched(&store, "op-1", &["ledger", "ledger"]);

        assert!(store.record_success(&op, &effect(), SystemTime::now()).is_err());

        let snapshot = store.snapshot("op-1").unwrap().unwrap();
        assert_eq!(snapshot.operation.execution, ExecutionState::Dispatched);
        assert_eq!(snapshot.operation.provider_ref, None);
        assert!(snapshot.deliveries.is_empty());
        assert_eq!(events(&store, "op-1"), ["intent_recorded", "dispatched"]);
    }

    #[test]
    fn a_recorded_success_cannot_be_recorded_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1).unwrap();
        let op = dispatched(&store, "op-1", &["ledger"]);
        store.record_success(&op, &effect(), SystemTime::now()).unwrap();

        let error = store.record_success(&op, &effect(), SystemTime::now()).unwrap_err();
        assert!(error.to_string().contains("it is SUCCEEDED"), "{error}");
        assert!(store.record_dispatch("op-1", 2, "op-1").is_err());
        assert_eq!(deliveries(&store, "op-1").len(), 1);
    }

    #[test]
    fn sent_deliveries_are_due_again_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let later = SystemTime::now() + Duration::from_secs(3600);
        {
            let store = Store::open(dir.path(), 1).unwrap();
            let op = dispatched(&store, "op-1", &["ledger"]);
            store.record_success(&op, &effect(), SystemTime::now()).unwrap();
            let delivery = deliveries(&store, "op-1").remove(0);
            store.record_delivery_sent(&delivery, 1, "op-1").unwrap();
            // Even if the row said "not before an hour from now", a restart sends it at once.
            store.postpone_delivery(&delivery, later).unwrap();
        }
        let store = Store::open(dir.path(), 1).unwrap();
        let now = SystemTime::now();
        let recovered = store.recover_interrupted(now).unwrap();

        assert_eq!(recovered.resend, [("op-1".to_owned(), "ledger".to_owned())]);
        let due = store.due_deliveries(now).unwrap();
        assert_eq!(due.len(), 1);
        assert_eq!((due[0].state, due[0].attempts), (DeliveryState::Sent, 1));
    }

    #[test]
    fn failed_sends_wait_and_then_dead_letter() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), 1).unwrap();
        let op = dispatched(&store, "op-1", &["ledger"]);
        let now = SystemTime::now();
        store.record_success(&op, &effect(), now).unwrap();
        let delivery = deliveries(&store, "op-1").remove(0);

        store.record_delivery_sent(&delivery, 1, "op-1").unwrap();
        let retry_at = now + Duration::from_secs(60);
        store.schedule_delivery_retry(&delivery, retry_at, "HTTP 503").unwrap();
        assert!(store.due_deliveries(now).unwrap().is_empty());
        assert_eq!(
            store.delivery_schedule().unwrap(),
            [("op-1".to_owned(), from_epoch_millis(epoch_millis(retry_at)))]
        );

        store.dead_letter(&delivery, "policy: revoked").unwrap();
        let delivery = deliveries(&store, "op-1").remove(0);
        assert_eq!(delivery.state, DeliveryState::DeadLettered);
        assert_eq!(delivery.last_error.as_deref(), Some("policy: revoked"));
        assert!(store.delivery_schedule().unwrap().is_empty());
    }

    #[test]
    fn a_store_from_another_schema_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        Store::open(dir.path(), 1).unwrap();
        let conn = Connection::open(dir.path().join("runtime.sqlite3")).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);

        let error = Store::open(dir.path(), 1).err().unwrap();
        assert!(error.to_string().contains("schema version 99"), "{error}");
    }
}

/// What the monitoring signals are computed from (`GET /metrics`, see `metrics.rs`): read from the
/// store, not counted in memory, so they survive restarts as the state they describe does.
/// Times are seconds on SQLite's clock (`julianday × 86400`), `now` included.
#[derive(Debug, Default)]
pub struct MonitoringFacts {
    pub now: f64,
    /// Every operation: its execution state, whether it is paused, and when it entered the state.
    pub operations: Vec<(ExecutionState, bool, f64)>,
    /// Every delivery: its operation, destination and state.
    pub deliveries: Vec<(String, String, DeliveryState)>,
    /// The audit trail in order: operation, event name, detail, when.
    pub audit: Vec<(String, String, String, f64)>,
    /// Every destination an operation names, so each has its series before its first delivery.
    pub destinations: Vec<String>,
}

impl Store {
    pub fn monitoring_facts(&self) -> Result<MonitoringFacts> {
        let conn = self.conn();
        let now = conn.query_row("SELECT julianday('now') * 86400.0", [], |r| r.get(0))?;
        let operations = conn
            .prepare("SELECT execution_state, paused, julianday(updated_at) * 86400.0 FROM agent_operations")?
            .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? != 0, r.get(2)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let deliveries = conn
            .prepare("SELECT operation_id, destination, state FROM deliveries")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let audit = conn
            .prepare("SELECT operation_id, event, detail, julianday(at) * 86400.0 FROM audit ORDER BY id")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        let mut destinations: Vec<String> = conn
            .prepare("SELECT destinations_json FROM agent_operations")?
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
