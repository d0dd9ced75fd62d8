//! An operation a restore may have outrun (CONTRACT.md §13-3, §13-4): the lost host may have
//! attempted it after the backup was taken, and the restored store does not know. Its outcome is
//! then unknown like any interrupted attempt's, and reconciled the same way (§4-11): looked up
//! by the key the lost host used — the same, since it is derived from the operation id — or, for
//! a kind without lookup, paused for a person; a safely repeatable tool is attempted again, and a
//! refusal then pauses it (§4-3), since its first attempt may have taken effect.

use anyhow::Result;

use super::{Next, Shared};
use crate::model::{ExecutionState, Operation, Outrun, Recovery};

impl Shared {
    /// Whether the operation must be reconciled before its first attempt here: it may have been
    /// sent by the lost host, and its kind can find out (a lookup), or must not guess (no lookup,
    /// in the backup: paused). One accepted after the restore whose kind has no lookup cannot be
    /// told from a new operation: it goes ahead (CONTRACT.md section 13, "What cannot be owed").
    pub(super) fn outrun(&self, operation: &Operation) -> Result<bool> {
        if operation.execution != ExecutionState::IntentRecorded {
            return Ok(false);
        }
        let pauses = operation.decided_tool()?.kind.recovery() == Recovery::Pause;
        Ok(match operation.outrun {
            Outrun::No => false,
            Outrun::InBackup => true,
            Outrun::Resubmitted => !pauses,
        })
    }

    /// Makes the operation `UNKNOWN`: it is reconciled before any attempt.
    pub(super) fn outrun_by_restore(&self, operation: &mut Operation) -> Result<Next> {
        let id = &operation.id;
        self.store.record_unknown_after_restore(id)?;
        operation.execution = ExecutionState::Unknown;
        eprintln!("{id} restored: the lost host may have attempted it; its outcome is unknown until looked up");
        Ok(Next::Reconcile)
    }
}
