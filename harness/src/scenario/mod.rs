//! Scenario files: one TOML file per scenario — the workload, the faults, the expectations.
//!
//! The file is a user interface for testers who have never read the harness: short field names,
//! defaults that keep files small, and errors that name the file, line and column, what was
//! expected and the closest valid word. The grammar is documented in `scenarios/README.md`.

pub mod embedded;
pub mod standard;
pub mod write;

use crate::model::boundary::{Boundary, Site, unknown_word};
use fake_tool::{Injected, PolicySubject, ToolKind};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

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
    pub policy_faults: Vec<PolicyFault>,
    pub runtime: RuntimeSettings,
    /// How long every operation has to settle after the last restart.
    pub deadline: Duration,
    /// Broken variants of the reference runtime this scenario is built to catch.
    pub catches: Vec<Catch>,
}

/// One logical operation of the workload.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Operation {
    pub id: String,
    /// The provider's tool; its kind decides the recovery the runtime owes.
    #[serde(deserialize_with = "tool_kind")]
    pub tool: ToolKind,
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

/// What a spoilt lookup or policy check gets, as written in a scenario file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ServiceAction {
    Fail,
    Drop,
    Garbage,
    Delay,
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
}

impl SyscallFault {
    /// The incarnation whose ready line the count starts from, when it is not `since` a boundary.
    pub fn incarnation(&self) -> u32 {
        self.incarnation.unwrap_or(1)
    }

    /// `sync before #3 after after_provider_success #1 of op-1`, `sync before #3 of incarnation 2`.
    pub fn describe(&self) -> String {
        let from = match &self.since {
            Some(anchor) => format!("after {anchor}"),
            None => format!("of incarnation {}", self.incarnation()),
        };
        format!("{} {} #{} {from}", self.kind.name(), self.when.name(), self.occurrence)
    }
}

/// Where a syscall fault's count starts: the system call at which `boundary` was reached for the
/// `occurrence`-th time for `operation` (CONTRACT.md section 7, "Boundaries at system calls").
/// A world event, not a count from the ready line: it stays put when a runtime's threads do
/// their other work a little earlier or later.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    pub boundary: Boundary,
    pub operation: String,
    #[serde(default = "first")]
    pub occurrence: u32,
}

fn first() -> u32 {
    1
}

impl std::fmt::Display for Anchor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} #{} of {}", self.boundary, self.occurrence, self.operation)
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
fn default_occurrence() -> u32 {
    1
}
fn default_deadline() -> u64 {
    20
}

fn tool_kind<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ToolKind, D::Error> {
    let name = String::deserialize(d)?;
    ToolKind::for_tool(&name).ok_or_else(|| {
        let tools: Vec<&str> = ToolKind::ALL.iter().map(|k| k.tool_name()).collect();
        serde::de::Error::custom(unknown_word("tool", &name, &tools))
    })
}

