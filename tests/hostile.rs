//! Hostile runtimes: a harness that never hangs, never leaks and never lies.
//!
//! Each test runs one misbehaving runtime from `tests/hostile/` (small Python 3 or shell scripts
//! on top of `hostile.py`, with tiny scenarios of a 2 s deadline) and checks two things: the
//! harness ends within its deadline with a message that says what was expected and what was seen,
//! showing the runtime's last output where there is any; and nothing the runtime started is left
//! running. The last tests prove the same when the harness itself dies: SIGKILLed (PDEATHSIG) or
//! panicking mid-run (`Drop`).
//!
//! Every runtime gets a marker unique to its test as its first argument and exports it to every
//! process it starts (`KILLPOINT_HOSTILE_MARKER`), so a scan of /proc (command lines and
//! environments) finds all of them, grandchildren included.

use killpoint::{Run, RunOptions, Scenario, Target, Verdict, run_scenario};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn hostile(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("hostile").join(name)
}

fn scenario(name: &str) -> Scenario {
    Scenario::load(&hostile(&format!("{name}.toml"))).expect("the hostile scenarios parse")
}

/// A marker unique to this test process and test (the final dot keeps one test's marker from
/// being a prefix of another's).
fn marker(test: &str) -> String {
    format!("killpoint-hostile-{}-{test}.", std::process::id())
}

fn target(script: &str, marker: &str) -> Target {
    Target { program: hostile(script), args: vec![marker.to_owned()] }
}

/// The ready deadline for a fixture that prints its ready line: what a Python start takes on a
/// loaded 2-core machine (seconds; a 2 s deadline failed 3 of these tests at load 15). Waiting for
/// the line costs nothing when it comes; the tests of a runtime that never prints it are in
/// tests/certify.rs, with a short deadline.
const READY: Duration = Duration::from_secs(20);

/// The bound that shows the harness did not hang: its run ends on its own, at the scenario's
/// deadline or sooner, and a hang is for ever. Generous for the same reason as [`READY`].
const NO_HANG: Duration = Duration::from_secs(40);

fn ready_within(timeout: Duration) -> RunOptions {
    RunOptions { ready_timeout: timeout, ..RunOptions::default() }
}

/// Runs `scenario` and checks that it ended within `limit`.
fn run_within(limit: Duration, scenario: &Scenario, target: &Target, options: &RunOptions) -> (Verdict, Run) {
    let started = Instant::now();
    let result = run_scenario(scenario, target, options).expect("the harness itself works");
    let took = started.elapsed();
    assert!(took < limit, "the harness took {took:?}, more than {limit:?}");
    result
}

/// Why the run stopped; printed too, so `--nocapture` shows every message for review.
fn aborted(run: &Run) -> &str {
    let reason = run.aborted.as_deref().expect("the run must stop with a reason");
    eprintln!("the harness said: {reason}");
    reason
}

