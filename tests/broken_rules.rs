//! Every broken variant of the reference runtime is held to the rules of the contract it breaks,
//! no more and no fewer (issue 32): one bug must not make a certificate say that seventeen rules
//! were violated.
//!
//! Each variant runs the standard scenarios whose `[[catches]]` name it, under the crash each
//! names, and one scenario it must pass ([`PASSES`]). The rules its violations name, scenario by
//! scenario, must be those `harness/src/judge/rules/caught.rs` records for it — the one place that
//! says what each variant breaks — and the certificate's rule table over those verdicts must say
//! "violated" for exactly their union. Every scenario of the set is not run for every variant:
//! 32 × 24 runs would cost minutes; the catches are where a variant shows, and the scenario it
//! passes is where a blamed rule that is not its own would show.

use killpoint::judge::rules::caught::{CAUGHT, broken_by};
use killpoint::judge::rules::{RuleStatus, judge_rules};
use killpoint::model::crash::Crash;
use killpoint::{RunOptions, Scenario, Target, Verdict, run_scenario};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The scenario each variant must pass under process crashes, where it is not [`DEFAULT_PASS`]
/// (which makes no retry and kills nothing after a dispatch); `None` for a variant whose mistake
/// shows in every run (every request, every call), which no scenario passes.
const PASSES: &[(&str, Option<&str>)] = &[
    ("retry-on-4xx", Some("after_submit")),
    ("result-before-call", Some("after_submit")),
    ("no-fence-header", None),
    ("strip-private-arguments", None),
    ("truncate-arguments", None),
];
const DEFAULT_PASS: &str = "provider_rejects";

/// Runs at once: each run waits on its runtime and the fake world far more than it computes.
const WORKERS: usize = 4;

fn reference() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime"))
}

fn standard() -> Vec<Scenario> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut scenarios: Vec<Scenario> = std::fs::read_dir(&dir)
        .expect("the scenarios dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| Scenario::load(&p).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    scenarios.sort_by(|a, b| a.name.cmp(&b.name));
    scenarios
}

/// One run: a variant on a scenario under a crash.
struct Case<'s> {
    broken: String,
    scenario: &'s Scenario,
    crash: Crash,
}

/// Each variant's cases: its catches, then the scenario it must pass.
fn cases<'s>(variants: &[String], scenarios: &'s [Scenario]) -> Vec<Case<'s>> {
    let mut cases = Vec::new();
    for broken in variants {
        for scenario in scenarios {
            for catch in scenario.catches.iter().filter(|c| c.broken == *broken) {
                cases.push(Case { broken: broken.clone(), scenario, crash: catch.crash });
            }
        }
        let passes = PASSES.iter().find(|(b, _)| b == broken).map_or(Some(DEFAULT_PASS), |(_, s)| *s);
        if let Some(passes) = passes {
            let scenario = scenarios.iter().find(|s| s.name == passes).expect("the pass scenario is standard");
            cases.push(Case { broken: broken.clone(), scenario, crash: Crash::Process });
        }
    }
    cases
}

/// Runs every case, `WORKERS` at a time; the verdicts in the cases' order.
fn run_all(cases: &[Case]) -> Vec<Verdict> {
    let next = Mutex::new(0usize);
    let verdicts: Mutex<Vec<(usize, Verdict)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                loop {
                    let index = {
                        let mut next = next.lock().unwrap();
                        *next += 1;
                        *next - 1
                    };
                    let Some(case) = cases.get(index) else { return };
                    let verdict = run_case(case);
                    verdicts.lock().unwrap().push((index, verdict));
                }
            });
        }
    });
    let mut verdicts = verdicts.into_inner().unwrap();
    verdicts.sort_by_key(|(i, _)| *i);
    verdicts.into_iter().map(|(_, v)| v).collect()
}

