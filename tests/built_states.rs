//! Crash states built in an earlier run and crash states reached by re-running the prefix give
//! the same verdicts (issue 18): `killpoint explore --points syscalls` runs each case from the
//! state built at its point (depth 1: in the record run; depth 2: in its depth-1 case's run),
//! `--rerun-prefix` re-runs the workload up to it.
//!
//! - Every standard workload, two of its depth-1 cases each (spread over the points whose state
//!   was built), process and machine crashes taken in turn: cheap enough for every `cargo test`
//!   (one record run per workload, each case run both ways, traced). `killpoint bench SCENARIO
//!   --points syscalls` explores one workload both ways and compares every case.
//! - `after_submit` against `--broken no-sync` in a machine crash, the power-loss image of a built
//!   state, failing at every point (a power loss takes the intent the 202 promised), its finding
//!   replayed from its file.
//! - `delivery_dead_letter` against the reference in a process crash, a passing runtime whose
//!   consumer faults the world keeps with counts (a snapshot must carry what each has left).
//! - Depth 2 from states built in the depth-1 cases' runs, `after_submit` against the reference in
//!   a machine crash (a third of its depth-1 cases, each with its depth-2 cases). A failure found
//!   at depth 2 from a built state and replayed: `tests/syscalls.rs`.
//! - With the probe at depth 2, `after_dispatch`: the depth-2 cases started from the state their
//!   first kill left against the same cases re-run (the catches of every broken variant at depth
//!   2 with the probe, replayed from their written files: `tests/explore.rs`).

use killpoint::model::crash::Crash;
use killpoint::search::explore::agreement::{Agreement, agreement, sampled};
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
    killpoint::trials::needs::tracing("built crash states");
    let agreement = agreement(&scenario(name), target, &options(crash)).expect("explore runs");
    let from_built = agreement.built.exploration.from_built;
    assert!(from_built > 0, "{name}: no case ran from a built state (of {})", agreement.built.verdicts.len());
    agreed(name, &agreement, false);
    agreement.built.exploration.failures.into_iter().filter(|f| f.built).collect()
}

/// Asserts the two explorations of `name` agree on every case both found; unless `concurrent`
/// (operations in flight together, where which points a record run passes is the threads'
/// timing), both record runs found the same cases.
fn agreed(name: &str, agreement: &Agreement, concurrent: bool) {
    let (built, rerun) = (&agreement.built, &agreement.rerun);
    assert_eq!(rerun.exploration.from_built, 0, "{name}: --rerun-prefix ran case(s) from built states");
    assert!(
        concurrent || agreement.apart.unmatched.is_empty(),
        "{name}: the two record runs found different cases: {:?}",
        agreement.apart.unmatched
    );
    assert!(
        agreement.apart.differ.is_empty(),
        "{name}: built states and re-runs disagree on {} case(s):\n{}",
        agreement.apart.differ.len(),
        agreement.apart.differ.join("\n")
    );
    for line in &agreement.apart.unsteady {
        eprintln!("{name}: unsteady when re-run from the start (not held against built states): {line}");
    }
    let from_built = built.exploration.from_built;
    eprintln!("{name}: {} case(s) agree, {from_built} of them from built states", built.verdicts.len());
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

/// Every standard workload: two of its depth-1 cases with a built state (spread over its points),
/// each run from its state and re-run from the start, in a process crash and a machine crash by
/// turns. (`killpoint bench SCENARIO --points syscalls` compares every case of one workload.) Three
/// workloads at a time: a case mostly waits on the runtime's own recovery (its backoffs).
#[test]
fn built_states_agree_with_reruns_on_every_standard_workload() {
    killpoint::trials::needs::tracing("built crash states");
    let standard: Vec<Scenario> = killpoint::ScenarioSet::standard()
        .load()
        .expect("the standard set loads")
        .into_iter()
        .map(|s| s.expect("a standard scenario parses"))
        // A built state holds no service's state: those that need services are not explored so.
        .filter(|s| !s.needs_services())
        .collect();
    assert_eq!(standard.len(), 29, "the standard set without the scenarios that need services");
    let next = std::sync::atomic::AtomicUsize::new(0);
    let compared: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..3)
            .map(|_| {
                scope.spawn(|| {
                    let mut compared = 0;
                    while let Some(scenario) = standard.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                        let i = standard.iter().position(|s| s.name == scenario.name).expect("from the set");
                        compared += compare_sampled(scenario, if i % 2 == 0 { Crash::Process } else { Crash::Machine });
                    }
                    compared
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("a worker panicked: see its message above")).sum()
    });
    eprintln!("{compared} case(s) of {} workloads agree", standard.len());
}

