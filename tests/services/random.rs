//! `killpoint random` with services declared: it draws service faults (a kill, restart, freeze
//! or cut of the kv server at a boundary an operation surely reaches) besides the worker's own,
//! finds journal_worker.py `--drop-on-server-error` (the §2-10 bug) within a small budget for
//! each of several seeds, shrinks it to a file that holds a `[[service_fault]]` and replays it
//! with `killpoint run` (`--services` in its command line), and passes the correct journal worker.

use super::common::{options, running_with};
use super::journal::journal_worker;
use killpoint::search::random::{RandomOptions, search};
use killpoint::{Invariant, Scenario, run_scenario};
use libtest_mimic::Failed;
use std::path::Path;
use std::time::Instant;

/// Seeds the drop is looked for with, each a search of its own.
const SEEDS: [u64; 3] = [1, 2, 3];
/// Cases drawn per search: the budget.
const CASES: u32 = 16;

fn random_options(seed: u64, root: &Path, out: &Path) -> RandomOptions {
    RandomOptions {
        cases: CASES,
        seed,
        out: out.to_owned(),
        max_shrink_iters: 8,
        // One operation at a time: a drawn case then runs the same way each time it is run.
        waves: false,
        run: options("kv.toml", root),
    }
}

/// Each seed's search on a thread of its own (they share nothing but the machine): the trial takes
/// as long as its slowest seed, not the three together.
pub fn random_finds_the_dropping_worker() -> Result<(), Failed> {
    let searches: Vec<_> = SEEDS
        .into_iter()
        .map(|seed| {
            std::thread::spawn(move || {
                finds_the_dropping_worker(seed).map_err(|e| e.message().unwrap_or("failed").to_owned())
            })
        })
        .collect();
    for search in searches {
        search.join().map_err(|_| "a seed's search panicked")??;
    }
    Ok(())
}

fn finds_the_dropping_worker(seed: u64) -> Result<(), Failed> {
    let dropping = journal_worker(&["--drop-on-server-error"]);
    let (root, out) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let options = random_options(seed, root.path(), out.path());
    let started = Instant::now();
    let found = search(&dropping, &options)?;
    let failure = found.failure.ok_or_else(|| {
        format!("seed {seed}: {} runs found nothing against --drop-on-server-error in {CASES} cases", found.runs)
    })?;
    eprintln!(
        "seed {seed}: found in {} runs, {:.1?}; shrunk to {} fault(s), violating {:?}",
        found.runs,
        started.elapsed(),
        failure.fault_count(),
        failure.violated
    );
    let written = Scenario::load(&failure.file).map_err(|e| e.to_string())?;
    let drawn: Vec<String> = written.service_faults.iter().map(|f| f.describe()).collect();
    eprintln!("seed {seed}: the written case's service faults: {drawn:?}");
    let replayable = failure.command.contains(" run ") && failure.command.contains(" --services ");
    if written.service_faults.is_empty() || !replayable {
        return Err(format!(
            "seed {seed}: expected a written case with a [[service_fault]] and a `killpoint run … --services …` line; found:\n{}\n{}",
            failure.command,
            written.to_toml()
        )
        .into());
    }
    // `killpoint run` of the file does what the library run below does.
    let (verdict, run) = run_scenario(&written, &dropping, &options.run)?;
    if !verdict.failed_invariants().contains(&Invariant::ExpectedOutcome) {
        let story = killpoint::report::story::story(&written, &verdict, &run);
        return Err(format!("seed {seed}: the written case, run again, must fail expected_outcome:\n{story}").into());
    }
    drop(run);
    if let Some(kept) = &failure.artifacts {
        std::fs::remove_dir_all(kept)?;
    }
    nothing_running(root.path())?;
    Ok(())
}

pub fn random_passes_the_journaling_worker() -> Result<(), Failed> {
    let (root, out) = (tempfile::tempdir()?, tempfile::tempdir()?);
    let options = random_options(SEEDS[0], root.path(), out.path());
    let started = Instant::now();
    let found = search(&journal_worker(&[]), &options)?;
    eprintln!("seed {}: {} runs in {:.1?}", SEEDS[0], found.runs, started.elapsed());
    if let Some(failure) = found.failure {
        return Err(format!(
            "the correct journal worker failed a drawn case (seed {}):\n{}\n{}",
            SEEDS[0], failure.story, failure.command
        )
        .into());
    }
    nothing_running(root.path())
}

fn nothing_running(root: &Path) -> Result<(), Failed> {
    let left = running_with(&root.display().to_string());
    match left.is_empty() {
        true => Ok(()),
        false => Err(format!("still running after the search: {left:?}").into()),
    }
}
