//! The `killpoint` binary as a user meets it: installed and run from a directory with no
//! checkout, its help, its checks before anything runs, and its exit codes.
//!
//! The reference runtime is the one `cargo build --workspace` (and `cargo test --workspace`) puts
//! beside this binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn killpoint() -> Command {
    Command::new(env!("CARGO_BIN_EXE_killpoint"))
}

fn reference_runtime() -> PathBuf {
    let beside = Path::new(env!("CARGO_BIN_EXE_killpoint")).with_file_name("killpoint-runtime");
    assert!(
        beside.is_file(),
        "{} is not built: run `cargo build --workspace` (or `cargo test --workspace`) first",
        beside.display()
    );
    beside
}

fn text(output: &Output) -> (String, String) {
    (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn certify_from_an_empty_directory_uses_the_embedded_scenarios() {
    let empty = tempfile::tempdir().unwrap();
    let output = killpoint()
        .current_dir(empty.path())
        .args(["certify", "--filter", "after_d", "--runtime"])
        .arg(reference_runtime())
        .env("TMPDIR", empty.path())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("against 2 scenario(s)"), "{stdout}");
    assert!(stdout.contains("after_dispatch") && stdout.contains("after_delivery_send"), "{stdout}");
    // Nothing left behind in the user's directory (the run's data dirs were under TMPDIR, removed).
    let left: Vec<_> = std::fs::read_dir(empty.path()).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_runtime_without_the_executable_bit_is_one_message_and_exit_2() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("my-runtime");
    std::fs::write(&runtime, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o644)).unwrap();
    let output = killpoint().arg("certify").arg("--runtime").arg(&runtime).output().unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert_eq!(stdout, "", "nothing ran");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("is not executable (mode 644)"), "{stderr}");
}

#[test]
fn an_unknown_broken_variant_is_one_message_naming_the_known_ones() {
    let output = killpoint()
        .args(["certify", "--runtime"])
        .arg(reference_runtime())
        .args(["--", "--broken", "blind-retyr"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("did you mean `blind-retry`?"), "{stderr}");
    assert!(stderr.contains("`fresh-key`"), "{stderr}");
}

#[test]
fn version_help_and_suggestions() {
    let output = killpoint().arg("--version").output().unwrap();
    assert_eq!(text(&output).0, format!("killpoint {}\n", env!("CARGO_PKG_VERSION")));
    let output = killpoint().args(["help", "run"]).output().unwrap();
    let (stdout, _) = text(&output);
    assert!(output.status.success());
    assert!(stdout.contains("Usage: killpoint run") && stdout.contains("examples:"), "{stdout}");
    let output = killpoint().args(["certify", "--no-prob"]).output().unwrap();
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr.contains("'--no-probe'"), "{stderr}");
    let output = killpoint().args(["completions", "bash"]).output().unwrap();
    assert!(output.status.success() && text(&output).0.contains("killpoint"));
}

#[test]
fn check_passes_the_shipped_scenarios_and_points_at_a_mistake() {
    let output = killpoint().arg("check").arg(repository().join("scenarios")).output().unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "description = \"x\"\ndeadline_seconds = 0\n[[operation]]\nid = \"a\"\ntool = \"charge_card\"\nexpect = \"succeeded\"\n",
    )
    .unwrap();
    let output = killpoint().arg("check").arg(&bad).output().unwrap();
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr.starts_with(&format!("{}:2:20: `deadline_seconds`", bad.display())), "{stderr}");
}

#[test]
fn list_prints_the_tables_from_the_code() {
    for (table, word) in [("boundaries", "after_dispatch"), ("tools", "charge_card"), ("invariants", "at_most_once")] {
        let output = killpoint().args(["list", table]).output().unwrap();
        assert!(output.status.success());
        assert!(text(&output).0.contains(word), "{table}");
    }
    let output = killpoint().args(["list", "variants", "--runtime"]).arg(reference_runtime()).output().unwrap();
    assert!(output.status.success());
    assert!(text(&output).0.contains("blind-retry"));
}

#[test]
fn run_proves_the_catches_of_its_scenario_on_the_reference_runtime() {
    let output = killpoint()
        .arg("run")
        .arg(repository().join("scenarios/after_submit.toml"))
        .arg("--runtime")
        .arg(reference_runtime())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("caught: --broken ack-before-durable violates intent_durable"), "{stdout}");
    assert!(stdout.contains("caught: --broken submit-upsert violates idempotent_submission"), "{stdout}");
}

#[test]
fn certify_without_the_probe_reports_an_unseeable_kill_as_partial_not_as_a_failure() {
    // An exact `after_dispatch` kill and an `after_provider_success` kill on one operation: without
    // the probe the second has no outside point, and must not pre-empt the first.
    let output = killpoint()
        .args(["certify", "--no-probe", "--filter", "dispatch_then_success", "--runtime"])
        .arg(reference_runtime())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("0 passed, 1 partial, 0 failed"), "{stdout}");
}

