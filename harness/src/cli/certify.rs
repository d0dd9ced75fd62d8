//! `killpoint certify`: every chosen scenario against the runtime, then the scenario, boundary ×
//! tool kind, contract-rule and checklist tables, and the reports asked for.

use super::setup::{artifacts_root, reports_writable, scenarios, target, traced_options};
use super::{Output, Runtime, Selection, Usage};
use crate::judge::Verdict;
use crate::report::certificate::Certificate;
use crate::report::checklist::Answer;
use crate::report::outcome::ScenarioOutcome;
use crate::report::{certify, story};
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use crate::run::services::Services;
use crate::scenario::Scenario;
use crate::search::explore::Points;
use std::process::ExitCode;

/// `killpoint certify`'s options.
#[derive(Debug, Clone)]
pub struct CertifyCommand {
    pub runtime: Runtime,
    pub select: Selection,
    pub output: Output,
    /// `--operations`: each scenario's workload this many times over.
    pub operations: u32,
    /// `--jobs`: scenarios run at once (default: twice the number of cores).
    pub jobs: Option<u32>,
    /// `--points`: `Syscalls` runs the runtime under killpoint-tracer.
    pub points: Points,
}

impl CertifyCommand {
    pub fn run(&self) -> Result<ExitCode, Usage> {
        reports_writable(&self.output)?;
        let target = target(&self.runtime)?;
        let scenarios = scenarios(&self.select, self.operations)?;
        let options =
            RunOptions { artifacts_root: artifacts_root(&self.output)?, ..traced_options(&self.runtime, self.points) };
        Ok(certify(&scenarios, &target, &options, &self.output, self.jobs, Checklist::Whole))
    }
}

/// What the tables are printed for: a whole certification, or `run`'s one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Checklist {
    /// A certification answers for the runtime: all eight questions, and every contract rule's
    /// status.
    Whole,
    /// One scenario shows one or two questions, and a few rules: only the questions it answered
    /// (`yes` or `no`) and the rules it established or violated are printed, the rest counted in a
    /// line — forty lines of "not shown" or "not exercised" would bury them (the JSON and HTML
    /// still have all).
    Shown,
}

/// The scenarios a runtime of `contract` can be held to: under an older version, those that need
/// what it does not have (tasks) are left out, said in one line.
fn claimed(scenarios: &[Scenario], contract: crate::model::contract::Version) -> (Vec<Scenario>, Option<String>) {
    let (kept, left): (Vec<&Scenario>, Vec<&Scenario>) =
        scenarios.iter().partition(|s| contract.has_tasks() || !s.operations.iter().any(|op| op.task));
    let note = (!left.is_empty()).then(|| {
        let names: Vec<&str> = left.iter().map(|s| s.name.as_str()).collect();
        let (rules, what) = contract.not_claimed();
        format!(
            "not run under {contract}, which has no {what}: {} (rules not claimed: {})\n",
            names.join(", "),
            rules.join(", ")
        )
    });
    (kept.into_iter().cloned().collect(), note)
}

/// The scenarios a runtime with `services` can be held to: without services, those that act on a
/// runtime's server (`service = "*"`, `needs_services`) are left out, said in one line — not
/// run, never counted as passed.
pub(super) fn with_services(scenarios: Vec<Scenario>, services: &Services) -> (Vec<Scenario>, Option<String>) {
    if !services.is_empty() {
        return (scenarios, None);
    }
    let (left, kept): (Vec<Scenario>, Vec<Scenario>) = scenarios.into_iter().partition(Scenario::needs_services);
    let names: Vec<&str> = left.iter().map(|s| s.name.as_str()).collect();
    let note =
        (!left.is_empty()).then(|| format!("not run: no services declared (--services FILE): {}\n", names.join(", ")));
    (kept, note)
}

