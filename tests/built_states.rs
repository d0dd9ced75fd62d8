//! Crash states built in the record run and crash states reached by re-running the prefix give
//! the same verdicts (issue 18): `killpoint explore --points syscalls` runs each depth-1 case from
//! the state built at its point, `--rerun-prefix` re-runs the workload up to it.
//!
//! A representative set, cheap enough for every `cargo test` (each workload is explored twice,
//! traced): `after_submit` against `--broken no-sync` in a machine crash, the power-loss image of a
//! built state, failing at every point (a power loss takes the intent the 202 promised), its
//! finding replayed from its file; and `delivery_dead_letter` against the reference
//! in a process crash, a passing runtime whose consumer faults the world keeps with counts (a
//! snapshot must carry what each has left). Every standard workload, both crash models, is
//! `killpoint bench SCENARIO --points syscalls` (it says how many cases' verdicts differ).

use killpoint::model::crash::Crash;
use killpoint::search::explore::agreement::agreement;
use killpoint::search::explore::{ExploreOptions, Finding, Points};
use killpoint::{RunOptions, Scenario, Target, run_scenario};
use std::path::PathBuf;

fn reference() -> Target {
    Target { program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")), args: Vec::new() }
}

fn scenario(name: &str) -> Scenario {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/{name}.toml"));
    let mut scenario = Scenario::load(&path).expect("a shipped scenario");
    // A hang bound: tracing under a loaded test run makes the runtime several times slower.
    scenario.deadline = scenario.deadline.max(std::time::Duration::from_secs(8));
    scenario
}

fn run_options(crash: Crash) -> RunOptions {
    RunOptions { probe: false, crash, ..RunOptions::default() }
}

fn options(crash: Crash) -> ExploreOptions {
    ExploreOptions {
        points: Points::Syscalls,
        run: run_options(crash),
        jobs: 2,
        keep_failures: false,
        second_record: false,
        ..ExploreOptions::default()
    }
}

/// Explores `scenario` both ways and asserts every case's verdict is the same; returns the
/// failures found from built states.
fn agree(name: &str, target: &Target, crash: Crash) -> Vec<Finding> {
    if let Err(why) = killpoint::run::traced::permitted() {
        eprintln!("{why}: built crash states cannot be tested here (skipped, not passed)");
        return Vec::new();
    }
    let scenario = scenario(name);
    let agreement = agreement(&scenario, target, &options(crash)).expect("explore runs");
    let (built, rerun) = (&agreement.built, &agreement.rerun);
    assert_eq!(rerun.exploration.from_built, 0, "{name}: --rerun-prefix ran case(s) from built states");
    let from_built = built.exploration.from_built;
    assert!(from_built > 0, "{name}: no case ran from a built state (of {})", built.verdicts.len());
    assert!(
        agreement.unmatched.is_empty(),
        "{name}: the two record runs found different cases: {:?}",
        agreement.unmatched
    );
    assert!(
        agreement.differ.is_empty(),
        "{name}: built states and re-runs disagree on {} case(s):\n{}",
        agreement.differ.len(),
        agreement.differ.join("\n")
    );
    for line in &agreement.unsteady {
        eprintln!("{name}: unsteady when re-run from the start (not held against built states): {line}");
    }
    eprintln!("{name}: {} case(s) agree, {from_built} of them from built states", built.verdicts.len());
    agreement.built.exploration.failures.into_iter().filter(|f| f.built).collect()
}

/// A case found from a built state is a scenario like any other: written out, read back and run
/// from the start (as `killpoint run FILE` does), it fails again on the invariants it failed on.
#[test]
fn a_power_loss_built_at_a_point_agrees_with_a_rerun_and_its_finding_replays() {
    let target = Target { args: vec!["--broken".into(), "no-sync".into()], ..reference() };
    let failures = agree("after_submit", &target, Crash::Machine);
    if killpoint::run::traced::permitted().is_err() {
        return;
    }
    let finding = failures.first().expect("no-sync fails in a machine crash at a point explored from a built state");
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join(format!("{}.toml", finding.scenario.name));
    std::fs::write(&path, finding.scenario.to_toml()).expect("written");
    let replayed = Scenario::load(&path).expect("the written file parses");
    let (verdict, _run) = run_scenario(&replayed, &target, &run_options(Crash::Machine)).expect("it runs");
    let expected = finding.verdict.failed_invariants();
    let again = verdict.failed_invariants();
    assert!(
        !again.is_disjoint(&expected),
        "{} ({}, found from a built state) did not reproduce {expected:?} when re-run from the start: violated {again:?}",
        path.display(),
        finding.case.name()
    );
}

#[test]
fn built_states_carry_the_worlds_remaining_faults() {
    agree("delivery_dead_letter", &reference(), Crash::Process);
}
