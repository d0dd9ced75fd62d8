//! The `killpoint` binary as a user meets it: installed and run from a directory with no
//! checkout, its help, its checks before anything runs, and its exit codes.
//!
//! The reference runtime is the one `cargo build --workspace` (and `cargo test --workspace`) puts
//! beside this binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::child;
use child::{output_within, text};

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

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// An executable `#!/bin/sh` script named `name` in `dir`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A marker unique to this test process and test, exported to everything a test's `killpoint`
/// starts, so a scan of /proc finds what is left of it.
fn marker(test: &str) -> String {
    format!("killpoint-cli-{}-{test}.", std::process::id())
}

/// Live processes (zombies excluded) whose environment contains `marker`.
fn running_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let dir = entry.path();
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else { continue };
        let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next());
        if matches!(state, Some('Z' | 'X') | None) {
            continue;
        }
        let environ = String::from_utf8_lossy(&std::fs::read(dir.join("environ")).unwrap_or_default()).into_owned();
        if environ.contains(marker) {
            let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
            found.push(format!("{}: {}", entry.file_name().to_string_lossy(), String::from_utf8_lossy(&cmdline)));
        }
    }
    found
}

/// Nothing carrying `marker` still runs, within `deadline` (SIGKILL is asynchronous: a killed
/// grandchild, re-parented to init, may take a moment to go). Kills what is left before failing.
fn assert_all_gone_within(deadline: Duration, marker: &str) {
    let until = Instant::now() + deadline;
    loop {
        let left = running_with(marker);
        if left.is_empty() {
            return;
        }
        if Instant::now() >= until {
            let pids = left.iter().filter_map(|p| p.split(':').next());
            let _ = Command::new("kill").arg("-KILL").args(pids).status();
            panic!("still running {deadline:?} after killpoint ended: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
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

/// Issue 32: an interpreter's missing script is one message before anything runs, not every
/// scenario failing to start with its run directory left behind.
#[test]
fn an_interpreters_missing_script_is_one_message_and_exit_2() {
    // python3 is one of the two things README says the tests need.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let python = std::env::split_paths(&path)
        .map(|dir| dir.join("python3"))
        .find(|p| p.is_file())
        .expect("python3 on PATH (README: the tests need it)");
    let python = python.to_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let output = killpoint()
        .args(["certify", "--runtime", python, "--", "no_such.py"])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert_eq!(stdout, "", "nothing ran");
    assert!(stderr.contains("`no_such.py` is not a file"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Issue 32 item 7: a runtime written for `/6` is told the option that certifies it, and with it
/// is held to `/6`'s rules: the task scenarios are not run and §12's rules are "not claimed".
#[test]
fn an_older_contract_is_certified_by_its_own_rules() {
    let runtime = repository().join("tests/fixtures/contract6_runtime.py");
    // The refused run fails, and a failing run is kept: in a temp dir of this test's own.
    let tmp = tempfile::tempdir().unwrap();
    let refused = killpoint()
        .args(["certify", "--filter", "after_dispatch", "--runtime"])
        .arg(&runtime)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&refused);
    assert_eq!(refused.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("run it with `--contract killpoint-contract/6`"), "{stdout}\n{stderr}");
    let (stdout, certificate) = certified_under("killpoint-contract/6", "_d", &runtime);
    assert!(stdout.contains("not run under killpoint-contract/6") && stdout.contains("model_decides"), "{stdout}");
    assert_eq!(certificate["contract"], "killpoint-contract/6");
    assert_eq!(rule_status(&certificate, "§12-3"), "not_claimed");
    assert_eq!(rule_status(&certificate, "§4-11"), "verified", "{certificate:#}");
}

/// `certify --contract CONTRACT --filter FILTER` of `runtime`, which must pass: its stdout and its
/// JSON certificate.
fn certified_under(contract: &str, filter: &str, runtime: &Path) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("certificate.json");
    let certified = killpoint()
        .args(["certify", "--filter", filter, "--contract", contract, "--json"])
        .arg(&json)
        .arg("--runtime")
        .arg(runtime)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&certified);
    assert!(certified.status.success(), "{stdout}\n{stderr}");
    (stdout, serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap())
}

/// The status a certificate gives the rule `id`.
fn rule_status(certificate: &serde_json::Value, id: &str) -> serde_json::Value {
    certificate["rules"].as_array().unwrap().iter().find(|r| r["id"] == id).map(|r| r["status"].clone()).unwrap()
}

/// Issue 34: a runtime written for `/8` is still certified with `--contract killpoint-contract/8`,
/// §13's rules "not claimed"; a restore, which holds a runtime to §13, is refused for it.
#[test]
fn a_contract_8_runtime_is_certified_by_its_rules_and_never_restored() {
    let runtime = repository().join("tests/fixtures/contract8_runtime.py");
    let (_, certificate) = certified_under("killpoint-contract/8", "after_dispatch", &runtime);
    assert_eq!(certificate["contract"], "killpoint-contract/8");
    assert_eq!(rule_status(&certificate, "§13-1"), "not_claimed");
    assert_eq!(rule_status(&certificate, "§4-11"), "verified", "{certificate:#}");
    let restored = killpoint()
        .args(["certify", "--filter", "after_dispatch", "--crash", "restore", "--contract", "killpoint-contract/8"])
        .arg("--runtime")
        .arg(&runtime)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&restored);
    assert_eq!(restored.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("expected killpoint-contract/9 or later, found --contract killpoint-contract/8"),
        "{stderr}"
    );
}

/// Issue 32 item 8: every scenario file that cannot be read is named, as `check` names them.
#[test]
fn certify_names_every_unreadable_scenario_file() {
    let dir = tempfile::tempdir().unwrap();
    for n in 1..=3 {
        let text =
            format!("description = \"x\"\n[[operation]]\nid = \"a\"\ntool = \"nope{n}\"\nexpect = \"succeeded\"\n");
        std::fs::write(dir.path().join(format!("bad{n}.toml")), text).unwrap();
    }
    let output = killpoint().args(["certify", "--no-standard", "--scenarios"]).arg(dir.path()).output().unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    for n in 1..=3 {
        assert!(stderr.contains(&format!("bad{n}.toml:4:8: unknown tool `nope{n}`")), "{stderr}");
    }
}

/// Issue 32 item 8: `explore --artifacts-dir` keeps the failing cases' run directories there, as
/// README says of every failing case.
#[test]
fn explore_keeps_failing_cases_under_the_artifacts_dir() {
    let dir = tempfile::tempdir().unwrap();
    let (found, kept) = (dir.path().join("found"), dir.path().join("kept"));
    let output = killpoint()
        .args(["explore", "--first-failure", "--quiet", "--jobs", "1", "--out"])
        .arg(&found)
        .arg("--artifacts-dir")
        .arg(&kept)
        .arg("--runtime")
        .arg(reference_runtime())
        .arg(repository().join("scenarios/after_dispatch.toml"))
        .args(["--", "--broken", "blind-retry"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let runs: Vec<_> = std::fs::read_dir(&kept).unwrap().flatten().map(|e| e.path()).collect();
    assert!(!runs.is_empty() && runs.iter().all(|r| r.join("rerun.sh").is_file()), "{runs:?}\n{stdout}\n{stderr}");
    // A written case's file does not hold the mode it ran in: the summary's command does.
    assert!(
        stderr.contains(" run FILE --runtime ") && stderr.contains(" -- --broken blind-retry` reruns one"),
        "{stderr}"
    );
}

/// Issue 32 item 8: piped (as in CI), explore and random say how far they have got: the rule
/// for which lines come, a line for every failing case and one for the last case. Random used to
/// say nothing between its first line and its last, 71 s apart in a user's log.
#[test]
fn piped_explore_and_random_say_how_far_they_have_got() {
    let dir = tempfile::tempdir().unwrap();
    let rule = "progress: a line per failing case, per 10 % of the cases, for the last one, and at least every 5 s";
    let explore = killpoint()
        .args(["explore", "--jobs", "1", "--out"])
        .arg(dir.path().join("found"))
        .arg("--runtime")
        .arg(reference_runtime())
        .arg(repository().join("scenarios/before_dispatch.toml"))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&explore);
    assert_eq!(explore.status.code(), Some(0), "{stdout}\n{stderr}");
    let ran = stdout.split("cases run: ").nth(1).and_then(|t| t.split(' ').next()).expect("the summary's count");
    assert!(stderr.contains(rule) && stderr.contains(&format!("  {ran}/{ran} ")), "{stdout}\n{stderr}");
    // Its failing run is kept in the temp dir: this test's own.
    let random = killpoint()
        .env("TMPDIR", dir.path())
        .args(["random", "--cases", "30", "--seed", "7", "--out"])
        .arg(dir.path().join("random"))
        .arg("--runtime")
        .arg(reference_runtime())
        .args(["--", "--broken", "blind-retry"])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&random);
    assert_eq!(random.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains(rule) && stderr.contains("/30 FAILED: shrinking it"), "{stdout}\n{stderr}");
}

/// Issue 32 item 5: kept artifacts say what they take, and past `--keep-limit` a kept run keeps
/// its evidence but not its data dir, saying so where it is and in the report.
#[test]
fn kept_runs_past_the_keep_limit_leave_their_data_dir_out() {
    let certify = |limit: &str, kept: &Path| {
        killpoint()
            .args(["certify", "--filter", "after_dispatch", "--keep-limit", limit, "--artifacts-dir"])
            .arg(kept)
            .arg("--runtime")
            .arg(reference_runtime())
            .args(["--", "--broken", "blind-retry"])
            .output()
            .unwrap()
    };
    let dir = tempfile::tempdir().unwrap();
    let (roomy, tight) = (dir.path().join("roomy"), dir.path().join("tight"));
    for (limit, kept, data) in [("1024", &roomy, true), ("0", &tight, false)] {
        let output = certify(limit, kept);
        let (stdout, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
        let runs: Vec<PathBuf> = std::fs::read_dir(kept).unwrap().flatten().map(|e| e.path()).collect();
        assert!(!runs.is_empty(), "nothing kept in {}", kept.display());
        for run in &runs {
            assert!(run.join("rerun.sh").is_file(), "{run:?}");
            assert_eq!(run.join("data").is_dir(), data, "--keep-limit {limit}: {run:?}");
            assert_eq!(run.join("data.LEFT-OUT.txt").is_file(), !data, "--keep-limit {limit}: {run:?}");
        }
        let said = format!("{stdout}{stderr}");
        assert!(said.contains(" MB: report.html"), "the size is said: {said}");
        assert_eq!(said.contains("data/ left out over the limit"), !data, "{said}");
    }
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

/// Issue 32, item 2: coverage comes from what ran. A scenario of one's own whose `[[catches]]`
/// catch `blind-retry` establishes the reconciliation rules that variant breaks when the reference
/// passes it, in `run` and in `certify` alike, instead of leaving them "needs a full pass" of a
/// standard scenario; and `run` prints what its scenario established, and counts the rest in one
/// line.
#[test]
fn a_scenario_of_ones_own_establishes_the_rules_its_catches_exercise() {
    let dir = tempfile::tempdir().unwrap();
    let own = std::fs::read_to_string(repository().join("tests/fixtures/own-scenarios/my_refund.toml")).unwrap();
    let own = format!("{own}\n[[catches]]\nbroken = \"blind-retry\"\ninvariants = [\"no_blind_retry\"]\n");
    std::fs::write(dir.path().join("my_refund.toml"), own).unwrap();

    let output = killpoint()
        .arg("run")
        .arg(dir.path().join("my_refund.toml"))
        .arg("--runtime")
        .arg(reference_runtime())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("caught: --broken blind-retry violates no_blind_retry"), "{stdout}");
    let established = stdout.lines().find(|l| l.starts_with("contract rules this run established: "));
    let established = established.unwrap_or_else(|| panic!("no line of established rules:\n{stdout}"));
    for rule in ["§4-10", "§4-11"] {
        assert!(established.split([' ', ',']).any(|w| w == rule), "{rule} not established: {established}");
    }
    assert!(!established.split([' ', ',']).any(|w| w == "§5-1"), "no_blind_retry does not check §5-1: {established}");
    let rest = stdout.lines().filter(|l| l.starts_with("the other ") && l.contains("not exercised by this scenario"));
    assert_eq!(rest.count(), 1, "the rest in one line:\n{stdout}");
    assert!(!stdout.contains("needs a full pass"), "{stdout}");

    let json = dir.path().join("own.json");
    let output = killpoint()
        .args(["certify", "--no-standard", "--scenarios"])
        .arg(dir.path())
        .arg("--json")
        .arg(&json)
        .arg("--runtime")
        .arg(reference_runtime())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let certificate: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let status = |id: &str| {
        let rules = certificate["rules"].as_array().expect("the certificate's rules");
        rules.iter().find(|r| r["id"] == id).map(|r| r["status"].as_str().unwrap_or_default().to_owned())
    };
    assert_eq!(status("§4-10").as_deref(), Some("verified"), "{stdout}");
    assert_eq!(status("§6-4").as_deref(), Some("not_exercised"), "nothing of my_refund exercises backoff: {stdout}");
}

/// A runtime that ignores `--list-broken` and serves (here: sleeps) does not hold `killpoint run`
/// up for as long as it lives: the call has a deadline, its process group is killed and reaped,
/// and the reason is said once. The list's deadline (5 s) is what is tested; the incarnation's
/// ready deadline is not, so it is the shortest `--ready-timeout` (1 s, not the default 10 s).
#[test]
fn a_runtime_that_ignores_list_broken_does_not_hang_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = marker("silent");
    let silent = script(dir.path(), "silent.sh", "sleep 600\n");
    let mut command = killpoint();
    command
        .arg("run")
        .arg(repository().join("scenarios/after_dispatch.toml"))
        .arg("--runtime")
        .arg(&silent)
        .args(["--ready-timeout", "1"])
        .env("TMPDIR", dir.path())
        .env("KILLPOINT_CLI_TEST_MARKER", &marker)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The list's deadline (5 s) and one incarnation's ready deadline (1 s), with room for a busy
    // machine; without a deadline the run took as long as the runtime's `sleep 600`.
    let output = output_within(command, Duration::from_secs(60), "`killpoint run` with a silent runtime");
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let within = "did not print `KILLPOINT_READY {…}` on stdout within 1s";
    assert!(format!("{stdout}{stderr}").contains(within), "the ready deadline was not 1 s:\n{stdout}\n{stderr}");
    let reason = "--list-broken` did not finish within 5 s";
    assert_eq!(format!("{stdout}{stderr}").matches(reason).count(), 1, "{stdout}\n{stderr}");
    assert!(stdout.contains("[[catches]] not run"), "{stdout}");
    assert_all_gone_within(Duration::from_secs(5), &marker);
}

/// `--artifacts-dir DIR` that does not exist yet is made, as `mkdir -p` would (like `--out`), and
/// the runs keep their directories in it; one that cannot be made is one message, exit 2, before
/// anything runs.
#[test]
fn a_missing_artifacts_dir_is_made_and_one_that_cannot_be_is_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let wanted = dir.path().join("not/yet/there");
    let output = killpoint()
        .args(["certify", "--filter", "dispatch_then_success", "--keep-artifacts", "--artifacts-dir"])
        .arg(&wanted)
        .arg("--runtime")
        .arg(reference_runtime())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let kept: Vec<String> =
        std::fs::read_dir(&wanted).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(kept.len() == 1 && kept[0].starts_with("killpoint-dispatch_then_success-"), "{kept:?}");

    let in_the_way = dir.path().join("a-file");
    std::fs::write(&in_the_way, "").unwrap();
    let output = killpoint()
        .args(["certify", "--filter", "dispatch_then_success", "--artifacts-dir"])
        .arg(in_the_way.join("runs"))
        .arg("--runtime")
        .arg(reference_runtime())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert_eq!(stdout, "", "nothing ran");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&format!("--artifacts-dir {}", in_the_way.join("runs").display())), "{stderr}");
}

