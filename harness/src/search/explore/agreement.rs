//! Built crash states against re-runs: one workload explored over system calls both ways, each
//! case's verdict compared. A case whose verdict from its built state differs from its re-run's
//! would be a false alarm (or a false pass) of built states, the worst a testing tool can give:
//! `tests/built_states.rs` holds a representative set to none, and `killpoint bench SCENARIO
//! --points syscalls` says how many cases of its workload differ.
//!
//! A case is addressed by counts (the 8th request since a boundary), and where the runtime's own
//! timing orders its calls (two destinations' retries on wall-clock backoffs, operations in flight
//! together) a re-run's prefix can reach a different call under that name than the record run
//! did: its verdict then varies from re-run to re-run, built states or not. So a case whose two
//! verdicts differ is re-run from the start [`STEADY`] more times: if those verdicts vary, the
//! re-run is unsteady there and the case is set apart (`unsteady`); only a steady re-run verdict
//! that differs from the built state's is a disagreement.

use super::case::{Case, Workload};
use super::exploration::{Exploration, explore};
use super::finding::{CaseStatus, Finding, run_case};
use super::options::ExploreOptions;
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
    /// One line per case whose built verdict differs from a steady re-run verdict.
    pub differ: Vec<String>,
    /// One line per case whose re-runs from the start gave different verdicts.
    pub unsteady: Vec<String>,
    /// Cases only one of the two record runs found: with operations in flight together, which
    /// points a run passes depends on thread timing (`interleaving`), so these are not compared.
    pub unmatched: Vec<String>,
}

/// Explores `scenario` from built states, then (right after, under the same load) with
/// `--rerun-prefix`, and compares every case's verdict.
pub fn agreement(scenario: &Scenario, target: &Target, options: &ExploreOptions) -> std::io::Result<Agreement> {
    let built = explored(scenario, target, &ExploreOptions { rerun_prefix: false, ..options.clone() })?;
    let rerun = explored(scenario, target, &ExploreOptions { rerun_prefix: true, ..options.clone() })?;
    let (mut differ, mut unsteady, mut unmatched) = (Vec::new(), Vec::new(), Vec::new());
    let names: BTreeSet<&String> = built.verdicts.keys().chain(rerun.verdicts.keys()).collect();
    let workload = Workload::of(scenario);
    for name in names {
        match (built.verdicts.get(name), rerun.verdicts.get(name)) {
            (Some(b), Some(r)) if b == r => {}
            (Some(b), Some(r)) => {
                let again = rerun_again(&workload, &rerun.cases[name], target, options)?;
                let line = format!("{name}: from its built state {b:?}, re-run {r:?}, then {again:?}");
                match again.iter().all(|v| v == r) {
                    true => differ.push(line),
                    false => unsteady.push(line),
                }
            }
            (Some(_), None) => unmatched.push(format!("{name}: found by the built record run only")),
            (None, _) => unmatched.push(format!("{name}: found by the re-run's record run only")),
        }
    }
    Ok(Agreement { built, rerun, differ, unsteady, unmatched })
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
