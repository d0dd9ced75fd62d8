//! The agent loops (CONTRACT.md §12, issue 30): a framework's own OpenAI model class asks the
//! world's fake model which tool to call (`examples/<framework>/agent_naive.py`,
//! `agent_corrected.py`), the model answering another decision every time it is asked.
//!
//! - `frameworks::[black_box::]<framework>::agent::naive::model_decides`: the naive loop fails
//!   `one_decision` — two different decisions acted on for one task — for an operation the
//!   scenario kills at `after_dispatch`, the fault the verdict attributes it to (the kill came
//!   between the two calls: where the divergence began).
//! - `frameworks::[black_box::]<framework>::agent::corrected::<scenario>`: the corrected loop passes
//!   `model_decides` (a task of each tool kind killed after dispatch, and a charge the provider
//!   never applied) and `model_unavailable` (the model fails, answers garbage, answers late).
//!
//! Black box: `--no-probe`, under the tracer where this machine allows it. Every fault of these
//! scenarios is `after_dispatch`, where the world kills (it holds the provider's answer) with or
//! without the probe; what the black box adds is the runtime started without a probe socket.
//!
//! What they cost (issue 30 allows the frameworks 30 s more): every incarnation imports its
//! framework and the OpenAI client (1.5 to 2.5 s of CPU), and `model_decides` kills five times.
//! So by default each trial runs the operations where the framework's part differs (`Keep`):
//!
//! - naive: only the operation killed first (`only_the_first_killed`): its divergence is the
//!   failure asked for, and every other operation repeats it;
//! - corrected, with the probe: `model_decides`' `charge` (the framework's record of the decision
//!   meets the kill, the lookup finds the effect) and `charge-not-applied` (the lookup finds
//!   nothing, and the framework's decision is acted on); the ticket, the status update and the SMS
//!   are settled by the kit's reconciliation alone, whichever decision the framework hands it
//!   (`frameworks::python_kit`, `python::`); and `model_unavailable` whole;
//! - corrected, as a black box: `model_decides`' first operation, and no `model_unavailable`, whose
//!   faults are the model's and whose kill is the world's: the run with the probe shows them.
//!
//! `KILLPOINT_FRAMEWORKS=all` runs them all, whole.

use super::{Matrix, Version, interpreter};
use killpoint::trials::only_the_first_killed;
use killpoint::{Boundary, Hit, Invariant, RunOptions, Scenario, Target, Verdict, run_scenario};
use libtest_mimic::Failed;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The frameworks whose agent loop is certified with their own OpenAI model class.
pub const AGENTS: [&str; 2] = ["pydantic_ai", "langgraph"];

/// One agent trial: which loop, which scenario, how.
#[derive(Clone)]
pub struct AgentTrial {
    pub name: String,
    script: PathBuf,
    scenario: PathBuf,
    version: Version,
    probe: bool,
    keep: Keep,
}

/// Which of the scenario's operations a trial runs (module doc).
#[derive(Clone, Copy, PartialEq)]
enum Keep {
    All,
    FirstKilled,
    Only(&'static [&'static str]),
}

/// `model_decides`' operations where the framework's part differs (module doc).
const FRAMEWORKS_PART: &[&str] = &["charge", "charge-not-applied"];

/// The agent trials of `matrix`, for the repository at `root`.
pub fn trials(root: &Path, matrix: Matrix) -> Vec<AgentTrial> {
    let all = matrix == Matrix::All;
    // (version, scenario, with the probe, what runs by default); a black box of
    // model_unavailable only in the whole matrix.
    let plan = [
        (Version::Naive, "model_decides", true, Keep::FirstKilled),
        (Version::Naive, "model_decides", false, Keep::FirstKilled),
        (Version::Corrected, "model_decides", true, Keep::Only(FRAMEWORKS_PART)),
        (Version::Corrected, "model_decides", false, Keep::FirstKilled),
        (Version::Corrected, "model_unavailable", true, Keep::All),
    ];
    let black_box_unavailable = [(Version::Corrected, "model_unavailable", false, Keep::All)];
    let mut trials = Vec::new();
    for framework in AGENTS {
        for &(version, scenario, probe, keep) in plan.iter().chain(if all { &black_box_unavailable[..] } else { &[] }) {
            let prefix = if probe { "" } else { "black_box::" };
            trials.push(AgentTrial {
                name: format!("frameworks::{prefix}{framework}::agent::{}::{scenario}", version.name()),
                script: root.join("examples").join(framework).join(format!("agent_{}.py", version.name())),
                scenario: root.join("scenarios").join(format!("{scenario}.toml")),
                version,
                probe,
                keep: if all { Keep::All } else { keep },
            });
        }
    }
    trials
}

