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
    let cases: [Row; 4] = [
        ("naive", "after_dispatch", &["charge"], naive_after_dispatch),
        ("corrected", "after_dispatch", &["charge", "sms"], passes_on_postgres),
        ("corrected", "server_restart_reconciliation", &[], passes_on_postgres),
        ("corrected", "server_restart_delivery", &[], passes_on_postgres),
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
