//! Scenario files: one TOML file per scenario — the workload, the faults, the expectations.
//!
//! The file is a user interface for testers who have never read the harness: short field names,
//! defaults that keep files small, and errors that name the file, line and column, what was
//! expected and the closest valid word. The grammar is documented in `scenarios/README.md`.
//!
//! This file holds what a parsed scenario is (its types) and the error a file that cannot be used
//! gives; `parse/` reads a file into them, `possible.rs` holds the checks that a scenario can
//! happen at all, `copies.rs` scales a workload, `write.rs` writes one back, `standard.rs` and
//! `embedded.rs` are the standard set. The scenario layer imports the model and the tracer only,
//! nothing of the run, judge, report, search or cli layers.

mod copies;
pub mod embedded;
#[cfg(test)]
mod fixtures;
mod parse;
mod possible;
mod service;
pub mod standard;
pub mod write;

use crate::model::boundary::{Boundary, unknown_word};
use fake_tool::{Injected, PolicySubject, ToolKind};
use serde::{Deserialize, Serialize};
pub use service::{EVERY_SERVICE, ServiceFault, ServiceFaultAction};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// A scenario, parsed and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The file stem: the trial's name.
    pub name: String,
    pub path: PathBuf,
    pub description: String,
    pub operations: Vec<Operation>,
    pub faults: Vec<Fault>,
    pub consumer_faults: Vec<ConsumerFault>,
    /// Kills at system-call crash points (the runtime runs under `killpoint-tracer`).
    pub syscall_faults: Vec<SyscallFault>,
    pub lookup_faults: Vec<LookupFault>,
    /// The model's first answers about a task that are not decisions (CONTRACT.md section 12).
    pub model_faults: Vec<ModelFault>,
    pub policy_faults: Vec<PolicyFault>,
    /// Kills, restarts, freezes and cuts of a declared service (a server beside the worker,
    /// `--services`) at a boundary: the worker lives on (CONTRACT.md section 2, "Services").
    pub service_faults: Vec<ServiceFault>,
    /// The file says `needs_services = true`: it tells nothing without a server beside the worker
    /// (the worker killed while its server lives), and is not run for a runtime without services.
    pub needs_services: bool,
    /// The `[restore]` table: how far behind each kill a restore's backup is, under `--crash
    /// restore` (`None`: [`crate::model::crash::Lag::DEFAULT`], or the command's `--restore-lag`).
    pub restore_lag: Option<crate::model::crash::Lag>,
    pub runtime: RuntimeSettings,
    /// How long every operation has to settle after the last restart.
    pub deadline: Duration,
    /// Broken variants of the reference runtime this scenario is built to catch.
    pub catches: Vec<Catch>,
    /// Before the first restart, the harness hides the data dir: that incarnation must exit with
    /// an error naming the path (CONTRACT.md §2-4); then the dir is put back and the run goes on.
    pub missing_data_dir: bool,
    /// Run under a controlled schedule (`killpoint-tracer`'s, from this seed): the order of the
    /// runtime's traced calls is the same in every run, so a failure found under it replays.
    pub schedule: Option<crate::tracer::Schedule>,
}

/// One logical operation of the workload.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Operation {
    pub id: String,
    /// The provider's tool; its kind decides the recovery the runtime owes. For a task, the tool
    /// the model decides to call.
    #[serde(deserialize_with = "tool_kind")]
    pub tool: ToolKind,
    /// Submitted as a task for the model (CONTRACT.md section 12) instead of a fixed tool call:
    /// the runtime asks the world's model, which decides to call `tool` with arguments it draws
    /// anew every time it is asked.
    #[serde(default)]
    pub task: bool,
    #[serde(default)]
    pub destinations: Vec<String>,
    #[serde(default = "default_tenant")]
    pub tenant: String,
    #[serde(default = "default_actor")]
    pub actor: String,
    /// How the operation must end.
    pub expect: Outcome,
    /// Operations with the same wave number, next to each other in the file, are submitted together
    /// and in flight at once; absent: a wave of its own, submitted once the previous one settled.
    #[serde(default)]
    pub wave: Option<u32>,
}

