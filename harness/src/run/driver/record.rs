//! The record a run leaves: what the harness did and saw ([`Happening`], on the world's clock as
//! [`Mark`]s) and how each fault was reached ([`Hit`]); the `Run` the checker is handed holds them
//! (`evidence.rs`).

use crate::run::client::{Answer, Resubmission};
use crate::run::probe::ProbeMessage;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Something the harness did or saw, on the same clock as the fake world's ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Happening {
    Started {
        incarnation: u32,
    },
    Submitted {
        operation: String,
    },
    /// The runtime accepted a submission (`202`, or `200` for one it already had).
    Answered {
        operation: String,
        status: u16,
    },
    /// A submission that tests the contract's submission rules, and what came back: after every
    /// restart, each submitted operation again (`operation` names it); once per run, malformed
    /// ones (`operation` is absent; `read_after` is the read of the id they name, which must not
    /// exist).
    Resubmitted {
        operation: Option<String>,
        incarnation: u32,
        submission: Resubmission,
        answer: Answer,
        read_after: Option<Answer>,
    },
    /// The runtime answered `404` for an operation it had accepted.
    Forgotten {
        operation: String,
        incarnation: u32,
        answer: String,
    },
    /// The runtime announced a boundary on the probe; `killed` when a fault fired there.
    Boundary {
        message: ProbeMessage,
        killed: bool,
    },
    /// The fake world reached an armed kill point (e.g. the provider holds its answer for
    /// `after_dispatch`) and the harness killed the runtime.
    KillPoint {
        operation: String,
        what: String,
    },
    /// The tracer stopped the runtime at the system call a `[[syscall_fault]]` names, and the
    /// harness killed it there.
    SyscallKill {
        incarnation: u32,
        point: crate::run::traced::SyscallPoint,
    },
    Killed {
        incarnation: u32,
    },
    /// `--crash machine`: the kill of `incarnation` was a power loss, and its data dir was
    /// rebuilt from what it had synced; `lost` says what that took, a line per file or name.
    PowerLoss {
        incarnation: u32,
        lost: Vec<String>,
    },
    /// `--crash restore`: the machine under `incarnation` was lost at its kill, and the runtime
    /// rebuilt on another host: `path`, a new data dir, holds the backup `back` durable changes
    /// and `age_ms` before the kill (the `lag` asked for); `lost` says what it lacks.
    Restored {
        incarnation: u32,
        lag: crate::model::crash::Lag,
        back: u32,
        age_ms: u64,
        path: String,
        lost: Vec<String>,
    },
    /// After a restore, the runtime answered `404` (`answer`) for an operation it had accepted
    /// before its backup was taken, and the harness, as a retrying client, submitted it again
    /// (`status`: the answer, or why there was none).
    ResubmittedAfterRestore {
        operation: String,
        incarnation: u32,
        answer: String,
        status: String,
    },
    /// `--crash machine`: the power loss that took the worker took `service` too: SIGKILLed
    /// with it and reaped (`status`), its data dir rebuilt from what it had synced (`lost`, as
    /// for the worker's), before it was started again (the `ServiceRestarted` that follows).
    /// `points`: the system calls the tracer stopped it at since its start, each resumed at once;
    /// `syncs` of them made something durable.
    ServicePowerLoss {
        service: String,
        status: String,
        lost: Vec<String>,
        points: u64,
        syncs: u64,
    },
    /// The runtime exited without being killed.
    Exited {
        incarnation: u32,
        status: String,
    },
    /// A `freeze` fault: the runtime announced `message` and was SIGSTOPped instead of answered
    /// — or, `held`, the tracer reached the boundary at a system call and holds it there; the
    /// next incarnation starts on the same data dir while this one still exists.
    Frozen {
        incarnation: u32,
        message: ProbeMessage,
        held: bool,
    },
    /// A `[[syscall_fault]]` freeze: the tracer holds the incarnation just before a request
    /// (`point`), not at a boundary; the next incarnation starts while this one still exists.
    SyscallFrozen {
        incarnation: u32,
        point: crate::run::traced::SyscallPoint,
    },
    /// The frozen incarnation was SIGCONTed and its held announcement answered `resume` (or,
    /// `held`, its held system call). Marked before: anything it does afterwards comes later on
    /// the clock. `message` is the boundary it was frozen at; `None` for a `SyscallFrozen` one.
    Resumed {
        incarnation: u32,
        message: Option<ProbeMessage>,
        held: bool,
    },
    /// A resumed (outlived) incarnation announced a boundary; the harness answered `resume`.
    ZombieAnnounced {
        incarnation: u32,
        message: ProbeMessage,
    },
    /// A resumed (outlived) incarnation read a `409 fenced` to its last byte (the tracer saw the
    /// receive that completed it, and held the runtime there until this was marked): from here on
    /// it owes its exit (§9-3). `service` and `operation` say what the refused request was, as
    /// far as the request told (`what`: its method and path).
    ZombieReadFenced {
        incarnation: u32,
        service: Option<fake_tool::Service>,
        operation: Option<String>,
        what: String,
    },
    /// The resumed incarnation exited, as a fenced one must.
    ZombieExited {
        incarnation: u32,
        status: String,
    },
    /// The resumed incarnation was still running at the deadline; the harness SIGKILLed it.
    ZombieOutlived {
        incarnation: u32,
        waited: Duration,
    },
    /// A declared service (`RunOptions::services`) was started, before the first incarnation,
    /// and its readiness check passed `waited` after its spawn; it listens on `port`.
    ServiceStarted {
        service: String,
        port: u16,
        waited: Duration,
    },
    /// A service exited on its own while the run went on: the run stops on it.
    ServiceExited {
        service: String,
        status: String,
    },
    /// The harness killed and reaped the service at the end of the run.
    ServiceStopped {
        service: String,
    },
    /// A `[[service_fault]]` (index `fault` into `scenario.service_faults`) took the service
    /// down (`action`: `kill` or `restart`), and its process ended (`status`); the worker lives on.
    ServiceKilled {
        fault: usize,
        service: String,
        action: String,
        status: String,
    },
    /// The service was started again after its `[[service_fault]]`, on the same data dir and
    /// `port`, and was ready `waited` after its spawn.
    ServiceRestarted {
        service: String,
        port: u16,
        waited: Duration,
    },
    /// A `[[service_fault]]` (index `fault`) `freeze` SIGSTOPped the service's process group, or
    /// an `unreachable` cut the worker's way to it (`action`), for `seconds`; the worker lives on.
    ServiceHeld {
        fault: usize,
        service: String,
        action: String,
        seconds: Duration,
    },
    /// That window ended after `after` (SIGCONT; the proxy open again), for the reason `why`.
    ServiceReleased {
        fault: usize,
        service: String,
        action: String,
        after: Duration,
        why: Release,
    },
    /// The incarnation was started with its data dir (`path`) hidden (`missing_data_dir`), and
    /// did what `refusal` says; the dir was put back after.
    MissingDataDir {
        incarnation: u32,
        path: String,
        refusal: Refusal,
    },
}

