//! The certificate: a certification run as JSON (`killpoint-report/1`) and as JUnit XML.
//!
//! Both name what makes the run reproducible: the runtime binary's SHA-256 and arguments,
//! killpoint's version, the contract version, each scenario file's SHA-256, and the seed (none:
//! killpoint's runs are deterministic, nothing is drawn at random). The JSON schema is documented
//! in `docs/report.md`; fields are only ever added, and `schema` changes if one is removed.

use crate::boundary::Boundary;
use crate::checker::{Coverage, Status, Verdict, Violation};
use crate::incarnation::{CONTRACT, Target};
use crate::report::{Cell, matrix};
use crate::scenario::Scenario;
use fake_tool::ToolKind;
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const SCHEMA: &str = "killpoint-report/1";

/// What became of one scenario in a certification run.
#[derive(Debug)]
pub struct ScenarioOutcome {
    pub name: String,
    pub file: PathBuf,
    /// The verdict, or why the scenario could not run at all.
    pub verdict: Result<Verdict, String>,
    pub duration: Duration,
    /// The failure story, for failed scenarios.
    pub story: Option<String>,
    /// Where the data dir and logs were kept, if they were.
    pub artifacts: Option<PathBuf>,
    /// The run's events on the shared clock, for the HTML report (absent if it could not run).
    pub timeline: Option<crate::html::Timeline>,
    /// For kept artifacts: the `rerun.sh` in them that reruns exactly this case.
    pub rerun: Option<PathBuf>,
}

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
    pub rules: Vec<crate::coverage::RuleOutcome>,
}

#[derive(Debug, Serialize)]
pub struct RuntimeIdentity {
    pub path: String,
    pub args: Vec<String>,
    /// SHA-256 of the binary, hex; `null` if it could not be read.
    pub sha256: Option<String>,
    /// Whether the runtime implemented the probe (`null` if no scenario got it started).
    pub probe: Option<bool>,
}

#[derive(Debug, Serialize)]
pub struct Summary {
    pub passed: usize,
    pub partial: usize,
    pub failed: usize,
    pub errors: usize,
}

#[derive(Debug, Serialize)]
pub struct ScenarioEntry {
    pub name: String,
    pub file: String,
    pub sha256: Option<String>,
    pub status: ScenarioStatus,
    pub error: Option<String>,
    pub duration_ms: u64,
    pub violations: Vec<Violation>,
    pub faults: Vec<Coverage>,
    pub artifacts: Option<String>,
    /// For a failure: the story (violations, evidence, trace, the runtime's last output).
    pub story: Option<String>,
}

/// A scenario's line in the certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScenarioStatus {
    Pass,
    /// Passed, but some faults need the probe the runtime lacks.
    Partial,
    Fail,
    /// The scenario could not run at all, or the harness failed during it: not judged.
    Error,
}

#[derive(Debug, Serialize)]
pub struct MatrixCell {
    pub boundary: Boundary,
    pub tool_kind: ToolKind,
    pub cell: Cell,
}

/// SHA-256 of a file, hex.
pub fn sha256_file(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
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
        Certificate {
            schema: SCHEMA,
            killpoint_version: env!("CARGO_PKG_VERSION"),
            contract: CONTRACT,
            runtime: RuntimeIdentity {
                path: target.program.display().to_string(),
                args: target.args.clone(),
                sha256: sha256_file(&target.program),
                probe: verdicts.first().map(|v| v.probe),
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
                    error: match &o.verdict {
                        Ok(v) => v.error.clone(),
                        Err(e) => Some(e.clone()),
                    },
                    duration_ms: o.duration.as_millis() as u64,
                    violations: o.verdict.as_ref().map(|v| v.violations.clone()).unwrap_or_default(),
                    faults: o.verdict.as_ref().map(|v| v.coverage.clone()).unwrap_or_default(),
                    artifacts: o.artifacts.as_ref().map(|p| p.display().to_string()),
                    story: o.story.clone(),
                })
                .collect(),
            matrix: matrix(&judged)
                .into_iter()
                .map(|(boundary, tool_kind, cell)| MatrixCell { boundary, tool_kind, cell })
                .collect(),
            rules: crate::coverage::judge_rules(&verdicts),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the certificate is plain data")
    }

    /// JUnit XML: one test suite, one test case per scenario; the certificate's identity as
    /// suite properties so CI systems show it.
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
        ] {
            suite.add_property(Property::new(name, value));
        }
        for entry in &self.scenarios {
            let status = match entry.status {
                ScenarioStatus::Pass => TestCaseStatus::success(),
                ScenarioStatus::Partial => {
                    let mut s = TestCaseStatus::success();
                    // JUnit has no "partly"; the skipped boundaries go to system-out below.
                    s.set_message("passed; some boundaries need the probe");
                    s
                }
                failed @ (ScenarioStatus::Fail | ScenarioStatus::Error) => {
                    let kind =
                        if failed == ScenarioStatus::Error { NonSuccessKind::Error } else { NonSuccessKind::Failure };
                    let mut s = TestCaseStatus::non_success(kind);
                    let invariants: Vec<&str> = entry.violations.iter().map(|v| v.invariant.as_str()).collect();
                    s.set_message(match &entry.error {
                        Some(e) => e.lines().next().unwrap_or_default().to_owned(),
                        None => format!("violated: {}", invariants.join(", ")),
                    });
                    if let Some(story) = &entry.story {
                        s.set_description(story.clone());
                    }
                    s
                }
            };
            let mut case = TestCase::new(entry.name.clone(), status);
            case.set_classname("killpoint.scenario");
            case.set_time(Duration::from_millis(entry.duration_ms));
            let not_exercised: Vec<String> = entry
                .faults
                .iter()
                .filter(|c| c.hit == crate::driver::Hit::NeedsProbe)
                .map(|c| format!("{} of {}", c.boundary, c.operation))
                .collect();
            if !not_exercised.is_empty() {
                case.set_system_out(format!("not exercised without the probe: {}", not_exercised.join(", ")));
            }
            if let Some(path) = &entry.artifacts {
                case.set_system_err(format!("artifacts kept at {path}"));
            }
            suite.add_test_case(case);
        }
        let mut report = Report::new("killpoint");
        report.add_test_suite(suite);
        report.to_string().expect("JUnit XML serialises")
    }
}