/// How an operation ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// `SUCCEEDED`, every permitted destination delivered.
    Succeeded,
    /// `FAILED` for a reason other than policy.
    Failed,
    /// `FAILED` with a `policy:` reason.
    Refused,
    /// `UNKNOWN`, paused for an operator.
    Paused,
    /// Either `SUCCEEDED`, or given up the way the tool's kind requires when the runtime's attempt
    /// bound is reached (CONTRACT.md section 4, step 11): `FAILED` (not by policy) for a kind with
    /// lookup, paused for one without. For workloads that fail every attempt up to some count: a
    /// runtime with a bound at or below it gives up, one with a higher bound (or none) succeeds
    /// on the next attempt, and both are right.
    SucceededOrGaveUp,
    /// `SUCCEEDED`, or `UNKNOWN` paused for an operator: for a tool without lookup in flight beside
    /// another operation's kill, which can land between its `DISPATCHED` and its request — the
    /// runtime cannot know whether the request left, and must pause.
    SucceededOrPaused,
    /// `FAILED` by policy, or `UNKNOWN` paused: for a tool without lookup refused after a restore
    /// whose backup may hold it as attempted by the lost host, which must be paused (CONTRACT.md
    /// §13-4) whatever the policy now says.
    RefusedOrPaused,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::Refused => "refused",
            Outcome::Paused => "paused",
            Outcome::SucceededOrGaveUp => "succeeded_or_gave_up",
            Outcome::SucceededOrPaused => "succeeded_or_paused",
            Outcome::RefusedOrPaused => "refused_or_paused",
        })
    }
}

/// What the harness does when a fault's boundary occurrence is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// SIGKILL the runtime's process group, then restart it on the same data dir.
    #[default]
    Kill,
    /// `after_dispatch` only: the provider answers `status` (a 5xx, default 503) instead of its
    /// real answer; no kill.
    Fail,
    /// `after_dispatch` only: the provider refuses the call with `status` (a 4xx, default 422) and
    /// `{"error": …}`, and applies nothing; no kill.
    Reject,
    /// `after_dispatch` only: the provider breaks the connection before a complete answer head;
    /// no kill.
    Drop,
    /// `after_dispatch` only: a complete `200` head with the full `Content-Length`, then half the
    /// body, then the connection closes; no kill.
    Cut,
    /// `after_dispatch` only: a complete `200` whose body is not JSON; no kill.
    Garbage,
    /// `after_dispatch` only: a complete JSON `200` without `provider_ref`; no kill.
    NoRef,
    /// `after_dispatch` only: the provider answers `delay_ms` late; no kill.
    Delay,
    /// `before_dispatch`, `after_provider_success` or `after_delivery_send` (a commit or a request
    /// follows them): SIGSTOP the runtime instead of killing it, start the next incarnation on
    /// the same data dir, let it settle the operation, then SIGCONT the frozen one and resume its
    /// announcement. It must find itself fenced and exit (CONTRACT.md §9).
    Freeze,
}

impl Action {
    fn name(self) -> &'static str {
        match self {
            Action::Kill => "kill",
            Action::Fail => "fail",
            Action::Reject => "reject",
            Action::Drop => "drop",
            Action::Cut => "cut",
            Action::Garbage => "garbage",
            Action::NoRef => "no_ref",
            Action::Delay => "delay",
            Action::Freeze => "freeze",
        }
    }
}

/// A permission withdrawn when a fault fires, for the operation's tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Revoke {
    /// The operation's tool.
    Tool,
    /// One destination.
    Destination(String),
    /// The operation itself: a cancellation.
    Operation,
}

