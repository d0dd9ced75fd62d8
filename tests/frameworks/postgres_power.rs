//! `frameworks::postgres_power::*`: `--crash machine` of a worker plus a service (issue 31). The
//! worker is tests/fixtures/services/pg_worker.py, the Python kit with its whole store in a
//! PostgreSQL 15 service beside it (pg.sh: Debian's `initdb` and `postgres` on PATH, a cluster per
//! run in the service's data dir); nothing of its own is in its data dir. The scenario is
//! `after_dispatch` narrowed to `charge` and `ticket`: two kills, each a power loss of the machine.
//!
//! - `fsync_on` (pg.toml, Postgres's defaults): passes. Each kill took the service too: as many
//!   `ServicePowerLoss` marks as kills, each followed by the service's start on the same port
//!   before the worker's; the trace says the power loss took `pg` (not that it lived on); and once
//!   the run is dropped no process and no file of it is left.
//! - `fsync_off` (pg_nosync.toml, `-c fsync=off`): the server never syncs, so the power loss takes
//!   every commit since its cluster was made; the restarted worker does not know `charge`:
//!   `intent_durable` is violated for it, and the trace shows what the service lost.

use killpoint::model::crash::Crash;
use killpoint::run::services::Services;
use killpoint::{Happening, Invariant, Run, RunOptions, Scenario, Target, run_scenario};
use libtest_mimic::{Failed, Trial};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A trial's check of its case.
type Check = fn(&Case) -> Result<(), Failed>;

/// The two trials, run by `python` (the frameworks' virtualenv's: psycopg).
pub fn trials(root: &Path, python: &Path, ignored: bool) -> Vec<Trial> {
    let cases: [(&str, &str, Check); 2] = [("fsync_on", "pg.toml", passes), ("fsync_off", "pg_nosync.toml", forgets)];
    cases
        .into_iter()
        .map(|(name, services, check)| {
            let case = Case { root: root.to_owned(), python: python.to_owned(), name, services };
            Trial::test(format!("frameworks::postgres_power::{name}"), move || check(&case)).with_ignored_flag(ignored)
        })
        .collect()
}

struct Case {
    root: PathBuf,
    python: PathBuf,
    name: &'static str,
    services: &'static str,
}

impl Case {
    fn fixtures(&self) -> PathBuf {
        self.root.join("tests/fixtures/services")
    }

    /// Runs the case in a temp root of its own; the run, its story and its trace's lines.
    fn run(&self, root: &Path) -> Result<(killpoint::Verdict, Run, String, Vec<String>), Failed> {
        for program in ["initdb", "postgres", "pg_isready", "unshare"] {
            if which(program).is_none() {
                return Err(format!("expected `{program}` on PATH for the Postgres service (Debian: postgresql-15, postgresql-client-15, util-linux), found none").into());
            }
        }
        let services = Services::load(&self.fixtures().join(self.services)).map_err(|e| e.to_string())?;
        let options = RunOptions {
            services,
            crash: Crash::Machine,
            artifacts_root: Some(root.to_owned()),
            ready_timeout: Duration::from_secs(60),
            ..RunOptions::default()
        };
        let worker = self.fixtures().join("pg_worker.py").display().to_string();
        let target = Target { program: self.python.clone(), args: vec![worker] };
        let mut scenario =
            Scenario::load(&self.root.join("scenarios/after_dispatch.toml")).map_err(|e| e.to_string())?;
        let keep = ["charge", "ticket"];
        scenario.operations.retain(|op| keep.contains(&op.id.as_str()));
        scenario.faults.retain(|f| keep.contains(&f.operation.as_str()));
        let started = Instant::now();
        let (verdict, run) = run_scenario(&scenario, &target, &options).map_err(|e| e.to_string())?;
        eprintln!("frameworks::postgres_power::{}: {:.1?}", self.name, started.elapsed());
        let story = killpoint::report::story::story(&scenario, &verdict, &run);
        let trace = killpoint::run::trace::lines(&run).into_iter().map(|l| l.text).collect();
        Ok((verdict, run, story, trace))
    }
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(program)).find(|p| p.is_file())
}