// The file as written, with spans kept for the fields checked after parsing.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    description: String,
    deadline_seconds: Option<Spanned<u64>>,
    #[serde(default)]
    runtime: RuntimeSettings,
    #[serde(default, rename = "operation")]
    operations: Vec<Spanned<Operation>>,
    #[serde(default, rename = "fault")]
    faults: Vec<Spanned<FaultFile>>,
    #[serde(default, rename = "consumer_fault")]
    consumer_faults: Vec<Spanned<ConsumerFault>>,
    #[serde(default, rename = "lookup_fault")]
    lookup_faults: Vec<Spanned<LookupFaultFile>>,
    #[serde(default, rename = "policy_fault")]
    policy_faults: Vec<Spanned<PolicyFaultFile>>,
    #[serde(default)]
    catches: Vec<Spanned<Catch>>,
    #[serde(default, rename = "syscall_fault")]
    syscall_faults: Vec<Spanned<SyscallFault>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LookupFaultFile {
    operation: Spanned<String>,
    times: u32,
    action: ServiceAction,
    status: Option<u16>,
    delay_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFaultFile {
    times: Option<u32>,
    operation: Option<Spanned<String>>,
    subject: Option<PolicySubject>,
    action: ServiceAction,
    status: Option<u16>,
    delay_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultFile {
    at: Boundary,
    operation: Spanned<String>,
    #[serde(default = "default_occurrence")]
    occurrence: u32,
    attempt: Option<u32>,
    destination: Option<Spanned<String>>,
    /// Absent: true, except for `reject`, which never applies the effect.
    effect: Option<bool>,
    #[serde(default)]
    action: Action,
    delay_ms: Option<u64>,
    status: Option<u16>,
    #[serde(default)]
    revoke: Vec<Spanned<String>>,
}

/// A scenario file that cannot be used, with where and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    pub path: PathBuf,
    /// 1-based line and column, when the problem has a place in the file.
    pub line_col: Option<(usize, usize)>,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line_col {
            Some((line, col)) => write!(f, "{}:{line}:{col}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

impl Scenario {
    /// Reads and checks one scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            path: path.to_owned(),
            line_col: None,
            message: format!("cannot read the scenario file: {e}"),
        })?;
        Scenario::parse(path, &text)
    }

    /// Parses scenario text; `path` is used for the name and in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let at = |span: Option<Range<usize>>, message: String| ScenarioError {
            path: path.to_owned(),
            line_col: span.map(|s| line_col(text, s.start)),
            message,
        };
        let file: File = toml::from_str(text).map_err(|e| at(e.span(), e.message().to_owned()))?;
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();

        if file.operations.is_empty() {
            return Err(at(None, "expected at least one [[operation]] in the workload".into()));
        }
        let mut operations: Vec<Operation> = Vec::new();
        for spanned in &file.operations {
            let op = spanned.get_ref();
            if !valid_id(&op.id) {
                return Err(at(
                    Some(spanned.span()),
                    format!("operation id `{}` must be 1 to 128 characters from A-Z a-z 0-9 . _ : -", op.id),
                ));
            }
            if operations.iter().any(|o| o.id == op.id) {
                return Err(at(Some(spanned.span()), format!("operation id `{}` is used twice", op.id)));
            }
            // The runtime would refuse the submission (HTTP 400): the file's mistake, not the runtime's.
            if let Some(twice) =
                op.destinations.iter().enumerate().find_map(|(i, d)| op.destinations[..i].contains(d).then_some(d))
            {
                return Err(at(
                    Some(spanned.span()),
                    format!(
                        "`{}` lists destination `{twice}` twice: expected each destination once (a runtime refuses the submission)",
                        op.id
                    ),
                ));
            }
            if let Some(wave) = op.wave {
                let previous = operations.iter().rev().find_map(|o| o.wave);
                if wave == 0 {
                    return Err(at(Some(spanned.span()), "`wave` counts from 1".into()));
                }
                if let Some(previous) = previous.filter(|&p| wave < p) {
                    return Err(at(
                        Some(spanned.span()),
                        format!(
                            "`{}` is in wave {wave}, after an operation in wave {previous}: expected a wave of {previous} or more (waves run in file order)",
                            op.id
                        ),
                    ));
                }
            }
            operations.push(op.clone());
        }

        let mut faults = Vec::new();
        let mut fault_spans = Vec::new();
        for spanned in file.faults {
            let span = spanned.span();
            fault_spans.push(span.clone());
            let f = spanned.into_inner();
            let ids: Vec<&str> = operations.iter().map(|o| o.id.as_str()).collect();
            let Some(op) = operations.iter().find(|o| o.id == *f.operation.get_ref()) else {
                return Err(at(Some(f.operation.span()), unknown_word("operation", f.operation.get_ref(), &ids)));
            };
            if f.occurrence == 0 {
                return Err(at(Some(span), "occurrence counts from 1 (the first time the boundary is reached)".into()));
            }
            let destination = match (&f.destination, f.at.is_delivery()) {
                (Some(d), true) => {
                    if !op.destinations.contains(d.get_ref()) {
                        let valid: Vec<&str> = op.destinations.iter().map(String::as_str).collect();
                        return Err(at(Some(d.span()), unknown_word("destination", d.get_ref(), &valid)));
                    }
                    Some(d.get_ref().clone())
                }
                (None, true) => {
                    return Err(at(
                        Some(span),
                        format!("a fault at `{}` must name a `destination` of `{}`", f.at, op.id),
                    ));
                }
                (Some(d), false) => {
                    return Err(at(
                        Some(d.span()),
                        format!("`destination` only applies to delivery boundaries, not `{}`", f.at),
                    ));
                }
                (None, false) => None,
            };
            if f.action == Action::Freeze {
                freezable(&f, &op.id).map_err(|why| at(Some(span.clone()), why))?;
                // Frozen with other operations in flight, the runtime may be stopped inside one of
                // their transactions, holding its store's lock: the replacement could never start.
                let beside = op.wave.is_some_and(|w| operations.iter().any(|o| o.id != op.id && o.wave == Some(w)));
                if beside {
                    return Err(at(
                        Some(span.clone()),
                        format!(
                            "`action = \"freeze\"` needs `{}` alone in its wave: frozen with other operations in flight, the runtime may be stopped holding its store's lock, and no replacement could start",
                            op.id
                        ),
                    ));
                }
            }
            if f.at.site() != Site::Provider && !matches!(f.action, Action::Kill | Action::Freeze) {
                return Err(at(
                    Some(span),
                    format!(
                        "`action = \"fail\" | \"reject\" | \"drop\" | \"cut\" | \"garbage\" | \"no_ref\" | \"delay\"` only applies at `after_dispatch` (the provider's boundary), not `{}`",
                        f.at
                    ),
                ));
            }
            // Elsewhere the runtime, not the provider, decides what has happened: `effect` would
            // be a promise the harness cannot keep, whichever value it has.
            if let (Some(effect), true) = (f.effect, f.at.site() != Site::Provider) {
                return Err(at(
                    Some(span),
                    format!(
                        "`effect` only applies at `after_dispatch` (whether the provider applies the call before the fault), not `{}`: expected no `effect`, found `effect = {effect}`",
                        f.at
                    ),
                ));
            }
            let effect = match (f.action, f.effect) {
                (Action::Reject, Some(true)) => {
                    return Err(at(
                        Some(span),
                        "`action = \"reject\"` is a refusal, which never applies the effect: expected no `effect` (or `effect = false`), found `effect = true`".into(),
                    ));
                }
                (Action::Reject, _) => false,
                (_, effect) => effect.unwrap_or(true),
            };
            let status = match (f.action, f.status) {
                (Action::Fail, None) => Some(503),
                (Action::Reject, None) => Some(422),
                (Action::Fail, Some(s @ 500..=599)) | (Action::Reject, Some(s @ 400..=499)) => Some(s),
                (Action::Fail, Some(s)) => {
                    return Err(at(
                        Some(span),
                        format!(
                            "`action = \"fail\"` answers a server error: expected a `status` from 500 to 599, found {s} (a 4xx is `action = \"reject\"`)"
                        ),
                    ));
                }
                (Action::Reject, Some(s)) => {
                    return Err(at(
                        Some(span),
                        format!(
                            "`action = \"reject\"` answers a refusal: expected a `status` from 400 to 499, found {s} (a 5xx is `action = \"fail\"`)"
                        ),
                    ));
                }
                (other, Some(_)) => {
                    return Err(at(
                        Some(span),
                        format!(
                            "`status` only applies with `action = \"fail\"` or `\"reject\"`, not `\"{}\"`",
                            other.name()
                        ),
                    ));
                }
                (_, None) => None,
            };
            if f.at.site() == Site::Provider && f.attempt.is_some() {
                return Err(at(
                    Some(span),
                    format!(
                        "`attempt` does not apply at `{}`: the provider cannot see the runtime's attempt numbers; use `occurrence` (the n-th call the provider sees)",
                        f.at
                    ),
                ));
            }
            if f.at.site() == Site::Client && f.attempt.is_some() {
                return Err(at(
                    Some(span),
                    format!(
                        "`attempt` does not apply at `{}`: it is the answer to the submission, before any attempt",
                        f.at
                    ),
                ));
            }
            if f.at.site() == Site::Client && f.occurrence != 1 {
                return Err(at(
                    Some(span),
                    format!(
                        "`{}` happens once per operation (the harness's first submission of it), so `occurrence` can only be 1, found {}",
                        f.at, f.occurrence
                    ),
                ));
            }
            if f.attempt == Some(0) {
                return Err(at(Some(span), "attempt counts from 1".into()));
            }
            let delay_ms = match (f.action, f.delay_ms) {
                (Action::Delay, Some(ms)) => ms,
                (Action::Delay, None) => {
                    return Err(at(
                        Some(span),
                        "`action = \"delay\"` needs `delay_ms`, how late the provider answers".into(),
                    ));
                }
                (_, Some(_)) => {
                    return Err(at(Some(span), "`delay_ms` only applies with `action = \"delay\"`".into()));
                }
                (_, None) => 0,
            };
            if op.destinations.is_empty() && f.at.is_delivery() {
                return Err(at(Some(span), format!("`{}` has no destinations, so it never reaches `{}`", op.id, f.at)));
            }
            let mut revoke = Vec::new();
            for r in &f.revoke {
                let withdrawn = match r.get_ref().as_str() {
                    "tool" => Revoke::Tool,
                    "operation" => Revoke::Operation,
                    other => match other.strip_prefix("destination:") {
                        Some(d) if op.destinations.iter().any(|x| x == d) => Revoke::Destination(d.to_owned()),
                        _ => {
                            return Err(at(
                                Some(r.span()),
                                format!(
                                    "expected `tool`, `operation` or `destination:NAME` with NAME one of {:?}, found `{other}`",
                                    op.destinations
                                ),
                            ));
                        }
                    },
                };
                // Put in force once: a second identical revocation would be a second ledger line
                // for one withdrawal.
                if revoke.contains(&withdrawn) {
                    return Err(at(Some(r.span()), format!("`{}` is revoked twice by this fault", r.get_ref())));
                }
                revoke.push(withdrawn);
            }
            // Two faults at one boundary occurrence: only the first would fire, and the second
            // would be reported as never reached, a failure of the runtime.
            let same_place = |g: &Fault| {
                g.at == f.at
                    && g.operation == op.id
                    && g.occurrence == f.occurrence
                    && g.attempt == f.attempt
                    && g.destination == destination
            };
            if let Some(first) = faults.iter().position(same_place) {
                let (line, _) = line_col(text, fault_spans[first].start);
                return Err(at(
                    Some(span),
                    format!(
                        "this [[fault]] is at the same place as the one on line {line} (`{}` of `{}`, occurrence {}{}): only one fault can fire there, so expected another `occurrence`{}, or one fault",
                        f.at,
                        op.id,
                        f.occurrence,
                        f.attempt.map(|a| format!(", attempt {a}")).unwrap_or_default(),
                        if f.at.site() == Site::Probe { " or `attempt`" } else { "" }
                    ),
                ));
            }
            faults.push(Fault {
                at: f.at,
                operation: op.id.clone(),
                occurrence: f.occurrence,
                attempt: f.attempt,
                destination,
                effect,
                action: f.action,
                delay_ms,
                status,
                revoke,
            });
        }

        for (fault, span) in faults.iter().zip(fault_spans) {
            if let Some(why) = never_reached(fault, &operations, &faults) {
                return Err(at(Some(span), why));
            }
        }

        let mut consumer_faults = Vec::new();
        for spanned in file.consumer_faults {
            let span = spanned.span();
            let c = spanned.into_inner();
            if let Some(id) = &c.operation
                && !operations.iter().any(|o| o.id == *id)
            {
                let ids: Vec<&str> = operations.iter().map(|o| o.id.as_str()).collect();
                return Err(at(Some(span), unknown_word("operation", id, &ids)));
            }
            if let Some(tenant) = &c.tenant
                && !operations.iter().any(|o| o.tenant == *tenant)
            {
                let mut tenants: Vec<&str> = operations.iter().map(|o| o.tenant.as_str()).collect();
                tenants.sort();
                tenants.dedup();
                return Err(at(Some(span), unknown_word("tenant", tenant, &tenants)));
            }
            if !operations.iter().any(|o| o.destinations.contains(&c.destination) && c.covers(o)) {
                let scope = match (&c.operation, &c.tenant) {
                    (Some(o), Some(t)) => format!(" among the operations of `{o}` and tenant `{t}`"),
                    (Some(o), None) => format!(": `{o}` does not"),
                    (None, Some(t)) => format!(" among tenant `{t}`'s"),
                    (None, None) => String::new(),
                };
                return Err(at(Some(span), format!("no operation delivers to `{}`{scope}", c.destination)));
            }
            consumer_faults.push(c);
        }

        let mut lookup_faults: Vec<LookupFault> = Vec::new();
        for spanned in file.lookup_faults {
            let span = spanned.span();
            let f = spanned.into_inner();
            let ids: Vec<&str> = operations.iter().map(|o| o.id.as_str()).collect();
            let Some(op) = operations.iter().find(|o| o.id == *f.operation.get_ref()) else {
                return Err(at(Some(f.operation.span()), unknown_word("operation", f.operation.get_ref(), &ids)));
            };
            if !op.tool.supports_lookup() {
                return Err(at(
                    Some(f.operation.span()),
                    format!(
                        "`{}` uses {} ({}), which has no lookup: expected an operation whose tool can be looked up ({} or {})",
                        op.id,
                        op.tool.tool_name(),
                        op.tool.as_str(),
                        ToolKind::IdempotentByKey.tool_name(),
                        ToolKind::NonIdempotentWithLookup.tool_name()
                    ),
                ));
            }
            if f.times == 0 {
                return Err(at(
                    Some(span),
                    "`times` counts the first lookups to spoil: expected 1 or more, found 0".into(),
                ));
            }
            if lookup_faults.iter().any(|l| l.operation == op.id) {
                return Err(at(
                    Some(span),
                    format!("`{}` already has a [[lookup_fault]]; its `times` counts all its lookups", op.id),
                ));
            }
            // 404 is the truthful "not found": a lookup fault that sent it would be a lying
            // provider, and the runtime would be right to attempt again.
            let response = service_response("lookup", f.action, f.status, f.delay_ms, |s| s != 404)
                .map_err(|why| at(Some(span), why))?;
            lookup_faults.push(LookupFault { operation: op.id.clone(), times: f.times, response });
        }

        let mut policy_faults = Vec::new();
        for spanned in file.policy_faults {
            let span = spanned.span();
            let f = spanned.into_inner();
            let operation = match &f.operation {
                Some(o) => {
                    let ids: Vec<&str> = operations.iter().map(|o| o.id.as_str()).collect();
                    if !ids.contains(&o.get_ref().as_str()) {
                        return Err(at(Some(o.span()), unknown_word("operation", o.get_ref(), &ids)));
                    }
                    Some(o.get_ref().clone())
                }
                None => None,
            };
            if f.times == Some(0) {
                return Err(at(
                    Some(span),
                    "`times` counts the checks to spoil: expected 1 or more, or no `times` for a service that never recovers, found 0".into(),
                ));
            }
            let response = service_response("policy", f.action, f.status, f.delay_ms, |_| true)
                .map_err(|why| at(Some(span), why))?;
            policy_faults.push(PolicyFault { times: f.times, operation, subject: f.subject, response });
        }

        let mut syscall_faults: Vec<SyscallFault> = Vec::new();
        for spanned in file.syscall_faults {
            let span = spanned.span();
            let f = spanned.into_inner();
            if f.occurrence == 0 || f.incarnation == Some(0) || f.since.as_ref().is_some_and(|a| a.occurrence == 0) {
                return Err(at(Some(span), "`occurrence` and `incarnation` count from 1".into()));
            }
            if let Some(anchor) = &f.since {
                if f.incarnation.is_some() {
                    return Err(at(
                        Some(span),
                        "a point is counted from an incarnation's ready line or `since` a boundary, not both".into(),
                    ));
                }
                if !anchor.boundary.at_syscall() {
                    return Err(at(
                        Some(span),
                        format!(
                            "`since` needs a boundary reached at a system call ({}), found `{}`",
                            Boundary::AT_SYSCALL.map(|b| format!("`{b}`")).join(", "),
                            anchor.boundary
                        ),
                    ));
                }
                if !operations.iter().any(|op| op.id == anchor.operation) {
                    return Err(at(
                        Some(span),
                        format!("`since` names operation `{}`, which this scenario does not have", anchor.operation),
                    ));
                }
            }
            if f.kind == crate::tracer::PointKind::Answer && f.when == crate::tracer::When::Before {
                return Err(at(
                    Some(span),
                    "an `answer` point is only `after` (a kill before a receive is a kill after what came before it)"
                        .into(),
                ));
            }
            if syscall_faults.contains(&f) {
                return Err(at(Some(span), "the same [[syscall_fault]] twice".into()));
            }
            syscall_faults.push(f);
        }

        let deadline = match file.deadline_seconds {
            None => default_deadline(),
            Some(d) if *d.get_ref() == 0 => {
                return Err(at(
                    Some(d.span()),
                    "`deadline_seconds` bounds how long the operations may take to settle: expected 1 or more, found 0"
                        .into(),
                ));
            }
            Some(d) => d.into_inner(),
        };

        let mut catches: Vec<Catch> = Vec::new();
        for spanned in file.catches {
            let span = spanned.span();
            let c = spanned.into_inner();
            if c.invariants.is_empty() {
                return Err(at(
                    Some(span),
                    format!(
                        "[[catches]] for `{}` names no invariant: expected the invariants the variant must violate",
                        c.broken
                    ),
                ));
            }
            for name in &c.invariants {
                crate::model::invariant::Invariant::from_name(name)
                    .map_err(|e| at(Some(span.clone()), format!("[[catches]] for `{}`: {e}", c.broken)))?;
            }
            if catches.iter().any(|k| k.broken == c.broken) {
                return Err(at(
                    Some(span),
                    format!("`{}` is caught twice: expected one [[catches]] per broken variant", c.broken),
                ));
            }
            catches.push(c);
        }

        Ok(Scenario {
            name,
            path: path.to_owned(),
            description: file.description.trim().to_owned(),
            operations,
            faults,
            consumer_faults,
            lookup_faults,
            policy_faults,
            runtime: file.runtime,
            deadline: Duration::from_secs(deadline),
            catches,
            syscall_faults,
        })
    }

    /// Every `[[catches]]` names one of `known` (the reference runtime's broken variants, from
    /// [`crate::model::variants::of`]): a misspelt name is the file's error, at its line, naming the
    /// known ones — not the runtime's usage text at run time.
    pub fn check_catches(&self, known: &[crate::model::variants::Variant]) -> Result<(), ScenarioError> {
        #[derive(Deserialize)]
        struct Catches {
            #[serde(default)]
            catches: Vec<Spanned<CatchName>>,
        }
        #[derive(Deserialize)]
        struct CatchName {
            broken: Spanned<String>,
        }
        let Some(unknown) = self.catches.iter().find(|c| !known.iter().any(|k| k.name == c.broken)) else {
            return Ok(());
        };
        let names: Vec<&str> = known.iter().map(|k| k.name.as_str()).collect();
        let mut error = ScenarioError {
            path: self.path.clone(),
            line_col: None,
            message: format!(
                "[[catches]]: {} (the reference runtime's `--broken` variants)",
                unknown_word("broken variant", &unknown.broken, &names)
            ),
        };
        // The place, read back from the file (embedded or on disk) the scenario came from.
        let text = match embedded::text_of(&self.path) {
            Some(text) => Some(text.to_owned()),
            None => std::fs::read_to_string(&self.path).ok(),
        };
        if let Some(text) = text
            && let Ok(file) = toml::from_str::<Catches>(&text)
            && let Some(c) = file.catches.iter().find(|c| *c.get_ref().broken.get_ref() == unknown.broken)
        {
            error.line_col = Some(line_col(&text, c.get_ref().broken.span().start));
        }
        Err(error)
    }

    /// The scenario with its workload `copies` times over: operation `charge` becomes `charge.1` …
    /// `charge.N`, each copy with its own faults and its own tenant (`acme.1` …), so that a
    /// revocation in one copy does not reach into another.
    pub fn with_copies(&self, copies: u32) -> Scenario {
        if copies <= 1 {
            return self.clone();
        }
        let mut scaled = self.clone();
        scaled.operations.clear();
        scaled.faults.clear();
        scaled.lookup_faults.clear();
        scaled.policy_faults.clear();
        // A consumer fault scoped to an operation or tenant follows each copy; one on a whole
        // destination stays one, as before.
        scaled.consumer_faults.retain(|c| c.operation.is_none() && c.tenant.is_none());
        for k in 1..=copies {
            for fault in self.consumer_faults.iter().filter(|c| c.operation.is_some() || c.tenant.is_some()) {
                let mut copy = fault.clone();
                copy.operation = fault.operation.as_ref().map(|o| format!("{o}.{k}"));
                copy.tenant = fault.tenant.as_ref().map(|t| format!("{t}.{k}"));
                scaled.consumer_faults.push(copy);
            }
            for op in &self.operations {
                let mut copy = op.clone();
                copy.id = format!("{}.{k}", op.id);
                copy.tenant = format!("{}.{k}", op.tenant);
                scaled.operations.push(copy);
            }
            for fault in &self.faults {
                let mut copy = fault.clone();
                copy.operation = format!("{}.{k}", fault.operation);
                scaled.faults.push(copy);
            }
            for fault in &self.lookup_faults {
                let mut copy = fault.clone();
                copy.operation = format!("{}.{k}", fault.operation);
                scaled.lookup_faults.push(copy);
            }
            // A fault for any operation is copied too, so each copy's checks meet as many.
            for fault in &self.policy_faults {
                let mut copy = fault.clone();
                copy.operation = fault.operation.as_ref().map(|o| format!("{o}.{k}"));
                scaled.policy_faults.push(copy);
            }
        }
        scaled
    }

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

    /// Every `*.toml` scenario in `dir`, sorted by name. Files that fail to parse are returned as
    /// errors in place, so one bad file does not hide the others.
    pub fn load_dir(dir: &Path) -> std::io::Result<Vec<Result<Scenario, ScenarioError>>> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        paths.sort();
        Ok(paths.iter().map(|p| Scenario::load(p)).collect())
    }
}

