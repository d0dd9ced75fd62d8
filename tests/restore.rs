//! Restores (`--crash restore`, issue 34): at each kill the host is lost, and the runtime is
//! rebuilt in a new data dir from a backup that lags, while the world keeps everything.
//!
//! - The reference runtime passes every standard scenario restored, with the probe and without it
//!   (the tracer, which every restore runs under, places the boundaries), and the cases explore
//!   found in restore mode, where the judge once failed it (`tests/fixtures/restore/`): a tool
//!   without lookup refused after a restore is paused (§13-4); a delivery's backoff after a
//!   restore is counted from the sends the restored runtime can know of.
//! - Each restore-only variant passes its scenario under process and machine crashes and fails it
//!   restored, on the invariant that names the repeated effect (or the send the policy forbade).
//! - A restore moves the data dir (a new path per restore, never the first one), gives the first
//!   start on it `KILLPOINT_RESTORED`, takes the backup the lag asks for, and resubmits what the
//!   backup forgot.
//! - Explore at depth 1 in restore mode passes the reference, with the probe and traced.

use killpoint::model::crash::{Crash, Lag};
use killpoint::run::driver::{Happening, Run};
use killpoint::{RunOptions, Scenario, Target, Verdict, run_scenario};
use std::path::PathBuf;
use std::sync::Mutex;

fn target(broken: Option<&str>) -> Target {
    let args = broken.map(|b| vec!["--broken".to_owned(), b.to_owned()]).unwrap_or_default();
    Target { program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")), args }
}

fn scenario(name: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/{name}.toml"));
    Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn standard() -> Vec<Scenario> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut all: Vec<Scenario> = Scenario::load_dir(&dir)
        .expect("the scenarios dir")
        .into_iter()
        .map(|s| s.unwrap_or_else(|e| panic!("{e}")))
        .filter(|s| !s.needs_services && s.service_faults.is_empty())
        .collect();
    all.sort_by(|a, b| a.name.cmp(&b.name));
    all
}

/// Restores need the tracer (it sees what was synced): where the system refuses it, this fails.
fn traced() {
    if let Err(why) = killpoint::run::traced::permitted() {
        panic!("restores run under killpoint-tracer, and {why}");
    }
}

fn run(scenario: &Scenario, target: &Target, options: &RunOptions) -> (Verdict, Run) {
    run_scenario(scenario, target, options).unwrap_or_else(|e| panic!("{}: the harness failed: {e}", scenario.name))
}

fn failures(verdict: &Verdict) -> String {
    let said: Vec<String> = verdict.violations.iter().map(|v| format!("{}: {}", v.invariant, v.message)).collect();
    said.join("\n")
}

/// Runs every scenario of `scenarios` under `options`, two at a time; returns the failed ones with why.
fn certify(scenarios: &[Scenario], options: &RunOptions) -> Vec<String> {
    let queue = Mutex::new(scenarios.iter());
    let failed = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while let Some(scenario) = { queue.lock().unwrap().next() } {
                    let (verdict, _) = run(scenario, &target(None), options);
                    if !verdict.violations.is_empty() || verdict.error.is_some() {
                        let why = verdict.error.clone().unwrap_or_else(|| failures(&verdict));
                        failed.lock().unwrap().push(format!("{}: {why}", scenario.name));
                    }
                }
            });
        }
    });
    failed.into_inner().unwrap()
}

/// The standard scenarios and the two cases explore found in restore mode, all restored, with the
/// probe or without: two tests, so that the two halves run side by side (one test that ran them in
/// turn took 23 s, and started among its binary's last).
fn the_reference_passes_every_standard_scenario_restored(probe: bool) {
    traced();
    let mut scenarios = standard();
    let found = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/restore");
    let found = Scenario::load_dir(&found).expect("tests/fixtures/restore");
    assert_eq!(found.len(), 2, "the two cases explore found in restore mode");
    scenarios.extend(found.into_iter().map(|s| s.unwrap_or_else(|e| panic!("{e}"))));
    let options = RunOptions { crash: Crash::Restore, probe, ..RunOptions::default() };
    let failed = certify(&scenarios, &options);
    assert!(failed.is_empty(), "restored, probe {probe}, the reference failed:\n{}", failed.join("\n\n"));
}

#[test]
fn the_reference_passes_every_standard_scenario_restored_with_the_probe() {
    the_reference_passes_every_standard_scenario_restored(true);
}

#[test]
fn the_reference_passes_every_standard_scenario_restored_without_the_probe() {
    the_reference_passes_every_standard_scenario_restored(false);
}

/// Each variant, the scenario that catches it, and the invariants it must fail there restored.
const RESTORE_ONLY: [(&str, &str, &[&str]); 3] = [
    ("random-key", "restore_before_the_intent", &["at_most_once", "stable_provider_key"]),
    ("rekeyed-outbox", "after_delivery_send", &["delivered_once", "stable_delivery_key"]),
    ("restored-grant", "restore_before_the_revocation", &["policy_respected", "policy_checked"]),
];

