//! Crash points over system calls (`--points syscalls`, seen by `killpoint-tracer`): which calls
//! are explored, the depth-1 cases at them (and, without the probe, at the boundaries the world
//! and the harness's client hold exactly), and the calls of a kill's recovery.

use super::boundaries::{points, schedules};
use super::case::{Case, Workload};
use super::point::Point;
use super::prune::{occupied, prune_syscalls};
use crate::model::boundary::Boundary;
use crate::run::driver::{Happening, Run};
use crate::scenario::SyscallFault;

/// The depth-1 cases over system calls of a record run, and what the plan says of them.
pub(super) struct SyscallPlan {
    /// Points found: the explored system calls, and the boundaries held exactly.
    pub(super) points: usize,
    pub(super) cases: Vec<Case>,
    /// See the plan's `exact`.
    pub(super) exact: Vec<(Boundary, usize)>,
    /// See the plan's `same_state`.
    pub(super) same_state: Vec<(SyscallFault, SyscallFault)>,
}

/// The depth-1 cases of the record `run` over system calls: a kill at each explored call of the
/// first incarnation (pruned when `prune`), a freeze just before the first request after each
/// boundary (`freezes`), and without the probe a kill at each boundary held exactly.
pub(super) fn plan(workload: &Workload, run: &Run, prune: bool) -> SyscallPlan {
    let explored: Vec<&crate::run::traced::SyscallPoint> =
        run.syscall_points.iter().filter(|p| p.incarnation == 1 && explored(p)).collect();
    let found = explored.len();
    let frozen = freezes(workload, &explored);
    let (kept, same_state) = if prune { prune_syscalls(explored) } else { (explored, Vec::new()) };
    let mut cases: Vec<Case> = kept
        .iter()
        .map(|p| Case { kills: Vec::new(), revoke: Vec::new(), freeze: false, syscalls: vec![p.fault()] })
        .collect();
    cases.extend(frozen);
    let syscall_cases = cases.len();
    let mut exact = Vec::new();
    // Without the probe, the boundaries the world and the harness's client hold exactly are
    // crash points too; the tracer's are among the system-call points.
    if !run.probe {
        let held = held(workload, run);
        cases.extend(schedules(&workload.base, &held, false));
        exact = exact_counts(run, &held);
    }
    SyscallPlan { points: found + cases.len() - syscall_cases, cases, exact, same_state }
}

/// A freeze just before the first request after each boundary the tracer reached (CONTRACT.md
/// §9-3): the outlived incarnation's next act is that request, which the world refuses `409
/// fenced`, and it must exit on the answer. Only for an operation alone in its wave, as a freeze
/// at a boundary: a replacement must not wait on what a held neighbour holds. Not pruned by crash
/// state: what is judged is what the resumed incarnation does, which no state shows.
fn freezes(workload: &Workload, explored: &[&crate::run::traced::SyscallPoint]) -> Vec<Case> {
    use crate::tracer::{PointKind, When};
    let waves = workload.base.waves();
    let alone = |op: &str| waves.iter().any(|w| w.len() == 1 && w[0].id == op);
    explored
        .iter()
        .filter(|p| p.kind == PointKind::Request && p.when == When::Before && p.occurrence == 1)
        .filter(|p| p.since.as_ref().is_some_and(|a| alone(&a.operation)))
        .map(|p| Case { kills: Vec::new(), revoke: Vec::new(), freeze: true, syscalls: vec![p.fault()] })
        .collect()
}

/// The boundaries of the record run held exactly without the probe (by the fake world or the
/// harness's client), less those a kept world fault answers.
fn held(workload: &Workload, run: &Run) -> Vec<Point> {
    points(&workload.base, run, None)
        .into_iter()
        .map(|s| s.point)
        .filter(|p| matches!(p.at, Boundary::AfterSubmit | Boundary::AfterDispatch | Boundary::AfterDeliverySend))
        .filter(|p| !occupied(&workload.base, p))
        .collect()
}

/// Each boundary of the seed's table with how many of its occurrences the record run passed.
fn exact_counts(run: &Run, held: &[Point]) -> Vec<(Boundary, usize)> {
    Boundary::ALL
        .into_iter()
        .map(|b| {
            let n = if b.at_syscall() {
                run.syscall_points.iter().flat_map(|p| &p.boundaries).filter(|a| a.boundary == b).count()
            } else {
                held.iter().filter(|p| p.at == b).count()
            };
            (b, n)
        })
        .collect()
}

/// The system-call points explored (`PointKind::explored`: syncs, renames and unlinks, before and
/// after; requests before; answers after).
pub(super) fn explored(point: &crate::run::traced::SyscallPoint) -> bool {
    point.kind.explored(point.when)
}

/// The recovery's system calls: every explored point of the incarnation after the kill.
pub(super) fn recovery(run: &Run) -> Vec<&crate::run::traced::SyscallPoint> {
    let killed = run.timeline.iter().find_map(|m| match m.happening {
        Happening::Killed { incarnation } => Some(incarnation),
        _ => None,
    });
    run.syscall_points.iter().filter(|p| Some(p.incarnation) == killed.map(|k| k + 1) && explored(p)).collect()
}
