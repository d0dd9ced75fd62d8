//! The two crash models: what a kill takes down, and so what the data dir keeps for the next
//! incarnation. A word every layer shares: the run applies it, the verdict holds under it, the
//! scenario's `[[catches]]` may need it, the report says it.

use serde::{Deserialize, Serialize};

/// What a crash point's kill takes down, and so what the data dir keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Crash {
    /// SIGKILL of the runtime's process group: the page cache survives, every completed write is
    /// there after the restart.
    #[default]
    Process,
    /// A power loss at the kill: only what was synced survives (`run::power_loss`).
    Machine,
}

impl Crash {
    pub fn name(self) -> &'static str {
        match self {
            Crash::Process => "process",
            Crash::Machine => "machine",
        }
    }
}
