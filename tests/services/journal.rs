//! The trials of journal_worker.py (tests/fixtures/services), which journals every round of an
//! operation in the kv server beside it: correct, and broken three ways (`--blind`,
//! `--ignore-fence`, `--drop-on-server-error`). services.rs's header says what each shows.

use super::common::{fixtures, nothing_left, options, scenario};
use killpoint::{RunOptions, Scenario, Target, run_scenario};
use libtest_mimic::Failed;
use std::time::{Duration, Instant};

/// journal_worker.py (tests/fixtures/services), correct (no `flags`) or broken by them.
pub fn journal_worker(flags: &[&str]) -> Target {
    let args = flags.iter().map(|f| (*f).to_owned()).collect();
    Target { program: fixtures().join("journal_worker.py"), args }
}

pub fn frozen_worker_woken() -> Result<(), Failed> {
    let scenario = scenario("zombie_worker");
    let ignoring = Target { args: vec!["--ignore-fence".to_owned()], ..journal_worker(&[]) };
    for (target, right) in [(journal_worker(&[]), true), (ignoring, false)] {
        let root = tempfile::tempdir()?;
        let started = Instant::now();
        let (verdict, run) = run_scenario(&scenario, &target, &options("kv.toml", root.path()))?;
        eprintln!("zombie_worker {:?}: {:.1?}", target.args, started.elapsed());
        let story = killpoint::report::story::story(&scenario, &verdict, &run);
        let named = verdict.violations.iter().any(|v| v.invariant == killpoint::Invariant::Fenced && v.breaks("§2-12"));
        let expected = match right {
            true => verdict.passed() && verdict.exercises.contains(&"§2-12"),
            false => named,
        };
        if !expected {
            let wanted = if right { "a pass exercising §2-12" } else { "`fenced` violated, naming §2-12" };
            return Err(
                format!("zombie_worker {:?} with the kv server: expected {wanted}\n{story}", target.args).into()
            );
        }
        nothing_left(run, root.path())?;
    }
    Ok(())
}

/// The standard scenarios that need services, by name.
pub fn needing_services() -> Vec<Scenario> {
    let all = killpoint::ScenarioSet::standard().load().expect("the standard set loads");
    all.into_iter().map(|s| s.expect("a standard scenario parses")).filter(Scenario::needs_services).collect()
}

pub fn standard_pass_a_journaling_worker() -> Result<(), Failed> {
    let scenarios = needing_services();
    let names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
    if names.len() != 6 {
        return Err(format!("expected the six standard scenarios that need services, found {names:?}").into());
    }
    for scenario in &scenarios {
        let root = tempfile::tempdir()?;
        let started = Instant::now();
        let (verdict, run) = run_scenario(scenario, &journal_worker(&[]), &options("kv.toml", root.path()))?;
        eprintln!("{}: {:.1?}", scenario.name, started.elapsed());
        // Each exercises the service rules it is about: §2-9 with a service fault, §2-13 with a
        // worker killed while its server lived.
        let rule = if scenario.service_faults.is_empty() { "§2-13" } else { "§2-9" };
        if !verdict.passed() || run.service_hits.iter().any(|hit| !hit) || !verdict.exercises.contains(&rule) {
            let story = killpoint::report::story::story(scenario, &verdict, &run);
            return Err(format!(
                "{} must pass the journaling worker, every service fault fired:\n{story}",
                scenario.name
            )
            .into());
        }
        let trace: Vec<String> = killpoint::run::trace::lines(&run).into_iter().map(|l| l.text).collect();
        let wanted: &[&str] = match scenario.name.as_str() {
            "service_frozen" => &[
                "SIGSTOP service kv (service fault 1, freeze for 2.0s",
                "SIGCONT service kv (service fault 1, freeze ended after",
            ],
            "service_unreachable" => &[
                "cut the worker off service kv (service fault 1, unreachable for 2.0s",
                "service kv reachable again (service fault 1, unreachable ended after",
            ],
            _ => &[],
        };
        for line in wanted {
            if !trace.iter().any(|t| t.contains(line)) {
                return Err(format!("{}: the trace must say `{line}`: {trace:#?}", scenario.name).into());
            }
        }
        nothing_left(run, root.path())?;
    }
    Ok(())
}

