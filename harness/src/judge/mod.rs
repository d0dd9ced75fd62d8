//! The checker: judges a run against every invariant, separately, from the evidence.
//!
//! The ledgers are the ground truth; the runtime's reports are claims checked against them. Each
//! violation names the invariant, the operation and the ledger lines that prove it.
//!
//! One file per family of invariants (the list itself is the model's invariant list), plus the
//! verdict types, fault coverage, the metrics cross-check and its Prometheus reader. This folder
//! imports only the model, tracer, scenario and run layers, never report, search or cli.

mod address;
mod arguments;
mod attribution;
mod authority;
mod coverage;
mod decisions;
mod delivery;
mod execution;
mod fencing;
mod in_flight;
mod ledger;
mod metrics;
mod outcome;
mod policy;
mod prometheus;
mod ready;
mod restore;
mod retry_label;
pub mod rules;
mod sandbox;
mod service_rules;
mod status;
mod submission;
mod synced;
mod verdict;

pub use verdict::{Coverage, Reasked, RestoreRisk, Status, Verdict, Violation};

use crate::run::driver::Run;
use crate::scenario::{Operation, Scenario};
use in_flight::InFlight;
use ledger::OperationLedger;

/// Judges `run` of `scenario`.
///
/// The families run in a fixed order: violations are sorted by invariant and operation, and the
/// sort is stable, so this order decides how ties come out.
pub fn check(scenario: &Scenario, run: &Run) -> Verdict {
    let mut violations = Vec::new();
    let mut coverage = coverage::coverage(scenario, run);
    if let Some(failure) = &run.harness_failure {
        // The record is incomplete for a reason that is not the runtime's: blaming it for an
        // abort or an unsettled operation would be a lie, and so would a pass.
        let error = Some(failure.clone());
        return Verdict {
            scenario: scenario.name.clone(),
            probe: run.probe,
            crash: run.crash,
            violations,
            exercises: Vec::new(),
            coverage,
            error,
            unreachable: Vec::new(),
            reasked: Vec::new(),
            needs_probe_services: Vec::new(),
            restore_risks: Vec::new(),
        };
    }
    ready::ready(run, &mut violations);
    outcome::settled(scenario, run, &mut violations);
    coverage::faults_reached(scenario, run, &mut violations);
    // What the kills may have cut off: the only slack any count is given.
    let in_flight = InFlight::of(&run.ledger, &run.timeline, &run.reports);
    for op in &scenario.operations {
        check_operation(scenario, run, op, &in_flight, &mut violations);
    }
    submission::intent_durable(run, &mut violations);
    // After a restore every count is the backup's, behind the world's (CONTRACT.md section 13, "What cannot be owed"): not held.
    if !restore::restored(run) {
        metrics::metrics_agree(scenario, run, &in_flight, &mut violations);
    }
    if run.aborted.is_none() && !restore::restored(run) {
        retry_label::retry_labels(run, &in_flight, &mut violations);
    }
    submission::idempotent_submission(run, &mut violations);
    fencing::fenced(run, &mut violations);
    arguments::arguments_unchanged(scenario, run, &mut violations);
    decisions::one_decision(scenario, run, &mut violations);
    sandbox::sandboxed(run, &mut violations);
    // A syscall fault whose address this run could not have is the file's mistake: the run is
    // not judged on it, and says so, instead of blaming the runtime for not reaching it.
    let unreachable = if run.aborted.is_none() { address::unreachable(scenario, run) } else { Vec::new() };
    let mut needs_probe_services = Vec::new();
    if run.aborted.is_none() {
        coverage::world_faults_reached(scenario, run, &mut violations);
        let skip: Vec<usize> = unreachable.iter().map(|(i, _)| *i).collect();
        coverage::syscall_faults_reached(scenario, run, &skip, &mut violations);
        needs_probe_services = coverage::service_faults_reached(scenario, run, &mut violations);
    }
    // A kind without lookup that a restore forgot cannot be owed once (CONTRACT.md section 13, "What cannot be owed"): a risk, reported.
    restore::forgive(scenario, run, &mut violations);
    violations.sort_by(|a, b| a.invariant.cmp(&b.invariant).then(a.operation.cmp(&b.operation)));
    attribution::attribute(scenario, &mut coverage, &violations, run);
    let reasked = decisions::reasked(scenario, run);
    let services = service_rules::exercised(run);
    service_rules::name(&services, &mut violations);
    restore::name(scenario, run, &mut violations);
    let mut exercises = rules::caught::exercised(scenario, run.crash);
    exercises.extend(services);
    exercises.sort_by_key(|id| rules::RULES.iter().position(|r| r.id == *id));
    Verdict {
        scenario: scenario.name.clone(),
        probe: run.probe,
        crash: run.crash,
        violations,
        exercises,
        coverage,
        error: scenario_mistake(scenario, &unreachable),
        unreachable: unreachable.iter().map(|(i, _)| *i).collect(),
        reasked,
        needs_probe_services,
        restore_risks: restore::risks(scenario, run),
    }
}

