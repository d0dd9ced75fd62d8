//! Issue 35: `pip install killpoint`. The wheel scripts/build-wheel makes (maturin's binary
//! bindings: `killpoint`, `killpoint-tracer`, the reference runtime, the Python kit and the pytest
//! plugin) installed in a fresh virtualenv certifies the Python example with no cargo on PATH; its
//! pytest plugin passes the example (own scenario files, `-n`, `--junitxml`) and fails a broken
//! runtime with the story; and the GitHub Action's script certifies the reference runtime (on the
//! scenarios about dispatch) and fails a broken one.
//!
//! The wheel is built from the debug build `cargo test` already made (`build-wheel DIR dev`: cargo
//! finds it current), so the cost is maturin packing it and pip installing it.

use killpoint::trials::at_once::both;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

#[path = "wheel/run.rs"]
mod run;
use run::{output_within, said};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where scripts/build-wheel keeps its tools (cargo's target directory).
fn target() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

/// The wheel, built into `dir/wheels`. Its build must compile no dependency again: maturin builds
/// the harness alone and build-wheel the runtime alone, and only `workspace-hack` (cargo-hakari's)
/// makes such a build choose the same features of every dependency as the tests' build, so that
/// it reuses it rather than taking half a minute of the suite to make a second copy.
fn wheel(dir: &Path) -> PathBuf {
    let started = std::time::SystemTime::now();
    let mut build = Command::new(root().join("scripts/build-wheel"));
    build.arg(dir.join("wheels")).arg("dev");
    let built = output_within(build, Duration::from_secs(900), "scripts/build-wheel");
    assert!(built.status.success(), "scripts/build-wheel: {}", said(&built));
    let again = libraries_compiled_since(started);
    assert!(
        again.is_empty(),
        "expected scripts/build-wheel to reuse every dependency the tests' build made, found it compiled {again:?} again \
         (a dependency's features differ between a build of one package and the workspace's: run `cargo hakari generate && cargo hakari manage-deps`, cargo-hakari from crates.io)"
    );
    std::fs::read_dir(dir.join("wheels")).unwrap().flatten().map(|e| e.path()).next().expect("a wheel")
}

/// The dependencies a debug build compiled at or after `since` (`target/debug/deps/lib*.rlib`).
fn libraries_compiled_since(since: std::time::SystemTime) -> Vec<String> {
    let deps = std::fs::read_dir(target().join("debug/deps")).expect("the tests' debug build");
    let compiled = |e: &std::fs::DirEntry| e.metadata().and_then(|m| m.modified()).is_ok_and(|t| t >= since);
    let rlib = |e: &std::fs::DirEntry| e.file_name().to_string_lossy().ends_with(".rlib");
    deps.flatten().filter(|e| rlib(e) && compiled(e)).map(|e| e.file_name().to_string_lossy().into_owned()).collect()
}

/// A fresh virtualenv `dir/venv` with the wheel and pytest installed.
fn installed(dir: &Path) -> PathBuf {
    let wheel = wheel(dir);
    let venv = dir.join("venv");
    // Without pip of its own (ensurepip is most of a virtualenv's making): the machine's pip
    // installs into it (`pip --python`), as it does the frameworks' (tests/frameworks/venv.rs).
    let mut make = Command::new("python3");
    make.args(["-m", "venv", "--without-pip"]).arg(&venv);
    assert!(output_within(make, Duration::from_secs(120), "python3 -m venv").status.success());
    let mut pip = Command::new("python3");
    pip.args(["-m", "pip", "--python"]).arg(venv.join("bin/python"));
    pip.args(["install", "--quiet", "--disable-pip-version-check"]).arg(&wheel);
    pip.arg("-r").arg(root().join("python/requirements-test.txt"));
    let pip = output_within(pip, Duration::from_secs(900), "pip install the wheel and pytest");
    assert!(pip.status.success(), "pip install: {}", said(&pip));
    venv
}

/// `program` from the virtualenv, run in `dir`, with the virtualenv's bin/ and the system's on PATH,
/// and neither cargo nor rustc there.
fn in_venv(venv: &Path, dir: &Path, program: &str) -> Command {
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", venv.join("bin").display());
    for tool in ["cargo", "rustc"] {
        let found = path.split(':').map(|d| Path::new(d).join(tool)).find(|p| p.exists());
        assert!(found.is_none(), "expected no {tool} on the test's PATH, found {found:?}");
    }
    let mut command = Command::new(venv.join("bin").join(program));
    command.current_dir(dir).env("PATH", path).env("TMPDIR", dir).env_remove("CARGO_TARGET_DIR");
    command
}

/// A project of a Python user: the example runtime and one scenario of its own, nothing of this
/// repository's beside them (the runtime finds the kit where pip installed it).
fn project(dir: &Path) -> PathBuf {
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("tests")).unwrap();
    std::fs::copy(root().join("examples/python-runtime/runtime.py"), project.join("runtime.py")).unwrap();
    std::fs::copy(root().join("tests/wheel/blind_retry_runtime.py"), project.join("broken.py")).unwrap();
    let own = root().join("tests/fixtures/own-scenarios/my_refund.toml");
    std::fs::copy(own, project.join("tests/killpoint_my_refund.toml")).unwrap();
    project
}

fn pytest(venv: &Path, project: &Path, runtime: &str, more: &[&str]) -> Output {
    let mut command = in_venv(venv, project, "pytest");
    command.args(["-p", "no:cacheprovider", "-rfs", "--killpoint-runtime", runtime]).args(more);
    output_within(command, Duration::from_secs(600), "pytest --killpoint-runtime")
}

