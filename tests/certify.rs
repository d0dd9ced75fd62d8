//! The certification path end to end, through the library the CLI is a thin shell over: a binary
//! that ignores the contract fails fast with an explanation, and the JSON and JUnit certificates
//! keep their documented shape (snapshots, volatile fields redacted).

use killpoint::report::certificate::Certificate;
use killpoint::report::certify::certify;
use killpoint::{RunOptions, Scenario, Target, run_scenario};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn scenario(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(format!("{name}.toml"));
    Scenario::load(&path).expect("shipped scenarios parse")
}

fn reference() -> Target {
    Target { program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")), args: Vec::new() }
}

/// Processes whose command line contains `needle` (read from /proc).
fn processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(needle) {
                found.push(format!("{}: {cmdline}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

#[test]
fn a_binary_that_exits_at_once_fails_with_what_was_expected() {
    let target = Target { program: PathBuf::from("/bin/true"), args: Vec::new() };
    let (verdict, run) = run_scenario(&scenario("before_dispatch"), &target, &RunOptions::default()).unwrap();
    let reason = run.aborted.as_deref().expect("the run must stop");
    assert!(reason.contains("exited (exit code 0) before printing `KILLPOINT_READY {…}` on stdout"), "{reason}");
    assert!(!verdict.passed());
}

#[test]
fn a_binary_that_never_becomes_ready_is_stopped_at_the_deadline_and_killed() {
    // A unique argument, so the check below finds this test's process and no other.
    let marker = format!("{}", 900_000 + std::process::id());
    let target = Target { program: PathBuf::from("/bin/sleep"), args: vec![marker.clone()] };
    let options = RunOptions { ready_timeout: Duration::from_millis(300), ..RunOptions::default() };
    let (_, run) = run_scenario(&scenario("before_dispatch"), &target, &options).unwrap();
    let reason = run.aborted.as_deref().expect("the run must stop");
    assert!(reason.contains("did not print `KILLPOINT_READY {…}` on stdout within 300ms"), "{reason}");
    assert!(reason.contains("last lines of the runtime's stderr.log"), "{reason}");
    // SIGKILL is asynchronous; reaping the killed child is what `run_scenario` waits for, so by
    // now the process is gone, not just signalled.
    let left = processes_with(&format!("sleep {marker}"));
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn a_runtime_that_speaks_another_contract_is_refused_by_name() {
    let script = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        script.path(),
        "#!/bin/sh\necho 'KILLPOINT_READY {\"contract\":\"killpoint-contract/0\",\"api\":\"http://127.0.0.1:9\"}'\nexec sleep 30\n",
    )
    .unwrap();
    let path = script.into_temp_path();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let target = Target { program: path.to_path_buf(), args: Vec::new() };
    let (_, run) = run_scenario(&scenario("before_dispatch"), &target, &RunOptions::default()).unwrap();
    let reason = run.aborted.as_deref().expect("the run must stop");
    assert!(
        reason.contains("speaks contract `killpoint-contract/0`; this harness speaks `killpoint-contract/9`"),
        "{reason}"
    );
}

fn certificate_of(target: &Target) -> (Certificate, Vec<killpoint::report::outcome::ScenarioOutcome>) {
    let scenarios = [scenario("after_dispatch"), scenario("after_delivery_send")];
    let outcomes = certify(&scenarios, target, &RunOptions::default(), false, 2);
    (Certificate::new(target, &outcomes), outcomes)
}

#[test]
fn the_json_certificate_keeps_its_documented_shape() {
    let mut broken = reference();
    broken.args = vec!["--broken".into(), "fresh-delivery-key".into()];
    let (certificate, outcomes) = certificate_of(&broken);
    let json: serde_json::Value = serde_json::from_str(&certificate.to_json()).unwrap();
    assert_eq!(
        json["summary"]["failed"], 1,
        "fresh-delivery-key must fail after_delivery_send only: {:#}",
        json["scenarios"]
    );
    for o in &outcomes {
        if let Some(path) = &o.artifacts {
            let _ = std::fs::remove_dir_all(path);
        }
    }
    insta::assert_json_snapshot!("certificate_json", json, {
        ".runtime.path" => "[runtime]",
        // The checkout's location is not part of the shape: keep the file's name only.
        ".scenarios[].file" => insta::dynamic_redaction(|value, _| {
            let path = value.as_str().unwrap_or_default();
            format!("[checkout]/scenarios/{}", Path::new(path).file_name().unwrap_or_default().to_string_lossy())
        }),
        ".runtime.sha256" => "[sha256]",
        ".scenarios[].sha256" => "[sha256]",
        ".scenarios[].duration_ms" => "[ms]",
        ".scenarios[].artifacts" => "[kept artifacts]",
        ".scenarios[].violations[].evidence" => "[ledger lines]",
        ".scenarios[].violations[].message" => "[message]",
        ".scenarios[].story" => "[story]",
    });
}

#[test]
fn the_junit_report_keeps_its_shape() {
    let (certificate, _) = certificate_of(&reference());
    let xml = certificate.to_junit();
    insta::with_settings!({filters => vec![
        (r#"time="[0-9.]+""#, r#"time="[time]""#),
        (r#"value="[0-9a-f]{64}""#, r#"value="[sha256]""#),
        (r#"name="runtime.path" value="[^"]*""#, r#"name="runtime.path" value="[runtime]""#),
    ]}, {
        insta::assert_snapshot!("certificate_junit", xml);
    });
}

#[test]
fn artifacts_are_private_removed_on_success_and_kept_on_failure() {
    use std::os::unix::fs::PermissionsExt;
    let (verdict, run) = run_scenario(&scenario("after_result_write"), &reference(), &RunOptions::default()).unwrap();
    assert!(verdict.passed(), "{:?}", verdict.violations);
    let path = run.artifacts_path().to_owned();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the data dir holds the runtime's state: owner only");
    assert!(path.join("data/runtime.sqlite3").is_file() && path.join("logs/stderr.log").is_file());
    drop(run);
    assert!(!path.exists(), "a passing run leaves nothing behind");

    let mut broken = reference();
    broken.args = vec!["--broken".into(), "fresh-delivery-key".into()];
    let outcomes = certify(&[scenario("after_delivery_send")], &broken, &RunOptions::default(), false, 1);
    let kept = outcomes[0].artifacts.clone().expect("a failure keeps its artifacts");
    assert!(kept.join("logs/stderr.log").is_file(), "kept at {}", kept.display());
    std::fs::remove_dir_all(&kept).unwrap();
}
