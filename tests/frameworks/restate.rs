//! `frameworks::restate::*`: examples/restate certified with Restate's server beside the worker (a
//! service on three ports: examples/restate/services.toml), with the probe. The server is the npm
//! package `@restatedev/restate-server` at the version examples/restate/package-lock.json pins,
//! installed once into `target/restate-server` (`npm ci --ignore-scripts`, under a lock as the
//! virtualenv is: `frameworks/venv.rs`). One server per trial, on RocksDB stores in the run's
//! directory.
//!
//! - `naive::after_dispatch`: fails at_most_once for `charge` (the scenario narrowed to it), and
//!   the logs show why: both incarnations ran `call_tool` in the same invocation, and the server
//!   logged its retry of that invocation ("Invocation error, retrying") — the second call was the
//!   server's replay of a `ctx.run` whose result it never journaled, not the worker's own.
//! - `corrected::after_dispatch`: passes, for `charge` (lookup) and `sms` (no lookup: paused).
//! - `corrected::server_restart` (examples/restate/server_restart.toml): the server crashed twice
//!   under the live worker, at `before_dispatch` and as the provider answers; it passes, every
//!   service fault fired, and the server came back on the same three ports.
//! - `corrected::server_restart_reconciliation` and `corrected::server_restart_delivery`
//!   (examples/restate/server_restart_*.toml, as Temporal's and DBOS's): the server crashed while
//!   the restarted worker reconciles a charge, and while the worker delivers; both pass, every
//!   service fault fired.
//! - `naive::server_restart`: fails at_most_once for `charge` and `ticket` with no kill of the
//!   worker: the restarted server replayed a step whose result it had not journaled.
//! - `machine::corrected::after_dispatch`: the machine loses power (`--crash machine`: worker and
//!   server both traced, each data dir keeps what it synced, the server started again before the
//!   worker); it passes, each kill a power loss of the server too, and
//!   `sandboxed` holds. It caught the example keeping its deployment's port in a file whose
//!   rename it had not synced: the worker came back on another port, a deployment the pinned
//!   invocations never reach. Ignored, saying why, where this machine refuses tracing.

use super::installed::within;
use super::served::worker_logs;
use super::venv::made_once;
use killpoint::model::crash::Crash;
use killpoint::run::services::Services;
use killpoint::{Happening, Invariant, RunOptions, Scenario, Target, Verdict, run_scenario};
use libtest_mimic::{Failed, Trial};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How long a process waits for another to install the server: npm downloading 220 MB.
const INSTALL_DEADLINE: Duration = Duration::from_secs(10 * 60);

/// What a trial asks of its case's run.
type Check = fn(&Case) -> Result<(), Failed>;

/// The trials, run by `python` (the frameworks' virtualenv interpreter).
pub fn trials(root: &Path, python: &Path, ignored: bool) -> Vec<Trial> {
    let cases: [(&str, &str, Crash, Check); 7] = [
        ("naive", "after_dispatch", Crash::Process, naive_after_dispatch),
        ("corrected", "after_dispatch", Crash::Process, passes),
        ("corrected", "server_restart", Crash::Process, passes),
        ("corrected", "server_restart_reconciliation", Crash::Process, passes),
        ("corrected", "server_restart_delivery", Crash::Process, passes),
        ("naive", "server_restart", Crash::Process, naive_server_restart),
        ("corrected", "after_dispatch", Crash::Machine, passes),
    ];
    let untraced = killpoint::run::traced::permitted().err();
    cases
        .into_iter()
        .map(|(version, scenario, crash, check)| {
            let case = Case { root: root.to_owned(), python: python.to_owned(), version, scenario, crash };
            let machine = if crash == Crash::Machine { "machine::" } else { "" };
            let name = format!("frameworks::restate::{machine}{version}::{scenario}");
            let refused = crash == Crash::Machine && untraced.is_some();
            if let (true, Some(why)) = (refused, &untraced) {
                eprintln!("{name}: ignored: a machine crash needs the tracer, and this machine refuses it: {why}");
            }
            Trial::test(name, move || check(&case)).with_ignored_flag(ignored || refused)
        })
        .collect()
}

