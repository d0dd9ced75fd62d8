//! Crash points after the workload settled (issue 17): a runtime whose engine commits a row of its
//! own after answering a status read (`tests/fixtures/late_writer_runtime.py`) is killed at that
//! sync, in the middle of the harness's final reads. The harness restarts it and reads again; its
//! own interrupted read is never held against the runtime — and a broken twin still fails on
//! what it breaks.

use killpoint::run::driver::Happening;
use killpoint::{RunOptions, Scenario, Target, run_scenario};
use std::path::PathBuf;
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The late-writer fixture, traced: the test fails where this machine refuses the tracer or has no
/// python3.
fn late_writer(args: &[&str]) -> Target {
    killpoint::trials::needs::tracing("system-call crash points");
    killpoint::trials::needs::python3("tests/fixtures/late_writer_runtime.py");
    let program = root().join("tests/fixtures/late_writer_runtime.py");
    Target { program, args: args.iter().map(|a| a.to_string()).collect() }
}

/// `after_result_write`'s first operation (a charge, one destination), its hand-placed kills
/// dropped, with room to settle: a traced Python runtime on a loaded test machine is several
/// times slower than the file expects. One operation is enough: the late commit follows the final
/// read of every settled operation, and one delivery record is what the twin deletes.
fn workload() -> Scenario {
    let mut scenario = Scenario::load(&root().join("scenarios/after_result_write.toml")).expect("a shipped scenario");
    scenario.faults.clear();
    scenario.catches.clear();
    scenario.operations.truncate(1);
    scenario.operations[0].destinations.truncate(1);
    scenario.deadline = scenario.deadline.max(Duration::from_secs(8));
    scenario
}

/// Traced, with 30 s to print the ready line: a hang bound, not a speed check (a stress run at a
/// load of 15 saw the traced Python fixture miss the default 10 s).
fn traced() -> RunOptions {
    RunOptions { probe: false, syscalls: true, ready_timeout: Duration::from_secs(30), ..RunOptions::default() }
}

/// The last sync of the first incarnation in a traced run of the correct fixture without faults,
/// as a `[[syscall_fault]]` of the workload: the engine's commit after the harness's final read.
/// Recorded once for both tests (the second to ask waits for the first's record run).
fn last_sync_after_settling() -> Scenario {
    static CASE: std::sync::OnceLock<Scenario> = std::sync::OnceLock::new();
    CASE.get_or_init(record_last_sync).clone()
}

fn record_last_sync() -> Scenario {
    let fixture = late_writer(&[]);
    let workload = workload();
    let (verdict, run) = run_scenario(&workload, &fixture, &traced()).expect("the record run runs");
    assert!(verdict.passed(), "record run: {:?}", verdict.violations);
    let last = run
        .syscall_points
        .iter()
        .rfind(|p| p.incarnation == 1 && p.kind == killpoint::tracer::PointKind::Sync)
        .expect("the fixture syncs after its last answer");
    // The point is the engine's late commit: after the last operation's boundary, not before it.
    let anchor = last.since.as_ref().expect("counted from a boundary");
    assert_eq!(anchor.operation, workload.operations.last().expect("two operations").id, "{last:?}");
    let mut case = workload;
    case.name = "after_settled".to_owned();
    case.syscall_faults = vec![last.fault()];
    case
}

fn restarts(run: &killpoint::Run) -> usize {
    run.timeline.iter().filter(|m| matches!(m.happening, Happening::SyscallKill { .. })).count()
}

/// The kill at the engine's late commit lands in the harness's final reads; the correct runtime,
/// restarted and read again, passes.
#[test]
fn a_kill_after_the_workload_settled_is_not_held_against_a_correct_runtime() {
    let case = last_sync_after_settling();
    let fixture = late_writer(&[]);
    let (verdict, run) = run_scenario(&case, &fixture, &traced()).expect("it runs");
    assert_eq!(run.syscall_hits, vec![true], "the late sync {} was not reached", case.syscall_faults[0].describe());
    assert!(verdict.passed(), "{}", killpoint::report::story::story(&case, &verdict, &run));
    assert_eq!(restarts(&run), 1, "killed once, at the late sync");
    assert!(run.incarnations >= 2, "the harness read the restarted runtime");
    assert!(run.reports.len() == case.operations.len(), "every operation read: {:?}", run.reports.keys());
}

/// The broken twin garbage-collects a settled operation's outbox in that late commit: with the
/// same crash point it still fails on what it breaks.
#[test]
fn a_kill_after_the_workload_settled_still_catches_what_a_broken_twin_breaks() {
    let mut case = last_sync_after_settling();
    // The twin's deleted outbox never settles: its run ends at the deadline, which it waits out
    // (three times over, traced). The record run's room is for passing; 3 s (9 s) is for this.
    case.deadline = Duration::from_secs(3);
    let twin = late_writer(&["--gc-collected"]);
    let (verdict, run) = run_scenario(&case, &twin, &traced()).expect("it runs");
    assert_eq!(run.syscall_hits, vec![true], "the late sync {} was not reached", case.syscall_faults[0].describe());
    let failed = verdict.failed_invariants();
    assert!(
        failed.iter().any(|i| i.as_str() == "truthful_status"),
        "the outbox the twin deleted went unnoticed: {failed:?}\n{}",
        killpoint::report::story::story(&case, &verdict, &run)
    );
}