/// Runs every scenario against `target`, keeping artifacts of failures (and of passes when
/// `keep` is set).
pub fn certify(
    scenarios: &[Scenario],
    target: &Target,
    options: &crate::RunOptions,
    keep: bool,
    jobs: usize,
) -> Vec<ScenarioOutcome> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Each scenario has its own data dir, fake world and ports: they run side by side, `jobs` at a
    // time, and come back in file order.
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<(usize, ScenarioOutcome)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, scenarios.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(scenario) = scenarios.get(index) else { return };
                    let outcome = certify_one(scenario, target, options, keep);
                    outcomes.lock().unwrap_or_else(|p| p.into_inner()).push((index, outcome));
                }
            });
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap_or_else(|p| p.into_inner());
    outcomes.sort_by_key(|(i, _)| *i);
    outcomes.into_iter().map(|(_, o)| o).collect()
}

fn certify_one(scenario: &Scenario, target: &Target, options: &crate::RunOptions, keep: bool) -> ScenarioOutcome {
    let started = std::time::Instant::now();
    match crate::run_scenario(scenario, target, options) {
        Ok((verdict, run)) => {
            let duration = started.elapsed();
            let story = (!verdict.passed()).then(|| crate::report::story(scenario, &verdict, &run));
            let timeline = crate::html::Timeline::of(&run);
            let mut outcome = ScenarioOutcome {
                name: scenario.name.clone(),
                file: scenario.path.clone(),
                verdict: Ok(verdict),
                duration,
                story,
                artifacts: None,
                timeline: Some(timeline),
                rerun: None,
            };
            if outcome.verdict.as_ref().is_ok_and(|v| !v.passed()) || keep {
                let dir = run.artifacts_path().to_owned();
                let written = crate::artifacts::write_evidence(
                    &dir,
                    scenario,
                    &run.ledger,
                    outcome.timeline.as_ref().expect("set above"),
                    target,
                    options.probe,
                );
                outcome.artifacts = Some(run.keep_artifacts());
                match written {
                    Ok(rerun) => {
                        outcome.rerun = Some(rerun);
                        let report = crate::html::render(
                            &Certificate::new(target, std::slice::from_ref(&outcome)),
                            std::slice::from_ref(&outcome),
                        );
                        if let Err(e) = std::fs::write(dir.join("report.html"), report) {
                            append_story(
                                &mut outcome,
                                &format!("killpoint: cannot write report.html in {}: {e}", dir.display()),
                            );
                        }
                    }
                    Err(e) => append_story(
                        &mut outcome,
                        &format!("killpoint: cannot write the evidence files in {}: {e}", dir.display()),
                    ),
                }
            }
            outcome
        }
        Err(e) => ScenarioOutcome {
            name: scenario.name.clone(),
            file: scenario.path.clone(),
            verdict: Err(format!("could not run: {e}")),
            duration: started.elapsed(),
            story: None,
            artifacts: None,
            timeline: None,
            rerun: None,
        },
    }
}

/// A harness problem with the artifacts is said where the failure is told, not lost.
fn append_story(outcome: &mut ScenarioOutcome, line: &str) {
    let story = outcome.story.get_or_insert_with(String::new);
    story.push_str(line);
    story.push('\n');
}
