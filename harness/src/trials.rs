//! `cargo test` integration: every scenario file becomes a named libtest-mimic trial.
//!
//! Trials are independent (own fake world, own ports, own data dir), so libtest-mimic and
//! nextest run them in parallel. Names are plain scenario names (`after_dispatch`), so
//! `cargo test -- after_dispatch` and nextest's `test(=after_dispatch)` both select them; a
//! suite may put a prefix in front (`black_box::after_dispatch`); the trials that prove the
//! checker can fail are `broken::<variant>::<scenario>`.
//!
//! A third party certifies its own runtime with a test target of two lines (`tests/third_party.rs`
//! in this repository is exactly this, compiled and run):
//!
//! ```text
//! // tests/killpoint.rs, with `[[test]] name = "killpoint" harness = false` in Cargo.toml
//! fn main() -> std::process::ExitCode {
//!     killpoint::trials::certify_main(env!("CARGO_BIN_EXE_my-runtime"))
//! }
//! ```

pub mod arguments;
pub mod at_once;
pub mod child;
pub mod interpreter;
pub mod needs;
pub mod order;

use crate::judge::run_scenario;
use crate::model::invariant::Invariant;
use crate::report::story;
use crate::run::driver::Run;
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use crate::scenario::Scenario;
use crate::scenario::standard::ScenarioSet;
use libtest_mimic::{Failed, Trial};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

/// For a `#[test]` binary whose tests start runtimes as trials do (`tests/integration.rs`,
/// `harness/tests/integration.rs`), from a constructor (`ctor`) before `main`: twice as many tests
/// at once as cores ([`arguments::default_test_threads_before_main`]), and the interpreter
/// `python3` resolves to first on PATH, so that the Python runtimes the tests start skip a version
/// manager's shim ([`interpreter::python3_first_on_path`]).
///
/// # Safety
/// Only before `main`, on the one thread there is: it sets environment variables.
pub unsafe fn before_libtest() {
    // SAFETY: the caller's promise.
    unsafe { arguments::default_test_threads_before_main() }
    interpreter::python3_first_on_path();
}

/// Called after a passing run, e.g. to snapshot its trace.
pub type OnPass = Arc<dyn Fn(&Scenario, &Run) -> Result<(), Failed> + Send + Sync>;

/// What to certify and how.
#[derive(Clone)]
pub struct Suite {
    pub scenarios: ScenarioSet,
    pub target: Target,
    /// The target is the reference runtime: also run each scenario's `catches` against the
    /// broken variants (`--broken <variant>`).
    pub broken_variants: bool,
    pub options: RunOptions,
    pub on_pass: Option<OnPass>,
    /// Put in front of every trial name, e.g. `black_box::`.
    pub prefix: String,
}

impl Suite {
    /// The standard scenarios (embedded in this crate) against `program`, with the probe.
    pub fn standard(program: impl Into<PathBuf>) -> Suite {
        Suite {
            scenarios: ScenarioSet::standard(),
            target: Target { program: program.into(), args: Vec::new() },
            broken_variants: false,
            options: RunOptions::default(),
            on_pass: None,
            prefix: String::new(),
        }
    }
}

/// The whole `main` of a third party's `harness = false` test target: certifies `program`
/// against the standard scenarios, one trial each, honouring libtest's command line
/// (`cargo test -- after_dispatch`, `--list`, nextest).
pub fn certify_main(program: impl Into<PathBuf>) -> std::process::ExitCode {
    certify_main_with(program, std::iter::empty::<PathBuf>())
}

/// [`certify_main`] with the project's own scenarios too: every `*.toml` in each of `dirs` is a
/// trial beside the standard ones (a file named like a standard scenario takes its place).
///
/// ```text
/// fn main() -> std::process::ExitCode {
///     killpoint::trials::certify_main_with(
///         env!("CARGO_BIN_EXE_my-runtime"),
///         [concat!(env!("CARGO_MANIFEST_DIR"), "/killpoint-scenarios")],
///     )
/// }
/// ```
pub fn certify_main_with(
    program: impl Into<PathBuf>,
    dirs: impl IntoIterator<Item = impl Into<PathBuf>>,
) -> std::process::ExitCode {
    certify_command_main(program, std::iter::empty::<String>(), dirs)
}

/// [`certify_main_with`] for a runtime started with arguments: an interpreter and its script, so
/// the script needs no absolute `#!` line (the certificate names and hashes the script too).
///
/// ```text
/// fn main() -> std::process::ExitCode {
///     let root = env!("CARGO_MANIFEST_DIR");
///     killpoint::trials::certify_command_main(
///         format!("{root}/.venv/bin/python"),
///         [format!("{root}/my_runtime.py")],
///         std::iter::empty::<std::path::PathBuf>(),
///     )
/// }
/// ```
pub fn certify_command_main(
    program: impl Into<PathBuf>,
    runtime_args: impl IntoIterator<Item = impl Into<String>>,
    dirs: impl IntoIterator<Item = impl Into<PathBuf>>,
) -> std::process::ExitCode {
    let args = arguments::TestArguments::from_args();
    let mut suite = Suite::standard(program);
    suite.target.args = runtime_args.into_iter().map(Into::into).collect();
    suite.scenarios.dirs = dirs.into_iter().map(Into::into).collect();
    // `exit_code()` rather than `exit()`: returning from main lets destructors and coverage run.
    args.run(trials(&suite)).exit_code()
}

