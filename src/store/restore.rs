//! What a start on a restored backup does to the store (CONTRACT.md section 13), and the keys a
//! store hands out: derived from the operation id by the reference, drawn at random by two broken
//! variants, which a restore that predates the draw sends under a second key.

use std::hash::{BuildHasher, Hasher};

use anyhow::Result;

use super::sql::append_audit;
use super::{Keys, Store};
use crate::model::{AuditEvent, ExecutionState, Operation, Outrun};

impl Store {
    /// Started on a restored backup (`signal`, `KILLPOINT_RESTORED`'s value): every operation
    /// still `INTENT_RECORDED` may have been attempted by the lost host after the backup — one it
    /// had accepted after an earlier restore too — and so may every one a client submits from now
    /// on (the backup forgot them, the world did not).
    /// Durable before the ready line, so an incarnation after this one still knows. Returns the
    /// operations it marked.
    pub fn mark_restored(&mut self, signal: &str) -> Result<Vec<String>> {
        self.restored = true;
        self.write(|tx| {
            let ids: Vec<String> = tx
                .prepare_cached("SELECT operation_id FROM agent_operations WHERE execution_state = ?1")?
                .query_map([ExecutionState::IntentRecorded], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            for id in &ids {
                tx.prepare_cached("UPDATE agent_operations SET maybe_sent = ?2 WHERE operation_id = ?1")?
                    .execute(rusqlite::params![id, Outrun::InBackup.column()])?;
                let detail = format!("{signal}: the lost host may have attempted it after the backup; looked up first");
                append_audit(tx, id, AuditEvent::Restored, &detail)?;
            }
            Ok(ids)
        })
    }

    /// Whether this incarnation started on a restored backup.
    pub fn is_restored(&self) -> bool {
        self.restored
    }

    /// An operation a restore may have outrun, before its first attempt here: `UNKNOWN`, as
    /// after any attempt whose outcome nobody recorded.
    pub fn record_unknown_after_restore(&self, id: &str) -> Result<()> {
        self.write(|tx| {
            super::execution::transition(tx, id, &[ExecutionState::IntentRecorded], ExecutionState::Unknown)?;
            append_audit(tx, id, AuditEvent::Unknown, "restored: an attempt of the lost host's may have been sent")
        })
    }

    /// The store with keys drawn as `keys` says. For the broken `random-key` and `rekeyed-outbox`
    /// variants, and nothing else.
    pub fn drawing_keys(self, keys: Keys) -> Store {
        Store { keys, ..self }
    }

    /// The provider key of a new operation.
    pub(super) fn provider_key(&self, id: &str) -> String {
        match self.keys {
            // BROKEN: a key nobody can derive again: a restore that predates it draws another.
            Keys::DrawnProvider => drawn(id),
            _ => id.to_owned(),
        }
    }

    /// The key of a delivery written to the outbox now.
    pub(super) fn delivery_key(&self, operation: &Operation) -> String {
        match self.keys {
            // BROKEN: each outbox write draws its own: an outbox written again sends a new key.
            Keys::DrawnDelivery => drawn(&operation.id),
            _ => operation.delivery_key().to_owned(),
        }
    }
}

/// `{id}~{16 random hex digits}`: the standard library's per-process random hasher keys, fed the
/// time, are random enough for a key that only has to differ.
fn drawn(id: &str) -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write(id.as_bytes());
    hasher
        .write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    format!("{id}~{:016x}", hasher.finish())
}
