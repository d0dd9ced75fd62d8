//! `killpoint explore` under `cargo test`.
//!
//! - `explore::<workload>::<case>`: every depth-1 crash point of the concurrent five-operation
//!   workload (`scenarios/concurrent_wave.toml`) is a trial of its own, with a stable name, so
//!   `cargo nextest run --partition hash:K/N` spreads them over CI machines. Listing them takes one
//!   record run of the workload (the points are the boundary occurrences it passes).
//! - `explore::concurrent::<workload>::<case>`: the same cases against
//!   `tests/fixtures/concurrent_runtime.py`, a correct runtime of another design (every due
//!   operation and delivery on its own thread, recovery of all unknown operations at once): a kill
//!   lands wherever its other threads are, and none of that may read as a violation.
//! - `explore_finds::<variant>`: for every broken variant the standard scenarios catch, explore of
//!   those scenarios' workloads — their hand-placed kills dropped — finds a failure by itself
//!   (over system calls for a scenario with `[[syscall_fault]]`s), and the scenario file it writes
//!   reproduces that failure.
//! - `explore_finds_divergence::syscalls`: explore of the task workload
//!   (`scenarios/model_decides.toml`) over system calls, as a black box, finds the runtime
//!   that asks the model again on recovery (`--broken reask-on-recovery`) acting on two decisions
//!   (`one_decision`) on each of three runs, and each run's written case replays it.
//! - `explore_accounts::…`: what explore says it tested — a case whose own kill was reached is
//!   not "not reached" because a kept world fault had nothing left to spoil.

use killpoint::model::crash::Crash;
use killpoint::search::explore::{self, CaseStatus, ExploreOptions, Workload};
use killpoint::search::replay;
use killpoint::trials::arguments::TestArguments;
use killpoint::{RunOptions, Scenario, Target, run_scenario};
use libtest_mimic::{Failed, Trial};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    killpoint::trials::interpreter::python3_first_on_path();
    let args = TestArguments::from_args();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target = Target { program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")), args: Vec::new() };
    let wave = root.join("scenarios/concurrent_wave.toml");
    let mut trials = explored_points(&wave, &target, "explore");
    trials.extend(concurrent_runtime(&wave, &root));
    trials.extend(found_by_explore(&root.join("scenarios"), &target));
    let tasks = root.join("scenarios/model_decides.toml");
    let diverging = target.clone();
    trials.push(Trial::test("explore_finds_divergence::syscalls", move || finds_divergence(&tasks, &diverging)));
    let reconciling = root.join("scenarios/kill_while_reconciling.toml");
    let accounted = target.clone();
    trials.push(Trial::test("explore_accounts::a_kept_world_fault_with_nothing_to_spoil", move || {
        a_kept_world_fault_with_nothing_to_spoil(&reconciling, &accounted)
    }));
    killpoint::trials::order::longest_first(&mut trials, &LONGEST);
    args.run(trials).exit_code()
}

/// The trials that take longest (about 11, 8, 6, 5 and 4 s at 4 at once), started first.
const LONGEST: [&str; 5] = [
    "explore_finds::fenced_hangs",
    "explore_finds::split_outbox",
    "explore_finds::fresh_key",
    "explore_finds::rekeyed_outbox",
    "explore_finds::restart_after_failed_lookup",
];

/// The depth-1 cases against the concurrent Python fixture. Where python3 is missing the trial is
/// listed as ignored, with the reason on stderr — never passed.
fn concurrent_runtime(wave: &std::path::Path, root: &std::path::Path) -> Vec<Trial> {
    let program = root.join("tests/fixtures/concurrent_runtime.py");
    let python = killpoint::trials::needs::python3_runs();
    if !python {
        eprintln!("python3 not found: the explore::concurrent trials are ignored, not passed");
        return vec![Trial::test("explore::concurrent", || Ok(())).with_ignored_flag(true)];
    }
    explored_points(wave, &Target { program, args: Vec::new() }, "explore::concurrent")
}