/// A report flag naming a directory that does not exist is one message, exit 2, before anything
/// runs (not found only once the whole run is over).
#[test]
fn a_report_into_a_missing_directory_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir/report.json");
    let output = killpoint()
        .args(["certify", "--filter", "dispatch_then_success", "--junit"])
        .arg(dir.path().join("junit.xml"))
        .arg("--json")
        .arg(&missing)
        .arg("--runtime")
        .arg(reference_runtime())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert_eq!(stdout, "", "nothing ran");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(&format!("--json {}", missing.display())), "{stderr}");
    assert!(stderr.contains("does not exist"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "written although refused: {left:?}");
}

/// One report that cannot be written once the run is over (`/dev/full`: a full disk) does not
/// stop the others: each is written, the failure said, and the exit status is 2.
#[test]
fn a_report_that_fails_to_write_does_not_stop_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let (junit, html) = (dir.path().join("junit.xml"), dir.path().join("report.html"));
    let output = killpoint()
        .args(["certify", "--filter", "dispatch_then_success", "--json", "/dev/full", "--junit"])
        .arg(&junit)
        .arg("--html")
        .arg(&html)
        .arg("--runtime")
        .arg(reference_runtime())
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("cannot write the JSON certificate to /dev/full"), "{stderr}");
    assert!(
        junit.is_file() && html.is_file(),
        "junit {}, html {}:\n{stdout}\n{stderr}",
        junit.is_file(),
        html.is_file()
    );
    assert!(stdout.contains("JUnit report written to") && stdout.contains("HTML report written to"), "{stdout}");
}

