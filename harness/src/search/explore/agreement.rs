//! Built crash states against re-runs: one workload explored over system calls both ways, each
//! case's verdict compared. A case whose verdict from its built state differs from its re-run's
//! would be a false alarm (or a false pass) of built states, the worst a testing tool can give:
//! `tests/built_states.rs` holds every standard workload ([`sampled`]: two cases each) and a few
//! whole explorations to none, and `killpoint bench SCENARIO --points syscalls` says how many
//! cases of its workload differ.
//!
//! A case is addressed by counts (the 8th request since a boundary), and where the runtime's own
//! timing orders its calls (two destinations' retries on wall-clock backoffs, operations in flight
//! together) a re-run's prefix can reach a different call under that name than the record run
//! did: its verdict then varies from re-run to re-run, built states or not. So a case whose two
//! verdicts differ is re-run from the start [`STEADY`] more times: if those verdicts vary, the
//! re-run is unsteady there and the case is set apart (`unsteady`); only a steady re-run verdict
//! that differs from the built state's is a disagreement.

use super::built::run_case_built;
use super::case::{Case, Workload};
use super::exploration::{Exploration, explore};
use super::finding::{CaseStatus, Finding, run_case};
use super::options::ExploreOptions;
use super::plan::plan;
use crate::run::incarnation::Target;
use crate::scenario::Scenario;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Each case's verdict, by name: how it ended and the invariants it violated.
pub type Verdicts = BTreeMap<String, Verdict>;

/// One case's verdict: how it ended and the invariants it violated.
pub type Verdict = (CaseStatus, BTreeSet<String>);

/// How many more re-runs from the start a case whose verdicts differ gets.
pub const STEADY: usize = 2;

/// One exploration, with every case's verdict and what it took.
pub struct Explored {
    pub verdicts: Verdicts,
    /// Each case, by name (to run it again).
    pub cases: BTreeMap<String, Case>,
    pub exploration: Exploration,
    pub elapsed: Duration,
}