/// One trial per depth-1 case of the workload, against `target`, named under `prefix`.
fn explored_points(path: &std::path::Path, target: &Target, prefix: &str) -> Vec<Trial> {
    let scenario = match Scenario::load(path) {
        Ok(s) => s,
        Err(e) => return vec![Trial::test(prefix, move || Err(e.to_string().into()))],
    };
    let workload = Arc::new(Workload::of(&scenario));
    // Unpruned: the list must name the same cases in every process that lists it. One record run:
    // every process lists again.
    let options = ExploreOptions { prune: false, second_record: false, ..ExploreOptions::default() };
    let plan = match explore::plan(&workload, target, &options) {
        Ok(plan) => plan,
        Err(e) => {
            return vec![Trial::test(prefix, move || Err(format!("the record run could not run: {e}").into()))];
        }
    };
    let mut trials = vec![{
        let (record, story) = (plan.record.clone(), plan.record_story.clone());
        Trial::test(format!("{prefix}::{}::no_kill", scenario.name), move || match story {
            Some(story) if !record.passed() => Err(story.into()),
            _ => Ok(()),
        })
    }];
    for case in plan.cases {
        let (workload, target) = (workload.clone(), target.clone());
        trials.push(Trial::test(format!("{prefix}::{}::{}", scenario.name, case.name()), move || {
            let (finding, run) = explore::run_case(&workload, &case, &target, &Default::default())
                .map_err(|e| format!("the case could not run: {e}"))?;
            match finding.status() {
                CaseStatus::Fail => {
                    let kept = run.keep_artifacts();
                    Err(format!(
                        "{}\n  {}",
                        finding.story.unwrap_or_default(),
                        killpoint::run::artifacts::kept_at(&kept)
                    )
                    .into())
                }
                CaseStatus::Pass | CaseStatus::Partial | CaseStatus::NotReached => Ok(()),
            }
        }));
    }
    trials
}

/// Variants a standard scenario catches that explore is not held to find; each is held by its
/// scenario's catch (`tests/scenarios.rs`, `broken::…`) and by `tests/restore.rs`.
/// - `restored-grant`: restore_before_the_revocation runs the cancelled charge beside a ticket, so
///   which durable change is one before a kill explore places depends on how the two interleave,
///   and the case explore writes replayed in about 3 runs of 5 (explore over restore points from
///   built states, which would pin it, is not built yet).
const NOT_FOUND_BY_EXPLORE: &[&str] = &["restored-grant"];

/// One trial per broken variant named in the standard scenarios' `[[catches]]`, explored under the
/// crash its catches name (`no-sync` loses what it did not sync only in a machine crash).
fn found_by_explore(dir: &std::path::Path, target: &Target) -> Vec<Trial> {
    let mut by_variant: BTreeMap<String, (Crash, Vec<Scenario>)> = BTreeMap::new();
    for scenario in Scenario::load_dir(dir).into_iter().flatten().flatten() {
        for catch in scenario.catches.iter().filter(|c| !NOT_FOUND_BY_EXPLORE.contains(&c.broken.as_str())) {
            let (crash, scenarios) = by_variant.entry(catch.broken.clone()).or_insert((catch.crash, Vec::new()));
            if catch.crash == Crash::Machine {
                *crash = Crash::Machine;
            }
            scenarios.push(scenario.clone());
        }
    }
    by_variant
        .into_iter()
        .map(|(variant, (crash, scenarios))| {
            let target = target.clone();
            Trial::test(format!("explore_finds::{}", variant.replace('-', "_")), move || {
                finds(&variant, crash, &scenarios, &target)
            })
        })
        .collect()
}