/// Each subcommand with its stdout, then its stderr, closed before it writes a byte (as `| head -1`
/// closes it): no panic, the verdict's exit status, and the reports named by flags written.
#[test]
fn a_closed_stdout_or_stderr_neither_panics_nor_loses_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let (json, html) = (dir.path().join("r.json"), dir.path().join("r.html"));
    let scenarios = repository().join("scenarios");
    let runtime = reference_runtime();
    let certify: Vec<&std::ffi::OsStr> = vec![
        "certify".as_ref(),
        "--filter".as_ref(),
        "dispatch_then_success".as_ref(),
        "--json".as_ref(),
        json.as_ref(),
        "--html".as_ref(),
        html.as_ref(),
        "--runtime".as_ref(),
        runtime.as_ref(),
    ];
    let explore_file = scenarios.join("after_submit.toml");
    let explore: Vec<&std::ffi::OsStr> =
        vec!["explore".as_ref(), explore_file.as_ref(), "--runtime".as_ref(), runtime.as_ref()];
    let check: Vec<&std::ffi::OsStr> = vec!["check".as_ref(), scenarios.as_ref()];
    let completions: Vec<&std::ffi::OsStr> = vec!["completions".as_ref(), "bash".as_ref()];
    let mut wrong = Vec::new();
    for closed in ["stdout", "stderr"] {
        for args in [&certify, &explore, &check, &completions] {
            let (_, _) = (std::fs::remove_file(&json), std::fs::remove_file(&html));
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader); // closed before the child exists: its first write fails
            let mut command = killpoint();
            command.args(args).env("TMPDIR", dir.path());
            let (stdout, stderr) = match closed {
                "stdout" => (Stdio::from(writer), Stdio::piped()),
                _ => (Stdio::piped(), Stdio::from(writer)),
            };
            command.stdout(stdout).stderr(stderr);
            let what = format!("`killpoint {}` with {closed} closed", args[0].display());
            let output = output_within(command, Duration::from_secs(120), &what);
            let (out, err) = text(&output);
            let panicked = out.contains("panicked") || err.contains("panicked");
            if panicked || output.status.code() != Some(0) {
                let first = err.lines().find(|l| l.contains("panicked") || l.contains("failed")).unwrap_or_default();
                wrong.push(format!("{what}: {}, {first}", output.status));
            }
            if args[0] == "certify" && !(json.is_file() && html.is_file()) {
                wrong.push(format!("{what}: json written {}, html written {}", json.is_file(), html.is_file()));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let (_, _) = (std::fs::remove_file(&json), std::fs::remove_file(&html));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "the runs left behind: {left:?}");
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
    settings.add_filter(r"\(\d+\.\d MB: ", "(SIZE: ");
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
    assert_reads_the_same("certify_standard", &without_chance_retries(&stdout));
    let readme = readme_checklist();
    assert_eq!(readme.len(), 9, "the seed's eight questions and its hosting advice in README.md: {readme:?}");
    assert_eq!(readme, checklist_answers(&stdout), "README.md's checklist table against `certify`'s");
}