/// A fault: a boundary occurrence and what happens there.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    pub at: Boundary,
    /// The operation's id.
    pub operation: String,
    /// The n-th time this operation reaches the boundary (for `after_dispatch`: the n-th call the
    /// provider sees), counted across restarts, 1-based.
    pub occurrence: u32,
    /// Only announcements of this attempt count (for deliveries: this send); `None`: any.
    pub attempt: Option<u32>,
    /// Delivery boundaries: which destination.
    pub destination: Option<String>,
    /// `after_dispatch`: whether the side effect happens before the fault.
    pub effect: bool,
    pub action: Action,
    /// `action = "delay"`: how late the provider answers.
    pub delay_ms: u64,
    /// `action = "fail"` or `"reject"`: the status the provider answers; `None` for the others.
    pub status: Option<u16>,
    pub revoke: Vec<Revoke>,
}

/// The model's first `times` answers about one task are not decisions: an error, a dropped
/// connection, garbage, or a decision sent late.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFault {
    pub operation: String,
    pub times: u32,
    pub response: Injected,
}

/// The provider's first `times` lookups for one operation are not answered truthfully.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupFault {
    pub operation: String,
    pub times: u32,
    pub response: Injected,
}

/// The policy service fails some checks: the next `times` (all: a dead service) that match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyFault {
    pub times: Option<u32>,
    /// Only checks naming this operation.
    pub operation: Option<String>,
    /// Only tool checks, or only destination checks.
    pub subject: Option<PolicySubject>,
    pub response: Injected,
}

/// A consumer that fails receipts.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsumerFault {
    pub destination: String,
    /// Only receipts of this operation; absent: any operation's.
    #[serde(default)]
    pub operation: Option<String>,
    /// Only receipts of operations of this tenant; absent: any tenant's.
    #[serde(default)]
    pub tenant: Option<String>,
    /// How many receipts fail; absent: all of them (a dead consumer).
    pub times: Option<u32>,
    #[serde(default = "default_fail_status")]
    pub status: u16,
    /// Whether the consumer applies the event before failing its answer.
    #[serde(default)]
    pub apply: bool,
}

impl ConsumerFault {
    /// Whether the fault's scope takes in `op`'s receipts.
    pub fn covers(&self, op: &Operation) -> bool {
        self.operation.as_ref().is_none_or(|o| *o == op.id) && self.tenant.as_ref().is_none_or(|t| *t == op.tenant)
    }

    /// The operations whose receipts it takes in (`None`: any, even one not in the scenario).
    pub fn scope(&self, operations: &[Operation]) -> Option<Vec<String>> {
        (self.operation.is_some() || self.tenant.is_some())
            .then(|| operations.iter().filter(|op| self.covers(op)).map(|op| op.id.clone()).collect())
    }
}

/// A kill at a system-call crash point: the `occurrence`-th point of `kind` (`when` the call is
/// about to run, or has returned), counted either from the ready line of incarnation
/// `incarnation` (1 when neither is given) or, `since` a boundary, from the system call where
/// that boundary was reached without the probe (in whatever incarnation; see [`Anchor`]). Seen by
/// `killpoint-tracer` (ptrace + seccomp, Linux x86_64), with or without the probe.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SyscallFault {
    pub kind: crate::tracer::PointKind,
    pub occurrence: u32,
    pub when: crate::tracer::When,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incarnation: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Anchor>,
    /// Only exchanges for this operation count (`request` and `answer` points whose request names
    /// it), from `incarnation`'s ready line: an address that stays put however the exchanges of
    /// operations in flight beside it interleave (CONTRACT.md section 7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// A kill (the default) or a freeze: held at the call, outlived, resumed (CONTRACT.md §9).
    #[serde(default, skip_serializing_if = "SyscallAction::is_kill")]
    pub action: SyscallAction,
}

/// What a `[[syscall_fault]]` does at its point. A freeze holds the call unanswered, starts the
/// next incarnation on the same data dir, and answers it once the workload settled: only before a
/// request (`kind = "request"`, `when = "before"`), where the resumed incarnation's next act is the
/// request itself, which the world refuses `409 fenced`, and where a runtime holds no lock of its
/// store that the next incarnation would wait on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SyscallAction {
    #[default]
    Kill,
    Freeze,
}

