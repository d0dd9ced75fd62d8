//! Depth 2: a crash while reconciling a crash. The recovery of a depth-1 run (what the operations
//! in flight at its kill did after the restart) is where its depth-2 kills land.

use super::boundaries::points;
use super::case::Case;
use super::finding::Finding;
use super::point::Point;
use super::prune::{Pruned, prune_syscalls, select};
use super::syscalls;
use crate::run::driver::{Happening, Run};
use crate::scenario::{Scenario, SyscallFault};
use std::collections::BTreeSet;

/// What the recovery of one depth-1 run adds to an exploration.
#[derive(Debug, Default)]
pub(super) struct Recovery {
    /// Crash points found in the recovery.
    pub(super) points: usize,
    /// Of those (boundary points): of the operation the first kill was for, and of the others in
    /// flight at the kill (see `interleaving`).
    pub(super) own: usize,
    pub(super) beside: usize,
    pub(super) pruned: Vec<(Point, Pruned)>,
    pub(super) same_state: Vec<(SyscallFault, SyscallFault)>,
    /// The depth-2 cases: the depth-1 case with one more kill, in the recovery.
    pub(super) cases: Vec<Case>,
}

/// The recovery of the depth-1 `run` of `finding`, or `None` when the run was not killed.
pub(super) fn recovery(finding: &Finding, run: &Run, syscalls: bool, prune: bool) -> Option<Recovery> {
    // The recovery: what the operations in flight at the kill did after it.
    let kill_seq = run.timeline.iter().find(|m| matches!(m.happening, Happening::Killed { .. })).map(|m| m.seq)?;
    if syscalls {
        return Some(over_syscalls(finding, run, prune));
    }
    let in_flight = in_flight_at(&finding.scenario, run, kill_seq);
    let seen = points(&finding.scenario, run, Some((kill_seq, &in_flight)));
    let found = seen.len();
    let killed = finding.case.kills.first().map(|p| p.operation.as_str());
    let own = seen.iter().filter(|s| Some(s.point.operation.as_str()) == killed).count();
    let (to_run, pruned) = select(&finding.scenario, seen, prune);
    let cases = to_run
        .into_iter()
        .map(|q| {
            let mut kills = finding.case.kills.clone();
            kills.push(q);
            Case { kills, revoke: finding.case.revoke.clone(), freeze: false, syscalls: Vec::new() }
        })
        .collect();
    Some(Recovery { points: found, own, beside: found - own, pruned, cases, ..Recovery::default() })
}

/// The recovery's system calls, each a kill added to the case's.
fn over_syscalls(finding: &Finding, run: &Run, prune: bool) -> Recovery {
    let recovery = syscalls::recovery(run);
    let found = recovery.len();
    let (kept, same_state) = if prune { prune_syscalls(recovery) } else { (recovery, Vec::new()) };
    let cases = kept
        .into_iter()
        .map(|q| {
            let mut syscalls = finding.case.syscalls.clone();
            syscalls.push(q.fault());
            Case { syscalls, ..finding.case.clone() }
        })
        .collect();
    Recovery { points: found, same_state, cases, ..Recovery::default() }
}

/// Operations accepted before `seq` that had not settled: those whose recovery follows a kill.
fn in_flight_at(scenario: &Scenario, run: &Run, seq: u64) -> BTreeSet<String> {
    let accepted: BTreeSet<String> = run
        .timeline
        .iter()
        .filter(|m| m.seq < seq)
        .filter_map(|m| match &m.happening {
            Happening::Answered { operation, .. } => Some(operation.clone()),
            _ => None,
        })
        .collect();
    // Settled before the kill: its wave ended before the kill's wave began. Waves settle whole, so
    // an operation of an earlier wave than the killed one is done.
    let waves = scenario.waves();
    let killed_wave = run
        .timeline
        .iter()
        .filter(|m| m.seq <= seq)
        .filter_map(|m| match &m.happening {
            Happening::Submitted { operation } => waves.iter().position(|w| w.iter().any(|o| o.id == *operation)),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    accepted
        .into_iter()
        .filter(|id| waves.iter().position(|w| w.iter().any(|o| o.id == *id)) == Some(killed_wave))
        .collect()
}