fn run_case(case: &Case) -> Verdict {
    let target = Target { program: reference(), args: vec!["--broken".into(), case.broken.clone()] };
    let options = RunOptions { crash: case.crash, ..RunOptions::default() };
    let (verdict, run) = run_scenario(case.scenario, &target, &options)
        .unwrap_or_else(|e| panic!("`{}` with --broken {} could not run: {e}", case.scenario.name, case.broken));
    let _ = std::fs::remove_dir_all(run.keep_artifacts());
    verdict
}

/// The rules a verdict's violations name, in the order first named.
fn named(verdict: &Verdict) -> Vec<&'static str> {
    let mut rules: Vec<&'static str> = Vec::new();
    for rule in verdict.violations.iter().flat_map(|v| v.rules().iter().copied()) {
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }
    rules.sort_by_key(|r| killpoint::judge::rules::RULES.iter().position(|x| x.id == *r));
    rules
}

#[test]
fn every_broken_variant_violates_exactly_the_rules_it_breaks() {
    let variants: Vec<String> = killpoint::model::variants::of(&reference())
        .expect("the reference lists its variants")
        .into_iter()
        .map(|v| v.name)
        .collect();
    let scenarios = standard();
    let cases = cases(&variants, &scenarios);
    let started = std::time::Instant::now();
    let verdicts = run_all(&cases);
    eprintln!("{} runs of {} variants in {:.1} s", cases.len(), variants.len(), started.elapsed().as_secs_f64());

    let mut wrong = Vec::new();
    let mut rows = Vec::new();
    let mut by_variant: BTreeMap<&str, Vec<&Verdict>> = BTreeMap::new();
    for (case, verdict) in cases.iter().zip(&verdicts) {
        assert!(
            verdict.error.is_none(),
            "`{}` --broken {}: the harness failed: {:?}",
            case.scenario.name,
            case.broken,
            verdict.error
        );
        by_variant.entry(case.broken.as_str()).or_default().push(verdict);
        let caught = case.scenario.catches.iter().any(|c| c.broken == case.broken && c.crash == case.crash);
        let found = named(verdict);
        if !caught {
            if !verdict.passed() {
                wrong.push(format!(
                    "--broken {} must pass `{}` (its bug is not exercised there), but violated {:?}: {:#?}",
                    case.broken, case.scenario.name, found, verdict.violations
                ));
            }
            continue;
        }
        rows.push(format!("    caught({:?}, {:?}, &{:?}),", case.broken, case.scenario.name, found));
        let recorded = CAUGHT.iter().find(|c| c.broken == case.broken && c.scenario == case.scenario.name);
        let expected: Vec<&str> = recorded.map(|c| c.rules.to_vec()).unwrap_or_default();
        if found != expected {
            let messages: Vec<String> =
                verdict.violations.iter().map(|v| format!("{} {:?}: {}", v.invariant, v.rules(), v.message)).collect();
            wrong.push(format!(
                "--broken {} in `{}`: its violations name {found:?}; caught.rs records {expected:?}\n      {}",
                case.broken,
                case.scenario.name,
                messages.join("\n      ")
            ));
        }
    }
    for (broken, verdicts) in &by_variant {
        let violated: Vec<&str> =
            judge_rules(verdicts).into_iter().filter(|r| r.status == RuleStatus::Violated).map(|r| r.id).collect();
        if violated != broken_by(broken) {
            wrong.push(format!(
                "--broken {broken}: the certificate says {violated:?} violated; caught.rs says it breaks {:?}",
                broken_by(broken)
            ));
        }
    }
    let stale: Vec<String> = CAUGHT
        .iter()
        .filter(|c| !cases.iter().any(|k| k.broken == c.broken && k.scenario.name == c.scenario))
        .map(|c| format!("{} in {}", c.broken, c.scenario))
        .collect();
    assert!(stale.is_empty(), "rows of caught.rs for no standard [[catches]]: {stale:?}");
    assert!(
        wrong.is_empty(),
        "{}\n\nwhat the runs showed, as caught.rs's rows:\n{}",
        wrong.join("\n\n"),
        rows.join("\n")
    );
}
