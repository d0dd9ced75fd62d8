//! `killpoint explore --schedules N`: the scenario as written (its kills and faults kept) run under
//! the controlled schedules of seeds 1..=N (`crate::search::schedules`), a line per seed; each
//! failing schedule written as a scenario file that pins its seed, replayed, and the number of
//! distinct orders covered said.

use crate::run::built::kept;
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use crate::scenario::{Action, Scenario};
use crate::search::replay;
use crate::search::schedules::{Budget, ScheduleRun, explore_schedules};
use std::process::ExitCode;
use std::time::Instant;

/// Where failing schedules go (`--out`), and whether each seed gets a line (not with `--quiet`).
pub struct Told<'a> {
    pub out: &'a std::path::Path,
    pub quiet: bool,
}

/// Runs the exploration over schedules `budget` of `scenario`; the exit code says whether a
/// schedule failed (1) or the runs could not run (2).
pub fn explore(command: Told<'_>, scenario: &Scenario, target: &Target, run: RunOptions, budget: Budget) -> ExitCode {
    if let Err(e) = crate::run::traced::permitted() {
        errln!("killpoint: explore over schedules runs under the tracer, which cannot trace here: {e}");
        return ExitCode::from(2);
    }
    outln!(
        "exploring the schedules of `{}` ({} operation(s), its {} kill(s) and {} system-call fault(s) kept) against {}: seeds 1..={} at PCT depth {}",
        scenario.name,
        scenario.operations.len(),
        scenario.faults.iter().filter(|f| matches!(f.action, Action::Kill | Action::Freeze)).count(),
        scenario.syscall_faults.len(),
        target.program.display(),
        budget.seeds,
        budget.depth
    );
    let started = Instant::now();
    let mut tell = |done: &ScheduleRun| {
        if !command.quiet {
            errln!("  seed {}: {} ({} decisions)", done.schedule.seed, verdict(done), done.order.len());
        }
    };
    let explored = match explore_schedules(scenario, target, &run, budget, &mut tell) {
        Ok(explored) => explored,
        Err(e) => {
            errln!("killpoint: the exploration over schedules could not run: {e}");
            return ExitCode::from(2);
        }
    };
    let failing: Vec<&ScheduleRun> = explored.runs.iter().filter(|r| !r.violated.is_empty()).collect();
    let until = Instant::now() + replay::BUDGET;
    // A seed that went the same order as an earlier one and failed the same way is the same case:
    // written once, the others named beside it.
    let mut cases: Vec<(&ScheduleRun, Vec<u64>)> = Vec::new();
    for failed in &failing {
        match cases.iter_mut().find(|(first, _)| first.order == failed.order && first.violated == failed.violated) {
            Some((_, same)) => same.push(failed.schedule.seed),
            None => cases.push((failed, Vec::new())),
        }
    }
    for (failed, same) in &cases {
        report(&command, scenario, target, &run, failed, until);
        if !same.is_empty() {
            let seeds: Vec<String> = same.iter().map(u64::to_string).collect();
            errln!("  the same order and failure under seed(s) {}: not written again", seeds.join(", "));
        }
        errln!("");
    }
    outln!(
        "schedules run: {} ({} passed, {} failed) in {:.1} s; distinct orders of the runtime's crash-point calls: {}",
        explored.runs.len(),
        explored.runs.len() - failing.len(),
        failing.len(),
        started.elapsed().as_secs_f64(),
        explored.distinct_orders
    );
    if failing.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn verdict(run: &ScheduleRun) -> String {
    if run.violated.is_empty() { "passed".to_owned() } else { format!("FAILED, violated {}", violated(run)) }
}

/// `at_most_once, no_blind_retry`.
fn violated(run: &ScheduleRun) -> String {
    run.violated.iter().map(|i| i.as_str()).collect::<Vec<_>>().join(", ")
}

/// A failing schedule: written to `--out` with its seed pinned, replayed, and where its evidence is.
fn report(
    command: &Told<'_>,
    scenario: &Scenario,
    target: &Target,
    run: &RunOptions,
    failed: &ScheduleRun,
    until: Instant,
) {
    let mut pinned = Scenario { schedule: Some(failed.schedule), ..scenario.clone() };
    pinned.name = format!("{}.seed-{}", scenario.name, failed.schedule.seed);
    pinned.description = format!(
        "Found by `killpoint explore --schedules`: `{}` under the schedule of seed {} (PCT depth {}), violated {}.\n\n{}",
        scenario.name,
        failed.schedule.seed,
        failed.schedule.depth,
        violated(failed),
        scenario.description
    );
    errln!("seed {}: {}", failed.schedule.seed, verdict(failed));
    if let Some(story) = &failed.story {
        errln!("{story}");
    }
    let path = command.out.join(format!("{}.toml", pinned.name));
    // Beside it, the crash state its last kill left, when the run kept one.
    let written = pinned.write_whole(&path).and_then(|()| kept::put_beside(failed.artifacts.as_deref(), &path));
    match written.map(|()| path) {
        Ok(path) => {
            // The schedule is pinned, but where the tracer cannot hold the runtime to it (threads
            // that hand work over without a traced call) a replay from the start may go
            // otherwise: it starts from the kept state when there is one, and says how often it
            // came back rather than promise it.
            let from_kept = kept::find(&path, &kept::Key::of(&pinned, target, run.probe, run.crash)).usable();
            let run = &RunOptions { from_kept, ..run.clone() };
            let replays =
                replay::replay(&pinned, target, run, &failed.violated, (replay::REPLAYS, until), &mut |_, _| {});
            let command = crate::search::random::rerun_command(&path, target, run);
            errln!("  written to {}\n  {}: {command}", path.display(), replays.told());
        }
        Err(e) => errln!("killpoint: cannot write the failing schedule to {}: {e}", command.out.display()),
    }
    if let Some(path) = &failed.artifacts {
        errln!("  {}", crate::run::artifacts::kept_at(path));
    }
}