impl SyscallAction {
    fn is_kill(&self) -> bool {
        *self == SyscallAction::Kill
    }
}

impl SyscallFault {
    /// The incarnation whose ready line the count starts from, when it is not `since` a boundary.
    pub fn incarnation(&self) -> u32 {
        self.incarnation.unwrap_or(1)
    }

    /// `sync before #3 after after_provider_success #1 of op-1`, `sync before #3 of incarnation 2`,
    /// `answer after #1 for op-1 of incarnation 1`.
    pub fn describe(&self) -> String {
        let from = match (&self.since, &self.operation) {
            (Some(anchor), _) => format!("after {anchor}"),
            (None, Some(op)) => format!("for {op} of incarnation {}", self.incarnation()),
            (None, None) => format!("of incarnation {}", self.incarnation()),
        };
        let freeze = if self.action == SyscallAction::Freeze { " (freeze)" } else { "" };
        format!("{} {} #{} {from}{freeze}", self.kind.name(), self.when.name(), self.occurrence)
    }
}

fn is_first(n: &u32) -> bool {
    *n == 1
}

/// Where a syscall fault's count starts: the system call at which `boundary` was reached for the
/// `occurrence`-th time for `operation` (CONTRACT.md section 7, "Boundaries at system calls").
/// A world event, not a count from the ready line: it stays put when a runtime's threads do
/// their other work a little earlier or later. With a `destination`, the boundary is
/// `after_delivery_send` and the anchor a delivery attempt: the receive that completes the
/// consumer's answer to the `occurrence`-th delivery of `operation` to `destination`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    pub boundary: Boundary,
    pub operation: String,
    #[serde(default = "first")]
    pub occurrence: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
}

impl Anchor {
    /// An anchor at a boundary of the tracer's table (no destination).
    pub fn at(boundary: Boundary, operation: String, occurrence: u32) -> Anchor {
        Anchor { boundary, operation, occurrence, destination: None }
    }

    /// A delivery attempt's anchor: its count starts again at the next attempt's (of any
    /// delivery), and it starts no count again for an anchor at a boundary.
    pub fn is_delivery(&self) -> bool {
        self.destination.is_some()
    }
}

fn first() -> u32 {
    1
}

impl std::fmt::Display for Anchor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} #{} of {}", self.boundary, self.occurrence, self.operation)?;
        match &self.destination {
            Some(destination) => write!(f, " to {destination}"),
            None => Ok(()),
        }
    }
}

/// Settings passed to the runtime through the contract's environment variables.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeSettings {
    #[serde(default = "default_max_attempts")]
    pub delivery_max_attempts: u32,
    #[serde(default = "default_retry_base_ms")]
    pub retry_base_ms: u64,
}

impl Default for RuntimeSettings {
    fn default() -> Self {
        RuntimeSettings { delivery_max_attempts: default_max_attempts(), retry_base_ms: default_retry_base_ms() }
    }
}

/// "The reference runtime started with `--broken <variant>` fails this scenario on these
/// invariants": the proof that the checker can fail.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Catch {
    pub broken: String,
    pub invariants: Vec<String>,
    /// The crash the variant is caught under: `machine` for a durability mistake, which a process
    /// kill (the page cache survives) never shows. Default `process`.
    #[serde(default, skip_serializing_if = "is_process_crash")]
    pub crash: crate::model::crash::Crash,
}

fn is_process_crash(crash: &crate::model::crash::Crash) -> bool {
    *crash == crate::model::crash::Crash::Process
}

fn default_tenant() -> String {
    "acme".into()
}
fn default_actor() -> String {
    "agent-7".into()
}
fn default_fail_status() -> u16 {
    503
}
fn default_max_attempts() -> u32 {
    5
}
fn default_retry_base_ms() -> u64 {
    25
}