/// A freeze is only meaningful where the contract says a commit or a request follows the
/// boundary: that is what the resumed incarnation must not do once it is outlived.
fn freezable(fault: &FaultFile, operation: &str) -> Result<(), String> {
    const FREEZABLE: [Boundary; 3] =
        [Boundary::BeforeDispatch, Boundary::AfterProviderSuccess, Boundary::AfterDeliverySend];
    if !FREEZABLE.contains(&fault.at) {
        return Err(format!(
            "`action = \"freeze\"` applies at a boundary the runtime announces and where a commit or a request follows it (`before_dispatch`, `after_provider_success`, `after_delivery_send`), not `{}`",
            fault.at
        ));
    }
    if !fault.revoke.is_empty() {
        return Err(format!(
            "`revoke` does not go with `action = \"freeze\"` (fault on `{operation}`): a freeze tests fencing, not policy; put the revocation on a fault of its own"
        ));
    }
    Ok(())
}

/// Why `fault` can never fire, when the scenario itself rules it out: a fault that cannot be
/// reached would fail every run with `faults_reached`, so it is a mistake in the file.
fn never_reached(fault: &Fault, operations: &[Operation], faults: &[Fault]) -> Option<String> {
    let op = operations.iter().find(|o| o.id == fault.operation)?;
    let id = &op.id;
    match fault.at {
        Boundary::AfterProviderSuccess | Boundary::AfterResultWrite | Boundary::AfterDeliverySend
            if op.expect == Outcome::SucceededOrGaveUp =>
        {
            Some(format!(
                "`{id}` is expected to end `{}`: a runtime that gives up at its attempt bound never reaches `{}` (only a success does)",
                op.expect, fault.at
            ))
        }
        Boundary::AfterResultWrite | Boundary::AfterDeliverySend if op.expect != Outcome::Succeeded => Some(format!(
            "`{id}` is expected to end `{}`, so it never reaches `{}` (only a success is written and delivered)",
            op.expect, fault.at
        )),
        Boundary::AfterProviderSuccess if matches!(op.expect, Outcome::Refused | Outcome::Failed) => Some(format!(
            "`{id}` is expected to end `{}`, so the provider never confirms a success for it (`{}`)",
            op.expect, fault.at
        )),
        Boundary::AfterDispatch if op.tool == ToolKind::NonIdempotentNoLookup && fault.occurrence > 1 => Some(format!(
            "`{id}` uses {} ({}), which has no lookup: after an unknown outcome it is paused and never called again, so there is no call {} to fault",
            op.tool.tool_name(),
            op.tool.as_str(),
            fault.occurrence
        )),
        Boundary::AfterPolicyRevocation => {
            // Some fault must withdraw this operation's tool (for its tenant) or cancel it.
            let refused = faults.iter().any(|f| {
                let Some(other) = operations.iter().find(|o| o.id == f.operation) else { return false };
                f.revoke.iter().any(|r| match r {
                    Revoke::Tool => other.tenant == op.tenant && other.tool == op.tool,
                    Revoke::Operation => other.id == op.id,
                    Revoke::Destination(_) => false,
                })
            });
            (!refused).then(|| format!(
                "no fault revokes `{}` for tenant `{}` or cancels `{id}` (`revoke = [\"tool\"]` or `[\"operation\"]`), so the policy never refuses it and `{}` is never reached",
                op.tool.tool_name(),
                op.tenant,
                fault.at
            ))
        }
        _ => None,
    }
}

