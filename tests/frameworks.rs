//! `cargo test --test frameworks`: the framework examples certified (`examples/langgraph/`,
//! `examples/dbos/`, `examples/pydantic_ai/`), with and without the probe, and the Python kit
//! (its own tests, and installed from scratch: `frameworks::installed_kit`).
//!
//! - `frameworks::<framework>::corrected::<scenario>`: the corrected version passes.
//! - `frameworks::<framework>::naive::<scenario>`: the naive version fails, on `at_most_once`, for
//!   an operation the scenario kills at its boundary — the failure the guide (docs/frameworks.md)
//!   explains. A naive version that passed would mean the scenario no longer shows the mistake.
//!
//! The frameworks come from a virtualenv (this test makes it once: `target/frameworks-venv`,
//! pinned in `examples/frameworks/requirements.txt`, under a lock so that test processes started
//! at once — nextest runs each trial in its own — make it once: `frameworks::venv_lock`,
//! `frameworks/venv.rs`); `KILLPOINT_FRAMEWORKS_PYTHON` names another interpreter. Where python3
//! itself is missing the trials are ignored, with the reason on stderr; a virtualenv that could
//! not be made (no network to the Python registry) is a failure of every trial that needs it,
//! saying how to make it by hand.
//!
//! What a trial costs is its incarnations: each starts a Python interpreter that imports its
//! framework (1.5 to 3.5 s of CPU), and a scenario kills and restarts four to six times. So the
//! trials run a subset of the scenarios, where the framework's engine, not the kit, decides the
//! outcome; the other scenarios exercise only the kit's contract shell (`killpoint_shell`, which
//! every example is built on), certified in every mode by `python::` (examples/python-runtime).
//! Why each trial is there:
//!
//! - naive, with the probe and as a black box (`NAIVE`): the two boundaries where a
//!   step-replaying engine repeats the call. By default only the operation the scenario kills
//!   first is run (`only_the_first_killed`: two incarnations, not five or six): its duplicate is
//!   the failure the trial asks for, and every other operation shows the same replayed step again.
//! - corrected, with the probe (`CORRECTED`): where the engine's records meet the kill, before and
//!   after the provider's answer and where the engine records the step's output.
//! - as a black box, naive and corrected: the boundaries the harness reaches without the probe
//!   (`BLACK_BOX`); by default, where the tracer runs, not `after_dispatch`, where the world kills
//!   as it does with the probe (`black_box`).
//! - DBOS corrected, as a black box under the tracer, every boundary (`DBOS_CORRECTED`): the engine
//!   whose SQLite journal syncs before the runtime commits (issue 17). With the probe it keeps to
//!   `CORRECTED` where the tracer runs; where this machine refuses tracing, the probe runs all six.
//! - Pydantic AI's agent loop runs on the same DBOS engine, so it runs the boundaries where the
//!   agent loop differs: the tool call's answer and its record (`AGENT_LOOP`).
//! - Temporal (`examples/temporal`, tests/frameworks/temporal.rs): its server is a service beside
//!   the worker (`--services`); naive and corrected at `after_dispatch`, and both under
//!   `[[service_fault]]`s that crash the server while the worker lives on, the corrected one also
//!   while it reconciles and while it delivers; naive and corrected as a traced black box at
//!   `after_provider_success`, where this machine allows tracing.
//! - DBOS on PostgreSQL (`examples/dbos` with `postgres.toml`, tests/frameworks/dbos_pg.rs): the
//!   server beside the worker as DBOS's system database; naive and corrected at `after_dispatch`,
//!   the corrected one under Postgres crashes while it reconciles and while it delivers.
//! - Restate (`examples/restate`, tests/frameworks/restate.rs): its server (npm, installed once
//!   into `target/restate-server`) is a service on three ports; naive and corrected at
//!   `after_dispatch`, the corrected one under `[[service_fault]]`s that crash the server.
//! - Postgres under `--crash machine` (tests/frameworks/postgres_power.rs): a worker whose whole
//!   store is a Postgres service; a power loss takes both, and the server's default configuration
//!   passes where `fsync=off` loses the accepted operation (`intent_durable`).
//! - `python_kit` (the kit's own tests), `installed_kit` (issue 21's fresh install and 40-line
//!   runtime), `venv_lock` (the virtualenv made once by processes started at once).
//!
//! `KILLPOINT_FRAMEWORKS=all cargo test --test frameworks` runs the whole matrix: the naive
//! versions on every operation of their scenarios, DBOS with the probe at every boundary, and the
//! black box at `after_dispatch`.

