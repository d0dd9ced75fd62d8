//! Controlled schedules on whole runs (issue 33): the concurrent five-operation workload
//! (`scenarios/concurrent_wave.toml`) pinned to a schedule, against the reference runtime (tokio,
//! its tasks on a pool of threads) and against `tests/fixtures/concurrent_runtime.py` (a thread per
//! piece of due work). Both are correct: under every schedule tried they must pass (no false
//! alarm from the schedule's holding), and every crash point of the run must carry the thread
//! that made it and the decision that let it go, decisions numbered in the order they were taken.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use killpoint::search::schedules::Budget;
use killpoint::tracer::Schedule;
use killpoint::trials::at_once;
use killpoint::{RunOptions, Scenario, Target, run_scenario};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn wave(schedule: Schedule) -> Scenario {
    let mut scenario = Scenario::load(&root().join("scenarios/concurrent_wave.toml")).expect("the wave parses");
    scenario.schedule = Some(schedule);
    scenario
}

/// Two seeds at PCT depth 1, and one at depth 2 (a priority change point: the call that went at
/// a drawn step goes last from then on).
const WAVE_SCHEDULES: [Schedule; 3] = [
    Schedule { seed: 1, depth: 1, horizon: 64 },
    Schedule { seed: 2, depth: 1, horizon: 64 },
    Schedule { seed: 3, depth: 2, horizon: 64 },
];

/// Runs the wave under `schedule` against `target`: it passes, and its points tell the schedule.
fn passes_under(schedule: Schedule, target: &Target) {
    let seed = schedule.to_variable();
    let (verdict, run) = run_scenario(&wave(schedule), target, &RunOptions::default()).expect("it runs");
    assert!(verdict.passed(), "{seed}: a correct runtime failed under a schedule:\n{:#?}", verdict.failed_invariants());
    assert!(!run.syscall_points.is_empty(), "a scheduled run is traced");
    for incarnation in 1..=run.syscall_points.iter().map(|p| p.incarnation).max().unwrap_or(0) {
        let points: Vec<_> = run.syscall_points.iter().filter(|p| p.incarnation == incarnation).collect();
        assert!(points.iter().all(|p| p.thread.is_some()), "{seed}: every point names its thread");
        let steps: Vec<u64> = points
            .iter()
            .filter_map(|p| (p.when == killpoint::tracer::When::Before).then_some(p.step).flatten())
            .collect();
        assert!(
            steps.windows(2).all(|w| w[0] < w[1]),
            "{seed}, incarnation {incarnation}: decisions in order: {steps:?}"
        );
    }
}

#[test]
fn the_reference_passes_the_concurrent_wave_under_schedules() {
    let target = Target { program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")), args: Vec::new() };
    // The schedules at once: this file's tests sort last among the binary's (libtest starts them by
    // name), and one after another they ran on alone. A schedule, not timing, orders a scheduled run.
    at_once::each(WAVE_SCHEDULES.len(), |i| passes_under(WAVE_SCHEDULES[i], &target));
}

#[test]
fn the_thread_per_piece_runtime_passes_the_concurrent_wave_under_schedules() {
    let target = Target { program: root().join("tests/fixtures/concurrent_runtime.py"), args: Vec::new() };
    at_once::each(WAVE_SCHEDULES.len(), |i| passes_under(WAVE_SCHEDULES[i], &target));
}

/// The langgraph#8039-shaped fixture: one charge, killed right after the step's completion record
/// (its in-flight marker unlinked), which races the step's effect record on another thread.
fn racing_step() -> Scenario {
    let text = r#"
description = """
One charge; the runtime is killed right after the step's completion record (its in-flight marker
removed), which races the step's effect record on another thread (langgraph#8039's shape).
"""
deadline_seconds = 20

[[operation]]
id = "charge"
tool = "charge_card"
expect = "succeeded"

[[syscall_fault]]
kind = "unlink"
when = "after"
occurrence = 1
incarnation = 1
"#;
    Scenario::parse(std::path::Path::new("race_step.toml"), text).expect("the racing step's scenario parses")
}

/// The depth-1 budget: six seeds. Two parties race, so each seed puts the bad order first with
/// probability 1/2 and six miss it with probability 1/64; the seeds are the same in every
/// exploration, so one that finds it finds it every time the schedule replays.
const BUDGET: u64 = 6;

fn budget() -> Budget {
    Budget { seeds: BUDGET, depth: 1, first_failure: false, keep_failures: false, jobs: 2 }
}

fn race_fixture(twin: bool) -> Target {
    let args = if twin { vec!["--twin".to_owned()] } else { Vec::new() };
    Target { program: root().join("tests/fixtures/race_step_runtime.py"), args }
}

#[test]
fn the_racing_step_s_bad_order_is_found_by_explore_over_schedules_every_time_and_replays() {
    let scenario = racing_step();
    let found = at_once::each(3, |i| {
        let exploration = i + 1;
        let explored = killpoint::search::schedules::explore_schedules(
            &scenario,
            &race_fixture(false),
            &RunOptions::default(),
            budget(),
            &mut |_| {},
        )
        .expect("the runs run");
        let Some((schedule, written)) = explored.first_failure(&scenario) else {
            panic!("exploration {exploration}: no seed of {BUDGET} found the bad order: {:#?}", explored.runs);
        };
        let failed = &explored.runs.iter().find(|r| r.schedule == schedule).unwrap().violated;
        assert!(
            failed.iter().any(|i| i.as_str() == "at_most_once"),
            "exploration {exploration}: the duplicate charge: {failed:?}"
        );
        assert!(explored.runs.iter().any(|r| r.violated.is_empty()), "the good order passes for some seed");
        assert!(explored.distinct_orders >= 2, "both orders covered: {}", explored.distinct_orders);
        (schedule, written)
    });
    assert!(found.windows(2).all(|w| w[0].0 == w[1].0), "every exploration found it at the same seed");
    // The written case, read back from its file, replays the duplicate every time.
    let (_, written) = &found[0];
    let reread =
        Scenario::parse(std::path::Path::new("race_step.toml"), &written.to_toml()).expect("the written case parses");
    let replays = at_once::each(10, |_| {
        let (verdict, _) = run_scenario(&reread, &race_fixture(false), &RunOptions::default()).expect("it runs");
        verdict.failed_invariants().iter().any(|i| i.as_str() == "at_most_once")
    })
    .into_iter()
    .filter(|&duplicated| duplicated)
    .count();
    assert_eq!(replays, 10, "the written schedule replayed the duplicate {replays} of 10 times");
}

#[test]
fn the_racing_step_s_twin_passes_every_schedule_of_the_budget() {
    let explored = killpoint::search::schedules::explore_schedules(
        &racing_step(),
        &race_fixture(true),
        &RunOptions::default(),
        budget(),
        &mut |_| {},
    )
    .expect("the runs run");
    let failures: Vec<_> = explored.runs.iter().filter(|r| !r.violated.is_empty()).collect();
    assert!(failures.is_empty(), "the twin (ordered by design) failed: {failures:#?}");
}
