//! Fencing without the probe (CONTRACT.md §9-3, issue 32 items 10 and 11).
//!
//! Judged by the `409 fenced` a runtime read (item 10): a zombie frozen just before
//! a request for longer than its own request timeout sends that request on resume, is refused
//! `409 fenced`, but never reads the refusal (its timer fired); it may ask once more, and must
//! exit on the refusal it does read. `tests/fixtures/deadline_runtime.py` is that runtime (5 s per
//! request, a timed-out policy check asked again at once); `--retry-409` its twin, which makes the
//! request again after a `409` it read.

use killpoint::search::explore::{self, ExploreOptions, Points};
use killpoint::{Happening, RunOptions, Scenario, Target, run_scenario};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The fixture's own request timeout (`REQUEST_TIMEOUT_S`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Frozen just before `charge`'s delivery's policy check; the next incarnation's own check is
/// answered 6 s late, so it cannot settle `charge`, and the zombie cannot be resumed, before the
/// request timeout of the incarnation it waits on (5 s) has passed.
const FROZEN_PAST_ITS_TIMEOUT: &str = r#"
description = "frozen before a request for longer than the runtime's request timeout"
deadline_seconds = 10

[[operation]]
id = "charge"
tool = "charge_card"
destinations = ["ledger"]
expect = "succeeded"

[[policy_fault]]
times = 1
operation = "charge"
subject = "destination"
action = "delay"
delay_ms = 6000

[[syscall_fault]]
kind = "request"
when = "before"
occurrence = 1
since = { boundary = "after_result_write", operation = "charge" }
action = "freeze"
"#;

/// The fixture, traced: the test fails where this machine refuses the tracer or has no python3.
fn deadline_runtime(args: &[&str]) -> Target {
    killpoint::trials::needs::tracing("freezes without the probe");
    killpoint::trials::needs::python3("tests/fixtures/deadline_runtime.py");
    let program = root().join("tests/fixtures/deadline_runtime.py");
    Target { program, args: args.iter().map(|a| a.to_string()).collect() }
}

fn traced_black_box() -> RunOptions {
    RunOptions { probe: false, syscalls: true, ..RunOptions::default() }
}

/// How long the run held its zombie, from its freeze to its resume.
fn frozen_for(run: &killpoint::Run) -> Option<Duration> {
    let at = |f: fn(&Happening) -> bool| run.timeline.iter().find(|m| f(&m.happening)).map(|m| m.at_micros);
    let frozen = at(|h| matches!(h, Happening::SyscallFrozen { .. }))?;
    let resumed = at(|h| matches!(h, Happening::Resumed { .. }))?;
    Some(Duration::from_micros(resumed.saturating_sub(frozen)))
}

fn refusals(run: &killpoint::Run) -> usize {
    run.ledger.iter().filter(|e| matches!(e.event, fake_tool::Event::Fenced { .. })).count()
}

fn reads(run: &killpoint::Run) -> usize {
    run.timeline.iter().filter(|m| matches!(m.happening, Happening::ZombieReadFenced { .. })).count()
}

#[test]
fn a_request_that_timed_out_while_frozen_is_no_refusal_the_runtime_read() {
    let (correct, twin) = (deadline_runtime(&[]), deadline_runtime(&["--retry-409"]));
    let scenario = Scenario::parse(Path::new("frozen_past_its_timeout.toml"), FROZEN_PAST_ITS_TIMEOUT).expect("valid");

    let (verdict, run) = run_scenario(&scenario, &correct, &traced_black_box()).expect("it runs");
    let story = killpoint::report::story::story(&scenario, &verdict, &run);
    let held = frozen_for(&run).expect("frozen and resumed");
    assert!(held > REQUEST_TIMEOUT, "frozen {held:?}, not past the runtime's timeout: {story}");
    // Its timer fired on the first refusal: it asked again, read the second, and exited.
    assert_eq!((refusals(&run), reads(&run)), (2, 1), "{story}");
    assert!(verdict.passed(), "{story}");

    let (verdict, run) = run_scenario(&scenario, &twin, &traced_black_box()).expect("it runs");
    let story = killpoint::report::story::story(&scenario, &verdict, &run);
    let fenced = verdict.violations.iter().find(|v| v.invariant == killpoint::Invariant::Fenced);
    assert!(fenced.is_some_and(|v| v.message.contains("read by it")), "{story}");
    assert_eq!(verdict.failed_invariants(), [killpoint::Invariant::Fenced].into(), "{story}");
}

fn reference() -> Target {
    Target { program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")), args: Vec::new() }
}

/// The standard scenario that freezes just before a request, its workload explored.
fn frozen_before_a_request() -> Scenario {
    Scenario::load(&root().join("scenarios/frozen_before_a_request.toml")).expect("the standard scenario")
}

/// `explore --points syscalls` without the probe (item 11): besides a kill at each system call, a
/// freeze just before the first request after each boundary the tracer reached. `ignores-fence`
/// (asks again after a `409 fenced` it read) is found at one of them; the reference passes them
/// all.
#[test]
fn explore_over_system_calls_freezes_before_requests() {
    killpoint::trials::needs::tracing("freezes at system calls");
    let options = ExploreOptions {
        points: Points::Syscalls,
        run: RunOptions { probe: false, ..RunOptions::default() },
        jobs: 1,
        keep_failures: false,
        ..ExploreOptions::default()
    };
    let workload = frozen_before_a_request();
    let ran = std::sync::Mutex::new(Vec::new());
    let record = |f: &explore::Finding, _, _, _| ran.lock().unwrap().push((f.case.name(), f.verdict.passed()));
    let result = explore::explore(&workload, &reference(), &options, &record).expect("explore runs");
    let stories: Vec<&str> = result.failures.iter().filter_map(|f| f.story.as_deref()).collect();
    assert!(stories.is_empty(), "{}", stories.join("\n"));
    let ran = ran.into_inner().unwrap();
    let freezes = ran.iter().filter(|(name, passed)| name.ends_with("+freeze") && *passed).count();
    // Before the call `before_dispatch` allowed, and before the delivery's policy check after
    // `after_result_write` (the reference's next request after `after_provider_success` comes
    // after its commit, a boundary of its own).
    assert!(freezes >= 2, "only {freezes} freeze case(s) passed: {ran:?}");

    let broken = Target { args: vec!["--broken".into(), "ignores-fence".into()], ..reference() };
    let options = ExploreOptions { first_failure: true, ..options };
    let result = explore::explore(&workload, &broken, &options, &|_, _, _, _| {}).expect("explore runs");
    let finding = result.failures.first().expect("ignores-fence is found");
    assert!(finding.case.name().ends_with("+freeze"), "{}", finding.case.name());
    assert!(finding.verdict.failed_invariants().contains(&killpoint::Invariant::Fenced), "{:?}", finding.story);
}