/// What a `[[lookup_fault]]` or `[[policy_fault]]` sends, from its `action`, `status` and
/// `delay_ms`; `allowed` says which `fail` statuses the service may send.
fn service_response(
    service: &str,
    action: ServiceAction,
    status: Option<u16>,
    delay_ms: Option<u64>,
    allowed: impl Fn(u16) -> bool,
) -> Result<Injected, String> {
    match (action, status, delay_ms) {
        (ServiceAction::Fail, None, None) => Ok(Injected::Failed(503)),
        (ServiceAction::Fail, Some(s), None) if (400..=599).contains(&s) && allowed(s) => Ok(Injected::Failed(s)),
        (ServiceAction::Fail, Some(s), None) => Err(format!(
            "a failing {service} answers an error that is no answer: expected a `status` from 400 to 599{}, found {s}",
            if allowed(404) { "" } else { " other than 404 (the truthful \"not found\")" }
        )),
        (ServiceAction::Delay, None, Some(ms)) => Ok(Injected::Late(ms)),
        (ServiceAction::Delay, None, None) => {
            Err(format!("`action = \"delay\"` needs `delay_ms`, how late the {service} answers"))
        }
        (ServiceAction::Drop, None, None) => Ok(Injected::Dropped),
        (ServiceAction::Garbage, None, None) => Ok(Injected::Garbage),
        (_, Some(_), _) => Err("`status` only applies with `action = \"fail\"`".into()),
        (_, None, Some(_)) => Err("`delay_ms` only applies with `action = \"delay\"`".into()),
    }
}