/// Why a service fault's window (a `freeze`, an `unreachable`) ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Release {
    /// Its `seconds` were up.
    TimeUp,
    /// Its `until` happened: the operation reached the boundary (`event`, in words).
    Until { event: String },
    /// The run ended first; the harness ended it then.
    RunOver,
}

/// What an incarnation started on a missing data dir did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// It exited before its ready line, naming the path on stderr: what the contract asks.
    Refused,
    /// It exited before its ready line, but its stderr does not name the path.
    Unnamed { last_words: String },
    /// It neither printed its ready line nor exited within the ready deadline.
    Hung,
    /// It printed its ready line: it started afresh, with empty state.
    StartedAfresh,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mark {
    pub seq: u64,
    /// When it happened: microseconds since the scenario's world started, on the same origin as
    /// the ledger's `at_micros` (the HTML timeline draws both on one axis; the text trace and its
    /// snapshots never show it).
    pub at_micros: u64,
    #[serde(flatten)]
    pub happening: Happening,
}

/// How a fault's boundary was reached (or not). The report shows it for every fault: a boundary
/// the run did not exercise is never reported as passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hit {
    /// Killed exactly at the boundary: announced on the probe, or a held provider/consumer answer.
    Exact,
    /// Killed exactly at the boundary without the probe, at the system call that is its edge
    /// (`killpoint-tracer`; CONTRACT.md section 7, "Boundaries at system calls").
    AtSyscall,
    /// Killed where the harness takes the boundary to be without being able to tell it from a point
    /// a little before or after: as soon as the fake world saw it from outside, the runtime may
    /// have moved on (`after_provider_success` without the probe); at the first sync after the
    /// answer, the runtime may not have committed yet (`after_result_write` and
    /// `after_policy_revocation` under the tracer, taken at a sync).
    Approximate,
    /// The fault could be armed but the runtime never got there.
    NotReached,
    /// Only the probe can stop a runtime here, and this runtime does not implement it.
    NeedsProbe,
}
