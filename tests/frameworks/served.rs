//! What the trials of an example with a server beside its worker share (temporal.rs, dbos_pg.rs):
//! a case (the example, its services file, a version, a scenario) run with the probe or as a
//! traced black box, one server per trial in the run's directory, and the checks every such trial
//! makes.

use killpoint::run::services::Services;
use killpoint::{Run, RunOptions, Scenario, Target, Verdict, run_scenario};
use libtest_mimic::Failed;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What makes a case's services ready for this machine before its run.
pub type Prepare = Arc<dyn Fn(&mut Services) -> Result<(), Failed> + Send + Sync>;

/// A trial's check of its case.
pub type Check = fn(&Case) -> Result<(), Failed>;

/// A trial in a table: version, scenario, the operations kept (`Case::keep`), its check.
pub type Row = (&'static str, &'static str, &'static [&'static str], Check);

/// One trial's case.
pub struct Case {
    /// The trials' name: `frameworks::<trial>::<version>::<scenario>`.
    pub trial: &'static str,
    pub root: PathBuf,
    pub python: PathBuf,
    /// The example's directory under examples/ (its scripts, services file and scenario files).
    pub example: &'static str,
    /// The services file, in the example's directory.
    pub services: &'static str,
    pub version: &'static str,
    /// A shipped scenario (scenarios/) or, failing that, one of the example's.
    pub scenario: &'static str,
    /// The operations kept of the scenario (with their faults); empty: all of them.
    pub keep: &'static [&'static str],
    /// Made ready for this machine before the run (say, a binary's path as an argument).
    pub prepare: Prepare,
    /// With the probe, or as a black box under killpoint-tracer (`--points syscalls`).
    pub probe: bool,
}

/// What a case's run left to judge.
pub struct Outcome {
    pub verdict: Verdict,
    pub story: String,
    /// The worker's logs (every incarnation's), in one text.
    pub logs: String,
    /// The run: its directory (the worker's data dir, the logs) is there until it is dropped.
    pub run: Run,
    /// Where the run's directory was made; removed once the run and this are dropped.
    _root: tempfile::TempDir,
}

impl Case {
    pub fn name(&self) -> String {
        format!("frameworks::{}::{}::{}", self.trial, self.version, self.scenario)
    }

    fn scenario(&self) -> Result<Scenario, Failed> {
        let shipped = self.root.join("scenarios").join(format!("{}.toml", self.scenario));
        let path = match shipped.is_file() {
            true => shipped,
            false => self.root.join("examples").join(self.example).join(format!("{}.toml", self.scenario)),
        };
        let mut scenario = Scenario::load(&path).map_err(|e| e.to_string())?;
        if !self.keep.is_empty() {
            // Each operation costs a kill and a restart of a Python worker importing its framework.
            scenario.operations.retain(|op| self.keep.contains(&op.id.as_str()));
            scenario.faults.retain(|f| self.keep.contains(&f.operation.as_str()));
        }
        Ok(scenario)
    }

    /// Runs the case with its services, under a run directory of its own.
    pub fn run(&self) -> Result<Outcome, Failed> {
        let dir = self.root.join("examples").join(self.example);
        let mut services = Services::load(&dir.join(self.services)).map_err(|e| e.to_string())?;
        (self.prepare)(&mut services)?;
        let root = tempfile::tempdir()?;
        let options = RunOptions {
            services,
            artifacts_root: Some(root.path().to_owned()),
            ready_timeout: Duration::from_secs(60),
            probe: self.probe,
            syscalls: !self.probe,
            ..RunOptions::default()
        };
        let script = dir.join(format!("{}.py", self.version));
        let target = Target { program: self.python.clone(), args: vec![script.display().to_string()] };
        let scenario = self.scenario()?;
        let started = Instant::now();
        let (verdict, run) = run_scenario(&scenario, &target, &options).map_err(|e| e.to_string())?;
        eprintln!("{}: {:.1?}", self.name(), started.elapsed());
        let story = killpoint::report::story::story(&scenario, &verdict, &run);
        let logs = worker_logs(&run.artifacts_path().join("logs"));
        Ok(Outcome { verdict, story, logs, run, _root: root })
    }
}

/// Every log in `dir` but the services' (`service-*.log`): the worker's incarnations', in one text.
pub(super) fn worker_logs(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if !entry.file_name().to_string_lossy().starts_with("service-") {
            text.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
        }
    }
    text
}

/// The case passes, every service fault fired.
pub fn passes(case: &Case) -> Result<(), Failed> {
    expect_pass(case, &case.run()?)
}

/// `outcome`, the case's run, passed with every service fault fired.
pub fn expect_pass(case: &Case, outcome: &Outcome) -> Result<(), Failed> {
    if !outcome.verdict.passed() || outcome.run.service_hits.contains(&false) {
        return Err(format!(
            "examples/{}/{}.py with {} was expected to pass `{}` (service faults fired: {:?}):\n{}",
            case.example, case.version, case.services, case.scenario, outcome.run.service_hits, outcome.story
        )
        .into());
    }
    Ok(())
}