#[path = "frameworks/agents.rs"]
mod agents;
#[path = "frameworks/dbos_pg.rs"]
mod dbos_pg;
#[path = "frameworks/installed.rs"]
mod installed;
#[path = "frameworks/pg_template.rs"]
mod pg_template;
#[path = "frameworks/postgres_power.rs"]
mod postgres_power;
#[path = "frameworks/restate.rs"]
mod restate;
#[path = "frameworks/served.rs"]
mod served;
#[path = "frameworks/temporal.rs"]
mod temporal;
#[path = "frameworks/venv.rs"]
mod venv;

use killpoint::trials::arguments::TestArguments;
use killpoint::{Invariant, RunOptions, Scenario, Target, run_scenario};
use libtest_mimic::{Failed, Trial};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

const FRAMEWORKS: [&str; 3] = ["langgraph", "dbos", "pydantic_ai"];

/// Where the naive versions must fail: a kill after the provider applied the call, and after its
/// answer arrived, both before the engine recorded the step's output.
const NAIVE: [&str; 2] = ["after_dispatch", "after_provider_success"];

/// The boundaries the harness reaches without the probe (CONTRACT.md §7, "Without the probe"):
/// only these are run as a black box too. Elsewhere a black-box run kills nothing, and would only
/// repeat what the run with the probe showed.
const BLACK_BOX: [&str; 3] = ["after_dispatch", "after_provider_success", "after_delivery_send"];

/// Whether `name` runs as a black box too. Under the tracer the harness reaches every boundary
/// without the probe (CONTRACT.md §7, "Boundaries at system calls"): the corrected DBOS example,
/// whose system database is SQLite in its default rollback-journal mode — an engine that syncs
/// its own journal before the runtime commits — runs every scenario it runs with the probe, in
/// every set. Elsewhere, by default and where the tracer runs, `after_dispatch` is left to the run
/// with the probe: the world kills there (the provider holds its answer) with or without it, so
/// its black box would show again only that the runtime runs without the probe, which the black
/// box at `after_provider_success` shows too. Where tracing is refused, that one is not judged
/// (`untimed`), and `after_dispatch` is the naive versions' only black box.
fn black_box(framework: &str, version: Version, name: &str, matrix: Matrix) -> bool {
    let traced = killpoint::run::traced::permitted().is_ok();
    if framework == "dbos" && version == Version::Corrected && traced {
        return true;
    }
    BLACK_BOX.contains(&name) && (matrix == Matrix::All || !traced || name != "after_dispatch")
}

/// What the naive versions' habits break, each time: a replayed call step sends the request again
/// (`at_most_once`) with a fresh key (`stable_provider_key`), without a lookup (`no_blind_retry`).
/// Often also on the policy answer recorded before the crash (`policy_checked`) — but not always:
/// LangGraph writes a step's checkpoint while the next step runs, so a kill exactly at the
/// provider's answer (the traced black box) can land before `authorize`'s checkpoint is on disk,
/// and the replay then asks the policy again.
const NAIVE_VIOLATES: [Invariant; 3] = [Invariant::AtMostOnce, Invariant::StableProviderKey, Invariant::NoBlindRetry];

/// Where a step-replaying engine's records meet the kill: the call, its answer, its record.
const CORRECTED: [&str; 3] = ["after_dispatch", "after_provider_success", "after_result_write"];

