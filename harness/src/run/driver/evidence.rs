//! What a run produced: the evidence the checker judges.

use super::abort::Abort;
use super::fingerprint::Fingerprint;
use super::record::{Hit, Mark};
use crate::model::crash::Crash;
use crate::run::artifacts::Artifacts;
use crate::run::client::OperationReport;
use fake_tool::Entry;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a run produced: the evidence the checker judges.
#[derive(Debug)]
pub struct Run {
    pub ledger: Vec<Entry>,
    pub timeline: Vec<Mark>,
    /// The runtime's final report of each operation (absent if it could not be read).
    pub reports: BTreeMap<String, OperationReport>,
    /// Operations that did not settle in time, with the last state seen.
    pub unsettled: Vec<(String, String)>,
    /// Whether the runtime implemented the probe (declared it and connected).
    pub probe: bool,
    /// What each kill took down: the process, or the machine (only what was synced survived).
    pub crash: Crash,
    /// How each fault of the scenario was reached, by index into `scenario.faults`.
    pub hits: Vec<Hit>,
    /// Where each fault's kill came on the run's clock (the `seq` of its mark, comparable with
    /// the ledger's), by index into `scenario.faults` (`None`: it did not fire, or fires without
    /// a kill): which of a violation's ledger lines came before it.
    pub killed: Vec<Option<u64>>,
    /// Why the run stopped early, if it did (an incarnation never became ready, the runtime
    /// exited on its own…).
    pub aborted: Option<Abort>,
    /// The harness itself failed (its run directory vanished, …): the evidence is incomplete and
    /// nothing in it is held against the runtime.
    pub harness_failure: Option<String>,
    pub incarnations: u32,
    /// Kill → the next incarnation ready, one per kill.
    pub restarts: Vec<Duration>,
    /// Kill → restarted → the operation being waited for settled, one per settle after a kill.
    pub recoveries: Vec<Duration>,
    /// With [`RunOptions::fingerprints`](super::RunOptions::fingerprints): the crash state at each announcement, by the `seq` of
    /// its [`Happening::Boundary`](super::Happening::Boundary) mark.
    pub fingerprints: Vec<(u64, Fingerprint)>,
    /// With tracing: every system-call crash point passed after each incarnation's ready line.
    pub syscall_points: Vec<crate::run::traced::SyscallPoint>,
    /// Whether each `[[syscall_fault]]` was reached, by index.
    pub syscall_hits: Vec<bool>,
    /// With `RunOptions::keep_kills`: the crash state the run's last kill left, or why it could
    /// not be taken (`None`: no kill, or not asked).
    pub after_kill: Option<Result<crate::run::built::after_kill::AfterKill, String>>,
    /// Whether each `[[service_fault]]` fired, by index.
    pub service_hits: Vec<bool>,
    /// `GET /metrics` of the last incarnation once the workload settled, for a runtime whose
    /// ready line declared `"metrics": true` (`None`: it does not serve them, or the run stopped
    /// early); `Err` says why it could not be read.
    pub metrics: Option<Result<String, String>>,
    pub artifacts: Artifacts,
}

impl Run {
    pub fn artifacts_path(&self) -> &Path {
        self.artifacts.path()
    }

    /// Keeps the data dir and logs on disk; returns where.
    pub fn keep_artifacts(self) -> PathBuf {
        self.artifacts.keep()
    }
}