/// Explores each workload that catches `variant` until one fails; the failing case, written as a
/// scenario file and read back, must fail the variant again on the same invariants.
fn finds(variant: &str, crash: Crash, scenarios: &[Scenario], target: &Target) -> Result<(), Failed> {
    let mut broken = target.clone();
    broken.args.extend(["--broken".to_owned(), variant.to_owned()]);
    let dir = tempfile::tempdir().map_err(|e| format!("no temp dir: {e}"))?;
    let run = RunOptions { crash, ..RunOptions::default() };
    // Depth 2 only when depth 1 finds nothing: some bugs (`restart-after-failed-lookup`) show only
    // when the recovery from a crash crashes too.
    // Failures are expected here: their data dirs are not kept.
    let depths = [1, 2].map(|depth| ExploreOptions {
        depth,
        first_failure: true,
        jobs: 1,
        keep_failures: false,
        run: run.clone(),
        ..ExploreOptions::default()
    });
    for (options, scenario) in depths.iter().flat_map(|options| scenarios.iter().map(move |s| (options, s))) {
        // A catch at a system call (`frozen_before_a_request`: a freeze just before a request) is
        // found where explore places such points: over system calls, as a traced black box.
        let over_syscalls = ExploreOptions {
            points: explore::Points::Syscalls,
            run: RunOptions { probe: false, ..options.run.clone() },
            ..options.clone()
        };
        let options = if scenario.syscall_faults.is_empty() { options } else { &over_syscalls };
        let result = explore::explore(scenario, &broken, options, &|_, _, _, _| {})
            .map_err(|e| format!("exploring `{}` could not run: {e}", scenario.name))?;
        let Some(finding) = result.failures.first() else { continue };
        // Hand-placed kills are gone: whatever was found, explore chose the crash points.
        let workload = Workload::of(scenario);
        if finding.scenario.faults.len() != workload.base.faults.len() + finding.case.kills.len() {
            return Err(format!("the failing case of `{}` carries faults explore did not place", scenario.name).into());
        }
        let Err(first) = reproduces(finding, &broken, &run, dir.path()) else { return Ok(()) };
        let first = format!("with `--broken {variant}`, {first}");
        if !replay::timing_dependent(&finding.scenario) {
            return Err(first.into());
        }
        // A timing-dependent case can fail by a race its replays do not meet again (a stress run
        // saw `after_submit.charge.1` fail `--broken no-policy-recheck` once and its file pass 5
        // of 5: the worker had reached the revocation before the kill at the `202` landed). Explore
        // tells such a case "reproduced 0 of 5"; what this test holds is that explore finds a case
        // that does reproduce, so the rest of the same exploration is run and each failure tried.
        let every = ExploreOptions { first_failure: false, ..options.clone() };
        let result = explore::explore(scenario, &broken, &every, &|_, _, _, _| {})
            .map_err(|e| format!("exploring `{}` again could not run: {e}", scenario.name))?;
        if result.failures.iter().any(|f| reproduces(f, &broken, &run, dir.path()).is_ok()) {
            return Ok(());
        }
        return Err(format!(
            "{first}\n(and none of the {} failure(s) of a full exploration reproduced)",
            result.failures.len()
        )
        .into());
    }
    let names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
    Err(format!(
        "explore of {names:?}, to depth 2, found no failure with `--broken {variant}` ({} crashes)",
        crash.name()
    )
    .into())
}

/// Whether `finding`'s case, written as a scenario file into `dir` and read back, fails `broken`
/// again on one of the invariants it failed (a timing-dependent case on one of its replays); if
/// not, what it did instead.
fn reproduces(
    finding: &explore::Finding,
    broken: &Target,
    run: &RunOptions,
    dir: &std::path::Path,
) -> Result<(), String> {
    let path = dir.join(format!("{}.toml", finding.scenario.name));
    std::fs::write(&path, finding.scenario.to_toml()).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let replayed = Scenario::load(&path).map_err(|e| format!("the written file does not parse: {e}"))?;
    let expected = finding.verdict.failed_invariants();
    // A case that may go otherwise when run again is replayed as explore replays it: it
    // reproduces when one of its replays does (explore says "reproduced k of N").
    // So is a backoff found too short: how long a runtime that does not wait takes to send again
    // is the machine's speed (a stress run at a load of 15 saw `--broken no-backoff`'s written
    // case space its sends past the backoff in one replay).
    let timed = replay::timing_dependent(&replayed) || expected.contains(&killpoint::Invariant::DeliveryBackoff);
    let times = if timed { replay::REPLAYS } else { 1 };
    let mut last = None;
    for _ in 0..times {
        let (verdict, run) =
            run_scenario(&replayed, broken, run).map_err(|e| format!("the written case could not run: {e}"))?;
        if !verdict.failed_invariants().is_disjoint(&expected) {
            return Ok(());
        }
        last = Some((verdict, run));
    }
    let (verdict, run) = last.expect("replayed at least once");
    let story = killpoint::report::story::story(&replayed, &verdict, &run);
    Err(format!(
        "explore found `{}` failing {expected:?}, but its written file {} did not reproduce it in {times} run(s) (violated {:?} the last time)\n{story}",
        finding.case.name(),
        path.display(),
        verdict.failed_invariants()
    ))
}

