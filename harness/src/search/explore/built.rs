//! Cases over system calls run from crash states built in an earlier run (`crate::run::built`),
//! not by re-running the workload's prefix: one recovery per case.
//!
//! Depth 1: the record run builds the state at every explored point of its first incarnation.
//! Depth 2: each depth-1 case's run (from its built state, or re-run when its point had none
//! or its kill was at a boundary) builds the states of its recovery, the incarnation after its
//! kill, where its depth-2 kills land. A case runs from a built state when its last kill is a
//! `[[syscall_fault]]` whose state could be built; every other case (a boundary held exactly
//! without the probe, a freeze or revocation and what follows it, a point whose world could not
//! be recorded in time) is re-run, as is everything with `--rerun-prefix`: untraced when the
//! tracer has nothing to do in it, as at a boundary the world or the client holds
//! (the `untraced` module). Both give the same [`Finding`]: the case's scenario. A failing case
//! keeps the state its recovery started from beside its written file (`crate::run::built::kept`:
//! the built one, or for a re-run case the one its last kill left), where `killpoint run` starts
//! from it.
//!
//! With the probe, at depth 2: each depth-1 case of one plain kill runs traced up to its kill and
//! takes the state the kill left (`crate::run::built::after_kill`); its depth-2 cases start there
//! ([`Shelf::after_kill_for`]), their second kill armed in the world the state holds
//! (`run::driver::arming::arm_unfired`), as the re-run would have it armed from the start. Which
//! boundary occurrences the prefix passed is in the state's marks, counted again as the recovery
//! opens.

use super::case::{Case, Workload};
use super::finding::{Finding, finding_of};
use crate::judge::Verdict;
use crate::run::built::after_kill::AfterKill;
use crate::run::built::{Built, BuiltState, BuiltStates};
use crate::run::driver::{Recording, Run, RunOptions};
use crate::run::incarnation::Target;
use crate::scenario::Scenario;

/// The record run of `scenario`, building the crash state at every explored point of its first
/// incarnation (`None` when this machine cannot trace: nothing is built, every case re-runs).
pub fn record(
    scenario: &Scenario,
    target: &Target,
    options: &RunOptions,
) -> std::io::Result<(Verdict, Run, Option<BuiltStates>)> {
    building(scenario, target, options, Recording { incarnation: 1 })
}

/// `scenario` run traced from the start and judged, building the states `recording` says.
fn building(
    scenario: &Scenario,
    target: &Target,
    options: &RunOptions,
    recording: Recording,
) -> std::io::Result<(Verdict, Run, Option<BuiltStates>)> {
    let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (run, built) = tokio.block_on(crate::run::driver::record_states(scenario, target, options, recording))?;
    let verdict = crate::judge::check(scenario, &run);
    Ok((verdict, run, built))
}

/// The crash states an exploration has built: the record run's, and each depth-1 case's
/// recovery's (by that case).
#[derive(Debug, Default)]
pub(super) struct Shelf {
    pub(super) record: Option<BuiltStates>,
    pub(super) recoveries: Vec<(Case, BuiltStates)>,
    /// With the probe: the state each depth-1 boundary case's kill left, taken right after it
    /// under the tracer (`crate::run::built::after_kill`), where its depth-2 cases start.
    pub(super) after_kills: Vec<(Case, AfterKill)>,
}

impl Shelf {
    /// The state a depth-2 case of boundary kills starts from: the one its first kill left.
    pub(super) fn after_kill_for(&self, case: &Case) -> Option<&BuiltState> {
        let parent = case.boundary_parent()?;
        self.after_kills.iter().find(|(c, _)| *c == parent).map(|(_, taken)| &taken.state)
    }

    /// The states `case` may run from: its depth's, when its last kill is a system call.
    pub(super) fn for_case(&self, case: &Case) -> Option<&BuiltStates> {
        if case.syscalls_only() && case.syscalls.len() == 1 {
            return self.record.as_ref();
        }
        let parent = case.parent()?;
        self.recoveries.iter().find(|(c, _)| *c == parent).map(|(_, states)| states)
    }
}

/// What a depth-1 case's run builds for depth 2: the states of its recovery (incarnation 2),
/// when it has one plain kill, at a system call or a boundary (not a freeze or a revocation,
/// whose recoveries are re-run).
pub(super) fn for_depth_two(case: &Case) -> Option<Recording> {
    case.single_kill().then_some(Recording { incarnation: 2 })
}

/// Why `case`, whose kills are system calls, is re-run though states were built: its last
/// point's state could not be built faithfully (`None`: it has a state, or is no such case).
pub(super) fn unbuilt(case: &Case, built: &BuiltStates) -> Option<&'static str> {
    let fault = case.syscalls.last()?;
    match built.at(fault)? {
        Built::Unbuilt { reason, .. } => Some(reason),
        Built::Ready(_) => None,
    }
}

/// A case run, with the crash states its run built for the next depth.
pub(super) type Played = (Finding, Run, Option<BuiltStates>);

/// Runs `case` from its built state in `built` (the states of its depth), if it has one (`None`:
/// it must be re-run), building what `recording` says on the way.
pub(super) fn run_case_built(
    workload: &Workload,
    case: &Case,
    target: &Target,
    options: &RunOptions,
    built: &BuiltStates,
    recording: Option<Recording>,
) -> Option<std::io::Result<Played>> {
    let state = built.ready_at(case.syscalls.last()?)?;
    Some(run_from(workload, case, target, options, state, recording))
}

/// Runs `case` from `state`, a crash state of its prefix, building what `recording` says.
pub(super) fn run_from(
    workload: &Workload,
    case: &Case,
    target: &Target,
    options: &RunOptions,
    state: &BuiltState,
    recording: Option<Recording>,
) -> std::io::Result<Played> {
    let scenario = case.scenario(workload);
    let played = (|| {
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (run, states) =
            tokio.block_on(crate::run::driver::run_built(&scenario, target, options, state, recording))?;
        let verdict = crate::judge::check(&scenario, &run);
        Ok((verdict, run, states))
    })();
    played.map(|(verdict, run, states)| {
        let (finding, run) = finding_of(workload, case, scenario, verdict, run);
        (Finding { built: true, ..finding }, run, states)
    })
}

/// Re-runs `case` from the start, building what `recording` says on the way.
pub(super) fn rerun_building(
    workload: &Workload,
    case: &Case,
    target: &Target,
    options: &RunOptions,
    recording: Recording,
) -> std::io::Result<Played> {
    let scenario = case.scenario(workload);
    let (verdict, run, states) = building(&scenario, target, options, recording)?;
    let (finding, run) = finding_of(workload, case, scenario, verdict, run);
    Ok((finding, run, states))
}