/// Scenarios whose fault makes the reference runtime retry in every run: each must be in the
/// checklist's "from logs" evidence, and is in the snapshot.
const RETRIED_EVERY_RUN: [&str; 11] = [
    "after_delivery_send",
    "after_dispatch",
    "after_provider_success",
    "attempt_bound",
    "concurrent_wave",
    "delivery_dead_letter",
    "lookup_unavailable",
    "model_decides",
    "monitoring_signals",
    "provider_unavailable",
    "revoked_destination",
];

/// The certification's output without the "from logs" evidence of scenarios that retry only by
/// the interleaving: where another operation is in flight beside the faulted one, the kill can
/// catch it between its request and its record (restore_before_the_revocation's ticket did, once
/// in CI under load), and the runtime retries it. Such a line is dropped only in its passing form;
/// one that says a retry went unlogged stays and fails the snapshot.
fn without_chance_retries(stdout: &str) -> String {
    const PASSING: &str = " retried request(s), each with its retry line";
    let by_chance = |line: &str| {
        let Some((name, rest)) = line.trim_start().split_once(": ") else { return false };
        let count = rest.strip_suffix(PASSING).map(|n| n.parse::<u32>().is_ok());
        line.starts_with("             ") && count == Some(true) && !RETRIED_EVERY_RUN.contains(&name)
    };
    stdout.lines().filter(|l| !by_chance(l)).map(|l| format!("{l}\n")).collect()
}