/// Live processes (zombies excluded: they are dead, only not yet reaped) whose command line or
/// environment contains `marker`.
fn running_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let dir = entry.path();
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else { continue };
        // The state is the first field after the command name, which is in parentheses.
        let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next());
        if matches!(state, Some('Z' | 'X') | None) {
            continue;
        }
        let read =
            |name: &str| String::from_utf8_lossy(&std::fs::read(dir.join(name)).unwrap_or_default()).replace('\0', " ");
        let (cmdline, environ) = (read("cmdline"), read("environ"));
        if cmdline.contains(marker) || environ.contains(marker) {
            found.push(format!("{}: {cmdline}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

/// For the runtime itself, which `run_scenario` reaps before it returns: nothing may be left now.
fn assert_nothing_left(marker: &str) {
    let left = running_with(marker);
    assert!(left.is_empty(), "left running: {left:?}");
}

/// For processes the harness killed but cannot reap (the runtime's children, re-parented to
/// init once the runtime is gone) or that die by PDEATHSIG: SIGKILL is asynchronous, so wait for
/// /proc to agree, within `deadline`.
fn assert_all_gone_within(deadline: Duration, marker: &str) {
    let until = Instant::now() + deadline;
    loop {
        let left = running_with(marker);
        if left.is_empty() {
            return;
        }
        if Instant::now() >= until {
            // Clean up before failing, so one leak does not outlive the test run.
            let pids = left.iter().filter_map(|p| p.split(':').next());
            let _ = std::process::Command::new("kill").arg("-KILL").args(pids).status();
            panic!("still running {deadline:?} after the kill: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

// 1. The runtime's path does not exist.
#[test]
fn a_runtime_that_does_not_exist_is_named() {
    let marker = marker("missing");
    let target = target("does-not-exist", &marker);
    let (verdict, run) =
        run_within(NO_HANG, &scenario("one_operation"), &target, &ready_within(Duration::from_secs(1)));
    let reason = aborted(&run);
    assert!(reason.contains("tests/hostile/does-not-exist"), "{reason}");
    assert!(reason.contains("does not exist"), "{reason}");
    assert!(!verdict.passed());
    assert_nothing_left(&marker);
}

// 1b. The runtime exists but its `#!` interpreter does not: exec says ENOENT too, which must not
// be reported as a missing runtime.
#[test]
fn a_runtime_whose_interpreter_is_missing_is_not_called_missing() {
    let marker = marker("interpreter");
    let target = target("bad_interpreter.sh", &marker);
    let (_, run) = run_within(NO_HANG, &scenario("one_operation"), &target, &ready_within(Duration::from_secs(1)));
    let reason = aborted(&run);
    assert!(!reason.contains("does not exist"), "{reason}");
    assert!(reason.contains("#!/nonexistent/killpoint-hostile-shell"), "{reason}");
    assert_nothing_left(&marker);
}

// 2. The runtime is not executable.
#[test]
fn a_runtime_that_is_not_executable_is_named() {
    use std::os::unix::fs::PermissionsExt;
    let marker = marker("not-executable");
    let target = target("not_executable.sh", &marker);
    let mode = std::fs::metadata(&target.program).unwrap().permissions().mode();
    assert_eq!(mode & 0o111, 0, "tests/hostile/not_executable.sh must stay mode 644 (it is {mode:o})");
    let (_, run) = run_within(NO_HANG, &scenario("one_operation"), &target, &ready_within(Duration::from_secs(1)));
    let reason = aborted(&run);
    assert!(reason.contains("not_executable.sh"), "{reason}");
    assert!(reason.contains("is not executable (mode 644)"), "{reason}");
    assert_nothing_left(&marker);
}

// 3 (exits at once) and 5 (never ready) are in tests/certify.rs; what they are reported as is here.

/// Whether a report names `settled` as an invariant (as a violation's name, in a list, in an
/// attribute), not merely the word in a scenario's description.
fn blames_settled(report: &str) -> bool {
    ["settled:", "settled`", "settled\"", "settled<", "settled,"].iter().any(|form| report.contains(form))
}

// 2b. Never ready — silent past the deadline, a ready line of another contract, out before any
// line, and ready in its first life but not after the restart: each broke the ready line's rule
// (CONTRACT.md §2-6), and every report says so — the text, the JSON certificate's violations and
// rules, JUnit, HTML and the checklist — not an operation that did not settle (`settled`, §3-10).
#[test]
fn a_runtime_that_never_becomes_ready_is_reported_under_the_ready_line_rule() {
    use killpoint::report::certificate::Certificate;
    let marker = marker("never-ready");
    let never_ready = |how: &str| Target { program: hostile("never_ready.sh"), args: vec![marker.clone(), how.into()] };
    let cases = [
        ("silent", never_ready("silent"), "one_operation", "incarnation 1 of"),
        ("another contract", never_ready("wrong-contract"), "one_operation", "incarnation 1 of"),
        ("exits first", never_ready("exits"), "one_operation", "incarnation 1 of"),
        ("unready after its restart", target("unready_after_restart.py", &marker), "crash_loop", "incarnation 2 of"),
    ];
    for (case, target, name, incarnation) in cases {
        let started = Instant::now();
        // Silence costs the whole deadline; the others end on their own, and the Python one must
        // first become ready in its first life, whatever the load.
        let options = ready_within(if case == "silent" { Duration::from_secs(3) } else { READY });
        let outcomes = killpoint::report::certify::certify(&[scenario(name)], &target, &options, false, 1);
        assert!(started.elapsed() < NO_HANG, "{case}: took {:?}", started.elapsed());
        for kept in outcomes.iter().filter_map(|o| o.artifacts.as_ref()) {
            let _ = std::fs::remove_dir_all(kept);
        }
        let certificate = Certificate::new(&target, &outcomes);
        let json: serde_json::Value = serde_json::from_str(&certificate.to_json()).unwrap();
        let violations = json["scenarios"][0]["violations"].as_array().cloned().unwrap_or_default();
        let invariants: Vec<&str> = violations.iter().filter_map(|v| v["invariant"].as_str()).collect();
        assert!(invariants.contains(&"ready") && !invariants.contains(&"settled"), "{case}: {invariants:?}");
        let message = violations.iter().find(|v| v["invariant"] == "ready").and_then(|v| v["message"].as_str());
        assert!(message.is_some_and(|m| m.contains("§2-6") && m.contains(incarnation)), "{case}: {message:?}");
        let status =
            |id: &str| json["rules"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap()["status"].clone();
        assert_eq!((status("§2-6"), status("§3-10")), ("violated".into(), "not_exercised".into()), "{case}");
        let junit = certificate.to_junit();
        assert!(junit.contains("ready: ") && junit.contains("§2-6") && !blames_settled(&junit), "{case}: {junit}");
        let html = killpoint::report::html::render(&certificate, &outcomes);
        assert!(html.contains("§2-6") && !blames_settled(&html), "{case}: the HTML report blames `settled`");
        let checklist = killpoint::report::checklist::table(&certificate.checklist);
        assert!(checklist.contains("§2-6"), "{case}: {checklist}");
        assert_nothing_left(&marker);
    }
}

// 3b. Prints its ready line and exits at once: whichever the harness sees first, the line or the
// exit, it must not claim that no ready line was printed. Five runs, to meet both orders.
#[test]
fn a_runtime_that_exits_right_after_its_ready_line_is_not_called_silent() {
    let marker = marker("ready-then-exits");
    for _ in 0..5 {
        let (_, run) = run_within(
            NO_HANG,
            &scenario("one_operation"),
            &target("ready_then_exits.sh", &marker),
            &ready_within(READY),
        );
        let reason = aborted(&run);
        assert!(
            reason.contains("exited (exit code 3) right after printing its ready line")
                || reason.contains("incarnation 1 exited on its own (exit code 3) while `charge` was being submitted"),
            "{reason}"
        );
        assert!(reason.contains("ready_then_exits: printing the ready line, then exiting"), "{reason}");
        assert_nothing_left(&marker);
    }
}

// 4. Ready, then out on its own at the first boundary it is let past, in every incarnation: the
// harness reports the exit (it does not restart a runtime that was not killed, so it cannot loop).
#[test]
fn a_crash_looping_runtime_is_reported_with_its_exit_status() {
    let marker = marker("crash-loop");
    let (verdict, run) =
        run_within(NO_HANG, &scenario("crash_loop"), &target("crash_loop.py", &marker), &ready_within(READY));
    let reason = aborted(&run);
    // Incarnation 1 was killed at the scenario's fault; incarnation 2 exited on its own.
    assert_eq!(run.incarnations, 2, "{reason}");
    assert!(reason.contains("incarnation 2 exited on its own (exit code 3) while `charge` was"), "{reason}");
    assert!(reason.contains("[crash_loop.py incarnation 2] harness answered"), "{reason}");
    assert!(!verdict.passed());
    assert_nothing_left(&marker);
}

// 6. Declares the probe, never connects.
#[test]
fn a_runtime_that_declares_the_probe_but_never_connects_is_stopped() {
    let marker = marker("ignores-probe");
    // The ready line may take seconds under load; the wait for the connection after it does not.
    let (_, run) =
        run_within(NO_HANG, &scenario("one_operation"), &target("ignores_probe.py", &marker), &ready_within(READY));
    let reason = aborted(&run);
    assert!(
        reason.contains("declared \"probe\": true in its ready line but never connected to KILLPOINT_PROBE_SOCKET"),
        "{reason}"
    );
    assert!(reason.contains("declaring the probe without connecting to it"), "{reason}");
    assert_nothing_left(&marker);
}

// 7. Garbage on the probe.
#[test]
fn garbage_on_the_probe_is_quoted() {
    let marker = marker("garbage");
    let (_, run) =
        run_within(NO_HANG, &scenario("one_operation"), &target("garbage_probe.py", &marker), &ready_within(READY));
    let reason = aborted(&run);
    assert!(reason.contains("incarnation 1: expected a probe message like"), "{reason}");
    assert!(reason.contains("found `this is not a probe message`"), "{reason}");
    assert!(reason.contains("sending garbage on the probe"), "{reason}");
    assert_nothing_left(&marker);
}

// 8. A probe line longer than the harness accepts, without a newline.
#[test]
fn an_oversized_probe_line_is_refused_without_reading_it_all() {
    let marker = marker("oversized");
    let (_, run) =
        run_within(NO_HANG, &scenario("one_operation"), &target("oversized_probe.py", &marker), &ready_within(READY));
    let reason = aborted(&run);
    assert!(
        reason.contains("probe line longer than 65536 bytes: expected one JSON message per line, found"),
        "{reason}"
    );
    assert!(reason.contains("bytes without a newline, starting `{xxxxxxxx"), "{reason}");
    assert!(reason.contains("sending 1 MiB without a newline"), "{reason}");
    assert!(reason.len() < 16 * 1024, "the message must not carry the line: {} bytes", reason.len());
    assert_nothing_left(&marker);
}

// 9. A boundary the contract does not have.
#[test]
fn an_unknown_boundary_is_named() {
    let marker = marker("unknown-boundary");
    let (_, run) =
        run_within(NO_HANG, &scenario("one_operation"), &target("unknown_boundary.py", &marker), &ready_within(READY));
    let reason = aborted(&run);
    assert!(reason.contains("found `{\"boundary\": \"before_lunch\""), "{reason}");
    assert!(reason.contains("unknown boundary `before_lunch`; did you mean `before_dispatch`?"), "{reason}");
    assert!(reason.contains("announcing before_lunch"), "{reason}");
    assert_nothing_left(&marker);
}

// 9b. Announces again and again without reading the answers: the harness's answers pile up
// until it cannot write the next one. That write must not block it for ever.
#[test]
fn a_runtime_that_floods_the_probe_without_reading_is_stopped_at_the_deadline() {
    let marker = marker("probe-flood");
    let (_, run) =
        run_within(NO_HANG, &scenario("one_operation"), &target("probe_flood.py", &marker), &ready_within(READY));
    let reason = aborted(&run);
    assert!(
        reason.contains("incarnation 1 stopped reading the probe: the harness's answer to `before_dispatch` of `charge` could not be written before `charge`'s deadline (2s after its submission or the last ready line, plus the start-up)"),
        "{reason}"
    );
    assert!(reason.contains("announcing without reading the answers"), "{reason}");
    assert_nothing_left(&marker);
}

// 10. Resumed at a boundary, then stuck at DISPATCHED for ever while the API keeps answering:
// not an abort but a `settled` violation at the scenario's deadline (2 s).
#[test]
fn a_runtime_stuck_after_a_boundary_is_unsettled_at_the_deadline() {
    let marker = marker("blocks");
    let scenario = scenario("one_operation");
    let (verdict, run) = run_within(NO_HANG, &scenario, &target("blocks.py", &marker), &ready_within(READY));
    assert_eq!(run.aborted, None);
    assert_eq!(run.unsettled, vec![("charge".to_owned(), "DISPATCHED".to_owned())]);
    let settled: Vec<&str> = verdict
        .violations
        .iter()
        .filter(|v| v.invariant == killpoint::Invariant::Settled)
        .map(|v| v.message.as_str())
        .collect();
    assert_eq!(
        settled,
        [
            "`charge` did not settle within 2s of its submission or the last restart's ready line (extended by that start-up's length); last seen: DISPATCHED"
        ]
    );
    let story = killpoint::report::story::story(&scenario, &verdict, &run);
    assert!(story.contains("charge is DISPATCHED; blocking for ever"), "{story}");
    assert_nothing_left(&marker);
}

// 11. Forks a child and an orphaned grandchild, then exits on its own: the process group takes
// them all.
#[test]
fn the_children_of_a_runtime_that_exits_are_killed() {
    let marker = marker("forks");
    let (_, run) = run_within(NO_HANG, &scenario("one_operation"), &target("forks.py", &marker), &ready_within(READY));
    let reason = aborted(&run);
    assert!(reason.contains("incarnation 1 exited on its own (exit code 0) while `charge` was"), "{reason}");
    assert!(reason.contains("exiting, leaving the children behind"), "{reason}");
    assert_all_gone_within(Duration::from_secs(5), &marker);
}

// 11b. A grandchild that left the process group (`setsid`): the group kill cannot reach it, the
// sweep for the incarnation's inherited token does.
#[test]
fn a_grandchild_that_left_the_group_is_killed() {
    let marker = marker("setsid");
    let (_, run) = run_within(
        NO_HANG,
        &scenario("one_operation"),
        &target("setsid_grandchild.sh", &marker),
        // Never ready: the deadline is what ends it.
        &ready_within(Duration::from_millis(500)),
    );
    let reason = aborted(&run);
    assert!(reason.contains("setsid_grandchild: started a grandchild"), "{reason}");
    assert_all_gone_within(Duration::from_secs(2), &marker);
}

// 12. Megabytes on stdout and stderr (long lines, a line of 1 MiB, bytes that are not UTF-8)
// before the ready line: the harness still finds the ready line, keeps bounded memory, and the
// message shows the last lines, not megabytes.
#[test]
fn a_flood_of_output_is_drained_and_its_last_lines_shown() {
    let marker = marker("flood");
    let scenario = scenario("one_operation");
    let (verdict, run) = run_within(NO_HANG, &scenario, &target("flood.py", &marker), &ready_within(READY));
    assert_eq!(run.aborted, None, "the ready line after the flood was found");
    assert_eq!(run.unsettled, vec![("charge".to_owned(), "INTENT_RECORDED".to_owned())]);
    let story = killpoint::report::story::story(&scenario, &verdict, &run);
    assert!(story.contains("flood: last words on stdout"), "{story}");
    assert!(story.contains("flood: last words on stderr"), "{story}");
    assert!(story.len() < 64 * 1024, "the story must show the last lines, not the flood: {} bytes", story.len());
    assert_nothing_left(&marker);
}

// 13. Ignores SIGTERM (and its children too): killpoint kills with SIGKILL.
#[test]
fn a_runtime_that_ignores_sigterm_is_killed_anyway() {
    let marker = marker("sigterm");
    let (_, run) = run_within(
        NO_HANG,
        &scenario("one_operation"),
        &target("ignores_sigterm.sh", &marker),
        // Never ready: the deadline is what ends it.
        &ready_within(Duration::from_millis(500)),
    );
    let reason = aborted(&run);
    assert!(reason.contains("did not print `KILLPOINT_READY {…}` on stdout within 500ms"), "{reason}");
    assert!(reason.contains("ignores_sigterm: ignoring SIGTERM"), "{reason}");
    // The shell is reaped by the harness; its `sleep` children are not its to reap.
    assert_all_gone_within(Duration::from_secs(5), &marker);
}

// 4b. Dies while the harness waits for its answer to a submission: the message must say that it
// exited, not only that the request failed.
#[test]
fn a_runtime_that_dies_on_a_submission_is_reported_as_dead() {
    let marker = marker("dies-on-submit");
    let (_, run) =
        run_within(NO_HANG, &scenario("one_operation"), &target("dies_on_submit.py", &marker), &ready_within(READY));
    let reason = aborted(&run);
    assert!(reason.contains("exited on its own (exit code 4)"), "{reason}");
    assert!(reason.contains("a submission arrived; dying without answering it"), "{reason}");
    assert_nothing_left(&marker);
}

// 14. The harness itself is SIGKILLed mid-scenario (the `killpoint` CLI, in a process group of
// its own, while the runtime blocks): nothing can clean up but PR_SET_PDEATHSIG, and it must.
#[test]
fn a_sigkilled_harness_takes_its_runtime_with_it() {
    let marker = marker("cli-killed");
    let (status, _, _scratch) = signal_the_cli_mid_run(&marker, &[], nix::sys::signal::Signal::SIGKILL);
    assert_eq!(status.signal(), Some(9), "the CLI died of our SIGKILL, not of its own accord: {status}");
    // The runtime is in a group of its own, which the kill did not reach: PDEATHSIG is what ends it.
    assert_all_gone_within(Duration::from_secs(5), &marker);
}

// 14b. The same with a runtime that has a child: PDEATHSIG covers only the process the harness
// spawned; the harness's watchdog sweeps the rest once the harness is gone.
#[test]
fn a_sigkilled_harness_takes_the_runtimes_children_with_it() {
    let marker = marker("cli-killed-child");
    let (status, _, _scratch) = signal_the_cli_mid_run(&marker, &["--child"], nix::sys::signal::Signal::SIGKILL);
    assert_eq!(status.signal(), Some(9), "the CLI died of our SIGKILL, not of its own accord: {status}");
    assert_all_gone_within(Duration::from_secs(5), &marker);
}

/// Runs `killpoint run` against `blocks.py MARKER FILE EXTRA…`, sends `signal` to the CLI once the
/// runtime blocks, and returns how the CLI ended and what it printed.
fn signal_the_cli_mid_run(
    marker: &str,
    extra: &[&str],
    signal: nix::sys::signal::Signal,
) -> (std::process::ExitStatus, String, tempfile::TempDir) {
    use std::os::unix::process::CommandExt;
    // Test binaries are in target/<profile>/deps/; the CLI is in target/<profile>/.
    let exe = std::env::current_exe().unwrap();
    let cli = exe.parent().and_then(Path::parent).unwrap().join("killpoint");
    assert!(
        cli.is_file(),
        "the killpoint CLI is not built at {}: run `cargo build --workspace` first (`cargo test --workspace` builds it)",
        cli.display()
    );
    let scratch = tempfile::tempdir().unwrap();
    let blocked = scratch.path().join("blocked");
    // The CLI's artifacts go to a temp dir of ours: SIGKILL leaves them behind, and this cleans up.
    let tmp = scratch.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let output = scratch.path().join("cli-output.log");
    let log = std::fs::File::create(&output).unwrap();
    let mut harness = std::process::Command::new(&cli)
        .arg("run")
        .arg(hostile("long_deadline.toml"))
        .arg("--runtime")
        .arg(hostile("blocks.py"))
        .arg("--")
        .arg(marker)
        .arg(&blocked)
        .args(extra)
        .env("TMPDIR", &tmp)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .process_group(0)
        .spawn()
        .unwrap();
    // Mid-scenario: the runtime was resumed at before_dispatch and blocks.
    let until = Instant::now() + Duration::from_secs(10);
    while !blocked.exists() {
        let cli_output = || std::fs::read_to_string(&output).unwrap_or_default();
        if let Some(status) = harness.try_wait().unwrap() {
            assert_all_gone_within(Duration::from_secs(5), marker);
            panic!("the CLI ended ({status}) before the runtime blocked:\n{}", cli_output());
        }
        if Instant::now() >= until {
            let _ = harness.kill();
            let _ = harness.wait();
            assert_all_gone_within(Duration::from_secs(5), marker);
            panic!("the runtime did not block within 10 s:\n{}", cli_output());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!running_with(marker).is_empty(), "the runtime is running before the signal");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(harness.id() as i32), signal).unwrap();
    let status = harness.wait().unwrap();
    // The scratch dir (and the CLI's temp dir inside it) lives as long as the caller holds it.
    (status, std::fs::read_to_string(&output).unwrap_or_default(), scratch)
}

// 14c. Ctrl-C: the CLI says where the unfinished run's data dir and logs are kept, exits 130, and
// takes the runtime and its children with it.
#[test]
fn an_interrupted_cli_names_the_kept_artifacts_and_leaves_nothing_running() {
    let marker = marker("cli-interrupted");
    let (status, output, _scratch) = signal_the_cli_mid_run(&marker, &["--child"], nix::sys::signal::Signal::SIGINT);
    assert_eq!(status.code(), Some(130), "{status}\n{output}");
    let kept = output
        .lines()
        .find_map(|l| l.split_once("are kept at ").map(|(_, path)| PathBuf::from(path.trim())))
        .unwrap_or_else(|| panic!("no kept path in the CLI's output:\n{output}"));
    assert!(kept.join("logs/stderr.log").is_file(), "{}", kept.display());
    assert_all_gone_within(Duration::from_secs(5), &marker);
}

// 15. A panic in the harness mid-run: the unwinding drops the run, and with it the incarnation,
// whose `Drop` kills the group. The runtime has a child, which only the group kill reaches (tokio's
// kill-on-drop signals the runtime alone). Checked on the thread that spawned the runtime, still
// alive, so PDEATHSIG (which fires when that thread ends) cannot be what killed them.
#[test]
fn a_panic_in_the_harness_mid_run_kills_the_runtime() {
    let marker = marker("panic");
    let scratch = tempfile::tempdir().unwrap();
    let blocked = scratch.path().join("blocked");
    let target = Target {
        program: hostile("blocks.py"),
        args: vec![marker.clone(), blocked.display().to_string(), "--child".into()],
    };
    let scenario = scenario("long_deadline");
    let options = RunOptions::default();
    let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tokio.block_on(async {
            // The run, and beside it in the same task a harness bug that panics mid-run, once the
            // runtime was resumed at before_dispatch and blocks.
            let bug = async {
                let until = Instant::now() + Duration::from_secs(10);
                while !blocked.exists() && Instant::now() < until {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                assert!(!running_with(&marker).is_empty(), "the runtime is running before the panic");
                blocked.exists()
            };
            tokio::select! {
                run = killpoint::run::driver::run(&scenario, &target, &options) => {
                    format!("the run ended before the panic: {:?}", run.map(|r| r.aborted))
                }
                blocked = bug => {
                    if blocked {
                        panic!("a harness bug, mid-run");
                    }
                    "the runtime did not block within 10 s".to_owned()
                }
            }
        })
    }));
    match outcome {
        Ok(problem) => {
            assert_all_gone_within(Duration::from_secs(5), &marker);
            panic!("{problem}");
        }
        Err(payload) => assert_eq!(payload.downcast_ref::<&str>(), Some(&"a harness bug, mid-run")),
    }
    assert_all_gone_within(Duration::from_secs(5), &marker);
    drop(tokio);
}
