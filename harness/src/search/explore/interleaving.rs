//! Which crash points depend on how the operations in flight together interleave.
//!
//! With several operations in one wave, the order of their announcements varies with thread
//! timing. Each operation's own path does not (what it reached before a kill, what it does to
//! recover), but which points share a crash state with the point before them does, and so do
//! the points of the *other* operations a depth-1 kill caught mid-flight: where each one was, and
//! so what its recovery passes. An exploration of such a workload says which of its points are
//! of this kind instead of letting its case count vary in silence: the record run is made twice
//! and compared (a point seen in only one of them, or pruned in only one, is run and counted), and
//! each depth-2 point is counted as the killed operation's own recovery (its path, the same in
//! every run) or another operation's (from the one run of that depth-1 case).

use super::point::{Point, Seen};
use super::prune::{Pruned, select};
use crate::scenario::Scenario;
use std::collections::BTreeSet;

/// What an exploration with operations in flight together says of its interleaving-dependent
/// points.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Interleaving {
    /// Record runs compared for the depth-1 points.
    pub records: usize,
    /// Depth-1 points seen in only some of the record runs (each is run).
    pub seen_in_some: usize,
    /// Depth-1 points pruned in only some of the record runs, where they shared a crash state
    /// with another operation's point before them (each is run).
    pub pruned_in_some: usize,
    /// Depth-1 cases whose recoveries gave depth-2 points, each from one run of that case.
    pub recoveries: usize,
    /// Depth-2 points of the killed operation's own recovery.
    pub own: usize,
    /// Depth-2 points of other operations in flight at the kill: where each was when the kill
    /// landed, and so which points its recovery passes, is the interleaving's.
    pub beside: usize,
    /// Depth-2 points pruned for the crash state of the one run they were seen in.
    pub pruned_once: usize,
}

/// The depth-1 points of two record runs of the same workload, agreed: those to run (the first
/// run's, unless pruned in both, then those only the second saw) and those pruned in both, with
/// the account of the points where the two runs disagreed.
pub(super) fn agree(
    scenario: &Scenario,
    first: Vec<Seen>,
    second: Vec<Seen>,
    prune: bool,
) -> (usize, Vec<Point>, Vec<(Point, Pruned)>, Interleaving) {
    let found_first: BTreeSet<Point> = first.iter().map(|s| s.point.clone()).collect();
    let found_second: BTreeSet<Point> = second.iter().map(|s| s.point.clone()).collect();
    let only_second: Vec<Seen> = second.iter().filter(|s| !found_first.contains(&s.point)).cloned().collect();
    let (run_first, pruned_first) = select(scenario, first, prune);
    let (_, pruned_second) = select(scenario, second, prune);
    let pruned_by_second: BTreeSet<&Point> = pruned_second.iter().map(|(p, _)| p).collect();
    // A point pruned by one run only is run: the other run says a kill there may leave a crash
    // state of its own.
    let (pruned, disputed): (Vec<_>, Vec<_>) =
        pruned_first.into_iter().partition(|(p, why)| *why == Pruned::Occupied || pruned_by_second.contains(p));
    let pruned_in_some = disputed.len()
        + pruned_second.iter().filter(|(p, why)| *why != Pruned::Occupied && run_first.contains(p)).count();
    // Points the second run alone saw are run unpruned (their pruning would name a point before
    // them that the first run did not pass), unless a kept world fault answers there.
    let (extra, mut occupied) = select(scenario, only_second, false);
    let mut run = run_first;
    run.extend(disputed.into_iter().map(|(p, _)| p));
    run.extend(extra);
    let mut pruned = pruned;
    pruned.append(&mut occupied);
    let seen_in_some = found_first.symmetric_difference(&found_second).count();
    let found = found_first.union(&found_second).count();
    let account = Interleaving { records: 2, seen_in_some, pruned_in_some, ..Interleaving::default() };
    (found, run, pruned, account)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{TWO, point, workload};
    use super::*;
    use crate::model::boundary::Boundary;
    use crate::run::driver::Fingerprint;

    fn seen(points: &[(Point, Option<u64>)]) -> Vec<Seen> {
        points
            .iter()
            .enumerate()
            .map(|(i, (p, data))| Seen {
                point: p.clone(),
                seq: i as u64,
                fingerprint: data.map(|data| Fingerprint { data, world: 0 }),
            })
            .collect()
    }

    #[test]
    fn points_that_two_record_runs_disagree_on_are_run_and_counted() {
        let w = workload(TWO);
        let a = point(Boundary::BeforeDispatch, "charge", 1);
        let b = point(Boundary::BeforeDispatch, "sms", 1);
        let c = point(Boundary::AfterResultWrite, "charge", 1);
        let d = point(Boundary::AfterResultWrite, "sms", 1);
        let e = point(Boundary::AfterDeliverySend, "sms", 1);
        // First run: b shares a's state, d shares c's. Second run: b shares a's, d has its own,
        // and only it passed e.
        let first = seen(&[(a.clone(), Some(1)), (b.clone(), Some(1)), (c.clone(), Some(2)), (d.clone(), Some(2))]);
        let second = seen(&[
            (a.clone(), Some(1)),
            (b.clone(), Some(1)),
            (c.clone(), Some(2)),
            (d.clone(), Some(3)),
            (e.clone(), Some(3)),
        ]);
        let (found, run, pruned, account) = agree(&w.base, first, second, true);
        assert_eq!(found, 5);
        assert_eq!(run, vec![a.clone(), c, d, e.clone()]);
        assert_eq!(pruned, vec![(b, Pruned::SameState { earlier: a })]);
        // e seen by one run only; d pruned in one only; e's pruning in the second is not counted
        // twice (it is seen in only one).
        assert_eq!((account.records, account.seen_in_some, account.pruned_in_some), (2, 1, 1));
    }
}
