//! Explore over schedules: one scenario run under a controlled schedule for every seed of a
//! budget (PCT, Burckhardt et al. 2010: a bug that needs `d` ordering constraints among `n`
//! parties over `k` steps shows in one run with probability at least `1 / (n · k^(d-1))`; at
//! depth 1, two racing parties, a seed finds either order with probability 1/2 and `b` seeds
//! miss one with probability `2^-b`). Each run's order — the crash-point calls in the order they
//! went, with their threads — is kept, and the number of distinct orders covered is told.
//!
//! The seeds are 1, 2, …: the same budget tries the same schedules in every exploration, so a
//! bad order found once is found every time, where the schedule replays (see
//! `crate::tracer`'s `schedule` for where it does not yet).

use crate::model::invariant::Invariant;
use crate::run::built::kept;
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use crate::scenario::Scenario;
use crate::tracer::{Schedule, When};
use std::collections::{BTreeSet, HashSet};

mod seeds;

/// One seed's run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRun {
    pub schedule: Schedule,
    /// Empty: it passed.
    pub violated: BTreeSet<Invariant>,
    /// The calls in the order they went: `incarnation/thread what`, one per decision.
    pub order: Vec<String>,
    /// Where a failing run's evidence was kept (asked for by [`Budget::keep_failures`]; not for a
    /// seed that went an earlier one's order and failed the same way).
    pub artifacts: Option<std::path::PathBuf>,
    /// A failing run's story: what happened, step by step.
    pub story: Option<String>,
}

/// What an exploration over schedules found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScheduleExploration {
    pub runs: Vec<ScheduleRun>,
    /// Distinct orders among the runs.
    pub distinct_orders: usize,
}

impl ScheduleExploration {
    /// The first failing run's schedule, and `scenario` pinned to it: the case to write. A run whose
    /// only failure is a fault it never reached tested nothing (explore counts such a case "not
    /// reached", not failed): a schedule the tracer could not hold to (a decision taken unsettled,
    /// on a loaded machine) can leave the scenario's call unmade in the incarnation it names.
    pub fn first_failure(&self, scenario: &Scenario) -> Option<(Schedule, Scenario)> {
        let run = self.runs.iter().find(|r| r.violated.iter().any(|i| *i != Invariant::FaultsReached))?;
        Some((run.schedule, Scenario { schedule: Some(run.schedule), ..scenario.clone() }))
    }
}

/// How an exploration over schedules goes: seeds `1..=budget` at PCT `depth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub seeds: u64,
    pub depth: u32,
    /// Stop after the first failing run.
    pub first_failure: bool,
    /// Keep a failing run's data dir and logs ([`ScheduleRun::artifacts`]).
    pub keep_failures: bool,
    /// Seeds run at once (`--jobs`); each run is judged, kept and told in seed order all the same.
    pub jobs: usize,
}

/// Runs `scenario` under each seed of `budget` (a run that cannot start is an error); `progress`
/// is told of each run as it ends, in seed order.
pub fn explore_schedules(
    scenario: &Scenario,
    target: &Target,
    options: &RunOptions,
    budget: Budget,
    progress: &mut dyn FnMut(&ScheduleRun),
) -> std::io::Result<ScheduleExploration> {
    let mut exploration = ScheduleExploration::default();
    let mut orders = HashSet::new();
    // A failing run keeps the crash state its last kill left, for the case written from it.
    let options = &RunOptions { keep_kills: budget.keep_failures, ..options.clone() };
    seeds::in_order(scenario, target, options, budget, &mut |schedule, pinned, verdict, mut run| {
        let order: Vec<String> = run
            .syscall_points
            .iter()
            .filter(|p| p.when == When::Before && p.step.is_some())
            .map(|p| format!("{}/{} {}", p.incarnation, p.thread.as_deref().unwrap_or("?"), p.what))
            .collect();
        orders.insert(order.clone());
        let violated = verdict.failed_invariants();
        let failed = !violated.is_empty();
        let story = failed.then(|| crate::report::story::story(&pinned, &verdict, &run));
        // A seed that went an earlier seed's order and failed the same way is that seed's case:
        // its evidence is not kept twice.
        let seen = exploration.runs.iter().any(|r| r.order == order && r.violated == violated);
        let (artifacts, story) = match budget.keep_failures && failed && !seen {
            true => {
                let after_kill = run.after_kill.take();
                let (path, mut story) =
                    crate::report::evidence::keep_case(&pinned, &verdict, story, run, target, options);
                // Its crash state at its last kill, for the file written from it.
                let state = crate::run::built::after_kill::state_of(after_kill.as_ref());
                let key = || kept::Key::of(&pinned, target, options.probe, options.crash);
                kept::keep_among(&path, state, key, &mut story);
                (Some(path), story)
            }
            false => (None, story),
        };
        let done = ScheduleRun { schedule, violated, order, artifacts, story };
        progress(&done);
        exploration.runs.push(done);
        !(failed && budget.first_failure)
    })?;
    exploration.distinct_orders = orders.len();
    Ok(exploration)
}