/// Every boundary the runtime announces, and the one the provider reaches from outside: DBOS runs
/// them all, with the probe and traced (issue 17's engine with a journal of its own).
const DBOS_CORRECTED: [&str; 6] = [
    "before_dispatch",
    "after_dispatch",
    "after_provider_success",
    "after_result_write",
    "after_delivery_send",
    "after_policy_revocation",
];

/// The agent loop on DBOS: where it differs from the DBOS example, the tool call's answer and the
/// record of its output.
const AGENT_LOOP: [&str; 2] = ["after_provider_success", "after_result_write"];

/// The scenarios `framework`'s `version` runs.
fn scenarios(framework: &str, version: Version) -> &'static [&'static str] {
    match (framework, version) {
        (_, Version::Naive) => &NAIVE,
        ("dbos", Version::Corrected) => &DBOS_CORRECTED,
        ("pydantic_ai", Version::Corrected) => &AGENT_LOOP,
        (_, Version::Corrected) => &CORRECTED,
    }
}

/// Which trials run: `KILLPOINT_FRAMEWORKS=all` the whole matrix, else the default set (module doc).
#[derive(Clone, Copy, PartialEq)]
enum Matrix {
    Default,
    All,
}

impl Matrix {
    fn from_env() -> Result<Matrix, String> {
        match std::env::var("KILLPOINT_FRAMEWORKS").as_deref() {
            Err(std::env::VarError::NotPresent) | Ok("" | "default") => Ok(Matrix::Default),
            Ok("all") => Ok(Matrix::All),
            Ok(other) => {
                Err(format!("KILLPOINT_FRAMEWORKS: expected `all` or `default` (or nothing), found `{other}`"))
            }
            Err(e) => Err(format!("KILLPOINT_FRAMEWORKS: expected `all` or `default` (or nothing), found {e}")),
        }
    }
}

/// Whether `framework`'s `version` runs `name` with the probe. In the default set, where the
/// tracer runs the corrected DBOS example's every scenario as a black box, its runs with the probe
/// keep to `CORRECTED`, as the other frameworks' do: the other three boundaries are the kit's
/// (`python::` certifies them with the probe) and the engine's part in them is shown traced.
fn with_probe(framework: &str, version: Version, name: &str, matrix: Matrix) -> bool {
    let traced_all =
        framework == "dbos" && version == Version::Corrected && killpoint::run::traced::permitted().is_ok();
    matrix == Matrix::All || !traced_all || CORRECTED.contains(&name)
}

#[derive(Clone, Copy, PartialEq)]
enum Version {
    Naive,
    Corrected,
}

impl Version {
    fn name(self) -> &'static str {
        match self {
            Version::Naive => "naive",
            Version::Corrected => "corrected",
        }
    }
}

