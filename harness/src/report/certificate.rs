//! The certificate: a certification run as JSON (`killpoint-report/1`) and as JUnit XML.
//!
//! Both name what makes the run reproducible: the runtime binary's SHA-256 and arguments,
//! killpoint's version, the contract version, each scenario file's SHA-256, and the seed (none:
//! killpoint's runs are deterministic, nothing is drawn at random). The JSON schema is documented
//! in `docs/report.md`; fields are only ever added, and `schema` changes if one is removed.

use crate::judge::{Status, Verdict, Violation};
use crate::report::outcome::{MatrixCell, ScenarioEntry, ScenarioOutcome, ScenarioStatus};
use crate::report::story::matrix;
use crate::run::incarnation::{CONTRACT, Target};
use crate::scenario::embedded::text_of;
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Duration;

pub const SCHEMA: &str = "killpoint-report/1";

#[derive(Debug, Serialize)]
pub struct Certificate {
    pub schema: &'static str,
    pub killpoint_version: &'static str,
    pub contract: &'static str,
    pub runtime: RuntimeIdentity,
    /// Always `null`: runs are deterministic and draw nothing at random.
    pub seed: Option<u64>,
    pub summary: Summary,
    pub scenarios: Vec<ScenarioEntry>,
    pub matrix: Vec<MatrixCell>,
    /// Every numbered rule of the contract and what this run established about it.
    pub rules: Vec<crate::judge::rules::RuleOutcome>,
    /// The seed's eight acceptance questions, answered with their evidence.
    pub checklist: Vec<crate::report::checklist::Item>,
}

#[derive(Debug, Serialize)]
pub struct RuntimeIdentity {
    pub path: String,
    pub args: Vec<String>,
    /// SHA-256 of the binary, hex; `null` if it could not be read.
    pub sha256: Option<String>,
    /// Each argument that names a file (the script an interpreter runs: `--runtime python3 --
    /// my.py`), with its SHA-256: what ran is the program and these, not the program alone.
    pub files: Vec<RuntimeFile>,
    /// Whether the runtime implemented the probe (`null` if no scenario got it started).
    pub probe: Option<bool>,
    /// The processes of the runtime beside its worker (`--services`), each started once per
    /// scenario and alive across every kill of the worker; absent without them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<ServiceIdentity>,
}

/// A service the runtime was certified with: its name, command and readiness check as declared.
#[derive(Debug, Serialize)]
pub struct ServiceIdentity {
    pub name: String,
    pub command: Vec<String>,
    pub ready: String,
}

/// A file a runtime argument names, as given, and its SHA-256 (hex) when it was read.
#[derive(Debug, Serialize)]
pub struct RuntimeFile {
    pub path: String,
    pub sha256: Option<String>,
}

impl RuntimeFile {
    /// The arguments of `target` that name an existing file (relative ones from the working
    /// directory, where the runtime is started from too).
    fn of(target: &Target) -> Vec<RuntimeFile> {
        target
            .args
            .iter()
            .filter(|arg| Path::new(arg).is_file())
            .map(|arg| RuntimeFile { path: arg.clone(), sha256: sha256_file(Path::new(arg)) })
            .collect()
    }
}

impl Certificate {
    /// The certificate of a runtime run with `services` (declared in `--services`): its runtime
    /// section lists them, so that what was certified is the worker *and* its servers.
    pub fn with_services(mut self, services: &crate::run::services::Services) -> Certificate {
        self.runtime.services = services
            .list
            .iter()
            .map(|s| ServiceIdentity {
                name: s.name.to_string(),
                command: std::iter::once(s.program.display().to_string()).chain(s.args.iter().cloned()).collect(),
                ready: match &s.ready {
                    crate::run::services::Ready::Port => "port".to_owned(),
                    crate::run::services::Ready::Command { program, args } => std::iter::once(program.as_str())
                        .chain(args.iter().map(String::as_str))
                        .collect::<Vec<_>>()
                        .join(" "),
                },
            })
            .collect();
        self
    }
}

