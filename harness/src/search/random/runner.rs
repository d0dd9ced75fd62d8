//! The runner: draws cases with proptest from the search's seed, runs each with the real driver
//! and checker, lets proptest shrink the first that fails, drops the faults it still does not
//! need, and writes the shrunk case as a scenario file with the commands that rerun it.

use super::genes::Genes;
use super::options::RandomOptions;
use super::rerun::{rerun_command, runtime_flags, services_flag, target_words};
use super::schedule::{draws, fault_count, one_fault_fewer};
use crate::judge::run_scenario;
use crate::model::invariant::Invariant;
use crate::report::evidence::keep_case;
use crate::run::incarnation::Target;
use crate::scenario::Scenario;
use crate::search::replay::{BUDGET, REPLAYS, Replays, replay, timing_dependent};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// What a search found.
#[derive(Debug)]
pub struct RandomOutcome {
    pub seed: u64,
    /// Runs made: drawn cases and shrinking steps.
    pub runs: u32,
    pub elapsed: Duration,
    /// The smallest failing case, if a case failed.
    pub failure: Option<Failure>,
}

/// A failing case, shrunk and written.
#[derive(Debug)]
pub struct Failure {
    pub scenario: Scenario,
    /// The scenario file written.
    pub file: PathBuf,
    /// The one line that reruns it.
    pub command: String,
    /// The invariants the shrunk case violated when it was run again after the search (its first
    /// failing replay).
    pub violated: BTreeSet<Invariant>,
    /// The failure report of the shrunk case's failing run during the search.
    pub story: String,
    /// The kept evidence (with `rerun.sh`) of the shrunk case's first failing replay.
    pub artifacts: Option<PathBuf>,
    /// With operations in flight together: how its [`REPLAYS`] replays went (`None`: one
    /// operation at a time, replayed once).
    pub replays: Option<Replays>,
}

impl Failure {
    /// Faults of every kind in the schedule.
    pub fn fault_count(&self) -> usize {
        fault_count(&self.scenario)
    }
}

/// Draws `options.cases` schedules and runs each against `target`; stops at the first that fails,
/// shrinks it, writes it to `options.out` and says how to rerun it.
pub fn search(target: &Target, options: &RandomOptions) -> std::io::Result<RandomOutcome> {
    search_telling(target, options, &|_| {})
}

/// One run of a random search done: which (from 1), whether it failed, the invariants it
/// violated and how long it took. Runs after the first failure are the shrink's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDone {
    pub run: u32,
    pub failed: bool,
    pub violated: BTreeSet<Invariant>,
    pub took: Duration,
}

/// [`search`], telling `tell` of every run as it ends (a command line's progress).
pub fn search_telling(
    target: &Target,
    options: &RandomOptions,
    tell: &dyn Fn(RunDone),
) -> std::io::Result<RandomOutcome> {
    let runs = AtomicU32::new(0);
    let started = Instant::now();
    // The report of the last failing run. The shrink returns the last case that failed, so this
    // is the report of the case it returns.
    let last = Mutex::new((String::new(), BTreeSet::new()));
    let minimal = shrunk(options, &|scenario| {
        let run = runs.fetch_add(1, Ordering::Relaxed) + 1;
        let began = Instant::now();
        let checked = check(scenario, target, options, &last);
        let took = began.elapsed();
        let failed = checked.is_err();
        let violated = if failed { last.lock().unwrap_or_else(|e| e.into_inner()).1.clone() } else { BTreeSet::new() };
        if failed {
            // Written as found, and again at each smaller case that still fails: a search
            // interrupted while it shrinks keeps its failure. A write that fails here fails again
            // at the end, where it is told.
            let _ = write_case(scenario.clone(), target, options, &violated, false);
        }
        tell(RunDone { run, failed, violated, took });
        checked
    })
    .map_err(std::io::Error::other)?;
    let elapsed = started.elapsed();
    let runs = runs.into_inner();
    let Some(minimal) = minimal else {
        return Ok(RandomOutcome { seed: options.seed, runs, elapsed, failure: None });
    };
    let (story, violated_then) = last.into_inner().unwrap_or_else(|e| e.into_inner());
    let failure = write_failure(minimal, target, options, story, &violated_then)?;
    Ok(RandomOutcome { seed: options.seed, runs, elapsed, failure: Some(failure) })
}

