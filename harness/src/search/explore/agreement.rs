//! Built crash states against re-runs: one workload explored over system calls both ways, each
//! case's verdict compared. A case whose verdict from its built state differs from its re-run's
//! would be a false alarm (or a false pass) of built states, the worst a testing tool can give:
//! `tests/built_states.rs` holds a representative set to none, `killpoint bench SCENARIO --points
//! syscalls` says how many cases of its workload differ, and `cargo run --example agree` runs
//! every standard workload.

use super::exploration::{Exploration, explore};
use super::finding::{CaseStatus, Finding};
use super::options::ExploreOptions;
use crate::run::incarnation::Target;
use crate::scenario::Scenario;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Each case's verdict, by name: how it ended and the invariants it violated.
pub type Verdicts = BTreeMap<String, (CaseStatus, BTreeSet<String>)>;

/// One exploration, with every case's verdict and what it took.
pub struct Explored {
    pub verdicts: Verdicts,
    pub exploration: Exploration,
    pub elapsed: Duration,
}

impl Explored {
    /// Cases per second.
    pub fn rate(&self) -> f64 {
        let ran: usize = self.exploration.ran.iter().sum();
        ran as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// The two explorations of one workload and where they differ.
pub struct Agreement {
    pub built: Explored,
    pub rerun: Explored,
    /// One line per case whose verdicts differ.
    pub differ: Vec<String>,
    /// Cases only one of the two record runs found: with operations in flight together, which
    /// points a run passes depends on thread timing (`interleaving`), so these are not compared.
    pub unmatched: Vec<String>,
}

/// Explores `scenario` from built states, then (right after, under the same load) with
/// `--rerun-prefix`, and compares every case's verdict.
pub fn agreement(scenario: &Scenario, target: &Target, options: &ExploreOptions) -> std::io::Result<Agreement> {
    let built = explored(scenario, target, &ExploreOptions { rerun_prefix: false, ..options.clone() })?;
    let rerun = explored(scenario, target, &ExploreOptions { rerun_prefix: true, ..options.clone() })?;
    let (mut differ, mut unmatched) = (Vec::new(), Vec::new());
    let names: BTreeSet<&String> = built.verdicts.keys().chain(rerun.verdicts.keys()).collect();
    for name in names {
        match (built.verdicts.get(name), rerun.verdicts.get(name)) {
            (Some(b), Some(r)) if b == r => {}
            (Some(b), Some(r)) => differ.push(format!("{name}: from its built state {b:?}, re-run {r:?}")),
            (Some(_), None) => unmatched.push(format!("{name}: found by the built record run only")),
            (None, _) => unmatched.push(format!("{name}: found by the re-run's record run only")),
        }
    }
    Ok(Agreement { built, rerun, differ, unmatched })
}

/// One exploration, every case's verdict kept.
pub fn explored(scenario: &Scenario, target: &Target, options: &ExploreOptions) -> std::io::Result<Explored> {
    let seen = Mutex::new(Verdicts::new());
    let progress = |f: &Finding, _: usize, _: usize, _: usize| {
        let violated = f.verdict.failed_invariants().iter().map(|i| i.as_str().to_owned()).collect();
        seen.lock().unwrap_or_else(|p| p.into_inner()).insert(f.case.name(), (f.status(), violated));
    };
    let started = Instant::now();
    let exploration = explore(scenario, target, options, &progress)?;
    let elapsed = started.elapsed();
    Ok(Explored { verdicts: seen.into_inner().unwrap_or_else(|p| p.into_inner()), exploration, elapsed })
}
