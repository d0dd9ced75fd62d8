//! The records `explore --json`/`--junit` and `random --json`/`--junit` write (one shard's or the
//! whole search's cases, `search::campaign`), and `killpoint merge` of several shards' records
//! into one.

use super::Usage;
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use crate::scenario::Scenario;
use crate::search::campaign::{self, Campaign, CaseOutcome, CaseRecord, Identity, Search, Shard};
use crate::search::explore::{CaseStatus, ExploreOptions, Finding, Points};
use crate::search::random::{Failure, RunDone};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

/// Where `--json` and `--junit` go (neither: nothing is collected).
#[derive(Debug, Clone, Default)]
pub struct Records {
    pub json: Option<PathBuf>,
    pub junit: Option<PathBuf>,
}

impl Records {
    pub fn asked(&self) -> bool {
        self.json.is_some() || self.junit.is_some()
    }

    /// Each file asked for can be written, checked before the search spends anything.
    pub fn writable(&self) -> Result<(), Usage> {
        let output = super::Output { json: self.json.clone(), junit: self.junit.clone(), ..super::Output::default() };
        super::setup::reports_writable(&output)
    }

    /// Writes both asked for, each even if the other cannot be; `false` if one could not be.
    pub fn write(&self, campaign: &Campaign) -> bool {
        let mut written = true;
        for (path, text, what) in
            [(&self.json, campaign.to_json(), "JSON record"), (&self.junit, campaign.to_junit(), "JUnit report")]
        {
            let Some(path) = path else { continue };
            match std::fs::write(path, text) {
                Ok(()) => outln!("{what} written to {}", path.display()),
                Err(e) => {
                    errln!("killpoint: cannot write the {what} to {}: {e}", path.display());
                    written = false;
                }
            }
        }
        written
    }
}

/// The cases of an exploration as they end (from its progress), in any order.
#[derive(Debug, Default)]
pub struct Collected(Mutex<Vec<CaseRecord>>);

impl Collected {
    /// `finding` ended; a failing one is written to `out` under its scenario's name.
    pub fn add(&self, finding: &Finding, out: &Path) {
        let status = match finding.status() {
            CaseStatus::Pass => CaseOutcome::Pass,
            CaseStatus::Partial => CaseOutcome::Partial,
            CaseStatus::NotReached => CaseOutcome::NotReached,
            CaseStatus::Fail => CaseOutcome::Fail,
        };
        let failed = status == CaseOutcome::Fail;
        let record = CaseRecord {
            name: finding.case.name(),
            status,
            violated: finding.verdict.failed_invariants().iter().map(|i| i.as_str().to_owned()).collect(),
            duration_ms: u64::try_from(finding.took.as_millis()).unwrap_or(u64::MAX),
            file: failed.then(|| out.join(format!("{}.toml", finding.scenario.name)).display().to_string()),
            artifacts: None,
        };
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(record);
    }

    /// The record, each failing case with where its artifacts were kept (known once it ended).
    pub fn campaign(self, identity: Identity, shard: Option<(u64, u64)>, failures: &[Finding]) -> Campaign {
        let mut cases = self.0.into_inner().unwrap_or_else(|p| p.into_inner());
        for case in cases.iter_mut() {
            let kept = failures.iter().find(|f| f.case.name() == case.name).and_then(|f| f.artifacts.as_ref());
            case.artifacts = kept.map(|p| p.display().to_string());
        }
        Campaign::new(identity, shard.map(|(k, n)| Shard { k, n }), cases)
    }
}

/// What `scenario` explored against `target` with `options` is, for telling shards apart.
pub fn identity(scenario: &Scenario, target: &Target, options: &ExploreOptions) -> Identity {
    let search = Search::Explore {
        workload: scenario.name.clone(),
        workload_sha256: crate::report::certificate::sha256_file(&scenario.path),
        points: match options.points {
            Points::Boundaries => "boundaries",
            Points::Syscalls => "syscalls",
        }
        .to_owned(),
        depth: options.depth,
    };
    runtime_identity(target, &options.run, search)
}