/// One trial per scenario file, plus one per (scenario, broken variant) it catches.
pub fn trials(suite: &Suite) -> Vec<Trial> {
    let loaded = match suite.scenarios.load() {
        Ok(l) => l,
        Err(e) => {
            let message = format!("cannot read the scenarios: {e}");
            return vec![Trial::test("scenarios", move || Err(message.into()))];
        }
    };
    // Asked once: which variants the runtime has, so a misspelt `broken = …` is the file's error.
    let known = suite.broken_variants.then(|| crate::model::variants::of(&suite.target.program));
    let mut trials = Vec::new();
    let mut not_run = Vec::new();
    for scenario in loaded {
        let scenario = match scenario {
            Ok(s) => Arc::new(s),
            Err(e) => {
                let name = e.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                trials.push(Trial::test(format!("{}{name}", suite.prefix), move || Err(e.to_string().into())));
                continue;
            }
        };
        let (s, suite_for_trial) = (scenario.clone(), suite.clone());
        let name = format!("{}{}", suite.prefix, scenario.name);
        // Not run, and said so, where it means nothing: ignored, never passed.
        if scenario.needs_services() && suite.options.services.is_empty() {
            not_run.push(scenario.name.clone());
            let why = "not run: no services declared";
            trials.push(Trial::test(name, move || Err(why.into())).with_ignored_flag(true));
            continue;
        }
        trials.push(Trial::test(name, move || certify(&s, &suite_for_trial)));
        if let Some(known) = &known {
            for catch in &scenario.catches {
                let (s, suite_for_trial, catch) = (scenario.clone(), suite.clone(), catch.clone());
                let name = format!("{}broken::{}::{}", suite.prefix, catch.broken.replace('-', "_"), scenario.name);
                let known = known.clone();
                trials.push(Trial::test(name, move || {
                    let names = known.as_ref().map_err(|e| e.why.clone())?;
                    s.check_catches(names).map_err(|e| e.to_string())?;
                    caught(&s, &suite_for_trial, &catch)
                }));
            }
        }
    }
    if !not_run.is_empty() {
        let prefix = &suite.prefix;
        eprintln!(
            "{prefix}*: not run (ignored): no services declared (the suite's RunOptions::services): {}",
            not_run.join(", ")
        );
    }
    trials
}

fn certify(scenario: &Scenario, suite: &Suite) -> Result<(), Failed> {
    let (verdict, run) = run_scenario(scenario, &suite.target, &suite.options)
        .map_err(|e| format!("scenario `{}` could not run: {e}", scenario.name))?;
    if !verdict.passed() {
        let story = story::story(scenario, &verdict, &run);
        let (kept, story) =
            crate::report::evidence::keep_case(scenario, &verdict, Some(story), run, &suite.target, &suite.options);
        let story = story.unwrap_or_default();
        return Err(format!("{story}  {}", crate::run::artifacts::kept_at(&kept)).into());
    }
    match &suite.on_pass {
        Some(on_pass) => on_pass(scenario, &run),
        None => Ok(()),
    }
}

/// The broken variant must fail the scenario, on (at least) the invariants the scenario names,
/// under the crash the catch names.
fn caught(scenario: &Scenario, suite: &Suite, catch: &crate::scenario::Catch) -> Result<(), Failed> {
    let options = RunOptions { crash: catch.crash, ..suite.options.clone() };
    caught_by(scenario, &suite.target, &options, &catch.broken, &catch.invariants).map_err(Failed::from)
}

/// `target` (the reference runtime) started with `--broken <broken>` must fail `scenario` on (at
/// least) `expected`: the proof that the checker catches the variant. `Err` says what was missed.
pub fn caught_by(
    scenario: &Scenario,
    target: &Target,
    options: &RunOptions,
    broken: &str,
    expected: &[String],
) -> Result<(), String> {
    let expected: BTreeSet<Invariant> = expected
        .iter()
        .map(|name| Invariant::from_name(name))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: [[catches]] for `{broken}`: {e}", scenario.path.display()))?;
    let mut target = target.clone();
    target.args.extend(["--broken".to_owned(), broken.to_owned()]);
    let (verdict, run) = run_scenario(scenario, &target, options)
        .map_err(|e| format!("scenario `{}` could not run: {e}", scenario.name))?;
    let failed = verdict.failed_invariants();
    if run.aborted.is_some() || !expected.is_subset(&failed) {
        let story = story::story(scenario, &verdict, &run);
        let names = |set: &mut dyn Iterator<Item = &Invariant>| set.map(|i| i.as_str()).collect::<Vec<_>>().join(", ");
        let found = match failed.is_empty() {
            true => "it violated nothing".to_owned(),
            false => format!("it violated {}", names(&mut failed.iter())),
        };
        return Err(format!(
            "the reference runtime with `--broken {broken}` was expected to violate {} in `{}`; not caught: {} ({found})\n{story}",
            names(&mut expected.iter()),
            scenario.name,
            names(&mut expected.difference(&failed)),
        ));
    }
    Ok(())
}

/// Keeps of `scenario` the operation its first fault kills, with its faults: where every other
/// operation would only show again what the first shows, at the price of an incarnation each (an
/// interpreter importing its framework; a deadline waited out). `Err` for a scenario with no
/// `[[fault]]`, or with faults of other kinds, which may name the operations left out.
pub fn only_the_first_killed(scenario: &mut Scenario) -> Result<(), String> {
    let first = scenario.faults.first().map(|fault| fault.operation.clone());
    let first =
        first.ok_or_else(|| format!("expected `{}` to kill an operation, found no [[fault]]", scenario.name))?;
    let others = !scenario.consumer_faults.is_empty()
        || !scenario.syscall_faults.is_empty()
        || !scenario.lookup_faults.is_empty()
        || !scenario.policy_faults.is_empty();
    if others {
        return Err(format!("expected `{}` to have [[fault]]s only, found faults of other kinds", scenario.name));
    }
    scenario.operations.retain(|op| op.id == first);
    scenario.faults.retain(|fault| fault.operation == first);
    Ok(())
}
