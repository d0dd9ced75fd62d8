//! An exploration as a whole: the plan's record run, then each depth's cases run and judged, the
//! cases of the next depth drawn from the recoveries of the first.

use super::built::Shelf;
use super::case::{Case, Workload};
use super::depth::{Recovery, recovery};
use super::finding::{CaseStatus, Finding, case_status};
use super::interleaving::Interleaving;
use super::jobs::run_all;
use super::options::{ExploreOptions, Level, Points, level as shard_level};
use super::plan::{Plan, plan};
use super::point::Point;
use super::prune::Pruned;
use crate::judge::Verdict;
use crate::model::boundary::{Boundary, Site};
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use crate::scenario::{Scenario, SyscallFault};

/// What an exploration did.
#[derive(Debug, Default)]
pub struct Exploration {
    /// The record run's verdict. A workload that fails with no kill at all is also the first of
    /// `failures`, as the case with no kill (`no_kill`).
    pub record: Option<Verdict>,
    /// Crash points found, per depth (index 0: depth 1).
    pub points: Vec<usize>,
    pub pruned: Vec<(Point, Pruned)>,
    /// Cases run, per depth (not the record run: see [`Exploration::cases_run`]).
    pub ran: Vec<usize>,
    /// Depth-1 cases outside this shard (their depth-2 cases are found and run by their shard).
    pub other_shards: usize,
    pub failures: Vec<Finding>,
    pub passed: usize,
    /// Cases whose kill point the run did not pass again (another interleaving, a path the kill
    /// changed): nothing was tested there, nothing is held against the runtime.
    pub not_reached: usize,
    /// Cases that passed only in part (a fault the runtime could not show without the probe).
    pub partial: usize,
    /// Cases run from a crash state built in the record run (one recovery each), not re-run.
    pub from_built: usize,
    /// Depth-1 cases re-run because their point's state could not be built faithfully, by why.
    pub unbuilt: std::collections::BTreeMap<&'static str, usize>,
    /// Boundaries a black-box exploration could not see.
    pub unseen: Vec<Boundary>,
    /// See [`Plan::exact`].
    pub exact: Vec<(Boundary, usize)>,
    /// See [`Plan::same_state`].
    pub same_state: Vec<(SyscallFault, SyscallFault)>,
    /// With operations in flight together (boundary points): which points depend on how they
    /// interleave, and how many runs covered them.
    pub interleaving: Option<Interleaving>,
}

impl Exploration {
    /// Cases run at every depth, with the record run when it failed: it is then a case of
    /// `failures` (`no_kill`), and a summary that counted it as failed but not as run said
    /// "cases run: 56 (…, 57 failed)".
    pub fn cases_run(&self) -> usize {
        let record_failed = self.record.as_ref().is_some_and(|record| case_status(record) == CaseStatus::Fail);
        self.ran.iter().sum::<usize>() + usize::from(record_failed)
    }

    /// What the plan says before any case runs: the record run and the points found in it.
    fn of(plan: &Plan) -> Exploration {
        let mut result = Exploration {
            record: Some(plan.record.clone()),
            points: vec![plan.points],
            pruned: plan.pruned.clone(),
            exact: plan.exact.clone(),
            same_state: plan.same_state.clone(),
            interleaving: plan.interleaving.clone(),
            ..Exploration::default()
        };
        if !plan.probe {
            result.unseen = Boundary::ALL
                .into_iter()
                .filter(|b| {
                    b.site() == Site::Probe && *b != Boundary::AfterProviderSuccess && *b != Boundary::AfterDeliverySend
                })
                .collect();
        }
        result
    }

    /// Counts how a case of this shard ended.
    fn judge(&mut self, finding: &Finding) {
        self.from_built += usize::from(finding.built);
        match finding.status() {
            CaseStatus::Pass => self.passed += 1,
            CaseStatus::Partial => self.partial += 1,
            CaseStatus::NotReached => self.not_reached += 1,
            CaseStatus::Fail => self.failures.push(finding.clone_without_run()),
        }
    }

    /// Adds what a depth-1 run's recovery found; returns its depth-2 cases.
    fn recovered(&mut self, recovery: Recovery) -> Vec<Case> {
        self.points.resize(2, 0);
        self.points[1] += recovery.points;
        if let Some(account) = &mut self.interleaving {
            account.pruned_once += recovery.pruned.iter().filter(|(_, why)| *why != Pruned::Occupied).count();
            account.recoveries += 1;
            account.own += recovery.own;
            account.beside += recovery.beside;
        }
        self.pruned.extend(recovery.pruned);
        self.same_state.extend(recovery.same_state);
        recovery.cases
    }
}

/// The record run as the case with no kill, when it failed.
fn record_failure(workload: &Workload, plan: &Plan, story: &str) -> Finding {
    let case = Case { kills: Vec::new(), revoke: Vec::new(), freeze: false, syscalls: Vec::new() };
    let scenario = case.scenario(workload);
    Finding {
        case,
        scenario,
        verdict: plan.record.clone(),
        artifacts: plan.record_artifacts.clone(),
        story: Some(story.to_owned()),
        own_faults_reached: true,
        built: false,
        took: std::time::Duration::ZERO,
    }
}

