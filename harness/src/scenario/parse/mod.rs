//! Reading a scenario file: the file as written (serde structs that keep the spans errors point
//! at) and the parser, one step per kind of table, each refusing what no run could use.
//!
//! The steps run in a fixed order and every mistake they find is reported, in that order (the
//! steps that name operations only once the workload was read: against a workload with a mistake
//! they would find mistakes that are not there). Inside a step, the first check a table fails is
//! its error, and the step goes on to the next table. The order of the steps in
//! [`Scenario::parse`] and of the checks inside each is part of the errors a file gets.

mod fault;
mod restore;
mod service_fault;
mod services;
mod syscall_fault;

use crate::model::boundary::Boundary;
use crate::scenario::{
    Action, Catch, ConsumerFault, Fault, Operation, RuntimeSettings, Scenario, ScenarioError, SyscallFault, line_col,
    valid_id,
};
use fake_tool::PolicySubject;
use serde::Deserialize;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

/// What a spoilt lookup or policy check gets, as written in a scenario file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ServiceAction {
    Fail,
    Drop,
    Garbage,
    Delay,
}

fn default_occurrence() -> u32 {
    1
}
fn default_deadline() -> u64 {
    20
}

// The file as written, with spans kept for the fields checked after parsing.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    description: String,
    deadline_seconds: Option<Spanned<u64>>,
    #[serde(default)]
    runtime: RuntimeSettings,
    /// A controlled schedule (`killpoint-tracer`): `schedule = { seed = 7 }`.
    schedule: Option<Spanned<crate::tracer::Schedule>>,
    #[serde(default, rename = "operation")]
    operations: Vec<Spanned<Operation>>,
    #[serde(default, rename = "fault")]
    faults: Vec<Spanned<FaultFile>>,
    #[serde(default, rename = "consumer_fault")]
    consumer_faults: Vec<Spanned<ConsumerFault>>,
    #[serde(default, rename = "lookup_fault")]
    lookup_faults: Vec<Spanned<LookupFaultFile>>,
    /// The same shape as a lookup fault's: an operation (a task), how many answers, what instead.
    #[serde(default, rename = "model_fault")]
    model_faults: Vec<Spanned<LookupFaultFile>>,
    #[serde(default, rename = "policy_fault")]
    policy_faults: Vec<Spanned<PolicyFaultFile>>,
    #[serde(default)]
    catches: Vec<Spanned<Catch>>,
    #[serde(default, rename = "syscall_fault")]
    syscall_faults: Vec<Spanned<SyscallFault>>,
    #[serde(default)]
    missing_data_dir: Option<Spanned<bool>>,
    #[serde(default, rename = "service_fault")]
    service_faults: Vec<Spanned<crate::scenario::ServiceFault>>,
    /// Not run without services (the worker killed while its server lives).
    #[serde(default)]
    needs_services: bool,
    /// How far back a restore's backup is (`--crash restore` only).
    restore: Option<Spanned<restore::RestoreFile>>,
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

/// The text being parsed and the path it came from: what every step needs to place its errors.
struct Source<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    /// The error `message`, at the start of `span` when there is one.
    fn at(&self, span: Option<Range<usize>>, message: String) -> ScenarioError {
        let line_col = span.map(|s| line_col(self.text, s.start));
        ScenarioError { path: self.path.to_owned(), line_col, message, also: Vec::new() }
    }
}

/// The mistakes found so far in one file, in the order the steps found them.
#[derive(Default)]
struct Mistakes(Vec<ScenarioError>);

impl Mistakes {
    /// A step's value, or `None` with its mistakes kept.
    fn keep<T>(&mut self, step: Result<T, ScenarioError>) -> Option<T> {
        step.map_err(|e| self.0.push(e)).ok()
    }

    /// Each table's mistake (`check` run on every table in order), as one error if there is one.
    fn each<T>(
        tables: impl IntoIterator<Item = T>,
        mut check: impl FnMut(T) -> Result<(), ScenarioError>,
    ) -> Result<(), ScenarioError> {
        let mut found = Mistakes::default();
        for table in tables {
            found.keep(check(table));
        }
        found.into_result()
    }

    fn into_result(self) -> Result<(), ScenarioError> {
        ScenarioError::of_all(self.0).map_or(Ok(()), Err)
    }
}

