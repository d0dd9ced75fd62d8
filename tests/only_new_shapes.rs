//! Two broken variants that only a new shape of test catches, and proof that it is so: each passes
//! every other shipped scenario, and fails only the one written for it.
//!
//! - `one-dispatch-slot` remembers only the operation it dispatched last as in flight. Alone in
//!   flight, an operation always is the last dispatched: only operations in flight together
//!   (`concurrent_dispatch`) catch it. It must pass every scenario whose operations run one at a
//!   time (a scenario with a wave of several may catch it, by chance).
//! - `restart-after-failed-lookup` takes an operation whose last lookup failed for never
//!   dispatched on start: only a second kill, during the recovery from the first
//!   (`kill_while_reconciling`), catches it. It must pass every other scenario.

use killpoint::{RunOptions, Scenario, Target, run_scenario};
use std::path::{Path, PathBuf};

/// The scenarios written to catch these two variants.
const NEW_SHAPES: [&str; 2] = ["concurrent_dispatch", "kill_while_reconciling"];

fn broken(variant: &str) -> Target {
    Target {
        program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")),
        args: vec!["--broken".to_owned(), variant.to_owned()],
    }
}

fn shipped() -> Vec<Scenario> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    Scenario::load_dir(&dir)
        .expect("the scenario directory is readable")
        .into_iter()
        .map(|s| s.expect("shipped scenarios parse"))
        .filter(|s| !NEW_SHAPES.contains(&s.name.as_str()))
        // A scenario that acts on a server beside the worker says nothing of a runtime without one.
        .filter(|s| !s.needs_services())
        .collect()
}

/// Runs each scenario against `variant`, two at a time, and returns the failures as stories.
fn failures(variant: &str, scenarios: Vec<Scenario>) -> Vec<String> {
    let target = broken(variant);
    let mut failed = Vec::new();
    for pair in scenarios.chunks(2) {
        let runs: Vec<_> = pair
            .iter()
            .map(|scenario| {
                let (scenario, target) = (scenario.clone(), target.clone());
                // Each run spawns its runtime from its own thread and blocks it until the end, as
                // `run_scenario` requires.
                std::thread::spawn(move || {
                    let (verdict, run) = run_scenario(&scenario, &target, &RunOptions::default()).unwrap();
                    let outcome = if verdict.passed() {
                        None
                    } else {
                        Some(killpoint::report::story::story(&scenario, &verdict, &run))
                    };
                    drop(run);
                    outcome
                })
            })
            .collect();
        failed.extend(runs.into_iter().filter_map(|run| run.join().expect("a scenario run panicked")));
    }
    failed
}

#[test]
fn one_dispatch_slot_passes_every_scenario_of_one_operation_at_a_time() {
    let sequential: Vec<Scenario> =
        shipped().into_iter().filter(|s| s.waves().iter().all(|wave| wave.len() == 1)).collect();
    assert!(sequential.len() > 10, "only {} sequential scenarios found", sequential.len());
    let failed = failures("one-dispatch-slot", sequential);
    assert!(failed.is_empty(), "`--broken one-dispatch-slot` failed a one-at-a-time scenario:\n{}", failed.join("\n"));
}

#[test]
fn restart_after_failed_lookup_passes_every_scenario_without_a_second_kill_in_recovery() {
    let scenarios = shipped();
    assert!(scenarios.len() > 10, "only {} scenarios found", scenarios.len());
    let failed = failures("restart-after-failed-lookup", scenarios);
    assert!(
        failed.is_empty(),
        "`--broken restart-after-failed-lookup` failed a scenario without a kill during recovery:\n{}",
        failed.join("\n")
    );
}