/// Runs `trial` with the frameworks' interpreter `python`.
pub fn run(python: &Path, trial: &AgentTrial) -> Result<(), Failed> {
    interpreter(python)?;
    let mut scenario = Scenario::load(&trial.scenario).map_err(|e| e.to_string())?;
    match trial.keep {
        Keep::All => {}
        Keep::FirstKilled => only_the_first_killed(&mut scenario)?,
        Keep::Only(operations) => only(&mut scenario, operations)?,
    }
    // A hang bound: a framework imported on a loaded 2-core machine, traced, starts slowly.
    scenario.deadline = scenario.deadline.max(std::time::Duration::from_secs(20));
    let scenario = Arc::new(scenario);
    let target = Target { program: python.to_owned(), args: vec![trial.script.display().to_string()] };
    let options = RunOptions {
        probe: trial.probe,
        syscalls: !trial.probe && killpoint::run::traced::permitted().is_ok(),
        ready_timeout: std::time::Duration::from_secs(60),
        ..RunOptions::default()
    };
    let (verdict, run) = run_scenario(&scenario, &target, &options)
        .map_err(|e| format!("scenario `{}` could not run: {e}", scenario.name))?;
    let story = || killpoint::report::story::story(&scenario, &verdict, &run);
    let script = trial.script.display();
    match trial.version {
        Version::Corrected if verdict.passed() => Ok(()),
        Version::Corrected => Err(format!("{script} was expected to pass `{}`:\n{}", scenario.name, story()).into()),
        Version::Naive => match diverged_after_dispatch(&scenario, &verdict, &run.killed) {
            Some(operation) if run.aborted.is_none() => {
                eprintln!("{script} fails `{}` as expected: one_decision for {operation}, killed at after_dispatch", scenario.name);
                Ok(())
            }
            _ => Err(format!(
                "{script} was expected to fail `{}` on one_decision (two decisions acted on) for an operation killed at after_dispatch, the kill between the two calls; found violated: [{}]\n{}",
                scenario.name,
                verdict.failed_invariants().iter().map(|i| i.as_str()).collect::<Vec<_>>().join(", "),
                story()
            )
            .into()),
        },
    }
}

/// The operation of a fault at `after_dispatch` that killed (its moment known) and to which the
/// verdict attributes a `one_decision` violation of that operation: the kill came between the
/// call on the first decision and the call on the second.
fn diverged_after_dispatch(scenario: &Scenario, verdict: &Verdict, killed: &[Option<u64>]) -> Option<String> {
    scenario.faults.iter().enumerate().find_map(|(i, fault)| {
        let coverage = verdict.coverage.get(i)?;
        let reached = matches!(coverage.hit, Hit::Exact | Hit::AtSyscall);
        let diverged = coverage.violations.iter().any(|&v| {
            verdict.violations.get(v).is_some_and(|violation| {
                violation.invariant == Invariant::OneDecision
                    && violation.operation.as_deref() == Some(fault.operation.as_str())
            })
        });
        let at = fault.at == Boundary::AfterDispatch && killed.get(i).copied().flatten().is_some();
        (at && reached && diverged).then(|| fault.operation.clone())
    })
}

/// Keeps of `scenario` the `operations`, with their kills and their model's faults.
fn only(scenario: &mut Scenario, operations: &[&str]) -> Result<(), String> {
    let others = !scenario.consumer_faults.is_empty()
        || !scenario.syscall_faults.is_empty()
        || !scenario.lookup_faults.is_empty()
        || !scenario.policy_faults.is_empty();
    if others {
        return Err(format!(
            "expected `{}` to have kills and model faults only, found faults of other kinds",
            scenario.name
        ));
    }
    let missing: Vec<&&str> =
        operations.iter().filter(|id| !scenario.operations.iter().any(|op| op.id == **id)).collect();
    if !missing.is_empty() {
        return Err(format!(
            "expected `{}` to have the operations {operations:?}, found no {missing:?}",
            scenario.name
        ));
    }
    scenario.operations.retain(|op| operations.contains(&op.id.as_str()));
    scenario.faults.retain(|fault| operations.contains(&fault.operation.as_str()));
    scenario.model_faults.retain(|fault| operations.contains(&fault.operation.as_str()));
    Ok(())
}
