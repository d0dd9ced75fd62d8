//! The options of a run that are not part of its scenario.

use crate::model::crash::Crash;
use std::path::PathBuf;
use std::time::Duration;

/// Options that are not part of the scenario.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Give the runtime a probe socket (`KILLPOINT_PROBE_SOCKET`).
    pub probe: bool,
    /// How long the runtime has to become ready after each start.
    pub ready_timeout: Duration,
    /// Where run directories are created; `None`: the system's temp dir.
    pub artifacts_root: Option<PathBuf>,
    /// Run every incarnation under `killpoint-tracer` and record its system-call crash points
    /// (`Run::syscall_points`); on anyway when the scenario has `[[syscall_fault]]`s.
    pub syscalls: bool,
    /// Once the workload settled, send the malformed submissions the contract says to refuse
    /// (`idempotent_submission`). `killpoint explore` checks them in its record run only: they
    /// concern the API, not the crash point.
    pub malformed_submissions: bool,
    /// At every probe announcement (the runtime blocked there), take a [`Fingerprint`] of the
    /// crash state a kill would leave; `killpoint explore` prunes crash points with it.
    pub fingerprints: bool,
    /// What a kill takes down: the process (the page cache survives) or the machine (only what
    /// was synced survives: every incarnation runs under the tracer, which sees the syncs), or
    /// the machine for good (a restore from a backup that lags, on another host).
    pub crash: Crash,
    /// In restore mode, how far back the backup is, over the scenario's `[restore]` table.
    pub restore_lag: Option<crate::model::crash::Lag>,
    /// Processes of the runtime that are not its worker (a workflow server, a database): started
    /// before the first incarnation, outside its process group, alive across every kill of the
    /// worker, stopped at the end of the run (`crate::run::services`).
    pub services: crate::run::services::Services,
    /// The contract version the runtime is given and must declare (`--contract`): an older
    /// supported one is certified by its own rules (`crate::model::contract`).
    pub contract: crate::model::contract::Version,
    /// The crash state to start from instead of running the workload's prefix: the one kept
    /// beside a written case (`crate::run::built::kept`), for that case's scenario only.
    pub from_kept: Option<std::sync::Arc<crate::run::built::kept::Kept>>,
    /// Take the crash state each kill leaves, right after it (traced process crashes without
    /// services only), keeping the last in `Run::after_kill`: `explore` keeps it beside a failing
    /// case it re-ran.
    pub keep_kills: bool,
    /// How long a state taken after a kill waits for the world to record every request the
    /// tracer saw sent before it (`after_kill::LANDS` by default); past it, no state is taken.
    pub kill_lands: Duration,
    /// A traced process crash starts the incarnations after its last kill untraced: once every
    /// kill and freeze of the scenario has happened and every `[[syscall_fault]]` was hit, the
    /// tracer has nothing left to stop at, and the recovery runs as fast as the runtime does.
    /// `Run::syscall_points` then end with the last traced incarnation. Off where the recovery's
    /// points are wanted (a record run, `explore`'s depth-1 runs that give depth 2 its points,
    /// `killpoint run --syscalls`).
    pub untraced_after_last_kill: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            probe: true,
            ready_timeout: Duration::from_secs(10),
            artifacts_root: None,
            fingerprints: false,
            malformed_submissions: true,
            syscalls: false,
            crash: Crash::Process,
            restore_lag: None,
            services: crate::run::services::Services::default(),
            contract: crate::model::contract::Version::CURRENT,
            from_kept: None,
            keep_kills: false,
            kill_lands: crate::run::built::after_kill::LANDS,
            untraced_after_last_kill: false,
        }
    }
}
