//! System-call crash points (issue 9): `killpoint explore --points syscalls`, with the probe off.
//!
//! The runtime runs under `killpoint-tracer`, which stops it at every sync, rename and unlink under
//! its data dir and at every request to and answer from the fake world; each is a crash point. No
//! probe, no timing: the kill lands exactly at the call.

use killpoint::search::explore::{self, CaseStatus, ExploreOptions, Points, Workload};
use killpoint::{RunOptions, Scenario, Target, run_scenario};
use std::path::{Path, PathBuf};

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

/// Whether this machine lets the tracer trace (ptrace and seccomp; some containers refuse them).
/// Where it does not, each test says so on stderr and returns: skipped, not passed.
fn tracing_refused() -> bool {
    match killpoint::run::traced::permitted() {
        Ok(()) => false,
        Err(why) => {
            eprintln!("{why}: system-call crash points cannot be tested here (skipped, not passed)");
            true
        }
    }
}

/// `tests/fixtures/split_step_runtime.py`, where it can be traced and python3 is there to run it;
/// `None` (said on stderr: skipped, not passed) elsewhere.
fn split_step_fixture() -> Option<Target> {
    if tracing_refused() {
        return None;
    }
    let python = std::process::Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success());
    if !python {
        eprintln!("python3 not found: the split-step fixture cannot run; not passed, skipped");
        return None;
    }
    Some(Target { program: root().join("tests/fixtures/split_step_runtime.py"), args: Vec::new() })
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

#[test]
fn the_reference_runtime_passes_every_syscall_point_without_the_probe() {
    if tracing_refused() {
        return;
    }
    let result = explore::explore(&workload(), &reference(), &options(false), &|_, _, _, _| {}).expect("explore runs");
    let stories: Vec<&str> = result.failures.iter().filter_map(|f| f.story.as_deref()).collect();
    assert!(stories.is_empty(), "{}", stories.join("\n"));
    // Every commit of both operations, and every exchange with the world, is a point.
    assert!(result.points[0] >= 20, "only {} syscall points", result.points[0]);
    assert_eq!(result.passed + result.not_reached, result.ran[0]);
}

/// The result and the outbox in two transactions: a kill between the two commits — no probe
/// boundary there without the probe — leaves a success that is never delivered.
#[test]
fn split_outbox_is_caught_at_a_syscall_point_without_the_probe() {
    if tracing_refused() {
        return;
    }
    let (case, violated) =
        found(&failing_at_deadline(workload(), 2), &broken("split-outbox")).expect("a failing syscall point");
    assert!(case.starts_with("syscall."), "{case}");
    assert!(violated.iter().any(|i| i == "delivered_once"), "{violated:?}");
}

/// The provider called before DISPATCHED is written: a kill after the request and before the
/// commit leaves an intent that the next incarnation executes again.
#[test]
fn no_write_ahead_is_caught_at_a_syscall_point_without_the_probe() {
    if tracing_refused() {
        return;
    }
    let (_, violated) =
        found(&failing_at_deadline(workload(), 2), &broken("no-write-ahead")).expect("a failing syscall point");
    assert!(violated.iter().any(|i| i == "at_most_once"), "{violated:?}");
}

/// The success written before the provider is called: a kill after that commit and before the
/// request leaves a success the provider never performed.
#[test]
fn result_before_call_is_caught_at_a_syscall_point_without_the_probe() {
    if tracing_refused() {
        return;
    }
    let (case, violated) =
        found(&failing_at_deadline(workload(), 2), &broken("result-before-call")).expect("a failing syscall point");
    assert!(case.starts_with("syscall."), "{case}");
    assert!(violated.iter().any(|i| i == "truthful_status"), "{violated:?}");
}

/// The bug between two of the runtime's own durable writes (`tests/fixtures/split_step_runtime.py`):
/// it passes every scenario with the probe (the `split_step::` trials), and a syscall point
/// between its two commits catches it.
#[test]
fn a_bug_between_two_durable_writes_is_caught_only_at_syscall_points() {
    let Some(fixture) = split_step_fixture() else { return };
    // At the boundaries, with the probe, explore finds nothing: no boundary lies between the writes.
    let at_boundaries =
        ExploreOptions { points: Points::Boundaries, keep_failures: false, ..ExploreOptions::default() };
    let result = explore::explore(&workload(), &fixture, &at_boundaries, &|_, _, _, _| {}).expect("explore runs");
    assert!(result.failures.is_empty(), "{:?}", result.failures.iter().map(|f| f.case.name()).collect::<Vec<_>>());
    let (case, violated) = found(&failing_at_deadline(workload(), 3), &fixture).expect("a failing syscall point");
    assert!(case.contains("sync"), "the window lies between two commits: {case}");
    assert!(violated.iter().any(|i| i == "delivered_once" || i == "settled"), "{violated:?}");
}

