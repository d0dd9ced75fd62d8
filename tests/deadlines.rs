//! Settle deadlines (issue 17): counted per operation from its submission or the runtime's ready
//! line, extended by the runtime's measured start-up; and an unsettled operation's "last seen"
//! is the latest answer the runtime gave, the final read's included.

use killpoint::{RunOptions, Scenario, Target, run_scenario};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn reference() -> Target {
    Target { program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")), args: Vec::new() }
}

/// The reference runtime behind `tests/fixtures/slow_start.sh`: `seconds` from spawn to exec.
fn slow_start(seconds: u32) -> Target {
    let program = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/slow_start.sh");
    Target { program, args: vec![seconds.to_string(), env!("CARGO_BIN_EXE_killpoint-runtime").to_owned()] }
}

fn parse(text: &str) -> Scenario {
    Scenario::parse(Path::new("scenarios/deadlines.toml"), text).expect("a valid scenario")
}

/// One charge whose provider answers 2 s late, with a 1 s deadline: only a runtime whose
/// start-up earns it more time settles it in time.
const LATE_ANSWER: &str = r#"
description = "The provider answers two seconds late; the deadline is one second."
deadline_seconds = 1

[[operation]]
id = "charge"
tool = "charge_card"
destinations = ["ledger"]
expect = "succeeded"

[[fault]]
at = "after_dispatch"
operation = "charge"
action = "delay"
delay_ms = 2000
"#;

fn options() -> RunOptions {
    RunOptions { ready_timeout: Duration::from_secs(20), ..RunOptions::default() }
}

/// A runtime 3 s slow to start gets 1 s + its 3 s start-up: its 2 s of work (the provider's late
/// answer) fit, though its deadline is shorter than its start-up plus its work. The same scenario
/// fails the reference runtime, whose start-up earns it no more than a moment.
#[test]
fn a_runtime_slow_to_start_gets_a_deadline_extended_by_its_start_up() {
    let scenario = parse(LATE_ANSWER);
    let (verdict, run) = run_scenario(&scenario, &slow_start(3), &options()).expect("it runs");
    assert!(verdict.passed(), "{}", killpoint::report::story::story(&scenario, &verdict, &run));
    let (verdict, run) = run_scenario(&scenario, &reference(), &options()).expect("it runs");
    let failed = verdict.failed_invariants();
    assert!(failed.iter().any(|i| i.as_str() == "settled"), "a fast start earns no extra time: {failed:?}");
    assert_eq!(run.unsettled.len(), 1, "{:?}", run.unsettled);
}

/// `late` is unsettled at its 2 s deadline (its provider answers 2.5 s late) and succeeds while
/// the next wave runs (1.2 s): it is still unsettled, but last seen as the final read found it, SUCCEEDED —
/// not as DISPATCHED, the state it had when its deadline passed. `next`, submitted after `late`'s
/// deadline had passed, gets a deadline of its own and settles.
#[test]
fn last_seen_is_the_latest_answer_read() {
    let text = r#"
description = "A late answer, then a wave that outlasts it."
deadline_seconds = 2

[[operation]]
id = "late"
tool = "charge_card"
destinations = ["ledger"]
expect = "succeeded"

[[operation]]
id = "next"
tool = "charge_card"
destinations = ["ledger"]
expect = "succeeded"

[[fault]]
at = "after_dispatch"
operation = "late"
action = "delay"
delay_ms = 2500

[[fault]]
at = "after_dispatch"
operation = "next"
action = "delay"
delay_ms = 1200
"#;
    let scenario = parse(text);
    let (verdict, run) = run_scenario(&scenario, &reference(), &options()).expect("it runs");
    assert_eq!(run.unsettled.len(), 1, "only `late` misses its deadline: {:?}", run.unsettled);
    let (id, seen) = &run.unsettled[0];
    assert_eq!(id, "late");
    let report = run.reports.get("late").expect("the final read of `late`");
    assert_eq!(*seen, report.summary(), "last seen is the final read");
    assert!(seen.starts_with("SUCCEEDED"), "{seen}\n{}", killpoint::report::story::story(&scenario, &verdict, &run));
    let message = verdict.violations.iter().find(|v| v.invariant.as_str() == "settled").expect("settled fails");
    assert!(message.message.contains(&format!("last seen: {seen}")), "{}", message.message);
}