fn tool_kind<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ToolKind, D::Error> {
    let name = String::deserialize(d)?;
    ToolKind::for_tool(&name).ok_or_else(|| {
        let tools: Vec<&str> = ToolKind::ALL.iter().map(|k| k.tool_name()).collect();
        serde::de::Error::custom(unknown_word("tool", &name, &tools))
    })
}

/// A scenario file that cannot be used, with where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    pub path: PathBuf,
    /// 1-based line and column, when the problem has a place in the file.
    pub line_col: Option<(usize, usize)>,
    pub message: String,
    /// The file's other mistakes, found after this one, in the order they were found (each with
    /// no `also` of its own): a file is fixed in one pass, not one error at a time.
    pub also: Vec<ScenarioError>,
}

impl ScenarioError {
    /// One error holding every mistake of `found` (in order), or `None` if there is none.
    pub fn of_all(found: Vec<ScenarioError>) -> Option<ScenarioError> {
        let mut all = found.into_iter().flat_map(|mut e| {
            let also = std::mem::take(&mut e.also);
            std::iter::once(e).chain(also)
        });
        let mut first = all.next()?;
        first.also = all.collect();
        Some(first)
    }
}

impl fmt::Display for ScenarioError {
    /// One line per mistake: `path:line:col: message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in std::iter::once(self).chain(&self.also).enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            match e.line_col {
                Some((line, col)) => write!(f, "{}:{line}:{col}: {}", e.path.display(), e.message)?,
                None => write!(f, "{}: {}", e.path.display(), e.message)?,
            }
        }
        Ok(())
    }
}

impl Scenario {
    /// The workload as the harness submits it: groups of operations in flight together, in order.
    /// Neighbours with the same `wave` share a group; an operation without one is a group alone.
    pub fn waves(&self) -> Vec<Vec<&Operation>> {
        let mut waves: Vec<Vec<&Operation>> = Vec::new();
        let mut last: Option<u32> = None;
        for op in &self.operations {
            match (op.wave, last, waves.last_mut()) {
                (Some(w), Some(l), Some(group)) if w == l => group.push(op),
                _ => waves.push(vec![op]),
            }
            last = op.wave;
        }
        waves
    }

    pub fn operation(&self, id: &str) -> Option<&Operation> {
        self.operations.iter().find(|o| o.id == id)
    }
}

/// The contract's operation id rule.
pub fn valid_id(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
}

/// The 1-based line and column of byte `offset` of `text`, for an error's place.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    // A span should start on a character, but an error message must never panic if it does not.
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use crate::scenario::fixtures::parse;

    #[test]
    fn consumer_faults_are_scoped_by_operation_and_tenant() {
        let two = "description = \"x\"\n[[operation]]\nid = \"a\"\ntool = \"set_status\"\ndestinations = [\"mailer\"]\nexpect = \"succeeded\"\n[[operation]]\nid = \"b\"\ntool = \"set_status\"\ndestinations = [\"mailer\"]\ntenant = \"globex\"\nexpect = \"succeeded\"\n";
        let s = parse(&format!("{two}[[consumer_fault]]\ndestination = \"mailer\"\ntenant = \"globex\"\n")).unwrap();
        assert_eq!(s.consumer_faults[0].scope(&s.operations), Some(vec!["b".to_owned()]));
        let copies = s.with_copies(2);
        let tenants: Vec<Option<&str>> = copies.consumer_faults.iter().map(|c| c.tenant.as_deref()).collect();
        assert_eq!(tenants, [Some("globex.1"), Some("globex.2")]);
        let err = parse(&format!(
            "{two}[[consumer_fault]]\ndestination = \"mailer\"\noperation = \"a\"\ntenant = \"globex\"\n"
        ))
        .unwrap_err();
        assert!(
            err.message.contains("no operation delivers to `mailer` among the operations of `a` and tenant `globex`"),
            "{}",
            err.message
        );
        let err =
            parse(&format!("{two}[[consumer_fault]]\ndestination = \"mailer\"\ntenant = \"globx\"\n")).unwrap_err();
        assert!(err.message.contains("did you mean `globex`"), "{}", err.message);
    }
}