/// Explores `scenario`'s workload against `target`; `progress` is told of each case as it ends
/// (done, total so far, failures so far), and first of the record run when it fails (the case
/// with no kill, as a depth of one case), so that every failure is told as soon as it is known.
pub fn explore(
    scenario: &Scenario,
    target: &Target,
    options: &ExploreOptions,
    progress: &(dyn Fn(&Finding, usize, usize, usize) + Sync),
) -> std::io::Result<Exploration> {
    let workload = Workload::of(scenario);
    let mut plan = plan(&workload, target, options)?;
    let mut result = Exploration::of(&plan);
    if let Some(story) = &plan.record_story {
        let failure = record_failure(&workload, &plan, story);
        progress(&failure, 1, 1, 1);
        result.failures.push(failure);
        if options.first_failure {
            return Ok(result);
        }
    }
    let syscalls = options.points == Points::Syscalls;
    // Over system calls, every case is traced: its recovery's calls are the points of depth 2.
    let traced_options;
    let options = if syscalls {
        traced_options =
            ExploreOptions { run: RunOptions { syscalls: true, ..options.run.clone() }, ..options.clone() };
        &traced_options
    } else {
        options
    };
    // Built states, unless `--rerun-prefix` (or this machine cannot trace): over system calls the
    // record run's, then each depth-1 case's recovery's; with the probe at depth 2, the state
    // each depth-1 case's kill left.
    let mut shelf = match plan.built.take() {
        Some(record) => Some(Shelf { record: Some(record), ..Shelf::default() }),
        None => after_kills_wanted(options).then(Shelf::default),
    };
    let explorer = Explorer { scenario, workload: &workload, target, options, progress, syscalls };
    let mut level: Vec<Case> = plan.cases;
    let mut depth = 1;
    loop {
        let next = explorer.level(&mut result, level, depth, shelf.as_mut())?;
        if next.is_empty() || (options.first_failure && !result.failures.is_empty()) {
            break;
        }
        level = next;
        depth += 1;
    }
    Ok(result)
}

/// Whether a depth-2 exploration with the probe takes the state each depth-1 kill leaves, for its
/// depth-2 cases to start from there instead of re-running the prefix: only the tracer can say
/// that every request sent before the kill reached the world, and a state holds no service's
/// state, no power loss and no restore.
pub fn after_kills_wanted(options: &ExploreOptions) -> bool {
    let run = &options.run;
    options.depth >= 2
        && options.points != Points::Syscalls
        && !options.rerun_prefix
        && run.probe
        && run.crash == crate::model::crash::Crash::Process
        && run.services.is_empty()
        && crate::run::traced::permitted().is_ok()
}

/// What every depth of one exploration runs with.
struct Explorer<'a> {
    scenario: &'a Scenario,
    workload: &'a Workload,
    target: &'a Target,
    options: &'a ExploreOptions,
    progress: &'a (dyn Fn(&Finding, usize, usize, usize) + Sync),
    /// The crash points are system calls.
    syscalls: bool,
}

impl Explorer<'_> {
    /// Runs and judges the cases of one depth that are this shard's, each from its built state on
    /// the `shelf` when it has one; returns the cases of the next depth (the recoveries of this
    /// shard's depth-1 runs), and puts the states their runs built on the shelf.
    fn level(
        &self,
        result: &mut Exploration,
        level: Vec<Case>,
        depth: u32,
        mut shelf: Option<&mut Shelf>,
    ) -> std::io::Result<Vec<Case>> {
        let options = self.options;
        let depth2 = options.depth >= 2;
        let Level { run: to_run, other_shards } = shard_level(level, depth, &self.scenario.name, options);
        result.other_shards += other_shards;
        let keep_runs = depth == 1 && depth2;
        if let Some(shelf) = shelf.as_deref() {
            let built = to_run.iter().filter_map(|case| Some((case, shelf.for_case(case)?)));
            for reason in built.filter_map(|(case, states)| super::built::unbuilt(case, states)) {
                *result.unbuilt.entry(reason).or_default() += 1;
            }
        }
        let failures = result.failures.len();
        let on_shelf = shelf.as_deref();
        let outcomes =
            run_all(self.workload, &to_run, on_shelf, self.target, options, keep_runs, self.progress, failures)?;
        result.ran.push(outcomes.len());
        let mut next = Vec::new();
        for (finding, run, states) in outcomes {
            result.judge(&finding);
            let Some(mut run) = run else { continue };
            let probed = shelf.as_deref_mut().filter(|_| !self.syscalls);
            if let (Some(shelf), Some(Ok(taken))) = (probed, run.after_kill.take()) {
                shelf.after_kills.push((finding.case.clone(), taken));
            }
            let prune = options.prune && options.run.services.is_empty(); // as in `plan`
            if let Some(found) = recovery(&finding, &run, self.syscalls, prune) {
                next.extend(result.recovered(found));
            }
            if let (Some(shelf), Some(states)) = (shelf.as_deref_mut(), states) {
                shelf.recoveries.push((finding.case.clone(), states));
            }
        }
        Ok(next)
    }
}