#[test]
fn each_restore_only_variant_passes_crashes_and_fails_a_restore_on_the_repeated_effect() {
    traced();
    for (broken, name, invariants) in RESTORE_ONLY {
        let scenario = scenario(name);
        for crash in [Crash::Process, Crash::Machine] {
            let (verdict, _) = run(&scenario, &target(Some(broken)), &RunOptions { crash, ..RunOptions::default() });
            assert!(
                verdict.violations.is_empty(),
                "{broken} in {name} under a {} crash:\n{}",
                crash.name(),
                failures(&verdict)
            );
        }
        let options = RunOptions { crash: Crash::Restore, ..RunOptions::default() };
        let (verdict, _) = run(&scenario, &target(Some(broken)), &options);
        let violated: Vec<&str> = verdict.violations.iter().map(|v| v.invariant.as_str()).collect();
        for invariant in invariants {
            assert!(
                violated.contains(invariant),
                "{broken} in {name} restored: expected {invariant}, found {violated:?}"
            );
        }
        // Named as the restore's: the section-13 rule its invariant speaks for.
        assert!(
            verdict.violations.iter().any(|v| v.rules().iter().any(|r| r.starts_with("§13-"))),
            "{broken} in {name} restored: no violation names a rule of section 13:\n{}",
            failures(&verdict)
        );
    }
}

fn restores(run: &Run) -> Vec<(u32, u32, String)> {
    run.timeline
        .iter()
        .filter_map(|m| match &m.happening {
            Happening::Restored { incarnation, back, path, .. } => Some((*incarnation, *back, path.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn a_restore_moves_the_data_dir_signals_the_start_and_takes_the_backup_the_lag_asks_for() {
    traced();
    let scenario = scenario("after_dispatch");
    let options = RunOptions { crash: Crash::Restore, restore_lag: Some(Lag::Syncs(1)), ..RunOptions::default() };
    let (verdict, run) = run(&scenario, &target(None), &options);
    assert!(verdict.violations.is_empty(), "{}", failures(&verdict));
    let restores = restores(&run);
    assert_eq!(restores.len(), scenario.faults.len(), "one restore per kill: {restores:?}");
    let mut paths: Vec<&str> = restores.iter().map(|(_, _, p)| p.as_str()).collect();
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), restores.len(), "every restore in a path of its own: {restores:?}");
    assert!(restores.iter().all(|(_, back, path)| *back == 1 && path.contains("/host-")), "{restores:?}");
    // The reference says on stderr what the signal made it do; its log is kept in the run's dir.
    let stderr = std::fs::read_to_string(run.artifacts.path().join("logs/stderr.log")).expect("the runtime's stderr");
    for (incarnation, _, _) in &restores {
        let signal = format!("restore-{}", incarnation + 1);
        assert!(stderr.contains(&signal), "incarnation {} was not told `{signal}`:\n{stderr}", incarnation + 1);
    }
}

#[test]
fn a_backup_older_than_the_workload_forgets_it_and_the_clients_submit_it_again() {
    traced();
    let scenario = scenario("after_dispatch");
    // Older than anything the run wrote: every restore starts from the empty dir.
    let options = RunOptions { crash: Crash::Restore, restore_lag: Some(Lag::Millis(60_000)), ..RunOptions::default() };
    let (verdict, run) = run(&scenario, &target(None), &options);
    assert!(verdict.violations.is_empty(), "{}", failures(&verdict));
    let resubmitted =
        run.timeline.iter().filter(|m| matches!(m.happening, Happening::ResubmittedAfterRestore { .. })).count();
    assert!(resubmitted >= scenario.faults.len(), "a forgotten operation submitted again after each restore");
    // `sms` has no lookup: forgotten and submitted again, the restore's risk, reported.
    assert!(
        verdict.restore_risks.iter().any(|r| r.operation == "sms" && r.tool == "non_idempotent_no_lookup"),
        "{:?}",
        verdict.restore_risks
    );
}

/// Issue 34: explore at depth 1 in restore mode, with the probe and traced without it, over the
/// workload whose intent a restore can outrun and the plain one-operation workload: every case
/// passes the reference (explore over every standard workload found the two cases of
/// `tests/fixtures/restore/`, where the judge was wrong, and nothing else).
#[test]
fn explore_in_restore_mode_passes_the_reference_with_the_probe_and_traced() {
    use killpoint::search::explore::{self, ExploreOptions, Points};
    traced();
    for name in ["restore_before_the_intent", "after_submit"] {
        let scenario = scenario(name);
        for probe in [true, false] {
            let options = ExploreOptions {
                depth: 1,
                keep_failures: false,
                points: if probe { Points::Boundaries } else { Points::Syscalls },
                run: RunOptions { crash: Crash::Restore, probe, syscalls: !probe, ..RunOptions::default() },
                ..ExploreOptions::default()
            };
            let result = explore::explore(&scenario, &target(None), &options, &|_, _, _, _| {})
                .unwrap_or_else(|e| panic!("{name}, probe {probe}: exploring could not run: {e}"));
            let ran: usize = result.ran.iter().sum();
            assert!(ran >= 5, "{name}, probe {probe}: only {ran} case(s) ran");
            let failed: Vec<String> =
                result.failures.iter().map(|f| format!("{}: {}", f.case.name(), failures(&f.verdict))).collect();
            assert!(failed.is_empty(), "{name}, probe {probe}: restored, the reference failed:\n{}", failed.join("\n"));
        }
    }
}
