//! Writing a scenario back as a file: what `killpoint random` (and `explore`) leave behind when
//! they find a failure, so that the failure is a file to rerun, read and commit.
//!
//! The file is written in the grammar of `scenarios/README.md`, with only the fields that differ
//! from their defaults, so that a written file reads like a hand-written one. Reading it back gives
//! the same [`Scenario`] (tested for every shipped scenario).

use crate::model::boundary::Boundary;
use crate::scenario::{Action, Catch, ConsumerFault, Fault, Operation, Outcome, Revoke, RuntimeSettings, Scenario};
use fake_tool::{Injected, PolicySubject};
use serde::Serialize;

// The file as written: the mirror of the parser's `File`, field for field, in the README's order.
#[derive(Serialize)]
struct File<'a> {
    description: String,
    deadline_seconds: u64,
    runtime: Runtime,
    #[serde(skip_serializing_if = "Option::is_none")]
    schedule: Option<crate::tracer::Schedule>,
    #[serde(rename = "operation", skip_serializing_if = "Vec::is_empty")]
    operations: Vec<OperationFile<'a>>,
    #[serde(rename = "fault", skip_serializing_if = "Vec::is_empty")]
    faults: Vec<FaultFile<'a>>,
    #[serde(rename = "lookup_fault", skip_serializing_if = "Vec::is_empty")]
    lookup_faults: Vec<LookupFaultFile<'a>>,
    #[serde(rename = "model_fault", skip_serializing_if = "Vec::is_empty")]
    model_faults: Vec<LookupFaultFile<'a>>,
    #[serde(rename = "policy_fault", skip_serializing_if = "Vec::is_empty")]
    policy_faults: Vec<PolicyFaultFile<'a>>,
    #[serde(rename = "consumer_fault", skip_serializing_if = "Vec::is_empty")]
    consumer_faults: Vec<ConsumerFaultFile<'a>>,
    #[serde(rename = "syscall_fault", skip_serializing_if = "<[crate::scenario::SyscallFault]>::is_empty")]
    syscall_faults: &'a [crate::scenario::SyscallFault],
    #[serde(rename = "service_fault", skip_serializing_if = "<[crate::scenario::ServiceFault]>::is_empty")]
    service_faults: &'a [crate::scenario::ServiceFault],
    #[serde(skip_serializing_if = "<[Catch]>::is_empty")]
    catches: &'a [Catch],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    missing_data_dir: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    needs_services: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    restore: Option<RestoreFile>,
}

#[derive(Serialize)]
struct RestoreFile {
    #[serde(skip_serializing_if = "Option::is_none")]
    lag_syncs: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lag_ms: Option<u64>,
}

#[derive(Serialize)]
struct Runtime {
    delivery_max_attempts: u32,
    retry_base_ms: u64,
}

#[derive(Serialize)]
struct OperationFile<'a> {
    id: &'a str,
    tool: &'static str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    task: bool,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    destinations: &'a [String],
    #[serde(skip_serializing_if = "is_default_tenant")]
    tenant: &'a str,
    #[serde(skip_serializing_if = "is_default_actor")]
    actor: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    wave: Option<u32>,
    expect: Outcome,
}

#[derive(Serialize)]
struct FaultFile<'a> {
    at: Boundary,
    operation: &'a str,
    #[serde(skip_serializing_if = "is_first")]
    occurrence: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    destination: Option<&'a str>,
    /// Only `false`, and not for a `reject`, which never applies the effect anyway.
    #[serde(skip_serializing_if = "Option::is_none")]
    effect: Option<bool>,
    #[serde(skip_serializing_if = "is_kill")]
    action: Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delay_ms: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    revoke: Vec<String>,
}

/// How a spoilt lookup or policy check is written: `action` with its `status` or `delay_ms`.
#[derive(Serialize)]
struct ServiceAnswer {
    action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delay_ms: Option<u64>,
}

#[derive(Serialize)]
struct LookupFaultFile<'a> {
    operation: &'a str,
    times: u32,
    #[serde(flatten)]
    answer: ServiceAnswer,
}

#[derive(Serialize)]
struct PolicyFaultFile<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    times: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    operation: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<PolicySubject>,
    #[serde(flatten)]
    answer: ServiceAnswer,
}

#[derive(Serialize)]
struct ConsumerFaultFile<'a> {
    destination: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    operation: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tenant: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    times: Option<u32>,
    #[serde(skip_serializing_if = "is_default_status")]
    status: u16,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    apply: bool,
}

fn is_default_tenant(tenant: &&str) -> bool {
    *tenant == "acme"
}
fn is_default_actor(actor: &&str) -> bool {
    *actor == "agent-7"
}
fn is_first(occurrence: &u32) -> bool {
    *occurrence == 1
}
fn is_kill(action: &Action) -> bool {
    *action == Action::Kill
}
fn is_default_status(status: &u16) -> bool {
    *status == 503
}