impl Scenario {
    /// Reads and checks one scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            path: path.to_owned(),
            line_col: None,
            message: format!("cannot read the scenario file: {e}"),
            also: Vec::new(),
        })?;
        Scenario::parse(path, &text)
    }

    /// Parses scenario text; `path` is used for the name and in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let source = Source { path, text };
        let file: File = toml::from_str(text).map_err(|e| source.at(e.span(), e.message().to_owned()))?;
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let mut mistakes = Mistakes::default();
        let operations = mistakes.keep(source.operations(&file.operations));
        let named = operations.as_deref().map(|operations| {
            let faults = mistakes.keep(
                source
                    .faults(file.faults, operations)
                    .and_then(|(faults, spans)| source.all_reachable(&faults, spans, operations).map(|()| faults)),
            );
            let consumer_faults = mistakes.keep(source.consumer_faults(file.consumer_faults, operations));
            let lookup_faults = mistakes.keep(
                source
                    .lookup_faults(file.lookup_faults, operations)
                    .and_then(|l| source.model_faults(file.model_faults, operations).map(|m| (l, m))),
            );
            let policy_faults = mistakes.keep(source.policy_faults(file.policy_faults, operations));
            let syscall_faults = mistakes.keep(source.syscall_faults(file.syscall_faults, operations));
            let service_faults = faults
                .as_deref()
                .and_then(|faults| mistakes.keep(source.service_faults(file.service_faults, operations, faults)));
            (faults, consumer_faults, lookup_faults, policy_faults, syscall_faults, service_faults)
        });
        let deadline = mistakes.keep(source.deadline(file.deadline_seconds));
        let catches = mistakes.keep(source.catches(file.catches));
        let schedule = mistakes.keep(source.schedule(file.schedule));
        let restore_lag = mistakes.keep(source.restore(file.restore));
        let missing_data_dir = match &named {
            Some((Some(faults), _, _, _, Some(syscall_faults), _)) => {
                mistakes.keep(source.missing_data_dir(file.missing_data_dir, faults, syscall_faults))
            }
            _ => None,
        };
        let (
            Some(operations),
            Some((
                Some(faults),
                Some(consumer_faults),
                Some(lookup_faults),
                Some(policy_faults),
                Some(syscall_faults),
                Some(service_faults),
            )),
            Some(deadline),
            Some(catches),
            Some(missing_data_dir),
            Some(schedule),
            Some(restore_lag),
        ) = (operations, named, deadline, catches, missing_data_dir, schedule, restore_lag)
        else {
            // Every step that gave no value kept its mistake.
            return Err(mistakes.into_result().expect_err("a step without a value has a mistake"));
        };

        Ok(Scenario {
            name,
            path: path.to_owned(),
            description: file.description.trim().to_owned(),
            operations,
            faults,
            consumer_faults,
            lookup_faults: lookup_faults.0,
            model_faults: lookup_faults.1,
            policy_faults,
            service_faults,
            runtime: file.runtime,
            deadline: Duration::from_secs(deadline),
            catches,
            syscall_faults,
            missing_data_dir,
            needs_services: file.needs_services,
            schedule,
            restore_lag,
        })
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