/// Issue 30: every exploration over system calls of the task workload finds the re-decided
/// step, and its written case replays it. Where tracing is refused the trial fails, saying so.
fn finds_divergence(path: &std::path::Path, target: &Target) -> Result<(), Failed> {
    killpoint::run::traced::permitted().map_err(|e| format!("explore over system calls needs the tracer: {e}"))?;
    let scenario = Scenario::load(path).map_err(|e| format!("{e}"))?;
    let mut broken = target.clone();
    broken.args.extend(["--broken".to_owned(), "reask-on-recovery".to_owned()]);
    let run = RunOptions { probe: false, syscalls: true, ..RunOptions::default() };
    let options = ExploreOptions {
        depth: 1,
        first_failure: true,
        jobs: 1,
        keep_failures: false,
        points: explore::Points::Syscalls,
        run: run.clone(),
        ..ExploreOptions::default()
    };
    let dir = tempfile::tempdir().map_err(|e| format!("no temp dir: {e}"))?;
    for round in 1..=3 {
        let result = explore::explore(&scenario, &broken, &options, &|_, _, _, _| {})
            .map_err(|e| format!("round {round}: exploring could not run: {e}"))?;
        let finding = result
            .failures
            .iter()
            .find(|f| f.verdict.failed_invariants().contains(&killpoint::Invariant::OneDecision))
            .ok_or_else(|| {
                // What it found instead says whether the runtime or the machine went otherwise.
                let found: Vec<String> = result
                    .failures
                    .iter()
                    .map(|f| format!("{} violated {:?}", f.case.name(), f.verdict.failed_invariants()))
                    .collect();
                format!(
                    "round {round}: explore over system calls found no `one_decision` failure in {} case(s); it found: {}",
                    result.ran.iter().sum::<usize>(),
                    if found.is_empty() { "nothing failing".to_owned() } else { found.join("; ") }
                )
            })?;
        let written = dir.path().join(format!("{round}-{}.toml", finding.scenario.name));
        std::fs::write(&written, finding.scenario.to_toml()).map_err(|e| format!("{}: {e}", written.display()))?;
        let replayed = Scenario::load(&written).map_err(|e| format!("the written file does not parse: {e}"))?;
        let (verdict, replay) = run_scenario(&replayed, &broken, &run).map_err(|e| format!("replay: {e}"))?;
        if !verdict.failed_invariants().contains(&killpoint::Invariant::OneDecision) {
            let story = killpoint::report::story::story(&replayed, &verdict, &replay);
            return Err(format!(
                "round {round}: the written case {} did not replay the divergence\n{story}",
                written.display()
            )
            .into());
        }
    }
    Ok(())
}

/// `kill_while_reconciling` keeps a lookup fault that only a kill before the lookup leaves
/// something to spoil. A case whose own kill was reached, and whose recovery was checked, tested
/// what it set out to: passed, not "not reached" (8 of its 11 cases were, before).
fn a_kept_world_fault_with_nothing_to_spoil(path: &std::path::Path, target: &Target) -> Result<(), Failed> {
    let scenario = Scenario::load(path).map_err(|e| e.to_string())?;
    let options = ExploreOptions { jobs: 1, keep_failures: false, ..ExploreOptions::default() };
    let result = explore::explore(&scenario, target, &options, &|_, _, _, _| {}).map_err(|e| e.to_string())?;
    let stories: Vec<&str> = result.failures.iter().filter_map(|f| f.story.as_deref()).collect();
    if !stories.is_empty() || result.not_reached != 0 || result.passed != result.ran[0] {
        return Err(format!(
            "expected every one of {} case(s) to pass, found {} passed, {} not reached, {} failed\n{}",
            result.ran[0],
            result.passed,
            result.not_reached,
            result.failures.len(),
            stories.join("\n")
        )
        .into());
    }
    Ok(())
}