impl Scenario {
    /// Writes [`Scenario::to_toml`] to `path` so that the file appears whole: written aside in the
    /// same directory (made if missing), then renamed, so whoever watches the directory never
    /// reads half of one.
    pub fn write_whole(&self, path: &std::path::Path) -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        std::fs::create_dir_all(dir)?;
        let name =
            path.file_name().ok_or_else(|| std::io::Error::other(format!("{} names no file", path.display())))?;
        let aside = dir.join(format!(".{}.part", name.to_string_lossy()));
        std::fs::write(&aside, self.to_toml())?;
        std::fs::rename(&aside, path)
    }

    /// The scenario as a file in the documented grammar (`scenarios/README.md`): parsing it gives
    /// this scenario back. Fields at their defaults are left out, as a person would.
    pub fn to_toml(&self) -> String {
        let file = File {
            // A closing `"""` on a line of its own, as people write it; the parser trims it.
            description: format!("{}\n", self.description),
            deadline_seconds: self.deadline.as_secs(),
            runtime: runtime(&self.runtime),
            schedule: self.schedule,
            operations: self.operations.iter().map(operation).collect(),
            faults: self.faults.iter().map(fault).collect(),
            lookup_faults: self
                .lookup_faults
                .iter()
                .map(|l| LookupFaultFile { operation: &l.operation, times: l.times, answer: answer(l.response) })
                .collect(),
            model_faults: self
                .model_faults
                .iter()
                .map(|m| LookupFaultFile { operation: &m.operation, times: m.times, answer: answer(m.response) })
                .collect(),
            policy_faults: self
                .policy_faults
                .iter()
                .map(|p| PolicyFaultFile {
                    times: p.times,
                    operation: p.operation.as_deref(),
                    subject: p.subject,
                    answer: answer(p.response),
                })
                .collect(),
            consumer_faults: self.consumer_faults.iter().map(consumer_fault).collect(),
            syscall_faults: &self.syscall_faults,
            service_faults: &self.service_faults,
            catches: &self.catches,
            missing_data_dir: self.missing_data_dir,
            needs_services: self.needs_services,
            restore: self.restore_lag.map(|lag| match lag {
                crate::model::crash::Lag::Syncs(n) => RestoreFile { lag_syncs: Some(n), lag_ms: None },
                crate::model::crash::Lag::Millis(ms) => RestoreFile { lag_syncs: None, lag_ms: Some(ms) },
            }),
        };
        // Every field is a string, number, boolean, array or table of them: nothing the TOML
        // serialiser can refuse.
        toml::to_string(&file).expect("a scenario is always representable in TOML")
    }
}

fn runtime(settings: &RuntimeSettings) -> Runtime {
    Runtime { delivery_max_attempts: settings.delivery_max_attempts, retry_base_ms: settings.retry_base_ms }
}

fn operation(op: &Operation) -> OperationFile<'_> {
    OperationFile {
        id: &op.id,
        tool: op.tool.tool_name(),
        task: op.task,
        destinations: &op.destinations,
        tenant: &op.tenant,
        actor: &op.actor,
        wave: op.wave,
        expect: op.expect,
    }
}

fn fault(f: &Fault) -> FaultFile<'_> {
    let default_status = match f.action {
        Action::Fail => Some(503),
        Action::Reject => Some(422),
        _ => None,
    };
    FaultFile {
        at: f.at,
        operation: &f.operation,
        occurrence: f.occurrence,
        attempt: f.attempt,
        destination: f.destination.as_deref(),
        effect: (!f.effect && f.action != Action::Reject).then_some(false),
        action: f.action,
        status: f.status.filter(|s| Some(*s) != default_status),
        delay_ms: (f.action == Action::Delay).then_some(f.delay_ms),
        revoke: f
            .revoke
            .iter()
            .map(|r| match r {
                Revoke::Tool => "tool".to_owned(),
                Revoke::Operation => "operation".to_owned(),
                Revoke::Destination(d) => format!("destination:{d}"),
            })
            .collect(),
    }
}

fn answer(response: Injected) -> ServiceAnswer {
    match response {
        Injected::Failed(status) => {
            ServiceAnswer { action: "fail", status: (status != 503).then_some(status), delay_ms: None }
        }
        Injected::Dropped => ServiceAnswer { action: "drop", status: None, delay_ms: None },
        Injected::Garbage => ServiceAnswer { action: "garbage", status: None, delay_ms: None },
        Injected::Late(ms) => ServiceAnswer { action: "delay", status: None, delay_ms: Some(ms) },
    }
}

