//! Zombies frozen at system calls, without the probe (CONTRACT.md section 9).

use super::*;

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
pub fn zombies_are_frozen_at_system_calls_without_the_probe() {
    needs_tracing();
    killpoint::trials::needs::python3("examples/python-runtime/runtime.py");
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
pub fn a_zombie_frozen_before_a_request_exits_on_its_409() {
    needs_tracing();
    killpoint::trials::needs::python3("examples/python-runtime/runtime.py");
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
