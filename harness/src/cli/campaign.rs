//! The records `explore --json`/`--junit` write (one shard's or the whole exploration's cases,
//! `search::campaign`), and `killpoint merge` of several shards' records into one.

use super::Usage;
use crate::run::incarnation::Target;
use crate::scenario::Scenario;
use crate::search::campaign::{self, Campaign, CaseOutcome, CaseRecord, Identity, Shard};
use crate::search::explore::{CaseStatus, ExploreOptions, Finding, Points};
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
    Identity {
        killpoint_version: env!("CARGO_PKG_VERSION").to_owned(),
        contract: options.run.contract.name().to_owned(),
        workload: scenario.name.clone(),
        workload_sha256: crate::report::certificate::sha256_file(&scenario.path),
        runtime: target.program.display().to_string(),
        runtime_args: target.args.clone(),
        runtime_sha256: crate::report::certificate::sha256_file(&target.program),
        points: match options.points {
            Points::Boundaries => "boundaries",
            Points::Syscalls => "syscalls",
        }
        .to_owned(),
        crash: options.run.crash.name().to_owned(),
        depth: options.depth,
        probe: options.run.probe,
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
        "merged {} shard(s) of `{}`: {} case(s) ({} passed, {} partial, {} not reached, {} failed)",
        merged.merged.len(),
        merged.identity.workload,
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
