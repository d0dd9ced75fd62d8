//! A `[[syscall_fault]]` whose address this run could not have: the scenario's mistake, not the
//! runtime's (issue 32, item 14).
//!
//! A fault counted `since` a boundary is the n-th point of its kind after that boundary was
//! reached — and the count starts again at every boundary reached after it (CONTRACT.md section 7,
//! "Boundaries at system calls"). When the run reached the anchor, and then another boundary
//! before the n-th point, the fault's address does not exist in this run: the runtime did all it
//! should, and the file asks for a point that is counted from elsewhere. `faults_reached` would
//! blame the runtime; this says what happened instead, and from where to count.

use crate::run::driver::Run;
use crate::run::traced::SyscallPoint;
use crate::scenario::{Anchor, Scenario, SyscallFault};

/// For each `[[syscall_fault]]` that never fired and whose address this run could not have: its
/// index, and why, for the person who wrote the file.
pub(super) fn unreachable(scenario: &Scenario, run: &Run) -> Vec<(usize, String)> {
    scenario
        .syscall_faults
        .iter()
        .enumerate()
        .filter(|(i, _)| run.syscall_hits.get(*i) != Some(&true))
        .filter_map(|(i, fault)| Some((i, why(fault, fault.since.as_ref()?, &run.syscall_points)?)))
        .collect()
}

/// Why `fault`, counted since `anchor`, could not be reached among `points`; `None` when the
/// run does not show that it could not (the anchor never reached, or too few points after it
/// with no boundary in the way: the runtime may be the one that stopped short).
fn why(fault: &SyscallFault, anchor: &Anchor, points: &[SyscallPoint]) -> Option<String> {
    let at = points.iter().position(|p| p.boundaries.contains(anchor))?;
    let incarnation = points[at].incarnation;
    let after = points[at + 1..].iter().take_while(|p| p.incarnation == incarnation);
    let mut counted = 0;
    for point in after {
        // A point that reaches a boundary is itself counted from the one before (the tracer
        // moves the anchor after counting it).
        if point.kind == fault.kind && point.when == fault.when {
            counted += 1;
        }
        // A delivery attempt's anchor starts only delivery counts again.
        let restarts = |b: &&Anchor| anchor.is_delivery() || !b.is_delivery();
        if let Some(next) = point.boundaries.iter().rev().find(restarts) {
            let kind = format!("{} {}", fault.kind.name(), fault.when.name());
            return Some(format!(
                "`{anchor}` was reached at `{}`, and only {counted} `{kind}` point(s) came after it before `{next}` was reached at `{}`, where the count starts again (CONTRACT.md section 7): point #{} since `{anchor}` does not exist in this run. Count from `{next}` instead (the scenario's file, not the runtime)",
                points[at].what, point.what, fault.occurrence
            ));
        }
    }
    None
}
