//! §2-10, "the runtime MUST lose nothing", proven breakable: journal_worker.py
//! `--drop-on-server-error` commits a success in its server before its own store, and drops one
//! the server did not take with its operation (parked, paused), so the charge the provider applied
//! is never recorded nor delivered. Certified on the standard scenarios that need services, it
//! must fail where the server is away as the success is recorded — service_frozen,
//! service_unreachable (and service_restart_during_dispatch, whose crash as the provider answers
//! holds nobody) — on `expected_outcome` alone, and the certificate must blame §2-10 and the rule
//! of the operation's ending (§4-11) — not §2-9 (nothing ran twice), not §2-11 (nothing is left
//! unsettled). The correct worker, certified on the same two scenarios, verifies §2-10.

use super::common::{options, running_with};
use super::journal::{journal_worker, needing_services};
use killpoint::report::certificate::Certificate;
use killpoint::report::certify::certify;
use killpoint::{Scenario, Target};
use libtest_mimic::Failed;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Instant;

/// The scenarios the server's absence catches the drop in.
const CATCHING: [&str; 2] = ["service_frozen", "service_unreachable"];

/// The rules the drop breaks: §2-10, and §4-11 for the lookup-kind charge parked instead of
/// reconciled to SUCCEEDED.
const BROKEN: [&str; 2] = ["§2-10", "§4-11"];

pub fn a_dropping_worker_loses_the_operation() -> Result<(), Failed> {
    let all = needing_services();
    let dropping = journal_worker(&["--drop-on-server-error"]);
    let json = certified(&all, &dropping)?;
    let failed: BTreeSet<&str> = scenarios_where(&json, "fail");
    let violated = rules_with(&json, "violated");
    let invariants: BTreeSet<&str> = json["scenarios"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["violations"].as_array().into_iter().flatten())
        .filter_map(|v| v["invariant"].as_str())
        .collect();
    eprintln!("--drop-on-server-error: failed {failed:?}, on {invariants:?}; rules violated {violated:?}");
    let caught = CATCHING.iter().all(|name| failed.contains(name));
    if !caught || violated != BTreeSet::from(BROKEN) || invariants != BTreeSet::from(["expected_outcome"]) {
        return Err(format!(
            "--drop-on-server-error certified on the six service scenarios: expected {CATCHING:?} among the failures (found {failed:?}), only `expected_outcome` violated (found {invariants:?}), and the rules {BROKEN:?} violated (found {violated:?}); the scenarios:\n{:#}",
            json["scenarios"]
        )
        .into());
    }
    let catching: Vec<Scenario> = all.into_iter().filter(|s| CATCHING.contains(&s.name.as_str())).collect();
    let json = certified(&catching, &journal_worker(&[]))?;
    let verified = rules_with(&json, "verified");
    if scenarios_where(&json, "pass").len() != CATCHING.len() || !verified.contains("§2-10") {
        return Err(format!("the correct journal worker must pass {CATCHING:?} and verify §2-10:\n{json:#}").into());
    }
    Ok(())
}

/// The JSON certificate of `target` on `scenarios`, beside the kv server; its runs' directories
/// are in a root of their own, removed after, and no process of theirs is left.
fn certified(scenarios: &[Scenario], target: &Target) -> Result<Value, Failed> {
    let root = tempfile::tempdir()?;
    let options = options("kv.toml", root.path());
    let started = Instant::now();
    let outcomes = certify(scenarios, target, &options, false, 2);
    eprintln!("certify {:?}: {} scenarios in {:.1?}", target.args, scenarios.len(), started.elapsed());
    let certificate = Certificate::new(target, &outcomes).with_services(&options.services);
    let left = running_with(&root.path().display().to_string());
    if !left.is_empty() {
        return Err(format!("still running after the certification: {left:?}").into());
    }
    Ok(serde_json::from_str(&certificate.to_json())?)
}

fn scenarios_where<'j>(json: &'j Value, status: &str) -> BTreeSet<&'j str> {
    let all = json["scenarios"].as_array().into_iter().flatten();
    all.filter(|s| s["status"] == status).filter_map(|s| s["name"].as_str()).collect()
}

fn rules_with<'j>(json: &'j Value, status: &str) -> BTreeSet<&'j str> {
    let all = json["rules"].as_array().into_iter().flatten();
    all.filter(|r| r["status"] == status).filter_map(|r| r["id"].as_str()).collect()
}