#[test]
fn a_runtime_that_exits_at_start_has_its_last_output_printed_once_and_knock_ons_folded() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("exits");
    std::fs::write(&runtime, "#!/bin/sh\necho 'fatal: no database' >&2\nexit 3\n").unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o755)).unwrap();
    let output = killpoint()
        .args(["certify", "--filter", "after_dispatch", "--runtime"])
        .arg(&runtime)
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert_eq!(stderr.matches("fatal: no database").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("✗ faults_reached").count(), 1, "{stderr}");
    assert!(stderr.contains("5 fault(s) never reached because the run stopped early"), "{stderr}");
}

/// Each scenario mistake issue 11 found blamed on the runtime is `killpoint check`'s error, at
/// its file, line and column, before anything runs.
#[test]
fn check_points_at_each_mistake_that_used_to_be_blamed_on_the_runtime() {
    const GOOD: &str = "description = \"x\"\n\n[[operation]]\nid = \"charge\"\ntool = \"charge_card\"\ndestinations = [\"ledger\"]\nexpect = \"succeeded\"\n\n[[fault]]\nat = \"after_dispatch\"\noperation = \"charge\"\n";
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("deadline_zero", format!("deadline_seconds = 0\n{GOOD}")),
        ("duplicate_destination", GOOD.replace("[\"ledger\"]", "[\"ledger\", \"ledger\"]")),
        ("effect_elsewhere", GOOD.replace("\"after_dispatch\"", "\"before_dispatch\"\neffect = true")),
        ("two_identical_faults", format!("{GOOD}\n[[fault]]\nat = \"after_dispatch\"\noperation = \"charge\"\n")),
        (
            "unknown_variant",
            format!("{GOOD}\n[[catches]]\nbroken = \"blind-retyr\"\ninvariants = [\"no_blind_retry\"]\n"),
        ),
    ];
    for (name, text) in &files {
        std::fs::write(dir.path().join(format!("{name}.toml")), text).unwrap();
    }
    let output = killpoint().arg("check").arg(dir.path()).arg("--runtime").arg(reference_runtime()).output().unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    insta::assert_snapshot!(format!("{stderr}{stdout}").replace(&dir.path().display().to_string(), "DIR"));
}

/// What varies between two runs of the same command: the runtime's path, temp dirs, ports,
/// durations and rates, and (with operations in flight together) how many requests were retried
/// and the ledger line numbers the interleaving gives. Each is masked where it stands.
fn assert_reads_the_same(name: &str, text: &str) {
    let text = text
        .replace(&reference_runtime().display().to_string(), "RUNTIME")
        .replace(&repository().join("scenarios").display().to_string(), "SCENARIOS");
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"in [0-9.]+ s \([0-9.]+ cases/s\)", "in S s (R cases/s)");
    settings.add_filter(r"127\.0\.0\.1:[0-9]+", "127.0.0.1:PORT");
    settings.add_filter(r"/[^ ]*/killpoint-[A-Za-z0-9_.-]+", "ARTIFACTS");
    settings.add_filter(r"\d+ retried request\(s\)", "N retried request(s)");
    settings.add_filter(r"#\d+ ", "#N ");
    settings.bind(|| insta::assert_snapshot!(name, text));
}

/// `killpoint certify` of the standard set on the reference runtime, as a user reads it.
#[test]
fn the_standard_certification_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let output =
        killpoint().args(["certify", "--runtime"]).arg(reference_runtime()).env("TMPDIR", dir.path()).output().unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert_reads_the_same("certify_standard", &stdout);
}

/// `killpoint explore` of a small workload: what was found and run (the per-case progress on
/// stderr comes in the order cases finish, so only the summary is compared).
#[test]
fn an_exploration_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let output = killpoint()
        .arg("explore")
        .arg(repository().join("scenarios/after_submit.toml"))
        .arg("--runtime")
        .arg(reference_runtime())
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert_reads_the_same("explore_after_submit", &stdout);
}

/// A failing `killpoint run`: the summary on stdout, and on stderr the story up to its trace (the
/// trace's interleaving of harness and runtime lines varies; the trace snapshots pin its content).
#[test]
fn a_failing_run_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let output = killpoint()
        .arg("run")
        .arg(repository().join("scenarios/after_dispatch.toml"))
        .arg("--runtime")
        .arg(reference_runtime())
        .args(["--", "--broken", "blind-retry"])
        .env("TMPDIR", dir.path())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let story = stderr.split("\n  trace (").next().expect("split yields one part at least");
    let tail: Vec<&str> = stderr.lines().filter(|l| l.starts_with("after_dispatch: ")).collect();
    assert_reads_the_same("run_failing", &format!("{stdout}---- stderr\n{story}\n----\n{}\n", tail.join("\n")));
}
