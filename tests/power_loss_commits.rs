//! A machine crash is held to what the runtime had synced (CONTRACT.md §7-6; issue 32, item 12).
//!
//! §7-6 asks a success and its outbox to be durable before the first delivery is *sent*, not when
//! they are committed: a power loss at `after_result_write` (announced on the probe, or placed by
//! the tracer just before the destination's policy check) may take a success not synced yet, and
//! the next incarnation then finds the attempt `DISPATCHED`: a tool with no lookup is rightly
//! paused. `tests/fixtures/sync_before_send_runtime.py` is that design; a runtime that had synced
//! its success before the power loss is still held to `succeeded` there.

use killpoint::model::crash::Crash;
use killpoint::{Happening, RunOptions, Scenario, Target, run_scenario};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn scenario(name: &str) -> Scenario {
    Scenario::load(&root().join(format!("scenarios/{name}.toml"))).expect("a standard scenario")
}

/// The fixture, under machine crashes: the test fails where this machine refuses the tracer or has
/// no python3.
fn sync_before_send() -> Target {
    killpoint::trials::needs::tracing("machine crashes");
    killpoint::trials::needs::python3("tests/fixtures/sync_before_send_runtime.py");
    Target { program: root().join("tests/fixtures/sync_before_send_runtime.py"), args: Vec::new() }
}

/// What each power loss of the run took (a line per file or name), in order.
fn lost(run: &killpoint::Run) -> Vec<Vec<String>> {
    run.timeline
        .iter()
        .filter_map(|m| match &m.happening {
            Happening::PowerLoss { lost, .. } => Some(lost.clone()),
            _ => None,
        })
        .collect()
}

fn sms_paused(run: &killpoint::Run) -> bool {
    run.reports.get("sms").is_some_and(|r| r.paused)
}

#[test]
fn a_success_synced_just_before_its_first_send_passes_a_machine_crash() {
    let runtime = sync_before_send();
    let scenario = scenario("after_result_write");
    for probe in [true, false] {
        let options = RunOptions { crash: Crash::Machine, probe, ..RunOptions::default() };
        let (verdict, run) = run_scenario(&scenario, &runtime, &options).expect("it runs");
        let story = killpoint::report::story::story(&scenario, &verdict, &run);
        // The design shows: the power losses took its unsynced successes, and the SMS paused.
        assert!(lost(&run).iter().all(|l| !l.is_empty()) && !lost(&run).is_empty(), "probe {probe}: {story}");
        assert!(sms_paused(&run), "probe {probe}: {story}");
        assert!(verdict.passed(), "probe {probe}: {story}");
    }
}

/// The judgement turns on the sync, not on the pause: the fixture's own run, with one sync more
/// right after the provider's answer to the SMS (as a runtime that syncs at its commit makes),
/// fails `expected_outcome` — a synced success the power loss could not take was forgotten.
#[test]
fn a_success_synced_before_the_power_loss_is_still_held_to_succeeded() {
    let runtime = sync_before_send();
    let scenario = scenario("after_result_write");
    let options = RunOptions { crash: Crash::Machine, ..RunOptions::default() };
    let (verdict, mut run) = run_scenario(&scenario, &runtime, &options).expect("it runs");
    let story = killpoint::report::story::story(&scenario, &verdict, &run);
    assert!(verdict.passed() && sms_paused(&run), "{story}");
    let answered = run
        .syscall_points
        .iter()
        .position(|p| {
            p.boundaries.iter().any(|a| a.boundary == killpoint::Boundary::AfterProviderSuccess && a.operation == "sms")
        })
        .expect("the tracer saw the provider's answer to the SMS");
    let incarnation = run.syscall_points[answered].incarnation;
    for point in run.syscall_points[answered + 1..].iter_mut().filter(|p| p.incarnation == incarnation) {
        point.state.synced += 1;
    }
    let verdict = killpoint::check(&scenario, &run);
    let held = verdict.violations.iter().find(|v| v.invariant == killpoint::Invariant::ExpectedOutcome);
    assert!(held.is_some_and(|v| v.operation.as_deref() == Some("sms")), "{:#?}", verdict.violations);
}