/// What a random search of `cases` draws a shard from the campaign's `seed` is.
pub fn random_identity(target: &Target, run: &RunOptions, seed: u64, cases: u32) -> Identity {
    runtime_identity(target, run, Search::Random { seed, cases })
}

fn runtime_identity(target: &Target, run: &RunOptions, search: Search) -> Identity {
    Identity {
        killpoint_version: env!("CARGO_PKG_VERSION").to_owned(),
        contract: run.contract.name().to_owned(),
        runtime: target.program.display().to_string(),
        runtime_args: target.args.clone(),
        runtime_sha256: crate::report::certificate::sha256_file(&target.program),
        crash: run.crash.name().to_owned(),
        probe: run.probe,
        search,
    }
}

/// The drawn schedules of a random search as they end: every run up to the first that fails (the
/// runs after it are the shrink's, not draws).
#[derive(Debug)]
pub struct Draws {
    seed: u64,
    width: usize,
    cases: Mutex<(Vec<CaseRecord>, bool)>,
}

impl Draws {
    /// The draws of a search from `seed` of at most `cases`.
    pub fn new(seed: u64, cases: u32) -> Draws {
        Draws { seed, width: cases.to_string().len(), cases: Mutex::new((Vec::new(), false)) }
    }

    pub fn add(&self, done: &RunDone) {
        let mut cases = self.cases.lock().unwrap_or_else(|p| p.into_inner());
        if cases.1 {
            return;
        }
        cases.1 = done.failed;
        // Padded, so that the draws sort by name in the order they were drawn.
        let name = format!("random-{}.draw-{:0width$}", self.seed, done.run, width = self.width);
        cases.0.push(CaseRecord {
            name,
            status: if done.failed { CaseOutcome::Fail } else { CaseOutcome::Pass },
            violated: done.violated.iter().map(|i| i.as_str().to_owned()).collect(),
            duration_ms: u64::try_from(done.took.as_millis()).unwrap_or(u64::MAX),
            file: None,
            artifacts: None,
        });
    }

    /// The record; the failing draw, if any, with the shrunk case's file and kept evidence.
    pub fn campaign(self, identity: Identity, shard: Option<(u64, u64)>, failure: Option<&Failure>) -> Campaign {
        let (mut cases, _) = self.cases.into_inner().unwrap_or_else(|p| p.into_inner());
        if let (Some(failure), Some(last)) = (failure, cases.last_mut()) {
            last.file = Some(failure.file.display().to_string());
            last.artifacts = failure.artifacts.as_ref().map(|p| p.display().to_string());
        }
        Campaign::new(identity, shard.map(|(k, n)| Shard { k, n }), cases)
    }
}

/// `killpoint merge`: the shards' records read and merged into one, written as asked, summed up
/// on stdout. Exit 1 if a case failed, 2 if the records cannot be read or are not one campaign.
pub fn merge(files: &[PathBuf], records: &Records) -> Result<ExitCode, Usage> {
    super::setup::reports_writable(&super::Output {
        json: records.json.clone(),
        junit: records.junit.clone(),
        ..super::Output::default()
    })?;
    let mut shards = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: cannot be read: {e}", file.display()))?;
        shards.push(Campaign::from_json(&text).map_err(|e| format!("{}: {e}", file.display()))?);
    }
    let merged = campaign::merge(shards).map_err(|e| format!("the records cannot be merged: {e}"))?;
    let t = merged.totals;
    outln!(
        "merged {} shard(s) of `{}` ({}): {} case(s) ({} passed, {} partial, {} not reached, {} failed)",
        merged.merged.len(),
        merged.identity.search.subject(),
        merged.identity.search.kind(),
        t.cases,
        t.passed,
        t.partial,
        t.not_reached,
        t.failed
    );
    for case in merged.cases.iter().filter(|c| c.status == CaseOutcome::Fail) {
        outln!("  FAILED {}: violated {}", case.name, case.violated.join(", "));
    }
    if !records.write(&merged) {
        return Ok(ExitCode::from(2));
    }
    Ok(if merged.failed() { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
