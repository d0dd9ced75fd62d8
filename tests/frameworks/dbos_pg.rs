//! `frameworks::dbos_postgres::*`: examples/dbos certified with PostgreSQL 15 beside the worker as
//! DBOS's system database (a service: examples/dbos/postgres.toml, postgres.sh: a fresh cluster
//! per trial in the run's directory, a copy of one `initdb` made for the test binary,
//! pg_template.rs; `initdb` and `postgres` from PATH), with the probe. Each trial also checks that
//! DBOS used the server: no SQLite system database in the worker's data dir.
//!
//! - `naive::after_dispatch`: fails at_most_once for `charge` (the scenario narrowed to it): DBOS
//!   recovers the workflow from Postgres and runs the interrupted step again, which sends anew.
//! - `corrected::after_dispatch`: passes, for `charge` (lookup) and `sms` (no lookup: paused).
//! - `corrected::server_restart_reconciliation` (examples/dbos/): Postgres crashed twice while the
//!   restarted worker's recovered workflow reconciles (its step found the charge; then wrote the
//!   success, before DBOS recorded the step); passes, every service fault fired.
//! - `corrected::server_restart_delivery`: Postgres crashed after the success is written and at
//!   the send to `mailer`; passes, every service fault fired.
//!
//! - `{corrected,naive}::server_away_during_recovery` (dbos-inc/dbos-transact-py#716): the worker
//!   killed after the charge's call, its way to Postgres cut for 8 s from just before the call;
//!   the next incarnation prints its ready line inside the window (checked: else the outage missed
//!   its start-up). DBOS 3.4.0's `DBOS.launch()` gives up at once when Postgres is away: the naive
//!   worker exits (`DBOS failed to launch`) and `settled` fails; the corrected one launches again
//!   with a bounded backoff until Postgres answers, DBOS recovers the PENDING workflow, and the
//!   run passes. The launch gates the recovery, so no outage seen from the harness can begin
//!   inside the recovery itself: docs/frameworks.md reproduces that moment (#716's) outside it.
//!
//! - `template_refused_once_started`: postgres.sh refuses a template a server ran on.
//!
//! Where `initdb` is not on PATH the trials are ignored, with the reason on stderr — never passed.

use super::pg_template::{Template, template_refused_once_started};
use super::served::{self, Case, Outcome, Prepare, Row};
use killpoint::Invariant;
use killpoint::run::services::Services;
use libtest_mimic::{Failed, Trial};
use std::path::Path;
use std::sync::Arc;

/// The trials, run by `python` (the frameworks' virtualenv interpreter), their clusters copies of
/// `template`.
pub fn trials(root: &Path, python: &Path, ignored: bool, template: Arc<Template>) -> Vec<Trial> {
    let postgres = std::process::Command::new("initdb")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !postgres {
        eprintln!(
            "initdb not found on PATH: the frameworks::dbos_postgres trials (PostgreSQL 15 beside DBOS) are ignored, not passed"
        );
    }
    let cases: [Row; 6] = [
        ("naive", "after_dispatch", &["charge"], naive_after_dispatch),
        ("corrected", "after_dispatch", &["charge", "sms"], passes_on_postgres),
        ("corrected", "server_restart_reconciliation", &[], passes_on_postgres),
        ("corrected", "server_restart_delivery", &[], passes_on_postgres),
        ("corrected", "server_away_during_recovery", &[], recovers_through_the_outage),
        ("naive", "server_away_during_recovery", &[], launch_gives_up),
    ];
    let script = root.join("examples/dbos/postgres.sh");
    let prepare: Prepare = Arc::new(move |services: &mut Services| {
        let cluster = template.cluster(&script)?;
        services.list[0].args.extend(["--template".to_owned(), cluster.display().to_string()]);
        Ok(())
    });
    let mut trials: Vec<Trial> = cases
        .into_iter()
        .map(|(version, scenario, keep, check)| {
            let case = Case {
                trial: "dbos_postgres",
                root: root.to_owned(),
                python: python.to_owned(),
                example: "dbos",
                services: "postgres.toml",
                version,
                scenario,
                keep,
                prepare: prepare.clone(),
                probe: true,
            };
            Trial::test(case.name(), move || check(&case)).with_ignored_flag(ignored || !postgres)
        })
        .collect();
    let root = root.to_owned();
    trials.push(Trial::test("frameworks::dbos_postgres::template_refused_once_started", move || {
        template_refused_once_started(&root)
    }));
    trials
}