/// Two cases of `scenario` run from their built states and re-run; returns how many agreed.
fn compare_sampled(scenario: &Scenario, crash: Crash) -> usize {
    let mut scenario = scenario.clone();
    scenario.deadline = scenario.deadline.max(std::time::Duration::from_secs(8));
    let name = format!("{} ({crash:?} crash)", scenario.name);
    let sampled =
        sampled(&scenario, &reference(), &ExploreOptions { jobs: 1, ..options(crash) }, 2).expect("the cases run");
    let concurrent = killpoint::search::replay::concurrent(&scenario);
    assert!(
        sampled.agree > 0 || (concurrent && !sampled.apart.unmatched.is_empty()),
        "{name}: no case compared ({} points with a built state; {:?})",
        sampled.built,
        sampled
    );
    assert!(
        sampled.apart.differ.is_empty(),
        "{name}: built states and re-runs disagree on {} case(s):\n{}",
        sampled.apart.differ.len(),
        sampled.apart.differ.join("\n")
    );
    for line in sampled.apart.unsteady.iter().chain(&sampled.apart.unmatched) {
        eprintln!("{name}: not compared: {line}");
    }
    sampled.agree
}

/// Depth 2: each depth-1 case's run builds the states of its recovery, and its depth-2 cases run
/// from them, with the verdicts their re-runs give.
#[test]
fn depth_two_cases_run_from_states_built_in_their_recovery_agree_with_reruns() {
    killpoint::trials::needs::tracing("built crash states");
    let name = "after_submit";
    let options = ExploreOptions { depth: 2, shard: Some((1, 3)), ..options(Crash::Machine) };
    let agreement = agreement(&scenario(name), &reference(), &options).expect("explore runs");
    let exploration = &agreement.built.exploration;
    let depth_one = exploration.ran[0];
    assert!(
        exploration.ran.len() == 2 && exploration.from_built > depth_one,
        "{name}: no depth-2 case ran from a built state (cases run per depth {:?}, {} from built states)",
        exploration.ran,
        exploration.from_built
    );
    agreed(name, &agreement, false);
}

/// With the probe at depth 2, each depth-1 case's run takes the state its kill left (under the
/// tracer, which alone says every request sent before the kill reached the world), and its depth-2
/// cases start there instead of re-running the prefix; their verdicts are the re-runs'.
#[test]
fn depth_two_with_the_probe_from_the_state_the_first_kill_left_agrees_with_reruns() {
    killpoint::trials::needs::tracing("the state a kill leaves");
    let name = "after_dispatch";
    let options = ExploreOptions {
        points: Points::Boundaries,
        depth: 2,
        run: RunOptions { probe: true, ..RunOptions::default() },
        ..options(Crash::Process)
    };
    let agreement = agreement(&scenario(name), &reference(), &options).expect("explore runs");
    let exploration = &agreement.built.exploration;
    assert!(
        exploration.ran.len() == 2 && exploration.from_built > 0,
        "{name}: no depth-2 case ran from the state its first kill left (cases run per depth {:?})",
        exploration.ran
    );
    eprintln!(
        "{name}: {} of {} depth-2 case(s) from the state their first kill left",
        exploration.from_built, exploration.ran[1]
    );
    agreed(name, &agreement, false);
}
