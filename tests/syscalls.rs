//! System-call crash points (issue 9): `killpoint explore --points syscalls`, with the probe off.
//!
//! The runtime runs under `killpoint-tracer`, which stops it at every sync, rename and unlink under
//! its data dir and at every request to and answer from the fake world; each is a crash point. No
//! probe, no timing: the kill lands exactly at the call.

use killpoint::search::explore::{self, CaseStatus, ExploreOptions, Points, Workload};
use killpoint::trials::arguments::TestArguments;
use killpoint::{RunOptions, Scenario, Target, run_scenario};
use libtest_mimic::Trial;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[path = "syscalls/addresses.rs"]
mod addresses;
#[path = "syscalls/black_box.rs"]
mod black_box;
#[path = "syscalls/machine.rs"]
mod machine;
#[path = "syscalls/untraced_recovery.rs"]
mod untraced_recovery;
#[path = "syscalls/zombies.rs"]
mod zombies;

fn main() -> ExitCode {
    killpoint::trials::interpreter::python3_first_on_path();
    let args = TestArguments::from_args();
    // Every test of this binary and its modules is listed here: with `harness = false` a
    // `#[test]` attribute is compiled away, and a test missing from the table never runs.
    // The longest first (about 21, 21, 9, 9 and 7 s at 4 at once): trials start in this order, and
    // one started last runs on alone while the other threads have nothing left.
    let tests: [(&str, fn()); 27] = [
        (
            "a_bug_between_two_durable_writes_is_caught_only_at_syscall_points",
            a_bug_between_two_durable_writes_is_caught_only_at_syscall_points,
        ),
        (
            "black_box::a_traced_black_box_is_killed_at_the_first_commit_after_the_answer",
            black_box::a_traced_black_box_is_killed_at_the_first_commit_after_the_answer,
        ),
        (
            "a_bug_in_the_recovery_is_caught_at_depth_2_over_syscalls",
            a_bug_in_the_recovery_is_caught_at_depth_2_over_syscalls,
        ),
        (
            "split_outbox_is_caught_at_a_syscall_point_without_the_probe",
            split_outbox_is_caught_at_a_syscall_point_without_the_probe,
        ),
        (
            "black_box::black_box_after_provider_success_gives_the_same_verdict_every_run",
            black_box::black_box_after_provider_success_gives_the_same_verdict_every_run,
        ),
        (
            "the_reference_runtime_passes_every_syscall_point_without_the_probe",
            the_reference_runtime_passes_every_syscall_point_without_the_probe,
        ),
        (
            "no_write_ahead_is_caught_at_a_syscall_point_without_the_probe",
            no_write_ahead_is_caught_at_a_syscall_point_without_the_probe,
        ),
        (
            "result_before_call_is_caught_at_a_syscall_point_without_the_probe",
            result_before_call_is_caught_at_a_syscall_point_without_the_probe,
        ),
        ("a_syscall_fault_is_written_and_read_back", a_syscall_fault_is_written_and_read_back),
        (
            "addresses::requests_a_kill_cut_off_before_they_were_sent_are_no_false_alarm",
            addresses::requests_a_kill_cut_off_before_they_were_sent_are_no_false_alarm,
        ),
        (
            "addresses::a_rejection_a_kill_took_before_it_was_recorded_is_no_false_alarm",
            addresses::a_rejection_a_kill_took_before_it_was_recorded_is_no_false_alarm,
        ),
        (
            "addresses::a_syscall_fault_counted_past_the_next_boundary_is_the_scenarios_mistake",
            addresses::a_syscall_fault_counted_past_the_next_boundary_is_the_scenarios_mistake,
        ),
        (
            "addresses::a_kill_between_a_dead_consumers_retries_is_addressed_by_its_delivery_attempt",
            addresses::a_kill_between_a_dead_consumers_retries_is_addressed_by_its_delivery_attempt,
        ),
        (
            "addresses::a_kill_counted_among_one_operations_exchanges_lands_there_whatever_runs_beside_it",
            addresses::a_kill_counted_among_one_operations_exchanges_lands_there_whatever_runs_beside_it,
        ),
        (
            "black_box::every_boundary_is_hit_exactly_at_system_calls_without_the_probe",
            black_box::every_boundary_is_hit_exactly_at_system_calls_without_the_probe,
        ),
        ("black_box::a_syscall_fault_can_count_from_a_boundary", black_box::a_syscall_fault_can_count_from_a_boundary),
        ("black_box::refused_tracing_falls_back_in_one_line", black_box::refused_tracing_falls_back_in_one_line),
        (
            "black_box::an_engine_that_syncs_before_the_runtime_commits_is_no_false_alarm",
            black_box::an_engine_that_syncs_before_the_runtime_commits_is_no_false_alarm,
        ),
        (
            "black_box::the_naive_twin_is_failed_where_its_duplicate_began",
            black_box::the_naive_twin_is_failed_where_its_duplicate_began,
        ),
        (
            "black_box::a_boundary_the_tracer_cannot_see_is_not_exercised_not_failed",
            black_box::a_boundary_the_tracer_cannot_see_is_not_exercised_not_failed,
        ),
        (
            "black_box::writes_outside_the_data_dir_and_contact_outside_the_world_are_reported_when_traced",
            black_box::writes_outside_the_data_dir_and_contact_outside_the_world_are_reported_when_traced,
        ),
        (
            "machine::a_store_that_never_syncs_loses_the_acknowledged_intent_only_in_a_machine_crash",
            machine::a_store_that_never_syncs_loses_the_acknowledged_intent_only_in_a_machine_crash,
        ),
        (
            "machine::an_engine_runtime_that_never_syncs_loses_the_acknowledged_intent_in_a_machine_crash",
            machine::an_engine_runtime_that_never_syncs_loses_the_acknowledged_intent_in_a_machine_crash,
        ),
        (
            "zombies::zombies_are_frozen_at_system_calls_without_the_probe",
            zombies::zombies_are_frozen_at_system_calls_without_the_probe,
        ),
        (
            "zombies::a_zombie_frozen_before_a_request_exits_on_its_409",
            zombies::a_zombie_frozen_before_a_request_exits_on_its_409,
        ),
        (
            "untraced_recovery::the_incarnations_after_the_last_kill_run_untraced",
            untraced_recovery::the_incarnations_after_the_last_kill_run_untraced,
        ),
        (
            "untraced_recovery::a_blind_retry_is_caught_with_the_recovery_untraced",
            untraced_recovery::a_blind_retry_is_caught_with_the_recovery_untraced,
        ),
    ];
    // A test that panics fails its trial (libtest-mimic catches it), as a `#[test]` would.
    let trials = tests
        .into_iter()
        .map(|(name, test)| {
            Trial::test(name, move || {
                test();
                Ok(())
            })
        })
        .collect();
    args.run(trials).exit_code()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn reference() -> Target {
    Target { program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")), args: Vec::new() }
}

fn broken(variant: &str) -> Target {
    Target { args: vec!["--broken".into(), variant.into()], ..reference() }
}

/// Two operations with destinations: a charge (lookup) and a ticket (idempotent by key).
fn workload() -> Scenario {
    scenario("after_result_write")
}

/// `scenario` with a deadline of `seconds`, for a run or an exploration whose failures are found
/// at the deadline (a success never delivered): each such case waits it out, three times over
/// under the tracer, so the room `scenario` gives passing runs on a loaded machine would cost it
/// 24 s a case. The deadline still counts from the ready line and grows with a slow start-up.
fn failing_at_deadline(mut scenario: Scenario, seconds: u64) -> Scenario {
    scenario.deadline = std::time::Duration::from_secs(seconds);
    scenario
}

fn options(first_failure: bool) -> ExploreOptions {
    ExploreOptions {
        points: Points::Syscalls,
        run: RunOptions { probe: false, ..RunOptions::default() },
        // The tests of this file run side by side, each exploring: one case at a time each keeps
        // a traced Python runtime from missing its settle deadline on a loaded 2-core machine.
        jobs: 1,
        first_failure,
        // Failures are expected in most of these tests: their data dirs are not kept.
        keep_failures: false,
        ..ExploreOptions::default()
    }
}

/// These tests need the tracer: where this machine refuses it (ptrace and seccomp; some containers
/// refuse them), each fails saying so, never passes unchecked.
fn needs_tracing() {
    killpoint::trials::needs::tracing("system-call crash points");
}

/// `tests/fixtures/split_step_runtime.py` (traced, so the test needs the tracer and python3).
fn split_step_fixture() -> Target {
    needs_tracing();
    killpoint::trials::needs::python3("tests/fixtures/split_step_runtime.py");
    Target { program: root().join("tests/fixtures/split_step_runtime.py"), args: Vec::new() }
}

/// Explores `workload` against `target` and returns the first failing case, written as a file
/// and read back, after checking that the file fails the same target again on an invariant the
/// case failed on.
fn found(workload: &Scenario, target: &Target) -> Option<(String, Vec<String>)> {
    let result = explore::explore(workload, target, &options(true), &|_, _, _, _| {}).expect("explore runs");
    let finding = result.failures.first()?;
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join(format!("{}.toml", finding.scenario.name));
    std::fs::write(&path, finding.scenario.to_toml()).expect("written");
    let replayed = Scenario::load(&path).expect("the written file parses");
    assert_eq!(replayed.syscall_faults, finding.scenario.syscall_faults);
    // A syscall point is addressed from the boundary its incarnation last reached (a world
    // event: the provider's answer, the policy's), not from the ready line: the replay must fail
    // on its first run.
    let expected = finding.verdict.failed_invariants();
    let (verdict, _run) =
        run_scenario(&replayed, target, &RunOptions { probe: false, ..RunOptions::default() }).expect("it runs");
    let again = verdict.failed_invariants();
    assert!(
        !again.is_disjoint(&expected),
        "{} ({}) did not reproduce {expected:?}: violated {again:?}",
        path.display(),
        finding.case.name()
    );
    Some((finding.case.name(), again.iter().map(|i| i.as_str().to_owned()).collect()))
}

fn the_reference_runtime_passes_every_syscall_point_without_the_probe() {
    needs_tracing();
    let result = explore::explore(&workload(), &reference(), &options(false), &|_, _, _, _| {}).expect("explore runs");
    let stories: Vec<&str> = result.failures.iter().filter_map(|f| f.story.as_deref()).collect();
    assert!(stories.is_empty(), "{}", stories.join("\n"));
    // Every commit of both operations, and every exchange with the world, is a point.
    assert!(result.points[0] >= 20, "only {} syscall points", result.points[0]);
    assert_eq!(result.passed + result.not_reached, result.ran[0]);
}

/// The result and the outbox in two transactions: a kill between the two commits — no probe
/// boundary there without the probe — leaves a success that is never delivered.
fn split_outbox_is_caught_at_a_syscall_point_without_the_probe() {
    needs_tracing();
    let (case, violated) =
        found(&failing_at_deadline(workload(), 2), &broken("split-outbox")).expect("a failing syscall point");
    assert!(case.starts_with("syscall."), "{case}");
    assert!(violated.iter().any(|i| i == "delivered_once"), "{violated:?}");
}

/// The provider called before DISPATCHED is written: a kill after the request and before the
/// commit leaves an intent that the next incarnation executes again.
fn no_write_ahead_is_caught_at_a_syscall_point_without_the_probe() {
    needs_tracing();
    let (_, violated) =
        found(&failing_at_deadline(workload(), 2), &broken("no-write-ahead")).expect("a failing syscall point");
    assert!(violated.iter().any(|i| i == "at_most_once"), "{violated:?}");
}

/// The success written before the provider is called: a kill after that commit and before the
/// request leaves a success the provider never performed.
fn result_before_call_is_caught_at_a_syscall_point_without_the_probe() {
    needs_tracing();
    let (case, violated) =
        found(&failing_at_deadline(workload(), 2), &broken("result-before-call")).expect("a failing syscall point");
    assert!(case.starts_with("syscall."), "{case}");
    assert!(violated.iter().any(|i| i == "truthful_status"), "{violated:?}");
}

/// The bug between two of the runtime's own durable writes (`tests/fixtures/split_step_runtime.py`):
/// it passes every scenario with the probe (the `split_step::` trials), and a syscall point
/// between its two commits catches it.
fn a_bug_between_two_durable_writes_is_caught_only_at_syscall_points() {
    let fixture = split_step_fixture();
    // At the boundaries, with the probe, explore finds nothing: no boundary lies between the writes.
    // It runs beside the exploration over system calls, whose failing case waits out its deadline.
    let at_boundaries =
        ExploreOptions { points: Points::Boundaries, keep_failures: false, ..ExploreOptions::default() };
    let (found, result) = killpoint::trials::at_once::both(
        || found(&failing_at_deadline(workload(), 3), &fixture),
        || explore::explore(&workload(), &fixture, &at_boundaries, &|_, _, _, _| {}),
    );
    let result = result.expect("explore runs");
    assert!(result.failures.is_empty(), "{:?}", result.failures.iter().map(|f| f.case.name()).collect::<Vec<_>>());
    let (case, violated) = found.expect("a failing syscall point");
    assert!(case.contains("sync"), "the window lies between two commits: {case}");
    assert!(violated.iter().any(|i| i == "delivered_once" || i == "settled"), "{violated:?}");
}

fn a_syscall_fault_is_written_and_read_back() {
    let text = "description = \"x\"\n[[operation]]\nid = \"a\"\ntool = \"set_status\"\nexpect = \"succeeded\"\n\n[[syscall_fault]]\nkind = \"sync\"\noccurrence = 2\nwhen = \"after\"\n";
    let scenario = Scenario::parse(Path::new("scenarios/s.toml"), text).expect("valid");
    assert_eq!(scenario.syscall_faults.len(), 1);
    let again = Scenario::parse(Path::new("scenarios/s.toml"), &scenario.to_toml()).expect("valid");
    assert_eq!(again.syscall_faults, scenario.syscall_faults);
    let bad = text.replace("kind = \"sync\"", "kind = \"answer\"").replace("when = \"after\"", "when = \"before\"");
    let err = Scenario::parse(Path::new("scenarios/s.toml"), &bad).unwrap_err();
    assert!(err.to_string().contains("only `after`"), "{err}");
    let _ = Workload::of(&scenario);
    let _ = CaseStatus::Pass;
}

fn traced_black_box() -> RunOptions {
    RunOptions { probe: false, syscalls: true, ..RunOptions::default() }
}

/// A shipped scenario, with room to settle: the deadline is a hang bound, and tracing under a
/// loaded test run makes a runtime (the Python fixture above all) several times slower.
fn scenario(name: &str) -> Scenario {
    let mut scenario = Scenario::load(&root().join(format!("scenarios/{name}.toml"))).expect("a shipped scenario");
    scenario.deadline = scenario.deadline.max(std::time::Duration::from_secs(8));
    scenario
}

/// A runtime that, killed while it reconciles, forgets that its lookup failed and attempts again:
/// the crash is in the recovery of a first crash, so only depth 2 over system calls reaches it
/// without the probe (at depth 1 every case passes or is not reached).
fn a_bug_in_the_recovery_is_caught_at_depth_2_over_syscalls() {
    needs_tracing();
    let workload = scenario("kill_while_reconciling");
    let target = broken("restart-after-failed-lookup");
    let depth1 = explore::explore(&workload, &target, &options(true), &|_, _, _, _| {}).expect("explore runs");
    assert!(depth1.failures.is_empty(), "{:?}", depth1.failures.iter().map(|f| f.case.name()).collect::<Vec<_>>());
    let depth2 = explore::explore(&workload, &target, &ExploreOptions { depth: 2, ..options(true) }, &|_, _, _, _| {})
        .expect("explore runs");
    // Found from a state built in its depth-1 case's run: only the second recovery ran.
    let found: Vec<(String, bool)> = depth2.failures.iter().map(|f| (f.case.name(), f.built)).collect();
    let finding = depth2.failures.iter().find(|f| f.built).unwrap_or_else(|| {
        panic!("no failing case at depth 2 ran from a built state; failures (name, built): {found:?}")
    });
    assert_eq!(finding.scenario.syscall_faults.len() + finding.scenario.faults.len() - workload_faults(&workload), 2);
    let violated = finding.verdict.failed_invariants();
    assert!(violated.contains(&killpoint::Invariant::AtMostOnce), "{violated:?}");
    // Written and replayed: the same failure, first time.
    let (verdict, _run) =
        run_scenario(&finding.scenario, &target, &RunOptions { probe: false, ..RunOptions::default() })
            .expect("it runs");
    assert!(verdict.failed_invariants().contains(&killpoint::Invariant::AtMostOnce), "{}", finding.case.name());
}

/// The world faults an exploration keeps (its hand-placed kills are dropped).
fn workload_faults(scenario: &Scenario) -> usize {
    Workload::of(scenario).base.faults.len()
}

/// `tests/fixtures/engine_runtime.py` with `args` (traced: the tracer and python3 needed).
fn engine_fixture(args: &[&str]) -> Target {
    let program = split_step_fixture().program.with_file_name("engine_runtime.py");
    Target { program, args: args.iter().map(|a| a.to_string()).collect() }
}