fn main() -> ExitCode {
    killpoint::trials::interpreter::python3_first_on_path();
    let args = TestArguments::from_args();
    let matrix = match Matrix::from_env() {
        Ok(matrix) => matrix,
        Err(why) => {
            eprintln!("{why}");
            return ExitCode::from(2);
        }
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python_present = killpoint::trials::needs::python3_runs();
    let python = match std::env::var_os("KILLPOINT_FRAMEWORKS_PYTHON") {
        Some(python) => PathBuf::from(python),
        None => {
            let venv = root.join("target/frameworks-venv");
            // Made here, once, so that README's `cargo test --workspace` sets up everything on a
            // fresh machine; a failure is reported by every trial that needs it.
            if python_present
                && !args.libtest.list
                && let Err(why) = venv::make_venv(&root, &venv)
            {
                eprintln!("killpoint: the frameworks' virtualenv could not be made: {why}");
            }
            venv.join("bin/python")
        }
    };

    let mut trials = Vec::new();
    for framework in FRAMEWORKS {
        for version in [Version::Naive, Version::Corrected] {
            for name in scenarios(framework, version) {
                for probe in [true, false] {
                    if (!probe && !black_box(framework, version, name, matrix))
                        || (probe && !with_probe(framework, version, name, matrix))
                    {
                        continue;
                    }
                    let script = root.join("examples").join(framework).join(format!("{}.py", version.name()));
                    let scenario = root.join("scenarios").join(format!("{name}.toml"));
                    let python = python.clone();
                    let narrow = version == Version::Naive && matrix == Matrix::Default;
                    let prefix = if probe { "" } else { "black_box::" };
                    let trial_name = format!("frameworks::{prefix}{framework}::{}::{name}", version.name());
                    // Without the tracer, a black-box `after_provider_success` kill is not exact, so
                    // whether the naive version repeats its call depends on timing: not judged.
                    let untimed = !probe
                        && version == Version::Naive
                        && *name == "after_provider_success"
                        && killpoint::run::traced::permitted().is_err();
                    if untimed {
                        eprintln!(
                            "{trial_name}: ignored: this machine refuses tracing, and without it the kill at `after_provider_success` lands by timing"
                        );
                    }
                    trials.push(
                        Trial::test(trial_name, move || run(&python, &script, &scenario, version, probe, narrow))
                            .with_ignored_flag(!python_present || untimed),
                    );
                }
            }
        }
    }
    for trial in agents::trials(&root, matrix) {
        let python = python.clone();
        trials.push(
            Trial::test(trial.name.clone(), move || agents::run(&python, &trial)).with_ignored_flag(!python_present),
        );
    }
    trials.extend(temporal::trials(&root, &python, !python_present));
    // Made by the first trial that needs it; removed when this binary ends (after `run`).
    let template = Arc::new(pg_template::Template::new());
    trials.extend(dbos_pg::trials(&root, &python, !python_present, template.clone()));
    trials.extend(restate::trials(&root, &python, !python_present));
    trials.extend(postgres_power::trials(&root, &python, !python_present));
    let kit = root.join("probe-kit/python");
    trials.push(Trial::test("frameworks::python_kit", move || python_kit(&kit)).with_ignored_flag(!python_present));
    trials.push(Trial::test("frameworks::venv_lock", venv::two_makers_make_it_once));
    let repository = root.clone();
    trials.push(
        Trial::test("frameworks::installed_kit", move || installed::installed_kit(&repository))
            .with_ignored_flag(!python_present),
    );
    if !python_present {
        eprintln!("python3 not found: the frameworks:: trials (LangGraph and DBOS examples) are ignored, not passed");
    }
    // The longest trials first: started last, they ran on alone while the other threads had
    // nothing left (installed_kit's fresh install, the power losses, Restate's machine crash:
    // 7–11 s each, the binary's last 30 s in a clean-clone run).
    killpoint::trials::order::longest_first(&mut trials, &LONGEST);
    args.run(trials).exit_code()
}

/// The trials (by name prefix) that take longest, started first, longest first (nextest, 4 at once:
/// 18, 15, 15, 15 and 15 s).
const LONGEST: [&str; 7] = [
    "frameworks::installed_kit",
    "frameworks::pydantic_ai::corrected::after_provider_success",
    "frameworks::dbos_postgres::corrected::server_away_during_recovery",
    "frameworks::postgres_power::",
    "frameworks::black_box::pydantic_ai::corrected::after_provider_success",
    "frameworks::restate::machine::",
    "frameworks::python_kit",
];

fn run(
    python: &Path,
    script: &Path,
    scenario: &Path,
    version: Version,
    probe: bool,
    narrow: bool,
) -> Result<(), Failed> {
    interpreter(python)?;
    let mut scenario = Scenario::load(scenario).map_err(|e| e.to_string())?;
    if narrow {
        killpoint::trials::only_the_first_killed(&mut scenario)?;
    }
    // The deadline is a hang bound: an engine that imports its framework after the ready line
    // (DBOS launches there), traced on a loaded 2-core machine, takes seconds to start working.
    scenario.deadline = scenario.deadline.max(std::time::Duration::from_secs(20));
    let scenario = Arc::new(scenario);
    let target = Target { program: python.to_owned(), args: vec![script.display().to_string()] };
    // Without the probe, under the tracer where this machine allows it: `after_provider_success`
    // is then the receive that completes the provider's answer, exactly (CONTRACT.md section 7).
    // Untraced, the kill lands wherever the runtime is when the answer leaves the provider — after
    // the naive graph has recorded the call's output in some runs, and then nothing is repeated.
    // The ready deadline is a hang bound too: the first start in a fresh virtualenv compiles every
    // module of LangGraph or DBOS from source (CI sets PYTHONDONTWRITEBYTECODE), traced, on a
    // loaded machine — past the default 10 s in CI's first trials.
    let options = RunOptions {
        probe,
        syscalls: !probe && killpoint::run::traced::permitted().is_ok(),
        ready_timeout: std::time::Duration::from_secs(60),
        ..RunOptions::default()
    };
    let (verdict, run) = run_scenario(&scenario, &target, &options)
        .map_err(|e| format!("scenario `{}` could not run: {e}", scenario.name))?;
    let story = || killpoint::report::story::story(&scenario, &verdict, &run);
    match version {
        Version::Corrected if verdict.passed() => Ok(()),
        Version::Corrected => {
            Err(format!("{} was expected to pass `{}`:\n{}", script.display(), scenario.name, story()).into())
        }
        Version::Naive => {
            // The operations the scenario kills at its boundary: the replayed step re-sends theirs.
            let killed: Vec<&str> = scenario.faults.iter().map(|fault| fault.operation.as_str()).collect();
            let duplicated: Vec<&str> = verdict
                .violations
                .iter()
                .filter(|v| v.invariant == Invariant::AtMostOnce)
                .filter_map(|v| v.operation.as_deref())
                .filter(|operation| killed.contains(operation))
                .collect();
            let failed = verdict.failed_invariants();
            let missing: Vec<&str> =
                NAIVE_VIOLATES.iter().filter(|i| !failed.contains(i)).map(|i| i.as_str()).collect();
            if run.aborted.is_some() || duplicated.is_empty() || !missing.is_empty() {
                return Err(format!(
                    "{} was expected to fail `{}` on at_most_once for an operation killed at `{}` ({}), and on every invariant its habits break; not caught: {}\n{}",
                    script.display(),
                    scenario.name,
                    scenario.faults.first().map_or("?".to_owned(), |fault| fault.at.to_string()),
                    killed.join(", "),
                    if duplicated.is_empty() { "at_most_once".to_owned() } else { missing.join(", ") },
                    story()
                )
                .into());
            }
            let failed: Vec<&str> = failed.iter().map(|i| i.as_str()).collect();
            eprintln!(
                "{} fails `{}` as expected: at_most_once for {} (violated: {})",
                script.display(),
                scenario.name,
                duplicated.join(", "),
                failed.join(", ")
            );
            Ok(())
        }
    }
}

/// Whether the frameworks' interpreter is there; if not, how to make it.
fn interpreter(python: &Path) -> Result<(), Failed> {
    if python.is_file() {
        return Ok(());
    }
    Err(format!(
        "expected the frameworks' virtualenv interpreter at {}, found nothing; make it with\n  python3 -m venv target/frameworks-venv && target/frameworks-venv/bin/pip install -r examples/frameworks/requirements.txt probe-kit/python\n(or set KILLPOINT_FRAMEWORKS_PYTHON)",
        python.display()
    )
    .into())
}

/// The Python kit's own tests (`probe-kit/python/test_killpoint_probe.py` and
/// `test_killpoint_shell.py`), on the plain python3 it is written for: the standard library only.
/// Each module in a process of its own: the probe is connected once for a process's whole life.
fn python_kit(dir: &Path) -> Result<(), Failed> {
    for module in ["test_killpoint_probe", "test_killpoint_shell"] {
        installed::within(
            std::time::Duration::from_secs(120),
            std::process::Command::new("python3")
                .args(["-m", "unittest", module])
                .current_dir(dir)
                .env("PYTHONDONTWRITEBYTECODE", "1"),
            &format!("python3 -m unittest {module} in {}", dir.display()),
        )?;
    }
    Ok(())
}