#[test]
fn the_installed_wheel_certifies_and_its_pytest_plugin_passes_the_example_and_fails_a_broken_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let venv = installed(dir.path());
    let project = project(dir.path());

    // One after another: the plugin keeps a scenario it runs in a temp dir, which is the project's
    // here (TMPDIR), and a pytest run beside it would collect that file too (xdist then refuses:
    // its workers collected different tests).
    let mut certify = in_venv(&venv, &project, "killpoint");
    certify.args(["certify", "--runtime", "runtime.py"]);
    let certified = output_within(certify, Duration::from_secs(600), "killpoint certify --runtime runtime.py");
    // The plugin on two of the scenarios it collects, one the project's own, across two xdist
    // workers: the certification above has run every standard scenario from the installed wheel
    // already (and tests/scenarios.rs every one with the same runtime and binaries), so a third
    // pass of them all would show the plugin nothing new.
    let passed = pytest(
        &venv,
        &project,
        "runtime.py",
        &["-n", "2", "-k", "after_dispatch or my_refund", "--junitxml", "junit.xml"],
    );
    let failed =
        pytest(&venv, &project, "broken.py", &["-k", "after_dispatch or my_refund", "--junitxml", "broken.xml"]);
    assert_eq!(certified.status.code(), Some(0), "{}", said(&certified));
    assert_eq!(passed.status.code(), Some(0), "{}", said(&passed));
    let junit = std::fs::read_to_string(project.join("junit.xml")).unwrap();
    assert!(junit.contains("name=\"killpoint_my_refund\"") && junit.contains("name=\"after_dispatch\""), "{junit}");
    assert!(junit.contains("failures=\"0\"") && junit.contains("errors=\"0\""), "{junit}");

    let text = said(&failed);
    assert_eq!(failed.status.code(), Some(1), "{text}");
    for expected in
        ["2 failed", "deselected", "✗ no_blind_retry", "artifacts kept at", "rerun.sh", "rerun this scenario:"]
    {
        assert!(text.contains(expected), "expected `{expected}` in pytest's report:\n{text}");
    }
    // Each cell of a scenario is a property of its test case in pytest's JUnit.
    let junit = std::fs::read_to_string(project.join("broken.xml")).unwrap();
    for cell in [
        "after_dispatch of charge (non_idempotent_with_lookup, exact): at_most_once, no_blind_retry",
        "after_dispatch of status (safely_repeatable, exact): held",
    ] {
        assert!(
            junit.contains(&format!("name=\"killpoint.cell\" value=\"{cell}\"")),
            "expected the cell `{cell}` in:\n{junit}"
        );
    }
}

#[test]
fn the_actions_script_certifies_the_reference_runtime_and_fails_with_a_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    // The script makes its own virtualenv, as the action does on a runner.
    let wheel = wheel(dir.path());
    let action = |name: &str, runtime_args: &str, args: &str| {
        let out = dir.path().join(format!("{name}.out"));
        let mut command = Command::new(root().join("scripts/ci-action"));
        command.current_dir(dir.path()).env("RUNNER_TEMP", dir.path().join(name)).env("TMPDIR", dir.path());
        command.env("INPUT_INSTALL", &wheel).env("INPUT_REPORT_DIR", format!("{name}-report"));
        command.env("INPUT_RUNTIME_ARGS", runtime_args).env("INPUT_ARGS", args).env("GITHUB_OUTPUT", &out);
        std::fs::create_dir_all(dir.path().join(name)).unwrap();
        let ran = output_within(command, Duration::from_secs(900), "scripts/ci-action");
        assert!(ran.status.success(), "the script never fails its step: {}", said(&ran));
        (std::fs::read_to_string(out).unwrap_or_default(), dir.path().join(format!("{name}-report")), said(&ran))
    };
    // What is tested here is what the action runs, and the job ends with the script's exit code.
    let action_yml = std::fs::read_to_string(root().join("action.yml")).unwrap();
    for step in
        ["run: '\"$GITHUB_ACTION_PATH/scripts/ci-action\"'", "run: exit ${{ steps.certify.outputs.exit-code || 2 }}"]
    {
        assert!(action_yml.contains(step), "expected `{step}` in action.yml");
    }
    // The two jobs at once, each in a directory of its own. The reference certified on the
    // scenarios about dispatch (five, one with a service, one with operations in flight): what
    // is tested here is the script around `killpoint certify` (its virtualenv, outputs, report
    // files), which the number of scenarios does not change; every standard scenario is run from
    // an installed wheel by the test above and with the reference runtime by tests/scenarios.rs.
    let (reference, broken) = both(
        || action("reference", "", "--filter dispatch"),
        || action("broken", "--broken blind-retry", "--filter after_dispatch"),
    );
    let (outputs, report, text) = reference;
    assert!(outputs.contains("exit-code=0\n"), "{outputs}\n{text}");
    for file in ["report.html", "certificate.json", "junit.xml"] {
        assert!(report.join(file).is_file(), "{file} in {}: {text}", report.display());
    }
    let (outputs, report, text) = broken;
    assert!(outputs.contains("exit-code=1\n"), "{outputs}\n{text}");
    let kept = std::fs::read_dir(report.join("artifacts")).unwrap().count();
    assert!(kept > 0, "the failing scenario's artifacts kept for the upload: {text}");
}
