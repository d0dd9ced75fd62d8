//! What a person and a CI system get from a certification: a failure's artifacts rerun the same
//! failure, the HTML report draws every scenario's timeline and marks violations (checked in a
//! real browser where one is installed), and the JUnit report has one case per cell.

use killpoint::report::certificate::Certificate;
use killpoint::report::certify::certify;
use killpoint::report::outcome::ScenarioOutcome;
use killpoint::{RunOptions, Scenario, Target};
use std::path::{Path, PathBuf};
use std::process::Command;

fn scenario(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(format!("{name}.toml"));
    Scenario::load(&path).expect("shipped scenarios parse")
}

fn runtime(broken: Option<&str>) -> Target {
    let args = broken.map(|b| vec!["--broken".to_owned(), b.to_owned()]).unwrap_or_default();
    Target { program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")), args }
}

/// A private root for run directories, removed with everything in it when dropped.
fn root() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("report-test-").tempdir().unwrap()
}

fn in_root(root: &tempfile::TempDir) -> RunOptions {
    RunOptions { artifacts_root: Some(root.path().to_owned()), ..RunOptions::default() }
}

/// The violated invariants of a certification, each once, sorted.
fn violated(outcomes: &[ScenarioOutcome]) -> Vec<String> {
    let mut names: Vec<String> = outcomes
        .iter()
        .filter_map(|o| o.verdict.as_ref().ok())
        .flat_map(|v| v.violations.iter().map(|x| x.invariant.as_str().to_owned()))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// `fresh-delivery-key` fails `after_delivery_send`: its run directory holds what reproduces it.
fn failing(root: &tempfile::TempDir) -> Vec<ScenarioOutcome> {
    let outcomes =
        certify(&[scenario("after_delivery_send")], &runtime(Some("fresh-delivery-key")), &in_root(root), false, 1);
    assert!(!violated(&outcomes).is_empty(), "fresh-delivery-key must fail after_delivery_send");
    outcomes
}

#[test]
fn a_failures_artifacts_hold_the_evidence_and_rerun_sh_reproduces_the_same_failure() {
    let root = root();
    let outcomes = failing(&root);
    let dir = outcomes[0].artifacts.clone().expect("a failure keeps its artifacts");
    assert!(dir.starts_with(root.path()), "--artifacts-dir chooses where: {}", dir.display());
    for file in [
        "after_delivery_send.toml",
        "trace.jsonl",
        "ledger/provider.jsonl",
        "ledger/policy.jsonl",
        "ledger/consumer-ledger.jsonl",
        "ledger/consumer-mailer.jsonl",
        "logs/incarnation-1.stdout.log",
        "logs/incarnation-1.stderr.log",
        "logs/incarnation-2.stderr.log",
        "data/runtime.sqlite3",
        "report.html",
        "rerun.sh",
    ] {
        assert!(dir.join(file).is_file(), "{file} missing from {}", dir.display());
    }
    // Every line of the trace and of each ledger is one JSON object.
    for file in ["trace.jsonl", "ledger/provider.jsonl", "ledger/consumer-ledger.jsonl"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(!text.is_empty(), "{file} is empty");
        for line in text.lines() {
            let value: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{file}: not JSON ({e}): {line}"));
            assert!(value["seq"].is_u64(), "{file}: no seq in {line}");
        }
    }
    let rerun = outcomes[0].rerun.clone().expect("a failure names its rerun.sh");
    assert_eq!(rerun, dir.join("rerun.sh"));
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&rerun).unwrap().permissions());
    assert_eq!(mode & 0o111, 0o111, "rerun.sh must be executable");

    // The killpoint CLI is built beside the runtime by `cargo test --workspace`.
    let json = root.path().join("rerun.json");
    let output = Command::new(&rerun)
        .arg("--json")
        .arg(&json)
        .arg("--artifacts-dir")
        .arg(root.path())
        .output()
        .expect("rerun.sh runs (the killpoint CLI must be built: cargo build --workspace)");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "rerun.sh must fail as the run did:\n{stderr}");
    assert!(stderr.contains("rerun exactly this case with: "), "the text output names the rerun command:\n{stderr}");
    let again: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let mut names: Vec<String> = again["scenarios"][0]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["invariant"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names.dedup();
    assert_eq!(names, violated(&outcomes), "rerun.sh must reproduce the same failure");
}