impl Source<'_> {
    /// The `[[operation]]` tables: the workload, at least one operation.
    fn operations(&self, tables: &[Spanned<Operation>]) -> Result<Vec<Operation>, ScenarioError> {
        if tables.is_empty() {
            return Err(self.at(None, "expected at least one [[operation]] in the workload".into()));
        }
        let mut operations: Vec<Operation> = Vec::new();
        Mistakes::each(tables, |spanned| {
            // One in the way is still the workload's: the ones after it are checked against it.
            let checked = self.operation(spanned, &operations);
            operations.push(spanned.get_ref().clone());
            checked
        })?;
        Ok(operations)
    }

    /// One operation, after the `earlier` ones: an id the contract allows and not used before,
    /// each destination once, waves in file order.
    fn operation(&self, spanned: &Spanned<Operation>, earlier: &[Operation]) -> Result<(), ScenarioError> {
        let op = spanned.get_ref();
        if !valid_id(&op.id) {
            return Err(self.at(
                Some(spanned.span()),
                format!("operation id `{}` must be 1 to 128 characters from A-Z a-z 0-9 . _ : -", op.id),
            ));
        }
        if earlier.iter().any(|o| o.id == op.id) {
            return Err(self.at(Some(spanned.span()), format!("operation id `{}` is used twice", op.id)));
        }
        // The runtime would refuse the submission (HTTP 400): the file's mistake, not the runtime's.
        if let Some(twice) =
            op.destinations.iter().enumerate().find_map(|(i, d)| op.destinations[..i].contains(d).then_some(d))
        {
            return Err(self.at(
                Some(spanned.span()),
                format!(
                    "`{}` lists destination `{twice}` twice: expected each destination once (a runtime refuses the submission)",
                    op.id
                ),
            ));
        }
        if let Some(wave) = op.wave {
            let previous = earlier.iter().rev().find_map(|o| o.wave);
            if wave == 0 {
                return Err(self.at(Some(spanned.span()), "`wave` counts from 1".into()));
            }
            if let Some(previous) = previous.filter(|&p| wave < p) {
                return Err(self.at(
                    Some(spanned.span()),
                    format!(
                        "`{}` is in wave {wave}, after an operation in wave {previous}: expected a wave of {previous} or more (waves run in file order)",
                        op.id
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `deadline_seconds`: how long the operations may take to settle, 1 or more.
    fn deadline(&self, deadline_seconds: Option<Spanned<u64>>) -> Result<u64, ScenarioError> {
        let deadline = match deadline_seconds {
            None => default_deadline(),
            Some(d) if *d.get_ref() == 0 => {
                return Err(self.at(
                    Some(d.span()),
                    "`deadline_seconds` bounds how long the operations may take to settle: expected 1 or more, found 0"
                        .into(),
                ));
            }
            Some(d) => d.into_inner(),
        };
        Ok(deadline)
    }

    /// `schedule`: a seed, and a depth and horizon of at least 1 when given.
    fn schedule(
        &self,
        schedule: Option<Spanned<crate::tracer::Schedule>>,
    ) -> Result<Option<crate::tracer::Schedule>, ScenarioError> {
        let Some(schedule) = schedule else { return Ok(None) };
        let span = schedule.span();
        let schedule = schedule.into_inner();
        if schedule.depth == 0 || schedule.horizon == 0 {
            let found = format!("depth = {}, horizon = {}", schedule.depth, schedule.horizon);
            let message = format!("`schedule`: expected a depth and a horizon of at least 1, found {found}");
            return Err(self.at(Some(span), message));
        }
        Ok(Some(schedule))
    }

    /// `missing_data_dir`: hidden before the first restart, so a scenario that never restarts
    /// (no kill, at a boundary or a system call) would ask for a check that cannot happen.
    fn missing_data_dir(
        &self,
        setting: Option<Spanned<bool>>,
        faults: &[Fault],
        syscall_faults: &[SyscallFault],
    ) -> Result<bool, ScenarioError> {
        let Some(setting) = setting else { return Ok(false) };
        let restarts = faults.iter().any(|f| f.action == Action::Kill) || !syscall_faults.is_empty();
        if *setting.get_ref() && !restarts {
            return Err(self.at(
                Some(setting.span()),
                "`missing_data_dir = true` hides the data dir before the first restart: expected a `[[fault]]` with `action = \"kill\"` or a `[[syscall_fault]]`, found none".into(),
            ));
        }
        Ok(setting.into_inner())
    }

    /// The `[[catches]]` tables: each names invariants that exist, one per broken variant. Whether
    /// the variant exists is checked against the runtime, after parsing (`Scenario::check_catches`).
    fn catches(&self, tables: Vec<Spanned<Catch>>) -> Result<Vec<Catch>, ScenarioError> {
        let mut catches: Vec<Catch> = Vec::new();
        Mistakes::each(tables, |spanned| {
            let span = spanned.span();
            let c = spanned.into_inner();
            let checked = self.catch(&c, span, &catches);
            catches.push(c);
            checked
        })?;
        Ok(catches)
    }

    /// One `[[catches]]` table at `span`, after the `earlier` ones.
    fn catch(&self, c: &Catch, span: Range<usize>, earlier: &[Catch]) -> Result<(), ScenarioError> {
        if c.invariants.is_empty() {
            return Err(self.at(
                Some(span),
                format!(
                    "[[catches]] for `{}` names no invariant: expected the invariants the variant must violate",
                    c.broken
                ),
            ));
        }
        for name in &c.invariants {
            crate::model::invariant::Invariant::from_name(name)
                .map_err(|e| self.at(Some(span.clone()), format!("[[catches]] for `{}`: {e}", c.broken)))?;
        }
        if earlier.iter().any(|k| k.broken == c.broken) {
            return Err(self.at(
                Some(span),
                format!("`{}` is caught twice: expected one [[catches]] per broken variant", c.broken),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::fixtures::{OK, parse};

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
    fn delivery_faults_need_a_known_destination() {
        let text = OK.replace("at = \"after_dispatch\"", "at = \"after_delivery_send\"");
        let err = parse(&text).unwrap_err();
        assert!(err.message.contains("must name a `destination`"), "{}", err.message);
        let err = parse(&format!("{text}destination = \"ledgr\"\n")).unwrap_err();
        assert!(err.message.contains("did you mean `ledger`"), "{}", err.message);
    }

    /// `killpoint check` fixes a file in one pass: every mistake the steps can find, in step
    /// order and file order within a step, each at its own line.
    #[test]
    fn every_mistake_of_a_file_is_reported() {
        let text = format!(
            "deadline_seconds = 0\n{OK}delay_ms = 5\n[[fault]]\nat = \"after_dispatch\"\noperation = \"charg\"\n[[catches]]\nbroken = \"blind-retry\"\ninvariants = []\n"
        );
        let shown = parse(&text).unwrap_err().to_string();
        let lines: Vec<&str> = shown.lines().collect();
        let wanted = ["delay_ms", "did you mean `charge`", "`deadline_seconds`", "names no invariant"];
        assert!(
            lines.len() == wanted.len()
                && lines
                    .iter()
                    .zip(wanted)
                    .all(|(line, word)| line.starts_with("scenarios/x.toml:") && line.contains(word)),
            "expected one line each for {wanted:?}, in that order, found:\n{shown}"
        );
    }

    #[test]
    fn unknown_keys_and_missing_expectations_are_errors() {
        let err = parse(&OK.replace("tool = ", "tol = ")).unwrap_err();
        assert!(err.message.contains("unknown field `tol`"), "{}", err.message);
        let err = parse(&OK.replace("expect = \"succeeded\"\n", "")).unwrap_err();
        assert!(err.message.contains("missing field `expect`"), "{}", err.message);
    }
}