#[test]
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

/// Without the probe, the tracer reaches the four boundaries the world cannot see at the system
/// call that is their edge (CONTRACT.md section 7): every fault of the scenarios that kill there
/// is hit exactly, and the reference runtime passes.
#[test]
fn every_boundary_is_hit_exactly_at_system_calls_without_the_probe() {
    if tracing_refused() {
        return;
    }
    for name in ["before_dispatch", "after_provider_success", "after_result_write", "after_policy_revocation"] {
        let scenario = scenario(name);
        let (verdict, run) = run_scenario(&scenario, &reference(), &traced_black_box()).expect("it runs");
        assert!(verdict.passed(), "{name}: {}", killpoint::report::story::story(&scenario, &verdict, &run));
        // The tracer takes the first sync after an answer for the commit (`Approximate` in the
        // run); the verdict places it from what the runtime did next: a single-writer runtime
        // acted as committed, so it was killed exactly at its commit.
        for (fault, covered) in scenario.faults.iter().zip(&verdict.coverage) {
            let expected = if fault.at.at_syscall() { killpoint::Hit::AtSyscall } else { killpoint::Hit::Exact };
            assert_eq!((covered.boundary, covered.hit), (fault.at, expected), "{name}: `{}`", fault.operation);
        }
        // Each kill the tracer made names the boundary it was.
        for fault in scenario.faults.iter().filter(|f| f.at.at_syscall()) {
            let killed_there = run.timeline.iter().any(|mark| {
                matches!(&mark.happening, killpoint::Happening::SyscallKill { point, .. }
                    if point.boundaries.iter().any(|b| b.boundary == fault.at && b.operation == fault.operation))
            });
            assert!(killed_there, "{name}: no kill at a system call marked `{}` of `{}`", fault.at, fault.operation);
        }
    }
}

/// The black box's old `after_provider_success` was a kill as soon as the provider answered:
/// wherever the runtime then was, so a runtime that retries blindly passed when the kill landed
/// after its commit. At the receive that completes the answer, the verdict is the same every time.
#[test]
fn black_box_after_provider_success_gives_the_same_verdict_every_run() {
    if tracing_refused() {
        return;
    }
    // The reference runtime's passing verdict under the tracer is every_boundary_…'s; here, the
    // runtime whose verdict used to depend on where the kill landed.
    let scenario = scenario("after_provider_success");
    let target = broken("blind-retry");
    let verdicts: Vec<_> = (0..20)
        .map(|_| run_scenario(&scenario, &target, &traced_black_box()).expect("it runs").0.failed_invariants())
        .collect();
    assert!(verdicts[0].contains(&killpoint::Invariant::AtMostOnce), "{:?}", verdicts[0]);
    assert!(verdicts.iter().all(|v| *v == verdicts[0]), "verdicts differ between runs: {verdicts:?}");
}