/// `npm ci --ignore-scripts` of examples/restate/package.json into `target/restate-server`, unless
/// it holds exactly this lock file already (server.sh runs it from there). Install scripts are
/// not run: the only one is @scarf/scarf's, which reports the install to its maker.
pub fn install_server(root: &Path) -> Result<PathBuf, String> {
    let example = root.join("examples/restate");
    let prefix = root.join("target/restate-server");
    let read = |name: &str| {
        let path = example.join(name);
        std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let (package, lock) = (read("package.json")?, read("package-lock.json")?);
    let waiting = |lock: &Path| {
        eprintln!(
            "waiting (at most {INSTALL_DEADLINE:?}) for another test process to install the Restate server at {} (it holds {})",
            prefix.display(),
            lock.display()
        )
    };
    made_once(&prefix, &format!("{package}{lock}"), INSTALL_DEADLINE, waiting, || {
        eprintln!("installing the Restate server at {} (once; pinned in {})", prefix.display(), example.display());
        std::fs::create_dir_all(&prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
        for (name, text) in [("package.json", &package), ("package-lock.json", &lock)] {
            std::fs::write(prefix.join(name), text).map_err(|e| format!("{}: {e}", prefix.join(name).display()))?;
        }
        let mut npm = Command::new("npm");
        npm.args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"]).current_dir(&prefix);
        within(INSTALL_DEADLINE, &mut npm, "npm ci --ignore-scripts (examples/restate/package-lock.json)")
            .map(drop)
            .map_err(|e| format!("{} (npm, from Node.js, must be on PATH)", e.message().unwrap_or("failed")))
    })?;
    Ok(prefix)
}

struct Case {
    root: PathBuf,
    python: PathBuf,
    version: &'static str,
    scenario: &'static str,
    crash: Crash,
}

/// What a case's run left to judge it by.
struct Outcome {
    verdict: Verdict,
    story: String,
    worker_logs: String,
    server_log: String,
    service_hits: Vec<bool>,
    /// How many times the worker was killed.
    worker_kills: usize,
    /// How many times a power loss took the server too (`--crash machine`).
    server_power_losses: usize,
}

impl Case {
    fn scenario(&self) -> Result<Scenario, Failed> {
        let shipped = self.root.join("scenarios").join(format!("{}.toml", self.scenario));
        let path = match shipped.is_file() {
            true => shipped,
            false => self.root.join("examples/restate").join(format!("{}.toml", self.scenario)),
        };
        let mut scenario = Scenario::load(&path).map_err(|e| e.to_string())?;
        if self.scenario == "after_dispatch" {
            // `charge` (a lookup) and, for the corrected version, `sms` (none: paused) say it all;
            // each operation more is a kill and a restart of a worker importing the SDK.
            let keep = if self.version == "naive" { &["charge"][..] } else { &["charge", "sms"][..] };
            scenario.operations.retain(|op| keep.contains(&op.id.as_str()));
            scenario.faults.retain(|f| keep.contains(&f.operation.as_str()));
        }
        Ok(scenario)
    }

    fn run(&self) -> Result<Outcome, Failed> {
        install_server(&self.root)?;
        let services = Services::load(&self.root.join("examples/restate/services.toml")).map_err(|e| e.to_string())?;
        let root = tempfile::tempdir()?;
        let options = RunOptions {
            services,
            artifacts_root: Some(root.path().to_owned()),
            ready_timeout: Duration::from_secs(60),
            crash: self.crash,
            ..RunOptions::default()
        };
        let script = self.root.join("examples/restate").join(format!("{}.py", self.version));
        let target = Target { program: self.python.clone(), args: vec![script.display().to_string()] };
        let scenario = self.scenario()?;
        let started = Instant::now();
        let (verdict, run) = run_scenario(&scenario, &target, &options).map_err(|e| e.to_string())?;
        let took = started.elapsed();
        let machine = if self.crash == Crash::Machine { "machine::" } else { "" };
        eprintln!("frameworks::restate::{machine}{}::{}: {took:.1?}", self.version, self.scenario);
        let story = killpoint::report::story::story(&scenario, &verdict, &run);
        let logs = run.artifacts_path().join("logs");
        let server_log = std::fs::read_to_string(logs.join("service-restate.log")).unwrap_or_default();
        let worker_logs = worker_logs(&logs);
        let worker_kills = run.timeline.iter().filter(|m| matches!(m.happening, Happening::Killed { .. })).count();
        let server_power_losses =
            run.timeline.iter().filter(|m| matches!(m.happening, Happening::ServicePowerLoss { .. })).count();
        let service_hits = run.service_hits.clone();
        Ok(Outcome { verdict, story, worker_logs, server_log, service_hits, worker_kills, server_power_losses })
    }
}

fn passes(case: &Case) -> Result<(), Failed> {
    let outcome = case.run()?;
    // Under a machine crash every kill of the worker is a power loss of its server too.
    let powered_down = case.crash == Crash::Process || outcome.server_power_losses == outcome.worker_kills;
    if !outcome.verdict.passed() || outcome.service_hits.contains(&false) || !powered_down {
        return Err(format!(
            "examples/restate/{}.py was expected to pass `{}` (every service fault fired: {:?}; under a machine crash, {} kill(s) of the worker each a power loss of the server: {}):\n{}\n{}",
            case.version, case.scenario, outcome.service_hits, outcome.worker_kills, outcome.server_power_losses, outcome.story, outcome.worker_logs
        )
        .into());
    }
    Ok(())
}

fn naive_after_dispatch(case: &Case) -> Result<(), Failed> {
    let outcome = case.run()?;
    let invocation = replayed_by_the_server(&outcome, "charge")
        .map_err(|why| format!("examples/restate/naive.py: {why}:\n{}\n{}", outcome.story, outcome.worker_logs))?;
    eprintln!(
        "examples/restate/naive.py fails `after_dispatch` as expected: at_most_once for charge, the server's retry of invocation {invocation}"
    );
    Ok(())
}

/// Without any kill of the worker: the server crashed while `call_tool` ran, so the step's
/// result never reached its journal, and the server, back, replayed the step on the same worker.
fn naive_server_restart(case: &Case) -> Result<(), Failed> {
    let outcome = case.run()?;
    let failed = |why: String| format!("examples/restate/naive.py: {why}:\n{}\n{}", outcome.story, outcome.worker_logs);
    if outcome.worker_kills != 0 || outcome.service_hits.contains(&false) {
        let (kills, hits) = (outcome.worker_kills, &outcome.service_hits);
        return Err(failed(format!(
            "expected every service fault fired and no kill of the worker, found {kills} kill(s) and {hits:?}"
        ))
        .into());
    }
    for op in ["charge", "ticket"] {
        replayed_by_the_server(&outcome, op).map_err(failed)?;
    }
    eprintln!(
        "examples/restate/naive.py fails `server_restart` as expected: the restarted server ran `call_tool` again"
    );
    Ok(())
}

/// The invocation that ran `op`'s `call_tool` twice, if the verdict is at_most_once for `op` and the
/// second call was the server's: both in one invocation, which the server's log says it retried
/// ("Invocation error, retrying") or recovered after its own restart. Else why not, in words.
fn replayed_by_the_server(outcome: &Outcome, op: &str) -> Result<String, String> {
    let duplicated = outcome
        .verdict
        .violations
        .iter()
        .any(|v| v.invariant == Invariant::AtMostOnce && v.operation.as_deref() == Some(op));
    let marker = format!("{op}: call_tool in invocation ");
    let invocations: Vec<&str> =
        outcome.worker_logs.lines().filter_map(|line| line.split(marker.as_str()).nth(1)).collect();
    let replayed = invocations.len() == 2 && invocations[0] == invocations[1];
    let retried = replayed
        && outcome.server_log.lines().collect::<Vec<_>>().windows(4).any(|lines| {
            lines[0].contains("Invocation error, retrying") && lines.iter().any(|l| l.contains(invocations[0]))
        });
    match duplicated && (retried || replayed && outcome.worker_kills == 0) {
        true => Ok(invocations[0].to_owned()),
        false => Err(format!(
            "expected at_most_once for `{op}` (found: {duplicated}) because the server ran its step again (`call_tool` twice in one invocation, found {invocations:?}; the server's \"Invocation error, retrying\" for it, found: {retried})"
        )),
    }
}