impl Certificate {
    /// Certified under `version`: the rules an older one does not have are "not claimed".
    pub fn with_contract(mut self, version: crate::model::contract::Version) -> Certificate {
        self.contract = version.name();
        let (rules, what) = version.not_claimed();
        for rule in self.rules.iter_mut().filter(|r| rules.contains(&r.id)) {
            rule.status = crate::judge::rules::RuleStatus::NotClaimed;
            rule.note = Some(format!("not claimed: the runtime declares {version}, which has no {what}"));
        }
        self
    }
}

/// The runtime as a person names it: the program and its arguments (`python3 my.py`).
pub fn runtime_name(runtime: &RuntimeIdentity) -> String {
    std::iter::once(runtime.path.as_str()).chain(runtime.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
}

#[derive(Debug, Serialize)]
pub struct Summary {
    pub passed: usize,
    pub partial: usize,
    pub failed: usize,
    pub errors: usize,
}

/// SHA-256 of a file, hex; of the embedded text for a standard scenario (`<standard>/…`).
pub fn sha256_file(path: &Path) -> Option<String> {
    let bytes = match text_of(path) {
        Some(text) => text.as_bytes().to_vec(),
        None => std::fs::read(path).ok()?,
    };
    Some(Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect())
}

impl Certificate {
    pub fn new(target: &Target, outcomes: &[ScenarioOutcome]) -> Certificate {
        let verdicts: Vec<&Verdict> = outcomes.iter().filter_map(|o| o.verdict.as_ref().ok()).collect();
        // A run the harness failed judged nothing: it certifies no boundary either.
        let judged: Vec<&Verdict> = verdicts.iter().copied().filter(|v| v.error.is_none()).collect();
        let status_of = |o: &ScenarioOutcome| match &o.verdict {
            Ok(v) => match v.status() {
                Status::Pass => ScenarioStatus::Pass,
                Status::Partial => ScenarioStatus::Partial,
                Status::Fail => ScenarioStatus::Fail,
                Status::Error => ScenarioStatus::Error,
            },
            Err(_) => ScenarioStatus::Error,
        };
        let count = |status: ScenarioStatus| outcomes.iter().filter(|o| status_of(o) == status).count();
        let mut certificate = Certificate {
            schema: SCHEMA,
            killpoint_version: env!("CARGO_PKG_VERSION"),
            contract: CONTRACT,
            runtime: RuntimeIdentity {
                path: target.program.display().to_string(),
                args: target.args.clone(),
                sha256: sha256_file(&target.program),
                files: RuntimeFile::of(target),
                probe: verdicts.first().map(|v| v.probe),
                services: Vec::new(),
            },
            seed: None,
            summary: Summary {
                passed: count(ScenarioStatus::Pass),
                partial: count(ScenarioStatus::Partial),
                failed: count(ScenarioStatus::Fail),
                errors: count(ScenarioStatus::Error),
            },
            scenarios: outcomes
                .iter()
                .map(|o| ScenarioEntry {
                    name: o.name.clone(),
                    file: o.file.display().to_string(),
                    sha256: sha256_file(&o.file),
                    status: status_of(o),
                    crash: o.verdict.as_ref().ok().map(|v| v.crash),
                    error: match &o.verdict {
                        Ok(v) => v.error.clone(),
                        Err(e) => Some(e.clone()),
                    },
                    duration_ms: o.duration.as_millis() as u64,
                    violations: o.verdict.as_ref().map(|v| v.violations.clone()).unwrap_or_default(),
                    reasked: o.verdict.as_ref().map(|v| v.reasked.clone()).unwrap_or_default(),
                    restore_risks: o.verdict.as_ref().map(|v| v.restore_risks.clone()).unwrap_or_default(),
                    faults: o.verdict.as_ref().map(|v| v.coverage.clone()).unwrap_or_default(),
                    artifacts: o.artifacts.as_ref().map(|p| p.display().to_string()),
                    story: o.story.clone(),
                    schedule: match status_of(o) {
                        ScenarioStatus::Fail => o.timeline.as_ref().and_then(|t| t.schedule.clone()),
                        _ => None,
                    },
                })
                .collect(),
            matrix: matrix(&judged)
                .into_iter()
                .map(|(boundary, tool_kind, cell)| MatrixCell { boundary, tool_kind, cell })
                .collect(),
            rules: crate::judge::rules::judge_rules(&verdicts),
            checklist: Vec::new(),
        };
        certificate.checklist = crate::report::checklist::answer(&certificate.scenarios, outcomes, &certificate.matrix);
        certificate
    }

    /// The crash models the verdicts hold under, once each: `process`, `machine`, both, or
    /// `none` when no scenario ran.
    pub fn crash_models(&self) -> String {
        let mut models: Vec<&str> = self.scenarios.iter().filter_map(|s| s.crash.map(|c| c.name())).collect();
        models.sort();
        models.dedup();
        if models.is_empty() { "none".to_owned() } else { models.join(", ") }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the certificate is plain data")
    }

    /// JUnit XML: one test suite; per scenario (the case's class), one test case per fault (a
    /// cell of the matrix: boundary × tool kind, for one operation) and one for its workload as a
    /// whole (what no fault's operation accounts for). A case fails with its invariants named once
    /// each; a fault only the probe reaches, in a runtime without one, is skipped, never passed.
    /// The certificate's identity is in the suite's properties so CI systems show it.
    pub fn to_junit(&self) -> String {
        let mut suite = TestSuite::new("killpoint certify");
        for (name, value) in [
            ("killpoint.version", self.killpoint_version.to_owned()),
            ("killpoint.contract", self.contract.to_owned()),
            ("killpoint.schema", self.schema.to_owned()),
            ("runtime.path", self.runtime.path.clone()),
            ("runtime.args", self.runtime.args.join(" ")),
            ("runtime.sha256", self.runtime.sha256.clone().unwrap_or_default()),
            ("runtime.probe", self.runtime.probe.map_or("unknown".into(), |p| p.to_string())),
            ("killpoint.crash", self.crash_models()),
        ] {
            suite.add_property(Property::new(name, value));
        }
        for file in &self.runtime.files {
            let sha256 = file.sha256.clone().unwrap_or_default();
            suite.add_property(Property::new(format!("runtime.file.{}", file.path), sha256));
        }
        for service in &self.runtime.services {
            suite.add_property(Property::new(format!("runtime.service.{}", service.name), service.command.join(" ")));
        }
        let mut total = Duration::ZERO;
        for entry in &self.scenarios {
            let scenario_time = Duration::from_millis(entry.duration_ms);
            total += scenario_time;
            let cells = junit_cells(entry);
            // The scenario ran once for all its cells: its time is shared among them.
            let share = scenario_time / u32::try_from(cells.len()).unwrap_or(u32::MAX).max(1);
            for (name, cell) in cells {
                let mut case = TestCase::new(name, cell);
                case.set_classname(format!("killpoint.{}", entry.name));
                case.set_time(share);
                if let Some(path) = &entry.artifacts {
                    case.set_system_err(format!("artifacts kept at {path}"));
                }
                suite.add_test_case(case);
            }
        }
        suite.set_time(total);
        let mut report = Report::new("killpoint");
        report.set_time(total);
        report.add_test_suite(suite);
        report.to_string().expect("JUnit XML serialises")
    }
}

/// The JUnit cases of one scenario: `(name, status)`, one per fault and one for the workload.
fn junit_cells(entry: &ScenarioEntry) -> Vec<(String, TestCaseStatus)> {
    let mut cells = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for fault in &entry.faults {
        let mut name = format!("{} {} ({})", fault.boundary, fault.operation, fault.tool_kind.as_str());
        // Two faults at one boundary of one operation (other occurrences) stay two cases.
        let same = names.iter().filter(|n| n.starts_with(&name)).count();
        if same > 0 {
            name = format!("{name} #{}", same + 1);
        }
        names.push(name.clone());
        // The fault's own: what it can have caused of its operation (the run-wide ones are the workload's).
        let violations: Vec<&Violation> = fault
            .violations
            .iter()
            .filter_map(|&i| entry.violations.get(i))
            .filter(|v| v.operation.is_some())
            .collect();
        let status = match (&entry.error, entry.status) {
            (Some(error), _) => not_judged(error),
            (None, ScenarioStatus::Error) => not_judged("not judged"),
            _ if !violations.is_empty() => failed(&violations, entry.story.as_deref()),
            _ if fault.hit == crate::run::driver::Hit::NeedsProbe => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(format!(
                    "not exercised: only the probe stops a runtime at {}, and this runtime has none",
                    fault.boundary
                ));
                s.set_type("needs_probe");
                s
            }
            _ => TestCaseStatus::success(),
        };
        cells.push((name, status));
    }
    // What no fault can have caused (a consumer's retries, an operation without a fault, the run
    // as a whole when no fault took it) is the workload's.
    let caused: std::collections::BTreeSet<usize> =
        entry.faults.iter().flat_map(|f| f.violations.iter().copied()).collect();
    let rest: Vec<&Violation> = entry
        .violations
        .iter()
        .enumerate()
        .filter(|(i, v)| v.operation.is_none() || !caused.contains(i))
        .map(|(_, v)| v)
        .collect();
    let status = match (&entry.error, entry.status) {
        (Some(error), _) => not_judged(error),
        (None, ScenarioStatus::Error) => not_judged("not judged"),
        _ if !rest.is_empty() => failed(&rest, entry.story.as_deref()),
        _ => TestCaseStatus::success(),
    };
    cells.push(("workload".to_owned(), status));
    cells
}