fn count(run: &Run, wanted: fn(&Happening) -> bool) -> usize {
    run.timeline.iter().filter(|m| wanted(&m.happening)).count()
}

fn passes(case: &Case) -> Result<(), Failed> {
    let root = tempfile::tempdir()?;
    let (verdict, run, story, trace) = case.run(root.path())?;
    if !verdict.passed() {
        return Err(format!(
            "with fsync on, every commit the worker waited for survives the power loss; expected a pass:\n{story}"
        )
        .into());
    }
    let kills = count(&run, |h| matches!(h, Happening::Killed { .. }));
    let lost = count(&run, |h| matches!(h, Happening::ServicePowerLoss { .. }));
    let restarted = count(&run, |h| matches!(h, Happening::ServiceRestarted { .. }));
    if kills != 2 || lost != kills || restarted != kills {
        return Err(format!("expected 2 kills, each taking the service (power loss, start again); found {kills} kills, {lost} power losses of the service, {restarted} starts again\n{story}").into());
    }
    each_loss_restarts_the_service_first(&run, &story)?;
    let said = trace.iter().filter(|t| t.ends_with("(a power loss: service pg goes down with it)")).count();
    if said != kills || trace.iter().any(|t| t.contains("lives on")) {
        return Err(
            format!("each kill in the trace must say the power loss took pg, none that it lived on:\n{story}").into()
        );
    }
    nothing_left(run, root.path())
}

/// Each service power loss is followed by the service's start on its first port, before the
/// worker's next start.
fn each_loss_restarts_the_service_first(run: &Run, story: &str) -> Result<(), Failed> {
    let first_port = run.timeline.iter().find_map(|m| match &m.happening {
        Happening::ServiceStarted { port, .. } => Some(*port),
        _ => None,
    });
    let marks: Vec<&Happening> = run.timeline.iter().map(|m| &m.happening).collect();
    for (i, _) in marks.iter().enumerate().filter(|(_, h)| matches!(h, Happening::ServicePowerLoss { .. })) {
        let in_order = matches!(
            (marks.get(i + 1), marks.get(i + 2)),
            (Some(Happening::ServiceRestarted { port, .. }), Some(Happening::Started { .. })) if Some(*port) == first_port
        );
        if !in_order {
            return Err(format!(
                "after mark {i}, expected the service started again on port {first_port:?}, then the worker:\n{story}"
            )
            .into());
        }
    }
    Ok(())
}

fn forgets(case: &Case) -> Result<(), Failed> {
    let root = tempfile::tempdir()?;
    let (verdict, run, story, trace) = case.run(root.path())?;
    let forgot = verdict
        .violations
        .iter()
        .any(|v| v.invariant == Invariant::IntentDurable && v.operation.as_deref() == Some("charge"));
    // What the service lost is said: the worker's tables' files, whose names it never synced.
    let shown = trace.iter().any(|t| t.contains("power loss takes service pg too") && t.contains("vanished"));
    if verdict.passed() || !forgot || !shown {
        return Err(format!("with fsync=off the power loss takes the accepted `charge`: expected intent_durable violated for it (found: {forgot}) and the service's lost files in the trace (found: {shown}):\n{story}").into());
    }
    eprintln!("frameworks::postgres_power::fsync_off fails as expected: intent_durable for charge");
    nothing_left(run, root.path())
}

/// No process carrying the run's directory in its environment (the worker's KILLPOINT_DATA_DIR,
/// the service's KILLPOINT_SERVICE_DATA_DIR, inherited by every process Postgres forks), and no
/// file in `root` once the run is dropped.
fn nothing_left(run: Run, root: &Path) -> Result<(), Failed> {
    let needle = run.artifacts_path().display().to_string();
    let mut left = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = matches!(stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()), Some('Z' | 'X') | None);
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        if !zombie && String::from_utf8_lossy(&environ).contains(&needle) {
            left.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    if !left.is_empty() {
        return Err(format!("processes of the run still running after it: {left:?}").into());
    }
    drop(run);
    let files: Vec<_> = std::fs::read_dir(root)?.flatten().map(|e| e.path()).collect();
    match files.is_empty() {
        true => Ok(()),
        false => Err(format!("left in the run's root {}: {files:?}", root.display()).into()),
    }
}
