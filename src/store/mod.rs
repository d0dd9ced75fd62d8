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
//!
//! The files, each adding its own `impl Store` block:
//!
//! - `mod.rs`: the `Store` type and what its calls return.
//! - `schema.rs`: the schema, opening the file, and the fence (CONTRACT.md §9): raised by `open`,
//!   checked inside every write transaction (`write`).
//! - `execution.rs`: submission and every execution transition (a success commits with its
//!   outbox), and the writes only the broken variants make.
//! - `delivery.rs`: which deliveries are due, and every delivery transition.
//! - `recovery.rs`: what start-up does with the previous incarnation's `DISPATCHED` and `SENT`.
//! - `read.rs`: reads for the worker, the API and the monitoring signals.
//! - `sql.rs`: what the others share: the clock, the columns and how rows become model types,
//!   the audit append.

mod delivery;
mod execution;
mod read;
mod recovery;
mod restore;
mod schema;
mod sql;
#[cfg(test)]
mod tests;

use std::sync::{Mutex, MutexGuard};

use rusqlite::Connection;

use crate::model::{AuditEntry, Delivery, DeliveryState, ExecutionState, Operation};

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

/// Where the store's idempotency keys come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keys {
    /// From the operation id, the same on every host (CONTRACT.md §13-1).
    Derived,
    /// BROKEN (`random-key`): the provider key drawn at random when the intent is recorded, and
    /// persisted with it.
    DrawnProvider,
    /// BROKEN (`rekeyed-outbox`): each delivery key drawn at random when the outbox is written,
    /// and persisted with it.
    DrawnDelivery,
}

pub struct Store {
    conn: Mutex<Connection>,
    /// Started on a restored backup (`KILLPOINT_RESTORED`): every operation this incarnation
    /// accepts may be one the lost host had already sent.
    restored: bool,
    keys: Keys,
    /// This incarnation: the fence every write checks. `None` only for the deliberately broken
    /// `no-store-fence` variant.
    incarnation: Option<u32>,
}

impl Store {
    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave half a transaction behind: an uncommitted
        // `Transaction` rolls back when dropped. So a poisoned lock still guards a consistent store.
        self.conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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