#[test]
fn a_syscall_fault_can_count_from_a_boundary() {
    let text = "description = \"x\"\n[[operation]]\nid = \"a\"\ntool = \"set_status\"\nexpect = \"succeeded\"\n\n[[syscall_fault]]\nkind = \"sync\"\noccurrence = 2\nwhen = \"before\"\nsince = { boundary = \"after_provider_success\", operation = \"a\" }\n";
    let scenario = Scenario::parse(Path::new("scenarios/s.toml"), text).expect("valid");
    assert_eq!(scenario.syscall_faults[0].describe(), "sync before #2 after after_provider_success #1 of a");
    let again = Scenario::parse(Path::new("scenarios/s.toml"), &scenario.to_toml()).expect("valid");
    assert_eq!(again.syscall_faults, scenario.syscall_faults);
    let both = text.replace("occurrence = 2\n", "occurrence = 2\nincarnation = 1\n");
    let err = Scenario::parse(Path::new("scenarios/s.toml"), &both).unwrap_err().to_string();
    assert!(err.contains("not both"), "{err}");
    let outside = text.replace("after_provider_success", "after_dispatch");
    let err = Scenario::parse(Path::new("scenarios/s.toml"), &outside).unwrap_err().to_string();
    assert!(err.contains("`since` needs a boundary reached at a system call"), "{err}");
    let frozen_at_a_sync = format!("{text}action = \"freeze\"\n");
    let err = Scenario::parse(Path::new("scenarios/s.toml"), &frozen_at_a_sync).unwrap_err().to_string();
    assert!(err.contains("holds a runtime just before a request") && err.contains("`sync` `before`"), "{err}");
    let frozen = frozen_at_a_sync.replace("kind = \"sync\"", "kind = \"request\"");
    let frozen = Scenario::parse(Path::new("scenarios/s.toml"), &frozen).expect("valid");
    let again = Scenario::parse(Path::new("scenarios/s.toml"), &frozen.to_toml()).expect("valid");
    assert_eq!(again.syscall_faults, frozen.syscall_faults, "the freeze is written back");
    let stranger = text.replace("operation = \"a\" }", "operation = \"b\" }");
    let err = Scenario::parse(Path::new("scenarios/s.toml"), &stranger).unwrap_err().to_string();
    assert!(err.contains("does not have"), "{err}");
}