impl Explored {
    /// Cases per second.
    pub fn rate(&self) -> f64 {
        let ran: usize = self.exploration.cases_run();
        ran as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// The two explorations of one workload and where they differ.
pub struct Agreement {
    pub built: Explored,
    pub rerun: Explored,
    pub apart: Apart,
}

/// The cases whose two verdicts were not the same, by why.
#[derive(Debug, Default)]
pub struct Apart {
    /// One line per case whose built verdict differs from a steady re-run verdict.
    pub differ: Vec<String>,
    /// One line per case whose re-runs from the start gave different verdicts.
    pub unsteady: Vec<String>,
    /// Cases only one of the two record runs found, or (with operations in flight together) only
    /// one way reached: which points a run passes then depends on thread timing
    /// (`interleaving`), so these are not compared.
    pub unmatched: Vec<String>,
}

impl Apart {
    /// Compares case `name`'s verdicts, `b` from its built state and `r` re-run; when they differ,
    /// files it, re-running it from the start (`again`) to tell a disagreement from an unsteady
    /// re-run. Whether they were the same.
    fn compare(
        &mut self,
        name: &str,
        (b, r): (&Verdict, &Verdict),
        concurrent: bool,
        again: impl FnOnce() -> std::io::Result<Vec<Verdict>>,
    ) -> std::io::Result<bool> {
        if b == r {
            return Ok(true);
        }
        // With operations in flight together, a re-run's prefix may pass another interleaving and
        // never reach the point (or the built run a re-run of an unbuilt point): one way tested
        // nothing there, so there is nothing to compare.
        if concurrent && (b.0 == CaseStatus::NotReached || r.0 == CaseStatus::NotReached) {
            self.unmatched.push(format!("{name}: reached one way only (from its built state {b:?}, re-run {r:?})"));
            return Ok(false);
        }
        let again = again()?;
        let line = format!("{name}: from its built state {b:?}, re-run {r:?}, then {again:?}");
        match again.iter().all(|v| v == r) {
            true => self.differ.push(line),
            false => self.unsteady.push(line),
        }
        Ok(false)
    }
}

/// Explores `scenario` from built states, then (right after, under the same load) with
/// `--rerun-prefix`, and compares every case's verdict.
pub fn agreement(scenario: &Scenario, target: &Target, options: &ExploreOptions) -> std::io::Result<Agreement> {
    let built = explored(scenario, target, &ExploreOptions { rerun_prefix: false, ..options.clone() })?;
    let rerun = explored(scenario, target, &ExploreOptions { rerun_prefix: true, ..options.clone() })?;
    let mut apart = Apart::default();
    let names: BTreeSet<&String> = built.verdicts.keys().chain(rerun.verdicts.keys()).collect();
    let workload = Workload::of(scenario);
    let concurrent = crate::search::replay::concurrent(scenario);
    for name in names {
        match (built.verdicts.get(name), rerun.verdicts.get(name)) {
            (Some(b), Some(r)) => {
                let again = || rerun_again(&workload, &rerun.cases[name], target, options);
                apart.compare(name, (b, r), concurrent, again)?;
            }
            (Some(_), None) => apart.unmatched.push(format!("{name}: found by the built record run only")),
            (None, _) => apart.unmatched.push(format!("{name}: found by the re-run's record run only")),
        }
    }
    Ok(Agreement { built, rerun, apart })
}

/// What [`sampled`] compared, and where the two ways differ.
#[derive(Debug, Default)]
pub struct Sampled {
    /// Cases run both ways with the same verdict.
    pub agree: usize,
    /// Crash points of the record run whose state was built.
    pub built: usize,
    pub apart: Apart,
}

/// A cheaper comparison than [`agreement`], for a test over many workloads: one record run
/// building the states (as explore's), then up to `count` of its depth-1 cases with a built state,
/// spread evenly over them, each run from its state and re-run from the start.
pub fn sampled(
    scenario: &Scenario,
    target: &Target,
    options: &ExploreOptions,
    count: usize,
) -> std::io::Result<Sampled> {
    let workload = Workload::of(scenario);
    let options = ExploreOptions { rerun_prefix: false, ..options.clone() };
    let plan = plan(&workload, target, &options)?;
    let Some(built) = plan.built else { return Ok(Sampled::default()) };
    let run = crate::run::driver::RunOptions { syscalls: true, fingerprints: false, ..options.run.clone() };
    let ready = |case: &&Case| case.syscalls.last().is_some_and(|f| built.ready_at(f).is_some());
    let candidates: Vec<&Case> = plan.cases.iter().filter(ready).collect();
    let step = candidates.len().div_ceil(count.max(1)).max(1);
    let concurrent = crate::search::replay::concurrent(scenario);
    let mut sampled = Sampled { built: candidates.len(), ..Sampled::default() };
    for case in candidates.into_iter().step_by(step) {
        let Some(played) = run_case_built(&workload, case, target, &run, &built, None) else { continue };
        let b = verdict_of(&played?.0);
        let r = verdict_of(&run_case(&workload, case, target, &run)?.0);
        let again = || rerun_again(&workload, case, target, &options);
        sampled.agree += usize::from(sampled.apart.compare(&case.name(), (&b, &r), concurrent, again)?);
    }
    Ok(sampled)
}

/// `case` re-run from the start [`STEADY`] times, as `--rerun-prefix` runs it.
fn rerun_again(
    workload: &Workload,
    case: &Case,
    target: &Target,
    options: &ExploreOptions,
) -> std::io::Result<Vec<Verdict>> {
    let run = crate::run::driver::RunOptions { syscalls: true, ..options.run.clone() };
    (0..STEADY).map(|_| run_case(workload, case, target, &run).map(|(finding, _)| verdict_of(&finding))).collect()
}

fn verdict_of(finding: &Finding) -> Verdict {
    let violated = finding.verdict.failed_invariants().iter().map(|i| i.as_str().to_owned()).collect();
    (finding.status(), violated)
}

/// One exploration, every case's verdict kept.
pub fn explored(scenario: &Scenario, target: &Target, options: &ExploreOptions) -> std::io::Result<Explored> {
    let seen = Mutex::new((Verdicts::new(), BTreeMap::new()));
    let progress = |f: &Finding, _: usize, _: usize, _: usize| {
        let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.0.insert(f.case.name(), verdict_of(f));
        seen.1.insert(f.case.name(), f.case.clone());
    };
    let started = Instant::now();
    let exploration = explore(scenario, target, options, &progress)?;
    let elapsed = started.elapsed();
    let (verdicts, cases) = seen.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(Explored { verdicts, cases, exploration, elapsed })
}
