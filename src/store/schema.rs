//! The schema, opening the file, and the fence every write transaction checks.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};

use super::{Keys, Store};

/// Bumped whenever the schema changes; a store written by another version is refused rather than
/// misread.
const SCHEMA_VERSION: i64 = 4;

const SCHEMA: &str = "
CREATE TABLE agent_operations (
    operation_id      TEXT PRIMARY KEY,
    tenant            TEXT NOT NULL,
    actor             TEXT NOT NULL,
    -- NULL for a task until the model's decision is recorded (then the decision's).
    tool_name         TEXT,
    tool_kind         TEXT,
    arguments_json    TEXT NOT NULL,
    -- A task (CONTRACT.md section 12): the prompt and tools, and the decision's tool-call id.
    task_json         TEXT,
    decision_id       TEXT,
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
    -- A restore (KILLPOINT_RESTORED) may have lost this operation's attempts (model::Outrun):
    -- 1 it was in the backup, 2 accepted after the restore. Reconciled before the first attempt.
    maybe_sent        INTEGER NOT NULL DEFAULT 0,
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

impl Store {
    /// Opens (creating if needed) `runtime.sqlite3` in `data_dir` for `incarnation`, and raises the
    /// fence to it: from this commit on, an older incarnation's writes fail. The directory itself
    /// is never created: the harness makes it before the first start, so a missing one means the
    /// state is gone, and starting afresh would forget every accepted operation (CONTRACT.md §2-4).
    pub fn open(data_dir: &Path, incarnation: u32) -> Result<Store> {
        let metadata = std::fs::metadata(data_dir).with_context(|| {
            format!("KILLPOINT_DATA_DIR {} is missing or unreadable; refusing to start afresh", data_dir.display())
        })?;
        if !metadata.is_dir() {
            bail!("KILLPOINT_DATA_DIR {} is not a directory; refusing to start afresh", data_dir.display());
        }
        std::fs::read_dir(data_dir).with_context(|| {
            format!("KILLPOINT_DATA_DIR {} is unreadable; refusing to start afresh", data_dir.display())
        })?;
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
        // Every statement is parsed once per incarnation (`prepare_cached`), not at every status
        // read and commit; room for all of them, so none is evicted and parsed again.
        conn.set_prepared_statement_cache_capacity(64);
        // Plans that never depend on a bound value (the query planner stability guarantee). The
        // bundled SQLite is built with STAT4, and a statement of rusqlite's cache was re-prepared
        // at every use (its RePrepare counter went up by one a read; a fresh statement's stayed
        // 0): rusqlite clears a cached statement's bindings as it goes back to the cache, and
        // SQLite expires a statement whose plan used a bound value when they are cleared. Every
        // status read parsed its three queries again: 5 % of an exploration's CPU.
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;

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
        let newest: Option<u32> =
            tx.prepare_cached("SELECT incarnation FROM fence")?.query_row([], |row| row.get(0)).optional()?;
        if let Some(newest) = newest.filter(|newest| *newest > incarnation) {
            crate::fence::exit(&format!(
                "incarnation {newest} has already opened {}; this is incarnation {incarnation}",
                path.display()
            ));
        }
        tx.prepare_cached(
            "INSERT INTO fence (only, incarnation) VALUES (1, ?1)
             ON CONFLICT (only) DO UPDATE SET incarnation = excluded.incarnation",
        )?
        .execute([incarnation])?;
        tx.commit()?;

        Ok(Store { conn: Mutex::new(conn), incarnation: Some(incarnation), restored: false, keys: Keys::Derived })
    }

    /// The store without its fence check. For the deliberately broken `no-store-fence` variant,
    /// and nothing else: an outlived incarnation's writes then land.
    pub fn unfenced(self) -> Store {
        Store { incarnation: None, ..self }
    }

    /// The store with `synchronous=OFF` from now on: SQLite never fsyncs again. For the
    /// deliberately broken `no-sync` variant, and nothing else.
    pub fn unsynced(&self) -> Result<()> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        conn.pragma_update(None, "synchronous", "OFF")?;
        Ok(())
    }

    /// Runs `work` in one `BEGIN IMMEDIATE` transaction and commits it. IMMEDIATE takes the write
    /// lock up front, so a transaction never fails halfway with "database is locked" after it has
    /// read the state it is about to change.
    ///
    /// The fence is checked inside the same transaction, under the write lock: a newer incarnation
    /// cannot raise it between the check and the commit.
    pub(super) fn write<T>(&self, work: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let Some(incarnation) = self.incarnation {
            let newest: u32 = tx.prepare_cached("SELECT incarnation FROM fence")?.query_row([], |row| row.get(0))?;
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
}