fn consumer_fault(c: &ConsumerFault) -> ConsumerFaultFile<'_> {
    ConsumerFaultFile {
        destination: &c.destination,
        operation: c.operation.as_deref(),
        tenant: c.tenant.as_deref(),
        times: c.times,
        status: c.status,
        apply: c.apply,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_pinned_schedule_reads_back_and_a_bad_one_is_pointed_at() {
        use crate::scenario::fixtures::{OK, parse};
        let pinned = OK.replacen("[[operation]]", "schedule = { seed = 7, depth = 2 }\n\n[[operation]]", 1);
        let scenario = parse(&pinned).unwrap();
        let schedule = crate::tracer::Schedule { seed: 7, depth: 2, horizon: 64 };
        assert_eq!(scenario.schedule, Some(schedule));
        assert_eq!(parse(&scenario.to_toml()).unwrap().schedule, Some(schedule), "written back and read again");
        let line = pinned.lines().position(|l| l.starts_with("schedule")).unwrap() + 1;
        let error = parse(&pinned.replace("depth = 2", "depth = 0")).unwrap_err();
        assert_eq!(error.line_col.map(|(l, _)| l), Some(line), "{error}");
        assert!(error.message.contains("expected a depth and a horizon of at least 1, found depth = 0"), "{error}");
        let error = parse(&pinned.replace("seed = 7, ", "")).unwrap_err();
        assert!(error.to_string().contains("seed"), "a schedule without its seed is refused: {error}");
    }

    #[test]
    fn every_shipped_scenario_reads_back_from_what_is_written() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let all = Scenario::load_dir(&dir).unwrap();
        assert!(all.len() >= 6);
        for s in all {
            let s = s.unwrap();
            let written = s.to_toml();
            let again = Scenario::parse(&s.path, &written)
                .unwrap_or_else(|e| panic!("{} as written does not parse: {e}\n{written}", s.name));
            assert_eq!(again, s, "{} as written reads back differently:\n{written}", s.name);
        }
    }

    #[test]
    fn waves_and_every_kind_of_fault_read_back() {
        let text = r#"
description = "two waves, every fault table"
[runtime]
retry_base_ms = 5
[[operation]]
id = "a"
tool = "charge_card"
destinations = ["ledger", "mailer"]
tenant = "globex"
actor = "agent-9"
wave = 1
expect = "succeeded"
[[operation]]
id = "b"
tool = "set_status"
wave = 1
expect = "succeeded"
[[operation]]
id = "c"
tool = "create_ticket"
destinations = ["ledger"]
wave = 3
expect = "failed"
[[fault]]
at = "after_dispatch"
operation = "a"
occurrence = 2
effect = false
[[fault]]
at = "after_delivery_send"
operation = "a"
destination = "mailer"
revoke = ["tool", "destination:ledger", "operation"]
[[fault]]
at = "after_dispatch"
operation = "b"
action = "delay"
delay_ms = 40
[[fault]]
at = "after_dispatch"
operation = "c"
action = "reject"
status = 409
[[fault]]
at = "before_dispatch"
operation = "b"
attempt = 2
[[lookup_fault]]
operation = "a"
times = 2
action = "fail"
status = 500
[[policy_fault]]
times = 1
operation = "b"
subject = "tool"
action = "delay"
delay_ms = 10
[[policy_fault]]
action = "garbage"
[[consumer_fault]]
destination = "mailer"
times = 2
status = 500
apply = true
[[consumer_fault]]
destination = "ledger"
operation = "a"
tenant = "globex"
times = 1
[[catches]]
broken = "blind-retry"
invariants = ["at_most_once"]
"#;
        let s = Scenario::parse(Path::new("scenarios/every.toml"), text).unwrap();
        let written = s.to_toml();
        assert_eq!(Scenario::parse(&s.path, &written).unwrap(), s, "{written}");
        assert!(!written.contains("occurrence = 1\n"), "defaults are left out:\n{written}");
    }

    #[test]
    fn a_wave_lower_than_an_earlier_one_is_refused() {
        let text = r#"
description = "waves out of order"
[[operation]]
id = "a"
tool = "charge_card"
wave = 2
expect = "succeeded"
[[operation]]
id = "b"
tool = "charge_card"
wave = 1
expect = "succeeded"
"#;
        let err = Scenario::parse(Path::new("scenarios/x.toml"), text).unwrap_err();
        assert!(err.message.contains("expected a wave of 2 or more"), "{}", err.message);
        assert_eq!(err.line_col, Some((8, 1)));
    }

    #[test]
    fn a_written_file_reads_like_a_hand_written_one() {
        let s =
            Scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/after_dispatch.toml")).unwrap();
        insta::assert_snapshot!(s.to_toml());
    }
}
