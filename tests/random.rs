//! Random schedules, shrunk: the search finds a broken runtime's bug and leaves a small scenario
//! file that reproduces it; the reference runtime passes every drawn case.
//!
//! `KILLPOINT_RANDOM_CASES` sets how many cases are drawn, `KILLPOINT_RANDOM_SEED` replays a
//! search (each test prints its seed).

use killpoint::search::random::{RandomOptions, search};
use killpoint::{Scenario, Target, run_scenario};
use std::path::PathBuf;

fn reference(args: &[&str]) -> Target {
    Target {
        program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
    }
}

fn options(cases: u32, out: &std::path::Path) -> RandomOptions {
    let options = RandomOptions::from_env(cases, out).unwrap();
    println!("seed {} (replay with KILLPOINT_RANDOM_SEED={})", options.seed, options.seed);
    options
}

#[test]
fn a_blind_retry_is_found_shrunk_written_and_replayed() {
    let out = tempfile::tempdir().unwrap();
    let target = reference(&["--broken", "blind-retry"]);
    let mut options = options(64, out.path());
    options.max_shrink_iters = 24;
    // One operation at a time: blind-retry is then caught by one kill the same way on every run,
    // so the case shrinks and the seed replays it. (With waves, a kill of one operation can catch
    // it on another's call in flight, which a rerun may not repeat.)
    options.waves = false;
    let found = search(&target, &options).unwrap();
    let failure = found.failure.unwrap_or_else(|| {
        panic!("seed {}: {} runs found nothing against --broken blind-retry", found.seed, found.runs)
    });
    println!(
        "{} runs in {:.1} s ({:.1} runs/s); shrunk to {} fault(s):\n{}\n{}",
        found.runs,
        found.elapsed.as_secs_f64(),
        f64::from(found.runs) / found.elapsed.as_secs_f64(),
        failure.fault_count(),
        failure.command,
        failure.scenario.to_toml()
    );
    assert!(failure.fault_count() <= 3, "shrunk to {} faults:\n{}", failure.fault_count(), failure.scenario.to_toml());
    assert!(!failure.violated.is_empty(), "the shrunk case, run again, no longer fails");
    assert!(failure.command.starts_with("killpoint run ") && failure.command.ends_with("-- --broken blind-retry"));

    // The file is the failure: it reads back as the same case, and fails the same way when run.
    let file = Scenario::load(&failure.file).unwrap();
    assert_eq!(file, failure.scenario);
    assert!(file.description.contains(&format!("seed {}", found.seed)), "{}", file.description);
    let (verdict, _run) = run_scenario(&file, &target, &options.run).unwrap();
    assert_eq!(verdict.failed_invariants(), failure.violated, "{:?}", verdict.violations);
    let (verdict, _run) = run_scenario(&file, &reference(&[]), &options.run).unwrap();
    assert!(verdict.passed(), "the reference runtime fails the shrunk case: {:?}", verdict.violations);

    // The seed is the search: the same seed finds the same minimal case.
    let again = search(&target, &options).unwrap().failure.expect("the same seed finds a failure again");
    assert_eq!(again.scenario, failure.scenario);
}

#[test]
fn the_reference_runtime_passes_every_drawn_case() {
    let out = tempfile::tempdir().unwrap();
    let options = options(16, out.path());
    let found = search(&reference(&[]), &options).unwrap();
    println!(
        "{} cases in {:.1} s ({:.1} cases/s)",
        found.runs,
        found.elapsed.as_secs_f64(),
        f64::from(found.runs) / found.elapsed.as_secs_f64()
    );
    if let Some(failure) = found.failure {
        let kept = out.keep();
        panic!(
            "seed {}: the reference runtime fails a drawn case (run again, it violated {:?}), kept in {}:\n{}\n{}\n{}",
            found.seed,
            failure.violated,
            kept.display(),
            failure.command,
            failure.scenario.to_toml(),
            failure.story
        );
    }
    assert_eq!(found.runs, options.cases);
}
