//! The runtime as a traced black box: boundaries hit at the system calls that are their edge, and
//! what the tracer sees and reports (writes outside the data dir, contact outside the world).

use super::*;

/// Without the probe, the tracer reaches the four boundaries the world cannot see at the system
/// call that is their edge (CONTRACT.md section 7): every fault of the scenarios that kill there
/// is hit exactly, and the reference runtime passes.
pub fn every_boundary_is_hit_exactly_at_system_calls_without_the_probe() {
    needs_tracing();
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
pub fn black_box_after_provider_success_gives_the_same_verdict_every_run() {
    needs_tracing();
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

pub fn a_syscall_fault_can_count_from_a_boundary() {
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
pub fn refused_tracing_falls_back_in_one_line() {
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

/// The split-step fixture passes every scenario with the probe (its `after_result_write` is
/// announced after both of its commits). A black box under the tracer is killed at the commit that
/// follows the provider's answer — the first of its two — and the bug shows in the plain
/// `after_result_write` scenario, no exploration needed.
pub fn a_traced_black_box_is_killed_at_the_first_commit_after_the_answer() {
    let fixture = split_step_fixture();
    let scenario = scenario("after_result_write");
    let (with_probe, _run) = run_scenario(&scenario, &fixture, &RunOptions::default()).expect("it runs");
    assert!(with_probe.passed(), "{:?}", with_probe.failed_invariants());
    // Its first operation alone: each operation whose delivery is lost waits out the deadline
    // (9 s traced), and one shows the bug.
    let mut scenario = failing_at_deadline(scenario, 3);
    killpoint::trials::only_the_first_killed(&mut scenario).expect("after_result_write has [[fault]]s only");
    let (traced, run) = run_scenario(&scenario, &fixture, &traced_black_box()).expect("it runs");
    let violated = traced.failed_invariants();
    assert!(
        violated.contains(&killpoint::Invariant::DeliveredOnce),
        "{}",
        killpoint::report::story::story(&scenario, &traced, &run)
    );
}

/// A correct runtime on an engine that keeps its own rollback-journal database in the data dir:
/// the first sync after the provider's answer is the engine's journal, before the runtime's
/// commit. Taken for the commit, the kill left a no-lookup tool rightly paused, and the old
/// harness failed it on `expected_outcome` every time. The verdict now places the kill by what
/// the runtime did next: before its commit, so the case tested `after_provider_success`.
pub fn an_engine_that_syncs_before_the_runtime_commits_is_no_false_alarm() {
    let engine = engine_fixture(&[]);
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
pub fn the_naive_twin_is_failed_where_its_duplicate_began() {
    let naive = engine_fixture(&["--naive"]);
    let scenario = scenario("after_result_write");
    let (verdict, _run) = run_scenario(&scenario, &naive, &traced_black_box()).expect("it runs");
    assert!(verdict.failed_invariants().contains(&killpoint::Invariant::AtMostOnce), "{:?}", verdict.violations);
    let charge = verdict.coverage.iter().find(|c| c.operation == "charge").expect("a fault on charge");
    assert_eq!(charge.boundary, killpoint::Boundary::AfterProviderSuccess, "{:?}", verdict.coverage);
}

/// A runtime that never syncs (correct against a process crash, which keeps the page cache):
/// the refused operation's commit is neither a sync nor followed by a request, so the tracer
/// cannot reach `after_policy_revocation`. Not exercised (partial), never "fault never reached".
pub fn a_boundary_the_tracer_cannot_see_is_not_exercised_not_failed() {
    let no_sync = engine_fixture(&["--no-sync"]);
    let scenario = scenario("after_policy_revocation");
    let (verdict, run) = run_scenario(&scenario, &no_sync, &traced_black_box()).expect("it runs");
    assert!(verdict.violations.is_empty(), "{}", killpoint::report::story::story(&scenario, &verdict, &run));
    let hits: Vec<_> = verdict.coverage.iter().map(|c| c.hit).collect();
    assert!(hits.contains(&killpoint::Hit::NeedsProbe), "{hits:?}");
}

/// §2-2 and §2-5 (`sandboxed`, issue 32): under the tracer, a runtime that writes a "cache" beside
/// its data dir and one that connects a socket to an address outside the world are each reported
/// for it alone, naming the path or the address; without the tracer nothing is seen, and nothing
/// is judged. The reference passes traced (every_boundary_is_hit_exactly_…, and here).
pub fn writes_outside_the_data_dir_and_contact_outside_the_world_are_reported_when_traced() {
    needs_tracing();
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
