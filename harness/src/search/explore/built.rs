//! Depth-1 cases over system calls run from crash states built in the record run
//! (`crate::run::built`), not by re-running the workload's prefix: one recovery per case.
//!
//! A case runs from a built state when its one kill is a `[[syscall_fault]]` of the record run's
//! first incarnation and that point's state could be built; every other case (a boundary held
//! exactly without the probe, a depth-2 case, a point whose world could not be recorded in
//! time) is re-run, as is everything with `--rerun-prefix`. Both give the same [`Finding`]: the
//! case's scenario, which `killpoint run` replays by re-running the prefix.

use super::case::{Case, Workload};
use super::finding::{Finding, finding_of};
use super::syscalls::explored;
use crate::judge::Verdict;
use crate::run::built::{Built, BuiltStates};
use crate::run::driver::{Run, RunOptions};
use crate::run::incarnation::Target;
use crate::scenario::Scenario;

/// The record run of `scenario`, building the crash state at every explored point of its first
/// incarnation (`None` when this machine cannot trace: nothing is built, every case re-runs).
pub fn record(
    scenario: &Scenario,
    target: &Target,
    options: &RunOptions,
) -> std::io::Result<(Verdict, Run, Option<BuiltStates>)> {
    let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (run, built) = tokio.block_on(crate::run::driver::record_states(scenario, target, options, explored))?;
    let verdict = crate::judge::check(scenario, &run);
    Ok((verdict, run, built))
}

/// Why `case`, a depth-1 case at a system-call point, is re-run though states were built: the
/// point's state could not be built faithfully (`None`: it has a state, or is no such case).
pub(super) fn unbuilt(case: &Case, built: &BuiltStates) -> Option<&'static str> {
    let [fault] = case.syscalls.as_slice() else { return None };
    match built.at(fault)? {
        Built::Unbuilt { reason, .. } => Some(reason),
        Built::Ready(_) => None,
    }
}

/// Runs `case` from its built state, if it has one (`None`: it must be re-run).
pub fn run_case_built(
    workload: &Workload,
    case: &Case,
    target: &Target,
    options: &RunOptions,
    built: &BuiltStates,
) -> Option<std::io::Result<(Finding, Run)>> {
    let [fault] = case.syscalls.as_slice() else { return None };
    if !case.kills.is_empty() || !case.revoke.is_empty() || case.freeze {
        return None;
    }
    let Some(Built::Ready(state)) = built.at(fault) else { return None };
    let scenario = case.scenario(workload);
    let played = (|| {
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let run = tokio.block_on(crate::run::driver::run_built(&scenario, target, options, state))?;
        let verdict = crate::judge::check(&scenario, &run);
        Ok((verdict, run))
    })();
    Some(played.map(|(verdict, run)| {
        let (finding, run) = finding_of(workload, case, scenario, verdict, run);
        (Finding { built: true, ..finding }, run)
    }))
}