/// Certifies `scenarios` and prints what `certify` prints; `run` shares it for its one scenario.
pub(super) fn certify(
    scenarios: &[Scenario],
    target: &Target,
    options: &RunOptions,
    output: &Output,
    jobs: Option<u32>,
    checklist: Checklist,
) -> ExitCode {
    let (scenarios, not_claimed) = claimed(scenarios, options.contract);
    let (scenarios, no_services) = with_services(scenarios, &options.services);
    // The program and its arguments: `python3 my.py` is the script's certificate, not python's.
    let runtime = std::iter::once(target.program.display().to_string()).chain(target.args.iter().cloned());
    let (runtime, count, crash) = (runtime.collect::<Vec<_>>().join(" "), scenarios.len(), options.crash.name());
    outln!("certifying {runtime} against {count} scenario(s), {crash} crashes\n");
    if let Some(note) = not_claimed {
        outln!("{note}");
    }
    if let Some(note) = no_services {
        outln!("{note}");
    }
    if !options.services.is_empty() {
        let names: Vec<&str> = options.services.list.iter().map(|s| s.name.as_str()).collect();
        let kills = match options.crash {
            crate::model::crash::Crash::Process => "every kill takes the worker alone",
            crate::model::crash::Crash::Machine => "every kill is a power loss of the worker and every service",
            crate::model::crash::Crash::Restore => "restores are refused with services",
        };
        outln!(
            "with services {} beside the worker: each started once per scenario, {kills} (CONTRACT.md section 2, \"Services\")\n",
            names.join(", ")
        );
    }
    let jobs = jobs.map_or(crate::search::explore::default_jobs(), |j| j as usize);
    let outcomes = certify::certify(&scenarios, target, options, output.keep_artifacts, jobs);
    print_failures(&outcomes);
    let certificate = print_tables(target, &outcomes, checklist, options.contract).with_services(&options.services);
    if let Err(code) = write_reports(output, &certificate, &outcomes) {
        return code;
    }
    let failed = outcomes.iter().any(|o| o.verdict.as_ref().map_or(true, |v| !v.passed()));
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// On stderr, each failure's story, where its artifacts are kept and how to rerun it.
fn print_failures(outcomes: &[ScenarioOutcome]) {
    for o in outcomes {
        if let Some(story) = &o.story {
            errln!("{story}");
        }
        if let Some(path) = &o.artifacts {
            errln!("{}: {}", o.name, crate::run::artifacts::kept_at(path));
        }
        if let Some(rerun) = &o.rerun {
            errln!("{}: rerun exactly this case with: {}\n", o.name, rerun.display());
        }
    }
}

/// On stdout, the scenario, boundary × tool kind, contract-rule and checklist tables; returns the
/// certificate they come from.
fn print_tables(
    target: &Target,
    outcomes: &[ScenarioOutcome],
    checklist: Checklist,
    contract: crate::model::contract::Version,
) -> Certificate {
    let rows: Vec<(String, Result<Verdict, String>)> =
        outcomes.iter().map(|o| (o.name.clone(), o.verdict.clone())).collect();
    out!("{}", story::table(&rows));
    let verdicts: Vec<&Verdict> = outcomes.iter().filter_map(|o| o.verdict.as_ref().ok()).collect();
    outln!("\n{}", story::matrix_table(&story::matrix(&verdicts)));
    let traced = story::at_syscalls(&verdicts);
    if !traced.is_empty() {
        let names: Vec<&str> = traced.iter().map(|b| b.as_str()).collect();
        outln!(
            "hit exactly at system calls, without the probe (killpoint-tracer, CONTRACT.md section 7): {}\n",
            names.join(", ")
        );
    }
    let certificate = Certificate::new(target, outcomes).with_contract(contract);
    let rules = match checklist {
        Checklist::Whole => crate::judge::rules::summarise(&certificate.rules),
        Checklist::Shown => crate::judge::rules::summarise_shown(&certificate.rules),
    };
    outln!("{rules}\n");
    let items = &certificate.checklist;
    let shown: Vec<_> = match checklist {
        Checklist::Whole => items.clone(),
        Checklist::Shown => items.iter().filter(|i| i.answer != Answer::NotShown).cloned().collect(),
    };
    out!("{}", crate::report::checklist::table(&shown));
    if shown.len() < items.len() {
        outln!(
            "  ({} of the {} questions not shown by this run; `killpoint certify` answers them, with `--crash machine` for durability and `--crash restore` for rebuilding)",
            items.len() - shown.len(),
            items.len()
        );
    }
    outln!();
    certificate
}

/// The JSON, JUnit and HTML reports asked for, each written even if another cannot be (each
/// failure said); a report that cannot be written is exit 2.
fn write_reports(output: &Output, certificate: &Certificate, outcomes: &[ScenarioOutcome]) -> Result<(), ExitCode> {
    let html = output.html.as_ref().map(|_| crate::report::html::render(certificate, outcomes)).unwrap_or_default();
    let now = std::time::SystemTime::now();
    let otlp = output.otlp.as_ref().map(|_| crate::report::otlp::render(outcomes, &certificate.runtime.path, now));
    let mut written = Ok(());
    for (path, text, what) in [
        (&output.json, certificate.to_json(), "JSON certificate"),
        (&output.junit, certificate.to_junit(), "JUnit report"),
        (&output.html, html, "HTML report"),
        (&output.otlp, otlp.unwrap_or_default(), "OTLP traces"),
    ] {
        let Some(path) = path else { continue };
        match std::fs::write(path, text) {
            Ok(()) => outln!("{what} written to {}", path.display()),
            Err(e) => {
                errln!("killpoint: cannot write the {what} to {}: {e}", path.display());
                written = Err(ExitCode::from(2));
            }
        }
    }
    written
}