/// Where the system refuses tracing (a tracer that exits 125, as `killpoint-tracer` does when
/// ptrace or seccomp is refused), `--points syscalls` says so in one line and certifies without
/// it: the boundaries only the tracer or the probe reach are partial, nothing fails.
#[test]
fn refused_tracing_falls_back_in_one_line() {
    use std::os::unix::fs::PermissionsExt;
    let exe = std::env::current_exe().unwrap();
    let cli = exe.parent().and_then(Path::parent).unwrap().join("killpoint");
    let scratch = tempfile::tempdir().unwrap();
    let refusing = scratch.path().join("refusing-tracer");
    let said = "killpoint-tracer: syscall points are not available here: ptrace (PTRACE_SEIZE) was refused (Operation not permitted (os error 1)); use the probe or black-box instead";
    std::fs::write(&refusing, format!("#!/bin/sh\necho '{said}' >&2\nexit 125\n")).unwrap();
    std::fs::set_permissions(&refusing, std::fs::Permissions::from_mode(0o755)).unwrap();
    let output = std::process::Command::new(&cli)
        .arg("run")
        .arg(root().join("scenarios/before_dispatch.toml"))
        .args(["--no-probe", "--points", "syscalls", "--runtime"])
        .arg(env!("CARGO_BIN_EXE_killpoint-runtime"))
        .env("KILLPOINT_TRACER", &refusing)
        .env("TMPDIR", scratch.path())
        .output()
        .expect("the CLI runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stderr.matches(said).count(), 1, "said once: {stderr}");
    assert!(stderr.contains("falls back to the named boundaries, as a black box"), "{stderr}");
    assert!(stdout.contains("partial"), "{stdout}");
}

/// A runtime that, killed while it reconciles, forgets that its lookup failed and attempts again:
/// the crash is in the recovery of a first crash, so only depth 2 over system calls reaches it
/// without the probe (at depth 1 every case passes or is not reached).
#[test]
fn a_bug_in_the_recovery_is_caught_at_depth_2_over_syscalls() {
    if tracing_refused() {
        return;
    }
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

/// The split-step fixture passes every scenario with the probe (its `after_result_write` is
/// announced after both of its commits). A black box under the tracer is killed at the commit that
/// follows the provider's answer — the first of its two — and the bug shows in the plain
/// `after_result_write` scenario, no exploration needed.
#[test]
fn a_traced_black_box_is_killed_at_the_first_commit_after_the_answer() {
    let Some(fixture) = split_step_fixture() else { return };
    let scenario = scenario("after_result_write");
    let (with_probe, _run) = run_scenario(&scenario, &fixture, &RunOptions::default()).expect("it runs");
    assert!(with_probe.passed(), "{:?}", with_probe.failed_invariants());
    let scenario = failing_at_deadline(scenario, 3);
    let (traced, run) = run_scenario(&scenario, &fixture, &traced_black_box()).expect("it runs");
    let violated = traced.failed_invariants();
    assert!(
        violated.contains(&killpoint::Invariant::DeliveredOnce),
        "{}",
        killpoint::report::story::story(&scenario, &traced, &run)
    );
}

/// `tests/fixtures/engine_runtime.py` with `args`, where it can be traced and python3 runs it.
fn engine_fixture(args: &[&str]) -> Option<Target> {
    let split_step = split_step_fixture()?;
    let program = split_step.program.with_file_name("engine_runtime.py");
    Some(Target { program, args: args.iter().map(|a| a.to_string()).collect() })
}

/// A correct runtime on an engine that keeps its own rollback-journal database in the data dir:
/// the first sync after the provider's answer is the engine's journal, before the runtime's
/// commit. Taken for the commit, the kill left a no-lookup tool rightly paused, and the old
/// harness failed it on `expected_outcome` every time. The verdict now places the kill by what
/// the runtime did next: before its commit, so the case tested `after_provider_success`.
#[test]
fn an_engine_that_syncs_before_the_runtime_commits_is_no_false_alarm() {
    let Some(engine) = engine_fixture(&[]) else { return };
    for name in ["after_result_write", "after_policy_revocation"] {
        let scenario = scenario(name);
        let (verdict, run) = run_scenario(&scenario, &engine, &traced_black_box()).expect("it runs");
        assert!(verdict.passed(), "{name}: {}", killpoint::report::story::story(&scenario, &verdict, &run));
    }
    let scenario = scenario("after_result_write");
    let (verdict, _run) = run_scenario(&scenario, &engine, &traced_black_box()).expect("it runs");
    let sms = verdict.coverage.iter().find(|c| c.operation == "sms").expect("a fault on sms");
    assert_eq!((sms.boundary, sms.hit), (killpoint::Boundary::AfterProviderSuccess, killpoint::Hit::Approximate));
}

/// The same engine with a fresh key per call: its duplicate begins when a kill comes after the
/// provider's answer and before the commit, and the report names that boundary — not the
/// `after_result_write` the scenario aimed at, where nothing was written yet.
#[test]
fn the_naive_twin_is_failed_where_its_duplicate_began() {
    let Some(naive) = engine_fixture(&["--naive"]) else { return };
    let scenario = scenario("after_result_write");
    let (verdict, _run) = run_scenario(&scenario, &naive, &traced_black_box()).expect("it runs");
    assert!(verdict.failed_invariants().contains(&killpoint::Invariant::AtMostOnce), "{:?}", verdict.violations);
    let charge = verdict.coverage.iter().find(|c| c.operation == "charge").expect("a fault on charge");
    assert_eq!(charge.boundary, killpoint::Boundary::AfterProviderSuccess, "{:?}", verdict.coverage);
}

/// A runtime that never syncs (correct against a process crash, which keeps the page cache):
/// the refused operation's commit is neither a sync nor followed by a request, so the tracer
/// cannot reach `after_policy_revocation`. Not exercised (partial), never "fault never reached".
#[test]
fn a_boundary_the_tracer_cannot_see_is_not_exercised_not_failed() {
    let Some(no_sync) = engine_fixture(&["--no-sync"]) else { return };
    let scenario = scenario("after_policy_revocation");
    let (verdict, run) = run_scenario(&scenario, &no_sync, &traced_black_box()).expect("it runs");
    assert!(verdict.violations.is_empty(), "{}", killpoint::report::story::story(&scenario, &verdict, &run));
    let hits: Vec<_> = verdict.coverage.iter().map(|c| c.hit).collect();
    assert!(hits.contains(&killpoint::Hit::NeedsProbe), "{hits:?}");
}

/// Whether the run froze an incarnation, resumed it, and saw it exit: the zombie was played.
fn zombie_exited(run: &killpoint::Run) -> bool {
    let frozen = run.timeline.iter().any(|m| {
        matches!(m.happening, killpoint::Happening::Frozen { .. } | killpoint::Happening::SyscallFrozen { .. })
    });
    let exited = run.timeline.iter().any(|m| matches!(m.happening, killpoint::Happening::ZombieExited { .. }));
    frozen && exited
}

/// Zombies without the probe (CONTRACT.md §9): the tracer holds the runtime at the system call
/// where it reaches the freeze's boundary, the next incarnation starts on the same data dir, and
/// the held one is resumed once its operation settled. The reference runtime and the Python one
/// (another design: a store fence checked per transaction in Python's sqlite3) exit at their fence;
/// `fenced-hangs` stays up after finding its fence, and is caught black-box.
#[test]
fn zombies_are_frozen_at_system_calls_without_the_probe() {
    // Where tracing and python3 are there (the fixture is not used).
    let Some(_) = split_step_fixture() else { return };
    let scenario = scenario("zombie_worker");
    let python = Target { program: root().join("examples/python-runtime/runtime.py"), args: Vec::new() };
    for target in [reference(), python] {
        let (verdict, run) = run_scenario(&scenario, &target, &traced_black_box()).expect("it runs");
        let story = killpoint::report::story::story(&scenario, &verdict, &run);
        assert!(verdict.passed(), "{}: {story}", target.program.display());
        let hits: Vec<_> = verdict.coverage.iter().map(|c| c.hit).collect();
        assert_eq!(hits, [killpoint::Hit::AtSyscall; 2], "{}: {story}", target.program.display());
        assert!(zombie_exited(&run), "{}: {story}", target.program.display());
    }
    // One hanging zombie proves it, and each waits out its time to exit: `sms`'s freeze alone.
    let mut one = failing_at_deadline(scenario.clone(), 2);
    one.faults.retain(|f| f.operation == "sms");
    let (verdict, run) = run_scenario(&one, &broken("fenced-hangs"), &traced_black_box()).expect("it runs");
    let story = killpoint::report::story::story(&one, &verdict, &run);
    let outlived = verdict.violations.iter().find(|v| v.invariant == killpoint::Invariant::Fenced);
    assert!(outlived.is_some_and(|v| v.message.contains("still running")), "{story}");
}

/// A freeze just before the first request after `charge`'s result was committed (its delivery's
/// policy check or send): the resumed incarnation's next act is that request, which a correct
/// runtime makes and the world refuses `409 fenced`; it must exit on that answer.
const FROZEN_BEFORE_A_REQUEST: &str = r#"
description = "frozen just before a request; resumed, refused 409 fenced, it must exit"
deadline_seconds = 5

[[operation]]
id = "charge"
tool = "charge_card"
destinations = ["ledger"]
expect = "succeeded"

[[syscall_fault]]
kind = "request"
when = "before"
occurrence = 1
since = { boundary = "after_result_write", operation = "charge" }
action = "freeze"
"#;

/// §9-3 black-box: the world's `409 fenced` is what a zombie frozen before a request meets first
/// (its store fence comes later). The reference and the Python runtime exit on it and pass;
/// `ignores-fence` sends the request again and fails `fenced`, naming the refusal.
#[test]
fn a_zombie_frozen_before_a_request_exits_on_its_409() {
    // Where tracing and python3 are there (the fixture is not used).
    let Some(_) = split_step_fixture() else { return };
    let scenario =
        Scenario::parse(Path::new("scenarios/frozen_before_a_request.toml"), FROZEN_BEFORE_A_REQUEST).expect("valid");
    let python = Target { program: root().join("examples/python-runtime/runtime.py"), args: Vec::new() };
    for target in [reference(), python] {
        let (verdict, run) = run_scenario(&scenario, &target, &traced_black_box()).expect("it runs");
        let story = killpoint::report::story::story(&scenario, &verdict, &run);
        assert!(verdict.passed(), "{}: {story}", target.program.display());
        assert_eq!(run.syscall_hits, [true], "{}: {story}", target.program.display());
        assert!(zombie_exited(&run), "{}: {story}", target.program.display());
        let refused = run.ledger.iter().filter(|e| matches!(e.event, fake_tool::Event::Fenced { .. })).count();
        assert_eq!(refused, 1, "{}: the held request, refused once: {story}", target.program.display());
    }
    let (verdict, run) = run_scenario(&scenario, &broken("ignores-fence"), &traced_black_box()).expect("it runs");
    let story = killpoint::report::story::story(&scenario, &verdict, &run);
    let fenced = verdict.violations.iter().find(|v| v.invariant == killpoint::Invariant::Fenced);
    assert!(fenced.is_some_and(|v| v.message.contains("409 fenced")), "{story}");
}

/// A machine crash (`--crash machine`, issue 18): the data dir keeps only what was synced.
fn machine_crash() -> RunOptions {
    RunOptions { crash: killpoint::model::crash::Crash::Machine, ..traced_black_box() }
}

/// A runtime whose store never syncs (`--broken no-sync`, SQLite `synchronous=OFF`) survives
/// every process kill, which keeps the page cache, and loses the intent its `202` promised when
/// the machine goes down with it. The reference, which syncs every commit, passes both.
#[test]
fn a_store_that_never_syncs_loses_the_acknowledged_intent_only_in_a_machine_crash() {
    if tracing_refused() {
        return;
    }
    let scenario = scenario("after_submit");
    let story = |v: &killpoint::Verdict, r: &killpoint::Run| killpoint::report::story::story(&scenario, v, r);
    let (verdict, run) = run_scenario(&scenario, &broken("no-sync"), &traced_black_box()).expect("it runs");
    assert!(verdict.passed(), "a process crash keeps the page cache: {}", story(&verdict, &run));
    let (verdict, run) = run_scenario(&scenario, &broken("no-sync"), &machine_crash()).expect("it runs");
    assert!(verdict.failed_invariants().contains(&killpoint::Invariant::IntentDurable), "{}", story(&verdict, &run));
    let (verdict, run) = run_scenario(&scenario, &reference(), &machine_crash()).expect("it runs");
    assert!(verdict.passed(), "the reference syncs every commit: {}", story(&verdict, &run));
}

/// Another design of the same mistake and of its fix: a Python runtime with an engine database
/// beside its store (rollback journal). Syncing, it survives the power loss; with `--no-sync`
/// neither database syncs, and the acknowledged intent is gone.
#[test]
fn an_engine_runtime_that_never_syncs_loses_the_acknowledged_intent_in_a_machine_crash() {
    let (Some(engine), Some(no_sync)) = (engine_fixture(&[]), engine_fixture(&["--no-sync"])) else { return };
    let scenario = scenario("after_submit");
    let story = |v: &killpoint::Verdict, r: &killpoint::Run| killpoint::report::story::story(&scenario, v, r);
    let (verdict, run) = run_scenario(&scenario, &engine, &machine_crash()).expect("it runs");
    assert!(verdict.passed(), "{}", story(&verdict, &run));
    let (verdict, run) = run_scenario(&scenario, &no_sync, &machine_crash()).expect("it runs");
    assert!(verdict.failed_invariants().contains(&killpoint::Invariant::IntentDurable), "{}", story(&verdict, &run));
}

/// `delivery_dead_letter` with a kill at the sync (`occurrence`) after `boundary`.
fn cut_off_at(boundary: &str, occurrence: u32) -> Scenario {
    with_kill("delivery_dead_letter", "sync", occurrence, "before", boundary, "charge")
}

/// A shipped scenario with a kill at the `occurrence`-th system call of `kind` (`when` it runs)
/// since `operation` reached `boundary`, as explore writes it; its `[[catches]]` dropped.
fn with_kill(name: &str, kind: &str, occurrence: u32, when: &str, boundary: &str, operation: &str) -> Scenario {
    let path = root().join(format!("scenarios/{name}.toml"));
    let shipped = std::fs::read_to_string(&path).expect("the shipped scenario");
    let fault = format!(
        "[[syscall_fault]]\nkind = \"{kind}\"\noccurrence = {occurrence}\nwhen = \"{when}\"\n\n[syscall_fault.since]\nboundary = \"{boundary}\"\noperation = \"{operation}\"\noccurrence = 1\n"
    );
    let mut cut_off = Scenario::parse(&path, &format!("{shipped}\n{fault}")).expect("the case parses");
    cut_off.deadline = cut_off.deadline.max(std::time::Duration::from_secs(8));
    cut_off.catches.clear();
    cut_off
}

/// Two kills that cut off a counted request before it was sent (CONTRACT.md section 10, "Counts
/// across a kill"), found by `explore delivery_dead_letter --points syscalls`, where the reference
/// failed 3 of 34 cases and the Python example about 6 of 44:
/// - at the sync that makes the ledger's `SENT` durable (§6-5): the runtime counted a send the
///   ledger never saw, so with the ledger failing twice and a bound of 3 it rightly dead-letters
///   it after two receipts — `delivered_once` owed an event the contract let the runtime give up;
/// - at the sync of the first attempt's `DISPATCHED`: the next incarnation's attempt 2 is the
///   provider's call 1 — the retry label check (§11-3) looked for call 2, found the ledger's send
///   2, and called a true execution retry a delivery retry.
///
/// A runtime that gives up before its count reaches the bound still fails, on `dead_letter_bound`.
#[test]
fn requests_a_kill_cut_off_before_they_were_sent_are_no_false_alarm() {
    if tracing_refused() {
        return;
    }
    for (boundary, occurrence) in [("after_result_write", 1), ("before_dispatch", 2)] {
        let cut_off = cut_off_at(boundary, occurrence);
        let (verdict, run) = run_scenario(&cut_off, &reference(), &traced_black_box()).expect("it runs");
        assert!(
            verdict.passed(),
            "{boundary} sync {occurrence}: {:?}\n{}",
            verdict.violations,
            killpoint::report::story::story(&cut_off, &verdict, &run)
        );
    }
    let cut_off = cut_off_at("after_result_write", 1);
    let (verdict, _) = run_scenario(&cut_off, &broken("dead-letter-early"), &traced_black_box()).expect("it runs");
    assert!(verdict.failed_invariants().iter().any(|i| i.as_str() == "dead_letter_bound"), "{:?}", verdict.violations);
}

/// A kill just after the provider's 422 reached the runtime, before it recorded it: the next
/// incarnation finds nothing by lookup and attempts again, and the provider (its one rejection
/// spent) accepts. `provider_rejects` expected `failed`, and failed the reference on
/// `expected_outcome` (found by `explore provider_rejects --points syscalls`: 2 of 28 cases).
/// Without the kill, a runtime that retries after a 4xx is still caught
/// (`broken::retry_on_4xx::provider_rejects`, tests/scenarios.rs).
#[test]
fn a_rejection_a_kill_took_before_it_was_recorded_is_no_false_alarm() {
    if tracing_refused() {
        return;
    }
    let killed = with_kill("provider_rejects", "answer", 1, "after", "before_dispatch", "charge-refused");
    let (verdict, run) = run_scenario(&killed, &reference(), &traced_black_box()).expect("it runs");
    assert!(verdict.passed(), "{:?}\n{}", verdict.violations, killpoint::report::story::story(&killed, &verdict, &run));
}

/// Issue 32 item 14: a `[[syscall_fault]]` counted since a boundary, past the next boundary the
/// run reached (where the count starts again), is the scenario's mistake: the run says so, with
/// where to count from, and does not blame the runtime (`faults_reached` used to). A fault the run
/// could have reached is still the runtime's to reach.
#[test]
fn a_syscall_fault_counted_past_the_next_boundary_is_the_scenarios_mistake() {
    if tracing_refused() {
        return;
    }
    let text = |occurrence: u32| {
        format!(
            "description = \"d\"\n[[operation]]\nid = \"charge\"\ntool = \"charge_card\"\ndestinations = [\"ledger\"]\nexpect = \"succeeded\"\n\
             [[syscall_fault]]\nkind = \"sync\"\nwhen = \"after\"\noccurrence = {occurrence}\nsince = {{ boundary = \"before_dispatch\", operation = \"charge\" }}\n"
        )
    };
    let late = Scenario::parse(Path::new("scenarios/late.toml"), &text(9)).expect("valid");
    let (verdict, _) = run_scenario(&late, &reference(), &traced_black_box()).expect("runs");
    let error =
        verdict.error.as_deref().unwrap_or_else(|| panic!("expected the scenario's mistake, found {verdict:?}"));
    assert!(
        error.contains("cannot be reached in this run") && error.contains("Count from `after_provider_success"),
        "{error}"
    );
    assert!(!verdict.failed_invariants().contains(&killpoint::Invariant::FaultsReached), "{verdict:?}");
    let reachable = Scenario::parse(Path::new("scenarios/early.toml"), &text(1)).expect("valid");
    let (verdict, _) = run_scenario(&reachable, &reference(), &traced_black_box()).expect("runs");
    assert!(verdict.error.is_none() && verdict.passed(), "{verdict:?}");
}

/// Issue 32 item 8: a kill between a dead consumer's retries is addressed by the delivery attempt
/// it follows (`since = { boundary = "after_delivery_send", operation, destination, occurrence }`:
/// the receive that completes the consumer's answer to that attempt), not by a request number
/// counted by hand from the last boundary across every policy check and delivery in between.
#[test]
fn a_kill_between_a_dead_consumers_retries_is_addressed_by_its_delivery_attempt() {
    if tracing_refused() {
        return;
    }
    let text = |since: &str| {
        format!(
            "description = \"d\"\n[runtime]\ndelivery_max_attempts = 3\nretry_base_ms = 10\n\
             [[operation]]\nid = \"charge\"\ntool = \"charge_card\"\ndestinations = [\"ledger\", \"mailer\"]\nexpect = \"succeeded\"\n\
             [[consumer_fault]]\ndestination = \"mailer\"\n\
             [[syscall_fault]]\nkind = \"request\"\nwhen = \"before\"\noccurrence = 2\nsince = {{ {since} }}\n"
        )
    };
    let path = Path::new("scenarios/between_retries.toml");
    let no_destination = Scenario::parse(path, &text("boundary = \"after_delivery_send\", operation = \"charge\""));
    assert!(no_destination.is_err_and(|e| e.to_string().contains("needs the `destination`")));
    let other = Scenario::parse(
        path,
        &text("boundary = \"after_delivery_send\", operation = \"charge\", destination = \"crm\""),
    );
    assert!(other.is_err_and(|e| e.to_string().contains("does not deliver to")));
    // The second request after the mailer's second 503: its third attempt (after the policy check).
    let scenario = Scenario::parse(
        path,
        &text("boundary = \"after_delivery_send\", operation = \"charge\", destination = \"mailer\", occurrence = 2"),
    )
    .expect("valid");
    let (verdict, run) = run_scenario(&scenario, &reference(), &traced_black_box()).expect("it runs");
    let story = killpoint::report::story::story(&scenario, &verdict, &run);
    assert!(verdict.passed() && run.syscall_hits == [true], "{story}");
    let killed_at = run
        .timeline
        .iter()
        .find(|m| matches!(m.happening, killpoint::run::driver::Happening::SyscallKill { .. }))
        .map(|m| m.seq)
        .unwrap_or_else(|| panic!("no kill at a system call: {story}"));
    let to_mailer = |e: &&fake_tool::Entry| matches!(&e.event, fake_tool::Event::ConsumerReceipt { destination, .. } if destination == "mailer");
    let before = run.ledger.iter().filter(to_mailer).filter(|e| e.seq < killed_at).count();
    assert_eq!(before, 2, "killed before the mailer's third attempt: {story}");
    assert!(story.contains("#2 since after_delivery_send #2 of charge to mailer"), "{story}");
}

/// §2-2 and §2-5 (`sandboxed`, issue 32): under the tracer, a runtime that writes a "cache" beside
/// its data dir and one that connects a socket to an address outside the world are each reported
/// for it alone, naming the path or the address; without the tracer nothing is seen, and nothing
/// is judged. The reference passes traced (every_boundary_is_hit_exactly_…, and here).
#[test]
fn writes_outside_the_data_dir_and_contact_outside_the_world_are_reported_when_traced() {
    if tracing_refused() {
        return;
    }
    let scenario = scenario("after_submit");
    let story = |v: &killpoint::Verdict, r: &killpoint::Run| killpoint::report::story::story(&scenario, v, r);
    for (variant, rule, place) in
        [("cache-outside-data-dir", "§2-2", "data-cache/started"), ("phone-home", "§2-5", "192.0.2.1:80")]
    {
        let (verdict, run) = run_scenario(&scenario, &broken(variant), &traced_black_box()).expect("it runs");
        assert_eq!(
            verdict.failed_invariants(),
            std::collections::BTreeSet::from([killpoint::Invariant::Sandboxed]),
            "{variant}: {}",
            story(&verdict, &run)
        );
        let named = verdict.violations.iter().any(|v| v.breaks(rule) && v.message.contains(place));
        assert!(named, "{variant}: expected a violation of {rule} naming {place}: {}", story(&verdict, &run));
        let untraced = RunOptions { probe: false, ..RunOptions::default() };
        let (verdict, run) = run_scenario(&scenario, &broken(variant), &untraced).expect("it runs");
        assert!(
            verdict.passed(),
            "{variant} untraced: the harness cannot see it, so it judges nothing: {}",
            story(&verdict, &run)
        );
    }
    let (verdict, run) = run_scenario(&scenario, &reference(), &traced_black_box()).expect("it runs");
    assert!(verdict.passed(), "the reference writes only in its data dir: {}", story(&verdict, &run));
}
