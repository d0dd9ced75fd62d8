//! `cargo test`: certifies a runtime against every scenario in `scenarios/`, one trial each.
//!
//! By default the runtime is the reference one (`killpoint-runtime`), and two more things run:
//! each scenario's `catches` against the deliberately broken variants (the proof that the
//! checker can fail), and a snapshot of each passing run's trace (`tests/snapshots/`).
//! `KILLPOINT_RUNTIME=/path/to/binary cargo test` certifies another binary instead.

use killpoint::trials::arguments::TestArguments;
use killpoint::trials::{Suite, trials};
use killpoint::{RunOptions, Target};
use libtest_mimic::Failed;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    killpoint::trials::interpreter::python3_first_on_path();
    let args = TestArguments::from_args();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let (program, reference) = match std::env::var_os("KILLPOINT_RUNTIME") {
        Some(path) => (PathBuf::from(path), false),
        None => (PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")), true),
    };
    let suite = Suite {
        scenarios: killpoint::ScenarioSet::dir(root.join("scenarios")),
        target: Target { program: program.clone(), args: Vec::new() },
        broken_variants: reference,
        options: RunOptions::default(),
        // Traces are pinned for the reference runtime only; another runtime may take other paths.
        on_pass: reference.then(|| Arc::new(snapshot_trace) as killpoint::trials::OnPass),
        prefix: String::new(),
    };
    let mut all = trials(&suite);
    // The same runtime as a black box: no probe socket, only what the fake world sees. Scenarios
    // whose kills need the probe pass as "partial"; any violation still fails.
    all.extend(trials(&Suite {
        broken_variants: false,
        options: RunOptions { probe: false, ..RunOptions::default() },
        on_pass: None,
        prefix: "black_box::".into(),
        ..suite.clone()
    }));
    if reference {
        all.extend(python_runtime(&suite));
    }
    killpoint::trials::order::longest_first(&mut all, &LONGEST);
    // `exit_code()` rather than `exit()`: returning from main lets destructors and coverage run.
    args.run(all).exit_code()
}

/// The trials that take longest (about 10, 6, 4, 4 and 4 s at 4 at once), started first.
const LONGEST: [&str; 5] = [
    "broken::fenced_hangs::zombie_worker",
    "broken::split_outbox::after_result_write",
    "python::attempt_bound",
    "split_step::attempt_bound",
    "concurrent::attempt_bound",
];

/// `examples/python-runtime/`, written from CONTRACT.md alone, certified like any runtime. Where
/// python3 is missing the trials are listed as ignored, with the reason on stderr — never passed.
fn python_runtime(reference: &Suite) -> Vec<libtest_mimic::Trial> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut trials = python_suite(reference, &root.join("examples/python-runtime/runtime.py"), "python::");
    // A runtime whose bug lives between two of its own durable writes (issue 9): it must pass every
    // scenario with the probe — no boundary lies between those writes — and only a syscall-level
    // crash point can catch it.
    trials.extend(python_suite(reference, &root.join("tests/fixtures/split_step_runtime.py"), "split_step::"));
    // A correct runtime of another design (issue 17): every due operation and delivery on a thread
    // of its own, so a kill lands between another thread's write-ahead and its request, or
    // between a lookup's answer and its record, and the checker must allow exactly that.
    trials.extend(python_suite(reference, &root.join("tests/fixtures/concurrent_runtime.py"), "concurrent::"));
    trials
}

fn python_suite(reference: &Suite, runtime: &std::path::Path, prefix: &str) -> Vec<libtest_mimic::Trial> {
    let runtime = runtime.to_owned();
    let python = killpoint::trials::needs::python3_runs();
    let suite = Suite {
        target: Target { program: runtime, args: Vec::new() },
        broken_variants: false,
        on_pass: None,
        prefix: prefix.into(),
        ..reference.clone()
    };
    let trials = trials(&suite);
    if python {
        trials
    } else {
        eprintln!("python3 not found: the {prefix} trials (Python runtimes) are ignored, not passed");
        trials.into_iter().map(|t| t.with_ignored_flag(true)).collect()
    }
}

fn snapshot_trace(scenario: &killpoint::Scenario, run: &killpoint::Run) -> Result<(), Failed> {
    // Operations in flight together interleave differently from run to run: no one trace to pin.
    if scenario.waves().iter().any(|wave| wave.len() > 1) {
        return Ok(());
    }
    // A new scenario has no snapshot yet: say how to make one, rather than insta's generic failure.
    let file = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"))
        .join(format!("trace__{}.snap", scenario.name));
    let updating = std::env::var("INSTA_UPDATE").is_ok_and(|v| v == "always" || v == "new");
    if !file.is_file() && !updating {
        return Err(format!(
            "`{name}` passed, but its trace has no snapshot yet. Make it with\n  INSTA_UPDATE=always cargo test -p killpoint-runtime --test scenarios -- --exact {name}\nthen read {} (it must not change when the trial is run again) and commit it.",
            file.display(),
            name = scenario.name
        )
        .into());
    }
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_input_file(&scenario.path);
    settings.set_description(scenario.description.clone());
    settings.set_omit_expression(true);
    // The trace has no times, ports or pids; provider refs and keys are deterministic.
    settings.bind(|| {
        insta::assert_yaml_snapshot!(format!("trace__{}", scenario.name), killpoint::run::trace::normalised(run))
    });
    Ok(())
}
