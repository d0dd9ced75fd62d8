//! Rules a runtime could break unseen until a check read them (issue 17, items 11 and 12): each
//! check here catches a broken variant of the reference runtime, with a message that names the
//! real cause, and passes the correct reference runtime.

use killpoint::{Invariant, RunOptions, Scenario, Target, Verdict, run_scenario};
use std::path::{Path, PathBuf};

fn reference(args: &[&str]) -> Target {
    Target {
        program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
    }
}

fn shipped(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(format!("{name}.toml"));
    Scenario::load(&path).expect("shipped scenarios parse")
}

/// Runs `scenario` against the reference runtime with `--broken <broken>` (or none) and returns
/// the verdict; the run's directory is removed.
fn verdict_of(scenario: &str, broken: Option<&str>, options: &RunOptions) -> Verdict {
    let args: Vec<&str> = broken.map(|b| vec!["--broken", b]).unwrap_or_default();
    let (verdict, run) = run_scenario(&shipped(scenario), &reference(&args), options).expect("the scenario runs");
    assert!(run.aborted.is_none(), "the run stopped early: {:?}", run.aborted);
    let _ = std::fs::remove_dir_all(run.keep_artifacts());
    verdict
}

/// The messages of the violations of `invariant` (by name, so that this compiles before the
/// invariant exists and fails instead).
fn messages(verdict: &Verdict, invariant: &str) -> Vec<String> {
    verdict.violations.iter().filter(|v| v.invariant.as_str() == invariant).map(|v| v.message.clone()).collect()
}

#[test]
fn arguments_stripped_of_the_planted_identity_are_reported_as_changed_arguments() {
    let verdict = verdict_of("after_delivery_send", Some("strip-private-arguments"), &RunOptions::default());
    let changed = messages(&verdict, "arguments_unchanged");
    assert!(
        changed.iter().any(|m| m.contains("`charge`") && m.contains("`_killpoint`") && m.contains("missing")),
        "expected an `arguments_unchanged` violation naming `charge` and its missing `_killpoint`; got {:#?}",
        verdict.violations
    );
    let uncounted = verdict.violations.iter().find(|v| v.message.contains("counts attempts that never reached"));
    assert!(uncounted.is_none(), "the calls did reach the provider, without their identity: {uncounted:#?}");
}

#[test]
fn a_rewritten_argument_is_reported_with_what_was_submitted_and_what_arrived() {
    let verdict = verdict_of("after_delivery_send", Some("truncate-arguments"), &RunOptions::default());
    let changed = messages(&verdict, "arguments_unchanged");
    assert!(
        changed.iter().any(|m| m.contains("`ticket`")
            && m.contains("`note`")
            && m.contains("\"killpoint workload ticket\"")
            && m.contains("\"killpoint worklo\"")),
        "expected an `arguments_unchanged` violation naming `ticket`'s `note`, submitted and received; got {:#?}",
        verdict.violations
    );
}

#[test]
fn the_reference_runtime_passes_its_arguments_unchanged() {
    for probe in [true, false] {
        let verdict = verdict_of("after_delivery_send", None, &RunOptions { probe, ..RunOptions::default() });
        assert!(verdict.passed(), "probe {probe}: {:#?}", verdict.violations);
        assert!(!verdict.failed_invariants().contains(&Invariant::TruthfulStatus));
    }
}

#[test]
fn a_delivery_retry_logged_as_an_execution_retry_is_caught() {
    let verdict = verdict_of("delivery_dead_letter", Some("mislabels-delivery-retries"), &RunOptions::default());
    let untrue = messages(&verdict, "truthful_status");
    assert!(
        untrue.iter().any(|m| m.contains("logged an execution retry of `charge`") && m.contains("a delivery retry")),
        "expected a `truthful_status` violation for the mislabelled retry line; got {:#?}",
        verdict.violations
    );
}

#[test]
fn the_reference_runtime_labels_its_retries_truly() {
    for scenario in ["delivery_dead_letter", "provider_unavailable", "after_delivery_send"] {
        let verdict = verdict_of(scenario, None, &RunOptions::default());
        assert!(verdict.passed(), "{scenario}: {:#?}", verdict.violations);
    }
}

fn python_example() -> Target {
    Target {
        program: Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/python-runtime/runtime.py"),
        args: Vec::new(),
    }
}

/// Runs `missing_data_dir` against `target` and returns the verdict and what the incarnation
/// started on the hidden dir did, in the trace's words; the run's directory is removed.
fn missing_dir_run(target: &Target, options: &RunOptions) -> (Verdict, Vec<String>) {
    let (verdict, run) = run_scenario(&shipped("missing_data_dir"), target, options).expect("the scenario runs");
    assert!(run.aborted.is_none(), "the run stopped early: {:?}", run.aborted);
    let refusals = run
        .timeline
        .iter()
        .filter(|m| matches!(m.happening, killpoint::Happening::MissingDataDir { .. }))
        .map(killpoint::run::trace::describe_mark)
        .collect();
    let _ = std::fs::remove_dir_all(run.keep_artifacts());
    (verdict, refusals)
}

#[test]
fn a_runtime_that_recreates_a_missing_data_dir_is_caught_starting_afresh() {
    let (verdict, refusals) = missing_dir_run(&reference(&["--broken", "recreate-data-dir"]), &RunOptions::default());
    assert_eq!(refusals.len(), 1, "one restart on a hidden data dir: {refusals:?}");
    let forgot = messages(&verdict, "intent_durable");
    assert!(
        forgot.iter().any(|m| m.contains("data dir") && m.contains("started afresh") && m.contains("§2-4")),
        "expected an `intent_durable` violation saying the runtime started afresh on a missing data dir; got {:#?}",
        verdict.violations
    );
}

#[test]
fn the_reference_and_the_python_runtime_exit_naming_a_missing_data_dir_and_settle_after() {
    killpoint::trials::needs::python3("the Python example runtime");
    let cases = [
        ("reference", reference(&[]), RunOptions::default()),
        ("reference without the probe", reference(&[]), RunOptions { probe: false, ..RunOptions::default() }),
        ("python", python_example(), RunOptions::default()),
    ];
    for (name, target, options) in cases {
        let (verdict, refusals) = missing_dir_run(&target, &options);
        assert!(verdict.passed(), "{name}: {:#?}", verdict.violations);
        assert!(
            refusals.len() == 1 && refusals[0].contains("exited naming the path"),
            "{name}: expected one incarnation on the hidden dir, exiting with its path; got {refusals:?}"
        );
    }
}