/// (question, answer) of each row of README.md's checklist table.
fn readme_checklist() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(repository().join("README.md")).unwrap();
    let rows = readme.lines().skip_while(|l| !l.starts_with("| question | answer |")).skip(2);
    rows.take_while(|l| l.starts_with('|'))
        .map(|row| {
            let cells: Vec<&str> = row.split(" | ").collect();
            (cells[0].trim_start_matches("| ").to_owned(), cells[1].to_owned())
        })
        .collect()
}

/// (question, answer) of each line of certify's checklist: `  <answer>  <question>?`.
fn checklist_answers(stdout: &str) -> Vec<(String, String)> {
    let lines = stdout.lines().skip_while(|l| *l != "the seed's acceptance checklist:").skip(1);
    lines
        .filter(|l| l.starts_with("  ") && !l.starts_with("   ") && l.ends_with('?'))
        .map(|l| {
            let (answer, question) = l.trim_start().split_once("  ").expect("an answer, then its question");
            (question.trim().to_owned(), answer.to_owned())
        })
        .collect()
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

/// A workload that fails with no kill at all (the record run): that run is the case `no_kill`,
/// counted as run as well as failed — the summary once said "cases run: 56 (…, 57 failed)".
#[test]
fn a_failing_record_run_is_counted_as_a_case_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = killpoint();
    command
        .arg("explore")
        .arg(repository().join("scenarios/provider_rejects.toml"))
        .args(["--first-failure", "--quiet", "--out"])
        .arg(dir.path().join("found"))
        .arg("--runtime")
        .arg(reference_runtime())
        .args(["--", "--broken", "retry-on-4xx"])
        .env("TMPDIR", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = output_within(command, Duration::from_secs(120), "`killpoint explore` of a failing record run");
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let summary = stdout.lines().find(|l| l.contains("cases run: ")).unwrap_or_else(|| panic!("no summary:\n{stdout}"));
    assert!(summary.contains("cases run: 1 (0 passed, 0 partial, 0 not reached, 1 failed)"), "{summary}");
}

/// Two operations in flight together, explored at depth 2: which points they pass and which share
/// a crash state is the interleaving's, so the summary says what was compared and what came from
/// one run, and its counts add up to the points found.
#[test]
fn an_exploration_with_operations_in_flight_together_says_what_depends_on_the_interleaving() {
    let dir = tempfile::tempdir().unwrap();
    let workload = dir.path().join("pair.toml");
    let op = |id: &str| {
        format!(
            "[[operation]]\nid = \"{id}\"\ntool = \"set_status\"\ndestinations = []\nexpect = \"succeeded\"\nwave = 1\n"
        )
    };
    std::fs::write(&workload, format!("description = \"two at once\"\n{}{}", op("a"), op("b"))).unwrap();
    let mut command = killpoint();
    command
        .arg("explore")
        .arg(&workload)
        .args(["--depth", "2", "--quiet", "--jobs", "2", "--out"])
        .arg(dir.path().join("found"))
        .arg("--runtime")
        .arg(reference_runtime())
        .env("TMPDIR", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = output_within(command, Duration::from_secs(300), "`killpoint explore` of two operations at depth 2");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let number_after = |line: &str, before: &str| -> usize {
        let rest = line.split(before).nth(1).unwrap_or_else(|| panic!("no `{before}` in: {line}"));
        rest.trim_start().split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    let number_before = |line: &str, after: &str| -> usize {
        let head = line.split(after).next().unwrap_or_default().trim_end();
        let digits: String = head.chars().rev().take_while(|c| c.is_ascii_digit()).collect();
        digits
            .chars()
            .rev()
            .collect::<String>()
            .parse()
            .unwrap_or_else(|_| panic!("no number before `{after}` in: {line}"))
    };
    let found = stdout.lines().find(|l| l.starts_with("crash points found:")).expect("a summary line");
    let depth2 = number_before(found, " at depth 2");
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("operations in flight together:"))
        .unwrap_or_else(|| panic!("the summary says nothing of the interleaving:\n{stdout}"));
    assert!(line.contains("depth 1 from 2 record runs"), "{line}");
    assert!(line.contains("depth 2 from one run of each of"), "{line}");
    let own = number_before(line, " point(s) of the killed operation's own recovery");
    let beside = number_before(line, " of operations beside it");
    assert_eq!(own + beside, depth2, "the depth-2 points, own and beside, add up to those found:\n{stdout}");
    // Each depth-1 case is killed at one of the workload's own points: its own recovery follows.
    assert!(own > 0 && beside > 0, "{stdout}");
    let pruned = number_after(found, "pruned:");
    assert!(number_before(line, " pruned for that one run") <= pruned, "{stdout}");
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

/// `--services FILE` is read as the option is parsed, on every command that runs a runtime: a
/// mistake is exit 2 naming the file, line and column, before anything runs.
#[test]
fn a_services_file_with_a_mistake_is_named_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("services.toml");
    std::fs::write(&bad, "[[service]]\nname = \"kv\"\ncommand = []\n").unwrap();
    for command in ["certify", "run", "explore", "random", "bench"] {
        let mut args = vec![command];
        if command == "run" || command == "explore" {
            args.push("after_dispatch");
        }
        let output = killpoint().args(&args).arg("--services").arg(&bad).output().unwrap();
        let (_, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(2), "{command}: {stderr}");
        let expected = format!("{}:3:11: expected command = [", bad.display());
        assert!(stderr.contains(&expected), "{command}: expected {expected:?} in {stderr}");
    }
}