pub fn blind_worker_is_caught() -> Result<(), Failed> {
    // The two scenarios at once: each waits out its deadline.
    let names = ["service_frozen", "service_unreachable"];
    let caught = killpoint::trials::at_once::each(names.len(), |i| blind_caught_in(names[i]));
    caught.into_iter().collect::<Result<(), String>>().map_err(Failed::from)
}

/// The blind worker under scenario `name`: caught on at_most_once and no_blind_retry, §2-9 named.
fn blind_caught_in(name: &str) -> Result<(), String> {
    let mut scenario = scenario(name);
    // The blind worker's last rerun never settles: its deadline, not the window, is the wait.
    scenario.deadline = Duration::from_secs(8);
    let root = tempfile::tempdir().map_err(|e| e.to_string())?;
    let started = Instant::now();
    let (verdict, run) = run_scenario(&scenario, &journal_worker(&["--blind"]), &options("kv.toml", root.path()))
        .map_err(|e| format!("{name}: {e}"))?;
    eprintln!("{name} --blind: {:.1?}", started.elapsed());
    let failed = verdict.failed_invariants();
    let wanted = [killpoint::Invariant::AtMostOnce, killpoint::Invariant::NoBlindRetry];
    // A step run twice through a server's freeze or cut breaks the service rule too.
    if !wanted.iter().all(|i| failed.contains(i)) || !verdict.violations.iter().any(|v| v.breaks("§2-9")) {
        let story = killpoint::report::story::story(&scenario, &verdict, &run);
        return Err(format!("{name}: the blind worker must be caught on {wanted:?}, found {failed:?}\n{story}"));
    }
    nothing_left(run, root.path()).map_err(|e| format!("{name}: {}", e.message().unwrap_or("not cleaned up")))
}

pub fn freeze_until() -> Result<(), Failed> {
    let root = tempfile::tempdir()?;
    let scenario = Scenario::load(&fixtures().join("kv_freeze_until.toml")).expect("the fixture's scenario parses");
    let started = Instant::now();
    let (verdict, run) = run_scenario(&scenario, &journal_worker(&[]), &options("kv.toml", root.path()))?;
    let took = started.elapsed();
    eprintln!("a_freeze_ends_at_its_world_event: {took:.1?}");
    let trace: Vec<String> = killpoint::run::trace::lines(&run).into_iter().map(|l| l.text).collect();
    let story = killpoint::report::story::story(&scenario, &verdict, &run);
    let wanted = "SIGCONT service kv (service fault 1, freeze ended after";
    let ended = trace.iter().find(|t| t.contains(wanted));
    let at_event = ended.is_some_and(|t| t.ends_with("after_result_write #1 of charge came first)"));
    if !verdict.passed() || !at_event || took > Duration::from_secs(40) {
        return Err(format!("expected a pass in well under 60 s, the freeze ended at after_result_write; took {took:?}, ended: {ended:?}\n{story}").into());
    }
    nothing_left(run, root.path())
}

pub fn needs_the_probe() -> Result<(), Failed> {
    let root = tempfile::tempdir()?;
    let scenario = scenario("service_frozen");
    let options = RunOptions { probe: false, ..options("kv.toml", root.path()) };
    let (verdict, run) = run_scenario(&scenario, &journal_worker(&[]), &options)?;
    let story = killpoint::report::story::story(&scenario, &verdict, &run);
    let status = verdict.status();
    if status != killpoint::judge::Status::Partial
        || verdict.needs_probe_services != [0]
        || !verdict.violations.is_empty()
    {
        return Err(format!(
            "expected a partial pass, service fault 1 not exercised without the probe; found {status:?}, {:?}\n{story}",
            verdict.needs_probe_services
        )
        .into());
    }
    nothing_left(run, root.path())
}
