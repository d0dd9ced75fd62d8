//! Why a run stopped early, sorted by the rule it broke: an incarnation that never became ready
//! broke the ready line's (CONTRACT.md §2, "Readiness"), which comes before any operation could
//! settle; anything else stopped the run while it played the workload.

use std::fmt;

/// Why a run stopped early. It reads as its reason (`run.aborted.as_deref()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Abort {
    /// An incarnation, the first or one after a restart, did not become ready: no ready line by
    /// the deadline, one the harness refuses (another contract, no API address), an exit before
    /// it, or the probe it declared never connected.
    NotReady(String),
    /// The run stopped for another reason: the runtime exited on its own while serving, a probe
    /// line the harness could not read, a data dir the harness could not rebuild…
    Stopped(String),
}

impl Abort {
    pub fn reason(&self) -> &str {
        match self {
            Abort::NotReady(reason) | Abort::Stopped(reason) => reason,
        }
    }
}

/// Every place that only says why (a story, a test's message) reads the reason as before.
impl std::ops::Deref for Abort {
    type Target = str;

    fn deref(&self) -> &str {
        self.reason()
    }
}

impl fmt::Display for Abort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}