/// DBOS kept its system database in the server: the worker's data dir holds no SQLite one.
fn on_postgres(case: &Case, outcome: &Outcome) -> Result<(), Failed> {
    let data = outcome.run.artifacts_path().join("data");
    let sqlite: Vec<String> = std::fs::read_dir(&data)?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("dbos.sqlite"))
        .collect();
    if !sqlite.is_empty() {
        return Err(format!(
            "examples/dbos/{}.py was expected to keep DBOS's system database in Postgres (KILLPOINT_SERVICE_POSTGRES_ADDR), found {sqlite:?} in its data dir {}",
            case.version,
            data.display()
        )
        .into());
    }
    Ok(())
}

fn passes_on_postgres(case: &Case) -> Result<(), Failed> {
    let outcome = case.run()?;
    on_postgres(case, &outcome)?;
    served::expect_pass(case, &outcome)
}

fn naive_after_dispatch(case: &Case) -> Result<(), Failed> {
    let outcome = case.run()?;
    on_postgres(case, &outcome)?;
    let duplicated = outcome
        .verdict
        .violations
        .iter()
        .any(|v| v.invariant == Invariant::AtMostOnce && v.operation.as_deref() == Some("charge"));
    if !duplicated {
        return Err(format!(
            "examples/dbos/naive.py on Postgres was expected to fail at_most_once for `charge`:\n{}",
            outcome.story
        )
        .into());
    }
    eprintln!("examples/dbos/naive.py on Postgres fails `after_dispatch` as expected: at_most_once for charge");
    Ok(())
}

/// The restarted worker's ready line came inside the window (DBOS launches, and recovers, after
/// it) and its log says what `said` in that incarnation; `None` when it did, else why not.
fn met_the_outage(outcome: &Outcome, said: &str) -> Result<Option<String>, Failed> {
    use killpoint::Happening;
    let run = &outcome.run;
    let at = |wanted: fn(&Happening) -> bool| run.timeline.iter().find(|m| wanted(&m.happening)).map(|m| m.at_micros);
    let killed = at(|h| matches!(h, Happening::Killed { .. }));
    let reachable = at(|h| matches!(h, Happening::ServiceReleased { .. }));
    let ready = killed.zip(run.restarts.first()).map(|(k, r)| k + u64::try_from(r.as_micros()).unwrap_or(u64::MAX));
    let stderr = std::fs::read_to_string(run.artifacts_path().join("logs").join("stderr.log"))?;
    let second = stderr.split("--- killpoint: incarnation 2 ---").nth(1).unwrap_or_default();
    let inside = ready.zip(reachable).is_some_and(|(ready, end)| ready < end);
    Ok((!inside || !second.contains(said)).then(|| {
        format!(
            "expected the restarted worker ready inside the window (ready at {ready:?} µs, the window ended at {reachable:?} µs) and `{said}` in its log (found: {})",
            second.contains(said)
        )
    }))
}

/// The corrected example launches DBOS again until Postgres answers, and DBOS recovers the
/// workflow: a pass, the outage met at start-up.
fn recovers_through_the_outage(case: &Case) -> Result<(), Failed> {
    let outcome = case.run()?;
    on_postgres(case, &outcome)?;
    served::expect_pass(case, &outcome)?;
    if let Some(why) = met_the_outage(&outcome, "DBOS did not launch")? {
        return Err(format!("{}: {why}:\n{}", case.name(), outcome.story).into());
    }
    eprintln!("{}: DBOS launched again once Postgres answered, and recovered the workflow", case.name());
    Ok(())
}

/// The naive example's DBOS gives Postgres up at launch (its migrations are not retried): the
/// worker exits, and the charge never settles — DBOS's launch, not its recovery, fails `settled`.
fn launch_gives_up(case: &Case) -> Result<(), Failed> {
    let outcome = case.run()?;
    let stuck = outcome.verdict.violations.iter().any(|v| v.invariant == Invariant::Settled);
    if let Some(why) = met_the_outage(&outcome, "DBOS failed to launch")? {
        return Err(format!("{}: {why}:\n{}", case.name(), outcome.story).into());
    }
    if !stuck {
        return Err(format!(
            "{}: expected `settled` violated, the worker gone with DBOS's failed launch:\n{}",
            case.name(),
            outcome.story
        )
        .into());
    }
    eprintln!("{}: DBOS.launch() gave Postgres up and the worker exited: `settled` fails, as expected", case.name());
    Ok(())
}
