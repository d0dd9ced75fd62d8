//! Random schedules, shrunk: the search finds a broken runtime's bug and leaves a small scenario
//! file that reproduces it; the reference runtime passes every drawn case.
//!
//! `KILLPOINT_RANDOM_CASES` sets how many cases are drawn, `KILLPOINT_RANDOM_SEED` replays a
//! search (each test prints its seed). `KILLPOINT_RANDOM_SEEDS=N` runs the blind-retry search for N
//! seeds from that one (about 30 s each on a debug build), and says how far each shrank.

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

/// The search the blind-retry tests make: 64 cases, 24 shrinking runs, one operation at a time.
fn blind_retry_options(out: &std::path::Path) -> RandomOptions {
    let mut options = options(64, out);
    options.max_shrink_iters = 24;
    // One operation at a time: blind-retry is then caught by one kill the same way on every run,
    // so the case shrinks and the seed replays it. (With waves, a kill of one operation can catch
    // it on another's call in flight, which a rerun may not repeat.)
    options.waves = false;
    options
}

#[test]
fn a_blind_retry_is_found_shrunk_written_and_replayed() {
    let out = tempfile::tempdir().unwrap();
    let target = reference(&["--broken", "blind-retry"]);
    let options = blind_retry_options(out.path());
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
    let program = failure.command.split(' ').next().unwrap_or_default();
    assert!(std::path::Path::new(program).is_absolute(), "the rerun line runs `{program}`: {}", failure.command);
    assert!(failure.command.contains(" run ") && failure.command.ends_with("-- --broken blind-retry"));
    // The replay that failed kept its evidence (with rerun.sh); it is not this test's to leave.
    let kept = failure.artifacts.clone().expect("the failing replay keeps its artifacts");
    assert!(kept.join("rerun.sh").is_file(), "no rerun.sh in {}", kept.display());
    std::fs::remove_dir_all(&kept).unwrap();

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
    if let Some(kept) = &again.artifacts {
        std::fs::remove_dir_all(kept).unwrap();
    }
    assert_eq!(again.scenario, failure.scenario);
}

/// The bound of the test above for many seeds (`KILLPOINT_RANDOM_SEEDS`, none by default: each
/// is a search of its own); every seed's shrunk case is said, and the largest.
#[test]
fn a_blind_retry_shrinks_to_three_faults_at_most_for_every_seed() {
    let seeds: u64 = match std::env::var("KILLPOINT_RANDOM_SEEDS") {
        Ok(n) => n.trim().parse().unwrap_or_else(|_| panic!("KILLPOINT_RANDOM_SEEDS expects a number, found `{n}`")),
        Err(_) => {
            println!("KILLPOINT_RANDOM_SEEDS is not set: no seed searched");
            return;
        }
    };
    let out = tempfile::tempdir().unwrap();
    let target = reference(&["--broken", "blind-retry"]);
    let mut options = blind_retry_options(out.path());
    let (first, started) = (options.seed, std::time::Instant::now());
    let mut sizes = std::collections::BTreeMap::<usize, Vec<u64>>::new();
    for n in 0..seeds {
        options.seed = first.wrapping_add(n);
        let found = search(&target, &options).unwrap();
        let failure = found.failure.unwrap_or_else(|| {
            panic!("seed {}: {} runs found nothing against --broken blind-retry", found.seed, found.runs)
        });
        println!("seed {}: {} runs, shrunk to {} fault(s)", found.seed, found.runs, failure.fault_count());
        sizes.entry(failure.fault_count()).or_default().push(found.seed);
    }
    let counts: Vec<String> =
        sizes.iter().map(|(faults, s)| format!("{faults} fault(s): {} seed(s)", s.len())).collect();
    println!(
        "{seeds} seeds from {first} in {:.0} s; shrunk to {}",
        started.elapsed().as_secs_f64(),
        if counts.is_empty() { "nothing".to_owned() } else { counts.join(", ") }
    );
    let over: Vec<(&usize, &Vec<u64>)> = sizes.iter().filter(|(faults, _)| **faults > 3).collect();
    assert!(over.is_empty(), "seeds whose case shrank to more than 3 faults (faults, seeds): {over:?}");
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
