//! Controlled schedules on whole runs (issue 33): the concurrent five-operation workload
//! (`scenarios/concurrent_wave.toml`) pinned to a schedule, against the reference runtime (tokio,
//! its tasks on a pool of threads) and against `tests/fixtures/concurrent_runtime.py` (a thread per
//! piece of due work). Both are correct: under every schedule tried they must pass (no false
//! alarm from the schedule's holding), and every crash point of the run must carry the thread
//! that made it and the decision that let it go, decisions numbered in the order they were taken.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use killpoint::tracer::Schedule;
use killpoint::{RunOptions, Scenario, Target, run_scenario};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn wave(seed: u64) -> Scenario {
    let mut scenario = Scenario::load(&root().join("scenarios/concurrent_wave.toml")).expect("the wave parses");
    scenario.schedule = Some(Schedule::seeded(seed));
    scenario
}

/// Runs the wave under `seed` against `target`: it passes, and its points tell the schedule.
fn passes_under(seed: u64, target: &Target) {
    let (verdict, run) = run_scenario(&wave(seed), target, &RunOptions::default()).expect("it runs");
    assert!(
        verdict.passed(),
        "seed {seed}: a correct runtime failed under a schedule:\n{:#?}",
        verdict.failed_invariants()
    );
    assert!(!run.syscall_points.is_empty(), "a scheduled run is traced");
    for incarnation in 1..=run.syscall_points.iter().map(|p| p.incarnation).max().unwrap_or(0) {
        let points: Vec<_> = run.syscall_points.iter().filter(|p| p.incarnation == incarnation).collect();
        assert!(points.iter().all(|p| p.thread.is_some()), "seed {seed}: every point names its thread");
        let steps: Vec<u64> = points
            .iter()
            .filter_map(|p| (p.when == killpoint::tracer::When::Before).then_some(p.step).flatten())
            .collect();
        assert!(
            steps.windows(2).all(|w| w[0] < w[1]),
            "seed {seed}, incarnation {incarnation}: decisions in order: {steps:?}"
        );
    }
}

#[test]
fn the_reference_passes_the_concurrent_wave_under_schedules() {
    let target = Target { program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")), args: Vec::new() };
    for seed in [1, 2] {
        passes_under(seed, &target);
    }
}

#[test]
fn the_thread_per_piece_runtime_passes_the_concurrent_wave_under_schedules() {
    let target = Target { program: root().join("tests/fixtures/concurrent_runtime.py"), args: Vec::new() };
    for seed in [1, 2] {
        passes_under(seed, &target);
    }
}
