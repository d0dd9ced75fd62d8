//! An operation a restore may have outrun (CONTRACT.md §13-3, §13-4): the lost host may have
//! attempted it after the backup was taken, and the restored store does not know. Its outcome is
//! then unknown like any interrupted attempt's, and reconciled the same way (§4-11): looked up
//! by the key the lost host used — the same, since it is derived from the operation id — or, for
//! a kind without lookup, paused for a person; a safely repeatable tool is attempted again, and a
//! refusal then pauses it (§4-3), since its first attempt may have taken effect.

use anyhow::Result;

use super::{Next, Shared};
use crate::model::{ExecutionState, Operation};

impl Shared {
    /// Makes the operation `UNKNOWN`: it is reconciled before any attempt.
    pub(super) fn outrun_by_restore(&self, operation: &mut Operation) -> Result<Next> {
        let id = &operation.id;
        self.store.record_unknown_after_restore(id)?;
        operation.execution = ExecutionState::Unknown;
        eprintln!("{id} restored: the lost host may have attempted it; its outcome is unknown until looked up");
        Ok(Next::Reconcile)
    }
}