/// The `N` of an evidence line `#N …`.
fn evidence_number(line: &str) -> Option<u64> {
    line.strip_prefix('#')?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// `fresh-delivery-key` makes the runtime retry deliveries (a retry line on its stderr before
/// each receipt it leads to) and is caught by the receipts: every row of the kept `trace.jsonl`
/// has its own number, and each `#N` of the evidence names exactly one row, the ledger's.
#[test]
fn every_row_of_a_failures_timeline_has_its_own_number_and_the_evidence_names_one() {
    let root = root();
    let outcomes = failing(&root);
    let dir = outcomes[0].artifacts.clone().expect("a failure keeps its artifacts");
    let text = std::fs::read_to_string(dir.join("trace.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(rows.iter().any(|r| r["kind"] == "retry"), "the runtime's retry lines are on the timeline:\n{text}");
    let numbered = |n: u64| rows.iter().filter(|r| r["seq"].as_u64() == Some(n)).collect::<Vec<_>>();
    for row in &rows {
        let n = row["seq"].as_u64().expect("every row has a number");
        assert_eq!(numbered(n).len(), 1, "#{n} names more than one row of trace.jsonl: {:?}", numbered(n));
    }
    let verdict = outcomes[0].verdict.as_ref().expect("a verdict");
    let evidence: Vec<&String> = verdict.violations.iter().flat_map(|v| &v.evidence).collect();
    assert!(evidence.iter().any(|e| evidence_number(e).is_some()), "the evidence quotes ledger lines: {evidence:?}");
    for line in evidence {
        if let Some(n) = evidence_number(line) {
            let rows = numbered(n);
            assert_eq!(rows.len(), 1, "evidence `{line}` names {} rows of the timeline: {rows:?}", rows.len());
            assert_eq!(rows[0]["kind"], "plain", "evidence `{line}` names the ledger's row, not a log line");
        }
    }
}

#[test]
fn a_passing_runs_html_report_draws_every_timeline_with_kills_and_restarts() {
    let root = root();
    let scenarios = [scenario("after_dispatch"), scenario("after_result_write")];
    let target = runtime(None);
    let outcomes = certify(&scenarios, &target, &in_root(&root), false, 2);
    assert!(violated(&outcomes).is_empty(), "the reference runtime passes");
    assert!(outcomes.iter().all(|o| o.artifacts.is_none()), "a pass keeps nothing without --keep-artifacts");
    let html = killpoint::report::html::render(&Certificate::new(&target, &outcomes), &outcomes);
    for s in &scenarios {
        assert!(html.contains(&format!("<section id=\"s-{}\"", s.name)), "no section for {}", s.name);
        assert!(html.contains(&format!("href=\"#s-{}\"", s.name)), "the matrix links {}", s.name);
    }
    assert_eq!(html.matches("<svg class=\"timeline\"").count(), 2, "one timeline per scenario");
    assert!(html.matches("<g class=\"kill\">").count() >= 2, "each scenario's kill is drawn");
    assert!(html.matches("<g class=\"restart\">").count() >= 2, "each scenario's restart is drawn");
    assert!(!html.contains("violation-marker"), "a pass marks no violation");
    // The runtime's structured retry lines are on the timeline: after_dispatch retries the
    // execution of the charge the provider never applied (its lookup found nothing).
    assert!(html.contains("<g class=\"retry\">"), "retries drawn");
    assert!(
        html.contains(
            "runtime   log: execution retry of charge-not-applied, attempt 2: lookup: attempt 1 had no effect"
        ),
        "{html}"
    );
    // Self-contained: no script, nothing fetched, links only within the page.
    for forbidden in ["<script", "src=", "<link", "@import", "href=\"http"] {
        assert!(!html.contains(forbidden), "the report must be self-contained: found `{forbidden}`");
    }
}

/// The failing report in headless Chromium: the violation is marked in the rendered DOM, and a
/// screenshot of it is saved (as docs/report-failure.png with KILLPOINT_UPDATE_SCREENSHOT=1).
#[test]
fn a_failing_report_marks_the_violation_in_headless_chromium() {
    let Some(chromium) = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()))
    else {
        // A skip would report `ok` for a check that never ran: fail, saying how to get it.
        panic!(
            "expected `chromium` (or `chromium-browser`) on PATH for the HTML report's browser test, found neither; \
             install it with `sudo apt-get install chromium` (Debian; `.ci/run` does this)"
        );
    };
    let root = root();
    let outcomes = failing(&root);
    let dir = outcomes[0].artifacts.clone().unwrap();
    let report = dir.join("report.html");
    let profile = root.path().join("chromium-profile");
    let browse = |extra: &[&str]| {
        let output = Command::new("timeout")
            .arg("120")
            .arg(chromium)
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg(format!("file://{}", report.display()))
            .output()
            .expect("chromium runs");
        assert!(output.status.success(), "chromium failed: {}", String::from_utf8_lossy(&output.stderr));
        output
    };
    let dom = String::from_utf8_lossy(&browse(&["--dump-dom"]).stdout).into_owned();
    for invariant in violated(&outcomes) {
        assert!(
            dom.contains(&format!("class=\"violation-marker\" data-invariant=\"{invariant}\"")),
            "the timeline must mark the {invariant} violation; DOM:\n{dom}"
        );
        assert!(dom.contains(&format!("class=\"violation\" data-invariant=\"{invariant}\"")), "{invariant} explained");
    }
    assert!(dom.contains("<g class=\"kill\">") && dom.contains("<g class=\"restart\">"), "kills and restarts drawn");
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-failure.png");
    // Tall enough for the matrix, the checklist and the failing scenario's timeline.
    browse(&[&format!("--screenshot={}", shot.display()), "--window-size=1300,1900"]);
    assert!(std::fs::metadata(&shot).is_ok_and(|m| m.len() > 10_000), "no screenshot at {}", shot.display());
    if std::env::var_os("KILLPOINT_UPDATE_SCREENSHOT").is_some() {
        std::fs::copy(&shot, Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report-failure.png")).unwrap();
    }
}

/// The `message` attributes of every `<failure>` in a JUnit report.
fn failure_messages(xml: &str) -> Vec<String> {
    xml.match_indices("<failure message=\"")
        .map(|(i, m)| xml[i + m.len()..].split('"').next().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn junit_has_one_case_per_cell_names_each_invariant_once_and_skips_what_was_not_exercised() {
    let root = root();
    let failing = failing(&root);
    let xml = Certificate::new(&runtime(Some("fresh-delivery-key")), &failing).to_junit();
    // after_delivery_send has two faults: two cells and the workload.
    assert!(xml.contains("<testsuite name=\"killpoint certify\" tests=\"3\""), "{xml}");
    assert!(xml.contains("name=\"after_delivery_send charge (non_idempotent_with_lookup)\""), "{xml}");
    assert!(xml.contains("classname=\"killpoint.after_delivery_send\""), "{xml}");
    let messages = failure_messages(&xml);
    assert_eq!(messages.len(), 2, "one failure per failing cell: {xml}");
    for message in &messages {
        let names: Vec<&str> = message.trim_start_matches("violated: ").split(", ").collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(names.len(), unique.len(), "an invariant named twice: {message}");
        assert_eq!(unique, ["delivered_once", "stable_delivery_key"], "{message}");
    }
    assert!(xml.contains("type=\"stable_delivery_key, delivered_once\""), "{xml}");
    assert!(xml.contains("<testcase name=\"workload\"") && xml.contains("time=\""), "{xml}");

    // Without the probe, a boundary only the probe reaches is skipped, never passed.
    let target = runtime(None);
    let black_box = RunOptions { probe: false, ..in_root(&root) };
    let outcomes = certify(&[scenario("after_result_write")], &target, &black_box, false, 1);
    let xml = Certificate::new(&target, &outcomes).to_junit();
    assert!(
        xml.contains("<skipped message=\"not exercised: only the probe stops a runtime at after_result_write"),
        "{xml}"
    );
    assert!(xml.contains("skipped=\"2\"") && xml.contains("failures=\"0\""), "{xml}");
}

/// The value of one sample line (`name{labels} value`) of a Prometheus text, if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn the_reference_runtimes_metrics_count_a_kill_a_reconciliation_and_a_dead_letter() {
    let (verdict, run) =
        killpoint::run_scenario(&scenario("monitoring_signals"), &runtime(None), &RunOptions::default()).unwrap();
    assert!(verdict.passed(), "{:?}", verdict.violations);
    assert_eq!(run.incarnations, 2, "the scenario kills once");
    let text = match &run.metrics {
        Some(Ok(text)) => text.clone(),
        other => panic!("the reference runtime declares \"metrics\": true and serves them; got {other:?}"),
    };
    // Counted across the restart: the dead letter and the lookup happened in different incarnations.
    for (series, value) in [
        ("killpoint_dead_letters{destination=\"mailer\"}", 1.0),
        ("killpoint_dead_letters{destination=\"ledger\"}", 0.0),
        ("killpoint_reconciliations_total{outcome=\"found\"}", 1.0),
        ("killpoint_reconciliations_total{outcome=\"not_found\"}", 0.0),
        ("killpoint_refusals_total{reason=\"policy\"}", 0.0),
        ("killpoint_executions{state=\"succeeded\"}", 2.0),
        ("killpoint_executions{state=\"unknown\"}", 0.0),
        ("killpoint_execution_age_seconds{state=\"unknown\"}", 0.0),
        ("killpoint_delivery_age_seconds{destination=\"ledger\"}", 0.0),
        ("killpoint_confirmation_to_ack_seconds_count", 1.0),
    ] {
        assert_eq!(sample(&text, series), Some(value), "{series} in:\n{text}");
    }
    // The logs say what each retry was: the mailer's resend is a delivery retry, not an execution.
    let stderr = std::fs::read_to_string(run.artifacts_path().join("logs/stderr.log")).unwrap();
    assert!(
        stderr.contains(r#"{"log":"retry","retry":"delivery","operation_id":"mail","destination":"mailer","attempt":2,"reason":"HTTP 503"#),
        "{stderr}"
    );
    assert!(!stderr.contains(r#""retry":"execution""#), "nothing was executed twice: {stderr}");
    for signal in ["killpoint_execution_age_seconds{state=\"dispatched\"}", "killpoint_confirmation_to_ack_seconds_sum"]
    {
        assert!(sample(&text, signal).is_some(), "{signal} missing from:\n{text}");
    }
}