/// Draws `options.cases` cases from the seed and runs each with `check`; the first that fails is
/// shrunk by proptest (within `options.max_shrink_iters` runs), then by [`drop_faults`].
/// `Ok(None)`: every case passed.
pub(super) fn shrunk(
    options: &RandomOptions,
    check: &dyn Fn(&Scenario) -> Result<(), TestCaseError>,
) -> Result<Option<Scenario>, String> {
    let config = Config {
        cases: options.cases,
        // The seed is the record: a failure is replayed with it, or rerun from its file.
        failure_persistence: None,
        max_shrink_iters: options.max_shrink_iters,
        // Every case must be drawn; the strategy itself never rejects, so this only bounds a bug.
        max_global_rejects: 10 * options.cases.max(1),
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes(options.seed)));
    let result =
        runner.run(&draws(options.waves, options.run.probe, &service_names(options)), |(_, scenario)| check(&scenario));
    let (genes, scenario) = match result {
        Ok(()) => return Ok(None),
        Err(TestError::Fail(_, minimal)) => minimal,
        Err(TestError::Abort(why)) => return Err(format!("the random search stopped: {why}")),
    };
    Ok(Some(drop_faults(genes, scenario, options, &|s| check(s).is_err())))
}

/// Drops whole faults from a shrunk case while it still fails, one at a time, until none can go.
/// Proptest shrinks within its budget, one number at a time, and a gene's point counts from where
/// the faults before it left its operation, so its shrinks move faults rather than drop them: a
/// case could come back with a fault it does not need. Each fault dropped is at most one run per
/// fault left, and at most [`MAX_FAULTS`](super::MAX_FAULTS) are dropped.
fn drop_faults(
    mut genes: Genes,
    mut scenario: Scenario,
    options: &RandomOptions,
    fails: &dyn Fn(&Scenario) -> bool,
) -> Scenario {
    'fewer: loop {
        for (g, s) in one_fault_fewer(&genes, &scenario, options.waves, options.run.probe, &service_names(options)) {
            if fails(&s) {
                (genes, scenario) = (g, s);
                continue 'fewer;
            }
        }
        return scenario;
    }
}

/// The names of the services the runtime declares, which drawn cases may act on.
fn service_names(options: &RandomOptions) -> Vec<String> {
    options.run.services.list.iter().map(|s| s.name.as_str().to_owned()).collect()
}

/// Runs one drawn case. A failure is told to proptest, and its report and the invariants it
/// violated are kept in `last`.
fn check(
    scenario: &Scenario,
    target: &Target,
    options: &RandomOptions,
    last: &Mutex<(String, BTreeSet<Invariant>)>,
) -> Result<(), TestCaseError> {
    let (failed, violated) = match run_scenario(scenario, target, &options.run) {
        Ok((verdict, _)) if verdict.passed() => return Ok(()),
        Ok((verdict, run)) => (crate::report::story::story(scenario, &verdict, &run), verdict.failed_invariants()),
        Err(e) => (format!("could not run: {e}"), BTreeSet::new()),
    };
    *last.lock().unwrap_or_else(|e| e.into_inner()) = (failed.clone(), violated);
    Err(TestCaseError::fail(failed))
}

/// Writes the shrunk case `minimal` as a scenario file that says how it was found, and runs it
/// again (once; [`REPLAYS`] times when a run may go otherwise: `timing_dependent`), keeping the first
/// failing replay's evidence. `story` and `violated_then`: the report of its failing run during the
/// search.
fn write_failure(
    minimal: Scenario,
    target: &Target,
    options: &RandomOptions,
    story: String,
    violated_then: &BTreeSet<Invariant>,
) -> std::io::Result<Failure> {
    let (scenario, file, command) = write_case(minimal, target, options, violated_then, true)?;
    // The file is what a person reruns, so what it violates is said from it.
    let times = if timing_dependent(&scenario) { REPLAYS } else { 1 };
    let mut artifacts = None;
    let mut keep = |verdict: &crate::judge::Verdict, run| {
        let story = crate::report::story::story(&scenario, verdict, &run);
        artifacts = Some(keep_case(&scenario, verdict, Some(story), run, target, &options.run).0);
    };
    let until = Instant::now() + BUDGET;
    let replays = replay(&scenario, target, &options.run, violated_then, (times, until), &mut keep);
    let violated = replays.violated.clone();
    let replays = (times > 1).then_some(replays);
    Ok(Failure { scenario, file, command, violated, story, artifacts, replays })
}