fn not_judged(error: &str) -> TestCaseStatus {
    let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
    s.set_message(error.lines().next().unwrap_or_default().to_owned());
    s.set_type("not_judged");
    s.set_description(error.to_owned());
    s
}

/// A failure naming each violated invariant once (in the order first violated); the body tells
/// every violation with its proof, then the scenario's whole story.
fn failed(violations: &[&Violation], story: Option<&str>) -> TestCaseStatus {
    let mut invariants: Vec<&str> = Vec::new();
    for v in violations {
        if !invariants.contains(&v.invariant.as_str()) {
            invariants.push(v.invariant.as_str());
        }
    }
    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
    s.set_message(format!("violated: {}", invariants.join(", ")));
    s.set_type(invariants.join(", "));
    let mut body = String::new();
    for v in violations {
        body.push_str(&format!("{}: {}\n", v.invariant, v.message));
        for e in &v.evidence {
            body.push_str(&format!("    {e}\n"));
        }
    }
    if let Some(story) = story {
        body.push('\n');
        body.push_str(story);
    }
    s.set_description(body);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--runtime python3 -- my.py`: the certificate names and hashes the script, not only the
    /// interpreter (whose hash says nothing of what ran).
    #[test]
    fn a_script_given_to_an_interpreter_is_named_and_hashed() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("my.py");
        std::fs::write(&script, "print('hello')\n").unwrap();
        let script = script.display().to_string();
        let target = Target { program: "/bin/sh".into(), args: vec![script.clone(), "--flag".into()] };
        let certificate = Certificate::new(&target, &[]);
        let json: serde_json::Value = serde_json::from_str(&certificate.to_json()).unwrap();
        let sha: String = Sha256::digest(b"print('hello')\n").iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            json["runtime"]["files"],
            serde_json::json!([{ "path": script, "sha256": sha }]),
            "expected the script among the runtime's files, found {:#}",
            json["runtime"]
        );
        assert!(certificate.to_junit().contains(&format!("name=\"runtime.file.{script}\" value=\"{sha}\"")));
        assert!(
            crate::report::html::render(&certificate, &[])
                .contains(&format!("<title>killpoint certificate: /bin/sh {script} --flag</title>"))
        );
    }
}
