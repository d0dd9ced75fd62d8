//! Pruning: points not run because a kill there provably leaves the same crash state as at the
//! point before it (the same fingerprint of disk and world, or for system calls the same
//! `CrashState`), or because a kept world fault already answers there.

use super::point::{Point, Seen};
use crate::model::boundary::Boundary;
use crate::scenario::{Scenario, SyscallFault};
use std::collections::BTreeMap;

/// Why a point was not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pruned {
    /// A kill there leaves the same disk and world as a kill at `earlier`.
    SameState { earlier: Point },
    /// A kept world fault already answers the provider's call there.
    Occupied,
}

/// Whether a kept world fault already answers the provider's call at `point`: a kill there
/// would replace the fault the workload is about, so it is never a case (pruning or not).
pub(super) fn occupied(scenario: &Scenario, point: &Point) -> bool {
    point.at == Boundary::AfterDispatch
        && scenario.faults.iter().any(|f| {
            f.at == Boundary::AfterDispatch && f.operation == point.operation && f.occurrence == point.occurrence
        })
}

/// Splits `seen` into points to run and points pruned (with why).
pub(super) fn prune(seen: Vec<Seen>) -> (Vec<Point>, Vec<(Point, Pruned)>) {
    let mut run = Vec::new();
    let mut pruned = Vec::new();
    let mut previous: Option<&Seen> = None;
    for s in &seen {
        let same = match (previous, s.fingerprint) {
            (Some(p), Some(now)) if p.fingerprint == Some(now) => Some(p.point.clone()),
            _ => None,
        };
        if let Some(earlier) = same {
            pruned.push((s.point.clone(), Pruned::SameState { earlier }));
        } else {
            run.push(s.point.clone());
        }
        previous = Some(s);
    }
    (run, pruned)
}

/// The points to run, and those pruned (with why) when pruning is on.
pub(super) fn select(scenario: &Scenario, seen: Vec<Seen>, pruning: bool) -> (Vec<Point>, Vec<(Point, Pruned)>) {
    let (taken, seen): (Vec<Seen>, Vec<Seen>) = seen.into_iter().partition(|s| occupied(scenario, &s.point));
    let (run, mut pruned) =
        if pruning { prune(seen) } else { (seen.into_iter().map(|s| s.point).collect(), Vec::new()) };
    pruned.extend(taken.into_iter().map(|s| (s.point, Pruned::Occupied)));
    (run, pruned)
}

/// Splits system-call points into those to run and those that leave the same crash state as
/// the point run before them (see [`crate::run::traced::CrashState`]: no durable change and no send
/// to the world completed in between), each with that earlier point. A point where a boundary is
/// reached is always run: it is the exact case the certificate names. (A delivery attempt's
/// anchor is an address, not a boundary of the certificate: `[[fault]]`s kill there.)
pub(super) fn prune_syscalls(
    points: Vec<&crate::run::traced::SyscallPoint>,
) -> (Vec<&crate::run::traced::SyscallPoint>, Vec<(SyscallFault, SyscallFault)>) {
    let mut kept: Vec<&crate::run::traced::SyscallPoint> = Vec::new();
    let mut pruned = Vec::new();
    for point in points {
        match kept.last() {
            Some(earlier) if earlier.state == point.state && point.boundaries.iter().all(|b| b.is_delivery()) => {
                pruned.push((point.fault(), earlier.fault()));
            }
            _ => kept.push(point),
        }
    }
    (kept, pruned)
}

/// Groups pruned points by reason, for the summary line.
pub fn pruned_summary(pruned: &[(Point, Pruned)]) -> BTreeMap<&'static str, usize> {
    let mut by = BTreeMap::new();
    for (_, why) in pruned {
        *by.entry(match why {
            Pruned::SameState { .. } => "same crash state as the point before",
            Pruned::Occupied => "the provider's answer there is a kept world fault",
        })
        .or_default() += 1;
    }
    by
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{TWO, point, workload};
    use super::*;
    use crate::run::driver::Fingerprint;

    #[test]
    fn the_same_crash_state_twice_in_a_row_is_pruned() {
        let w = workload(TWO);
        let state = Fingerprint { data: 7, world: 3 };
        let seen = vec![
            Seen { point: point(Boundary::BeforeDispatch, "sms", 1), seq: 1, fingerprint: Some(state) },
            Seen { point: point(Boundary::BeforeDispatch, "charge", 1), seq: 2, fingerprint: Some(state) },
            Seen { point: point(Boundary::AfterDispatch, "charge", 1), seq: 3, fingerprint: None },
            Seen {
                point: point(Boundary::AfterProviderSuccess, "charge", 1),
                seq: 4,
                fingerprint: Some(Fingerprint { data: 8, world: 4 }),
            },
        ];
        let (run, pruned) = select(&w.base, seen, true);
        assert_eq!(run.len(), 3);
        assert_eq!(
            pruned,
            vec![(
                point(Boundary::BeforeDispatch, "charge", 1),
                Pruned::SameState { earlier: point(Boundary::BeforeDispatch, "sms", 1) }
            )]
        );
    }

    #[test]
    fn a_system_call_that_leaves_the_same_crash_state_is_pruned_unless_a_boundary_is_there() {
        use crate::run::traced::{CrashState, SyscallPoint};
        use crate::tracer::{PointKind, When};
        let at = |kind, when, occurrence, durable, sent, boundary: Option<Boundary>| SyscallPoint {
            incarnation: 1,
            kind,
            when,
            occurrence,
            since: None,
            since_delivery: None,
            exchange: None,
            boundaries: boundary.map(|b| crate::scenario::Anchor::at(b, "charge".into(), 1)).into_iter().collect(),
            state: CrashState { durable, sent, synced: 0 },
            what: String::new(),
            thread: None,
            step: None,
        };
        let points = [
            at(PointKind::Sync, When::Before, 1, 3, 0, None),
            // fsync changes nothing a process kill can tell: the same state as just before it.
            at(PointKind::Sync, When::After, 1, 3, 0, None),
            at(PointKind::Request, When::Before, 1, 3, 0, None),
            // The request went out: the world changed.
            at(PointKind::Answer, When::After, 1, 3, 1, Some(Boundary::AfterProviderSuccess)),
            // The same state as the answer, but a boundary: run, it is the case the table names.
            at(PointKind::Answer, When::After, 2, 3, 1, Some(Boundary::BeforeDispatch)),
            at(PointKind::Sync, When::Before, 2, 4, 1, None),
        ];
        let (kept, pruned) = prune_syscalls(points.iter().collect());
        assert_eq!(
            kept.iter().map(|p| (p.kind, p.when, p.occurrence)).collect::<Vec<_>>(),
            [
                (PointKind::Sync, When::Before, 1),
                (PointKind::Answer, When::After, 1),
                (PointKind::Answer, When::After, 2),
                (PointKind::Sync, When::Before, 2),
            ]
        );
        assert_eq!(pruned.len(), 2);
        assert_eq!(pruned[0].1, points[0].fault(), "pruned for the point before it");
        assert_eq!(pruned[1].0, points[2].fault());
    }
}