/// Writes `case`, which violated `violated`, as this search's scenario file (`random-SEED.toml`
/// under `options.out`), saying how it was found: `shrunk`, the search's last word; else as far as
/// the search had shrunk it then. Written aside and renamed, so the file is always whole. Returns
/// the scenario as written, its file and the command that reruns it.
fn write_case(
    case: Scenario,
    target: &Target,
    options: &RandomOptions,
    violated: &BTreeSet<Invariant>,
    shrunk: bool,
) -> std::io::Result<(Scenario, PathBuf, String)> {
    let file = options.out.join(format!("random-{}.toml", options.seed));
    let command = rerun_command(&file, target, &options.run);
    let replay = format!(
        "killpoint random --seed {} --cases {}{}{}{}",
        options.seed,
        options.cases,
        if options.run.probe { "" } else { " --no-probe" },
        services_flag(&options.run),
        runtime_flags(target)
    );
    let names: Vec<&str> = violated.iter().map(|i| i.as_str()).collect();
    let how = if shrunk {
        "shrunk by proptest and then one fault at a time to this one"
    } else {
        "written as soon as it failed and again at each smaller case that still failed: the search was \
         still shrinking it"
    };
    let mut scenario = case;
    scenario.name = format!("random-{}", options.seed);
    scenario.path = file.clone();
    scenario.description = format!(
        "Found by `killpoint random` (seed {}, {} cases at most) against {}: a drawn schedule, {how}, which \
         violated {}.\nThe search: `{replay}`\nThis case: `{command}`",
        options.seed,
        options.cases,
        target_words(target),
        if names.is_empty() { "nothing the checker names (it could not run)".to_owned() } else { names.join(", ") },
    );
    scenario.write_whole(&file)?;
    Ok((scenario, file, command))
}

pub(super) fn seed_bytes(seed: u64) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(8) {
        chunk.copy_from_slice(&seed.to_le_bytes());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::boundary::Boundary;
    use crate::run::driver::RunOptions;
    use crate::scenario::Action;

    /// Seeds the shrink is tried with: every one a search, each run a pure check (no runtime).
    const SEEDS: u64 = 300;

    #[test]
    fn a_failure_shrinks_to_the_one_fault_it_needs_for_every_seed() {
        // The blind retry's trigger, without a runtime: a call whose outcome a kill leaves unknown.
        let unknown =
            |s: &Scenario| s.faults.iter().any(|f| f.at == Boundary::AfterDispatch && f.action == Action::Kill);
        let fails = |s: &Scenario| if unknown(s) { Err(TestCaseError::fail("a kill after a call")) } else { Ok(()) };
        let mut sizes = std::collections::BTreeMap::<usize, u64>::new();
        for seed in 0..SEEDS {
            // As tests/random.rs searches: 64 cases, 24 shrinking runs, no waves.
            let options = RandomOptions {
                cases: 64,
                seed,
                out: PathBuf::new(),
                max_shrink_iters: 24,
                waves: false,
                run: RunOptions::default(),
            };
            let minimal = shrunk(&options, &fails).unwrap().unwrap_or_else(|| panic!("seed {seed}: no case failed"));
            *sizes.entry(fault_count(&minimal)).or_default() += 1;
            assert!(unknown(&minimal), "seed {seed}: the shrunk case no longer fails:\n{}", minimal.to_toml());
        }
        println!("faults after shrinking, over {SEEDS} seeds: {sizes:?}");
        assert_eq!(sizes.keys().max(), Some(&1), "faults after shrinking (faults: seeds): {sizes:?}");
    }
}