/// The invariants judged one operation at a time, against that operation's part of the ledger.
fn check_operation(
    scenario: &Scenario,
    run: &Run,
    op: &Operation,
    in_flight: &InFlight,
    violations: &mut Vec<Violation>,
) {
    let mut ledger = OperationLedger::of(&run.ledger, &op.id);
    // Calls that lost the planted identity still reached the provider: counted as this
    // operation's, and reported by `arguments_unchanged`, not as attempts that never arrived.
    ledger.calls.extend(arguments::unnamed_calls_of(scenario, run, op));
    ledger.calls.sort_by_key(|e| e.seq);
    let report = run.reports.get(&op.id);
    let mut found = |breach: rules::breach::Breach, message: String, proof: Vec<String>| {
        violations.push(Violation::new(breach, Some(op.id.clone()), message, proof));
    };
    execution::at_most_once(op, &ledger, &mut found);
    execution::stable_keys(op, &ledger, &mut found);
    execution::no_blind_retry(op, &ledger, run, &mut found);
    execution::no_execution_for_delivery(op, &ledger, run, &mut found);
    delivery::delivered_once(scenario, op, &ledger, run, in_flight, report, &mut found);
    policy::policy_respected(op, &ledger, run, report, &mut found);
    policy::policy_checked(op, &ledger, run, &mut found);
    delivery::delivery_backoff(scenario, op, &ledger, run, &mut found);
    let restored = restore::restored(run);
    if !restored {
        delivery::dead_letter_bound(scenario, op, &ledger, in_flight, report, &mut found);
    }
    if run.aborted.is_none() {
        status::truthful_status(op, &ledger, report, in_flight, !restored, &mut found);
        if let Some(expect) = outcome::expectation(scenario, run, op, in_flight) {
            outcome::expected_outcome(op, expect, &ledger, report, &mut found);
        }
    }
}

/// Runs one scenario to a verdict on a fresh single-threaded tokio runtime: from the start, or
/// from the crash state `options.from_kept` (kept beside the case's file) when there is one.
///
/// The runtime is built on the calling thread, so the runtime process is spawned from it: keep the
/// thread alive for the whole call (it is: this blocks), or PDEATHSIG would fire early.
pub fn run_scenario(
    scenario: &Scenario,
    target: &crate::run::incarnation::Target,
    options: &crate::run::driver::RunOptions,
) -> std::io::Result<(Verdict, Run)> {
    let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let run = match &options.from_kept {
        Some(kept) => tokio.block_on(crate::run::driver::run_built(scenario, target, options, &kept.state, None))?.0,
        None => tokio.block_on(crate::run::driver::run(scenario, target, options))?,
    };
    let verdict = check(scenario, &run);
    Ok((verdict, run))
}

/// The error a run whose scenario asked for an unreachable syscall fault reports: the file's
/// mistake, said with where to count from (`address.rs`).
fn scenario_mistake(scenario: &Scenario, unreachable: &[(usize, String)]) -> Option<String> {
    let said: Vec<String> = unreachable
        .iter()
        .map(|(i, why)| {
            format!("{}: [[syscall_fault]] {} cannot be reached in this run: {why}", scenario.path.display(), i + 1)
        })
        .collect();
    (!said.is_empty()).then(|| said.join("\n"))
}