/// The contract's operation id rule.
pub fn valid_id(id: &str) -> bool {
    (1..=128).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
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
    use super::*;

    fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse(Path::new("scenarios/x.toml"), text)
    }

    const OK: &str = r#"
description = "one charge"
[[operation]]
id = "charge"
tool = "charge_card"
destinations = ["ledger"]
expect = "succeeded"
[[fault]]
at = "after_dispatch"
operation = "charge"
"#;

    #[test]
    fn a_small_file_parses_with_defaults() {
        let s = parse(OK).unwrap();
        assert_eq!(s.name, "x");
        assert_eq!(s.faults[0].occurrence, 1);
        assert!(s.faults[0].effect);
        assert_eq!(s.operations[0].tenant, "acme");
    }

    #[test]
    fn unknown_boundary_names_file_line_and_suggestion() {
        let err = parse(&OK.replace("\"after_dispatch\"", "\"after_dispach\"")).unwrap_err();
        let shown = err.to_string();
        assert!(shown.starts_with("scenarios/x.toml:9:"), "{shown}");
        assert!(shown.contains("did you mean `after_dispatch`"), "{shown}");
    }

    #[test]
    fn unknown_operation_in_a_fault_is_pointed_at() {
        let err = parse(&OK.replace("operation = \"charge\"", "operation = \"charg\"")).unwrap_err();
        assert_eq!(err.line_col, Some((10, 13)));
        assert!(err.message.contains("did you mean `charge`"), "{}", err.message);
    }

    #[test]
    fn every_shipped_scenario_parses() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let all = Scenario::load_dir(&dir).unwrap();
        assert!(all.len() >= 6);
        for s in all {
            if let Err(e) = s {
                panic!("{e}");
            }
        }
    }

    #[test]
    fn provider_only_knobs_are_refused_elsewhere() {
        let err =
            parse(&OK.replace("at = \"after_dispatch\"", "at = \"before_dispatch\"\naction = \"drop\"")).unwrap_err();
        assert!(err.message.contains("only applies at `after_dispatch`"), "{}", err.message);
        let err = parse(&OK.replace("operation = \"charge\"\n", "operation = \"charge\"\nattempt = 2\n")).unwrap_err();
        assert!(err.message.contains("use `occurrence`"), "{}", err.message);
        let err = parse(&format!("{OK}action = \"delay\"\n")).unwrap_err();
        assert!(err.message.contains("needs `delay_ms`"), "{}", err.message);
    }

    #[test]
    fn copies_carry_their_own_lookup_and_policy_faults() {
        let text = format!(
            "{OK}action = \"fail\"\n[[lookup_fault]]\noperation = \"charge\"\ntimes = 1\naction = \"drop\"\n[[policy_fault]]\noperation = \"charge\"\ntimes = 1\naction = \"garbage\"\n[[policy_fault]]\naction = \"fail\"\ntimes = 1\n"
        );
        let copies = parse(&text).unwrap().with_copies(2);
        let lookups: Vec<&str> = copies.lookup_faults.iter().map(|l| l.operation.as_str()).collect();
        assert_eq!(lookups, ["charge.1", "charge.2"]);
        let policies: Vec<Option<&str>> = copies.policy_faults.iter().map(|p| p.operation.as_deref()).collect();
        assert_eq!(policies, [Some("charge.1"), None, Some("charge.2"), None]);
        assert_eq!(copies.faults[0].status, Some(503));
    }

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

    #[test]
    fn delivery_faults_need_a_known_destination() {
        let text = OK.replace("at = \"after_dispatch\"", "at = \"after_delivery_send\"");
        let err = parse(&text).unwrap_err();
        assert!(err.message.contains("must name a `destination`"), "{}", err.message);
        let err = parse(&format!("{text}destination = \"ledgr\"\n")).unwrap_err();
        assert!(err.message.contains("did you mean `ledger`"), "{}", err.message);
    }

    #[test]
    fn unknown_keys_and_missing_expectations_are_errors() {
        let err = parse(&OK.replace("tool = ", "tol = ")).unwrap_err();
        assert!(err.message.contains("unknown field `tol`"), "{}", err.message);
        let err = parse(&OK.replace("expect = \"succeeded\"\n", "")).unwrap_err();
        assert!(err.message.contains("missing field `expect`"), "{}", err.message);
    }
}
